#include "ctpm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>

struct ctpm {
    TSS2_TCTI_CONTEXT *tcti;
    ESYS_CONTEXT *esys;
    ESYS_TR primary;
    struct ctpm *next;
};

/// The open connections, closed at exit: a TPM reached without a resource manager (swtpm, /dev/tpm0) keeps a
/// process's transient objects after it ends, and has room for three. (/dev/tpmrm0 flushes them itself.)
static struct ctpm *open_connections;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t exit_hook = PTHREAD_ONCE_INIT;

static void close_all_at_exit(void) {
    pthread_mutex_lock(&open_lock);
    struct ctpm *tpm = open_connections;
    open_connections = NULL;
    pthread_mutex_unlock(&open_lock);
    while (tpm != NULL) {
        struct ctpm *next = tpm->next;
        tpm->next = NULL;
        ctpm_close(tpm);
        tpm = next;
    }
}

static void register_exit_hook(void) { atexit(close_all_at_exit); }

/// A response code of this library's own (the TSS2 layer byte says "application"), for input it refuses.
#define CTPM_BAD_INPUT ((uint32_t)0x00ff0001)

static TPM2B_PUBLIC ecc_template(TPMA_OBJECT attributes, int storage) {
    TPM2B_PUBLIC template;
    memset(&template, 0, sizeof template);
    template.publicArea.type = TPM2_ALG_ECC;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    template.publicArea.objectAttributes = attributes;
    TPMS_ECC_PARMS *ecc = &template.publicArea.parameters.eccDetail;
    if (storage) {
        ecc->symmetric.algorithm = TPM2_ALG_AES;
        ecc->symmetric.keyBits.aes = 128;
        ecc->symmetric.mode.aes = TPM2_ALG_CFB;
        // The unique field stays empty, as tpm2_createprimary leaves it: `tpm2_createprimary -C o -G ecc256:aes128cfb
        // -a 'restricted|decrypt|fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda'` makes the same primary,
        // so tpm2-tools load the keys made here.
    } else {
        ecc->symmetric.algorithm = TPM2_ALG_NULL;
    }
    ecc->scheme.scheme = TPM2_ALG_NULL;
    ecc->curveID = TPM2_ECC_NIST_P256;
    ecc->kdf.scheme = TPM2_ALG_NULL;
    return template;
}

/// What creating an object takes besides its template: no authorization value or data of its own, no outside
/// information, no PCRs recorded.
struct creation_inputs {
    TPM2B_SENSITIVE_CREATE sensitive;
    TPM2B_DATA outside;
    TPML_PCR_SELECTION pcrs;
};

static struct creation_inputs creation_inputs(void) {
    struct creation_inputs in;
    memset(&in, 0, sizeof in);
    return in;
}

uint32_t ctpm_open(const char *tcti, ctpm **out) {
    ctpm *tpm = calloc(1, sizeof *tpm);
    if (tpm == NULL) return TSS2_BASE_RC_MEMORY;
    TSS2_RC rc = Tss2_TctiLdr_Initialize(tcti, &tpm->tcti);
    if (rc == TSS2_RC_SUCCESS) rc = Esys_Initialize(&tpm->esys, tpm->tcti, NULL);
    // A TPM that stops answering fails the call instead of blocking it for ever (milliseconds).
    if (rc == TSS2_RC_SUCCESS) rc = Esys_SetTimeout(tpm->esys, 30000);
    if (rc == TSS2_RC_SUCCESS) {
        struct creation_inputs in = creation_inputs();
        TPM2B_PUBLIC template = ecc_template(
            TPMA_OBJECT_RESTRICTED | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM | TPMA_OBJECT_FIXEDPARENT |
                TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA,
            1);
        rc = Esys_CreatePrimary(
            tpm->esys, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &in.sensitive, &template, &in.outside,
            &in.pcrs, &tpm->primary, NULL, NULL, NULL, NULL);
    }
    if (rc != TSS2_RC_SUCCESS) {
        ctpm_close(tpm);
        return rc;
    }
    pthread_once(&exit_hook, register_exit_hook);
    pthread_mutex_lock(&open_lock);
    tpm->next = open_connections;
    open_connections = tpm;
    pthread_mutex_unlock(&open_lock);
    *out = tpm;
    return TSS2_RC_SUCCESS;
}

