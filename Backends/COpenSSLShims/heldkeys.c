/* Held keys: see heldkeys.h. RSA_METHOD and EC_KEY_METHOD are deprecated in OpenSSL 3 in favour of providers, and
 * remain its supported way to give a key private operations of its own (engines and PKCS#11 modules use them). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <pthread.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/rsa.h>
#include "heldkeys.h"

struct holder {
    copenssl_held_operation operation;
    void *context;
    void (*release)(void *context);
};

static void holder_free(void *parent, void *pointer, CRYPTO_EX_DATA *data, int index, long argl, void *argp) {
    (void)parent, (void)data, (void)index, (void)argl, (void)argp;
    struct holder *holder = pointer;
    if (holder == NULL) return;
    holder->release(holder->context);
    OPENSSL_free(holder);
}

static int rsa_index = -1, ec_index = -1;
static RSA_METHOD *rsa_method;
static EC_KEY_METHOD *ec_method;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int held_rsa_private_encrypt(int flen, const unsigned char *from, unsigned char *to, RSA *rsa, int padding) {
    struct holder *holder = RSA_get_ex_data(rsa, rsa_index);
    int size = RSA_size(rsa);
    if (holder == NULL || size <= 0) return -1;
    unsigned char *block = OPENSSL_malloc((size_t)size);
    if (block == NULL) return -1;
    int ok;
    if (padding == RSA_PKCS1_PADDING) {
        ok = RSA_padding_add_PKCS1_type_1(block, size, from, flen);
    } else if (padding == RSA_NO_PADDING && flen == size) {
        memcpy(block, from, (size_t)size);
        ok = 1;
    } else {
        ok = 0;
    }
    size_t length = (size_t)size;
    ok = ok && holder->operation(holder->context, COPENSSL_HELD_RSA_RAW_SIGN, block, (size_t)size, to, &length) == 1
         && length == (size_t)size;
    OPENSSL_clear_free(block, (size_t)size);
    return ok ? size : -1;
}

static int held_rsa_private_decrypt(int flen, const unsigned char *from, unsigned char *to, RSA *rsa, int padding) {
    struct holder *holder = RSA_get_ex_data(rsa, rsa_index);
    int size = RSA_size(rsa);
    if (holder == NULL || size <= 0 || flen != size) return -1;
    unsigned char *block = OPENSSL_malloc((size_t)size);
    if (block == NULL) return -1;
    size_t length = (size_t)size;
    int result = -1;
    if (holder->operation(holder->context, COPENSSL_HELD_RSA_RAW_DECRYPT, from, (size_t)flen, block, &length) == 1
        && length == (size_t)size) {
        if (padding == RSA_NO_PADDING) {
            memcpy(to, block, (size_t)size);
            result = size;
        } else if (padding == RSA_PKCS1_PADDING) {
            result = RSA_padding_check_PKCS1_type_2(to, size, block, size, size);
        }
    }
    OPENSSL_clear_free(block, (size_t)size);
    return result;
}

static int held_ec_sign(int type, const unsigned char *digest, int digest_length, unsigned char *signature,
                        unsigned int *signature_length, const BIGNUM *kinv, const BIGNUM *r, EC_KEY *key) {
    (void)type, (void)kinv, (void)r;
    struct holder *holder = EC_KEY_get_ex_data(key, ec_index);
    int capacity = ECDSA_size(key);
    if (holder == NULL || capacity <= 0 || digest_length < 0) return 0;
    size_t length = (size_t)capacity;
    if (holder->operation(holder->context, COPENSSL_HELD_ECDSA_SIGN, digest, (size_t)digest_length, signature, &length) != 1)
        return 0;
    *signature_length = (unsigned int)length;
    return 1;
}

static ECDSA_SIG *held_ec_sign_sig(const unsigned char *digest, int digest_length, const BIGNUM *kinv, const BIGNUM *r,
                                   EC_KEY *key) {
    int capacity = ECDSA_size(key);
    if (capacity <= 0) return NULL;
    unsigned char *der = OPENSSL_malloc((size_t)capacity);
    if (der == NULL) return NULL;
    unsigned int length = 0;
    ECDSA_SIG *signature = NULL;
    if (held_ec_sign(0, digest, digest_length, der, &length, kinv, r, key) == 1) {
        const unsigned char *cursor = der;
        signature = d2i_ECDSA_SIG(NULL, &cursor, (long)length);
    }
    OPENSSL_free(der);
    return signature;
}

static void make_methods(void) {
    rsa_index = RSA_get_ex_new_index(0, NULL, NULL, NULL, holder_free);
    ec_index = EC_KEY_get_ex_new_index(0, NULL, NULL, NULL, holder_free);
    rsa_method = RSA_meth_dup(RSA_PKCS1_OpenSSL());
    if (rsa_method != NULL) {
        RSA_meth_set1_name(rsa_method, "SecurityServices held RSA key");
        RSA_meth_set_priv_enc(rsa_method, held_rsa_private_encrypt);
        RSA_meth_set_priv_dec(rsa_method, held_rsa_private_decrypt);
    }
    ec_method = EC_KEY_METHOD_new(EC_KEY_OpenSSL());
    if (ec_method != NULL) {
        int (*sign_setup)(EC_KEY *, BN_CTX *, BIGNUM **, BIGNUM **) = NULL;
        EC_KEY_METHOD_get_sign(EC_KEY_OpenSSL(), NULL, &sign_setup, NULL);
        EC_KEY_METHOD_set_sign(ec_method, held_ec_sign, sign_setup, held_ec_sign_sig);
    }
}

/* A legacy RSA key with the public half of `public_key` and the held-key method; no holder yet. */
static EVP_PKEY *held_rsa(EVP_PKEY *public_key) {
    BIGNUM *n = NULL, *e = NULL;
    RSA *rsa = NULL;
    EVP_PKEY *pkey = NULL;
    if (EVP_PKEY_get_bn_param(public_key, OSSL_PKEY_PARAM_RSA_N, &n) != 1
        || EVP_PKEY_get_bn_param(public_key, OSSL_PKEY_PARAM_RSA_E, &e) != 1 || (rsa = RSA_new()) == NULL
        || RSA_set0_key(rsa, n, e, NULL) != 1) {
        BN_free(n);
        BN_free(e);
        RSA_free(rsa);
        return NULL;
    }
    if (RSA_set_method(rsa, rsa_method) != 1 || (pkey = EVP_PKEY_new()) == NULL || EVP_PKEY_assign_RSA(pkey, rsa) != 1) {
        EVP_PKEY_free(pkey);
        RSA_free(rsa);
        return NULL;
    }
    return pkey;
}

