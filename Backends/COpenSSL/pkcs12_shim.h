#ifndef SECURITYSERVICES_COPENSSL_PKCS12_SHIM_H
#define SECURITYSERVICES_COPENSSL_PKCS12_SHIM_H
/* STACK_OF(X509) accessors: the sk_X509_* functions are macros over OPENSSL_sk_*. */
#include <openssl/x509.h>
#include <openssl/pkcs12.h>

static inline int copenssl_x509_stack_count(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *copenssl_x509_stack_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
static inline void copenssl_x509_stack_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }
static inline STACK_OF(X509) *copenssl_x509_stack_new(void) { return sk_X509_new_null(); }
/* Appends `certificate`, which the stack then owns (freed by copenssl_x509_stack_free). Returns 1 on success. */
static inline int copenssl_x509_stack_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate) > 0;
}
#endif
