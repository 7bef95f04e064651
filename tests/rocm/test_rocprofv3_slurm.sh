#!/usr/bin/env bash
# rocattach-slurm and rocprofv3's options, without Slurm: its --check-options step
# refuses what rocprofv3 refuses in attach mode (and -d PATH) before Slurm is asked
# anything, and passes the options through to rocattach-mpi's step unchanged; so is
# --late-start, with no listener dry run before it.
# squeue and srun are stand-ins on PATH that answer for one running job and record
# the step's command line.
# usage: test_rocprofv3_slurm.sh BUILD_DIR
set -u
B=$(cd "${1:?usage: test_rocprofv3_slurm.sh BUILD_DIR}" && pwd)
PASSED=0
FAILED=0
fail() { echo "FAIL: $*" >&2; FAILED=$((FAILED + 1)); }
ok() { echo "ok: $*"; PASSED=$((PASSED + 1)); }
W=$(mktemp -d /tmp/rocattach-rp3-slurm.XXXXXX)
trap 'rm -rf "$W"' EXIT
cat >"$W/squeue" <<EOS
#!/bin/sh
echo "squeue \$*" >>"$W/asked"
case " \$* " in *" -s "*) echo 1234.0 ;; *) echo "RUNNING 1 $(id -un)" ;; esac
EOS
cat >"$W/srun" <<EOS
#!/bin/sh
printf '%s\n' "\$@" >"$W/step.args"
echo step >>"$W/steps"
EOS
chmod +x "$W/squeue" "$W/srun"
export PATH=$W:$PATH ROCATTACH_SLURM_CHECK=0 SRUN=$W/srun
S=$B/bin/rocattach-slurm

# refused CASE_WORDS... -- EXPECTED: exit 2, the line, and Slurm not asked.
refused() {
	local what=$1 says=$2
	shift 2
	rm -f "$W/asked"
	out=$("$S" 1234.0 "$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 2 ] && grep -qF -- "$says" <<<"$out" && [ ! -e "$W/asked" ]; then
		ok "$what: exit 2 before Slurm is asked"
	else
		fail "$what: exit $rc, said: $out"
	fi
}
refused "several --pmc" "multi-pass counter collection (multiple --pmc flags) is not compatible with attach mode" \
	--kernel-trace --pmc SQ_WAVES --pmc GRBM_COUNT -d 100
refused "--collection-period" "--collection-period is not compatible with attach mode" \
	--kernel-trace --collection-period 0:1:1
refused "-d PATH" "rocprofv3's output directory is --output-directory DIR" --kernel-trace -d ./out
refused "a bad format" "invalid --output-format 'xml'" --output-format xml

# The options go through to the step as they were given.
"$S" 1234.0 --kernel-trace --pmc SQ_WAVES GRBM_COUNT -f json pftrace -o 'run_%q{SLURM_PROCID}%' \
	--output-directory /scratch/prof -d 10000 >"$W/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && [ -e "$W/asked" ]; then ok "valid options: the step runs"; else fail "valid options: exit $rc: $(cat "$W/out")"; fi
want=(--slurm-step 1234.0 --kernel-trace --pmc SQ_WAVES GRBM_COUNT -f json pftrace
	-o 'run_%q{SLURM_PROCID}%' --output-directory /scratch/prof -d 10000)
if diff <(tail -n "${#want[@]}" "$W/step.args") <(printf '%s\n' "${want[@]}") >&2; then
	ok "the step gets rocprofv3's options unchanged"
else
	fail "the step's command line differs"
fi
grep -qx "$B/bin/rocattach-mpi" "$W/step.args" && ok "the step runs rocattach-mpi" ||
	fail "the step does not run rocattach-mpi"

# --late-start: refused with -d before Slurm is asked; else passed on to the step as given,
# and with the listener check on (the default), no dry run first (it needs no listener).
refused "--late-start with -d" "--late-start cannot go with -d" --late-start -t /x/libtool.so -d 100
rm -f "$W/steps" "$W/step.args"
ROCATTACH_SLURM_CHECK=1 "$S" 1234.0 --late-start -t /x/libtool.so --hip-trace >"$W/out" 2>&1
rc=$?
want=(--slurm-step 1234.0 --late-start -t /x/libtool.so --hip-trace)
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$W/steps")" -eq 1 ] &&
	diff <(tail -n "${#want[@]}" "$W/step.args") <(printf '%s\n' "${want[@]}") >&2 &&
	! grep -qx -- --dry-run "$W/step.args"; then
	ok "--late-start: passed on to rocattach-mpi's step, one step, no listener dry run"
else
	fail "--late-start: exit $rc, $(cat "$W/steps" 2>/dev/null | wc -l) steps: $(cat "$W/out" "$W/step.args")"
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
