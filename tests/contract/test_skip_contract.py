#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The skip contract (tests/skip.h) for every registered test: a test that can exit 77
# must carry SKIP_RETURN_CODE 77, or CTest counts its skip as a failure (and a test
# printing SKIP but exiting 0 would pass without checking).
#
#   test_skip_contract.py BUILD_DIR
#
# A test can skip when its program holds skip.h's "skipped: exit 77" (ra_test_exit), or
# when a script it runs (or the lib.sh beside it, which it sources) says "exit 77"
# (this file is not read: it only says it).
# First a self-check: a made-up test that can skip and lacks the property must be found.
import json
import os
import re
import subprocess
import sys

SKIP_BIN = b"skipped: exit 77"
SKIP_CODE = 77
SKIP_SH = re.compile(r"\bexit %d\b" % SKIP_CODE)


def script_can_skip(path):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return False
    if SKIP_SH.search(text):
        return True
    lib = os.path.join(os.path.dirname(path), "lib.sh")
    if "lib.sh" in text and os.path.basename(path) != "lib.sh":
        return script_can_skip(lib)
    return False


def can_skip(command):
    for arg in command:
        if not os.path.isfile(arg) or os.path.samefile(arg, __file__):
            continue
        if arg.endswith((".sh", ".py")):
            if script_can_skip(arg):
                return True
        elif os.access(arg, os.X_OK):
            with open(arg, "rb") as f:
                if SKIP_BIN in f.read():
                    return True
    return False


def skip_code(test):
    for p in test.get("properties", []):
        if p["name"] == "SKIP_RETURN_CODE":
            return p["value"]
    return None


def broken(tests):
    """The names of the tests that can skip without SKIP_RETURN_CODE 77."""
    return [t["name"] for t in tests if can_skip(t.get("command", [])) and skip_code(t) != 77]


def self_check(tmp):
    script = os.path.join(tmp, "skips.sh")
    with open(script, "w") as f:
        f.write('#!/bin/sh\necho "SKIP: nothing here"\nexit %d\n' % SKIP_CODE)
    made_up = [
        {"name": "x.without", "command": ["flock", "/tmp/x", script], "properties": []},
        {"name": "x.with", "command": [script],
         "properties": [{"name": "SKIP_RETURN_CODE", "value": 77}]},
    ]
    return broken(made_up) == ["x.without"]


def main():
    if len(sys.argv) != 2:
        print("usage: test_skip_contract.py BUILD_DIR", file=sys.stderr)
        return 2
    build = sys.argv[1]
    tmp = os.path.join(build, "tests", "skip-contract")
    os.makedirs(tmp, exist_ok=True)
    if not self_check(tmp):
        print("FAIL: the self-check did not find a test that skips without its code")
        return 1
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                         capture_output=True).stdout
    tests = json.loads(out)["tests"]
    checked = sum(1 for t in tests if can_skip(t.get("command", [])))
    bad = broken(tests)
    for name in bad:
        print(f"FAIL: {name} can exit 77 but has no SKIP_RETURN_CODE 77: add it in "
              "tests/CMakeLists.txt (tests/skip.h)")
    print(f"skip contract: {len(tests)} tests, {checked} can skip, {len(bad)} without "
          "SKIP_RETURN_CODE 77")
    if checked == 0:
        print("FAIL: no test found that can skip: the search is broken")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
