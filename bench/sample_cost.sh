#!/usr/bin/env bash
# bench/sample_cost.sh: what sampling at 99 Hz costs the sampled program, beside no
# sampling and beside `perf record -F 99 -g` in the same run (bench/README.md, "The cost
# of sampling").
#
#   bench/sample_cost.sh [--rounds R] [--hz HZ] [--units U] [--threads LIST] [--no-python]
#                        [--modes LIST] [--build-dir DIR]
#
#   --rounds R      rounds (default 5); in each, every mode once per workload, interleaved
#   --hz HZ         the sampling rate of the tool and of perf (default 99)
#   --units U       the fixed work, in units of about 0.1 ms of CPU (default 12000: 1.2 s);
#                   with N > 40 threads, U x N / 40: each thread must run long beside the
#                   sampling period (a thread's last, partial period is never sampled)
#   --threads LIST  the C workload's thread counts (default 4,100)
#   --no-python     without the Python workload (4 threads, python3, the same units)
#   --modes LIST    of none, ours, perf (default all three), and the tool's parts, for
#                   finding the cost: signal (timers and the signal, a handler that
#                   returns at once), record (also the record, no unwind), nopoll (the
#                   tool with its poller's shortest wait 1 s instead of 10 ms), before (the
#                   tool given by --before)
#   --before LIB    another build of librocattach-stacks.so (say, the one before a change),
#                   for the mode before
#   --build-dir DIR the build tree (default build/)
#
# One workload run: bench/sample_work.c (or .py) starts its threads, waiting; it is
# attached (ours: rocattach -p P -t librocattach-stacks.so with the variables
# rocattach-mpi --sample sends; perf: perf record -F HZ -g -p P, once its events are open
# on every thread); then its threads do the fixed work; it prints the wall time and its
# CPU time; then the window ends. The slowdown of a mode is its wall time over the
# same round's unsampled run, less 1; the table shows the median over the rounds and the
# spread (lowest to highest). Lines "run ..." are the raw figures.
# It holds /tmp/rocattach-heavy.lock for the whole run. Exit 0 when every run ran; a
# figure it could not get is "-", never 0; without perf the perf rows say so.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
ROUNDS=5 HZ=99 UNITS=12000 THREADS=4,100 PY=1 MODES=none,ours,perf B=$ROOT/build BEFORE=
ARGS=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=${2:?} && shift ;;
	--hz) HZ=${2:?} && shift ;;
	--units) UNITS=${2:?} && shift ;;
	--threads) THREADS=${2:?} && shift ;;
	--no-python) PY=0 ;;
	--modes) MODES=${2:?} && shift ;;
	--build-dir) B=${2:?} && shift ;;
	--before) BEFORE=$(realpath "${2:?}") && shift ;;
	-h | --help) sed -n '2,32p' "$0" && exit 0 ;;
	*) echo "sample_cost: unknown option '$1' (see --help)" >&2 && exit 2 ;;
	esac
	shift
done
WORK=$B/bin/rocattach-bench-sample-work
RA=$B/bin/rocattach
TOOL=$B/lib/librocattach-stacks.so
AGENT=$B/lib/librocattach-agent.so.0
for f in "$WORK" "$RA" "$TOOL" "$AGENT"; do
	[ -e "$f" ] || { echo "sample_cost: $f is missing: run ./scripts/build.sh" >&2 && exit 2; }
done
if [ -z "${BENCH_LOCKED:-}" ]; then
	export BENCH_LOCKED=1
	exec flock -w "${BENCH_LOCK_WAIT:-1800}" /tmp/rocattach-heavy.lock "$0" "${ARGS[@]}"
fi
PERF=$(command -v perf || true)
if [ -n "$PERF" ] && ! "$PERF" record -q -F "$HZ" -g -o /dev/null -- true >/dev/null 2>&1; then
	echo "sample_cost: perf is here but cannot record ($PERF record -- true failed): no perf rows"
	PERF=
