#!/usr/bin/env bash
# Python frames in the stack tool's snapshots (docs/stacks.md), on real processes of
# Debian's /usr/bin/python3 (3.11), attached with rocattach on both target sides (our
# agent, the double of ROCm's) and with --inject; the files named on the node
# (ra_stacks_print). Checked:
#   - the pinned 3.11 layout against the running interpreter (py_layout_check.py);
#   - py_target.py's threads, each at its known line ("# LINE:" marks), above the eval
#     loop's native frame: the main thread in stuck_here, pure-Python threads waiting on
#     the GIL, one in time.sleep with the GIL released, one in numpy's C code;
#   - an interpreter whose layout is not known (fake_python.c: a real Py_Version 3.14.0
#     symbol, or only Py_GetVersion "3.9.2"): native frames, and the reason above the
#     eval loop;
#   - each target lives on, untraced, not stopped, and answers.
# With "windows N" as the second argument instead: py_target.py with 100 threads (pure
# Python, numpy, sleeping, waiting) through N windows (snapshots, every other one also
# sampled at 99 Hz), the target checked after each, the time said.
# With "other 3.12" (or 3.13): the same checks on that CPython ($RA_PYTHON312 or
# $RA_PYTHON313, else pyenv's ~/.pyenv/versions/3.1X.*/bin/python3.1X), our agent's side;
# exit 77 if there is none. 3.13's layout is the one the node reads from the
# interpreter's _Py_DebugOffsets.
B=$(cd "${1:?usage: test_python.sh BUILD_DIR [windows N | other 3.12|3.13]}" && pwd)
MODE=${2:-snapshots}
WINDOWS=${3:-200} # windows N
ROCATTACH=$B/bin/rocattach
TOOL=$B/lib/librocattach-stacks.so
AGENT=$B/lib/librocattach-agent.so.0
DOUBLE=$B/tests/rocm/librocprofiler-register.so.0
PRINT=$B/bin/ra_stacks_print
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
TARGET=$HERE/py_target.py
W=$(mktemp -d /tmp/rocattach-python-test.XXXXXX)
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

WANT=3.11
if [ "$MODE" = other ]; then
	WANT=${3:?usage: test_python.sh BUILD_DIR other 3.12|3.13}
	var=RA_PYTHON${WANT/./}
	PY=${!var:-$(ls -d "$HOME"/.pyenv/versions/"$WANT".*/bin/python"$WANT" 2>/dev/null | tail -1)}
	if [ -z "$PY" ] || [ ! -x "$PY" ]; then
		echo "SKIP: no CPython $WANT here (set $var, or install one with pyenv)"
		exit 77
	fi
fi
if ! "$PY" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$WANT')"; then
	echo "SKIP: $PY is not CPython $WANT (Debian 12's python3 is 3.11; scripts/deps.sh)"
	exit 77
fi

# line NAME: the line of py_target.py marked "# LINE:NAME".
line() { grep -n "# LINE:$1\$" "$TARGET" | cut -d: -f1; }

# start NAME SIDE PROGRAM...: TPID, and the descriptor TFD[NAME] that feeds its stdin.
declare -A TFD
start() {
	local name=$1 side=$2 env=() fd
	shift 2
	case $side in
	agent) env=(ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT") ;;
	rocm) env=(ROCP_TOOL_ATTACH=1 LD_PRELOAD="$DOUBLE") ;;
	inject) env=() ;;
	esac
	mkfifo "$W/$name.in"
	env "${env[@]}" "$@" <"$W/$name.in" >"$W/$name.out" 2>"$W/$name.err" &
	TPID=$!
	PIDS+=("$TPID")
	exec {fd}>"$W/$name.in"
	TFD[$name]=$fd
	for _ in $(seq 300); do
		grep -q '^ready$' "$W/$name.out" && return 0
		sleep 0.02
	done
	echo "target $name did not start: $(cat "$W/$name.err")"
	return 1
}

# ask NAME CMD WANT: the target answers CMD with the line WANT within 5 s.
ask() {
	echo "$2" >&"${TFD[$1]}"
	for _ in $(seq 250); do
		grep -qx "$3" "$W/$1.out" && return 0
		sleep 0.02
	done
	return 1
}

