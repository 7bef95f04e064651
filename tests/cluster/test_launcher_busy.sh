#!/usr/bin/env bash
# A busy rank is not lost; a killed one is, on time. On 3 virtual nodes under
# a real mpirun:
#  1. busy: targets that work on CPU on every node, and 4 CPU hogs on the
#     machine's cores: 20 short windows in one rocattach-mpi run. No node is
#     lost, and in every window every target attached and detached (the
#     report, and the tool's own records: 20 tool_attach and tool_detach each);
#  2. killed: node2's launcher rank SIGKILLed mid-window (mpirun
#     --enable-recovery): node2 is lost, with a reason that names the wait,
#     and no later than the documented deadline: the stop + the records' wait
#     + its retry (the numbers the reason gives; 5 s + 2 s on a quick network),
#     plus a second of slack.
# Usage: test_launcher_busy.sh BUILD_DIR   (as root, under the heavy-test lock)
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"
. "$HERE/stage.sh"
BUILD=$(readlink -f "${1:?usage: $0 BUILD_DIR}")
WINDOWS=20

why=$(vc_missing_base) || vc_skip "$why"
command -v mpirun >/dev/null || vc_skip "mpirun not found (package openmpi-bin)"
command -v jq >/dev/null || vc_skip "jq not found (package jq)"
vc_close_fds

S=$VC_STATE
stage_build "$BUILD"
W=$STAGE/out
mkdir -p "$W"
HOGS=()
L=
stop_hogs() {
	[ ${#HOGS[@]} -gt 0 ] && kill "${HOGS[@]}" 2>/dev/null
	wait "${HOGS[@]}" 2>/dev/null
	HOGS=()
}
cleanup() {
	stop_hogs
	if [ -n "${FZ:-}" ] && [ -d "$FZ" ]; then
		echo THAWED >"$FZ/freezer.state"
		while read -r p; do echo "$p" >"${FZ%/*}/cgroup.procs"; done <"$FZ/cgroup.procs"
		rmdir "$FZ"
	fi
	[ -n "$L" ] && kill "$L" 2>/dev/null
}
vc_t_up 3 cleanup
AGENT=$B/lib/librocattach-agent.so.0
TOOL=$B/lib/librocattach-example-tool.so
HOSTS=(node1 node2 node3)
TARGET="^$B/bin/rocattach-example-target"

launcher() { # launcher OUTDIR ARGS...: one rank per node, from the head
	local out=$1
	shift
	"$S/vc-head" mpirun --hostfile "$S/hostfile" -np 3 --map-by ppr:1:node --enable-recovery \
		-x ROCPROF_OUTPUT_PATH="$out" "$B/bin/rocattach-mpi" "$@" </dev/null
}

echo "== 2 busy targets on each of 3 nodes (a worker thread each, hashing in 1 ms steps)"
for h in "${HOSTS[@]}"; do
	for _ in 1 2; do
		"$S/vc-exec" "$h" sh -c "ROCP_TOOL_ATTACH=1 LD_PRELOAD=$AGENT setsid \
			$B/bin/rocattach-example-target --threads 1 </dev/null >/dev/null 2>&1 &"
	done
done
for _ in $(seq 100); do
	up=0
	for h in "${HOSTS[@]}"; do
		up=$((up + $("$S/vc-exec" "$h" pgrep -cf "$TARGET")))
	done
	[ "$up" = 6 ] && break
	sleep 0.1
done
vc_t_eq "6 targets up" "$up" 6

echo "== 1. 4 CPU hogs on the $(nproc) cores, $WINDOWS windows of 200 ms, 50 ms apart"
for _ in 1 2 3 4; do
	sh -c 'while :; do :; done' &
	HOGS+=($!)
done
t0=$(vc_ms)
launcher "$W/t1" --exe rocattach-example-target -t "$TOOL" --windows "50:200:$WINDOWS" -v \
	--report "$W/r1.json" >"$W/l1.out" 2>&1
rc=$?
took=$(($(vc_ms) - t0))
stop_hogs
echo "busy run: $took ms"
# CPU hogs may make a window's tools start late: then the run says so (exit 7).
off1=$(jq '[.windows[] | select(.late.off == true)] | length' "$W/r1.json")
want1=0
[ "${off1:-0}" -gt 0 ] && want1=7
echo "busy run: $off1 of $WINDOWS windows off their plan"
# mpirun --enable-recovery (Open MPI 4.1) exits 0 whatever the ranks return: the
# run's code is the report's (and the summary's).
vc_t_eq "busy run: mpirun's exit code" "$rc" 0
[ "$(jq .exit_code "$W/r1.json")" = "$want1" ] || sed 's/^/  | /' "$W/l1.out" | tail -30
vc_t_cmd "busy run: no node lost (launcher output)" bash -c "! grep ' lost: ' '$W/l1.out'"
vc_t_eq "busy run: $WINDOWS windows in the report" "$(jq '.windows | length' "$W/r1.json")" \
	"$WINDOWS"
vc_t_eq "busy run: every window's 3 nodes ok" "$(jq -c '[.windows[] | [.nodes[] |
	select(.state == "ok")] | length] | unique' "$W/r1.json")" "[3]"
