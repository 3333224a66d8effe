/* CommonCrypto.h: the whole Apple-compatible CommonCrypto API. */
#ifndef _COMMON_CRYPTO_H_
#define _COMMON_CRYPTO_H_
#include <CommonCrypto/CommonCryptoError.h>
#include <CommonCrypto/CommonCryptor.h>
#include <CommonCrypto/CommonDigest.h>
#include <CommonCrypto/CommonHMAC.h>
#include <CommonCrypto/CommonKeyDerivation.h>
#include <CommonCrypto/CommonRandom.h>
#include <CommonCrypto/CommonSymmetricKeywrap.h>
#endif
