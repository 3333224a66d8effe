#ifndef SECURITYSERVICES_COPENSSL_HTTP_SHIM_H
#define SECURITYSERVICES_COPENSSL_HTTP_SHIM_H
/* One HTTP/1.0 exchange (GET, or POST with a body) over OpenSSL's HTTP client, on a TCP connection we open
 * ourselves: OSSL_HTTP_transfer's own connect (BIO_do_connect_retry) retries a refused connection until the
 * timeout, so an unreachable server would cost the whole timeout and be reported as a timeout. The socket stays
 * non-blocking, which makes OpenSSL's BIO_wait enforce the timeout on every read and write. */
#include <openssl/http.h>
#include <openssl/httperr.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/crypto.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum {
    COPENSSL_HTTP_OK = 0,
    COPENSSL_HTTP_BAD_URL = 1,        /* not an http:// URL OpenSSL can parse */
    COPENSSL_HTTP_UNREACHABLE = 2,    /* name not resolved, connection refused or reset; *detail = errno or 0 */
    COPENSSL_HTTP_TIMEOUT = 3,        /* no connection or no complete answer within the timeout */
    COPENSSL_HTTP_STATUS = 4,         /* the server answered with a status other than 2xx; *detail = the status */
    COPENSSL_HTTP_MALFORMED = 5,      /* the answer is not HTTP OpenSSL can read, or is too large */
};

static inline long copenssl_http_remaining_ms(const struct timespec *deadline) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long ms = (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
    return ms > 0 ? ms : 0;
}

/* Opens a non-blocking TCP connection to host:port within `timeout` seconds. Returns the descriptor, or -1 with
 * *status COPENSSL_HTTP_UNREACHABLE (*detail the errno, 0 when the name did not resolve) or _TIMEOUT. */
