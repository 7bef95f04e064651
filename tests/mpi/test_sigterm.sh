#!/usr/bin/env bash
# A report survives the launcher's death (issue 32): a Ctrl-C at mpirun (SIGINT to it)
# while a tool call takes 3 s. Open MPI then sends the ranks SIGTERM and, about 1 s
# later, SIGKILL: the calls are still running. Both target sides in one job (2 ranks with
# our agent, 2 with ROCm's double):
#   1. the example tool sleeps 4 s in tool_attach (Open MPI's SIGKILL comes about 2 s
#      after the Ctrl-C), the Ctrl-C comes during it (-d 6000);
#   2. it sleeps 3 s in tool_detach, the Ctrl-C comes mid-window (no -d);
#   3. rocattach alone: SIGTERM while tool_attach sleeps 3 s, SIGKILL 1 s later.
# A fresh job each time: the tool reads its knobs at its first load, and a target keeps
# the variables of its last attach.
# The launcher rank is SIGKILLed as soon as it says its provisional report (Open MPI's
# SIGKILL, sent a little early). Each time: a provisional summary and report exist (exit 5, "provisional", nothing
# counted), "standard input closed" is not said, and every target is untraced afterwards
# with its tools detached by its own end (the tool's own log: its tool_detach returned
# after the launcher was gone), still running.
B=${1:?usage: test_sigterm.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-sigterm-test.XXXXXX)
# The run's files go at the end, unless KEEP=1 keeps them for a look.
trap 'cleanup; [ "${KEEP:-0}" = 1 ] || rm -rf "$W"' EXIT
chmod 755 "$W"
ROCATTACH=$B/bin/rocattach

# ns=... of the first line of event $2 in the tool log of pid $3 under dir $1.
event_ns() {
	cat "$1"/rocattach-tool.*."$3".log 2>/dev/null | grep "^$2 " | head -n 1 |
		sed 's/.* ns=\([0-9]*\).*/\1/'
}

# Every pid given after $1 $2 has one line of event $2 under dir $1 (15 s at most).
wait_events() {
	local dir=$1 ev=$2
	shift 2
	for _ in $(seq 300); do
		local all=1
		for p in "$@"; do
			[ "$(events "$dir" "$ev" "$p")" -ge 1 ] || all=0
		done
		[ "$all" -eq 1 ] && return 0
		sleep 0.05
	done
	return 1
}

# The targets after the launcher's death: detached by their own end ($1: tool logs, $2:
# when the launcher was gone, ns), untraced, running.
own_end() {
	local dir=$1 gone=$2 what=$3
	shift 3
	check "$what: every target's tools detached" wait_events "$dir" tool_detach "$@"
	for p in "$@"; do
		check "$what: pid $p: one tool_attach, one tool_detach" test \
			"$(events "$dir" tool_attach "$p")" -eq 1 -a \
			"$(events "$dir" tool_detach "$p")" -eq 1
		check "$what: pid $p: its tool_detach returned after the launcher was gone" \
			test "$(event_ns "$dir" tool_detach "$p")" -gt "$gone"
		echo "$what: pid $p: tool_detach at $(event_ns "$dir" tool_detach "$p")"
		check "$what: pid $p untraced" grep -q "TracerPid:	0" "/proc/$p/status"
		check "$what: pid $p running" test "$(sed 's/.*) //' "/proc/$p/stat" | cut -c1)" != T
	done
}

# The provisional account of a run whose output is $1 and report $2.
provisional() {
	local out=$1 rep=$2 what=$3
	check "$what: the provisional summary was printed" grep -q "provisional summary" "$out"
	check "$what: the summary says exit 5" grep -q "(exit 5: interrupted" "$out"
	check "$what: a report exists" test -s "$rep"
	check "$what: the report is provisional, with a reason" \
		jq -e '.provisional | type == "string" and length > 0' "$rep"
	check "$what: the report says exit 5" jq -e '.exit_code == 5' "$rep"
	check "$what: it counts no target of the cut window" \
		jq -e '[.windows[-1].nodes[] | select(.state != "lost")] | length == 0' "$rep"
	check "$what: no 'standard input closed' line" \
		bash -c "! grep -q 'standard input closed' '$out'"
	check "$what: no target said ok" bash -c "! grep -q 'exit 0' '$out'"
}

