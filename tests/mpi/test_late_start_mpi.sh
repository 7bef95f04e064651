#!/usr/bin/env bash
# rocattach-mpi --late-start on real late_victim processes (the doubles of tests/rocm/late/),
# selected with --pid under one launcher rank (issue 33):
#  1. 4 victims: exit 0; every target's "late_start" object says ok, initialized; each
#     victim's calls reach the double SDK's wrappers (its per-second wrapped count grows);
#     the tool's first wrapped calls come at or after the planned start; the summary says
#     per node how many started / initialized / failed, and that the tools stay; the
#     victims run on untraced, every answer right;
#  2. harm: 4 victims, one SIGSTOPped: it is refused and left stopped, untraced; the
#     other 3 are started; exit 4, the summary says 1 failed or refused;
#  3. bad usage: --late-start with -d or --inject is one line, exit 2, nothing touched;
#  4. a real 4-rank job (mpirun -np 4 late_victim), selected with --mpirun-pid, with
#     rocprofv3's --hip-trace and its default tool (a fake ROCM_PATH whose
#     librocprofiler-sdk-tool.so is the late tool): exit 0, every rank initialized, its calls
#     through the wrappers from the planned start on;
#  5. mixed: 2 victims and 2 processes with a listener (ROCP_TOOL_ATTACH=1: our agent, ROCm's
#     double): the victims are late-started and stay; the others are attached normally, held
#     while the window is open, and detached when it is ended (SIGUSR1 to mpirun); the
#     report and the summary say which is which;
#  6. --detail none, one of 3 victims stopped: rank 0 has only the node's block, which
#     counts 2 late-started and 1 failed; exit 4, and the summary says so;
#  7. harm: a stopped process with a listener beside a victim: refused before any ptrace,
#     left stopped and untraced, no tool in it; the victim started; exit 4;
#  8. a listener that came after the selection (rocattach --inject during the start lead):
#     attached on the normal path after the start, late (exit 7), held, then detached.
# Usage: test_late_start_mpi.sh BUILD_DIR   (under the heavy-test lock)
B=$(cd "${1:?usage: test_late_start_mpi.sh BUILD_DIR}" && pwd)
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || { echo "SKIP: jq not found (package jq)"; exit 77; }
L=$B/tests/rocm/late
LTOOL=$L/liblate_tool.so
W=$(mktemp -d /tmp/rocattach-late-mpi.XXXXXX)
chmod 755 "$W"
VICTIMS=()
cleanup_late() {
	for p in "${VICTIMS[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	cleanup
	[ "${KEEP:-0}" = 1 ] || rm -rf "$W"
}
trap cleanup_late EXIT
for v in $(compgen -e | grep '^ROCP'); do unset "$v"; done
export LATE_TOOL_LOG=$W/tool.log

# victims NAME N: N late_victim processes (output W/NAME.I.out), pids in VP, once "ready".
victims() {
	local name=$1 n=$2 i
	VP=()
	for i in $(seq "$n"); do
		"$L/late_victim" --seconds 60 --threads 2 </dev/null >"$W/$name.$i.out" 2>&1 &
		VP+=($!)
		VICTIMS+=($!)
	done
	for i in $(seq "$n"); do
		for _ in $(seq 500); do
			grep -qs '^ready' "$W/$name.$i.out" && continue 2
			sleep 0.01
		done
		fail "$name: victim $i did not start"
		return 1
	done
}
untraced() { [ -d "/proc/$1" ] && awk '/^TracerPid:/ { exit $2 != 0 }' "/proc/$1/status"; }
# wrapped FILE: the last tick's wrapped count (0 if none yet).
wrapped() { awk '/^tick/ { for (i = 1; i <= NF; i++) { split($i, kv, "=");
	if (kv[1] == "wrapped") w = kv[2] } } END { print w + 0 }' "$1"; }
