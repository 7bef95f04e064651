#!/usr/bin/env bash
# slurm-up.sh [N]: Slurm on the virtual cluster (brought up with N nodes, default 3,
# if it is not up). munged and slurmctld run on the head, one slurmd in each
# node's namespaces; MpiDefault=pmix. Everything lives in $VC_STATE/slurm:
#   etc/slurm.conf, state/, spool/nodeI/, log/, run/ (pid files), munge/ (own munged socket)
# etc/ is bind-mounted over /etc/slurm on the head and in every node (their own
# mount namespaces), so scontrol, srun ... work there without SLURM_CONF.
# Clients: $VC_STATE/vc-slurm CMD... (sets SLURM_CONF, runs CMD on the head), e.g.
#   $VC_STATE/vc-slurm srun -N3 -n3 hostname
# Waits until every node is idle. Idempotent: a healthy Slurm is left alone.
# Env: VC_SLURM_CPUS (CPUs advertised per node, default nproc),
# VC_SLURM_TIMEOUT (seconds to wait for idle nodes, default 30),
# VC_SLURM_PLUGSTACK (a plugstack.conf for SPANK plugins, PlugStackConfig: a path
# every node sees, e.g. under /var/tmp; a Slurm up with another one is restarted).
set -euo pipefail
HERE=$(dirname "$(readlink -f "$0")")
. "$HERE/lib.sh"

n=${1:-${VC_NODES:-3}}
if ! why=$(vc_missing_slurm); then
	vc_die "cannot bring up Slurm: $why"
fi
vc_lock "$@"
vc_close_fds
t0=$(vc_ms)

S=$VC_STATE
D=$S/slurm
C=$D/etc/slurm.conf

running=$(vc_running_nodes)
started_vc=0
if [ -z "$running" ]; then
	"$HERE/vcluster-up.sh" "$n"
	started_vc=1
elif [ "$running" != "$n" ] && [ -n "${1:-}" ]; then
	vc_die "the virtual cluster is up with $running nodes, not $n: run vcluster-down.sh first"
else
	n=$running
fi

plugstack=
if [ -n "${VC_SLURM_PLUGSTACK:-}" ]; then
	[ -r "$VC_SLURM_PLUGSTACK" ] || vc_die "VC_SLURM_PLUGSTACK: cannot read $VC_SLURM_PLUGSTACK"
	plugstack="PlugStackConfig=$(readlink -f "$VC_SLURM_PLUGSTACK")"
fi
# Already up and healthy, with the same plugstack?
if [ -z "$(vc_slurm_problems "$n")" ] &&
	[ "$(grep '^PlugStackConfig=' "$C" 2>/dev/null || true)" = "$plugstack" ]; then
	vc_log "Slurm already up on $n nodes ($S/vc-slurm sinfo)"
	exit 0
fi
[ -d "$D" ] && [ -e "$D/started-vcluster" ] && started_vc=1
"$HERE/slurm-down.sh" --keep-vcluster

ok=0
trap '[ $ok = 1 ] || { vc_log "Slurm bring-up failed, stopping it"; "$HERE/slurm-down.sh"; }' EXIT
mkdir -p "$D/etc" "$D/state" "$D/log" "$D/run" "$D/munge"
for ((i = 1; i <= n; i++)); do mkdir -p "$D/spool/node$i"; done
chmod 755 "$D" "$D/spool"
[ $started_vc = 1 ] && : >"$D/started-vcluster"

cpus=${VC_SLURM_CPUS:-$(nproc)}
cat >"$C" <<EOF
# Written by tests/cluster/slurm-up.sh for the virtual cluster in $S.
ClusterName=rocattach-vc
SlurmctldHost=head($VC_HEAD_ADDR)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
KillWait=5
InactiveLimit=0
MinJobAge=10
EOF
[ -n "$plugstack" ] && echo "$plugstack" >>"$C"
for ((i = 1; i <= n; i++)); do
	echo "NodeName=node$i NodeAddr=$VC_NET.$i CPUs=$cpus State=UNKNOWN"
done >>"$C"
echo "PartitionName=vc Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$C"

# Our slurm.conf at the default place, only inside our mount namespaces.
if [ -d /etc/slurm ]; then
	for name in head $(seq -f 'node%g' 1 "$n"); do
		"$S/vc-exec" "$name" mount --bind "$D/etc" /etc/slurm ||
			vc_die "cannot bind-mount $D/etc over /etc/slurm in $name"
	done
fi

# Our own munged with its own socket (a host munged, if any, is left alone).
# /run is one filesystem for all nodes, so every node reaches this socket.
chown munge:munge "$D/munge"
chmod 755 "$D/munge"
daemon_env=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF="$C")
"$S/vc-head" "${daemon_env[@]}" runuser -u munge -- /usr/sbin/munged \
	--socket="$D/munge/munge.socket" --pid-file="$D/munge/munged.pid" \
	--log-file="$D/munge/munged.log" --seed-file="$D/munge/munged.seed" ||
	vc_die "munged did not start: $(tail -5 "$D/munge/munged.log" 2>/dev/null)"
"$S/vc-head" "${daemon_env[@]}" slurmctld -f "$C" ||
	vc_die "slurmctld did not start: $(tail -5 "$D/log/slurmctld.log" 2>/dev/null)"
for ((i = 1; i <= n; i++)); do
	"$S/vc-exec" "node$i" "${daemon_env[@]}" slurmd -f "$C" ||
		vc_die "slurmd on node$i did not start: $(tail -5 "$D/log/slurmd.node$i.log" 2>/dev/null)"
done

cat >"$S/vc-slurm" <<EOF
#!/bin/bash
# vc-slurm CMD...: run a Slurm client (srun, sbatch, sinfo, squeue, scancel, ...)
# on the head of the virtual cluster, with its slurm.conf. Jobs start in the
# client's directory; a node's /tmp is its own, so from under /tmp it runs from /.
[ \$# -ge 1 ] || { echo "usage: vc-slurm CMD..." >&2; exit 2; }
case \$PWD in /tmp | /tmp/*) cd / ;; esac
export SLURM_CONF=$C
exec "$S/vc-head" "\$@"
EOF
chmod 755 "$S/vc-slurm"

# Wait until every node is idle.
timeout_s=${VC_SLURM_TIMEOUT:-30}
deadline=$(($(vc_ms) + timeout_s * 1000))
while :; do
	states=$("$S/vc-slurm" sinfo -h -N -o '%N %T' 2>&1 || true)
	idle=$(grep -c ' idle$' <<<"$states" || true)
	[ "$idle" -eq "$n" ] && break
	if [ "$(vc_ms)" -gt "$deadline" ]; then
		vc_log "nodes not idle after ${timeout_s}s; sinfo says:"
		echo "$states" >&2
		for f in "$D/log"/*.log "$D/munge/munged.log"; do
			[ -e "$f" ] || continue
			echo "--- tail of $f" >&2
			tail -n 15 "$f" >&2
		done
		exit 1
	fi
	sleep 0.1
done
ok=1
vc_log "Slurm up on $n nodes ($(($(vc_ms) - t0)) ms); run: $S/vc-slurm srun -N$n hostname"
