#!/usr/bin/env bash
# rocattach --late-start on real late_victim processes (the doubles of tests/rocm/late/):
#  1. the victim's calls switch to the double SDK's wrappers after the start, the JSON
#     object says ok/initialized, the victim is untraced and every answer stays right;
#  2. two copies of rocprofiler-register (a wheel's renamed copy) are both started;
#  3. refusals by the pre-check (exit 4, one line, nothing touched, no abort): an SDK
#     already mapped, the tool's SDK missing, a file of the SDK's name that is not it,
#     a stopped target (left stopped);
#  4. threads that come and go during the start;
#  5. a process with a listener takes the normal attach; without the flag, a ROCm process
#     without a listener is told about --late-start;
#  6. N starts (default 50; bench/late_starts.sh runs 1000) on fresh victims with busy
#     threads: each ok, each victim untraced and right to its end.
# usage: test_late_start.sh BUILD_DIR [N]
set -u
B=$(cd "${1:?usage: test_late_start.sh BUILD_DIR [N]}" && pwd)
N=${2:-50}
PREFIX=rocattach-late
. "$(dirname "$0")/lib.sh"

# wrapped NAME [copies]: within 5 s, a tick counted calls through the wrappers (of copies).
wrapped() {
	local want=${2:-1} until=$((SECONDS + 5))
	while [ "$SECONDS" -le "$until" ]; do
		awk -v w="$want" '/^tick/ { for (i = 1; i <= NF; i++) {
			split($i, kv, "="); v[kv[1]] = kv[2] }
			if (v["wrapped"] > 0 && v["copies_wrapped"] >= w) f = 1 }
			END { exit !f }' "$W/$1.out" && return 0
		sleep 0.05
	done
	return 1
}
late() { "$CLI" --late-start -p "$@" 2>"$W/err" >"$W/json"; }

# 1. The switch.
if victim switch --threads 4; then
	p=$VP
	grep -q 'wrapped=0' <(sleep 1.1; cat "$W/switch.out") || fail "switch: wrapped before the start"
	late "$p" -t "$TOOL"
	rc=$?
	if [ "$rc" -eq 0 ] && [ "$(json 'o["outcome"], o["initialized"], o["register_copies"]')" = \
		"('ok', True, 1)" ] && [ "$(json 'o["stays_until_exit"]')" = True ] &&
		wrapped switch && untraced "$p" && grep -q "initialize pid=$p" "$LATE_TOOL_LOG" &&
		end "$p" switch; then
		ok "the calls switch to the wrappers; initialized; untraced; every answer right"
	else
		fail "switch: rc $rc: $(cat "$W/err" "$W/json"; tail -2 "$W/switch.out")"
	fi
fi

# 2. Two copies.
if victim two --threads 2 --two-copies; then
	p=$VP
	late "$p" -t "$TOOL"
	rc=$?
	if [ "$rc" -eq 0 ] && [ "$(json 'o["register_copies"], o["register_started"]')" = "(2, 2)" ] &&
		wrapped two 2 && end "$p" two; then
		ok "two copies of rocprofiler-register both started, both tables wrapped"
	else
		fail "two copies: rc $rc: $(cat "$W/err" "$W/json"; tail -2 "$W/two.out")"
	fi
fi

