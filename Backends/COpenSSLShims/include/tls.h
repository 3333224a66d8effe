#ifndef SECURITYSERVICES_COPENSSLSHIMS_TLS_H
#define SECURITYSERVICES_COPENSSLSHIMS_TLS_H
/* libssl's macros the TLS module needs as functions (SSL_ctrl underneath). */
#include <openssl/ssl.h>

/* SNI: the name the client asks for (SSL_set_tlsext_host_name). Returns 1 on success. */
int copenssl_tls_set_server_name(SSL *ssl, const char *name);

/* A client asks the server to staple an OCSP response (SSL_set_tlsext_status_type). Returns 1 on success. */
int copenssl_tls_request_ocsp_status(SSL *ssl);

/* The callback libssl calls on a client once the server's certificate status is known (stapled or not):
 * 1 accepts, 0 fails the handshake (SSL_CTX_set_tlsext_status_cb and _arg). */
void copenssl_tls_set_status_callback(SSL_CTX *context, int (*callback)(SSL *, void *), void *argument);

/* The stapled OCSP response (borrowed, valid during the callback) and its length; -1 when the server sent none. */
long copenssl_tls_stapled_response(SSL *ssl, const unsigned char **response);
#endif
