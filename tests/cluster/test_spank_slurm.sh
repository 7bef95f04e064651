#!/usr/bin/env bash
# The Slurm plugin rocattach-spank.so and rocattach-slurm on 3 virtual nodes,
# a real slurmctld/slurmd with PlugStackConfig pointing at the built plugin:
#  1. sbatch --rocattach -N3 --ntasks-per-node=2 --wrap "srun prog", prog
#     started with no variable of its own: every task has one listener (the
#     batch script has none), and rocattach-slurm J.0 -t TOOL -d 500 from the
#     head attaches all 6 exactly once (exit 0);
#  2. scancel of the tool's step mid-window detaches every target;
#  3. a task that already carries librocprofiler-register (the double,
#     preloaded by the user) keeps one listener, ROCm's, and the user's
#     LD_PRELOAD; rocattach-slurm attaches it;
#  4. srun --rocattach, salloc --rocattach; wrong arguments (plugstack.conf, --rocattach=maybe, a missing agent): one
#     line from Slurm, the job runs;
#  5. default=on: a plain job is attachable; --rocattach=off opts out, and
#     rocattach-slurm says which tasks have no listener and how to fix it;
#  6. installed under another prefix, the plugin without agent= finds the agent
#     installed with it, and the installed rocattach-slurm attaches a job;
#  7. rocattach-slurm checks its options before asking Slurm, and tells an
#     unreachable Slurm apart from an unknown job.
# Usage: test_spank_slurm.sh BUILD_DIR   (as root, under the heavy-test lock)
# shellcheck disable=SC2016 # single-quoted scripts run in the tasks
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"
. "$HERE/stage.sh"
. "$HERE/../lib/windows.sh"
BUILD=$(readlink -f "${1:?usage: $0 BUILD_DIR}")

why=$(vc_missing_base) || vc_skip "$why"
why=$(vc_missing_slurm) || vc_skip "$why"
command -v jq >/dev/null || vc_skip "jq not found (package jq)"
[ -e "$BUILD/lib/rocattach-spank.so" ] ||
	vc_skip "$BUILD/lib/rocattach-spank.so not built (Slurm's spank.h missing: package libslurm-dev)"
vc_close_fds

S=$VC_STATE
export VC_SLURM_CPUS=8
stage_slurm "$BUILD"

AGENT=$B/lib/librocattach-agent.so.0
TOOL=$B/lib/librocattach-example-tool.so
REG=$B/rocm/librocprofiler-register.so.0
PROG="$B/bin/rocattach-example-target --threads 1 --seconds 120"
RSLURM=$B/bin/rocattach-slurm
PS=$STAGE/plugstack.conf
plugstack() { echo "optional $B/lib/rocattach-spank.so $*" >"$PS"; }

plugstack "agent=$AGENT"
"$HERE/slurm-down.sh" >/dev/null 2>&1
VC_SLURM_PLUGSTACK=$PS "$HERE/slurm-up.sh" 3 || {
	vc_t_fail "slurm-up.sh 3 with $PS"
	vc_t_done
	exit 1
}

