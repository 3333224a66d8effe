/* CommonDigest's _Init/_Update/_Final: the state lives entirely in the caller's CC_*_CTX (Apple's API has no
 * release call, so nothing may be allocated outside it). OpenSSL's block functions do the work; its SHA-1,
 * MD4 and MD5 state structs have exactly Apple's layout, SHA-2 state is converted to and from Apple's
 * count/hash/wbuf layout around each call, and MD2 keeps its state inside CC_MD2_CTX's memory. The
 * one-shot CC_SHA1() and friends are elsewhere (Swift): they go through the dispatcher. */
#define OPENSSL_SUPPRESS_DEPRECATED /* the low-level digest API is what works on caller memory */
#include <openssl/crypto.h>
#include <openssl/md4.h>
#include <openssl/md5.h>
#include <openssl/sha.h>
#include <string.h>

#include "CMD2.h"
#include "CommonCrypto/CommonDigest.h"

_Static_assert(sizeof(CC_SHA1_CTX) == sizeof(SHA_CTX), "CC_SHA1_CTX has SHA_CTX's layout");
_Static_assert(sizeof(CC_MD5_CTX) == sizeof(MD5_CTX), "CC_MD5_CTX has MD5_CTX's layout");
_Static_assert(sizeof(CC_MD4_CTX) == sizeof(MD4_CTX), "CC_MD4_CTX has MD4_CTX's layout");
_Static_assert(sizeof(cmd2_state) <= sizeof(CC_MD2_CTX), "MD2 state fits in CC_MD2_CTX");

/* A context the caller corrupted must not make OpenSSL index outside its buffer. */
#define CLAMP_NUM(ctx, block) do { if ((unsigned int)(ctx)->num >= (block)) (ctx)->num = 0; } while (0)

/*** MD2 ***/
int CC_MD2_Init(CC_MD2_CTX *c) { cmd2_init((cmd2_state *)c); return 1; }
int CC_MD2_Update(CC_MD2_CTX *c, const void *data, CC_LONG len) { cmd2_update((cmd2_state *)c, data, len); return 1; }
int CC_MD2_Final(unsigned char *md, CC_MD2_CTX *c) { cmd2_final((cmd2_state *)c, md); return 1; }

/*** MD4, MD5, SHA-1: same layout ***/
int CC_MD4_Init(CC_MD4_CTX *c) { MD4_Init((MD4_CTX *)c); return 1; }
int CC_MD4_Update(CC_MD4_CTX *c, const void *data, CC_LONG len) {
    CLAMP_NUM(c, 64);
    MD4_Update((MD4_CTX *)c, data, len);
    return 1;
}
int CC_MD4_Final(unsigned char *md, CC_MD4_CTX *c) {
    CLAMP_NUM(c, 64);
    MD4_Final(md, (MD4_CTX *)c);
    OPENSSL_cleanse(c, sizeof *c);
    return 1;
}

int CC_MD5_Init(CC_MD5_CTX *c) { MD5_Init((MD5_CTX *)c); return 1; }
int CC_MD5_Update(CC_MD5_CTX *c, const void *data, CC_LONG len) {
    CLAMP_NUM(c, 64);
    MD5_Update((MD5_CTX *)c, data, len);
    return 1;
}
int CC_MD5_Final(unsigned char *md, CC_MD5_CTX *c) {
    CLAMP_NUM(c, 64);
    MD5_Final(md, (MD5_CTX *)c);
    OPENSSL_cleanse(c, sizeof *c);
    return 1;
}

int CC_SHA1_Init(CC_SHA1_CTX *c) { SHA1_Init((SHA_CTX *)c); return 1; }
int CC_SHA1_Update(CC_SHA1_CTX *c, const void *data, CC_LONG len) {
    CLAMP_NUM(c, 64);
    SHA1_Update((SHA_CTX *)c, data, len);
    return 1;
}
int CC_SHA1_Final(unsigned char *md, CC_SHA1_CTX *c) {
    CLAMP_NUM(c, 64);
    SHA1_Final(md, (SHA_CTX *)c);
    OPENSSL_cleanse(c, sizeof *c);
    return 1;
}

/*** SHA-224/256: Apple's {count[2], hash[8], wbuf[16]}; count is the bit count, low word first ***/
static void load256(SHA256_CTX *o, const CC_SHA256_CTX *c, unsigned int digest_length) {
    memcpy(o->h, c->hash, sizeof o->h);
    o->Nl = c->count[0];
    o->Nh = c->count[1];
    memcpy(o->data, c->wbuf, sizeof o->data);
    o->num = (o->Nl >> 3) & 63; /* bytes buffered: the byte count modulo the block */
    o->md_len = digest_length;
}

