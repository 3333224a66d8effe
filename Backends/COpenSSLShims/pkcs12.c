#include "COpenSSLShims.h"

int copenssl_x509_stack_count(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }

X509 *copenssl_x509_stack_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }

void copenssl_x509_stack_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }

STACK_OF(X509) *copenssl_x509_stack_new(void) { return sk_X509_new_null(); }

int copenssl_x509_stack_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate) > 0;
}