# attach NAME PID MS [rocattach options]: RC; the tool's file as $W/NAME.txt and its
# snapshot folded (named on the node) in $W/NAME.folded.
attach() {
	local name=$1 pid=$2 ms=$3 f
	shift 3
	rm -rf "$W/o_$name"
	ROCPROF_OUTPUT_PATH=$W/o_$name "$ROCATTACH" -p "$pid" -t "$TOOL" -d "$ms" "$@" \
		>"$W/$name.rocattach" 2>&1
	RC=$?
	f=$(ls "$W/o_$name"/rocattach-stacks.*."$pid".*.txt 2>/dev/null | head -1)
	: >"$W/$name.folded"
	: >"$W/$name.txt"
	[ -n "$f" ] || return 0
	mv "$f" "$W/$name.txt"
	[ -n "${NO_FOLD:-}" ] || "$PRINT" --fold h 0 "$W/$name.txt" >"$W/$name.folded" 2>&1
}

# unharmed PID: alive, not stopped, not traced.
unharmed() {
	local s
	s=$(cat "/proc/$1/status" 2>/dev/null) || return 1
	grep -qE '^TracerPid:[[:space:]]+0$' <<<"$s" && ! grep -qE '^State:[[:space:]]+[tT]' <<<"$s"
}

has() { grep -qE -- "$2" "$1"; }

layout_check() {
	if [ "$WANT" = 3.13 ]; then # the layout as the node reads it from the interpreter
		"$PY" "$HERE/py_layout_check.py" --print "$PRINT" >"$W/layout.out" 2>&1
	else
		"$PRINT" --py-layout "$WANT" >"$W/layout.txt"
		"$PY" "$HERE/py_layout_check.py" "$W/layout.txt" >"$W/layout.out" 2>&1
	fi
	local rc=$?
	sed 's/^/  /' "$W/layout.out"
	check "the $WANT layout matches the running interpreter $PY (rc $rc)" test "$rc" -eq 0
}

# The known threads of py_target.py in the snapshots of window files $W/NAME.*.folded.
target_checks() {
	local name=$1 all="$W/$1.all" eval='_PyEval_EvalFrameDefault'
	cat "$W/$name".[0-9]*.folded >"$all"
	local stuck="stuck_here \(py_target.py:($(line stuck_while)|$(line stuck_here))\)"
	local spin="spin_a \(py_target.py:($(line spin_for)|$(line spin_a))\)"
	check "$name: the main thread: <module> > main > stuck_here at its lines" \
		has "$all" "$eval;<module> \(py_target.py:[0-9]+\);main \(py_target.py:[0-9]+\);$stuck(;| )"
	check "$name: threads start in threading's _bootstrap above the eval loop" \
		has "$all" "start_thread;.*$eval;Thread._bootstrap \(threading.py:[0-9]+\);"
	check "$name: sleeper in time.sleep, the GIL released (line $(line sleeper))" \
		has "$all" "sleeper \(py_target.py:$(line sleeper)\);.*(clock_nanosleep|select|pthread_cond_timedwait)"
	check "$name: spinner > spin_a at its lines" \
		has "$all" ";spinner \(py_target.py:[0-9]+\);$spin(;| )"
	check "$name: a pure-Python thread waiting on the GIL (pthread_cond_timedwait)" \
		has "$all" "($spin|$stuck);([^;]*;){1,4}pthread_cond_timedwait"
	if "$PY" -c 'import numpy' 2>/dev/null; then
		check "$name: numpy_work at line $(line numpy_work), in numpy's C code" \
			has "$all" "numpy_work \(py_target.py:$(line numpy_work)\);[^ ]*(_multiarray_umath|blas|gemm)"
	elif [ "$WANT" = 3.11 ]; then
		bad "$name: numpy is missing (python3-numpy; scripts/deps.sh)"
	fi
	check "$name: the file says python $WANT and has Python frames" \
		has "$W/$name.0.txt" "^python_version ${WANT/./\\.}\\.[0-9]+ ${WANT/./\\.} [0-9a-f]+ [0-9a-f]+\$"
	check "$name: ... in pyframes lines" has "$W/$name.0.txt" '^pyframes [0-9]+ [0-9]+:'
	check "$name: no frame unnamed" bash -c "! grep -q '\[python ?\]' '$all'"
}

