#!/usr/bin/env bash
# rocattach-mpi on both target sides under a real mpirun on this machine: ROCm's
# (the test double tests/rocm/, librocprofiler-register.so.0: tool_attach inside the
# attach call, no start time, no watchdog but ours, librocattach-watchdog) and our agent, alone and mixed in one job.
# Windows open at the start time and close at the stop time by the tools' own clocks,
# the report's times keep their promised order with the tools' records (tests/lib/windows.sh),
# and no private variable reaches a target.
B=${1:?usage: test_sides.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-sides-test.XXXXXX)

. "$(dirname "$0")/../lib/windows.sh"

# Start an MPMD job: each argument "N:PRELOAD" is N ranks with that library preloaded.
start_mixed() {
	local out=$1 total=0 args=() spec
	shift
	for spec in "$@"; do
		[ ${#args[@]} -gt 0 ] && args+=(:)
		args+=(-np "${spec%%:*}" env ROCP_TOOL_ATTACH=1 LD_PRELOAD="${spec#*:}" "$MPI_TARGET")
		total=$((total + ${spec%%:*}))
	done
	mpirun "${args[@]}" </dev/null >"$out" 2>&1 &
	JOB_PID=$!
	CHILDREN+=("$JOB_PID")
	wait_ready "$out" "$total"
}

# check_window DIR REPORT N DURATION_MS: the tools' window of every target against the report.
check_window() {
	window_checks check "$@"
	check "report: the length flag says whether min/max lie outside the tolerance" jq -e \
		'.windows[0].length | .off == (.min_ns + .tolerance_ns < .planned_ns
		 or .max_ns > .planned_ns + .tolerance_ns)' "$2"
}

# 1. Six targets with ROCm's side on one node.
start_mixed "$W/job1.out" "6:$DOUBLE" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w1
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 500 --report "$W/r1.json" \
	</dev/null >"$W/l1.out" 2>&1
rc=$?
check "ROCm side: exit 0 (got $rc)" exit_ok "$rc" "$W/r1.json"
check_window "$W/w1" "$W/r1.json" 6 500
check "report: every target is ROCm's side, times are bounds" jq -e \
	'[.windows[0].nodes[].targets[]] | length == 6 and all(.target_side == "rocm"
	 and .attach.tool_ns_kind == "bound" and .detach.tool_ns_kind == "bound"
	 and .window.kind == "lower-bound")' "$W/r1.json"
check "report: skew basis is bounds" jq -e '.windows[0].skew.basis == "bounds"' "$W/r1.json"
check "report: every ROCm target had our watchdog" jq -e \
	'[.windows[0].nodes[].targets[] | select(.watchdog)] | length == 6' "$W/r1.json"
check "summary names no target without a watchdog" eval '! grep -q "without a watchdog" "$W/l1.out"'
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --dry-run </dev/null >"$W/d1.out" 2>&1
check "dry-run shows the side" test "$(grep -cw rocm "$W/d1.out")" -eq 6

# 2. Repeated windows: each window's attach goes out shortly before its own start,
#    not right after the previous detach (no call waits through the 1.5 s gap).
export ROCPROF_OUTPUT_PATH=$W/w2
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" --windows 1500:200:2 \
	--report "$W/r2.json" </dev/null >"$W/l2.out" 2>&1
rc=$?
check "two windows: exit 0 (got $rc)" exit_ok "$rc" "$W/r2.json"
check "window 2: 6 attach calls" jq -e \
	'[.windows[1].nodes[].targets[].attach.duration_ns] | length == 6' "$W/r2.json"
echo "window 2's longest attach call: $(jq '[.windows[1].nodes[].targets[].attach.duration_ns] | max / 1e6' \
	"$W/r2.json") ms"
loose "window 2's attach calls last less than 1 s" jq -e \
	'[.windows[1].nodes[].targets[].attach.duration_ns] | max < 1e9' "$W/r2.json"
