# shellcheck shell=bash disable=SC2034
# Shared functions of the virtual-cluster harness (sourced, not run).
#
# Layout (see vcluster-up.sh): network namespaces ${VC_PREFIX}sw (bridge vcbr),
# ${VC_PREFIX}head and ${VC_PREFIX}node1..N; node i is 10.77.0.i/24, the head
# 10.77.0.254. Everything else lives in the state directory $VC_STATE.

VC_STATE=${VC_STATE:-/run/rocattach-vc}
VC_PREFIX=${VC_PREFIX:-ravc-}
VC_NET=10.77.0
VC_HEAD_ADDR=$VC_NET.254
VC_BRIDGE=vcbr
VC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Marker: every node init runs "$VC_INIT NAME", so teardown finds them by command line.
VC_INIT=$VC_STATE/vc-init
export VC_STATE VC_PREFIX

vc_log() { printf 'vcluster: %s\n' "$*" >&2; }
vc_die() { printf 'vcluster: error: %s\n' "$*" >&2; exit 1; }

# Milliseconds since the epoch (bash 5 builtin clock, no fork).
vc_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# Print why the namespace harness cannot run here and return 1, or return 0.
vc_missing_base() {
	local c
	if [ "$(id -u)" -ne 0 ]; then
		echo "not root (the virtual cluster needs namespaces and veths)"
		return 1
	fi
	for c in unshare nsenter ip setsid flock mount hostname timeout; do
		if ! command -v "$c" >/dev/null 2>&1; then
			echo "command '$c' not found (packages util-linux, iproute2, coreutils)"
			return 1
		fi
	done
	if ! unshare --net --uts --ipc --mount --pid --fork true 2>/dev/null; then
		echo "creating namespaces is not permitted here (unshare --net --pid ... failed)"
		return 1
	fi
	return 0
}

# Same for the Slurm part on top of the cluster.
vc_missing_slurm() {
	local c
	vc_missing_base || return 1
	for c in slurmctld slurmd srun sbatch sinfo scancel squeue munged runuser; do
		if ! command -v "$c" >/dev/null 2>&1; then
			echo "command '$c' not found (packages slurm-wlm, munge: scripts/deps.sh installs them)"
			return 1
		fi
	done
	if [ ! -r /etc/munge/munge.key ]; then
		echo "no /etc/munge/munge.key (the munge package's postinst creates it)"
		return 1
	fi
	if ! compgen -G '/usr/lib/*/slurm-wlm/mpi_pmix*.so' >/dev/null; then
		echo "Slurm's PMIx plugin (mpi_pmix.so) is missing (package slurm-wlm-basic-plugins)"
		return 1
	fi
	return 0
}

# For tests: skip (exit 77) with the reason, but fail under CI=true, where
# the cluster tests must run.
vc_skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $* (CI=true: cluster tests must run, so this is a failure, not a skip)"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}

# Serialize the harness's own up/down scripts (the lock file stays, empty).
# Re-executes the calling script under flock; nested scripts see VC_LOCK_HELD.
vc_lock() {
	if [ -z "${VC_LOCK_HELD:-}" ]; then
		export VC_LOCK_HELD=1
		mkdir -p "$(dirname "$VC_STATE")"
		exec flock -w 120 "$VC_STATE.lock" "$0" "$@"
	fi
}

# Close every descriptor above 2. flock(1) and CTest pass theirs on, and a
# daemon started from here must not keep a lock or a test's pipe open.
vc_close_fds() {
	local f n
	for f in "/proc/$BASHPID"/fd/*; do
		n=${f##*/}
		[ "$n" -gt 2 ] 2>/dev/null && eval "exec $n>&-" 2>/dev/null
	done
	return 0
}

# Names of the network namespaces that are ours.
vc_our_netns() {
	ip netns list 2>/dev/null | awk -v p="$VC_PREFIX" \
		'{ n = $1; if (n == p "sw" || n == p "head" || n ~ "^" p "node[0-9]+$") print n }'
}