static void store256(CC_SHA256_CTX *c, SHA256_CTX *o) {
    memcpy(c->hash, o->h, sizeof c->hash);
    c->count[0] = o->Nl;
    c->count[1] = o->Nh;
    memcpy(c->wbuf, o->data, sizeof c->wbuf);
    OPENSSL_cleanse(o, sizeof *o);
}

static int update256(CC_SHA256_CTX *c, const void *data, CC_LONG len, unsigned int digest_length) {
    SHA256_CTX o;
    load256(&o, c, digest_length);
    SHA256_Update(&o, data, len);
    store256(c, &o);
    return 1;
}

static int final256(unsigned char *md, CC_SHA256_CTX *c, unsigned int digest_length) {
    SHA256_CTX o;
    load256(&o, c, digest_length);
    SHA256_Final(md, &o); /* md_len decides 28 or 32 bytes */
    OPENSSL_cleanse(&o, sizeof o);
    OPENSSL_cleanse(c, sizeof *c);
    return 1;
}

int CC_SHA224_Init(CC_SHA256_CTX *c) { SHA256_CTX o; SHA224_Init(&o); store256(c, &o); return 1; }
int CC_SHA224_Update(CC_SHA256_CTX *c, const void *data, CC_LONG len) { return update256(c, data, len, 28); }
int CC_SHA224_Final(unsigned char *md, CC_SHA256_CTX *c) { return final256(md, c, 28); }
int CC_SHA256_Init(CC_SHA256_CTX *c) { SHA256_CTX o; SHA256_Init(&o); store256(c, &o); return 1; }
int CC_SHA256_Update(CC_SHA256_CTX *c, const void *data, CC_LONG len) { return update256(c, data, len, 32); }
int CC_SHA256_Final(unsigned char *md, CC_SHA256_CTX *c) { return final256(md, c, 32); }

/*** SHA-384/512: Apple's {count[2], hash[8], wbuf[16]} in 64-bit words ***/
static void load512(SHA512_CTX *o, const CC_SHA512_CTX *c, unsigned int digest_length) {
    memcpy(o->h, c->hash, sizeof o->h);
    o->Nl = c->count[0];
    o->Nh = c->count[1];
    memcpy(o->u.p, c->wbuf, sizeof o->u.p);
    o->num = (unsigned int)((o->Nl >> 3) & 127);
    o->md_len = digest_length;
}

static void store512(CC_SHA512_CTX *c, SHA512_CTX *o) {
    memcpy(c->hash, o->h, sizeof c->hash);
    c->count[0] = o->Nl;
    c->count[1] = o->Nh;
    memcpy(c->wbuf, o->u.p, sizeof c->wbuf);
    OPENSSL_cleanse(o, sizeof *o);
}

static int update512(CC_SHA512_CTX *c, const void *data, CC_LONG len, unsigned int digest_length) {
    SHA512_CTX o;
    load512(&o, c, digest_length);
    SHA512_Update(&o, data, len);
    store512(c, &o);
    return 1;
}

static int final512(unsigned char *md, CC_SHA512_CTX *c, unsigned int digest_length) {
    SHA512_CTX o;
    load512(&o, c, digest_length);
    SHA512_Final(md, &o);
    OPENSSL_cleanse(&o, sizeof o);
    OPENSSL_cleanse(c, sizeof *c);
    return 1;
}

int CC_SHA384_Init(CC_SHA512_CTX *c) { SHA512_CTX o; SHA384_Init(&o); store512(c, &o); return 1; }
int CC_SHA384_Update(CC_SHA512_CTX *c, const void *data, CC_LONG len) { return update512(c, data, len, 48); }
int CC_SHA384_Final(unsigned char *md, CC_SHA512_CTX *c) { return final512(md, c, 48); }
int CC_SHA512_Init(CC_SHA512_CTX *c) { SHA512_CTX o; SHA512_Init(&o); store512(c, &o); return 1; }
int CC_SHA512_Update(CC_SHA512_CTX *c, const void *data, CC_LONG len) { return update512(c, data, len, 64); }
int CC_SHA512_Final(unsigned char *md, CC_SHA512_CTX *c) { return final512(md, c, 64); }
