#ifndef SECURITYSERVICES_COPENSSLSHIMS_CERTIFICATES_H
#define SECURITYSERVICES_COPENSSLSHIMS_CERTIFICATES_H
/* X.509, PEM and PKCS#12: certificates, identities, PKCS#12 import/export, CSRs. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/bio.h>
#include <openssl/err.h>

/* OPENSSL_free is a macro (it passes __FILE__/__LINE__ to CRYPTO_free). */
void copenssl_x509_free_buffer(void *pointer);

/* ERR_GET_REASON is an inline function in some releases and a macro in others. */
int copenssl_x509_error_reason(unsigned long code);

/* The typed stack accessors are macros over OPENSSL_sk_*: one wrapper per stack this module walks. */
int copenssl_x509_general_names_count(const GENERAL_NAMES *names);
void copenssl_x509_general_names_free(GENERAL_NAMES *names);

/* One general name: its type (GEN_EMAIL, GEN_DNS, GEN_URI, GEN_IPADD, ...) and, for those four, the content
 * bytes of its IA5String or OCTET STRING. Returns the type, or -1 when the index is out of range; *data is NULL
 * for the other types. */
int copenssl_x509_general_name_at(const GENERAL_NAMES *names, int index, const unsigned char **data,
                                           int *length);

int copenssl_x509_object_stack_count(const STACK_OF(ASN1_OBJECT) *objects);
const ASN1_OBJECT *copenssl_x509_object_stack_at(const STACK_OF(ASN1_OBJECT) *objects, int index);
void copenssl_x509_object_stack_free(STACK_OF(ASN1_OBJECT) *objects);

/* PKCS#10 requests: one general name appended to a GENERAL_NAMES stack. `type` is GEN_DNS, GEN_EMAIL or GEN_URI
 * (`value` is the IA5String's bytes) or GEN_IPADD (`value` is the address in text, read by a2i_IPADDRESS).
 * Returns 1, or 0 when the value does not encode (nothing is appended then). */
int copenssl_x509_general_names_append(GENERAL_NAMES *names, int type, const char *value,
                                                     int length);
GENERAL_NAMES *copenssl_x509_general_names_new(void);

/* Adds a subjectAltName extension holding `names` to a request's extension attribute. Returns 1 on success. */
int copenssl_x509_req_add_subject_alt_names(X509_REQ *request, GENERAL_NAMES *names);
#endif
