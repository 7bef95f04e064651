/* SPDX-License-Identifier: MIT */
/* rocprofv3's variables from the launcher's environment, and set there to cross into targets. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rocprofv3_opts.h"

static const char *real_getenv(const char *name, void *arg)
{
	(void)arg;
	return getenv(name);
}

int rp3_prepare(const struct rp3_opts *r, const struct rp3_setup *s, char *tool_buf, size_t tlen,
		const char **tools_out, struct rp3_env *env, char *err, size_t len)
{
	const char *envtool = getenv("ROCPROF_ATTACH_TOOL_LIBRARY");
	const char *named = s->tools ? s->tools : envtool && *envtool ? envtool : NULL;
	char cwd[PATH_MAX], key[RP3_TEXT_MAX];
	struct rp3_ctx ctx = {.getenv = real_getenv,
			      .per_process_layout = s->per_process_layout,
			      .pid = s->pid,
			      .duration_ms = s->duration_ms,
			      .children = s->children};

	memset(env, 0, sizeof(*env));
	rp3_drop_tool_libraries(s->prog);
	*tools_out = s->tools;
	unsetenv(RP3_OPTIONS_ENV);
	if (named && !r->any && !rp3_is_sdk_tool(named))
		return 0; /* a tool of one's own: nothing of rocprofv3's */
	if (!named) {
		if (rp3_find_tool(r, getenv("ROCM_PATH"), tool_buf, tlen, err, len))
			return -1;
		named = tool_buf;
		*tools_out = tool_buf;
	}
	ctx.tool = named;
	if (s->pid <= 0)
		unsetenv("ROCPROF_ATTACH_PID"); /* each target gets its own (node/pool.c) */
	ctx.cwd = getcwd(cwd, sizeof(cwd)) ? cwd : ".";
	rp3_collection_key(r, key, sizeof(key));
	if (rp3_env_build(r, &ctx, env) || setenv(RP3_OPTIONS_ENV, key, 1)) {
		snprintf(err, len, "out of memory building rocprofv3's variables");
		return -1;
	}
	return 0;
}

void rp3_drop_tool_libraries(const char *prog)
{
	const char *v = getenv("ROCP_TOOL_LIBRARIES");

	if (!v)
		return;
	/* rocprof-attach.py (ROCm/rocm-systems 55ab7830), attach(): the same rule, said once. */
	fprintf(stderr,
		"%s: warning: ignoring ROCP_TOOL_LIBRARIES=%s in attach mode (as rocprof-attach "
		"does): give the tools with -t or ROCPROF_ATTACH_TOOL_LIBRARY\n",
		prog ? prog : "rocattach", v);
	unsetenv("ROCP_TOOL_LIBRARIES");
}

int rp3_apply(const struct rp3_env *env)
{
	for (size_t i = 0; i < env->n; i++) {
		char name[256];
		const char *eq = strchr(env->kv[i], '=');
		size_t n = eq ? (size_t)(eq - env->kv[i]) : 0;

		if (!n || n >= sizeof(name))
			return -1;
		memcpy(name, env->kv[i], n);
		name[n] = '\0';
		if (setenv(name, eq + 1, 1))
			return -1;
	}
	return 0;
}
