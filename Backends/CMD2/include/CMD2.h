#ifndef SECURITYSERVICES_CMD2_H
#define SECURITYSERVICES_CMD2_H
/* MD2 (RFC 1319). OpenSSL 3 has none; CommonCrypto offers it, so the software backend and CommonCrypto's
 * CC_MD2_CTX functions share this one implementation. Obsolete and broken: for compatibility only. */
#include <stddef.h>

typedef struct {
    unsigned char state[16];    /* X[0..15], the chaining state (section 3.4) */
    unsigned char checksum[16]; /* C (section 3.2) */
    unsigned char buffer[16];   /* input not yet compressed */
    unsigned int count;         /* bytes in buffer */
} cmd2_state;

void cmd2_init(cmd2_state *s);
void cmd2_update(cmd2_state *s, const void *data, size_t length);
/* Pads, appends the checksum, writes 16 bytes to digest, and wipes the state. */
void cmd2_final(cmd2_state *s, unsigned char digest[16]);
#endif
