#!/usr/bin/env bash
# No built program or library may load code from the current directory:
#  1. every RPATH/RUNPATH entry of every ELF file in bin/ and lib/ is absolute
#     or $ORIGIN-based (an empty entry means "the current directory" to the
#     loader, a relative one is resolved from it);
#  2. run from a directory holding a fake libelf.so.1 (which leaves a marker
#     when loaded), our programs and libraries do not load it; with
#     LD_LIBRARY_PATH pointing there they do, which proves the fake works.
# usage: test_runpath.sh BUILD_DIR FAKE_LIBELF
set -u
B=$(cd "${1:?usage: test_runpath.sh BUILD_DIR FAKE_LIBELF}" && pwd)
FAKE=${2:?usage: test_runpath.sh BUILD_DIR FAKE_LIBELF}
PASSED=0
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=$((FAILED + 1)); }
ok() { echo "ok: $*"; PASSED=$((PASSED + 1)); }

W=$(mktemp -d /tmp/rocattach-runpath.XXXXXX)
trap 'rm -rf "$W"' EXIT

# 1. The entries.
n=0
for f in "$B"/bin/* "$B"/lib/*; do
	[ -f "$f" ] && [ ! -L "$f" ] || continue
	[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	n=$((n + 1))
	while read -r kind path; do
		IFS=: read -r -a entries <<<"$path"
		# A trailing ':' leaves no field in the array: count the separators.
		seps=${path//[^:]/}
		[ "${#seps}" -lt "${#entries[@]}" ] || entries+=("")
		for e in "${entries[@]}"; do
			case $e in
			/* | '$ORIGIN' | '$ORIGIN/'* | '${ORIGIN}' | '${ORIGIN}/'*) ;;
			'') fail "$f: $kind has an empty entry (the current directory): [$path]" ;;
			*) fail "$f: $kind has a relative entry '$e': [$path]" ;;
			esac
		done
	done < <(readelf -d "$f" | sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]$/\1 \2/p')
done
if [ "$n" -ge 5 ]; then ok "checked the RPATH/RUNPATH of $n ELF files"; else fail "only $n ELF files found in $B"; fi

# 2. A fake libelf.so.1 in the current directory.
cp "$FAKE" "$W/libelf.so.1"
export RA_FAKE_MARKER=$W/LOADED
cd "$W" || exit 1
run() { # run DESCRIPTION COMMAND...: it must work and not load the fake
	local what=$1 out
	shift
	rm -f "$RA_FAKE_MARKER"
	out=$(LD_DEBUG=libs "$@" 2>&1 >/dev/null)
	local rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$what: exit $rc"
	elif [ -e "$RA_FAKE_MARKER" ] || grep -q "trying file=\([^/]\|$W/\)" <<<"$out"; then
		# A relative try ("trying file=libelf.so.1", "...=tls/x86_64/...") is the cwd.
		fail "$what: looked for or loaded a library in the current directory"
		grep "trying file=\([^/]\|$W/\)" <<<"$out" | head -n 5 >&2
	else
		ok "$what: libelf.so.1 not taken from the current directory"
	fi
}
run "rocattach" "$B/bin/rocattach" --help
# Its main starts MPI: only its libraries are loaded (as ldd does), which is what counts.
run "rocattach-mpi" env LD_TRACE_LOADED_OBJECTS=1 "$B/bin/rocattach-mpi"
run "a program linking librocattach" "$B/bin/ra_secure_helper"
run "the agent preloaded" env LD_PRELOAD="$B/lib/librocattach-agent.so.0" ROCP_TOOL_ATTACH=1 \
	/bin/true
run "the example tool preloaded" env LD_PRELOAD="$B/lib/librocattach-example-tool.so" /bin/true
rm -f "$RA_FAKE_MARKER"
LD_LIBRARY_PATH=$W "$B/bin/rocattach" --help >/dev/null 2>&1
if [ -e "$RA_FAKE_MARKER" ]; then ok "control: the fake is loaded when searched"; else fail "control: the fake libelf.so.1 was not loaded even through LD_LIBRARY_PATH"; fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