# grows FILE: within 5 s, a tick counts calls through the wrappers, and a later one more.
grows() {
	local first=0 until=$((SECONDS + 5)) now
	while [ "$SECONDS" -le "$until" ]; do
		now=$(wrapped "$1")
		[ "$first" -gt 0 ] && [ "$now" -gt "$first" ] && return 0
		[ "$first" -eq 0 ] && first=$now
		sleep 0.3
	done
	return 1
}
# end PID FILE: SIGTERM; unharmed = exit 0 (every answer right) and "done ... bad=0".
end() {
	kill -CONT "$1" 2>/dev/null
	kill "$1"
	wait "$1"
	local rc=$?
	[ "$rc" -eq 0 ] && grep -q '^done .* bad=0' "$2"
}
pids() { (IFS=,; echo "$*"); }
# run NAME PIDS...: one launcher rank, --late-start; rc in RC, report W/NAME.json.
run() {
	local name=$1
	shift
	mpirun -np 1 "$LAUNCHER" --late-start -t "$LTOOL" --pid "$(pids "$@")" --detail all \
		--report "$W/$name.json" </dev/null >"$W/$name.out" 2>&1
	RC=$?
}
# late NAME PID JQ: jq over PID's late_start object in NAME's report.
late() {
	jq -r --argjson p "$2" "[.. | objects | select(.pid? == \$p and has(\"late_start\"))][0]
		| $3" "$W/$1.json"
}

# 1. Four victims at one planned start.
if victims four 4; then
	sleep 1.2
	before=0
	for i in 1 2 3 4; do before=$((before + $(wrapped "$W/four.$i.out"))); done
	run four "${VP[@]}"
	summary=$(cat "$W/four.out")
	good=0
	for i in 1 2 3 4; do
		p=${VP[$((i - 1))]}
		if [ "$(late four "$p" '.late_start | "\(.outcome) \(.initialized) \(.stays_until_exit)"')" = \
			"ok true true" ] && [ "$(late four "$p" .state)" = late_started ] &&
			grows "$W/four.$i.out" && untraced "$p"; then
			good=$((good + 1))
		else
			echo "victim $p: $(late four "$p" .late_start.message); $(tail -1 "$W/four.$i.out")" >&2
		fi
	done
	check "4 victims: exit 0 (rc $RC)" test "$RC" -eq 0
	check "nothing wrapped before the start" test "$before" -eq 0
	check "every target initialized, its calls through the wrappers, untraced ($good of 4)" \
		test "$good" -eq 4
	# The first wrapped call of each victim at or after the planned start.
	on_time=0
	for p in "${VP[@]}"; do
		planned=$(late four "$p" .late_start.planned_start_ns)
		first=$(awk -v p="pid=$p" '$1 == "first-call" && $2 == p { sub("ns=", "", $4);
			if (m == "" || $4 < m) m = $4 } END { print m }' "$LATE_TOOL_LOG")
		[ -n "$first" ] && [ "$planned" != null ] && [ "$planned" -gt 0 ] &&
			[ "$first" -ge "$planned" ] && on_time=$((on_time + 1))
	done
	check "each tool's first wrapped call at or after the planned start ($on_time of 4)" \
		test "$on_time" -eq 4
	check "one planned start for all" test "$(jq '[.. | objects | .late_start?.planned_start_ns
		| select(. != null)] | unique | length' "$W/four.json")" -eq 1
	check "the summary: 4 started, 4 initialized, 0 failed; the tools stay" \
		grep -qE "^  .*: 4 started, 4 initialized, 0 failed or refused$" <<<"$summary"
	check "the summary says the tools stay until each process exits" \
		grep -q "stay in each started process until it exits" <<<"$summary"
	unharmed=0
	for i in 1 2 3 4; do end "${VP[$((i - 1))]}" "$W/four.$i.out" && unharmed=$((unharmed + 1)); done
	check "the victims ran on, every answer right ($unharmed of 4)" test "$unharmed" -eq 4
	[ "$RC" -eq 0 ] || cat "$W/four.out" >&2
fi

