/* SPDX-License-Identifier: MIT */
/*
 * Python frames (docs/stacks.md): the 3.11 and 3.12 layouts pinned (the
 * numbers worked out from CPython v3.11.2's and v3.12.1's headers,
 * tools/stacks/stacks_pylayout.h;
 * tests/python/py_layout_check.py checks them against a running
 * interpreter), the location table decoded as CPython's
 * InternalDocs/code_objects.md ("Format of the locations table") describes
 * it, and the stack file's new lines read back, by new readers and skipped
 * by the old way of reading (a file without them reads as before).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pyframes.h"
#include "stackfile.h"
#include "stacks_pylayout.h"

static void test_layout_311_pinned(void **state)
{
	const struct py_layout *l = py_layout_of(0x030b02f0);

	(void)state;
	assert_non_null(l);
	assert_ptr_equal(l, py_layout_of(0x030b07f0)); /* any 3.11.x */
	assert_null(py_layout_of(0x030a04f0));	       /* 3.10 */
	assert_null(py_layout_of(0x030d00f0));	       /* 3.13: from its _Py_DebugOffsets */
	assert_string_equal(l->name, "3.11");
	assert_int_equal(l->runtime_interp_head, 40);
	assert_int_equal(l->interp_next, 0);
	assert_int_equal(l->interp_threads_head, 16);
	assert_int_equal(l->tstate_next, 8);
	assert_int_equal(l->tstate_cframe, 56);
	assert_int_equal(l->tstate_native_id, 160);
	assert_int_equal(l->cframe_current, 8);
	assert_int_equal(l->frame_code, 32);
	assert_int_equal(l->frame_previous, 48);
	assert_int_equal(l->frame_instr, 56);
	assert_int_equal(l->frame_is_entry, 68);
	assert_int_equal(l->owner_cstack, 0); /* runs marked by is_entry */
	assert_true(l->frame_size > l->frame_is_entry && l->frame_size <= 128);
	assert_int_equal(l->ob_type, 8);
	assert_int_equal(l->code_firstlineno, 72);
	assert_int_equal(l->code_filename, 112);
	assert_int_equal(l->code_name, 120);
	assert_int_equal(l->code_qualname, 128);
	assert_int_equal(l->code_linetable, 136);
	assert_int_equal(l->code_adaptive, 184);
	assert_int_equal(l->bytes_size, 16);
	assert_int_equal(l->bytes_data, 32);
	assert_int_equal(l->str_length, 16);
	assert_int_equal(l->str_state, 32);
	assert_int_equal(l->str_ascii_data, 48);
	assert_int_equal(l->str_compact_data, 72);
	assert_ptr_equal(py_layout_named("3.11"), l);
}

static void test_layout_312_pinned(void **state)
{
	const struct py_layout *l = py_layout_of(0x030c01f0);

	(void)state;
	assert_non_null(l);
	assert_ptr_equal(l, py_layout_of(0x030c08f0)); /* any 3.12.x */
	assert_ptr_equal(py_layout_named("3.12"), l);
	assert_null(py_layout_named("3.1"));
	assert_null(py_layout_named("3.120"));
	assert_string_equal(l->name, "3.12");
	assert_int_equal(l->runtime_interp_head, 40);
	assert_int_equal(l->interp_next, 0);
	assert_int_equal(l->interp_threads_head, 72);
	assert_int_equal(l->tstate_next, 8);
	assert_int_equal(l->tstate_cframe, 56);
	assert_int_equal(l->tstate_native_id, 144);
	assert_int_equal(l->cframe_current, 0);
	assert_int_equal(l->frame_code, 0);
	assert_int_equal(l->frame_previous, 8);
	assert_int_equal(l->frame_instr, 56);
	assert_int_equal(l->frame_owner, 70);
	assert_int_equal(l->owner_cstack, 3); /* FRAME_OWNED_BY_CSTACK */
	assert_true(l->frame_size > l->frame_owner && l->frame_size <= 128);
	assert_int_equal(l->ob_type, 8);
	assert_int_equal(l->code_firstlineno, 68);
	assert_int_equal(l->code_filename, 112);
	assert_int_equal(l->code_name, 120);
	assert_int_equal(l->code_qualname, 128);
	assert_int_equal(l->code_linetable, 136);
	assert_int_equal(l->code_adaptive, 192);
	assert_int_equal(l->bytes_size, 16);
	assert_int_equal(l->bytes_data, 32);
	assert_int_equal(l->str_length, 16);
	assert_int_equal(l->str_state, 32);
	assert_int_equal(l->str_ascii_data, 40);
	assert_int_equal(l->str_compact_data, 56);
}

/*
 * A 3.13 _Py_DebugOffsets built from its documented order (v3.13.0,
 * Include/internal/pycore_runtime.h), each field numbered by its place: word
 * k holds 1000 + k, so a field read from the wrong place shows. The cookie
 * is word 0. Sizes (frame, ASCII string) are set apart.
 */