vc_t_eq "busy run: every window detached all 6 targets" "$(jq -c '[.windows[] | [.nodes[].targets[] |
	select(.state == "detached")] | length] | unique' "$W/r1.json")" "[6]"
vc_t_eq "busy run: the report's exit code ($off1 windows off)" "$(jq .exit_code "$W/r1.json")" "$want1"
vc_t_eq "busy run: each tool attached and detached $WINDOWS times (its own records)" \
	"$(cat "$W"/t1/*.log | grep -c '^tool_attach ') $(cat "$W"/t1/*.log | grep -c '^tool_detach ')" \
	"$((6 * WINDOWS)) $((6 * WINDOWS))"
grep -E 'late|busy, not lost' "$W/l1.out" | sed 's/^/  late: /'
vc_t_cmd "busy run: under 90 s" [ "$took" -lt 90000 ]

echo "== 1b. node2's launcher rank not scheduled for 1.5 s at a time (cgroup freezer), 10 windows"
# Longer than the 1 s a clock answer may take: a rank frozen when rank 0 pings
# it is late, and must be retried, not lost. The freezer stops it without a
# signal, as a CPU that is not given to it would.
FZ=/sys/fs/cgroup/freezer/rocattach-busy-test.$$
if mkdir "$FZ" 2>/dev/null; then
	launcher "$W/t1b" --exe rocattach-example-target -t "$TOOL" --windows "50:200:10" -v \
		--report "$W/r1b.json" >"$W/l1b.out" 2>&1 &
	L=$!
	freezes=0
	while kill -0 "$L" 2>/dev/null; do
		# Node pids: the kernel reads them in the writer's pid namespace.
		# shellcheck disable=SC2016
		"$S/vc-exec" node2 sh -c 'for p in $(pgrep -f "$1"); do echo "$p" >"$2/cgroup.procs"; done' \
			_ "^$B/bin/rocattach-mpi" "$FZ" 2>/dev/null
		if [ -n "$(cat "$FZ/cgroup.procs")" ]; then
			echo FROZEN >"$FZ/freezer.state"
			freezes=$((freezes + 1))
			sleep 1.5
			echo THAWED >"$FZ/freezer.state"
		fi
		sleep 0.5
	done
	wait "$L"
	rc=$?
	L=
	rmdir "$FZ" 2>/dev/null
	echo "froze node2's rank $freezes times; $(grep -c ' late' "$W/l1b.out") late," \
		"$(grep -c 'busy, not lost' "$W/l1b.out") late clock answers"
	grep -E ' late|busy, not lost' "$W/l1b.out" | sed 's/^/  | /'
	vc_t_cmd "frozen rank: frozen at least twice ($freezes)" [ "$freezes" -ge 2 ]
	# A rank frozen at a window's stop detaches its targets late: their tools' windows
	# are off the planned length, and the run says so (exit 7); none off: exit 0.
	off=$(jq '[.windows[] | select(.late.off == true)] | length' \
		"$W/r1b.json")
	want=0
	[ "${off:-0}" -gt 0 ] && want=7
	echo "frozen rank: $off of 10 windows off their plan"
	vc_t_eq "frozen rank: mpirun's exit code (0 under --enable-recovery)" "$rc" 0
	vc_t_eq "frozen rank: the report's exit code ($off windows off)" \
		"$(jq .exit_code "$W/r1b.json")" "$want"
	[ "$(jq .exit_code "$W/r1b.json")" = "$want" ] || sed 's/^/  | /' "$W/l1b.out" | tail -30
	vc_t_cmd "frozen rank: no node lost" bash -c "! grep ' lost: ' '$W/l1b.out'"
	vc_t_eq "frozen rank: 10 windows, each with its 6 targets detached" "$(jq -c '[.windows[] |
		[.nodes[].targets[] | select(.state == "detached")] | length] | [length, unique]' \
		"$W/r1b.json")" "[10,[6]]"
