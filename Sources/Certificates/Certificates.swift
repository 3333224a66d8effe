// The Certificates module: X.509 certificates, RSA and EC keys, identities and PKCS#12, as Swift values that
// own their OpenSSL objects. The Apple-compatible SecCertificate/SecKey/SecIdentity API in `Security` is a thin
// adapter over it.
