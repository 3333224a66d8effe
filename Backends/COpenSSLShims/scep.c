#include "COpenSSLShims.h"

int copenssl_scep_certificates_count(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }

X509 *copenssl_scep_certificates_at(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}

void copenssl_scep_certificates_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }

STACK_OF(X509) *copenssl_scep_borrowed_new(void) { return sk_X509_new_null(); }

int copenssl_scep_borrowed_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate);
}

void copenssl_scep_borrowed_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

int copenssl_scep_issued_by(X509 *certificate, X509 *issuer) {
    EVP_PKEY *key = X509_get0_pubkey(issuer);
    int verified = key != NULL && X509_verify(certificate, key) == 1;
    ERR_clear_error();
    return verified;
}

int copenssl_scep_encode(PKCS7 *p7, unsigned char **der) {
    *der = NULL;
    return i2d_PKCS7(p7, der);
}

X509 *copenssl_scep_self_signed(EVP_PKEY *key, const char *common_name, const EVP_MD *md, int days) {
    X509 *certificate = X509_new();
    X509_NAME *name = X509_NAME_new();
    BIGNUM *serial = BN_new();
    int ok = certificate != NULL && name != NULL && serial != NULL
        && X509_set_version(certificate, 2)
        && BN_rand(serial, 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY)
        && BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(certificate)) != NULL
        && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)common_name, -1, -1, 0)
        && X509_set_subject_name(certificate, name) && X509_set_issuer_name(certificate, name)
        && X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != NULL
        && X509_time_adj_ex(X509_getm_notAfter(certificate), days, 0, NULL) != NULL
        && X509_set_pubkey(certificate, key) && X509_sign(certificate, key, md) > 0;
    BN_free(serial);
    X509_NAME_free(name);
    if (!ok) {
        X509_free(certificate);
        certificate = NULL;
    }
    return certificate;
}

PKCS7 *copenssl_scep_envelope(X509 *recipient, const EVP_CIPHER *cipher, const unsigned char *data,
                                            int length) {
    STACK_OF(X509) *recipients = sk_X509_new_null();
    BIO *input = BIO_new_mem_buf(data, length);
    PKCS7 *envelope = NULL;
    if (recipients != NULL && input != NULL && sk_X509_push(recipients, recipient) > 0)
        envelope = PKCS7_encrypt(recipients, input, cipher, PKCS7_BINARY);
    BIO_free(input);
    sk_X509_free(recipients); /* PKCS7_encrypt took its own references */
    return envelope;
}

int copenssl_scep_add_attribute(PKCS7_SIGNER_INFO *signer, const char *oid, int type,
                                              const unsigned char *bytes, int length) {
    ASN1_OBJECT *object = OBJ_txt2obj(oid, 1);
    int ok = object != NULL && X509at_add1_attr_by_OBJ(&signer->auth_attr, object, type, bytes, length) != NULL;
    ASN1_OBJECT_free(object);
    return ok;
}

PKCS7 *copenssl_scep_sign(X509 *signer, EVP_PKEY *key, const EVP_MD *md, const char *message_type,
                                        const char *transaction_id, const unsigned char *nonce, int nonce_length,
                                        const char *pki_status, const char *fail_info,
                                        const unsigned char *recipient_nonce, int recipient_nonce_length,
                                        const unsigned char *content, int content_length) {
    PKCS7 *message = PKCS7_new();
    BIO *stream = NULL;
    PKCS7_SIGNER_INFO *info = NULL;
    int ok = message != NULL && PKCS7_set_type(message, NID_pkcs7_signed)
        && (info = PKCS7_add_signature(message, signer, key, md)) != NULL
        && PKCS7_add_certificate(message, signer) && PKCS7_content_new(message, NID_pkcs7_data)
        && PKCS7_add_signed_attribute(info, NID_pkcs9_contentType, V_ASN1_OBJECT, OBJ_nid2obj(NID_pkcs7_data))
        && copenssl_scep_add_attribute(info, COPENSSL_SCEP_OID_MESSAGE_TYPE, V_ASN1_PRINTABLESTRING,
                                       (const unsigned char *)message_type, (int)strlen(message_type))
        && copenssl_scep_add_attribute(info, COPENSSL_SCEP_OID_TRANSACTION_ID, V_ASN1_PRINTABLESTRING,
                                       (const unsigned char *)transaction_id, (int)strlen(transaction_id))
        && copenssl_scep_add_attribute(info, COPENSSL_SCEP_OID_SENDER_NONCE, V_ASN1_OCTET_STRING, nonce,
                                       nonce_length)
        && (pki_status == NULL
            || copenssl_scep_add_attribute(info, COPENSSL_SCEP_OID_PKI_STATUS, V_ASN1_PRINTABLESTRING,
                                           (const unsigned char *)pki_status, (int)strlen(pki_status)))
        && (fail_info == NULL
            || copenssl_scep_add_attribute(info, COPENSSL_SCEP_OID_FAIL_INFO, V_ASN1_PRINTABLESTRING,
                                           (const unsigned char *)fail_info, (int)strlen(fail_info)))
        && (recipient_nonce == NULL
            || copenssl_scep_add_attribute(info, COPENSSL_SCEP_OID_RECIPIENT_NONCE, V_ASN1_OCTET_STRING,
                                           recipient_nonce, recipient_nonce_length))
        && (stream = PKCS7_dataInit(message, NULL)) != NULL
        && (content_length == 0 || BIO_write(stream, content, content_length) == content_length)
        && BIO_flush(stream) == 1
        && PKCS7_dataFinal(message, stream);
    BIO_free_all(stream);
    if (!ok) {
        PKCS7_free(message);
        message = NULL;
    }
    return message;
}

