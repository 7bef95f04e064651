#!/usr/bin/env bash
# Sampled windows of the stack tool over a program whose threads come and go
# (ra_stacks_churn: a new short thread every 4 ms that lives 1 to 20 ms, a long one
# every 300 ms that lives 1.5 s). Two such programs, one on our agent's side and one on
# ROCm's (the double). Window after window, by turns: `rocattach-mpi --pid P --sample 499
# -d 50`, or, faster (no MPI start-up), rocattach with the same tool and the same two
# variables the launcher sends (ROCPROF_STACKS_HZ=499, ROCPROF_OUTPUT_PATH). After each
# window:
#   - /proc/P/timers lists no timer with the tool's signal (its file names the signal);
#   - that signal is pending in no thread and not in the process's shared set;
#   - SigCgt and SigIgn of the process, and SigBlk of its main thread, are as before;
#   - the program is alive, not traced, its threads still come and go, no chunk of its
#     work went wrong.
# At the end the program stops its threads and checks its own signal dispositions and
# mask against the start (exit 0). The tool's files say that threads were seen, ended
# in the window and were sampled, so the windows really sampled churning threads.
#
# usage: test_sample_churn.sh BUILD_DIR [WINDOWS [LAUNCHER_EVERY]]
#   WINDOWS (default 200) in all, by turns on each side; every LAUNCHER_EVERY-th
#   (default 20) of a side is a rocattach-mpi run, the others rocattach runs; 1: all
#   rocattach-mpi (an MPI start-up each, about 1.5 s, against 0.15 s).
# ROCATTACH_STACKS_TOOL: another build of the tool (the launcher's own variable).
# The caller holds /tmp/rocattach-heavy.lock (CTest and bench/soak_sample.sh do).
# The last line: "summary: windows N run (L by rocattach-mpi), timers left N, pending N,
# dispositions changed N, target alive yes|no, bad chunks N, failures N".
B=$(cd "${1:?usage: test_sample_churn.sh BUILD_DIR [WINDOWS [LAUNCHER_EVERY]]}" && pwd)
WINDOWS=${2:-200}
EVERY=${3:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ROCATTACH=$B/bin/rocattach
LAUNCHER=$B/bin/rocattach-mpi
TOOL=${ROCATTACH_STACKS_TOOL:-$B/lib/librocattach-stacks.so}
export ROCATTACH_STACKS_TOOL=$TOOL
AGENT=$B/lib/librocattach-agent.so.0
DOUBLE=$B/tests/rocm/librocprofiler-register.so.0
CHURN=$B/bin/ra_stacks_churn
W=$(mktemp -d /tmp/rocattach-churn-test.XXXXXX)
unset ROCATTACH_AGENT ROCP_TOOL_ATTACH ROCPROF_ATTACH_TOOL_LIBRARY LD_PRELOAD ROCPROF_STACKS_HZ
PIDS=()
failures=0
checks=0
declare -A TFD OFD TPID SIG BASE first

cleanup() {
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT

bad() {
	failures=$((failures + 1))
	echo "FAIL: $1"
}
check() { # check NAME COMMAND...: silent when it holds (hundreds of windows)
	local name=$1
	shift
	checks=$((checks + 1))
	"$@" || bad "$name"
}

# start SIDE: a churning program on that side; TPID[SIDE], TFD[SIDE] feeds its stdin and
# OFD[SIDE] reads its answers (FIFOs both: a question costs no process).
start() {
	local side=$1 pre=$AGENT fd line
	[ "$side" = rocm ] && pre=$DOUBLE
	mkfifo "$W/$side.in" "$W/$side.out"
	ROCP_TOOL_ATTACH=1 LD_PRELOAD=$pre MY_RANK=0 "$CHURN" <"$W/$side.in" \
		>"$W/$side.out" 2>"$W/$side.err" &
	TPID[$side]=$!
	PIDS+=("$!")
	exec {fd}>"$W/$side.in"
	TFD[$side]=$fd
	exec {fd}<"$W/$side.out"
	OFD[$side]=$fd
	if read -r -t 5 -u "$fd" line && [ "$line" = ready ]; then
		return 0
	fi
	echo "the $side program did not start: $(cat "$W/$side.err")"
	return 1
}

# ask SIDE CMD: its answer (its next line), within 5 s.
ask() {
	local line
	{ echo "$2" >&"${TFD[$1]}"; } 2>/dev/null || return 1
	read -r -t 5 -u "${OFD[$1]}" line || return 1
	echo "$line"
}

# proc_facts PID SIG: one look at /proc (one process): "TIMERS PENDING TRACER STATE", where
# TIMERS counts the timers with a real-time signal (the tool's: the program sets no timer
# and the tool takes only real-time signals; a timer one window leaves can push the next
# window's choice down, so not only SIG is counted), PENDING the threads (and the shared
# set) where SIG is pending, TRACER the TracerPid, STATE the process's SigCgt, SigIgn and
# its main thread's SigBlk.
proc_facts() {
	# Threads end while this reads: a file that is gone is skipped (getline, not a
	# file argument, which would end awk).
	awk -v sig="$2" -v main="/proc/$1/status" -v timers="/proc/$1/timers" '
		function bit(hex, n,   i, c) {
			# bit n-1 of a 16-digit hex mask
			i = 16 - int((n - 1) / 4)
			c = index("0123456789abcdef", substr(hex, i, 1)) - 1
			return int(c / 2 ^ ((n - 1) % 4)) % 2
		}
		BEGIN {
			while ((getline l < timers) > 0)
				if (split(l, a, /[ \/]+/) > 1 && a[1] == "signal:" && a[2] >= 34 &&
				    a[2] <= 64)
					t++
			for (i = 1; i < ARGC; i++)
				while ((getline l < ARGV[i]) > 0) {
					split(l, a, /[ \t]+/)
					if ((a[1] == "SigPnd:" || a[1] == "ShdPnd:") && bit(a[2], sig))
						p++
					if (ARGV[i] != main)
						continue
					if (a[1] == "TracerPid:")
						tr = a[2]
					if (a[1] == "SigCgt:" || a[1] == "SigIgn:" || a[1] == "SigBlk:")
						s = s a[1] a[2] " "
				}
			print t + 0, p + 0, tr + 0, s
		}' /proc/"$1"/task/*/status "/proc/$1/status"
}

# window SIDE N: one sampled window over that side's program; RC, and its tool's file
# (rocattach runs) in $W/o.
window() {
	local side=$1 n=$2
	rm -rf "$W/o"
	if [ $((n % EVERY)) -eq 0 ]; then
		LAUNCHED=$((LAUNCHED + 1))
		"$LAUNCHER" --pid "${TPID[$side]}" --rank-var MY_RANK --sample 499 -d 50 \
			</dev/null >"$W/last.out" 2>&1
	else
		ROCPROF_STACKS_HZ=499 ROCPROF_OUTPUT_PATH=$W/o "$ROCATTACH" -p "${TPID[$side]}" \
			-t "$TOOL" -d 50 >"$W/last.out" 2>&1
	fi
	RC=$?
}

# tool_file_facts: from the tool's file in $W/o, "SIG THREADS ENDED SAMPLED_THREADS".
tool_file_facts() {
	local f=("$W"/o/rocattach-stacks.*.txt)
	[ -f "${f[0]}" ] || return 1
	awk '/^signal / { s = $2 }
		/^thread / { n++; if ($3 == "ended") e++; if ($4 != "-") c++ }
		/^maps$/ { exit }
		END { print s + 0, n + 0, e + 0, c + 0 }' "${f[0]}"
}

# after SIDE N: the checks after window N.
after() {
	local side=$1 n=$2 pid=${TPID[$1]} facts s st t p tr state
	checks=$((checks + 8))
	[ "$RC" -eq 0 ] || bad "$side window $n: exit $RC: $(tail -3 "$W/last.out")"
	if facts=$(tool_file_facts); then
		read -r s st_threads st_ended st_sampled <<<"$facts"
		[ "${SIG[$side]:-}" ] || SIG[$side]=$s
		[ "$s" = "${SIG[$side]}" ] || bad "$side window $n: the tool took signal $s, not ${SIG[$side]}"
		SEEN=$((SEEN + st_threads))
		ENDED=$((ENDED + st_ended))
		SAMPLED=$((SAMPLED + st_sampled))
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		bad "$side window $n: the program died: $(tail -2 "$W/$side.err")"
		DEAD=yes
		return 1
	fi
	s=${SIG[$side]:-64}
	read -r t p tr state <<<"$(proc_facts "$pid" "$s")"
	LEFT=$((LEFT + t))
	[ "$t" -eq 0 ] || bad "$side window $n: $t timers of the tool left: $(cat /proc/"$pid"/timers)"
	PEND=$((PEND + p))
	[ "$p" -eq 0 ] || bad "$side window $n: signal $s pending in $p places"
	if [ "$state" != "${BASE[$side]}" ]; then
		CHANGED=$((CHANGED + 1))
		bad "$side window $n: dispositions $state, before ${BASE[$side]}"
	fi
	[ "$tr" -eq 0 ] || bad "$side window $n: traced by $tr"
	st=$(ask "$side" status) || bad "$side window $n: the program does not answer"
	case $st in
	*" bad 0 "*) ;;
	*) BADCHUNKS=$((BADCHUNKS + 1)) && bad "$side window $n: $st" ;;
	esac
}

