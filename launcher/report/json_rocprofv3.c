/* SPDX-License-Identifier: MIT */
/*
 * The report's "rocprofv3_output" of a target: the output directory and file
 * name rocprofv3's tool was given there (rank 0's ROCPROF_OUTPUT_PATH and
 * ROCPROF_OUTPUT_FILE_NAME, which every rank sent), with the placeholders
 * the tool expands and the launcher knows: %hostname% (the node's name) and
 * %pid% (the target's pid as it sees itself: its innermost namespace's).
 * %q{VAR}% is the target's own variable: left as it is, and "expanded" says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json_rocprofv3.h"
#include "rocprofv3_opts.h"

/* s with %hostname% and %pid% expanded; *all false when a %q{VAR}% stays. */
static char *expand(const char *s, const char *host, int pid, bool *all)
{
	/* Each byte of s grows at most to the host name or a pid. */
	size_t cap = strlen(s) * (strlen(host) + 16) + 1, n = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	while (*s) {
		if (!strncmp(s, "%hostname%", 10)) {
			n += (size_t)snprintf(out + n, cap - n, "%s", host);
			s += 10;
		} else if (!strncmp(s, "%pid%", 5)) {
			n += (size_t)snprintf(out + n, cap - n, "%d", pid);
			s += 5;
		} else {
			if (!strncmp(s, "%q{", 3))
				*all = false;
			out[n++] = *s++;
		}
	}
	out[n] = '\0';
	return out;
}

void rm_rp3_output_add(json_t *target, const char *host, const struct rn_target *t)
{
	const char *dir = getenv("ROCPROF_OUTPUT_PATH"), *name = getenv("ROCPROF_OUTPUT_FILE_NAME");
	json_t *o;
	bool all = true;
	char *d, *f;

	if (!target || !getenv(RP3_OPTIONS_ENV))
		return;
	if (!dir || !name) {
		json_object_set_new(target, "rocprofv3_output", json_null());
		return;
	}
	d = expand(dir, host, t->nspid ? t->nspid : t->pid, &all);
	f = expand(name, host, t->nspid ? t->nspid : t->pid, &all);
	o = json_pack("{s:s?, s:s?, s:b}", "directory", d, "name", f, "expanded", all);
	json_object_set_new(target, "rocprofv3_output", o ? o : json_null());
	free(d);
	free(f);
}
