#include "CommonCrypto/CommonSymmetricKeywrap.h"

/* RFC 3394 section 2.2.3.1: the default initial value. */
static const uint8_t rfc3394_iv[8] = {0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6, 0xA6};
const uint8_t *const CCrfc3394_iv = rfc3394_iv;
const size_t CCrfc3394_ivLen = sizeof rfc3394_iv;
