#include "CBaselines.h"

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <stdlib.h>
#include <string.h>

enum pkey_op { RSA_SIGN, RSA_VERIFY, RSA_ENCRYPT, RSA_DECRYPT, EC_SIGN, EC_VERIFY };

struct cbaseline_pkey {
    enum pkey_op op;
    EVP_PKEY *key;
    uint8_t out[512];
};

cbaseline_pkey *cbaseline_pkey_new(const char *operation) {
    static const struct {
        const char *name;
        enum pkey_op op;
    } table[] = {
        {"rsa-sign", RSA_SIGN},       {"rsa-verify", RSA_VERIFY}, {"rsa-encrypt", RSA_ENCRYPT},
        {"rsa-decrypt", RSA_DECRYPT}, {"ec-sign", EC_SIGN},       {"ec-verify", EC_VERIFY},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].name, operation) != 0) continue;
        cbaseline_pkey *baseline = calloc(1, sizeof *baseline);
        if (baseline == NULL) return NULL;
        baseline->op = table[i].op;
        int ec = baseline->op == EC_SIGN || baseline->op == EC_VERIFY;
        baseline->key = ec ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")
                           : EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
        if (baseline->key == NULL) {
            free(baseline);
            return NULL;
        }
        return baseline;
    }
    return NULL;
}

/* Sets RSA padding and digests on an initialised context. */
static int configure(EVP_PKEY_CTX *ctx, enum pkey_op op) {
    switch (op) {
    case RSA_SIGN:
    case RSA_VERIFY:
        return EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1
            && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1;
    case RSA_ENCRYPT:
    case RSA_DECRYPT:
        return EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1
            && EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) == 1
            && EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) == 1;
    default:
        return 1;
    }
}

/* One operation `op` over `in`, its output (if any) into `out`. Returns the output length, 1 for a verify that
 * passed, 0 on failure. */
static size_t once(cbaseline_pkey *b, enum pkey_op op, const uint8_t *in, size_t length, uint8_t *out) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, b->key, NULL);
    if (ctx == NULL) return 0;
    size_t outlen = 512;
    size_t result = 0;
    switch (op) {
    case RSA_SIGN:
    case EC_SIGN:
        if (EVP_PKEY_sign_init(ctx) == 1 && configure(ctx, op) && EVP_PKEY_sign(ctx, out, &outlen, in, 32) == 1)
            result = outlen;
        break;
    case RSA_VERIFY:
    case EC_VERIFY: {
        static const uint8_t digest[32] = {0};
        if (EVP_PKEY_verify_init(ctx) == 1 && configure(ctx, op) && EVP_PKEY_verify(ctx, in, length, digest, 32) == 1)
            result = 1;
        break;
    }
    case RSA_ENCRYPT:
        if (EVP_PKEY_encrypt_init(ctx) == 1 && configure(ctx, op) && EVP_PKEY_encrypt(ctx, out, &outlen, in, length) == 1)
            result = outlen;
        break;
    case RSA_DECRYPT:
        if (EVP_PKEY_decrypt_init(ctx) == 1 && configure(ctx, op) && EVP_PKEY_decrypt(ctx, out, &outlen, in, length) == 1)
            result = outlen > 0 ? outlen : 1;
        break;
    }
    EVP_PKEY_CTX_free(ctx);
    return result;
}

int cbaseline_pkey_run(cbaseline_pkey *baseline, const uint8_t *in, size_t length) {
    return once(baseline, baseline->op, in, length, baseline->out) > 0 ? 0 : -1;
}

size_t cbaseline_pkey_prepare(cbaseline_pkey *baseline, const uint8_t *digest_or_message, size_t length, uint8_t *out) {
    switch (baseline->op) {
    case RSA_VERIFY: return once(baseline, RSA_SIGN, digest_or_message, length, out);
    case EC_VERIFY: return once(baseline, EC_SIGN, digest_or_message, length, out);
    case RSA_DECRYPT: return once(baseline, RSA_ENCRYPT, digest_or_message, length, out);
    default: return 0;
    }
}

void cbaseline_pkey_free(cbaseline_pkey *baseline) {
    if (baseline == NULL) return;
    EVP_PKEY_free(baseline->key);
    free(baseline);
}
