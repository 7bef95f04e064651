#!/usr/bin/env bash
# Build the libFuzzer harnesses (clang, ASan+UBSan) and run each for a while.
#
#   fuzz/run.sh [SECONDS_PER_HARNESS] [HARNESS...]    (default: 10 s, every harness)
#
# CI runs it for a few seconds per harness; a campaign is e.g. `fuzz/run.sh 600`.
# FUZZ_JOBS harnesses run at once (default: one per core).
# Seeds come from fuzz/corpus/<harness>/ and are run first, every time; what
# the fuzzer finds that is new is kept in $FUZZ_BUILD_DIR/corpus/<harness>/ so
# longer runs build on earlier ones. The inputs stay random (no fixed -seed).
# A crash, a failed property, a leak or a timeout fails the run: the input is
# saved as $FUZZ_BUILD_DIR/artifacts/<harness>-crash-... and copied into the
# seeds as fuzz/corpus/<harness>/found-<kind>-<sha1>, so that the repository
# keeps it (commit it with the fix) and every later run replays it. Replay
# one input with `$FUZZ_BUILD_DIR/fuzz/fuzz_<harness> FILE`.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER=${1:-10}
shift || true
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
CC_FUZZ=${FUZZ_CC:-clang}

if ! [[ $SECONDS_PER =~ ^[0-9]+$ ]] || [ "$SECONDS_PER" -lt 1 ]; then
	echo "usage: fuzz/run.sh [SECONDS_PER_HARNESS] [HARNESS...]" >&2
	exit 2
fi
if ! command -v "$CC_FUZZ" >/dev/null; then
	echo "fuzz: $CC_FUZZ not found: run scripts/deps.sh (clang, libclang-rt-dev)" >&2
	exit 1
fi

mkdir -p "$BUILD"
log="$BUILD/build.log"
if ! { cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER="$CC_FUZZ" -DROCATTACH_FUZZ=ON \
	-DROCATTACH_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	cmake --build "$BUILD" --target fuzz -j"$(nproc)"; } >"$log" 2>&1; then
	cat "$log" >&2
	echo "fuzz: build failed (log: $log)" >&2
	exit 1
fi
# FUZZ_BUILD_ONLY=1: build, run nothing (scripts/test.sh builds early, in the background).
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit 0

if [ $# -eq 0 ]; then
	set -- $(cd fuzz && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
fi

# keep_inputs HARNESS: every input that failed becomes a seed of the harness.
keep_inputs() {
	local a base seed
	for a in "$BUILD/artifacts/$1-"*; do
		[ -f "$a" ] || continue
		base=${a##*/}
		base=${base#"$1"-}
		seed="fuzz/corpus/$1/found-$base"
		cp "$a" "$seed"
		echo "fuzz:   input: $a, kept as $seed: commit it with the fix" >&2
	done
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$BUILD/artifacts" "$BUILD/logs"

# fuzz_one HARNESS: run it for SECONDS_PER; its lines go to $BUILD/logs/HARNESS.res
# (stdout) and .err (stderr); its status (0: passed) to .rc.
fuzz_one() {
	local h=$1 bin="$BUILD/fuzz/fuzz_$1" hlog="$BUILD/logs/$1.log" rc=0 runs cov args
	exec >"$BUILD/logs/$h.res" 2>"$BUILD/logs/$h.err"
	if [ ! -x "$bin" ] || [ ! -d "fuzz/corpus/$h" ]; then
		echo "fuzz: no harness '$h' (fuzz/fuzz_$h.c, fuzz/corpus/$h/)" >&2
		return 1
	fi
	mkdir -p "$BUILD/corpus/$h"
	rm -f "$BUILD/artifacts/$h-"*
	args=(-max_total_time="$SECONDS_PER" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
		-artifact_prefix="$BUILD/artifacts/$h-")
	[ -f "fuzz/dict/$h.dict" ] && args+=(-dict="fuzz/dict/$h.dict")
	# The outer timeout only guards against a fuzzer that never stops. It is no finding:
	# said as such, and no input is kept (on a loaded machine the exit's leak check of
	# a large heap can take minutes).
	timeout $((SECONDS_PER + 300)) "$bin" "${args[@]}" "$BUILD/corpus/$h" "fuzz/corpus/$h" \
		>"$hlog" 2>&1 || rc=$?
	if [ "$rc" -eq 124 ]; then
		echo "fuzz: $h: FAILED: still running $((SECONDS_PER + 300)) s after its start," \
			"so stopped (no finding; the machine may be overloaded; log: $hlog)" >&2
		return 1
	elif [ "$rc" -eq 0 ]; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$hlog")
		cov=$(grep -o 'cov: [0-9]*' "$hlog" | tail -1 | cut -d' ' -f2)
		echo "fuzz: $h: ok (${runs:-?} runs in ${SECONDS_PER} s, coverage ${cov:-?})"
		return 0
	fi
	echo "fuzz: $h: FAILED (log: $hlog)" >&2
	grep -E -A30 '^==[0-9]+==ERROR|runtime error|property failed|ERROR: libFuzzer' \
		"$hlog" | head -60 >&2 || tail -40 "$hlog" >&2
	keep_inputs "$h"
	return 1
}

# The harnesses run FUZZ_JOBS at once (default: one per core; each is one process on
# one core, for its SECONDS_PER as before). Their lines are printed in order at the end.
jobs_max=${FUZZ_JOBS:-$(nproc)}
for h in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n || true
	done
	rm -f "$BUILD/logs/$h.rc" "$BUILD/logs/$h.res" "$BUILD/logs/$h.err"
	{
		rc=0
		fuzz_one "$h" || rc=$?
		echo "$rc" >"$BUILD/logs/$h.rc"
	} &
done
wait
passed=0
failed=()
for h in "$@"; do
	rc=$(cat "$BUILD/logs/$h.rc" 2>/dev/null || echo 1)
	cat "$BUILD/logs/$h.res"
	cat "$BUILD/logs/$h.err" >&2
	if [ "$rc" -eq 0 ]; then
		passed=$((passed + 1))
	else
		failed+=("$h")
	fi
done
echo "fuzz: ${passed} passed, ${#failed[@]} failed${failed:+ (${failed[*]})}"
[ ${#failed[@]} -eq 0 ]
