/* SPDX-License-Identifier: MIT */
#ifndef RM_ROCPROFV3_H
#define RM_ROCPROFV3_H

#include <stddef.h>
#include <stdio.h>

#include "mpi_opts.h"

/*
 * Rank 0, before the plan: rocprofv3's variables set here (listed on `list`
 * if not NULL), o->tools the tool found. 0, or an exit code with err. A dry
 * run whose tool is missing goes on with a warning.
 */
int rm_rocprofv3_setup(struct rm_opts *o, FILE *list, char *err, size_t len);

/*
 * Every rank: the tool rank 0 found is here. 0, or RM_EXIT_FAILED with err;
 * a dry run gets 0 with err set (the caller warns).
 */
int rm_rocprofv3_check_tool(const struct rm_opts *o, char *err, size_t len);

#endif
