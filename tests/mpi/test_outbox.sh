#!/usr/bin/env bash
# The link's failures with a child (launcher/coord/link.c, flow.c). Launcher ranks each
# in its own PID and UTS namespace (hostname rN, --one-node-per-rank) with one example
# target; the PMPI shim (mpi_fail.c) preloaded into one rank only.
# 1. The outbox when sends to a child fail: 4 ranks, --fanout 2 (rank 0's children 1 and
#    2, rank 1's child 3). The shim keeps rank 0's sends to rank 1 pending until three are
#    outstanding at once, then makes MPI_Test fail on each of them: several failures in
#    one pass over the outbox, and the ADOPT to rank 3 posted after them. The shim logs
#    rank 0's sends and their completions.
#  - rank 1 is lost with one line naming the call and the peer; rank 0 adopts rank 3,
#    whose records come to it: nodes r0, r2, r3 ok with their targets detached; exit 6
#  - the ADOPT to rank 3 stays in rank 0's outbox until MPI completed it (tested done),
#    and no request is tested again after it completed (a freed one: its copy would be
#    freed twice)
#  - no sanitizer report in any rank (the ASan build runs this too)
#  - ranks 0, 2, 3: every target alive, untraced, its tool attached and detached once.
#    Rank 1 is ended by mpirun once the others left without MPI_Finalize (they do when a
#    rank is lost): its namespace, target included, goes with it.
# 2. A child's records claim a STOP that never comes: 2 ranks, the shim on rank 1 adds
#    one STOP to the count in the head of its window-1 records. Rank 0 drains the link
#    within its deadline (no receive waits on the claimed count), loses rank 1 with the
#    counts, and writes its report (exit 6); its own target detached once.
# Usage: test_outbox.sh BUILD_DIR SHIM   (under the heavy-test lock)
B=${1:?usage: test_outbox.sh BUILD_DIR SHIM}
SHIM=${2:?usage: test_outbox.sh BUILD_DIR SHIM}
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "SKIP: jq not found (package jq)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare not found (package util-linux)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a PID namespace per rank)"; exit 77; }
TARGET=$B/bin/rocattach-example-target
export OMPI_MCA_btl=self,tcp
W=$(mktemp -d /var/tmp/ra-outbox.XXXXXX)
trap 'cleanup; [ "${KEEP:-0}" = 1 ] || rm -rf "$W"' EXIT

