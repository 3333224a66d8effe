#include "CBaselines.h"

#include <kcapi.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdlib.h>
#include <string.h>

enum kind { CIPHER, DIGEST, HMAC };

struct cbaseline {
    int openssl; /* 1: OpenSSL EVP, 0: libkcapi */
    enum kind kind;
    int encrypt;
    size_t keylen;
    uint8_t key[32];
    uint8_t iv[16];
    EVP_CIPHER *cipher;
    EVP_CIPHER_CTX *cipher_ctx;
    EVP_MD *md;
    EVP_MD_CTX *md_ctx;
    EVP_MAC *mac;
    EVP_MAC_CTX *mac_ctx;
    struct kcapi_handle *handle;
    int cbc; /* libkcapi: chunk CBC at 64 KiB and carry the IV (libkcapi 1.4.0 reuses it per piece) */
    size_t digest_size;
};

static int parse(const char *op, enum kind *kind, const char **openssl_name, const char **kernel_name,
                 size_t *keylen, int *encrypt, size_t *digest_size) {
    static const struct {
        const char *op, *openssl, *kernel;
        enum kind kind;
        size_t keylen;
        int encrypt;
        size_t digest;
    } table[] = {
        {"aes-128-cbc-encrypt", "AES-128-CBC", "cbc(aes)", CIPHER, 16, 1, 0},
        {"aes-128-cbc-decrypt", "AES-128-CBC", "cbc(aes)", CIPHER, 16, 0, 0},
        {"aes-256-cbc-encrypt", "AES-256-CBC", "cbc(aes)", CIPHER, 32, 1, 0},
        {"aes-256-cbc-decrypt", "AES-256-CBC", "cbc(aes)", CIPHER, 32, 0, 0},
        {"aes-128-ecb-encrypt", "AES-128-ECB", "ecb(aes)", CIPHER, 16, 1, 0},
        {"sha1", "SHA1", "sha1", DIGEST, 0, 0, 20},
        {"sha256", "SHA256", "sha256", DIGEST, 0, 0, 32},
        {"hmac-sha1", "SHA1", "hmac(sha1)", HMAC, 16, 0, 20},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].op, op) == 0) {
            *kind = table[i].kind;
            *openssl_name = table[i].openssl;
            *kernel_name = table[i].kernel;
            *keylen = table[i].keylen;
            *encrypt = table[i].encrypt;
            *digest_size = table[i].digest;
            return 0;
        }
    }
    return -1;
}

cbaseline *cbaseline_new(const char *library, const char *operation, const uint8_t *key, const uint8_t *iv) {
    enum kind kind;
    const char *openssl_name, *kernel_name;
    size_t keylen, digest_size;
    int encrypt;
    if (parse(operation, &kind, &openssl_name, &kernel_name, &keylen, &encrypt, &digest_size) != 0) return NULL;
    cbaseline *b = calloc(1, sizeof *b);
    if (b == NULL) return NULL;
    b->openssl = strcmp(library, "openssl") == 0;
    b->kind = kind;
    b->encrypt = encrypt;
    b->keylen = keylen;
    b->digest_size = digest_size;
    b->cbc = strstr(operation, "cbc") != NULL;
    memcpy(b->key, key, keylen);
    memcpy(b->iv, iv, 16);
    if (b->openssl) {
        switch (kind) {
        case CIPHER:
            b->cipher = EVP_CIPHER_fetch(NULL, openssl_name, NULL);
            b->cipher_ctx = EVP_CIPHER_CTX_new();
            if (b->cipher == NULL || b->cipher_ctx == NULL) goto fail;
            break;
        case DIGEST:
            b->md = EVP_MD_fetch(NULL, openssl_name, NULL);
            b->md_ctx = EVP_MD_CTX_new();
            if (b->md == NULL || b->md_ctx == NULL) goto fail;
            break;
        case HMAC: {
            b->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
            if (b->mac == NULL || (b->mac_ctx = EVP_MAC_CTX_new(b->mac)) == NULL) goto fail;
            OSSL_PARAM params[2] = {
                OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)openssl_name, 0),
                OSSL_PARAM_construct_end(),
            };
            if (EVP_MAC_CTX_set_params(b->mac_ctx, params) != 1) goto fail;
            break;
        }
        }
    } else {
        kcapi_set_verbosity(KCAPI_LOG_NONE);
        if (kind == CIPHER) {
            if (kcapi_cipher_init(&b->handle, kernel_name, 0) != 0) goto fail;
            if (kcapi_cipher_setkey(b->handle, b->key, (uint32_t)keylen) != 0) goto fail;
        } else {
            if (kcapi_md_init(&b->handle, kernel_name, 0) != 0) goto fail;
            if (kind == HMAC && kcapi_md_setkey(b->handle, b->key, (uint32_t)keylen) != 0) goto fail;
        }
    }
    return b;
