/* SPDX-License-Identifier: MIT */
/*
 * --speedscope FILE: the samples as speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json; a copy in
 * tests/data checks ours): one list of frames for all, one "sampled"
 * profile per rank. Weights are nanoseconds of CPU time at a known rate
 * (count x 1/HZ second: the sampler's interval, an estimate), else counts
 * (unit "none"). A frame's text is its name, whatever its form.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profiles.h"
#include "report_int.h"

/* One sample's stack as frame indices, outermost first (speedscope's order). */
static json_t *stack_json(struct rm_strtab *frames, const char *stack)
{
	char *copy = strdup(stack), **fr = NULL;
	size_t n = copy ? rm_prof_split(copy, &fr) : 0;
	json_t *a = n ? json_array() : NULL;

	for (size_t k = 0; a && k < n; k++) {
		long id = rm_strtab_id(frames, fr[k]);

		if (id < 0 || json_array_append_new(a, json_integer(id))) {
			json_decref(a);
			a = NULL;
		}
	}
	free(fr);
	free(copy);
	return a;
}

/* The samples v[0..n) of one rank as a sampled profile. */
static json_t *rank_profile(struct rm_strtab *frames, const struct rm_prof_sample *v, size_t n,
			    long long period)
{
	json_t *samples = json_array(), *weights = json_array(), *prof;
	long long end = 0;
	char name[320];

	for (size_t i = 0; samples && weights && i < n; i++) {
		long long w = (long long)v[i].count * (period ? period : 1);

		if (json_array_append_new(samples, stack_json(frames, v[i].stack)) ||
		    json_array_append_new(weights, json_integer(w)))
			goto fail;
		end += w;
	}
	if (v[0].rank >= 0)
		snprintf(name, sizeof(name), "rank %ld (%s)", v[0].rank, v[0].host);
	else
		snprintf(name, sizeof(name), "samples");
	prof = json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o}", "type", "sampled", "name", name,
			 "unit", period ? "nanoseconds" : "none", "startValue", (json_int_t)0,
			 "endValue", (json_int_t)end, "samples", samples, "weights", weights);
	return prof;
fail:
	json_decref(samples);
	json_decref(weights);
	return NULL;
}

static json_t *frames_json(const struct rm_strtab *frames)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < frames->n; i++)
		if (json_array_append_new(
			a, json_pack("{s:o}", "name", rm_jstr(frames->s[i], (size_t)-1)))) {
			json_decref(a);
			a = NULL;
		}
	return a;
}

static json_t *file_json(const struct rm_prof *p, const char *name)
{
	long long period = p->hz > 0 ? (1000000000 + p->hz / 2) / p->hz : 0;
	struct rm_strtab frames = {0};
	json_t *profiles = json_array(), *file = NULL;

	/* The samples are sorted by rank (rm_prof_merge): one profile per run of a rank. */
	for (size_t i = 0, j; profiles && i < p->n; i = j) {
		for (j = i + 1; j < p->n && p->v[j].rank == p->v[i].rank; j++)
			;
		if (json_array_append_new(profiles, rank_profile(&frames, &p->v[i], j - i, period)))
			goto out;
	}
	file = json_pack("{s:s, s:{s:o}, s:o, s:s, s:i, s:s}", "$schema",
			 "https://www.speedscope.app/file-format-schema.json", "shared", "frames",
			 frames_json(&frames), "profiles", profiles, "name", name,
			 "activeProfileIndex", 0, "exporter", "rocattach-mpi");
	profiles = NULL;
out:
	json_decref(profiles);
	rm_strtab_free(&frames);
	return file;
}

int rm_speedscope_write(FILE *f, const struct rm_prof *p, const char *name, char *err, size_t len)
{
	json_t *j = file_json(p, name);
	int ret = j ? json_dumpf(j, f, JSON_COMPACT) : -1;

	if (ret)
		snprintf(err, len, "out of memory");
	json_decref(j);
	return ret ? -1 : 0;
}

int rm_write_speedscope(const char *path, const struct rm_run *r, char *err, size_t len)
{
	char name[96];

	snprintf(name, sizeof(name), "rocattach-mpi --sample %d", r->sample_hz);
	return rm_prof_write_file(path, r, "speedscope file", rm_speedscope_write, name, err, len);
}
