#include "COpenSSLShims.h"

void copenssl_clear_free(void *pointer, size_t length) {
    OPENSSL_clear_free(pointer, length);
}

void copenssl_free(void *pointer) {
    OPENSSL_free(pointer);
}

EVP_PKEY *copenssl_rsa_key_from_pkcs1(const unsigned char *der, size_t length, int private_key) {
    EVP_PKEY *pkey = NULL;
    OSSL_DECODER_CTX *ctx = OSSL_DECODER_CTX_new_for_pkey(
        &pkey, "DER", "type-specific", "RSA", private_key ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, NULL, NULL);
    if (ctx == NULL) return NULL;
    const unsigned char *cursor = der;
    size_t left = length;
    int ok = OSSL_DECODER_from_data(ctx, &cursor, &left) == 1 && left == 0;
    OSSL_DECODER_CTX_free(ctx);
    if (!ok) {
        EVP_PKEY_free(pkey);
        return NULL;
    }
    return pkey;
}

EVP_PKEY *copenssl_ec_key_from_parts(const char *group, const unsigned char *pub, size_t publen,
                                                  const unsigned char *priv, size_t privlen) {
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    OSSL_PARAM *params = NULL;
    BIGNUM *scalar = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld == NULL) goto out;
    if (!OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0)) goto out;
    if (!OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, publen)) goto out;
    if (priv != NULL) {
        scalar = BN_secure_new();
        if (scalar == NULL || BN_bin2bn(priv, (int)privlen, scalar) == NULL) goto out;
        if (!OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, scalar)) goto out;
    }
    params = OSSL_PARAM_BLD_to_param(bld);
    if (params == NULL) goto out;
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1) goto out;
    if (EVP_PKEY_fromdata(ctx, &pkey, priv != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params) != 1) pkey = NULL;
out:
    EVP_PKEY_CTX_free(ctx);
    /* The scalar came from a secure BIGNUM, so the builder put it in the secure heap, which OSSL_PARAM_free clears. */
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(bld);
    BN_clear_free(scalar);
    return pkey;
}

int copenssl_pkey_bn_param(const EVP_PKEY *pkey, const char *name, unsigned char *out, size_t length) {
    BIGNUM *value = NULL;
    if (EVP_PKEY_get_bn_param(pkey, name, &value) != 1 || value == NULL) return 0;
    int ok = BN_bn2binpad(value, out, (int)length) == (int)length;
    BN_clear_free(value);
    return ok;
}

int copenssl_ecdsa_der_to_raw(const unsigned char *der, size_t derlen, unsigned char *out, size_t half) {
    const unsigned char *cursor = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &cursor, (long)derlen);
    if (sig == NULL) return 0;
    int ok = cursor == der + derlen
        && BN_bn2binpad(ECDSA_SIG_get0_r(sig), out, (int)half) == (int)half
        && BN_bn2binpad(ECDSA_SIG_get0_s(sig), out + half, (int)half) == (int)half;
    ECDSA_SIG_free(sig);
    return ok;
}

size_t copenssl_ecdsa_raw_to_der(const unsigned char *raw, size_t half, unsigned char **out) {
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, (int)half, NULL);
    BIGNUM *s = BN_bin2bn(raw + half, (int)half, NULL);
    size_t length = 0;
    if (sig == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        return 0;
    }
    /* ECDSA_SIG_set0 took r and s. */
    *out = NULL;
    int written = i2d_ECDSA_SIG(sig, out);
    if (written > 0) length = (size_t)written;
    ECDSA_SIG_free(sig);
    return length;
}

int copenssl_rsa_set_padding(EVP_PKEY_CTX *ctx, int padding) {
    return EVP_PKEY_CTX_set_rsa_padding(ctx, padding);
}

int copenssl_x963_kdf(const char *digest, const unsigned char *secret, size_t secretlen, const unsigned char *info,
                      size_t infolen, unsigned char *out, size_t outlen) {
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "X963KDF", NULL);
    if (kdf == NULL) return 0;
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (ctx == NULL) return 0;
    static const unsigned char empty = 0;
    OSSL_PARAM params[4] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)digest, 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, secretlen),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)(info != NULL ? info : &empty), infolen),
        OSSL_PARAM_construct_end(),
    };
    int status = EVP_KDF_derive(ctx, out, outlen, params);
    EVP_KDF_CTX_free(ctx); /* frees the context, which cleanses the copied secret */
    return status;
}
