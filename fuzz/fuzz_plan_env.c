/* SPDX-License-Identifier: MIT */
/*
 * The variables a rank on mpirun's node sends rank 0 at the start
 * (launcher/opts/plan.c, rm_plan_env_decode), taken as they come off the
 * wire. Properties: nothing is read past the length; an input without a
 * NUL within it, or longer than RM_PLAN_ENV_MAX, is refused; what is taken
 * is an object of planned names (ROCP*, ROCATTACH_*; no '=') and string
 * values, and a refusal gives a reason and holds nothing.
 */
#include <jansson.h>

#include "fuzz.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rm_plan p = {0};
	char err[256] = "";
	json_t *env, *v;
	const char *name;
	int r;

	r = rm_plan_env_decode((const char *)data, size, &p, err, sizeof(err));
	if (r) {
		FUZZ_CHECK(r == -1 && err[0] && !p.json);
		return 0;
	}
	FUZZ_CHECK(size <= RM_PLAN_ENV_MAX && memchr(data, '\0', size));
	env = json_object_get(p.json, "env");
	FUZZ_CHECK(json_is_object(env));
	json_object_foreach (env, name, v) {
		FUZZ_CHECK(rm_plan_var(name) && !strchr(name, '=') && strlen(name) < 256);
		FUZZ_CHECK(json_is_string(v));
	}
	rm_plan_free(&p);
	return 0;
}
