#!/usr/bin/env bash
# The late-start doubles on real processes, without the product and without ptrace: the
# victim starts itself (--self-start: on SIGUSR1 a thread of its own sets LATE_START_X as X
# and calls rocprofiler_register_invoke_all_registrations in each register copy).
#   test_late_doubles.sh BUILD_DIR
# Checks: calls switch to the SDK's wrappers and every wrapped call reaches the tool; a
# second start wraps nothing twice; no SDK found aborts as glog FATAL does (at the start, and
# at a program's own start when it inherits the variables); two register copies are both
# started; an SDK mapped already wins over ROCPROFILER_REGISTER_LIBRARY; a tool whose SDK
# differs from the one pinned runs on the pinned one. Each victim is stopped by this script.
set -euo pipefail
dir=$1/tests/rocm/late
victim=$dir/late_victim
tool=$dir/liblate_tool.so
sdk=$dir/sdk/librocprofiler-sdk.so.1
old=$dir/sdk-old/librocprofiler-sdk.so.1
missing=/nonexistent/librocprofiler-sdk-missing.so
tmp=$(mktemp -d /tmp/late-doubles.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
passed=0

fail() {
	echo "FAIL: $*" >&2
	for f in "$tmp"/*; do [ -f "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }; done
	exit 1
}

# reap PID: wait for it, then forget it (its number may be reused); its status in $rc.
reap() {
	local keep=() p
	rc=0
	wait "$1" || rc=$?
	for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	pids=("${keep[@]}")
}

# start NAME [VAR=VALUE...] -- ARGS: a victim in the background, its output in $tmp/NAME.*
start() {
	local name=$1 envs=()
	shift
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" LATE_TOOL_LOG="$tmp/$name.tool" "$victim" --seconds 30 "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" &
	pid=$!
	pids+=("$pid")
}

# wait_for FILE REGEX: up to 10 s.
wait_for() {
	local i
	for ((i = 0; i < 200; i++)); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "no line /$2/ in $1 after 10 s"
}

# field KEY LINE: the value of KEY=VALUE in LINE.
field() {
	sed -nE "s/.*(^| )$1=([^ ]*).*/\\2/p" <<<"$2"
}

# A tick line that came after the last self-start line, with wrapped calls.
wait_wrapped_tick() {
	local i line
	for ((i = 0; i < 100; i++)); do
		line=$(sed -n '/^self-start initialized/,$p' "$1" | grep '^tick' | tail -1) || true
		if [ -n "$line" ] && [ "$(field wrapped "$line")" -gt 0 ]; then
			echo "$line"
			return 0
		fi
		sleep 0.05
	done
	fail "no tick with wrapped calls after the start in $1"
}

# stop PID NAME: SIGTERM, exit 0, no wrong answer; the done line in $done_line.
stop() {
	kill -TERM "$1"
	reap "$1"
	[ "$rc" -eq 0 ] || fail "$2: exit $rc, expected 0"
	done_line=$(grep '^done' "$tmp/$2.out") || fail "$2: no done line"
	[ "$(field bad "$done_line")" = 0 ] || fail "$2: wrong answers: $done_line"
}

# wait_count FILE REGEX N: up to 10 s for N lines.
wait_count() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ "$(grep -cE "$2" "$1")" -ge "$3" ] && return 0
		sleep 0.05
	done
	fail "fewer than $3 lines /$2/ in $1 after 10 s"
}

maps_has() {
	grep -q "$2" "/proc/$1/maps"
}

ok() {
	echo "ok: $*"
	passed=$((passed + 1))
}

# 1. Calls switch to the wrappers; a second start wraps nothing twice.
start switch LATE_START_ROCP_TOOL_LIBRARIES="$tool" LATE_START_ROCPROFILER_REGISTER_LIBRARY="$sdk" \
	-- --self-start --threads 4
wait_for "$tmp/switch.out" '^ready '
grep -q '^registered copy=0 rc=1 handle=8$' "$tmp/switch.out" || fail "switch: registration"
maps_has "$pid" librocprofiler-sdk && fail "switch: an SDK mapped before the start"
wait_for "$tmp/switch.out" '^tick t=1 '
line=$(grep '^tick t=1 ' "$tmp/switch.out")
if [ "$(field wrapped "$line")" != 0 ] || [ "$(field calls "$line")" -le 0 ]; then
	fail "switch: before the start: $line"
fi
kill -USR1 "$pid"
wait_for "$tmp/switch.out" '^self-start initialized=1$'
grep -q '^self-start copy=0 rc=0$' "$tmp/switch.out" || fail "switch: invoke_all's result"
maps_has "$pid" 'sdk/librocprofiler-sdk.so.1.3.5' || fail "switch: the pinned SDK is not mapped"
wait_wrapped_tick "$tmp/switch.out" >/dev/null
kill -USR1 "$pid"
wait_count "$tmp/switch.out" '^self-start initialized=1$' 2
[ "$(grep -c '^self-start copy=0 rc=0$' "$tmp/switch.out")" = 2 ] || fail "switch: second start"
stop "$pid" switch
log=$tmp/switch.tool
[ "$(grep -c '^configure ' "$log")" = 1 ] || fail "switch: the tool configured other than once"
grep -q "^configure pid=$pid version=10305 runtime=1.3.5 priority=0$" "$log" || fail "switch: configure"
grep -q "^initialize pid=$pid sdk=1.3.5 status=-1$" "$log" || fail "switch: initialize"
[ "$(grep -c '^first-call ' "$log")" = 3 ] || fail "switch: the tool did not see every function"
[ "$(field calls "$(grep '^finalize' "$log")")" = "$(field wrapped "$done_line")" ] ||
	fail "switch: wrapped calls ($done_line) differ from the tool's ($(grep '^finalize' "$log"))"
