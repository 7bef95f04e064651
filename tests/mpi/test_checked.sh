#!/usr/bin/env bash
# Every MPI result checked. Two launcher ranks on this machine, each in a PID namespace
# of its own with one example target (--one-node-per-rank: two nodes). A PMPI shim
# (mpi_fail.c), preloaded into one rank only, makes one of its MPI_Recv calls fail:
# 1. on rank 0, the receive of rank 1's window records: rank 1 is lost, with one line
#    naming the call and the peer; exit 6; the report is written and says why.
# 2. on rank 1, the receive of rank 0's stop: rank 1 says so naming the call and rank 0,
#    detaches its target and ends (exit 6); rank 0 loses it.
# Each target is looked at after its launcher rank ended: alive, not traced, and its
# tool attached and detached once.
B=${1:?usage: test_checked.sh BUILD_DIR SHIM}
SHIM=${2:?usage: test_checked.sh BUILD_DIR SHIM}
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
	echo "SKIP: needs root and unshare (a PID namespace per launcher rank)"
	exit 77
fi
W=$(mktemp -d /tmp/rocattach-checked-test.XXXXXX)
TARGET=$B/bin/rocattach-example-target

# In a new PID namespace: start the target with our agent, wait for its listener, run the
# launcher ("$@"), then write what became of the target to $W/after.TAG: "alive
# TRACERPID" or "dead", then the launcher's exit code. (mpirun, told not to end the job
# at a rank's failure, exits 0. The namespace, target included, ends with this script.)
rank_script='t=$1 a=$2 out=$3; shift 3
ROCP_TOOL_ATTACH=1 LD_PRELOAD=$a "$t" --threads 0 </dev/null >/dev/null 2>&1 &
tp=$!
i=0
while ! grep -qs rocp-bg-attach /proc/$tp/task/*/comm && [ $i -lt 2000 ]; do
	sleep 0.005; i=$((i + 1))
done
"$@"
rc=$?
if kill -0 $tp 2>/dev/null; then
	echo "alive $(awk "/^TracerPid/ { print \$2 }" /proc/$tp/status) $rc" >"$out"
else
	echo "dead - $rc" >"$out"
fi
exit $rc'
rank() { # rank TAG ENV...: one MPMD part; ENV goes to the launcher only
	local tag=$1
	shift
	printf '%s\0' -np 1 unshare --pid --fork --mount-proc /bin/sh -c "$rank_script" \
		sh "$TARGET" "$AGENT" "$W/after.$tag" env "$@" "$LAUNCHER" --one-node-per-rank \
		--exe rocattach-example-target -t "$TOOL" -d 300 --report "$W/r.$tag.json"
}

# run CASE RANK0_ENV... -- RANK1_ENV...: both ranks, rank 0's output in $W/CASE.out.
run() {
	local c=$1 e0=() e1=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do e0+=("$1"); shift; done
	shift
	e1=("$@")
	mapfile -d '' -t r0 < <(rank "$c.0" ROCPROF_OUTPUT_PATH="$W/t.$c" "${e0[@]}")
	mapfile -d '' -t r1 < <(rank "$c.1" "${e1[@]}")
	mkdir -p "$W/t.$c"
	# Shared-memory transports do not cross PID namespaces: MPI over TCP. A rank that
	# ends with a failure must not end the other: each says its own.
	timeout 120 mpirun --bind-to none --mca btl self,tcp \
		--mca orte_abort_on_non_zero_status 0 "${r0[@]}" : "${r1[@]}" \
		</dev/null >"$W/$c.out" 2>&1
}

# The exit code of rank R's launcher in CASE.
rc_of() { awk '{ print $3 }' "$W/after.$1.$2" 2>/dev/null; }

targets_unharmed() { # CASE: both targets alive, not traced; each tool attached and detached
	local c=$1
	check "$c: rank 0's target alive, not traced ($(cat "$W/after.$c.0" 2>/dev/null))" \
		grep -q "^alive 0 " "$W/after.$c.0"
	check "$c: rank 1's target alive, not traced ($(cat "$W/after.$c.1" 2>/dev/null))" \
		grep -q "^alive 0 " "$W/after.$c.1"
	check "$c: two tools attached, two detached" test \
		"$(cat "$W/t.$c"/rocattach-tool.*.log 2>/dev/null | grep -c '^tool_attach ')-$(
			cat "$W/t.$c"/rocattach-tool.*.log 2>/dev/null | grep -c '^tool_detach ')" = 2-2
}

# 1. Rank 0: the second MPI_Recv of tag 23 (records; the first is the survey's) fails.
run recv0 LD_PRELOAD="$SHIM" RA_MPI_FAIL_TAG=23 RA_MPI_FAIL_NTH=2 --
rc=$(rc_of recv0 0)
check "rank 0's receive fails: rank 0 exits 6 (got $rc)" test "$rc" = 6
check "one line names the call and the peer" grep -qE \
	'\(rank 1\) lost: MPI_Recv from rank 1 failed: MPI_ERR_OTHER' "$W/recv0.out"
check "the report is written: rank 1's node lost for that reason, exit 6" jq -e '
	.exit_code == 6 and ([.windows[0].nodes[] | select(.state == "lost")] | length == 1
	  and (.[0].lost_reason | test("^MPI_Recv from rank 1 failed: MPI_ERR_OTHER")))' \
	"$W/r.recv0.0.json"
check "the summary says exit 6" grep -q "(exit 6: 1 node lost)" "$W/recv0.out"
targets_unharmed recv0

# 2. Rank 1: its first MPI_Recv of tag 21 (rank 0's stop) fails.
run recv1 -- LD_PRELOAD="$SHIM" RA_MPI_FAIL_TAG=21
check "rank 1's receive fails: both ranks exit 6 (got $(rc_of recv1 0) $(rc_of recv1 1))" \
	test "$(rc_of recv1 0)-$(rc_of recv1 1)" = 6-6
check "rank 1 names the call and rank 0, detached, ending" grep -qE \
	"rocattach-mpi\[[^]]*:1\] error: MPI_Recv from rank 0 failed: MPI_ERR_OTHER.*: detached this node's targets, ending \(exit 6\)" \
	"$W/recv1.out"
check "rank 0 wrote its report, rank 1 lost" jq -e '.exit_code == 6 and
	([.windows[0].nodes[] | select(.state == "lost")] | length == 1)' "$W/r.recv1.0.json"
targets_unharmed recv1
if [ "$FAILED" -eq 0 ]; then rm -rf "$W"; else head -c 6000 "$W"/recv*.out >&2; fi
finish