else
	vc_t_fail "no cgroup v1 freezer to create $FZ (the frozen-rank check cannot run)"
fi

echo "== 2. node2's launcher rank killed mid-window: lost by the documented deadline"
launcher "$W/t2" --exe rocattach-example-target -t "$TOOL" -d 2000 --report "$W/r2.json" \
	>"$W/l2.out" 2>&1 &
L=$!
for _ in $(seq 200); do grep -q "attached 6/6" "$W/l2.out" && break; sleep 0.05; done
"$S/vc-exec" node2 pkill -KILL -f "^$B/bin/rocattach-mpi"
lost_ms=
for _ in $(seq 600); do
	if grep -q "node2 (rank 1) lost" "$W/l2.out"; then
		lost_ms=$(vc_ms)
		break
	fi
	kill -0 "$L" 2>/dev/null || break
	sleep 0.05
done
timeout 30 tail --pid="$L" -f /dev/null
wait "$L"
L=
vc_t_cmd "node2 lost, said on rank 0" [ -n "$lost_ms" ]
reason=$(jq -r '.windows[-1].nodes[] | select(.host == "node2") | .lost_reason' "$W/r2.json")
echo "node2's lost reason: $reason"
vc_t_eq "node states" "$(jq -r '[.windows[-1].nodes[] | "\(.host)=\(.state)"] | sort | join(" ")' \
	"$W/r2.json")" "node1=ok node2=lost node3=ok"
vc_t_eq "the report's exit code" "$(jq -r .exit_code "$W/r2.json")" 6
# "no records within G s after the stop (retried for R s)": the deadline is the stop + G + R.
if [[ $reason =~ ^no\ records\ within\ ([0-9.]+)\ s\ after\ the\ stop\ \(retried\ for\ ([0-9.]+)\ s\)$ ]]; then
	vc_t_ok "the reason names the wait and the retry"
	budget_ms=$(awk -v g="${BASH_REMATCH[1]}" -v r="${BASH_REMATCH[2]}" \
		'BEGIN { printf "%d", (g + r) * 1000 }')
	stop_ms=$(($(jq -r '.windows[-1].stop_ns' "$W/r2.json") / 1000000))
	after=$((lost_ms - stop_ms))
	echo "lost $after ms after the stop (deadline: $budget_ms ms)"
	vc_t_cmd "lost within its deadline + 1 s, not before it ($after ms)" \
		[ "$after" -le $((budget_ms + 1000)) -a "$after" -ge $((budget_ms - 100)) ]
	vc_t_cmd "the deadline is the documented floor on this quick network" \
		[ "$budget_ms" -eq 7000 ]
else
	vc_t_fail "the reason names the wait and the retry: '$reason'"
fi
for _ in $(seq 60); do [ "$(cat "$W"/t2/*.log | grep -c '^tool_detach ')" -ge 6 ] && break; sleep 0.1; done
vc_t_eq "every target detached (node2's by their watchdogs)" \
	"$(cat "$W"/t2/*.log | grep -c '^tool_detach ')" 6
for h in "${HOSTS[@]}"; do
	"$S/vc-exec" "$h" pkill -f "$TARGET"
done
vc_t_done
