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
 * 3.11 and 3.12 are pinned here. 3.13 is read at attach from the
 * interpreter's own _Py_DebugOffsets (py_layout_from_debug). Older and newer
 * ones get native frames only, and the file says why (docs/stacks.md).
 */
#ifndef ROCATTACH_STACKS_PYLAYOUT_H
#define ROCATTACH_STACKS_PYLAYOUT_H

#include <stdint.h>
#include <string.h>

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

/*
 * CPython 3.13's _Py_DebugOffsets, the first member of _PyRuntime (v3.13.0,
 * Include/internal/pycore_runtime.h): cookie[8] "xdebugpy", then 64-bit
 * words: version, free_threaded; runtime_state {size, finalizing,
 * interpreters_head}; interpreter_state {size, id, next, threads_head, and
 * nine more}; thread_state {size, prev, next, interp, current_frame,
 * thread_id, native_thread_id, datastack_chunk, status}; interpreter_frame
 * {size, previous, executable, instr_ptr, localsplus, owner}; code_object
 * {size, filename, name, qualname, linetable, firstlineno, argcount,
 * localsplusnames, localspluskinds, co_code_adaptive}; pyobject {size,
 * ob_type}; type_object (4), tuple_object (3), list_object (3), dict_object
 * (3), float_object (2), long_object (3); bytes_object {size, ob_size,
 * ob_sval}; unicode_object {size, state, length, asciiobject_size}; gc (2).
 * The word index of each field used, the cookie being word 0. The struct's
 * own order changes between versions: only 3.13's is known.
 */
enum {
	PY_DO_VERSION = 1,
	PY_DO_FREE_THREADED = 2,
	PY_DO_RUNTIME_INTERP_HEAD = 5,
	PY_DO_INTERP_NEXT = 8,
	PY_DO_INTERP_THREADS_HEAD = 9,
	PY_DO_TSTATE_NEXT = 21,
	PY_DO_TSTATE_CURRENT_FRAME = 23,
	PY_DO_TSTATE_NATIVE_ID = 25,
	PY_DO_FRAME_SIZE = 28,
	PY_DO_FRAME_PREVIOUS = 29,
	PY_DO_FRAME_EXECUTABLE = 30,
	PY_DO_FRAME_INSTR = 31,
	PY_DO_FRAME_OWNER = 33,
	PY_DO_CODE_FILENAME = 35,
	PY_DO_CODE_NAME = 36,
	PY_DO_CODE_QUALNAME = 37,
	PY_DO_CODE_LINETABLE = 38,
	PY_DO_CODE_FIRSTLINENO = 39,
	PY_DO_CODE_ADAPTIVE = 43,
	PY_DO_OB_TYPE = 45,
	PY_DO_BYTES_SIZE = 65,
	PY_DO_BYTES_DATA = 66,
	PY_DO_STR_STATE = 68,
	PY_DO_STR_LENGTH = 69,
	PY_DO_STR_ASCII_SIZE = 70,
	PY_DO_WORDS = 73, /* the struct's size in words */
};

/* FRAME_OWNED_BY_CSTACK in v3.13.0's Include/internal/pycore_frame.h (not in the offsets). */
#define PY_313_OWNER_CSTACK 3

/*
 * l filled from the words of a 3.13 _Py_DebugOffsets. 0; -1 not a 3.13 one
 * (cookie, version); -2 a free-threaded build (other frames); -3 an offset
 * out of range (not what it says it is).
 */
