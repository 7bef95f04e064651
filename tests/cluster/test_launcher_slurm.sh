#!/usr/bin/env bash
# rocattach-mpi under a real Slurm on 3 virtual nodes:
#  2. a 3-node job whose step 0 runs the example MPI target (2 tasks per node);
#     from outside, rocattach-slurm J.0 (srun --overlap, one task
#     per node) attaches exactly that step's tasks: not its own step, not
#     another job's task on the same node;
#  5. scancel of the tool's step mid-window detaches every target on every
#     node; the targets keep running and end normally later;
#  6. a launcher rank SIGKILLed mid-window: the report names its node lost;
#  7. the job ends (scancel) while the tool's step holds a window: 'job ended', exit 0;
#  and the batch-script recipe examples/slurm/job-with-window.sbatch.
# Usage: test_launcher_slurm.sh BUILD_DIR   (as root, under the heavy-test lock)
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"
. "$HERE/stage.sh"
. "$HERE/../lib/windows.sh"
BUILD=$(readlink -f "${1:?usage: $0 BUILD_DIR}")
ROOT=$(cd "$HERE/../.." && pwd)

why=$(vc_missing_base) || vc_skip "$why"
why=$(vc_missing_slurm) || vc_skip "$why"
command -v jq >/dev/null || vc_skip "jq not found (package jq)"
vc_close_fds

S=$VC_STATE
export VC_SLURM_CPUS=8
stage_slurm "$BUILD"

"$HERE/slurm-down.sh" >/dev/null 2>&1
"$HERE/slurm-up.sh" 3 || { vc_t_fail "slurm-up.sh 3"; vc_t_done; exit 1; }
AGENT=$B/lib/librocattach-agent.so.0
TOOL=$B/lib/librocattach-example-tool.so
WRAP=$B/bin/rocattach-slurm
export ROCATTACH_MPI=$B/bin/rocattach-mpi
ATTACHABLE="--export=ALL,ROCP_TOOL_ATTACH=1,LD_PRELOAD=$AGENT"

wait_lines() { # wait_lines FILE PATTERN COUNT
	for _ in $(seq 600); do
		[ "$(cat "$1" 2>/dev/null | grep -c "$2")" -ge "$3" ] && return 0
		sleep 0.05
	done
	return 1
}
events() { cat "$1"/rocattach-tool.*.log 2>/dev/null | grep -c "^$2 "; }

echo "== the job: step 0 runs the example MPI target, 2 tasks on each of 3 nodes"
J=$("$SL" sbatch --parsable -N3 --ntasks-per-node=2 -o "$W/job.out" \
	--wrap "srun $ATTACHABLE $B/bin/rocattach-example-mpi-target")
D=$("$SL" sbatch --parsable -N1 -n1 -w node2 -o "$W/decoy.out" \
	--wrap "srun $ATTACHABLE $B/bin/rocattach-example-target --threads 1")
wait_lines "$W/job.out" '^ready' 6
vc_t_cmd "job $J: 6 tasks ready" wait_lines "$W/job.out" '^ready' 6
vc_t_cmd "decoy job $D ready on node2" wait_lines "$W/decoy.out" '^ready' 1

echo "== 2. rocattach-slurm $J.0 attaches exactly that step's tasks"
ROCPROF_OUTPUT_PATH=$W/t1 "$SL" "$WRAP" "$J.0" -t "$TOOL" -d 500 --report "$W/r1.json" \
	--trace "$W/t1.trace.json" >"$W/l1.out" 2>&1
rc=$?
vc_t_cmd "exit code $rc: 0, or 7 with a window shown late (on_plan)" on_plan "$rc" "$W/r1.json"
# --trace FILE passes the listener check's dry run (its FILE is no selector).
vc_t_cmd "--trace written" jq -e '.traceEvents | length > 0' "$W/t1.trace.json"
vc_t_eq "report: hostnames" "$(jq -r '[.windows[0].nodes[].host] | sort | join(" ")' "$W/r1.json")" \
	"node1 node2 node3"
