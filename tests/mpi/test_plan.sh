#!/usr/bin/env bash
# One plan on every rank: rank 0 parses the command line and resolves its environment's
# defaults; a rank whose own environment differs (an invalid ROCPROF_ATTACH_DURATION,
# another tool library and output path, a variable only it has) acts on rank 0's plan.
# Two launcher ranks on this machine, each in a PID namespace of its own with one
# example target (--one-node-per-rank: each rank is a node that sees only its target).
# Each variable a rank sets to another value than the run's is named once, by that rank.
# Then the settings only on mpirun's node (rank 1 there, rank 0 made to look remote):
# rank 1's variables are the run's, on rank 0 too.
# Then a rank whose signalfd fails: every rank stops before touching a target, saying why.
B=${1:?usage: test_plan.sh BUILD_DIR [NO_SIGNALFD_SHIM]}
SHIM=${2:-}
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	echo "SKIP: needs root and unshare (a PID namespace per launcher rank)"
	exit 77
fi
W=$(mktemp -d /tmp/rocattach-plan-test.XXXXXX)
TARGET=$B/bin/rocattach-example-target

# In a new PID namespace: start the target with our agent, wait for its listener, run "$@".
rank_script='t=$1 a=$2; shift 2
ROCP_TOOL_ATTACH=1 LD_PRELOAD=$a "$t" --threads 0 </dev/null >/dev/null 2>&1 &
i=0
while ! grep -qs rocp-bg-attach /proc/$!/task/*/comm && [ $i -lt 2000 ]; do
	sleep 0.005; i=$((i + 1))
done
"$@"'
rank() { # rank ENV...: one MPMD part
	printf '%s\0' -np 1 env "$@" unshare --pid --fork --mount-proc /bin/sh -c "$rank_script" \
		sh "$TARGET" "$AGENT" "$LAUNCHER" --one-node-per-rank --exe rocattach-example-target \
		--report "$W/r.json"
}
mapfile -d '' -t r0 < <(rank ROCPROF_ATTACH_DURATION=300 ROCPROF_ATTACH_TOOL_LIBRARY="$TOOL" \
	ROCPROF_OUTPUT_PATH="$W/t")
mapfile -d '' -t r1 < <(rank ROCPROF_ATTACH_DURATION=junk \
	ROCPROF_ATTACH_TOOL_LIBRARY=/nonexistent/libnope.so ROCPROF_OUTPUT_PATH="$W/wrong" \
	ROCP_ONLY_ON_RANK1=1)
mkdir -p "$W/t" "$W/wrong"
# Shared-memory transports do not cross PID namespaces: MPI over TCP.
timeout 120 mpirun --bind-to none --mca btl self,tcp "${r0[@]}" : "${r1[@]}" </dev/null >"$W/out" 2>&1
rc=$?
check "two ranks, rank 1's environment differs: exit 0 (got $rc)" exit_ok "$rc" "$W/r.json"
[ "$rc" -eq 0 ] || cat "$W/out" >&2
check "no rank complains of its environment" bash -c "! grep -qi 'invalid\|error' '$W/out'"
check "report: 2 nodes, one target each, detached" jq -e '.windows[0].nodes | length == 2
	and all(.targets | length == 1 and .[0].state == "detached")' "$W/r.json"
# (Within 1 us: jq reads the nanosecond times as doubles, 256 ns apart at today's dates.)
check "the window is rank 0's ROCPROF_ATTACH_DURATION (300 ms): $(jq -c '.windows[0] |
	[.stop_ns - .start_ns, .stop_reason]' "$W/r.json")" jq -e \
	'.windows[0] | .stop_reason == "duration" and
	 ((.stop_ns - .start_ns - 300000000) | fabs) < 1000' "$W/r.json"
check "both targets ran rank 0's tool, writing where rank 0 said" test \
	"$(cat "$W"/t/rocattach-tool.*.log 2>/dev/null | grep -c '^tool_detach ')" -eq 2
check "nothing went where rank 1's own environment said" test -z "$(ls -A "$W/wrong")"
# Each variable that differs is named once, by its node, with the value used.
# (Each rank here is the only one of its "node" and mpirun's ranks are all on this
# node, so rank 0 is the lowest there: its variables are the run's.)
for v in "ROCPROF_ATTACH_DURATION is 'junk' on this node; the run uses '300', as rank 0 has it" \
	"ROCPROF_OUTPUT_PATH is '$W/wrong' on this node; the run uses '$W/t', as rank 0 has it" \
	"ROCP_ONLY_ON_RANK1 is '1' on this node; the run unsets it, as rank 0 has none"; do
	check "rank 1 names it once: $v" test "$(grep -cF "[$(hostname):1] warning: $v" "$W/out")" -eq 1
done
check "rank 0 names nothing" bash -c "! grep -q ':0\] warning' '$W/out'"

# mpirun's node: the lowest rank there is the source. Rank 0 is made to look like
# a rank on another node (Open MPI's mpirun and local daemon differ there: without
# the first, and in a PID namespace, it finds no mpirun above it); rank 1 alone has
# the user's settings (as -x would be needed to send them to another node).
mapfile -d '' -t r0b < <(rank -u OMPI_MCA_orte_hnp_uri ROCPROF_OUTPUT_PATH="$W/wrong")
mapfile -d '' -t r1b < <(rank ROCPROF_ATTACH_DURATION=300 ROCPROF_ATTACH_TOOL_LIBRARY="$TOOL" \
	ROCPROF_OUTPUT_PATH="$W/t2")
mkdir -p "$W/t2"
rm -f "$W/r.json"
timeout 120 mpirun --bind-to none --mca btl self,tcp "${r0b[@]}" : "${r1b[@]}" </dev/null \
	>"$W/out3" 2>&1
rc=$?
check "settings only on mpirun's node (rank 1): exit 0 (got $rc)" exit_ok "$rc" "$W/r.json"
[ "$rc" -eq 0 ] || cat "$W/out3" >&2
check "the window is rank 1's ROCPROF_ATTACH_DURATION (300 ms)" jq -e \
	'.windows[0] | .stop_reason == "duration" and
	 ((.stop_ns - .start_ns - 300000000) | fabs) < 1000' "$W/r.json"
check "both targets ran rank 1's tool, writing where rank 1 said" test \
	"$(cat "$W"/t2/rocattach-tool.*.log 2>/dev/null | grep -c '^tool_detach ')" -eq 2
check "rank 0 names its own output path once, and rank 1's as the one used" test "$(grep -cF \
	"[$(hostname):0] warning: ROCPROF_OUTPUT_PATH is '$W/wrong' on this node; the run uses '$W/t2', as rank 1 on mpirun's node has it" \
	"$W/out3")" -eq 1
check "rank 0 names nothing else (it lacked the others: it takes them)" test \
	"$(grep -c ':0\] warning' "$W/out3")" -eq 1
check "nothing went where rank 0's own environment said" test -z "$(ls -A "$W/wrong")"
check "rank 1 names nothing" bash -c "! grep -q ':1\] warning' '$W/out3'"

if [ -n "$SHIM" ]; then
	# rank 1 cannot read its signals (signalfd fails): it would ignore scancel's SIGTERM.
	# (Under ASan the shim would come before its runtime: allowed for this one.)
	mapfile -d '' -t r1 < <(rank ROCPROF_ATTACH_DURATION=300 LD_PRELOAD="$SHIM" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
	rm -f "$W/r.json"
	timeout 120 mpirun --bind-to none --mca btl self,tcp "${r0[@]}" : "${r1[@]}" </dev/null \
		>"$W/out2" 2>&1
	rc=$?
	check "signalfd fails on rank 1: exit 1 (got $rc)" test "$rc" -eq 1
	check "the line names signalfd and the cause" grep -q \
		"cannot read its signals (signalfd: Too many open files)" "$W/out2"
	check "no target was touched: no report, no tool ran" test ! -e "$W/r.json" -a \
		"$(cat "$W"/t/rocattach-tool.*.log 2>/dev/null | grep -c '^tool_attach ')" -eq 2
fi

rm -rf "$W"
finish
