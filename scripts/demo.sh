#!/usr/bin/env bash
# Set up and run the demo on a fresh Debian machine: install the packages,
# build, start a small MPI job of the example target in the background, run
# rocattach-mpi over it for a short window with the example tool, and show the
# summary and where the report, the timeline and the tool output went.
set -euo pipefail
cd "$(dirname "$0")/.."
# Root is needed (packages, ptrace, the namespace cluster): as a user, through sudo when there
# is one; a root shell without sudo (a minimal Debian) runs on as it is.
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then
	exec sudo --preserve-env "$PWD/scripts/$(basename "$0")" "$@"
fi
./scripts/deps.sh
./scripts/build.sh
B=$PWD/${BUILD_DIR:-build}
OUT=${DEMO_OUTPUT:-$PWD/_demo}
rm -rf "$OUT"
mkdir -p "$OUT/tool"
if [ "$(id -u)" -eq 0 ]; then
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1

echo "== starting a 4-rank MPI job with attach support (ROCP_TOOL_ATTACH=1 + the agent)"
mpirun -np 4 -x ROCP_TOOL_ATTACH=1 -x LD_PRELOAD="$B/lib/librocattach-agent.so.0" \
	"$B/bin/rocattach-example-mpi-target" --seconds 60 </dev/null >"$OUT/job.out" 2>&1 &
JOB=$!
trap 'kill $JOB 2>/dev/null || true' EXIT
for _ in $(seq 200); do
	[ "$(grep -c '^ready' "$OUT/job.out" 2>/dev/null)" -ge 4 ] && break
	sleep 0.05
done

echo "== rocattach-mpi: attach the example tool to every rank for a 1 s window"
# --mpirun-pid names this job: other MPI jobs on the machine are left alone.
ROCPROF_OUTPUT_PATH="$OUT/tool" mpirun -np 1 "$B/bin/rocattach-mpi" --mpirun-pid "$JOB" \
	-t "$B/lib/librocattach-example-tool.so" -d 1000 \
	--report "$OUT/report.json" --timeline "$OUT/timeline.svg" </dev/null

kill -TERM $JOB
wait $JOB 2>/dev/null || true
echo
echo "== the job kept running and ended normally:"
grep '^done' "$OUT/job.out"
echo
echo "== what the tool recorded inside rank 0's process:"
cat "$(ls "$OUT"/tool/rocattach-tool.*.log | head -1)"
echo
echo "report:      $OUT/report.json"
echo "timeline:    $OUT/timeline.svg"
echo "tool output: $OUT/tool/ (one file per process)"
