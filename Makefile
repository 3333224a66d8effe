# SecurityServices: the two commands a fresh Debian 12 machine needs.
#
#   make test    install what is needed, build, then run the host suite, the keychain-service rerun, the C client and
#                the short fuzz runs, and beside them the routing suites in the AF_ALG VM and in the two engine lanes
#                (a VM with qemu's virtio-crypto AES engine) (Tests/run-stages.sh)
#   make bench   install what is needed, build release, run the backend comparison
#
# Everything installed comes from Debian's archive and PyPI (the pinned test-vector package, into a
# virtual environment under .build so the system Python is left alone).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

# Debian packages: build (C libraries), test (VM and libkcapi's tools, scepserver for enrollment, a software TPM and
# its tools, a software PKCS#11 token and OpenSC's pkcs11-tool, a session bus and the Secret Service's clients:
# secret-tool, Python's secretstorage and keyring, git's libsecret helper built from its contrib sources; the
# benchmark's gnome-keyring-daemon), vectors (Python venv).
APT_PACKAGES := pkg-config libssl-dev libkcapi-dev libsqlite3-dev libpsl-dev libtss2-dev libsystemd-dev \
	kcapi-tools openssl ca-certificates qemu-system-x86 busybox-static cpio kmod python3 python3-venv python3-pip \
	scep swtpm swtpm-tools tpm2-tools softhsm2 opensc p11-kit libp11-kit-dev \
	dbus-daemon dbus-bin libsecret-tools python3-secretstorage python3-keyring git libsecret-1-dev libglib2.0-dev gcc \
	gnome-keyring
# NIST CAVP and RFC vectors, pinned.
VECTORS_PACKAGE := cryptography-vectors==46.0.3
VENV := .build/vectors-venv
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SWIFT_BUILD_FLAGS := -Xswiftc -warnings-as-errors
# Exports the pinned vectors' folder (SECURITYSERVICES_VECTORS) to a recipe's shell, for the suites that read it.
EXPORT_VECTORS = export SECURITYSERVICES_VECTORS=$$($(VENV)/bin/python -c 'import cryptography_vectors, os; print(os.path.dirname(cryptography_vectors.__file__))');

.PHONY: test bench bench-afalg bench-engine enginebench deps vectors build test-host test-timing test-service test-c test-afalg test-engine test-engine-aesni test-engine-noaes test-fuzz fuzz fuzz-build test-sanitize calibrate install clean

# The stages, two at a time (Tests/run-stages.sh): the build beside the VM kernels' download; the host suite, the
# service rerun and the C client beside the AF_ALG lane, the engine-aesni lane, the fuzz build and the fuzz runs (two
# targets at a time); then the engine-noaes lane alone (its calibration must find the engine ahead, and the engine's
# latency is the host's scheduling). Each stage's output in .build/test-logs/<stage>.log, printed whole when it ends;
# fails when any stage fails.
test: deps
	Tests/run-stages.sh

# Fuzzing: every target for FUZZ_SECONDS (default 60), FUZZ_JOBS at a time (default 1), with libFuzzer and
# AddressSanitizer; `make test` runs each for a short budget on the seed corpus, two at a time (test-fuzz).
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 1
fuzz: build
	$(EXPORT_VECTORS) \
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) Tests/Fuzz/run-fuzz.sh

test-fuzz:
	$(MAKE) fuzz FUZZ_SECONDS=10 FUZZ_JOBS=2

# The sanitized fuzz driver alone (its own scratch path, .build/fuzz): make test builds it beside the AF_ALG lane.
fuzz-build: vectors
	$(EXPORT_VECTORS) \
	FUZZ_BUILD_ONLY=1 Tests/Fuzz/run-fuzz.sh

