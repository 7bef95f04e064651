#!/usr/bin/env bash
# The virtual-cluster harness itself: bring-up time, hostnames, pid isolation,
# mpirun across the nodes (two jobs at once), a teardown that leaves nothing,
# idempotent up and down, and recovery from a broken cluster.
# Exit 77 (skip, with the reason) where it cannot run; under CI=true that is a failure.
# Run it under the machine's heavy-test lock:
#   flock /tmp/rocattach-heavy.lock tests/cluster/test_harness.sh
set -uo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"

why=$(vc_missing_base) || vc_skip "$why"
command -v mpirun >/dev/null || vc_skip "mpirun not found (package openmpi-bin)"
vc_close_fds

S=$VC_STATE
UP=$HERE/vcluster-up.sh
DOWN=$HERE/vcluster-down.sh
trap '"$DOWN" >/dev/null 2>&1' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# A clean slate: this test owns the cluster while it runs.
"$DOWN"
host_name=$(hostname)
netns_mount() { if mountpoint -q /run/netns 2>/dev/null; then echo "mounted"; else echo "not mounted"; fi; }
netns_before=$(netns_mount)

echo "== bring-up"
t=$(vc_ms)
"$UP" 3 || { vc_t_fail "vcluster-up.sh 3"; vc_t_done; exit 1; }
up_ms=$(($(vc_ms) - t))
echo "time: up ${up_ms} ms"
vc_t_cmd "up in ${up_ms} ms (limit 10 s)" [ "$up_ms" -lt 10000 ]

echo "== hostnames, addresses"
for i in 1 2 3; do
	vc_t_eq "node$i hostname" "$("$S/vc-exec" "node$i" hostname)" "node$i"
	addr=$("$S/vc-exec" "node$i" ip -o -4 addr show dev eth0 | awk '{ print $4 }')
	vc_t_eq "node$i address" "$addr" "10.77.0.$i/24"
	vc_t_eq "node$i resolves node3" "$("$S/vc-exec" "node$i" getent hosts node3 | awk '{ print $1 }')" \
		"10.77.0.3"
done
vc_t_eq "head hostname" "$("$S/vc-head" hostname)" "head"
vc_t_eq "vc-rsh by address" "$("$S/vc-rsh" 10.77.0.2 hostname)" "node2"
vc_t_eq "the host's hostname is unchanged" "$(hostname)" "$host_name"

echo "== pid isolation"
"$S/vc-exec" node2 sh -c 'sleep 1001 >/dev/null 2>&1 &'
vc_t_cmd "node2 sees its sleep" vc_node_has_cmd node2 "sleep 1001"
if vc_node_has_cmd node1 "sleep 1001"; then vc_t_fail "node1 sees node2's sleep"; else vc_t_ok "node1 does not see node2's sleep"; fi
vc_t_eq "node1's PID 1 is its init" "$("$S/vc-exec" node1 cat /proc/1/cmdline | tr '\0' ' ')" \
	"/bin/bash $S/vc-init node1 "
nprocs=$("$S/vc-exec" node1 sh -c 'ls -d /proc/[0-9]* | wc -l')
vc_t_cmd "node1 sees only its $nprocs processes" [ "$nprocs" -lt 10 ]
tmpf=/tmp/rocattach-vc-test.$$
"$S/vc-exec" node1 touch "$tmpf"
if [ -e "$tmpf" ]; then vc_t_fail "node1's /tmp is the host's"; rm -f "$tmpf"; else vc_t_ok "node1 has a private /tmp"; fi

echo "== mpirun from the head"
# shellcheck disable=SC1091
. "$S/env.sh"
mpi() { timeout 60 "$S/vc-head" mpirun --hostfile "$S/hostfile" "$@"; }
t=$(vc_ms)
out=$(mpi -np 3 --map-by node hostname 2>/dev/null | sort)
echo "time: mpirun -np 3 $(($(vc_ms) - t)) ms"
vc_t_eq "mpirun -np 3 --map-by node hostname" "$out" "$(printf 'node1\nnode2\nnode3')"

# Job A keeps running on all nodes while job B starts, runs and ends.
mpi -np 3 --map-by node sh -c 'sleep 4.5; hostname' >"$S/jobA.out" 2>"$S/jobA.err" &
jobA=$!
for i in 1 2 3; do
	for ((k = 0; k < 100; k++)); do
		vc_node_has_cmd "node$i" "sleep 4.5" && break
		sleep 0.1
	done
done
out=$(mpi -np 3 --map-by node hostname 2>/dev/null | sort)
vc_t_eq "a second mpirun while the first runs" "$out" "$(printf 'node1\nnode2\nnode3')"
vc_t_cmd "the first mpirun was still running" kill -0 $jobA
wait $jobA
rc=$?
vc_t_eq "the first mpirun's exit status" "$rc" 0
vc_t_eq "the first mpirun's output" "$(sort "$S/jobA.out")" "$(printf 'node1\nnode2\nnode3')"

echo "== teardown"
t=$(vc_ms)
"$DOWN"
down_ms=$(($(vc_ms) - t))
echo "time: down ${down_ms} ms"
vc_t_cmd "down in ${down_ms} ms (limit 10 s)" [ "$down_ms" -lt 10000 ]
vc_t_eq "nothing left after down" "$(vc_leftovers)" ""

echo "== idempotence"
vc_t_cmd "up" "$UP" 3
pids=$(cat "$S"/run/*.pid)
vc_t_cmd "up again" "$UP" 3
vc_t_eq "up again keeps the running nodes" "$(cat "$S"/run/*.pid)" "$pids"
# A broken cluster (a node's init killed) is rebuilt.
kill -KILL "$(cat "$S/run/node2.pid")"
vc_t_cmd "up on a broken cluster" "$UP" 3
vc_t_eq "node2 is back" "$("$S/vc-exec" node2 hostname)" "node2"
out=$(mpi -np 3 --map-by node hostname 2>/dev/null | sort)
vc_t_eq "mpirun after the rebuild" "$out" "$(printf 'node1\nnode2\nnode3')"
vc_t_cmd "down" "$DOWN"
vc_t_cmd "down again" "$DOWN"
vc_t_eq "nothing left after down twice" "$(vc_leftovers)" ""
vc_t_eq "/run/netns as before" "$(netns_mount)" "$netns_before"

vc_t_done
