#!/usr/bin/env bash
# vcluster-up.sh [N]: a virtual cluster of N nodes (default 3) in namespaces on this machine.
#
# Node i (node1..nodeN) has its own network, UTS, PID, mount and IPC namespaces:
# hostname nodeI, eth0 10.77.0.I/24 on a veth to bridge vcbr, which lives in
# netns ${VC_PREFIX}sw. The head (netns ${VC_PREFIX}head, 10.77.0.254, hostname
# head) keeps the host's pid namespace: mpirun and the Slurm clients run there.
# The host network is never touched. State and helpers are in $VC_STATE
# (default /run/rocattach-vc):
#   vc-exec NODE CMD...   run CMD inside a node (environment kept)
#   vc-head CMD...        run CMD on the head
#   vc-rsh HOST CMD...    Open MPI's rsh agent
#   hostfile, env.sh      mpirun's hostfile; source env.sh for the OMPI_* settings
# Idempotent: a healthy cluster of the same size is left alone, anything else
# is torn down first. Env: VC_STATE, VC_PREFIX, VC_PRIVATE_TMP=0 (share the
# host's /tmp and /dev/shm), VC_SLOTS (slots per node in the hostfile).
set -euo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

n=${1:-${VC_NODES:-3}}
if ! [[ $n =~ ^[1-9][0-9]*$ ]] || [ "$n" -gt 250 ]; then
	vc_die "usage: $0 [N]   (1 <= N <= 250 nodes)"
fi
if ! why=$(vc_missing_base); then
	vc_die "cannot bring up the virtual cluster: $why"
fi
vc_lock "$@"
vc_close_fds
t0=$(vc_ms)

if [ "$(vc_running_nodes)" = "$n" ]; then
	vc_log "already up: $n nodes in $VC_STATE"
	exit 0
fi
vc_teardown

ok=0
trap '[ $ok = 1 ] || { vc_log "bring-up failed, tearing down"; vc_teardown; }' EXIT

S=$VC_STATE
mkdir -p "$S/run" "$S/log"
chmod 755 "$S"
slots=${VC_SLOTS:-$(nproc)}

{
	echo "127.0.0.1 localhost"
	echo "::1 localhost ip6-localhost ip6-loopback"
	echo "$VC_HEAD_ADDR head"
	for ((i = 1; i <= n; i++)); do echo "$VC_NET.$i node$i"; done
} >"$S/hosts"
for ((i = 1; i <= n; i++)); do echo "node$i slots=$slots"; done >"$S/hostfile"

# The init of a node, and the holder of the head's namespaces.
cat >"$VC_INIT" <<'EOF'
#!/bin/bash
# PID 1 of a virtual node (or the holder of the head's namespaces): hostname and
# private mounts, then sleep. As PID 1, bash reaps the orphans re-parented to it
# (orted --daemonize, slurmd's children) when SIGCHLD interrupts the wait.
name=$1
S=$(dirname "$0")
hostname "$name" || exit 1
mount --bind "$S/hosts" /etc/hosts || exit 1
if [ "$name" != head ] && [ "${VC_PRIVATE_TMP:-1}" != 0 ]; then
	mount -t tmpfs -o mode=1777 vc-tmp /tmp || exit 1
	mount -t tmpfs -o mode=1777 vc-shm /dev/shm || exit 1
fi
echo "$$" >"$S/run/$name.ready"
trap 'exit 0' TERM
while :; do
	sleep 86400 &
	wait
done
EOF
chmod 755 "$VC_INIT"