fail:
    cbaseline_free(b);
    return NULL;
}

static int run_openssl(cbaseline *b, const uint8_t *in, size_t length, uint8_t *out) {
    int outl = 0, finl = 0;
    size_t macl = 0;
    switch (b->kind) {
    case CIPHER:
        /* Keyed per call, like a one-shot API (CCCrypt) is. */
        if (EVP_CipherInit_ex2(b->cipher_ctx, b->cipher, b->key, b->iv, b->encrypt, NULL) != 1) return -1;
        EVP_CIPHER_CTX_set_padding(b->cipher_ctx, 0);
        if (EVP_CipherUpdate(b->cipher_ctx, out, &outl, in, (int)length) != 1) return -1;
        return EVP_CipherFinal_ex(b->cipher_ctx, out + outl, &finl) == 1 ? 0 : -1;
    case DIGEST:
        if (EVP_DigestInit_ex2(b->md_ctx, b->md, NULL) != 1) return -1;
        if (EVP_DigestUpdate(b->md_ctx, in, length) != 1) return -1;
        return EVP_DigestFinal_ex(b->md_ctx, out, NULL) == 1 ? 0 : -1;
    case HMAC:
        if (EVP_MAC_init(b->mac_ctx, b->key, b->keylen, NULL) != 1) return -1;
        if (EVP_MAC_update(b->mac_ctx, in, length) != 1) return -1;
        return EVP_MAC_final(b->mac_ctx, out, &macl, 64) == 1 ? 0 : -1;
    }
    return -1;
}

static int run_kcapi(cbaseline *b, const uint8_t *in, size_t length, uint8_t *out) {
    if (b->kind != CIPHER) {
        return kcapi_md_digest(b->handle, in, length, out, b->digest_size) < 0 ? -1 : 0;
    }
    uint8_t iv[16];
    memcpy(iv, b->iv, 16);
    size_t done = 0;
    while (done < length) {
        size_t chunk = length - done < 65536 ? length - done : 65536;
        uint8_t next[16];
        if (b->cbc && !b->encrypt) memcpy(next, in + done + chunk - 16, 16);
        ssize_t r = b->encrypt
            ? kcapi_cipher_encrypt(b->handle, in + done, chunk, iv, out + done, chunk, KCAPI_ACCESS_SENDMSG)
            : kcapi_cipher_decrypt(b->handle, in + done, chunk, iv, out + done, chunk, KCAPI_ACCESS_SENDMSG);
        if (r != (ssize_t)chunk) return -1;
        if (b->cbc) memcpy(iv, b->encrypt ? out + done + chunk - 16 : next, 16);
        done += chunk;
    }
    return 0;
}

int cbaseline_run(cbaseline *b, const uint8_t *in, size_t length, uint8_t *out) {
    return b->openssl ? run_openssl(b, in, length, out) : run_kcapi(b, in, length, out);
}

int cbaseline_run_keyed(cbaseline *b, const uint8_t *key, const uint8_t *in, size_t length, uint8_t *out) {
    if (!b->openssl || b->kind == DIGEST) return -1;
    memcpy(b->key, key, b->keylen);
    return run_openssl(b, in, length, out);
}

void cbaseline_free(cbaseline *b) {
    if (b == NULL) return;
    EVP_CIPHER_free(b->cipher);
    EVP_CIPHER_CTX_free(b->cipher_ctx);
    EVP_MD_free(b->md);
    EVP_MD_CTX_free(b->md_ctx);
    EVP_MAC_CTX_free(b->mac_ctx);
    EVP_MAC_free(b->mac);
    if (b->handle != NULL) {
        if (b->kind == CIPHER) kcapi_cipher_destroy(b->handle);
        else kcapi_md_destroy(b->handle);
    }
    OPENSSL_cleanse(b->key, sizeof b->key);
    free(b);
}
