#ifndef SECURITYSERVICES_COPENSSL_SHIM_H
#define SECURITYSERVICES_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/crypto.h>
#include "certificates_shim.h"
#include "keys_shim.h"
#include "pkcs12_shim.h"
#include "trust_shim.h"
#include "revocation_shim.h"
#include "scep_shim.h"

/* Parameter builders: OSSL_PARAM arrays are easiest made in C. */

/* Sets the RC2 effective key bits (RFC 2268 "T1") on an initialised context. */
static inline int copenssl_set_rc2_key_bits(EVP_CIPHER_CTX *ctx, size_t bits) {
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_RC2_KEYBITS, &bits),
        OSSL_PARAM_construct_end(),
    };
    return EVP_CIPHER_CTX_set_params(ctx, params);
}

/* Chooses the digest of an HMAC context; done once when the context is made. */
static inline int copenssl_hmac_set_digest(EVP_MAC_CTX *ctx, const char *digest) {
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)digest, 0),
        OSSL_PARAM_construct_end(),
    };
    return EVP_MAC_CTX_set_params(ctx, params);
}

/* (Re)keys an HMAC context. EVP_MAC_init with a NULL key keeps the previous key, so an empty key is passed
 * as a non-NULL pointer with length 0, which HMAC accepts as the empty key. */
static inline int copenssl_hmac_init(EVP_MAC_CTX *ctx, const unsigned char *key, size_t keylen) {
    static const unsigned char empty = 0;
    return EVP_MAC_init(ctx, key != NULL ? key : &empty, keylen, NULL);
}
#endif
