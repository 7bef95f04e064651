#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test with CTest. Then the
# same suite (labels unit, ptrace, mpi) under ASan+UBSan and under TSan (scripts/sanitize.sh)
# and a short fuzz run (fuzz/run.sh, ROCATTACH_FUZZ_SECONDS per harness, default 5).
# --quick (or ROCATTACH_TEST_QUICK=1): the first part only. Other arguments go to the
# first ctest. First of all, the tree's C files must be as scripts/format.sh leaves them.
# Exits non-zero when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# Root is needed (packages, ptrace, the namespace cluster): as a user, through sudo when there
# is one; a root shell without sudo (a minimal Debian) runs on as it is.
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then
	exec sudo --preserve-env "$PWD/scripts/$(basename "$0")" "$@"
fi
quick=${ROCATTACH_TEST_QUICK:-0}
args=()
for a in "$@"; do
	if [ "$a" = --quick ]; then quick=1; else args+=("$a"); fi
done
./scripts/deps.sh
./scripts/build.sh
if [ "$quick" = 1 ]; then
	cd "${BUILD_DIR:-build}"
	exec ctest --output-on-failure --timeout 300 "${args[@]}"
fi

log=$(mktemp /tmp/rocattach-test.XXXXXX)
trap 'rm -f "$log"' EXIT
passed=0
failed=0
skipped=0
failed_steps=()
# The skip contract (tests/skip.h): a test that cannot run its checks exits 77 and CTest
# reports it "(Skipped)". In CI (CI=true) or as root, where every package is installed, a
# skip fails the run unless tests/skips-allowed.txt lists it ("STEP TEST: reason").
strict=0
[ "${CI:-}" = true ] || [ "$(id -u)" -eq 0 ] && strict=1
allowed() { # allowed STEP TEST
	grep -q "^$1 $2: " tests/skips-allowed.txt 2>/dev/null
}
# step NAME COMMAND...: run it, count what its ctest or fuzz summary lines say.
step() {
	local name=$1 t0=$SECONDS rc=0 p f s test bad=0
	shift
	echo "== $name"
	"$@" 2>&1 | tee "$log" || rc=$?
	# "100% tests passed, 0 tests failed out of 21" (ctest, skipped tests among the
	# passed), "  12 - unit.x (Skipped)", "fuzz: 14 passed, 0 failed".
	read -r p f s < <(awk '/^[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+$/ {
			P += $NF - $4; F += $4 }
		/^[ \t]+[0-9]+ - [^ ]+ \(Skipped\)$/ { S += 1 }
		/^fuzz: [0-9]+ passed, [0-9]+ failed/ { P += $2; F += $4 }
		/^format: [0-9]+ files formatted/ { P += 1 }
		/^format: 0 passed, 1 failed/ { F += 1 }
		END { print P - S, F + 0, S + 0 }' "$log")
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1 # failed before counting (a build)
	for test in $(awk '/^[ \t]+[0-9]+ - [^ ]+ \(Skipped\)$/ { print $3 }' "$log"); do
		if [ "$strict" = 1 ] && ! allowed "${name%% *}" "$test"; then
			echo "== $name: $test was skipped: not in tests/skips-allowed.txt, so a failure here"
			bad=$((bad + 1))
		fi
	done
	if [ "$bad" -gt 0 ]; then
		s=$((s - bad))
		f=$((f + bad))
		[ "$rc" -eq 0 ] && rc=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	if [ "$rc" -eq 0 ]; then
		echo "== $name: ok ($((SECONDS - t0)) s)"
	else
		echo "== $name: FAILED ($((SECONDS - t0)) s)"
		failed_steps+=("$name")
	fi
}
step "format" ./scripts/format.sh --check
step "test suite" bash -c 'cd "${BUILD_DIR:-build}" && ctest --output-on-failure --timeout 300 "$@"' \
	_ "${args[@]}"
# The sanitizer suites run one after the other: at once, the extra load made windows
# late (exit 7) where the tests expect them on time.
step "ASan+UBSan suite" ./scripts/sanitize.sh address
step "TSan suite" ./scripts/sanitize.sh thread
step "fuzzing" ./fuzz/run.sh "${ROCATTACH_FUZZ_SECONDS:-5}"
[ ${#failed_steps[@]} -eq 0 ] || echo "failed: ${failed_steps[*]}"
echo "all: $passed passed, $failed failed, $skipped skipped"
[ ${#failed_steps[@]} -eq 0 ]
