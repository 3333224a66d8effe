#include "cpkcs11.h"

#include <stdlib.h>
#include <string.h>
// p11-kit's pkcs11.h last: its compatibility names are macros that would rename other headers' fields.
#include <p11-kit/p11-kit.h>
#include <p11-kit/pkcs11.h>

struct cp11_modules {
    CK_FUNCTION_LIST **list;  // NULL-terminated
    size_t count;
    int configured;  // from p11-kit's configuration (released together), else one module loaded by path
};

unsigned long cp11_load_configured(cp11_modules **out) {
    cp11_modules *modules = calloc(1, sizeof *modules);
    if (modules == NULL) return CKR_HOST_MEMORY;
    modules->list = p11_kit_modules_load_and_initialize(0);
    if (modules->list == NULL) {
        free(modules);
        return CKR_GENERAL_ERROR;
    }
    while (modules->list[modules->count] != NULL) modules->count++;
    modules->configured = 1;
    *out = modules;
    return CKR_OK;
}

unsigned long cp11_load_path(const char *path, cp11_modules **out) {
    CK_FUNCTION_LIST *module = p11_kit_module_load(path, 0);
    if (module == NULL) return CKR_GENERAL_ERROR;
    CK_RV rv = p11_kit_module_initialize(module);
    if (rv != CKR_OK) {
        p11_kit_module_release(module);
        return rv;
    }
    cp11_modules *modules = calloc(1, sizeof *modules);
    CK_FUNCTION_LIST **list = calloc(2, sizeof *list);
    if (modules == NULL || list == NULL) {
        free(modules);
        free(list);
        p11_kit_module_finalize(module);
        p11_kit_module_release(module);
        return CKR_HOST_MEMORY;
    }
    list[0] = module;
    modules->list = list;
    modules->count = 1;
    *out = modules;
    return CKR_OK;
}

void cp11_release(cp11_modules *modules) {
    if (modules == NULL) return;
    if (modules->configured) {
        p11_kit_modules_finalize_and_release(modules->list);
    } else {
        p11_kit_module_finalize(modules->list[0]);
        p11_kit_module_release(modules->list[0]);
        free(modules->list);
    }
    free(modules);
}

size_t cp11_count(const cp11_modules *modules) { return modules->count; }

char *cp11_module_name(const cp11_modules *modules, size_t module) {
    char *name = p11_kit_module_get_name(modules->list[module]);
    return name != NULL ? name : p11_kit_module_get_filename(modules->list[module]);
}

static CK_FUNCTION_LIST *functions(const cp11_modules *modules, size_t module) { return modules->list[module]; }

unsigned long cp11_slots(const cp11_modules *modules, size_t module, unsigned long *slots, size_t *count) {
    CK_ULONG found = *count;
    CK_RV rv = functions(modules, module)->C_GetSlotList(CK_TRUE, slots, &found);
    if (rv == CKR_BUFFER_TOO_SMALL) rv = CKR_OK;
    *count = found;
    return rv;
}

/// Copies a space-padded PKCS#11 text field into a NUL-terminated string, the padding dropped.
static void text(const unsigned char *field, size_t size, char *out) {
    while (size > 0 && field[size - 1] == ' ') size--;
    memcpy(out, field, size);
    out[size] = 0;
}

unsigned long cp11_token_info(
    const cp11_modules *modules, size_t module, unsigned long slot, char label[33], char model[17], char serial[17],
    unsigned long *flags) {
    CK_TOKEN_INFO info;
    CK_RV rv = functions(modules, module)->C_GetTokenInfo(slot, &info);
    if (rv != CKR_OK) return rv;
    text(info.label, sizeof info.label, label);
    text(info.model, sizeof info.model, model);
    text(info.serialNumber, sizeof info.serialNumber, serial);
    *flags = info.flags;
    return CKR_OK;
}