# Wait (20 s at most) until pid $1 is gone; print when (ns), within 10 ms.
death_ns() {
	for _ in $(seq 2000); do
		[ -e "/proc/$1" ] || break
		sleep 0.01
	done
	date +%s%N
}

# A Ctrl-C at mpirun (SIGINT to it) with the launcher's input still open, as at a
# terminal, on a fresh job. $1: case, $2: the line to wait for, $3: the tool's knob
# (VAR=MS), the rest: options.
ctrl_c_case() {
	local name=$1 line=$2 knob=$3 gone rc rank
	shift 3
	start_both "$W/$name-job.out" || return 1
	RANKS=($(job_ranks "$JOB_PID"))
	check "$name: job has 4 ranks" test "${#RANKS[@]}" -eq 4
	export ROCPROF_OUTPUT_PATH=$W/$name
	env "$knob" mpirun -np 1 -x "${knob%%=*}" "$LAUNCHER" --mpirun-pid "$JOB_PID" \
		-t "$TOOL" --report "$W/$name.json" "$@" < <(sleep 30) >"$W/$name.out" 2>&1 &
	L=$!
	CHILDREN+=("$L")
	for _ in $(seq 300); do grep -q "$line" "$W/$name.out" && break; sleep 0.05; done
	check "$name: '$line' said" grep -q "$line" "$W/$name.out"
	rank=$(pgrep -f "^$LAUNCHER" -P "$L" | head -n 1)
	kill -INT "$L"
	# Open MPI's SIGKILL follows its SIGTERM after about 1 s, or later under load: sent
	# here as soon as the provisional report is there (mpirun forwards the launcher's
	# words late while it ends the job), so that every call is still in flight at the
	# launcher's death and the targets end it alone.
	for _ in $(seq 200); do
		[ -s "$W/$name.json" ] && break
		sleep 0.01
	done
	check "$name: the provisional report came within 2 s of the Ctrl-C" test -s "$W/$name.json"
	kill -KILL "$rank"
	gone=$(death_ns "$rank")
	wait "$L"
	rc=$?
	echo "$name: mpirun ended (exit $rc); launcher rank $rank gone at $gone"
	provisional "$W/$name.out" "$W/$name.json" "$name"
	own_end "$W/$name" "$gone" "$name" "${RANKS[@]}"
	cat "$W/$name.out"
	stop_job
}

echo "== 1. Ctrl-C at mpirun while tool_attach sleeps 4 s"
ctrl_c_case attach "attach calls still running at the start" \
	ROCPROF_EXAMPLE_TOOL_ATTACH_MS=4000 -d 6000
check "attach: the report names the calls in flight" \
	jq -e '[.windows[-1].nodes[].lost_reason | test("4 attach calls in flight")] | any' \
	"$W/attach.json"

echo "== 2. Ctrl-C at mpirun mid-window, tool_detach sleeps 3 s"
ctrl_c_case window "attached 4/4" ROCPROF_EXAMPLE_TOOL_DETACH_MS=3000

echo "== 3. rocattach: SIGTERM while tool_attach sleeps 3 s, SIGKILL 1 s later"
start_both "$W/cli-job.out" || exit 1
RANKS=($(job_ranks "$JOB_PID"))
T=${RANKS[0]}
export ROCPROF_OUTPUT_PATH=$W/cli
ROCPROF_EXAMPLE_TOOL_ATTACH_MS=3000 "$ROCATTACH" -p "$T" -t "$TOOL" -d 6000 \
	</dev/null >"$W/cli.out" 2>&1 &
R=$!
CHILDREN+=("$R")
for _ in $(seq 100); do
	grep -q "^configure_attach " "$W"/cli/*."$T".log 2>/dev/null && break
	sleep 0.05
done
sleep 0.3
kill -TERM "$R"
sleep 0.5
check "rocattach: the provisional line came at once, during the call" \
	grep -q "provisional: process $T: the attach call is in flight" "$W/cli.out"
check "rocattach: it says the target detaches by itself" \
	grep -q "detaches its tools by itself" "$W/cli.out"
kill -KILL "$R"
wait "$R" 2>/dev/null
gone=$(date +%s%N)
own_end "$W/cli" "$gone" rocattach "$T"
cat "$W/cli.out"

stop_job
finish
