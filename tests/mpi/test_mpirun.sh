#!/usr/bin/env bash
# rocattach-mpi under a real mpirun on this machine (oversubscribed, as root), while
# other MPI jobs and another user's processes run beside it: every case names its job.
B=${1:?usage: test_mpirun.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-mpi-test.XXXXXX)

start_job 4 "$W/job.out" || exit 1
mapfile -t RANKS < <(job_ranks "$JOB_PID")
check "the example job has 4 ranks" test "${#RANKS[@]}" -eq 4
# Every case names this job: other jobs on the machine must not change the outcome.
JOB=$(job_id "${RANKS[0]}")
check "the example job has an MPI job id" test -n "$JOB"
MINE=$JOB_PID

# Other people's work on the same machine, running through every case below: an
# unrelated MPI job of ours, and (as root) an MPI job and a process of another user
# (nobody), all attachable. None of them may ever be attached.
start_job 2 "$W/foreign.out" || exit 1
mapfile -t FRANKS < <(job_ranks "$JOB_PID")
NOBODY_UID=$(id -u nobody)
NRANKS=()
NPROC=
if [ "$(id -u)" -eq 0 ]; then
	start_job 2 "$W/nobody-job.out" nobody || exit 1
	mapfile -t NRANKS < <(job_ranks "$JOB_PID")
else
	echo "note: not root: no other user's processes beside the job"
fi
# A private copy of the example target, by a name nobody else runs, for --exe: ours and
# nobody's. (Other people's copies of the example target are the machine's business.)
EXE=raex$$
mkdir -m 755 "$W/bin"
chmod 755 "$W"
install -m 755 "$B/bin/rocattach-example-target" "$W/bin/$EXE"
if [ "${#NRANKS[@]}" -gt 0 ]; then
	as_user nobody
	"${AS[@]}" env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT" "$W/bin/$EXE" \
		--threads 1 </dev/null >/dev/null 2>&1 &
	NPROC=$!
	CHILDREN+=("$NPROC")
fi
ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT" "$W/bin/$EXE" --threads 1 </dev/null >/dev/null 2>&1 &
MYPROC=$!
CHILDREN+=("$MYPROC")
FOREIGN=("${FRANKS[@]}" "${NRANKS[@]}" ${NPROC:+"$NPROC"})
JOB_PID=$MINE
check "an unrelated job of ours: 2 ranks" test "${#FRANKS[@]}" -eq 2
if [ -n "$NPROC" ]; then
	check "nobody's job: 2 ranks, as nobody" test "${#NRANKS[@]}" -eq 2 -a \
		"$(stat -c %u "/proc/${NRANKS[0]}")" -eq "$NOBODY_UID"
	for _ in $(seq 100); do
		[ "$(stat -c %u "/proc/$NPROC" 2>/dev/null)" = "$NOBODY_UID" ] && break
		sleep 0.05
	done
	check "nobody's process runs as nobody" test "$(stat -c %u "/proc/$NPROC")" -eq "$NOBODY_UID"
fi

# 1. Two launcher ranks on one node: one works, every target attached exactly once.
export ROCPROF_OUTPUT_PATH=$W/w1
mpirun -np 2 "$LAUNCHER" --mpi-job="$JOB" -t "$TOOL" -d 300 --report "$W/r1.json" \
	--timeline "$W/t1.svg" </dev/null >"$W/l1.out" 2>&1
rc=$?
check "window run exits 0 (got $rc)" exit_ok "$rc" "$W/r1.json"
for p in "${RANKS[@]}"; do
	check "pid $p attached once" test "$(events "$W/w1" tool_attach "$p")" -eq 1
	check "pid $p detached once" test "$(events "$W/w1" tool_detach "$p")" -eq 1
done
check "report: schema" jq -e '.schema == "rocattach-mpi-report/1"' "$W/r1.json"
check "report: one node, 4 targets, all detached" jq -e \
	'(.windows[0].nodes | length) == 1 and (.windows[0].nodes[0].targets | length) == 4
	 and ([.windows[0].nodes[0].targets[].state] | all(. == "detached"))' "$W/r1.json"
