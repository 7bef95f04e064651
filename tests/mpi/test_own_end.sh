#!/usr/bin/env bash
# Each target keeps its own end (issue 30), under a real mpirun on this machine, both
# target sides in one job (2 ranks with our agent, 2 with ROCm's double): the launcher
# rank stopped (SIGSTOP) mid-window holds no tool. Every target detaches its tools by
# itself by the planned stop + --call-timeout, stays untraced and keeps working; after
# SIGCONT the run ends saying so (detach-failed, "self_detached", exit 4, never ok). A
# reattach (the next run) works, and a run left alone never ends a window by itself.
B=${1:?usage: test_own_end.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-own-end-test.XXXXXX)
chmod 755 "$W"
D_MS=2000
CT_MS=500
SLACK_MS=1000

# ns=... of the nth line of event $2 in the tool log of pid $3 under dir $1.
event_ns() {
	cat "$1"/rocattach-tool.*."$3".log 2>/dev/null | grep "^$2 " | sed -n "${4:-1}p" |
		sed 's/.* ns=\([0-9]*\).*/\1/'
}

# Every one of the 4 targets has n lines of event $2 under dir $1 (10 s at most).
wait_events() {
	for _ in $(seq 200); do
		local all=1
		for p in "${RANKS[@]}"; do
			[ "$(events "$1" "$2" "$p")" -ge "$3" ] || all=0
		done
		[ "$all" -eq 1 ] && return 0
		sleep 0.05
	done
	return 1
}

start_both "$W/job.out" || exit 1
RANKS=($(job_ranks "$JOB_PID"))
check "job has 4 ranks" test "${#RANKS[@]}" -eq 4

echo "== 1. the launcher rank stopped mid-window"
export ROCPROF_OUTPUT_PATH=$W/w1
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d "$D_MS" \
	--call-timeout "$CT_MS" --report "$W/r1.json" </dev/null >"$W/l1.out" 2>&1 &
L=$!
CHILDREN+=("$L")
for _ in $(seq 300); do grep -q "attached 4/4" "$W/l1.out" && break; sleep 0.05; done
check "window: attached 4/4" grep -q "attached 4/4" "$W/l1.out"
RANK=$(pgrep -f "^$LAUNCHER" -P "$L" | head -n 1)
check "the launcher rank found" test -n "$RANK"
kill -STOP "$RANK"
check "every tool detached while the launcher is stopped" wait_events "$W/w1" tool_detach 1
for p in "${RANKS[@]}"; do
	check "rank $p: untraced" grep -q "TracerPid:	0" "/proc/$p/status"
	check "rank $p: running" test "$(sed 's/.*) //' "/proc/$p/stat" | cut -c1)" != T
done
kill -CONT "$RANK"
wait "$L"
rc=$?
check "stopped launcher: exit 4 (got $rc)" test "$rc" -eq 4
# The planned stop: the window's start (the report's, the launcher's clock) + -d.
START=$(jq -r '.windows[0].start_ns' "$W/r1.json")
check "stopped launcher: the window's start is known" test "$START" -gt 0
for p in "${RANKS[@]}"; do
	d=$(event_ns "$W/w1" tool_detach "$p")
	ms=$(((d - START) / 1000000 - D_MS - CT_MS))
	echo "rank $p: tool_detach $ms ms after the planned stop + the deadline"
	check "rank $p: detached by itself, not before the planned stop + the deadline" \
		test "$ms" -ge -2
	check "rank $p: by the planned stop + the deadline (+ $SLACK_MS ms)" test "$ms" -le "$SLACK_MS"
done
check "stopped launcher: every target detach-failed, self_detached" jq -e \
	'[.windows[0].nodes[].targets[] | .state == "detach-failed" and .self_detached] ==
	 [true,true,true,true] and .summary.failed == 4' "$W/r1.json"
SAID='the target detached its tools itself at [0-9:.]+, [0-9]+ ms after the planned stop: no detach came by then'
check "stopped launcher: the message says when and why" jq -e --arg re "$SAID" \
	'[.windows[0].nodes[].targets[] | .message | test($re)] | all' "$W/r1.json"
check "stopped launcher: the record says when (the tools' hand-back)" jq -e \
	'[.windows[0].nodes[].targets[] | .detach.tool_ns != null] | all' "$W/r1.json"
check "stopped launcher: the summary says it" grep -q "detach-failed: process [0-9]*: the target detached its tools itself" "$W/l1.out"
check "stopped launcher: never ok" sh -c "! grep -q ': ok' '$W/l1.out'"
for p in "${RANKS[@]}"; do
	check "rank $p: one tool_detach" test "$(events "$W/w1" tool_detach "$p")" -eq 1
done

echo "== 2. the next run attaches again, and a run left alone never detaches by itself"
export ROCPROF_OUTPUT_PATH=$W/w2
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" --windows 200:1000:2 \
	--call-timeout "$CT_MS" --report "$W/r2.json" </dev/null >"$W/l2.out" 2>&1
rc=$?
check "next run: exit 0 (got $rc)" exit_ok "$rc" "$W/r2.json"
[ "$rc" -eq 0 ] || tail -n 20 "$W/l2.out"
check "next run: every target detached, twice, none self_detached" jq -e \
	'[.windows[].nodes[].targets[] | .state == "detached" and (.self_detached | not)] ==
	 [true,true,true,true,true,true,true,true]' "$W/r2.json"
sleep $(((CT_MS + 500) / 1000 + 1))
for p in "${RANKS[@]}"; do
	check "rank $p: two windows, two tool_detach, none after" \
		test "$(events "$W/w2" tool_attach "$p"):$(events "$W/w2" tool_detach "$p")" = 2:2
done
stop_job
rm -rf "$W"
finish