# 2. One victim stopped: refused, left stopped; the others started; exit 4.
if victims stop 4; then
	s=${VP[1]}
	kill -STOP "$s"
	sleep 0.1
	run stop "${VP[@]}"
	st=$(awk '{ print $3 }' "/proc/$s/stat")
	check "a stopped victim: exit 4 (rc $RC)" test "$RC" -eq 4
	check "the stopped one is refused, left stopped and untraced" \
		test "$(late stop "$s" '"\(.state) \(.late_start.outcome)"')" = "stopped refused" -a \
		"$st" = T
	untraced "$s" || fail "the stopped victim is traced"
	started=0
	for i in 1 3 4; do
		p=${VP[$((i - 1))]}
		[ "$(late stop "$p" .late_start.initialized)" = true ] && grows "$W/stop.$i.out" &&
			end "$p" "$W/stop.$i.out" && started=$((started + 1))
	done
	check "the 3 others are started and unharmed ($started of 3)" test "$started" -eq 3
	check "the summary: 3 initialized, 1 failed or refused" \
		grep -qE "^  .*: 3 started, 3 initialized, 1 failed or refused$" "$W/stop.out"
	check "the stopped victim is unharmed once resumed" end "$s" "$W/stop.2.out"
	[ "$RC" -eq 4 ] || cat "$W/stop.out" >&2
fi

# 3. Bad usage: one line, exit 2 (no target is looked at).
for bad in "-d 100" "--inject"; do
	# shellcheck disable=SC2086
	mpirun -np 1 "$LAUNCHER" --late-start $bad --pid 1 -t "$LTOOL" </dev/null >"$W/usage.out" 2>&1
	rc=$?
	check "--late-start $bad: exit 2 (rc $rc)" test "$rc" -eq 2
	check "--late-start $bad: one line naming it" test "$(grep -c '^rocattach-mpi' "$W/usage.out")" \
		-eq 1 -a -n "$(grep -F -- "cannot go with ${bad%% *}" "$W/usage.out")"
done

# 4. A real 4-rank job, rocprofv3's --hip-trace with its default tool under a fake ROCm.
R=$W/rocm/lib/rocprofiler-sdk
mkdir -p "$R" && cp "$LTOOL" "$R/librocprofiler-sdk-tool.so" && ln -s "$L/sdk" "$R/sdk"
: >"$LATE_TOOL_LOG"
mpirun -np 4 -x LATE_TOOL_LOG "$L/late_victim" --seconds 60 --threads 2 </dev/null \
	>"$W/job.out" 2>&1 &
JOB=$!
VICTIMS+=("$JOB")
wait_ready "$W/job.out" 4 || fail "the 4-rank job did not start"
ROCM_PATH=$W/rocm mpirun -np 1 "$LAUNCHER" --late-start --hip-trace --mpirun-pid "$JOB" \
	--detail all --report "$W/job.json" </dev/null >"$W/job.run" 2>&1
RC=$?
check "4-rank job with --hip-trace: exit 0 (rc $RC)" test "$RC" -eq 0
check "every rank initialized (4 of 4)" test "$(jq '[.windows[].nodes[].targets[]
	| select(.late_start.initialized == true and .state == "late_started")] | length' \
	"$W/job.json")" -eq 4
on_time=0
for p in $(jq -r '.windows[].nodes[].targets[].pid' "$W/job.json"); do
	planned=$(late job "$p" .late_start.planned_start_ns)
	first=$(awk -v p="pid=$p" '$1 == "first-call" && $2 == p { sub("ns=", "", $4);
		if (m == "" || $4 < m) m = $4 } END { print m }' "$LATE_TOOL_LOG")
	[ -n "$first" ] && [ "$planned" != null ] && [ "$first" -ge "$planned" ] &&
		on_time=$((on_time + 1))
done
check "each rank's calls reach the wrappers from the planned start on ($on_time of 4)" \
	test "$on_time" -eq 4
kill "$JOB" 2>/dev/null
wait "$JOB" 2>/dev/null
[ "$RC" -eq 0 ] || cat "$W/job.run" >&2

