#ifndef SECURITYSERVICES_CSSMTYPES_H
#define SECURITYSERVICES_CSSMTYPES_H
/* The CSSM types that SecCertificate.h, SecIdentity.h, SecKey.h, SecPolicy.h and SecTrust.h name in the parameters of
   their macOS calls (from cssmtype.h, cssmapple.h, x509defs.h and SecAsn1Types.h, all deprecated since macOS 10.7),
   with Apple's names, field names and layouts, so that code passing them compiles. CSSM itself does not exist here:
   the calls that take these answer errSecUnimplemented, or what the rest of this library can give (see docs/apple-compatibility.md).
   As Swift imports Apple's, CSSM_DATA is SecAsn1Item, CSSM_OID SecAsn1Oid and CSSM_X509_ALGORITHM_IDENTIFIER
   SecAsn1AlgId (cssmtype.h and x509defs.h #define them so). Types only ever pointed to from deep inside (encoded and
   parsed certificates, database records, memory functions) stay incomplete. */
#include <stddef.h>
#include <stdint.h>

typedef uint8_t uint8;
typedef uint16_t uint16;
typedef uint32_t uint32;
typedef int32_t sint32;
typedef intptr_t CSSM_INTPTR;
typedef size_t CSSM_SIZE;

/* SecAsn1Types.h */
typedef struct cssm_data {
    size_t Length;
    uint8_t *_Nullable Data;
} SecAsn1Item, SecAsn1Oid;

typedef struct {
    SecAsn1Oid algorithm;
    SecAsn1Item parameters;
} SecAsn1AlgId;

/* cssmtype.h: handles and scalar types */
typedef CSSM_INTPTR CSSM_HANDLE, *CSSM_HANDLE_PTR;
typedef CSSM_HANDLE CSSM_MODULE_HANDLE, *CSSM_MODULE_HANDLE_PTR;
typedef CSSM_MODULE_HANDLE CSSM_CSP_HANDLE;
typedef CSSM_MODULE_HANDLE CSSM_TP_HANDLE;
typedef CSSM_MODULE_HANDLE CSSM_CL_HANDLE;
typedef CSSM_MODULE_HANDLE CSSM_DL_HANDLE;
typedef CSSM_MODULE_HANDLE CSSM_DB_HANDLE;
typedef sint32 CSSM_RETURN;
typedef uint32 CSSM_CERT_TYPE, *CSSM_CERT_TYPE_PTR;
typedef uint32 CSSM_CERT_ENCODING, *CSSM_CERT_ENCODING_PTR;
typedef uint32 CSSM_KEYUSE;
typedef sint32 CSSM_ACL_AUTHORIZATION_TAG;
typedef uint32 CSSM_TP_ACTION;
typedef uint32 CSSM_HEADERVERSION;
typedef uint32 CSSM_KEYBLOB_TYPE;
typedef uint32 CSSM_KEYBLOB_FORMAT;
typedef uint32 CSSM_ALGORITHMS;
typedef uint32 CSSM_KEYCLASS;
typedef uint32 CSSM_KEYATTR_FLAGS;
typedef uint32 CSSM_ENCRYPT_MODE;
typedef uint32 CSSM_CERTGROUP_TYPE, *CSSM_CERTGROUP_TYPE_PTR;
typedef uint32 CSSM_LIST_TYPE, *CSSM_LIST_TYPE_PTR;
typedef uint32 CSSM_LIST_ELEMENT_TYPE, *CSSM_LIST_ELEMENT_TYPE_PTR;
typedef sint32 CSSM_WORDID_TYPE;
typedef uint32 CSSM_SERVICE_MASK;
typedef CSSM_SERVICE_MASK CSSM_SERVICE_TYPE;
typedef uint32 CSSM_EVIDENCE_FORM;
typedef uint8 CSSM_BER_TAG;
typedef uint32 CSSM_TP_APPLE_CERT_STATUS;
typedef SecAsn1Item *CSSM_DATA_PTR;
typedef SecAsn1AlgId *CSSM_X509_ALGORITHM_IDENTIFIER_PTR;
typedef char CSSM_STRING[64 + 4];

/* The certificate type and encoding SecCertificateGetType and SecCertificateCreateFromData speak. */
enum {
    CSSM_CERT_X_509v3 = 0x03,
    CSSM_CERT_ENCODING_DER = 0x03,
};

typedef struct cssm_guid {
    uint32 Data1;
    uint16 Data2;
    uint16 Data3;
    uint8 Data4[8];
} CSSM_GUID, *CSSM_GUID_PTR;

typedef struct cssm_version {
    uint32 Major;
    uint32 Minor;
} CSSM_VERSION, *CSSM_VERSION_PTR;

typedef struct cssm_date {
    uint8 Year[4];
    uint8 Month[2];
    uint8 Day[2];
} CSSM_DATE, *CSSM_DATE_PTR;

/* x509defs.h: names */
typedef struct cssm_x509_type_value_pair {
    SecAsn1Oid type;
    CSSM_BER_TAG valueType;
    SecAsn1Item value;
} CSSM_X509_TYPE_VALUE_PAIR, *CSSM_X509_TYPE_VALUE_PAIR_PTR;

typedef struct cssm_x509_rdn {
    uint32 numberOfPairs;
    CSSM_X509_TYPE_VALUE_PAIR_PTR _Nullable AttributeTypeAndValue;
} CSSM_X509_RDN, *CSSM_X509_RDN_PTR;

typedef struct cssm_x509_name {
    uint32 numberOfRDNs;
    CSSM_X509_RDN_PTR _Nullable RelativeDistinguishedName;
} CSSM_X509_NAME, *CSSM_X509_NAME_PTR;

