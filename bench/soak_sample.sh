#!/usr/bin/env bash
# Soak: sampled windows of the stack tool over a thread-churning program, 1000 by default
# (tests/stacks/test_sample_churn.sh, whose 200-window run is the CI test
# mpi.sample_churn). Each window is `rocattach-mpi --pid P --sample 499 -d 50`, by turns
# on a program on our agent's side and one on ROCm's (the double); after each, no timer
# or pending signal of the tool's, the dispositions as before, the program alive with its
# work intact. It holds /tmp/rocattach-heavy.lock for the whole run (each rocattach-mpi is
# an MPI start-up).
#
#   bench/soak_sample.sh [--windows N] [--launcher-every K] [--build-dir DIR]
#     --windows N          windows in all (default 1000)
#     --launcher-every K   every K-th window of a side by rocattach-mpi, the others by
#                          rocattach with the same tool and variables (default 1: all
#                          rocattach-mpi; each costs an MPI start-up, about 1.5 s)
# The last line is the summary: "summary: windows N run (L by rocattach-mpi), timers
# left N, pending N, dispositions changed N, target alive yes|no, bad chunks N, ...".
# Exit 0 when every window held.
set -u
cd "$(dirname "$0")/.." || exit 2
windows=1000 every=1 build=build
while [ $# -gt 0 ]; do
	case $1 in
	--windows) windows=$2 && shift ;;
	--launcher-every) every=$2 && shift ;;
	--build-dir) build=$2 && shift ;;
	*)
		echo "usage: bench/soak_sample.sh [--windows N] [--launcher-every K] [--build-dir DIR]" >&2
		exit 2
		;;
	esac
	shift
done
if [ ! -x "$build/bin/ra_stacks_churn" ] || [ ! -x "$build/bin/rocattach-mpi" ]; then
	echo "soak: $build has no ra_stacks_churn or rocattach-mpi: run ./scripts/build.sh" >&2
	exit 2
fi
echo "soak: $windows windows, every $every of a side by rocattach-mpi, $(git rev-parse --short HEAD)," \
	"load $(cut -d' ' -f1-3 /proc/loadavg)"
exec flock /tmp/rocattach-heavy.lock tests/stacks/test_sample_churn.sh "$build" "$windows" "$every"
