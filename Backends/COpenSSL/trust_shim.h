#ifndef SECURITYSERVICES_COPENSSL_TRUST_SHIM_H
#define SECURITYSERVICES_COPENSSL_TRUST_SHIM_H
/* Trust evaluation: one candidate path handed to X509_verify_cert. The typed stack accessors and the app-data
 * accessors are macros or generated inline functions: one wrapper per use, prefixed copenssl_trust_. */
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <openssl/objects.h>

/* A stack of borrowed certificates (sk_X509_push does not take a reference; sk_X509_free frees only the stack). */
static inline STACK_OF(X509) *copenssl_trust_certificates_new(void) { return sk_X509_new_null(); }
static inline int copenssl_trust_certificates_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate);
}
static inline void copenssl_trust_certificates_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }
static inline int copenssl_trust_certificates_count(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *copenssl_trust_certificates_at(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

/* A stack of borrowed CRLs (same ownership rule). */
static inline STACK_OF(X509_CRL) *copenssl_trust_crls_new(void) { return sk_X509_CRL_new_null(); }
static inline int copenssl_trust_crls_push(STACK_OF(X509_CRL) *stack, X509_CRL *crl) {
    return sk_X509_CRL_push(stack, crl);
}
static inline void copenssl_trust_crls_free(STACK_OF(X509_CRL) *stack) { sk_X509_CRL_free(stack); }

/* X509_STORE_CTX_set_app_data/get_app_data are macros over ex_data index 0. */
static inline int copenssl_trust_set_app_data(X509_STORE_CTX *ctx, void *data) {
    return X509_STORE_CTX_set_ex_data(ctx, 0, data);
}
static inline void *copenssl_trust_get_app_data(X509_STORE_CTX *ctx) { return X509_STORE_CTX_get_ex_data(ctx, 0); }

/* RFC 5280's default initial-policy-set {anyPolicy}. OpenSSL treats an empty user policy set as "no acceptable
 * policy" once a certificate requires an explicit policy (PKITS 4.8.11 fails without this). add0 takes
 * ownership of the object: a duplicate is given. */
static inline int copenssl_trust_param_add_any_policy(X509_VERIFY_PARAM *param) {
    ASN1_OBJECT *any = OBJ_dup(OBJ_nid2obj(NID_any_policy));
    if (any == NULL) return 0;
    if (X509_VERIFY_PARAM_add0_policy(param, any) != 1) {
        ASN1_OBJECT_free(any);
        return 0;
    }
    return 1;
}

/* Whether the certificate carries a subjectAltName extension at all (whatever its names). */
static inline int copenssl_trust_has_subject_alt_name(const X509 *certificate) {
    return X509_get_ext_by_NID(certificate, NID_subject_alt_name, -1) >= 0;
}
#endif