fi
[ -n "$PERF" ] || echo "sample_cost: perf is missing (Debian linux-perf): the perf rows say so"
unset ROCATTACH_AGENT ROCP_TOOL_ATTACH ROCPROF_ATTACH_TOOL_LIBRARY LD_PRELOAD ROCPROF_STACKS_HZ
W=$(mktemp -d /tmp/rocattach-sample-cost.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT

# The tool's parts, for finding the cost (test-only variables of the tool, docs/stacks.md).
mode_env() {
	case $1 in
	ours | before) echo "" ;;
	signal) echo "ROCPROF_STACKS_SAMPLE_PART=signal" ;;
	record) echo "ROCPROF_STACKS_SAMPLE_PART=record" ;;
	nopoll) echo "ROCPROF_STACKS_POLL_MS=1000" ;;
	*) return 1 ;;
	esac
}

# wait_for COND_CMD...: up to 20 s, every 10 ms.
wait_for() {
	for _ in $(seq 2000); do
		"$@" && return 0
		sleep 0.01
	done
	return 1
}
attached() { grep -q 'attached to process' "$W/ap.err"; }
# perf's events are open on every thread of the target (several per thread: it opens
# them one by one), and their number held still for 100 ms.
perf_open() {
	local n m
	n=$(find "/proc/$1/fd" -lname '*perf_event*' 2>/dev/null | wc -l)
	[ "$n" -ge "$2" ] || return 1
	sleep 0.1
	m=$(find "/proc/$1/fd" -lname '*perf_event*' 2>/dev/null | wc -l)
	[ "$n" = "$m" ]
}

# The CPU time (ms, from schedstat) of the target's thread named rocattach-poll (the
# tool's poller), or -. A tool before the name (mode before): its poller has the name of
# the agent's thread that started it, rocp-bg-attach, and came after it (a higher tid).
poller_ms() {
	local t last='' n=0
	for t in /proc/"$1"/task/*; do
		case $(cat "$t/comm" 2>/dev/null) in
		rocattach-poll) awk '{ printf "%.1f\n", $1 / 1e6 }' "$t/schedstat" && return ;;
		rocp-bg-attach) [ "${t##*/}" -gt "${last:-0}" ] && last=${t##*/}; n=$((n + 1)) ;;
		esac
	done
	if [ "$2" = before ] && [ "$n" -ge 2 ]; then
		awk '{ printf "%.1f\n", $1 / 1e6 }' "/proc/$1/task/$last/schedstat" && return
	fi
	echo -
}
# The CPU time (ms) of every thread of process $1 (perf's own), or -.
proc_ms() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { if (NR) printf "%.1f\n", s / 1e6; else print "-" }'; }

# attach R KIND MODE TPID N: the mode's sampler on the target, ready; $AP its pid.
attach() {
	local envs tool
	AP=
	case $3 in
	none) return 0 ;;
	perf)
		"$PERF" record -F "$HZ" -g -p "$4" -o "$W/perf.data" >/dev/null 2>"$W/ap.err" &
		AP=$!
		PIDS+=("$AP")
		wait_for perf_open "$AP" "$5" && return 0
		;;
	*)
		envs=$(mode_env "$3") || { echo "sample_cost: unknown mode $3" >&2 && return 1; }
		tool=$TOOL
		[ "$3" = before ] && tool=$BEFORE
		# shellcheck disable=SC2086 # envs: zero or one NAME=VALUE word
		env $envs ROCPROF_STACKS_HZ="$HZ" ROCPROF_OUTPUT_PATH="$W/o" "$RA" -p "$4" \
			-t "$tool" --attach-children=false >/dev/null 2>"$W/ap.err" &
		AP=$!
		PIDS+=("$AP")
		wait_for attached && return 0
		;;
	esac
	echo "sample_cost: round $1 $2 $3: the sampler did not start: $(tail -2 "$W/ap.err")" >&2
	return 1
}

