/* SPDX-License-Identifier: MIT */
/* The file the stack tool writes at detach (stacks_file.h, stacks_format.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stacks_file.h"
#include "stacks_format.h"
#include "stacks_state.h"

static void write_notes(FILE *f)
{
	if (st.note[0])
		fprintf(f, "note %s\n", st.note);
	if (st.taken_note[0])
		fprintf(f, "note %s\n", st.taken_note);
	if (!st.unwind)
		fprintf(f, "note ROCPROF_STACKS_UNWIND=0: snapshots answered without frames\n");
	if (st.sample_part != SAMPLE_ALL)
		fprintf(f, "note ROCPROF_STACKS_SAMPLE_PART=%s: samples %s (for measuring)\n",
			st.sample_part == SAMPLE_SIGNAL ? "signal" : "record",
			st.sample_part == SAMPLE_SIGNAL ? "not taken" : "taken without frames");
	if (st.too_many)
		fprintf(f, "note more than %d threads: the others were not seen\n", MAX_THREADS);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The handlers' time over every sample, and its median (a preempted handler
 * counts its wait): what sampling costs in the program's threads.
 */
static void write_sample_time(FILE *f)
{
	size_t used = atomic_load(&st.next_record), n = 0;
	unsigned long long sum = 0;
	uint64_t *ns;

	if (!st.pool)
		return;
	if (used > st.n_records)
		used = st.n_records;
	ns = malloc((used ? used : 1) * sizeof(*ns));
	for (size_t i = 0; i < used; i++) {
		const struct record *r = record_at(i);

		if (r->kind != RS_KIND_SAMPLE)
			continue;
		sum += r->handler_ns;
		if (ns)
			ns[n] = r->handler_ns;
		n++;
	}
	if (ns && n)
		qsort(ns, n, sizeof(*ns), cmp_u64);
	fprintf(f, "sample_handler_ns %llu %zu %llu\n", sum, n,
		ns && n ? (unsigned long long)ns[n / 2] : 0ULL);
	free(ns);
}

static void write_header(FILE *f)
{
	char host[HOST_NAME_MAX + 1] = "unknown";

	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	fprintf(f, "%s\npid %d\nhost %s\n", RS_MAGIC, (int)getpid(), host);
	if (st.sig)
		fprintf(f, "signal %d SIGRTMIN+%d\n", st.sig, st.sig - SIGRTMIN);
	else
		fprintf(f, "signal 0 none\n");
	fprintf(f, "hz %ld\nmax_frames %u\nattach_ns %llu\ndetach_ns %llu\n", st.hz, st.max_frames,
		st.attach_ns, st.detach_ns);
	fprintf(f, "dropped %lu\noverruns %lu\n", atomic_load(&st.dropped),
		atomic_load(&st.overruns));
	write_sample_time(f);
	write_notes(f);
	if (st.py.on)
		fprintf(f, "python_version %u.%u.%u %s %llx %llx\n", st.py.version >> 24,
			(st.py.version >> 16) & 0xff, (st.py.version >> 8) & 0xff, st.py.lay->name,
			(unsigned long long)st.py.code_type, (unsigned long long)st.py.runtime);
	else if (st.py.why[0])
		fprintf(f, "python_off %s\n", st.py.why);
}

static void write_record(FILE *f, const struct record *r)
{
	for (uint32_t k = 0; k < r->nframes; k++)
		fprintf(f, " %llx", (unsigned long long)r->frames[k]);
	fprintf(f, "%s\n", r->truncated ? " ..." : "");
	if (!st.py.on || !r->npy)
		return;
	fprintf(f, "pyframes %u", r->npy);
	for (uint32_t k = 0; k < r->npy; k++) {
		const struct py_raw *p = &record_py(r)[k];

		if (p->native == PY_NO_NATIVE)
			fprintf(f, " -:%llx:%llx", (unsigned long long)p->code,
				(unsigned long long)p->instr);
		else
			fprintf(f, " %u:%llx:%llx", p->native, (unsigned long long)p->code,
				(unsigned long long)p->instr);
	}
	fprintf(f, "%s\n", r->py_truncated ? " ..." : "");
}

static void write_threads(FILE *f, int n)
{
	for (int i = 0; i < n; i++) {
		const struct thread *t = &st.threads[i];

		fprintf(f, "thread %d %s ", (int)t->tid, t->ended ? "ended" : "live");
		if (t->cpu_ns >= 0)
			fprintf(f, "%lld %s\n", t->cpu_ns, t->name);
		else
			fprintf(f, "- %s\n", t->name);
	}
}

static void write_snapshot(FILE *f, const struct thread *t)
{
	long ri = atomic_load(&t->snap_record);
	const char *s = t->snap_status ? t->snap_status : RS_SNAP_NOANSWER;
	const struct record *r;

	if (!t->snap_status && ri < 0)
		return; /* created after the snapshot */
	/* Frames only from an answer: a late one is never shown as one. */
	if (ri < 0 || (strcmp(s, RS_SNAP_OK) && strcmp(s, RS_SNAP_SELF))) {
		fprintf(f, "snapshot %d %s 0\n", (int)t->tid, s);
		return;
	}
	r = record_at((size_t)ri);
	fprintf(f, "snapshot %d %s %llu", (int)t->tid, s, (unsigned long long)r->ns);
	write_record(f, r);
	if (strcmp(s, RS_SNAP_OK))
		return;
	fprintf(f, "handler %d %llu\n", (int)t->tid, (unsigned long long)r->handler_ns);
	fprintf(f, "hold %d %llu %llu %llu\n", (int)t->tid, t->sent_mono,
		(unsigned long long)r->entry_mono, atomic_load(&t->ret_mono));
}

static void write_body(FILE *f)
{
	int n = atomic_load(&st.n_threads);
	size_t used = atomic_load(&st.next_record);

	if (used > st.n_records)
		used = st.n_records;
	write_threads(f, n);
	for (int i = 0; i < n; i++)
		write_snapshot(f, &st.threads[i]);
	for (size_t i = 0; i < used; i++) {
		const struct record *r = record_at(i);

		if (r->kind != RS_KIND_SAMPLE)
			continue;
		fprintf(f, "sample %d %llu", (int)r->tid, (unsigned long long)r->ns);
		write_record(f, r);
	}
}

static void copy_maps(FILE *f)
{
	char buf[4096];
	size_t n;
	FILE *m = fopen("/proc/self/maps", "re");

	fprintf(f, "maps\n");
	if (m) {
		while ((n = fread(buf, 1, sizeof(buf), m)) > 0)
			fwrite(buf, 1, n, f);
		fclose(m);
	}
	fprintf(f, "end\n");
}

/* mkdir -p */
static void make_dirs(const char *dir)
{
	char path[PATH_MAX], *p;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return;
	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

/* Written under a temporary name and renamed: a reader never sees half a file. */
void write_file(void)
{
	const char *dir = getenv("ROCPROF_OUTPUT_PATH");
	char host[HOST_NAME_MAX + 1] = "unknown", path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	if (!dir || !*dir)
		dir = ".";
	make_dirs(dir);
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	if (snprintf(path, sizeof(path), "%s/" RS_FILE_PREFIX "%s.%d.%u.txt", dir, host,
		     (int)getpid(), st.attach_seq) >= (int)sizeof(path))
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return;
	write_header(f);
	if (st.pool)
		write_body(f);
	copy_maps(f);
	if (fclose(f) == 0)
		rename(tmp, path);
	else
		unlink(tmp);
}