void ctpm_close(ctpm *tpm) {
    if (tpm == NULL) return;
    pthread_mutex_lock(&open_lock);
    for (struct ctpm **link = &open_connections; *link != NULL; link = &(*link)->next) {
        if (*link == tpm) {
            *link = tpm->next;
            break;
        }
    }
    pthread_mutex_unlock(&open_lock);
    if (tpm->esys != NULL) {
        if (tpm->primary != ESYS_TR_NONE && tpm->primary != 0) Esys_FlushContext(tpm->esys, tpm->primary);
        Esys_Finalize(&tpm->esys);
    }
    if (tpm->tcti != NULL) Tss2_TctiLdr_Finalize(&tpm->tcti);
    free(tpm);
}

const char *ctpm_describe(uint32_t rc) {
    if (rc == CTPM_BAD_INPUT) return "ctpm: input is not the area, point, digest or block of a key made here";
    return Tss2_RC_Decode(rc);
}

static void write_point(const TPMS_ECC_POINT *point, uint8_t out[65]) {
    memset(out, 0, 65);
    out[0] = 0x04;
    // Coordinates are big-endian, possibly shorter than 32 bytes: right-aligned.
    memcpy(out + 1 + 32 - point->x.size, point->x.buffer, point->x.size);
    memcpy(out + 33 + 32 - point->y.size, point->y.buffer, point->y.size);
}

/// A public area as this library makes them: a P-256 key, or an RSA key of 2048, 3072 or 4096 bits.
static uint32_t unmarshal_public(const uint8_t *area, size_t size, TPM2B_PUBLIC *public) {
    size_t offset = 0;
    memset(public, 0, sizeof *public);
    TSS2_RC rc = Tss2_MU_TPM2B_PUBLIC_Unmarshal(area, size, &offset, public);
    if (rc != TSS2_RC_SUCCESS) return rc;
    if (offset != size) return CTPM_BAD_INPUT;
    const TPMT_PUBLIC *key = &public->publicArea;
    if (key->type == TPM2_ALG_ECC) {
        if (key->parameters.eccDetail.curveID != TPM2_ECC_NIST_P256 || key->unique.ecc.x.size > 32 || key->unique.ecc.y.size > 32)
            return CTPM_BAD_INPUT;
        return TSS2_RC_SUCCESS;
    }
    if (key->type == TPM2_ALG_RSA) {
        UINT16 bits = key->parameters.rsaDetail.keyBits;
        if ((bits != 2048 && bits != 3072 && bits != 4096) || key->unique.rsa.size != bits / 8 ||
            (key->parameters.rsaDetail.exponent != 0 && key->parameters.rsaDetail.exponent != 65537))
            return CTPM_BAD_INPUT;
        return TSS2_RC_SUCCESS;
    }
    return CTPM_BAD_INPUT;
}

uint32_t ctpm_public_key(const uint8_t *public_area, size_t public_size, enum ctpm_key_kind *kind, uint8_t *out, size_t *out_size) {
    TPM2B_PUBLIC public;
    TSS2_RC rc = unmarshal_public(public_area, public_size, &public);
    if (rc != TSS2_RC_SUCCESS) return rc;
    if (*out_size < 512) return CTPM_BAD_INPUT;
    if (public.publicArea.type == TPM2_ALG_ECC) {
        *kind = CTPM_KEY_P256;
        write_point(&public.publicArea.unique.ecc, out);
        *out_size = 65;
    } else {
        *kind = CTPM_KEY_RSA;
        memcpy(out, public.publicArea.unique.rsa.buffer, public.publicArea.unique.rsa.size);
        *out_size = public.publicArea.unique.rsa.size;
    }
    return TSS2_RC_SUCCESS;
}

