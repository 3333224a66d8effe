/* The software backend's one-shot fast paths (see oneshots.h).
 *
 * Why: a one-shot call through EVP re-keys a context per call, and re-keying with a cipher named frees and
 * remakes the provider's context, then sets its padding through OSSL_PARAM lookups (string compares); a 16-byte
 * AES call spends most of its time there. A thread keeps a few keyed contexts: a repeated key only sets the IV, a
 * new key for a cipher already held is expanded in place. Digests and HMACs of short messages spend most of their
 * time in EVP's dispatch; the low-level hash calls run the same assembly without it. */
#define OPENSSL_SUPPRESS_DEPRECATED /* MD5_Init, SHA1_Init…: deprecated in 3.0, still the cheapest entry points */
#include "oneshots.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/md5.h>
#include <openssl/params.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { CIPHER_ENTRIES = 4, CIPHER_KEY_MAX = 32, HMAC_ENTRIES = 4, HASH_BLOCK_MAX = 128, HASH_SIZE_MAX = 64 };

union hash_state {
    MD5_CTX md5;
    SHA_CTX sha1;
    SHA256_CTX sha256; /* SHA-224 too */
    SHA512_CTX sha512; /* SHA-384 too */
};

struct cipher_entry {
    EVP_CIPHER_CTX *ctx;
    const EVP_CIPHER *cipher; /* NULL: the entry holds no usable key */
    int encrypt;
    int padding;
    size_t keylen;
    uint64_t used;
    unsigned char key[CIPHER_KEY_MAX];
};

struct hmac_entry {
    int hash; /* 0: empty */
    size_t keylen;
    uint64_t used;
    unsigned char key[HASH_BLOCK_MAX];
    union hash_state inner, outer; /* after absorbing key ^ ipad and key ^ opad */
};

struct thread_cache {
    uint64_t clock;
    struct cipher_entry ciphers[CIPHER_ENTRIES];
    struct hmac_entry hmacs[HMAC_ENTRIES];
};

static pthread_key_t cache_key;
static int cache_key_made;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

/* Empties an entry, keeping its context for reuse: EVP_CIPHER_CTX_reset cleanses the provider's context (the key
 * schedule) before freeing it, and a reset context pads. */
static void entry_forget(struct cipher_entry *entry) {
    if (entry->ctx != NULL) EVP_CIPHER_CTX_reset(entry->ctx);
    entry->cipher = NULL;
    entry->keylen = 0;
    entry->padding = 1;
    OPENSSL_cleanse(entry->key, sizeof entry->key);
}

static void cache_forget(struct thread_cache *cache) {
    for (int i = 0; i < CIPHER_ENTRIES; i++) entry_forget(&cache->ciphers[i]);
    OPENSSL_cleanse(cache->hmacs, sizeof cache->hmacs);
}

static void cache_free(void *raw) {
    struct thread_cache *cache = raw;
    cache_forget(cache);
    for (int i = 0; i < CIPHER_ENTRIES; i++) EVP_CIPHER_CTX_free(cache->ciphers[i].ctx);
    free(cache);
}

static void cache_make_key(void) {
    /* The destructor runs at thread exit with the thread's cache. */
    cache_key_made = pthread_key_create(&cache_key, cache_free) == 0;
}

/* This thread's cache, made on first use; NULL when no memory or no thread-specific key is left. */
static struct thread_cache *thread_cache(void) {
    pthread_once(&cache_once, cache_make_key);
    if (!cache_key_made) return NULL;
    struct thread_cache *cache = pthread_getspecific(cache_key);
    if (cache != NULL) return cache;
    cache = calloc(1, sizeof *cache);
    if (cache == NULL) return NULL;
    for (int i = 0; i < CIPHER_ENTRIES; i++) cache->ciphers[i].padding = 1;
    if (pthread_setspecific(cache_key, cache) != 0) {
        free(cache);
        return NULL;
    }
    return cache;
}