# The host suite under AddressSanitizer (Swift and C; the C code under UBSan too: Swift on Linux has no UBSan), then
# the concurrency suites under ThreadSanitizer; any report fails it. Not part of `make test` (about 15 minutes).
# lld links the sanitized objects (Debian's gold crashes on them). Leaks are the fuzz runs' to find (LeakSanitizer):
# at exit the runtime's and Foundation's process-lifetime caches would be reported too.
SANITIZE_LINK := -Xswiftc -use-ld=lld -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld
TSAN_TEST_FILTER := StoreTests|DatabaseTests|ServiceTests|WireTests|SocketFetcherTests|SecTrustTests|CommonCryptoStatusTests|TrustSettingsTests|CryptoDispatcherTests|SoftwareAEADTests|EntropyTests|ChainJudgement|PasswordLockTests|SecKeychainCallback
test-sanitize: vectors
	swift build --build-tests --scratch-path .build/asan -Xswiftc -sanitize=address -Xcc -fsanitize=address,undefined $(SANITIZE_LINK)
	$(EXPORT_VECTORS) \
	SECURITYSERVICES_SANITIZER=address ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		SWIFT_BACKTRACE=enable=no swift test --skip-build --scratch-path .build/asan 2>&1 | tee .build/test-asan.log; \
	! grep -q 'ERROR: AddressSanitizer\|runtime error:' .build/test-asan.log
	swift build --build-tests --scratch-path .build/tsan -Xswiftc -sanitize=thread $(SANITIZE_LINK)
	$(EXPORT_VECTORS) \
	SECURITYSERVICES_SANITIZER=thread TSAN_OPTIONS=halt_on_error=1 SWIFT_BACKTRACE=enable=no \
		swift test --skip-build --scratch-path .build/tsan --filter '$(TSAN_TEST_FILTER)' 2>&1 | tee .build/test-tsan.log; \
	! grep -q 'WARNING: ThreadSanitizer' .build/test-tsan.log

# The suites that drive the Security API over their own keychain (the isolatedKeychain trait), run again against
# a keychain service (securityd's KeychainService, one per test, this binary granted the suite's groups).
SERVICE_TEST_FILTER := SecItemTests|KeychainWrapperTests|SecItemDefaultsTests|GuideListingTests|CertificateSecurityTests|KeyKeychainTests|PKCS12Tests|SecTrustTests|SecTrustSettingsTests|SecTrustRevocationTests

# The suites about routing, run in the AF_ALG VM and the engine lanes: the kernel backend, the dispatcher (with the
# engine-lane suite), CommonCrypto's offload and status codes. Every other suite reaches the kernel only through the
# shared dispatcher in auto mode, which in these VMs sends nothing they do to the kernel (CPU drivers; the engine only
# for cbc(aes) from 1 KiB, above every published vector), so they run on the host only. The VMs get only the vector
# folders these suites read.
VM_TEST_FILTER := KernelBackendTests|CryptoDispatcherTests|CommonCryptoOffloadTests|CommonCryptoStatusTests
VM_VECTORS := ciphers/AES ciphers/Blowfish hashes HMAC

# Where `make install` puts <CommonCrypto/*.h> and libCommonCrypto.so.
PREFIX ?= /usr/local
SWIFT_RUNTIME := $(shell dirname "$$(readlink -f "$$(command -v swift)")")/../lib/swift/linux

