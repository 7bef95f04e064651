#!/usr/bin/env bash
# The launcher's tree (--fanout), with many ranks on this machine: each rank in
# its own PID and UTS namespace (hostname rN, --one-node-per-rank) with one
# attachable example target, as bench/bench_coord.c runs them.
#  1. --fanout 2 at 10 ranks (height 3), 2 windows: every node's records, each
#     target attached and detached once per window; every node's clock fields,
#     the error bound > 0 below rank 0 and a deeper node's bound >= its
#     parent's; rank 0 sent at most 2 x fanout messages per window.
#  2. 32 ranks, --fanout 4: interior rank 1 (children 5-8, grandchildren
#     21-31) SIGKILLed mid-window under mpirun --enable-recovery: rank 0's
#     report comes out with exit code 6, rank 1 lost with a reason; rank 0
#     adopts rank 1's children, whose records (and their children's) come
#     to it: every other node's records are there; every rank but the dead
#     one ends with the run's code; every target alive, untraced, its tool
#     attached and detached once.
#  3. The same, SIGKILLing rank 5 (parent rank 1, children 21-24) and rank 2
#     with all its children (9-12): rank 1 adopts 21-24 within rank 0's
#     deadline (each level waits a step longer); rank 0 adopts 9-12, which
#     stay silent and are lost with that reason. No hang, the other 26
#     nodes' records there, every target alive and untraced.
#  4. --fanout 2 at 7 ranks, 2 windows: leaf rank 3 SIGSTOPped between them
#     never answers window 2's order; its parent and every other node still
#     detach at window 2's planned stop (their tools' tool_detach within
#     300 ms of it), rank 3 lost with its reason; SIGCONTed after the report,
#     it attaches nothing (its window is over) and ends; every target alive,
#     untraced.
#  5. 16 ranks, --fanout 4, 3 windows: interior rank 1 SIGKILLed in window 1;
#     windows 2 and 3 have its children's records (adopted by rank 0) with
#     their clocks measured by rank 0 (bound > 0), rank 1 lost in each.
# Usage: test_tree.sh BUILD_DIR   (under the heavy-test lock)
B=${1:?usage: test_tree.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "SKIP: jq not found (package jq)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare not found (package util-linux)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a PID namespace per rank)"; exit 77; }
TARGET=$B/bin/rocattach-example-target
# Open MPI's shared-memory transport breaks across PID namespaces: TCP on loopback.
export OMPI_MCA_btl=self,tcp
W=$(mktemp -d /var/tmp/ra-tree.XXXXXX)
TAG=ra-tree-$$
trap 'cleanup; [ "${KEEP:-0}" = 1 ] || rm -rf "$W"' EXIT

