# Known shares of CPU time in two Python functions, for rocattach-mpi --sample
# (tests/mpi/test_python.sh): in each 17 ms of the main thread's CPU time, 12.75 ms in
# busy_a (75 %) and 4.25 ms in busy_b (25 %); 17 ms is no multiple of a 99 Hz
# sampling period. Prints "ready"; stops on stdin's end.
import os
import sys
import threading
import time


def busy_a(until):
    while time.thread_time() < until:
        pass


def busy_b(until):
    while time.thread_time() < until:
        pass


def stop_on_eof():
    sys.stdin.read()
    os._exit(0)


threading.Thread(target=stop_on_eof, daemon=True).start()
print("ready", flush=True)
while True:
    t = time.thread_time()
    busy_a(t + 0.01275)
    busy_b(t + 0.017)
