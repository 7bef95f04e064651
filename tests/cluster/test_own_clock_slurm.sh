#!/usr/bin/env bash
# Every target on its own clock (issue 30) under a real Slurm on 2 virtual nodes: a
# 2-node job (2 tasks per node) whose task 1 has a tool that hangs in
# rocprofiler_configure (its own environment says so: ROCP_FAULT_TOOL), on our agent
# and on ROCm's side (the double). rocattach-slurm J.0 (srun --overlap) with a 1000 ms
# window and --call-timeout 3000: no node is declared lost (before, the hung call made
# its live node "lost", exit 6); the run exits 4 naming the stuck one (attach-failed,
# timed out); the three healthy tools' own windows are 1000 ms within 1% + 5 ms.
# Usage: test_own_clock_slurm.sh BUILD_DIR   (as root, under the heavy-test lock)
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"
. "$HERE/stage.sh"
BUILD=$(readlink -f "${1:?usage: $0 BUILD_DIR}")

why=$(vc_missing_base) || vc_skip "$why"
why=$(vc_missing_slurm) || vc_skip "$why"
command -v jq >/dev/null || vc_skip "jq not found (package jq)"
[ -e "$BUILD/lib/libra_fault_tool.so" ] || { echo "FAIL: no fault tool: build the tests"; exit 1; }
vc_close_fds

export VC_SLURM_CPUS=8
stage_slurm "$BUILD"
cp "$BUILD/lib/libra_fault_tool.so" "$B/lib/"

"$HERE/slurm-down.sh" >/dev/null 2>&1
"$HERE/slurm-up.sh" 2 || { vc_t_fail "slurm-up.sh 2"; vc_t_done; exit 1; }
TOOLS=$B/lib/librocattach-example-tool.so:$B/lib/libra_fault_tool.so
WRAP=$B/bin/rocattach-slurm
export ROCATTACH_MPI=$B/bin/rocattach-mpi
MS=1000
TOL_NS=$((MS * 1000000 / 100 + 5000000))

wait_lines() { # wait_lines FILE PATTERN COUNT
	for _ in $(seq 600); do
		[ "$(grep -c "$2" "$1" 2>/dev/null || true)" -ge "$3" ] 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# The healthy tools' windows, "log attach_ns detach_ns", from the example tool's logs
# (rocattach-tool.HOST.PID.log), leaving out pid $2's.
tool_windows() {
	local f
	for f in "$1"/rocattach-tool.*.log; do
		[ -e "$f" ] || continue
		case $f in *".$2.log") continue ;; esac
		awk -v f="${f##*/}" '$1 == "tool_attach" || $1 == "tool_detach" {
			for (i = 2; i <= NF; i++) if ($i ~ /^ns=/) t[$1] = substr($i, 4) }
			END { print f, t["tool_attach"], t["tool_detach"] }' "$f"
	done
}

one_side() { # one_side SIDE PRELOAD N
	local side=$1 preload=$2 n=$3 J stuck rc out=$W/t$3
	echo "== $n. $side side: task 1's rocprofiler_configure hangs, three healthy"
	# Task 1 alone gets the hang, in its own environment (the launcher does not send it).
	J=$("$SL" sbatch --parsable -N2 --ntasks-per-node=2 -o "$W/job$n.out" --wrap \
		"srun --export=ALL,ROCP_TOOL_ATTACH=1,LD_PRELOAD=$preload sh -c \
		'[ \"\$SLURM_PROCID\" = 1 ] && export ROCP_FAULT_TOOL=configure-hang; \
		exec $B/bin/rocattach-example-mpi-target'")
	vc_t_cmd "$side: job $J: 4 tasks ready" wait_lines "$W/job$n.out" '^ready' 4
	ROCPROF_OUTPUT_PATH=$out "$SL" "$WRAP" "$J.0" -t "$TOOLS" -d $MS --call-timeout 3000 \
		--report "$W/r$n.json" >"$W/l$n.out" 2>&1
	rc=$?
	sed "s/^/  $side launcher: /" "$W/l$n.out" | tail -n 12
	vc_t_eq "$side: exit 4, one target failed" "$rc" 4
	vc_t_eq "$side: no node lost, both ok" "$(jq -r '[.summary.lost_nodes] +
		[.windows[0].nodes[] | "\(.host)=\(.state)"] | map(tostring) | sort | join(" ")' \
		"$W/r$n.json" 2>/dev/null)" "0 node1=ok node2=ok"
	stuck=$(jq -r '[.windows[0].nodes[].targets[] | select(.rank == 1)][0].pid' \
		"$W/r$n.json" 2>/dev/null)
	vc_t_eq "$side: the stuck one attach-failed, timed out; 3 detached" "$(jq -r \
		'[.windows[0].nodes[].targets[] | "\(.rank)=\(.state)\(if .timed_out then
		"/timed-out" else "" end)"] | sort | join(" ")' "$W/r$n.json" 2>/dev/null)" \
		"0=detached 1=attach-failed/timed-out 2=detached 3=detached"
	vc_t_cmd "$side: the stuck one named with its deadline" grep -q \
		"process $stuck: .*did not return within 3.0 s" "$W/l$n.out"
	tool_windows "$out" "$stuck" >"$W/w$n"
	sed "s/^/  $side tools' own times (log tool_attach_ns tool_detach_ns): /" "$W/w$n"
	vc_t_eq "$side: three healthy tools' own windows" "$(wc -l <"$W/w$n")" 3
	vc_t_cmd "$side: each $MS ms within 1% + 5 ms by its own clock" awk \
		-v w=$((MS * 1000000)) -v tol=$TOL_NS '{ d = $3 - $2
		printf "  %s: %.3f ms\n", $1, d / 1e6 > "/dev/stderr"
		if (d < w - tol || d > w + tol) bad++ } END { exit !(NR == 3 && !bad) }' "$W/w$n"
	vc_t_eq "$side: the job still runs" "$("$SL" squeue -h -j "$J" -o %T)" RUNNING
	"$SL" scancel "$J"
}

one_side agent "$B/lib/librocattach-agent.so.0" 1
if [ -e "$B/rocm/librocprofiler-register.so.0" ]; then
	one_side rocm "$B/rocm/librocprofiler-register.so.0" 2
else
	vc_t_fail "ROCm's double not staged: build the tests (tests/rocm)"
fi
vc_t_done
