#include "CBaselines.h"

#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

struct cbaseline_trust {
    X509_STORE *store; /* prepared once: the root */
    STACK_OF(X509) *untrusted;
    X509 *leaf;
    char hostname[256];
};

static X509 *parse(const uint8_t *der, size_t length) {
    const unsigned char *cursor = der;
    return d2i_X509(NULL, &cursor, (long)length);
}

cbaseline_trust *cbaseline_trust_new(const uint8_t *leaf, size_t leaf_length, const uint8_t *intermediate,
                                     size_t intermediate_length, const uint8_t *root, size_t root_length,
                                     const char *hostname) {
    cbaseline_trust *b = calloc(1, sizeof *b);
    if (b == NULL || strlen(hostname) >= sizeof b->hostname) {
        free(b);
        return NULL;
    }
    strcpy(b->hostname, hostname);
    X509 *anchor = parse(root, root_length);
    X509 *middle = parse(intermediate, intermediate_length);
    b->leaf = parse(leaf, leaf_length);
    b->store = X509_STORE_new();
    b->untrusted = sk_X509_new_null();
    if (anchor == NULL || middle == NULL || b->leaf == NULL || b->store == NULL || b->untrusted == NULL
        || X509_STORE_add_cert(b->store, anchor) != 1 || sk_X509_push(b->untrusted, middle) <= 0) {
        X509_free(anchor);
        X509_free(middle);
        cbaseline_trust_free(b);
        return NULL;
    }
    X509_free(anchor); /* the store holds its own reference */
    return b;
}

/* One verification and hostname check; `checked` adds the flags and the initial policy set the trust evaluator asks
 * of OpenSSL. */
static int run(cbaseline_trust *b, int checked) {
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int ok = ctx != NULL && X509_STORE_CTX_init(ctx, b->store, b->leaf, b->untrusted) == 1;
    if (ok && checked) {
        X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
        ASN1_OBJECT *any = OBJ_dup(OBJ_nid2obj(NID_any_policy));
        ok = any != NULL
            && X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN | X509_V_FLAG_POLICY_CHECK | X509_V_FLAG_X509_STRICT) == 1
            && X509_VERIFY_PARAM_add0_policy(param, any) == 1;
        if (!ok) ASN1_OBJECT_free(any); /* else the parameters own it */
    }
    ok = ok && X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER) == 1 && X509_verify_cert(ctx) == 1
        && X509_check_host(b->leaf, b->hostname, 0, 0, NULL) == 1;
    X509_STORE_CTX_free(ctx);
    return ok ? 0 : -1;
}

int cbaseline_trust_run(cbaseline_trust *b) { return run(b, 0); }

int cbaseline_trust_run_checked(cbaseline_trust *b) { return run(b, 1); }

void cbaseline_trust_free(cbaseline_trust *b) {
    if (b == NULL) return;
    X509_STORE_free(b->store);
    sk_X509_pop_free(b->untrusted, X509_free);
    X509_free(b->leaf);
    free(b);
}
