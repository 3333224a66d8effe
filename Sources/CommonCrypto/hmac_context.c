/* CCHmacInit/Update/Final: the whole HMAC state in the caller's CCHmacContext (384 bytes, no release call).
 * It holds the inner digest state (key XOR ipad already absorbed) and the outer chaining value after
 * key XOR opad: one block, so the outer digest is resumed from it at Final. The one-shot CCHmac is
 * elsewhere (Swift): it goes through the dispatcher. */
#define OPENSSL_SUPPRESS_DEPRECATED /* the low-level digest API is what works on caller memory */
#include <openssl/crypto.h>
#include <openssl/md5.h>
#include <openssl/sha.h>
#include <string.h>

#include "CommonCrypto/CommonHMAC.h"

typedef struct {
    uint32_t algorithm; /* CCHmacAlgorithm + 1; 0 = not initialised or finished */
    uint32_t reserved;
    union {
        MD5_CTX md5;
        SHA_CTX sha1;
        SHA256_CTX sha256;
        SHA512_CTX sha512;
    } inner;
    unsigned char outer[64]; /* outer chaining value (the first words of the digest state) */
} hmac_state;

_Static_assert(sizeof(hmac_state) <= sizeof(CCHmacContext), "the HMAC state fits in CCHmacContext");


static size_t block_size(uint32_t a) { return a == kCCHmacAlgSHA384 || a == kCCHmacAlgSHA512 ? 128 : 64; }

static size_t digest_size(uint32_t a) {
    switch (a) {
    case kCCHmacAlgMD5: return 16;
    case kCCHmacAlgSHA1: return 20;
    case kCCHmacAlgSHA224: return 28;
    case kCCHmacAlgSHA256: return 32;
    case kCCHmacAlgSHA384: return 48;
    default: return 64;
    }
}

/* Bytes of chaining value at the start of each state struct. */
static size_t chain_size(uint32_t a) {
    switch (a) {
    case kCCHmacAlgMD5: return 16;
    case kCCHmacAlgSHA1: return 20;
    case kCCHmacAlgSHA224: case kCCHmacAlgSHA256: return 32;
    default: return 64;
    }
}

static void begin(uint32_t a, void *s) {
    switch (a) {
    case kCCHmacAlgMD5: MD5_Init(s); break;
    case kCCHmacAlgSHA1: SHA1_Init(s); break;
    case kCCHmacAlgSHA224: SHA224_Init(s); break;
    case kCCHmacAlgSHA256: SHA256_Init(s); break;
    case kCCHmacAlgSHA384: SHA384_Init(s); break;
    default: SHA512_Init(s); break;
    }
}

static void absorb(uint32_t a, void *s, const void *data, size_t length) {
    switch (a) {
    case kCCHmacAlgMD5: MD5_Update(s, data, length); break;
    case kCCHmacAlgSHA1: SHA1_Update(s, data, length); break;
    case kCCHmacAlgSHA224: case kCCHmacAlgSHA256: SHA256_Update(s, data, length); break;
    default: SHA512_Update(s, data, length); break;
    }
}

static void finish(uint32_t a, void *s, unsigned char *md) {
    switch (a) {
    case kCCHmacAlgMD5: MD5_Final(md, s); break;
    case kCCHmacAlgSHA1: SHA1_Final(md, s); break;
    case kCCHmacAlgSHA224: case kCCHmacAlgSHA256: SHA256_Final(md, s); break;
    default: SHA512_Final(md, s); break;
    }
}

/* Resumes a digest state from a chaining value after exactly one block. */
static void resume(uint32_t a, void *s, const unsigned char *chain) {
    begin(a, s);
    memcpy(s, chain, chain_size(a));
    size_t bits = block_size(a) * 8;
    switch (a) {
    case kCCHmacAlgMD5: ((MD5_CTX *)s)->Nl = (MD5_LONG)bits; break;
    case kCCHmacAlgSHA1: ((SHA_CTX *)s)->Nl = (SHA_LONG)bits; break;
    case kCCHmacAlgSHA224: case kCCHmacAlgSHA256: ((SHA256_CTX *)s)->Nl = (SHA_LONG)bits; break;
    default: ((SHA512_CTX *)s)->Nl = bits; break;
    }
}

void CCHmacInit(CCHmacContext *ctx, CCHmacAlgorithm algorithm, const void *key, size_t keyLength) {
    hmac_state *h = (hmac_state *)ctx;
    OPENSSL_cleanse(ctx, sizeof *ctx);
    if (algorithm > kCCHmacAlgSHA224 || (key == NULL && keyLength > 0)) return; /* stays unusable */
    uint32_t a = algorithm;
    size_t block = block_size(a);
    unsigned char k[128] = {0}, pad[128];
    if (keyLength > block) { /* RFC 2104: longer keys are hashed first */
        begin(a, &h->inner);
        absorb(a, &h->inner, key, keyLength);
        finish(a, &h->inner, k);
    } else if (keyLength > 0) {
        memcpy(k, key, keyLength);
    }
    for (size_t i = 0; i < block; i++) pad[i] = k[i] ^ 0x5c;
    begin(a, &h->inner);
    absorb(a, &h->inner, pad, block);
    memcpy(h->outer, &h->inner, chain_size(a));
    for (size_t i = 0; i < block; i++) pad[i] = k[i] ^ 0x36;
    begin(a, &h->inner);
    absorb(a, &h->inner, pad, block);
    OPENSSL_cleanse(k, sizeof k);
    OPENSSL_cleanse(pad, sizeof pad);
    h->algorithm = a + 1;
}

void CCHmacUpdate(CCHmacContext *ctx, const void *data, size_t dataLength) {
    hmac_state *h = (hmac_state *)ctx;
    if (h->algorithm == 0 || h->algorithm > kCCHmacAlgSHA224 + 1 || dataLength == 0 || data == NULL) return;
    absorb(h->algorithm - 1, &h->inner, data, dataLength);
}

void CCHmacFinal(CCHmacContext *ctx, void *macOut) {
    hmac_state *h = (hmac_state *)ctx;
    if (h->algorithm == 0 || h->algorithm > kCCHmacAlgSHA224 + 1 || macOut == NULL) return;
    uint32_t a = h->algorithm - 1;
    unsigned char inner[64];
    finish(a, &h->inner, inner);
    resume(a, &h->inner, h->outer);
    absorb(a, &h->inner, inner, digest_size(a));
    finish(a, &h->inner, macOut);
    OPENSSL_cleanse(inner, sizeof inner);
    OPENSSL_cleanse(ctx, sizeof *ctx); /* the key-derived state goes with the MAC */
}
