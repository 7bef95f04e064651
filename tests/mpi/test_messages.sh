#!/usr/bin/env bash
# What rocattach-mpi says, on real processes under a real mpirun: messages that
# say what happened (issue 25). SIGCONT never ends or names a window; SIGTERM
# does and is named; a signal that finds every target ended is the job's end;
# a target that exits is not an error; the trace's attach calls agree with the
# report; the default tool's fix is whole; the hint to end a window without -d;
# --mpirun-pid refuses an mpirun spanning nodes, and for a pid not on this node hints
# at --mpi-job; the dry run shows each rank's job id; the timeline's bar is the
# tools' window and no label sits on a window line.
B=${1:?usage: test_messages.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-msg-test.XXXXXX)
chmod 755 "$W"
HERE=$(cd "$(dirname "$0")" && pwd)
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the SVG"; exit 77; }

# The rocattach-mpi rank of the launcher job whose mpirun is $1 (waits 10 s at most).
launcher_rank() {
	local p
	for _ in $(seq 200); do
		p=$(pgrep -f "^$LAUNCHER" -P "$1" | head -n 1)
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.05
	done
	return 1
}
wait_line() { # wait_line FILE REGEX: up to 15 s
	for _ in $(seq 300); do grep -Eq "$2" "$1" && return 0; sleep 0.05; done
	return 1
}

# 1. One 1 s window on both sides: the timeline's bar is the tools' window
#    (hand-over to hand-back, a bound on ROCm's side), the calls' armed waits
#    thin lines, no label on a window line; the trace's calls succeed.
start_both "$W/job1.out" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w1
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 1000 --report "$W/r1.json" \
	--timeline "$W/t1.svg" --trace "$W/t1.json" </dev/null >"$W/l1.out" 2>&1
rc=$?
check "1 s window: exit 0 (got $rc)" exit_ok "$rc" "$W/r1.json"
check "timeline: bars are the tools' windows, armed calls thin, no label on a line" \
	python3 "$HERE/svg_check.py" "$W/t1.svg" "$W/r1.json" 4
check "trace: every attach and detach call a success" jq -e '
	[.traceEvents[] | select(.cat == "call") | .args.status]
	| length == 8 and all(. == "ROCATTACH_STATUS_SUCCESS")' "$W/t1.json"

# 2. Several short windows: labels and lines still apart.
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" --windows 150:200:3 \
	--report "$W/r2.json" --timeline "$W/t2.svg" </dev/null >"$W/l2.out" 2>&1
rc=$?
check "3 windows: exit 0 (got $rc)" exit_ok "$rc" "$W/r2.json"
check "timeline of 3 windows: bars and labels right" \
	python3 "$HERE/svg_check.py" "$W/t2.svg" "$W/r2.json" 12

# 3. SIGCONT to a lone launcher rank ends nothing; its SIGTERM ends the window and
#    is named; a provisional report is written at once (a call in flight may outlast
#    the SIGKILL that follows), and the final one, written in time, replaces it.
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 30000 --report "$W/r3.json" \
	</dev/null >"$W/l3.out" 2>&1 &
L=$!
CHILDREN+=("$L")
R=$(launcher_rank "$L")
wait_line "$W/l3.out" "window 1: attached 4/4"
kill -CONT "$R"
sleep 1.5
check "SIGCONT: the window goes on" kill -0 "$R"
kill -TERM "$R"
wait "$L"
rc=$?
check "SIGTERM: exit 5 (got $rc)" test "$rc" -eq 5
check "SIGTERM: named as what ended the window, in the report" jq -e '
	.windows[0].stop_reason == "SIGTERM on rank 0" and .exit_code == 5
	and .exit_reason == "interrupted by SIGTERM" and .provisional == null
	and ([.windows[0].nodes[].targets[].state] | all(. == "detached"))' "$W/r3.json"
check "SIGTERM: the summary names it" grep -q "(exit 5: interrupted by SIGTERM)" "$W/l3.out"
check "SIGCONT: never named" eval '! grep -q SIGCONT "$W/l3.out"'
check "lone rank: the provisional report said, then replaced by the final one" \
	grep -q "provisional report written to $W/r3.json" "$W/l3.out"

# 4. Ctrl-C at the launcher's mpirun: Open MPI sends SIGCONT, then SIGTERM 1 s
#    later: the SIGTERM ends the window, in time to detach and write the report.
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 30000 --report "$W/r4.json" \
	</dev/null >"$W/l4.out" 2>&1 &
