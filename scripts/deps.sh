#!/usr/bin/env bash
# Make sure the Debian packages the project needs are installed.
# As root: installs what is missing with apt-get. Otherwise: names them and fails.
set -euo pipefail

PACKAGES=(gcc make cmake pkg-config libelf-dev libhwloc-dev hwloc libcmocka-dev libjansson-dev
	openmpi-bin libopenmpi-dev jq)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "rocattach-mpi: missing packages: ${missing[*]}" >&2
	echo "rocattach-mpi: install them with: sudo apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "rocattach-mpi: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