wait_lines() { # wait_lines FILE PATTERN COUNT
	for _ in $(seq 600); do
		[ "$(cat "$1" 2>/dev/null | grep -c "$2")" -ge "$3" ] && return 0
		sleep 0.05
	done
	return 1
}
events() { cat "$1"/rocattach-tool.*.log 2>/dev/null | grep -c "^$2 "; }
# One line per task of step J.S on every node: "node pid listeners LD_PRELOAD".
tasks() {
	local i
	for i in 1 2 3; do
		# shellcheck disable=SC2016
		"$S/vc-exec" "node$i" bash -c '
			for p in $(scontrol listpids "$1" 2>/dev/null | awk "NR > 1 && \$4 != \"-\" { print \$1 }"); do
				n=0
				for c in /proc/$p/task/*/comm; do
					[ "$(cat "$c" 2>/dev/null)" = rocp-bg-attach ] && n=$((n + 1))
				done
				pre=$(tr "\0" "\n" </proc/$p/environ | sed -n "s/^LD_PRELOAD=//p")
				echo "$(hostname) $p $n ${pre:--}"
			done' _ "$1"
	done
}
# Listener counts of the tasks of J.S, sorted: "1 1 1 1 1 1".
listeners() { tasks "$1" | awk '{ print $3 }' | sort | tr '\n' ' ' | sed 's/ $//'; }
# sbatch_job NAME SBATCH-ARGS...: a 3-node job, 2 tasks a node, of PROG; waits for 6 ready.
sbatch_job() {
	local name=$1 j
	shift
	j=$("$SL" sbatch --parsable -N3 --ntasks-per-node=2 -o "$W/$name.out" "$@" \
		--wrap "echo batch: \${ROCP_TOOL_ATTACH:-none}; srun $PROG") || return 1
	wait_lines "$W/$name.out" '^ready' 6
	echo "$j"
}

vc_t_cmd "srun --help lists --rocattach" grep -q -- '--rocattach=on|off' <("$SL" srun --help 2>&1)
vc_t_cmd "rocattach-slurm --help" grep -q '^Usage: rocattach-slurm JOBID\[.STEP\]' <("$RSLURM" --help)
out=$("$SL" "$RSLURM" 99999.0 -t "$TOOL" 2>&1)
vc_t_eq "rocattach-slurm on an unknown job: exit code 2" "$?" 2
vc_t_cmd "  and says so" grep -q 'job 99999 is not known to Slurm' <<<"$out"

echo "== 1. sbatch --rocattach: every task attachable, rocattach-slurm attaches all 6 once"
J=$(sbatch_job j1 --rocattach)
vc_t_cmd "job $J: 6 tasks ready" wait_lines "$W/j1.out" '^ready' 6
vc_t_eq "one listener in each of the 6 tasks" "$(listeners "$J.0")" "1 1 1 1 1 1"
vc_t_eq "the agent preloaded in each task" \
	"$(tasks "$J.0" | awk -v a="$AGENT" '$4 == a' | wc -l)" 6
vc_t_eq "the batch script is left alone" "$(grep '^batch:' "$W/j1.out")" "batch: none"
ROCPROF_OUTPUT_PATH=$W/t1 "$SL" "$RSLURM" "$J.0" -t "$TOOL" -d 500 --report "$W/r1.json" \
	>"$W/l1.out" 2>&1
rc=$?
vc_t_cmd "rocattach-slurm $J.0 -t TOOL -d 500: exit code $rc: 0, or 7 with a window shown late (on_plan)" \
	on_plan "$rc" "$W/r1.json"
[ "$rc" = 0 ] || cat "$W/l1.out"
vc_t_eq "report: 6 distinct targets, all detached" \
	"$(jq -r '[.windows[0].nodes[] | .host as $h | .targets[] | select(.state == "detached") |
		"\($h):\(.pid)"] | unique | length' "$W/r1.json" 2>/dev/null)" 6
vc_t_eq "report: on the 3 nodes" \
	"$(jq -r '[.windows[0].nodes[].host] | sort | join(" ")' "$W/r1.json" 2>/dev/null)" "node1 node2 node3"
vc_t_eq "tool: 6 attaches, 6 detaches, in 6 processes" \
	"$(events "$W/t1" tool_attach) $(events "$W/t1" tool_detach) $(find "$W/t1" -name 'rocattach-tool.*' | wc -l)" "6 6 6"

echo "== 2. scancel of the tool's step mid-window detaches everything"
ROCPROF_OUTPUT_PATH=$W/t2 "$SL" "$RSLURM" "$J.0" -t "$TOOL" >"$W/l2.out" 2>&1 &
L=$!
for _ in $(seq 400); do [ "$(events "$W/t2" tool_attach)" -ge 6 ] && break; sleep 0.05; done
step=$("$SL" squeue -h -s -j "$J" -o '%i %j' | awk '$2 == "rocattach" { print $1 }')
vc_t_cmd "the tool runs as its own step ($step)" test -n "$step"
"$SL" scancel "$step"
timeout 30 tail --pid="$L" -f /dev/null
for _ in $(seq 100); do [ "$(events "$W/t2" tool_detach)" -ge 6 ] && break; sleep 0.05; done
vc_t_eq "every target detached" "$(events "$W/t2" tool_attach) $(events "$W/t2" tool_detach)" "6 6"
vc_t_eq "the job still runs" "$("$SL" squeue -h -j "$J" -o %T)" RUNNING
vc_t_eq "its tasks still have one listener each" "$(listeners "$J.0")" "1 1 1 1 1 1"
"$SL" scancel "$J"

echo "== 3. a task that already carries librocprofiler-register keeps one listener"
J=$("$SL" sbatch --parsable --rocattach -N1 -n1 -w node2 -o "$W/j3.out" \
	--wrap "srun --export=ALL,LD_PRELOAD=$REG $PROG")
vc_t_cmd "job $J ready" wait_lines "$W/j3.out" '^ready' 1
vc_t_eq "one listener (ROCm's), the user's LD_PRELOAD first" \
	"$(tasks "$J.0" | awk '{ print $1, $3, $4 }')" "node2 1 $REG:$AGENT"
ROCPROF_OUTPUT_PATH=$W/t3 "$SL" "$RSLURM" "$J.0" -t "$TOOL" -d 200 >"$W/l3.out" 2>&1
vc_t_eq "rocattach-slurm attaches it: exit code" "$?" 0
vc_t_eq "tool: 1 attach, 1 detach" "$(events "$W/t3" tool_attach) $(events "$W/t3" tool_detach)" "1 1"
"$SL" scancel "$J"

echo "== srun and salloc take the option too"
show='echo "$(hostname) ${ROCP_TOOL_ATTACH:-none} ${LD_PRELOAD:-none}"'
vc_t_eq "srun --rocattach" "$("$SL" srun --rocattach -N1 -n1 -w node1 sh -c "$show" 2>&1)" \
	"node1 1 $AGENT"
vc_t_eq "srun (default off)" "$("$SL" srun -N1 -n1 -w node1 sh -c "$show" 2>&1)" "node1 none none"
vc_t_eq "salloc --rocattach, then srun" \
	"$("$SL" salloc --rocattach -N2 srun sh -c "$show" 2>/dev/null | sort)" \
	"$(printf 'node1 1 %s\nnode2 1 %s' "$AGENT" "$AGENT")"

echo "== 4. wrong arguments: one line from Slurm, the job runs"
out=$("$SL" srun --rocattach=maybe -N1 -n1 /bin/true 2>&1)
vc_t_eq "--rocattach=maybe: exit code" "$?" 0
vc_t_eq "--rocattach=maybe: one line" "$(grep -c 'rocattach' <<<"$out") $(grep -c 'expected on or off' <<<"$out")" "1 1"
echo "$out"
plugstack "agent=$AGENT bogus default=sometimes"
out=$("$SL" sbatch --parsable --rocattach -N1 -n1 -o "$W/j4.out" --wrap "srun /bin/true" 2>&1)
J=${out##*$'\n'}
vc_t_eq "plugstack.conf: one line per wrong argument" \
	"$(grep -c "rocattach: plugstack.conf: argument" <<<"$out")" 2
echo "$out"
for _ in $(seq 200); do [ -z "$("$SL" squeue -h -j "$J" 2>/dev/null)" ] && break; sleep 0.1; done
vc_t_eq "the job ran to completion" "$("$SL" scontrol -o show job "$J" 2>/dev/null |
	grep -o 'JobState=[A-Z]*\|ExitCode=[0-9:]*' | tr '\n' ' ')" "JobState=COMPLETED ExitCode=0:0 "
plugstack "agent=/nonexistent/librocattach-agent.so.0"
out=$("$SL" srun --rocattach -N1 -n1 sh -c 'echo "attach=${ROCP_TOOL_ATTACH:-none}"' 2>&1)
vc_t_eq "missing agent: the task runs, not made attachable, one line" \
	"$(grep -c 'not made attachable: agent /nonexistent' <<<"$out") $(grep '^attach=' <<<"$out")" "1 attach=none"
echo "$out"

echo "== 5. default=on: every job attachable unless --rocattach=off"
plugstack "default=on agent=$AGENT"
J=$(sbatch_job j5)
vc_t_eq "plain job: one listener in each of the 6 tasks" "$(listeners "$J.0")" "1 1 1 1 1 1"
ROCPROF_OUTPUT_PATH=$W/t5 "$SL" "$RSLURM" "$J.0" -t "$TOOL" -d 200 >"$W/l5.out" 2>&1
vc_t_eq "rocattach-slurm: exit code" "$?" 0
vc_t_eq "tool: 6 attaches, 6 detaches" "$(events "$W/t5" tool_attach) $(events "$W/t5" tool_detach)" "6 6"
# rocattach-slurm's own step stays out: a stand-in launcher shows its environment.
printf '#!/bin/sh\necho "launcher: ${ROCP_TOOL_ATTACH:-none} ${LD_PRELOAD:-none}"\n' >"$STAGE/bin/fake-launcher"
chmod 755 "$STAGE/bin/fake-launcher"
vc_t_eq "default=on: rocattach-slurm's own step is not made attachable" \
	"$(ROCATTACH_MPI=$STAGE/bin/fake-launcher ROCATTACH_SLURM_CHECK=0 "$SL" "$RSLURM" "$J.0" 2>&1 | sort -u)" \
	"launcher: none none"
vc_t_eq "  (while a plain step of the job is)" \
	"$("$SL" srun --overlap --jobid="$J" -N1 -n1 sh -c 'echo "${ROCP_TOOL_ATTACH:-none}"' 2>&1)" 1
"$SL" scancel "$J"
J=$(sbatch_job j6 --rocattach=off)
vc_t_eq "--rocattach=off: no task has a listener" "$(listeners "$J.0")" "0 0 0 0 0 0"
vc_t_eq "--rocattach=off: no agent preloaded" "$(tasks "$J.0" | awk '$4 != "-"' | wc -l)" 0
ROCPROF_OUTPUT_PATH=$W/t6 "$SL" "$RSLURM" "$J.0" -t "$TOOL" -d 200 >"$W/l6.out" 2>&1
vc_t_eq "rocattach-slurm on it: exit code 4" "$?" 4
vc_t_cmd "it names the tasks without a listener" grep -q '6 of 6 tasks of .* have no attach listener: node1:' "$W/l6.out"
vc_t_cmd "and says how to fix it" grep -q 'not attachable: start the job with --rocattach.*--inject' "$W/l6.out"
vc_t_eq "nothing attached" "$(events "$W/t6" tool_attach)" 0
cat "$W/l6.out"
"$SL" scancel "$J"

echo "== 6. installed under another prefix: the plugin finds its agent with no agent= argument"
P=$STAGE/prefix
cmake --install "$BUILD" --prefix "$P" >/dev/null
echo "optional $P/lib/slurm/rocattach-spank.so" >"$PS"
vc_t_eq "srun --rocattach: the installed agent preloaded" \
	"$("$SL" srun --rocattach -N1 -n1 -w node1 sh -c "$show" 2>/dev/null)" \
	"node1 1 $P/lib/librocattach-agent.so.0"
J=$(sbatch_job j7 --rocattach)
vc_t_eq "sbatch --rocattach: one listener in each of the 6 tasks" "$(listeners "$J.0")" "1 1 1 1 1 1"
ROCPROF_OUTPUT_PATH=$W/t7 "$SL" "$P/bin/rocattach-slurm" "$J.0" -t "$P/lib/librocattach-example-tool.so" \
	-d 200 >"$W/l7.out" 2>&1
vc_t_eq "the installed rocattach-slurm attaches them: exit code" "$?" 0
vc_t_eq "tool: 6 attaches, 6 detaches" "$(events "$W/t7" tool_attach) $(events "$W/t7" tool_detach)" "6 6"
"$SL" scancel "$J"

echo "== 7. rocattach-slurm says what is wrong"
out=$("$SL" "$RSLURM" 99999.0 --bogus 2>&1)
vc_t_eq "a wrong option, checked before Slurm is asked: exit code 2" "$?" 2
vc_t_eq "  in one line naming it" "$out" "rocattach-slurm: unknown option '--bogus': see rocattach-mpi --help"
# A configuration whose controller refuses connections (port 1), short timeouts.
printf '%s\n' ClusterName=unreach SlurmctldHost=localhost SlurmctldPort=1 AuthType=auth/munge \
	TCPTimeout=1 MessageTimeout=1 'NodeName=localhost CPUs=1' 'PartitionName=p Nodes=localhost' \
	>"$STAGE/unreach.conf"
out=$(SLURM_CONF=$STAGE/unreach.conf "$RSLURM" 99999.0 -d 100 2>&1)
vc_t_eq "Slurm not reachable: exit code 1" "$?" 1
vc_t_cmd "  said as such, not as an unknown job" grep -q '^rocattach-slurm: Slurm is not reachable' <<<"$out"
vc_t_done
