#ifndef SECURITYSERVICES_COPENSSLSHIMS_SCEP_H
#define SECURITYSERVICES_COPENSSLSHIMS_SCEP_H
/* SCEP (RFC 8894) messages over OpenSSL's PKCS#7 API: the pkiMessage a client sends (SignedData over
 * EnvelopedData, with SCEP's authenticated attributes), the CertRep it reads back, and certs-only SignedData.
 * SCEP's attribute OIDs are used as ASN1_OBJECTs, never registered with OBJ_create (which is not thread-safe
 * in OpenSSL 3.0 while other threads look objects up). */
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pkcs7.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <string.h>
#include <time.h>

/* id-VeriSign pki attributes (RFC 8894 3.2.1). */
#define COPENSSL_SCEP_OID_MESSAGE_TYPE "2.16.840.1.113733.1.9.2"
#define COPENSSL_SCEP_OID_PKI_STATUS "2.16.840.1.113733.1.9.3"
#define COPENSSL_SCEP_OID_FAIL_INFO "2.16.840.1.113733.1.9.4"
#define COPENSSL_SCEP_OID_SENDER_NONCE "2.16.840.1.113733.1.9.5"
#define COPENSSL_SCEP_OID_RECIPIENT_NONCE "2.16.840.1.113733.1.9.6"
#define COPENSSL_SCEP_OID_TRANSACTION_ID "2.16.840.1.113733.1.9.7"
#define COPENSSL_SCEP_OID_FAIL_INFO_TEXT "1.3.6.1.5.5.7.24.1"

enum { COPENSSL_SCEP_OK = 0, COPENSSL_SCEP_MALFORMED = 1, COPENSSL_SCEP_BAD_SIGNATURE = 2 };

/* A CertRep's authenticated attributes. Integers are -1 when absent; strings are NUL-terminated (truncated). */
typedef struct {
    int message_type;
    int pki_status;
    int fail_info;
    char transaction_id[129];
    unsigned char recipient_nonce[32];
    int recipient_nonce_length;
    unsigned char sender_nonce[32];
    int sender_nonce_length;
    char fail_info_text[161];
} copenssl_scep_reply;

/* Certificate stacks handed to Swift (owned: free with copenssl_scep_certificates_free). */
int copenssl_scep_certificates_count(const STACK_OF(X509) *stack);
X509 *copenssl_scep_certificates_at(const STACK_OF(X509) *stack, int index);
void copenssl_scep_certificates_free(STACK_OF(X509) *stack);
/* A stack of borrowed certificates (freed with copenssl_scep_borrowed_free, which leaves them alone). */
STACK_OF(X509) *copenssl_scep_borrowed_new(void);
int copenssl_scep_borrowed_push(STACK_OF(X509) *stack, X509 *certificate);
void copenssl_scep_borrowed_free(STACK_OF(X509) *stack);

/* Whether `issuer`'s key verifies `certificate`'s signature (an RA certificate and its CA): 1 when it does. */
int copenssl_scep_issued_by(X509 *certificate, X509 *issuer);

/* DER of a PKCS7 structure into *der (free with OPENSSL_free); its length, or <= 0 on failure. */
int copenssl_scep_encode(PKCS7 *p7, unsigned char **der);

/* A transient self-signed certificate for the key (RFC 8894 2.3): subject CN=common_name, a random positive
 * 64-bit serial, valid from an hour ago for `days` days, signed with `md`. NULL on failure. */
X509 *copenssl_scep_self_signed(EVP_PKEY *key, const char *common_name, const EVP_MD *md, int days);

/* An EnvelopedData holding `data`, encrypted with `cipher` for `recipient` (key transport). NULL on failure. */
PKCS7 *copenssl_scep_envelope(X509 *recipient, const EVP_CIPHER *cipher, const unsigned char *data,
                                            int length);

int copenssl_scep_add_attribute(PKCS7_SIGNER_INFO *signer, const char *oid, int type,
                                              const unsigned char *bytes, int length);

/* A pkiMessage (RFC 8894 3.2): SignedData over `content` (the DER of an EnvelopedData, or nothing), signed by
 * `key` with `md` under the certificate `signer` (included), with the authenticated attributes contentType,
 * messageType, transactionID and senderNonce, and when not NULL pkiStatus, failInfo and recipientNonce (a CA's
 * CertRep; a client passes NULL). messageDigest and signingTime are added when it is signed. NULL on failure. */
PKCS7 *copenssl_scep_sign(X509 *signer, EVP_PKEY *key, const EVP_MD *md, const char *message_type,
                                        const char *transaction_id, const unsigned char *nonce, int nonce_length,
                                        const char *pki_status, const char *fail_info,
                                        const unsigned char *recipient_nonce, int recipient_nonce_length,
                                        const unsigned char *content, int content_length);

/* The DER of SCEP's IssuerAndSubject (RFC 8894 3.3.3): SEQUENCE { issuer Name, subject Name }, into *der (free
 * with OPENSSL_free). Its length, or 0 on failure. */
int copenssl_scep_issuer_and_subject(const X509_NAME *issuer, const X509_NAME *subject,
                                                   unsigned char **der);

/* The attribute `oid` of the signer's authenticated attributes as a string of `type`; NULL when absent, of
 * another type, or present more than once. */
const ASN1_STRING *copenssl_scep_attribute(PKCS7_SIGNER_INFO *info, const char *oid, int type);

/* A PrintableString attribute holding a small decimal number (messageType, pkiStatus, failInfo); -1 when absent,
 * -2 when present but not a number. */
int copenssl_scep_number_attribute(PKCS7_SIGNER_INFO *info, const char *oid);

void copenssl_scep_copy_text(const ASN1_STRING *value, char *buffer, size_t size);

/* Reads a pkiMessage, in practice a CertRep (RFC 8894 3.3.2): a SignedData whose signature must verify under one
 * of `signers` (the CA or RA certificates; certificates inside the message are not trusted), and its authenticated
 * attributes into *reply. On COPENSSL_SCEP_OK, *content (free with OPENSSL_free) holds the signed content (the
 * DER of an EnvelopedData for SUCCESS; empty otherwise). Returns a COPENSSL_SCEP_ status. */
int copenssl_scep_open_reply(const unsigned char *der, long length, STACK_OF(X509) *signers,
                                           copenssl_scep_reply *reply, unsigned char **content, int *content_length);

/* The certificates of a certs-only (degenerate) SignedData, as a stack of new references; NULL when `der` is not
 * one or holds none. */
STACK_OF(X509) *copenssl_scep_certificates_only(const unsigned char *der, long length);

/* Decrypts the EnvelopedData `der` with `key` (the recipient `certificate`'s): the plaintext into *plain (free
 * with OPENSSL_clear_free: it may be a request holding a challenge password). Its length, or -1 on failure. */
long copenssl_scep_decrypt(const unsigned char *der, long length, EVP_PKEY *key, X509 *certificate,
                                         unsigned char **plain);
void copenssl_scep_clear_free(unsigned char *plain, long length);

/* Decrypts the EnvelopedData `der` with `key` (the recipient `certificate`'s) and reads the plaintext as a
 * certs-only SignedData. Its certificates, or NULL when it does not decrypt or is not that. */
STACK_OF(X509) *copenssl_scep_open_envelope(const unsigned char *der, long length, EVP_PKEY *key,
                                                          X509 *certificate);
#endif
