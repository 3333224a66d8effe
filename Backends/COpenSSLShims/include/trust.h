#ifndef SECURITYSERVICES_COPENSSLSHIMS_TRUST_H
#define SECURITYSERVICES_COPENSSLSHIMS_TRUST_H
/* Trust evaluation: one candidate path handed to X509_verify_cert. The typed stack accessors and the app-data
 * accessors are macros or generated inline functions: one wrapper per use, prefixed copenssl_trust_. */
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <openssl/objects.h>

/* A stack of borrowed certificates (sk_X509_push does not take a reference; sk_X509_free frees only the stack). */
STACK_OF(X509) *copenssl_trust_certificates_new(void);
int copenssl_trust_certificates_push(STACK_OF(X509) *stack, X509 *certificate);
void copenssl_trust_certificates_free(STACK_OF(X509) *stack);
int copenssl_trust_certificates_count(const STACK_OF(X509) *stack);
X509 *copenssl_trust_certificates_at(const STACK_OF(X509) *stack, int index);

/* A stack of borrowed CRLs (same ownership rule). */
STACK_OF(X509_CRL) *copenssl_trust_crls_new(void);
int copenssl_trust_crls_push(STACK_OF(X509_CRL) *stack, X509_CRL *crl);
void copenssl_trust_crls_free(STACK_OF(X509_CRL) *stack);

/* X509_STORE_CTX_set_app_data/get_app_data are macros over ex_data index 0. */
int copenssl_trust_set_app_data(X509_STORE_CTX *ctx, void *data);
void *copenssl_trust_get_app_data(X509_STORE_CTX *ctx);

/* RFC 5280's default initial-policy-set {anyPolicy}. OpenSSL treats an empty user policy set as "no acceptable
 * policy" once a certificate requires an explicit policy (PKITS 4.8.11 fails without this). add0 takes
 * ownership of the object: a duplicate is given. */
int copenssl_trust_param_add_any_policy(X509_VERIFY_PARAM *param);

/* Whether the certificate carries a subjectAltName extension at all (whatever its names). */
int copenssl_trust_has_subject_alt_name(const X509 *certificate);
#endif
