#!/usr/bin/env bash
# `make test`: its stages two at a time, each stage's output in .build/test-logs/<stage>.log.
#
#   1. the build (the debug build with the tests)   beside  the VM lanes' kernels' download (network, dpkg -x)
#   2. test-host, test-service, test-c              beside  test-afalg, test-engine-aesni, fuzz-build, test-fuzz
#   3. test-timing (the adaptive dispatcher's tests, which time real calls), then test-engine-noaes, each alone
#
# qemu's vCPUs and the host's processes share the cores: the host suite leaves some idle (its serialized loopback
# suites), an engine lane uses about one (its requests wait on the engine), a fuzz run exactly one. engine-aesni's
# calibration takes whatever it measures, so that lane runs beside the host suite; engine-noaes's must find the
# engine ahead of software, and the engine's latency is the host's scheduling of qemu's threads (beside niced fuzz
# runs it measured 4-8 ms a request and failed, twice in four runs), so that lane runs alone, last.
#
# Once the build passed every stage runs, whatever the others did. Every stage's log is printed whole when the stage
# ends (one at a time, never interleaved), then a table of stage times; a failed stage's log ends the output again.
# Exit status 1 when any stage failed.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=.build/test-logs
rm -rf "$logs"
mkdir -p "$logs"
: >"$logs/times"
make=(make --no-print-directory)

# One stage: the command's output in the stage's log, printed whole when it ends.
stage() {
	local name=$1 start=$SECONDS status=ok
	shift
	{
		flock 9
		printf '== %s: started at %s\n' "$name" "$(date +%H:%M:%S)"
	} 9>"$logs/.print-lock"
	"$@" >"$logs/$name.log" 2>&1 || status=FAILED
	local seconds=$((SECONDS - start))
	{
		flock 9
		printf '\n== %s: %s in %s s; its output (%s):\n' "$name" "$status" "$seconds" "$logs/$name.log"
		cat "$logs/$name.log"
		printf '== end of %s\n\n' "$name"
		printf '%s %s %s\n' "$name" "$status" "$seconds" >>"$logs/times"
	} 9>"$logs/.print-lock"
	[[ $status == ok ]]
}

# Stage names, run in order; fails when one did.
track() {
	local name status=0
	for name in "$@"; do
		# The build ran before: a stage's own `build` prerequisite is not made again (-o).
		stage "$name" "${make[@]}" -o build -o vectors -o deps "$name" || status=1
	done
	return $status
}

pids=()
tracks_failed=0
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
wait_all() {
	local pid
	for pid in "${pids[@]}"; do wait "$pid" || tracks_failed=1; done
	pids=()
}
started=$SECONDS

# 1. The build, with the kernels downloaded meanwhile (both engine lanes share the generic kernel).
stage vm-kernels bash -c 'Tests/AFALG/run-vm.sh --fetch-kernel && AFALG_VM_LANE=engine-aesni Tests/AFALG/run-vm.sh --fetch-kernel' &
pids=($!)
stage build "${make[@]}" -o deps build || tracks_failed=1
wait_all

if ! grep -q '^build FAILED' "$logs/times"; then
	# 2. The host suite and its companions beside the AF_ALG lane and the fuzz build.
	track test-host test-service test-c &
	pids+=($!)
	if grep -q '^vm-kernels ok' "$logs/times"; then
		track test-afalg test-engine-aesni fuzz-build test-fuzz &
	else
		track fuzz-build test-fuzz &
	fi
	pids+=($!)
	wait_all
	# 3. The timing tests alone, then the engine-noaes lane alone.
	track test-timing || tracks_failed=1
	if grep -q '^vm-kernels ok' "$logs/times"; then
		track test-engine-noaes || tracks_failed=1
	fi
fi

printf '== make test: stage times (s), wall %s s in all\n' "$((SECONDS - started))"
column -t "$logs/times" | sed 's/^/   /'
failed=$(awk '$2 != "ok" { print $1 }' "$logs/times")
if ((tracks_failed)) && [[ -z $failed ]]; then failed="(a track ended without a result)"; fi
if [[ -n $failed ]]; then
	for name in $failed; do
		printf '\n== %s FAILED; the end of its log (%s):\n' "$name" "$logs/$name.log"
		if [[ -f $logs/$name.log ]]; then tail -n 60 "$logs/$name.log"; fi
	done
	printf '\nmake test: FAILED: %s\n' "$(echo $failed)"
	exit 1
fi
printf 'make test: every stage passed\n'