check "report: job ranks 0..3" jq -e \
	'[.windows[0].nodes[0].targets[].rank] | sort == [0,1,2,3]' "$W/r1.json"
check "report: well-typed fields, the exit code the run's" jq -e --argjson rc "$rc" \
	'(.started_ns|type)=="number" and (.config.argv|type)=="array" and .exit_code==$rc
	 and (.windows[0].skew.attach_ns|type)=="number" and .summary.failed==0
	 and (.windows[0].nodes[0].targets[0].attach.start_ns|type)=="number"
	 and (.errors|length)==0' "$W/r1.json"
check "timeline written" grep -q "<svg" "$W/t1.svg"
check "summary printed" grep -q "4 targets: 4 attached and detached" "$W/l1.out"

# 2. --dry-run lists the ranks and attaches nothing.
export ROCPROF_OUTPUT_PATH=$W/w2
mpirun -np 1 "$LAUNCHER" --mpi-job="$JOB" --dry-run -t "$TOOL" </dev/null >"$W/l2.out" 2>&1
check "dry-run exits 0" test $? -eq 0
for p in "${RANKS[@]}"; do
	check "dry-run lists $p" listed "$W/l2.out" "$p"
done
for p in "${FOREIGN[@]}"; do
	check "dry-run of our job leaves out foreign $p" eval '! listed "$W/l2.out" "$p"'
done
check "dry-run attached nothing" test ! -e "$W/w2"

# 2b. Whose processes the selectors that name nothing reach. Without an ID, --mpi-job
#     takes our user's jobs (ours and the unrelated one), never nobody's; --uid and
#     --all-users widen it. --exe alone likewise.
dry() { # dry NAME ARGS...: a dry run into $W/NAME.out, exit code checked
	local name=$1
	shift
	mpirun -np 1 "$LAUNCHER" "$@" --dry-run </dev/null >"$W/$name.out" 2>&1
	check "$name: dry run exits 0" test $? -eq 0
}
dry any-job --mpi-job
for p in "${RANKS[@]}" "${FRANKS[@]}"; do
	check "--mpi-job without ID: lists our user's rank $p" listed "$W/any-job.out" "$p"
done
for p in "${NRANKS[@]}"; do
	check "--mpi-job without ID: leaves out nobody's rank $p" eval '! listed "$W/any-job.out" "$p"'
done
dry all-jobs --mpi-job --all-users
for p in "${RANKS[@]}" "${FRANKS[@]}" "${NRANKS[@]}"; do
	check "--mpi-job --all-users: lists rank $p" listed "$W/all-jobs.out" "$p"
done
if [ -n "$NPROC" ]; then
	dry nobody-jobs --mpi-job --uid nobody
	for p in "${NRANKS[@]}"; do
		check "--mpi-job --uid nobody: lists nobody's rank $p" listed "$W/nobody-jobs.out" "$p"
	done
	for p in "${RANKS[@]}" "${FRANKS[@]}"; do
		check "--mpi-job --uid nobody: leaves out rank $p" \
			eval '! listed "$W/nobody-jobs.out" "$p"'
	done
fi
dry exe --exe "$EXE"
check "--exe alone: lists our process" listed "$W/exe.out" "$MYPROC"
dry exe-all --exe "$EXE" --all-users
check "--exe --all-users: lists ours" listed "$W/exe-all.out" "$MYPROC"
if [ -n "$NPROC" ]; then
	check "--exe alone: leaves out nobody's" eval '! listed "$W/exe.out" "$NPROC"'
	check "--exe --all-users: lists nobody's" listed "$W/exe-all.out" "$NPROC"
fi
# A window over --exe alone attaches ours, and nobody's process is left alone.
export ROCPROF_OUTPUT_PATH=$W/wexe
mpirun -np 1 "$LAUNCHER" --exe "$EXE" -t "$TOOL" -d 200 \
	--report "$W/rexe.json" </dev/null >"$W/lexe.out" 2>&1
check "--exe window: exit 0" exit_ok $? "$W/rexe.json"
check "--exe window: our process only" test "$(report_pids "$W/rexe.json")" = "$MYPROC"
check "--exe window: ours attached" test "$(events "$W/wexe" tool_detach "$MYPROC")" -eq 1
kill "$MYPROC"

