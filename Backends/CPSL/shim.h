#ifndef SECURITYSERVICES_CPSL_SHIM_H
#define SECURITYSERVICES_CPSL_SHIM_H
/* libpsl (Debian libpsl-dev): the public suffix list, for the wildcard rule of hostname matching. */
#include <libpsl.h>
#endif
