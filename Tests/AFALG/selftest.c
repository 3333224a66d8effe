/*
 * AF_ALG VM runner smoke test (not part of the Swift package).
 *
 * Stands in for the Swift test bundle so that Tests/AFALG/run-vm.sh can be
 * checked end to end without a Swift build:
 *
 *   cc -O2 -Wall -Wextra -o selftest Tests/AFALG/selftest.c -lkcapi
 *   Tests/AFALG/run-vm.sh ./selftest          (or: run-vm.sh --selftest)
 *
 * Run without arguments it behaves like the XCTest half of a test bundle
 * (prints "Test Case '...' passed" lines and "Executed N tests, with M
 * failures"). Run with "--xunit-output PATH" (other arguments such as
 * "--testing-library swift-testing" are ignored) it also writes an xUnit XML
 * file shaped like Swift Testing's. Exit status: 0 if every case passed.
 *
 * Cases: SHA-1("abc") and AES-128-CBC (NIST SP 800-38A F.2.1/F.2.2) through
 * reused handles, a few more known-answer tests, and "does this algorithm
 * bind" checks for the algorithms the design's Testing section names.
 */
#include <errno.h>
#include <kcapi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CASES 64

struct result {
	const char *name;
	int ok;
	double seconds;
	char message[256];
};

static struct result results[MAX_CASES];
static int nresults;

static const char *classname = "AFALGSelfTest.KernelSelfTest";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t unhex(const char *hex, uint8_t *out, size_t max)
{
	size_t n = strlen(hex) / 2, i;

	if (n > max) {
		fprintf(stderr, "selftest: hex too long\n");
		exit(2);
	}
	for (i = 0; i < n; i++) {
		unsigned int b;

		sscanf(hex + 2 * i, "%2x", &b);
		out[i] = (uint8_t)b;
	}
	return n;
}

static void tohex(const uint8_t *in, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", in[i]);
	out[2 * n] = '\0';
}

/* Each case returns 0 on success or fills msg and returns -1. */
typedef int (*case_fn)(char *msg, size_t msglen);

static int check(const uint8_t *got, size_t gotlen, const char *want_hex,
		 const char *what, char *msg, size_t msglen)
{
	uint8_t want[256];
	char gothex[513];
	size_t wantlen = unhex(want_hex, want, sizeof(want));

	if (gotlen == wantlen && memcmp(got, want, wantlen) == 0)
		return 0;
	tohex(got, gotlen < 256 ? gotlen : 256, gothex);
	snprintf(msg, msglen, "%s: got %s want %s", what, gothex, want_hex);
	return -1;
}

/* ---- known-answer tests -------------------------------------------------- */

static int sha1_abc_reused_handle(char *msg, size_t msglen)
{
	struct kcapi_handle *h = NULL;
	uint8_t out[20];
	ssize_t r;
	int i, ret;

	ret = kcapi_md_init(&h, "sha1", 0);
	if (ret) {
		snprintf(msg, msglen, "kcapi_md_init(sha1): %d (%s)", ret, strerror(-ret));
		return -1;
	}
	for (i = 0; i < 3; i++) {
		r = kcapi_md_digest(h, (const uint8_t *)"abc", 3, out, sizeof(out));
		if (r != 20) {
			snprintf(msg, msglen, "kcapi_md_digest round %d: %zd", i, r);
			kcapi_md_destroy(h);
			return -1;
		}
		if (check(out, 20, "a9993e364706816aba3e25717850c26c9cd0d89d", "sha1(abc)", msg, msglen)) {
			kcapi_md_destroy(h);
			return -1;
		}
	}
	kcapi_md_destroy(h);
	return 0;
}