vc_t_eq "report: the step's ranks" \
	"$(jq -c '[.windows[0].nodes[].targets[].rank] | sort' "$W/r1.json")" "[0,1,2,3,4,5]"
vc_t_eq "report: only the job's program" \
	"$(jq -r '[.windows[0].nodes[].targets[].exe] | unique | join(",")' "$W/r1.json")" \
	"rocattach-example-mpi-target"
vc_t_eq "report: all detached" \
	"$(jq -r '[.windows[0].nodes[].targets[].state] | unique | join(",")' "$W/r1.json")" "detached"
vc_t_eq "tool: 6 attaches, 6 detaches" "$(events "$W/t1" tool_attach) $(events "$W/t1" tool_detach)" "6 6"
decoy=$("$S/vc-exec" node2 pgrep -f "^$B/bin/rocattach-example-target")
vc_t_cmd "decoy (other job, same node) untouched" test ! -e "$W/t1/rocattach-tool.node2.$decoy.log"
"$SL" scancel "$D"

echo "== bare JOBID: every step but the tool's own"
ROCPROF_OUTPUT_PATH=$W/t2 "$SL" "$WRAP" "$J" -t "$TOOL" -d 200 --dry-run >"$W/l2.out" 2>&1
vc_t_eq "dry-run exit code" "$?" 0
vc_t_eq "dry-run: 6 targets, none attached" \
	"$(grep -c ' rocattach-examp' "$W/l2.out") $(events "$W/t2" tool_attach)" "6 0"

echo "== 5. scancel of the tool's step mid-window"
# scancel J.S kills the step's tasks (SIGKILL): the agents notice their attacher
# is gone and detach the tools themselves. With --signal=TERM the launcher
# detaches, gathers and writes its report (exit 5, interrupted).
for how in kill term; do
	out=$W/t3$how
	ROCPROF_OUTPUT_PATH=$out "$SL" "$WRAP" "$J.0" -t "$TOOL" --report "$W/r3$how.json" \
		>"$W/l3$how.out" 2>&1 &
	L=$!
	for _ in $(seq 400); do [ "$(events "$out" tool_attach)" -ge 6 ] && break; sleep 0.05; done
	# The newest such step: the one just killed may still be listed while it completes.
	step=$("$SL" squeue -h -s -j "$J" -o '%i %j' | awk '$2 == "rocattach" { print $1 }' |
		sort -t. -k2 -n | tail -n 1)
	vc_t_cmd "$how: the tool runs as its own step ($step)" test -n "$step"
	if [ "$how" = kill ]; then
		"$SL" scancel "$step"
	else
		"$SL" scancel --signal=TERM "$step"
	fi
	timeout 30 tail --pid="$L" -f /dev/null
	for _ in $(seq 100); do [ "$(events "$out" tool_detach)" -ge 6 ] && break; sleep 0.05; done
	vc_t_eq "$how: every target detached" "$(events "$out" tool_detach)" 6
	vc_t_eq "$how: the job still runs" "$("$SL" squeue -h -j "$J" -o %T)" RUNNING
done
vc_t_eq "term: the report says interrupted" "$(jq '.exit_code' "$W/r3term.json" 2>/dev/null)" 5

echo "== 6. a launcher rank SIGKILLed mid-window (node2), under srun"
# Slurm lets the step's other tasks run on (KillOnBadExit=0, the default): rank 0
# ends the window as planned, waits for node2's records until the stop + 5 s + 2 s (retried),
# reports node2 lost and ends. node2's targets are detached by their watchdogs.
out=$W/t6
t0=$(vc_ms)
ROCPROF_OUTPUT_PATH=$out "$SL" "$WRAP" "$J.0" -t "$TOOL" -d 2000 --report "$W/r6.json" \
	>"$W/l6.out" 2>&1 &
L=$!
for _ in $(seq 400); do [ "$(events "$out" tool_attach)" -ge 6 ] && break; sleep 0.05; done
"$S/vc-exec" node2 pkill -KILL -f "^$B/bin/rocattach-mpi"
timeout 60 tail --pid="$L" -f /dev/null
wait "$L"
rc=$?
echo "rocattach-slurm exit $rc after $(($(vc_ms) - t0)) ms"
vc_t_cmd "srun rank death: report written" test -s "$W/r6.json"
vc_t_eq "srun rank death: node states" "$(jq -r '[.windows[-1].nodes[] | "\(.host)=\(.state)"] |
	sort | join(" ")' "$W/r6.json" 2>/dev/null)" "node1=ok node2=lost node3=ok"
