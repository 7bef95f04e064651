#!/usr/bin/env bash
# Set up and run the demo on a fresh Debian machine: install packages, build,
# start the example target with attach support, attach the example tool for a
# short window with the `rocattach` CLI, and show what the tool recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
./scripts/build.sh
B=$PWD/${BUILD_DIR:-build}
OUT=${DEMO_OUTPUT:-$PWD/_demo}
rm -rf "$OUT"; mkdir -p "$OUT"

echo "== starting the example target with attach support (ROCP_TOOL_ATTACH=1 + agent)"
ROCP_TOOL_ATTACH=1 LD_PRELOAD="$B/lib/librocattach-agent.so" \
	"$B/bin/rocattach-example-target" --threads 3 --depth 2 --seconds 30 \
	</dev/null >"$OUT/target.out" 2>&1 &
TARGET=$!
trap 'kill $TARGET 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q ready "$OUT/target.out" 2>/dev/null && break; sleep 0.05; done

echo "== attaching the example tool to pid $TARGET and its child for 1 s"
ROCPROF_OUTPUT_PATH="$OUT" "$B/bin/rocattach" -p "$TARGET" \
	-t "$B/lib/librocattach-example-tool.so" -d 1000

echo "== the target kept running; what the tool recorded inside each process:"
for f in "$OUT"/rocattach-tool.*.log; do
	echo "-- $f"
	cat "$f"
done
kill $TARGET; wait $TARGET 2>/dev/null || true
echo "== target output: $OUT/target.out ($(tail -1 "$OUT/target.out"))"