unsigned long cp11_open(
    const cp11_modules *modules, size_t module, unsigned long slot, const uint8_t *pin, size_t pin_size, unsigned long *session) {
    CK_FUNCTION_LIST *f = functions(modules, module);
    CK_SESSION_HANDLE handle;
    CK_RV rv = f->C_OpenSession(slot, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &handle);
    if (rv != CKR_OK) return rv;
    if (pin != NULL) {
        rv = f->C_Login(handle, CKU_USER, (CK_UTF8CHAR_PTR)pin, pin_size);
        if (rv == CKR_USER_ALREADY_LOGGED_IN) rv = CKR_OK;
        if (rv != CKR_OK) {
            f->C_CloseSession(handle);
            return rv;
        }
    }
    *session = handle;
    return CKR_OK;
}

void cp11_close(const cp11_modules *modules, size_t module, unsigned long session) {
    functions(modules, module)->C_CloseSession(session);
}

int cp11_logged_in(const cp11_modules *modules, size_t module, unsigned long session) {
    CK_SESSION_INFO info;
    if (functions(modules, module)->C_GetSessionInfo(session, &info) != CKR_OK) return 0;
    return info.state == CKS_RO_USER_FUNCTIONS || info.state == CKS_RW_USER_FUNCTIONS;
}

unsigned long cp11_find(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long object_class, const uint8_t *id, size_t id_size,
    unsigned long *objects, size_t *count) {
    CK_FUNCTION_LIST *f = functions(modules, module);
    CK_OBJECT_CLASS wanted = object_class;
    CK_ATTRIBUTE template[2] = {
        {CKA_CLASS, &wanted, sizeof wanted},
        {CKA_ID, (void *)id, id_size},
    };
    CK_RV rv = f->C_FindObjectsInit(session, template, id != NULL ? 2 : 1);
    if (rv != CKR_OK) return rv;
    CK_OBJECT_HANDLE found[256];
    CK_ULONG number = 0;
    rv = f->C_FindObjects(session, found, 256, &number);
    f->C_FindObjectsFinal(session);
    if (rv != CKR_OK) return rv;
    size_t written = number < *count ? number : *count;
    for (size_t i = 0; i < written; i++) objects[i] = found[i];
    *count = number;
    return CKR_OK;
}

unsigned long cp11_attribute(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long object, unsigned long type, uint8_t *value,
    size_t *size) {
    CK_ATTRIBUTE attribute = {type, value, value != NULL ? *size : 0};
    CK_RV rv = functions(modules, module)->C_GetAttributeValue(session, object, &attribute, 1);
    if (rv != CKR_OK) return rv;
    if (attribute.ulValueLen == CK_UNAVAILABLE_INFORMATION) return CKR_ATTRIBUTE_TYPE_INVALID;
    *size = attribute.ulValueLen;
    return CKR_OK;
}

unsigned long cp11_run(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long key, unsigned long mechanism,
    const void *parameter, size_t parameter_size, int decrypting, const uint8_t *input, size_t input_size, uint8_t *output,
    size_t *output_size) {
    CK_FUNCTION_LIST *f = functions(modules, module);
    CK_MECHANISM chosen = {mechanism, (void *)parameter, parameter_size};
    CK_ULONG length = *output_size;
    CK_RV rv;
    if (decrypting) {
        rv = f->C_DecryptInit(session, &chosen, key);
        if (rv == CKR_OK) rv = f->C_Decrypt(session, (CK_BYTE_PTR)input, input_size, output, &length);
    } else {
        rv = f->C_SignInit(session, &chosen, key);
        if (rv == CKR_OK) rv = f->C_Sign(session, (CK_BYTE_PTR)input, input_size, output, &length);
    }
    *output_size = length;
    return rv;
}

