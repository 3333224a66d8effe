#ifndef SECURITYSERVICES_COPENSSL_CERTIFICATES_SHIM_H
#define SECURITYSERVICES_COPENSSL_CERTIFICATES_SHIM_H
/* X.509, PEM and PKCS#12: certificates, identities, PKCS#12 import/export, CSRs. */
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/bio.h>
#endif
