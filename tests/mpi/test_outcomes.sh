#!/usr/bin/env bash
# The outcomes of a window, on both target sides (our agent, and ROCm's double):
#  1. every target held by another attacher (our rocattach on our agent, a tracer on
#     ROCm's listener): the window ends at once, says why with a count per cause, and
#     a later window still happens;
#  2. the tool list differs from the first attach's on ROCm's side: the same, with its
#     own cause;
#  3. a tool that declines in some ranks: exit 0, "declined on N", state "declined";
#     every target declined: exit 4; on ROCm's side declining cannot be told (rc 6);
#  4. a reattach where a library failed at the first attach: every failure line names
#     its cause, and the figures agree with the records.
B=$(realpath "${1:?usage: test_outcomes.sh BUILD_DIR}")
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-outcomes-test.XXXXXX)
# The run's files go at the end, unless KEEP=1 keeps them for a look.
trap 'cleanup; [ "${KEEP:-0}" = 1 ] || rm -rf "$W"' EXIT
SDK_C=$B/tests/tools/libsdk-tool-c.so

# elapsed_ms T0: milliseconds since T0 (now's form).
elapsed_ms() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%d", (b - a) * 1000 }'; }

# hold_all: every rank of JOB_PID held by another attacher; HOLD has their pids.
hold_all() {
	local p tid
	HOLD=()
	for p in $(job_ranks "$JOB_PID"); do
		if grep -q librocattach-agent "/proc/$p/maps"; then
			"$B/bin/rocattach" -p "$p" -t "$TOOL" -d 30000 --attach-children=false \
				</dev/null >"$W/hold.$p.out" 2>&1 &
		else
			# As AMD's attacher does: a tracer on the listener for the whole window.
			tid=$(grep -lx rocp-bg-attach /proc/"$p"/task/*/comm | head -n 1 | cut -d/ -f5)
			strace -p "$tid" -o /dev/null 2>/dev/null &
		fi
		HOLD+=($!)
		CHILDREN+=($!)
	done
	for _ in $(seq 100); do # each rocattach says "attached" once its window is open
		[ "$(cat "$W"/hold.*.out 2>/dev/null | grep -c "attached to")" -ge 2 ] && break
		sleep 0.05
	done
	sleep 0.3
}
release_all() {
	kill -INT "${HOLD[@]}" 2>/dev/null
	wait "${HOLD[@]}" 2>/dev/null
}

# 1. Held, both sides: -d 8000 ends far sooner; window 2 still comes, and ends at once too.
start_both "$W/job1.out" || exit 1
hold_all
export ROCPROF_OUTPUT_PATH=$W/w1
t0=$(now)
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" --windows 100:8000:2 \
	--report "$W/r1.json" </dev/null >"$W/l1.out" 2>&1
rc=$? ms=$(elapsed_ms "$t0")
release_all
check "held: exit 4 (every target failed; got $rc)" test "$rc" -eq 4
loose "held: two windows of -d 8000 end in under 6 s ($ms ms)" test "$ms" -lt 6000
check "held: window 1 says why, a count per cause" grep -q \
	'window 1: nothing attached (4 held by another attacher): the window ends now' "$W/l1.out"
check "held: window 2 (nothing left to try) ends at once too, and says why" grep -q \
	'window 2: nothing attached (no target left to try: each failed or ended in an earlier' \
	"$W/l1.out"
check "held: window 1 says the next one starts as planned" grep -q \
	'window 1: nothing attached .*; the next one starts as planned' "$W/l1.out"
check "report: two windows, each stopped as nothing attached" jq -e \
	'.windows | length == 2 and all(.stop_reason == "nothing attached")' "$W/r1.json"
check "report: no target attached, every one failed" jq -e \
	'.summary.attached == 0 and .summary.failed == 4' "$W/r1.json"
check "the job survived the held windows" test "$(job_ranks "$JOB_PID" | wc -l)" -eq 4

# 2. The tool list differs from the first attach's, on ROCm's side (its rule: our agent
#    takes another list between windows, ptrace.stacks section 8): ends at once too.
stop_job
mpirun -np 4 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$DOUBLE" "$MPI_TARGET" </dev/null \
	>"$W/job2.out" 2>&1 &
JOB_PID=$!
CHILDREN+=("$JOB_PID")
wait_ready "$W/job2.out" 4 || exit 1
export ROCPROF_OUTPUT_PATH=$W/w2
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 200 </dev/null \
	>"$W/l2a.out" 2>&1
check "differ: the first attach is clean" grep -q 'exit 0: ok' "$W/l2a.out"
t0=$(now)
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$SDK_C" -d 8000 --report "$W/r2.json" \
	</dev/null >"$W/l2.out" 2>&1
rc=$? ms=$(elapsed_ms "$t0")
check "differ: exit 4 (got $rc)" test "$rc" -eq 4
loose "differ: -d 8000 ends in under 5 s ($ms ms, mpirun's start included)" test "$ms" -lt 5000
check "differ: the line names the cause for all 4" grep -q \
	"window 1: nothing attached (4 the tool or rocprofv3's options differ from the first" \
	"$W/l2.out"
stop_job

# 3. Declined in half the ranks (our agent): exit 0, declined on 2; all declined: exit 4.
mpirun -np 2 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT" "$MPI_TARGET" : \
	-np 2 env ROCP_TOOL_ATTACH=1 ROCP_TEST_SDK_DECLINE=sdk-c LD_PRELOAD="$AGENT" \
	"$MPI_TARGET" </dev/null >"$W/job3.out" 2>&1 &
JOB_PID=$!
CHILDREN+=("$JOB_PID")
wait_ready "$W/job3.out" 4 || exit 1
export ROCPROF_OUTPUT_PATH=$W/w3
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$SDK_C" -d 300 --report "$W/r3.json" \
	</dev/null >"$W/l3.out" 2>&1
rc=$?
check "declined on 2: exit 0 (got $rc)" exit_ok "$rc" "$W/r3.json"
check "declined on 2: the summary says so" grep -q \
	'4 targets: 2 attached and detached, 0 failed, declined on 2 (exit 0: ok)' "$W/l3.out"
check "report: 2 declined, 2 detached, as the summary counts" jq -e \
	'[.windows[0].nodes[].targets[].state] | sort == ["declined","declined","detached",
	 "detached"]' "$W/r3.json"
check "report: summary.declined 2, failed 0" jq -e \
	'.summary.declined == 2 and .summary.failed == 0 and .summary.attached == 2' "$W/r3.json"
check "report: the declined ones say so per tool" jq -e \
	'[.windows[0].nodes[].targets[] | select(.state == "declined") | .tools[0]] ==
	 ["declined","declined"]' "$W/r3.json"
check "report: the skew is over the 2 attached" jq -e '.windows[0].skew.targets == 2' \
	"$W/r3.json"
stop_job
mpirun -np 2 env ROCP_TOOL_ATTACH=1 ROCP_TEST_SDK_DECLINE=sdk-c LD_PRELOAD="$AGENT" \
	"$MPI_TARGET" </dev/null >"$W/job4.out" 2>&1 &
JOB_PID=$!
CHILDREN+=("$JOB_PID")
wait_ready "$W/job4.out" 2 || exit 1
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$SDK_C" -d 300 --report "$W/r4.json" \
	</dev/null >"$W/l4.out" 2>&1
rc=$?
check "declined everywhere: exit 4 (got $rc)" test "$rc" -eq 4
check "declined everywhere: the reason says so" grep -q \
	'declined on 2 (exit 4: the tool declined on every target: nothing attached)' "$W/l4.out"
check "report: stop reason tool failed, both declined" jq -e \
	'.stop_reason == "tool failed" and .summary.declined == 2' "$W/r4.json"
stop_job
# ROCm's side cannot tell a tool that declined from one with no tool_attach (rc 6).
mpirun -np 2 env ROCP_TOOL_ATTACH=1 ROCP_TEST_SDK_DECLINE=sdk-c LD_PRELOAD="$DOUBLE" \
	"$MPI_TARGET" </dev/null >"$W/job5.out" 2>&1 &
JOB_PID=$!
CHILDREN+=("$JOB_PID")
wait_ready "$W/job5.out" 2 || exit 1
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$SDK_C" -d 300 --report "$W/r5.json" \
	</dev/null >"$W/l5.out" 2>&1
rc=$?
check "ROCm's side, declined: exit 4, told as the failure it returns (got $rc)" test "$rc" -eq 4
check "report: ROCm's side says attach-failed, never declined" jq -e \
	'[.windows[0].nodes[].targets[] | .state] == ["attach-failed","attach-failed"] and
	 .summary.declined == 0' "$W/r5.json"
stop_job

# 4. A reattach where a library of the list failed at the first attach (our agent).
start_job 2 "$W/job6.out" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w6
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$SDK_C:libnotthere-rocattach.so" \
	--windows 100:200:2 --report "$W/r6.json" </dev/null >"$W/l6.out" 2>&1
rc=$?
check "reattach with a failed library: exit 4 (got $rc)" test "$rc" -eq 4
check "reattach: no failure line without its cause" bash -c '! grep -q "(no message)" "$1"' \
	_ "$W/l6.out"
check "reattach: the failure names the library" test "$(grep -c \
	'tool failed: reattached; not in this process since its first attach .*libnotthere-rocattach.so' \
	"$W/l6.out")" -eq 2
check "figures: the headline names the failed that were attached" grep -q \
	'0 attached and detached, 2 failed (2 of them attached and detached' "$W/l6.out"
check "figures: node row attached 2, as the report's node" bash -c \
	'grep -Eq "^vm +2 +2 +2 +0 " "$1" || grep -Eq "^[^ ]+ +2 +2 +2 +0 " "$1"' _ "$W/l6.out"
check "report: node attached 2 = detached records, failed 2" jq -e \
	'.windows[1].nodes[0] | .attached == 2 and .failed == 2 and
	 ([.targets[] | select(.state == "detached")] | length) == 2' "$W/r6.json"
check "report: the detach skew is over the detached targets only" jq -e \
	'.windows[1] | .skew.targets == ([.nodes[].targets[] | select(.state == "detached")]
	 | length)' "$W/r6.json"
# rocattach's reattach: its line ends with the cause, not "attached: " and nothing.
P0=$(job_ranks "$JOB_PID" | head -n 1)
"$B/bin/rocattach" -p "$P0" -t "$SDK_C:libnotthere-rocattach.so" -d 100 \
	--attach-children=false </dev/null >"$W/c6.out" 2>&1
rc=$?
check "rocattach reattach with a failed library: exit 4 (got $rc)" test "$rc" -eq 4
check "rocattach reattach: the line names the library" grep -q \
	"the others attached: not in this process after the attach (a reattach loads no library): libnotthere-rocattach.so$" \
	"$W/c6.out"
stop_job

echo "passed $PASSED, failed $FAILED"
[ "$FAILED" -eq 0 ]
