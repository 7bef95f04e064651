#!/usr/bin/env bash
# rocattach-mpi --sample's --pprof and --speedscope on real processes (ra_stacks_target,
# ranks from MY_RANK; rank 0 with our agent, rank 1 with ROCm's side), read back with
# decoders we did not write: the pprof gunzipped and decoded by protoc --decode with
# upstream's profile.proto; the speedscope file validated against upstream's schema
# (python3-jsonschema). Both must hold every sample of the --folded file of the same run,
# rank by rank, with host, rank and thread labels; a thread created in the window is a
# thread of its own. A target exiting in the window keeps its samples. Then --diff on the
# real files, and its bad input.
B=${1:?usage: test_profiles.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PROTO=$SRC/launcher/report/proto
SCHEMA=$SRC/tests/data/speedscope-file-format-schema.json
CHECK=$SRC/tests/mpi/profiles_check.py
TARGET=$B/bin/ra_stacks_target
W=$(mktemp -d /tmp/rocattach-mpi-profiles-test.XXXXXX)
trap 'cleanup; [ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
HOST=$(hostname)

declare -A TFD
start_target() {
	local name=$1 env=(env MY_RANK="$2") fd
	[ "$3" = none ] || env+=(ROCP_TOOL_ATTACH=1 LD_PRELOAD="$3")
	mkfifo "$W/$name.in"
	"${env[@]}" "$TARGET" <"$W/$name.in" >"$W/$name.out" 2>&1 &
	TPID=$!
	CHILDREN+=("$TPID")
	exec {fd}>"$W/$name.in"
	TFD[$name]=$fd
	for _ in $(seq 100); do
		grep -q '^ready' "$W/$name.out" && return 0
		sleep 0.05
	done
	echo "target $name did not start" >&2
	return 1
}

after_attach() {
	for _ in $(seq 200); do
		grep -q "window 1: attached" "$1" && break
		sleep 0.05
	done
	sleep "$2"
}

# decode FILE.pb.gz OUT.txt: protoc's reading of the profile.
decode() {
	gzip -dc "$1" | protoc --decode perftools.profiles.Profile -I "$PROTO" \
		"$PROTO/profile.proto" >"$2"
}

# 1. Both sides; a thread created in the window spins in short_lived.
start_target a0 0 "$AGENT" || exit 1
P0=$TPID
start_target a1 1 "$DOUBLE" || exit 1
P1=$TPID
mpirun -np 1 "$LAUNCHER" --pid "$P0,$P1" --rank-var MY_RANK --sample 99 -d 1500 \
	--folded "$W/f1.txt" --pprof "$W/p1.pb.gz" --speedscope "$W/s1.json" \
	--report "$W/r1.json" </dev/null >"$W/l1.out" 2>&1 &
L=$!
after_attach "$W/l1.out" 0.2
echo "spawn 300" >&"${TFD[a0]}"
wait "$L"
rc=$?
# The subject here is the files, not the window's timing (mpi.late's): on a loaded machine
# a late start (exit 7) is accepted where the report says the window was off its plan.
check "sides: exit 0, or 7 with the report saying why (got $rc)" eval \
	'[ "$rc" = 0 ] || { [ "$rc" = 7 ] && jq -e "[.windows[].late.off] | any" "$W/r1.json"; }'
check "sides: the pprof is gzip" eval 'gzip -t "$W/p1.pb.gz"'
check "sides: protoc decodes the pprof" decode "$W/p1.pb.gz" "$W/p1.txt"
if python3 "$CHECK" pprof "$W/p1.txt" "$W/f1.txt" "$HOST" 99 "$P0,$P1" \
	stuck_here,short_lived >"$W/c1.out"; then
	ok "sides: the pprof holds the folded file's samples, rank by rank, labelled; functions once"
else
	fail "sides: pprof: $(cat "$W/c1.out")"
fi
if python3 "$CHECK" speedscope "$W/s1.json" "$SCHEMA" "$W/f1.txt" 99 >"$W/c2.out" 2>&1; then
	ok "sides: the speedscope file meets the schema and holds the folded file's samples"
else
	fail "sides: speedscope: $(tail -3 "$W/c2.out")"
fi
check "sides: the launcher says both are written" eval \
	'grep -q "pprof profile written to" "$W/l1.out" && grep -q "speedscope file written to" "$W/l1.out"'
check "sides: both targets still run" kill -0 "$P0" "$P1"

# 2. --inject; rank 1 exits in the window: its samples are in both files all the same.
start_target i0 0 none || exit 1
Q0=$TPID
start_target i1 1 none || exit 1
Q1=$TPID
mpirun -np 1 "$LAUNCHER" --pid "$Q0,$Q1" --rank-var MY_RANK --inject --sample 99 -d 2000 \
	--folded "$W/f2.txt" --pprof "$W/p2.pb.gz" --speedscope "$W/s2.json" \
	</dev/null >"$W/l2.out" 2>&1 &
L=$!
after_attach "$W/l2.out" 0.5
echo exit >&"${TFD[i1]}"
wait "$L"
rc=$?
check "inject, an exit: exit 4 (got $rc)" test "$rc" -eq 4
check "inject, an exit: the exited rank has samples" grep -q "^$HOST;rank 1;" "$W/f2.txt"
check "inject, an exit: protoc decodes the pprof" decode "$W/p2.pb.gz" "$W/p2.txt"
if python3 "$CHECK" pprof "$W/p2.txt" "$W/f2.txt" "$HOST" 99 "$Q0,$Q1" >"$W/c3.out"; then
	ok "inject, an exit: the pprof holds every rank's samples"
else
	fail "inject, an exit: pprof: $(cat "$W/c3.out")"
fi
check "inject, an exit: the speedscope file too" python3 "$CHECK" speedscope "$W/s2.json" \
	"$SCHEMA" "$W/f2.txt" 99
check "inject, an exit: the other target still runs" kill -0 "$Q0"

# 3. --diff on the real files: no MPI, nothing touched.
"$LAUNCHER" --diff "$W/f1.txt" "$W/f1.txt" >"$W/d1.out" 2>&1
rc=$?
check "diff, a file with itself: exit 0 (got $rc)" test "$rc" -eq 0
check "diff, a file with itself: nothing changed" \
	test "$(grep -c "no function's share changed" "$W/d1.out")" -eq 2
"$LAUNCHER" --diff "$W/f1.txt" "$W/f2.txt" --top 5 --flamegraph "$W/d.svg" >"$W/d2.out" 2>&1
rc=$?
check "diff, two runs: exit 0 (got $rc)" test "$rc" -eq 0
check "diff, two runs: short_lived (only in the first) fell" \
	grep -qE "^ +[0-9.]+ +0\.0 +-[0-9.]+  short_lived$" "$W/d2.out"
check "diff, two runs: the SVG parses" python3 -c '
import sys, xml.etree.ElementTree as ET
ET.parse(sys.argv[1])' "$W/d.svg"
check "diff, two runs: the SVG draws stuck_here" grep -q "<title>stuck_here A " "$W/d.svg"
"$LAUNCHER" --diff "$W/f1.txt" "$W/none.txt" >"$W/d3.out" 2>&1
rc=$?
check "diff, a missing file: exit 2, one line naming it (got $rc)" eval \
	'[ $rc -eq 2 ] && [ "$(wc -l <"$W/d3.out")" -eq 1 ] && grep -q "none.txt: No such file" "$W/d3.out"'
"$LAUNCHER" --diff "$W/f1.txt" "$W/s1.json" >"$W/d4.out" 2>&1
rc=$?
check "diff, a JSON file: exit 2, not folded lines (got $rc)" eval \
	'[ $rc -eq 2 ] && grep -q "is JSON (a report?), not folded lines" "$W/d4.out"'
"$LAUNCHER" --check-options --pid 1 --pprof "$W/p.pb.gz" >"$W/o1.out" 2>&1
rc=$?
check "--pprof without --sample: exit 2 (got $rc)" eval \
	'[ $rc -eq 2 ] && grep -q "add --sample HZ" "$W/o1.out"'

finish
