#!/usr/bin/env bash
# Every target on its own clock (issue 30), under a real mpirun on this machine: a
# 4-rank job where one rank's tool hangs in rocprofiler_configure (its own
# environment says so: ROCP_FAULT_TOOL, which the launcher does not send), on our
# agent and on ROCm's side (the double). The three healthy ranks' tools (the example
# tool's own log) run the planned 1000 ms within the report's tolerance (1% + 5 ms);
# the stuck one fails by its 3 s deadline after the stop, timed out; the launcher says
# the call ran on; its node is not lost; every rank is alive and untraced.
B=${1:?usage: test_own_clock.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-ownclock-test.XXXXXX)
chmod 755 "$W"
FAULT_TOOL=$B/lib/libra_fault_tool.so
[ -e "$FAULT_TOOL" ] || { echo "FAIL: no $FAULT_TOOL: build the tests"; exit 1; }
MS=1000
TOL_NS=$((MS * 1000000 / 100 + 5000000))

# The healthy tools' windows, "pid attach_ns detach_ns", from the example tool's logs.
tool_windows() {
	local f pid
	for f in "$1"/rocattach-tool.*.log; do
		[ -e "$f" ] || continue
		pid=${f%.log}
		pid=${pid##*.}
		awk -v p="$pid" '$1 == "tool_attach" || $1 == "tool_detach" {
			for (i = 2; i <= NF; i++) if ($i ~ /^ns=/) t[$1] = substr($i, 4) }
			END { print p, t["tool_attach"], t["tool_detach"] }' "$f"
	done
}

one_side() {
	local side=$1 lib=$2 n=$3 stuck rc
	echo "== $n. $side side: one rank's rocprofiler_configure hangs, three healthy"
	mpirun -np 1 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$lib" ROCP_FAULT_TOOL=configure-hang \
		"$MPI_TARGET" : -np 3 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$lib" "$MPI_TARGET" \
		</dev/null >"$W/job$n.out" 2>&1 &
	JOB_PID=$!
	CHILDREN+=("$JOB_PID")
	wait_ready "$W/job$n.out" 4 || return 1
	stuck=$(for p in $(job_ranks "$JOB_PID"); do
		tr '\0' '\n' <"/proc/$p/environ" | grep -q '^ROCP_FAULT_TOOL=' && echo "$p"; done)
	check "$side: one stuck rank found" test -n "$stuck"
	export ROCPROF_OUTPUT_PATH=$W/w$n
	mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL:$FAULT_TOOL" -d $MS \
		--call-timeout 3000 --report "$W/r$n.json" </dev/null >"$W/l$n.out" 2>&1
	rc=$?
	check "$side: exit 4, one target failed (got $rc)" test "$rc" -eq 4
	check "$side: 3 detached, the stuck one attach-failed and timed out" jq -e --argjson p \
		"$stuck" '[.windows[0].nodes[].targets[]] | (map(select(.pid != $p)) |
		length == 3 and all(.state == "detached" and .late == false)) and
		(map(select(.pid == $p)) | length == 1 and all(.state == "attach-failed" and
		.timed_out))' "$W/r$n.json"
	check "$side: no node lost" jq -e '.summary.lost_nodes == 0' "$W/r$n.json"
	check "$side: the launcher said the call ran on" grep -q \
		"1 attach call still running after the stop" "$W/l$n.out"
	tool_windows "$W/w$n" | grep -v "^$stuck " >"$W/t$n"
	sed "s/^/  $side tools' own times (pid tool_attach_ns tool_detach_ns): /" "$W/t$n"
	check "$side: three healthy tools' own windows" test "$(wc -l <"$W/t$n")" -eq 3
	check "$side: each $MS ms within 1% + 5 ms by its own clock" awk -v w=$((MS * 1000000)) \
		-v tol=$TOL_NS '{ d = $3 - $2; printf "  pid %s: %.3f ms\n", $1, d / 1e6 > "/dev/stderr"
		if (d < w - tol || d > w + tol) bad++ } END { exit !(NR == 3 && !bad) }' "$W/t$n"
	for p in $(job_ranks "$JOB_PID"); do
		check "$side: rank $p alive, untraced" grep -q "TracerPid:	0" "/proc/$p/status"
	done
	kill -TERM "$JOB_PID"
	wait "$JOB_PID" 2>/dev/null
}

one_side agent "$AGENT" 1
one_side rocm "$DOUBLE" 2
rm -rf "$W"
finish
