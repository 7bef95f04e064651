#!/usr/bin/env bash
# rocattach-mpi on 16 virtual nodes under a real mpirun, one target each:
# every target attached exactly once and detached, the tools' records agree
# with the report (tests/lib/windows.sh), every node has a clock offset and
# round trip, and on this one real clock every offset is within 200 us of 0.
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

echo "== one launcher rank per node, a 500 ms window; rank 0 pulls the records 3 ranks at a time"
t0=$(vc_ms)
"$S/vc-head" mpirun --hostfile "$S/hostfile" -np "$N" --map-by ppr:1:node \
	-x ROCPROF_OUTPUT_PATH="$W/t1" "$B/bin/rocattach-mpi" --exe rocattach-example-target \
	-t "$TOOL" -d 500 --gather-slots 3 --report "$W/r1.json" </dev/null >"$W/l1.out" 2>&1
rc=$?
echo "launcher run: $(($(vc_ms) - t0)) ms"
vc_t_eq "launcher exit code" "$rc" 0
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
vc_t_cmd "every node's clock offset and round trip in the report, the offset within 200 us of 0" \
	jq -e --argjson n "$N" '[.windows[0].nodes[] | select(.clock_offset_ns != null and
	.clock_rtt_ns != null and (.clock_offset_ns | fabs) <= 200000)] | length == $n' "$W/r1.json"
vc_t_cmd "no target traced afterwards" bash -c "for i in \$(seq $N); do
	'$S/vc-exec' node\$i sh -c 'grep TracerPid: /proc/\$(pgrep -f \"^$B/bin/rocattach-example-target\")/status'
	done | awk '{print \$2}' | sort -u | grep -qx 0"
for i in $(seq "$N"); do
	"$S/vc-exec" "node$i" pkill -f "^$B/bin/rocattach-example-target"
done
vc_t_done
