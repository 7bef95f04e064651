/* SPDX-License-Identifier: MIT */
/*
 * stacks_print FILE: a stack tool file (docs/stacks.md) symbolized on this
 * node, for test_stacks.sh. Prints
 *   process <pid> host <host> signal <n> hz <hz> overruns <n> dropped <n>
 *   thread <tid> <live|ended> <cpu ns|-> <name>
 *   snapshot <tid> <status> <name>, then "  #<i> <frame>" lines
 *   samples <tid> <count> <name>, then "  in <count> <function>": how many of
 *     that thread's samples have the function in their stack
 * Exit 0, or 1 with one line on stderr if the file cannot be read.
 *
 * stacks_print --fold HOST RANK [--samples] FILE: its snapshots (or samples)
 * as folded lines (stacks_tree.h). stacks_print --tree: folded lines from
 * stdin merged into one tree, printed.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyframes.h"
#include "stackfile.h"
#include "stacks_pylayout.h"
#include "stacks_tree.h"
#include "symbolize.h"

#define MAX_FUNCS 512

struct count {
	char name[512];
	unsigned n;
	size_t last; /* the sample that counted it last: once per sample */
};

static void print_stack(struct ra_symbolizer *s, const struct ra_stack *st)
{
	struct ra_frame f[16];
	char buf[1200];
	int k = 0;

	for (size_t i = 0; i < st->n; i++) {
		int n = ra_symbolize(s, st->frames[i], i > 0, f, 16);

		for (int j = 0; j < n; j++) {
			ra_frame_format(&f[j], buf, sizeof(buf));
			printf("  #%d %s\n", k++, buf);
		}
	}
	if (st->truncated)
		printf("  ...\n");
}

static void count_in(struct count *c, int *nc, const char *name, size_t sample)
{
	int i;

	for (i = 0; i < *nc; i++)
		if (!strcmp(c[i].name, name))
			break;
	if (i == *nc) {
		if (*nc == MAX_FUNCS)
			return;
		snprintf(c[i].name, sizeof(c[i].name), "%.*s", (int)sizeof(c[i].name) - 1, name);
		c[i].n = 0;
		c[i].last = (size_t)-1;
		(*nc)++;
	}
	if (c[i].last != sample) {
		c[i].n++;
		c[i].last = sample;
	}
}

static void print_samples(struct ra_symbolizer *s, const struct ra_stackfile *f, pid_t tid)
{
	static struct count c[MAX_FUNCS];
	struct ra_frame fr[16];
	char buf[1200];
	unsigned total = 0;
	int nc = 0;

	for (size_t i = 0; i < f->n_stacks; i++) {
		const struct ra_stack *st = &f->stacks[i];

		if (st->snapshot || st->tid != tid)
			continue;
		total++;
		for (size_t k = 0; k < st->n; k++) {
			int n = ra_symbolize(s, st->frames[k], k > 0, fr, 16);

			for (int j = 0; j < n; j++) {
				if (fr[j].func[0])
					snprintf(buf, sizeof(buf), "%.*s", (int)sizeof(buf) - 1,
						 fr[j].func);
				else
					ra_frame_format(&fr[j], buf, sizeof(buf));
				count_in(c, &nc, buf, i);
			}
		}
	}
	printf("samples %d %u %s\n", (int)tid, total, ra_stackfile_thread_name(f, tid));
	for (int i = 0; i < nc; i++)
		printf("  in %u %s\n", c[i].n, c[i].name);
}

static int fold(const char *host, long rank, bool samples, const char *path)
{
	struct ra_stackfile f;
	struct ra_symbolizer *s;
	char err[512];
	long n;

	if (ra_stackfile_read(path, &f, err, sizeof(err))) {
		fprintf(stderr, "stacks_print: %s\n", err);
		return 1;
	}
	s = ra_symbolizer_new(NULL);
	if (!s || ra_symbolizer_add_maps(s, f.maps)) {
		fprintf(stderr, "stacks_print: out of memory\n");
		return 1;
	}
	ra_py_open(&f, f.pid); /* Python frames, if any, named from the live process */
	n = ra_stackfile_fold(&f, s, host, rank, samples, stdout);
	ra_symbolizer_free(s);
	ra_stackfile_free(&f);
	return n < 0;
}

/*
 * A pinned layout ("3.11"), "field offset" a line, for py_layout_check.py;
 * 3.13: as read from the _Py_DebugOffsets of process pid (runtime: its _PyRuntime).
 */
