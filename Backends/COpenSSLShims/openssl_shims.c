#include "COpenSSLShims.h"

int copenssl_set_rc2_key_bits(EVP_CIPHER_CTX *ctx, size_t bits) {
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_RC2_KEYBITS, &bits),
        OSSL_PARAM_construct_end(),
    };
    return EVP_CIPHER_CTX_set_params(ctx, params);
}

int copenssl_hmac_set_digest(EVP_MAC_CTX *ctx, const char *digest) {
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
        OSSL_PARAM_construct_end(),
    };
    return EVP_MAC_CTX_set_params(ctx, params);
}

int copenssl_hmac_init(EVP_MAC_CTX *ctx, const unsigned char *key, size_t keylen) {
    static const unsigned char empty = 0;
    return EVP_MAC_init(ctx, key != NULL ? key : &empty, keylen, NULL);
}
