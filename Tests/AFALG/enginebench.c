/*
 * Engine lane measurement with libkcapi directly (not part of the Swift package).
 *
 * Answers, without Swift, what the kernel backend should do on an off-CPU engine:
 * cbc(aes) (AES-128) encryption MB/s (10^6 bytes/s) at 16 B, 1 KiB, 4 KiB, 64 KiB and 1 MiB
 *   a. one handle: KCAPI_ACCESS_SENDMSG vs KCAPI_ACCESS_VMSPLICE (plus the process CPU time per MB);
 *   b. 1, 2, 4, 8 threads, each with its own handle (kcapi_handle_reinit): aggregate MB/s, both accesses;
 *   c. only with --aio: libkcapi's AIO interface (KCAPI_INIT_AIO handle, kcapi_cipher_encrypt_aio with
 *      1, 4 and 16 iovecs, each iovec one request). Off by default: on virtio_crypto (6.1, qemu 7.2) the
 *      first AIO call made qemu report "virtio: zero sized buffers are not allowed", which marks the
 *      device broken: that request and every later one on the engine never complete (the task hangs);
 *      run it last, alone, under a short AFALG_VM_TIMEOUT;
 *   d. OpenSSL EVP aes-128-cbc in this process (same timing loop) and `openssl speed -evp aes-128-cbc
 *      -bytes N -seconds 1 -mr` (the comparison the issue quotes).
 * Messages above 64 KiB are sent in 64 KiB calls carrying the IV forward, as the Swift backend does
 * (libkcapi's one-shot CBC reuses the IV per 64 KiB chunk). Each point is the median of --reps runs of
 * --seconds each. Before measuring, every access path is checked against OpenSSL's output.
 *
 *   cc -O2 -Wall -Wextra -o enginebench Tests/AFALG/enginebench.c -lkcapi -lcrypto -lpthread
 *   AFALG_VM_LANE=engine-noaes Tests/AFALG/run-vm.sh --enginebench
 *
 * Options: --alg NAME (default: the driver serving cbc(aes) in /proc/crypto, else "cbc(aes)"),
 * --seconds S (0.3), --reps R (3), --json PATH, --quick (fewer points). Exit status 0 if every
 * correctness check passed and the engine could be opened.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <kcapi.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
#define MAX_SIZE (1 << 20)
#define MAX_THREADS 8
#define MAX_IOV 16

static const size_t sizes[] = { 16, 1024, 4096, 65536, 1 << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
static const int thread_counts[] = { 1, 2, 4, 8 };
#define NTHREADS (sizeof(thread_counts) / sizeof(thread_counts[0]))
static const int iov_counts[] = { 1, 4, 16 };
#define NIOVS (sizeof(iov_counts) / sizeof(iov_counts[0]))

static const uint8_t key[16] = { 0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6,
				 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c };
static const uint8_t iv0[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

static double seconds_per_point = 0.3;
static int reps = 3;
static char alg[128];
static int failures;
static int with_aio;

static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *xalloc(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, n) != 0) {
		fprintf(stderr, "enginebench: out of memory\n");
		exit(2);
	}
	memset(p, 0x5a, n);
	return p;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* CBC through one handle, 64 KiB per call, IV carried forward. 0 or a negative errno. */
static int kcapi_cbc(struct kcapi_handle *h, const uint8_t *in, uint8_t *out, size_t len, int access)
{
	uint8_t iv[16];
	size_t off = 0;

	memcpy(iv, iv0, 16);
	while (off < len) {
		size_t n = len - off > CHUNK ? CHUNK : len - off;
		ssize_t r = kcapi_cipher_encrypt(h, in + off, n, iv, out + off, n, access);

		if (r != (ssize_t)n)
			return r < 0 ? (int)r : -EIO;
		memcpy(iv, out + off + n - 16, 16);
		off += n;
	}
	return 0;
}

static EVP_CIPHER *evp_cbc;

static int evp_cbc_encrypt(EVP_CIPHER_CTX *ctx, const uint8_t *in, uint8_t *out, size_t len)
{
	int n = 0;

	if (!EVP_EncryptInit_ex2(ctx, evp_cbc, key, iv0, NULL) || !EVP_CIPHER_CTX_set_padding(ctx, 0) ||
	    !EVP_EncryptUpdate(ctx, out, &n, in, (int)len) || (size_t)n != len)
		return -EIO;
	return 0;
}

static struct kcapi_handle *open_handle(const char *name, uint32_t flags)
{
	struct kcapi_handle *h = NULL;
	int r = kcapi_cipher_init(&h, name, flags);

