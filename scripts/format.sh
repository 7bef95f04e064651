#!/usr/bin/env bash
# clang-format (.clang-format) over every C source and header of the tree.
#   scripts/format.sh           rewrite the files in place
#   scripts/format.sh --check   change nothing; list the files that differ, fail if any
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h')
if [ "${1:-}" = --check ]; then
	bad=()
	for f in "${files[@]}"; do
		clang-format --style=file "$f" | cmp -s - "$f" || bad+=("$f")
	done
	if [ ${#bad[@]} -ne 0 ]; then
		printf 'not formatted (run scripts/format.sh): %s\n' "${bad[@]}"
		echo "format: 0 passed, 1 failed"
		exit 1
	fi
	echo "format: ${#files[@]} files formatted"
	exit 0
fi
clang-format --style=file -i "${files[@]}"
