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
/* The same under another key (the first 16 or 32 bytes of `key`), given per call as a one-shot API takes it:
 * ciphers and HMAC on OpenSSL only. 0 on success. */
int cbaseline_run_keyed(cbaseline *baseline, const uint8_t *key, const uint8_t *in, size_t length, uint8_t *out);
void cbaseline_free(cbaseline *baseline);

/* Public-key baselines: OpenSSL EVP_PKEY called directly, a fresh EVP_PKEY_CTX per operation (as EVP requires a
 * sign/verify/encrypt init per operation). Operations: "rsa-sign", "rsa-verify" (PKCS#1 v1.5 over a SHA-256
 * digest), "rsa-encrypt", "rsa-decrypt" (OAEP, SHA-256 and MGF1-SHA-256), "ec-sign", "ec-verify" (ECDSA P-256 over
 * a SHA-256 digest, DER signatures). The key is RSA-2048 (e = 65537) or P-256, generated once. */
typedef struct cbaseline_pkey cbaseline_pkey;

cbaseline_pkey *cbaseline_pkey_new(const char *operation);
/* Runs the operation once. `in`: the 32-byte digest (sign), the message (encrypt), or the output of the paired
 * operation (verify: the signature; decrypt: the ciphertext), prepared by cbaseline_pkey_prepare. 0 on success. */
int cbaseline_pkey_run(cbaseline_pkey *baseline, const uint8_t *in, size_t length);
/* Prepares the input of verify/decrypt: signs or encrypts `digest_or_message` with the baseline's own key into
 * `out` (room for 512 bytes); returns the length written, or 0. */
size_t cbaseline_pkey_prepare(cbaseline_pkey *baseline, const uint8_t *digest_or_message, size_t length, uint8_t *out);
void cbaseline_pkey_free(cbaseline_pkey *baseline);

/* Trust baseline: X509_verify_cert with a store prepared once (the root) and the intermediate untrusted, the SSL
 * server purpose, then X509_check_host: what a C program does to validate a TLS server's chain. */
typedef struct cbaseline_trust cbaseline_trust;
cbaseline_trust *cbaseline_trust_new(const uint8_t *leaf, size_t leaf_length, const uint8_t *intermediate,
                                     size_t intermediate_length, const uint8_t *root, size_t root_length,
                                     const char *hostname);
/* 0 when the chain verifies and the hostname matches. */
int cbaseline_trust_run(cbaseline_trust *baseline);
/* The same with the checks the trust evaluator asks of X509_verify_cert: RFC 5280 policy processing with the initial
 * policy set {anyPolicy}, strict X.509 checks, the anchor trusted as a partial chain. */
int cbaseline_trust_run_checked(cbaseline_trust *baseline);
void cbaseline_trust_free(cbaseline_trust *baseline);

/* TLS baseline: a libssl client as a C program writes one, TLS 1.3 with default verification (the CA file's root,
 * SSL_set1_host), fetching `path` (GET, HTTP/1.0) from 127.0.0.1:`port` and reading to the end. With `resume`, each
 * connection offers the session the previous one got. */
typedef struct cbaseline_tls cbaseline_tls;
cbaseline_tls *cbaseline_tls_new(const char *ca_file, const char *hostname, int port, int resume);
/* The bytes received (headers included), or -1; *resumed says whether the handshake resumed a session. */
long cbaseline_tls_fetch(cbaseline_tls *baseline, const char *path, int *resumed);
void cbaseline_tls_free(cbaseline_tls *baseline);

/* A Unix-socket round trip, the floor under a keychain service call: `rounds` messages of `size` bytes (at most
 * 4096) over a socket pair to a thread that echoes each, both sides polling (recv with MSG_DONTWAIT) as the
 * service's client and threads poll. Writes each round trip's nanoseconds to `nanoseconds` (room for `rounds`).
 * 0 on success. */
int cbaseline_socket_ping_pong(int rounds, size_t size, double *nanoseconds);
#endif