# Network: a bridge in its own netns, one veth per node and one for the head.
all=(head)
for ((i = 1; i <= n; i++)); do all+=("node$i"); done
# The first "ip netns add" on a machine makes /run/netns (and a mount on it):
# remember whether that was us, so that down can undo it.
[ -d /run/netns ] || : >"$S/netns-dir-ours"
mountpoint -q /run/netns 2>/dev/null || : >"$S/netns-mount-ours"
ip netns add "${VC_PREFIX}sw"
for name in "${all[@]}"; do ip netns add "$VC_PREFIX$name"; done
{
	echo "link set lo up"
	echo "link add $VC_BRIDGE type bridge forward_delay 0 stp_state 0"
	echo "link set $VC_BRIDGE up"
	for name in "${all[@]}"; do
		port=v${name#node}
		echo "link add $port type veth peer name eth0 netns $VC_PREFIX$name"
		echo "link set $port master $VC_BRIDGE up"
	done
} | ip -n "${VC_PREFIX}sw" -batch -
for name in "${all[@]}"; do
	addr=$VC_HEAD_ADDR
	[ "$name" = head ] || addr=$VC_NET.${name#node}
	printf 'link set lo up\naddr add %s/24 dev eth0\nlink set eth0 up\n' "$addr" |
		ip -n "$VC_PREFIX$name" -batch -
done

# Node inits: nsenter --net, not "ip netns exec", which remounts /sys (and so
# hides /sys/fs/cgroup from slurmd). Each in its own session, with a clean
# environment and no inherited descriptors.
declare -A launcher
start_init() {
	local name=$1
	shift
	(
		exec </dev/null >"$S/log/$name.log" 2>&1
		exec setsid env -i PATH="$PATH" VC_PRIVATE_TMP="${VC_PRIVATE_TMP:-1}" \
			nsenter --net="/run/netns/$VC_PREFIX$name" unshare "$@" "$VC_INIT" "$name"
	) &
	launcher[$name]=$!
}
start_init head --uts --mount --propagation slave
for ((i = 1; i <= n; i++)); do
	start_init "node$i" --pid --fork --mount-proc --uts --mount --ipc --propagation private
done

deadline=$(($(vc_ms) + 10000))
for name in "${all[@]}"; do
	while [ ! -e "$S/run/$name.ready" ]; do
		if ! vc_alive "${launcher[$name]}" || [ "$(vc_ms)" -gt "$deadline" ]; then
			vc_log "$name did not start; its log:"
			cat "$S/log/$name.log" >&2 || true
			exit 1
		fi
		sleep 0.01
	done
done
# Host pids of the inits (the unshare parents carry the same marker as last-but-one argument).
while read -r pid name; do
	mapfile -d '' -t a 2>/dev/null <"/proc/$pid/cmdline" || continue
	[ "${a[1]:-}" = "$VC_INIT" ] && echo "$pid" >"$S/run/$name.pid"
done < <(vc_init_pids)
for name in "${all[@]}"; do
	[ -s "$S/run/$name.pid" ] || vc_die "cannot find the init of $name"
done

# Helpers, with the state directory written in.
cat >"$S/vc-exec" <<EOF
#!/bin/bash
# vc-exec NODE CMD...: run CMD inside NODE's namespaces (pid, mount, uts, net, ipc).
# The environment and working directory are kept.
if [ \$# -lt 2 ]; then echo "usage: vc-exec NODE CMD..." >&2; exit 2; fi
pid=\$(cat "$S/run/\$1.pid" 2>/dev/null) || { echo "vc-exec: no node '\$1' (is the virtual cluster up?)" >&2; exit 2; }
# Like ssh, pass on only stdin, stdout and stderr: a daemon started in a node
# must not keep the caller's lock (flock) or a test's pipe open.
for f in /proc/\$\$/fd/*; do
	n=\${f##*/}
	[ "\$n" -gt 2 ] 2>/dev/null && eval "exec \$n>&-" 2>/dev/null
done
ns=(--pid --mount --uts --net --ipc)
[ "\$1" = head ] && ns=(--mount --uts --net)
shift
# The same directory inside the node if it exists there (a node has its own /tmp), else /.
exec nsenter -t "\$pid" "\${ns[@]}" -- /bin/sh -c 'cd "\$0" 2>/dev/null || cd /; exec "\$@"' "\$PWD" "\$@"
EOF
cat >"$S/vc-head" <<EOF
#!/bin/bash
# vc-head CMD...: run CMD on the head (netns ${VC_PREFIX}head, hostname head, host pid namespace).
[ \$# -ge 1 ] || { echo "usage: vc-head CMD..." >&2; exit 2; }
exec "$S/vc-exec" head "\$@"
EOF
cat >"$S/vc-rsh" <<EOF
#!/bin/bash
# vc-rsh HOST CMD...: the ssh replacement for Open MPI (OMPI_MCA_plm_rsh_agent).
# HOST is nodeI, nodeI.domain, $VC_NET.I or head. CMD runs through sh in the
# node's namespaces, with a clean login-like environment, as ssh would.
while [ \$# -gt 0 ] && [ "\${1#-}" != "\$1" ]; do shift; done
if [ \$# -lt 2 ]; then echo "usage: vc-rsh HOST CMD..." >&2; exit 255; fi
h=\$1
shift
if [[ \$h =~ ^${VC_NET//./\\.}\\.([0-9]+)\$ ]]; then
	h=node\${BASH_REMATCH[1]}
	[ "\$h" = node254 ] && h=head
else
	h=\${h%%.*}
fi
if [ ! -s "$S/run/\$h.pid" ]; then echo "vc-rsh: unknown host '\$h'" >&2; exit 255; fi
cd / || exit 255
exec "$S/vc-exec" "\$h" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
	HOME=/root USER=root LOGNAME=root SHELL=/bin/sh sh -c "\$*"
EOF
chmod 755 "$S/vc-exec" "$S/vc-head" "$S/vc-rsh"
cat >"$S/env.sh" <<EOF
# Source this for mpirun on the head: ". $S/env.sh; $S/vc-head mpirun --hostfile $S/hostfile ..."
export VC_STATE=$S
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent=$S/vc-rsh OMPI_MCA_plm_rsh_no_tree_spawn=1
export OMPI_MCA_oob_tcp_if_include=$VC_NET.0/24 OMPI_MCA_btl_tcp_if_include=$VC_NET.0/24
EOF

# Reachability (there is no ping): a TCP connect to a closed port must be refused.
# shellcheck disable=SC2016
if ! out=$(timeout 5 "$S/vc-head" bash -c '
	for ((i = 1; i <= $1; i++)); do
		err=$( (exec 3<>"/dev/tcp/$2.$i/9") 2>&1 ) || true
		case $err in *refused*) ;; *) echo "node$i: $err"; exit 1 ;; esac
	done' _ "$n" "$VC_NET" 2>&1); then
	vc_die "nodes are not reachable from the head: ${out:-timeout}"
fi

echo "$n" >"$S/nodes"
ok=1
vc_log "up: $n nodes in $S ($(($(vc_ms) - t0)) ms); run: . $S/env.sh; $S/vc-head mpirun --hostfile $S/hostfile -np $n --map-by node hostname"
