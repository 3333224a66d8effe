#include "COpenSSLShims.h"

int copenssl_tls_set_server_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

int copenssl_tls_set_versions(SSL_CTX *context, int minimum, int maximum) {
    return SSL_CTX_set_min_proto_version(context, minimum) == 1 && SSL_CTX_set_max_proto_version(context, maximum) == 1;
}