static inline int copenssl_http_connect(const char *host, const char *port, int timeout, int *status, int *detail) {
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout;
    struct addrinfo hints, *addresses = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    *status = COPENSSL_HTTP_UNREACHABLE;
    *detail = 0;
    if (getaddrinfo(host, port, &hints, &addresses) != 0) return -1;
    int fd = -1;
    for (struct addrinfo *address = addresses; address != NULL && fd < 0; address = address->ai_next) {
        fd = socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address->ai_protocol);
        if (fd < 0) {
            *detail = errno;
            continue;
        }
        int result;
        do { result = connect(fd, address->ai_addr, address->ai_addrlen); } while (result != 0 && errno == EINTR);
        if (result != 0 && errno == EINPROGRESS) {
            struct pollfd waiting = {.fd = fd, .events = POLLOUT};
            int ready;
            do {
                ready = poll(&waiting, 1, (int)copenssl_http_remaining_ms(&deadline));
            } while (ready < 0 && errno == EINTR);
            if (ready == 0) {
                *status = COPENSSL_HTTP_TIMEOUT;
                *detail = ETIMEDOUT;
                close(fd);
                fd = -1;
                break;
            }
            int error = 0;
            socklen_t length = sizeof error;
            if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
            result = error == 0 ? 0 : -1;
            errno = error;
        }
        if (result != 0) {
            *detail = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(addresses);
    return fd;
}

/* What the failed exchange's OpenSSL error queue says: a COPENSSL_HTTP_ status (and *detail). Empties the queue. */
static inline int copenssl_http_failure(int *detail) {
    int status = COPENSSL_HTTP_MALFORMED;
    unsigned long code;
    const char *data = NULL;
    int flags = 0;
    *detail = 0;
    while ((code = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
        if (status != COPENSSL_HTTP_MALFORMED) continue; /* the first telling error wins */
        int library = ERR_GET_LIB(code), reason = ERR_GET_REASON(code);
        if (library == ERR_LIB_HTTP && (reason == HTTP_R_RECEIVED_ERROR || reason == HTTP_R_STATUS_CODE_UNSUPPORTED
                                        || reason == HTTP_R_REDIRECTION_NOT_ENABLED)) {
            /* parse_http_line1 puts "code=%d, reason=%s" in the error data. */
            const char *at = (flags & ERR_TXT_STRING) && data != NULL ? strstr(data, "code=") : NULL;
            *detail = at != NULL ? atoi(at + 5) : 0;
            status = COPENSSL_HTTP_STATUS;
        } else if (reason == HTTP_R_RETRY_TIMEOUT || (library == ERR_LIB_BIO && reason == BIO_R_TRANSFER_TIMEOUT)) {
            status = COPENSSL_HTTP_TIMEOUT;
        } else if (library == ERR_LIB_SYS || (library == ERR_LIB_HTTP && (reason == HTTP_R_SERVER_CANCELED_CONNECTION
                                                                          || reason == HTTP_R_ERROR_SENDING))) {
            status = COPENSSL_HTTP_UNREACHABLE;
            if (library == ERR_LIB_SYS) *detail = reason;
        }
    }
    return status;
}

/* Sends one request to `url` (http:// only; its query is part of the path) and reads the whole answer, waiting
 * at most `timeout` seconds in all. A POST when `body` is not NULL (with `content_type`), else a GET. On success
 * returns COPENSSL_HTTP_OK and *response (free with OPENSSL_free) holds *response_length bytes, at most
 * `max_length`; otherwise a COPENSSL_HTTP_ status with *detail as described there, and nothing to free. */
static inline int copenssl_http_exchange(const char *url, const char *content_type, const unsigned char *body,
                                         size_t body_length, int timeout, size_t max_length,
                                         unsigned char **response, size_t *response_length, int *detail) {
    char *host = NULL, *port = NULL, *path = NULL;
    int ssl = 0, status = COPENSSL_HTTP_BAD_URL, fd = -1;
    time_t deadline = time(NULL) + timeout;
    BIO *connection = NULL, *request = NULL, *answer = NULL;
    *response = NULL;
    *response_length = 0;
    *detail = 0;
    ERR_clear_error();
    /* With no query out-parameter, OSSL_HTTP_parse_url leaves the query in the path. */
    if (timeout <= 0 || OSSL_HTTP_parse_url(url, &ssl, NULL, &host, &port, NULL, &path, NULL, NULL) != 1 || ssl)
        goto done;
    if ((fd = copenssl_http_connect(host, port, timeout, &status, detail)) < 0) goto done;
    status = COPENSSL_HTTP_UNREACHABLE;
    if ((connection = BIO_new_socket(fd, BIO_CLOSE)) == NULL) {
        close(fd);
        goto done;
    }
    if (body != NULL && (request = BIO_new_mem_buf(body, (int)body_length)) == NULL) goto done;
    /* With both bio and rbio given, OSSL_HTTP_open does not connect (we did) and OSSL_HTTP_close leaves the
     * connection BIO to us. */
    answer = OSSL_HTTP_transfer(NULL, host, port, path, 0, NULL, NULL, connection, connection, NULL, NULL, 0, NULL,
                                body != NULL ? content_type : NULL, request, NULL, 0, max_length, timeout, 0);
    if (answer == NULL) {
        status = copenssl_http_failure(detail);
        goto done;
    }
    /* The answer is streamed from the connection: read it to its end, bounded. */
    size_t capacity = 4096, used = 0;
    unsigned char *buffer = OPENSSL_malloc(capacity);
    status = COPENSSL_HTTP_MALFORMED;
    while (buffer != NULL) {
        if (used == capacity) {
            if (capacity >= max_length) {
                OPENSSL_free(buffer);
                buffer = NULL;
                break;
            }
            capacity = capacity * 2 > max_length ? max_length : capacity * 2;
            unsigned char *grown = OPENSSL_realloc(buffer, capacity);
            if (grown == NULL) {
                OPENSSL_free(buffer);
                buffer = NULL;
                break;
            }
            buffer = grown;
        }
        int count = BIO_read(answer, buffer + used, (int)(capacity - used));
        if (count > 0) {
            used += (size_t)count;
        } else if (BIO_should_retry(answer)) {
            if (BIO_wait(answer, deadline, 100) <= 0) {
                status = COPENSSL_HTTP_TIMEOUT;
                OPENSSL_free(buffer);
                buffer = NULL;
            }
        } else {
            break; /* the end of the answer */
        }
    }
    if (buffer != NULL) {
        *response = buffer;
        *response_length = used;
        status = COPENSSL_HTTP_OK;
    }
done:
    BIO_free(answer); /* OSSL_HTTP_exchange gave it a reference of its own, even when it is the connection */
    BIO_free(request);
    BIO_free_all(connection);
    OPENSSL_free(host);
    OPENSSL_free(port);
    OPENSSL_free(path);
    ERR_clear_error();
    return status;
}
#endif
