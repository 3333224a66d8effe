#ifndef SECURITYSERVICES_CBASELINES_H
#define SECURITYSERVICES_CBASELINES_H
/* The benchmark's baselines: what a C programmer gets by calling OpenSSL EVP or libkcapi directly, with
 * everything that can be prepared once prepared once (algorithm fetched, context or handle reused). */
#include <stddef.h>
#include <stdint.h>

/* Operations: "aes-128-cbc-encrypt", "aes-128-cbc-decrypt", "aes-256-cbc-encrypt", "aes-256-cbc-decrypt",
 * "aes-128-ecb-encrypt", "sha1", "sha256", "hmac-sha1". Keys are the first 16 or 32 bytes of `key`. */
typedef struct cbaseline cbaseline;

/* A baseline for `operation` on OpenSSL ("openssl") or libkcapi ("kcapi"); NULL if unavailable. */
cbaseline *cbaseline_new(const char *library, const char *operation, const uint8_t *key, const uint8_t *iv);
/* Runs the operation once over `length` bytes of `in` into `out` (room for length + 64). 0 on success. */
int cbaseline_run(cbaseline *baseline, const uint8_t *in, size_t length, uint8_t *out);
void cbaseline_free(cbaseline *baseline);
#endif