# Each rank: its hostname, its target, the launcher; then the target's state
# after the launcher ended: "rank exit tracer alive attaches detaches".
cat >"$W/rank.sh" <<'EOF'
out=$1; shift
r=$OMPI_COMM_WORLD_RANK
hostname "r$r"
# The tools' logs are named by pid, and every namespace starts at 1: use up r
# pids first, so that each rank's target has its own.
i=0
while [ $i -lt "$r" ]; do /bin/true; i=$((i + 1)); done
ROCP_TOOL_ATTACH=1 LD_PRELOAD=$AGENT "$TARGET" --threads 0 </dev/null >/dev/null 2>&1 &
tp=$!
i=0
while ! grep -qs rocp-bg-attach /proc/$tp/task/*/comm && [ $i -lt 2000 ]; do
	sleep 0.005; i=$((i + 1))
done
"$@" 2>"$out/err.$r"
rc=$?
# A killed launcher's target is detached by its agent's watchdog: give it 5 s.
for i in $(seq 50); do
	[ "$(grep -c '^tool_detach ' "$out"/tool/*."$tp".log 2>/dev/null)" = \
		"$(grep -c '^tool_attach ' "$out"/tool/*."$tp".log 2>/dev/null)" ] && break
	sleep 0.1
done
tr=$(awk '/^TracerPid:/ {print $2}' /proc/$tp/status)
alive=dead
kill -0 $tp 2>/dev/null && alive=alive
echo "$r $rc $tr $alive $(cat "$out"/tool/*."$tp".log 2>/dev/null | grep -c '^tool_attach ') \
$(cat "$out"/tool/*."$tp".log 2>/dev/null | grep -c '^tool_detach ')" >>"$out/ranks"
kill $tp
EOF

# run N OUT MPIRUN_OPTS... -- LAUNCHER_ARGS...: in the background, pid in RUN
run() {
	local n=$1 out=$2
	shift 2
	local mo=()
	while [ "$1" != -- ]; do mo+=("$1"); shift; done
	shift
	mkdir -p "$out/tool"
	mpirun -np "$n" --bind-to none "${mo[@]}" -x ROCPROF_OUTPUT_PATH="$out/tool" \
		-x AGENT="$AGENT" -x TARGET="$TARGET" -x RA_TREE_TEST="$TAG" \
		unshare --pid --fork --mount-proc --uts /bin/sh "$W/rank.sh" "$out" \
		"$LAUNCHER" --one-node-per-rank --exe rocattach-example-target -t "$TOOL" \
		"$@" </dev/null >"$out/out" 2>&1 &
	RUN=$!
	CHILDREN+=("$RUN")
}

# The launcher of rank $1 of this test's job.
launcher_of() {
	for p in $(pgrep -f "^$LAUNCHER"); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RA_TREE_TEST=$TAG" || continue
		tr '\0' '\n' <"/proc/$p/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$1" && echo "$p"
	done
}

# The launchers of ranks $@ of this test's job, in one pass over the processes
# (one look per rank was slow enough under load for the window to end first).
launchers_of() {
	local want=" $* " p env r
	for p in $(pgrep -f "^$LAUNCHER"); do
		env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
		grep -qx "RA_TREE_TEST=$TAG" <<<"$env" || continue
		r=$(sed -n 's/^OMPI_COMM_WORLD_RANK=//p' <<<"$env")
		[[ $want == *" $r "* ]] && echo "$p"
	done
}

echo "== 1. --fanout 2, 10 ranks, 2 windows"
O=$W/f2
run 10 "$O" -- --fanout 2 --windows 200:300:2 --report "$O/r.json"
timeout 90 tail --pid="$RUN" -f /dev/null
wait "$RUN"
R=$O/r.json
check "report written" jq -e . "$R"
[ -s "$R" ] || sed 's/^/  | /' "$O/out" | tail -20
check "exit code 0 in the report (7 with a window shown late: exit_ok)" exit_ok "$(jq .exit_code "$R")" "$R"
check "both windows: 10 nodes, each ok with its target detached" jq -e '[.windows[] |
	[.nodes[] | select(.state == "ok" and ([.targets[] | select(.state == "detached")] |
	length) == 1)] | length] == [10, 10]' "$R"
check "every target's tool attached and detached twice" \
	[ "$(awk '$5 == 2 && $6 == 2 && $3 == 0 && $4 == "alive"' "$O/ranks" | wc -l)" = 10 ]
echo "clocks (host offset rtt bound): $(jq -r '.windows[-1].nodes[] |
	"\(.host) \(.clock_offset_ns) \(.clock_rtt_ns) \(.clock_bound_ns)"' "$R" | paste -sd, -)"
check "every node has an offset, round trip and bound; below rank 0 the bound is > 0" \
	jq -e '[.windows[-1].nodes[] | select(.clock_offset_ns != null and .clock_rtt_ns != null
	and .clock_bound_ns != null and (.host == "r0" or .clock_bound_ns > 0))] | length == 10' "$R"
# Heap order with fanout 2: rank r's parent is (r - 1) / 2.
check "a deeper node's bound is at least its parent's (the sum of rtt/2 along the path)" \
	jq -e '[.windows[-1].nodes[] | {key: (.host[1:]), value: .clock_bound_ns}] |
	from_entries as $b | [range(3; 10) | tostring | select($b[.] <
	$b[(((. | tonumber) - 1) / 2 | floor | tostring)])] | length == 0' "$R"
# One machine, one clock: each node had the order after its parent had it, and
# after rank 0 sent it (the clock bound allowed for).
check "every node's order came after its parent's (order_received_ns)" \
	jq -e '[.windows[] | [.nodes[] | {key: (.host[1:]), value: {o: .order_received_ns,
	b: .clock_bound_ns}}] | from_entries as $n | range(1; 10) | tostring |
	select($n[.].o == null or $n[.].o + $n[.].b <
	$n[(((. | tonumber) - 1) / 2 | floor | tostring)].o)] | length == 0' "$R"
echo "coordination: $(jq -c '[.windows[].coordination]' "$R")"
check "rank 0 sent at most 2 x fanout messages per window, fanout 2, height 3" jq -e \
	'[.windows[].coordination | select(.messages_sent <= 4 and .fanout == 2 and
	.height == 3 and .messages_received > 0 and .bytes_received > 0)] | length == 2' "$R"

echo "== 2. 32 ranks, --fanout 4: interior rank 1 SIGKILLed mid-window"
O=$W/kill
t0=$(now)
run 32 "$O" --enable-recovery -- --fanout 4 -d 3000 --report "$O/r.json"
for _ in $(seq 600); do grep -q "attached 32/32" "$O/out" && break; sleep 0.05; done
check "all 32 targets attached" grep -q "attached 32/32" "$O/out"
k=$(launcher_of 1)
check "rank 1's launcher found" [ -n "$k" ]
[ -n "$k" ] && kill -KILL "$k"
tk=$(now)
timeout 60 tail --pid="$RUN" -f /dev/null
check "the job ended by itself within 40 s of the kill" elapsed_below "$tk" 40
kill "$RUN" 2>/dev/null
wait "$RUN"
echo "whole run: $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s"
R=$O/r.json
check "report written" jq -e . "$R"
[ -s "$R" ] || sed 's/^/  | /' "$O/out" | tail -30
check "the report's exit code is 6 (nodes lost)" jq -e '.exit_code == 6' "$R"
check "rank 0's launcher exited 6" grep -q '^0 6 ' "$O/ranks"
echo "r1: $(jq -r '.windows[-1].nodes[] | select(.host == "r1") | .lost_reason' "$R")"
check "rank 1 lost with a reason" jq -e '.windows[-1].nodes[] | select(.host == "r1") |
	.state == "lost" and (.lost_reason | test("^no records within"))' "$R"
check "every other node (31) ok, its target detached: rank 1's subtree adopted" jq -e \
	'[.windows[-1].nodes[] | select(.host != "r1") |
	select(.state == "ok" and .targets[0].state == "detached")] | length == 31' "$R"
check "32 nodes in the report" jq -e '.windows[-1].nodes | length == 32' "$R"
check "rank 1's children (5-8) say rank 0 adopted them" bash -c "for r in 5 6 7 8; do
	grep -q 'rank 1 (this rank.s parent) was lost: rank 0 adopted this rank' '$O/err.'\$r ||
	exit 1; done"
check "every rank but rank 1 ended with the run's code (6)" \
	[ "$(awk '$1 != 1 && $2 == 6' "$O/ranks" | wc -l)" = 31 ]
check "every target alive and untraced afterwards" \
	[ "$(awk '$3 == 0 && $4 == "alive"' "$O/ranks" | wc -l)" = 32 ]
check "every target's tool attached once and detached once" \
	[ "$(awk '$5 == 1 && $6 == 1' "$O/ranks" | wc -l)" = 32 ]
[ "$FAILED" = 0 ] || { sed 's/^/  | /' "$O/ranks"; grep -v '^\[' "$O/out" | tail -40; }

# Under a sanitizer (scripts/sanitize.sh sets ROCATTACH_SANITIZED) sections 3 and 5,
# the two heaviest (a second adoption; three windows after one), run in the plain build
# only: the sanitizer runs keep the tree's paths of sections 1, 2 and 4 and stay within
# CI's time.
if [ -z "${ROCATTACH_SANITIZED:-}" ]; then
echo "== 3. 32 ranks, --fanout 4: rank 5 SIGKILLed, and rank 2 with its children 9-12"
O=$W/kill2
run 32 "$O" --enable-recovery -- --fanout 4 -d 6000 --report "$O/r.json"
for _ in $(seq 600); do grep -q "attached 32/32" "$O/out" && break; sleep 0.05; done
check "all 32 targets attached" grep -q "attached 32/32" "$O/out"
pids=$(launchers_of 5 2 9 10 11 12)
check "the 6 launchers found" [ "$(echo $pids | wc -w)" = 6 ]
kill -KILL $pids
tk=$(now)
timeout 60 tail --pid="$RUN" -f /dev/null
check "the job ended by itself within 40 s of the kill" elapsed_below "$tk" 40
kill "$RUN" 2>/dev/null
wait "$RUN"
R=$O/r.json
check "report written, exit code 6" jq -e '.exit_code == 6' "$R"
[ -s "$R" ] || sed 's/^/  | /' "$O/out" | tail -30
reason() { jq -r --arg h "$1" '.windows[-1].nodes[] | select(.host == $h) | .lost_reason' "$R"; }
echo "r5: $(reason r5)"
echo "r2: $(reason r2)"
echo "r9: $(reason r9)"
check "rank 5 lost by rank 1 (its deadline, a level below rank 0's)" \
	[ "$(reason r5)" = "no records within 6.0 s after the stop (retried for 2.0 s)" ]
check "rank 2 lost by rank 0" \
	[ "$(reason r2)" = "no records within 7.0 s after the stop (retried for 2.0 s)" ]
check "ranks 9-12, adopted by rank 0 but dead, lost with that reason" jq -e \
	'[.windows[-1].nodes[] | select(.host == ("r9", "r10", "r11", "r12")) | select(.state ==
	"lost" and (.lost_reason | test("^no records within 0.5 s of its adoption by rank 0 \\(rank 2, its parent, was lost\\)$")))] |
	length == 4' "$R"
check "ranks 21-24 adopted by rank 1" bash -c "for r in 21 22 23 24; do
	grep -q 'rank 5 (this rank.s parent) was lost: rank 1 adopted this rank' '$O/err.'\$r ||
	exit 1; done"
check "the 26 other nodes ok, their targets detached" jq -e '[.windows[-1].nodes[] |
	select(.state == "ok" and .targets[0].state == "detached")] | length == 26' "$R"
check "every target alive and untraced afterwards" \
	[ "$(awk '$3 == 0 && $4 == "alive"' "$O/ranks" | wc -l)" = 32 ]
check "every target's tool attached once and detached once" \
	[ "$(awk '$5 == 1 && $6 == 1' "$O/ranks" | wc -l)" = 32 ]
[ "$FAILED" = 0 ] || { sed 's/^/  | /' "$O/ranks"; grep -v '^\[' "$O/out" | tail -40; }
else
	echo "== 3. under $ROCATTACH_SANITIZED: runs in the plain build only"
fi

echo "== 4. --fanout 2, 7 ranks, 2 windows: leaf rank 3 SIGSTOPped between them"
# Rank 3 (parent rank 1) never answers window 2's order. Rank 1 and every other node
# hand their targets back at window 2's planned stop all the same (the wait for READY
# runs inside the hold); rank 3 is lost with its reason. SIGCONTed after the report,
# it finds its order past its window and ends without attaching.
# --call-timeout 3000: a node that owed its READY at the stop may have calls running, so
# its parent waits the call deadline longer for its records (rm_win_calls_wait); 3 s,
# not the default 10 s, keeps that wait short. The calls here take milliseconds.
O=$W/stop
run 7 "$O" --enable-recovery -- --fanout 2 --windows 2000:1000:2 --call-timeout 3000 \
	--report "$O/r.json"
for _ in $(seq 600); do grep -q "next window in" "$O/out" && break; sleep 0.05; done
s=$(launcher_of 3)
check "window 1 done, rank 3's launcher found" [ -n "$s" ]
[ -n "$s" ] && kill -STOP "$s"
for _ in $(seq 1200); do [ -s "$O/r.json" ] && break; sleep 0.05; done
[ -n "$s" ] && kill -CONT "$s"
timeout 60 tail --pid="$RUN" -f /dev/null
kill "$RUN" 2>/dev/null
wait "$RUN"
R=$O/r.json
check "report written, exit code 6" jq -e '.exit_code == 6' "$R"
[ -s "$R" ] || sed 's/^/  | /' "$O/out" | tail -30
echo "r3: $(jq -r '.windows[-1].nodes[] | select(.host == "r3") | .lost_reason' "$R")"
check "window 1: 7 nodes ok" jq -e '[.windows[0].nodes[] | select(.state == "ok")] |
	length == 7' "$R"
check "window 2: rank 3 lost, with no word of its attaches by the stop" jq -e \
	'.windows[1].nodes[] | select(.host == "r3") | .state == "lost" and (.lost_reason |
	test("^no records within .*; no word of its attaches by the stop either$"))' "$R"
check "window 2: the 6 other nodes ok, their targets detached" jq -e '[.windows[1].nodes[] |
	select(.host != "r3" and .state == "ok" and .targets[0].state == "detached")] |
	length == 6' "$R"
check "rank 0 said at the stop that a rank below still owed its READY" \
	grep -q "window 2: 1 rank still owed word of its attaches at the stop" "$O/out"
len=$(jq '.windows[1].stop_ns - .windows[1].start_ns' "$R")
echo "window 2's length: $len ns"
check "window 2 planned as asked (1000 ms)" [ "$len" = 1000000000 ]
echo "window 2's measured lengths: $(jq -c '.windows[1].length' "$R")"
check "window 2's targets held it 1000 ms, within 300 ms, none off the plan" jq -e \
	'.windows[1].length | .off == false and .max_ns < 1300000000 and .min_ns > 700000000' "$R"
stop2=$(jq '.windows[1].stop_ns' "$R")
echo "window 2's tool_detach minus its stop (ms): $(for r in 0 1 2 4 5 6; do
	grep -h '^tool_detach' "$O"/tool/*.r$r.*.log | tail -1 | tr ' ' '\n' |
	awk -v s="$stop2" -F= '$1 == "ns" { printf "%.1f ", ($2 - s) / 1e6 }'; done)"
check "every other node's tool detached within 300 ms of window 2's stop" bash -c "
	for r in 0 1 2 4 5 6; do grep -h '^tool_detach' '$O'/tool/*.r\$r.*.log | tail -1 |
	tr ' ' '\n' | awk -v s=$stop2 -F= '\$1 == \"ns\" { d = \$2 - s; ok = d > -3e8 && d < 3e8 }
	END { exit !ok }' || exit 1; done"
check "rank 3, continued after the run, ended without acting on the stale order" \
	grep -q "window 2's planned end passed before its attaches were due" "$O/err.3"
check "every target alive and untraced afterwards" \
	[ "$(awk '$3 == 0 && $4 == "alive"' "$O/ranks" | wc -l)" = 7 ]
check "rank 3's tool attached and detached once (window 1), the others' twice" \
	[ "$(awk '($1 == 3 && $5 == 1 && $6 == 1) || ($1 != 3 && $5 == 2 && $6 == 2)' \
	"$O/ranks" | wc -l)" = 7 ]
[ "$FAILED" = 0 ] || { sed 's/^/  | /' "$O/ranks"; grep -v '^\[' "$O/out" | tail -40; }

if [ -z "${ROCATTACH_SANITIZED:-}" ]; then
echo "== 5. 16 ranks, --fanout 4, 3 windows: interior rank 1 SIGKILLed in window 1"
# Rank 0 adopts rank 1's children (5-8) in window 1; in windows 2 and 3 their clocks
# are measured by rank 0 (bound > 0) and they take its orders and stops.
O=$W/adopt3
run 16 "$O" --enable-recovery -- --fanout 4 --windows 1500:2000:3 --report "$O/r.json"
for _ in $(seq 600); do grep -q "attached 16/16" "$O/out" && break; sleep 0.05; done
k=$(launcher_of 1)
check "window 1 attached, rank 1's launcher found" [ -n "$k" ]
[ -n "$k" ] && kill -KILL "$k"
timeout 120 tail --pid="$RUN" -f /dev/null
kill "$RUN" 2>/dev/null
wait "$RUN"
R=$O/r.json
check "report written, exit code 6, 3 windows" jq -e '.exit_code == 6 and
	(.windows | length) == 3' "$R"
[ -s "$R" ] || sed 's/^/  | /' "$O/out" | tail -30
echo "r1: $(jq -r '[.windows[].nodes[] | select(.host == "r1") | .lost_reason] | join(" | ")' "$R")"
echo "r5-r8 (window offset rtt bound): $(jq -r '.windows[1:][] as $w | $w.nodes[] |
	select(.host == ("r5", "r6", "r7", "r8")) |
	"\($w.index) \(.host) \(.clock_offset_ns) \(.clock_rtt_ns) \(.clock_bound_ns)"' "$R" |
	paste -sd, -)"
echo "coordination (windows 1-3): $(jq -c '[.windows[].coordination |
	[.messages_sent, .messages_received]]' "$R")"
check "rank 1 lost in each window" jq -e '[.windows[].nodes[] | select(.host == "r1" and
	.state == "lost" and (.lost_reason | length) > 0)] | length == 3' "$R"
check "windows 2 and 3: rank 5-8's records, clocks measured (bound > 0)" jq -e \
	'[.windows[1:][].nodes[] | select(.host == ("r5", "r6", "r7", "r8")) |
	select(.state == "ok" and .targets[0].state == "detached" and
	.clock_offset_ns != null and .clock_rtt_ns > 0 and .clock_bound_ns > 0)] |
	length == 8' "$R"
check "every window: the 15 other nodes ok" jq -e '[.windows[] | [.nodes[] |
	select(.host != "r1" and .state == "ok")] | length] == [15, 15, 15]' "$R"
check "every target alive and untraced afterwards" \
	[ "$(awk '$3 == 0 && $4 == "alive"' "$O/ranks" | wc -l)" = 16 ]
check "rank 1's tool attached and detached once, the others' 3 times" \
	[ "$(awk '($1 == 1 && $5 == 1 && $6 == 1) || ($1 != 1 && $5 == 3 && $6 == 3)' \
	"$O/ranks" | wc -l)" = 16 ]
[ "$FAILED" = 0 ] || { sed 's/^/  | /' "$O/ranks"; grep -v '^\[' "$O/out" | tail -40; }
else
	echo "== 5. under $ROCATTACH_SANITIZED: runs in the plain build only"
fi
finish