# samples MODE: how many samples the window took, or -.
samples() {
	local n
	case $1 in
	none) echo - ;;
	perf) n=$("$PERF" report -i "$W/perf.data" --stats 2>/dev/null | awk '/^ *SAMPLE events:/ { print $3; exit }') && echo "${n:--}" ;;
	*) cat "$W"/o/rocattach-stacks.*.txt 2>/dev/null | grep -c '^sample ' ;;
	esac
}

# handler_us MODE: the tool's handler time per sample (its file's sample_handler_ns), or -.
handler_us() {
	case $1 in
	none | perf) echo - ;;
	*) cat "$W"/o/rocattach-stacks.*.txt 2>/dev/null |
		awk '$1 == "sample_handler_ns" && $3 > 0 { printf "%.2f/%.2f\n", $4 / 1000, $2 / $3 / 1000; f = 1 } END { if (!f) print "-" }' ;;
	esac
}

# one_run R KIND MODE: prints "run R KIND MODE WALL_MS CPU_MS SAMPLES OWN_MS HANDLER_US",
# OWN_MS being the poller's CPU (ours) or perf's own (perf), HANDLER_US the tool's handler
# time per sample; "-" if none.
one_run() {
	local r=$1 kind=$2 mode=$3 n=${2##*[a-z]} cmd tp line own=- rc=0 in out
	[ "$mode" = perf ] && [ -z "$PERF" ] && { echo "run $r $kind perf - - - - (perf missing)" && return 0; }
	local units=$UNITS
	[ "$n" -gt 40 ] && units=$((UNITS * n / 40))
	case $kind in
	c*) cmd=("$WORK" "$n" "$units") ;;
	py*) cmd=(/usr/bin/python3 "$HERE/sample_work.py" "$n" "$units") ;;
	esac
	rm -rf "$W/o" "$W/in" "$W/out" "$W/perf.data" && mkfifo "$W/in" "$W/out"
	ROCP_TOOL_ATTACH=1 LD_PRELOAD=$AGENT "${cmd[@]}" <"$W/in" >"$W/out" 2>"$W/err" &
	tp=$!
	PIDS+=("$tp")
	exec {in}>"$W/in" {out}<"$W/out"
	if ! read -r -t 30 -u "$out" line || [ "$line" != ready ]; then
		echo "sample_cost: round $r $kind: the workload did not start: $(cat "$W/err")" >&2
		rc=1
	elif attach "$r" "$kind" "$mode" "$tp" "$((n + 1))" && echo go >&"$in" &&
		read -r -t 600 -u "$out" line; then
		[ "$mode" = perf ] && own=$(proc_ms "$AP")
		[ -n "$AP" ] && [ "$mode" != perf ] && own=$(poller_ms "$tp" "$mode")
	else
		rc=1
	fi
	# perf's exit after SIGINT is not 0: it ran if it wrote its samples.
	[ -n "$AP" ] && kill -INT "$AP" 2>/dev/null && { wait "$AP" || [ "$mode" = perf ] || rc=1; }
	[ "$mode" = perf ] && ! grep -q 'Captured and wrote' "$W/ap.err" && rc=1
	exec {in}>&- {out}<&-
	wait "$tp" || rc=1
	[ "$rc" = 0 ] || { echo "sample_cost: round $r $kind $mode failed: $(tail -2 "$W/ap.err" 2>/dev/null)" >&2 && return 1; }
	# shellcheck disable=SC2086 # the answer's words: done WALL_NS CPU_NS
	set -- $line
	echo "run $r $kind $mode $(($2 / 1000000)) $(($3 / 1000000)) $(samples "$mode") $own $(handler_us "$mode")"
}

