# A Python target for the stack tool's Python frames (tests/python/test_python.sh).
# Threads, each in a known function at a known line (the "# LINE:" marks):
#   stuck_here: the main thread spins in pure Python;
#   sleeper: in time.sleep, the GIL released;
#   spinner-1 and spinner-2: pure Python, each waiting on the GIL much of the time;
#   numpy: in numpy's C code (a matrix product, the GIL released), if numpy is there.
# Prints "ready" once every thread runs; "threads N" adds N sleeping threads and says
# "added N" when they run. Stops on stdin's end.
import sys
import threading
import time

go = threading.Event()


def sleeper():
    while True:
        time.sleep(0.05)  # LINE:sleeper


def spin_a(n):
    x = 0
    for i in range(n):  # LINE:spin_for
        x += i  # LINE:spin_a
    return x


def spinner():
    while True:
        spin_a(100000)


def numpy_work():
    import numpy

    a = numpy.ones((300, 300))
    while True:
        a.dot(a)  # LINE:numpy_work


def stuck_here():
    x = 0
    while True:  # LINE:stuck_while
        x += 1  # LINE:stuck_here


def idle(stop):
    stop.wait()  # LINE:idle


def main():
    kinds = [("sleeper", sleeper), ("spinner-1", spinner), ("spinner-2", spinner)]
    try:
        import numpy  # noqa: F401

        kinds.append(("numpy", numpy_work))
    except ImportError:
        pass
    for name, fn in kinds:
        threading.Thread(target=fn, name=name, daemon=True).start()
    stop = threading.Event()

    def commands():
        for line in sys.stdin:
            if line.startswith("threads "):
                n = int(line.split()[1])
                for _ in range(n):
                    threading.Thread(target=idle, args=(stop,), daemon=True).start()
                print("added %d" % n, flush=True)
        stop.set()
        import os

        os._exit(0)

    threading.Thread(target=commands, name="commands", daemon=True).start()
    print("ready", flush=True)
    stuck_here()


main()
