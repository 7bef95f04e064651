#!/usr/bin/env bash
# Figures: one rocattach-mpi rank over 300 targets on this node, a worker per
# target, beside a baseline of the same run with --jobs 256 (the old cap). Prints,
# per case, how many attach calls began after the window's start and how late
# the last tool hand-over came. Figures only: slowness fails nothing.
#   bench/many_targets.sh [--build-dir DIR]   (takes /tmp/rocattach-heavy.lock)
set -u
cd "$(dirname "$0")/.." || exit 2
build=build
[ "${1:-}" = --build-dir ] && build=$2
shim=$(ls "$build"/lib/libra_few_threads.so 2>/dev/null || true)
RA_MANY_FIGURES=1 exec flock /tmp/rocattach-heavy.lock tests/mpi/test_many.sh "$build" $shim
