/* SPDX-License-Identifier: MIT */
/*
 * Where CPython keeps what the stack tool reads (in the target) and what the
 * node resolves (after the window), per interpreter version, x86_64. The
 * numbers are byte offsets worked out from CPython's headers at the tag named
 * with each field (struct order, LP64 sizes and alignment); none of CPython's
 * text is copied. tests/unit/test_stacks_pylayout.c pins them, and
 * tests/stacks/py_layout_check.py checks them against a running interpreter
 * (ctypes reads its own thread state, frames and code objects).
 *
 * 3.11 and 3.12 are known. 3.13+ (offsets read from _Py_DebugOffsets at
 * attach) is not done: such interpreters, and older ones, get native frames
 * only, and the file says why (docs/stacks.md).
 */
#ifndef ROCATTACH_STACKS_PYLAYOUT_H
#define ROCATTACH_STACKS_PYLAYOUT_H

#include <stdint.h>

struct py_layout {
	const char *name; /* "3.11": the major.minor it is for */
	uint32_t hex;	  /* PY_VERSION_HEX >> 16 of that major.minor */
	/* In the target: from _PyRuntime to this thread's frame chain. */
	uint16_t runtime_interp_head; /* _PyRuntimeState.interpreters.head */
	uint16_t interp_next;	      /* PyInterpreterState.next */
	uint16_t interp_threads_head; /* PyInterpreterState.threads.head */
	uint16_t tstate_next;	      /* PyThreadState.next */
	uint16_t tstate_cframe;	      /* PyThreadState.cframe (0: none, current_frame direct) */
	uint16_t tstate_native_id;    /* PyThreadState.native_thread_id */
	uint16_t cframe_current;      /* _PyCFrame.current_frame */
	uint16_t frame_code;	      /* _PyInterpreterFrame.f_code */
	uint16_t frame_previous;      /* _PyInterpreterFrame.previous */
	uint16_t frame_instr;	      /* _PyInterpreterFrame.prev_instr */
	uint16_t frame_is_entry;      /* 3.11: _PyInterpreterFrame.is_entry (a bool) */
	uint16_t frame_owner;	      /* 3.12: _PyInterpreterFrame.owner (a char) */
	uint8_t owner_cstack;	      /* 3.12: FRAME_OWNED_BY_CSTACK; 0: is_entry marks a run */
	uint16_t frame_size;	      /* bytes read per frame: up to and with the last used */
	/* On the node: a code object's name, file and line. */
	uint16_t ob_type;	   /* PyObject.ob_type */
	uint16_t code_firstlineno; /* PyCodeObject.co_firstlineno (int) */
	uint16_t code_filename;	   /* PyCodeObject.co_filename */
	uint16_t code_name;	   /* PyCodeObject.co_name */
	uint16_t code_qualname;	   /* PyCodeObject.co_qualname */
	uint16_t code_linetable;   /* PyCodeObject.co_linetable (bytes) */
	uint16_t code_adaptive;	   /* PyCodeObject.co_code_adaptive: instruction 0 */
	uint16_t bytes_size;	   /* PyVarObject.ob_size of a bytes object */
	uint16_t bytes_data;	   /* PyBytesObject.ob_sval */
	uint16_t str_length;	   /* PyASCIIObject.length */
	uint16_t str_state;	   /* PyASCIIObject.state (bits: kind 2-4, compact 5, ascii 6) */
	uint16_t str_ascii_data;   /* sizeof(PyASCIIObject): a compact ASCII string's text */
	uint16_t str_compact_data; /* sizeof(PyCompactUnicodeObject): a compact string's text */
};

/*
 * CPython v3.11.2 (Debian's python3.11 3.11.2-6, its /usr/include/python3.11):
 *   Include/internal/pycore_runtime.h  struct pyruntimestate: five ints, then
 *       _finalizing (8), then interpreters {mutex, head}: head at 40
 *   Include/internal/pycore_interp.h   struct _is: next at 0, threads {next_unique_id,
 *       head}: head at 16
 *   Include/cpython/pystate.h          struct _ts: next 8, cframe 56 (after interp and
 *       seven ints), native_thread_id 160 (after async_exc 144, thread_id 152);
 *       _PyCFrame: use_tracing (uint8_t), current_frame at 8
 *   Include/internal/pycore_frame.h    _PyInterpreterFrame: f_code 32 (fifth pointer),
 *       previous 48, prev_instr 56, stacktop 64 (int), is_entry 68 (bool), owner 69
 *   Include/cpython/code.h             _PyCode_DEF: PyObject_VAR_HEAD (24), three
 *       pointers, int + two shorts, eight ints: co_firstlineno 72; then co_filename
 *       112, co_name 120, co_qualname 128, co_linetable 136, co_code_adaptive 184
 *   Include/cpython/bytesobject.h      ob_shash at 24, ob_sval at 32
 *   Include/cpython/unicodeobject.h    PyASCIIObject: length 16, hash 24, state 32,
 *       wstr 40: 48 bytes; PyCompactUnicodeObject adds utf8_length, utf8, wstr_length: 72
 */
