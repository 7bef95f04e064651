#!/usr/bin/env bash
# cluster_skew.sh BUILD_DIR [--quick] --json OUT: window skew on the virtual
# multi-node cluster (tests/cluster), from the head with mpirun, one launcher
# rank per node, as tests/cluster/test_launcher_mpirun.sh runs it.
#
# K plain example targets per node (one busy worker each) are attached for a
# 1 s window by rocattach-mpi --exe; the spread of tool_attach / tool_detach
# over all of them comes from the example tool's records (one clock: the
# nodes are namespaces of this machine). Baseline: the same with --jobs 1
# --start-lead 0 (the ROCm way). Run by bench/run.sh, under the heavy lock.
# The cluster is brought up for the run and torn down after it, as the
# cluster tests do. Where it cannot run, the figure is "not available".
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
B=${1:?usage: cluster_skew.sh BUILD_DIR [--quick] --json OUT}
shift
OUT=
NODES=3
K=8
while [ $# -gt 0 ]; do
	case $1 in
	--quick) K=4 ;;
	--json) OUT=$2; shift ;;
	esac
	shift
done
[ -n "$OUT" ] || { echo "cluster_skew.sh: --json OUT is required" >&2; exit 2; }

na() {
	echo "cluster_skew.sh: not available: $*" >&2
	"$B/bin/bench_skew" --json "$OUT" --not-available "$*"
	exit $?
}

CL=$ROOT/tests/cluster
git -C "$ROOT" ls-files --error-unmatch tests/cluster/vcluster-up.sh >/dev/null 2>&1 ||
	na "tests/cluster/ is not committed yet"
. "$CL/lib.sh"
why=$(vc_missing_base) || na "$why"
command -v mpirun >/dev/null || na "mpirun not found (package openmpi-bin)"

S=$VC_STATE
export VC_PRIVATE_TMP=0 # the nodes see the build and write the tool records where we read them
W=$(mktemp -d /tmp/rocattach-bench-cluster.XXXXXX)
cleanup() {
	"$CL/vcluster-down.sh" >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM

"$CL/vcluster-down.sh" >/dev/null 2>&1
"$CL/vcluster-up.sh" "$NODES" >"$W/up.log" 2>&1 || { cat "$W/up.log" >&2; na "vcluster-up.sh failed"; }
. "$S/env.sh"
TARGET=$B/bin/rocattach-example-target
hosts=()
for ((i = 1; i <= NODES; i++)); do hosts+=("node$i"); done
for h in "${hosts[@]}"; do
	"$S/vc-exec" "$h" sh -c "for i in \$(seq $K); do ROCP_TOOL_ATTACH=1 \
		LD_PRELOAD=$B/lib/librocattach-agent.so.0 setsid $TARGET --threads 1 \
		</dev/null >/dev/null 2>&1 & done"
done
for h in "${hosts[@]}"; do
	for _ in $(seq 400); do
		n=$("$S/vc-exec" "$h" sh -c 'grep -ls rocp-bg-attach /proc/[0-9]*/task/*/comm | wc -l')
		[ "$n" -ge "$K" ] && break
		sleep 0.05
	done
	[ "$n" -ge "$K" ] || na "$h: only $n of $K targets started"
done

launcher() { # launcher NAME ARGS...
	local name=$1
	shift
	"$S/vc-head" mpirun --hostfile "$S/hostfile" -np "$NODES" --map-by ppr:1:node \
		-x ROCPROF_OUTPUT_PATH="$W/$name" "$B/bin/rocattach-mpi" --exe rocattach-example-target \
		-t "$B/lib/librocattach-example-tool.so" -d 1000 --report "$W/$name.json" "$@" \
		</dev/null >"$W/$name.out" 2>&1 || { cat "$W/$name.out" >&2; na "the launcher failed on the cluster"; }
}
launcher ours
launcher rocm --jobs 1 --start-lead 0
"$B/bin/bench_skew" --json "$OUT" --from-logs "$NODES virtual nodes, $((NODES * K)) targets" \
	"$W/ours" "$W/ours.json" "$W/rocm" "$W/rocm.json"