static int sha256_abc(char *msg, size_t msglen)
{
	struct kcapi_handle *h = NULL;
	uint8_t out[32];
	ssize_t r;
	int ret;

	ret = kcapi_md_init(&h, "sha256", 0);
	if (ret) {
		snprintf(msg, msglen, "kcapi_md_init(sha256): %d (%s)", ret, strerror(-ret));
		return -1;
	}
	r = kcapi_md_digest(h, (const uint8_t *)"abc", 3, out, sizeof(out));
	kcapi_md_destroy(h);
	if (r != 32) {
		snprintf(msg, msglen, "kcapi_md_digest: %zd", r);
		return -1;
	}
	return check(out, 32, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		     "sha256(abc)", msg, msglen);
}

static int hmac_sha1_rfc2202_case1(char *msg, size_t msglen)
{
	struct kcapi_handle *h = NULL;
	uint8_t key[20], out[20];
	ssize_t r;
	int ret;

	memset(key, 0x0b, sizeof(key));
	ret = kcapi_md_init(&h, "hmac(sha1)", 0);
	if (ret) {
		snprintf(msg, msglen, "kcapi_md_init(hmac(sha1)): %d (%s)", ret, strerror(-ret));
		return -1;
	}
	ret = kcapi_md_setkey(h, key, sizeof(key));
	if (ret) {
		snprintf(msg, msglen, "kcapi_md_setkey: %d", ret);
		kcapi_md_destroy(h);
		return -1;
	}
	r = kcapi_md_digest(h, (const uint8_t *)"Hi There", 8, out, sizeof(out));
	kcapi_md_destroy(h);
	if (r != 20) {
		snprintf(msg, msglen, "kcapi_md_digest: %zd", r);
		return -1;
	}
	return check(out, 20, "b617318655057264e28bc0b6fb378c8ef146be00", "hmac-sha1", msg, msglen);
}

/* NIST SP 800-38A F.2.1 / F.2.2, same handle for two encryptions and a decryption. */
static int aes128_cbc_nist_reused_handle(char *msg, size_t msglen)
{
	static const char *key_hex = "2b7e151628aed2a6abf7158809cf4f3c";
	static const char *iv_hex = "000102030405060708090a0b0c0d0e0f";
	static const char *pt_hex =
		"6bc1bee22e409f96e93d7e117393172a" "ae2d8a571e03ac9c9eb76fac45af8e51"
		"30c81c46a35ce411e5fbc1191a0a52ef" "f69f2445df4f9b17ad2b417be66c3710";
	static const char *ct_hex =
		"7649abac8119b246cee98e9b12e9197d" "5086cb9b507219ee95db113a917678b2"
		"73bed6b8e3c1743b7116e69e22229516" "3ff1caa1681fac09120eca307586e1a7";
	struct kcapi_handle *h = NULL;
	uint8_t key[16], iv[16], pt[64], ct[64], out[64];
	ssize_t r;
	int i, ret;

	unhex(key_hex, key, sizeof(key));
	unhex(pt_hex, pt, sizeof(pt));
	unhex(ct_hex, ct, sizeof(ct));
	ret = kcapi_cipher_init(&h, "cbc(aes)", 0);
	if (ret) {
		snprintf(msg, msglen, "kcapi_cipher_init(cbc(aes)): %d (%s)", ret, strerror(-ret));
		return -1;
	}
	ret = kcapi_cipher_setkey(h, key, sizeof(key));
	if (ret) {
		snprintf(msg, msglen, "kcapi_cipher_setkey: %d", ret);
		goto fail;
	}
	for (i = 0; i < 2; i++) {
		unhex(iv_hex, iv, sizeof(iv));
		memset(out, 0, sizeof(out));
		r = kcapi_cipher_encrypt(h, pt, sizeof(pt), iv, out, sizeof(out),
					 KCAPI_ACCESS_HEURISTIC);
		if (r != 64) {
			snprintf(msg, msglen, "encrypt round %d: %zd", i, r);
			goto fail;
		}
		if (check(out, 64, ct_hex, "cbc(aes) encrypt", msg, msglen))
			goto fail;
	}
	unhex(iv_hex, iv, sizeof(iv));
	r = kcapi_cipher_decrypt(h, ct, sizeof(ct), iv, out, sizeof(out), KCAPI_ACCESS_HEURISTIC);
	if (r != 64) {
		snprintf(msg, msglen, "decrypt: %zd", r);
		goto fail;
	}
	if (check(out, 64, pt_hex, "cbc(aes) decrypt", msg, msglen))
		goto fail;
	kcapi_cipher_destroy(h);
	return 0;
fail:
	kcapi_cipher_destroy(h);
	return -1;
}

