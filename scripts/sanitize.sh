#!/usr/bin/env bash
# The test suite under a sanitizer: scripts/sanitize.sh address|thread [CTEST ARGS...]
#   address: ASan+UBSan, into build-asan/;  thread: TSan, into build-tsan/.
# Runs the labels unit, ptrace and mpi (cluster, slurm and bench need no sanitizer build).
# The agent, the example tool and the targets stay uninstrumented (see CMakeLists.txt);
# runtime options and suppressions are set per test (tests/sanitizers/).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
case $kind in
address) dir=${ASAN_BUILD_DIR:-build-asan} ;;
thread) dir=${TSAN_BUILD_DIR:-build-tsan} ;;
*)
	echo "usage: scripts/sanitize.sh address|thread [CTEST ARGS...]" >&2
	exit 2
	;;
esac
shift
BUILD_DIR=$dir ./scripts/build.sh -DROCATTACH_SANITIZE="$kind" >/dev/null
# SANITIZE_BUILD_ONLY=1: build the tree, run nothing (scripts/test.sh builds both trees
# first, then runs the two suites at once).
[ "${SANITIZE_BUILD_ONLY:-0}" = 1 ] && exit 0

# gcc 12's TSan maps its shadow at fixed addresses and dies on startup ("FATAL:
# ThreadSanitizer: unexpected memory mapping") when the kernel randomizes mmap over more
# bits than it knows: vm.mmap_rnd_bits above 28 (32 on some 6.x kernels; it fails most,
# not all, starts). Then run without ASLR (setarch -R), which children inherit.
run=()
rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)
if [ "$kind" = thread ] && { [ "$rnd_bits" -gt 28 ] ||
	"$dir/bin/test_status" 2>&1 | grep -q "unexpected memory mapping"; }; then
	echo "sanitize: TSan needs ASLR off here (vm.mmap_rnd_bits=$rnd_bits): setarch -R" >&2
	run=(setarch "$(uname -m)" -R)
fi
cd "$dir"
# Tests labelled nosan (notsan: under TSan) run in the plain suite only: tests/CMakeLists.txt
# says why each.
skip='^nosan$'
[ "$kind" = thread ] && skip='^(nosan|notsan)$'
"${run[@]}" ctest -L '^(unit|ptrace|mpi)$' -LE "$skip" --output-on-failure --timeout 300 "$@"
