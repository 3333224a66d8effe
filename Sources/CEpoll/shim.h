#ifndef SECURITYSERVICES_CEPOLL_SHIM_H
#define SECURITYSERVICES_CEPOLL_SHIM_H
/* epoll(7) and eventfd(2) for the event loops of the keychain service and of the network's sockets. struct
   epoll_event is packed on x86-64, which Swift does not lay out as C does: these wrappers take and give its parts. */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* epoll_ctl with `events` for `fd`, the event's data being the descriptor itself; 0 or -1 with errno. */
static inline int cepoll_control(int epfd, int operation, int fd, unsigned int events) {
    struct epoll_event event = { .events = events, .data.fd = fd };
    return epoll_ctl(epfd, operation, fd, &event);
}

/* One ready descriptor (epoll_wait with maxevents 1, retried on EINTR): 1 with *fd and *events set, 0 at the
   timeout (milliseconds, -1 for none), -1 with errno. */
static inline int cepoll_wait_one(int epfd, int timeout, int *fd, unsigned int *events) {
    struct epoll_event event;
    int ready;
    do { ready = epoll_wait(epfd, &event, 1, timeout); } while (ready < 0 && errno == EINTR);
    if (ready == 1) {
        *fd = event.data.fd;
        *events = event.events;
    }
    return ready;
}

/* Up to `capacity` ready descriptors (epoll_wait, retried on EINTR): how many, with fds[i] and events[i] set; 0 at
   the timeout (milliseconds, -1 for none); -1 with errno. */
static inline int cepoll_wait_many(int epfd, int timeout, int *fds, unsigned int *events, int capacity) {
    struct epoll_event ready[64];
    if (capacity > 64) capacity = 64;
    int count;
    do { count = epoll_wait(epfd, ready, capacity, timeout); } while (count < 0 && errno == EINTR);
    for (int i = 0; i < count; i++) {
        fds[i] = ready[i].data.fd;
        events[i] = ready[i].events;
    }
    return count;
}

static inline int cepoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }
static inline int ceventfd_create(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

static const unsigned int CEPOLL_IN = EPOLLIN;
static const unsigned int CEPOLL_OUT = EPOLLOUT;
static const unsigned int CEPOLL_RDHUP = EPOLLRDHUP;
static const unsigned int CEPOLL_ONESHOT = EPOLLONESHOT;
static const int CEPOLL_ADD = EPOLL_CTL_ADD;
static const int CEPOLL_MOD = EPOLL_CTL_MOD;
static const int CEPOLL_DEL = EPOLL_CTL_DEL;
#endif
