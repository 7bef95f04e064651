#!/usr/bin/env bash
# rocattach-slurm --late-start under a real Slurm on 2 virtual nodes: a 2-node job (2 tasks
# per node) of late_victim (the HIP-like double of tests/rocm/late/, started without
# ROCP_TOOL_ATTACH=1). rocattach-slurm J.0 --late-start -t liblate_tool.so passes the flag to
# rocattach-mpi's step: exit 0, every task late_started and initialized, the covers of the
# double SDK's version (1.3.5), the victims' calls reach the SDK's wrappers, they run on right
# and untraced, and the job still runs.
# Usage: test_late_start_slurm.sh BUILD_DIR   (as root, under the heavy-test lock)
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"
. "$HERE/stage.sh"
BUILD=$(readlink -f "${1:?usage: $0 BUILD_DIR}")

why=$(vc_missing_base) || vc_skip "$why"
why=$(vc_missing_slurm) || vc_skip "$why"
command -v jq >/dev/null || vc_skip "jq not found (package jq)"
[ -x "$BUILD/tests/rocm/late/late_victim" ] || { echo "FAIL: no late_victim: build the tests"; exit 1; }
vc_close_fds

export VC_SLURM_CPUS=8
stage_slurm "$BUILD"
cp -a "$BUILD/tests/rocm/late" "$B/late"

# each_victim PATTERN: within 30 s, each of the 4 victims' outputs has a line matching it.
each_victim() {
	local f n
	for _ in $(seq 600); do
		n=0
		for f in "$W"/victim.*.out; do
			grep -qs -- "$1" "$f" && n=$((n + 1))
		done
		[ "$n" -ge 4 ] && return 0
		sleep 0.05
	done
	return 1
}

"$HERE/slurm-down.sh" >/dev/null 2>&1
"$HERE/slurm-up.sh" 2 || { vc_t_fail "slurm-up.sh 2"; vc_t_done; exit 1; }
export ROCATTACH_MPI=$B/bin/rocattach-mpi

# Each task's output in its own file (%t: the task's id), so its ticks can be read.
J=$("$SL" sbatch --parsable -N2 --ntasks-per-node=2 -o "$W/job.out" --wrap \
	"srun -o $W/victim.%t.out $B/late/late_victim --seconds 120 --threads 2")
vc_t_cmd "job $J: 4 victims ready" each_victim '^ready'
vc_t_cmd "no call reached a wrapper before the start" bash -c "! grep -q 'wrapped=[1-9]' $W/victim.*.out"
"$SL" "$B/bin/rocattach-slurm" "$J.0" --late-start -t "$B/late/liblate_tool.so" \
	--report "$W/r.json" >"$W/l.out" 2>&1
rc=$?
sed "s/^/  launcher: /" "$W/l.out" | tail -n 12
vc_t_eq "exit 0" "$rc" 0
vc_t_eq "4 tasks late_started, ok, initialized" "$(jq -r '[.. | objects |
	select(has("late_start")) | "\(.state)/\(.late_start.outcome)/\(.late_start.initialized)"]
	| group_by(.) | map("\(.[0])x\(length)") | join(" ")' "$W/r.json" 2>/dev/null)" \
	"late_started/ok/truex4"
vc_t_eq "covers by the SDK's version" "$(jq -r '[.. | objects | .late_start? | objects |
	"\(.sdk_version) \(.covers_basis) \(.covers | length)"] | unique | join(";")' \
	"$W/r.json" 2>/dev/null)" "1.3.5 rocprofiler-sdk 1.3.5 3"
# Each victim's per-second tick counts the calls that reached the wrappers.
vc_t_cmd "every victim's calls reach the wrappers" each_victim '^tick .*wrapped=[1-9]'
vc_t_eq "the job still runs" "$("$SL" squeue -h -j "$J" -o %T)" RUNNING
"$SL" scancel --signal=TERM "$J"
vc_t_cmd "the victims ended right (bad=0)" each_victim '^done .* bad=0'
vc_t_done
