/* The software backend's one-shot fast paths (see oneshots.h).
 *
 * Why: a one-shot call through EVP re-keys a context per call, and re-keying with a cipher named frees and
 * remakes the provider's context, then sets its padding through OSSL_PARAM lookups (string compares); a 16-byte
 * AES call spends most of its time there. A thread keeps a few contexts, one per cipher and direction: a call's key
 * is expanded in place over the schedule there, and when the call ends the schedule is overwritten by the all-zero
 * key's (copenssl_keyed_cipher_forget), so no key outlives the call that brought it (a caller of CCCrypt wipes its key
 * and expects the library to hold none). Digests and HMACs of short messages spend most of their time in EVP's
 * dispatch; the low-level hash calls run the same assembly without it, and an HMAC's keyed states live on the
 * call's stack. */
#define OPENSSL_SUPPRESS_DEPRECATED /* MD5_Init, SHA1_Init…: deprecated in 3.0, still the cheapest entry points */
#include "oneshots.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/md5.h>
#include <openssl/params.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

enum { CIPHER_ENTRIES = 4, CIPHER_KEY_MAX = 32, HASH_BLOCK_MAX = 128, HASH_SIZE_MAX = 64 };

/* Wipes secrets (keys, hash states that absorbed a message). explicit_bzero, not OPENSSL_cleanse: neither is
 * optimized away, but OPENSSL_cleanse stores a byte at a time; wiping the SHA-1 one-shot's state with it cost 10 ns of
 * a 67 ns call on 64 bytes (secbench, software backend). */
static void wipe(void *p, size_t n) { explicit_bzero(p, n); }

/* wipe for a few dozen bytes of the stack whose size the compiler knows: memset, then an empty asm that is given the
 * pointer and clobbers memory, so the compiler must assume the zeros are read and keeps the stores (BoringSSL's
 * OPENSSL_cleanse does the same). The stores are inlined; explicit_bzero is a call through the PLT into memset, which
 * twice per one-shot digest was a fifth of its instructions. */