/* Padding on or off, told to the provider's context only. EVP_CIPHER_CTX_set_padding would also set the context's
 * EVP_CIPH_NO_PADDING flag, and EVP_CipherInit_ex2 re-applies a set flag through OSSL_PARAM lookups on every call;
 * the provider's context keeps its padding across re-initialisations (and a cipher named again makes a fresh
 * context that pads, which `padding` of the entry then says). */
static int set_padding(EVP_CIPHER_CTX *ctx, int padding) {
    unsigned int value = (unsigned int)padding;
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_uint(OSSL_CIPHER_PARAM_PADDING, &value),
        OSSL_PARAM_construct_end(),
    };
    return EVP_CIPHER_CTX_set_params(ctx, params) == 1;
}

EVP_CIPHER_CTX *copenssl_keyed_cipher(const EVP_CIPHER *cipher, int encrypt, const unsigned char *key, size_t keylen,
                                      const unsigned char *iv, int padding) {
    if (cipher == NULL || key == NULL || keylen == 0 || keylen > CIPHER_KEY_MAX) return NULL;
    struct thread_cache *cache = thread_cache();
    if (cache == NULL) return NULL;
    encrypt = encrypt != 0;
    padding = padding != 0;

    struct cipher_entry *entry = NULL, *victim = &cache->ciphers[0];
    for (int i = 0; i < CIPHER_ENTRIES; i++) {
        struct cipher_entry *candidate = &cache->ciphers[i];
        if (candidate->cipher == cipher && candidate->encrypt == encrypt && candidate->keylen == keylen &&
            CRYPTO_memcmp(candidate->key, key, keylen) == 0) {
            entry = candidate;
            break;
        }
        if (candidate->used < victim->used) victim = candidate;
    }

    if (entry != NULL) {
        /* No cipher and no key: OpenSSL keeps the context and its key schedule and only resets the IV and state. */
        if (EVP_CipherInit_ex2(entry->ctx, NULL, NULL, iv, encrypt, NULL) != 1) goto fail;
    } else {
        entry = victim;
        if (entry->ctx == NULL && (entry->ctx = EVP_CIPHER_CTX_new()) == NULL) return NULL;
        /* The same cipher and direction: expand the new key in place over the old schedule. Else name the cipher:
         * OpenSSL cleanses and frees the old provider context and makes one for this cipher. */
        const EVP_CIPHER *named = entry->cipher == cipher && entry->encrypt == encrypt ? NULL : cipher;
        entry->cipher = NULL; /* unusable until keyed */
        if (EVP_CipherInit_ex2(entry->ctx, named, key, iv, encrypt, NULL) != 1) goto fail;
        if (named != NULL) entry->padding = 1;
        memcpy(entry->key, key, keylen);
        if (keylen < CIPHER_KEY_MAX) OPENSSL_cleanse(entry->key + keylen, CIPHER_KEY_MAX - keylen);
        entry->cipher = cipher;
        entry->encrypt = encrypt;
        entry->keylen = keylen;
    }
    if (entry->padding != padding) {
        if (!set_padding(entry->ctx, padding)) goto fail;
        entry->padding = padding;
    }
    entry->used = ++cache->clock;
    return entry->ctx;

fail:
    entry_forget(entry); /* a half-initialised context must not be found again */
    return NULL;
}

void copenssl_oneshot_cache_flush(void) {
    pthread_once(&cache_once, cache_make_key);
    if (!cache_key_made) return;
    struct thread_cache *cache = pthread_getspecific(cache_key);
    if (cache != NULL) cache_forget(cache);
}

/* The low-level hash calls, by hash. Written out rather than through cast function pointers (UBSan's function
 * check rejects calls through a pointer of another type). */

static size_t hash_block(int hash) { return hash == COPENSSL_SHA384 || hash == COPENSSL_SHA512 ? 128 : 64; }