unsigned long cp11_rsa_pss(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long key, unsigned long hash, unsigned long mgf,
    unsigned long salt, const uint8_t *digest, size_t digest_size, uint8_t *output, size_t *output_size) {
    CK_RSA_PKCS_PSS_PARAMS parameters = {hash, mgf, salt};
    return cp11_run(
        modules, module, session, key, CKM_RSA_PKCS_PSS, &parameters, sizeof parameters, 0, digest, digest_size, output,
        output_size);
}

unsigned long cp11_rsa_oaep_decrypt(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long key, unsigned long hash, unsigned long mgf,
    const uint8_t *input, size_t input_size, uint8_t *output, size_t *output_size) {
    CK_RSA_PKCS_OAEP_PARAMS parameters = {hash, mgf, CKZ_DATA_SPECIFIED, NULL, 0};
    return cp11_run(
        modules, module, session, key, CKM_RSA_PKCS_OAEP, &parameters, sizeof parameters, 1, input, input_size, output,
        output_size);
}

unsigned long cp11_ecdh(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long key, const uint8_t *peer, size_t peer_size,
    uint8_t *secret, size_t *secret_size) {
    CK_FUNCTION_LIST *f = functions(modules, module);
    CK_ECDH1_DERIVE_PARAMS parameters = {CKD_NULL, 0, NULL, peer_size, (CK_BYTE_PTR)peer};
    CK_MECHANISM mechanism = {CKM_ECDH1_DERIVE, &parameters, sizeof parameters};
    CK_OBJECT_CLASS secret_class = CKO_SECRET_KEY;
    CK_KEY_TYPE secret_type = CKK_GENERIC_SECRET;
    CK_BBOOL no = CK_FALSE, yes = CK_TRUE;
    // A session object the caller may read: the shared secret is the caller's to use.
    CK_ATTRIBUTE template[] = {
        {CKA_CLASS, &secret_class, sizeof secret_class}, {CKA_KEY_TYPE, &secret_type, sizeof secret_type},
        {CKA_TOKEN, &no, sizeof no}, {CKA_SENSITIVE, &no, sizeof no}, {CKA_EXTRACTABLE, &yes, sizeof yes},
    };
    CK_OBJECT_HANDLE derived;
    CK_RV rv = f->C_DeriveKey(session, &mechanism, key, template, sizeof template / sizeof template[0], &derived);
    if (rv != CKR_OK) return rv;
    CK_ATTRIBUTE value = {CKA_VALUE, secret, *secret_size};
    rv = f->C_GetAttributeValue(session, derived, &value, 1);
    *secret_size = value.ulValueLen;
    f->C_DestroyObject(session, derived);
    return rv;
}

unsigned long cp11_generate_p256(
    const cp11_modules *modules, size_t module, unsigned long session, const char *label, const uint8_t *id, size_t id_size,
    unsigned long *public_key, unsigned long *private_key) {
    CK_FUNCTION_LIST *f = functions(modules, module);
    CK_MECHANISM mechanism = {CKM_EC_KEY_PAIR_GEN, NULL, 0};
    // DER of the prime256v1 OID.
    static const CK_BYTE p256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    size_t label_size = strlen(label);
    // Every usage flag said: tokens differ in what they assume for the ones left out.
    CK_ATTRIBUTE public_template[] = {
        {CKA_EC_PARAMS, (void *)p256, sizeof p256}, {CKA_TOKEN, &yes, sizeof yes}, {CKA_VERIFY, &yes, sizeof yes},
        {CKA_ENCRYPT, &no, sizeof no}, {CKA_WRAP, &no, sizeof no}, {CKA_LABEL, (void *)label, label_size},
        {CKA_ID, (void *)id, id_size},
    };
    CK_ATTRIBUTE private_template[] = {
        {CKA_TOKEN, &yes, sizeof yes}, {CKA_PRIVATE, &yes, sizeof yes}, {CKA_SENSITIVE, &yes, sizeof yes},
        {CKA_EXTRACTABLE, &no, sizeof no}, {CKA_SIGN, &yes, sizeof yes}, {CKA_DERIVE, &yes, sizeof yes},
        {CKA_DECRYPT, &no, sizeof no}, {CKA_UNWRAP, &no, sizeof no}, {CKA_LABEL, (void *)label, label_size},
        {CKA_ID, (void *)id, id_size},
    };
    return f->C_GenerateKeyPair(
        session, &mechanism, public_template, sizeof public_template / sizeof public_template[0], private_template,
        sizeof private_template / sizeof private_template[0], public_key, private_key);
}

