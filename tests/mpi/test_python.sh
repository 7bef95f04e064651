#!/usr/bin/env bash
# Python frames through rocattach-mpi, on Debian's /usr/bin/python3 (3.11) and
# python3-mpi4py:
#   1. --stacks on a hung 4-rank mpi4py job (py_app.py), ranks 0-1 on our agent's side
#      and 2-3 on ROCm's (the double): rank 2 stands apart with stuck_here at its line
#      under the interpreter's frames, the others share wait_for_all > comm.Barrier();
#      in the printed tree and in the report. The job runs on, rank 2 still spins.
#   2. --sample 99 on py_shares.py (75 % of its CPU time in busy_a, 25 % in busy_b):
#      the folded samples give those shares within 5 points.
# The caller holds /tmp/rocattach-heavy.lock (CTest does).
B=${1:?usage: test_python.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
APP=$HERE/py_app.py
W=$(mktemp -d /tmp/rocattach-mpi-python-test.XXXXXX)
trap 'cleanup; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT

if ! "$PY" -c 'import sys, mpi4py; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
	echo "SKIP: $PY is not CPython 3.11 with mpi4py (python3-mpi4py; scripts/deps.sh)"
	exit 77
fi

line() { grep -n "# LINE:$2\$" "$1" | cut -d: -f1; }

# 1. The hung job.
mpirun -np 2 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT" "$PY" "$APP" : \
	-np 2 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$DOUBLE" "$PY" "$APP" \
	</dev/null >"$W/job.out" 2>&1 &
JOB_PID=$!
CHILDREN+=("$JOB_PID")
wait_ready "$W/job.out" 4 || exit 1
sleep 0.5 # every rank past its "ready", in its loop or in the barrier
pids=$(pgrep -f "^$PY $APP" -P "$JOB_PID" | sort -n)
mkdir -p "$W/tmp"
t0=$SECONDS
ROCATTACH_STACKS_DIR=$W/tmp mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --stacks \
	--report "$W/r.json" </dev/null >"$W/l.out" 2>&1
rc=$?
echo "rocattach-mpi --stacks: exit $rc in $((SECONDS - t0)) s; its tree:"
sed -n '/^stacks at the window/,$p' "$W/l.out"
stuck="stuck_here \(py_app.py:($(line "$APP" stuck_while)|$(line "$APP" stuck_here))\)"
check "exit 0 (got $rc)" exit_ok "$rc" "$W/r.json"
check "rank 2 apart: stuck_here at its line, under the interpreter's frames" \
	grep -qE "^ +\[2\] 1 thread: (.* > )?$stuck( > .*)?$" "$W/l.out"
check "ranks 0-1,3 together in wait_for_all > comm.Barrier()" \
	grep -qE "^ +\[0-1,3\] 3 threads: (.* > )?wait_for_all \(py_app.py:$(line "$APP" barrier)\) > .*Barrier" \
	"$W/l.out"
check "all four ranks share the interpreter's frames down to _PyEval_EvalFrameDefault" \
	grep -qE "^\[0-3\] 4 threads: .* > PyEval_EvalCode > _PyEval_EvalFrameDefault$" "$W/l.out"
check "... and each rank's Python frames start at <module> (py_app.py:N)" \
	test "$(grep -cE "^  \[[0-9,-]+\] [0-9] threads?: <module> \(py_app.py:[0-9]+\) > " "$W/l.out")" -eq 2
check "report: stuck_here is rank 2's" jq -e --arg re "^$stuck\$" \
	'[.stacks | .. | objects | select((.frame? // "") | test($re)) | .ranks] == ["2"]' "$W/r.json"
check "every rank still runs" test "$(pgrep -f "^$PY $APP" -P "$JOB_PID" | sort -n)" = "$pids"
check "rank 2 still spins" test "$(awk '{print $3}' "/proc/$(echo "$pids" | sed -n 3p)/stat")" = R
for p in $pids; do
	check "rank pid $p not traced" grep -qE '^TracerPid:[[:space:]]+0$' "/proc/$p/status"
done
check "no stack file left" test -z "$(ls -A "$W/tmp")"
kill "$JOB_PID"
wait "$JOB_PID" 2>/dev/null

# 2. Known shares, sampled at 99 Hz.
mkfifo "$W/shares.in"
MY_RANK=0 ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT" "$PY" "$HERE/py_shares.py" \
	<"$W/shares.in" >"$W/shares.out" 2>&1 &
P=$!
CHILDREN+=("$P")
exec {fd}>"$W/shares.in"
wait_ready "$W/shares.out" 1 || exit 1
# Windows of 5 s until 300 samples, 8 at most: they follow the target's CPU time, and a
# loaded machine gives it less. Under load the samples' phases in the 17 ms loop are
# close to random: 300 put a 5-point error past two standard deviations (2.5 points).
: >"$W/f.all"
for n in 1 2 3 4 5 6 7 8; do
	mpirun -np 1 "$LAUNCHER" --pid "$P" --rank-var MY_RANK --sample 99 -d 5000 \
		--folded "$W/f$n.txt" </dev/null >"$W/s$n.out" 2>&1
	rc=$?
	check "--sample 99, window $n: exit 0 (got $rc)" test "$rc" -eq 0
	cat "$W/f$n.txt" >>"$W/f.all"
	[ "$(awk '{ t += $NF } END { print t + 0 }' "$W/f.all")" -ge 300 ] && break
done
read -r a b total < <(awk '{ n = $NF; t += n }
	/busy_a \(py_shares.py:[0-9]+\)/ { a += n } /busy_b \(py_shares.py:[0-9]+\)/ { b += n }
	END { print a + 0, b + 0, t + 0 }' "$W/f.all")
echo "samples: busy_a $a, busy_b $b, in all $total"
check "at least 300 samples ($total)" test "$total" -ge 300
share() { awk -v x="$1" -v t="$total" -v want="$2" 'BEGIN {
	s = 100 * x / t; printf "%.1f %% (want %d +- 5)\n", s, want; exit !(s >= want - 5 && s <= want + 5) }'; }
check "busy_a's share: $(share "$a" 75)" share "$a" 75
check "busy_b's share: $(share "$b" 25)" share "$b" 25
check "the target still runs" kill -0 "$P"
eval "exec $fd>&-"
echo "summary: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