int copenssl_scep_issuer_and_subject(const X509_NAME *issuer, const X509_NAME *subject,
                                                   unsigned char **der) {
    unsigned char *first = NULL, *second = NULL;
    int first_length = i2d_X509_NAME(issuer, &first), second_length = i2d_X509_NAME(subject, &second);
    int length = 0;
    *der = NULL;
    if (first_length > 0 && second_length > 0) {
        int body = first_length + second_length;
        int total = ASN1_object_size(1, body, V_ASN1_SEQUENCE);
        unsigned char *out = total > 0 ? OPENSSL_malloc(total) : NULL;
        if (out != NULL) {
            unsigned char *cursor = out;
            ASN1_put_object(&cursor, 1, body, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
            memcpy(cursor, first, first_length);
            memcpy(cursor + first_length, second, second_length);
            *der = out;
            length = total;
        }
    }
    OPENSSL_free(first);
    OPENSSL_free(second);
    return length;
}

const ASN1_STRING *copenssl_scep_attribute(PKCS7_SIGNER_INFO *info, const char *oid, int type) {
    ASN1_OBJECT *object = OBJ_txt2obj(oid, 1);
    const ASN1_STRING *value = NULL;
    int index = object != NULL ? X509at_get_attr_by_OBJ(info->auth_attr, object, -1) : -1;
    if (index >= 0 && X509at_get_attr_by_OBJ(info->auth_attr, object, index) < 0) {
        X509_ATTRIBUTE *attribute = X509at_get_attr(info->auth_attr, index);
        ASN1_TYPE *any = X509_ATTRIBUTE_count(attribute) == 1 ? X509_ATTRIBUTE_get0_type(attribute, 0) : NULL;
        if (any != NULL && any->type == type) value = any->value.asn1_string;
    }
    ASN1_OBJECT_free(object);
    return value;
}

int copenssl_scep_number_attribute(PKCS7_SIGNER_INFO *info, const char *oid) {
    const ASN1_STRING *value = copenssl_scep_attribute(info, oid, V_ASN1_PRINTABLESTRING);
    if (value == NULL) return -1;
    int length = ASN1_STRING_length(value), number = 0;
    const unsigned char *digits = ASN1_STRING_get0_data(value);
    if (length < 1 || length > 4) return -2;
    for (int i = 0; i < length; i++) {
        if (digits[i] < '0' || digits[i] > '9') return -2;
        number = number * 10 + (digits[i] - '0');
    }
    return number;
}

void copenssl_scep_copy_text(const ASN1_STRING *value, char *buffer, size_t size) {
    buffer[0] = 0;
    if (value == NULL) return;
    size_t length = (size_t)ASN1_STRING_length(value);
    if (length >= size) length = size - 1;
    memcpy(buffer, ASN1_STRING_get0_data(value), length);
    buffer[length] = 0;
}

int copenssl_scep_open_reply(const unsigned char *der, long length, STACK_OF(X509) *signers,
                                           copenssl_scep_reply *reply, unsigned char **content, int *content_length) {
    const unsigned char *cursor = der;
    PKCS7 *message = d2i_PKCS7(NULL, &cursor, length);
    BIO *detached = NULL, *out = NULL;
    int status = COPENSSL_SCEP_MALFORMED;
    memset(reply, 0, sizeof *reply);
    reply->message_type = reply->pki_status = reply->fail_info = -1;
    *content = NULL;
    *content_length = 0;
    /* A signedData may arrive with no content at all (d.sign NULL): checked before anything reads it. */
    if (message == NULL || cursor != der + length || !PKCS7_type_is_signed(message) || message->d.sign == NULL)
        goto done;
    STACK_OF(PKCS7_SIGNER_INFO) *infos = PKCS7_get_signer_info(message);
    if (infos == NULL || sk_PKCS7_SIGNER_INFO_num(infos) != 1) goto done;
    PKCS7_SIGNER_INFO *info = sk_PKCS7_SIGNER_INFO_value(infos, 0);
    if (info->auth_attr == NULL) goto done;
    /* A FAILURE or PENDING reply may carry no content: verify it as detached over nothing. */
    if (PKCS7_get_detached(message) && (detached = BIO_new_mem_buf("", 0)) == NULL) goto done;
    if ((out = BIO_new(BIO_s_mem())) == NULL) goto done;
    /* NOINTERN: the signer must be one of `signers`; NOVERIFY: they are the CA's own, taken from GetCACert. */
    if (PKCS7_verify(message, signers, NULL, detached, out,
                     PKCS7_NOINTERN | PKCS7_NOVERIFY | PKCS7_NOCHAIN | PKCS7_BINARY) != 1) {
        status = COPENSSL_SCEP_BAD_SIGNATURE;
        goto done;
    }
    reply->message_type = copenssl_scep_number_attribute(info, COPENSSL_SCEP_OID_MESSAGE_TYPE);
    reply->pki_status = copenssl_scep_number_attribute(info, COPENSSL_SCEP_OID_PKI_STATUS);
    reply->fail_info = copenssl_scep_number_attribute(info, COPENSSL_SCEP_OID_FAIL_INFO);
    copenssl_scep_copy_text(copenssl_scep_attribute(info, COPENSSL_SCEP_OID_TRANSACTION_ID, V_ASN1_PRINTABLESTRING),
                            reply->transaction_id, sizeof reply->transaction_id);
    copenssl_scep_copy_text(copenssl_scep_attribute(info, COPENSSL_SCEP_OID_FAIL_INFO_TEXT, V_ASN1_UTF8STRING),
                            reply->fail_info_text, sizeof reply->fail_info_text);
    const ASN1_STRING *nonce = copenssl_scep_attribute(info, COPENSSL_SCEP_OID_RECIPIENT_NONCE, V_ASN1_OCTET_STRING);
    if (nonce != NULL && ASN1_STRING_length(nonce) <= (int)sizeof reply->recipient_nonce) {
        reply->recipient_nonce_length = ASN1_STRING_length(nonce);
        memcpy(reply->recipient_nonce, ASN1_STRING_get0_data(nonce), reply->recipient_nonce_length);
    }
    nonce = copenssl_scep_attribute(info, COPENSSL_SCEP_OID_SENDER_NONCE, V_ASN1_OCTET_STRING);
    if (nonce != NULL && ASN1_STRING_length(nonce) <= (int)sizeof reply->sender_nonce) {
        reply->sender_nonce_length = ASN1_STRING_length(nonce);
        memcpy(reply->sender_nonce, ASN1_STRING_get0_data(nonce), reply->sender_nonce_length);
    }
    char *bytes = NULL;
    long count = BIO_get_mem_data(out, &bytes);
    if (count > 0) {
        if ((*content = OPENSSL_malloc(count)) == NULL) goto done;
        memcpy(*content, bytes, count);
        *content_length = (int)count;
    }
    status = COPENSSL_SCEP_OK;
done:
    BIO_free(out);
    BIO_free(detached);
    PKCS7_free(message);
    ERR_clear_error();
    return status;
}

STACK_OF(X509) *copenssl_scep_certificates_only(const unsigned char *der, long length) {
    const unsigned char *cursor = der;
    PKCS7 *message = d2i_PKCS7(NULL, &cursor, length);
    STACK_OF(X509) *certificates = NULL;
    /* `30 0b 06 09 2a 86 48 86 f7 0d 01 07 02` is a signedData without content: d.sign is NULL there. */
    if (message != NULL && cursor == der + length && PKCS7_type_is_signed(message) && message->d.sign != NULL
        && message->d.sign->cert != NULL && sk_X509_num(message->d.sign->cert) > 0)
        certificates = X509_chain_up_ref(message->d.sign->cert);
    PKCS7_free(message);
    ERR_clear_error();
    return certificates;
}

long copenssl_scep_decrypt(const unsigned char *der, long length, EVP_PKEY *key, X509 *certificate,
                                         unsigned char **plain) {
    const unsigned char *cursor = der;
    PKCS7 *envelope = d2i_PKCS7(NULL, &cursor, length);
    BIO *out = BIO_new(BIO_s_mem());
    long count = -1;
    *plain = NULL;
    if (envelope != NULL && out != NULL && cursor == der + length && PKCS7_type_is_enveloped(envelope)
        && envelope->d.enveloped != NULL && PKCS7_decrypt(envelope, key, certificate, out, PKCS7_BINARY) == 1) {
        char *bytes = NULL;
        long available = BIO_get_mem_data(out, &bytes);
        if (available >= 0 && (*plain = OPENSSL_malloc(available > 0 ? available : 1)) != NULL) {
            memcpy(*plain, bytes, available);
            count = available;
        }
        OPENSSL_cleanse(bytes, available > 0 ? available : 0);
    }
    BIO_free(out);
    PKCS7_free(envelope);
    ERR_clear_error();
    return count;
}

void copenssl_scep_clear_free(unsigned char *plain, long length) {
    OPENSSL_clear_free(plain, length > 0 ? (size_t)length : 0);
}

STACK_OF(X509) *copenssl_scep_open_envelope(const unsigned char *der, long length, EVP_PKEY *key,
                                                          X509 *certificate) {
    unsigned char *plain = NULL;
    long count = copenssl_scep_decrypt(der, length, key, certificate, &plain);
    STACK_OF(X509) *certificates = count > 0 ? copenssl_scep_certificates_only(plain, count) : NULL;
    copenssl_scep_clear_free(plain, count);
    return certificates;
}