/* Keys */
typedef struct cssm_keyheader {
    CSSM_HEADERVERSION HeaderVersion;
    CSSM_GUID CspId;
    CSSM_KEYBLOB_TYPE BlobType;
    CSSM_KEYBLOB_FORMAT Format;
    CSSM_ALGORITHMS AlgorithmId;
    CSSM_KEYCLASS KeyClass;
    uint32 LogicalKeySizeInBits;
    CSSM_KEYATTR_FLAGS KeyAttr;
    CSSM_KEYUSE KeyUsage;
    CSSM_DATE StartDate;
    CSSM_DATE EndDate;
    CSSM_ALGORITHMS WrapAlgorithmId;
    CSSM_ENCRYPT_MODE WrapMode;
    uint32 Reserved;
} CSSM_KEYHEADER, *CSSM_KEYHEADER_PTR;

typedef struct cssm_key {
    CSSM_KEYHEADER KeyHeader;
    SecAsn1Item KeyData;
} CSSM_KEY, *CSSM_KEY_PTR;

/* Access credentials */
struct cssm_encoded_cert;
struct cssm_parsed_cert;
struct cssm_cert_pair;
struct cssm_memory_funcs;
struct cssm_db_unique_record;

typedef struct cssm_certgroup {
    CSSM_CERT_TYPE CertType;
    CSSM_CERT_ENCODING CertEncoding;
    uint32 NumCerts;
    union {
        CSSM_DATA_PTR _Nullable CertList;
        struct cssm_encoded_cert *_Nullable EncodedCertList;
        struct cssm_parsed_cert *_Nullable ParsedCertList;
        struct cssm_cert_pair *_Nullable PairCertList;
    } GroupList;
    CSSM_CERTGROUP_TYPE CertGroupType;
    void *_Nullable Reserved;
} CSSM_CERTGROUP, *CSSM_CERTGROUP_PTR;

typedef struct cssm_base_certs {
    CSSM_TP_HANDLE TPHandle;
    CSSM_CL_HANDLE CLHandle;
    CSSM_CERTGROUP Certs;
} CSSM_BASE_CERTS, *CSSM_BASE_CERTS_PTR;

typedef struct cssm_list_element *CSSM_LIST_ELEMENT_PTR;

typedef struct cssm_list {
    CSSM_LIST_TYPE ListType;
    CSSM_LIST_ELEMENT_PTR _Nullable Head;
    CSSM_LIST_ELEMENT_PTR _Nullable Tail;
} CSSM_LIST, *CSSM_LIST_PTR;

typedef struct cssm_list_element {
    struct cssm_list_element *_Nullable NextElement;
    CSSM_WORDID_TYPE WordID;
    CSSM_LIST_ELEMENT_TYPE ElementType;
    union {
        CSSM_LIST Sublist;
        SecAsn1Item Word;
    } Element;
} CSSM_LIST_ELEMENT;

typedef struct cssm_subservice_uid {
    CSSM_GUID Guid;
    CSSM_VERSION Version;
    uint32 SubserviceId;
    CSSM_SERVICE_TYPE SubserviceType;
} CSSM_SUBSERVICE_UID, *CSSM_SUBSERVICE_UID_PTR;

typedef struct cssm_sample {
    CSSM_LIST TypedSample;
    const CSSM_SUBSERVICE_UID *_Nullable Verifier;
} CSSM_SAMPLE, *CSSM_SAMPLE_PTR;

typedef struct cssm_samplegroup {
    uint32 NumberOfSamples;
    const CSSM_SAMPLE *_Nullable Samples;
} CSSM_SAMPLEGROUP, *CSSM_SAMPLEGROUP_PTR;

typedef CSSM_RETURN (*CSSM_CHALLENGE_CALLBACK)(
    const CSSM_LIST *_Nonnull Challenge, CSSM_SAMPLEGROUP_PTR _Nonnull Response, void *_Nullable CallerCtx,
    const struct cssm_memory_funcs *_Nullable MemFuncs);

typedef struct cssm_access_credentials {
    CSSM_STRING EntryTag;
    CSSM_BASE_CERTS BaseCerts;
    CSSM_SAMPLEGROUP Samples;
    CSSM_CHALLENGE_CALLBACK _Nullable Callback;
    void *_Nullable CallerCtx;
} CSSM_ACCESS_CREDENTIALS, *CSSM_ACCESS_CREDENTIALS_PTR;

/* Trust results */
typedef struct cssm_evidence {
    CSSM_EVIDENCE_FORM EvidenceForm;
    void *_Nullable Evidence;
} CSSM_EVIDENCE, *CSSM_EVIDENCE_PTR;

typedef struct cssm_tp_verify_context_result {
    uint32 NumberOfEvidences;
    CSSM_EVIDENCE_PTR _Nullable Evidence;
} CSSM_TP_VERIFY_CONTEXT_RESULT, *CSSM_TP_VERIFY_CONTEXT_RESULT_PTR;

typedef struct cssm_dl_db_handle {
    CSSM_DL_HANDLE DLHandle;
    CSSM_DB_HANDLE DBHandle;
} CSSM_DL_DB_HANDLE, *CSSM_DL_DB_HANDLE_PTR;

typedef struct cssm_db_unique_record *CSSM_DB_UNIQUE_RECORD_PTR;

typedef struct {
    CSSM_TP_APPLE_CERT_STATUS StatusBits;
    uint32 NumStatusCodes;
    CSSM_RETURN *_Nullable StatusCodes;
    uint32 Index;
    CSSM_DL_DB_HANDLE DlDbHandle;
    CSSM_DB_UNIQUE_RECORD_PTR _Nullable UniqueRecord;
} CSSM_TP_APPLE_EVIDENCE_INFO;

#endif