static void debug_image(uint64_t *w)
{
	memcpy(&w[0], "xdebugpy", 8);
	for (unsigned k = 1; k < PY_DO_WORDS; k++)
		w[k] = 1000 + k;
	w[PY_DO_VERSION] = 0x030d00f0;
	w[PY_DO_FREE_THREADED] = 0;
	/* What the handler reads must fit its buffers: small, as a real 3.13's are. */
	w[PY_DO_TSTATE_NEXT] = 8;
	w[PY_DO_TSTATE_NATIVE_ID] = 160;
	w[PY_DO_FRAME_SIZE] = 80;
	w[PY_DO_FRAME_PREVIOUS] = 8;
	w[PY_DO_FRAME_EXECUTABLE] = 0;
	w[PY_DO_FRAME_INSTR] = 56;
	w[PY_DO_FRAME_OWNER] = 70;
}

static void test_layout_313_from_debug_offsets(void **state)
{
	uint64_t w[PY_DO_WORDS];
	struct py_layout l;

	(void)state;
	/* The places of the fields in the struct's order. */
	assert_int_equal(PY_DO_RUNTIME_INTERP_HEAD, 5);
	assert_int_equal(PY_DO_INTERP_THREADS_HEAD, 9);
	assert_int_equal(PY_DO_TSTATE_CURRENT_FRAME, 23);
	assert_int_equal(PY_DO_TSTATE_NATIVE_ID, 25);
	assert_int_equal(PY_DO_FRAME_OWNER, 33);
	assert_int_equal(PY_DO_CODE_ADAPTIVE, 43);
	assert_int_equal(PY_DO_OB_TYPE, 45);
	assert_int_equal(PY_DO_BYTES_DATA, 66);
	assert_int_equal(PY_DO_STR_ASCII_SIZE, 70);
	assert_int_equal(PY_DO_WORDS, 73);
	debug_image(w);
	assert_int_equal(py_layout_from_debug(w, &l), 0);
	assert_string_equal(l.name, "3.13");
	assert_int_equal(l.runtime_interp_head, 1005);
	assert_int_equal(l.interp_next, 1008);
	assert_int_equal(l.interp_threads_head, 1009);
	assert_int_equal(l.tstate_cframe, 0); /* current_frame is the thread state's */
	assert_int_equal(l.cframe_current, 1023);
	assert_int_equal(l.tstate_next, 8);
	assert_int_equal(l.tstate_native_id, 160);
	assert_int_equal(l.frame_code, 0);
	assert_int_equal(l.frame_previous, 8);
	assert_int_equal(l.frame_instr, 56);
	assert_int_equal(l.frame_owner, 70);
	assert_int_equal(l.owner_cstack, 3);
	assert_int_equal(l.frame_size, 80);
	assert_int_equal(l.code_filename, 1035);
	assert_int_equal(l.code_name, 1036);
	assert_int_equal(l.code_qualname, 1037);
	assert_int_equal(l.code_linetable, 1038);
	assert_int_equal(l.code_firstlineno, 1039);
	assert_int_equal(l.code_adaptive, 1043);
	assert_int_equal(l.ob_type, 1045);
	assert_int_equal(l.bytes_size, 1065);
	assert_int_equal(l.bytes_data, 1066);
	assert_int_equal(l.str_state, 1068);
	assert_int_equal(l.str_length, 1069);
	assert_int_equal(l.str_ascii_data, 1070);
	assert_int_equal(l.str_compact_data, 1086);
	/* Refused: another cookie, another version, a free-threaded build, a wild offset. */
	w[0] ^= 1;
	assert_int_equal(py_layout_from_debug(w, &l), -1);
	debug_image(w);
	w[PY_DO_VERSION] = 0x030e00f0;
	assert_int_equal(py_layout_from_debug(w, &l), -1);
	debug_image(w);
	w[PY_DO_FREE_THREADED] = 1;
	assert_int_equal(py_layout_from_debug(w, &l), -2);
	debug_image(w);
	w[PY_DO_CODE_NAME] = 1u << 20;
	assert_int_equal(py_layout_from_debug(w, &l), -3);
	debug_image(w);
	w[PY_DO_TSTATE_NATIVE_ID] = 400; /* past what the handler reads of a thread state */
	assert_int_equal(py_layout_from_debug(w, &l), -3);
	debug_image(w);
	w[PY_DO_FRAME_SIZE] = 60; /* shorter than its own owner field */
	assert_int_equal(py_layout_from_debug(w, &l), -3);
}

/*
 * Entries as the format says: a first byte 1, code (4 bits), length - 1 (3
 * bits); then the code's bytes. First line 10.
 */
