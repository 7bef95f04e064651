#!/usr/bin/env bash
# Outputs first, nothing attachable ends at once, figures that cannot lie; under a real
# mpirun on this machine.
# 1. A bad --report/--timeline/--trace path (a directory, a missing parent, a file as
#    parent, a path in /proc) ends the whole job with exit 2 well before -d, in one line
#    naming the path, and no target is touched: the tool never ran in any, none traced.
# 2. A report on a full file system (a 64 KB tmpfs, root only) fails at the end: the
#    summary, printed after the files, gives the process's own exit code (1) and says
#    the report was not written; the timeline written beside it says exit 1 too.
# 3. A job without the agent and no --inject: nothing attachable, the run ends right
#    after the attach (exit 4, one line with the fix), not after -d 10000.
# Every progress and summary figure stays sane (no wrapped number, nothing above a day).
B=${1:?usage: test_outputs.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-outputs-test.XXXXXX)
chmod 755 "$W"
MNT=
SKIPPED=
cleanup_outputs() {
	[ -z "$MNT" ] || umount "$MNT" 2>/dev/null
	cleanup
	rm -rf "$W"
}
trap cleanup_outputs EXIT

# No figure a run cannot have: a wrapped subtraction, more than a day in ms, a negative count.
sane() {
	! grep -q 18446744 "$1" &&
		awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^ms/ && $(i - 1) + 0 > 86400000) bad = 1 }
		     /attached -|detached -|targets: -/ { bad = 1 } END { exit bad }' "$1"
}

# The job's ranks: alive, not traced, and the tool never ran in them (no tool log).
untouched() {
	local what=$1 p
	for p in $(job_ranks "$JOB_PID"); do
		check "$what: rank $p alive, not traced" grep -q "TracerPid:	0" "/proc/$p/status"
	done
	check "$what: the tool ran in no target" test -z "$(ls "$W/tool" 2>/dev/null)"
}

# The window these runs ask for (D ms), and the bound (s) that shows they ended well before
# it. Under a sanitizer mpirun and the launcher's start and exit (its leak check) took more
# than 6 s on a loaded machine: a longer window, and a bound half as long.
D=10000 QUICK=5 SOON=6
if [ -n "${ROCATTACH_SANITIZED:-}" ]; then
	D=90000 QUICK=45 SOON=45