/// Creates a key of `template` under the primary and marshals its areas.
static uint32_t create(
    ctpm *tpm, const TPM2B_PUBLIC *template, uint8_t *public_area, size_t *public_size, uint8_t *private_area, size_t *private_size) {
    struct creation_inputs in = creation_inputs();
    TPM2B_PRIVATE *private = NULL;
    TPM2B_PUBLIC *public = NULL;
    TSS2_RC rc = Esys_Create(
        tpm->esys, tpm->primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &in.sensitive, template, &in.outside, &in.pcrs,
        &private, &public, NULL, NULL, NULL);
    if (rc == TSS2_RC_SUCCESS) {
        size_t offset = 0;
        rc = Tss2_MU_TPM2B_PUBLIC_Marshal(public, public_area, CTPM_BLOB_MAX, &offset);
        *public_size = offset;
        offset = 0;
        if (rc == TSS2_RC_SUCCESS) rc = Tss2_MU_TPM2B_PRIVATE_Marshal(private, private_area, CTPM_BLOB_MAX, &offset);
        *private_size = offset;
    }
    Esys_Free(private);
    Esys_Free(public);
    return rc;
}

/// Unrestricted, so one key both signs (any digest the caller made) and decrypts or agrees; with no authorization
/// value, outside dictionary-attack protection, which would only count a TPM's unclean restarts.
static const TPMA_OBJECT key_attributes = TPMA_OBJECT_SIGN_ENCRYPT | TPMA_OBJECT_DECRYPT | TPMA_OBJECT_FIXEDTPM |
    TPMA_OBJECT_FIXEDPARENT | TPMA_OBJECT_SENSITIVEDATAORIGIN | TPMA_OBJECT_USERWITHAUTH | TPMA_OBJECT_NODA;

uint32_t ctpm_create_p256(ctpm *tpm, uint8_t *public_area, size_t *public_size, uint8_t *private_area, size_t *private_size) {
    TPM2B_PUBLIC template = ecc_template(key_attributes, 0);
    return create(tpm, &template, public_area, public_size, private_area, private_size);
}

uint32_t ctpm_create_rsa(
    ctpm *tpm, uint16_t bits, uint8_t *public_area, size_t *public_size, uint8_t *private_area, size_t *private_size) {
    if (bits != 2048 && bits != 3072 && bits != 4096) return CTPM_BAD_INPUT;
    TPM2B_PUBLIC template;
    memset(&template, 0, sizeof template);
    template.publicArea.type = TPM2_ALG_RSA;
    template.publicArea.nameAlg = TPM2_ALG_SHA256;
    template.publicArea.objectAttributes = key_attributes;
    TPMS_RSA_PARMS *rsa = &template.publicArea.parameters.rsaDetail;
    rsa->symmetric.algorithm = TPM2_ALG_NULL;
    rsa->scheme.scheme = TPM2_ALG_NULL;
    rsa->keyBits = bits;
    rsa->exponent = 0;  // 65537
    return create(tpm, &template, public_area, public_size, private_area, private_size);
}

/// Loads a key made here under the primary: its transient handle, to flush after use.
static uint32_t load(
    ctpm *tpm, const uint8_t *public_area, size_t public_size, const uint8_t *private_area, size_t private_size, ESYS_TR *key) {
    TPM2B_PUBLIC public;
    TSS2_RC rc = unmarshal_public(public_area, public_size, &public);
    if (rc != TSS2_RC_SUCCESS) return rc;
    TPM2B_PRIVATE private;
    memset(&private, 0, sizeof private);
    size_t offset = 0;
    rc = Tss2_MU_TPM2B_PRIVATE_Unmarshal(private_area, private_size, &offset, &private);
    if (rc != TSS2_RC_SUCCESS) return rc;
    if (offset != private_size) return CTPM_BAD_INPUT;
    return Esys_Load(tpm->esys, tpm->primary, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &private, &public, key);
}

