/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for tests/mpi/test_many.sh: the attach workers' threads
 * (those created with node/pool.c's 256 KB stacks) fail past the first
 * RA_TEST_THREADS (EAGAIN, as at ulimit -u), to test that the launcher says
 * so and still attaches every target. Other threads (Open MPI's) are made.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static atomic_long made;

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static create_fn real;
	const char *max = getenv("RA_TEST_THREADS");
	size_t stack = 0;

	if (!real)
		real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	if (attr && max && !pthread_attr_getstacksize(attr, &stack) && stack == 256 * 1024 &&
	    atomic_fetch_add(&made, 1) >= atol(max))
		return EAGAIN;
	return real(th, attr, fn, arg);
}