check "window 2 starts 1.5 s after window 1's stop" jq -e \
	'.windows[1].start_ns - .windows[0].stop_ns >= 1.5e9' "$W/r2.json"

# 3. A signal the launcher can catch (SIGQUIT) mid-window: the launcher itself
#    detaches every target before it exits.
export ROCPROF_OUTPUT_PATH=$W/w3
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" --report "$W/r3.json" \
	</dev/null >"$W/l3.out" 2>&1 &
mp=$!
for _ in $(seq 200); do
	[ "$(cat "$W"/w3/*.log 2>/dev/null | grep -c '^tool_attach')" -ge 6 ] && break
	sleep 0.05
done
pkill -QUIT -f "^$LAUNCHER --mpirun-pid $JOB_PID" 
wait "$mp"
check "SIGQUIT: every ROCm target detached" test \
	"$(cat "$W"/w3/*.log | grep -c '^tool_detach')" -eq 6
check "SIGQUIT: report says interrupted (5)" jq -e '.exit_code == 5' "$W/r3.json"

# 3b. The launcher killed with SIGKILL mid-window: the watchdogs we loaded into the
#     ROCm-side targets (librocattach-watchdog) detach every one within 2 s.
export ROCPROF_OUTPUT_PATH=$W/w3b
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" </dev/null >"$W/l3b.out" 2>&1 &
mp=$!
for _ in $(seq 200); do
	[ "$(cat "$W"/w3b/*.log 2>/dev/null | grep -c '^tool_attach')" -ge 6 ] && break
	sleep 0.05
done
killed=$(date +%s%N)
pkill -KILL -f "^$LAUNCHER --mpirun-pid $JOB_PID"
wait "$mp"
check "SIGKILL: the window was open (6 attached, none detached yet)" test \
	"$(cat "$W"/w3b/*.log | grep -c '^tool_attach') $(awk -v k="$killed" \
	'/^tool_detach/ { for (i = 1; i <= NF; i++) if ($i ~ /^ns=/ && substr($i, 4) < k) n++ }
	END { print n + 0 }' "$W"/w3b/*.log)" = "6 0"
for _ in $(seq 60); do
	[ "$(cat "$W"/w3b/*.log | grep -c '^tool_detach')" -ge 6 ] && break
	sleep 0.05
done
check "SIGKILL: every ROCm target detached by its watchdog" test \
	"$(cat "$W"/w3b/*.log | grep -c '^tool_detach')" -eq 6
check "SIGKILL: each within 2 s of the kill" awk -v k="$killed" '/^tool_detach/ {
	for (i = 1; i <= NF; i++) if ($i ~ /^ns=/ && substr($i, 4) - k > 2e9) bad = 1 }
	END { exit bad }' "$W"/w3b/*.log
stop_job

# 4. A job mixing both sides in one window.
start_mixed "$W/job4.out" "3:$AGENT" "3:$DOUBLE" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w4
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 500 --report "$W/r4.json" \
	</dev/null >"$W/l4.out" 2>&1
rc=$?
check "mixed job: exit 0 (got $rc)" exit_ok "$rc" "$W/r4.json"
check_window "$W/w4" "$W/r4.json" 6 500
check "report: 3 targets of each side" jq -e \
	'[.windows[0].nodes[].targets[].target_side] | sort == ["agent","agent","agent","rocm","rocm","rocm"]' \
	"$W/r4.json"
check "report: skew basis is mixed" jq -e '.windows[0].skew.basis == "mixed"' "$W/r4.json"
check "report: our agent's times are measured" jq -e \
	'[.windows[0].nodes[].targets[] | select(.target_side == "agent")] |
	 all(.attach.tool_ns_kind == "measured" and .window.kind == "measured")' "$W/r4.json"