# 5. Mixed: 2 victims late-started; 2 processes with a listener (our agent's, ROCm's double)
# attached normally, then detached when the window is ended.
ATOOL=$L/liblate_tool_attach.so
if victims mix 2; then
	LP=()
	for pre in "$AGENT" "$DOUBLE"; do
		ROCP_TOOL_ATTACH=1 LD_PRELOAD=$pre "$B/bin/rocattach-example-target" </dev/null \
			>"$W/mix.l${#LP[@]}.out" 2>&1 &
		LP+=($!)
		VICTIMS+=($!)
	done
	sleep 0.5
	mpirun -np 1 "$LAUNCHER" --late-start -t "$ATOOL" --pid "$(pids "${VP[@]}" "${LP[@]}")" \
		--detail all --report "$W/mix.json" </dev/null >"$W/mix.out" 2>&1 &
	mr=$!
	for _ in $(seq 200); do grep -q "attached on the normal path" "$W/mix.out" && break; sleep 0.05; done
	held=0
	for p in "${LP[@]}"; do
		[ "$(grep -c "^attach pid=$p " "$LATE_TOOL_LOG")" -eq 1 ] &&
			[ "$(grep -c "^detach pid=$p " "$LATE_TOOL_LOG")" -eq 0 ] && held=$((held + 1))
	done
	kill -USR1 "$mr"
	wait "$mr"
	RC=$?
	check "mixed: exit 0 (rc $RC)" exit_ok "$RC" "$W/mix.json"
	normal=0
	for p in "${LP[@]}"; do
		[ "$(late mix "$p" '"\(.state) \(.late_start.outcome)"')" = "detached attached" ] &&
			[ "$(grep -c "^detach pid=$p " "$LATE_TOOL_LOG")" -eq 1 ] && untraced "$p" &&
			normal=$((normal + 1))
	done
	check "both sides' listeners: attached, held while the window was open ($held of 2)" \
		test "$held" -eq 2
	check "both sides' listeners: detached at the window's end, untraced ($normal of 2)" \
		test "$normal" -eq 2
	both=0
	for i in 1 2; do
		p=${VP[$((i - 1))]}
		[ "$(late mix "$p" '"\(.state) \(.late_start.initialized)"')" = "late_started true" ] &&
			grows "$W/mix.$i.out" && end "$p" "$W/mix.$i.out" && both=$((both + 1))
	done
	check "the 2 victims are late-started, stay, unharmed ($both of 2)" test "$both" -eq 2
	check "the summary names the 2 attached on the normal path" grep -qE \
		"^  .*: 2 started, 2 initialized, 0 failed or refused, 2 with a listener attached" \
		"$W/mix.out"
	check "the window's line says they were detached" grep -q "detached 2/4 targets" "$W/mix.out"
	for p in "${LP[@]}"; do kill "$p" 2>/dev/null; done
	[ "$RC" -eq 0 ] || cat "$W/mix.out" >&2
fi

# 6. --detail none: only the node's block reaches rank 0; a failed start is counted.
if victims none 3; then
	s=${VP[0]}
	kill -STOP "$s"
	mpirun -np 1 "$LAUNCHER" --late-start -t "$LTOOL" --pid "$(pids "${VP[@]}")" \
		--detail none --report "$W/none.json" </dev/null >"$W/none.out" 2>&1
	RC=$?
	check "--detail none, one stopped: exit 4 (rc $RC)" test "$RC" -eq 4
	check "no record kept, the block read (not unreadable)" test "$(jq -c '[.windows[-1].nodes[]
		| [(.targets | length), .records_left_out, .late_started, .failed]]' \
		"$W/none.json")" = "[[0,3,2,1]]"
	check "the summary: 2 started, 2 initialized, 1 failed or refused" \
		grep -qE "^  .*: 2 started, 2 initialized, 1 failed or refused" "$W/none.out"
	check "the summary's headline: 1 failed, 2 late-started" \
		grep -qE "1 failed.*2 late-started" "$W/none.out"
	for i in 1 2 3; do end "${VP[$((i - 1))]}" "$W/none.$i.out" || fail "none: victim $i harmed"; done
	[ "$RC" -eq 4 ] || cat "$W/none.out" >&2
fi

