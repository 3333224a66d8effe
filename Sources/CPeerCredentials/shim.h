#ifndef SECURITYSERVICES_CPEERCREDENTIALS_SHIM_H
#define SECURITYSERVICES_CPEERCREDENTIALS_SHIM_H
/* A Unix socket peer's credentials and pidfds: struct ucred needs _GNU_SOURCE (which would make these headers
   differ from the ones the other modules see), and syscall(2) is variadic, so neither reaches Swift through Glibc. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* SO_PEERCRED: the peer's credentials as of connect(2); 0 on success, -1 with errno. */
static inline int cpeer_credentials(int fd, uid_t *uid, gid_t *gid, pid_t *pid) {
    struct { pid_t pid; uid_t uid; gid_t gid; } credentials; /* struct ucred's layout (socket(7)) */
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = credentials.uid;
    *gid = credentials.gid;
    *pid = credentials.pid;
    return 0;
}

/* A pidfd for the peer: SO_PEERPIDFD where the kernel has it (the very process that connected), else
   pidfd_open(pid). -1 with errno when neither works. */
static inline int cpeer_pidfd(int fd, pid_t pid) {
    int pidfd = -1;
    socklen_t length = sizeof pidfd;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) == 0 && pidfd >= 0) return pidfd;
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* The process's /proc/<pid> directory as an O_PATH descriptor (O_PATH needs _GNU_SOURCE, which these headers do not
   define); -1 with errno. */
#include <fcntl.h>
#include <stdio.h>
#ifndef O_PATH
#define O_PATH 010000000
#endif
static inline int cpeer_open_procfs(pid_t pid) {
    char path[32];
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* Makes this process non-dumpable: no core dump, and no ptrace or /proc/<pid>/mem, environ, maps by processes of
   its uid (prctl is variadic). 0 on success, -1 with errno. */
static inline int cpeer_forbid_dumps(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

/* Whether the process a pidfd names is still alive. A pidfd polls readable once its process has exited (pidfd_open(2));
   unlike a signal sent through it, a poll needs no permission over the process, so it works across uids. */
static inline int cpidfd_alive(int pidfd) {
    struct pollfd entry = { .fd = pidfd, .events = POLLIN, .revents = 0 };
    int ready;
    do { ready = poll(&entry, 1, 0); } while (ready < 0 && errno == EINTR);
    return ready == 0;
}
#endif
