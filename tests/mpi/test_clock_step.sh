#!/usr/bin/env bash
# Deadlines on CLOCK_MONOTONIC. Two launcher ranks on this machine, each in a PID
# namespace of its own with one example target (--one-node-per-rank: two nodes). Rank 1
# runs under libfaketime, its CLOCK_REALTIME read from a file (CLOCK_MONOTONIC left
# real); mid-window the file steps it by +5 s, then in other runs by -5 s and +15 s.
# No node is lost, the window is its -d, rank 1 holds it its real length (its detach
# call goes out 100 ms before the stop, stamped on its stepped clock), both tools
# detach at the stop, and the run takes no longer than a run without a step, give or
# take 2 s. (With the waits on the wall clock, rank 1 sent its detach calls at the
# step, and at +15 s gave rank 0 up and ended, lost.)
B=${1:?usage: test_clock_step.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
FAKETIME_LIB=${FAKETIME_LIB:-/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1}
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	echo "SKIP: needs root and unshare (a PID namespace per launcher rank)"
	exit 77
fi
if [ ! -e "$FAKETIME_LIB" ]; then
	echo "SKIP: no $FAKETIME_LIB (Debian package libfaketime)"
	exit 77
fi
W=$(mktemp -d /tmp/rocattach-clock-test.XXXXXX)
TARGET=$B/bin/rocattach-example-target
D=3000
WIN=(-d "$D")

# drift: rank 1's clock stepped +5 s 1 s into the first of 3 windows: the launcher's
# drift check (its stop and records' four timestamps) sees it, so rank 0 measures rank
# 1's clock again before window 2 (clocks are not measured before every window now):
# windows 2 and 3 have rank 1's offset at +5 s, corrected: rank 1 is given their start
# in its stepped clock (its target, whose clock libfaketime leaves alone, attaches 5 s
# after rank 0's start by its own clock), and the report, corrected back, has both
# tools attached within 50 ms of each start. That target's tools' windows are then
# a few ms long: windows 2 and 3 are off, exit 7.
# In a new PID namespace: start the target with our agent, wait for its listener, run "$@".
rank_script='t=$1 a=$2; shift 2
ROCP_TOOL_ATTACH=1 LD_PRELOAD=$a "$t" --threads 0 </dev/null >/dev/null 2>&1 &
i=0
while ! grep -qs rocp-bg-attach /proc/$!/task/*/comm && [ $i -lt 2000 ]; do
	sleep 0.005; i=$((i + 1))
done
"$@"'
rank() { # rank CASE ENV...: one MPMD part; ENV goes to the launcher only
	local c=$1
	shift
	printf '%s\0' -np 1 unshare --pid --fork --mount-proc /bin/sh -c "$rank_script" \
		sh "$TARGET" "$AGENT" env "$@" "$LAUNCHER" --one-node-per-rank \
		--exe rocattach-example-target -t "$TOOL" "${WIN[@]}" --report "$W/r.$c.json"
}

# run CASE STEP: rank 1's wall clock stepped by STEP seconds 1 s into the window; sets
# ELAPSED (seconds) and RC.
run() {
	local c=$1 step=$2 t0
	echo "+0" >"$W/clock.$c"
	mapfile -d '' -t r0 < <(rank "$c" ROCPROF_OUTPUT_PATH="$W/t.$c")
	mapfile -d '' -t r1 < <(rank "$c" LD_PRELOAD="$FAKETIME_LIB" \
		FAKETIME_TIMESTAMP_FILE="$W/clock.$c" FAKETIME_NO_CACHE=1 \
		FAKETIME_DONT_FAKE_MONOTONIC=1)
	mkdir -p "$W/t.$c"
	t0=$(now)
	# Shared-memory transports do not cross PID namespaces: MPI over TCP.
	timeout 120 mpirun --bind-to none --mca btl self,tcp "${r0[@]}" : "${r1[@]}" \
		</dev/null >"$W/$c.out" 2>&1 &
	local m=$!
	for _ in $(seq 400); do
		grep -q "window 1: attached" "$W/$c.out" 2>/dev/null && break
		sleep 0.025
	done
	sleep 1
	echo "$step" >"$W/clock.$c"
	wait "$m"
	RC=$?
	ELAPSED=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
}

checks() { # CASE
	local c=$1
	check "$c: exit 0 (got $RC)" exit_ok "$RC" "$W/r.$c.json"
	check "$c: no node lost, both targets detached" jq -e --argjson rc "$RC" '.exit_code == $rc and
		(.windows[0].nodes | length == 2 and all(.state == "ok"))
		and ([.windows[0].nodes[].targets[].state] == ["detached", "detached"])' \
		"$W/r.$c.json"
	# (Within 1 us: jq reads the nanosecond times as doubles.)
	check "$c: the window is -d $D ms, stopped by its duration" jq -e --argjson d "$D" \
		'.windows[0] | .stop_reason == "duration" and
		 ((.stop_ns - .start_ns - $d * 1000000) | fabs) < 1000' "$W/r.$c.json"
	check "$c: both tools detached" test \
		"$(cat "$W/t.$c"/rocattach-tool.*.log 2>/dev/null | grep -c '^tool_detach ')" -eq 2
}

run none +0
checks none
BASE=$ELAPSED
check "no step: the run took $BASE s, less than -d plus 5 s" \
	awk -v e="$BASE" -v d="$D" 'BEGIN { exit !(e < d / 1000 + 5) }'
for step in +5 -5 +15; do
	c=step$step
	run "$c" "$step"
	checks "$c"
	check "$c: the run took $ELAPSED s, within 2 s of the run without a step ($BASE s)" \
		awk -v e="$ELAPSED" -v b="$BASE" 'BEGIN { exit !(e < b + 2) }'
	# Rank 1 stamps its detach call on its stepped clock; the tools run on the targets'.
	check "$c: rank 1 held the window its real length: detach call at stop ${step} s - 0.1 s" \
		jq -e --argjson s "${step#+}" '.windows[0] as $w | [$w.nodes[].targets[]
		| (.detach.start_ns - $w.stop_ns) / 1e9 - $s] | any(. > -0.3 and . < 0)' \
		"$W/r.$c.json"
	check "$c: both tools detached within 50 ms of the stop (targets' clocks)" jq -e \
		'.windows[0] as $w | [$w.nodes[].targets[] | .detach.tool_ns - $w.stop_ns]
		 | length == 2 and all(. > -50000000 and . < 50000000)' "$W/r.$c.json"
done
c=drift
WIN=(--windows "500:$D:3")
run "$c" +5
# libfaketime steps the launcher's clock only, not its target's: that target's tools
# really get windows 2 and 3 5 s late (a few ms long), and the run says so: exit 7.
check "$c: exit 7 (got $RC), 3 windows, no node lost, windows 2 and 3 off" jq -e \
	'.exit_code == 7 and (.windows | length == 3) and all(.windows[].nodes[]; .state == "ok")
	 and ([.windows[].length.off] == [false, true, true])' "$W/r.$c.json"
echo "$c: rank 1's offsets (ns): $(jq -c '[.windows[].nodes[1].clock_offset_ns]' "$W/r.$c.json")"
check "$c: window 1 measured rank 1's clock as it was (offset within 0.1 s of 0)" jq -e \
	'.windows[0].nodes[1].clock_offset_ns | fabs < 100000000' "$W/r.$c.json"
check "$c: windows 2 and 3: rank 1's clock measured again, +5 s, corrected" jq -e \
	'[.windows[1:][] | .nodes[1] | select((.clock_offset_ns - 5e9 | fabs) < 1e8 and
	.clock_corrected)] | length == 2' "$W/r.$c.json"
for w in 1 2; do
	s=$(jq -r ".windows[$w].start_ns" "$W/r.$c.json")
	check "$c: window $((w + 1)): rank 1's tool attached 5 s after the start by its target's clock" \
		test "$(cat "$W/t.$c"/rocattach-tool.*.log | sed -n 's/^tool_attach .* ns=\([0-9]*\).*/\1/p' |
		awk -v s="$s" '{ d = ($1 - s) / 1e6 - 5000; if (d > -1 && d < 50) n++ } END { print n + 0 }')" -eq 1
	check "$c: window $((w + 1)): the report, corrected, has both tools attached within 50 ms of its start" \
		jq -e --argjson w "$w" '.windows[$w] as $x | [$x.nodes[].targets[] |
		(.attach.tool_ns - $x.start_ns)] | length == 2 and all(. > -1000000 and . < 50000000)' \
		"$W/r.$c.json"
done
if [ "$FAILED" -eq 0 ] && [ -z "${KEEP:-}" ]; then rm -rf "$W"; elif [ "$FAILED" -ne 0 ]; then cat "$W"/*.out >&2; fi
finish