static size_t hash_size(int hash) {
    switch (hash) {
    case COPENSSL_MD5: return MD5_DIGEST_LENGTH;
    case COPENSSL_SHA1: return SHA_DIGEST_LENGTH;
    case COPENSSL_SHA224: return SHA224_DIGEST_LENGTH;
    case COPENSSL_SHA256: return SHA256_DIGEST_LENGTH;
    case COPENSSL_SHA384: return SHA384_DIGEST_LENGTH;
    case COPENSSL_SHA512: return SHA512_DIGEST_LENGTH;
    default: return 0;
    }
}

/* The bytes of the union a hash's state uses: copied and wiped instead of the whole union, which is sized for
 * SHA-512 (a SHA-256 HMAC copied and cleansed 432 bytes of state where it uses 224). */
static size_t hash_state_size(int hash) {
    switch (hash) {
    case COPENSSL_MD5: return sizeof(MD5_CTX);
    case COPENSSL_SHA1: return sizeof(SHA_CTX);
    case COPENSSL_SHA224:
    case COPENSSL_SHA256: return sizeof(SHA256_CTX);
    default: return sizeof(SHA512_CTX);
    }
}

static void hash_init(int hash, union hash_state *state) {
    switch (hash) {
    case COPENSSL_MD5: MD5_Init(&state->md5); break;
    case COPENSSL_SHA1: SHA1_Init(&state->sha1); break;
    case COPENSSL_SHA224: SHA224_Init(&state->sha256); break;
    case COPENSSL_SHA256: SHA256_Init(&state->sha256); break;
    case COPENSSL_SHA384: SHA384_Init(&state->sha512); break;
    case COPENSSL_SHA512: SHA512_Init(&state->sha512); break;
    }
}

static void hash_update(int hash, union hash_state *state, const unsigned char *in, size_t length) {
    if (length == 0) return;
    switch (hash) {
    case COPENSSL_MD5: MD5_Update(&state->md5, in, length); break;
    case COPENSSL_SHA1: SHA1_Update(&state->sha1, in, length); break;
    case COPENSSL_SHA224: SHA224_Update(&state->sha256, in, length); break;
    case COPENSSL_SHA256: SHA256_Update(&state->sha256, in, length); break;
    case COPENSSL_SHA384: SHA384_Update(&state->sha512, in, length); break;
    case COPENSSL_SHA512: SHA512_Update(&state->sha512, in, length); break;
    }
}

static void hash_final(int hash, union hash_state *state, unsigned char *out) {
    switch (hash) {
    case COPENSSL_MD5: MD5_Final(out, &state->md5); break;
    case COPENSSL_SHA1: SHA1_Final(out, &state->sha1); break;
    case COPENSSL_SHA224: SHA224_Final(out, &state->sha256); break;
    case COPENSSL_SHA256: SHA256_Final(out, &state->sha256); break;
    case COPENSSL_SHA384: SHA384_Final(out, &state->sha512); break;
    case COPENSSL_SHA512: SHA512_Final(out, &state->sha512); break;
    }
}

int copenssl_digest_oneshot(int hash, const unsigned char *in, size_t length, unsigned char *out) {
    if (hash_size(hash) == 0) return 0;
    union hash_state state;
    hash_init(hash, &state);
    hash_update(hash, &state, in, length);
    hash_final(hash, &state, out);
    OPENSSL_cleanse(&state, hash_state_size(hash)); /* the message may be a secret */
    return 1;
}

/* RFC 2104: the states after absorbing K ^ ipad and K ^ opad, K being the key (hashed first when longer than a
 * block) padded with zeros to a block. */
static void hmac_pads(int hash, const unsigned char *key, size_t keylen, union hash_state *inner,
                      union hash_state *outer) {
    size_t block = hash_block(hash);
    unsigned char pad[HASH_BLOCK_MAX] = {0};
    if (keylen > block) {
        union hash_state state;
        hash_init(hash, &state);
        hash_update(hash, &state, key, keylen);
        hash_final(hash, &state, pad);
        OPENSSL_cleanse(&state, sizeof state);
    } else if (keylen > 0) {
        memcpy(pad, key, keylen);
    }
    for (size_t i = 0; i < block; i++) pad[i] ^= 0x36;
    hash_init(hash, inner);
    hash_update(hash, inner, pad, block);
    for (size_t i = 0; i < block; i++) pad[i] ^= 0x36 ^ 0x5c;
    hash_init(hash, outer);
    hash_update(hash, outer, pad, block);
    OPENSSL_cleanse(pad, sizeof pad);
}

