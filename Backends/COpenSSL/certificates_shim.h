#ifndef SECURITYSERVICES_COPENSSL_CERTIFICATES_SHIM_H
#define SECURITYSERVICES_COPENSSL_CERTIFICATES_SHIM_H
/* X.509, PEM and PKCS#12: certificates, identities, PKCS#12 import/export, CSRs. */
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/bio.h>
#include <openssl/err.h>

/* OPENSSL_free is a macro (it passes __FILE__/__LINE__ to CRYPTO_free). */
static inline void copenssl_x509_free_buffer(void *pointer) { OPENSSL_free(pointer); }

/* ERR_GET_REASON is an inline function in some releases and a macro in others. */
static inline int copenssl_x509_error_reason(unsigned long code) { return ERR_GET_REASON(code); }

/* The typed stack accessors are macros over OPENSSL_sk_*: one wrapper per stack this module walks. */
static inline int copenssl_x509_general_names_count(const GENERAL_NAMES *names) { return sk_GENERAL_NAME_num(names); }
static inline void copenssl_x509_general_names_free(GENERAL_NAMES *names) { GENERAL_NAMES_free(names); }

/* One general name: its type (GEN_EMAIL, GEN_DNS, GEN_URI, GEN_IPADD, ...) and, for those four, the content
 * bytes of its IA5String or OCTET STRING. Returns the type, or -1 when the index is out of range; *data is NULL
 * for the other types. */
static inline int copenssl_x509_general_name_at(const GENERAL_NAMES *names, int index, const unsigned char **data,
                                           int *length) {
    *data = NULL;
    *length = 0;
    if (index < 0 || index >= sk_GENERAL_NAME_num(names)) return -1;
    const GENERAL_NAME *name = sk_GENERAL_NAME_value(names, index);
    if (name == NULL) return -1;
    const ASN1_STRING *string = NULL;
    switch (name->type) {
    case GEN_EMAIL: string = name->d.rfc822Name; break;
    case GEN_DNS: string = name->d.dNSName; break;
    case GEN_URI: string = name->d.uniformResourceIdentifier; break;
    case GEN_IPADD: string = name->d.iPAddress; break;
    default: break;
    }
    if (string != NULL) {
        *data = ASN1_STRING_get0_data(string);
        *length = ASN1_STRING_length(string);
    }
    return name->type;
}

static inline int copenssl_x509_object_stack_count(const STACK_OF(ASN1_OBJECT) *objects) {
    return sk_ASN1_OBJECT_num(objects);
}
static inline const ASN1_OBJECT *copenssl_x509_object_stack_at(const STACK_OF(ASN1_OBJECT) *objects, int index) {
    return sk_ASN1_OBJECT_value(objects, index);
}
static inline void copenssl_x509_object_stack_free(STACK_OF(ASN1_OBJECT) *objects) {
    sk_ASN1_OBJECT_pop_free(objects, ASN1_OBJECT_free);
}
#endif