static const struct py_layout py_layout_311 = {
    .name = "3.11",
    .hex = 0x030b,
    .runtime_interp_head = 40,
    .interp_next = 0,
    .interp_threads_head = 16,
    .tstate_next = 8,
    .tstate_cframe = 56,
    .tstate_native_id = 160,
    .cframe_current = 8,
    .frame_code = 32,
    .frame_previous = 48,
    .frame_instr = 56,
    .frame_is_entry = 68,
    .frame_size = 72,
    .ob_type = 8,
    .code_firstlineno = 72,
    .code_filename = 112,
    .code_name = 120,
    .code_qualname = 128,
    .code_linetable = 136,
    .code_adaptive = 184,
    .bytes_size = 16,
    .bytes_data = 32,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_data = 48,
    .str_compact_data = 72,
};

/*
 * CPython v3.12.1 (its include/python3.12 as installed):
 *   Include/internal/pycore_runtime.h  struct pyruntimestate: as 3.11, interpreters.head 40
 *   Include/internal/pycore_interp.h   struct _is: next 0, id 8, id_refcount 16,
 *       requires_idref 24, id_mutex 32, _initialized 40, finalizing 44,
 *       monitoring_version 48, last_restart_version 56, threads {next_unique_id 64, head 72}
 *   Include/cpython/pystate.h          struct _ts: next 8, _status (4 bytes) 24, five ints
 *       and what_event 48: cframe 56; then four pointers, current_exception 96, exc_info,
 *       dict, gilstate_counter 120, async_exc 128, thread_id 136, native_thread_id 144;
 *       _PyCFrame: current_frame at 0 (use_tracing is gone)
 *   Include/internal/pycore_frame.h    _PyInterpreterFrame: f_code 0, previous 8, five
 *       pointers, prev_instr 56, stacktop 64, return_offset 68 (uint16_t), owner 70;
 *       no is_entry: each run of the eval loop pushes an entry frame whose owner is
 *       FRAME_OWNED_BY_CSTACK (3)
 *   Include/cpython/code.h             _PyCode_DEF: co_flags 48, then ten ints and
 *       co_version: co_firstlineno 68; co_filename 112, co_name 120, co_qualname 128,
 *       co_linetable 136, ..., _co_firsttraceable 176, co_extra 184, co_code_adaptive 192
 *   Include/cpython/unicodeobject.h    PyASCIIObject has no wstr: 40 bytes;
 *       PyCompactUnicodeObject adds utf8_length and utf8: 56
 */
static const struct py_layout py_layout_312 = {
    .name = "3.12",
    .hex = 0x030c,
    .runtime_interp_head = 40,
    .interp_next = 0,
    .interp_threads_head = 72,
    .tstate_next = 8,
    .tstate_cframe = 56,
    .tstate_native_id = 144,
    .cframe_current = 0,
    .frame_code = 0,
    .frame_previous = 8,
    .frame_instr = 56,
    .frame_owner = 70,
    .owner_cstack = 3,
    .frame_size = 72,
    .ob_type = 8,
    .code_firstlineno = 68,
    .code_filename = 112,
    .code_name = 120,
    .code_qualname = 128,
    .code_linetable = 136,
    .code_adaptive = 192,
    .bytes_size = 16,
    .bytes_data = 32,
    .str_length = 16,
    .str_state = 32,
    .str_ascii_data = 40,
    .str_compact_data = 56,
};

/* The layout of a version (Py_Version's major.minor), or NULL: not known. */
static inline const struct py_layout *py_layout_of(uint32_t py_version)
{
	if ((py_version >> 16) == py_layout_311.hex)
		return &py_layout_311;
	if ((py_version >> 16) == py_layout_312.hex)
		return &py_layout_312;
	return 0;
}

/* The layout named name ("3.11", as the file says), or NULL. */
static inline const struct py_layout *py_layout_named(const char *name)
{
	const struct py_layout *all[] = {&py_layout_311, &py_layout_312};

	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		const char *a = all[i]->name, *b = name;

		while (*a && *a == *b)
			a++, b++;
		if (!*a && !*b)
			return all[i];
	}
	return 0;
}

#endif