static inline __attribute__((always_inline)) void wipe_inline(void *p, size_t n) {
    memset(p, 0, n);
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

union hash_state {
    MD5_CTX md5;
    SHA_CTX sha1;
    SHA256_CTX sha256; /* SHA-224 too */
    SHA512_CTX sha512; /* SHA-384 too */
};

/* A context made for one cipher and direction; between calls its schedule is the all-zero key's. */
struct cipher_entry {
    EVP_CIPHER_CTX *ctx;
    const EVP_CIPHER *cipher; /* NULL: the context is made for no cipher (new, or reset after a failure) */
    int encrypt;
    int padding;
    size_t keylen;
    uint64_t used;
};

struct thread_cache {
    uint64_t clock;
    struct cipher_entry ciphers[CIPHER_ENTRIES];
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
}

static void cache_free(void *raw) {
    struct thread_cache *cache = raw;
    for (int i = 0; i < CIPHER_ENTRIES; i++) EVP_CIPHER_CTX_free(cache->ciphers[i].ctx); /* cleanses the schedule */
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
        if (candidate->cipher == cipher && candidate->encrypt == encrypt && candidate->keylen == keylen) {
            entry = candidate;
            break;
        }
        if (candidate->used < victim->used) victim = candidate;
    }
    if (entry == NULL) {
        entry = victim;
        if (entry->ctx == NULL && (entry->ctx = EVP_CIPHER_CTX_new()) == NULL) return NULL;
    }
    /* The same cipher and direction: expand the key in place over the schedule there. Else name the cipher: OpenSSL
     * cleanses and frees the old provider context and makes one for this cipher. */
    const EVP_CIPHER *named = entry->cipher == cipher && entry->encrypt == encrypt ? NULL : cipher;
    entry->cipher = NULL; /* unusable until keyed */
    if (EVP_CipherInit_ex2(entry->ctx, named, key, iv, encrypt, NULL) != 1) goto fail;
    if (named != NULL) entry->padding = 1;
    entry->cipher = cipher;
    entry->encrypt = encrypt;
    entry->keylen = keylen;
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

/* This thread's cache when it has made one (after copenssl_keyed_cipher), else NULL. */
static struct thread_cache *existing_thread_cache(void) {
    return cache_key_made ? pthread_getspecific(cache_key) : NULL;
}

/* This thread's entry holding `ctx`; NULL when it is none of them. */
static struct cipher_entry *entry_of(EVP_CIPHER_CTX *ctx) {
    struct thread_cache *cache = existing_thread_cache();
    if (cache == NULL) return NULL;
    for (int i = 0; i < CIPHER_ENTRIES; i++) {
        if (cache->ciphers[i].ctx == ctx) return &cache->ciphers[i];
    }
    return NULL;
}

void copenssl_keyed_cipher_forget(EVP_CIPHER_CTX *ctx) {
    static const unsigned char zeros[CIPHER_KEY_MAX] = {0};
    struct cipher_entry *entry = entry_of(ctx);
    if (entry == NULL || entry->cipher == NULL) return;
    /* The all-zero key expanded over the call's schedule; where a cipher refuses it, the context is cleansed. */
    if (EVP_CipherInit_ex2(ctx, NULL, zeros, NULL, entry->encrypt, NULL) != 1) entry_forget(entry);
}

int copenssl_keyed_cipher_probe(int nid, int encrypt, const unsigned char *in, size_t length, unsigned char *out) {
    struct thread_cache *cache = existing_thread_cache();
    if (cache == NULL) return 0;
    for (int i = 0; i < CIPHER_ENTRIES; i++) {
        struct cipher_entry *entry = &cache->ciphers[i];
        if (entry->cipher == NULL || EVP_CIPHER_get_nid(entry->cipher) != nid || entry->encrypt != (encrypt != 0)) continue;
        int written = 0;
        return EVP_CipherInit_ex2(entry->ctx, NULL, NULL, NULL, entry->encrypt, NULL) == 1 &&
               EVP_CipherUpdate(entry->ctx, out, &written, in, (int)length) == 1 && (size_t)written == length;
    }
    return 0;
}

/* The low-level hash calls, by hash. Written out rather than through cast function pointers (UBSan's function
 * check rejects calls through a pointer of another type). */

static size_t hash_block(int hash) { return hash == COPENSSL_SHA384 || hash == COPENSSL_SHA512 ? 128 : 64; }

static size_t hash_size(int hash) { return copenssl_oneshot_size(hash); }

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

/* What a 64-byte-block hash's state holds besides its buffer: the chaining value and the byte count (MD5 24 bytes,
 * SHA-1 28, SHA-224/256 40), rounded up to whole 16-byte stores. The one-shot starts and wipes only these. */
enum { HASH64_PREFIX = 48 };
_Static_assert(offsetof(MD5_CTX, data) <= HASH64_PREFIX && offsetof(SHA_CTX, data) <= HASH64_PREFIX &&
                   offsetof(SHA256_CTX, data) <= HASH64_PREFIX,
               "the prefix covers every 64-byte-block hash's chaining value and count");

/* Every hash's state as its Init call leaves it, made once at load (the low-level Init calls are pure). */
static union hash_state initial_states[COPENSSL_SHA512 + 1];

__attribute__((constructor)) static void make_initial_states(void) {
    for (int hash = COPENSSL_MD5; hash <= COPENSSL_SHA512; hash++) hash_init(hash, &initial_states[hash]);
}

/* hash_init by copying the initial state: whole 16-byte stores, which the block function's first 16-byte loads of the
 * chaining value are forwarded from. The Init calls store it 4 or 8 bytes at a time, and a 16-byte load cannot be
 * forwarded from narrower stores: it waits until they (and every store before them) reach the cache. Where the first
 * block follows at once (messages of a block or more) that wait was 10 ns of a 73 ns SHA-1 call on 64 bytes through
 * the dispatcher (secbench), the more the deeper the caller's frame. */
static void hash_start(int hash, union hash_state *state) {
    switch (hash) {
    case COPENSSL_MD5: state->md5 = initial_states[hash].md5; break;
    case COPENSSL_SHA1: state->sha1 = initial_states[hash].sha1; break;
    case COPENSSL_SHA224:
    case COPENSSL_SHA256: state->sha256 = initial_states[hash].sha256; break;
    default: state->sha512 = initial_states[hash].sha512; break;
    }
}

#if defined(__x86_64__)
/* One block into the chaining value of a 64-byte-block hash (the Transform calls run the block function on the state's
 * chaining value alone: no byte count, no buffer, as the Update calls keep). */
static inline void hash_transform(int hash, union hash_state *state, const unsigned char *block) {
    switch (hash) {
    case COPENSSL_MD5: MD5_Transform(&state->md5, block); break;
    case COPENSSL_SHA1: SHA1_Transform(&state->sha1, block); break;
    default: SHA256_Transform(&state->sha256, block); break; /* SHA-224 too */
    }
}

/* hash_start for a one-shot of a 64-byte-block hash, which runs no Final: the chaining value and the count only
 * (hash_finish gives the Update call for whole blocks an empty buffer; the Transform calls read the chaining value). */
static inline void hash64_start(int hash, union hash_state *state) { memcpy(state, &initial_states[hash], HASH64_PREFIX); }

/* The padded last blocks of a one-shot, written 16 bytes at a time (x86-64, SSE2).
 *
 * Why: the Final calls pad in the context a byte or a word at a time and then run the block function, whose 16-byte
 * loads cannot be forwarded from those narrower stores: each waits until every store before it has reached the
 * cache. That wait grows with whatever the caller stored just before (a deeper frame, a counter): the same SHA-1 of
 * 64 bytes cost 55 ns from the software backend and 63 ns through the dispatcher (secbench, one backend per process).
 * Built here, each 16 bytes the block function loads come from one 16-byte store: 50 and 54 ns, and 16 bytes went
 * from 46 to 35 ns. */

/* The first n (< 16) bytes at p in the low bytes of a vector, zeros above, reading no byte outside p[0..n). */
static __m128i load_partial(const unsigned char *p, size_t n) {
    uint64_t low = 0, high = 0;
    if (n >= 8) {
        memcpy(&low, p, 8);
        if (n > 8) {
            uint64_t last8;
            memcpy(&last8, p + n - 8, 8);
            high = last8 >> (8 * (16 - n)); /* p[8..n) into the high half's low bytes */
        }
    } else if (n >= 4) {
        uint32_t first4, last4;
        memcpy(&first4, p, 4);
        memcpy(&last4, p + n - 4, 4);
        low = (uint64_t)first4 | (uint64_t)last4 << (8 * (n - 4)); /* the overlap holds the same bytes twice */
    } else if (n > 0) {
        low = (uint64_t)p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) | (uint64_t)p[n - 1] << (8 * (n - 1));
    }
    return _mm_set_epi64x((long long)high, (long long)low);
}

