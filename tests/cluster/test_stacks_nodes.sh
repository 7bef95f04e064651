#!/usr/bin/env bash
# rocattach-mpi --stacks and --sample across 3 virtual nodes under a real mpirun.
# The hung job (ra_stuck_rank, 4 ranks mapped by node: ranks 0 and 3 on node1,
# 1 on node2, 2 on node3) has its last rank spinning in compute > stuck_here
# while the others wait in MPI_Barrier. One launcher rank per node, from the head:
#  1. --stacks: the tree merges the nodes' stacks: [0-2] in MPI_Barrier (three
#     nodes), [3] apart in stuck_here (node1, beside rank 0); the report's nodes
#     carry their host names and the ranks each found there;
#  2. --sample 99 -d 1000 --folded F: every folded line starts with the host of
#     its rank, then the rank; every rank has samples, rank 3's in stuck_here.
# After each run every rank still runs, untraced, and no node keeps a stack file.
# Usage: test_stacks_nodes.sh BUILD_DIR   (as root, under the heavy-test lock)
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"
. "$HERE/stage.sh"
. "$HERE/../lib/windows.sh"
BUILD=$(readlink -f "${1:?usage: $0 BUILD_DIR}")

why=$(vc_missing_base) || vc_skip "$why"
command -v mpirun >/dev/null || vc_skip "mpirun not found (package openmpi-bin)"
command -v jq >/dev/null || vc_skip "jq not found (package jq)"
for f in bin/ra_stuck_rank lib/librocattach-stacks.so; do
	[ -e "$BUILD/$f" ] || { echo "FAIL: $BUILD/$f not built"; exit 1; }
done
vc_close_fds

S=$VC_STATE
stage_build "$BUILD"
# The stack tool beside the agent, where rocattach-mpi looks for it.
cp "$BUILD/bin/ra_stuck_rank" "$STAGE/bin/"
cp "$BUILD/lib/librocattach-stacks.so" "$STAGE/lib/"
W=$STAGE/out
mkdir -p "$W"
JOB=
cleanup() {
	[ -n "$JOB" ] && kill "$JOB" 2>/dev/null
	wait 2>/dev/null
}
vc_t_up 3 cleanup
AGENT=$B/lib/librocattach-agent.so.0
STUCK=$B/bin/ra_stuck_rank
HOSTS=(node1 node2 node3)

launcher() { # launcher OUT ARGS...: one rank per node, from the head
	local out=$1
	shift
	"$S/vc-head" mpirun --hostfile "$S/hostfile" -np 3 --map-by ppr:1:node \
		"$B/bin/rocattach-mpi" --mpi-job "$@" </dev/null >"$out" 2>&1
}

# "host rank pid state tracer" of every rank of the job, from the nodes themselves.
ranks_seen() {
	local h
	for h in "${HOSTS[@]}"; do
		# shellcheck disable=SC2016
		"$S/vc-exec" "$h" sh -c 'for p in $(pgrep -f "^$1"); do
			r=$(tr "\0" "\n" <"/proc/$p/environ" | sed -n "s/^OMPI_COMM_WORLD_RANK=//p")
			st=$(awk "{print \$3}" "/proc/$p/stat")
			tp=$(awk "/^TracerPid:/ {print \$2}" "/proc/$p/status")
			echo "$2 $r $p $st $tp"
		done' _ "$STUCK" "$h"
	done | sort -k2n
}

# after NAME: the job is as it was, untraced, and no node keeps a stack file.
after() {
	local now
	now=$(ranks_seen)
	vc_t_eq "$1: every rank still runs, on its node" "$(awk '{print $1, $2, $3}' <<<"$now")" \
		"$(awk '{print $1, $2, $3}' <<<"$BEFORE")"
	vc_t_eq "$1: no rank traced" "$(awk '{print $5}' <<<"$now" | sort -u)" 0
	vc_t_eq "$1: rank 3 still spins" "$(awk '$2 == 3 {print $4}' <<<"$now")" R
	for h in "${HOSTS[@]}"; do
		vc_t_eq "$1: $h keeps no stack file" \
			"$("$S/vc-exec" "$h" sh -c 'ls -d /tmp/rocattach-mpi-stacks.* /tmp/rocattach-stacks.* 2>/dev/null')" ""
	done
}

echo "== the hung job: 4 ranks mapped by node, the last one stuck"
"$S/vc-head" mpirun --hostfile "$S/hostfile" -np 4 --map-by node \
	-x ROCP_TOOL_ATTACH=1 -x LD_PRELOAD="$AGENT" "$STUCK" </dev/null >"$W/job.out" 2>&1 &
