#include "COpenSSLShims.h"

int copenssl_tls_set_server_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

int copenssl_tls_request_ocsp_status(SSL *ssl) {
    return (int)SSL_set_tlsext_status_type(ssl, TLSEXT_STATUSTYPE_ocsp);
}

void copenssl_tls_set_status_callback(SSL_CTX *context, int (*callback)(SSL *, void *), void *argument) {
    SSL_CTX_set_tlsext_status_cb(context, callback);
    SSL_CTX_set_tlsext_status_arg(context, argument);
}

long copenssl_tls_stapled_response(SSL *ssl, const unsigned char **response) {
    unsigned char *bytes = NULL;
    long length = SSL_get_tlsext_status_ocsp_resp(ssl, &bytes);
    *response = bytes;
    return length;
}