# 5. Tools written the way AMD's samples are (tests/tools/: C and C++, setting the
#    client's name, checking the version), over the same mixed job: every rank attaches
#    and detaches unharmed on both sides; then a library of the list that does not load
#    is never skipped silently: exit 4, named in the summary and the report.
#    Each run has a job of its own: a process keeps the tool list it was first given.
SDK_C=$B/tests/tools/libsdk-tool-c.so
SDK_CXX=$B/tests/tools/libsdk-tool-cxx.so
stop_job
start_mixed "$W/job5.out" "3:$AGENT" "3:$DOUBLE" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w5
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$SDK_C:$SDK_CXX" -d 300 \
	--report "$W/r5.json" </dev/null >"$W/l5.out" 2>&1
rc=$?
check "SDK-style tools, both sides: exit 0 (got $rc)" exit_ok "$rc" "$W/r5.json"
check "SDK-style tools: each tool attached and detached in all 6 ranks" test \
	"$(cat "$W"/w5/sdk-tool.sdk-c.*.log "$W"/w5/sdk-tool.sdk-cxx.*.log |
		grep -c '^tool_detach data_ok=1')" -eq 12
check "SDK-style tools: each got the SDK's client id (size 24) and set its name" test \
	"$(cat "$W"/w5/sdk-tool.*.log | grep -c 'id_size=24 name=sdk-c')" -eq 12
check "report: our agent's targets say loaded, ROCm's unknown" jq -e \
	'[.windows[0].nodes[].targets[]] | all(.state == "detached") and
	 all(if .target_side == "agent" then .tools == ["loaded","loaded"]
	     else .tools == ["unknown","unknown"] end)' "$W/r5.json"
check "the job survived the SDK-style tools" test "$(job_ranks "$JOB_PID" | wc -l)" -eq 6
stop_job
start_mixed "$W/job6.out" "3:$AGENT" "3:$DOUBLE" || exit 1
export ROCPROF_OUTPUT_PATH=$W/w6
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$SDK_C:libnotthere-rocattach.so" -d 300 \
	--report "$W/r6.json" </dev/null >"$W/l6.out" 2>&1
rc=$?
check "a tool that does not load: exit 4 (got $rc)" test "$rc" -eq 4
check "summary: no figure left over (a target is failed or detached, not both)" \
	bash -c '! grep -q "not completed" "$1"' _ "$W/l6.out"
check "summary: the tool, failed on all 6" grep -q \
	"tool libnotthere-rocattach.so: loaded on 0, declined on 0, failed on 6" "$W/l6.out"
check "summary: our agent's targets failed for the tool, others attached" test \
	"$(grep -c ': tool failed: attached; skipped: libnotthere-rocattach.so: ' "$W/l6.out")" -eq 3
check "report: the tool failed on every target" jq -e \
	'[.windows[0].nodes[].targets[].tools[1]] | length == 6 and all(. == "failed")' \
	"$W/r6.json"
check "the job survived the missing tool" test "$(job_ranks "$JOB_PID" | wc -l)" -eq 6
stop_job

# 6. The same tools with --inject into a job started without attach support.
mpirun -np 3 "$MPI_TARGET" </dev/null >"$W/job7.out" 2>&1 &
JOB_PID=$!
CHILDREN+=("$JOB_PID")
wait_ready "$W/job7.out" 3 || exit 1
export ROCPROF_OUTPUT_PATH=$W/w7
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --inject -t "$SDK_C:$SDK_CXX" -d 300 \
	--report "$W/r7.json" </dev/null >"$W/l7.out" 2>&1
rc=$?
check "SDK-style tools with --inject: exit 0 (got $rc)" exit_ok "$rc" "$W/r7.json"
check "--inject: each tool attached and detached in all 3 ranks" test \
	"$(cat "$W"/w7/sdk-tool.*.log | grep -c '^tool_detach data_ok=1')" -eq 6
check "the injected job survived" test "$(job_ranks "$JOB_PID" | wc -l)" -eq 3
stop_job

[ "${KEEP:-0}" = 1 ] || rm -rf "$W"
finish