vc_t_eq "srun rank death: the report's exit code" "$(jq -r .exit_code "$W/r6.json" 2>/dev/null)" 6
for _ in $(seq 100); do [ "$(events "$out" tool_detach)" -ge 6 ] && break; sleep 0.05; done
vc_t_eq "srun rank death: every target detached" "$(events "$out" tool_detach)" 6
vc_t_eq "srun rank death: the job still runs" "$("$SL" squeue -h -j "$J" -o %T)" RUNNING

echo "== 7. the job ends while the tool's step holds a window"
# scancel J signals every step, the tool's too: SIGCONT, then SIGTERM. SIGCONT ends
# nothing; the SIGTERM ends the window. When every target ended before its detach, the
# run ends as 'job ended' (exit 0), not as interrupted.
out=$W/t7
ROCPROF_OUTPUT_PATH=$out "$SL" "$WRAP" "$J.0" -t "$TOOL" --report "$W/r7.json" \
	>"$W/l7.out" 2>&1 &
L=$!
for _ in $(seq 400); do [ "$(events "$out" tool_attach)" -ge 6 ] && break; sleep 0.05; done
"$SL" scancel "$J"
timeout 60 tail --pid="$L" -f /dev/null
wait "$L"
vc_t_cmd "the job's 6 tasks ended normally" wait_lines "$W/job.out" '^done' 6
# The SIGTERM reaches the targets and the launcher at once. Each target's detach, made
# at the stop, either found it gone (every one gone: the job ended, exit 0) or handed
# its tools back while it still ran (then the window was cut short: exit 5). Which one
# wins is a race; the run's account must match what its records say.
alive=$(jq '[.windows[0].nodes[].targets[] | select(.state == "detached")] | length' \
	"$W/r7.json" 2>/dev/null)
# scancel signals every task at once: the stop names the rank whose SIGTERM came first.
want=$(printf '0\tjob ended\tSIGTERM on rank N')
[ "${alive:-0}" -gt 0 ] && want=$(printf '5\tinterrupted by SIGTERM\tSIGTERM on rank N')
echo "job end: $alive targets were detached before they ended"
vc_t_eq "job end: the report's exit, reason and window stop (N: a rank of the 3)" \
	"$(jq -r '[.exit_code, .exit_reason, .windows[0].stop_reason] | @tsv' "$W/r7.json" 2>/dev/null |
		sed 's/SIGTERM on rank [0-2]$/SIGTERM on rank N/')" "$want"
vc_t_cmd "job end: SIGCONT never named" test -z "$(grep -l SIGCONT "$W/l7.out" "$W/r7.json")"
[ -s "$W/r7.json" ] || { echo "job end: no report; the launcher said:"; tail -30 "$W/l7.out" | sed 's/^/  | /'; }

echo "== the batch-script recipe: the job profiles a window of itself"
J2=$("$SL" sbatch --parsable -N3 --ntasks-per-node=2 -o "$W/batch.out" \
	--export=ALL,PREFIX="$B",APP="$B/bin/rocattach-example-mpi-target --seconds 12",WARMUP_S=2,WINDOW_MS=500,OUT="$W/batch" \
	"$ROOT/examples/slurm/job-with-window.sbatch")
for _ in $(seq 600); do [ -z "$("$SL" squeue -h -j "$J2" 2>/dev/null)" ] && break; sleep 0.1; done
vc_t_eq "recipe: report with 6 detached targets" \
	"$(jq -r '[.windows[0].nodes[].targets[].state] | map(select(. == "detached")) | length' \
	"$W/batch/report.json" 2>/dev/null)" 6
vc_t_eq "recipe: the application ended normally" "$(grep -c '^done' "$W/batch.out")" 6
vc_t_done
