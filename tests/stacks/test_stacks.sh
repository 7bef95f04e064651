#!/usr/bin/env bash
# The stack tool (librocattach-stacks.so) attached with rocattach to real processes, on
# both target sides (our agent, the double of ROCm's) and with --inject; its files are
# symbolized on the node (ra_stacks_print). The target (stacks_target.c) has a thread
# spinning in stuck_here, two blocked in read(2) in wait_in_read, and the main thread in
# fgets. Checked: the snapshot names them; sampling at 99 Hz gives 99 samples per
# second of a busy thread's CPU time; a program's own SIGPROF timer and handler, its
# signals and masks, and its timers are as before; a thread created and one ending in
# the window; a handler the program gives the tool's signal in the window stops the
# sampling and stays; the target exiting in the window does not hang the detach.
B=$(cd "${1:?usage: test_stacks.sh BUILD_DIR}" && pwd)
ROCATTACH=$B/bin/rocattach
TOOL=$B/lib/librocattach-stacks.so
AGENT=$B/lib/librocattach-agent.so.0
DOUBLE=$B/tests/rocm/librocprofiler-register.so.0
TARGET=$B/bin/ra_stacks_target
PRINT=$B/bin/ra_stacks_print
W=$(mktemp -d /tmp/rocattach-stacks-test.XXXXXX)
unset ROCATTACH_AGENT ROCP_TOOL_ATTACH ROCPROF_ATTACH_TOOL_LIBRARY LD_PRELOAD ROCPROF_STACKS_HZ
PIDS=()
failures=0
checks=0

cleanup() {
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT

ok() {
	checks=$((checks + 1))
	echo "ok: $1"
}
bad() {
	checks=$((checks + 1))
	failures=$((failures + 1))
	echo "FAIL: $1"
}
check() { # check NAME COMMAND...
	local name=$1
	shift
	if "$@"; then ok "$name"; else bad "$name"; fi
}

# start_target NAME SIDE [ARGS]: TPID, and the descriptor TFD[NAME] that feeds its stdin.
declare -A TFD
start_target() {
	local name=$1 side=$2 env=() fd
	shift 2
	case $side in
	agent) env=(ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT") ;;
	rocm) env=(ROCP_TOOL_ATTACH=1 LD_PRELOAD="$DOUBLE") ;;
	inject) env=() ;;
	esac
	mkfifo "$W/$name.in"
	env "${env[@]}" "$TARGET" "$@" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.err" &
	TPID=$!
	PIDS+=("$TPID")
	exec {fd}>"$W/$name.in"
	TFD[$name]=$fd
	for _ in $(seq 200); do
		grep -q '^ready$' "$W/$name.out" && return 0
		sleep 0.02
	done
	echo "target $name did not start: $(cat "$W/$name.err")"
	return 1
}

# ask NAME CMD: its answer (the next line of its output).
ask() {
	local n
	n=$(wc -l <"$W/$1.out")
	echo "$2" >&"${TFD[$1]}"
	for _ in $(seq 250); do
		if [ "$(wc -l <"$W/$1.out")" -gt "$n" ]; then
			sed -n "$((n + 1))p" "$W/$1.out"
			return 0
		fi
		sleep 0.02
	done
	echo "no answer to $2"
	return 1
}

# attach NAME PID MS [rocattach options]: rocattach with the stack tool; RC, and the
# symbolized file in $W/NAME.stacks.
attach() {
	local name=$1 pid=$2 ms=$3
	shift 3
	ROCPROF_OUTPUT_PATH=$W/o_$name "$ROCATTACH" -p "$pid" -t "$TOOL" -d "$ms" "$@" \
		>"$W/$name.rocattach" 2>&1
	RC=$?
	symbolize "$name"
}
symbolize() {
	local f
	f=$(ls "$W/o_$1"/rocattach-stacks.*."$TPID".*.txt 2>/dev/null | head -1)
	: >"$W/$1.stacks"
	[ -n "$f" ] && "$PRINT" "$f" >"$W/$1.stacks" 2>&1
}

