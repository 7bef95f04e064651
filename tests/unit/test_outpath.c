/* SPDX-License-Identifier: MIT */
/* Output paths (--report, --timeline, --trace): checked before any target is touched. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/outpath.h"

static char dir[64], path[256], err[512];

static int make_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_outpath.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The check must refuse p in one line that names the option, the path and the cause. */
static void refused(const char *p, const char *cause)
{
	err[0] = '\0';
	assert_int_equal(ra_outpath_check(p, "--report", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot write --report '"));
	assert_non_null(strstr(err, p));
	assert_non_null(strstr(err, cause));
	assert_null(strchr(err, '\n'));
}

/* The test directory + suffix. */
static const char *in_dir(const char *suffix)
{
	snprintf(path, sizeof(path), "%s%s", dir, suffix);
	return path;
}

static void test_ra_outpath_check_accepts_a_new_file(void **state)
{
	(void)state;
	assert_int_equal(ra_outpath_check(NULL, "--report", err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/r.json", dir);
	assert_int_equal(ra_outpath_check(path, "--report", err, sizeof(err)), 0);
	/* An existing regular file is replaced. */
	fclose(fopen(path, "w"));
	assert_int_equal(ra_outpath_check(path, "--report", err, sizeof(err)), 0);
	/* A bare name: the current directory. */
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(ra_outpath_check("r.json", "--report", err, sizeof(err)), 0);
	assert_int_equal(chdir("/"), 0);
	if (access("/dev/shm", W_OK) == 0)
		assert_int_equal(ra_outpath_check("/dev/shm/ra.json", "--trace", err, sizeof(err)),
				 0);
}

static void test_ra_outpath_check_refuses_a_directory(void **state)
{
	(void)state;
	refused(in_dir(""), "it is a directory: name a file in it");
	refused(in_dir("/"), "it is a directory");
	refused(in_dir("/."), "it is a directory");
}

static void test_ra_outpath_check_refuses_a_missing_parent(void **state)
{
	(void)state;
	refused(in_dir("/missing/r.json"), "does not exist: create it first");
	refused(in_dir("/missing/deeper/r.json"), "does not exist");
}

static void test_ra_outpath_check_refuses_a_file_as_parent(void **state)
{
	char file[128];

	(void)state;
	snprintf(file, sizeof(file), "%s/file", dir);
	fclose(fopen(file, "w"));
	refused(in_dir("/file/r.json"), "is not a directory");
	refused(in_dir("/file/sub/r.json"), "is a file, not a directory");
}

static void test_ra_outpath_check_refuses_kernel_file_systems(void **state)
{
	char link[128];

	(void)state;
	refused("/proc/r.json", "it is in /proc");
	refused("/proc/self/r.json", "it is in /proc");
	refused("/proc/no-such-dir/r.json", "it is in /proc");
	refused("/sys/r.json", "it is in /sys");
	refused("/dev/stdout", "it is in /dev");
	refused("/dev/null", "it is in /dev");
	/* Through a symbolic link. */
	snprintf(link, sizeof(link), "%s/proc", dir);
	assert_int_equal(symlink("/proc/self", link), 0);
	refused(in_dir("/proc/r.json"), "it is in /proc");
}

static void test_ra_outpath_check_refuses_odd_names(void **state)
{
	char fifo[128];

	(void)state;
	assert_int_equal(ra_outpath_check("", "--timeline", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot write --timeline '': no file name given"));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	refused(in_dir("/fifo"), "not a regular file");
}

/*
 * A directory this process cannot write. Root may write anywhere but on a
 * read-only mount, so as root the check runs in a child as nobody.
 */
static void test_ra_outpath_check_refuses_an_unwritable_parent(void **state)
{
	int status = -1;
	pid_t pid;

	(void)state;
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(mkdir(in_dir("/ro"), 0555), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(2);
		_exit(ra_outpath_check(in_dir("/ro/r.json"), "--report", err, sizeof(err)) == -1 &&
			      strstr(err, "Permission denied: choose a directory you can write")
			  ? 0
			  : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_ra_outpath_check_accepts_a_new_file, make_dir,
					    remove_dir),
	    cmocka_unit_test_setup_teardown(test_ra_outpath_check_refuses_a_directory, make_dir,
					    remove_dir),
	    cmocka_unit_test_setup_teardown(test_ra_outpath_check_refuses_a_missing_parent,
					    make_dir, remove_dir),
	    cmocka_unit_test_setup_teardown(test_ra_outpath_check_refuses_a_file_as_parent,
					    make_dir, remove_dir),
	    cmocka_unit_test_setup_teardown(test_ra_outpath_check_refuses_kernel_file_systems,
					    make_dir, remove_dir),
	    cmocka_unit_test_setup_teardown(test_ra_outpath_check_refuses_odd_names, make_dir,
					    remove_dir),
	    cmocka_unit_test_setup_teardown(test_ra_outpath_check_refuses_an_unwritable_parent,
					    make_dir, remove_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
