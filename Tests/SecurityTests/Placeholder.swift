import Security
