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
	# rocattach-slurm (next to rocattach-mpi, as installed), the Slurm plugin when it
	# was built, and the double of ROCm's librocprofiler-register.so.0.
	cp "$src"/bin/rocattach-slurm "$STAGE/bin/"
	[ -e "$src"/lib/rocattach-spank.so ] && cp "$src"/lib/rocattach-spank.so "$STAGE/lib/"
	mkdir -p "$STAGE/rocm"
	cp -P "$src"/tests/rocm/librocprofiler-register.so* "$STAGE/rocm/" 2>/dev/null || true
	B=$STAGE
}
