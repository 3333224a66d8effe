/* CommonRandom.h: cryptographically secure random bytes (getrandom(2)). */
#ifndef _CC_COMMON_RANDOM_H_
#define _CC_COMMON_RANDOM_H_

#include <stddef.h>
#include <CommonCrypto/CommonCryptoError.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef CCCryptorStatus CCRNGStatus;

/* Fills bytes[0..<count]; kCCSuccess, or kCCRNGFailure (and the buffer must not be used). */
CCRNGStatus CCRandomGenerateBytes(void *bytes, size_t count);

#ifdef __cplusplus
}
#endif
#endif /* _CC_COMMON_RANDOM_H_ */
