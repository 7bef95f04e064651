#!/usr/bin/env bash
# 1000 late starts on fresh late_victim processes with busy threads (issue 33's harm
# figure), under the heavy lock: tests/late/test_late_start.sh with N=1000. It prints the
# seconds per start; CI runs the same test with 20 (ptrace.late_start).
# usage: bench/late_starts.sh [BUILD_DIR] [N]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
B=${1:-$here/../build}
exec flock /tmp/rocattach-heavy.lock "$here/../tests/late/test_late_start.sh" "$B" "${2:-1000}"
