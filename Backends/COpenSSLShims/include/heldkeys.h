#ifndef SECURITYSERVICES_COPENSSLSHIMS_HELDKEYS_H
#define SECURITYSERVICES_COPENSSLSHIMS_HELDKEYS_H
/* Private keys another process holds (the keychain service), as EVP_PKEYs OpenSSL can sign and decrypt with
 * (TLS client authentication, certificate requests, SCEP): a key carrying only the public half, with an RSA or
 * EC method whose private operations call back into the holder. OpenSSL 3 runs a key whose method is not its
 * own through its legacy code path (the "foreign" keys of engines and PKCS#11 modules), which pads and hashes as
 * usual and leaves only the private operation itself to the method. */
#include <stddef.h>
#include <openssl/evp.h>

/* What the holder is asked. */
enum copenssl_held_request {
    /* The raw RSA private operation on a modulus-sized block (out: the modulus-sized result). */
    COPENSSL_HELD_RSA_RAW_SIGN = 0,
    /* The raw RSA private operation for a decryption (out: the modulus-sized block, padding still on). */
    COPENSSL_HELD_RSA_RAW_DECRYPT = 1,
    /* An ECDSA signature of a digest (out: DER ECDSA-Sig-Value). */
    COPENSSL_HELD_ECDSA_SIGN = 2,
};

/* Runs `request` on `in` for the holder `context`, writing at most *outlen bytes to `out` and the count to
 * *outlen. Returns 1 on success, 0 on failure. */
typedef int (*copenssl_held_operation)(void *context, int request, const unsigned char *in, size_t inlen,
                                       unsigned char *out, size_t *outlen);

/* The held key for `public_key` (RSA or EC, public): its private operations call `operation` with `context`;
 * `release` is called with `context` once, when the key is freed (also when this function fails). Returns NULL on
 * failure. */
EVP_PKEY *copenssl_held_key(EVP_PKEY *public_key, copenssl_held_operation operation, void *context,
                            void (*release)(void *context));
#endif