snapshots() {
	local sides=${1:-agent rocm inject}
	layout_check
	for side in $sides; do
		local opts=() name=py_$side
		[ "$side" = inject ] && opts=(--inject)
		start "$name" "$side" "$PY" "$TARGET" || {
			bad "$name: start"
			continue
		}
		local pid=$TPID
		sleep 0.5 # numpy imported, every thread in its loop
		for i in 0 1 2; do
			attach "$name.$i" "$pid" 100 "${opts[@]}"
			check "$name: window $i: rocattach exit 0 (got $RC)" test "$RC" -eq 0
		done
		target_checks "$name"
		check "$name: unharmed (alive, not stopped, not traced)" unharmed "$pid"
		check "$name: still answers" ask "$name" "threads 2" "added 2"
		eval "exec ${TFD[$name]}>&-"
	done
	[ "$WANT" = 3.11 ] && unknown
}

# An interpreter whose layout is not known: native frames and the reason.
unknown() {
	local kind name
	for kind in new old; do
		name=fake_$kind
		start "$name" agent "$B/bin/ra_fake_python_$kind" || {
			bad "$name: start"
			continue
		}
		attach "$name" "$TPID" 100
		local want="python 3.14.0: layout not known"
		[ $kind = old ] && want="python 3.9.2: layout not known"
		check "$name: the file says why: $want" has "$W/$name.txt" "^python_off $want\$"
		check "$name: ... and has no Python frames" bash -c "! grep -q '^pyframes' '$W/$name.txt'"
		check "$name: native frames, the reason above the eval loop" \
			has "$W/$name.folded" "main;_PyEval_EvalFrameDefault;\[python frames: $want\];(__GI___)?(libc_)?read"
		check "$name: unharmed" unharmed "$TPID"
		eval "exec ${TFD[$name]}>&-"
	done
}

# 100 threads through WINDOWS windows, every other one sampled at 99 Hz. Every window's
# file must have Python frames; every 20th is also named on the node (slower).
windows() {
	local name=py_many t0=$SECONDS bad_after=0 pyframes=0 i
	start "$name" agent "$PY" "$TARGET" || {
		bad "$name: start"
		return
	}
	local pid=$TPID
	check "$name: 94 more threads started" ask "$name" "threads 94" "added 94"
	check "$name: 100 threads" test "$(ls "/proc/$pid/task" | wc -l)" -ge 100
	for ((i = 0; i < WINDOWS; i++)); do
		local no_fold=
		((i % 20)) && no_fold=1
		if ((i % 2)); then
			NO_FOLD=$no_fold ROCPROF_STACKS_HZ=99 attach "$name.w" "$pid" 30
		else
			NO_FOLD=$no_fold attach "$name.w" "$pid" 20
		fi
		[ "$RC" -eq 0 ] && unharmed "$pid" || bad_after=$((bad_after + 1))
		[ "$(grep -c '^pyframes ' "$W/$name.w.txt")" -ge 90 ] && pyframes=$((pyframes + 1))
		if [ -z "$no_fold" ]; then
			has "$W/$name.w.folded" "main \(py_target.py:[0-9]+\);stuck_here \(py_target.py:[0-9]+\)" ||
				bad "$name: window $i: stuck_here named"
		fi
	done
	check "$name: $WINDOWS windows, each exit 0 and the target unharmed after it ($bad_after not)" \
		test "$bad_after" -eq 0
	check "$name: 90 threads or more with Python frames in every window ($pyframes of $WINDOWS)" \
		test "$pyframes" -eq "$WINDOWS"
	check "$name: still 100 threads" test "$(ls "/proc/$pid/task" | wc -l)" -ge 100
	check "$name: still answers" ask "$name" "threads 1" "added 1"
	echo "time: $WINDOWS windows over 100 threads in $((SECONDS - t0)) s"
}

case $MODE in
snapshots) snapshots ;;
windows) windows ;;
other) snapshots agent ;;
*)
	echo "usage: test_python.sh BUILD_DIR [windows N | other 3.12|3.13]"
	exit 2
	;;
esac
echo "summary: $checks checks, $failures failures"
[ "$failures" -eq 0 ]
