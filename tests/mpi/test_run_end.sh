#!/usr/bin/env bash
# How a rocattach-mpi run ends, under a real mpirun on this machine, on both target
# sides (our agent and ROCm's, the test double tests/rocm/, in one job): the job ends
# mid-series (exit 0, stop reason "job ended", targets "died_attached" or "exited", no
# window after, the summary saying all died while attached when they did),
# a tool no target can attach ends the run at the first attach (exit 4, one line,
# well before -d), the summary comes last on the progress's stream, and --trace
# agrees with --report. Every case names its own job by its mpirun.
B=${1:?usage: test_run_end.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-end-test.XXXXXX)
chmod 755 "$W"

# 1. --trace beside --report in one window: the same times, both sides labelled.
start_both "$W/job1.out" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w1
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 300 --report "$W/r1.json" \
	--trace "$W/t1.json" </dev/null >"$W/l1.out" 2>"$W/l1.err"
rc=$?
check "window with --trace: exit 0 (got $rc)" exit_ok "$rc" "$W/r1.json"
check "trace: parses, trace-event form" jq -e \
	'(.traceEvents | type) == "array" and .displayTimeUnit == "ns"
	 and (.otherData.clock | test("CLOCK_REALTIME"))' "$W/t1.json"
check "trace: the node is a named process" jq -e --arg h "$(hostname)" \
	'[.traceEvents[] | select(.ph == "M" and .name == "process_name") | .args.name]
	 | index($h) != null' "$W/t1.json"
check "trace: window 1 at the report's start and stop" jq -e --slurpfile r "$W/r1.json" \
	'[.traceEvents[] | select(.ph == "X" and .cat == "window")] | length == 1 and
	 ((.[0].ts * 1000 - $r[0].windows[0].start_ns) | fabs) < 1000 and
	 (((.[0].ts + .[0].dur) * 1000 - $r[0].windows[0].stop_ns) | fabs) < 1000' "$W/t1.json"
# Every attached target has its tools' span from the report's tool_ns to tool_ns (1 us).
check "trace: every target's tools span agrees with the report" jq -e --slurpfile r "$W/r1.json" '
	[.traceEvents[] | select(.ph == "X" and .cat == "tools")] as $ev
	| [$r[0].windows[0].nodes[].targets[]] | length == 4 and all(. as $t
	  | [$ev[] | select(.tid == $t.pid)] | length == 1 and (.[0] as $e
	    | (($e.ts * 1000 - $t.attach.tool_ns) | fabs) < 1000
	      and ((($e.ts + $e.dur) * 1000 - $t.detach.tool_ns) | fabs) < 1000
	      and $e.args.tool_ns_kind == $t.attach.tool_ns_kind))' "$W/t1.json"
check "trace: ROCm's side labelled bounds, our agent's measured" jq -e '
	[.traceEvents[] | select(.cat == "tools") | .args.tool_ns_kind] | sort
	== ["bound","bound","measured","measured"]' "$W/t1.json"
check "trace: attach and detach calls on the calls tracks, as the report's" jq -e \
	--slurpfile r "$W/r1.json" '
	[.traceEvents[] | select(.ph == "X" and .cat == "call")] as $ev
	| [$r[0].windows[0].nodes[].targets[]] | all(. as $t
	  | ([$ev[] | select(.tid == $t.pid + 4194304 and .name == "attach call")][0]
	     | ((.ts * 1000 - $t.attach.start_ns) | fabs) < 1000)
	  and ([$ev[] | select(.tid == $t.pid + 4194304 and .name == "detach call")][0]
	     | ((.ts * 1000 - $t.detach.start_ns) | fabs) < 1000))' "$W/t1.json"
check "trace: no failure" jq -e '[.traceEvents[] | select(.ph == "i")] | length == 0' "$W/t1.json"
# 6. The summary is last, on the stream of the progress (stdout), after every progress line.
check "progress and summary on stdout, the summary last" awk '
	/^rocattach-mpi: (found|window|trace|report)/ { last = NR }
	/^rocattach-mpi: 1 node, 4 targets: 4 attached and detached/ { head = NR }
	END { exit !(head && last && last < head) }' "$W/l1.out"
check "no progress line on stderr" eval '! grep -q "^rocattach-mpi: window" "$W/l1.err"'

# 2. The job ends mid-series: many windows, the job stopped during the second; the
#    launcher ends soon after (the series would take over 40 s more), exit 0.
export ROCPROF_OUTPUT_PATH=$W/w2
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" --windows 200:300:100 \
	--report "$W/r2.json" --trace "$W/t2.json" </dev/null >"$W/l2.out" 2>&1 &