/* The last one or two 64-byte blocks of MD5, SHA-1 or SHA-224/256 for a message of `length` bytes whose last
 * `tail` (< 64) bytes are at `rest`: those bytes, 0x80, zeros, and the length in bits in the last 8 bytes (big-endian,
 * little-endian for MD5). Returns the number of blocks. */
static inline size_t last_blocks64(unsigned char blocks[128], const unsigned char *rest, size_t tail, uint64_t length,
                            int big_endian) {
    uint64_t bits = length * 8;
    if (big_endian) bits = __builtin_bswap64(bits);
    __m128i *chunks = (__m128i *)blocks;
    size_t full = tail / 16, at = tail % 16; /* chunks wholly of the message; where 0x80 goes in the next */
    /* Written out, not as loops: the compiler turned those into calls of memcpy and memset, whose wider stores the
     * block function's 16-byte loads are not forwarded from (SHA-1 of 16 bytes 37 % slower). */
    switch (full) {
    case 3: _mm_store_si128(chunks + 2, _mm_loadu_si128((const __m128i *)(rest + 32))); /* fall through */
    case 2: _mm_store_si128(chunks + 1, _mm_loadu_si128((const __m128i *)(rest + 16))); /* fall through */
    case 1: _mm_store_si128(chunks, _mm_loadu_si128((const __m128i *)rest)); break;
    }
    __m128i marked = _mm_or_si128(load_partial(rest + 16 * full, at),
                                  at < 8 ? _mm_set_epi64x(0, (long long)(0x80ULL << (8 * at)))
                                         : _mm_set_epi64x((long long)(0x80ULL << (8 * (at - 8))), 0));
    __m128i length_chunk = _mm_set_epi64x((long long)bits, 0), zero = _mm_setzero_si128();
    if (tail >= 56) { /* no room for the length: a second block of zeros and the length */
        _mm_store_si128(chunks + 3, marked);
        _mm_store_si128(chunks + 4, zero);
        _mm_store_si128(chunks + 5, zero);
        _mm_store_si128(chunks + 6, zero);
        _mm_store_si128(chunks + 7, length_chunk);
        return 2;
    }
    if (full == 3) {
        _mm_store_si128(chunks + 3, _mm_or_si128(marked, length_chunk));
        return 1;
    }
    _mm_store_si128(chunks + full, marked);
    switch (full) {
    case 0: _mm_store_si128(chunks + 1, zero); /* fall through */
    case 1: _mm_store_si128(chunks + 2, zero); break;
    }
    _mm_store_si128(chunks + 3, length_chunk);
    return 1;
}

