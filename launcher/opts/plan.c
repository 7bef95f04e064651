/* SPDX-License-Identifier: MIT */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "plan.h"

extern char **environ;

/* The variables a plan carries: the tools' settings and the library's own. */
bool rm_plan_var(const char *name)
{
	return !strncmp(name, "ROCP", 4) || !strncmp(name, "ROCATTACH_", 10);
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *pid_array(const pid_t *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_integer(v[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *ranks_json(const struct rm_opts *o)
{
	json_t *a;

	if (!o->have_ranks)
		return json_null();
	a = json_array();
	for (size_t i = 0; a && i < o->ranks.n; i++)
		if (json_array_append_new(a, json_pack("[I, I]", (json_int_t)o->ranks.v[i].lo,
						       (json_int_t)o->ranks.v[i].hi))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *env_json(void)
{
	json_t *e = json_object();
	size_t bytes = 0;

	for (char **p = environ; e && p && *p; p++) {
		const char *eq = strchr(*p, '=');
		char name[256];

		if (!eq || (size_t)(eq - *p) >= sizeof(name))
			continue;
		memcpy(name, *p, (size_t)(eq - *p));
		name[eq - *p] = '\0';
		if (!rm_plan_var(name))
			continue;
		bytes += strlen(*p) + 8;
		if (bytes > RM_PLAN_ENV_MAX || json_object_set_new(e, name, json_string(eq + 1))) {
			json_decref(e);
			return NULL;
		}
	}
	return e;
}

/* Rank 0's variables as the user set them (rm_plan_keep_user_env), NULL: not kept. */
static json_t *user_env;

void rm_plan_keep_user_env(void)
{
	json_decref(user_env);
	user_env = env_json();
}

size_t rm_plan_env_bytes(void)
{
	size_t bytes = 0;

	for (char **p = environ; p && *p; p++)
		if (rm_plan_var(*p) && strchr(*p, '='))
			bytes += strlen(*p) + 8;
	return bytes;
}

char *rm_plan_env_encode(void)
{
	json_t *e = env_json();
	char *text;

	if (!e)
		return NULL;
	text = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	return text;
}

/* A name a plan may set: ours, of sane length, no '=' (setenv would refuse it). */
static bool env_name_ok(const char *name)
{
	return rm_plan_var(name) && strlen(name) < 256 && !strchr(name, '=');
}

/* An "env" object: every name one a plan may set, every value a string. */
static bool env_obj_ok(json_t *env)
{
	const char *name;
	json_t *v;

	if (!json_is_object(env))
		return false;
	json_object_foreach (env, name, v)
		if (!env_name_ok(name) || !json_is_string(v))
			return false;
	return true;
}

int rm_plan_env_decode(const char *text, size_t len, struct rm_plan *p, char *err, size_t elen)
{
	json_error_t je;
	json_t *env;

	p->json = NULL;
	if (len > RM_PLAN_ENV_MAX || !memchr(text, '\0', len)) {
		snprintf(err, elen, "more than %d bytes, or not a string", RM_PLAN_ENV_MAX);
		return -1;
	}
	env = json_loads(text, 0, &je);
	if (!env) {
		snprintf(err, elen, "not JSON: %s", je.text);
		return -1;
	}
	if (!env_obj_ok(env)) {
		snprintf(err, elen, "not an object of ROCP* and ROCATTACH_* strings");
		json_decref(env);
		return -1;
	}
	p->json = json_pack("{s:o}", "env", env);
	if (!p->json) {
		snprintf(err, elen, "out of memory");
		return -1;
	}
	return 0;
}

/* This process's value of name ("NAME=value" entries), or NULL. */
static const char *own_value(const char *name)
{
	size_t n = strlen(name);

	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* The value the run uses for name: the plan's, NULL if it unsets it. */
static const char *used_value(const struct rm_plan *p, const char *name)
{
	return json_string_value(json_object_get(json_object_get(p->json, "env"), name));
}

size_t rm_plan_env_diff(const struct rm_plan *p, rm_plan_diff_fn fn, void *arg)
{
	json_t *env = json_object_get(p->json, "user_env"), *v;
	const char *name, *here;
	size_t n = 0;

	if (!env)
		env = json_object_get(p->json, "env");
	/* Theirs: set there, and here unset or another value. */
	json_object_foreach (env, name, v) {
		here = own_value(name);
		if (!here || strcmp(here, json_string_value(v))) {
			fn(name, here, used_value(p, name), arg);
			n++;
		}
	}
	/* Ours alone: set here, unset there. */
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name_buf[256];

		if (!eq || !rm_plan_var(*e) || (size_t)(eq - *e) >= sizeof(name_buf))
			continue;
		memcpy(name_buf, *e, (size_t)(eq - *e));
		name_buf[eq - *e] = '\0';
		if (!json_object_get(env, name_buf)) {
			fn(name_buf, eq + 1, used_value(p, name_buf), arg);
			n++;
		}
	}
	return n;
}

char *rm_plan_encode(const struct rm_opts *o)
{
	const struct rn_selector *s = &o->sel;
	json_t *j;
	char *text;

	j = json_pack("{s:o, s:o, s:o, s:I, s:o, s:o, s:I, s:o, s:o, s:b, s:b}", "pids",
		      pid_array(s->pids, s->n_pids), "trees", pid_array(s->trees, s->n_trees),
		      "slurm_step", str_or_null(s->slurm_step), "mpirun_pid",
		      (json_int_t)s->mpirun_pid, "mpi_job", str_or_null(s->mpi_job), "exe",
		      str_or_null(s->exe), "uid", (json_int_t)s->uid, "ranks", ranks_json(o),
		      "rank_var", str_or_null(s->rank_var), "children", s->children, "all_users",
		      s->all_users);
	if (!j)
		return NULL;
	if (json_object_update_new(
		j,
		json_pack("{s:o, s:I, s:I, s:i, s:I, s:I, s:i, s:i, s:b, s:b, s:b, s:o, s:o, "
			  "s:o, s:i, s:b, s:b, s:o, s:I}",
			  "tools", str_or_null(o->tools), "duration_ms", (json_int_t)o->duration_ms,
			  "delay_ms", (json_int_t)o->delay_ms, "windows", o->windows,
			  "max_window_ms", (json_int_t)o->max_window_ms, "start_lead_ms",
			  (json_int_t)o->start_lead_ms, "jobs", o->jobs, "fanout", o->fanout,
			  "inject", o->inject, "dry_run", o->dry_run, "one_node_per_rank",
			  o->one_node_per_rank, "report", str_or_null(o->report), "timeline",
			  str_or_null(o->timeline), "trace", str_or_null(o->trace), "verbose",
			  o->verbose, "help", o->help, "version", o->version, "env", env_json(),
			  "call_timeout_ms", (json_int_t)o->call_timeout_ms))) {
		json_decref(j);
		return NULL;
	}
	if (user_env && json_object_set(j, "user_env", user_env)) {
		json_decref(j);
		return NULL;
	}
	if (json_object_set_new(j, "stacks", json_boolean(o->stacks)) ||
	    json_object_set_new(j, "late_start", json_boolean(o->late_start)) ||
	    json_object_set_new(j, "sample_hz", json_integer(o->sample_hz)) ||
	    json_object_set_new(j, "pprof", str_or_null(o->pprof)) ||
	    json_object_set_new(j, "speedscope", str_or_null(o->speedscope)) ||
	    json_object_set_new(j, "detail", json_integer(o->detail))) {
		json_decref(j);
		return NULL;
	}
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return text;
}

/* A string field: NULL for null; -1 if it is neither. */
static int get_str(json_t *j, const char *key, const char **out)
{
	json_t *v = json_object_get(j, key);

	if (json_is_null(v)) {
		*out = NULL;
		return 0;
	}
	*out = json_string_value(v);
	return *out ? 0 : -1;
}

static int get_pids(json_t *j, const char *key, pid_t *v, size_t *n)
{
	json_t *a = json_object_get(j, key), *x;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) > RM_MAX_PIDS)
		return -1;
	json_array_foreach (a, i, x) {
		if (!json_is_integer(x) || json_integer_value(x) <= 0 ||
		    json_integer_value(x) > INT32_MAX)
			return -1;
		v[i] = (pid_t)json_integer_value(x);
	}
	*n = json_array_size(a);
	return 0;
}

static int get_ranks(json_t *j, struct rm_opts *o)
{
	json_t *a = json_object_get(j, "ranks"), *x;
	size_t i;

	if (json_is_null(a))
		return 0;
	if (!json_is_array(a) || !json_array_size(a))
		return -1;
	o->ranks.v = calloc(json_array_size(a), sizeof(*o->ranks.v));
	if (!o->ranks.v)
		return -1;
	json_array_foreach (a, i, x) {
		json_int_t lo, hi;

		if (json_unpack(x, "[I, I]", &lo, &hi) || lo < 0 || hi < lo)
			return -1;
		o->ranks.v[i].lo = (long)lo;
		o->ranks.v[i].hi = (long)hi;
	}
	o->ranks.n = json_array_size(a);
	o->have_ranks = true;
	o->sel.ranks = &o->ranks;
	return 0;
}

int rm_plan_decode(const char *text, struct rm_opts *o, struct rm_plan *p, char *err, size_t len)
{
	json_int_t mpirun_pid, uid, duration, delay, max_window, lead, call_timeout;
	json_error_t je;
	json_t *j, *env;
	int b[8];

	memset(o, 0, sizeof(*o));
	o->sel.pids = o->pids;
	o->sel.trees = o->trees;
	p->json = j = json_loads(text, 0, &je);
	if (!j) {
		snprintf(err, len, "rank 0's plan is not JSON: %s", je.text);
		return -1;
	}
	if (json_unpack_ex(j, &je, 0,
			   "{s:I, s:I, s:b, s:b, s:I, s:I, s:i, s:I, s:I, s:i, s:i, s:b, s:b, s:b, "
			   "s:i, s:b, s:b, s:o, s:I}",
			   "mpirun_pid", &mpirun_pid, "uid", &uid, "children", &b[0], "all_users",
			   &b[1], "duration_ms", &duration, "delay_ms", &delay, "windows",
			   &o->windows, "max_window_ms", &max_window, "start_lead_ms", &lead,
			   "jobs", &o->jobs, "fanout", &o->fanout, "inject", &b[2], "dry_run",
			   &b[3], "one_node_per_rank", &b[4], "verbose", &o->verbose, "help", &b[5],
			   "version", &b[6], "env", &env, "call_timeout_ms", &call_timeout)) {
		snprintf(err, len, "rank 0's plan lacks a field: %s", je.text);
		return -1;
	}
	if (get_pids(j, "pids", o->pids, &o->sel.n_pids) ||
	    get_pids(j, "trees", o->trees, &o->sel.n_trees) ||
	    get_str(j, "slurm_step", &o->sel.slurm_step) ||
	    get_str(j, "mpi_job", &o->sel.mpi_job) || get_str(j, "exe", &o->sel.exe) ||
	    get_str(j, "rank_var", &o->sel.rank_var) || get_str(j, "tools", &o->tools) ||
	    get_str(j, "report", &o->report) || get_str(j, "timeline", &o->timeline) ||
	    get_str(j, "trace", &o->trace) || get_str(j, "pprof", &o->pprof) ||
	    get_str(j, "speedscope", &o->speedscope) || get_ranks(j, o) || !env_obj_ok(env) ||
	    (json_object_get(j, "user_env") && !env_obj_ok(json_object_get(j, "user_env")))) {
		snprintf(err, len, "rank 0's plan has a field of the wrong form");
		return -1;
	}
	o->sel.mpirun_pid = (pid_t)mpirun_pid;
	o->sel.uid = (long)uid;
	o->sel.children = b[0];
	o->sel.all_users = b[1];
	o->duration_ms = duration;
	o->delay_ms = delay;
	o->max_window_ms = max_window;
	o->start_lead_ms = lead;
	if (call_timeout < 1 || call_timeout > CLI_MAX_CALL_TIMEOUT_MS) {
		snprintf(err, len, "rank 0's plan has a field of the wrong form");
		return -1;
	}
	o->call_timeout_ms = call_timeout;
	o->inject = b[2];
	o->dry_run = b[3];
	o->one_node_per_rank = b[4];
	o->help = b[5];
	o->version = b[6];
	o->stacks = json_is_true(json_object_get(j, "stacks"));
	o->late_start = json_is_true(json_object_get(j, "late_start"));
	o->sample_hz = (int)json_integer_value(json_object_get(j, "sample_hz"));
	if (o->sample_hz < 0 || o->sample_hz > 10000) {
		snprintf(err, len, "rank 0's plan has a field of the wrong form");
		return -1;
	}
	/* --detail as given; the level each window is cut at comes with its order. */
	o->detail = (enum rm_detail)json_integer_value(json_object_get(j, "detail"));
	if (o->detail < RM_DETAIL_AUTO || o->detail > RM_DETAIL_NONE) {
		snprintf(err, len, "rank 0's plan has a field of the wrong form");
		return -1;
	}
	return 0;
}

int rm_plan_apply_env(const struct rm_plan *p)
{
	json_t *env = json_object_get(p->json, "env"), *v;
	const char *name;
	char **ours = NULL;
	size_t n = 0;
	int ret = 0;

	/* Our names first: unsetenv changes environ under us. */
	for (char **e = environ; e && *e; e++)
		n++;
	ours = calloc(n + 1, sizeof(*ours));
	if (!ours)
		return -1;
	n = 0;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (!eq || !rm_plan_var(*e))
			continue;
		ours[n] = strndup(*e, (size_t)(eq - *e));
		if (!ours[n])
			ret = -1;
		else
			n++;
	}
	for (size_t i = 0; i < n; i++) {
		if (!json_object_get(env, ours[i]) && unsetenv(ours[i]))
			ret = -1;
		free(ours[i]);
	}
	free(ours);
	json_object_foreach (env, name, v) {
		if (!rm_plan_var(name) || !json_is_string(v) ||
		    setenv(name, json_string_value(v), 1))
			ret = -1;
	}
	return ret;
}

void rm_plan_free(struct rm_plan *p)
{
	json_decref(p->json);
	p->json = NULL;
}
