#ifndef SECURITYSERVICES_COPENSSLSHIMS_PKCS12_H
#define SECURITYSERVICES_COPENSSLSHIMS_PKCS12_H
/* STACK_OF(X509) accessors: the sk_X509_* functions are macros over OPENSSL_sk_*. */
#include <openssl/x509.h>
#include <openssl/pkcs12.h>

int copenssl_x509_stack_count(const STACK_OF(X509) *stack);
X509 *copenssl_x509_stack_value(const STACK_OF(X509) *stack, int index);
void copenssl_x509_stack_free(STACK_OF(X509) *stack);
STACK_OF(X509) *copenssl_x509_stack_new(void);
/* Appends `certificate`, which the stack then owns (freed by copenssl_x509_stack_free). Returns 1 on success. */
int copenssl_x509_stack_push(STACK_OF(X509) *stack, X509 *certificate);
#endif
