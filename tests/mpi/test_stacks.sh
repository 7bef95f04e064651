#!/usr/bin/env bash
# rocattach-mpi --stacks on a hung job (ra_stuck_rank): the last rank spins in
# compute > stuck_here, the others wait in MPI_Barrier. The tree printed after the
# summary, the report's "stacks" and the SVG must separate them with the right rank
# sets; on our agent's side, on ROCm's (the double), mixed in one job, and with
# --inject. The job goes on afterwards, and no stack file is left behind.
B=${1:?usage: test_stacks.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
STUCK=$B/bin/ra_stuck_rank
W=$(mktemp -d /tmp/rocattach-mpi-stacks-test.XXXXXX)
trap 'cleanup; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT

# start_stuck OUT SPEC...: an MPMD job, each SPEC "N:PRELOAD" (PRELOAD "none": no
# attach support); sets JOB_PID.
start_stuck() {
	local out=$1 total=0 args=() spec env
	shift
	for spec in "$@"; do
		[ ${#args[@]} -gt 0 ] && args+=(:)
		env=(env)
		[ "${spec#*:}" = none ] || env=(env ROCP_TOOL_ATTACH=1 LD_PRELOAD="${spec#*:}")
		args+=(-np "${spec%%:*}" "${env[@]}" "$STUCK")
		total=$((total + ${spec%%:*}))
	done
	mpirun "${args[@]}" </dev/null >"$out" 2>&1 &
	JOB_PID=$!
	CHILDREN+=("$JOB_PID")
	wait_ready "$out" "$total"
}

# A frame's node anywhere in the report's tree: its ranks ("" if none).
tree_ranks() {
	jq -r --arg f "$2" '[.stacks | .. | objects | select(.frame? == $f) | .ranks] | join(" ")' \
		"$1"
}

# run_case NAME EXTRA_ARGS...: --stacks on the job JOB_PID, then the checks.
run_case() {
	local name=$1 rc pids
	shift
	pids=$(pgrep -f "^$STUCK" -P "$JOB_PID" | sort -n)
	mkdir -p "$W/$name.tmp"
	ROCATTACH_STACKS_DIR=$W/$name.tmp mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --stacks \
		--report "$W/$name.json" --stacks-svg "$W/$name.svg" "$@" </dev/null \
		>"$W/$name.out" 2>&1
	rc=$?
	check "$name: exit 0 (got $rc)" test "$rc" -eq 0
	check "$name: the tree follows the summary" awk '/^window 1:/ { s = 1 }
		/^stacks at the window.s start/ { t = s } END { exit !t }' "$W/$name.out"
	check "$name: ranks 0-2 share one line down to MPI_Barrier" \
		grep -qE '^ +\[0-2\] 3 threads: MPI_Barrier( |$)' "$W/$name.out"
	check "$name: rank 3 alone in compute > stuck_here" \
		grep -qE '^ +\[3\] 1 thread: compute > stuck_here$' "$W/$name.out"
	check "$name: all four ranks start in main" \
		grep -qE '^\[0-3\] 4 threads: .*main$' "$W/$name.out"
	check "$name: report: stuck_here is rank 3's" test "$(tree_ranks "$W/$name.json" stuck_here)" = 3
	check "$name: report: MPI_Barrier is ranks 0-2's" \
		test "$(tree_ranks "$W/$name.json" MPI_Barrier)" = 0-2
	check "$name: report: main is ranks 0-3's, 4 threads" jq -e \
		'[.stacks | .. | objects | select(.frame? == "main")] | length == 1 and
		 .[0].ranks == "0-3" and .[0].threads == 4' "$W/$name.json"
	check "$name: SVG parses and draws stuck_here for rank 3" python3 -c '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
sys.exit(not any(t.startswith("stuck_here [ranks 3]") for t in texts))' "$W/$name.svg"
	check "$name: every rank still runs" test "$(pgrep -f "^$STUCK" -P "$JOB_PID" | sort -n)" = "$pids"
	check "$name: rank 3 still spins" \
		test "$(awk '{print $3}' "/proc/$(echo "$pids" | tail -n 1)/stat")" = R
	check "$name: no stack file or directory left" test -z "$(ls -A "$W/$name.tmp")"
}

# 1. Our agent's side.
start_stuck "$W/job1.out" "4:$AGENT" || exit 1
run_case agent
# Bad input: one line, the fix, nothing touched.
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --stacks -t "$TOOL" </dev/null \
	>"$W/bad1.out" 2>&1
rc=$?
check "--stacks with -t: exit 2 (got $rc)" test "$rc" -eq 2
check "--stacks with -t: says to drop -t" grep -q "give --stacks without -t" "$W/bad1.out"
ROCATTACH_STACKS_TOOL=/nonexistent/librocattach-stacks.so mpirun -np 1 \
	-x ROCATTACH_STACKS_TOOL "$LAUNCHER" --mpirun-pid "$JOB_PID" --stacks </dev/null \
	>"$W/bad2.out" 2>&1
rc=$?
check "a missing stack tool: exit 4 (got $rc)" test "$rc" -eq 4
check "a missing stack tool: named, with the fix" \
	grep -q "ROCATTACH_STACKS_TOOL=/nonexistent/librocattach-stacks.so: .*set it to" "$W/bad2.out"
ROCATTACH_STACKS_TOOL=/nonexistent/librocattach-stacks.so mpirun -np 1 \
	-x ROCATTACH_STACKS_TOOL "$LAUNCHER" --mpirun-pid "$JOB_PID" --stacks --dry-run </dev/null \
	>"$W/dry.out" 2>&1
rc=$?
check "a missing stack tool with --dry-run: exit 0, the listing (got $rc)" \
	test "$rc" -eq 0 -a "$(grep -c "^  [0-9]" "$W/dry.out")" -eq 4
check "a missing stack tool with --dry-run: a warning says a run would stop" \
	grep -q "warning: the stack tool: .*(a run would stop here, exit 4)" "$W/dry.out"
# No directory for the tool's files on the node: nothing attached, each rank says why.
cwd=$(readlink "/proc/$(pgrep -f "^$STUCK" -P "$JOB_PID" | head -n 1)/cwd")
touch "$W/file"
ROCATTACH_STACKS_DIR=$W/file mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --stacks \
	--report "$W/nodir.json" </dev/null >"$W/nodir.out" 2>&1
rc=$?
check "no directory: exit 4 (got $rc)" test "$rc" -eq 4
check "no directory: the tree says why, for every rank" grep -qF \
	"[0-3] 4 threads: [no stacks: --stacks: cannot make a directory $W/file/rocattach-mpi-stacks." \
	"$W/nodir.out"
check "no directory: nothing attached" jq -e \
	'[.windows[0].nodes[].targets[] | select(.state == "attach-failed")] | length == 4' \
	"$W/nodir.json"
check "no directory: no file in the targets' working directory" \
	test -z "$(find "$cwd" -maxdepth 1 -name 'rocattach-stacks.*')"
stop_job

# 2. ROCm's side (the double), two ranks of each side in one job.
start_stuck "$W/job2.out" "2:$AGENT" "2:$DOUBLE" || exit 1
run_case mixed
check "mixed: both sides in the report" jq -e \
	'[.windows[0].nodes[].targets[].target_side] | sort == ["agent","agent","rocm","rocm"]' \
	"$W/mixed.json"
stop_job
start_stuck "$W/job3.out" "4:$DOUBLE" || exit 1
run_case rocm
stop_job

# 3. No attach support in the job: --inject.
start_stuck "$W/job4.out" "4:none" || exit 1
run_case inject --inject
stop_job

finish
