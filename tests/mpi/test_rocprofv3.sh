#!/usr/bin/env bash
# rocprofv3's options end to end, on both target sides (our agent and ROCm's, the
# double tests/rocm/): a real rocattach and a real rocattach-mpi under mpirun send
# rocprofv3's variables, and a double of rocprofv3's tool (tests/rocm/, found under
# ROCM_PATH as rocprofv3 finds it) records the ROCP* variables it sees in files where
# the real tool writes them. The expected lists are written from rocprofv3.py
# (ROCm/rocm-systems 210d1ace), not from our table. Also: rocprofv3's refusals leave
# every target untouched, and the reattach trap refuses only the targets first
# attached with other collection options.
B=${1:?usage: test_rocprofv3.sh BUILD_DIR}
. "$(dirname "$0")/lib.sh"
W=$(mktemp -d /tmp/rocattach-rocprofv3-test.XXXXXX)
for v in $(compgen -e | grep '^ROCP'); do unset "$v"; done
unset ROCATTACH_ROCPROFV3_OPTIONS
export ROCM_PATH=$B/tests/rocm/rocm-root TMPDIR=$W
T=$ROCM_PATH/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so
CLI=$B/bin/rocattach
H=$(hostname)

# same FILE "VAR=VALUE"...: the tool saw exactly these ROCP* variables (and the target's
# own ROCP_TOOL_ATTACH=1).
same() {
	local f=$1
	shift
	[ -f "$f" ] || { echo "missing $f" >&2; return 1; }
	diff <(grep -v '^ROCP_TOOL_ATTACH=1$' "$f" | sort) <(printf '%s\n' "$@" | sort) >&2
}
traced() { [ -d "/proc/$1" ] && awk '/^TracerPid:/ { exit $2 != 0 }' "/proc/$1/status"; }

start_both "$W/job.out" || exit 1
mapfile -t R < <(job_ranks "$JOB_PID")
check "four ranks" test "${#R[@]}" -eq 4
# start_both: the first two ranks (lowest pids, started first) run our agent, the others ROCm's side.
side() { tr '\0' '\n' <"/proc/$1/environ" | grep -q 'librocprofiler-register' && echo rocm || echo agent; }
AG=() RO=()
for p in "${R[@]}"; do if [ "$(side "$p")" = rocm ]; then RO+=("$p"); else AG+=("$p"); fi; done
check "two ranks on each side" test "${#AG[@]}" -eq 2 -a "${#RO[@]}" -eq 2

# 1. rocattach, one target of each side: rocprofv3 --attach PID --kernel-trace --pmc SQ_WAVES
#    --attach-duration-msec 200 --output-directory DIR sends these.
for p in "${AG[0]}" "${RO[0]}"; do
	"$CLI" -p "$p" --attach-children=false --kernel-trace --pmc SQ_WAVES -d 200 \
		--output-directory "$W/o1" </dev/null >"$W/c1.$p.out" 2>&1
	check "rocattach $(side "$p") side: exit 0" test $? -eq 0
	check "rocattach $(side "$p") side: the tool saw rocprofv3's variables" same \
		"$W/o1/$H/${p}_results.db" ROCPROFILER_LIBRARY_CTOR=1 "ROCP_TOOL_LIBRARIES=$T" \
		"ROCPROF_OUTPUT_PATH=$W/o1" ROCPROF_OUTPUT_FORMAT=rocpd ROCPROF_KERNEL_TRACE=1 \
		"ROCPROF_ATTACH_TOOL_LIBRARY=$T" "ROCPROF_ATTACH_PID=$p" ROCPROF_ATTACH_DURATION=200 \
		ROCPROF_COUNTER_COLLECTION=1 "ROCPROF_COUNTERS=pmc: SQ_WAVES"
done

# --dry-run -v lists the variables it will send; a tool of one's own alone sends none of them.
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --dry-run -v --hip-trace --pmc SQ_WAVES \
	-f csv json --output-directory "$W/o0" </dev/null >"$W/d0.out" 2>&1
check "dry run: exit 0" test $? -eq 0
check "dry run -v: the variables, as rocprofv3 sends them" diff <(sed -n 's/^rocprofv3 variable: //p' "$W/d0.out" | sort) \
	<(printf '%s\n' ROCPROFILER_LIBRARY_CTOR=1 "ROCP_TOOL_LIBRARIES=$T" \
		"ROCPROF_OUTPUT_FILE_NAME=%hostname%/%pid%" "ROCPROF_OUTPUT_PATH=$W/o0" \
		ROCPROF_OUTPUT_FORMAT=csv,json ROCPROF_HIP_COMPILER_API_TRACE=1 \
		ROCPROF_HIP_RUNTIME_API_TRACE=1 "ROCPROF_ATTACH_TOOL_LIBRARY=$T" \
		ROCPROF_COUNTER_COLLECTION=1 "ROCPROF_COUNTERS=pmc: SQ_WAVES" | sort)
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --dry-run -v -t "$TOOL" </dev/null >"$W/d0b.out" 2>&1
check "dry run -v, -t a tool of one's own: none of rocprofv3's variables" eval '! grep -q "^rocprofv3 variable" "$W/d0b.out"'
# Its tool missing: one line saying where it was looked for, exit 4, nothing touched.
ROCM_PATH=$W/no-rocm mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --kernel-trace -d 100 \
	</dev/null >"$W/m0.out" 2>&1
rc=$?
check "tool missing: exit 4 (got $rc)" test "$rc" -eq 4
check "tool missing: the line says where it looked" grep -q "looked for $W/no-rocm/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so and .so.1 (ROCM_PATH)" "$W/m0.out"
for p in "${R[@]}"; do check "tool missing: $p untraced and alive" traced "$p"; done
ROCM_PATH=$W/no-rocm mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --dry-run --kernel-trace \
	</dev/null >"$W/m1.out" 2>&1
