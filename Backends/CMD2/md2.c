#include "CMD2.h"

#include <string.h>

/* RFC 1319 section 3.2: "a random permutation of 0..255 constructed from the digits of pi". */
static const unsigned char PI_SUBST[256] = {
    41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19, 98, 167, 5, 243, 192, 199, 115, 140,
    152, 147, 43, 217, 188, 76, 130, 202, 30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229, 18,
    190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245, 142, 187, 47, 238, 122, 169, 104, 121, 145, 21, 178, 7,
    63, 148, 194, 16, 137, 11, 34, 95, 33, 128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3,
    255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198, 79, 184, 56, 210, 150, 164, 125,
    182, 118, 252, 107, 226, 156, 116, 4, 241, 69, 157, 112, 89, 100, 113, 135, 32, 134, 91, 207, 101, 230, 45,
    168, 2, 27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15, 85, 71, 163, 35, 221, 81, 175,
    58, 195, 92, 249, 206, 186, 197, 234, 38, 44, 83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77,
    82, 106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74, 120, 136, 149, 139, 227, 99,
    232, 109, 233, 203, 213, 254, 59, 0, 29, 57, 242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114, 248, 235,
    117, 75, 10, 49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131, 20,
};

/* Section 3.2 (checksum) and 3.4 (compression) for one 16-byte block. */
static void compress(cmd2_state *s, const unsigned char block[16]) {
    unsigned char x[48];
    unsigned char last = s->checksum[15];
    for (int i = 0; i < 16; i++) {
        s->checksum[i] ^= PI_SUBST[block[i] ^ last];
        last = s->checksum[i];
    }
    for (int i = 0; i < 16; i++) {
        x[i] = s->state[i];
        x[16 + i] = block[i];
        x[32 + i] = block[i] ^ s->state[i];
    }
    unsigned char t = 0;
    for (int round = 0; round < 18; round++) {
        for (int k = 0; k < 48; k++) t = x[k] ^= PI_SUBST[t];
        t = (unsigned char)(t + round);
    }
    memcpy(s->state, x, 16);
    memset(x, 0, sizeof x);
}

void cmd2_init(cmd2_state *s) { memset(s, 0, sizeof *s); }

void cmd2_update(cmd2_state *s, const void *data, size_t length) {
    const unsigned char *in = data;
    if (s->count > 15) s->count = 0; /* a corrupt context never indexes out of bounds */
    while (length > 0) {
        size_t take = 16 - s->count < length ? 16 - s->count : length;
        memcpy(s->buffer + s->count, in, take);
        s->count += (unsigned int)take;
        in += take;
        length -= take;
        if (s->count == 16) {
            compress(s, s->buffer);
            s->count = 0;
        }
    }
}

void cmd2_final(cmd2_state *s, unsigned char digest[16]) {
    if (s->count > 15) s->count = 0;
    /* Section 3.1: pad with i bytes of value i, 1 <= i <= 16. */
    unsigned char pad = (unsigned char)(16 - s->count);
    memset(s->buffer + s->count, pad, pad);
    compress(s, s->buffer);
    /* Section 3.3: the checksum is the last block. */
    unsigned char checksum[16];
    memcpy(checksum, s->checksum, 16);
    compress(s, checksum);
    memcpy(digest, s->state, 16);
    memset(checksum, 0, sizeof checksum);
    volatile unsigned char *wipe = (volatile unsigned char *)s;
    for (size_t i = 0; i < sizeof *s; i++) wipe[i] = 0;
}
