#ifndef SECURITYSERVICES_CKCAPI_SHIM_H
#define SECURITYSERVICES_CKCAPI_SHIM_H
#include <kcapi.h>
#include <errno.h>

/* errno values the kernel backend classifies, as constants Swift can see on every libc. */
static const int ckcapi_EAFNOSUPPORT = EAFNOSUPPORT;
static const int ckcapi_ENOENT = ENOENT;
static const int ckcapi_EOPNOTSUPP = EOPNOTSUPP;
static const int ckcapi_EPROTONOSUPPORT = EPROTONOSUPPORT;
static const int ckcapi_ENOTSUP = ENOTSUP;
static const int ckcapi_EINVAL = EINVAL;
static const int ckcapi_EBADMSG = EBADMSG;
static const int ckcapi_EPERM = EPERM;
static const int ckcapi_ENOSYS = ENOSYS;
#endif