static inline int py_layout_from_debug(const uint64_t *w, struct py_layout *l)
{
	static const unsigned char used[] = {PY_DO_RUNTIME_INTERP_HEAD,
					     PY_DO_INTERP_NEXT,
					     PY_DO_INTERP_THREADS_HEAD,
					     PY_DO_TSTATE_NEXT,
					     PY_DO_TSTATE_CURRENT_FRAME,
					     PY_DO_TSTATE_NATIVE_ID,
					     PY_DO_FRAME_PREVIOUS,
					     PY_DO_FRAME_EXECUTABLE,
					     PY_DO_FRAME_INSTR,
					     PY_DO_FRAME_OWNER,
					     PY_DO_CODE_FILENAME,
					     PY_DO_CODE_NAME,
					     PY_DO_CODE_QUALNAME,
					     PY_DO_CODE_LINETABLE,
					     PY_DO_CODE_FIRSTLINENO,
					     PY_DO_CODE_ADAPTIVE,
					     PY_DO_OB_TYPE,
					     PY_DO_BYTES_SIZE,
					     PY_DO_BYTES_DATA,
					     PY_DO_STR_STATE,
					     PY_DO_STR_LENGTH,
					     PY_DO_STR_ASCII_SIZE};

	if (memcmp(w, "xdebugpy", 8) || (w[PY_DO_VERSION] >> 16) != 0x030d)
		return -1;
	if (w[PY_DO_FREE_THREADED])
		return -2;
	for (unsigned i = 0; i < sizeof(used); i++)
		if (w[used[i]] > 0xfff8) /* kept as uint16_t */
			return -3;
	/* The handler reads at most 256 bytes of a thread state and 128 of a frame. */
	if (w[PY_DO_TSTATE_NATIVE_ID] > 248 || w[PY_DO_TSTATE_NEXT] > 248 ||
	    w[PY_DO_FRAME_OWNER] >= 128 || w[PY_DO_FRAME_INSTR] > 120 ||
	    w[PY_DO_FRAME_PREVIOUS] > 120 || w[PY_DO_FRAME_EXECUTABLE] > 120)
		return -3;
	memset(l, 0, sizeof(*l));
	l->name = "3.13";
	l->hex = 0x030d;
	l->runtime_interp_head = (uint16_t)w[PY_DO_RUNTIME_INTERP_HEAD];
	l->interp_next = (uint16_t)w[PY_DO_INTERP_NEXT];
	l->interp_threads_head = (uint16_t)w[PY_DO_INTERP_THREADS_HEAD];
	l->tstate_next = (uint16_t)w[PY_DO_TSTATE_NEXT];
	l->tstate_cframe = 0; /* current_frame is the thread state's own */
	l->cframe_current = (uint16_t)w[PY_DO_TSTATE_CURRENT_FRAME];
	l->tstate_native_id = (uint16_t)w[PY_DO_TSTATE_NATIVE_ID];
	l->frame_code = (uint16_t)w[PY_DO_FRAME_EXECUTABLE];
	l->frame_previous = (uint16_t)w[PY_DO_FRAME_PREVIOUS];
	l->frame_instr = (uint16_t)w[PY_DO_FRAME_INSTR];
	l->frame_owner = (uint16_t)w[PY_DO_FRAME_OWNER];
	l->owner_cstack = PY_313_OWNER_CSTACK;
	l->frame_size = (uint16_t)(w[PY_DO_FRAME_SIZE] < 128 ? w[PY_DO_FRAME_SIZE] : 128);
	if (l->frame_size <= l->frame_owner || l->frame_size < l->frame_instr + 8)
		return -3;
	l->ob_type = (uint16_t)w[PY_DO_OB_TYPE];
	l->code_firstlineno = (uint16_t)w[PY_DO_CODE_FIRSTLINENO];
	l->code_filename = (uint16_t)w[PY_DO_CODE_FILENAME];
	l->code_name = (uint16_t)w[PY_DO_CODE_NAME];
	l->code_qualname = (uint16_t)w[PY_DO_CODE_QUALNAME];
	l->code_linetable = (uint16_t)w[PY_DO_CODE_LINETABLE];
	l->code_adaptive = (uint16_t)w[PY_DO_CODE_ADAPTIVE];
	l->bytes_size = (uint16_t)w[PY_DO_BYTES_SIZE];
	l->bytes_data = (uint16_t)w[PY_DO_BYTES_DATA];
	l->str_length = (uint16_t)w[PY_DO_STR_LENGTH];
	l->str_state = (uint16_t)w[PY_DO_STR_STATE];
	l->str_ascii_data = (uint16_t)w[PY_DO_STR_ASCII_SIZE];
	/* PyCompactUnicodeObject: PyASCIIObject, then utf8_length and utf8 (v3.13.0,
	 * Include/cpython/unicodeobject.h). */
	l->str_compact_data = (uint16_t)(w[PY_DO_STR_ASCII_SIZE] + 16);
	return 0;
}
