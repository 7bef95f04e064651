#!/usr/bin/env bash
# rocattach-mpi --stacks on a hung job (ra_stuck_rank): the last rank spins in
# compute > stuck_here, the others wait in MPI_Barrier. The tree printed after the
# summary, the report's "stacks" and the SVG must separate them with the right rank
# sets; on our agent's side, on ROCm's (the double), mixed in one job, and with
# --inject. The job goes on afterwards, and no stack file is left behind. The stack
# files are safe: a folder per target user, and a planted FIFO, symbolic link or other
# user's file is refused with its reason, without a hang.
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

# 4. The stack files are safe. Four targets, two per side, the last one run by nobody:
#    each user has its own folder, the launcher's directory is writable by no one else.
#    Planted in the targets' folders during the window, each under a later attach number
#    than the tool's own file: a FIFO (rank 0), a symbolic link (rank 1), a stack file
#    owned by nobody in root's folder (rank 2). Each is refused with its reason, nothing
#    hangs, and nobody's target's real stacks come through.
echo "== 4. planted files: a FIFO, a symbolic link, another user's file"
EXAMPLE=$B/bin/rocattach-example-target
chmod 755 "$W"
mkdir -m 755 "$W/safe.tmp"
SAFE=()
for k in 0 1 2 3; do
	lib=$AGENT
	[ "$k" -lt 2 ] || lib=$DOUBLE
	as_user ""
	[ "$k" -lt 3 ] || as_user nobody
	"${AS[@]}" env OMPI_COMM_WORLD_RANK=$k ROCP_TOOL_ATTACH=1 LD_PRELOAD="$lib" "$EXAMPLE" \
		--threads 0 </dev/null >/dev/null 2>&1 &
	SAFE+=("$!")
	CHILDREN+=("$!")
done
ready=0
for _ in $(seq 400); do
	ready=0
	for t in "${SAFE[@]}"; do
		grep -qs rocp-bg-attach /proc/"$t"/task/*/comm && ready=$((ready + 1))
	done
	[ "$ready" -eq 4 ] && break
	sleep 0.05
done
check "4 targets ready, two per side, one run by nobody (got $ready)" test "$ready" -eq 4
HOST=$(hostname)
T0=$(now)
timeout 60 env ROCATTACH_STACKS_DIR="$W/safe.tmp" mpirun -np 1 "$LAUNCHER" \
	--pid "$(IFS=,; echo "${SAFE[*]}")" --stacks -d 2500 --report "$W/safe.json" \
	</dev/null >"$W/safe.out" 2>&1 &
run=$!
base=""
for _ in $(seq 400); do
	base=$(ls -d "$W"/safe.tmp/rocattach-mpi-stacks.* 2>/dev/null | head -n 1)
	[ -n "$base" ] && [ -d "$base/u65534" ] && break
	sleep 0.02
done
check "the directory: the launcher's, mode 711" test "$(stat -c %u:%a "$base")" = 0:711
check "root's folder: root's, private" test "$(stat -c %u:%a "$base/u0")" = 0:700
check "nobody's folder: nobody's, private" test "$(stat -c %u:%a "$base/u65534")" = 65534:700
name() { echo "$base/u$2/rocattach-stacks.$HOST.$1.99.txt"; }
mkfifo "$(name "${SAFE[0]}" 0)"
ln -s /etc/passwd "$(name "${SAFE[1]}" 0)"
printf 'rocattach-stacks 1\n' >"$(name "${SAFE[2]}" 0)"
chown nobody "$(name "${SAFE[2]}" 0)"
wait "$run"
rc=$?
check "planted: the launcher ended on time, exit 0 (got $rc)" \
	test "$rc" -eq 0 -a "$(awk -v a="$T0" -v b="$(now)" 'BEGIN { print (b - a < 20) }')" = 1
check "planted: the FIFO refused" test "$(tree_ranks "$W/safe.json" \
	"[no stacks: $(name "${SAFE[0]}" 0): a FIFO, not a regular file: refused]")" = 0
check "planted: the symbolic link refused" test "$(tree_ranks "$W/safe.json" \
	"[no stacks: $(name "${SAFE[1]}" 0): a symbolic link: refused]")" = 1
check "planted: nobody's file in root's folder refused" test "$(tree_ranks "$W/safe.json" \
	"[no stacks: $(name "${SAFE[2]}" 0): owned by uid 65534, not the target's user (uid 0): refused]")" = 2
check "planted: nobody's target's stacks came through (rank 3 in main)" \
	test "$(tree_ranks "$W/safe.json" main)" = 3
check "planted: the directory is gone" test -z "$(ls -A "$W/safe.tmp")"
for t in "${SAFE[@]}"; do
	check "pid $t alive, untraced" grep -q "TracerPid:	0" "/proc/$t/status"
done
kill "${SAFE[@]}" 2>/dev/null

finish