# 3. Refusals: exit 4, one line, untraced, no abort (alive a while after), right to the end.
refused() { # NAME SAYS TOOL VICTIM-ARGS...
	local name=$1 says=$2 tool=$3
	shift 3
	victim "$name" --threads 2 "$@" || return
	local p=$VP
	late "$p" -t "$tool"
	local rc=$?
	sleep 0.3
	if [ "$rc" -eq 4 ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -qF -- "$says" "$W/err" &&
		untraced "$p" && ! grep -q FATAL "$W/$name.out" && end "$p" "$name" &&
		grep -q '^done .* wrapped=0 ' "$W/$name.out"; then
		ok "$name: refused (exit 4, one line), nothing touched"
	else
		fail "$name: rc $rc: $(cat "$W/err")"
	fi
}
refused runs_sdk "already runs a rocprofiler-sdk" "$TOOL" --with-sdk
mkdir -p "$W/nosdk" "$W/badsdk/sdk"
cp "$TOOL" "$W/nosdk/"
cp "$TOOL" "$W/badsdk/"
cp "$L/librocprofiler-register.so.0" "$W/badsdk/sdk/librocprofiler-sdk.so.1"
refused missing_sdk "neither in its RUNPATH" "$W/nosdk/liblate_tool.so"
refused wrong_sdk "is not the librocprofiler-sdk.so.1 it links" "$W/badsdk/liblate_tool.so"

if victim stopped --threads 2; then
	p=$VP
	kill -STOP "$p"
	sleep 0.1
	late "$p" -t "$TOOL"
	rc=$?
	st=$(awk '{ print $3 }' "/proc/$p/stat")
	if [ "$rc" -eq 4 ] && grep -q "is stopped" "$W/err" && [ "$st" = T ] && untraced "$p" &&
		end "$p" stopped; then
		ok "a stopped target: refused, left stopped and untraced"
	else
		fail "stopped: rc $rc state $st: $(cat "$W/err")"
	fi
fi

# 4. Threads that come and go.
if victim churn --threads 8 --churn; then
	p=$VP
	late "$p" -t "$TOOL"
	rc=$?
	if [ "$rc" -eq 0 ] && wrapped churn && untraced "$p" && end "$p" churn; then
		ok "threads that come and go: started, untraced, every answer right"
	else
		fail "churn: rc $rc: $(cat "$W/err"; tail -2 "$W/churn.out")"
	fi
fi

# 5. A listener, on each side (our agent; ROCm's, the double tests/rocm/register_double.c):
# the normal attach, held until SIGTERM, then detached; no JSON. No flag: the hint.
for side in "$B/lib/librocattach-agent.so.0" "$B/tests/rocm/librocprofiler-register.so.0"; do
	ROCP_TOOL_ATTACH=1 LD_PRELOAD=$side "$B/bin/rocattach-example-target" --threads 0 \
		</dev/null >/dev/null 2>&1 &
	p=$!
	PIDS+=("$p")
	for _ in $(seq 500); do grep -qs rocp-bg-attach /proc/"$p"/task/*/comm && break; sleep 0.01; done
	"$CLI" --late-start -p "$p" -t "$B/lib/librocattach-example-tool.so" >"$W/json" 2>"$W/err" &
	c=$!
	for _ in $(seq 1000); do grep -qs "attached to process" "$W/err" && break; sleep 0.01; done
	kill -TERM "$c"
	wait "$c"
	rc=$?
	if [ "$rc" -eq 0 ] && grep -q "has an attach listener" "$W/err" &&
		grep -q "detached from process $p" "$W/err" && [ ! -s "$W/json" ] && untraced "$p"; then
		ok "a listener ($(basename "$side")): the normal attach instead"
	else
		fail "listener ($(basename "$side")): rc $rc: $(cat "$W/err")"
	fi
	kill "$p"
done
if victim hint --threads 2; then
	p=$VP
	"$CLI" -p "$p" -t "$TOOL" -d 100 >/dev/null 2>"$W/err"
	rc=$?
	if [ "$rc" -eq 1 ] && grep -q "not started with ROCP_TOOL_ATTACH=1.*--late-start" "$W/err" &&
		untraced "$p" && end "$p" hint; then
		ok "without --late-start: one line saying what --late-start can do"
	else
		fail "hint: rc $rc: $(cat "$W/err")"
	fi
fi

# 7. A tool whose rocprofiler_configure hangs 3 s, --call-timeout 500: the start is failed
# by the deadline (exit 4, JSON "failed"), its thread goes on in the target; the victim
# keeps running right, untraced, and its tables are wrapped once the tool returns.
if victim hang --threads 2; then
	p=$VP
	t0=$SECONDS
	LATE_HANG_MS=3000 "$CLI" --late-start --call-timeout 500 -p "$p" \
		-t "$B/tests/late/libra_late_hang_tool.so" >"$W/json" 2>"$W/err"
	rc=$?
	took=$((SECONDS - t0))
	if [ "$rc" -eq 4 ] && [ "$took" -le 2 ] && grep -q "did not end within 500 ms" "$W/err" &&
		[ "$(json 'o["outcome"], o["stays_until_exit"]')" = "('failed', True)" ] &&
		untraced "$p" && wrapped hang && end "$p" hang; then
		ok "a start stuck in the tool's configure: failed by --call-timeout; the victim runs on right"
	else
		fail "hang: rc $rc in $took s: $(cat "$W/err" "$W/json"; tail -1 "$W/hang.out")"
	fi
fi

# 6. N starts on fresh victims, in batches of 10 alive at once (busy threads in each).
batch() { # FIRST LAST: start them all, late-start each, then check and end each
	local i p vp=() bad_here=0
	for i in $(seq "$1" "$2"); do
		victim "many$i" --threads 2 && vp[i]=$VP
	done
	for i in $(seq "$1" "$2"); do
		p=${vp[i]:-}
		[ -n "$p" ] || { bad_here=$((bad_here + 1)); continue; }
		if ! "$CLI" --late-start -p "$p" -t "$TOOL" >"$W/many$i.json" 2>"$W/many$i.err" ||
			! grep -q '"outcome":"ok","sdk"' "$W/many$i.json" ||
			! grep -q '"initialized":true' "$W/many$i.json" || ! untraced "$p"; then
			bad_here=$((bad_here + 1))
			echo "start $i: $(cat "$W/many$i.err")" >&2
		fi
	done
	for i in $(seq "$1" "$2"); do
		p=${vp[i]:-}
		[ -n "$p" ] || continue
		if ! wrapped "many$i" || ! end "$p" "many$i"; then
			bad_here=$((bad_here + 1))
			echo "victim $i: $(tail -1 "$W/many$i.out")" >&2
		fi
		rm -f "$W/many$i".*
	done
	bad=$((bad + bad_here))
}
bad=0
t0=$(date +%s.%N)
for first in $(seq 1 10 "$N"); do
	last=$((first + 9 > N ? N : first + 9))
	batch "$first" "$last"
done
t1=$(date +%s.%N)
if [ "$bad" -eq 0 ]; then
	ok "$N starts on fresh victims with busy threads: each ok, untraced, right to its end" \
		"($(awk -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN { printf "%.2f s per start", (b - a) / n }'))"
else
	fail "$bad of $N starts went wrong"
fi

echo "late start: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
