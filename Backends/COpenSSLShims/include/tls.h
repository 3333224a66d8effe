#ifndef SECURITYSERVICES_COPENSSLSHIMS_TLS_H
#define SECURITYSERVICES_COPENSSLSHIMS_TLS_H
/* libssl's macros the TLS module needs as functions (SSL_ctrl underneath). */
#include <openssl/ssl.h>

/* SNI: the name the client asks for (SSL_set_tlsext_host_name). Returns 1 on success. */
int copenssl_tls_set_server_name(SSL *ssl, const char *name);

/* The protocol versions a context allows (TLS1_2_VERSION, TLS1_3_VERSION). Returns 1 on success. */
int copenssl_tls_set_versions(SSL_CTX *context, int minimum, int maximum);
#endif
