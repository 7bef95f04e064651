#!/usr/bin/env bash
# rocattach-mpi --sample on real processes (ra_stacks_target, ranks from MY_RANK): a
# thread spinning in stuck_here dominates; a thread created and ending in the window is
# sampled; a target that exits in the window still gives its samples. On our agent's
# side, ROCm's (the double) and with --inject. The folded lines start with the host and
# the rank; the flame graphs (merged and per rank) parse and draw what was sampled.
B=${1:?usage: test_sample.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
TARGET=$B/bin/ra_stacks_target
W=$(mktemp -d /tmp/rocattach-mpi-sample-test.XXXXXX)
trap 'cleanup; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
HOST=$(hostname)

# start_target NAME RANK PRELOAD|none: TPID; TFD[NAME] feeds its stdin.
declare -A TFD
start_target() {
	local name=$1 env=(env MY_RANK="$2") fd
	[ "$3" = none ] || env+=(ROCP_TOOL_ATTACH=1 LD_PRELOAD="$3")
	mkfifo "$W/$name.in"
	"${env[@]}" "$TARGET" <"$W/$name.in" >"$W/$name.out" 2>&1 &
	TPID=$!
	CHILDREN+=("$TPID")
	exec {fd}>"$W/$name.in"
	TFD[$name]=$fd
	for _ in $(seq 100); do
		grep -q '^ready' "$W/$name.out" && return 0
		sleep 0.05
	done
	echo "target $name did not start" >&2
	return 1
}

# Wait until launcher output $1 says the window's attaches are done, then $2 s more.
after_attach() {
	for _ in $(seq 200); do
		grep -q "window 1: attached" "$1" && break
		sleep 0.05
	done
	sleep "$2"
}

# The CPU time of process $1 in clock ticks (utime + stime), 0 once it is gone.
cpu_ticks() {
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ t = $12 + $13 } END { print t + 0 }'
}

# Until process $1 has run $2 more ticks of CPU (the samples follow its CPU
# time, not the wall clock: a loaded machine gives it less), 20 s at most.
after_cpu() {
	local t0
	t0=$(cpu_ticks "$1")
	for _ in $(seq 400); do
		kill -0 "$1" 2>/dev/null || return 0
		[ "$(cpu_ticks "$1")" -ge $((t0 + $2)) ] && return 0
		sleep 0.05
	done
}

# Samples of rank $2 in folded file $1 whose stack has frame $3 (all: $3 empty).
samples() {
	awk -v r="$HOST;rank $2;" -v f="$3" 'index($0, r) == 1 {
		n = split($0, a, " "); s = substr($0, 1, length($0) - length(a[n]) - 1)
		if (f == "" || index(";" s ";", ";" f ";")) t += a[n] } END { print t + 0 }' "$1"
}

# svg_has FILE TEXT: the SVG parses and a box's title starts with TEXT.
svg_has() {
	python3 -c '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
sys.exit(not any(t.startswith(sys.argv[2]) for t in texts))' "$1" "$2"
}

# 1. Rank 0 with our agent, rank 1 with ROCm's side. A thread is created in the window.
start_target a0 0 "$AGENT" || exit 1
P0=$TPID
start_target a1 1 "$DOUBLE" || exit 1
P1=$TPID
mpirun -np 1 "$LAUNCHER" --pid "$P0,$P1" --rank-var MY_RANK --sample 99 -d 2000 \
	--folded "$W/f1.txt" --flamegraph "$W/g1.svg" --flamegraph-per-rank \
	--report "$W/r1.json" --trace "$W/t1.json" </dev/null >"$W/l1.out" 2>&1 &
L=$!
after_attach "$W/l1.out" 0.3
echo "spawn 300" >&"${TFD[a0]}"
wait "$L"
rc=$?
check "sides: exit 0 (got $rc)" exit_ok "$rc" "$W/r1.json"
check "sides: every folded line starts with the host and a rank" \
	test "$(grep -vcE "^$HOST;rank [01];.+ [0-9]+$" "$W/f1.txt")" -eq 0