/* This thread's entry for (hash, key), made (evicting the least recently used) when missing; NULL when the key is
 * longer than a block or there is no cache. */
static struct hmac_entry *hmac_entry(int hash, const unsigned char *key, size_t keylen) {
    if (keylen > hash_block(hash)) return NULL;
    struct thread_cache *cache = thread_cache();
    if (cache == NULL) return NULL;
    struct hmac_entry *victim = &cache->hmacs[0];
    for (int i = 0; i < HMAC_ENTRIES; i++) {
        struct hmac_entry *candidate = &cache->hmacs[i];
        if (candidate->hash == hash && candidate->keylen == keylen &&
            (keylen == 0 || CRYPTO_memcmp(candidate->key, key, keylen) == 0)) {
            candidate->used = ++cache->clock;
            return candidate;
        }
        if (candidate->used < victim->used) victim = candidate;
    }
    OPENSSL_cleanse(victim, sizeof *victim);
    hmac_pads(hash, key, keylen, &victim->inner, &victim->outer);
    if (keylen > 0) memcpy(victim->key, key, keylen);
    victim->hash = hash;
    victim->keylen = keylen;
    victim->used = ++cache->clock;
    return victim;
}

/* RFC 2104's two passes from the keyed states (the caller's copies, which absorb the message and are wiped here). */
static void hmac_finish(int hash, union hash_state *inner, union hash_state *outer, const unsigned char *in,
                        size_t length, unsigned char *out) {
    size_t size = hash_size(hash);
    unsigned char inner_digest[HASH_SIZE_MAX];
    hash_update(hash, inner, in, length);
    hash_final(hash, inner, inner_digest);
    hash_update(hash, outer, inner_digest, size);
    hash_final(hash, outer, out);
    OPENSSL_cleanse(inner, hash_state_size(hash));
    OPENSSL_cleanse(outer, hash_state_size(hash));
    OPENSSL_cleanse(inner_digest, size);
}

int copenssl_hmac_oneshot(int hash, const unsigned char *key, size_t keylen, const unsigned char *in, size_t length,
                          unsigned char *out) {
    if (hash_size(hash) == 0) return 0;
    union hash_state inner, outer;
    struct hmac_entry *entry = hmac_entry(hash, key, keylen);
    if (entry != NULL) {
        memcpy(&inner, &entry->inner, hash_state_size(hash));
        memcpy(&outer, &entry->outer, hash_state_size(hash));
    } else {
        hmac_pads(hash, key, keylen, &inner, &outer);
    }
    hmac_finish(hash, &inner, &outer, in, length, out);
    return 1;
}

struct copenssl_hmac_key {
    int hash;
    union hash_state inner, outer;
};

copenssl_hmac_key *copenssl_hmac_key_new(int hash, const unsigned char *key, size_t keylen) {
    if (hash_size(hash) == 0) return NULL;
    copenssl_hmac_key *made = calloc(1, sizeof *made);
    if (made == NULL) return NULL;
    made->hash = hash;
    hmac_pads(hash, key, keylen, &made->inner, &made->outer);
    return made;
}

void copenssl_hmac_key_run(const copenssl_hmac_key *key, const unsigned char *in, size_t length, unsigned char *out) {
    union hash_state inner, outer;
    memcpy(&inner, &key->inner, hash_state_size(key->hash));
    memcpy(&outer, &key->outer, hash_state_size(key->hash));
    hmac_finish(key->hash, &inner, &outer, in, length, out);
}

void copenssl_hmac_key_free(copenssl_hmac_key *key) {
    if (key == NULL) return;
    OPENSSL_cleanse(key, sizeof *key);
    free(key);
}
