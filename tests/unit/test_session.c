/* SPDX-License-Identifier: MIT */
/*
 * The public API's options, libbpf's way: a larger (newer) rocattach_opts_t
 * is refused when a byte beyond ours is set, taken when they are all zero; a
 * smaller (older) one is read as far as its size goes, the rest as zero.
 * The pid is a reaped child's: a call that gets past the options finds no
 * process, so nothing is ever attached.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <rocattach/rocattach.h>

/* rocattach_opts_t as a newer header might declare it. */
struct newer_opts {
	rocattach_opts_t o;
	uint64_t unknown;
};

static pid_t gone;

static int setup(void **state)
{
	int status;

	(void)state;
	rocattach_set_log_callback(NULL, NULL); /* the failures are expected */
	gone = fork();
	if (gone == 0)
		_exit(0);
	return gone > 0 && waitpid(gone, &status, 0) == gone ? 0 : -1;
}

static void newer(struct newer_opts *n, uint64_t unknown)
{
	memset(n, 0, sizeof(*n));
	n->o.size = sizeof(*n);
	n->unknown = unknown;
}

/* The end of the last field this library knows: where the check begins. */
#define KNOWN (offsetof(rocattach_opts_t, planned_stop_ns) + sizeof(uint64_t))

static void assert_refused(rocattach_status_t st, const rocattach_report_t *rep)
{
	char want[128];

	snprintf(want, sizeof(want),
		 "rocattach_opts_t of %zu bytes, this library knows its first %zu: byte %zu is set",
		 sizeof(struct newer_opts), KNOWN, KNOWN);
	assert_int_equal(st, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_int_equal(rep->status, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_non_null(strstr(rep->message, want));
	assert_non_null(strstr(rocattach_last_error(), "an option this library does not know"));
}

static void test_rocattach_attach_ex_newer_opts_with_unknown_option_refused(void **state)
{
	rocattach_report_t rep = {.size = sizeof(rep)};
	struct newer_opts n;

	(void)state;
	newer(&n, 1);
	assert_refused(rocattach_attach_ex(gone, &n.o, &rep), &rep);
	assert_refused(rocattach_attach_tree_ex(gone, &n.o, &rep), &rep);
	assert_refused(rocattach_detach_ex(gone, &n.o, &rep), &rep);
}

static void test_rocattach_attach_ex_newer_opts_all_zero_taken(void **state)
{
	rocattach_report_t rep = {.size = sizeof(rep)};
	struct newer_opts n;

	(void)state;
	newer(&n, 0);
	assert_int_equal(rocattach_attach_ex(gone, &n.o, &rep),
			 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	assert_non_null(strstr(rep.message, "does not exist"));
	assert_int_equal(rocattach_attach_tree_ex(gone, &n.o, &rep),
			 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	assert_int_equal(rocattach_detach_ex(gone, &n.o, &rep),
			 ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_non_null(strstr(rep.message, "has no attach session"));
}

/*
 * A newer header that adds a 32-bit field: it ends before the struct's
 * alignment, so the compiler pads after it. Every byte from the end of the
 * last field this library knows counts, that padding too: a byte set there
 * is refused, whatever the field holds, and named.
 */
struct newer_opts32 {
	rocattach_opts_t o;
	uint32_t unknown;
};

static void test_rocattach_opts_checked_from_last_field_end(void **state)
{
	rocattach_report_t rep = {.size = sizeof(rep)};
	struct newer_opts32 n;
	char want[128];

	(void)state;
	_Static_assert(KNOWN == sizeof(rocattach_opts_t), "no padding after the last field");
	assert_true(sizeof(n) > offsetof(struct newer_opts32, unknown) + sizeof(n.unknown));
	memset(&n, 0, sizeof(n));
	n.o.size = sizeof(n);
	((unsigned char *)&n)[sizeof(n) - 1] = 1; /* padding after unknown */
	assert_int_equal(rocattach_attach_ex(gone, &n.o, &rep),
			 ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	snprintf(want, sizeof(want), "byte %zu is set, an option this library does not know",
		 sizeof(n) - 1);
	assert_non_null(strstr(rep.message, want));
	memset(&n, 0, sizeof(n));
	n.o.size = sizeof(n);
	n.unknown = 7;
	assert_int_equal(rocattach_detach_ex(gone, &n.o, &rep),
			 ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	snprintf(want, sizeof(want), "byte %zu is set", KNOWN);
	assert_non_null(strstr(rep.message, want));
	assert_non_null(strstr(rep.message, "built against a newer rocattach.h?"));
}

/* An older struct ends before stop_ns: what lies beyond it is not read. */
static void test_rocattach_detach_ex_older_opts_rest_reads_zero(void **state)
{
	rocattach_report_t rep = {.size = sizeof(rep)};
	rocattach_opts_t o;

	(void)state;
	memset(&o, 0, sizeof(o));
	o.size = offsetof(rocattach_opts_t, stop_ns);
	o.stop_ns = UINT64_MAX; /* read, it would be refused as too far ahead */
	assert_int_equal(rocattach_detach_ex(gone, &o, &rep),
			 ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_non_null(strstr(rep.message, "has no attach session"));
	o.size = sizeof(o);
	assert_int_equal(rocattach_detach_ex(gone, &o, &rep),
			 ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT);
	assert_non_null(strstr(rep.message, "stop time is"));
}

/*
 * rocattach_report_t as the first header declared it (up to message), and as
 * one release later (up to call_end_ns), each followed by a canary: the
 * library writes the fields the caller's size covers, never size itself,
 * and nothing past the end. The same struct reused keeps working.
 */
/* The first rocattach_report_t, as its header declared it. */
struct report_v1 {
	size_t size;
	rocattach_status_t status;
	int agent_status;
	int tid;
	uint64_t step_ns[ROCATTACH_STEP_COUNT];
	uint64_t start_ns, end_ns;
	uint64_t tool_ns;
	char message[ROCATTACH_MESSAGE_MAX];
};
_Static_assert(sizeof(struct report_v1) == offsetof(rocattach_report_t, target_side),
	       "the first report is a prefix of today's");

/* The one before the flags, the signal and the tool outcomes. */
struct report_v2 {
	struct report_v1 v1;
	int target_side;
	int tool_ns_bound;
	uint64_t call_start_ns, call_end_ns;
};
_Static_assert(sizeof(struct report_v2) == offsetof(rocattach_report_t, flags),
	       "the second report is a prefix of today's");

/* Twice into the same struct, each time with a canary right after it. */
static void check_old_report(void *rep, struct report_v1 *v1, size_t size, unsigned char *canary)
{
	for (int round = 0; round < 2; round++) {
		memset(canary, 0xa5, 64);
		assert_int_equal(rocattach_attach_ex(gone, NULL, rep),
				 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
		assert_int_equal(v1->size, size);
		assert_int_equal(v1->status, ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
		assert_non_null(strstr(v1->message, "does not exist"));
		for (int i = 0; i < 64; i++)
			assert_int_equal(canary[i], 0xa5);
	}
}

static void test_rocattach_report_older_size_honoured(void **state)
{
	struct {
		struct report_v1 r;
		unsigned char canary[64];
	} a;
	struct {
		struct report_v2 r;
		unsigned char canary[64];
	} b;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.r.size = sizeof(a.r);
	check_old_report(&a.r, &a.r, sizeof(a.r), a.canary);
	memset(&b, 0, sizeof(b));
	b.r.v1.size = sizeof(b.r);
	check_old_report(&b.r, &b.r.v1, sizeof(b.r), b.canary);
	assert_int_equal(b.r.target_side, ROCATTACH_SIDE_UNKNOWN);
}

/*
 * The report before self_detach_ns ended with tool_outcome, then padding: a
 * caller of that size gets tool_outcome and nothing after it.
 */
static void test_rocattach_report_before_self_detach_ns(void **state)
{
	struct {
		rocattach_report_t r;
		unsigned char canary[8];
	} a;
	size_t size = offsetof(rocattach_report_t, self_detach_ns);

	(void)state;
	memset(&a, 0x5a, sizeof(a));
	a.r.size = size;
	assert_int_equal(rocattach_attach_ex(gone, NULL, &a.r),
			 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	assert_int_equal(a.r.size, size);
	assert_int_equal(a.r.tool_count, 0);
	assert_true(a.r.self_detach_ns == 0x5a5a5a5a5a5a5a5aull);
	a.r.size = sizeof(a.r);
	assert_int_equal(rocattach_attach_ex(gone, NULL, &a.r),
			 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	assert_true(a.r.self_detach_ns == 0);
	for (size_t i = 0; i < sizeof(a.canary); i++)
		assert_int_equal(a.canary[i], 0x5a);
}

/* A size that ends inside a field gets that field not at all, and size is kept. */
static void test_rocattach_report_partial_field_not_written(void **state)
{
	rocattach_report_t rep;
	size_t size = offsetof(rocattach_report_t, call_start_ns) + 4;

	(void)state;
	memset(&rep, 0x5a, sizeof(rep));
	rep.size = size;
	assert_int_equal(rocattach_attach_ex(gone, NULL, &rep),
			 ROCATTACH_STATUS_ERROR_PTRACE_PROCESS_NOT_FOUND);
	assert_int_equal(rep.size, size);
	assert_int_equal(rep.tool_ns_bound, 0);
	assert_true(rep.call_start_ns == 0x5a5a5a5a5a5a5a5aull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rocattach_attach_ex_newer_opts_with_unknown_option_refused),
	    cmocka_unit_test(test_rocattach_attach_ex_newer_opts_all_zero_taken),
	    cmocka_unit_test(test_rocattach_opts_checked_from_last_field_end),
	    cmocka_unit_test(test_rocattach_detach_ex_older_opts_rest_reads_zero),
	    cmocka_unit_test(test_rocattach_report_before_self_detach_ns),
	    cmocka_unit_test(test_rocattach_report_older_size_honoured),
	    cmocka_unit_test(test_rocattach_report_partial_field_not_written),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
