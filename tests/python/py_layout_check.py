# The pinned CPython layout (tools/stacks/stacks_pylayout.h, printed by
# `ra_stacks_print --py-layout`) checked against the interpreter that runs this:
# ctypes reads the interpreter's own runtime, thread state, frames, code objects,
# bytes and str objects at those offsets and compares with what Python says.
# usage: python3 py_layout_check.py LAYOUT_FILE (`ra_stacks_print --py-layout 3.11`), or
# --print RA_STACKS_PRINT (3.13: the layout as the node reads it from this process); exit 0 all match, 1 a mismatch,
# 77 the interpreter is not the layout's version (tests/skip.h's contract).
import ctypes
import sys
import threading
import types

if sys.argv[1] == "--print":  # 3.13: the node's reading of this process's _Py_DebugOffsets
    import os
    import subprocess

    rt = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    out = subprocess.run([sys.argv[2], "--py-layout", "%d.%d" % sys.version_info[:2],
                          str(os.getpid()), "%x" % rt], capture_output=True, text=True)
    if out.returncode:
        print("FAIL: %s --py-layout: %s" % (sys.argv[2], out.stderr.strip()))
        sys.exit(1)
    L = dict(line.split() for line in out.stdout.splitlines())
else:
    L = dict(line.split() for line in open(sys.argv[1]))
if "%d.%d" % sys.version_info[:2] != L.pop("version"):
    print("skip: this interpreter is %d.%d, the layout is another" % sys.version_info[:2])
    sys.exit(77)
O = {k: int(v) for k, v in L.items()}
bad = 0


def check(name, got, want):
    global bad
    if got == want:
        print("ok: %s" % name)
    else:
        bad += 1
        print("FAIL: %s: %r, want %r" % (name, got, want))


def word(a):
    return ctypes.c_uint64.from_address(a).value


def i32(a):
    return ctypes.c_int32.from_address(a).value


get = ctypes.pythonapi.PyThreadState_Get
get.restype = ctypes.c_void_p
me = get()
runtime = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
interp = word(runtime + O["runtime_interp_head"])
t, found = word(interp + O["interp_threads_head"]), False
while t and not found:
    found = t == me
    t = word(t + O["tstate_next"])
check("this thread's state is in the interpreter's list", found, True)
check("native_thread_id", word(me + O["tstate_native_id"]), threading.get_native_id())


# Reads with no Python frame of their own (a Python helper would be the current frame).
U = ctypes.c_uint64.from_address


def line_of(code, instr):
    """The line of an instruction pointer of code, from the code's own co_lines()."""
    unit = (instr - (id(code) + O["code_adaptive"])) // 2
    for start, end, line in code.co_lines():
        if start <= 2 * unit < end:
            return line
    return None


def inner():
    cf = U(me + O["tstate_cframe"]).value if O["tstate_cframe"] else me
    f = U(cf + O["cframe_current"]).value
    ip = U(f + O["frame_instr"]).value; here = sys._getframe().f_lineno  # noqa: E702
    check("frame: f_code", word(f + O["frame_code"]), id(sys._getframe().f_code))
    check("frame: its line, from prev_instr", line_of(inner.__code__, ip), here)
    if O["owner_cstack"]:  # 3.12: runs of the eval loop marked by C-stack frames
        check("frame: not a C-stack frame", ctypes.c_char.from_address(f + O["frame_owner"]).value,
              b"\x00")
    else:
        check("frame: not an entry",
              ctypes.c_bool.from_address(f + O["frame_is_entry"]).value, False)
    prev = word(f + O["frame_previous"])
    check("frame: previous is the caller's", word(prev + O["frame_code"]), id(outer.__code__))
    chain = [prev]
    while word(chain[-1] + O["frame_previous"]):
        chain.append(word(chain[-1] + O["frame_previous"]))
    if O["owner_cstack"]:
        owners = [ord(ctypes.c_char.from_address(x + O["frame_owner"]).value) for x in chain]
        check("frame: the outermost is the module's run's C-stack frame, the module's next",
              (owners[-1], word(chain[-2] + O["frame_code"]) == id(MODULE_CODE)),
              (O["owner_cstack"], True))
    else:
        last = chain[-1]
        check("frame: the outermost is the module's, an entry frame",
              (word(last + O["frame_code"]) == id(MODULE_CODE),
               ctypes.c_bool.from_address(last + O["frame_is_entry"]).value), (True, True))


def outer():
    inner()


MODULE_CODE = sys._getframe().f_code
outer()
co = inner.__code__
check("code: ob_type", word(id(co) + O["ob_type"]), id(types.CodeType))
check("code: co_firstlineno", i32(id(co) + O["code_firstlineno"]), co.co_firstlineno)
check("code: co_filename", word(id(co) + O["code_filename"]), id(co.co_filename))
check("code: co_name", word(id(co) + O["code_name"]), id(co.co_name))
check("code: co_qualname", word(id(co) + O["code_qualname"]), id(co.co_qualname))
check("code: co_linetable", word(id(co) + O["code_linetable"]), id(co.co_linetable))
b = co.co_linetable
check("bytes: ob_size", word(id(b) + O["bytes_size"]), len(b))
check("bytes: ob_sval", ctypes.string_at(id(b) + O["bytes_data"], len(b)), b)
s = "stuck_here_" + str(len(b))  # a fresh compact ASCII string
state = ctypes.c_uint32.from_address(id(s) + O["str_state"]).value
check("str: length", word(id(s) + O["str_length"]), len(s))
check("str: compact, ASCII, kind 1", (state >> 5 & 1, state >> 6 & 1, state >> 2 & 7), (1, 1, 1))
check("str: text", ctypes.string_at(id(s) + O["str_ascii_data"], len(s)), s.encode())
u = "stuck_h\xe9re_" + str(len(b))  # a fresh compact Latin-1 string
state = ctypes.c_uint32.from_address(id(u) + O["str_state"]).value
check("str: Latin-1: compact, not ASCII, kind 1", (state >> 5 & 1, state >> 6 & 1, state >> 2 & 7),
      (1, 0, 1))
check("str: Latin-1 text", ctypes.string_at(id(u) + O["str_compact_data"], len(u)),
      u.encode("latin-1"))
sys.exit(1 if bad else 0)
