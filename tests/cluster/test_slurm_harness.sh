#!/usr/bin/env bash
# Slurm on the virtual cluster: slurm-up (twice: idempotent), srun across the
# nodes, a batch job whose step runs on 3 nodes, an overlapping step into it,
# scancel, then slurm-down leaves nothing (it also takes down the cluster it
# brought up). Exit 77 (skip, with the reason) where it cannot run; under
# CI=true that is a failure. Run it under the machine's heavy-test lock:
#   flock /tmp/rocattach-heavy.lock tests/cluster/test_slurm_harness.sh
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"

why=$(vc_missing_slurm) || vc_skip "$why"
vc_close_fds

S=$VC_STATE
trap '"$HERE/vcluster-down.sh" >/dev/null 2>&1' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
slurm() { timeout 60 "$S/vc-slurm" "$@"; }
nodes=$(printf 'node1\nnode2\nnode3')

# A clean slate: this test owns the cluster while it runs.
"$HERE/vcluster-down.sh"

echo "== slurm-up"
t=$(vc_ms)
if ! "$HERE/slurm-up.sh" 3; then
	vc_t_fail "slurm-up.sh 3"
	vc_t_done
	exit 1
fi
up_ms=$(($(vc_ms) - t))
echo "time: slurm-up (with the cluster) ${up_ms} ms"
vc_t_ok "slurm-up.sh 3"
vc_t_cmd "slurm-up.sh again (already up)" "$HERE/slurm-up.sh" 3
vc_t_eq "sinfo: all idle" "$(slurm sinfo -h -N -o '%N %T')" \
	"$(printf 'node1 idle\nnode2 idle\nnode3 idle')"
vc_t_eq "scontrol on a node finds the configuration" \
	"$("$S/vc-exec" node2 scontrol show config 2>/dev/null | awk '$1 == "MpiDefault" { print $3 }')" pmix

echo "== srun"
t=$(vc_ms)
vc_t_eq "srun -N3 -n3 hostname" "$(slurm srun -N3 -n3 hostname | sort)" "$nodes"
echo "time: srun -N3 $(($(vc_ms) - t)) ms"
vc_t_eq "srun task environment (pmix)" \
	"$(slurm srun -N1 -n1 printenv SLURM_MPI_TYPE)" pmix

echo "== batch job and an overlapping step"
J=$(slurm sbatch --parsable -N3 --ntasks-per-node=2 -o "$S/slurm/job-%j.out" --wrap 'srun sleep 300')
if [[ ! $J =~ ^[0-9]+$ ]]; then
	vc_t_fail "sbatch: '$J'"
else
	vc_t_ok "sbatch: job $J"
	t=$(vc_ms)
	for ((k = 0; k < 300; k++)); do
		# The step J.0 runs once its tasks are on all three nodes.
		n=0
		for i in 1 2 3; do
			c=$("$S/vc-exec" "node$i" scontrol listpids "$J.0" 2>/dev/null | grep -c '^[0-9]')
			[ "${c:-0}" -eq 2 ] && n=$((n + 1))
		done
		[ $n -eq 3 ] && break
		sleep 0.1
	done
	echo "time: job $J step 0 running on 3 nodes after $(($(vc_ms) - t)) ms"
	vc_t_eq "step $J.0: 2 tasks on each of the 3 nodes" "$n" 3
	vc_t_eq "srun --overlap --jobid=$J -N3 --ntasks-per-node=1 hostname" \
		"$(slurm srun --overlap --jobid="$J" -N3 --ntasks-per-node=1 hostname | sort)" "$nodes"
	vc_t_eq "job $J still running" "$(slurm squeue -h -j "$J" -o %T)" RUNNING
	vc_t_cmd "scancel $J" slurm scancel "$J"
	for ((k = 0; k < 100; k++)); do
		[ -z "$(slurm squeue -h -j "$J" -t PD,R,CG,S -o %T 2>/dev/null)" ] && break
		sleep 0.1
	done
	vc_t_eq "job $J gone after scancel" "$(slurm squeue -h -j "$J" -t PD,R,CG,S -o %T 2>/dev/null)" ""
	for i in 1 2 3; do
		vc_t_cmd "no sleep left on node$i" eval "! vc_node_has_cmd node$i '/usr/bin/sleep 300'"
	done
fi

echo "== slurm-down"
t=$(vc_ms)
vc_t_cmd "slurm-down.sh" "$HERE/slurm-down.sh"
echo "time: slurm-down (with the cluster) $(($(vc_ms) - t)) ms"
vc_t_eq "nothing left after slurm-down" "$(vc_leftovers)" ""
vc_t_cmd "slurm-down.sh again (nothing up)" "$HERE/slurm-down.sh"

vc_t_done