JOB=$!
for _ in $(seq 400); do [ "$(grep -c '^ready' "$W/job.out")" -ge 4 ] && break; sleep 0.05; done
vc_t_eq "4 ranks ready" "$(grep -c '^ready' "$W/job.out")" 4
BEFORE=$(ranks_seen)
echo "$BEFORE"
vc_t_eq "ranks 0 and 3 on node1, 1 on node2, 2 on node3" \
	"$(awk '{print $2 ":" $1}' <<<"$BEFORE" | tr '\n' ' ')" "0:node1 1:node2 2:node3 3:node1 "

echo "== 1. --stacks across the nodes"
launcher "$W/s.out" --stacks --report "$W/s.json"
rc=$?
vc_t_eq "--stacks: exit 0" "$rc" 0
[ "$rc" -eq 0 ] || cat "$W/s.out"
sed -n '/^stacks at the window/,$p' "$W/s.out"
vc_t_cmd "--stacks: ranks 0-2 (three nodes) share one line down to MPI_Barrier" \
	grep -qE '^ +\[0-2\] 3 threads: MPI_Barrier( |$)' "$W/s.out"
vc_t_cmd "--stacks: rank 3 alone in compute > stuck_here" \
	grep -qE '^ +\[3\] 1 thread: compute > stuck_here$' "$W/s.out"
vc_t_cmd "--stacks: all four ranks start in main" grep -qE '^\[0-3\] 4 threads: .*main$' "$W/s.out"
tree_ranks() { jq -r --arg f "$1" '[.stacks | .. | objects | select(.frame? == $f) | .ranks] | join(" ")' "$W/s.json"; }
vc_t_eq "--stacks: report: stuck_here is rank 3's" "$(tree_ranks stuck_here)" 3
vc_t_eq "--stacks: report: MPI_Barrier is ranks 0-2's" "$(tree_ranks MPI_Barrier)" 0-2
vc_t_cmd "--stacks: report: main is ranks 0-3's, 4 threads" jq -e \
	'[.stacks | .. | objects | select(.frame? == "main")] | length == 1 and
	 .[0].ranks == "0-3" and .[0].threads == 4' "$W/s.json" >/dev/null
vc_t_eq "--stacks: report: each node's host and the ranks found there" \
	"$(jq -r '.windows[0].nodes[] | "\(.host):\([.targets[].rank] | sort | map(tostring) | join(","))"' \
		"$W/s.json" | sort | tr '\n' ' ')" "node1:0,3 node2:1 node3:2 "
after "--stacks"

echo "== 2. --sample 99 -d 1000 --folded across the nodes"
launcher "$W/p.out" --sample 99 -d 1000 --folded "$W/f.txt" --report "$W/p.json"
rc=$?
# The subject here is the samples across nodes: exit 7 (tools started late, on 2 loaded
# cores) is taken only where the report says the window was late (on_plan); mpi.late
# tests lateness.
vc_t_cmd "--sample: exit $rc: 0, or 7 with a window shown late (on_plan)" on_plan "$rc" "$W/p.json"
[ "$rc" -eq 0 ] || cat "$W/p.out"
vc_t_cmd "--sample: the folded file has lines" test -s "$W/f.txt"
# host;rank R;frames... COUNT, the host the one rank R runs on.
bad=$(awk -v map="$(awk '{print $2 "=" $1}' <<<"$BEFORE" | tr '\n' ' ')" '
	BEGIN { n = split(map, m, " "); for (i = 1; i <= n; i++) { split(m[i], kv, "="); host[kv[1]] = kv[2] } }
	{
		if (!match($0, /^[^;]+;rank [0-9]+;.+ [0-9]+$/)) { print "shape: " $0; next }
		split($0, f, ";"); r = f[2]; sub(/^rank /, "", r)
		if (!(r in host) || f[1] != host[r]) print "host " f[1] " for rank " r
	}' "$W/f.txt" | head -n 5)
vc_t_eq "--sample: every line starts with its rank's host, then the rank" "$bad" ""
for r in 0 1 2 3; do
	n=$(awk -v p=";rank $r;" 'index($0, p) { t += $NF } END { print t + 0 }' "$W/f.txt")
	vc_t_cmd "--sample: rank $r has samples ($n)" test "$n" -gt 0
done
hot=$(awk '/;rank 3;.*;stuck_here( |;)/ { t += $NF } END { print t + 0 }' "$W/f.txt")
vc_t_cmd "--sample: rank 3's samples in stuck_here ($hot)" test "$hot" -gt 0
vc_t_cmd "--sample: ranks 0-2's samples in MPI_Barrier" test "$(awk \
	'/;rank [0-2];.*;MPI_Barrier( |;)/ { split($0, f, ";"); s[f[2]] = 1 } END { print length(s) }' \
	"$W/f.txt")" -eq 3
after "--sample"

kill "$JOB" 2>/dev/null
wait "$JOB" 2>/dev/null
JOB=
vc_t_done
