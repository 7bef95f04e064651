#!/usr/bin/env bash
# rocattach and rocprofv3's options on real targets, one of each side (our agent and
# ROCm's, the double tests/rocm/), with a double of rocprofv3's tool that records the
# ROCP* variables it sees. Expected lists are written from rocprofv3.py (ROCm/rocm-systems
# 01610ac2, run() with --pid) and rocprof-attach.py (55ab7830), not from our table:
# 1. a typo (--pmc -d 300, -d --foo) is refused with one line naming the option and the
#    value, exit 2, before any target is touched;
# 2. ROCP_TOOL_LIBRARIES never reaches the tool (rocprof-attach: "ignoring
#    ROCP_TOOL_LIBRARIES=... in attach mode"), said once;
# 3. --hip-runtime-trace sends HIP events and graphs; ROCPROF_ATTACH_PID and
#    ROCPROF_ATTACH_CHILDREN go as rocprofv3 sends them.
# usage: test_rocprofv3_cli.sh BUILD_DIR
set -u
B=$(cd "${1:?usage: test_rocprofv3_cli.sh BUILD_DIR}" && pwd)
PASSED=0
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=$((FAILED + 1)); }
ok() { echo "ok: $*"; PASSED=$((PASSED + 1)); }
W=$(mktemp -d /tmp/rocattach-rp3-cli.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
for v in $(compgen -e | grep '^ROCP'); do unset "$v"; done
unset ROCATTACH_ROCPROFV3_OPTIONS
export ROCM_PATH=$B/tests/rocm/rocm-root
T=$ROCM_PATH/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so
CLI=$B/bin/rocattach
H=$(hostname)

# Two targets: our agent's side, ROCm's side (the double of rocprofiler-register).
start() {
	ROCP_TOOL_ATTACH=1 LD_PRELOAD=$1 "$B/bin/rocattach-example-target" --threads 0 \
		</dev/null >/dev/null 2>&1 &
	PIDS+=($!)
	for _ in $(seq 400); do
		grep -qs rocp-bg-attach /proc/$!/task/*/comm && return 0
		sleep 0.01
	done
	return 1
}
start "$B/lib/librocattach-agent.so.0" || { fail "our agent's target did not start"; exit 1; }
start "$B/tests/rocm/librocprofiler-register.so.0" || { fail "ROCm's target did not start"; exit 1; }
untraced() { [ -d "/proc/$1" ] && awk '/^TracerPid:/ { exit $2 != 0 }' "/proc/$1/status"; }
untouched() { # PID: alive, not traced, and the tool never wrote a file for it
	untraced "$1" && [ -z "$(find "$W" -name "${1}_results*" 2>/dev/null)" ]
}

# 1. Typos: exit 2, one line naming the option and the value, nothing touched.
typo() {
	local what=$1 says=$2 p=$3
	shift 3
	out=$("$CLI" -p "$p" "$@" --output-directory "$W/typo" </dev/null 2>&1)
	rc=$?
	if [ "$rc" -eq 2 ] && [ "$(wc -l <<<"$out")" -eq 1 ] && grep -qF -- "$says" <<<"$out" &&
		untouched "$p"; then
		ok "$what: exit 2, one line, target untouched"
	else
		fail "$what: exit $rc, said: $out"
	fi
}
for p in "${PIDS[@]}"; do
	typo "--pmc -d 300" "--pmc: '-d' is an option, not a value" "$p" --pmc -d 300
	typo "-d --foo" "-d: '--foo' is an option" "$p" -d --foo
	typo "--output-file --kernel-trace" "--output-file: '--kernel-trace' is an option" "$p" \
		--output-file --kernel-trace -d 100
done

# 2 and 3. One attach of each side, ROCP_TOOL_LIBRARIES set by the user.
same() { # FILE VAR=VALUE...: the tool saw exactly these (and the target's ROCP_TOOL_ATTACH=1)
	local f=$1
	shift
	for _ in $(seq 100); do [ -f "$f" ] && break; sleep 0.05; done
	diff <(grep -v '^ROCP_TOOL_ATTACH=1$' "$f" | sort) <(printf '%s\n' "$@" | sort) >&2
}
for p in "${PIDS[@]}"; do
	ROCP_TOOL_LIBRARIES=/opt/other/libother.so "$CLI" -p "$p" --hip-runtime-trace -d 100 \
		--output-directory "$W/o" </dev/null >"$W/out.$p" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] && ok "$p: exit 0" || fail "$p: exit $rc: $(cat "$W/out.$p")"
	n=$(grep -c "ignoring ROCP_TOOL_LIBRARIES=/opt/other/libother.so in attach mode" "$W/out.$p")
	[ "$n" -eq 1 ] && ok "$p: ROCP_TOOL_LIBRARIES ignored, said once" ||
		fail "$p: said $n times: $(cat "$W/out.$p")"
	if same "$W/o/$H/${p}_results.db" ROCPROFILER_LIBRARY_CTOR=1 "ROCPROF_OUTPUT_PATH=$W/o" \
		ROCPROF_OUTPUT_FORMAT=rocpd ROCPROF_HIP_RUNTIME_API_TRACE=1 ROCPROF_HIP_GRAPH_TRACE=1 \
		ROCPROF_HIP_EVENT_TRACE=1 "ROCPROF_ATTACH_TOOL_LIBRARY=$T" "ROCPROF_ATTACH_PID=$p" \
		ROCPROF_ATTACH_DURATION=100 ROCPROF_ATTACH_CHILDREN=1; then
		ok "$p: the tool saw rocprofv3's variables, no ROCP_TOOL_LIBRARIES"
	else
		fail "$p: the tool's variables differ"
	fi
	untraced "$p" && ok "$p: alive, not traced" || fail "$p: harmed"
done

echo "rocprofv3 cli: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
