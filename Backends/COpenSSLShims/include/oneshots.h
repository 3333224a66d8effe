#ifndef SECURITYSERVICES_COPENSSLSHIMS_ONESHOTS_H
#define SECURITYSERVICES_COPENSSLSHIMS_ONESHOTS_H
/* The software backend's one-shot fast paths: a few cipher contexts per thread, keyed in place for each call and
 * holding no key between calls, and digests and HMACs on OpenSSL's low-level hash functions instead of EVP. */
#include <openssl/evp.h>
#include <openssl/md5.h>
#include <openssl/sha.h>
#include <stddef.h>

/* A cipher context of this thread keyed with `key` for `cipher` and `encrypt`, its IV set to `iv` (may be NULL
 * for modes without one), padding on or off: ready for EVP_CipherUpdate/EVP_CipherFinal_ex. The key is expanded in
 * place over the schedule of the thread's context for that cipher and direction (no provider context is made).
 * `cipher` must be a block cipher whose key schedule does not change while it runs (not a stream cipher such as
 * RC4) and `keylen` at most 32 bytes; NULL on OpenSSL failure or no memory. The caller hands the context back to
 * copenssl_keyed_cipher_forget when the call is done, also when it failed. */
EVP_CIPHER_CTX *copenssl_keyed_cipher(const EVP_CIPHER *cipher, int encrypt, const unsigned char *key, size_t keylen,
                                      const unsigned char *iv, int padding);

/* Overwrites the key schedule of `ctx` (from copenssl_keyed_cipher on this thread) with the all-zero key's, or
 * cleanses it where the cipher refuses that key: the call's key is not kept. */
void copenssl_keyed_cipher_forget(EVP_CIPHER_CTX *ctx);

/* Runs `length` bytes (whole blocks) through this thread's context for the cipher `nid` and `encrypt` as the last
 * call left it, IV unchanged: what its schedule holds (tests). 0 when the thread has no such context. */
int copenssl_keyed_cipher_probe(int nid, int encrypt, const unsigned char *in, size_t length, unsigned char *out);

/* The digests, numbered in the order the contract's DigestAlgorithm declares its cases, so that the Swift side's
 * mapping compiles to the case's own number rather than a switch per call. MD2 and MD4 have no low-level one-shot
 * here: the calls below answer 0 (or NULL) for them, as for any other number. */
enum copenssl_hash {
    COPENSSL_MD2,
    COPENSSL_MD4,
    COPENSSL_MD5,
    COPENSSL_SHA1,
    COPENSSL_SHA224,
    COPENSSL_SHA256,
    COPENSSL_SHA384,
    COPENSSL_SHA512
};

/* The hash's digest size in bytes, 0 for one without a low-level one-shot: a table load, inlined into the caller,
 * which checks its output buffer with it before the call (in Swift the same check on the enum compiled to a jump
 * table). */
static inline size_t copenssl_oneshot_size(int hash) {
    static const unsigned char sizes[] = {0, 0, MD5_DIGEST_LENGTH, SHA_DIGEST_LENGTH, SHA224_DIGEST_LENGTH,
                                          SHA256_DIGEST_LENGTH, SHA384_DIGEST_LENGTH, SHA512_DIGEST_LENGTH};
    return hash >= 0 && hash < (int)sizeof sizes ? sizes[hash] : 0;
}

/* out receives the digest (its size per hash); returns 1, or 0 for an unknown hash. */
int copenssl_digest_oneshot(int hash, const unsigned char *in, size_t length, unsigned char *out);

/* HMAC (RFC 2104) over the low-level hash: a key of at most one block seen recently on this thread reuses its
 * inner and outer states. Returns 1, or 0 for an unknown hash. key may be NULL when keylen is 0. */
int copenssl_hmac_oneshot(int hash, const unsigned char *key, size_t keylen, const unsigned char *in, size_t length,
                          unsigned char *out);
/* A key for HMAC kept for its owner's life: the inner and outer states computed once, copied per message, never
 * changed after creation (so several threads may use one at once). NULL for an unknown hash or no memory. */
typedef struct copenssl_hmac_key copenssl_hmac_key;
copenssl_hmac_key *copenssl_hmac_key_new(int hash, const unsigned char *key, size_t keylen);
/* out receives the MAC of `in` (its size per hash). */
void copenssl_hmac_key_run(const copenssl_hmac_key *key, const unsigned char *in, size_t length, unsigned char *out);
/* Wipes and frees; NULL is ignored. */
void copenssl_hmac_key_free(copenssl_hmac_key *key);
#endif
