/* SPDX-License-Identifier: MIT */
/*
 * A target that measures how long its own threads are kept from running.
 *
 *   pause_target [--busy N] [--shm FILE] [--thresh-us U]
 *
 * N busy threads each read CLOCK_MONOTONIC in a tight loop and record every
 * gap longer than U microseconds (default 5). The main thread blocks in
 * read(2) on stdin, the kind of thread --inject borrows (a thread asleep in
 * a syscall; the main thread comes first in /proc/PID/task): the benchmark
 * writes 8-byte CLOCK_MONOTONIC timestamps to it, and it records how late
 * each was read. Events go to FILE (see pause_shm.h), which the benchmark
 * reads while we run. Without --shm nothing is recorded (a decoy).
 * Prints "ready pid=PID" once every thread runs; ends on SIGTERM or EOF.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pause_shm.h"

#define FLUSH_ITERS (1u << 20)

static struct pt_shm *shm;
static _Atomic unsigned int started;

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record(struct pt_ring *r, uint64_t start, uint64_t len)
{
	uint64_t i = atomic_load_explicit(&r->n, memory_order_relaxed);

	if (i < PT_CAP)
		r->ev[i] = (struct pt_event){start, len};
	atomic_store_explicit(&r->n, i + 1, memory_order_release);
}

static void *busy_main(void *arg)
{
	struct pt_ring *r = shm ? &shm->ring[(uintptr_t)arg] : NULL;
	uint64_t thresh = shm ? shm->thresh_ns : 0, prev, t, iters = 0;

	atomic_fetch_add(&started, 1);
	prev = now_ns();
	for (;;) {
		t = now_ns();
		if (r && t - prev > thresh)
			record(r, prev, t - prev);
		prev = t;
		if (r && ++iters % FLUSH_ITERS == 0)
			atomic_store_explicit(&r->iters, iters, memory_order_relaxed);
	}
	return NULL;
}

static int map_shm(const char *path, unsigned int n_busy, uint64_t thresh_ns)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		perror(path);
		return -1;
	}
	if (ftruncate(fd, sizeof(*shm))) {
		perror("ftruncate");
		close(fd);
		return -1;
	}
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (shm == MAP_FAILED) {
		perror("mmap");
		return -1;
	}
	for (unsigned int i = 0; i <= PT_MAX_BUSY; i++) {
		atomic_store(&shm->ring[i].n, 0);
		atomic_store(&shm->ring[i].iters, 0);
	}
	shm->n_busy = n_busy;
	shm->thresh_ns = thresh_ns;
	atomic_thread_fence(memory_order_release);
	shm->magic = PT_MAGIC;
	return 0;
}

/* Ticks arrive 8 bytes at a time; several may be read at once after a stop. */
static void sleeper_loop(void)
{
	struct pt_ring *r = shm ? &shm->ring[PT_SLEEPER] : NULL;
	uint64_t buf[512], t;
	size_t have = 0;
	ssize_t n;

	for (;;) {
		n = read(STDIN_FILENO, (char *)buf + have, sizeof(buf) - have);
		if (n < 0 && errno == EINTR)
			continue; /* counted as harm: a transparent attach never causes it */
		if (n <= 0)
			return;
		t = now_ns();
		have += (size_t)n;
		for (size_t i = 0; r && i < have / 8; i++) {
			record(r, buf[i], t > buf[i] ? t - buf[i] : 0);
			atomic_fetch_add_explicit(&r->iters, 1, memory_order_relaxed);
		}
		memmove(buf, (char *)buf + have / 8 * 8, have % 8);
		have %= 8;
	}
}

int main(int argc, char **argv)
{
	unsigned long n_busy = 1, thresh_us = 5;
	const char *path = NULL;
	pthread_t th;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--busy") && i + 1 < argc) {
			n_busy = strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--shm") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strcmp(argv[i], "--thresh-us") && i + 1 < argc) {
			thresh_us = strtoul(argv[++i], NULL, 10);
		} else {
			fprintf(stderr, "usage: %s [--busy N] [--shm FILE] [--thresh-us U]\n",
				argv[0]);
			return 2;
		}
	}
	if (n_busy > PT_MAX_BUSY)
		n_busy = PT_MAX_BUSY;
	if (path && map_shm(path, (unsigned int)n_busy, thresh_us * 1000))
		return 1;
	for (unsigned long i = 0; i < n_busy; i++) {
		if (pthread_create(&th, NULL, busy_main, (void *)(uintptr_t)i)) {
			perror("pthread_create");
			return 1;
		}
		pthread_detach(th);
	}
	while (atomic_load(&started) < n_busy)
		usleep(100);
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	sleeper_loop();
	return 0;
}
