#ifndef SECURITYSERVICES_CGETRANDOM_SHIM_H
#define SECURITYSERVICES_CGETRANDOM_SHIM_H
/* getrandom(2) lives in <sys/random.h>, which Swift's Glibc module does not export. */
#include <sys/random.h>
#include <sys/types.h>

static inline ssize_t cgetrandom(void *buffer, size_t length) { return getrandom(buffer, length, 0); }
#endif