static int one_block(const char *alg, const char *key_hex, const char *iv_hex,
		     const char *pt_hex, const char *ct_hex, char *msg, size_t msglen)
{
	struct kcapi_handle *h = NULL;
	uint8_t key[32], iv[16] = { 0 }, pt[16], out[16];
	size_t keylen;
	ssize_t r;
	int ret;

	keylen = unhex(key_hex, key, sizeof(key));
	if (iv_hex)
		unhex(iv_hex, iv, sizeof(iv));
	unhex(pt_hex, pt, sizeof(pt));
	ret = kcapi_cipher_init(&h, alg, 0);
	if (ret) {
		snprintf(msg, msglen, "kcapi_cipher_init(%s): %d (%s)", alg, ret, strerror(-ret));
		return -1;
	}
	ret = kcapi_cipher_setkey(h, key, (uint32_t)keylen);
	if (ret) {
		snprintf(msg, msglen, "kcapi_cipher_setkey(%s): %d", alg, ret);
		kcapi_cipher_destroy(h);
		return -1;
	}
	r = kcapi_cipher_encrypt(h, pt, 16, iv_hex ? iv : NULL, out, 16, KCAPI_ACCESS_HEURISTIC);
	kcapi_cipher_destroy(h);
	if (r != 16) {
		snprintf(msg, msglen, "kcapi_cipher_encrypt(%s): %zd", alg, r);
		return -1;
	}
	return check(out, 16, ct_hex, alg, msg, msglen);
}

/* FIPS-197 C.1 */
static int aes128_ecb_fips197(char *msg, size_t msglen)
{
	return one_block("ecb(aes)", "000102030405060708090a0b0c0d0e0f", NULL,
			 "00112233445566778899aabbccddeeff", "69c4e0d86a7b0430d8cdb78070b4c55a",
			 msg, msglen);
}

/* NIST SP 800-38A F.5.1, first block */
static int aes128_ctr_nist(char *msg, size_t msglen)
{
	return one_block("ctr(aes)", "2b7e151628aed2a6abf7158809cf4f3c",
			 "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", "6bc1bee22e409f96e93d7e117393172a",
			 "874d6191b620e3261bef6864990db6ce", msg, msglen);
}

/* ---- bind checks --------------------------------------------------------- */

enum kind { MD, CIPHER, AEAD, RNG };

