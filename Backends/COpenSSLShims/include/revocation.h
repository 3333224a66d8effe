#ifndef SECURITYSERVICES_COPENSSLSHIMS_REVOCATION_H
#define SECURITYSERVICES_COPENSSLSHIMS_REVOCATION_H
/* Revocation: the URLs a certificate names, OCSP (RFC 6960) requests, and reading CRLs and caIssuers answers.
 * The checks of OCSP responses and CRLs and every decision are Swift's (Trust's RevocationAnswers.swift), and so
 * is the HTTP that carries them (NetworkFetch). Helpers prefixed copenssl_revocation_. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>
#include <openssl/pkcs7.h>
#include <openssl/x509v3.h>
#include <openssl/err.h>
#include <string.h>
#include <time.h>

/* Which URL of a certificate copenssl_revocation_url looks for. */
enum {
    COPENSSL_REVOCATION_URL_OCSP = 0,       /* AIA id-ad-ocsp */
    COPENSSL_REVOCATION_URL_CRL = 1,        /* CRL distribution point, fullName */
    COPENSSL_REVOCATION_URL_CA_ISSUERS = 2, /* AIA id-ad-caIssuers (RFC 5280 4.2.2.1) */
};

/* Copies `uri` into `buffer` when it is an http:// URL that fits and holds no NUL. Returns 1 when copied. */
int copenssl_revocation_copy_http_uri(const ASN1_IA5STRING *uri, char *buffer, size_t size);

/* The first http:// URL of the given kind (COPENSSL_REVOCATION_URL_...) in the certificate, copied into
 * `buffer`. Returns 1 when one was found. */
int copenssl_revocation_url(X509 *certificate, int kind, char *buffer, size_t size);

/* An OCSP request about `certificate` (issued by `issuer`) with a fresh nonce: the request (free with
 * OCSP_REQUEST_free; Swift's OCSP check takes it to match the nonce) and its DER in *der (free with
 * OPENSSL_free), *length bytes. NULL on failure. The HTTP exchange is the caller's (Swift's NetworkFetch). */
OCSP_REQUEST *copenssl_revocation_ocsp_request(X509 *certificate, X509 *issuer, unsigned char **der,
                                                             int *length);

/* Reads one DER or PEM CRL from memory (what a cache stores). */
X509_CRL *copenssl_revocation_crl_from_der(const unsigned char *der, long length);

/* How many revoked entries `crl` lists, and how many extensions they carry in all (*extensions): what its parsed
 * form costs in memory grows with both (a CRL cache bounds that cost, not the DER's length). */
int copenssl_revocation_crl_entries(X509_CRL *crl, long *extensions);

/* Reads what a caIssuers URL names (RFC 5280 4.2.2.1: one DER certificate, or a "certs-only" CMS/PKCS#7
 * SignedData, .p7c). Writes up to `max` certificates to `out` (each a new reference the caller frees) and returns
 * how many; 0 when the bytes are neither. */
int copenssl_revocation_issuers_parse(const unsigned char *data, long length, X509 **out, int max);
#endif
