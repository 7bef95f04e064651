#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test with CTest.
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 300 "$@"
