#!/usr/bin/env bash
# vcluster-down.sh: remove the virtual cluster: every process in its namespaces
# (Slurm daemons included), its network namespaces (and so the bridge and the
# veths) and the state directory. Succeeds on any partial state, and when
# nothing is up.
set -euo pipefail
. "$(dirname "$(readlink -f "$0")")/lib.sh"

[ "$(id -u)" -eq 0 ] || vc_die "not root"
vc_lock "$@"
vc_close_fds
t0=$(vc_ms)
vc_teardown
vc_log "down ($(($(vc_ms) - t0)) ms)"
