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

static void assert_refused(rocattach_status_t st, const rocattach_report_t *rep)
{
	char want[96];

	snprintf(want, sizeof(want), "rocattach_opts_t of %zu bytes, this library's has %zu",
		 sizeof(struct newer_opts), sizeof(rocattach_opts_t));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rocattach_attach_ex_newer_opts_with_unknown_option_refused),
	    cmocka_unit_test(test_rocattach_attach_ex_newer_opts_all_zero_taken),
	    cmocka_unit_test(test_rocattach_detach_ex_older_opts_rest_reads_zero),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