check "tool missing, dry run: it lists (exit 0)" test $? -eq 0
check "tool missing, dry run: the four targets listed" grep -q "dry run: 4 processes on 1 node would be attached" "$W/m1.out"
check "tool missing, dry run: a warning says a run would stop" grep -q "warning: rocprofv3's tool is not installed: looked for .*(a run would stop here, exit 4)" "$W/m1.out"
ROCM_PATH=$W/no-rocm mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --dry-run </dev/null \
	>"$W/m2.out" 2>&1
rc=$?
check "tool missing, dry run without its options: exit 0 (got $rc)" test "$rc" -eq 0
check "tool missing, dry run without its options: no word of it" eval '! grep -q "rocprofv3" "$W/m2.out"'

# 2. Refused before any target is touched (exit 2): nothing attached, nothing written.
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --kernel-trace --pmc SQ_WAVES --pmc GRBM_COUNT \
	-d 200 --output-directory "$W/o2" </dev/null >"$W/l2.out" 2>&1
rc=$?
check "several --pmc: exit 2 (got $rc)" test "$rc" -eq 2
check "several --pmc: rocprofv3's reason" grep -q "multi-pass counter collection (multiple --pmc flags) is not compatible with attach mode" "$W/l2.out"
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --collection-period 1:1:0 -d 200 \
	--output-directory "$W/o2" </dev/null >"$W/l2b.out" 2>&1
check "--collection-period: exit 2" test $? -eq 2
check "--collection-period: rocprofv3's reason" grep -q "collection-period is not compatible with attach mode" "$W/l2b.out"
"$CLI" -p "${RO[1]}" --pmc A --pmc B -d 100 </dev/null >"$W/c2.out" 2>&1
check "rocattach several --pmc: exit 2" test $? -eq 2
check "refusals: nothing written" test ! -e "$W/o2"
for p in "${R[@]}"; do check "refusals: $p untraced and alive" traced "$p"; done

# 3. The reattach trap: the two targets rocattach attached first with --kernel-trace
#    --pmc SQ_WAVES are refused a run with --kernel-trace alone; the others go on.
mpirun -np 1 "$LAUNCHER" --mpirun-pid "$JOB_PID" --kernel-trace -d 300 \
	--output-directory "$W/o3" --report "$W/r3.json" </dev/null >"$W/l3.out" 2>&1
rc=$?
check "reattach trap: exit 4 (got $rc)" test "$rc" -eq 4
for p in "${AG[0]}" "${RO[0]}"; do
	check "reattach trap: $p refused with the reason" grep -q "process $p was first attached with --kernel-trace --pmc SQ_WAVES; rocprofv3's tool cannot change collection options on reattach" "$W/l3.out" "$W/r3.json"
	check "reattach trap: $p not sent" test ! -e "$W/o3/$H/${p}_results.db"
done
# rocprofv3 --attach PID --kernel-trace --attach-duration-msec 300 --output-directory DIR,
# with rocattach-mpi's per-process file name.
for p in "${AG[1]}" "${RO[1]}"; do
	check "rocattach-mpi $(side "$p") side: the tool saw rocprofv3's variables" same \
		"$W/o3/$H/${p}_results.db" ROCPROFILER_LIBRARY_CTOR=1 "ROCP_TOOL_LIBRARIES=$T" \
		"ROCPROF_OUTPUT_FILE_NAME=%hostname%/%pid%" "ROCPROF_OUTPUT_PATH=$W/o3" \
		ROCPROF_OUTPUT_FORMAT=rocpd ROCPROF_KERNEL_TRACE=1 "ROCPROF_ATTACH_TOOL_LIBRARY=$T" \
		ROCPROF_ATTACH_DURATION=300
done

check "report: each attached target names the directory and name its tool was given" jq -e \
	--arg d "$W/o3" --arg h "$H" '[.windows[0].nodes[].targets[] | select(.state == "detached")
	 | .rocprofv3_output == {directory: $d, name: "\($h)/\(.nspid)", expanded: true}]
	 | length == 2 and all' "$W/r3.json"
check "report: the refused targets too" jq -e '[.windows[0].nodes[].targets[]
	 | select(.state == "attach-failed") | .rocprofv3_output.expanded] | length == 2' "$W/r3.json"
check "the run says where the files land" grep -q "rocprofv3's tool writes $W/o3/%hostname%/%pid%_\\*" "$W/l3.out"

# 4. Output options may change on reattach; collection options may not (rocattach too).
"$CLI" -p "${AG[1]}" --attach-children=false --kernel-trace -f csv json -d 100 \
	--output-directory "$W/o4" </dev/null >"$W/c4.out" 2>&1
check "same collection, other output: exit 0" test $? -eq 0
check "same collection, other output: csv and json written" test -f "$W/o4/$H/${AG[1]}_results.csv" -a -f "$W/o4/$H/${AG[1]}_results.json"
"$CLI" -p "${RO[1]}" --attach-children=false --hip-trace -d 100 </dev/null >"$W/c5.out" 2>&1
check "rocattach, other collection: exit 1" test $? -eq 1
check "rocattach, other collection: the reason" grep -q "process ${RO[1]} was first attached with --kernel-trace; rocprofv3's tool cannot change" "$W/c5.out"
for p in "${R[@]}"; do check "end: $p untraced and alive" traced "$p"; done

stop_job
echo "rocprofv3: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ] && rm -rf "$W"
[ "$FAILED" -eq 0 ]