# Each rank: its hostname, its target, the launcher (with the shim on rank 0); then
# "rank exit tracer alive attaches detaches" of its target after the launcher ended.
cat >"$W/rank.sh" <<'EOF'
out=$1; shift
r=$OMPI_COMM_WORLD_RANK
hostname "r$r"
i=0
while [ $i -lt "$r" ]; do /bin/true; i=$((i + 1)); done
ROCP_TOOL_ATTACH=1 LD_PRELOAD=$AGENT "$TARGET" --threads 0 </dev/null >/dev/null 2>&1 &
tp=$!
i=0
while ! grep -qs rocp-bg-attach /proc/$tp/task/*/comm && [ $i -lt 2000 ]; do
	sleep 0.005; i=$((i + 1))
done
if [ "$r" = "$SHIM_RANK" ]; then
	# shellcheck disable=SC2086 # SHIM_ENV: NAME=VALUE words
	env LD_PRELOAD="$SHIM" $SHIM_ENV RA_MPI_FAIL_LOG="$out/sends" "$@" 2>"$out/err.$r"
else
	"$@" 2>"$out/err.$r"
fi
rc=$?
# mpirun ends the ranks still running once one left without MPI_Finalize: finish this.
trap '' TERM HUP
for i in $(seq 50); do
	[ "$(grep -c '^tool_detach ' "$out"/tool/*."$tp".log 2>/dev/null)" = \
		"$(grep -c '^tool_attach ' "$out"/tool/*."$tp".log 2>/dev/null)" ] && break
	sleep 0.1
done
tr=$(awk '/^TracerPid:/ {print $2}' /proc/$tp/status)
alive=dead
kill -0 $tp 2>/dev/null && alive=alive
echo "$r $rc $tr $alive $(cat "$out"/tool/*."$tp".log 2>/dev/null | grep -c '^tool_attach ') \
$(cat "$out"/tool/*."$tp".log 2>/dev/null | grep -c '^tool_detach ')" >>"$out/ranks"
kill $tp
EOF

# run_case NAME RANKS SHIM_RANK "SHIM_ENV" LAUNCHER_ARGS...: the job, its outputs in $W/NAME.
run_case() {
	O=$W/$1
	mkdir -p "$O/tool"
	timeout 150 mpirun -np "$2" --bind-to none --mca orte_abort_on_non_zero_status 0 \
		-x ROCPROF_OUTPUT_PATH="$O/tool" -x AGENT="$AGENT" -x TARGET="$TARGET" \
		-x SHIM="$SHIM" -x SHIM_RANK="$3" -x SHIM_ENV="$4" \
		unshare --pid --fork --mount-proc --uts /bin/sh "$W/rank.sh" "$O" \
		"$LAUNCHER" --one-node-per-rank --exe rocattach-example-target -t "$TOOL" \
		"${@:5}" --report "$O/r.json" </dev/null >"$O/out" 2>&1
}

echo "== 1. sends to rank 1 fail while three are in flight"
run_case test 4 0 "RA_MPI_FAIL_OP=test RA_MPI_FAIL_PEER=1 RA_MPI_FAIL_HOLD=3" --fanout 2 -d 300
R=$O/r.json
check "report written" jq -e . "$R"
check "rank 0's launcher exited 6 (a node lost)" grep -q '^0 6 ' "$O/ranks"
check "the report says exit 6" jq -e '.exit_code == 6' "$R"
check "rank 1 lost: one line on rank 0's stream names the failed call and the peer" grep -qE \
	'\(rank 1\) lost: MPI_Test to rank 1 failed: MPI_ERR_OTHER' "$O/out"
check "rank 3 says rank 0 adopted it (its ADOPT came)" \
	grep -q 'rank 1 (this rank.s parent) was lost: rank 0 adopted this rank' "$O/err.3"
adopt=$(awk '$1 == "isend" && $3 == 3 && $4 == 24 { print $2 }' "$O/sends" 2>/dev/null)
echo "rank 0's ADOPT to rank 3: ${adopt:-none}; sends logged: $(grep -c '^isend' "$O/sends")"
check "rank 0 sent rank 3 one ADOPT" [ "$(wc -w <<<"$adopt")" = 1 ]
check "the ADOPT stayed in the outbox until MPI completed it" \
	awk -v r="$adopt" '$1 == "isend" && $2 == r { s = 1 } $1 == "done" && $2 == r && s { d = 1 }
	END { exit !d }' "$O/sends"
check "no request tested again after it completed" bash -c "! grep '^stale' '$O/sends'"
check "nodes r0, r2, r3 ok, each target detached (rank 3's records came by adoption)" \
	jq -e '[.windows[-1].nodes[] | select(.host != "r1") | select(.state == "ok" and
	.targets[0].state == "detached") | .host] | sort == ["r0", "r2", "r3"]' "$R"
check "no sanitizer report on any rank" bash -c \
	"! grep -l 'ERROR: AddressSanitizer\|runtime error:' '$O'/err.* '$O/out'"
check "ranks 0, 2 and 3 ended with the run's code (6)" \
	[ "$(awk '$1 != 1 && $2 == 6' "$O/ranks" | wc -l)" = 3 ]
check "ranks 0, 2, 3: every target alive and untraced afterwards" \
	[ "$(awk '$1 != 1 && $3 == 0 && $4 == "alive"' "$O/ranks" | wc -l)" = 3 ]
check "ranks 0, 2, 3: each target's tool attached once and detached once" bash -c "
	for r in 0 2 3; do [ \"\$(cat '$O'/tool/*.r\$r.*.log | grep -c '^tool_attach ')-\$(
		cat '$O'/tool/*.r\$r.*.log | grep -c '^tool_detach ')\" = 1-1 ] || exit 1; done"
[ "$FAILED" = 0 ] || { sed 's/^/  | /' "$O/ranks"; tail -40 "$O/out"; tail -n 20 "$O"/err.*; tail -n 30 "$O/sends"; }

echo "== 2. rank 1's window-1 records claim a STOP that never comes"
failed_before=$FAILED
run_case claim 2 1 "RA_MPI_FAIL_OP=claim RA_MPI_FAIL_PEER=0 RA_MPI_FAIL_NTH=2" -d 300
R=$O/r.json
echo "r1: $(jq -r '.windows[-1].nodes[] | select(.host == "r1") | .lost_reason' "$R" 2>/dev/null)"
check "the job ended (no receive waited on the claimed count)" grep -q '^0 ' "$O/ranks"
check "rank 0's launcher exited 6 (a node lost)" grep -q '^0 6 ' "$O/ranks"
check "rank 1 lost in window 1 with the counts" jq -e '.exit_code == 6 and
	([.windows[-1].nodes[] | select(.host == "r1")] | length == 1 and all(.state == "lost" and
	(.lost_reason | test("^its records count 1 STOP and 0 GONE messages before them, 0 and 0 came within [0-9.]+ s$")))) ' "$R"
check "rank 0's target detached once, alive and untraced" bash -c "
	grep -q '^0 6 0 alive ' '$O/ranks' &&
	[ \"\$(cat '$O'/tool/*.r0.*.log | grep -c '^tool_attach ')-\$(
		cat '$O'/tool/*.r0.*.log | grep -c '^tool_detach ')\" = 1-1 ]"
check "no sanitizer report on any rank" bash -c \
	"! grep -l 'ERROR: AddressSanitizer\\|runtime error:' '$O'/err.* '$O/out'"
[ "$FAILED" = "$failed_before" ] || { sed 's/^/  | /' "$O/ranks"; tail -30 "$O/out"; tail -n 20 "$O"/err.*; }
finish
