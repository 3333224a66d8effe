#include "CBaselines.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct cbaseline_tls {
    SSL_CTX *context;
    SSL_SESSION *session; /* the last connection's, when resuming */
    int resume;
    int port;
    char hostname[256];
};

cbaseline_tls *cbaseline_tls_new(const char *ca_file, const char *hostname, int port, int resume) {
    cbaseline_tls *baseline = calloc(1, sizeof *baseline);
    if (baseline == NULL || strlen(hostname) >= sizeof baseline->hostname) {
        free(baseline);
        return NULL;
    }
    baseline->context = SSL_CTX_new(TLS_client_method());
    if (baseline->context == NULL || SSL_CTX_load_verify_locations(baseline->context, ca_file, NULL) != 1
        || SSL_CTX_set_min_proto_version(baseline->context, TLS1_3_VERSION) != 1) {
        cbaseline_tls_free(baseline);
        return NULL;
    }
    /* Default verification: the CA file's root, the peer's chain, the name below. */
    SSL_CTX_set_verify(baseline->context, SSL_VERIFY_PEER, NULL);
    if (resume) SSL_CTX_set_session_cache_mode(baseline->context, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    strcpy(baseline->hostname, hostname);
    baseline->port = port;
    baseline->resume = resume;
    return baseline;
}

long cbaseline_tls_fetch(cbaseline_tls *baseline, const char *path, int *resumed) {
    long received = -1;
    char request[512];
    unsigned char buffer[16384];
    struct sockaddr_in address = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    SSL *ssl = NULL;
    *resumed = 0;
    address.sin_family = AF_INET;
    address.sin_port = htons((unsigned short)baseline->port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) goto done;
    if ((ssl = SSL_new(baseline->context)) == NULL || SSL_set_fd(ssl, fd) != 1
        || SSL_set1_host(ssl, baseline->hostname) != 1 || SSL_set_tlsext_host_name(ssl, baseline->hostname) != 1)
        goto done;
    if (baseline->resume && baseline->session != NULL) SSL_set_session(ssl, baseline->session);
    if (SSL_connect(ssl) != 1) goto done;
    *resumed = SSL_session_reused(ssl);
    int length = snprintf(request, sizeof request, "GET %s HTTP/1.0\r\n\r\n", path);
    if (length <= 0 || (size_t)length >= sizeof request || SSL_write(ssl, request, length) != length) goto done;
    received = 0;
    for (;;) {
        int count = SSL_read(ssl, buffer, sizeof buffer);
        if (count <= 0) break;
        received += count;
    }
    if (baseline->resume) {
        SSL_SESSION_free(baseline->session);
        baseline->session = SSL_get1_session(ssl);
    }
    SSL_shutdown(ssl);
done:
    SSL_free(ssl);
    if (fd >= 0) close(fd);
    ERR_clear_error();
    return received;
}

void cbaseline_tls_free(cbaseline_tls *baseline) {
    if (baseline == NULL) return;
    SSL_SESSION_free(baseline->session);
    SSL_CTX_free(baseline->context);
    free(baseline);
}