# Host pids of our node inits and the head's holder: their command line is
# "<interpreter> $VC_INIT NAME" (the unshare parents' too). Prints "pid name".
vc_init_pids() {
	local f a
	for f in /proc/[0-9]*/cmdline; do
		mapfile -d '' -t a 2>/dev/null <"$f" || continue
		[ ${#a[@]} -ge 3 ] || continue
		if [ "${a[1]}" = "$VC_INIT" ] || [ "${a[-2]}" = "$VC_INIT" ]; then
			f=${f#/proc/}
			echo "${f%/cmdline} ${a[-1]}"
		fi
	done
}

# Kill everything of ours and remove every namespace, link and file.
# Works on any partial state, and when nothing is there at all.
vc_teardown() {
	local ns pids p tries=0
	while :; do
		pids=$(vc_init_pids | cut -d' ' -f1)
		for ns in $(vc_our_netns); do
			pids+=" $(ip netns pids "$ns" 2>/dev/null)"
		done
		pids=$(echo "$pids" | tr ' ' '\n' | grep -vx -e '' -e "$$" -e "$BASHPID" || true)
		[ -z "$pids" ] && break
		# SIGKILL of a node's PID 1 kills its whole pid namespace.
		for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
		tries=$((tries + 1))
		if [ $tries -gt 250 ]; then
			vc_log "warning: processes still alive after teardown: $(echo "$pids" | tr '\n' ' ')"
			break
		fi
		sleep 0.02
	done
	for ns in $(vc_our_netns); do
		ip netns delete "$ns" 2>/dev/null ||
			vc_log "warning: cannot delete netns $ns"
	done
	# The mount that "ip netns add" put on /run/netns, if we made it and no one
	# else has a netns there (umount fails anyway while one is mounted in it).
	if [ -e "$VC_STATE/netns-mount-ours" ] && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
		umount /run/netns 2>/dev/null || true
		[ -e "$VC_STATE/netns-dir-ours" ] && rmdir /run/netns 2>/dev/null
	fi
	case "$VC_STATE" in
	/?*) rm -rf "$VC_STATE" ;;
	esac
}

# The number of nodes of a healthy running cluster, or nothing.
vc_running_nodes() {
	local n i name pid
	n=$(cat "$VC_STATE/nodes" 2>/dev/null) || return 0
	[[ $n =~ ^[0-9]+$ ]] || return 0
	for ((i = 0; i <= n; i++)); do
		name=node$i
		[ $i -eq 0 ] && name="head"
		pid=$(cat "$VC_STATE/run/$name.pid" 2>/dev/null) || return 0
		[ -e "/run/netns/$VC_PREFIX$name" ] || return 0
		mapfile -d '' -t a 2>/dev/null <"/proc/$pid/cmdline" || return 0
		[ "${a[1]:-}" = "$VC_INIT" ] && [ "${a[2]:-}" = "$name" ] || return 0
	done
	for f in vc-exec vc-head vc-rsh env.sh hostfile; do
		[ -x "$VC_STATE/$f" ] || [ -f "$VC_STATE/$f" ] || return 0
	done
	echo "$n"
}

# PID is alive: exists and is not a zombie. (A daemon's parent is PID 1, and
# PID 1 here may reap its zombies only seconds later.)
vc_alive() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	[ "${s%% *}" != Z ]
}

# Slurm (slurm-up.sh): the pid in FILE is a live process named COMM (host pid namespace).
vc_pid_is() {
	local pid comm
	pid=$(cat "$1" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
	[ "$comm" = "$2" ] && vc_alive "$pid"
}

# Why Slurm on N nodes is not healthy, one reason a line; nothing when it is.
vc_slurm_problems() {
	local n=$1 D=$VC_STATE/slurm i states bad
	if [ ! -f "$D/etc/slurm.conf" ] || [ ! -x "$VC_STATE/vc-slurm" ]; then
		echo "not configured"
		return 0
	fi
	vc_pid_is "$D/munge/munged.pid" munged || echo "munged is not running"
	vc_pid_is "$D/run/slurmctld.pid" slurmctld || echo "slurmctld is not running"
	for ((i = 1; i <= n; i++)); do
		# shellcheck disable=SC2016
		"$VC_STATE/vc-exec" "node$i" /bin/sh -c \
			'p=$(cat "$1" 2>/dev/null) && [ "$(cat /proc/$p/comm 2>/dev/null)" = slurmd ]' \
			_ "$D/run/slurmd.node$i.pid" || echo "slurmd is not running on node$i"
	done
	states=$(timeout 10 "$VC_STATE/vc-slurm" sinfo -h -N -o '%N %T' 2>&1) || {
		echo "sinfo failed: $states"
		return 0
	}
	bad=$(grep -Evc ' (idle|allocated|mixed|completing)$' <<<"$states" || true)
	[ "$bad" -eq 0 ] || echo "nodes not usable: $(tr '\n' ' ' <<<"$states")"
	[ "$(grep -c . <<<"$states")" -eq "$n" ] || echo "sinfo does not list $n nodes"
}

# Test helpers: each check prints "ok: ..." or "FAIL: ..." and counts failures.
VC_T_FAILS=0
VC_T_PASSES=0
vc_t_ok() {
	echo "ok: $*"
	VC_T_PASSES=$((VC_T_PASSES + 1))
}
vc_t_fail() {
	echo "FAIL: $*"
	VC_T_FAILS=$((VC_T_FAILS + 1))
}
# vc_t_cmd DESCRIPTION CMD...: CMD succeeds.
vc_t_cmd() {
	local d=$1
	shift
	if "$@"; then vc_t_ok "$d"; else vc_t_fail "$d"; fi
}
# vc_t_eq DESCRIPTION ACTUAL EXPECTED
vc_t_eq() {
	if [ "$2" = "$3" ]; then
		vc_t_ok "$1"
	else
		vc_t_fail "$1: got '$(echo "$2" | tr '\n' ' ')', expected '$(echo "$3" | tr '\n' ' ')'"
	fi
}
# A test's cluster of N nodes (vc_t_up N [CLEANUP_FN]): started afresh, its
# env.sh read; when the test ends, CLEANUP_FN runs (the test's own steps), then the
# cluster is brought down and STAGE removed (kept with KEEP=1). Needs HERE and STAGE.
vc_t_up() {
	VC_T_CLEANUP=${2:-}
	trap vc_t_end EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	"$HERE/vcluster-down.sh" >/dev/null 2>&1
	"$HERE/vcluster-up.sh" "$1" || { vc_t_fail "vcluster-up.sh $1"; vc_t_done; exit 1; }
	. "$VC_STATE/env.sh"
}
vc_t_end() {
	[ -n "${VC_T_CLEANUP:-}" ] && "$VC_T_CLEANUP"
	"$HERE/vcluster-down.sh" >/dev/null 2>&1
	[ "${KEEP:-0}" = 1 ] || rm -rf "$STAGE"
}

# The closing line (counted by the CI reader) and the exit status.
vc_t_done() {
	echo "$VC_T_PASSES passed, $VC_T_FAILS failed"
	[ "$VC_T_FAILS" -eq 0 ]
}

# What is left of the cluster after a teardown, one item a line; nothing when clean.
# Zombies are not counted: PID 1 of this machine reaps its orphans only every few seconds.
vc_leftovers() {
	local f a pid s
	ip netns list 2>/dev/null | awk -v p="$VC_PREFIX" 'index($1, p) == 1 { print "netns " $1 }'
	ip -o link show 2>/dev/null | awk -F': ' -v b="$VC_BRIDGE" \
		'$2 == b || $2 ~ /^v(head|[0-9]+)(@|$)/ { print "link " $2 }'
	grep -F " $VC_STATE" /proc/self/mountinfo | awk '{ print "mount " $5 }'
	[ -e "$VC_STATE" ] && echo "state directory $VC_STATE"
	for f in /proc/[0-9]*/cmdline; do
		mapfile -d '' -t a 2>/dev/null <"$f" || continue
		[[ "${a[*]}" == *"$VC_STATE"* ]] || continue
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		[ "$pid" = "$BASHPID" ] && continue
		s=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		s=${s##*) }
		[ "${s%% *}" = Z ] || echo "process $pid: ${a[*]}"
	done
	return 0
}

# Inside a node: is there a process whose command line is exactly CMD (words joined by spaces)?
vc_node_has_cmd() {
	# shellcheck disable=SC2016
	"$VC_STATE/vc-exec" "$1" bash -c '
		for f in /proc/[0-9]*/cmdline; do
			mapfile -d "" -t a 2>/dev/null <"$f" || continue
			[ "${a[*]}" = "$1" ] && exit 0
		done
		exit 1' _ "$2"
}