static int bind_alg(enum kind kind, const char *alg, char *msg, size_t msglen)
{
	struct kcapi_handle *h = NULL;
	int ret = 0;

	switch (kind) {
	case MD:
		ret = kcapi_md_init(&h, alg, 0);
		if (!ret)
			kcapi_md_destroy(h);
		break;
	case CIPHER:
		ret = kcapi_cipher_init(&h, alg, 0);
		if (!ret)
			kcapi_cipher_destroy(h);
		break;
	case AEAD:
		ret = kcapi_aead_init(&h, alg, 0);
		if (!ret)
			kcapi_aead_destroy(h);
		break;
	case RNG:
		ret = kcapi_rng_init(&h, alg, 0);
		if (!ret) {
			uint8_t seed[48] = { 1 }, buf[16];
			/* stdrng (drbg) must be seeded before use through AF_ALG */
			ret = kcapi_rng_seed(h, seed, sizeof(seed));
			if (!ret && kcapi_rng_generate(h, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				ret = -EIO;
			kcapi_rng_destroy(h);
		}
		break;
	}
	if (ret) {
		snprintf(msg, msglen, "%s does not bind: %d (%s)", alg, ret, strerror(-ret));
		return -1;
	}
	return 0;
}

#define BIND(fn, kind, alg) \
	static int fn(char *msg, size_t msglen) { return bind_alg(kind, alg, msg, msglen); }
BIND(bind_cbc_aes, CIPHER, "cbc(aes)")
BIND(bind_ecb_aes, CIPHER, "ecb(aes)")
BIND(bind_ctr_aes, CIPHER, "ctr(aes)")
BIND(bind_cbc_des3, CIPHER, "cbc(des3_ede)")
BIND(bind_sha1, MD, "sha1")
BIND(bind_sha256, MD, "sha256")
BIND(bind_sha512, MD, "sha512")
BIND(bind_hmac_sha1, MD, "hmac(sha1)")
BIND(bind_gcm_aes, AEAD, "gcm(aes)")
BIND(bind_stdrng, RNG, "stdrng")

static const struct {
	const char *name;
	case_fn fn;
} cases[] = {
	{ "sha1AbcReusedHandle()", sha1_abc_reused_handle },
	{ "aes128CbcNistReusedHandle()", aes128_cbc_nist_reused_handle },
	{ "sha256Abc()", sha256_abc },
	{ "hmacSha1Rfc2202()", hmac_sha1_rfc2202_case1 },
	{ "aes128EcbFips197()", aes128_ecb_fips197 },
	{ "aes128CtrNist()", aes128_ctr_nist },
	{ "binds(cbc(aes))", bind_cbc_aes },
	{ "binds(ecb(aes))", bind_ecb_aes },
	{ "binds(ctr(aes))", bind_ctr_aes },
	{ "binds(cbc(des3_ede))", bind_cbc_des3 },
	{ "binds(sha1)", bind_sha1 },
	{ "binds(sha256)", bind_sha256 },
	{ "binds(sha512)", bind_sha512 },
	{ "binds(hmac(sha1))", bind_hmac_sha1 },
	{ "binds(gcm(aes))", bind_gcm_aes },
	{ "binds(stdrng)", bind_stdrng },
};

static void xml_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

static int write_xunit(const char *path, int failures, double total)
{
	FILE *f = fopen(path, "w");
	int i;

	if (!f) {
		perror(path);
		return -1;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
	fprintf(f, "  <testsuite name=\"TestResults\" errors=\"0\" tests=\"%d\" failures=\"%d\" "
		   "skipped=\"0\" time=\"%.6f\">\n", nresults, failures, total);
	for (i = 0; i < nresults; i++) {
		fprintf(f, "    <testcase classname=\"%s\" name=\"", classname);
		xml_escape(f, results[i].name);
		fprintf(f, "\" time=\"%.6f\"", results[i].seconds);
		if (results[i].ok) {
			fputs(" />\n", f);
		} else {
			fputs(">\n      <failure message=\"", f);
			xml_escape(f, results[i].message);
			fputs("\" />\n    </testcase>\n", f);
		}
	}
	fprintf(f, "  </testsuite>\n</testsuites>\n");
	return fclose(f);
}

int main(int argc, char **argv)
{
	const char *xunit = NULL;
	int i, failures = 0;
	double start = now();

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--xunit-output") == 0 && i + 1 < argc)
			xunit = argv[++i];
	}
	kcapi_set_verbosity(KCAPI_LOG_NONE);

	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		struct result *r = &results[nresults++];
		double t0 = now();

		r->name = cases[i].name;
		r->ok = cases[i].fn(r->message, sizeof(r->message)) == 0;
		r->seconds = now() - t0;
		if (r->ok) {
			printf("Test Case '%s.%s' passed (%.3f seconds)\n", classname, r->name, r->seconds);
		} else {
			failures++;
			printf("selftest: error: %s: %s\n", r->name, r->message);
			printf("Test Case '%s.%s' failed (%.3f seconds)\n", classname, r->name, r->seconds);
		}
	}
	printf("Executed %d tests, with %d failures (0 unexpected) in %.3f seconds\n",
	       nresults, failures, now() - start);
	fflush(stdout);
	if (xunit && write_xunit(xunit, failures, now() - start))
		return 1;
	return failures ? 1 : 0;
}