L=$!
for _ in $(seq 300); do grep -q "window 2: attached" "$W/l2.out" && break; sleep 0.05; done
check "series: window 2 attached" grep -q "window 2: attached 4/4" "$W/l2.out"
kill -TERM "$JOB_PID"
wait "$JOB_PID"
T0=$(now)
for _ in $(seq 200); do kill -0 "$L" 2>/dev/null || break; sleep 0.05; done
check "series: the launcher ended within 10 s of the job" elapsed_below "$T0" 10
kill -TERM "$L" 2>/dev/null
wait "$L"
rc=$?
check "series: exit 0 (got $rc)" test "$rc" -eq 0
check "series: stop reason job ended, in the report" jq -e \
	'.stop_reason == "job ended" and .exit_code == 0 and .exit_reason == "job ended"
	 and (.windows | length) < 10' "$W/r2.json"
# Killed in window 2 they died with their tools attached; in the gap after it, they exited.
check "series: every target died attached or exited, none failed" jq -e \
	'[.windows[-1].nodes[].targets[].state] as $s
	 | ($s | length == 4 and all(. == "died_attached" or . == "exited"))
	 and .summary.failed == 0 and .summary.exited + .summary.died_attached == 4
	 and (.errors | length) == 0' "$W/r2.json"
check "series: summary says job ended, not failed" grep -Eq \
	"4 targets, [0-9]* windows: [0-9]* attached and detached( \([0-9] exited after\))?, 0 failed(, [0-9] exited)?(, [0-9] died with tools attached)? \(exit 0: job ended\)" \
	"$W/l2.out"
if jq -e '.summary.died_attached == 4' "$W/r2.json" >/dev/null; then
	check "series: all died while attached, said plainly" grep -q \
		"^all 4 targets died while attached: " "$W/l2.out"
fi
check "series: the trace marks the deaths and exits, no failure" jq -e \
	'[.traceEvents[] | select(.ph == "i")] | length == 4
	 and all(.cat == "exit" or .cat == "died_attached")' "$W/t2.json"

# 3. A tool no target can attach ends the run at the first attach: exit 4, well before -d
#    (20 s), one line naming the tool and the cause. Missing file (the library's check),
#    then a tool that fails initialize (status 6 from both sides).
start_both "$W/job3.out" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w3
T0=$(now)
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$W/no-such-tool.so" -d 20000 \
	--report "$W/r3.json" </dev/null >"$W/l3.out" 2>&1
rc=$?
check "missing tool: exit 4 (got $rc)" test "$rc" -eq 4
check "missing tool: ended well before -d" elapsed_below "$T0" 10
check "missing tool: one line naming the tool and the cause" test "$(grep -c \
	"could not be attached to any target.*$W/no-such-tool.so.*No such file" "$W/l3.out")" -eq 1
check "missing tool: stop reason, one window" jq -e \
	'.stop_reason == "tool failed" and (.windows | length) == 1
	 and .windows[0].stop_reason == "tool failed" and .summary.failed == 4' "$W/r3.json"
check "missing tool: reached no target" test ! -e "$W/w3"
T0=$(now)
ROCPROF_EXAMPLE_TOOL_INIT_FAIL=1 mpirun -np 1 -x ROCPROF_EXAMPLE_TOOL_INIT_FAIL "$LAUNCHER" \
	--mpirun-pid "$JOB_PID" -t "$TOOL" --windows 100:20000:5 --report "$W/r4.json" \
	</dev/null >"$W/l4.out" 2>&1
rc=$?
check "refused tool: exit 4 (got $rc)" test "$rc" -eq 4
check "refused tool: ended well before -d" elapsed_below "$T0" 10
check "refused tool: status 6 on both sides, one window" jq -e \
	'(.windows | length) == 1 and .stop_reason == "tool failed"
	 and ([.windows[0].nodes[].targets[] | .agent_status] == [6,6,6,6])
	 and ([.windows[0].nodes[].targets[].target_side] | sort == ["agent","agent","rocm","rocm"])' \
	"$W/r4.json"
check "refused tool: the line names the tool" grep -q \
	"error: the tool ($TOOL) could not be attached to any target" "$W/l4.out"
for p in $(job_ranks "$JOB_PID"); do
	check "refused tool: rank $p alive, untraced" grep -q "TracerPid:	0" "/proc/$p/status"
done
kill -TERM "$JOB_PID"
wait "$JOB_PID"
rm -rf "$W"
finish