T_MPI=0 T_RA=0 T_CHK=0 L0=0 LEFT=0 PEND=0 CHANGED=0 DEAD=no BADCHUNKS=0 LAUNCHED=0 SEEN=0 ENDED=0 SAMPLED=0
t0=$SECONDS
for side in agent rocm; do
	start "$side" || exit 1
	read -r _ _ _ BASE[$side] <<<"$(proc_facts "${TPID[$side]}" 64)"
	first[$side]=$(ask "$side" status)
done
run=0
for n in $(seq 1 "$WINDOWS"); do
	side=agent
	[ $((n % 2)) -eq 0 ] && side=rocm
	w0=${EPOCHREALTIME/./}
	window "$side" $(((n + 1) / 2))
	w1=${EPOCHREALTIME/./}
	if [ "$LAUNCHED" -gt "$L0" ]; then
		T_MPI=$((T_MPI + w1 - w0))
	else
		T_RA=$((T_RA + w1 - w0))
	fi
	L0=$LAUNCHED
	run=$n
	after "$side" $(((n + 1) / 2)) || break
	T_CHK=$((T_CHK + ${EPOCHREALTIME/./} - w1))
	if [ $((n % 100)) -eq 0 ]; then
		echo "$n windows, $((SECONDS - t0)) s, failures $failures"
	fi
