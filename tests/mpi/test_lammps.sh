#!/usr/bin/env bash
# rocattach-mpi --sample on LAMMPS (Debian lammps, examples/melt/in.melt with a longer
# run): the pair force computation (PairLJCut::compute) dominates the samples, and the
# thermo output is byte-identical to an unsampled run of the same input.
B=${1:?usage: test_lammps.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
MELT=/usr/share/lammps/examples/melt/in.melt
LMP=$(command -v lmp)
if [ -z "$LMP" ] || [ ! -r "$MELT" ]; then
	echo "SKIP: LAMMPS is not installed (Debian lammps and lammps-examples: scripts/deps.sh)"
	exit 77
fi
W=$(mktemp -d /tmp/rocattach-mpi-lammps-test.XXXXXX)
trap 'cleanup; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
# The same system, 10000 steps (seconds, not a quarter of one), thermo every 500.
sed -e 's/^run[[:space:]].*/run 10000/' -e 's/^thermo[[:space:]].*/thermo 500/' "$MELT" >"$W/in.melt"

# thermo FILE: the thermo table (header to the last step), as LAMMPS printed it.
thermo() { awk '/^ *Step /{ t = 1 } /^Loop time/{ t = 0 } t' "$1"; }

# run_melt OUT [ENV...]: 2 ranks in the background; JOB_PID.
run_melt() {
	local out=$1
	shift
	(cd "$W" && exec mpirun -np 2 env "$@" "$LMP" -in "$W/in.melt" -log none </dev/null \
		>"$out" 2>&1) &
	JOB_PID=$!
	CHILDREN+=("$JOB_PID")
}

# 1. Unsampled.
run_melt "$W/plain.out" ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT"
wait "$JOB_PID"
check "unsampled run completes" grep -q '^Loop time' "$W/plain.out"

# 2. Sampled for 3 s once the run has begun.
run_melt "$W/sampled.out" ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT"
for _ in $(seq 400); do
	grep -qE '^ +500 ' "$W/sampled.out" && break
	sleep 0.05
done
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --sample 99 -d 3000 --folded "$W/f.txt" \
	--flamegraph "$W/g.svg" --report "$W/r.json" </dev/null >"$W/l.out" 2>&1
rc=$?
wait "$JOB_PID"
check "sampled: exit 0 (got $rc)" exit_ok "$rc" "$W/r.json"
check "sampled run completes" grep -q '^Loop time' "$W/sampled.out"
check "both ranks sampled through the whole window: attached and detached" jq -e \
	'[.windows[0].nodes[].targets[] | select(.state == "detached")] | length == 2' "$W/r.json"
total=$(awk '{ t += $NF } END { print t + 0 }' "$W/f.txt")
pair=$(awk '/PairLJCut::compute/ { t += $NF } END { print t + 0 }' "$W/f.txt")
check "samples from both ranks ($total)" test "$(cut -d';' -f2 "$W/f.txt" | sort -u | wc -l)" -eq 2
check "the pair force computation dominates ($pair of $total samples)" \
	test $((pair * 2)) -gt "$total"
hottest=$(awk '/^samples at 99 Hz/ { getline; print; exit }' "$W/l.out")
check "the summary names PairLJCut::compute first ($hottest)" \
	eval '[[ $hottest == *" LAMMPS_NS::PairLJCut::compute(int, int)" ]]'
check "the flame graph draws it" grep -q 'PairLJCut::compute' "$W/g.svg"
check "thermo output byte-identical to the unsampled run" \
	cmp -s <(thermo "$W/plain.out") <(thermo "$W/sampled.out")
check "thermo output is there (21 steps)" \
	test "$(grep -c '^ *[0-9]\+ ' <(thermo "$W/plain.out"))" -eq 21

finish
