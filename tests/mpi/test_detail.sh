#!/usr/bin/env bash
# --detail under a real mpirun (issue 24): a job of 4 ranks with our agent, one of them
# stopped before the attach (refused: a failure). --detail failures keeps exactly that
# rank's record, in the report and as a track in the trace, while the counts and the
# per-node figures still cover all four; the default keeps all four (4 targets <= 10000);
# a bad value is one line naming the option and the choices, exit 2, nothing touched.
B=${1:?usage: test_detail.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
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
	 and .detail.level == "all" and .detail.chosen == "default: 4 targets <= 10000"' "$W/d.json"

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
rm -rf "$W"
finish
