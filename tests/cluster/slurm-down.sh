#!/usr/bin/env bash
# slurm-down.sh [--keep-vcluster]: stop what slurm-up.sh started: the job steps
# (slurmstepd and their tasks) and slurmd in each node, slurmctld and munged on
# the head, found by the pid files under $VC_STATE/slurm; then remove that
# directory. If slurm-up.sh brought the virtual cluster up, it goes down too
# (unless --keep-vcluster). Succeeds when nothing is up.
set -euo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"

keep_vc=0
[ "${1:-}" = --keep-vcluster ] && keep_vc=1
[ "$(id -u)" -eq 0 ] || vc_die "not root"
vc_lock "$@"
vc_close_fds
t0=$(vc_ms)

S=$VC_STATE
D=$S/slurm
rm -f "$S/vc-slurm"
if [ ! -d "$D" ]; then
	exit 0
fi
started_vc=0
[ -e "$D/started-vcluster" ] && started_vc=1
# Every node that has an init, even when the cluster is broken.
n=$(cat "$S/nodes" 2>/dev/null || true)
[[ $n =~ ^[0-9]+$ ]] || n=0

# In each node: kill every job step (slurmstepd and all its descendants), then
# stop slurmd (SIGTERM, SIGKILL after 5 s). Runs inside the node, so its /proc
# holds only the node's processes and the pids are the node's.
# shellcheck disable=SC2016
stop_node='
alive() {
	local s
	s=$(cat /proc/$1/stat 2>/dev/null) || return 1
	s=${s##*) }
	[ "${s%% *}" != Z ]
}
tree() {
	local c
	echo "$1"
	for c in $(cat /proc/$1/task/*/children 2>/dev/null); do tree "$c"; done
}
steps=
for d in /proc/[0-9]*; do
	[ "$(cat $d/comm 2>/dev/null)" = slurmstepd ] && steps="$steps $(tree ${d#/proc/})"
done
[ -n "$steps" ] && kill -KILL $steps 2>/dev/null
p=$(cat "$1" 2>/dev/null) || exit 0
[ "$(cat /proc/$p/comm 2>/dev/null)" = slurmd ] || exit 0
kill -TERM "$p" 2>/dev/null
for i in $(seq 100); do
	alive "$p" || exit 0
	sleep 0.05
done
kill -KILL "$p" 2>/dev/null
exit 0
'
for ((i = 1; i <= n; i++)); do
	"$S/vc-exec" "node$i" bash -c "$stop_node" _ "$D/run/slurmd.node$i.pid" 2>/dev/null &
done

# On the head (host pid namespace): slurmctld and munged, by their pid files.
stop_head() {
	local f=$1 comm=$2 pid i
	vc_pid_is "$f" "$comm" || return 0
	pid=$(cat "$f")
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		vc_alive "$pid" || return 0
		sleep 0.05
	done
	vc_log "warning: $comm ($pid) ignored SIGTERM, killing it"
	kill -KILL "$pid" 2>/dev/null || true
}
# None of the daemons needs another one while shutting down.
stop_head "$D/run/slurmctld.pid" slurmctld &
stop_head "$D/munge/munged.pid" munged &
wait

# The bind mounts of etc/ over /etc/slurm (in the head's and the nodes' own mount namespaces).
for name in head $(seq -f 'node%g' 1 "$n"); do
	"$S/vc-exec" "$name" /bin/sh -c 2>/dev/null \
		'while grep -q " /etc/slurm " /proc/self/mountinfo; do umount -l /etc/slurm || break; done' || true
done
rm -rf "$D"
vc_log "Slurm down ($(($(vc_ms) - t0)) ms)"
if [ $started_vc = 1 ] && [ $keep_vc = 0 ]; then
	"$HERE/vcluster-down.sh"
fi
