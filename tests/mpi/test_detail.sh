#!/usr/bin/env bash
# --detail under a real mpirun (issue 24): a job of 4 ranks with our agent, one of them
# stopped before the attach (refused: a failure). --detail failures keeps exactly that
# rank's record, in the report and as a track in the trace, while the counts and the
# per-node figures still cover all four; the default keeps all four (4 targets <= 10000);
# a bad value is one line naming the option and the choices, exit 2, nothing touched.
# 4. The cut on each node: 4 nodes (a PID and UTS namespace each, --one-node-per-rank,
#    as mpi.tree's), 10 targets each, one stopped on node dr1. The same targets are
#    run at --detail all, then at --detail failures: the bytes rank 0 received in the
#    window are much smaller at failures (the clean records never crossed the wire),
#    and the report says the same of the job (counts, per-node figures' counts, the
#    failure) with the stopped target's record only.
# 5. --detail none and failures with one target failed (stopped) and one that dies with
#    its tools attached (killed mid-window), two targets on each side: exit 4 at both;
#    at none no record is kept, and errors_left_out and the summary count the failure
#    and the death from the node's block.
B=${1:?usage: test_detail.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "SKIP: jq not found (package jq)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare not found (package util-linux)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (section 4: a PID namespace per node)"; exit 77; }
W=$(mktemp -d /tmp/rocattach-detail-test.XXXXXX)
chmod 755 "$W"
export ROCPROF_OUTPUT_PATH=$W/tool

start_job 4 "$W/job.out" || exit 1
RANKS=($(job_ranks "$JOB_PID"))
check "job has 4 ranks" test "${#RANKS[@]}" -eq 4
BAD=${RANKS[2]}
kill -STOP "$BAD"
sleep 0.2

echo "== 1. --detail failures: the stopped rank's record only"
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 300 --call-timeout 1000 \
	--detail failures --report "$W/f.json" --trace "$W/f.trace.json" </dev/null \
	>"$W/f.out" 2>&1
rc=$?
check "failures: exit 4 (got $rc)" test "$rc" -eq 4
check "failures: one record, the stopped rank's" jq -e --argjson p "$BAD" \
	'[.windows[0].nodes[].targets[]] | length == 1 and .[0].pid == $p and .[0].state == "stopped"' \
	"$W/f.json"
check "failures: three records left out, said per node and per window" jq -e \
	'([.windows[0].nodes[].records_left_out] | add) == 3 and .windows[0].records_left_out == 3' \
	"$W/f.json"
check "failures: the counts cover all four" jq -e \
	'.summary.targets == 4 and .summary.failed == 1 and .summary.stopped == 1
	 and ([.windows[0].nodes[].found] | add) == 4' "$W/f.json"
check "failures: the level and why" jq -e \
	'.detail.level == "failures" and .detail.chosen == "--detail failures"' "$W/f.json"
check "failures: the figures of the three attached" jq -e \
	'([.windows[0].nodes[].attach_time_ns.targets] | add) == 3
	 and ([.windows[0].nodes[].attach_time_hist | add] | add) == 3
	 and ([.windows[0].nodes[].detach_time_ns.max] | all(. > 0))' "$W/f.json"
check "failures: the error listed" jq -e --argjson p "$BAD" \
	'.errors | length == 1 and .[0].pid == $p' "$W/f.json"
check "failures: the trace has a track for the stopped rank only" jq -e --argjson p "$BAD" \
	'[.traceEvents[] | select(.name == "thread_name" and (.args.name | startswith("pid ")))
	  | .tid] | unique == [$p, $p + 4194304]' "$W/f.trace.json"
check "failures: the trace has the node's own tracks, a span for the three" jq -e \
	'([.traceEvents[] | select(.ph == "X" and .cat == "tools" and (.name | startswith("tools attached (")))]
	  | length == 1 and .[0].args.attached == 3) and .otherData.detail.level == "failures"' \
	"$W/f.trace.json"

echo "== 2. the default: all four records (4 targets <= 10000)"
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 300 --call-timeout 1000 \
	--report "$W/d.json" </dev/null >"$W/d.out" 2>&1
rc=$?
check "default: exit 4 (got $rc)" test "$rc" -eq 4
check "default: all four records, none left out" jq -e \
	'([.windows[0].nodes[].targets[]] | length) == 4 and .windows[0].records_left_out == 0
	 and .detail.level == "all" and .detail.chosen == "default: 4 targets found at the start <= 10000"' "$W/d.json"

echo "== 3. a bad value"
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" -t "$TOOL" -d 300 --detail some \
	--report "$W/b.json" </dev/null >"$W/b.out" 2>&1
rc=$?
check "bad value: exit 2 (got $rc)" test "$rc" -eq 2
check "bad value: one line naming --detail and the choices" test "$(grep -c \
	"invalid --detail 'some': give all, failures or none" "$W/b.out")" -eq 1
check "bad value: no report" test ! -e "$W/b.json"