# 7. Harm: a process with a listener, stopped, beside a victim: its attach is refused
# before any ptrace (left stopped, untraced), the victim is late-started; exit 4.
if victims hs 1; then
	ROCP_TOOL_ATTACH=1 LD_PRELOAD=$AGENT "$B/bin/rocattach-example-target" </dev/null \
		>"$W/hs.l.out" 2>&1 &
	sp=$!
	VICTIMS+=("$sp")
	sleep 0.5
	kill -STOP "$sp"
	mpirun -np 1 "$LAUNCHER" --late-start -t "$ATOOL" --pid "$(pids "${VP[0]}" "$sp")" \
		--detail all --report "$W/hs.json" </dev/null >"$W/hs.out" 2>&1
	RC=$?
	st=$(awk '{ print $3 }' "/proc/$sp/stat")
	check "a stopped listener: exit 4 (rc $RC)" test "$RC" -eq 4
	check "it is stopped, its attach refused, left stopped and untraced" \
		test "$(late hs "$sp" '"\(.state) \(.late_start.outcome)"')" = "stopped attached" -a \
		"$st" = T
	untraced "$sp" || fail "the stopped listener is traced"
	check "no tool reached it" test "$(grep -c "^attach pid=$sp " "$LATE_TOOL_LOG")" -eq 0
	check "the victim beside it is late-started" \
		test "$(late hs "${VP[0]}" .late_start.initialized)" = true
	check "the summary: 1 started, 1 failed or refused: a listener whose attach failed" grep -qE \
		"^  .*: 1 started, 1 initialized, 1 failed or refused, 1 with a listener whose normal attach failed$" \
		"$W/hs.out"
	end "${VP[0]}" "$W/hs.1.out" || fail "hs: the victim was harmed"
	kill -CONT "$sp"
	kill "$sp"
	[ "$RC" -eq 4 ] || cat "$W/hs.out" >&2
fi

# 8. A listener that came after the selection: a plain program, selected without one, gets
# our agent (rocattach --inject) during the start lead. The start's pre-checks find the
# listener and attach it on the normal path, after the start: late (exit 7), and said so.
# Then it is held, and detached when the window is ended.
if victims lc 1; then
	"$B/bin/rocattach-example-target" --threads 2 </dev/null >"$W/lc.p.out" 2>&1 &
	lp=$!
	VICTIMS+=("$lp")
	sleep 0.3
	mpirun -np 1 "$LAUNCHER" --late-start -t "$ATOOL" --pid "$(pids "${VP[0]}" "$lp")" \
		--start-lead 2500 -v --detail all --report "$W/lc.json" </dev/null >"$W/lc.out" 2>&1 &
	mr=$!
	for _ in $(seq 400); do grep -q "start lead" "$W/lc.out" && break; sleep 0.05; done
	mkdir -p "$W/lc.inj"
	ROCPROF_OUTPUT_PATH=$W/lc.inj "$B/bin/rocattach" -p "$lp" --inject -t "$TOOL" -d 0 \
		>"$W/lc.inj.out" 2>&1
	check "the listener came after the selection (rocattach --inject: rc $?)" test -n \
		"$(grep "start lead" "$W/lc.out")" -a "$(grep -c "^attach pid=$lp " "$LATE_TOOL_LOG")" = 0
	for _ in $(seq 400); do grep -q "attached on the normal path" "$W/lc.out" && break; sleep 0.05; done
	held=$(grep -c "^attach pid=$lp " "$LATE_TOOL_LOG")
	kill -USR1 "$mr"
	wait "$mr"
	RC=$?
	check "a listener that came later: exit 7, late (rc $RC)" test "$RC" -eq 7
	check "it was attached after the start and held ($held attach)" test "$held" -eq 1
	check "its record: detached, on the normal path" \
		test "$(late lc "$lp" '"\(.state) \(.late_start.outcome)"')" = "detached attached"
	check "the window: its one attached target late" \
		test "$(jq -c '.windows[-1].late | [.targets, .of, .off]' "$W/lc.json")" = "[1,1,true]"
	check "its tool detached once, the target untraced" \
		test "$(grep -c "^detach pid=$lp " "$LATE_TOOL_LOG")" -eq 1
	untraced "$lp" || fail "the listener that came later is traced"
	check "the victim beside it is late-started" \
		test "$(late lc "${VP[0]}" .late_start.initialized)" = true
	check "the summary: 1 started, 1 with a listener attached on the normal path" grep -qE \
		"^  .*: 1 started, 1 initialized, 0 failed or refused, 1 with a listener attached" \
		"$W/lc.out"
	check "the summary says the window was late" grep -qE "exit 7: 1 window late" "$W/lc.out"
	end "${VP[0]}" "$W/lc.1.out" || fail "lc: the victim was harmed"
	kill "$lp"
	wait "$lp"
	check "the program that got the listener ran on and ended cleanly (rc $?)" \
		grep -q "^done work=" "$W/lc.p.out"
	[ "$RC" -eq 7 ] || cat "$W/lc.out" >&2
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