static int py_layout(const char *name, const char *pid, const char *runtime)
{
	const struct py_layout *l = py_layout_named(name);
	struct py_layout debug;

	if (!l && pid && runtime &&
	    !ra_py_debug_layout((pid_t)atol(pid), strtoull(runtime, NULL, 16), &debug))
		l = &debug;
	if (!l) {
		fprintf(stderr, "stacks_print: no layout %s\n", name);
		return 1;
	}
	printf("version %s\nruntime_interp_head %u\ninterp_threads_head %u\n", l->name,
	       l->runtime_interp_head, l->interp_threads_head);
	printf("tstate_next %u\ntstate_cframe %u\ntstate_native_id %u\ncframe_current %u\n",
	       l->tstate_next, l->tstate_cframe, l->tstate_native_id, l->cframe_current);
	printf("frame_code %u\nframe_previous %u\nframe_instr %u\nframe_is_entry %u\n",
	       l->frame_code, l->frame_previous, l->frame_instr, l->frame_is_entry);
	printf("code_firstlineno %u\ncode_filename %u\ncode_name %u\ncode_qualname %u\n",
	       l->code_firstlineno, l->code_filename, l->code_name, l->code_qualname);
	printf("code_linetable %u\ncode_adaptive %u\nbytes_size %u\nbytes_data %u\n",
	       l->code_linetable, l->code_adaptive, l->bytes_size, l->bytes_data);
	printf("str_length %u\nstr_state %u\nstr_ascii_data %u\nob_type %u\n", l->str_length,
	       l->str_state, l->str_ascii_data, l->ob_type);
	printf("frame_owner %u\nowner_cstack %u\nstr_compact_data %u\n", l->frame_owner,
	       l->owner_cstack, l->str_compact_data);
	return 0;
}

static int tree(void)
{
	struct ra_stack_tree *t = ra_stack_tree_new();
	char line[65536], err[256];

	if (!t)
		return 1;
	while (fgets(line, sizeof(line), stdin))
		if (ra_stack_tree_add_folded(t, line, err, sizeof(err))) {
			fprintf(stderr, "stacks_print: %s in: %s", err, line);
			ra_stack_tree_free(t);
			return 1;
		}
	ra_stack_tree_print(t, stdout);
	ra_stack_tree_free(t);
	return 0;
}

int main(int argc, char **argv)
{
	struct ra_stackfile f;
	struct ra_symbolizer *s;
	char err[512];

	if (argc == 2 && !strcmp(argv[1], "--tree"))
		return tree();
	if ((argc == 3 || argc == 5) && !strcmp(argv[1], "--py-layout"))
		return py_layout(argv[2], argc == 5 ? argv[3] : NULL, argc == 5 ? argv[4] : NULL);
	if (argc >= 5 && !strcmp(argv[1], "--fold"))
		return fold(argv[2], atol(argv[3]), argc == 6 && !strcmp(argv[4], "--samples"),
			    argv[argc - 1]);
	if (argc != 2) {
		fprintf(stderr, "usage: stacks_print FILE\n");
		return 2;
	}
	if (ra_stackfile_read(argv[1], &f, err, sizeof(err))) {
		fprintf(stderr, "stacks_print: %s\n", err);
		return 1;
	}
	s = ra_symbolizer_new(NULL);
	if (!s || ra_symbolizer_add_maps(s, f.maps)) {
		fprintf(stderr, "stacks_print: out of memory\n");
		return 1;
	}
	printf("process %d host %s signal %d hz %ld overruns %lu dropped %lu\n", (int)f.pid, f.host,
	       f.sig, f.hz, f.overruns, f.dropped);
	if (f.note[0])
		printf("note %s\n", f.note);
	if (f.py_off[0])
		printf("python_off %s\n", f.py_off);
	for (size_t i = 0; i < f.n_threads; i++) {
		char cpu[24] = "-";

		if (f.threads[i].cpu_ns >= 0)
			snprintf(cpu, sizeof(cpu), "%lld", (long long)f.threads[i].cpu_ns);
		printf("thread %d %s %s %s\n", (int)f.threads[i].tid,
		       f.threads[i].ended ? "ended" : "live", cpu, f.threads[i].name);
	}
	for (size_t i = 0; i < f.n_stacks; i++) {
		if (!f.stacks[i].snapshot)
			continue;
		printf("snapshot %d %s %s\n", (int)f.stacks[i].tid, f.stacks[i].status,
		       ra_stackfile_thread_name(&f, f.stacks[i].tid));
		print_stack(s, &f.stacks[i]);
	}
	if (f.hz)
		for (size_t i = 0; i < f.n_threads; i++)
			print_samples(s, &f, f.threads[i].tid);
	ra_symbolizer_free(s);
	ra_stackfile_free(&f);
	return 0;
}
