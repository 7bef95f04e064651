#!/usr/bin/env bash
# Configure and build into ${BUILD_DIR:-build} (extra arguments go to cmake).
# Quiet on success; the build log is shown when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"
log="$BUILD_DIR/build.log"
if ! { cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "$@" &&
	cmake --build "$BUILD_DIR" -j"$(nproc)"; } >"$log" 2>&1; then
	cat "$log" >&2
	echo "rocattach-mpi: build failed (log: $log)" >&2
	exit 1
fi
echo "rocattach-mpi: built in $BUILD_DIR/ (programs in bin/, libraries in lib/)"