	if (r) {
		fprintf(stderr, "enginebench: kcapi_cipher_init(%s) = %d (%s)\n", name, r, strerror(-r));
		return NULL;
	}
	r = kcapi_cipher_setkey(h, key, sizeof(key));
	if (r) {
		fprintf(stderr, "enginebench: setkey(%s) = %d\n", name, r);
		kcapi_cipher_destroy(h);
		return NULL;
	}
	return h;
}

/* ---- correctness ----------------------------------------------------------------------------- */

static void check(const char *what, int rc, const uint8_t *got, const uint8_t *want, size_t len)
{
	int ok = rc == 0 && memcmp(got, want, len) == 0;

	printf("enginebench: check %-40s %s", what, ok ? "ok" : "MISMATCH");
	if (rc)
		printf(" (error %d: %s)", rc, strerror(-rc));
	printf("\n");
	if (!ok)
		failures++;
}

static void correctness(struct kcapi_handle *h, struct kcapi_handle *aio)
{
	size_t len = CHUNK + 16 + 4096, i;
	uint8_t *in = xalloc(len), *want = xalloc(len), *got = xalloc(len);
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	struct iovec iin[4], iout[4];
	ssize_t r;

	for (i = 0; i < len; i++)
		in[i] = (uint8_t)(i * 7 + 3);
	evp_cbc_encrypt(ctx, in, want, len);
	memset(got, 0, len);
	check("sendmsg 64 KiB + 4 KiB + 16 B vs OpenSSL", kcapi_cbc(h, in, got, len, KCAPI_ACCESS_SENDMSG), got, want,
	      len);
	memset(got, 0, len);
	check("vmsplice 64 KiB + 4 KiB + 16 B vs OpenSSL", kcapi_cbc(h, in, got, len, KCAPI_ACCESS_VMSPLICE), got,
	      want, len);
	for (int k = 0; aio && k < 2; k++) {
		int n = k ? 4 : 1;

		/* Each iovec is its own request with the same IV: all four equal OpenSSL's first 4 KiB. */
		for (i = 0; i < (size_t)n; i++) {
			iin[i].iov_base = in;
			iin[i].iov_len = 4096;
			iout[i].iov_base = got + i * 4096;
			iout[i].iov_len = 4096;
		}
		memset(got, 0, len);
		for (int a = 0; a < 2; a++) {
			int access = a ? KCAPI_ACCESS_VMSPLICE : KCAPI_ACCESS_SENDMSG;

			char what[64];

			snprintf(what, sizeof(what), "aio %s %d x 4 KiB vs OpenSSL", a ? "vmsplice" : "sendmsg", n);
			printf("enginebench: %s: submitting\n", what);
			r = kcapi_cipher_encrypt_aio(aio, iin, iout, (size_t)n, iv0, access);
			for (i = 1; i < (size_t)n && r == n * 4096; i++)
				if (memcmp(got + i * 4096, want, 4096))
					r = -EBADMSG;
			check(what, r == n * 4096 ? 0 : (r < 0 ? (int)r : -EIO), got, want, 4096);
		}
	}
	EVP_CIPHER_CTX_free(ctx);
	free(in);
	free(want);
	free(got);
}

/* ---- a. one handle ----------------------------------------------------------------------------- */

struct point {
	double mbps, cpu_per_mb; /* medians; cpu_per_mb in ms of process CPU time per MB */
	int error;
};

static struct point single(struct kcapi_handle *h, EVP_CIPHER_CTX *ctx, size_t size, int access, uint8_t *in,
			   uint8_t *out)
{
	double mb[16], cpu[16];
	struct point p = { 0, 0, 0 };

	for (int r = 0; r < reps; r++) {
		double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID), t;
		size_t ops = 0;

		do {
			int e = h ? kcapi_cbc(h, in, out, size, access) : evp_cbc_encrypt(ctx, in, out, size);

			if (e) {
				p.error = e;
				return p;
			}
			ops++;
			t = now(CLOCK_MONOTONIC) - t0;
		} while (t < seconds_per_point || ops < 3);
		mb[r] = (double)ops * (double)size / t / 1e6;
		cpu[r] = (now(CLOCK_PROCESS_CPUTIME_ID) - c0) * 1e3 / ((double)ops * (double)size / 1e6);
	}
	p.mbps = median(mb, reps);
	p.cpu_per_mb = median(cpu, reps);
	return p;
}

/* ---- b. threads, one handle each ---------------------------------------------------------------- */

struct worker {
	pthread_t thread;
	struct kcapi_handle *h;
	uint8_t *in, *out;
	size_t size;
	int access, error;
	size_t ops;
};

