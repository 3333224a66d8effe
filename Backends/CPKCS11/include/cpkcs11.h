#ifndef CPKCS11_H
#define CPKCS11_H

#include <stddef.h>
#include <stdint.h>

/// PKCS#11 modules (smart-card drivers, HSM libraries) loaded through p11-kit, and the few calls the key holder
/// makes with them. Return values are PKCS#11 CK_RV codes (0 is CKR_OK). Slots, sessions and objects are the
/// module's numbers (CK_ULONG).

/// A set of loaded, initialised modules: the ones p11-kit's configuration registers, or one module file.
typedef struct cp11_modules cp11_modules;

/// Loads and initialises every module p11-kit's configuration registers (none is an empty set, not an error).
unsigned long cp11_load_configured(cp11_modules **out);
/// Loads and initialises the module at `path`.
unsigned long cp11_load_path(const char *path, cp11_modules **out);
/// Finalises and unloads them.
void cp11_release(cp11_modules *modules);
size_t cp11_count(const cp11_modules *modules);
/// The module's name as p11-kit knows it (its .module file's name, or the file name), to free with free().
char *cp11_module_name(const cp11_modules *modules, size_t module);

/// The slots of `module` that hold a token: at most `*count` written, `*count` set to how many there are.
unsigned long cp11_slots(const cp11_modules *modules, size_t module, unsigned long *slots, size_t *count);
/// The token's label, manufacturer's model and serial (space-padded as PKCS#11 gives them, NUL-terminated here) and
/// its flags (CKF_LOGIN_REQUIRED 0x4, CKF_TOKEN_INITIALIZED 0x400, CKF_PROTECTED_AUTHENTICATION_PATH 0x100).
unsigned long cp11_token_info(
    const cp11_modules *modules, size_t module, unsigned long slot, char label[33], char model[17], char serial[17],
    unsigned long *flags);

/// A read-write session on the slot's token; logged in as the user with `pin` when `pin` is not NULL (a session
/// already logged in, as all of an application's are once one is, is fine).
unsigned long cp11_open(
    const cp11_modules *modules, size_t module, unsigned long slot, const uint8_t *pin, size_t pin_size, unsigned long *session);
void cp11_close(const cp11_modules *modules, size_t module, unsigned long session);

/// Whether `session` is still open and logged in as the user (the token not removed, nobody logged out).
int cp11_logged_in(const cp11_modules *modules, size_t module, unsigned long session);

/// Objects of class `object_class` (CKO_CERTIFICATE 1, CKO_PUBLIC_KEY 2, CKO_PRIVATE_KEY 3), with CKA_ID `id` when
/// `id` is not NULL: at most `*count` written, `*count` set to how many were found (at most 256 are looked at).
unsigned long cp11_find(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long object_class, const uint8_t *id, size_t id_size,
    unsigned long *objects, size_t *count);
/// An attribute's value: with `value` NULL, `*size` is set to its size; else at most `*size` bytes are written.
unsigned long cp11_attribute(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long object, unsigned long type, uint8_t *value,
    size_t *size);

/// Signs (or, with `decrypting`, decrypts) `input` with `key` under `mechanism`; `parameter` is the mechanism's
/// parameter structure as PKCS#11 lays it out (NULL for none). `*output_size` in: room, out: bytes written.
unsigned long cp11_run(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long key, unsigned long mechanism,
    const void *parameter, size_t parameter_size, int decrypting, const uint8_t *input, size_t input_size, uint8_t *output,
    size_t *output_size);
/// RSA-PSS parameters (CK_RSA_PKCS_PSS_PARAMS) and OAEP parameters (CK_RSA_PKCS_OAEP_PARAMS, no label) for a digest
/// mechanism (CKM_SHA_1 0x220, CKM_SHA256 0x250, ...) and its MGF1 (CKG_MGF1_SHA1 1, CKG_MGF1_SHA256 2, ...).
unsigned long cp11_rsa_pss(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long key, unsigned long hash, unsigned long mgf,
    unsigned long salt, const uint8_t *digest, size_t digest_size, uint8_t *output, size_t *output_size);
unsigned long cp11_rsa_oaep_decrypt(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long key, unsigned long hash, unsigned long mgf,
    const uint8_t *input, size_t input_size, uint8_t *output, size_t *output_size);
/// ECDH (CKM_ECDH1_DERIVE, no KDF) of `key` with `peer` (04||x||y): the shared x-coordinate.
unsigned long cp11_ecdh(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long key, const uint8_t *peer, size_t peer_size,
    uint8_t *secret, size_t *secret_size);
/// Makes an EC P-256 key pair on the token (private, sensitive, never extractable; sign and derive), labelled and
/// identified as given.
unsigned long cp11_generate_p256(
    const cp11_modules *modules, size_t module, unsigned long session, const char *label, const uint8_t *id, size_t id_size,
    unsigned long *public_key, unsigned long *private_key);
/// Makes an RSA key pair of `bits` on the token, exponent 65537 (private, sensitive, never extractable; sign and
/// decrypt), labelled and identified as given.
unsigned long cp11_generate_rsa(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long bits, const char *label, const uint8_t *id,
    size_t id_size, unsigned long *public_key, unsigned long *private_key);
/// Writes an X.509 certificate object onto the token (CKO_CERTIFICATE, CKC_X_509, a token object, public), with the
/// DER `subject` and `value` given, labelled and identified as given: the CKA_ID of the key it certifies.
unsigned long cp11_create_certificate(
    const cp11_modules *modules, size_t module, unsigned long session, const char *label, const uint8_t *id, size_t id_size,
    const uint8_t *subject, size_t subject_size, const uint8_t *value, size_t value_size, unsigned long *object);
/// Destroys `object` on the token.
unsigned long cp11_destroy(const cp11_modules *modules, size_t module, unsigned long session, unsigned long object);

#endif