for p in "${RANKS[@]}"; do
	check "rank $p alive, untraced" grep -q "TracerPid:	0" "/proc/$p/status"
done
check "the stopped rank is still stopped" test "$(sed 's/.*) //' "/proc/$BAD/stat" | cut -c1)" = T
kill -CONT "$BAD"
stop_job

echo "== 4. the cut on each node: 4 nodes x 10 targets, at all then at failures"
TARGET=$B/bin/rocattach-example-target
NODES=4
PER=10
: >"$W/holders"
for r in $(seq 0 $((NODES - 1))); do
	unshare --pid --fork --mount-proc --uts /bin/sh -c \
		'hostname "$0"; i=0; while [ $i -lt "$1" ]; do
		ROCP_TOOL_ATTACH=1 LD_PRELOAD="$2" "$3" --threads 0 </dev/null >/dev/null 2>&1 &
		i=$((i + 1)); done; wait' "dr$r" "$PER" "$AGENT" "$TARGET" &
	CHILDREN+=("$!")
	h=""
	for _ in $(seq 200); do h=$(pgrep -P "$!" -x sh) && break; sleep 0.01; done
	echo "$h" >>"$W/holders"
done
ready=0
for _ in $(seq 400); do
	ready=0
	for h in $(cat "$W/holders"); do
		for t in $(pgrep -P "$h"); do
			grep -qs rocp-bg-attach /proc/"$t"/task/*/comm && ready=$((ready + 1))
		done
	done
	[ "$ready" -eq $((NODES * PER)) ] && break
	sleep 0.05
done
check "$((NODES * PER)) targets ready in $NODES namespaces (got $ready)" test "$ready" -eq $((NODES * PER))
STOPPED=$(pgrep -P "$(sed -n 2p "$W/holders")" | head -n 1)
kill -STOP "$STOPPED"
sleep 0.2
# Each rank enters its node's namespaces; Open MPI's shared memory breaks across them: TCP.
cut_run() {
	OMPI_MCA_btl=self,tcp mpirun -np "$NODES" --bind-to none -x W="$W" -x LAUNCHER="$LAUNCHER" \
		/bin/sh -c 'exec nsenter -t "$(sed -n "$((OMPI_COMM_WORLD_RANK + 1))p" "$W/holders")" \
		-p -u -m "$LAUNCHER" "$@"' sh --one-node-per-rank --exe rocattach-example-target \
		-t "$TOOL" -d 300 --call-timeout 1000 --fanout 2 "$@" </dev/null >"$W/cut.$2.out" 2>&1
}
cut_run --detail all --report "$W/all.json"
rc_all=$?
cut_run --detail failures --report "$W/cut.json"
rc_cut=$?
check "all: exit 4, the stopped target (got $rc_all)" test "$rc_all" -eq 4
check "failures: exit 4, the stopped target (got $rc_cut)" test "$rc_cut" -eq 4
[ -s "$W/cut.json" ] || sed 's/^/  | /' "$W/cut.failures.out" | tail -20
BA=$(jq '.windows[0].coordination.bytes_received' "$W/all.json")
BC=$(jq '.windows[0].coordination.bytes_received' "$W/cut.json")
echo "bytes rank 0 received in the window: all $BA, failures $BC" \
	"(ratio $(awk -v a="$BA" -v c="$BC" 'BEGIN { if (c > 0) printf "%.1f", a / c }'))"
check "failures: rank 0 received at most a third of the bytes of all" \
	awk -v a="$BA" -v c="$BC" 'BEGIN { exit !(c > 0 && a >= 3 * c) }'
check "all: 40 records, nothing cut" jq -e '([.windows[0].nodes[].targets[]] | length) == 40
	and .windows[0].records_left_out == 0 and (.detail.cut | startswith("nothing cut"))' \
	"$W/all.json"
check "failures: the stopped target's record only, 39 left out on the nodes" \
	jq -e --argjson p "$STOPPED" '[.windows[0].nodes[].targets[]] | length == 1 and
	.[0].state == "stopped"' "$W/cut.json"
check "failures: 39 left out, said per node and per window; cut on each node" jq -e \
	'.windows[0].records_left_out == 39 and ([.windows[0].nodes[].records_left_out] | add) == 39
	 and (.detail.cut | startswith("on each node: the records left out never crossed the wire"))' \
	"$W/cut.json"
# The same job: what does not depend on the run's timing is the same in both reports.
same() {
	jq -S '{summary, skew: .windows[0].skew.targets, nodes: [.windows[0].nodes[] |
		{host, state, found, attached, failed, exited, topology,
		 attach: .attach_time_ns.targets, detach: .detach_time_ns.targets,
		 hist: (.attach_time_hist | add), skew: (.attach_skew_hist | add)}],
		errors: [.errors[] | {pid, state}]}' "$1"
}
same "$W/all.json" >"$W/all.same"
same "$W/cut.json" >"$W/cut.same"
check "failures: counts, per-node figures' counts, topology and errors as at all" \
	cmp -s "$W/all.same" "$W/cut.same"
cmp -s "$W/all.same" "$W/cut.same" || diff "$W/all.same" "$W/cut.same" | head -20
check "failures: 10 found on each node, 9 attached on dr1" jq -e '[.windows[0].nodes[] |
	select(.found == 10 and .attached == (if .host == "dr1" then 9 else 10 end))] | length == 4' \
	"$W/cut.json"
untraced=0
for h in $(cat "$W/holders"); do
	for t in $(pgrep -P "$h"); do
		grep -q "TracerPid:	0" /proc/"$t"/status && untraced=$((untraced + 1))
	done
done
check "every target of the 4 nodes alive and untraced" test "$untraced" -eq $((NODES * PER))
kill -CONT "$STOPPED"
for h in $(cat "$W/holders"); do kill -KILL "$h" 2>/dev/null; done

echo "== 5. --detail none and failures tell the truth: one failed, one died attached"
# Four targets, two per side: one stopped before the attach (a failure), one killed with
# its tools attached, mid-window (a death). No record crosses the wire at none: the exit
# code and errors_left_out come from the node's block.
LIVE=()
for lib in "$AGENT" "$AGENT" "$DOUBLE" "$DOUBLE"; do
	ROCP_TOOL_ATTACH=1 LD_PRELOAD="$lib" "$TARGET" --threads 0 </dev/null >/dev/null 2>&1 &
	LIVE+=("$!")
	CHILDREN+=("$!")
done
ready=0
for _ in $(seq 400); do
	ready=0
	for t in "${LIVE[@]}"; do
		grep -qs rocp-bg-attach /proc/"$t"/task/*/comm && ready=$((ready + 1))
	done
	[ "$ready" -eq 4 ] && break
	sleep 0.05