L=$!
CHILDREN+=("$L")
wait_line "$W/l4.out" "window 1: attached 4/4"
kill -INT "$L"
wait "$L"
check "Ctrl-C at mpirun: the report names SIGTERM, every target detached" jq -e '
	.windows[0].stop_reason == "SIGTERM on rank 0" and .exit_code == 5
	and ([.windows[0].nodes[].targets[].state] | all(. == "detached"))' "$W/r4.json"
check "Ctrl-C at mpirun: SIGCONT never named" eval '! grep -q SIGCONT "$W/l4.out" "$W/r4.json"'
check "the MPI job still runs" kill -0 "$JOB_PID"

# 5. No -d: the hint says how to end the window; Enter on mpirun's input does.
mkfifo "$W/in"
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" --report "$W/r5.json" \
	<"$W/in" >"$W/l5.out" 2>&1 &
L=$!
CHILDREN+=("$L")
exec 3>"$W/in"
check "no -d: the hint to end the window" wait_line "$W/l5.out" \
	"window 1 has no duration \(-d\): press Enter to end it"
echo >&3
exec 3>&-
wait "$L"
rc=$?
check "no -d: Enter ended the window, exit 0 (got $rc)" exit_ok "$rc" "$W/r5.json"
check "no -d: stop reason enter" jq -e '.windows[0].stop_reason == "enter"' "$W/r5.json"
# (said 2 s after the end of input, when no signal came meanwhile: a Ctrl-C at mpirun
# closes the input too, and its SIGTERM follows 1 s later)
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" --max-window 3000 \
	</dev/null >"$W/l5b.out" 2>&1
check "no -d, input closed: said, with what to do instead" grep -q \
	"standard input closed: Enter cannot end the window; send SIGUSR1 to mpirun" "$W/l5b.out"

# 6. The default tool (no -t, none in the environment) is rocprofv3's, looked for
#    under ROCM_PATH before any target is touched: missing here, one whole line says
#    where it looked and what to do (the line was cut at "-t /path/to" once).
stop_job
start_both "$W/job6.out" || exit 1
env -u ROCPROF_ATTACH_TOOL_LIBRARY ROCM_PATH="$W/no-rocm" mpirun -np 1 "$LAUNCHER" \
	--mpirun-pid "$JOB_PID" -d 2000 --report "$W/r6.json" </dev/null >"$W/l6.out" 2>&1
rc=$?
check "default tool: exit 4 (got $rc)" test "$rc" -eq 4
check "default tool: the line says where it looked and the fix, whole" grep -q \
	"rocprofv3's tool is not installed: looked for $W/no-rocm/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so and .so.1 .*give the tool with -t /path/to/libtool.so$" \
	"$W/l6.out"
check "default tool: nothing touched, no report" test ! -e "$W/r6.json"
for p in $(job_ranks "$JOB_PID"); do
	check "default tool: rank $p untraced" grep -q "TracerPid:	0" "/proc/$p/status"
done
stop_job

# 7. Targets that exit during the window: exit 0 (job ended), no error line,
#    counted as attached, and the trace's attach calls are successes.
mpirun -np 2 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT" "$MPI_TARGET" --seconds 2 : \
	-np 2 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$DOUBLE" "$MPI_TARGET" --seconds 2 \
	</dev/null >"$W/job7.out" 2>&1 &
JOB_PID=$!
CHILDREN+=("$JOB_PID")
wait_ready "$W/job7.out" 4 || exit 1
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 8000 --report "$W/r7.json" \
	--trace "$W/t7.json" </dev/null >"$W/l7.out" 2>&1
rc=$?
check "targets exit mid-window: exit 0 (got $rc)" exit_ok "$rc" "$W/r7.json"
check "targets exit mid-window: no error line" eval '! grep -q "error" "$W/l7.out"'
check "targets exit mid-window: job ended, all 4 attached" jq -e '
	.exit_reason == "job ended" and .summary.attached == 4 and .summary.failed == 0' "$W/r7.json"
check "targets exit mid-window: the summary's node row, 4 attached" grep -Eq \
	"^$(hostname) +4 +4 +0 " "$W/l7.out"
check "targets exit mid-window: the trace's attach calls are successes" jq -e '
	[.traceEvents[] | select(.cat == "call" and .name == "attach call") | .args.status]
	| length == 4 and all(. == "ROCATTACH_STATUS_SUCCESS")' "$W/t7.json"
wait "$JOB_PID"

# 8. The job's end as Slurm does it: SIGCONT and SIGTERM to the targets and to the
#    launcher at once. The targets end: the job ended (exit 0), SIGTERM said.
start_both "$W/job8.out" || exit 1
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 30000 --report "$W/r8.json" \
	</dev/null >"$W/l8.out" 2>&1 &
