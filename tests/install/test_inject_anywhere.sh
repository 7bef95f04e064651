#!/usr/bin/env bash
# --inject wherever the programs are: found through PATH and run from another
# directory, from the build tree (build/bin) and from a `cmake --install`
# prefix. The agent must be found from librocattach's own location (beside it,
# or the lib dir beside a program's bin/), never from argv[0]. Each run
# attaches a real target started without ROCP_TOOL_ATTACH, and the example
# tool's log in $ROCPROF_OUTPUT_PATH shows the whole lifecycle.
#
# usage: test_inject_anywhere.sh BUILD_DIR cli|mpi
#   cli: rocattach --inject          mpi: mpirun -np 1 rocattach-mpi --inject
#   (mpi runs mpirun: hold /tmp/rocattach-heavy.lock)
set -u
B=$(cd "${1:?usage: test_inject_anywhere.sh BUILD_DIR cli|mpi}" && pwd)
MODE=${2:?usage: test_inject_anywhere.sh BUILD_DIR cli|mpi}
PASSED=0
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=$((FAILED + 1)); }
ok() { echo "ok: $*"; PASSED=$((PASSED + 1)); }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset ROCATTACH_AGENT ROCP_TOOL_ATTACH ROCPROF_ATTACH_TOOL_LIBRARY LD_PRELOAD

W=$(mktemp -d /tmp/rocattach-anywhere.XXXXXX)
chmod 755 "$W"
TARGETS=()
cleanup() {
	for p in "${TARGETS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

# The prefix: a real install, agent and tool under lib/, programs under bin/.
if cmake --install "$B" --prefix "$W/prefix" >"$W/install.log" 2>&1; then
	ok "cmake --install into $W/prefix"
else
	cat "$W/install.log" >&2
	fail "cmake --install"
fi

# Start a plain target (no agent, no variable) whose stdin stays open; sets T.
start_target() {
	local out=$W/target.$1.out
	mkfifo "$W/in.$1"
	"$B/bin/rocattach-example-target" <"$W/in.$1" >"$out" 2>&1 &
	T=$!
	TARGETS+=("$T")
	exec {fd}>"$W/in.$1" # keeps its stdin open
	for _ in $(seq 300); do
		grep -q '^ready' "$out" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "target $1 did not start"
	return 1
}

# inject WHERE BIN_DIR: the program found through PATH, run from an empty directory.
inject() {
	local where=$1 bin=$2 out=$W/out.$1 log rc
	local tool=$bin/../lib/librocattach-example-tool.so
	start_target "$where" || return
	mkdir -p "$W/cwd.$where" "$W/tool.$where"
	grep -q rocp-bg-attach /proc/"$T"/task/*/comm && fail "$where: target has a listener already"
	(
		cd "$W/cwd.$where" || exit 99
		export PATH=$bin:/usr/bin:/bin ROCPROF_OUTPUT_PATH=$W/tool.$where
		if [ "$MODE" = cli ]; then
			exec rocattach --inject -p "$T" -t "$tool" -d 200
		else
			exec mpirun -np 1 rocattach-mpi --pid "$T" --inject -t "$tool" -d 200
		fi
	) </dev/null >"$out" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then ok "$where: $MODE --inject through PATH: exit 0"; else
		cat "$out" >&2
		fail "$where: $MODE --inject through PATH: exit $rc"
	fi
	log=$(cat "$W/tool.$where"/rocattach-tool.*."$T".log 2>/dev/null | awk '{print $1}' | tr '\n' ' ')
	if [ "$log" = "configure configure_attach initialize tool_attach tool_detach " ]; then
		ok "$where: the tool's whole lifecycle ran in the target"
	else
		fail "$where: tool log: '$log'"
	fi
	if grep -q "TracerPid:	0" "/proc/$T/status" && kill -0 "$T"; then
		ok "$where: target alive and untraced"
	else
		fail "$where: target dead or traced"
	fi
	grep -q "cannot find librocattach-agent" "$out" && fail "$where: the agent was not found"
}

inject build "$B/bin"
[ -x "$W/prefix/bin/rocattach" ] && inject prefix "$W/prefix/bin"
# Installed beside the programs: the man pages.
for p in rocattach rocattach-mpi rocattach-slurm; do
	if [ -s "$W/prefix/share/man/man1/$p.1" ]; then ok "installed share/man/man1/$p.1"; else
		fail "no share/man/man1/$p.1 in the prefix"
	fi
done

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
