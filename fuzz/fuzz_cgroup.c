/* SPDX-License-Identifier: MIT */
/*
 * /proc/PID/cgroup to a Slurm job and step (node/select_job.c). A job is
 * 1..2^32-1; a step is a 32-bit id, one of Slurm's special steps, or none.
 */
#include "fuzz.h"
#include "select_base.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t job = 0, step = 0;
	int r = rn_cgroup_step((const char *)data, size, &job, &step);

	FUZZ_CHECK(r == 0 || r == 1);
	if (r == 1)
		FUZZ_CHECK(job >= 1 && job <= RN_SLURM_ID_MAX &&
			   (step <= RN_SLURM_ID_MAX || step == STEP_NONE));
	return 0;
}