for r in 0 1; do
	all=$(samples "$W/f1.txt" $r "")
	hot=$(samples "$W/f1.txt" $r stuck_here)
	check "sides: rank $r sampled ($all samples)" test "$all" -ge 20
	check "sides: stuck_here dominates rank $r ($hot of $all)" test $((hot * 100)) -ge $((all * 70))
done
check "sides: the thread created in the window is sampled, in short_lived" \
	test "$(samples "$W/f1.txt" 0 short_lived)" -ge 5
hottest=$(awk '/^samples at 99 Hz/ { getline; print; exit }' "$W/l1.out")
check "sides: the summary names stuck_here first ($hottest)" eval '[[ $hottest == *" stuck_here" ]]'
check "sides: flame graph draws stuck_here" svg_has "$W/g1.svg" "stuck_here [ranks 0-1]"
check "sides: rank 0's flame graph has short_lived" svg_has "$W/g1.rank0.svg" "short_lived [ranks 0]"
check "sides: rank 1's flame graph has stuck_here" svg_has "$W/g1.rank1.svg" "stuck_here [ranks 1]"
check "sides: rank 1's flame graph has no short_lived" eval '! svg_has "$W/g1.rank1.svg" short_lived'
total=$(($(samples "$W/f1.txt" 0 "") + $(samples "$W/f1.txt" 1 "")))
check "sides: the trace has every sample ($total)" jq -e --argjson n "$total" \
	'[.traceEvents[] | select(.cat == "sample")] | length == $n' "$W/t1.json"
check "sides: the trace's samples lie in the window, on the node's process" jq -e --slurpfile r \
	"$W/r1.json" '($r[0].windows[0].start_ns / 1000) as $a | ($r[0].windows[0].stop_ns / 1000
	 + 100000) as $b | [.traceEvents[] | select(.cat == "sample")] | all(.ts >= $a and .ts <= $b
	 and .pid == 2 and (.name as $n | .args.stack | endswith(";" + $n)))' "$W/t1.json"
check "sides: the trace's stuck_here samples are both ranks'" jq -e \
	'[.traceEvents[] | select(.cat == "sample" and .name == "stuck_here") | .args.rank] | unique
	 == [0, 1]' "$W/t1.json"
check "sides: both targets still run" kill -0 "$P0" "$P1"
check "sides: the targets' sides" jq -e \
	'[.windows[0].nodes[].targets[].target_side] | sort == ["agent","rocm"]' "$W/r1.json"

# 2. --inject; rank 1 exits in the window: its samples come all the same.
start_target i0 0 none || exit 1
P0=$TPID
start_target i1 1 none || exit 1
P1=$TPID
mpirun -np 1 "$LAUNCHER" --pid "$P0,$P1" --rank-var MY_RANK --inject --sample 99 -d 4000 \
	--folded "$W/f2.txt" --flamegraph "$W/g2.svg" </dev/null >"$W/l2.out" 2>&1 &
L=$!
after_attach "$W/l2.out" 0
# 0.3 s of its CPU at 99 Hz: about 30 samples before it exits.
after_cpu "$P1" 30
echo exit >&"${TFD[i1]}"
wait "$L"
rc=$?
check "inject, an exit: exit 4, a target died attached (got $rc)" test "$rc" -eq 4
check "inject, an exit: the summary names it" grep -q "died with their tools attached" "$W/l2.out"
check "inject, an exit: the exited rank's samples are there" \
	test "$(samples "$W/f2.txt" 1 stuck_here)" -ge 10
check "inject, an exit: and the other's" test "$(samples "$W/f2.txt" 0 stuck_here)" -ge 20
check "inject, an exit: the flame graph parses" svg_has "$W/g2.svg" "stuck_here [ranks 0-1]"
check "inject, an exit: the other target still runs" kill -0 "$P0"

finish
