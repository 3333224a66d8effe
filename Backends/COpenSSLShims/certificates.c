#include "COpenSSLShims.h"

void copenssl_x509_free_buffer(void *pointer) { OPENSSL_free(pointer); }

int copenssl_x509_error_reason(unsigned long code) { return ERR_GET_REASON(code); }

int copenssl_x509_general_names_count(const GENERAL_NAMES *names) { return sk_GENERAL_NAME_num(names); }

void copenssl_x509_general_names_free(GENERAL_NAMES *names) { GENERAL_NAMES_free(names); }

int copenssl_x509_general_name_at(const GENERAL_NAMES *names, int index, const unsigned char **data,
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

int copenssl_x509_object_stack_count(const STACK_OF(ASN1_OBJECT) *objects) {
    return sk_ASN1_OBJECT_num(objects);
}

const ASN1_OBJECT *copenssl_x509_object_stack_at(const STACK_OF(ASN1_OBJECT) *objects, int index) {
    return sk_ASN1_OBJECT_value(objects, index);
}

void copenssl_x509_object_stack_free(STACK_OF(ASN1_OBJECT) *objects) {
    sk_ASN1_OBJECT_pop_free(objects, ASN1_OBJECT_free);
}

int copenssl_x509_general_names_append(GENERAL_NAMES *names, int type, const char *value,
                                                     int length) {
    ASN1_STRING *string = NULL;
    if (type == GEN_IPADD) {
        string = a2i_IPADDRESS(value);
    } else if (type == GEN_DNS || type == GEN_EMAIL || type == GEN_URI) {
        string = ASN1_IA5STRING_new();
        if (string != NULL && ASN1_STRING_set(string, value, length) != 1) {
            ASN1_STRING_free(string);
            string = NULL;
        }
    }
    if (string == NULL) return 0;
    GENERAL_NAME *name = GENERAL_NAME_new();
    if (name == NULL) {
        ASN1_STRING_free(string);
        return 0;
    }
    GENERAL_NAME_set0_value(name, type, string); /* the name now owns the string */
    if (sk_GENERAL_NAME_push(names, name) <= 0) {
        GENERAL_NAME_free(name);
        return 0;
    }
    return 1;
}

GENERAL_NAMES *copenssl_x509_general_names_new(void) { return sk_GENERAL_NAME_new_null(); }

int copenssl_x509_req_add_subject_alt_names(X509_REQ *request, GENERAL_NAMES *names) {
    STACK_OF(X509_EXTENSION) *extensions = NULL;
    int ok = X509V3_add1_i2d(&extensions, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) == 1
        && X509_REQ_add_extensions(request, extensions) == 1;
    sk_X509_EXTENSION_pop_free(extensions, X509_EXTENSION_free);
    return ok;
}
