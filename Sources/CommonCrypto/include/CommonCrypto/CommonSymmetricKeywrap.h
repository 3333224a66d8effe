/* CommonSymmetricKeywrap.h: AES key wrap (RFC 3394), with Apple's names and values. */
#ifndef _CC_SYMKEYWRAP_H_
#define _CC_SYMKEYWRAP_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    kCCWRAPAES = 1,
};
typedef uint32_t CCWrappingAlgorithm;

/* RFC 3394's default initial value A6A6A6A6A6A6A6A6 and its length. */
extern const uint8_t *const CCrfc3394_iv;
extern const size_t CCrfc3394_ivLen;

int CCSymmetricKeyWrap(CCWrappingAlgorithm algorithm, const uint8_t *iv, const size_t ivLen, const uint8_t *kek,
                       size_t kekLen, const uint8_t *rawKey, size_t rawKeyLen, uint8_t *wrappedKey,
                       size_t *wrappedKeyLen);

int CCSymmetricKeyUnwrap(CCWrappingAlgorithm algorithm, const uint8_t *iv, const size_t ivLen, const uint8_t *kek,
                         size_t kekLen, const uint8_t *wrappedKey, size_t wrappedKeyLen, uint8_t *rawKey,
                         size_t *rawKeyLen);

size_t CCSymmetricWrappedSize(CCWrappingAlgorithm algorithm, size_t rawKeyLen);

size_t CCSymmetricUnwrappedSize(CCWrappingAlgorithm algorithm, size_t wrappedKeyLen);

#ifdef __cplusplus
}
#endif
#endif /* _CC_SYMKEYWRAP_H_ */
