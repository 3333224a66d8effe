#ifndef SECURITYSERVICES_COPENSSL_KEYS_SHIM_H
#define SECURITYSERVICES_COPENSSL_KEYS_SHIM_H
/* Asymmetric keys: RSA and EC through EVP_PKEY. */
#include <openssl/rsa.h>
#include <openssl/ec.h>
#include <openssl/encoder.h>
#include <openssl/decoder.h>
#include <openssl/param_build.h>
#endif
