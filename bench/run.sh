#!/usr/bin/env bash
# bench/run.sh: build if needed, run the benchmarks alone on the machine (under
# /tmp/rocattach-heavy.lock), print one table and write bench/results/latest.json.
#
#   bench/run.sh [--quick] [--only LIST] [--build-dir DIR] [--no-build] [--out FILE]
#
#   --quick          fewer samples, smaller sizes, shorter windows (about 30 s)
#   --only LIST      comma-separated subset of: latency,pause,scaling,cpu,skew,cluster,coord,rank0,stacks
#   --build-dir DIR  build tree to use (default: build/ in the repository)
#   --no-build       do not configure or build
#   --out FILE       JSON output (default bench/results/latest.json)
#   --smoke          the CTest smoke test: a tiny latency run, checks only that JSON comes out
#
# Benchmarks print figures; they never fail for being slow. The exit code is
# non-zero only if a benchmark could not run at all. See bench/README.md.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LOCK=/tmp/rocattach-heavy.lock
ALL=latency,pause,scaling,cpu,skew,cluster,coord,rank0,stacks

B=${BENCH_BUILD_DIR:-$ROOT/build}
OUT=
ONLY=$ALL
QUICK=0
BUILD=1
SMOKE=0
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--only) ONLY=${2:?--only needs a list}; shift ;;
	--build-dir) B=${2:?--build-dir needs a directory}; shift ;;
	--no-build) BUILD=0 ;;
	--out) OUT=${2:?--out needs a file}; shift ;;
	--smoke) SMOKE=1; QUICK=1; ONLY=latency ;;
	-h | --help) sed -n '2,15p' "$0"; exit 0 ;;
	*) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
for b in ${ONLY//,/ }; do
	case ",$ALL," in *",$b,"*) ;; *) echo "run.sh: unknown benchmark '$b' (one of $ALL)" >&2; exit 2 ;; esac
done
B=$(mkdir -p "$B" && cd "$B" && pwd)
if [ -z "$OUT" ]; then
	OUT=$HERE/results/latest.json
	[ "$SMOKE" = 1 ] && OUT=$B/bench-smoke.json
fi

if [ "$BUILD" = 1 ] && [ -z "${BENCH_LOCKED:-}" ]; then
	echo "== building in $B"
	if [ ! -f "$B/CMakeCache.txt" ]; then
		cmake -B "$B" -S "$ROOT" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$B/bench-build.log" 2>&1 ||
			{ cat "$B/bench-build.log" >&2; exit 1; }
	fi
	cmake --build "$B" -j"$(nproc)" --target bench >>"$B/bench-build.log" 2>&1 ||
		{ tail -40 "$B/bench-build.log" >&2; exit 1; }
fi

# Everything below runs alone: never two heavy runs at once, and timings measure better alone.
if [ -z "${BENCH_LOCKED:-}" ]; then
	echo "== waiting for $LOCK"
	export BENCH_LOCKED=1
	exec flock -w "${BENCH_LOCK_WAIT:-1800}" "$LOCK" "$0" "${ARGS[@]}" --no-build
fi

W=$(mktemp -d /tmp/rocattach-bench-run.XXXXXX)
trap 'rm -rf "$W"' EXIT
Q=()
[ "$QUICK" = 1 ] && Q=(--quick)
failed=()
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)

run() { # run NAME TIMEOUT_S COMMAND...: one benchmark, its JSON to $W/NAME.json
	local name=$1 t=$2 t0=$SECONDS
	shift 2
	case ",$ONLY," in *",$name,"*) ;; *) return 0 ;; esac
	echo "== $name"
	if timeout -k 10 "$t" "$@" --json "$W/$name.json"; then
		echo "   ($((SECONDS - t0)) s)"
	else
		echo "run.sh: benchmark $name failed or timed out (exit $?)" >&2
		failed+=("$name")
	fi
}

if [ "$SMOKE" = 1 ]; then
	run latency 60 "$B/bin/bench_latency" --quick --targets 2 --cycles 3
else
	run latency 120 "$B/bin/bench_latency" "${Q[@]}"
	run pause 180 "$B/bin/bench_pause" "${Q[@]}"
	# 1024 processes: ~7000 threads, well inside this machine's pid and thread limits.
	if [ "$QUICK" = 1 ]; then
		run scaling 300 "$B/bin/bench_scaling" "${Q[@]}"
	else
		run scaling 600 "$B/bin/bench_scaling" --sizes 1,8,32,128,256,1024
	fi
	run cpu 120 "$B/bin/bench_cpu" "${Q[@]}"
	run skew 120 "$B/bin/bench_skew" "${Q[@]}"
	run cluster 300 "$HERE/cluster_skew.sh" "$B" "${Q[@]}"
	run coord 600 "$B/bin/bench_coord" "${Q[@]}"
	# The model of issue 24 from what coord measured (bench/README.md, "The coordination model").
	[ -f "$W/coord.json" ] && { echo "== model (bench/model_coord.c)"; "$B/bin/model_coord" "$W/coord.json"; }
	run rank0 600 "$B/bin/bench_rank0" "${Q[@]}"
	run stacks 300 "$B/bin/bench_stacks" "${Q[@]}"
fi

commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=false
[ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] && dirty=true
mkdir -p "$(dirname "$OUT")"
results=()
for b in ${ALL//,/ }; do
	[ -f "$W/$b.json" ] && results+=("$W/$b.json")
done
"$B/bin/bench_report" --out "$OUT" --set commit="$commit" --set dirty=$dirty \
	--set quick=$([ "$QUICK" = 1 ] && echo true || echo false) --set build_dir="$B" \
	--set loadavg="$LOAD" "${results[@]}" || exit 1
echo
echo "written: $OUT"
if [ "$SMOKE" = 1 ]; then
	grep -q '"schema": "rocattach-bench/1"' "$OUT" && grep -q '"attach.p50"' "$OUT" || exit 1
fi
[ ${#failed[@]} -eq 0 ] || { echo "run.sh: could not run: ${failed[*]}" >&2; exit 1; }