unsigned long cp11_generate_rsa(
    const cp11_modules *modules, size_t module, unsigned long session, unsigned long bits, const char *label, const uint8_t *id,
    size_t id_size, unsigned long *public_key, unsigned long *private_key) {
    CK_FUNCTION_LIST *f = functions(modules, module);
    CK_MECHANISM mechanism = {CKM_RSA_PKCS_KEY_PAIR_GEN, NULL, 0};
    static const CK_BYTE exponent[] = {0x01, 0x00, 0x01};
    CK_ULONG modulus_bits = bits;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    size_t label_size = strlen(label);
    // Every usage flag said, as for P-256.
    CK_ATTRIBUTE public_template[] = {
        {CKA_MODULUS_BITS, &modulus_bits, sizeof modulus_bits}, {CKA_PUBLIC_EXPONENT, (void *)exponent, sizeof exponent},
        {CKA_TOKEN, &yes, sizeof yes}, {CKA_VERIFY, &yes, sizeof yes}, {CKA_ENCRYPT, &yes, sizeof yes},
        {CKA_WRAP, &no, sizeof no}, {CKA_LABEL, (void *)label, label_size}, {CKA_ID, (void *)id, id_size},
    };
    CK_ATTRIBUTE private_template[] = {
        {CKA_TOKEN, &yes, sizeof yes}, {CKA_PRIVATE, &yes, sizeof yes}, {CKA_SENSITIVE, &yes, sizeof yes},
        {CKA_EXTRACTABLE, &no, sizeof no}, {CKA_SIGN, &yes, sizeof yes}, {CKA_DECRYPT, &yes, sizeof yes},
        {CKA_UNWRAP, &no, sizeof no}, {CKA_LABEL, (void *)label, label_size}, {CKA_ID, (void *)id, id_size},
    };
    return f->C_GenerateKeyPair(
        session, &mechanism, public_template, sizeof public_template / sizeof public_template[0], private_template,
        sizeof private_template / sizeof private_template[0], public_key, private_key);
}

unsigned long cp11_create_certificate(
    const cp11_modules *modules, size_t module, unsigned long session, const char *label, const uint8_t *id, size_t id_size,
    const uint8_t *subject, size_t subject_size, const uint8_t *value, size_t value_size, unsigned long *object) {
    CK_FUNCTION_LIST *f = functions(modules, module);
    CK_OBJECT_CLASS object_class = CKO_CERTIFICATE;
    CK_CERTIFICATE_TYPE certificate_type = CKC_X_509;
    CK_BBOOL yes = CK_TRUE, no = CK_FALSE;
    CK_ATTRIBUTE template[] = {
        {CKA_CLASS, &object_class, sizeof object_class}, {CKA_CERTIFICATE_TYPE, &certificate_type, sizeof certificate_type},
        {CKA_TOKEN, &yes, sizeof yes}, {CKA_PRIVATE, &no, sizeof no}, {CKA_LABEL, (void *)label, strlen(label)},
        {CKA_ID, (void *)id, id_size}, {CKA_SUBJECT, (void *)subject, subject_size}, {CKA_VALUE, (void *)value, value_size},
    };
    return f->C_CreateObject(session, template, sizeof template / sizeof template[0], object);
}

unsigned long cp11_destroy(const cp11_modules *modules, size_t module, unsigned long session, unsigned long object) {
    return functions(modules, module)->C_DestroyObject(session, object);
}