# 3. Repeated windows.
export ROCPROF_OUTPUT_PATH=$W/w3
mpirun -np 1 "$LAUNCHER" --mpi-job="$JOB" -t "$TOOL" --windows 100:200:2 --report "$W/r3.json" \
	</dev/null >"$W/l3.out" 2>&1
check "two windows exit 0" exit_ok $? "$W/r3.json"
for p in "${RANKS[@]}"; do
	check "pid $p attached twice" test "$(events "$W/w3" tool_attach "$p")" -eq 2
done
check "report has 2 windows" jq -e '(.windows | length) == 2' "$W/r3.json"

# 4. Signals mid-window (no -d). INT to rank 0: the normal way to end the window (exit 0).
#    TERM to every launcher rank, as scancel does: interrupted (exit 5). TERM to mpirun
#    itself: mpirun exits with its own status, the report still says 5.
for how in int-rank0 term-ranks term-mpirun; do
	export ROCPROF_OUTPUT_PATH=$W/$how
	mpirun -np 2 "$LAUNCHER" --mpi-job="$JOB" -t "$TOOL" --report "$W/$how.json" \
		</dev/null >"$W/$how.out" 2>&1 &
	L=$!
	for _ in $(seq 200); do grep -q "attached 4/4" "$W/$how.out" && break; sleep 0.05; done
	case $how in
	int-rank0) kill -INT "$(pgrep -f "^$LAUNCHER" -P "$L" | sort -n | head -1)"; want=0 ;;
	term-ranks) pkill -TERM -f "^$LAUNCHER" -P "$L"; want=5 ;;
	term-mpirun) kill -TERM "$L"; want=nonzero ;;
	esac
	wait "$L"; rc=$?
	if [ "$want" = nonzero ]; then
		check "$how: mpirun exits non-zero (got $rc)" test "$rc" -ne 0
	else
		check "$how: exit $want (got $rc)" test "$rc" -eq "$want"
	fi
	for p in "${RANKS[@]}"; do
		check "$how: pid $p detached" test "$(events "$W/$how" tool_detach "$p")" -eq 1
	done
	check "$how: report says why" jq -e '.windows[0].stop_reason | test("^SIG")' "$W/$how.json"
	[ "$how" = int-rank0 ] || check "$how: report exit code 5" jq -e '.exit_code == 5' "$W/$how.json"
done

# 4b. Nobody says stop: --max-window detaches anyway.
export ROCPROF_OUTPUT_PATH=$W/mw
mpirun -np 1 "$LAUNCHER" --mpi-job="$JOB" -t "$TOOL" --max-window 400 --report "$W/mw.json" \
	</dev/null >"$W/mw.out" 2>&1
check "--max-window: exit 0" exit_ok $? "$W/mw.json"
check "--max-window: stop reason" jq -e '.windows[0].stop_reason == "max-window"' "$W/mw.json"
for p in "${RANKS[@]}"; do
	check "--max-window: pid $p detached" test "$(events "$W/mw" tool_detach "$p")" -eq 1
done

# 4c. One attacher per window: a second launcher on the same job is refused on every
#     target, each failure naming the first, and the first window runs to its end.
export ROCPROF_OUTPUT_PATH=$W/first
mpirun -np 1 "$LAUNCHER" --mpi-job="$JOB" -t "$TOOL" -d 3000 --report "$W/first.json" \
	</dev/null >"$W/first.out" 2>&1 &
L=$!
for _ in $(seq 200); do grep -q "attached 4/4" "$W/first.out" && break; sleep 0.05; done
check "first launcher attached" grep -q "attached 4/4" "$W/first.out"
# Its attach calls have returned once every rank's tool ran and nobody traces it.
for p in "${RANKS[@]}"; do
	for _ in $(seq 200); do
		grep -q "TracerPid:	0" "/proc/$p/status" && break
		sleep 0.05
	done
done
export ROCPROF_OUTPUT_PATH=$W/second
mpirun -np 1 "$LAUNCHER" --mpi-job="$JOB" -t "$TOOL" -d 300 --report "$W/second.json" \
	</dev/null >"$W/second.out" 2>&1