static const uint8_t table[] = {
    0x81, 0x00,		    /* short form (code 0), 2 units: line 10 (units 0-1) */
    0xda, 0x05, 0x07,	    /* one-line form, code 11 (+1), 3 units: 11 (2-4) */
    0xe8, 0x03,		    /* no column (13), svarint 3 = -1, 1 unit: 10 (5) */
    0xf1, 0x4c, 0x02, 0x00, /* long form (14), svarint 140 = +70, end 0, */
    0x01, 0x02,		    /* columns 1 and 2, 2 units: 80 (6-7) */
    0xf8,		    /* no location (15), 1 unit: none (8) */
    0x80, 0x00,		    /* short form, 1 unit: still 80 (9) */
    0xe8, 0x48, 0x03,	    /* no column, varint 0x48 0x03 = 200: +100, 1 unit: 180 (10) */
};

static void test_location_table(void **state)
{
	static const int want[] = {10, 10, 11, 11, 11, 10, 80, 80, -1, 80, 180};

	(void)state;
	for (long a = 0; a < (long)(sizeof(want) / sizeof(want[0])); a++)
		assert_int_equal(ra_py_line(table, sizeof(table), 10, a), want[a]);
	assert_int_equal(ra_py_line(table, sizeof(table), 10, 11), -1); /* past the end */
	assert_int_equal(ra_py_line(table, sizeof(table), 10, -1), 10); /* a new frame */
	assert_int_equal(ra_py_line(table, 0, 10, 0), -1);
	/* Cut short in a varint: no line, no read past the end. */
	assert_int_equal(ra_py_line(table, sizeof(table) - 1, 10, 10), 80);
	/* Not an entry's first byte. */
	assert_int_equal(ra_py_line((const uint8_t *)"\x01", 1, 10, 0), -1);
}

static void write_text(char *path, const char *text)
{
	int fd;

	strcpy(path, "/tmp/ra_pylayout_test.XXXXXX");
	fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

#define HEAD "rocattach-stacks 1\npid 42\nhost h\nsignal 34 SIGRTMIN+0\nhz 0\n"

static void test_stackfile_python_lines(void **state)
{
	char path[32], err[256];
	struct ra_stackfile f;

	(void)state;
	write_text(path, HEAD "python_version 3.11.2 3.11 95a440\n"
			      "thread 7 live - main\n"
			      "snapshot 7 ok 5 4f94ee 52f66d 5236bb\n"
			      "pyframes 3 1:7f00:7f20 1:1391dbb0:1391de22 -:7f30:7f40 ...\n"
			      "snapshot 8 ok 5 4f94ee\n"
			      "maps\nend\n");
	assert_int_equal(ra_stackfile_read(path, &f, err, sizeof(err)), 0);
	unlink(path);
	assert_string_equal(f.py_version, "3.11.2");
	assert_string_equal(f.py_layout, "3.11");
	assert_int_equal(f.py_code_type, 0x95a440);
	assert_int_equal(f.n_stacks, 2);
	assert_int_equal(f.stacks[0].n, 3);
	assert_int_equal(f.stacks[0].n_py, 3);
	assert_true(f.stacks[0].py_truncated);
	assert_int_equal(f.stacks[0].py[0].native, 1);
	assert_int_equal(f.stacks[0].py[0].code, 0x7f00);
	assert_int_equal(f.stacks[0].py[1].instr, 0x1391de22);
	assert_int_equal(f.stacks[0].py[2].native, -1);
	assert_int_equal(f.stacks[1].n_py, 0);
	ra_stackfile_free(&f);

	write_text(path, HEAD "python_off python 3.14.0: layout not known\n"
			      "snapshot 7 ok 5 4f94ee\nmaps\nend\n");
	assert_int_equal(ra_stackfile_read(path, &f, err, sizeof(err)), 0);
	unlink(path);
	assert_string_equal(f.py_off, "python 3.14.0: layout not known");
	assert_int_equal(ra_py_open(&f, getpid()), -1); /* nothing to name */
	ra_stackfile_free(&f);

	/* A pyframes line with no stack before it, or a bad frame: refused with the line. */
	write_text(path, HEAD "pyframes 1 0:1:2\nmaps\nend\n");
	assert_int_equal(ra_stackfile_read(path, &f, err, sizeof(err)), -1);
	unlink(path);
	assert_non_null(strstr(err, ":6: bad pyframes line"));
	write_text(path, HEAD "snapshot 7 ok 5 4f94ee\npyframes 1 0:zz\nmaps\nend\n");
	assert_int_equal(ra_stackfile_read(path, &f, err, sizeof(err)), -1);
	unlink(path);
	assert_non_null(strstr(err, "bad Python frame"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_layout_311_pinned),
	    cmocka_unit_test(test_layout_312_pinned),
	    cmocka_unit_test(test_layout_313_from_debug_offsets),
	    cmocka_unit_test(test_location_table),
	    cmocka_unit_test(test_stackfile_python_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
