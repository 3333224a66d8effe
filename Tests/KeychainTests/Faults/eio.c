/* An I/O-error injector for the keychain's fault tests (StorageFaultTests/ioError), compiled by the test with cc and
 * loaded into a child process with LD_PRELOAD: after SECURITYSERVICES_EIO_AFTER successful writes to files whose path
 * contains SECURITYSERVICES_EIO_PATH, every write and sync to them fails with EIO, as a failing disk's would. Other
 * descriptors (the child's pipe to the test) are left alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static long remaining = -2; /* -2: not read yet; -1: no limit */

static int injected(int fd) {
    if (remaining == -2) {
        const char *after = getenv("SECURITYSERVICES_EIO_AFTER");
        remaining = after ? atol(after) : -1;
    }
    if (remaining < 0) return 0;
    const char *marker = getenv("SECURITYSERVICES_EIO_PATH");
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t length = readlink(link, target, sizeof target - 1);
    if (length <= 0) return 0;
    target[length] = 0;
    if (marker == NULL || strstr(target, marker) == NULL) return 0;
    if (remaining == 0) return 1;
    remaining -= 1;
    return 0;
}

ssize_t write(int fd, const void *buffer, size_t count) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (injected(fd)) { errno = EIO; return -1; }
    return real(fd, buffer, count);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    if (injected(fd)) { errno = EIO; return -1; }
    return real(fd, buffer, count, offset);
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    return pwrite64(fd, buffer, count, offset);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    if (remaining == 0 && injected(fd)) { errno = EIO; return -1; }
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (remaining == 0 && injected(fd)) { errno = EIO; return -1; }
    return real(fd);
}
