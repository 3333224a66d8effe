/* A C program using the installed CommonCrypto headers and library, as a C client on Apple platforms does.
 * Known answers from NIST SP 800-38A, FIPS 180-2, RFC 4231, RFC 6070 and RFC 3394.
 * Prints "commoncrypto-c: N passed, M failed" and exits non-zero on any failure. */
#include <CommonCrypto/CommonCrypto.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what) {
    if (ok) passed++;
    else { failed++; fprintf(stderr, "FAIL: %s\n", what); }
}

static void unhex(const char *hex, unsigned char *out) {
    for (size_t i = 0; hex[2 * i] && hex[2 * i + 1]; i++) sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

int main(void) {
    unsigned char key[16], iv[16], pt[16], ct[16], out[64], expected[64];
    size_t moved = 0;

    /* SP 800-38A F.2.1 CBC-AES128.Encrypt, block 1. */
    unhex("2b7e151628aed2a6abf7158809cf4f3c", key);
    unhex("000102030405060708090a0b0c0d0e0f", iv);
    unhex("6bc1bee22e409f96e93d7e117393172a", pt);
    unhex("7649abac8119b246cee98e9b12e9197d", ct);
    CCCryptorStatus status = CCCrypt(kCCEncrypt, kCCAlgorithmAES, 0, key, kCCKeySizeAES128, iv, pt, 16, out,
                                     sizeof out, &moved);
    check(status == kCCSuccess && moved == 16 && memcmp(out, ct, 16) == 0, "CCCrypt AES-128-CBC");

    /* The sizing idiom and kCCBufferTooSmall. */
    status = CCCrypt(kCCEncrypt, kCCAlgorithmAES, kCCOptionPKCS7Padding, key, 16, iv, pt, 16, NULL, 0, &moved);
    check(status == kCCBufferTooSmall && moved == 32, "kCCBufferTooSmall reports 32");

    /* A cryptor in two pieces, and kCCDecodeError on a bad pad. */
    CCCryptorRef cryptor = NULL;
    status = CCCryptorCreate(kCCDecrypt, kCCAlgorithmAES, kCCOptionPKCS7Padding, key, 16, iv, &cryptor);
    check(status == kCCSuccess && cryptor != NULL, "CCCryptorCreate");
    status = CCCryptorUpdate(cryptor, ct, 16, out, sizeof out, &moved);
    check(status == kCCSuccess && moved == 0, "CCCryptorUpdate holds the last block");
    status = CCCryptorFinal(cryptor, out, sizeof out, &moved);
    check(status == kCCDecodeError, "kCCDecodeError on a block that is not PKCS#7 padded");
    CCCryptorRelease(cryptor);

    /* FIPS 180-2 SHA-256("abc"), one-shot and streamed. */
    unhex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", expected);
    check(CC_SHA256("abc", 3, out) == out && memcmp(out, expected, 32) == 0, "CC_SHA256");
    CC_SHA256_CTX sha;
    CC_SHA256_Init(&sha);
    CC_SHA256_Update(&sha, "a", 1);
    CC_SHA256_Update(&sha, "bc", 2);
    CC_SHA256_Final(out, &sha);
    check(memcmp(out, expected, 32) == 0, "CC_SHA256_Init/Update/Final");

    /* RFC 4231 test case 2, HMAC-SHA-256. */
    unhex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", expected);
    CCHmac(kCCHmacAlgSHA256, "Jefe", 4, "what do ya want for nothing?", 28, out);
    check(memcmp(out, expected, 32) == 0, "CCHmac SHA-256");
    CCHmacContext hmac;
    CCHmacInit(&hmac, kCCHmacAlgSHA256, "Jefe", 4);
    CCHmacUpdate(&hmac, "what do ya want ", 16);
    CCHmacUpdate(&hmac, "for nothing?", 12);
    CCHmacFinal(&hmac, out);
    check(memcmp(out, expected, 32) == 0, "CCHmacInit/Update/Final");

    /* RFC 6070 test 2: PBKDF2-HMAC-SHA1, 2 iterations. */
    unhex("ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957", expected);
    int rc = CCKeyDerivationPBKDF(kCCPBKDF2, "password", 8, (const uint8_t *)"salt", 4, kCCPRFHmacAlgSHA1, 2, out, 20);
    check(rc == kCCSuccess && memcmp(out, expected, 20) == 0, "CCKeyDerivationPBKDF");

    /* RFC 3394 4.1: wrap 128 bits with a 128-bit KEK. */
    unsigned char kek[16], data[16];
    unhex("000102030405060708090A0B0C0D0E0F", kek);
    unhex("00112233445566778899AABBCCDDEEFF", data);
    unhex("1FA68B0A8112B447AEF34BD8FB5A7B829D3E862371D2CFE5", expected);
    size_t wrappedLength = CCSymmetricWrappedSize(kCCWRAPAES, 16);
    rc = CCSymmetricKeyWrap(kCCWRAPAES, CCrfc3394_iv, CCrfc3394_ivLen, kek, 16, data, 16, out, &wrappedLength);
    check(rc == kCCSuccess && wrappedLength == 24 && memcmp(out, expected, 24) == 0, "CCSymmetricKeyWrap");

    unsigned char random[32] = {0};
    check(CCRandomGenerateBytes(random, sizeof random) == kCCSuccess, "CCRandomGenerateBytes");

    printf("commoncrypto-c: %d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