ok "calls switch to the wrappers, each reaches the tool; a second start wraps nothing twice"

# 2. A tool asked for and no SDK: glog's FATAL line, then abort (SIGABRT).
start nosdk LATE_START_ROCP_TOOL_LIBRARIES="$tool" LATE_START_ROCPROFILER_REGISTER_LIBRARY="$missing" \
	-- --self-start --threads 2
wait_for "$tmp/nosdk.out" '^ready '
kill -USR1 "$pid"
reap "$pid"
[ "$rc" = 134 ] || fail "nosdk: exit $rc, expected 134 (SIGABRT)"
grep -qE "^F[0-9]{4} .*\] rocprofiler_set_api_table not found\. Tried to dlopen $missing$" \
	"$tmp/nosdk.err" || fail "nosdk: no FATAL line"
[ ! -e "$tmp/nosdk.tool" ] || fail "nosdk: the tool was loaded"
ok "no SDK found: FATAL line and abort"

# 3. A program started with the variables and no SDK (a child that inherited them) dies at
# its own registration, before it is ready.
start child ROCP_TOOL_LIBRARIES="$tool" ROCPROFILER_REGISTER_LIBRARY="$missing" -- --threads 1
reap "$pid"
[ "$rc" = 134 ] || fail "child: exit $rc, expected 134"
grep -q '^ready' "$tmp/child.out" && fail "child: it got ready"
grep -q 'rocprofiler_set_api_table not found' "$tmp/child.err" || fail "child: no FATAL line"
ok "inherited variables and no SDK: abort at the program's start"

# 4. Two register copies (one under a wheel's name), threads that come and go: both started.
start two LATE_START_ROCP_TOOL_LIBRARIES="$tool" LATE_START_ROCPROFILER_REGISTER_LIBRARY="$sdk" \
	-- --self-start --two-copies --churn --threads 4
wait_for "$tmp/two.out" '^ready pid=[0-9]+ copies=2 '
[ "$(grep -c '^registered copy=[01] rc=1 handle=8$' "$tmp/two.out")" = 2 ] ||
	fail "two: registrations"
maps_has "$pid" 'wheel/librocprofiler-register-5f3a9c1e.so.0' || fail "two: second copy not mapped"
kill -USR1 "$pid"
wait_for "$tmp/two.out" '^self-start initialized=1$'
grep -q '^self-start copy=1 rc=0$' "$tmp/two.out" || fail "two: the second copy's start"
wait_for "$tmp/two.out" 'copies_wrapped=2 '
stop "$pid" two
ok "two register copies both started, threads coming and going, every answer right"

# 5. An SDK mapped already is used, whatever ROCPROFILER_REGISTER_LIBRARY says.
start mapped LATE_START_ROCP_TOOL_LIBRARIES="$tool" LATE_START_ROCPROFILER_REGISTER_LIBRARY="$old" \
	-- --self-start --with-sdk --threads 2
wait_for "$tmp/mapped.out" '^ready '
maps_has "$pid" 'sdk/librocprofiler-sdk.so.1.3.5' || fail "mapped: --with-sdk mapped nothing"
kill -USR1 "$pid"
wait_for "$tmp/mapped.out" '^self-start initialized=1$'
maps_has "$pid" 'sdk-old/' && fail "mapped: the pinned SDK was loaded beside the mapped one"
grep -q "^initialize pid=$pid sdk=1.3.5 " "$tmp/mapped.tool" || fail "mapped: the tool's SDK"
stop "$pid" mapped
ok "an SDK mapped already wins over ROCPROFILER_REGISTER_LIBRARY"

# 6. A pinned SDK other than the tool's: the tool runs on the pinned one (its soname is
# loaded first), not on the SDK beside it (RUNPATH $ORIGIN/sdk).
start other LATE_START_ROCP_TOOL_LIBRARIES="$tool" LATE_START_ROCPROFILER_REGISTER_LIBRARY="$old" \
	-- --self-start --threads 2
wait_for "$tmp/other.out" '^ready '
kill -USR1 "$pid"
wait_for "$tmp/other.out" '^self-start initialized=1$'
grep -q "^initialize pid=$pid sdk=1.2.0 " "$tmp/other.tool" || fail "other: the tool's SDK"
maps_has "$pid" '/sdk/librocprofiler-sdk' && fail "other: the tool's own SDK was mapped"
stop "$pid" other
ok "a mismatched pinned SDK is the one the tool gets"

echo "late doubles: $passed passed, 0 failed"
