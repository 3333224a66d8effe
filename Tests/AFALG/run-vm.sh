#!/usr/bin/env bash
# Run a test executable inside a small VM whose kernel has AF_ALG.
#
# Usage:  Tests/AFALG/run-vm.sh BUNDLE
#         Tests/AFALG/run-vm.sh --selftest     (builds and runs Tests/AFALG/selftest.c)
#         Tests/AFALG/run-vm.sh --bench BINARY [ARGS...]
#         Tests/AFALG/run-vm.sh --enginebench [ARGS...]   (builds and runs Tests/AFALG/enginebench.c)
#         Tests/AFALG/run-vm.sh --fetch-kernel   (step 1 only: the lane's kernel into the cache; `make test`
#                                                 runs it for every lane while the build compiles)
#
# BUNDLE is a dynamically linked test executable, normally the Swift debug test
# bundle .build/debug/SecurityServicesPackageTests.xctest. The host kernel has
# no AF_ALG, so this script:
#   1. downloads Debian's cloud kernel (the package linux-image-cloud-amd64
#      depends on, via `apt-get download`; unpacked with `dpkg -x`) into the
#      cache, once per kernel package, keeping only vmlinuz and the
#      kernel/{crypto,lib,arch} modules with a host-run `depmod -b`;
#   2. builds an initramfs (gzip -1 cpio): busybox-static with its applets
#      (/sbin/modprobe included), the modules, BUNDLE and every library `ldd`
#      lists (at the same paths), OpenSSL's ossl-modules next to libcrypto,
#      kcapi-dgst/kcapi-enc, sibling *.resources folders of BUNDLE, and the
#      ciphers/hashes/HMAC/keywrap/KDF/x509/pkcs12/asymmetric (RSA, ECDSA, EC)
#      folders of $SECURITYSERVICES_VECTORS,
#      and openssl (the PBKDF2 cross-check);
#   3. boots it with qemu-system-x86_64 -accel tcg (no KVM here). The guest's
#      /init mounts proc/sysfs/devtmpfs (/tmp stays on the initramfs), modprobes af_alg algif_hash
#      algif_skcipher algif_aead algif_rng crypto_user, smoke-tests kcapi-dgst
#      and kcapi-enc, then runs `BUNDLE` (XCTest) and
#      `BUNDLE --testing-library swift-testing --xunit-output /tmp/st.xml`
#      with HOME=/tmp and SECURITYSERVICES_REQUIRE_AFALG=1, prints both exit
#      codes and the XML (base64) between marker lines, and powers off;
#   4. streams the console to stdout and to $CACHE/console.log, writes the
#      decoded XML to $CACHE/st.xml and lets summarize.py print the result.
#
# The last line printed is `afalg: N passed, M failed[, K skipped]` (Swift
# Testing cases). Exit status is non-zero if the VM did not boot or finish,
# a test failed, either run exited non-zero, or no kernel test ran (a case
# named *Kernel* or *AFALG*, any case, not skipped); the reason is printed
# on the line(s) before.
#
# Lanes (AFALG_VM_LANE):
#   afalg         (default) Debian's cloud kernel, `-cpu max`, the AF_ALG modules: kernel drivers are CPU code.
#   engine-aesni  Debian's generic kernel (linux-image-<ver>-amd64-unsigned: the cloud kernel lacks the
#                 driver) with qemu's virtio-crypto device (`-object cryptodev-backend-builtin -device
#                 virtio-crypto-pci`) and `modprobe virtio virtio_ring virtio_pci crypto_engine virtio_crypto`:
#                 `cbc(aes)` is served by `virtio_crypto_aes_cbc`, an engine outside the guest's CPUs.
#                 `-cpu max`: OpenSSL has AES-NI, the engine must be declined.
#   engine-noaes  the same with `-cpu max,-aes`: a CPU without AES instructions, as the phone's was; the
#                 engine must win above a crossover.
#   The engine lanes export SECURITYSERVICES_ENGINE_LANE=<lane> and SECURITYSERVICES_REQUIRE_ENGINE=1 to the
#   tests, never load aesni_intel (it would outrank the engine), fail when cbc(aes) is not served by a
#   virtio_crypto driver, and print `<lane>: N passed, M failed` as their last line.
#
# Environment:
#   AFALG_VM_LANE             afalg (default), engine-aesni or engine-noaes (see Lanes)
#   SECURITYSERVICES_VECTORS  folder of the installed PyPI cryptography_vectors
#                             package (copied to the same path in the guest and
#                             exported there); guessed via python3 if unset
#   AFALG_VM_CACHE            cache/work folder (default: <repo>/.build/afalg-vm)
#   AFALG_VM_TIMEOUT          seconds before the VM is killed (default: 2700)
#   AFALG_VM_MEMORY           guest memory (default: 2G)
#   AFALG_VM_SMP              guest CPUs (default: 2)
#   AFALG_VM_VECTORS          the folders of SECURITYSERVICES_VECTORS copied into the
#                             guest, space-separated (default: every folder a suite
#                             reads; `make test`'s lanes take the cipher, digest,
#                             HMAC, key-wrap and KDF ones their suites read)
#   AFALG_VM_EXTRA            extra files/folders, colon-separated, copied to the
#                             same path (executables get their ldd libraries)
#   AFALG_VM_MODULES          extra modules to modprobe, space-separated (e.g.
#                             "aesni_intel sha1_ssse3 sha256_ssse3": without udev
#                             the guest otherwise uses aes-generic/sha1-generic)
#   AFALG_VM_APPEND           extra kernel command line arguments
#   AFALG_TEST_FILTER         run only the Swift Testing cases this --filter
#                             pattern selects (a regular expression over test
#                             IDs such as KernelBackendTests.KernelAFALGTests/...);
#                             the XCTest half is then skipped (the bundle has no
#                             XCTest cases, and XCTest's own filter takes names,
#                             not patterns); the summary still wants kernel tests
#                             to have run
#   AFALG_BENCH_OUT           folder for bench-<lane>.json/.svg and
#                             enginebench-<lane>.json/.txt (default: the repo root)
#
# Bench modes: `--bench BINARY ARGS` runs `BINARY ARGS --json F --svg F` in the
# guest and writes bench-<lane>.json/.svg; `--enginebench ARGS` builds
# enginebench.c (libkcapi + libcrypto) and runs it in the guest: cbc(aes) MB/s
# through the lane's driver by access mode, thread count and AIO, beside OpenSSL
# (in-process EVP and `openssl speed`), written to enginebench-<lane>.json and
# its table to enginebench-<lane>.txt. Both fail (exit 1, reason on the last
# line) when the VM does not boot, a module does not load, or, in an engine
# lane, cbc(aes) is not served by virtio_crypto.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${AFALG_VM_CACHE:-$repo/.build/afalg-vm}
vm_timeout=${AFALG_VM_TIMEOUT:-2700}
vm_memory=${AFALG_VM_MEMORY:-2G}
vm_smp=${AFALG_VM_SMP:-2}