/* The digest of a 64-byte-block hash from its state after the last block. */
static inline void write_digest64(int hash, const union hash_state *state, unsigned char *out) {
    if (hash == COPENSSL_MD5) { /* A..D are consecutive and little-endian, as x86-64 stores them */
        memcpy(out, &state->md5.A, MD5_DIGEST_LENGTH);
        return;
    }
    const SHA_LONG *words = hash == COPENSSL_SHA1 ? &state->sha1.h0 : state->sha256.h; /* h0..h4 are consecutive */
    size_t count = hash_size(hash) / 4, i = 0;
    for (; i + 2 <= count; i += 2) { /* two words per 8-byte swap, which also exchanges them: the rotate undoes that */
        uint64_t pair;
        memcpy(&pair, words + i, 8);
        pair = __builtin_bswap64(pair);
        pair = pair >> 32 | pair << 32;
        memcpy(out + 4 * i, &pair, 8);
    }
    if (i < count) {
        uint32_t word = __builtin_bswap32(words[i]);
        memcpy(out + 4 * i, &word, 4);
    }
}
#endif

/* Absorbs `in` into `state`, which has absorbed `absorbed` bytes before (whole blocks), and writes the digest to out.
 * The state is left for the caller to wipe. Inlined: called out of line, it put a frame between the one-shot and
 * the block function, and SHA-1 of 16 bytes through the dispatcher went from 408 to 395 MB/s. */
static inline __attribute__((always_inline)) void hash_finish(int hash, union hash_state *state,
                                                             const unsigned char *in, size_t length, size_t absorbed,
                                                             unsigned char *out) {
#if defined(__x86_64__)
    if (hash_block(hash) == 64) {
        size_t whole = length & ~(size_t)63;
        _Alignas(16) unsigned char last[128];
        if (whole > 0) { /* whole blocks go to the block function straight from `in`, through an empty buffer */
            switch (hash) {
            case COPENSSL_MD5: state->md5.num = 0; break;
            case COPENSSL_SHA1: state->sha1.num = 0; break;
            default: state->sha256.num = 0; break;
            }
            hash_update(hash, state, in, whole);
        }
        size_t count = last_blocks64(last, in + whole, length - whole, absorbed + length, hash != COPENSSL_MD5);
        hash_transform(hash, state, last);
        if (count == 2) hash_transform(hash, state, last + 64);
        write_digest64(hash, state, out);
        wipe_inline(last, 64); /* the message's last bytes */
        if (count == 2) wipe_inline(last + 64, 64);
        return;
    }
#endif
    (void)absorbed; /* the Final call counts what its state absorbed */
    hash_update(hash, state, in, length);
    hash_final(hash, state, out);
}

#if defined(__x86_64__)
/* The one-shot of a 64-byte-block hash, inlined once per hash so that each copy is compiled for its constant. */
static inline __attribute__((always_inline)) int digest64(int hash, const unsigned char *in, size_t length,
                                                          unsigned char *out) {
    union hash_state state;
    hash64_start(hash, &state);
    hash_finish(hash, &state, in, length, 0, out);
    wipe_inline(&state, HASH64_PREFIX); /* the message may be a secret */
    return 1;
}
#endif

