#!/usr/bin/env bash
# rocprofv3's tool is checked on every node before the window, across 3 virtual
# nodes under a real mpirun: each node has a private /tmp, and the double of the
# tool (tests/rocm/rocm-root) is put under /tmp/rp3-rocm on some nodes only.
#  1. missing on node3 only: rank 0 (node1) finds it, node3 says where it is
#     missing, every rank stops before the window (exit 4), nothing attached;
#  2. on every node: the run goes on, each node's target gets rocprofv3's
#     variables and writes under DIR/HOST/PID (the double's file), HOST its node.
# Usage: test_rocprofv3_nodes.sh BUILD_DIR   (as root, under the heavy-test lock)
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
cp -r "$BUILD/tests/rocm/rocm-root" "$STAGE/rocm-root"
W=$STAGE/out
mkdir -p "$W"
vc_t_up 3
AGENT=$B/lib/librocattach-agent.so.0
HOSTS=(node1 node2 node3)
R=/tmp/rp3-rocm
T=$R/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so

put_tool() { "$S/vc-exec" "$1" sh -c "mkdir -p $R && cp -r $STAGE/rocm-root/. $R/"; }
launcher() { # launcher OUT ARGS...: one rank per node, from the head
	local out=$1
	shift
	"$S/vc-head" mpirun --hostfile "$S/hostfile" -np 3 --map-by ppr:1:node -x ROCM_PATH=$R \
		"$B/bin/rocattach-mpi" "$@" </dev/null >"$out" 2>&1
}
for h in "${HOSTS[@]}"; do
	"$S/vc-exec" "$h" sh -c "ROCP_TOOL_ATTACH=1 LD_PRELOAD=$AGENT setsid \
		$B/bin/rocattach-example-target >/dev/null 2>&1 </dev/null &"
done
sleep 0.5

# 1. Missing on node3.
put_tool node1
put_tool node2
launcher "$W/l1.out" --exe rocattach-example-target --kernel-trace -d 200 --output-directory "$W/o1"
rc=$?
vc_t_eq "tool missing on node3: exit 4" "$rc" 4
vc_t_cmd "node3 says its tool is missing, and where" grep -q \
	"node3:2\] error: rocprofv3's tool $T (found there on rank 0) is missing on this node" "$W/l1.out"
vc_t_cmd "no other node complains" test "$(grep -c 'is missing on this node' "$W/l1.out")" -eq 1
vc_t_cmd "nothing was attached (no file written)" test ! -e "$W/o1"
for h in "${HOSTS[@]}"; do
	tp=$("$S/vc-exec" "$h" sh -c "pid=\$(pgrep -f '^$B/bin/rocattach-example-target'); awk '/^TracerPid:/ { print \$2 }' /proc/\$pid/status")
	vc_t_eq "$h: its target untraced" "$tp" 0
done

# 2. On every node.
put_tool node3
launcher "$W/l2.out" --exe rocattach-example-target --kernel-trace -d 200 --output-directory "$W/o2"
rc=$?
vc_t_eq "tool on every node: exit 0" "$rc" 0
for h in "${HOSTS[@]}"; do
	pid=$("$S/vc-exec" "$h" pgrep -f "^$B/bin/rocattach-example-target")
	f=$W/o2/$h/${pid}_results.db
	# The tool writes after its detach returns (no --attach-sync-output): wait for its last line.
	for _ in $(seq 100); do
		grep -qs '^ROCP_TOOL_LIBRARIES=' "$f" && break
		sleep 0.05
	done
	vc_t_cmd "$h: its target's tool wrote $h/$pid" test -f "$f"
	vc_t_cmd "$h: its tool saw ROCPROF_KERNEL_TRACE=1" \
		grep -qx -e "ROCPROF_KERNEL_TRACE=1" "$f"
	vc_t_cmd "$h: ... and ROCPROF_OUTPUT_FILE_NAME=%hostname%/%pid%" \
		grep -qx -e "ROCPROF_OUTPUT_FILE_NAME=%hostname%/%pid%" "$f"
done
for h in "${HOSTS[@]}"; do "$S/vc-exec" "$h" pkill -f "^$B/bin/rocattach-example-target"; done
vc_t_done