# summarize FILE: per workload and mode, the median slowdown against the same round's
# unsampled run (wall and CPU), the spread over the rounds, the samples and OWN_MS.
summarize() {
	awk '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function lo(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
	function hi(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
	$1 == "run" {
		k = $3 SUBSEP $4
		if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
		if ($2 > nr) nr = $2
		if ($5 == "-") next
		wall[$2, k] = $5; cpu[$2, k] = $6; smp[$2, k] = $7; own[$2, k] = $8; hdl[$2, k] = $9
	}
	END {
		printf "%-6s %-7s %8s %9s %17s %9s %8s %8s %11s\n", "work", "mode", "wall_s", "slow_%", "spread_%", "cpu+_%", "samples", "own_ms", "hdl_us"
		for (i = 1; i <= nk; i++) {
			split(order[i], kv, SUBSEP); n = 0; no = 0; nh = 0; delete hd; delete hm; delete s; delete c; delete w; delete sm; delete ow
			for (r = 1; r <= nr; r++) {
				b = kv[1] SUBSEP "none"
				if (!((r, order[i]) in wall) || !((r, b) in wall)) continue
				n++; w[n] = wall[r, order[i]] / 1000
				s[n] = 100 * (wall[r, order[i]] / wall[r, b] - 1)
				c[n] = 100 * (cpu[r, order[i]] / cpu[r, b] - 1)
				sm[n] = smp[r, order[i]] == "-" ? 0 : smp[r, order[i]]
				if (own[r, order[i]] != "-") ow[++no] = own[r, order[i]]
				if (hdl[r, order[i]] != "-" && hdl[r, order[i]] != "") { split(hdl[r, order[i]], hp, "/"); hd[++nh] = hp[1]; hm[nh] = hp[2] }
			}
			if (!n) { printf "%-6s %-7s %8s (no figure: %s)\n", kv[1], kv[2], "-", kv[2] == "perf" ? "perf missing" : "no run beside its baseline"; continue }
			printf "%-6s %-7s %8.2f %9.2f %8.2f..%-7.2f %9.2f %8s %8s %11s\n", kv[1], kv[2], med(w, n),
			    med(s, n), lo(s, n), hi(s, n), med(c, n), kv[2] == "none" ? "-" : med(sm, n),
			    no ? med(ow, no) : "-", nh ? sprintf("%.1f/%.1f", med(hd, nh), med(hm, nh)) : "-"
		}
		printf "(%d rounds; slow: wall time over the same round'"'"'s unsampled run, less 1, median; spread: lowest..highest; cpu+: the same for the workload'"'"'s CPU time; own_ms: the poller'"'"'s CPU (ours), perf'"'"'s own process (perf); hdl_us: the tool'"'"'s handler per sample, its first clock read to after the unwind, median/mean)\n", nr
	}' "$1"
}

case ",$MODES," in *,before,*) [ -f "$BEFORE" ] || { echo "sample_cost: mode before needs --before LIB" >&2 && exit 2; } ;; esac
KINDS=()
for n in ${THREADS//,/ }; do KINDS+=("c$n"); done
[ "$PY" = 1 ] && KINDS+=(py4)
echo "sample_cost: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)," \
	"$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), kernel $(uname -r)," \
	"$HZ Hz, $ROUNDS rounds, $UNITS units, modes $MODES, load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$SECONDS bad=0
for r in $(seq 1 "$ROUNDS"); do
	for k in "${KINDS[@]}"; do
		for m in ${MODES//,/ }; do
			# Not in a pipeline: the processes it starts are this shell's to clean up.
			one_run "$r" "$k" "$m" >"$W/line" || bad=$((bad + 1))
			cat "$W/line" && cat "$W/line" >>"$W/runs"
		done
	done
done
echo "sample_cost: $((SECONDS - t0)) s, load after $(cut -d' ' -f1-3 /proc/loadavg)"
summarize "$W/runs"
[ "$bad" = 0 ] || { echo "sample_cost: $bad runs failed" >&2 && exit 1; }
