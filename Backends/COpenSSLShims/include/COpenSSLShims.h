#ifndef SECURITYSERVICES_COPENSSLSHIMS_H
#define SECURITYSERVICES_COPENSSLSHIMS_H
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/params.h>
#include <openssl/provider.h>
#include <openssl/crypto.h>
#include "certificates.h"
#include "keys.h"
#include "pkcs12.h"
#include "trust.h"
#include "revocation.h"
#include "tls.h"
#include "heldkeys.h"
#include "oneshots.h"

/* Parameter builders: OSSL_PARAM arrays are easiest made in C. */

/* Sets the RC2 effective key bits (RFC 2268 "T1") on an initialised context. */
int copenssl_set_rc2_key_bits(EVP_CIPHER_CTX *ctx, size_t bits);

/* Chooses the digest of an HMAC context; done once when the context is made. */
int copenssl_hmac_set_digest(EVP_MAC_CTX *ctx, const char *digest);

/* (Re)keys an HMAC context. EVP_MAC_init with a NULL key keeps the previous key, so an empty key is passed
 * as a non-NULL pointer with length 0, which HMAC accepts as the empty key. */
int copenssl_hmac_init(EVP_MAC_CTX *ctx, const unsigned char *key, size_t keylen);
#endif