static atomic_int stop;
static pthread_barrier_t barrier;

static void *work(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(&barrier);
	while (!atomic_load(&stop)) {
		int e = kcapi_cbc(w->h, w->in, w->out, w->size, w->access);

		if (e) {
			w->error = e;
			break;
		}
		w->ops++;
	}
	return NULL;
}

static double threaded(struct worker *ws, int n, size_t size, int access, int *error)
{
	double mb[16];

	for (int r = 0; r < reps; r++) {
		double t0, t;
		size_t ops = 0;

		atomic_store(&stop, 0);
		pthread_barrier_init(&barrier, NULL, (unsigned)n + 1);
		for (int i = 0; i < n; i++) {
			ws[i].size = size;
			ws[i].access = access;
			ws[i].ops = 0;
			ws[i].error = 0;
			pthread_create(&ws[i].thread, NULL, work, &ws[i]);
		}
		pthread_barrier_wait(&barrier);
		t0 = now(CLOCK_MONOTONIC);
		do {
			usleep(10000);
			t = now(CLOCK_MONOTONIC) - t0;
		} while (t < seconds_per_point);
		atomic_store(&stop, 1);
		for (int i = 0; i < n; i++) {
			pthread_join(ws[i].thread, NULL);
			ops += ws[i].ops;
			if (ws[i].error)
				*error = ws[i].error;
		}
		t = now(CLOCK_MONOTONIC) - t0; /* requests in flight at the stop finish and count */
		pthread_barrier_destroy(&barrier);
		mb[r] = (double)ops * (double)size / t / 1e6;
	}
	return median(mb, reps);
}

/* ---- c. AIO ------------------------------------------------------------------------------------ */

static double aio_point(struct kcapi_handle *h, int niov, size_t size, int access, uint8_t *in, uint8_t *out,
			int *error)
{
	struct iovec iin[MAX_IOV], iout[MAX_IOV];
	double mb[16];
	size_t per = size > CHUNK ? CHUNK : size; /* one request per iovec: at most 64 KiB (CBC) */
	size_t calls = size / per;

	for (int i = 0; i < niov; i++) {
		iin[i].iov_base = in + (size_t)i * per;
		iin[i].iov_len = per;
		iout[i].iov_base = out + (size_t)i * per;
		iout[i].iov_len = per;
	}
	for (int r = 0; r < reps; r++) {
		double t0 = now(CLOCK_MONOTONIC), t;
		size_t bytes = 0;

		do {
			/* size bytes as `calls` AIO submissions of niov requests of `per` bytes (niov x the data) */
			for (size_t c = 0; c < calls; c++) {
				ssize_t got = kcapi_cipher_encrypt_aio(h, iin, iout, (size_t)niov, iv0, access);

				if (got != (ssize_t)(per * (size_t)niov)) {
					*error = got < 0 ? (int)got : -EIO;
					return 0;
				}
				bytes += (size_t)got;
			}
			t = now(CLOCK_MONOTONIC) - t0;
		} while (t < seconds_per_point || bytes < 3 * size);
		mb[r] = (double)bytes / t / 1e6;
	}
	return median(mb, reps);
}

/* ---- d. openssl speed ------------------------------------------------------------------------- */

static double openssl_speed(size_t size)
{
	char cmd[160], line[512];
	double bps = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "openssl speed -evp aes-128-cbc -bytes %zu -seconds 1 -mr 2>/dev/null", size);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	/* "+F:<n>:AES-128-CBC:<bytes per second>" */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "+F:", 3)) {
			char *last = strrchr(line, ':');

			if (last)
				bps = strtod(last + 1, NULL);
		}
	pclose(f);
	return bps / 1e6;
}

/* ---- main ------------------------------------------------------------------------------------- */

static void find_driver(void)
{
	char line[256], name[128] = "", driver[128] = "", best[128] = "";
	int prio, best_prio = -1;
	FILE *f = fopen("/proc/crypto", "r");

	strcpy(alg, "cbc(aes)");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "name : %127s", name) == 1)
			continue;
		if (sscanf(line, "driver : %127s", driver) == 1)
			continue;
		if (sscanf(line, "priority : %d", &prio) == 1 && !strcmp(name, "cbc(aes)") && prio > best_prio) {
			best_prio = prio;
			strcpy(best, driver);
		}
	}
	fclose(f);
	if (best[0])
		snprintf(alg, sizeof(alg), "%s", best);
}

static void json_sizes(FILE *j, const char *key_name, const double *v)
{
	fprintf(j, "\"%s\": [", key_name);
	for (size_t i = 0; i < NSIZES; i++)
		fprintf(j, "%s%.4g", i ? ", " : "", v[i]);
	fprintf(j, "]");
}

