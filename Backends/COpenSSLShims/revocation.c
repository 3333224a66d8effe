#include "COpenSSLShims.h"
#include <string.h>

int copenssl_revocation_copy_http_uri(const ASN1_IA5STRING *uri, char *buffer, size_t size) {
    const char *url = (const char *)ASN1_STRING_get0_data(uri);
    int length = ASN1_STRING_length(uri);
    if (length <= 7 || (size_t)length >= size || strncmp(url, "http://", 7) != 0 || memchr(url, 0, length) != NULL)
        return 0;
    memcpy(buffer, url, length);
    buffer[length] = 0;
    return 1;
}

int copenssl_revocation_url(X509 *certificate, int kind, char *buffer, size_t size) {
    int found = 0;
    if (kind == COPENSSL_REVOCATION_URL_CRL) {
        STACK_OF(DIST_POINT) *points = X509_get_ext_d2i(certificate, NID_crl_distribution_points, NULL, NULL);
        for (int i = 0; !found && i < sk_DIST_POINT_num(points); i++) {
            DIST_POINT *point = sk_DIST_POINT_value(points, i);
            if (point->distpoint == NULL || point->distpoint->type != 0) continue; /* fullName only */
            GENERAL_NAMES *names = point->distpoint->name.fullname;
            for (int j = 0; !found && j < sk_GENERAL_NAME_num(names); j++) {
                GENERAL_NAME *name = sk_GENERAL_NAME_value(names, j);
                found = name->type == GEN_URI
                    && copenssl_revocation_copy_http_uri(name->d.uniformResourceIdentifier, buffer, size);
            }
        }
        sk_DIST_POINT_pop_free(points, DIST_POINT_free);
        return found;
    }
    int method = kind == COPENSSL_REVOCATION_URL_OCSP ? NID_ad_OCSP : NID_ad_ca_issuers;
    AUTHORITY_INFO_ACCESS *access = X509_get_ext_d2i(certificate, NID_info_access, NULL, NULL);
    for (int i = 0; !found && i < sk_ACCESS_DESCRIPTION_num(access); i++) {
        ACCESS_DESCRIPTION *description = sk_ACCESS_DESCRIPTION_value(access, i);
        found = OBJ_obj2nid(description->method) == method && description->location->type == GEN_URI
            && copenssl_revocation_copy_http_uri(description->location->d.uniformResourceIdentifier, buffer, size);
    }
    AUTHORITY_INFO_ACCESS_free(access);
    return found;
}

OCSP_REQUEST *copenssl_revocation_ocsp_request(X509 *certificate, X509 *issuer, unsigned char **der,
                                                             int *length) {
    OCSP_REQUEST *request = OCSP_REQUEST_new();
    OCSP_CERTID *id = OCSP_cert_to_id(NULL, certificate, issuer);
    *der = NULL;
    *length = 0;
    if (request == NULL || id == NULL || OCSP_request_add0_id(request, id) == NULL) {
        OCSP_CERTID_free(id);
        OCSP_REQUEST_free(request);
        ERR_clear_error();
        return NULL;
    }
    /* the request owns the id now */
    if (OCSP_request_add1_nonce(request, NULL, -1) != 1 || (*length = i2d_OCSP_REQUEST(request, der)) <= 0) {
        OCSP_REQUEST_free(request);
        *der = NULL;
        *length = 0;
        ERR_clear_error();
        return NULL;
    }
    return request;
}

int copenssl_revocation_crl_entries(X509_CRL *crl, long *extensions) {
    STACK_OF(X509_REVOKED) *revoked = X509_CRL_get_REVOKED(crl); /* internal, NULL for an empty list */
    int count = sk_X509_REVOKED_num(revoked);
    long total = 0;
    for (int i = 0; i < count; i++) total += X509_REVOKED_get_ext_count(sk_X509_REVOKED_value(revoked, i));
    *extensions = total;
    return count < 0 ? 0 : count;
}

X509_CRL *copenssl_revocation_crl_from_der(const unsigned char *der, long length) {
    const unsigned char *cursor = der;
    X509_CRL *crl = d2i_X509_CRL(NULL, &cursor, length);
    if (crl != NULL && cursor != der + length) {
        X509_CRL_free(crl);
        crl = NULL;
    }
    ERR_clear_error();
    return crl;
}

int copenssl_revocation_issuers_parse(const unsigned char *data, long length, X509 **out, int max) {
    int count = 0;
    if (data == NULL || length <= 0) return 0;
    {
        const unsigned char *cursor = data;
        X509 *certificate = d2i_X509(NULL, &cursor, length);
        if (certificate != NULL && cursor == data + length && max > 0) {
            out[count++] = certificate;
            goto done;
        }
        X509_free(certificate);
    }
    {
        const unsigned char *cursor = data;
        PKCS7 *message = d2i_PKCS7(NULL, &cursor, length);
        if (message != NULL && cursor == data + length && PKCS7_type_is_signed(message) && message->d.sign != NULL) {
            STACK_OF(X509) *certificates = message->d.sign->cert;
            for (int i = 0; i < sk_X509_num(certificates) && count < max; i++) {
                X509 *certificate = sk_X509_value(certificates, i);
                if (X509_up_ref(certificate) == 1) out[count++] = certificate;
            }
        }
        PKCS7_free(message);
    }
done:
    ERR_clear_error();
    return count;
}
