/* CommonCryptoError.h: status codes, as in Apple's CommonCrypto. */
#ifndef _CC_COMMON_CRYPTO_ERROR_H_
#define _CC_COMMON_CRYPTO_ERROR_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    kCCSuccess          = 0,      /* Operation completed normally. */
    kCCParamError       = -4300,  /* Illegal parameter value. */
    kCCBufferTooSmall   = -4301,  /* Insufficient buffer provided for specified operation. */
    kCCMemoryFailure    = -4302,  /* Memory allocation failure. */
    kCCAlignmentError   = -4303,  /* Input size was not aligned properly. */
    kCCDecodeError      = -4304,  /* Input data did not decode or decrypt properly. */
    kCCUnimplemented    = -4305,  /* Function not implemented for the current algorithm. */
    kCCOverflow         = -4306,
    kCCRNGFailure       = -4307,
    kCCUnspecifiedError = -4308,
    kCCCallSequenceError = -4309,
    kCCKeySizeError     = -4310,
    kCCInvalidKey       = -4311,  /* Key is not valid. */
};
typedef int32_t CCStatus;
typedef int32_t CCCryptorStatus;

#ifdef __cplusplus
}
#endif
#endif /* _CC_COMMON_CRYPTO_ERROR_H_ */