done
check "4 targets ready, two per side (got $ready)" test "$ready" -eq 4
PIDS=$(IFS=,; echo "${LIVE[*]}")
# die_run LEVEL: the window, with LIVE[3] (ROCm's side) killed once its tool is in.
die_run() {
	local dead=${LIVE[3]} out=$W/tool.$1
	ROCPROF_OUTPUT_PATH=$out mpirun -np 1 "$LAUNCHER" --pid "$PIDS" -t "$TOOL" -d 2500 \
		--call-timeout 1000 --detail "$1" --report "$W/$1.json" </dev/null \
		>"$W/$1.out" 2>&1 &
	local run=$!
	for _ in $(seq 300); do
		[ "$(events "$out" tool_attach "$dead")" -ge 1 ] && break
		sleep 0.02
	done
	kill -KILL "$dead"
	wait "$run"
}
kill -STOP "${LIVE[0]}"
sleep 0.2
die_run none
rc=$?
check "none: exit 4 (got $rc)" test "$rc" -eq 4
grep -q "exit 4" "$W/none.out" || tail -5 "$W/none.out"
check "none: no record, errors null, the failure counted in errors_left_out" jq -e \
	'([.windows[0].nodes[].targets[]] | length) == 0 and .errors == null
	 and .errors_left_out == 1 and .windows[0].records_left_out == 4' "$W/none.json"
check "none: the counts from the block: 1 failed (stopped), 1 died attached" jq -e \
	'.summary.targets == 4 and .summary.failed == 1 and .summary.stopped == 1
	 and .summary.died_attached == 1 and .exit_code == 4
	 and .exit_reason == "1 target failed"' "$W/none.json"
check "none: the summary says the failure and the death were left out" grep -q \
	"1 failure not named: its records were left out on its nodes (--detail none)" "$W/none.out"
check "none: the death counted, not named" grep -q \
	"1 not named: their records were left out on their nodes" "$W/none.out"
# The killed one is gone; a new one of ROCm's side takes its place for the next run.
ROCP_TOOL_ATTACH=1 LD_PRELOAD="$DOUBLE" "$TARGET" --threads 0 </dev/null >/dev/null 2>&1 &
LIVE[3]=$!
CHILDREN+=("$!")
for _ in $(seq 400); do
	grep -qs rocp-bg-attach /proc/"${LIVE[3]}"/task/*/comm && break
	sleep 0.05
done
PIDS=$(IFS=,; echo "${LIVE[*]}")
die_run failures
rc=$?
check "failures: exit 4 (got $rc)" test "$rc" -eq 4
check "failures: the stopped and the died records kept, the error listed" jq -e \
	--argjson s "${LIVE[0]}" \
	'([.windows[0].nodes[].targets[].state] | sort) == ["died_attached", "stopped"]
	 and (.errors | length == 1 and .[0].pid == $s) and .summary.died_attached == 1
	 and .windows[0].records_left_out == 2' "$W/failures.json"
for t in "${LIVE[0]}" "${LIVE[1]}" "${LIVE[2]}"; do
	check "pid $t alive, untraced" grep -q "TracerPid:	0" "/proc/$t/status"
done
kill -CONT "${LIVE[0]}"
kill "${LIVE[@]}" 2>/dev/null
rm -rf "$W"
finish
