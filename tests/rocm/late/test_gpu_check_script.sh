#!/usr/bin/env bash
# scripts/gpu-check-late-start.sh cannot run here (no GPU): it must at least parse (bash -n)
# and be shellcheck-clean. Without shellcheck (scripts/deps.sh installs it) the second check
# is skipped: exit 77 after the first passed.
#   test_gpu_check_script.sh SOURCE_DIR
set -euo pipefail
script=$1/scripts/gpu-check-late-start.sh
bash -n "$script"
echo "ok: bash -n $script"
if ! command -v shellcheck >/dev/null; then
	echo "SKIP: shellcheck is not installed (scripts/deps.sh installs it)"
	exit 77
fi
shellcheck "$script"
echo "ok: shellcheck $script"