int main(int argc, char **argv)
{
	const char *json = NULL;
	const char *lane = getenv("SECURITYSERVICES_ENGINE_LANE");
	struct kcapi_handle *h, *aio;
	struct worker ws[MAX_THREADS];
	EVP_CIPHER_CTX *ctx;
	uint8_t *in, *out;
	double single_mb[2][NSIZES], single_cpu[2][NSIZES], evp_mb[NSIZES], evp_cpu[NSIZES], speed_mb[NSIZES], reinit_mb[NSIZES];
	double thr_mb[2][NTHREADS][NSIZES], aio_mb[2][NIOVS][NSIZES];
	int aio_err[2][NIOVS] = { { 0 } };
	static const char *access_name[2] = { "sendmsg", "vmsplice" };
	static const int access_flag[2] = { KCAPI_ACCESS_SENDMSG, KCAPI_ACCESS_VMSPLICE };

	find_driver();
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--alg") && i + 1 < argc)
			snprintf(alg, sizeof(alg), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds_per_point = atof(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json") && i + 1 < argc)
			json = argv[++i];
		else if (!strcmp(argv[i], "--svg") && i + 1 < argc)
			i++; /* the VM runner's bench mode passes it: no drawing here */
		else if (!strcmp(argv[i], "--aio"))
			with_aio = 1;
		else if (!strcmp(argv[i], "--quick")) {
			seconds_per_point = 0.15;
			reps = 3;
		} else {
			fprintf(stderr, "usage: enginebench [--alg NAME] [--seconds S] [--reps R] [--json PATH] [--quick] [--aio]\n");
			return 2;
		}
	}
	if (reps < 1 || reps > 15)
		reps = 3;
	kcapi_set_verbosity(KCAPI_LOG_NONE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	evp_cbc = EVP_CIPHER_fetch(NULL, "AES-128-CBC", NULL);
	ctx = EVP_CIPHER_CTX_new();
	printf("enginebench: lane %s, algorithm %s, %.2f s x %d runs per point (median), %ld cpu(s)\n",
	       lane ? lane : "-", alg, seconds_per_point, reps, sysconf(_SC_NPROCESSORS_ONLN));

	h = open_handle(alg, 0);
	if (!h || !evp_cbc) {
		printf("enginebench: FAIL: cannot open %s\n", alg);
		return 1;
	}
	aio = with_aio ? open_handle(alg, KCAPI_INIT_AIO) : NULL;
	correctness(h, aio);
	in = xalloc(MAX_SIZE * 2);
	out = xalloc(MAX_SIZE * 2);

	/* handles for the threads (b), made before (a) so that (a) can also time one of them */
	for (int i = 0; i < MAX_THREADS; i++) {
		int r = kcapi_handle_reinit(&ws[i].h, h, 0);

		if (r) {
			printf("enginebench: FAIL: kcapi_handle_reinit = %d\n", r);
			return 1;
		}
		ws[i].in = xalloc(MAX_SIZE);
		ws[i].out = xalloc(MAX_SIZE);
	}

	/* a. one handle, sendmsg vs vmsplice; EVP in the same loop; openssl speed; the last column is the
	 * first thread's kcapi_handle_reinit handle, sendmsg, from the main thread: against the first column,
	 * it tells a slow reinit handle from a slow thread */
	printf("enginebench: a. one handle, MB/s (process CPU ms per MB)\n");
	printf("%-10s %22s %22s %22s %12s %12s\n", "size", "kcapi sendmsg", "kcapi vmsplice", "EVP in-process",
	       "openssl spd", "reinit hdl");
	for (size_t s = 0; s < NSIZES; s++) {
		struct point p[2], e;

		for (int a = 0; a < 2; a++) {
			p[a] = single(h, NULL, sizes[s], access_flag[a], in, out);
			if (p[a].error) {
				printf("enginebench: %s at %zu: error %d (%s)\n", access_name[a], sizes[s], p[a].error,
				       strerror(-p[a].error));
				failures++;
			}
			single_mb[a][s] = p[a].mbps;
			single_cpu[a][s] = p[a].cpu_per_mb;
		}
		e = single(NULL, ctx, sizes[s], 0, in, out);
		evp_mb[s] = e.mbps;
		evp_cpu[s] = e.cpu_per_mb;
		speed_mb[s] = openssl_speed(sizes[s]);
		reinit_mb[s] = single(ws[0].h, NULL, sizes[s], KCAPI_ACCESS_SENDMSG, in, out).mbps;
		printf("%-10zu %10.3f (%8.1f) %10.3f (%8.1f) %10.2f (%8.1f) %12.2f %12.3f\n", sizes[s], p[0].mbps,
		       p[0].cpu_per_mb, p[1].mbps, p[1].cpu_per_mb, e.mbps, e.cpu_per_mb, speed_mb[s], reinit_mb[s]);
	}

	/* b. threads, one handle each */
	for (int a = 0; a < 2; a++) {
		printf("enginebench: b. %s, one handle per thread, aggregate MB/s\n", access_name[a]);
		printf("%-10s", "size");
		for (size_t t = 0; t < NTHREADS; t++)
			printf(" %9d thr", thread_counts[t]);
		printf("\n");
		for (size_t s = 0; s < NSIZES; s++) {
			printf("%-10zu", sizes[s]);
			for (size_t t = 0; t < NTHREADS; t++) {
				int err = 0;

				thr_mb[a][t][s] = threaded(ws, thread_counts[t], sizes[s], access_flag[a], &err);
				if (err) {
					printf(" error %d", err);
					failures++;
				}
				printf(" %13.3f", thr_mb[a][t][s]);
			}
			printf("\n");
		}
	}

	/* c. AIO */
	for (int a = 0; aio && a < 2; a++) {
		printf("enginebench: c. AIO (%s), kcapi_cipher_encrypt_aio, MB/s\n", access_name[a]);
		printf("%-10s", "size");
		for (size_t k = 0; k < NIOVS; k++)
			printf(" %10d iov", iov_counts[k]);
		printf("\n");
		for (size_t s = 0; s < NSIZES; s++) {
			printf("%-10zu", sizes[s]);
			for (size_t k = 0; k < NIOVS; k++) {
				int err = 0;

				aio_mb[a][k][s] = aio ? aio_point(aio, iov_counts[k], sizes[s], access_flag[a], in, out,
								  &err)
						      : 0;
				if (err)
					aio_err[a][k] = err;
				if (err)
					printf(" %8s %4d", "error", err);
				else
					printf(" %14.3f", aio_mb[a][k][s]);
			}
			printf("\n");
		}
	}

	if (json) {
		FILE *j = fopen(json, "w");

		if (!j) {
			perror(json);
			return 1;
		}
		fprintf(j, "{\n\"lane\": \"%s\", \"algorithm\": \"%s\", \"seconds_per_point\": %g, \"reps\": %d,\n",
			lane ? lane : "", alg, seconds_per_point, reps);
		fprintf(j, "\"unit\": \"MB/s (10^6 bytes per second), medians; cpu in ms of process CPU time per MB\",\n");
		fprintf(j, "\"sizes\": [16, 1024, 4096, 65536, 1048576],\n\"checks_failed\": %d, \"aio_measured\": %d,\n",
			failures, aio != NULL);
		for (int a = 0; a < 2; a++) {
			char k[64];

			snprintf(k, sizeof(k), "kcapi_%s", access_name[a]);
			json_sizes(j, k, single_mb[a]);
			fprintf(j, ",\n");
			snprintf(k, sizeof(k), "kcapi_%s_cpu_ms_per_mb", access_name[a]);
			json_sizes(j, k, single_cpu[a]);
			fprintf(j, ",\n");
			for (size_t t = 0; t < NTHREADS; t++) {
				snprintf(k, sizeof(k), "threads_%d_%s", thread_counts[t], access_name[a]);
				json_sizes(j, k, thr_mb[a][t]);
				fprintf(j, ",\n");
			}
			for (size_t i = 0; aio && i < NIOVS; i++) {
				snprintf(k, sizeof(k), "aio_%d_iov_%s", iov_counts[i], access_name[a]);
				json_sizes(j, k, aio_mb[a][i]);
				fprintf(j, ",\n\"aio_%d_iov_%s_error\": %d,\n", iov_counts[i], access_name[a],
					aio_err[a][i]);
			}
		}
		json_sizes(j, "evp_in_process", evp_mb);
		fprintf(j, ",\n");
		json_sizes(j, "evp_in_process_cpu_ms_per_mb", evp_cpu);
		fprintf(j, ",\n");
		json_sizes(j, "kcapi_sendmsg_reinit_handle", reinit_mb);
		fprintf(j, ",\n");
		json_sizes(j, "openssl_speed", speed_mb);
		fprintf(j, "\n}\n");
		fclose(j);
	}
	printf("enginebench: %s (%d check(s) failed)\n", failures ? "FAIL" : "done", failures);
	return failures ? 1 : 0;
}
