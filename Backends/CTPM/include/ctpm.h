#ifndef CTPM_H
#define CTPM_H

#include <stddef.h>
#include <stdint.h>

/// A TPM 2.0 reached through the TSS2 ESAPI, with the owner hierarchy's primary storage key loaded: the parent of
/// every key this library makes. Not thread-safe: one caller at a time (the Swift owner serialises).
typedef struct ctpm ctpm;

/// The largest marshalled public or private area of a P-256 key.
#define CTPM_BLOB_MAX 512

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
/// with --public and --private), each at most CTPM_BLOB_MAX bytes, and its public point 04||x||y.
uint32_t ctpm_create_p256(
    ctpm *tpm, uint8_t *public_area, size_t *public_size, uint8_t *private_area, size_t *private_size, uint8_t point[65]);

/// The public point 04||x||y of a marshalled P-256 public area; nonzero when it is not one.
uint32_t ctpm_public_point(const uint8_t *public_area, size_t public_size, uint8_t point[65]);

/// ECDSA with the key over a 32-byte `digest` (the caller fits other digests to the integer ECDSA signs on P-256:
/// a longer one's leftmost 32 bytes, a shorter one left-padded): the signature's r and s, each 32 bytes big-endian.
uint32_t ctpm_sign_p256(
    ctpm *tpm, const uint8_t *public_area, size_t public_size, const uint8_t *private_area, size_t private_size,
    const uint8_t *digest, size_t digest_size, uint8_t r[32], uint8_t s[32]);

/// ECDH with the key (TPM2_ECDH_ZGen): the x-coordinate of the key times `peer` (04||x||y on P-256).
uint32_t ctpm_ecdh_p256(
    ctpm *tpm, const uint8_t *public_area, size_t public_size, const uint8_t *private_area, size_t private_size,
    const uint8_t peer[65], uint8_t x[32]);

#endif