int copenssl_digest_oneshot(int hash, const unsigned char *in, size_t length, unsigned char *out) {
#if defined(__x86_64__)
    switch (hash) {
    case COPENSSL_MD5: return digest64(COPENSSL_MD5, in, length, out);
    case COPENSSL_SHA1: return digest64(COPENSSL_SHA1, in, length, out);
    case COPENSSL_SHA224: return digest64(COPENSSL_SHA224, in, length, out);
    case COPENSSL_SHA256: return digest64(COPENSSL_SHA256, in, length, out);
    }
#endif
    if (hash_size(hash) == 0) return 0;
    union hash_state state;
    hash_start(hash, &state);
    hash_finish(hash, &state, in, length, 0, out);
    wipe(&state, hash_state_size(hash));
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
        hash_start(hash, &state);
        hash_update(hash, &state, key, keylen);
        hash_final(hash, &state, pad);
        wipe(&state, sizeof state);
    } else if (keylen > 0) {
        memcpy(pad, key, keylen);
    }
    for (size_t i = 0; i < block; i++) pad[i] ^= 0x36;
    hash_start(hash, inner);
    hash_update(hash, inner, pad, block);
    for (size_t i = 0; i < block; i++) pad[i] ^= 0x36 ^ 0x5c;
    hash_start(hash, outer);
    hash_update(hash, outer, pad, block);
    wipe(pad, sizeof pad);
}

/* RFC 2104's two passes from the keyed states (the caller's copies, which absorb the message and are wiped here). */
static void hmac_finish(int hash, union hash_state *inner, union hash_state *outer, const unsigned char *in,
                        size_t length, unsigned char *out) {
    size_t size = hash_size(hash);
    unsigned char inner_digest[HASH_SIZE_MAX];
    hash_finish(hash, inner, in, length, hash_block(hash), inner_digest);
    hash_finish(hash, outer, inner_digest, size, hash_block(hash), out);
    wipe(inner, hash_state_size(hash));
    wipe(outer, hash_state_size(hash));
    wipe(inner_digest, size);
}

/* hmac_finish from keyed states (a cache entry's, a key's), on copies made here. For a 64-byte-block hash the copies
 * and their wipes are of the chaining value and count alone (HASH64_PREFIX), in inline stores: the whole state's
 * copies and wipes were calls of memcpy and explicit_bzero, five per call. */
static void hmac_run(int hash, const union hash_state *keyed_inner, const union hash_state *keyed_outer,
                     const unsigned char *in, size_t length, unsigned char *out) {
    union hash_state inner, outer;
#if defined(__x86_64__)
    if (hash_block(hash) == 64) {
        _Alignas(16) unsigned char inner_digest[32];
        memcpy(&inner, keyed_inner, HASH64_PREFIX);
        memcpy(&outer, keyed_outer, HASH64_PREFIX);
        hash_finish(hash, &inner, in, length, 64, inner_digest);
        hash_finish(hash, &outer, inner_digest, hash_size(hash), 64, out);
        wipe_inline(&inner, HASH64_PREFIX);
        wipe_inline(&outer, HASH64_PREFIX);
        wipe_inline(inner_digest, sizeof inner_digest);
        return;
    }
#endif
    memcpy(&inner, keyed_inner, hash_state_size(hash));
    memcpy(&outer, keyed_outer, hash_state_size(hash));
    hmac_finish(hash, &inner, &outer, in, length, out);
}

int copenssl_hmac_oneshot(int hash, const unsigned char *key, size_t keylen, const unsigned char *in, size_t length,
                          unsigned char *out) {
    if (hash_size(hash) == 0) return 0;
    /* The keyed states on this call's stack, wiped by hmac_finish: nothing of the key outlives the call. */
    union hash_state inner, outer;
    hmac_pads(hash, key, keylen, &inner, &outer);
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
    hmac_run(key->hash, &key->inner, &key->outer, in, length, out);
}

void copenssl_hmac_key_free(copenssl_hmac_key *key) {
    if (key == NULL) return;
    wipe(key, sizeof *key);
    free(key);
}