check "second launcher: exit 4 (some targets failed)" test $? -eq 4
check "second launcher: every target refused, the first named" jq -e --arg me "$L" \
	'[.windows[0].nodes[].targets[]] | length == 4 and all(.state == "attach-failed"
	 and .status == "ROCATTACH_STATUS_ERROR_PTRACE_OPERATION_NOT_PERMITTED"
	 and (.message | test("is attached by rocattach-mpi \\(pid [0-9]+, since [0-9:]+\\): wait for its window to end")))' \
	"$W/second.json"
check "second launcher: the failure is printed" grep -q "is attached by rocattach-mpi" "$W/second.out"
check "second launcher: reached no tool" test ! -e "$W/second"
wait "$L"
rc=$?
check "first launcher: exit 0 (got $rc)" exit_ok "$rc" "$W/first.json"
for p in "${RANKS[@]}"; do
	check "first window: pid $p attached once" test "$(events "$W/first" tool_attach "$p")" -eq 1
	check "first window: pid $p detached once" test "$(events "$W/first" tool_detach "$p")" -eq 1
done

# 5. No targets; bad options (one line, from rank 0 only, nothing touched).
mpirun -np 2 "$LAUNCHER" --exe no-such-program -t "$TOOL" -d 10 </dev/null >"$W/l5.out" 2>&1
check "no targets: exit 3" test $? -eq 3
export ROCPROF_OUTPUT_PATH=$W/w6
mpirun -np 2 "$LAUNCHER" --mpi-job="$JOB" -t "$TOOL" --windows 1:2 </dev/null >"$W/l6.out" 2>&1
check "bad options: exit 2" test $? -eq 2
check "bad options: one line" test "$(grep -c '^rocattach-mpi: ' "$W/l6.out")" -eq 1
check "bad options: nothing attached" test ! -e "$W/w6"

# 6. --inject: a program started without any attach support.
"$B/bin/rocattach-example-target" --threads 1 </dev/null >/dev/null 2>&1 &
PLAIN=$!
CHILDREN+=("$PLAIN")
sleep 0.3
export ROCPROF_OUTPUT_PATH=$W/w7
mpirun -np 1 "$LAUNCHER" --pid "$PLAIN" -t "$TOOL" -d 200 </dev/null >"$W/l7.out" 2>&1
check "without --inject: exit 4 (no listener)" test $? -eq 4
check "without --inject: the cause is named" grep -q "ROCP_TOOL_ATTACH=1" "$W/l7.out"
mpirun -np 1 "$LAUNCHER" --pid "$PLAIN" --inject -t "$TOOL" -d 200 \
	</dev/null >"$W/l8.out" 2>&1
check "--inject: exit 0" test $? -eq 0
check "--inject: full lifecycle in the plain program" test \
	"$(awk '{print $1}' "$W"/w7/rocattach-tool.*."$PLAIN".log | tr '\n' ' ')" = \
	"configure configure_attach initialize tool_attach tool_detach "
check "--inject: plain program alive, untraced" grep -q "TracerPid:	0" "/proc/$PLAIN/status"
kill "$PLAIN"

# Other people's work was never touched: not in any report, no tool ran, untraced.
for p in "${FOREIGN[@]}"; do
	check "foreign $p in no report" eval '! report_pids "$W"/*.json | grep -qx "$p"'
	check "foreign $p: no tool ran" test -z "$(find "$W" -name "rocattach-tool.*.$p.log")"
	check "foreign $p alive" kill -0 "$p"
	check "foreign $p not traced" grep -q "TracerPid:	0" "/proc/$p/status"
done

# The job survived everything with its work going on.
for p in "${RANKS[@]}"; do
	check "rank pid $p alive" kill -0 "$p"
	check "rank pid $p not traced" grep -q "TracerPid:	0" "/proc/$p/status"
done
kill -TERM "$JOB_PID"; wait "$JOB_PID"
check "job ended cleanly" test "$(grep -c '^done' "$W/job.out")" -eq 4
rm -rf "$W"
finish
