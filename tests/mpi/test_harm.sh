#!/usr/bin/env bash
# Harm reported as harm by rocattach-mpi (issue 21), under a real mpirun on this
# machine, both target sides in one job (2 ranks with our agent, 2 with ROCm's double):
# stopped ranks are refused (exit 4) while the others' windows keep their length; a
# rank stopped during the window is reported stopped with its tools attached, the
# launcher ending on time; a tool that crashes its targets fails them with the signal
# named; a SIGTERM while every attach hangs in the tool is answered at once. Every case
# names its own job by its mpirun.
B=${1:?usage: test_harm.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-harm-test.XXXXXX)
chmod 755 "$W"
FAULT_TOOL=$B/lib/libra_fault_tool.so
[ -e "$FAULT_TOOL" ] || { echo "FAIL: no $FAULT_TOOL: build the tests"; exit 1; }

state_of() { cat "/proc/$1/stat" 2>/dev/null | sed 's/.*) //' | cut -c1; }

echo "== 1. two ranks stopped before the attach (one per side)"
start_both "$W/job1.out" || exit 1
RANKS=($(job_ranks "$JOB_PID"))
check "job has 4 ranks" test "${#RANKS[@]}" -eq 4
STOPPED=("${RANKS[0]}" "${RANKS[3]}")
kill -STOP "${STOPPED[@]}"
sleep 0.2
export ROCPROF_OUTPUT_PATH=$W/w1
T0=$(now)
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 1000 --call-timeout 1000 \
	--report "$W/r1.json" </dev/null >"$W/l1.out" 2>&1
rc=$?
check "stopped ranks: exit 4 (got $rc)" test "$rc" -eq 4
within "$T0" 10 "stopped ranks: the launcher ended on time"
check "stopped ranks: 2 stopped, 2 detached, failed 2" jq -e \
	'([.windows[0].nodes[].targets[].state] | sort == ["detached","detached","stopped","stopped"])
	 and .summary.stopped == 2 and .summary.failed == 2' "$W/r1.json"
check "stopped ranks: the message, exactly" jq -e \
	'[.windows[0].nodes[].targets[] | select(.state == "stopped")] | all(.message ==
	 "process \(.pid) is stopped (SIGSTOP/SIGTSTP): not attached; resume it with kill -CONT")' \
	"$W/r1.json"
loose "stopped ranks: the healthy windows keep their length" jq -e \
	'.windows[0].length.off == false and .windows[0].length.max_ns < 1100000000' "$W/r1.json"
for p in "${STOPPED[@]}"; do
	check "rank $p still stopped, untraced" test "$(state_of "$p")" = T
	check "rank $p untraced" grep -q "TracerPid:	0" "/proc/$p/status"
done
kill -CONT "${STOPPED[@]}"

echo "== 2. a rank stopped during the window"
export ROCPROF_OUTPUT_PATH=$W/w2
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 1500 --call-timeout 1000 \
	--report "$W/r2.json" </dev/null >"$W/l2.out" 2>&1 &
L=$!
for _ in $(seq 300); do grep -q "attached 4/4" "$W/l2.out" && break; sleep 0.05; done
check "window: attached 4/4" grep -q "attached 4/4" "$W/l2.out"
kill -STOP "${RANKS[1]}"
T0=$(now)
wait "$L"
rc=$?
check "stopped in the window: exit 4 (got $rc)" test "$rc" -eq 4
within "$T0" 6 "stopped in the window: ended within the window and the call timeout"
check "stopped in the window: reported stopped, tools still attached" jq -e --argjson p \
	"${RANKS[1]}" '[.windows[0].nodes[].targets[] | select(.pid == $p)][0]
	 | .state == "stopped" and (.message | test("tools still attached"))' "$W/r2.json"
check "stopped in the window: the other three detached" jq -e --argjson p "${RANKS[1]}" \
	'[.windows[0].nodes[].targets[] | select(.pid != $p) | .state] == ["detached","detached","detached"]' \
	"$W/r2.json"
check "stopped in the window: untraced" grep -q "TracerPid:	0" "/proc/${RANKS[1]}/status"
kill -CONT "${RANKS[1]}"
kill -TERM "$JOB_PID"
wait "$JOB_PID"

echo "== 3. a tool whose rocprofiler_configure crashes its targets"
start_both "$W/job3.out" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w3
ROCP_FAULT_TOOL=configure-segv mpirun -np 1 -x ROCP_FAULT_TOOL "$LAUNCHER" \
	--mpirun-pid "$JOB_PID" -t "$FAULT_TOOL" -d 500 --report "$W/r3.json" \
	</dev/null >"$W/l3.out" 2>&1
rc=$?
check "crashing tool: exit 4 (got $rc)" test "$rc" -eq 4
check "crashing tool: a target attach-failed with the signal, none called exited by it" jq -e \
	'[.windows[0].nodes[].targets[] | select(.signal == "SIGSEGV")] | length >= 1
	 and all(.state == "attach-failed")' "$W/r3.json"
check "crashing tool: the summary says the signal in one line" grep -q \
	"attach-failed: process [0-9]* was killed by SIGSEGV during the attach call" "$W/l3.out"
wait "$JOB_PID" 2>/dev/null

echo "== 4. SIGTERM while the attaches hang in the tool: answered at once, ended by the deadline"
start_both "$W/job4.out" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w4
# A singleton launcher (no mpirun of its own): the signal goes to it alone.
ROCP_FAULT_TOOL=attach-hang "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$FAULT_TOOL" -d 5000 \
	--call-timeout 3000 --report "$W/r4.json" </dev/null >"$W/l4.out" 2>&1 &
L=$!
CHILDREN+=("$L")
sleep 1.5
T0=$(now)
kill -TERM "$L"
# The window holds while the calls run (each target on its own clock): the SIGTERM stops it.
LINE="4 attach calls still running after the stop: they end by their deadline"
for _ in $(seq 40); do grep -q "$LINE" "$W/l4.out" && break; sleep 0.05; done
within "$T0" 2 "hung attaches: SIGTERM answered within 2 s"
check "hung attaches: the line says so" grep -q "$LINE" "$W/l4.out"
wait "$L"
rc=$?
within "$T0" 8 "hung attaches: ended within the deadline and slack"
check "hung attaches: exit 5, interrupted (got $rc)" test "$rc" -eq 5
check "hung attaches: every target failed, timed out" jq -e \
	'[.windows[0].nodes[].targets[] | .state == "attach-failed" and .timed_out] == [true,true,true,true]' \
	"$W/r4.json"
for p in $(job_ranks "$JOB_PID"); do
	check "hung attaches: rank $p alive, untraced" grep -q "TracerPid:	0" "/proc/$p/status"
done
kill -TERM "$JOB_PID"
wait "$JOB_PID" 2>/dev/null
rm -rf "$W"
finish
