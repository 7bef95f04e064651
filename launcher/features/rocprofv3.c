/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi and rocprofv3's options: rank 0 sets rocprofv3's variables in
 * its environment before the plan is encoded (the plan carries rank 0's
 * ROCP* variables to every rank, and from there they cross into the
 * targets); every rank checks the tool is where rank 0 found it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rocprofv3.h"

/* The tool rank 0 found; o->tools points here for the rest of the run. */
static char found_tool[PATH_MAX];

int rm_rocprofv3_setup(struct rm_opts *o, FILE *list, char *err, size_t len)
{
	struct rp3_setup s = {.tools = o->tools,
			      .per_process_layout = true,
			      .duration_ms = o->windows > 1 ? -1 : o->duration_ms,
			      .children = o->sel.children,
			      .prog = "rocattach-mpi"};
	struct rp3_env env;
	int ret = 0;

	if (rp3_prepare(&o->rp3, &s, found_tool, sizeof(found_tool), &o->tools, &env, err, len)) {
		if (!o->dry_run)
			return RM_EXIT_FAILED;
		/*
		 * A dry run attaches nothing: it lists, and with rocprofv3's options
		 * says what a run would stop on.
		 */
		if (o->rp3.any)
			fprintf(stderr,
				"rocattach-mpi: warning: %s (a run would stop here, exit 4)\n",
				err);
		return 0;
	}
	if (rp3_apply(&env)) {
		snprintf(err, len, "cannot set rocprofv3's variables: out of memory");
		ret = RM_EXIT_ERROR;
	}
	for (size_t i = 0; !ret && list && i < env.n; i++)
		fprintf(list, "rocprofv3 variable: %s\n", env.kv[i]);
	if (!ret && env.n && !o->dry_run)
		fprintf(
		    stderr,
		    "rocattach-mpi: rocprofv3's tool writes %s/%s_* in each target (%%hostname%%: "
		    "the node, %%pid%%: the process; the report names each target's)\n",
		    getenv("ROCPROF_OUTPUT_PATH"), getenv("ROCPROF_OUTPUT_FILE_NAME"));
	if (list)
		fflush(list);
	rp3_env_free(&env);
	return ret;
}

int rm_rocprofv3_check_tool(const struct rm_opts *o, char *err, size_t len)
{
	const char *t = o->tools;

	if (!t || t[0] != '/' || strchr(t, ':') || !rp3_is_sdk_tool(t) || !access(t, R_OK))
		return 0;
	snprintf(err, len,
		 "rocprofv3's tool %s (found there on rank 0) is missing on this node: %s: "
		 "install ROCm's rocprofiler-sdk at the same path here, or give the tool with -t",
		 t, strerror(errno));
	return o->dry_run ? 0 : RM_EXIT_FAILED;
}