/* A legacy EC key with the public point of `public_key` and the held-key method; no holder yet. */
static EVP_PKEY *held_ec(EVP_PKEY *public_key) {
    char group[64];
    unsigned char point[1 + 2 * 66];
    size_t point_length = 0;
    EC_KEY *ec = NULL;
    EVP_PKEY *pkey = NULL;
    if (EVP_PKEY_get_utf8_string_param(public_key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, NULL) != 1
        || EVP_PKEY_get_octet_string_param(public_key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point, sizeof point, &point_length) != 1
        || (ec = EC_KEY_new_by_curve_name(EC_curve_nist2nid(group) != NID_undef ? EC_curve_nist2nid(group) : OBJ_sn2nid(group))) == NULL
        || EC_KEY_oct2key(ec, point, point_length, NULL) != 1) {
        EC_KEY_free(ec);
        return NULL;
    }
    if (EC_KEY_set_method(ec, ec_method) != 1 || (pkey = EVP_PKEY_new()) == NULL || EVP_PKEY_assign_EC_KEY(pkey, ec) != 1) {
        EVP_PKEY_free(pkey);
        EC_KEY_free(ec);
        return NULL;
    }
    return pkey;
}

EVP_PKEY *copenssl_held_key(EVP_PKEY *public_key, copenssl_held_operation operation, void *context,
                            void (*release)(void *context)) {
    pthread_once(&once, make_methods);
    struct holder *holder = OPENSSL_malloc(sizeof *holder);
    EVP_PKEY *pkey = NULL;
    if (holder != NULL && rsa_method != NULL && ec_method != NULL && rsa_index >= 0 && ec_index >= 0) {
        holder->operation = operation;
        holder->context = context;
        holder->release = release;
        // The holder is attached last: from then on the key frees it (holder_free) and calls `release`.
        if (EVP_PKEY_is_a(public_key, "RSA") && (pkey = held_rsa(public_key)) != NULL) {
            if (RSA_set_ex_data((RSA *)EVP_PKEY_get0_RSA(pkey), rsa_index, holder) == 1) return pkey;
        } else if (EVP_PKEY_is_a(public_key, "EC") && (pkey = held_ec(public_key)) != NULL) {
            if (EC_KEY_set_ex_data((EC_KEY *)EVP_PKEY_get0_EC_KEY(pkey), ec_index, holder) == 1) return pkey;
        }
    }
    EVP_PKEY_free(pkey);
    OPENSSL_free(holder);
    release(context);
    return NULL;
}
