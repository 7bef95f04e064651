/* SPDX-License-Identifier: MIT */
/*
 * The user's ROCP* and ROCATTACH_* variables on every node (user_env.c):
 * those of mpirun's node reach rank 0, whose plan carries them to every
 * rank; a node whose own differ says so once. Private to main.c.
 */
#ifndef RM_USER_ENV_H
#define RM_USER_ENV_H

#include <stdbool.h>

#include "plan.h"
#include "say.h"
#include "startup.h"

/*
 * Every rank, before rank 0 reads its options: the lowest rank on mpirun's
 * node, when it is not rank 0, sends its variables; rank 0 takes them as its
 * own and notes where its node's differed. Without such a rank (Slurm, or
 * no rank where mpirun runs), rank 0's own are used.
 */
void rm_user_env_gather(const struct rm_startup *su);
/* Other ranks, before rm_plan_apply_env: note where this node's variables differ from p's. */
void rm_user_env_note(const struct rm_plan *p);
/*
 * After the election: the node's worker (say) gives a line per noted
 * variable (past 16, their count); the others only drop their notes.
 */
void rm_user_env_say(const struct rm_self *s, bool say);

#endif
