# shellcheck shell=bash
# Sourced by the launcher's cluster tests: copy what the nodes run to a place
# every node sees (each node has a private /tmp, and the build may be under it).
# Sets STAGE (the directory) and B (its bin/ and lib/ mirror the build's).
stage_build() { # stage_build BUILD_DIR
	local src=$1
	STAGE=$(mktemp -d /var/tmp/rocattach-cluster.XXXXXX)
	chmod 755 "$STAGE"
	mkdir -p "$STAGE/bin" "$STAGE/lib"
	cp "$src"/bin/rocattach-mpi "$src"/bin/rocattach-example-mpi-target \
		"$src"/bin/rocattach-example-target "$STAGE/bin/"
	cp -P "$src"/lib/librocattach.so* "$src"/lib/librocattach-agent.so* "$src"/lib/librocattach-example-tool.so \
		"$STAGE/lib/"
	# Found beside librocattach, as installed: the watchdog ROCm's side loads, and the
	# start library of --late-start.
	cp -P "$src"/lib/librocattach-watchdog.so* "$src"/lib/librocattach-late.so* "$STAGE/lib/"
	# rocattach-slurm (next to rocattach-mpi, as installed), the Slurm plugin when it
	# was built, and the double of ROCm's librocprofiler-register.so.0.
	cp "$src"/bin/rocattach-slurm "$STAGE/bin/"
	[ -e "$src"/lib/rocattach-spank.so ] && cp "$src"/lib/rocattach-spank.so "$STAGE/lib/"
	mkdir -p "$STAGE/rocm"
	cp -P "$src"/tests/rocm/librocprofiler-register.so* "$STAGE/rocm/" 2>/dev/null || true
	B=$STAGE
}

# stage_slurm BUILD_DIR: stage_build, then W (the outputs, in the stage) and SL (Slurm's
# commands). At exit the jobs are cancelled, Slurm is taken down and the stage removed
# (KEEP=1 keeps it). Needs VC_STATE (tests/cluster/lib.sh).
STAGE_HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
stage_slurm() {
	stage_build "$1"
	W=$STAGE/out
	mkdir -p "$W"
	SL=$VC_STATE/vc-slurm
	trap slurm_cleanup EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
}
slurm_cleanup() {
	"$SL" scancel --full -u root >/dev/null 2>&1
	"$STAGE_HERE/slurm-down.sh" >/dev/null 2>&1
	[ "${KEEP:-0}" = 1 ] || rm -rf "$STAGE"
}
