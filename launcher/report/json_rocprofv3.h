/* SPDX-License-Identifier: MIT */
#ifndef RM_REPORT_ROCPROFV3_H
#define RM_REPORT_ROCPROFV3_H

#include <jansson.h>

#include "node.h"

/*
 * With rocprofv3's tool in use, add "rocprofv3_output": {directory, name,
 * expanded} to a target's report object (see docs/report.md).
 */
void rm_rp3_output_add(json_t *target, const char *host, const struct rn_target *t);

#endif