done

# The windows really sampled churning threads (from the rocattach runs' files).
if [ "$LAUNCHED" -lt "$run" ]; then
	check "threads seen in the windows ($SEEN)" test "$SEEN" -gt 0
	check "threads that ended inside a window ($ENDED)" test "$ENDED" -gt 0
	check "threads sampled in a window ($SAMPLED)" test "$SAMPLED" -gt 0
fi
for side in agent rocm; do
	kill -0 "${TPID[$side]}" 2>/dev/null || continue
	last=$(ask "$side" status)
	check "$side: its threads went on coming and going ($(echo "${first[$side]}" |
		awk '{ print $3 }') then $(echo "$last" | awk '{ print $3 }'))" test "$(echo "$last" |
		awk '{ print $3 }')" -gt "$(echo "${first[$side]}" | awk '{ print $3 }')"
	done_line=$(ask "$side" quit)
	wait "${TPID[$side]}"
	rc=$?
	echo "$side: $done_line (exit $rc)"
	check "$side: the program ends well: its work and its signals intact" test "$rc" -eq 0
done
alive=yes
[ "$DEAD" = yes ] && alive=no
echo "summary: windows $run run ($LAUNCHED by rocattach-mpi), timers left $LEFT, pending $PEND," \
	"dispositions changed $CHANGED, target alive $alive, bad chunks $BADCHUNKS," \
	"$((SECONDS - t0)) s (rocattach-mpi $((T_MPI / 1000)) ms, rocattach $((T_RA / 1000)) ms, checks $((T_CHK / 1000)) ms), failures $failures of $checks checks"
[ "$failures" -eq 0 ] && [ "$run" -eq "$WINDOWS" ]
