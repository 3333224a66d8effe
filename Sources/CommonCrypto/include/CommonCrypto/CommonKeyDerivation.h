/* CommonKeyDerivation.h: PBKDF2 (RFC 8018), with Apple's names and values. */
#ifndef _CC_PBKDF_H_
#define _CC_PBKDF_H_

#include <stddef.h>
#include <stdint.h>
#include <CommonCrypto/CommonDigest.h>
#include <CommonCrypto/CommonHMAC.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    kCCPBKDF2 = 2,
};
typedef uint32_t CCPBKDFAlgorithm;

enum {
    kCCPRFHmacAlgSHA1   = 1,
    kCCPRFHmacAlgSHA224 = 2,
    kCCPRFHmacAlgSHA256 = 3,
    kCCPRFHmacAlgSHA384 = 4,
    kCCPRFHmacAlgSHA512 = 5,
};
typedef uint32_t CCPseudoRandomAlgorithm;

/* Returns kCCSuccess, or kCCParamError for a bad algorithm, PRF, rounds of 0 or NULL pointers. */
int CCKeyDerivationPBKDF(CCPBKDFAlgorithm algorithm, const char *password, size_t passwordLen, const uint8_t *salt,
                         size_t saltLen, CCPseudoRandomAlgorithm prf, unsigned int rounds, uint8_t *derivedKey,
                         size_t derivedKeyLen);

/* The number of rounds that takes about msec milliseconds here (at least 10000). */
unsigned int CCCalibratePBKDF(CCPBKDFAlgorithm algorithm, size_t passwordLen, size_t saltLen,
                              CCPseudoRandomAlgorithm prf, size_t derivedKeyLen, uint32_t msec);

#ifdef __cplusplus
}
#endif
#endif /* _CC_PBKDF_H_ */
