#!/usr/bin/env bash
# Lateness is a figure, and never ok (issue 32, item 5), on real processes under
# one rocattach-mpi rank:
# 1. a window made late on purpose (--start-lead 0: the attaches go out at the
#    start): the report's window says how many targets' tools started late, p50
#    and max (checked against the tools' own records), the summary says it, and
#    the run exits 7, never 0;
# 2. the automatic lead on 100 targets: the first window is not late (a
#    correctness check with the tolerance of a 1 s window, not a speed target),
#    and the report says which lead was used and why;
# 3. ROCm's side (the double): the skew is a bound: in every window it is at
#    least the spread of the tools' own attach and detach times.
# Usage: test_late.sh BUILD_DIR   (under the heavy-test lock)
B=${1:?usage: test_late.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "SKIP: jq not found (package jq)"; exit 77; }
W=$(mktemp -d /tmp/rocattach-late-test.XXXXXX)
chmod 755 "$W"
. "$(dirname "$0")/../lib/windows.sh"
PIDS=()
cleanup_late() {
	[ ${#PIDS[@]} -gt 0 ] && kill "${PIDS[@]}" 2>/dev/null
	cleanup
	[ "${KEEP:-0}" = 1 ] || rm -rf "$W"
}
trap cleanup_late EXIT

# start_targets N PRELOAD: N example targets (attachable), their pids into PIDS.
start_targets() {
	local n=$1 pre=$2 up=0 i
	: >"$W/ready.out"
	PIDS=()
	for i in $(seq "$n"); do
		ROCP_TOOL_ATTACH=1 LD_PRELOAD="$pre" "$B/bin/rocattach-example-target" \
			--threads 0 </dev/null >>"$W/ready.out" 2>&1 &
		PIDS+=($!)
	done
	for i in $(seq 300); do
		up=$(grep -c '^ready' "$W/ready.out")
		[ "$up" = "$n" ] && return 0
		sleep 0.05
	done
	echo "targets did not start ($up of $n)" >&2
	return 1
}
pids() { (IFS=,; echo "${PIDS[*]}"); }
stop_targets() {
	kill "${PIDS[@]}" 2>/dev/null
	wait "${PIDS[@]}" 2>/dev/null
	PIDS=()
}

# run NAME ARGS...: one launcher rank over PIDS; rc in RC, report W/NAME.json.
run() {
	local name=$1
	shift
	export ROCPROF_OUTPUT_PATH=$W/$name
	mkdir -p "$ROCPROF_OUTPUT_PATH"
	mpirun -np 1 "$LAUNCHER" --pid "$(pids)" -t "$TOOL" --report "$W/$name.json" "$@" \
		</dev/null >"$W/$name.out" 2>&1
	RC=$?
}

echo "== 1. a late window: --start-lead 0 on 8 targets"
start_targets 8 "$AGENT" || exit 1
run late -d 300 --start-lead 0
check "late: exit 7 (got $RC)" test "$RC" = 7
[ "$RC" = 7 ] || tail -5 "$W/late.out"
check "late: the report's exit code is 7, its reason says late" jq -e \
	'.exit_code == 7 and (.exit_reason | test("window late"))' "$W/late.json"
check "late: the window counts its late targets, with p50 <= max, beyond the tolerance" jq -e \
	'.windows[0].late | .targets > 0 and .of == 8 and .off and .kind == "measured"
	 and .p50_ns != null and .p50_ns <= .max_ns and .p50_ns > .tolerance_ns' "$W/late.json"
check "late: the lead used is in the report (--start-lead 0)" jq -e \
	'.windows[0].lead | .ns == 0 and (.why | test("start-lead 0"))' "$W/late.json"
# The tools' own records: how many handed over past start + tolerance, and the latest.
start=$(jq '.windows[0].start_ns' "$W/late.json")
tol=$(jq '.windows[0].late.tolerance_ns' "$W/late.json")
own=$(tool_records "$W/late" | awk -v s="$start" -v t="$tol" '$3 == "tool_attach" {
	if ($4 - s > t) n++; if ($4 - s > m) m = $4 - s } END { printf "%d %d", n, m }')
# A tool reads its clock just after the hand-over our agent measures: up to 5 ms later.
check "late: the count is the tools' own ($own vs report)" test "${own% *}" -ge \
	"$(jq '.windows[0].late.targets' "$W/late.json")"
check "late: the max is the tools' own latest hand-over, within 5 ms" jq -e --argjson m "${own#* }" \
	'.windows[0].late.max_ns as $r | $m >= $r and $m - $r < 5e6' "$W/late.json"
check "late: the summary says how many and by how much" \
	grep -qE '^  LATE: [0-9]+ of 8 targets. tools started after the start \+ [0-9.]+ ms: late by p50 [0-9.]+ ms, max [0-9.]+ ms' \
	"$W/late.out"
check "late: the summary's last line says exit 7, not ok" \
	grep -qE '\(exit 7: 1 window late' "$W/late.out"
check "late: no summary line says ok" eval '! grep -q "exit 0: ok" "$W/late.out"'
stop_targets

echo "== 2. the automatic lead on 100 targets, two windows"
# The lead governs when the attach calls go in: each must be in before the
# start (a correctness check, not a speed target). Whether the tools then
# start on time is up to 100 targets waking on this machine's cores: the
# figure is checked against the records, and the exit code against it.
start_targets 100 "$AGENT" || exit 1
run lead --windows 300:500:2 -v
check "lead: exit 0, or 7 exactly when a window is off (got $RC)" jq -e --argjson rc "$RC" \
	'([.windows[].late.off] | any) as $off | ($off and $rc == 7) or (($off | not) and $rc == 0)' \
	"$W/lead.json"
grep -E "LATE|start lead" "$W/lead.out"
check "lead: each window says its lead and why" jq -e \
	'[.windows[].lead | .ns >= 50e6 and .ns <= 3e9 and (.why | length > 0)] | length == 2 and all' \
	"$W/lead.json"
check "lead: window 2's lead comes from window 1's measured attaches" jq -e \
	'.windows[1].lead.why | test("last window.s attaches ready in")' "$W/lead.json"
check "lead: -v says it" grep -q "start lead [0-9.]* ms: " "$W/lead.out"
# Under a sanitizer 100 calls take seconds to go out on 2 cores: said, not checked.
loose "lead: window 2: every attach call went in before the start" jq -e \
	'.windows[1].start_ns as $s | [.windows[1].nodes[].targets[] | .attach.call_start_ns < $s]
	 | length == 100 and all' "$W/lead.json"
for wi in 0 1; do
	check "lead: window $((wi + 1)): the late count and max are the records' own" jq -e --argjson w "$wi" \
		'.windows[$w] | .start_ns as $s | .late.tolerance_ns as $t |
		 [.nodes[].targets[] | .attach.tool_ns - $s | select(. > $t)] as $l |
		 # jq holds ns since the epoch as doubles: equal within 1 us.
		 (.late.targets - ($l | length) | . * . <= 1) and .late.of == 100 and
		 (if ($l | length) > 0 then (.late.max_ns - ($l | max) | . < 1e3 and . > -1e3)
		  else .late.max_ns == null end)' "$W/lead.json"
done
stop_targets

echo "== 3. ROCm's side: the skew is a bound in every window"
start_targets 6 "$DOUBLE" || exit 1
for i in 1 2 3; do
	run "rocm$i" -d 200
	check "rocm $i: exit 0 or 7 (got $RC)" test "$RC" = 0 -o "$RC" = 7
	check "rocm $i: the skew is a bound, made of the calls' edges" jq -e \
		'.windows[0].skew | .skew_kind == "bound" and (.made_of | test("upper bound"))
		 and .targets == 6 and .detach_targets == 6' "$W/rocm$i.json"
	# The tools' own spread (one clock: one node) against the report's figures.
	spread=$(tool_records "$W/rocm$i" | awk '{ k = $3; if (!(k in lo) || $4 < lo[k]) lo[k] = $4
		if ($4 > hi[k]) hi[k] = $4; n[k]++ }
		END { printf "%d %d %d", hi["tool_attach"] - lo["tool_attach"],
		      hi["tool_detach"] - lo["tool_detach"], n["tool_attach"] + n["tool_detach"] }')
	read -r own_a own_d own_n <<<"$spread"
	check "rocm $i: the tools' records of 6 attaches and 6 detaches ($own_n)" test "$own_n" = 12
	check "rocm $i: attach skew >= the tools' own spread ($own_a ns)" jq -e --argjson o "$own_a" \
		'.windows[0].skew.attach_ns >= $o' "$W/rocm$i.json"
	check "rocm $i: detach skew >= the tools' own spread ($own_d ns)" jq -e --argjson o "$own_d" \
		'.windows[0].skew.detach_ns >= $o' "$W/rocm$i.json"
	check "rocm $i: the summary labels it a bound" grep -q "a bound: 6 from their calls" \
		"$W/rocm$i.out"
done
stop_targets

echo "passed $PASSED, failed $FAILED"
[ "$FAILED" -eq 0 ]