# snap_has STACKS THREADNAME FUNC: some snapshot of a thread so named is "ok" and has FUNC.
snap_has() {
	awk -v t="$2" -v f="$3" '
		/^snapshot / { cur = ($3 == "ok" && $4 == t) }
		/^  #/ && cur && ($2 == f) { found = 1 }
		END { exit !found }' "$1"
}
# samples STACKS THREADNAME: the sample count of the first thread so named.
samples() {
	awk -v t="$2" '/^samples / && $4 == t { print $3; exit }' "$1"
}
# samples_in STACKS THREADNAME FUNC: how many of its samples have FUNC.
samples_in() {
	awk -v t="$2" -v f="$3" '
		/^samples / { cur = ($4 == t) }
		/^  in / && cur && $3 == f { print $2; exit }' "$1"
}
tid_of() { # tid_of PID NAME
	grep -lx "$2" /proc/"$1"/task/*/comm 2>/dev/null | head -1 | cut -d/ -f5
}
cpu_ticks() { # cpu_ticks PID [TID]: utime+stime, clock ticks
	local f=/proc/$1/stat
	[ -n "${2:-}" ] && f=/proc/$1/task/$2/stat
	sed 's/.*) //' "$f" | awk '{ print $12 + $13 }'
}
# signal_state PID: SigCgt of the process and SigBlk of each of the given threads.
signal_state() {
	local pid=$1 t
	shift
	grep '^SigCgt' /proc/"$pid"/status
	for t in "$@"; do
		echo "$t $(grep '^SigBlk' /proc/"$pid"/task/"$t"/status)"
	done
}
threads_of() {
	ls /proc/"$1"/task
}
# retire PID: a target whose section is done goes: its spinning thread would take CPU
# from the sections after it.
retire() {
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}
unharmed() { # unharmed NAME PID: still running, untraced, still spinning, no EINTR
	local a b
	a=$(ask "$1" spin | awk '{ print $2 }')
	sleep 0.1
	b=$(ask "$1" spin | awk '{ print $2 }')
	[ -d /proc/"$2" ] && grep -q '^TracerPid:[[:space:]]*0$' /proc/"$2"/status &&
		[ "$b" -gt "$a" ] && [ "$(ask "$1" eintr)" = "eintr 0" ]
}

# 1. The snapshot, on each side: every thread named where it is.
for side in agent rocm inject; do
	start_target "snap_$side" "$side" || exit 1
	opts=()
	[ "$side" = inject ] && opts=(--inject)
	tids=$(threads_of "$TPID")
	# shellcheck disable=SC2086
	before=$(signal_state "$TPID" $tids)
	timers_before=$(cat /proc/"$TPID"/timers)
	attach "snap_$side" "$TPID" 200 "${opts[@]}"
	check "$side: rocattach exit 0 (got $RC)" test "$RC" -eq 0
	check "$side: the file is read back" grep -q '^process ' "$W/snap_$side.stacks"
	check "$side: snapshot: stuck in stuck_here" snap_has "$W/snap_$side.stacks" stuck stuck_here
	check "$side: snapshot: both waiters in wait_in_read under read" test "$(awk '
		/^snapshot / { cur = ($3 == "ok" && $4 == "waiter") }
		/^snapshot / { prev = "" }
		/^  #/ && cur { if ($2 == "wait_in_read" && prev == "read") n++; prev = $2 }
		END { print n + 0 }' "$W/snap_$side.stacks")" -eq 2
	check "$side: snapshot: the main thread in main" \
		snap_has "$W/snap_$side.stacks" ra_stacks_targe main
	check "$side: snapshot only (hz 0): no samples" \
		test "$(grep -c '^sample ' "$W"/o_snap_"$side"/*.txt)" -eq 0
	check "$side: the file says which signal (a real-time one)" \
		grep -Eq '^signal (3[4-9]|[4-5][0-9]|6[0-4]) SIGRTMIN\+[0-9]+$' "$W"/o_snap_"$side"/*.txt
	check "$side: no answer invented: every 'ok' snapshot has frames" test "$(awk '
		/^snapshot [0-9]+ ok/ && NF < 5 { n++ } END { print n + 0 }' "$W"/o_snap_"$side"/*.txt)" \
		-eq 0
	check "$side: every 'ok' snapshot has its handler's time, under 1 s" test "$(awk '
		/^snapshot [0-9]+ ok / { ok[$2] = 1 }
		/^handler [0-9]+ [0-9]+$/ { if ($2 in ok && $3 > 0 && $3 < 1e9) h[$2] = 1 }
		END { n = 0; for (t in ok) if (!(t in h)) n++; print n + (length(ok) == 0) }' \
		"$W"/o_snap_"$side"/*.txt)" -eq 0
	# shellcheck disable=SC2086
	after=$(signal_state "$TPID" $tids)
	check "$side: SigCgt and each thread's SigBlk as before" test "$before" = "$after"
	check "$side: the process's timers as before" \
		test "$timers_before" = "$(cat /proc/"$TPID"/timers)"
	check "$side: the target is unharmed" unharmed "snap_$side" "$TPID"
	retire "$TPID"
	if [ "$failures" -gt 0 ]; then
		cat "$W/snap_$side.rocattach" "$W/snap_$side.stacks"
	fi
done

# The three snapshots above as ranks 0-2 of one job, merged into one tree on "rank 0":
# one line per run that all three share, the stuck threads and the waiters apart.
for i in 0 1 2; do
	side=$(echo agent rocm inject | cut -d' ' -f$((i + 1)))
	"$PRINT" --fold "host$i" "$i" "$(ls "$W"/o_snap_"$side"/*.txt)"
done >"$W/job.folded"
"$PRINT" --tree <"$W/job.folded" >"$W/job.tree"
cat "$W/job.tree"
check "tree: the stuck threads of ranks 0-2 in one line ending in stuck_here" \
	grep -Eq '^ *\[0-2\] 3 threads: .*stuck_main > stuck_here$' "$W/job.tree"
check "tree: the waiters of ranks 0-2 in one line ending in read" \
	grep -Eq '^ *\[0-2\] 6 threads: .*waiter_main > wait_in_read > read( > [^>]*)?$' "$W/job.tree"
check "tree: the main threads in fgets" grep -Eq '^ *\[0-2\] 3 threads: .*main > fgets' \
	"$W/job.tree"

# attach_busy NAME PID [rocattach options]: a window at 99 Hz that lasts until the busy
# thread has used 150 ms of CPU (a loaded machine gives it little), 1 s at least, 20 s
# at most; RC and $W/NAME.stacks as attach gives them.
attach_busy() {
	local name=$1 pid=$2 rp c0 tid t0=$SECONDS
	shift 2
	tid=$(tid_of "$pid" stuck)
	ROCPROF_STACKS_HZ=99 ROCPROF_OUTPUT_PATH=$W/o_$name "$ROCATTACH" -p "$pid" -t "$TOOL" "$@" \
		</dev/null >"$W/$name.rocattach" 2>&1 &
	rp=$!
	for _ in $(seq 500); do
		grep -q 'attached to process' "$W/$name.rocattach" && break
		sleep 0.02
	done
	c0=$(cpu_ticks "$pid" "$tid")
	sleep 1
	while [ $(($(cpu_ticks "$pid" "$tid") - c0)) -lt 15 ] && [ $((SECONDS - t0)) -lt 20 ]; do
		sleep 0.2
	done
	kill -INT "$rp"
	wait "$rp"
	RC=$?
	symbolize "$name"
}

# 2. Sampling at 99 Hz through a window of 150 ms of the busy thread's CPU time: 99 samples per second of the busy thread's
#    CPU time while it was sampled (the tool measures it: the machine is shared, so
#    wall time says little), within 10% + 2; none for the blocked ones.
for side in agent rocm inject; do
	start_target "hz_$side" "$side" || exit 1
	opts=()
	[ "$side" = inject ] && opts=(--inject)
	attach_busy "hz_$side" "$TPID" "${opts[@]}"
	n=$(samples "$W/hz_$side.stacks" stuck)
	cpu_ms=$(awk '/^thread / && $5 == "stuck" { print int($4 / 1e6); exit }' "$W/hz_$side.stacks")
	want=$((cpu_ms * 99 / 1000))
	echo "$side: stuck thread: ${n:-none} samples for ${cpu_ms:-?} ms of CPU (99 Hz: $want)"
	check "$side: rocattach exit 0 (got $RC)" test "$RC" -eq 0
	# Expiries whose signal found the last one pending are counted as overruns, not sent.
	over=$(awk '/^process / { print $10 }' "$W/hz_$side.stacks")
	got=$((${n:-0} + ${over:-0}))
	check "$side: 99 Hz: samples + overruns ($got) = CPU time x 99 within 10% + 2" \
		test "$got" -ge $((want * 90 / 100 - 2)) -a "$got" -le $((want * 110 / 100 + 2)) \
		-a "${n:-0}" -ge 3
	check "$side: every sample of the busy thread is in stuck_here" \
		test "$(samples_in "$W/hz_$side.stacks" stuck stuck_here)" = "$n"
	check "$side: the blocked threads use no CPU: at most 2 samples each" test "$(awk '
		/^samples / && $4 == "waiter" { s += $3 } END { print s + 0 }' "$W/hz_$side.stacks")" \
		-le 4
	check "$side: nothing dropped" grep -q ' dropped 0$' "$W/hz_$side.stacks"
	grep '^process' "$W/hz_$side.stacks"
	check "$side: no timer left" test -z "$(cat /proc/"$TPID"/timers)"
	check "$side: the target is unharmed" unharmed "hz_$side" "$TPID"
	retire "$TPID"
done

# 3. A program with its own SIGPROF timer and handler: ticks keep following its CPU time,
#    its handler and timer stay, its signals and masks are as before.
start_target prof agent --sigprof || exit 1
tids=$(threads_of "$TPID")
# shellcheck disable=SC2086
before=$(signal_state "$TPID" $tids)
t0=$(ask prof ticks)
c0=$(cpu_ticks "$TPID")
ROCPROF_STACKS_HZ=99 attach prof "$TPID" 1000
t1=$(ask prof ticks)
c1=$(cpu_ticks "$TPID")
# shellcheck disable=SC2086
after=$(signal_state "$TPID" $tids)
d=$(($(echo "$t1" | awk '{ print $2 }') - $(echo "$t0" | awk '{ print $2 }')))
cpu=$((c1 - c0))
echo "sigprof: $d ticks for ${cpu}0 ms of process CPU; before: $t0; after: $t1"
check "sigprof: rocattach exit 0 (got $RC)" test "$RC" -eq 0
check "sigprof: handler and ITIMER_PROF unchanged" eval '[[ "$t1" == *"handler=same itimer=armed" ]]'
check "sigprof: ticks follow the CPU time (100 Hz)" \
	test "$d" -ge $((cpu * 80 / 100 - 5)) -a "$d" -le $((cpu * 120 / 100 + 5))
check "sigprof: the tool did not take SIGPROF" eval '! grep -q "^signal 27 " "$W"/o_prof/*.txt'
check "sigprof: the tool sampled" test "$(samples "$W/prof.stacks" stuck)" -ge 3
check "sigprof: SigCgt and each thread's SigBlk as before" test "$before" = "$after"
check "sigprof: the target is unharmed" unharmed prof "$TPID"
retire "$TPID"

# 4. Signals the process uses are never taken: SIGRTMAX has a handler, SIGRTMAX-1 is
#    named by a timer, SIGRTMAX-2 is blocked: the tool takes SIGRTMAX-3.
start_target own agent --own-signals || exit 1
rtmax=$(($(kill -l RTMAX 2>/dev/null || echo 64)))
timers_before=$(cat /proc/"$TPID"/timers)
ROCPROF_STACKS_HZ=99 attach own "$TPID" 300
check "own signals: rocattach exit 0 (got $RC)" test "$RC" -eq 0
check "own signals: the tool takes SIGRTMAX-3 ($((rtmax - 3)))" \
	grep -q "^signal $((rtmax - 3)) " "$W"/o_own/*.txt
check "own signals: its timer is still there" test "$timers_before" = "$(cat /proc/"$TPID"/timers)"
check "own signals: snapshot of stuck" snap_has "$W/own.stacks" stuck stuck_here
check "own signals: the target is unharmed" unharmed own "$TPID"
retire "$TPID"

# 5. A thread created in the window, which ends in it: listed as ended, sampled in
#    short_lived; the threads of the start still sampled. A child forked in the window
#    gets the signal's disposition back.
start_target churn agent || exit 1
# No duration: the window ends on SIGINT, once the short thread has ended.
ROCPROF_OUTPUT_PATH=$W/o_churn ROCPROF_STACKS_HZ=99 "$ROCATTACH" -p "$TPID" -t "$TOOL" \
	</dev/null >"$W/churn.rocattach" 2>&1 &
rp=$!
for _ in $(seq 1500); do # up to 30 s: a sanitizer build starts slowly
	grep -q 'attached to process' "$W/churn.rocattach" && break
	sleep 0.02
done
# 300 ms of its CPU time: the tool gives new threads a timer within about 10 ms, later
# on a loaded machine; ~30 samples are due, at least one is checked.
ask churn "spawn 300" >/dev/null
child=$(ask churn fork)
# It is named just after it starts: see it, then see it gone (a bounded wait each).
for _ in $(seq 100); do
	[ -n "$(tid_of "$TPID" short)" ] && break
	sleep 0.02
done
for _ in $(seq 1000); do
	[ -n "$(tid_of "$TPID" short)" ] || break
	sleep 0.02
done
sleep 0.1
kill -INT "$rp"
wait "$rp"
RC=$?
symbolize churn
check "churn: rocattach exit 0 (got $RC)" test "$RC" -eq 0
check "churn: the short thread is listed as ended" grep -q '^thread [0-9]* ended - short$' \
	"$W/churn.stacks"
n_short=$(samples_in "$W/churn.stacks" short short_lived)
check "churn: it was sampled in short_lived (${n_short:-no} samples)" test "${n_short:-0}" -ge 1
if [ "${n_short:-0}" -lt 1 ]; then # what the tool saw of it, for the log
	grep -n 'short\|^note' "$W/churn.stacks" "$W"/o_churn/*.txt | head -20
	cat "$W/churn.rocattach"
fi
check "churn: the stuck thread too" test "$(samples "$W/churn.stacks" stuck)" -ge 3
check "churn: a child forked in the window has no handler of the tool ($child)" \
	test "$child" = "child handlers 0"
check "churn: the target is unharmed" unharmed churn "$TPID"
retire "$TPID"

# 6. The program gives the tool's signal a handler of its own in the window: the next
#    look of the tool's helper thread (10 to 100 ms apart) sees it; sampling stops there, every timer of the
#    tool is deleted, the file says so, and the program's handler stays after the detach
#    (the tool never takes it over). On each side.
for side in agent rocm; do
	start_target "take_$side" "$side" || exit 1
	# No duration: the window ends on SIGINT, after the take (a loaded machine may be slow
	# to answer).
	ROCPROF_OUTPUT_PATH=$W/o_take_$side ROCPROF_STACKS_HZ=99 "$ROCATTACH" -p "$TPID" \
		-t "$TOOL" </dev/null >"$W/take_$side.rocattach" 2>&1 &
	rp=$!
	for _ in $(seq 250); do
		grep -q 'attached to process' "$W/take_$side.rocattach" && break
		sleep 0.02
	done
	sleep 0.3
	# The tool's signal is the highest free one: SIGRTMAX in this target.
	rtmax=$(($(kill -l RTMAX 2>/dev/null || echo 64)))
	ask "take_$side" "take $rtmax" >/dev/null
	# The helper thread looks every 10 to 100 ms (slower while no thread comes or goes).
	for _ in $(seq 25); do
		sleep 0.02
		mid=$(grep -c "^signal: $rtmax/" /proc/"$TPID"/timers)
		[ "$mid" -eq 0 ] && break
	done
	kill -INT "$rp"
	wait "$rp"
	RC=$?
	f=$(ls "$W"/o_take_"$side"/*.txt 2>/dev/null | head -1)
	check "take $side: rocattach exit 0 (got $RC)" test "$RC" -eq 0
	check "take $side: the tool had taken SIGRTMAX" grep -q "^signal $rtmax " "$f"
	check "take $side: the file says the program took it" \
		grep -q "^note signal $rtmax was taken by the program .*(a handler of its own)" "$f"
	check "take $side: the tool's timers were gone within 0.5 s ($mid left)" test "$mid" -eq 0
	check "take $side: none after the detach" \
		test "$(grep -c "^signal: $rtmax/" /proc/"$TPID"/timers)" -eq 0
	check "take $side: the program's handler stays ($(ask "take_$side" "taken $rtmax"))" \
		eval '[[ "$(ask "take_$side" "taken $rtmax")" == *" handler=own" ]]'
	check "take $side: the target is unharmed" unharmed "take_$side" "$TPID"
	retire "$TPID"
done

# 7. The target exits in the window: the detach does not hang; it is reported as a
#    failed detach (exit 3), and the tool wrote its file at the exit.
start_target gone agent || exit 1
ROCPROF_OUTPUT_PATH=$W/o_gone ROCPROF_STACKS_HZ=99 "$ROCATTACH" -p "$TPID" -t "$TOOL" -d 3000 \
	>"$W/gone.rocattach" 2>&1 &
rp=$!
for _ in $(seq 1500); do # up to 30 s: a sanitizer build starts slowly
	grep -q 'attached to process' "$W/gone.rocattach" && break
	sleep 0.02
done
sleep 0.5
echo exit >&"${TFD[gone]}"
t0=$SECONDS
wait "$rp"
RC=$?
check "gone: rocattach ends within the window plus 5 s ($((SECONDS - t0)) s)" \
	test $((SECONDS - t0)) -le 8
check "gone: exit 3, detach failed (got $RC)" test "$RC" -eq 3
symbolize gone
check "gone: the tool wrote its file at exit, with samples" \
	test "$(samples "$W/gone.stacks" stuck)" -ge 1

# 8. --stacks after another tool (docs/stacks.md). Our agent takes another tool list between
#    windows: rocattach-mpi --stacks works and the tree has the stuck thread. ROCm's side keeps
#    its first attach's tool path: refused before the process is touched (rocattach under
#    strace makes no ptrace call), one line naming the kept path and the way out, exit 4; target untraced.
EXAMPLE=$B/lib/librocattach-example-tool.so
MPI=$B/bin/rocattach-mpi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for side in agent rocm; do
	OMPI_COMM_WORLD_RANK=0 start_target "after_$side" "$side" || exit 1
	ROCPROF_OUTPUT_PATH=$W/o_ex_$side "$ROCATTACH" -p "$TPID" -t "$EXAMPLE" -d 100 \
		>"$W/ex_$side.rocattach" 2>&1
	check "after $side: the example tool attached and detached first" test $? -eq 0
	(cd "$W" && "$MPI" --pid "$TPID" --stacks --report "$W/after_$side.json" </dev/null \
		>"$W/mpi_$side.out" 2>&1)
	RC=$?
	if [ "$side" = agent ]; then
		check "after agent: --stacks exit 0 (got $RC)" test "$RC" -eq 0
		check "after agent: the tree has the stuck thread" grep -q stuck_here "$W/mpi_$side.out"
	else
		check "after rocm: --stacks exit 4 (got $RC)" test "$RC" -eq 4
		check "after rocm: one line says ROCm keeps the first tool path and what to do" \
			test "$(grep -c "ROCm's side keeps the tool path of its first attach ($EXAMPLE) and refuses .*: attach with that tool, or start a new process for another" "$W/mpi_$side.out")" -ge 1
		strace -f -qq -e trace=ptrace -o "$W/after_rocm.strace" "$ROCATTACH" -p "$TPID" \
			-t "$TOOL" -d 100 >"$W/after_rocm.rocattach" 2>&1
		check "after rocm: rocattach refuses too (exit 1), no thread ever traced" test $? -eq 1 -a \
			"$(grep -c PTRACE_SEIZE "$W/after_rocm.strace")" -eq 0
		check "after rocm: no stack tool loaded in the target" \
			test "$(grep -c librocattach-stacks /proc/"$TPID"/maps)" -eq 0
	fi
	check "after $side: the target is unharmed" unharmed "after_$side" "$TPID"
	retire "$TPID"
	[ "$failures" -gt 0 ] && cat "$W/mpi_$side.out"
done

echo "stacks: $((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
