#!/usr/bin/env bash
# `make fuzz`: builds the fuzz driver with libFuzzer and AddressSanitizer (with LeakSanitizer), seeds a corpus per
# target from the project's own encoders and the pinned test vectors, runs every target (or FUZZ_TARGETS) for
# FUZZ_SECONDS, and prints executions and crashes per target. A crash leaves its input under
# .build/fuzz/artifacts/<target>/; keep it in Tests/Fuzz/Regressions/<target>/ once fixed (FuzzRegressionTests
# runs those). Exit status 1 when any target crashed, leaked or timed out. FUZZ_JOBS: targets run at a time (default
# 1). FUZZ_BUILD_ONLY=1: build the sanitized driver (.build/fuzz) and stop.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-60}
vectors=${SECURITYSERVICES_VECTORS:?set by make fuzz}
out=.build/fuzz
fuzzer=$out/debug/securityfuzz

# The whole package is compiled with coverage and ASan. Debian's gold cannot link that (it crashes reporting an
# error), so the toolchain's lld does.
swift build --product securityfuzz --scratch-path "$out" -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
    -Xswiftc -use-ld=lld -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld >"$out.log" 2>&1 || { tail -30 "$out.log"; exit 1; }
if [ "${FUZZ_BUILD_ONLY:-}" = 1 ]; then exit 0; fi  # `make fuzz-build`: the sanitized driver only
swift build --product securityfuzz >/dev/null  # the plain driver writes the generated seeds

corpus=$out/corpus
rm -rf "$corpus" && mkdir -p "$corpus"
.build/debug/securityfuzz seeds "$corpus"
# The vectors: every certificate and CRL file, PKCS#12 files (behind a byte that picks the passphrase: 1 is
# "password", the one cryptography's vectors use), and certificates for the import target (behind its format byte).
# (head closes the pipe early: not a failure.)
set +o pipefail
find "$vectors/x509" -maxdepth 2 -type f \( -name '*.pem' -o -name '*.der' \) ! -name '*crl*' | head -400 |
    while read -r file; do cp "$file" "$corpus/certificate/$(basename "$file")"; done
find "$vectors/x509" -type f -name '*crl*' | while read -r file; do cp "$file" "$corpus/crl/$(basename "$file")"; done
find "$vectors/pkcs12" -type f -name '*.p12' | while read -r file; do
    { printf '\001'; cat "$file"; } >"$corpus/pkcs12/$(basename "$file")"
done
find "$vectors/x509/custom" -maxdepth 1 -type f -name '*.pem' | head -40 | while read -r file; do
    { printf '\000'; cat "$file"; } >"$corpus/item-import/$(basename "$file")"
done

set -o pipefail
# Every kept crash input starts its target's corpus too, so each run checks it again under the sanitizers.
for folder in Tests/Fuzz/Regressions/*/; do
    cp "$folder"* "$corpus/$(basename "$folder")/" 2>/dev/null || true
done

targets=${FUZZ_TARGETS:-$(.build/debug/securityfuzz list | cut -f1 | tr '\n' ' ')}
printf '%-18s %12s %10s %s\n' target executions crashes result
# One target: its run, then its line of the table (whole, when it ends) and its result in $out/<target>.result.
run_target() {
    local target=$1 artifacts=$out/artifacts/$1/ log=$out/$1.log status=0 executions crashes result
    mkdir -p "$artifacts" "$corpus/$target"
    # Swift's own backtracer would wait on a crash; libFuzzer and ASan report it. -timeout: an input running
    # longer than 10 s is a hang; -rss_limit_mb: a leak or an unbounded allocation.
    SWIFT_BACKTRACE=enable=no SECURITYSERVICES_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=1 \
        LSAN_OPTIONS=suppressions=Tests/Fuzz/lsan.supp:print_suppressions=0 \
        timeout -s KILL $((seconds + 120)) "$fuzzer" "$corpus/$target" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts" >"$log" 2>&1 || status=$?
    executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
    result=ok
    if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        result="FAILED (exit $status; see $log)"
    fi
    printf '%-18s %12s %10s %s\n' "$target" "${executions:-0}" "$crashes" "$result"
    printf '%s\n' "$result" >"$out/$target.result"
}
# FUZZ_JOBS targets at a time (default 1; each run is one thread).
jobs_max=${FUZZ_JOBS:-1}
running=0
for target in $targets; do
    rm -f "$out/$target.result"
    if [ "$running" -ge "$jobs_max" ]; then
        wait -n || true
        running=$((running - 1))
    fi
    run_target "$target" &
    running=$((running + 1))
done
wait
failed=0
for target in $targets; do
    [ "$(cat "$out/$target.result" 2>/dev/null)" = ok ] || failed=1
done
exit $failed
