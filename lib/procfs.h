/* SPDX-License-Identifier: MIT */
/*
 * The /proc readers live in common/procfs.h (shared with node/). This name
 * stays only for lib's files that still include it; include common/procfs.h.
 */
#include "common/procfs.h"
