#ifndef SECURITYSERVICES_COPENSSLSHIMS_REVOCATION_H
#define SECURITYSERVICES_COPENSSLSHIMS_REVOCATION_H
/* Revocation: OCSP (RFC 6960) requests and the checks of OCSP responses and CRLs (RFC 5280); the HTTP that
 * carries them is Swift's (NetworkFetch). Helpers prefixed copenssl_revocation_. Statuses: */
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

enum {
    COPENSSL_REVOCATION_GOOD = 0,      /* a valid, fresh answer says not revoked */
    COPENSSL_REVOCATION_REVOKED = 1,   /* a valid, fresh answer says revoked */
    COPENSSL_REVOCATION_UNKNOWN = 2,   /* an answer that settles nothing: unknown status, stale, unverifiable */
    COPENSSL_REVOCATION_NO_ANSWER = 3, /* nothing to ask, or the server did not answer in time */
};

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

/* When an answer was issued and until when it is current (thisUpdate/lastUpdate and nextUpdate), as seconds since
 * 1970; whether it is fresh at a given time is decided in Swift (Trust's RevocationFreshness). */
struct copenssl_revocation_validity {
    int has_this_update;
    long long this_update;
    int has_next_update;
    long long next_update;
};

/* `time` as seconds since 1970 in *seconds: 1, or 0 when `time` is NULL or unreadable. */
int copenssl_revocation_seconds(const ASN1_TIME *time, long long *seconds);

/* Checks a DER OCSP response about `certificate` (issued by `issuer`, whose path ends at `anchor`) at `time`:
 * a successful response, signed by the issuer or by a responder the issuer delegated to (id-kp-OCSPSigning),
 * answering for this certificate; when `request` is given, its nonce must come back if the responder echoes
 * nonces. Returns a COPENSSL_REVOCATION_ status and the answer's dates in *validity (its freshness is the
 * caller's to judge). */
int copenssl_revocation_ocsp_check(X509 *certificate, X509 *issuer, X509 *anchor, const unsigned char *der,
                                   long length, OCSP_REQUEST *request, time_t time,
                                   struct copenssl_revocation_validity *validity);

/* An OCSP request about `certificate` (issued by `issuer`) with a fresh nonce: the request (free with
 * OCSP_REQUEST_free; copenssl_revocation_ocsp_check takes it to match the nonce) and its DER in *der (free with
 * OPENSSL_free), *length bytes. NULL on failure. The HTTP exchange is the caller's (Swift's NetworkFetch). */
OCSP_REQUEST *copenssl_revocation_ocsp_request(X509 *certificate, X509 *issuer, unsigned char **der,
                                                             int *length);

/* The CRL's lastUpdate and nextUpdate. */
void copenssl_revocation_crl_validity(const X509_CRL *crl, struct copenssl_revocation_validity *validity);

/* 1 when `crl` names `issuer` as its issuer and `issuer`'s key verifies its signature, else 0. */
int copenssl_revocation_crl_signed_by(X509_CRL *crl, X509 *issuer);

/* Checks `certificate` against a CRL that `issuer` signed: the issuer's name, its signature, the entry. Returns a
 * COPENSSL_REVOCATION_ status (UNKNOWN when the CRL settles nothing); its freshness is the caller's to judge. */
int copenssl_revocation_crl_check(X509_CRL *crl, X509 *certificate, X509 *issuer);

/* Reads one DER or PEM CRL from memory (what a cache stores). */
X509_CRL *copenssl_revocation_crl_from_der(const unsigned char *der, long length);

/* Reads what a caIssuers URL names (RFC 5280 4.2.2.1: one DER certificate, or a "certs-only" CMS/PKCS#7
 * SignedData, .p7c). Writes up to `max` certificates to `out` (each a new reference the caller frees) and returns
 * how many; 0 when the bytes are neither. */
int copenssl_revocation_issuers_parse(const unsigned char *data, long length, X509 **out, int max);
#endif