uint32_t ctpm_sign_p256(
    ctpm *tpm, const uint8_t *public_area, size_t public_size, const uint8_t *private_area, size_t private_size,
    const uint8_t *digest, size_t digest_size, uint8_t r[32], uint8_t s[32]) {
    if (digest_size != 32) return CTPM_BAD_INPUT;
    TPMT_SIG_SCHEME scheme;
    memset(&scheme, 0, sizeof scheme);
    scheme.scheme = TPM2_ALG_ECDSA;
    scheme.details.ecdsa.hashAlg = TPM2_ALG_SHA256;
    TPM2B_DIGEST input;
    memset(&input, 0, sizeof input);
    input.size = (UINT16)digest_size;
    memcpy(input.buffer, digest, digest_size);
    // No ticket: the key is unrestricted, so it may sign a digest the TPM did not make.
    TPMT_TK_HASHCHECK validation;
    memset(&validation, 0, sizeof validation);
    validation.tag = TPM2_ST_HASHCHECK;
    validation.hierarchy = TPM2_RH_NULL;
    ESYS_TR key = ESYS_TR_NONE;
    TSS2_RC rc = load(tpm, public_area, public_size, private_area, private_size, &key);
    if (rc != TSS2_RC_SUCCESS) return rc;
    TPMT_SIGNATURE *signature = NULL;
    rc = Esys_Sign(tpm->esys, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &input, &scheme, &validation, &signature);
    Esys_FlushContext(tpm->esys, key);
    if (rc == TSS2_RC_SUCCESS) {
        const TPM2B_ECC_PARAMETER *sr = &signature->signature.ecdsa.signatureR;
        const TPM2B_ECC_PARAMETER *ss = &signature->signature.ecdsa.signatureS;
        if (sr->size > 32 || ss->size > 32) {
            rc = CTPM_BAD_INPUT;
        } else {
            memset(r, 0, 32);
            memset(s, 0, 32);
            memcpy(r + 32 - sr->size, sr->buffer, sr->size);
            memcpy(s + 32 - ss->size, ss->buffer, ss->size);
        }
    }
    Esys_Free(signature);
    return rc;
}

uint32_t ctpm_ecdh_p256(
    ctpm *tpm, const uint8_t *public_area, size_t public_size, const uint8_t *private_area, size_t private_size,
    const uint8_t peer[65], uint8_t x[32]) {
    if (peer[0] != 0x04) return CTPM_BAD_INPUT;
    TPM2B_ECC_POINT input;
    memset(&input, 0, sizeof input);
    input.point.x.size = 32;
    memcpy(input.point.x.buffer, peer + 1, 32);
    input.point.y.size = 32;
    memcpy(input.point.y.buffer, peer + 33, 32);
    ESYS_TR key = ESYS_TR_NONE;
    TSS2_RC rc = load(tpm, public_area, public_size, private_area, private_size, &key);
    if (rc != TSS2_RC_SUCCESS) return rc;
    TPM2B_ECC_POINT *shared = NULL;
    rc = Esys_ECDH_ZGen(tpm->esys, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &input, &shared);
    Esys_FlushContext(tpm->esys, key);
    if (rc == TSS2_RC_SUCCESS) {
        if (shared->point.x.size > 32) {
            rc = CTPM_BAD_INPUT;
        } else {
            memset(x, 0, 32);
            memcpy(x + 32 - shared->point.x.size, shared->point.x.buffer, shared->point.x.size);
        }
    }
    Esys_Free(shared);
    return rc;
}

uint32_t ctpm_rsa_raw(
    ctpm *tpm, const uint8_t *public_area, size_t public_size, const uint8_t *private_area, size_t private_size,
    const uint8_t *input, size_t input_size, uint8_t *output, size_t output_size) {
    TPM2B_PUBLIC_KEY_RSA block;
    memset(&block, 0, sizeof block);
    if (input_size > sizeof block.buffer || output_size < input_size) return CTPM_BAD_INPUT;
    block.size = (UINT16)input_size;
    memcpy(block.buffer, input, input_size);
    TPMT_RSA_DECRYPT scheme;
    memset(&scheme, 0, sizeof scheme);
    scheme.scheme = TPM2_ALG_NULL;
    TPM2B_DATA label;
    memset(&label, 0, sizeof label);
    ESYS_TR key = ESYS_TR_NONE;
    TSS2_RC rc = load(tpm, public_area, public_size, private_area, private_size, &key);
    if (rc != TSS2_RC_SUCCESS) return rc;
    TPM2B_PUBLIC_KEY_RSA *result = NULL;
    rc = Esys_RSA_Decrypt(tpm->esys, key, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &block, &scheme, &label, &result);
    Esys_FlushContext(tpm->esys, key);
    if (rc == TSS2_RC_SUCCESS) {
        // Right-aligned in the modulus-sized output: the TPM may drop leading zero bytes.
        if (result->size > input_size) {
            rc = CTPM_BAD_INPUT;
        } else {
            memset(output, 0, input_size);
            memcpy(output + input_size - result->size, result->buffer, result->size);
        }
        memset(result->buffer, 0, sizeof result->buffer);
    }
    Esys_Free(result);
    memset(block.buffer, 0, sizeof block.buffer);
    return rc;
}
