#!/usr/bin/env bash
# The user's settings reach every node, across 3 virtual nodes under a real mpirun
# (mpirun on the head, one launcher rank per node). Open MPI passes a rank on another
# node only the variables -x names, so each rank's own variables are set here for
# that rank alone (env in its MPMD part):
#  1. ROCPROF_OUTPUT_PATH and a tool knob set only where rank 0 runs (node1): the
#     tool on every node sees them (its log is written there, and it slept as the
#     knob said); nodes without them say nothing;
#  2. node3 sets ROCPROF_OUTPUT_PATH to another value: node3 names it once (node,
#     variable, the value used), the run uses rank 0's, nothing goes to node3's.
# Usage: test_envs_nodes.sh BUILD_DIR   (as root, under the heavy-test lock)
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"
. "$HERE/stage.sh"
BUILD=$(readlink -f "${1:?usage: $0 BUILD_DIR}")

why=$(vc_missing_base) || vc_skip "$why"
command -v mpirun >/dev/null || vc_skip "mpirun not found (package openmpi-bin)"
vc_close_fds

S=$VC_STATE
stage_build "$BUILD"
W=$STAGE/out
mkdir -p "$W"
vc_t_up 3
AGENT=$B/lib/librocattach-agent.so.0
TOOL=$B/lib/librocattach-example-tool.so
HOSTS=(node1 node2 node3)
ARGS=(--exe rocattach-example-target -t "$TOOL" -d 200)

# launcher OUT ENV1 ENV2 ENV3: rank i on node i, with the variables ENVi (one word each).
launcher() {
	local out=$1
	shift
	local parts=() i=1
	for e in "$@"; do
		[ $i -gt 1 ] && parts+=(:)
		# shellcheck disable=SC2206 # ENVi: NAME=VALUE words, no blanks
		parts+=(-np 1 --host node$i env $e "$B/bin/rocattach-mpi" "${ARGS[@]}")
		i=$((i + 1))
	done
	"$S/vc-head" mpirun "${parts[@]}" </dev/null >"$out" 2>&1
}
for h in "${HOSTS[@]}"; do
	"$S/vc-exec" "$h" sh -c "ROCP_TOOL_ATTACH=1 LD_PRELOAD=$AGENT setsid \
		$B/bin/rocattach-example-target >/dev/null 2>&1 </dev/null &"
done
sleep 0.5
pids=()
for h in "${HOSTS[@]}"; do pids+=("$("$S/vc-exec" "$h" pgrep -f "^$B/bin/rocattach-example-target")"); done

echo "== 1. set only where rank 0 runs"
launcher "$W/l1.out" "ROCPROF_OUTPUT_PATH=$W/o1 ROCPROF_EXAMPLE_TOOL_ATTACH_MS=150" \
	"OTHER_VAR=1" "OTHER_VAR=1"
rc=$?
vc_t_eq "exit 0" "$rc" 0
[ "$rc" -eq 0 ] || cat "$W/l1.out" >&2
for i in 0 1 2; do
	h=${HOSTS[$i]} log=$W/o1/rocattach-tool.${HOSTS[$i]}.${pids[$i]}.log
	vc_t_cmd "$h: its tool wrote where rank 0's ROCPROF_OUTPUT_PATH said" test -f "$log"
	# tool_attach records after its sleep: 150 ms after configure_attach at least.
	vc_t_cmd "$h: its tool slept as rank 0's knob said (150 ms in tool_attach)" awk '
		$1 == "configure_attach" { split($5, a, "="); c = a[2] }
		$1 == "tool_attach" { split($5, a, "="); t = a[2] }
		END { exit !(c && t && t - c >= 150000000) }' "$log"
done
vc_t_cmd "no node names a variable (the others lacked them: they take rank 0's)" \
	bash -c "! grep -q 'on this node; the run' '$W/l1.out'"

echo "== 2. node3 sets another value"
mkdir -p "$W/node3-own"
launcher "$W/l2.out" "ROCPROF_OUTPUT_PATH=$W/o2" "OTHER_VAR=1" \
	"ROCPROF_OUTPUT_PATH=$W/node3-own"
rc=$?
vc_t_eq "exit 0" "$rc" 0
vc_t_eq "node3 names it once, with the value used" "$(grep -cF \
	"rocattach-mpi[node3:2] warning: ROCPROF_OUTPUT_PATH is '$W/node3-own' on this node; the run uses '$W/o2', as rank 0 has it" \
	"$W/l2.out")" 1
vc_t_eq "no other line names a variable" "$(grep -c 'on this node; the run' "$W/l2.out")" 1
vc_t_cmd "node3's tool wrote where rank 0 said" test -f "$W/o2/rocattach-tool.node3.${pids[2]}.log"
vc_t_cmd "nothing went where node3's own variable said" test -z "$(ls -A "$W/node3-own")"

for h in "${HOSTS[@]}"; do "$S/vc-exec" "$h" pkill -f "^$B/bin/rocattach-example-target"; done
vc_t_done
