#!/usr/bin/env bash
# Every target on its own clock (issue 30), under a real mpirun on this machine: a
# 4-rank job where one rank is harmed, on our agent and on ROCm's side (the double):
# its tool hangs in rocprofiler_configure, or in tool_attach (its own environment
# says so: ROCP_FAULT_TOOL, which the launcher does not send), or the rank is
# stopped (SIGSTOP). The three healthy ranks' tools (the example tool's own log) run
# the planned 1000 ms within the report's tolerance (1% + 5 ms). A hung one fails by
# its 2 s deadline after the stop, timed out, and the launcher says the call ran on;
# a stopped one is not attached. No node is lost; every rank is alive and untraced.
# Under a sanitizer (ROCATTACH_SANITIZED) the length is a speed check left to the
# plain build: there every healthy tool is handed back at the planned stop.
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

# The state letter of process $1 (R, S, T, ...).
state_of() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1; }

# The job for harm $1 (configure-hang, attach-hang, stopped) on side library $2, in
# $W/job$3.out; JOB_PID and STUCK (the harmed rank) set.
start_job() {
	local harm=$1 lib=$2 n=$3 env=()
	[ "$harm" = stopped ] && env=(ROCP_HARMED=1) || env=(ROCP_FAULT_TOOL="$harm")
	mpirun -np 1 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$lib" "${env[@]}" \
		"$MPI_TARGET" : -np 3 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$lib" "$MPI_TARGET" \
		</dev/null >"$W/job$n.out" 2>&1 &
	JOB_PID=$!
	CHILDREN+=("$JOB_PID")
	wait_ready "$W/job$n.out" 4 || return 1
	STUCK=$(for p in $(job_ranks "$JOB_PID"); do
		tr '\0' '\n' <"/proc/$p/environ" | grep -q '^ROCP_\(FAULT_TOOL\|HARMED\)=' &&
			echo "$p"; done)
	if [ "$harm" = stopped ] && [ -n "$STUCK" ]; then
		kill -STOP "$STUCK"
		for _ in $(seq 100); do [ "$(state_of "$STUCK")" = T ] && break; sleep 0.02; done
	fi
}

# One try of a case; returns 2 when only the planned length missed and try $5 < 3 (a
# loaded machine may hand over late, after the lead: the case runs again). Every try
# checks that no healthy window was held by the harmed call (its deadline is 2 s).
one_side() {
	local side=$1 lib=$2 harm=$3 n=$4 try=$5 rc want ret=0
	echo "== $n. $side side: one rank $harm, three healthy (try $try)"
	start_job "$harm" "$lib" "$n"
	check "$side $harm: one harmed rank found" test -n "$STUCK"
	[ -n "$STUCK" ] || return 1
	export ROCPROF_OUTPUT_PATH=$W/w$n.$try
	# --call-timeout 2000 (was 3000: a second less per hang): the hung call still fails
	# after the stop, and a healthy window held until then (2000 ms) still fails the
	# check of $MS + 500 ms below.
	mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL:$FAULT_TOOL" -d $MS \
		--call-timeout 2000 --report "$W/r$n.json" </dev/null >"$W/l$n.out" 2>&1
	rc=$?
	check "$side $harm: exit 4, one target failed (got $rc)" test "$rc" -eq 4
	if [ "$harm" = stopped ]; then
		want='.state == "stopped" and (.timed_out | not)'
	else
		want='.state == "attach-failed" and .timed_out'
		check "$side $harm: the launcher said the call ran on" grep -q \
			"1 attach call still running after the stop" "$W/l$n.out"
	fi
	check "$side $harm: 3 detached, the harmed one as its harm says" jq -e --argjson p \
		"$STUCK" "[.windows[0].nodes[].targets[]] | (map(select(.pid != \$p)) |
		length == 3 and all(.state == \"detached\" and .late == false)) and
		(map(select(.pid == \$p)) | length == 1 and all($want))" "$W/r$n.json"
	check "$side $harm: no node lost" jq -e '.summary.lost_nodes == 0' "$W/r$n.json"
	tool_windows "$W/w$n.$try" | grep -v "^$STUCK " >"$W/t$n"
	sed "s/^/  $side $harm tools' own times (pid tool_attach_ns tool_detach_ns): /" "$W/t$n"
	check "$side $harm: three healthy tools' own windows" test "$(wc -l <"$W/t$n")" -eq 3
	check "$side $harm: no healthy window held past $MS + 500 ms" awk \
		-v w=$((MS * 1000000)) '{ if ($3 - $2 >= w + 500000000) bad++ }
		END { exit !(NR == 3 && !bad) }' "$W/t$n"
	if [ -n "${ROCATTACH_SANITIZED:-}" ]; then
		# The instrumented launcher may hand over after the lead on a loaded machine
		# (a speed matter: the plain build checks the length); what holds here is
		# that every healthy tool is handed back at the planned stop.
		check "$side $harm: each handed back at the planned stop, within 1% + 5 ms" awk \
			-v s="$(jq -r '.windows[0].stop_ns' "$W/r$n.json")" -v tol=$TOL_NS '{
			printf "  pid %s: %.3f ms from the stop\n", $1, ($3 - s) / 1e6 > "/dev/stderr"
			if ($3 < s - tol || $3 > s + tol) bad++ } END { exit !(NR == 3 && !bad) }' \
			"$W/t$n"
	elif awk -v w=$((MS * 1000000)) -v tol=$TOL_NS '{ d = $3 - $2
		printf "  pid %s: %.3f ms\n", $1, d / 1e6 > "/dev/stderr"
		if (d < w - tol || d > w + tol) bad++ } END { exit !(NR == 3 && !bad) }' "$W/t$n"; then
		check "$side $harm: each $MS ms within 1% + 5 ms by its own clock" true
	elif [ "$try" -lt 3 ]; then
		echo "  off the tolerance (a loaded machine): again"
		ret=2
	else
		check "$side $harm: each $MS ms within 1% + 5 ms by its own clock (3 tries)" false
	fi
	[ "$harm" = stopped ] && kill -CONT "$STUCK"
	for p in $(job_ranks "$JOB_PID"); do
		check "$side $harm: rank $p alive, untraced" grep -q "TracerPid:	0" \
			"/proc/$p/status"
	done
	kill -TERM "$JOB_PID"
	wait "$JOB_PID" 2>/dev/null
	return $ret
}

n=0
for harm in configure-hang attach-hang stopped; do
	for side in agent rocm; do
		lib=$AGENT
		[ "$side" = rocm ] && lib=$DOUBLE
		n=$((n + 1))
		for try in 1 2 3; do
			one_side "$side" "$lib" "$harm" "$n" "$try"
			[ $? -eq 2 ] || break
		done
	done
done
rm -rf "$W"
finish
