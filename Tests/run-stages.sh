#!/usr/bin/env bash
# `make test`: its stages in two tracks at once, each stage's output in .build/test-logs/<stage>.log.
#
#   1. `make build` (the debug build with the tests) while the VM lanes' kernels are fetched (network, not CPU);
#   2. the host track (test-host, test-service, test-c, test-fuzz) while the VM track (test-afalg, test-engine)
#      runs: qemu's vCPUs use the cores the host suite leaves idle (its serialized loopback suites, the fuzz
#      runs' single thread), and the other way round.
#
# A track stops at its first failing stage; the other track finishes. Every stage's log is printed whole when
# the stage ends (one at a time, never interleaved), then a table of stage times; a failed stage's log ends
# the output again. Exit status 1 when any stage failed.
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

track() { # stage names, run in order until one fails
	local name
	for name in "$@"; do
		# The build ran before the tracks: a stage's own `build` prerequisite is not made again (-o).
		stage "$name" "${make[@]}" -o build -o vectors -o deps "$name" || return 1
	done
}

pids=()
tracks_failed=0
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
started=$SECONDS

# 1. The build, with the kernels downloaded meanwhile (both engine lanes share the generic kernel).
stage vm-kernels bash -c 'Tests/AFALG/run-vm.sh --fetch-kernel && AFALG_VM_LANE=engine-aesni Tests/AFALG/run-vm.sh --fetch-kernel' &
pids=($!)
stage build "${make[@]}" -o deps build
build_status=$?
wait "${pids[@]}"
kernels_status=$?
pids=()

# 2. The two tracks.
if ((build_status == 0)); then
	track test-host test-service test-c test-fuzz &
	pids+=($!)
	if ((kernels_status == 0)); then
		track test-afalg test-engine &
		pids+=($!)
	fi
	for pid in "${pids[@]}"; do wait "$pid" || tracks_failed=1; done
fi
pids=()

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
