#ifndef CTPM_H
#define CTPM_H

#include <stddef.h>
#include <stdint.h>

/// A TPM 2.0 reached through the TSS2 ESAPI, with the owner hierarchy's primary storage key loaded: the parent of
/// every key this library makes. Not thread-safe: one caller at a time (the Swift owner serialises).
typedef struct ctpm ctpm;

/// The largest marshalled public or private area of a key made here (an RSA-4096 key's public area is the largest).
#define CTPM_BLOB_MAX 1024

/// Opens the TPM the TCTI configuration names ("device:/dev/tpmrm0", "swtpm:host=127.0.0.1,port=2321") and
/// creates its primary storage key (an ECC P-256 restricted decryption key with AES-128-CFB, outside dictionary-attack
/// protection, the unique field empty: the same key every time, from the owner hierarchy's seed). Returns 0 or a TSS2
/// response code; `*out` is set on success only. A connection still open when the process exits is closed then (its
/// primary flushed).
uint32_t ctpm_open(const char *tcti, ctpm **out);
void ctpm_close(ctpm *tpm);

/// A TSS2 response code as text (static storage).
const char *ctpm_describe(uint32_t rc);

/// Creates an ECC P-256 key under the primary, for ECDSA and ECDH, whose private part never leaves the TPM
/// unencrypted: its public and private areas, marshalled (TPM2B_PUBLIC and TPM2B_PRIVATE, what tpm2-tools writes
/// with --public and --private), each at most CTPM_BLOB_MAX bytes; the public point with ctpm_public_key.
uint32_t ctpm_create_p256(ctpm *tpm, uint8_t *public_area, size_t *public_size, uint8_t *private_area, size_t *private_size);

/// Creates an RSA key of `bits` (2048, 3072 or 4096, as the TPM offers) under the primary, for signing and
/// decryption with no scheme of its own (the caller pads: the TPM does the raw private operation), exponent 65537.
/// Its areas as for ctpm_create_p256; the modulus with ctpm_public_key.
uint32_t ctpm_create_rsa(
    ctpm *tpm, uint16_t bits, uint8_t *public_area, size_t *public_size, uint8_t *private_area, size_t *private_size);

/// The kinds of key a public area holds.
enum ctpm_key_kind { CTPM_KEY_P256 = 1, CTPM_KEY_RSA = 2 };

/// The public key of a marshalled public area made here: for P-256 the point 04||x||y (65 bytes), for RSA the
/// modulus, big-endian (bits/8 bytes; the exponent is 65537), in `out` of `*out_size` bytes (at least 512), the
/// count written back. Nonzero when the area is neither.
uint32_t ctpm_public_key(const uint8_t *public_area, size_t public_size, enum ctpm_key_kind *kind, uint8_t *out, size_t *out_size);

/// ECDSA with the key over a 32-byte `digest` (the caller fits other digests to the integer ECDSA signs on P-256:
/// a longer one's leftmost 32 bytes, a shorter one left-padded): the signature's r and s, each 32 bytes big-endian.
uint32_t ctpm_sign_p256(
    ctpm *tpm, const uint8_t *public_area, size_t public_size, const uint8_t *private_area, size_t private_size,
    const uint8_t *digest, size_t digest_size, uint8_t r[32], uint8_t s[32]);

/// ECDH with the key (TPM2_ECDH_ZGen): the x-coordinate of the key times `peer` (04||x||y on P-256).
uint32_t ctpm_ecdh_p256(
    ctpm *tpm, const uint8_t *public_area, size_t public_size, const uint8_t *private_area, size_t private_size,
    const uint8_t peer[65], uint8_t x[32]);

/// The raw RSA private operation (TPM2_RSA_Decrypt with no scheme) on `input`, one modulus long: the modulus-sized
/// result in `output`. What a signature and a decryption both come down to once the caller has padded or will unpad.
uint32_t ctpm_rsa_raw(
    ctpm *tpm, const uint8_t *public_area, size_t public_size, const uint8_t *private_area, size_t private_size,
    const uint8_t *input, size_t input_size, uint8_t *output, size_t output_size);

#endif
