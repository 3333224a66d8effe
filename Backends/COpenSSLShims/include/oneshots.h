#ifndef SECURITYSERVICES_COPENSSLSHIMS_ONESHOTS_H
#define SECURITYSERVICES_COPENSSLSHIMS_ONESHOTS_H
/* The software backend's one-shot fast paths (issue 21): a per-thread cache of keyed cipher contexts, and digests
 * and HMACs on OpenSSL's low-level hash functions instead of EVP. Each thread's cache is wiped and freed when the
 * thread exits; an evicted entry's key schedule is overwritten (re-keyed in place) or cleansed (reset by OpenSSL). */
#include <openssl/evp.h>
#include <stddef.h>

/* A cipher context of this thread keyed with `key` for `cipher` and `encrypt`, its IV set to `iv` (may be NULL
 * for modes without one), padding on or off: ready for EVP_CipherUpdate/EVP_CipherFinal_ex. A key seen recently
 * on this thread skips key expansion. `cipher` must be a block cipher whose key schedule does not change while it
 * runs (not a stream cipher such as RC4) and `keylen` at most 32 bytes; NULL on OpenSSL failure or no memory. */
EVP_CIPHER_CTX *copenssl_keyed_cipher(const EVP_CIPHER *cipher, int encrypt, const unsigned char *key, size_t keylen,
                                      const unsigned char *iv, int padding);

/* Forgets this thread's keyed cipher contexts and HMAC key states, wiping them; the next call keys afresh. */
void copenssl_oneshot_cache_flush(void);

/* The hashes with a low-level one-shot here; any other answers 0 from both calls below. */
enum copenssl_hash { COPENSSL_MD5 = 1, COPENSSL_SHA1, COPENSSL_SHA224, COPENSSL_SHA256, COPENSSL_SHA384, COPENSSL_SHA512 };

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
