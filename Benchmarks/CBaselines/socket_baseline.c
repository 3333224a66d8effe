/* The Unix-socket round-trip baseline (CBaselines.h): a socket pair, an echoing thread, both sides polling. */
#include "CBaselines.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct echo {
    int fd;
    int rounds;
    size_t size;
};

/* Receives exactly `size` bytes, polling. */
static int receive(int fd, unsigned char *buffer, size_t size) {
    size_t got = 0;
    while (got < size) {
        ssize_t count = recv(fd, buffer + got, size - got, MSG_DONTWAIT);
        if (count > 0) {
            got += (size_t)count;
        } else if (count == 0 || (errno != EAGAIN && errno != EINTR)) {
            return -1;
        } else {
            sched_yield();
        }
    }
    return 0;
}

static void *echo(void *argument) {
    struct echo *echo = argument;
    unsigned char buffer[4096];
    for (int round = 0; round < echo->rounds; round++) {
        if (receive(echo->fd, buffer, echo->size) != 0) break;
        if (send(echo->fd, buffer, echo->size, MSG_NOSIGNAL) != (ssize_t)echo->size) break;
    }
    return NULL;
}

int cbaseline_socket_ping_pong(int rounds, size_t size, double *nanoseconds) {
    if (size == 0 || size > 4096 || rounds <= 0) return -1;
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return -1;
    struct echo peer = { .fd = fds[1], .rounds = rounds, .size = size };
    pthread_t thread;
    if (pthread_create(&thread, NULL, echo, &peer) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    unsigned char buffer[4096] = { 0 };
    int status = 0;
    for (int round = 0; round < rounds && status == 0; round++) {
        struct timespec start, end;
        clock_gettime(CLOCK_MONOTONIC, &start);
        if (send(fds[0], buffer, size, MSG_NOSIGNAL) != (ssize_t)size || receive(fds[0], buffer, size) != 0) status = -1;
        clock_gettime(CLOCK_MONOTONIC, &end);
        nanoseconds[round] = (double)(end.tv_sec - start.tv_sec) * 1e9 + (double)(end.tv_nsec - start.tv_nsec);
    }
    shutdown(fds[0], SHUT_RDWR);
    pthread_join(thread, NULL);
    close(fds[0]);
    close(fds[1]);
    return status;
}