L=$!
CHILDREN+=("$L")
R=$(launcher_rank "$L")
wait_line "$W/l8.out" "window 1: attached 4/4"
RANKS=$(job_ranks "$JOB_PID")
# shellcheck disable=SC2086
kill -CONT "$R" $RANKS
# shellcheck disable=SC2086
kill -TERM "$R" $RANKS
wait "$L"
rc=$?
# The SIGTERM reaches both at once: a target's detach at the stop either found it gone
# or handed its tools back while it still ran. That race is not ours to decide; the
# account must match the records. Every target gone: the job ended (exit 0). One
# detached alive: the window was cut short by the SIGTERM (exit 5).
alive=$(jq '[.windows[0].nodes[].targets[] | select(.state == "detached")] | length' "$W/r8.json")
echo "job's end: $alive targets were detached before they ended"
if [ "${alive:-1}" -eq 0 ]; then
	check "job's end: exit 0 (got $rc)" test "$rc" -eq 0
	check "job's end: the report says so, the window names SIGTERM" jq -e '
		.exit_code == 0 and .exit_reason == "job ended" and .stop_reason == "job ended"
		and .windows[0].stop_reason == "SIGTERM on rank 0"' "$W/r8.json"
	check "job's end: said plainly" grep -q \
		"SIGTERM received, and every target ended: the job ended" "$W/l8.out"
else
	check "job's end, a target detached alive: exit 5 (got $rc)" test "$rc" -eq 5
	check "job's end, a target detached alive: the report says interrupted, SIGTERM" jq -e '
		.exit_code == 5 and .exit_reason == "interrupted by SIGTERM"
		and .windows[0].stop_reason == "SIGTERM on rank 0"' "$W/r8.json"
fi
check "job's end: SIGCONT never named" eval '! grep -q SIGCONT "$W/l8.out"'
stop_job

# 9. --mpirun-pid and an mpirun whose ranks span nodes: refused, naming --mpi-job=ID.
#    A stand-in mpirun (its comm is mpirun) whose rank says 4 ranks, 2 on this node.
mkdir -p "$W/bin"
printf '#!/bin/bash\nenv OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_SIZE=$1 PMIX_NAMESPACE=fakejob sleep 60\n' \
	>"$W/bin/mpirun"
chmod 755 "$W/bin/mpirun"
"$W/bin/mpirun" 2 &
FAKE=$!
CHILDREN+=("$FAKE")
sleep 0.3
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$FAKE" --dry-run </dev/null >"$W/l9.out" 2>&1
rc=$?
check "mpirun over nodes: exit 3 (got $rc)" test "$rc" -eq 3
check "mpirun over nodes: refused, naming --mpi-job=ID" grep -q \
	"\-\-mpirun-pid $FAKE: this mpirun runs ranks on several nodes (4 ranks, 2 on this node).*--mpi-job=fakejob" \
	"$W/l9.out"
pkill -P "$FAKE"
wait "$FAKE"
"$W/bin/mpirun" 4 &
FAKE=$!
CHILDREN+=("$FAKE")
sleep 0.3
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$FAKE" --dry-run </dev/null >"$W/l9b.out" 2>&1
rc=$?
check "mpirun on one node: its rank listed, exit 0 (got $rc)" test "$rc" -eq 0
check "mpirun on one node: found 1 target" grep -q "found 1 target" "$W/l9b.out"
check "the dry run shows the rank's job id (what --mpi-job takes)" grep -Eq \
	"^  [0-9]+ +0 +[0-9]+  sleep +fakejob +" "$W/l9b.out"
pkill -P "$FAKE"
wait "$FAKE"
# 9c. --mpirun-pid of a process not on this node (an mpirun on a head node): the hint.
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$FAKE" --dry-run </dev/null >"$W/l9c.out" 2>&1
rc=$?
check "mpirun not on this node: exit 3 (got $rc)" test "$rc" -eq 3
check "mpirun not on this node: the hint names --mpi-job=ID" grep -q \
	"process $FAKE does not exist: check --mpirun-pid (PIDs are this node's; for an mpirun on another node, such as a head node, select its job with --mpi-job=ID)" \
	"$W/l9c.out"

# 10. An output in a missing directory: one line that reads as a sentence (it was
#     "directory '/x' No such file or directory").
mpirun -np 1 "$LAUNCHER" --exe x --report /nonexistent-dir/r.json </dev/null >"$W/l10.out" 2>&1
rc=$?
check "missing directory: exit 2 (got $rc)" test "$rc" -eq 2
check "missing directory: said plainly" grep -q \
	"directory '/nonexistent-dir' does not exist: create it first" "$W/l10.out"
check "missing directory: no cause without its colon" eval \
	"! grep -Eq \"directory '[^']*' [A-Z]\" \"\$W/l10.out\""

rm -rf "$W"
finish
