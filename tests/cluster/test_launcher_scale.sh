#!/usr/bin/env bash
# rocattach-mpi on 16 virtual nodes under a real mpirun, one target each, the
# launcher's tree with --fanout 2 (height 4): every target attached exactly
# once and detached, the tools' records agree with the report
# (tests/lib/windows.sh), every node has a clock offset, round trip and error
# bound (> 0 below rank 0, a child's at least its parent's), and on this one
# real clock every offset is within its bound + 200 us of 0.
# Usage: test_launcher_scale.sh BUILD_DIR   (as root, under the heavy-test lock)
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"
. "$HERE/stage.sh"
BUILD=$(readlink -f "${1:?usage: $0 BUILD_DIR}")
N=${VC_SCALE_NODES:-16}

why=$(vc_missing_base) || vc_skip "$why"
command -v mpirun >/dev/null || vc_skip "mpirun not found (package openmpi-bin)"
command -v jq >/dev/null || vc_skip "jq not found (package jq)"
vc_close_fds

S=$VC_STATE
stage_build "$BUILD"
W=$STAGE/out
mkdir -p "$W"
cleanup() {
	"$HERE/vcluster-down.sh" >/dev/null 2>&1
	[ "${KEEP:-0}" = 1 ] || rm -rf "$STAGE"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

"$HERE/vcluster-down.sh" >/dev/null 2>&1
"$HERE/vcluster-up.sh" "$N" || { vc_t_fail "vcluster-up.sh $N"; vc_t_done; exit 1; }
. "$S/env.sh"
AGENT=$B/lib/librocattach-agent.so.0
TOOL=$B/lib/librocattach-example-tool.so
. "$HERE/../lib/windows.sh"

echo "== one target on each of $N nodes"
for i in $(seq "$N"); do
	"$S/vc-exec" "node$i" sh -c "ROCP_TOOL_ATTACH=1 LD_PRELOAD=$AGENT setsid \
		$B/bin/rocattach-example-target --threads 1 </dev/null >/dev/null 2>&1 &"
done
for _ in $(seq 100); do
	up=0
	for i in $(seq "$N"); do
		"$S/vc-exec" "node$i" pgrep -f "^$B/bin/rocattach-example-target" >/dev/null && up=$((up + 1))
	done
	[ "$up" = "$N" ] && break
	sleep 0.1
done
vc_t_eq "a target on every node" "$up" "$N"

echo "== one launcher rank per node, a 500 ms window, the launcher's tree with --fanout 2"
t0=$(vc_ms)
"$S/vc-head" mpirun --hostfile "$S/hostfile" -np "$N" --map-by ppr:1:node \
	-x ROCPROF_OUTPUT_PATH="$W/t1" "$B/bin/rocattach-mpi" --exe rocattach-example-target \
	-t "$TOOL" -d 500 --fanout 2 --report "$W/r1.json" </dev/null >"$W/l1.out" 2>&1
rc=$?
echo "launcher run: $(($(vc_ms) - t0)) ms"
vc_t_cmd "launcher exit code $rc: 0, or 7 with a window shown late (on_plan)" on_plan "$rc" "$W/r1.json"
echo "late: $(jq -c '.windows[0].late' "$W/r1.json")"
[ "$rc" = 0 ] || sed 's/^/  | /' "$W/l1.out" | tail -20
vc_t_eq "report: $N nodes, all ok" "$(jq '[.windows[0].nodes[] | select(.state == "ok")] | length' \
	"$W/r1.json")" "$N"
vc_t_eq "report: $N targets detached" "$(jq '[.windows[0].nodes[].targets[] |
	select(.state == "detached")] | length' "$W/r1.json")" "$N"
vc_t_eq "each target's tool attached exactly once" \
	"$(cat "$W"/t1/*.log | grep -c '^tool_attach ') $(ls "$W"/t1/*.log | wc -l)" "$N $N"
window_checks vc_t_cmd "$W/t1" "$W/r1.json" "$N" 500
echo "clock offsets (ns): $(jq -c '[.windows[0].nodes[] | .clock_offset_ns]' "$W/r1.json")"
echo "round trips (ns): $(jq -c '[.windows[0].nodes[] | .clock_rtt_ns]' "$W/r1.json")"
echo "error bounds (ns): $(jq -c '[.windows[0].nodes[] | .clock_bound_ns]' "$W/r1.json")"
vc_t_cmd "every node's clock offset, round trip and bound in the report, the offset within its bound + 200 us of 0" \
	jq -e --argjson n "$N" '[.windows[0].nodes[] | select(.clock_offset_ns != null and
	.clock_rtt_ns != null and .clock_bound_ns != null and
	(.clock_offset_ns | fabs) <= .clock_bound_ns + 200000)] | length == $n' "$W/r1.json"
# node i is rank i-1 (one per node, in order); rank r's parent is (r - 1) / 2.
vc_t_cmd "below rank 0 every bound is > 0, and at least the parent's" \
	jq -e '[.windows[0].nodes[] | {key: (.host[4:]), value: .clock_bound_ns}] | from_entries
	as $b | [range(2; 17) | tostring | select($b[.] <= 0 or (((. | tonumber) - 2) / 2 | floor)
	as $p | $p >= 1 and $b[.] < $b[($p + 1 | tostring)])] | length == 0' "$W/r1.json"
vc_t_cmd "rank 0 sent at most 2 x fanout messages in the window" \
	jq -e '.windows[0].coordination | .messages_sent <= 4 and .fanout == 2' "$W/r1.json"
vc_t_cmd "no target traced afterwards" bash -c "for i in \$(seq $N); do
	'$S/vc-exec' node\$i sh -c 'grep TracerPid: /proc/\$(pgrep -f \"^$B/bin/rocattach-example-target\")/status'
	done | awk '{print \$2}' | sort -u | grep -qx 0"
for i in $(seq "$N"); do
	"$S/vc-exec" "node$i" pkill -f "^$B/bin/rocattach-example-target"
done
vc_t_done