fi
# ended_soon WHAT T0 BOUND: the run begun at T0 ended within BOUND s (said with its time).
ended_soon() {
	local el
	el=$(awk -v a="$2" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
	check "$1 (took $el s, bound $3 s)" awk -v e="$el" -v m="$3" 'BEGIN { exit !(e < m) }'
}

# 1. Bad output paths, each with -d $D on an attachable job.
start_job 2 "$W/job1.out" || exit 1
mkdir "$W/dir"
touch "$W/file"
export ROCPROF_OUTPUT_PATH=$W/tool
bad_path() { # bad_path NAME OPTION PATH CAUSE [LAUNCHER_RANKS]
	local name=$1 opt=$2 path=$3 cause=$4 np=${5:-1} t0 rc
	t0=$(now)
	mpirun -np "$np" "$LAUNCHER" --one-node-per-rank --mpirun-pid "$JOB_PID" -t "$TOOL" \
		-d "$D" "$opt" "$path" </dev/null >"$W/$name.out" 2>&1
	rc=$?
	check "$name: exit 2 (got $rc)" test "$rc" -eq 2
	ended_soon "$name: ended well before -d $D" "$t0" "$QUICK"
	check "$name: one line naming $opt '$path' and the cause" test "$(grep -c \
		"rocattach-mpi: cannot write $opt '$path': .*$cause" "$W/$name.out")" -eq 1
	check "$name: nothing selected, no window" eval "! grep -Eq 'found|window' '$W/$name.out'"
	untouched "$name"
}
bad_path "report is a directory" --report "$W/dir" "it is a directory"
bad_path "parent missing" --report "$W/missing/r.json" "does not exist: create it first"
bad_path "parent is a file" --timeline "$W/file/t.svg" "is not a directory"
bad_path "path in proc" --trace /proc/r.json "it is in /proc"
bad_path "two launcher ranks, report is a directory" --report "$W/dir" "it is a directory" 2

# The same job, a good run: figures sane, the summary after the files, exit 0.
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 300 --report "$W/ok.json" \
	</dev/null >"$W/ok.out" 2>&1
rc=$?
check "good run: exit 0 (got $rc)" exit_ok "$rc" "$W/ok.json"
check "good run: figures sane" sane "$W/ok.out"
check "good run: the summary after 'report written'" awk '
	/report written to/ { w = NR } /\(exit 0: ok\)/ { s = NR } END { exit !(w && s > w) }' \
	"$W/ok.out"
check "good run: the window's planned length known" jq -e \
	'.windows[0].length.planned_ns == 300000000 and .windows[0].length.planned_unknown == null' \
	"$W/ok.json"

# 2. A full disk at the end of a real window (root: a tmpfs of 64 KB, filled).
if [ "$(id -u)" -eq 0 ]; then
	MNT=$W/full
	mkdir "$MNT"
	if mount -t tmpfs -o size=64k rocattach-test "$MNT"; then
		dd if=/dev/zero of="$MNT/fill" bs=4k count=64 2>/dev/null
		check "full disk: the tmpfs is full" eval "! echo x >'$MNT/probe' 2>/dev/null || ! dd if=/dev/zero of='$MNT/probe' bs=4k count=1 2>/dev/null"
		rm -f "$MNT/probe"
		mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 300 \
			--report "$MNT/r.json" --timeline "$W/full.svg" </dev/null >"$W/full.out" 2>&1
		rc=$?
		check "full disk: exit 1 (got $rc)" test "$rc" -eq 1
		check "full disk: the summary states exit $rc and the report not written" grep -q \
			"^rocattach-mpi: 1 node, 2 targets: 2 attached and detached, 0 failed (exit $rc: the report was not written)" \
			"$W/full.out"
		check "full disk: the cause named" grep -q \
			"cannot write report $MNT/r.json: No space left on device" "$W/full.out"
		check "full disk: no report, no leftover" test ! -e "$MNT/r.json" -a ! -e "$MNT/r.json.tmp"
		check "full disk: the timeline states exit 1 too" grep -q \
			"exit 1: the report was not written" "$W/full.svg"
		check "full disk: the summary last" awk '
			/timeline written/ { t = NR } /\(exit 1:/ { s = NR } END { exit !(t && s > t) }' \
			"$W/full.out"
		check "full disk: figures sane" sane "$W/full.out"
		umount "$MNT" && MNT=
	else
		fail "full disk: cannot mount a tmpfs as root"
	fi
else
	SKIPPED="the full-disk case mounts a tmpfs: run as root"
fi
stop_job

# 3. Nothing attachable: no agent in the job, no --inject; -d 10000 ends at once.
mpirun -np 2 "$MPI_TARGET" </dev/null >"$W/job3.out" 2>&1 &
JOB_PID=$!
CHILDREN+=("$JOB_PID")
wait_ready "$W/job3.out" 2 || exit 1
rm -rf "$W/tool"
for np in 1 2; do
	t0=$(now)
	mpirun -np "$np" "$LAUNCHER" --one-node-per-rank --mpirun-pid "$JOB_PID" -t "$TOOL" \
		-d "$D" --report "$W/none$np.json" </dev/null >"$W/none$np.out" 2>&1
	rc=$?
	what="nothing attachable ($np launcher ranks)"
	check "$what: exit 4 (got $rc)" test "$rc" -eq 4
	ended_soon "$what: ended in a few seconds, not after -d $D" "$t0" "$SOON"
	check "$what: one plain line with the fix" test "$(grep -c \
		"^rocattach-mpi: error: no target has an attach listener and --inject was not given.*attach with --inject" \
		"$W/none$np.out")" -eq 1
	n=$((2 * np)) # each launcher rank is a node that sees both ranks
	check "$what: the summary says so" grep -q \
		"$n targets: 0 attached and detached, $n failed (exit 4: nothing attachable: no target has a listener)" \
		"$W/none$np.out"
	check "$what: the report's stop reason, one window, length in words" jq -e '
		.stop_reason == "nothing attachable" and .exit_code == 4 and (.windows | length) == 1
		and .windows[0].stop_reason == "nothing attachable"
		and (.windows[0].length.planned_ns == null) == (.windows[0].length.planned_unknown != null)' \
		"$W/none$np.json"
	check "$what: figures sane" sane "$W/none$np.out"
	check "$what: no '? ms'" eval "! grep -q '? ms' '$W/none$np.out'"
	untouched "$what"
done
stop_job

# 3b. Nothing attached, one rank without a listener and one with our agent but stopped
#     (refused before any ptrace): the run still ends at once, and says how many lack one.
mpirun -np 1 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT" "$MPI_TARGET" : -np 1 "$MPI_TARGET" \
	</dev/null >"$W/job4.out" 2>&1 &
JOB_PID=$!
CHILDREN+=("$JOB_PID")
wait_ready "$W/job4.out" 2 || exit 1
stopped=$(for p in $(job_ranks "$JOB_PID"); do
	grep -q LD_PRELOAD "/proc/$p/environ" && echo "$p"
done)
kill -STOP $stopped
t0=$(now)
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d "$D" --report "$W/mixed.json" \
	</dev/null >"$W/mixed.out" 2>&1
rc=$?
kill -CONT $stopped
check "mixed: exit 4 (got $rc)" test "$rc" -eq 4
ended_soon "mixed: ended in a few seconds, not after -d $D" "$t0" "$SOON"
check "mixed: one line, 1 of 2 without a listener" test "$(grep -c \
	"^rocattach-mpi: error: nothing attached, and 1 of 2 targets have no attach listener" \
	"$W/mixed.out")" -eq 1
check "mixed: the summary's reason" grep -q \
	"(exit 4: nothing attachable: 1 of 2 without a listener)" "$W/mixed.out"
check "mixed: the report says stopped and attach-failed" jq -e \
	'[.windows[0].nodes[].targets[].state] | sort == ["attach-failed","stopped"]' "$W/mixed.json"
untouched "mixed"
stop_job

if [ -n "$SKIPPED" ] && [ "$FAILED" -eq 0 ]; then
	echo "$PASSED passed, 0 failed"
	echo "SKIP: $SKIPPED"
	exit 77
fi
finish
