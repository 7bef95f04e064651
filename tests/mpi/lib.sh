# Shared helpers for the launcher tests (sourced). Needs B (build dir) set.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib/windows.sh" # on_plan
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
AGENT=$B/lib/librocattach-agent.so.0
TOOL=$B/lib/librocattach-example-tool.so
MPI_TARGET=$B/bin/rocattach-example-mpi-target
DOUBLE=$B/tests/rocm/librocprofiler-register.so.0 # ROCm's side (the test double)
LAUNCHER=$B/bin/rocattach-mpi
PASSED=0
FAILED=0
CHILDREN=()

fail() { echo "FAIL: $*" >&2; FAILED=$((FAILED + 1)); }
ok() { echo "ok: $*"; PASSED=$((PASSED + 1)); }
check() { # check "description" command... (output of the command is discarded)
	local what=$1; shift
	if "$@" >/dev/null; then ok "$what"; else fail "$what"; fi
}
cleanup() {
	for p in "${CHILDREN[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT

# as_user USER: AS=(the prefix that runs a command as USER: real and effective ids, no
# extra groups), empty if USER is. A prefix, not a function, so that "$!" is the program.
as_user() {
	AS=()
	[ -z "$1" ] || AS=(setpriv --reuid="$1" --regid="$(id -g "$1")" --clear-groups env HOME=/tmp)
}

# Start the example MPI job with N ranks (attachable), as USER if given; sets JOB_PID
# (its mpirun).
start_job() {
	local n=$1 out=$2
	as_user "${3:-}"
	"${AS[@]}" mpirun -np "$n" -x ROCP_TOOL_ATTACH=1 -x LD_PRELOAD="$AGENT" \
		"$MPI_TARGET" </dev/null >"$out" 2>&1 &
	JOB_PID=$!
	CHILDREN+=("$JOB_PID")
	wait_ready "$out" "$n"
}

# An MPMD job of 2 ranks with our agent and 2 with ROCm's side, output to $1; sets JOB_PID.
start_both() {
	mpirun -np 2 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$AGENT" "$MPI_TARGET" : \
		-np 2 env ROCP_TOOL_ATTACH=1 LD_PRELOAD="$DOUBLE" "$MPI_TARGET" \
		</dev/null >"$1" 2>&1 &
	JOB_PID=$!
	CHILDREN+=("$JOB_PID")
	wait_ready "$1" 4
}

# End the job whose mpirun is JOB_PID.
stop_job() {
	kill "$JOB_PID" 2>/dev/null
	wait "$JOB_PID" 2>/dev/null
}

# Seconds since the epoch, with ns; is now less than $2 seconds after $1?
now() { date +%s.%N; }
# loose "what" COMMAND...: a loose bound of time, checked in the plain build; under
# a sanitizer whether it held is said, not counted (as within, below).
loose() {
	local what=$1
	shift
	if [ -z "${ROCATTACH_SANITIZED:-}" ]; then
		check "$what" "$@"
	elif "$@" >/dev/null; then
		echo "note: held: $what (under $ROCATTACH_SANITIZED not checked)"
	else
		echo "note: did not hold: $what (under $ROCATTACH_SANITIZED not checked)"
	fi
}
# exit_ok RC REPORT: the run's exit agrees with its windows (on_plan, tests/lib/windows.sh):
# 0 with none off its plan, or 7 with one shown late within the loose slack (a tool a few
# ms past the tolerance on 2 loaded cores); under a sanitizer (several times slower) 7
# where a window was off by any amount. mpi.late tests the lateness itself.
exit_ok() {
	local slack=$WINDOW_SLACK_MS

	[ -n "${ROCATTACH_SANITIZED:-}" ] && slack=3600000
	WINDOW_SLACK_MS=$slack on_plan "$1" "$2"
}
# within T0 S "what": a bound of time since T0, checked in the plain build. Under a
# sanitizer (scripts/sanitize.sh sets ROCATTACH_SANITIZED) the launcher runs several
# times slower and CI runs the two sanitizer suites at once: the time is said, not
# checked (not counted as a pass); every other check of the case still runs.
within() {
	if [ -n "${ROCATTACH_SANITIZED:-}" ]; then
		awk -v a="$1" -v b="$(now)" -v m="$2" -v w="$3" -v k="$ROCATTACH_SANITIZED" 'BEGIN {
			printf "note: %s: %.2f s (bound %s s; under %s not checked, the plain build checks it)\n",
				w, b - a, m, k }'
		return 0
	fi
	check "$3" elapsed_below "$1" "$2"
}
# elapsed_below T0 S: less than S seconds since T0; else says how long it was.
elapsed_below() {
	awk -v a="$1" -v b="$(now)" -v m="$2" 'BEGIN {
		if (b - a < m) exit 0
		printf "  (%.2f s since then, the bound is %s s)\n", b - a, m > "/dev/stderr"; exit 1 }'
}

# Wait until the job writing OUT has N ranks ready (15 s at most); 0, or 1 with its output.
wait_ready() {
	local out=$1 n=$2
	for _ in $(seq 300); do
		[ "$(grep -c '^ready' "$out" 2>/dev/null)" -ge "$n" ] && return 0
		sleep 0.05
	done
	echo "job did not start:" >&2; cat "$out" >&2; return 1
}

# Ranks (pids) of the job whose mpirun is $1.
job_ranks() { pgrep -f "^$MPI_TARGET" -P "$1" | sort -n; }

# The MPI job id (PMIX_NAMESPACE) of process $1: what --mpi-job=ID names.
job_id() { tr '\0' '\n' <"/proc/$1/environ" | sed -n 's/^PMIX_NAMESPACE=//p' | head -n 1; }

# Is pid $2 a line of the --dry-run output $1?
listed() { grep -qE "^  $2[ (]" "$1"; }

# The target pids of every report given, one per line.
report_pids() { jq -r '.windows[].nodes[].targets[].pid' "$@" 2>/dev/null | sort -un; }

# Number of lines of event $2 in the tool log of pid $3 under dir $1.
events() { cat "$1"/rocattach-tool.*."$3".log 2>/dev/null | grep -c "^$2 " || true; }

finish() {
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
}
