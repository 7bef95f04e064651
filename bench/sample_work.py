#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The Python twin of sample_work.c, for bench/sample_cost.sh: a fixed amount of
# pure-Python work split over THREADS threads (they share the interpreter's lock,
# so about one CPU in all).
#
#   python3 sample_work.py THREADS UNITS
#
# It prints "ready" with every thread waiting; on a line on standard input they
# go, each doing UNITS / THREADS units (a loop under a few nested Python calls);
# then "done WALL_NS CPU_NS" (monotonic clock, and the process's CPU time), and it
# exits at the end of its standard input.
import sys
import threading
import time

UNIT_ITERS = 1000  # one unit: about 0.1 ms of CPU here
DEPTH = 6


def chain(h, n):
    for i in range(n):
        h = ((h ^ i) * 1099511628211) & 0xFFFFFFFF
    return h


def nest(h, depth):
    if depth == 0:
        return chain(h, UNIT_ITERS)
    return nest(h + depth, depth - 1) + 0


def worker(seed, units, go, out):
    go.wait()
    h = seed
    for _ in range(units):
        h = nest(h, DEPTH)
    out.append(h)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: sample_work.py THREADS UNITS\n")
        return 2
    n, units = int(sys.argv[1]), int(sys.argv[2])
    if n < 1 or units < n:
        sys.stderr.write("sample_work.py: THREADS >= 1 and UNITS >= THREADS\n")
        return 2
    go, out = threading.Event(), []
    threads = [threading.Thread(target=worker, args=(i + 1, units // n, go, out))
               for i in range(n)]
    for t in threads:
        t.start()
    print("ready", flush=True)
    if not sys.stdin.readline():
        return 1
    w0, c0 = time.monotonic_ns(), time.process_time_ns()
    go.set()
    for t in threads:
        t.join()
    print("done %d %d" % (time.monotonic_ns() - w0, time.process_time_ns() - c0), flush=True)
    for _ in sys.stdin:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
