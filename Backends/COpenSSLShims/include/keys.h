#ifndef SECURITYSERVICES_COPENSSLSHIMS_KEYS_H
#define SECURITYSERVICES_COPENSSLSHIMS_KEYS_H
/* Asymmetric keys: RSA and EC through EVP_PKEY. */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rsa.h>
#include <openssl/ec.h>
#include <openssl/encoder.h>
#include <openssl/decoder.h>
#include <openssl/param_build.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>

/* OPENSSL_clear_free is a macro: wipes then frees a buffer OpenSSL allocated. */
void copenssl_clear_free(void *pointer, size_t length);

/* OPENSSL_free is a macro. */
void copenssl_free(void *pointer);

/* A PKCS#1 RSAPublicKey (or, with `private_key`, RSAPrivateKey) in DER, decoded by the provider's decoder so
 * that the EVP_PKEY is provider-native: d2i_PublicKey makes a legacy RSA key, which OpenSSL 3 re-imports into
 * its provider on every operation (measured here: RSA-2048 verification 7% slower). Returns NULL unless exactly
 * `length` bytes form the key. */
EVP_PKEY *copenssl_rsa_key_from_pkcs1(const unsigned char *der, size_t length, int private_key);

/* An EC key from its curve name, its uncompressed public point and (optionally) its private scalar.
 * EVP_PKEY_fromdata decodes the point with EC_POINT_oct2point, which rejects a point not on the curve.
 * Returns NULL on any failure (the error queue says why). The scalar's BIGNUM is cleared before it is freed. */
EVP_PKEY *copenssl_ec_key_from_parts(const char *group, const unsigned char *pub, size_t publen,
                                                  const unsigned char *priv, size_t privlen);

/* A key's BIGNUM parameter written big-endian into exactly `length` bytes (left-padded with zeros).
 * Returns 1 on success. The BIGNUM is cleared before it is freed (it may be a private scalar). */
int copenssl_pkey_bn_param(const EVP_PKEY *pkey, const char *name, unsigned char *out, size_t length);

/* ANSI X9.63 key derivation (SEC 1 §3.6.1) through OpenSSL's X963KDF: `outlen` bytes from the shared secret and
 * the shared info with `digest` ("SHA1", "SHA2-256", …). Returns 1 on success. */
int copenssl_x963_kdf(const char *digest, const unsigned char *secret, size_t secretlen, const unsigned char *info,
                      size_t infolen, unsigned char *out, size_t outlen);

/* ECDSA signature conversions between DER (X9.62) and r||s (RFC 4754), each half `half` bytes. */
int copenssl_ecdsa_der_to_raw(const unsigned char *der, size_t derlen, unsigned char *out, size_t half);

/* Writes the DER of r||s into a buffer OpenSSL allocates (*out, freed with copenssl_free); returns its length or 0. */
size_t copenssl_ecdsa_raw_to_der(const unsigned char *raw, size_t half, unsigned char **out);

/* Sets the padding (and for OAEP/PSS, digest, MGF1 digest and salt length) of an initialised operation. */
int copenssl_rsa_set_padding(EVP_PKEY_CTX *ctx, int padding);
#endif