# The C API for C programs: headers under $(PREFIX)/include, the library under $(PREFIX)/lib (it needs the
# Swift runtime at $(SWIFT_RUNTIME), recorded as its rpath).
install:
	swift build -c release --product CommonCrypto $(SWIFT_BUILD_FLAGS) -Xlinker -rpath -Xlinker $(SWIFT_RUNTIME)
	install -d $(PREFIX)/include/CommonCrypto $(PREFIX)/lib
	install -m 644 Sources/CommonCrypto/include/CommonCrypto/*.h $(PREFIX)/include/CommonCrypto/
	install -m 755 .build/release/libCommonCrypto.so $(PREFIX)/lib/

# A C client compiled with cc against the installed headers and library.
test-c: deps
	$(MAKE) install PREFIX=$(CURDIR)/.build/c-client
	cc -Wall -Wextra -Werror -o .build/c-client/cc_client Tests/CommonCryptoC/cc_client.c \
		-I.build/c-client/include -L.build/c-client/lib -lCommonCrypto -Wl,-rpath,$(CURDIR)/.build/c-client/lib
	.build/c-client/cc_client

bench: deps
	swift build -c release --product secbench $(SWIFT_BUILD_FLAGS)
	.build/release/secbench --json bench.json --svg bench.svg $(BENCH_ARGS)
	.build/release/secbench --keychain --json bench-keychain.json
	.build/release/secbench --keys --json bench-keys.json
	.build/release/secbench --trust --json bench-trust.json
	.build/release/secbench --tls --json bench-tls.json
	.build/release/secbench --results-page Benchmarks/results/host.md \
		--from bench.json bench-keychain.json bench-keys.json bench-trust.json bench-tls.json

# The same benchmark in the AF_ALG VM: kernel rows and kcapi-c baselines (writes bench-afalg.json/.svg).
bench-afalg: deps
	swift build -c release --product secbench $(SWIFT_BUILD_FLAGS)
	Tests/AFALG/run-vm.sh --bench .build/release/secbench --quick $(BENCH_ARGS)

# The comparison in both engine lanes: calibrate there, measure the sizes, then the adaptive scenario (writes
# bench-engine-<lane>.json/.svg and bench-engine-<lane>-adaptive.json/.svg for engine-aesni and engine-noaes).
bench-engine: deps
	swift build -c release --product secbench $(SWIFT_BUILD_FLAGS)
	AFALG_VM_LANE=engine-aesni Tests/AFALG/run-vm.sh --bench .build/release/secbench --quick --with-calibration --scenario $(BENCH_ARGS)
	AFALG_VM_LANE=engine-noaes Tests/AFALG/run-vm.sh --bench .build/release/secbench --quick --with-calibration --scenario $(BENCH_ARGS)
	.build/release/secbench --results-page Benchmarks/results/engine.md --from bench-engine-aesni.json \
		bench-engine-aesni-adaptive.json bench-engine-noaes.json bench-engine-noaes-adaptive.json

# Without Swift: cbc(aes) through the engine with libkcapi directly (Tests/AFALG/enginebench.c: sendmsg vs vmsplice,
# 1-8 threads with a handle each) beside OpenSSL, in both engine lanes (writes enginebench-<lane>.json/.txt).
enginebench: deps
	AFALG_VM_LANE=engine-aesni Tests/AFALG/run-vm.sh --enginebench $(ENGINEBENCH_ARGS)
	AFALG_VM_LANE=engine-noaes Tests/AFALG/run-vm.sh --enginebench $(ENGINEBENCH_ARGS)

calibrate: deps
	swift build -c release --product secbench $(SWIFT_BUILD_FLAGS)
	.build/release/secbench --calibrate

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		$(SUDO) apt-get update -qq; \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
	@# The VM steps resolve the cloud and generic kernels through apt-cache: make sure the package lists exist.
	@apt-cache show linux-image-cloud-amd64 linux-image-amd64 >/dev/null 2>&1 || $(SUDO) apt-get update -qq

vectors: deps
	@if ! $(VENV)/bin/python -c 'import cryptography_vectors' 2>/dev/null || \
		[ "$$($(VENV)/bin/python -c 'import cryptography_vectors; print(cryptography_vectors.__version__)')" != "$(word 2,$(subst ==, ,$(VECTORS_PACKAGE)))" ]; then \
		python3 -m venv $(VENV); \
		$(VENV)/bin/pip install -q --disable-pip-version-check $(VECTORS_PACKAGE); \
	fi

build: vectors
	swift build --build-tests $(SWIFT_BUILD_FLAGS)

# The adaptive dispatcher's tests time real calls: they run alone (test-timing), not beside the host suite's
# hundreds of tests and the VM lanes, whose load on the cores would be what they measure.
TIMING_TEST_FILTER := AdaptiveDispatchTests

test-host: build
	$(EXPORT_VECTORS) \
	swift test --skip-build --skip '$(TIMING_TEST_FILTER)'

test-timing: build
	swift test --skip-build --filter '$(TIMING_TEST_FILTER)'

test-service: build
	$(EXPORT_VECTORS) \
	SECURITYSERVICES_TEST_KEYCHAIN_MODE=service swift test --skip-build --filter '$(SERVICE_TEST_FILTER)'

test-afalg: build
	$(EXPORT_VECTORS) \
	AFALG_TEST_FILTER='$(VM_TEST_FILTER)' AFALG_VM_VECTORS='$(VM_VECTORS)' \
		Tests/AFALG/run-vm.sh .build/debug/SecurityServicesPackageTests.xctest

test-engine: test-engine-aesni test-engine-noaes

# One engine lane: test-engine-aesni, test-engine-noaes.
test-engine-aesni test-engine-noaes: build
	$(EXPORT_VECTORS) \
	AFALG_VM_LANE=$(@:test-%=%) AFALG_TEST_FILTER='$(VM_TEST_FILTER)' AFALG_VM_VECTORS='$(VM_VECTORS)' \
		Tests/AFALG/run-vm.sh .build/debug/SecurityServicesPackageTests.xctest

clean:
	rm -rf .build
