#!/usr/bin/env bash
# Make sure the Debian packages the project needs are installed.
# As root: installs what is missing with apt-get. Otherwise: names them and fails.
set -euo pipefail

PACKAGES=(gcc g++ make cmake pkg-config libelf-dev libdw-dev libunwind-dev libhwloc-dev hwloc libcmocka-dev libjansson-dev
	openmpi-bin libopenmpi-dev jq python3 python3-mpi4py python3-numpy
	slurm-wlm libslurm-dev munge iproute2 util-linux procps libfaketime strace
	man-db lammps lammps-examples libc6-dbg
	libprotobuf-c-dev protobuf-c-compiler zlib1g-dev protobuf-compiler python3-jsonschema
	clang libclang-rt-dev llvm clang-format shellcheck)

# Optional: only bench/sample_cost.sh uses them (perf, the baseline beside the stack
# tool's sampling); it says so when perf is missing. Installed when possible, never required.
OPTIONAL=(linux-perf)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=() optional=()
for p in "${PACKAGES[@]}"; do
	installed "$p" || missing+=("$p")
done
for p in "${OPTIONAL[@]}"; do
	installed "$p" || optional+=("$p")
done
if [ ${#optional[@]} -gt 0 ] && [ "$(id -u)" -ne 0 ]; then
	echo "rocattach-mpi: optional packages missing (bench only): ${optional[*]}" >&2
	optional=()
fi
[ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] && [ ${#missing[@]} -gt 0 ]; then
	echo "rocattach-mpi: missing packages: ${missing[*]}" >&2
	echo "rocattach-mpi: install them with: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "rocattach-mpi: installing ${missing[*]} ${optional[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# No init system on these machines: keep the packages' scripts from starting
# services (munged, slurmd, slurmctld) while installing; the cluster tests
# start their own daemons (Debian's policy-rc.d protocol: 101 = not allowed).
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq
[ ${#missing[@]} -eq 0 ] ||
	apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null
[ ${#optional[@]} -eq 0 ] ||
	apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 "${optional[@]}" >/dev/null ||
	echo "rocattach-mpi: optional packages not installed (bench only): ${optional[*]}" >&2
# munge's postinst creates the key; make sure it is there.
if [ -x /usr/sbin/mungekey ] && [ ! -e /etc/munge/munge.key ]; then
	mungekey --create --keyfile=/etc/munge/munge.key
	chown munge:munge /etc/munge/munge.key
	chmod 0400 /etc/munge/munge.key
fi