lane=${AFALG_VM_LANE:-afalg}
case $lane in
afalg) kernel_meta=linux-image-cloud-amd64 kernel_suffix="" cpu_model=max engine=no ;;
engine-aesni) kernel_meta=linux-image-amd64 kernel_suffix=-unsigned cpu_model=max engine=yes ;;
engine-noaes) kernel_meta=linux-image-amd64 kernel_suffix=-unsigned cpu_model=max,-aes engine=yes ;;
*)
	printf 'afalg-vm: error: AFALG_VM_LANE=%s is not afalg, engine-aesni or engine-noaes\n' "$lane" >&2
	exit 2
	;;
esac

log() { printf 'afalg-vm: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	printf '%s: FAIL: %s\n%s: 0 passed, 0 failed\n' "$lane" "$*" "$lane"
	exit 1
}

# Benchmark mode: `run-vm.sh --bench BINARY [ARGS...]` runs BINARY ARGS --json F --svg F in the guest
# instead of the test bundle, and writes bench-afalg.json/.svg to $AFALG_BENCH_OUT (default: the repo root).
mode="test"
bench_args=""
bench_name=bench
if [[ ${1:-} == --bench && $# -ge 2 ]]; then
	mode=bench
	shift
	bench_binary=$1
	shift
	bench_args="$*"
	set -- "$bench_binary"
elif [[ ${1:-} == --fetch-kernel ]]; then
	mode=fetch
elif [[ ${1:-} == --enginebench ]]; then
	mode=bench
	bench_name=enginebench
	shift
	bench_args="$*"
	set -- --enginebench
fi

if [[ $# -ne 1 || $1 == -h || $1 == --help ]]; then
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
exec 9>"$cache/.lock"
if ! flock -n 9; then
	log "waiting for another run using $cache"
	flock 9
fi

if [[ $mode == fetch ]]; then
	bundle=""
elif [[ $1 == --selftest ]]; then
	log "building selftest from $here/selftest.c"
	cc -O2 -Wall -Wextra -o "$cache/selftest" "$here/selftest.c" -lkcapi ||
		die "cannot build selftest.c (needs libkcapi-dev)"
	bundle=$cache/selftest
elif [[ $1 == --enginebench ]]; then
	log "building enginebench from $here/enginebench.c"
	cc -O2 -Wall -Wextra -o "$cache/enginebench" "$here/enginebench.c" -lkcapi -lcrypto -lpthread ||
		die "cannot build enginebench.c (needs libkcapi-dev and libssl-dev)"
	bundle=$cache/enginebench
else
	[[ -f $1 && -x $1 ]] || die "not an executable file: $1"
	bundle=$(realpath "$1")
fi

vectors=${SECURITYSERVICES_VECTORS:-}
if [[ -z $vectors && $mode != fetch ]]; then
	vectors=$(python3 -c 'import cryptography_vectors, os; print(os.path.dirname(cryptography_vectors.__file__))' 2>/dev/null || true)
	if [[ -n $vectors ]]; then
		log "SECURITYSERVICES_VECTORS unset; using $vectors"
	else
		log "warning: SECURITYSERVICES_VECTORS unset and cryptography_vectors not importable; no vectors in the guest"
	fi
fi

# ---- 1. kernel -------------------------------------------------------------

# The cloud kernel for the afalg lane; the generic one (its -unsigned package: the same kernel without the
# signature wrapper) for the engine lanes, with the virtio and virtio-crypto driver folders besides crypto/lib/arch.
if [[ $engine == yes ]]; then kdir=$cache/kernel-generic; else kdir=$cache/kernel; fi
fetch_kernel() {
	local pkg cached="" tmp version mods src
	pkg=$(apt-cache depends "$kernel_meta" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }') || true
	[[ -n $pkg ]] && pkg=$pkg$kernel_suffix
	[[ -f $kdir/PACKAGE ]] && cached=$(<"$kdir/PACKAGE")
	if [[ -z $pkg ]]; then
		[[ -n $cached ]] || die "apt-cache knows no $kernel_meta (run apt-get update)"
		log "warning: apt-cache cannot resolve $kernel_meta; using cached $cached"
		return
	fi
	if [[ $pkg == "$cached" && -f $kdir/vmlinuz ]]; then
		return
	fi
	log "fetching kernel package $pkg"
	tmp=$(mktemp -d "$cache/fetch.XXXXXX")
	# shellcheck disable=SC2064 # expand $tmp now
	trap "rm -rf '$tmp'" EXIT
	if ! (cd "$tmp" && apt-get download -q "$pkg" >"$tmp/apt.log" 2>&1); then
		cat "$tmp/apt.log" >&2
		die "apt-get download $pkg failed (try apt-get update)"
	fi
	dpkg -x "$tmp"/*.deb "$tmp/x"
	version=$(basename "$(find "$tmp/x/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n1)")
	[[ -n $version && -f $tmp/x/boot/vmlinuz-$version ]] || die "unexpected layout in $pkg"
	mkdir -p "$tmp/k/modroot/lib/modules/$version/kernel"
	src=$tmp/x/lib/modules/$version
	mods=$tmp/k/modroot/lib/modules/$version
	cp -a "$src/kernel/crypto" "$src/kernel/lib" "$src/kernel/arch" "$mods/kernel/"
	if [[ $engine == yes ]]; then
		[[ -d $src/kernel/drivers/crypto/virtio && -d $src/kernel/drivers/virtio ]] ||
			die "$pkg has no drivers/crypto/virtio or drivers/virtio"
		mkdir -p "$mods/kernel/drivers/crypto"
		cp -a "$src/kernel/drivers/virtio" "$mods/kernel/drivers/"
		cp -a "$src/kernel/drivers/crypto/virtio" "$mods/kernel/drivers/crypto/"
	fi
	cp -a "$src"/modules.builtin* "$src/modules.order" "$mods/"
	depmod -b "$tmp/k/modroot" "$version"
	if [[ $engine == yes ]]; then
		# Every module the engine's modules depend on (`modinfo -F depends`, transitively: virtio, virtio_ring,
		# crypto_engine, virtio_pci_modern_dev, virtio_pci_legacy_dev) must be in the folders kept or built in.
		local -a todo=(virtio virtio_ring virtio_pci crypto_engine virtio_crypto)
		local -A seen=()
		local m path d
		while ((${#todo[@]})); do
			m=${todo[0]}
			todo=("${todo[@]:1}")
			[[ -z ${seen[$m]:-} ]] || continue
			seen[$m]=1
			path=$(modinfo -b "$tmp/k/modroot" -k "$version" -n "$m" 2>/dev/null) ||
				die "$pkg: module $m (needed by the engine) is not in the folders kept"
			[[ $path == "(builtin)" ]] && continue
			for d in $(modinfo -F depends "$path" | tr ',' ' '); do todo+=("$d"); done
		done
	fi
	cp "$tmp/x/boot/vmlinuz-$version" "$tmp/k/vmlinuz"
	printf '%s\n' "$version" >"$tmp/k/VERSION"
	printf '%s\n' "$pkg" >"$tmp/k/PACKAGE"
	rm -rf "$kdir"
	mv "$tmp/k" "$kdir"
	rm -rf "$tmp"
	trap - EXIT
	log "kernel $version cached in $kdir"
}
fetch_kernel
kversion=$(<"$kdir/VERSION")
if [[ $mode == fetch ]]; then
	log "lane $lane: kernel $kversion in $kdir"
	exit 0
fi

# ---- 2. initramfs ----------------------------------------------------------

root=$cache/initramfs
rm -rf "$root"
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,proc,sys,dev,tmp,etc,run}
# Same merged-/usr layout as the host, so ldd's /lib/... paths land in usr/lib.
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done

copy_path() { # copy one file or folder to the same absolute path
	local src=$1
	mkdir -p "$root$(dirname "$src")"
	cp -RL --preserve=mode,timestamps "$src" "$root$(dirname "$src")/"
}

declare -A copied=()
copy_with_libs() { # an executable plus everything ldd lists
	local exe=$1 lib out
	copy_path "$exe"
	out=$(ldd "$exe" 2>&1) || die "ldd $exe failed: $out"
	if grep -q 'not found' <<<"$out"; then
		die "ldd $exe: missing libraries: $(grep 'not found' <<<"$out" | tr -s ' \t\n' ' ')"
	fi
	while read -r lib; do
		[[ -n $lib && -z ${copied[$lib]:-} ]] || continue
		copied[$lib]=1
		copy_path "$lib"
		# OpenSSL dlopen()s its providers (legacy.so) from here.
		if [[ $(basename "$lib") == libcrypto.so.* && -d $(dirname "$lib")/ossl-modules ]]; then
			copy_path "$(dirname "$lib")/ossl-modules"
		fi
	done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out")
}

busybox=$(command -v busybox) || die "busybox not found (apt-get install busybox-static)"
ldd "$busybox" >/dev/null 2>&1 && die "$busybox is dynamically linked; install busybox-static"
cp "$busybox" "$root/usr/bin/busybox"
while read -r applet; do
	[[ $applet == */* ]] || continue # skip top-level linuxrc
	[[ -e $root/$applet || -L $root/$applet ]] || ln -s /usr/bin/busybox "$root/$applet"
done < <("$busybox" --list-full)
ln -sf /usr/bin/busybox "$root/usr/sbin/modprobe"

mkdir -p "$root/usr/lib/modules"
cp -a "$kdir/modroot/lib/modules/$kversion" "$root/usr/lib/modules/"

copy_with_libs "$bundle"
for d in "$(dirname "$bundle")"/*.resources; do
	if [[ -d $d ]]; then copy_path "$d"; fi
done
# libkcapi's tools for the cross-check; openssl for the PBKDF2 cross-check.
for tool in kcapi-dgst kcapi-enc openssl; do
	t=$(command -v "$tool") || die "$tool not found (apt-get install kcapi-tools openssl)"
	copy_with_libs "$t"
done
# `openssl req`/`ca` read their configuration from OPENSSLDIR (Debian: /usr/lib/ssl, whose openssl.cnf is a link
# to /etc/ssl/openssl.cnf): without it they exit 1 in the guest.
if [[ -f /etc/ssl/openssl.cnf ]]; then copy_path /etc/ssl/openssl.cnf; fi
# The distribution's CA bundle: the system anchors of SecTrust and the trust tests.
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then copy_path /etc/ssl/certs/ca-certificates.crt; fi
openssldir=$(openssl version -d | sed -n 's/^OPENSSLDIR: "\(.*\)"$/\1/p')
if [[ -n $openssldir && -e $openssldir/openssl.cnf ]]; then copy_path "$openssldir/openssl.cnf"; fi

if [[ -n $vectors ]]; then
	for d in ${AFALG_VM_VECTORS:-ciphers hashes HMAC keywrap KDF x509 pkcs12 asymmetric/RSA asymmetric/ECDSA asymmetric/EC}; do
		if [[ -d $vectors/$d ]]; then
			mkdir -p "$root$vectors/$(dirname "$d")"
			cp -a "$vectors/$d" "$root$vectors/$(dirname "$d")/"
		else
			log "warning: $vectors/$d does not exist"
		fi
	done
fi

if [[ -n ${AFALG_VM_EXTRA:-} ]]; then
	IFS=: read -r -a extra <<<"$AFALG_VM_EXTRA"
	for e in "${extra[@]}"; do
		[[ -n $e ]] || continue
		e=$(realpath "$e")
		if [[ -f $e && -x $e ]] && ldd "$e" >/dev/null 2>&1; then
			copy_with_libs "$e"
		else
			copy_path "$e"
		fi
	done
fi

printf 'root:x:0:0:root:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true

# Known-answer inputs for the kcapi-enc smoke check (NIST SP 800-38A F.2.1, block 1).
mkdir -p "$root/afalg"
printf '\053\176\025\026\050\256\322\246\253\367\025\210\011\317\117\074' >"$root/afalg/key.bin"
printf '\153\301\276\342\056\100\237\226\351\075\176\021\163\223\027\052' >"$root/afalg/pt.bin"

nonce=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
squote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
{
	printf 'AFALG_NONCE=%s\n' "$nonce"
	printf 'AFALG_BUNDLE=%s\n' "$(squote "$bundle")"
	printf 'SECURITYSERVICES_VECTORS=%s\n' "$(squote "$vectors")"
	printf 'AFALG_VM_MODULES=%s\n' "$(squote "${AFALG_VM_MODULES:-}")"
	printf 'AFALG_MODE=%s\n' "$mode"
	printf 'AFALG_BENCH_ARGS=%s\n' "$(squote "$bench_args")"
	printf 'AFALG_TEST_FILTER=%s\n' "$(squote "${AFALG_TEST_FILTER:-}")"
	printf 'AFALG_LANE=%s\n' "$lane"
	printf 'AFALG_ENGINE=%s\n' "$engine"
} >"$root/afalg/env"

cat >"$root/init" <<'INIT'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin
mount -t devtmpfs devtmpfs /dev
exec 0</dev/console 1>/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
# /tmp stays on the (writable) initramfs root: a tmpfs there would hide a repository cloned under /tmp.
mkdir -p /tmp && chmod 1777 /tmp
. /afalg/env
export HOME=/tmp TMPDIR=/tmp TERM=dumb NO_COLOR=1 SECURITYSERVICES_REQUIRE_AFALG=1
# Every lane boots under TCG: secbench reports its host-only targets as not judged here.
export SECURITYSERVICES_EMULATION=tcg
[ -n "$SECURITYSERVICES_VECTORS" ] && export SECURITYSERVICES_VECTORS
ip link set lo up 2>/dev/null
m="AFALG-$AFALG_NONCE"
echo "$m-BOOTED kernel $(uname -r), $(nproc) cpu(s), uptime $(cut -d' ' -f1 /proc/uptime)s"

loaded=""
engine_modules=""
[ "$AFALG_ENGINE" = yes ] && engine_modules="virtio virtio_ring virtio_pci crypto_engine virtio_crypto"
for mod in af_alg algif_hash algif_skcipher algif_aead algif_rng crypto_user $engine_modules $AFALG_VM_MODULES; do
	if modprobe "$mod"; then loaded="$loaded $mod"; else echo "$m-MODPROBE-FAILED $mod"; fi
done
echo "afalg-vm: modprobe ok:$loaded"
if [ "$AFALG_ENGINE" = yes ]; then
	export SECURITYSERVICES_ENGINE_LANE="$AFALG_LANE" SECURITYSERVICES_REQUIRE_ENGINE=1
	# The engine registers once the device is probed (its self-test runs asynchronously): wait up to 20 s.
	i=0
	while [ $i -lt 40 ]; do
		driver=$(awk -F': ' '/^name/ { n = $2 } /^driver/ && n == "cbc(aes)" { d = $2 } /^priority/ && n == "cbc(aes)" { if ($2 + 0 > best) { best = $2 + 0; top = d } } END { print top }' /proc/crypto)
		case "$driver" in virtio_crypto*) break ;; esac
		i=$((i + 1))
		sleep 0.5
	done
	echo "afalg-vm: engine lane $AFALG_LANE: cbc(aes) -> ${driver:-none}; $(grep -c . /proc/interrupts) interrupt lines, $(grep -c dataq /proc/interrupts) dataq"
	echo "afalg-vm: /proc/crypto cbc(aes) (name -> driver, priority, module):"
	awk -F': ' '/^name/ { n = $2 } /^driver/ { d = $2 } /^module/ { mo = $2 } /^priority/ && n == "cbc(aes)" { print "  cbc(aes) -> " d ", priority " $2 ", " mo }' /proc/crypto
	case "$driver" in
	virtio_crypto*) ;;
	*) echo "$m-ENGINE-MISSING cbc(aes) is served by ${driver:-nothing}, not virtio_crypto" ;;
	esac
	if grep -q '^aesni_intel ' /proc/modules; then echo "$m-ENGINE-MISSING aesni_intel is loaded and outranks the engine"; fi
fi
echo "afalg-vm: loopback: $(ip -o -4 addr show lo 2>&1 | tr -s ' ' | cut -d' ' -f2-4)"
echo "afalg-vm: /proc/modules: $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"

# kcapi-tools smoke check (their output is printed; the test cases decide pass/fail).
out=$(printf abc | kcapi-dgst -c sha1 --hex 2>&1)
if [ "$out" = a9993e364706816aba3e25717850c26c9cd0d89d ]; then r=ok; else r=MISMATCH; fi
echo "afalg-vm: smoke kcapi-dgst sha1(abc) = $out [$r]"
out=$(kcapi-enc -e -c 'cbc(aes)' --iv 000102030405060708090a0b0c0d0e0f --keyfd 3 \
	-i /afalg/pt.bin -o /tmp/ct.bin 3</afalg/key.bin 2>&1; xxd -p /tmp/ct.bin 2>&1 | tr -d '\n')
case "$out" in 7649abac8119b246cee98e9b12e9197d*) r=ok ;; *) r=MISMATCH ;; esac
echo "afalg-vm: smoke kcapi-enc cbc(aes) NIST F.2.1 block 1 = $out [$r]"

# Still the engine after the run? (A module autoloaded during the run, such as aesni_intel, would outrank it.)
engine_recheck() {
	[ "$AFALG_ENGINE" = yes ] || return 0
	if grep -q '^aesni_intel ' /proc/modules; then echo "$m-ENGINE-MISSING aesni_intel is loaded after the run"; fi
	after=$(awk -F': ' '/^name/ { n = $2 } /^driver/ { d = $2 } /^priority/ && n == "cbc(aes)" { if ($2 + 0 > best) { best = $2 + 0; top = d } } END { print top }' /proc/crypto)
	echo "afalg-vm: after the run: cbc(aes) -> ${after:-none}"
	case "$after" in
	virtio_crypto*) ;;
	*) echo "$m-ENGINE-MISSING after the run cbc(aes) is served by ${after:-nothing}, not virtio_crypto" ;;
	esac
}

cd /tmp
if [ "$AFALG_MODE" = bench ]; then
	echo "$m-BENCH-BEGIN"
	# shellcheck disable=SC2086 # the arguments are split on purpose
	"$AFALG_BUNDLE" $AFALG_BENCH_ARGS --json /tmp/bench.json --svg /tmp/bench.svg
	echo "$m-BENCH-RC=$?"
	engine_recheck
	echo 1 >/proc/sys/kernel/printk
	# bench-adaptive.*: the adaptive scenario's, when secbench ran it (--scenario).
	for f in json svg adaptive.json adaptive.svg; do
		echo "$m-FILE-$f-BEGIN"
		[ -f /tmp/bench.$f ] && base64 /tmp/bench.$f
		[ -f /tmp/bench-$f ] && base64 /tmp/bench-$f
		echo "$m-FILE-$f-END"
	done
	echo "$m-DONE uptime $(cut -d' ' -f1 /proc/uptime)s"
	sync
	poweroff -f
fi
if [ -n "$AFALG_TEST_FILTER" ]; then
	echo "$m-XCTEST-SKIPPED AFALG_TEST_FILTER is set (it selects Swift Testing cases)"
else
	echo "$m-XCTEST-BEGIN"
	"$AFALG_BUNDLE"
	rc=$?
	echo "$m-XCTEST-RC=$rc"
fi
echo "$m-ST-BEGIN"
if [ -n "$AFALG_TEST_FILTER" ]; then
	"$AFALG_BUNDLE" --testing-library swift-testing --xunit-output /tmp/st.xml --filter "$AFALG_TEST_FILTER"
else
	"$AFALG_BUNDLE" --testing-library swift-testing --xunit-output /tmp/st.xml
fi
rc=$?
echo "$m-ST-RC=$rc"

engine_recheck
echo "afalg-vm: /proc/crypto (name -> driver):"
awk -F': ' '/^name/ { n = $2 } /^driver/ { print "  " n " -> " $2 }' /proc/crypto |
	grep -E 'aes|sha|des|gcm|drbg|stdrng' | sort -u
echo 1 >/proc/sys/kernel/printk
if [ -f /tmp/st.xml ]; then
	echo "$m-XUNIT-BEGIN"
	base64 /tmp/st.xml
	echo "$m-XUNIT-END"
else
	echo "$m-XUNIT-MISSING"
fi
echo "$m-DONE uptime $(cut -d' ' -f1 /proc/uptime)s"
sync
poweroff -f
INIT
chmod 755 "$root/init"

initrd=$cache/initramfs.cpio.gz
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet) |
	gzip -1 >"$initrd.tmp"
mv "$initrd.tmp" "$initrd"
log "initramfs: $(du -sh "$root" | cut -f1) tree, $(du -h "$initrd" | cut -f1) compressed; kernel $kversion"

# ---- 3. boot ---------------------------------------------------------------

# One console log per lane (the afalg lane keeps its old name).
if [[ $lane == afalg ]]; then console=$cache/console.log; else console=$cache/console-$lane.log; fi
# The TSC as the clock, as on a real machine: under TCG the kernel leaves it out and reads the emulated HPET, a
# device access through qemu (where the virtio-crypto engine is emulated too) of 2.4-4.6 us against 0.2-0.4 us, and
# the dispatcher reads the clock twice on each call it times.
append="console=ttyS0 quiet panic=1 mitigations=off random.trust_cpu=on tsc=reliable clocksource=tsc ${AFALG_VM_APPEND:-}"
log "booting lane $lane (tcg -cpu $cpu_model, $vm_smp cpu, $vm_memory, timeout ${vm_timeout}s); console -> $console"
start=$SECONDS
set +e
engine_device=()
if [[ $engine == yes ]]; then
	engine_device=(-object cryptodev-backend-builtin,id=cd0 -device virtio-crypto-pci,id=crypto0,cryptodev=cd0)
fi
timeout "$vm_timeout" qemu-system-x86_64 -accel tcg -cpu "$cpu_model" -smp "$vm_smp" -m "$vm_memory" \
	-nographic -nic none -no-reboot -kernel "$kdir/vmlinuz" -initrd "$initrd" -append "$append" \
	"${engine_device[@]}" </dev/null 2>&1 | tee "$console"
qemu_rc=${PIPESTATUS[0]}
set -e
vm_seconds=$((SECONDS - start))
log "VM finished in ${vm_seconds}s (qemu exit status $qemu_rc)"

# ---- 4. result -------------------------------------------------------------

if [[ $mode == bench ]]; then
	out_dir=${AFALG_BENCH_OUT:-$repo}
	clean=$cache/console-clean-$lane.log
	tr -d '\r' <"$console" >"$clean"
	grep -q "AFALG-$nonce-BOOTED" "$clean" ||
		die "the VM did not boot or printed no result markers ($([[ $qemu_rc == 124 ]] && echo "timed out" || echo "qemu exit status $qemu_rc"))"
	problems=$(sed -n "s/.*AFALG-$nonce-\(MODPROBE-FAILED\|ENGINE-MISSING\) \(.*\)/\1: \2/p" "$clean" | paste -sd';' -)
	[[ -z $problems ]] || die "$problems"
	rc=$(sed -n "s/.*AFALG-$nonce-BENCH-RC=\([0-9]*\).*/\1/p" "$clean" | tail -n 1)
	[[ -n $rc ]] || die "the benchmark did not finish in the VM"
	if [[ $bench_name == enginebench ]]; then files=(json); else files=(json svg); fi
	for f in "${files[@]}"; do
		awk -v b="AFALG-$nonce-FILE-$f-BEGIN" -v e="AFALG-$nonce-FILE-$f-END" \
			'index($0, e) { on = 0 } on && /^[A-Za-z0-9+\/=]+$/ { print } index($0, b) { on = 1 }' "$clean" |
			base64 -d >"$out_dir/$bench_name-$lane.$f.tmp" || die "no $f from the VM"
		[[ -s $out_dir/$bench_name-$lane.$f.tmp ]] || { rm -f "$out_dir/$bench_name-$lane.$f.tmp"; die "the benchmark wrote no $f (exit $rc)"; }
		mv "$out_dir/$bench_name-$lane.$f.tmp" "$out_dir/$bench_name-$lane.$f"
	done
	for f in adaptive.json adaptive.svg; do
		awk -v b="AFALG-$nonce-FILE-$f-BEGIN" -v e="AFALG-$nonce-FILE-$f-END" \
			'index($0, e) { on = 0 } on && /^[A-Za-z0-9+\/=]+$/ { print } index($0, b) { on = 1 }' "$clean" |
			base64 -d >"$out_dir/$bench_name-$lane-$f.tmp" 2>/dev/null || true
		if [[ -s $out_dir/$bench_name-$lane-$f.tmp ]]; then
			mv "$out_dir/$bench_name-$lane-$f.tmp" "$out_dir/$bench_name-$lane-$f"
		else
			rm -f "$out_dir/$bench_name-$lane-$f.tmp"
		fi
	done
	if [[ $bench_name == enginebench ]]; then
		grep -E '^(enginebench:|size|[0-9]+ )' "$clean" >"$out_dir/enginebench-$lane.txt" || true
	fi
	log "wrote $out_dir/$bench_name-$lane.* (lane $lane, VM ${vm_seconds}s)"
	if [[ $rc != 0 ]]; then
		printf '%s: FAIL: the benchmark exited %s\n' "$lane" "$rc"
	else
		printf '%s: benchmark done in %ss\n' "$lane" "$vm_seconds"
	fi
	exit "$rc"
fi

exec python3 "$here/summarize.py" --log "$console" --nonce "$nonce" --label "$lane" \
	--xml-out "$cache/st-$lane.xml" --qemu-rc "$qemu_rc"
