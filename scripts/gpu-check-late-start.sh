#!/usr/bin/env bash
# A late start on a real GPU (docs/late-start.md), for a machine with ROCm and a GPU. Run as is:
#   scripts/gpu-check-late-start.sh [WORK_DIR]
# It builds a small HIP program with hipcc (or uses $LATE_HIP_PROG, built from the source this
# script writes), starts it without ROCP_TOOL_ATTACH, late-starts rocprofv3's tool into it
# with --hip-trace --kernel-trace through `rocattach --late-start`, makes a second stream after
# the start, lets the program end (the tool writes at exit), then says which records arrived.
# Environment: ROCM_PATH (default /opt/rocm), ROCATTACH (default: rocattach in PATH, else
# build/bin/rocattach of this tree), LATE_HIP_PROG (a program built from prog.hip below).
# Exit codes: 0 the check ran (read its lines for what arrived), 1 a step failed,
# 2 something it needs is missing (one line each).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rocm=${ROCM_PATH:-/opt/rocm}
work=${1:-$(mktemp -d /tmp/gpu-check-late-start.XXXXXX)}
mkdir -p "$work"

missing=0
need() { # need WHAT FIX
	echo "missing: $1 ($2)" >&2
	missing=1
}
rocattach=${ROCATTACH:-$(command -v rocattach || true)}
[ -n "$rocattach" ] || rocattach=$here/build/bin/rocattach
[ -x "$rocattach" ] || need "rocattach" "build this tree (scripts/build.sh) or set ROCATTACH"
if [ -z "${LATE_HIP_PROG:-}" ] && ! command -v hipcc >/dev/null && [ ! -x "$rocm/bin/hipcc" ]; then
	need "hipcc" "install ROCm's HIP SDK, or set LATE_HIP_PROG to a built program"
fi
[ -e "$rocm/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so" ] ||
	need "rocprofv3's tool $rocm/lib/rocprofiler-sdk/librocprofiler-sdk-tool.so" \
		"install rocprofiler-sdk, or set ROCM_PATH"
compgen -G "$rocm/lib/librocprofiler-register.so*" >/dev/null ||
	need "$rocm/lib/librocprofiler-register.so" "install rocprofiler-register, or set ROCM_PATH"
[ -e /dev/kfd ] || need "a GPU (/dev/kfd)" "run on a machine with an AMD GPU and its driver"
[ "$missing" = 0 ] || exit 2

# The program: kernel_before on a stream made before the start, kernel_after on one made after.
cat >"$work/prog.hip" <<'HIP'
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

__global__ void kernel_before(int *p) { p[threadIdx.x] += 1; }
__global__ void kernel_after(int *p) { p[threadIdx.x] += 2; }

static bool exists(const char *f) { struct stat st; return stat(f, &st) == 0; }

int main(int argc, char **argv)
{
	hipStream_t before, after = nullptr;
	int *d = nullptr;

	if (argc != 3 || hipMalloc(&d, 256 * sizeof(int)) != hipSuccess ||
	    hipStreamCreate(&before) != hipSuccess)
		return 1;
	printf("running pid=%d\n", (int)getpid());
	fflush(stdout);
	for (int i = 0; i < 1200 && !exists(argv[2]); i++) { /* at most about 2 minutes */
		hipLaunchKernelGGL(kernel_before, dim3(1), dim3(256), 0, before, d);
		if (!after && exists(argv[1])) {
			if (hipStreamCreate(&after) != hipSuccess)
				return 1;
			printf("stream-after created\n");
			fflush(stdout);
		}
		if (after)
			hipLaunchKernelGGL(kernel_after, dim3(1), dim3(256), 0, after, d);
		if (hipDeviceSynchronize() != hipSuccess)
			return 1;
		usleep(100 * 1000);
	}
	printf("done\n");
	return 0;
}
HIP
prog=${LATE_HIP_PROG:-$work/prog}
if [ -z "${LATE_HIP_PROG:-}" ]; then
	hipcc=$(command -v hipcc || echo "$rocm/bin/hipcc")
	"$hipcc" -O2 -o "$prog" "$work/prog.hip" || { echo "step failed: hipcc" >&2; exit 1; }
fi

go=$work/go stop=$work/stop out=$work/out
rm -f "$go" "$stop"
env -u ROCP_TOOL_ATTACH -u ROCP_TOOL_LIBRARIES "$prog" "$go" "$stop" >"$work/prog.out" 2>&1 &
pid=$!
trap 'touch "$stop"; kill "$pid" 2>/dev/null || true' EXIT
for ((i = 0; i < 200; i++)); do
	grep -q '^running' "$work/prog.out" && break
	kill -0 "$pid" 2>/dev/null || { echo "step failed: the program ended at start" >&2; exit 1; }
	sleep 0.1
done
grep -q '^running' "$work/prog.out" || { echo "step failed: the program never started" >&2; exit 1; }
echo "program: pid $pid, one stream made before the start"

rc=0
timeout 300 "$rocattach" --late-start -p "$pid" --hip-trace --kernel-trace \
	--output-format csv --output-directory "$out" >"$work/rocattach.out" 2>"$work/rocattach.err" ||
	rc=$?
echo "rocattach --late-start: exit $rc (output in $work/rocattach.out and .err)"
[ "$rc" = 0 ] || { tail -5 "$work/rocattach.err" >&2; exit 1; }

touch "$go"
for ((i = 0; i < 100; i++)); do
	grep -q '^stream-after created' "$work/prog.out" && break
	sleep 0.1
done
sleep 3
touch "$stop"
rc=0
wait "$pid" || rc=$?
trap - EXIT
echo "program: exit $rc"

count() { # count GLOB PATTERN: rows of the CSV files matching GLOB that hold PATTERN
	local n=0 f
	while IFS= read -r f; do
		n=$((n + $(grep -c -- "$2" "$f" || true)))
	done < <(find "$out" -name "$1" 2>/dev/null)
	echo "$n"
}
rows() { # rows GLOB: data rows (no header) of the CSV files matching GLOB
	local n=0 f
	while IFS= read -r f; do
		n=$((n + $(wc -l <"$f") - 1))
	done < <(find "$out" -name "$1" 2>/dev/null)
	echo "$n"
}
say() { # say WHAT N
	if [ "$2" -gt 0 ]; then echo "arrived: $1 ($2)"; else echo "missing: $1"; fi
}

hip=$(rows '*hip_api_trace.csv')
kernels=$(rows '*kernel_trace.csv')
before=$(count '*kernel_trace.csv' kernel_before)
after=$(count '*kernel_trace.csv' kernel_after)
say "HIP API records" "$hip"
say "HIP API records of hipStreamCreate (the stream made after the start)" \
	"$(count '*hip_api_trace.csv' hipStreamCreate)"
say "kernel records in all" "$kernels"
if [ "$kernels" -gt 0 ] && [ $((before + after)) = 0 ]; then
	echo "unknown: which stream each kernel record came from (no kernel names: the code" \
		"was loaded before the start)"
else
	say "kernel_after records (a stream made after the start)" "$after"
	what="kernel_before records (a stream made before the start; expected only with the"
	say "$what inline queue interposition)" "$before"
fi
echo "kernel records without either name: $((kernels - before - after))"
echo "files: $out"
