#ifndef SECURITYSERVICES_CSQLITE_SHIM_H
#define SECURITYSERVICES_CSQLITE_SHIM_H
#include <sqlite3.h>

/* Extended result codes are macro expressions Swift cannot import; these constants carry them. */
static const int csqlite_CONSTRAINT_UNIQUE = SQLITE_CONSTRAINT_UNIQUE;
static const int csqlite_CONSTRAINT_PRIMARYKEY = SQLITE_CONSTRAINT_PRIMARYKEY;
#endif
