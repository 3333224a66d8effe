#include "COpenSSLShims.h"

STACK_OF(X509) *copenssl_trust_certificates_new(void) { return sk_X509_new_null(); }

int copenssl_trust_certificates_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate);
}

void copenssl_trust_certificates_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

int copenssl_trust_certificates_count(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }

X509 *copenssl_trust_certificates_at(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

STACK_OF(X509_CRL) *copenssl_trust_crls_new(void) { return sk_X509_CRL_new_null(); }

int copenssl_trust_crls_push(STACK_OF(X509_CRL) *stack, X509_CRL *crl) {
    return sk_X509_CRL_push(stack, crl);
}

void copenssl_trust_crls_free(STACK_OF(X509_CRL) *stack) { sk_X509_CRL_free(stack); }

int copenssl_trust_set_app_data(X509_STORE_CTX *ctx, void *data) {
    return X509_STORE_CTX_set_ex_data(ctx, 0, data);
}

void *copenssl_trust_get_app_data(X509_STORE_CTX *ctx) { return X509_STORE_CTX_get_ex_data(ctx, 0); }

int copenssl_trust_param_add_any_policy(X509_VERIFY_PARAM *param) {
    ASN1_OBJECT *any = OBJ_dup(OBJ_nid2obj(NID_any_policy));
    if (any == NULL) return 0;
    if (X509_VERIFY_PARAM_add0_policy(param, any) != 1) {
        ASN1_OBJECT_free(any);
        return 0;
    }
    return 1;
}

int copenssl_trust_has_subject_alt_name(const X509 *certificate) {
    return X509_get_ext_by_NID(certificate, NID_subject_alt_name, -1) >= 0;
}
