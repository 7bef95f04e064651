/* SPDX-License-Identifier: MIT */
/* late_victim's parts apart from its threads (victim_util.c). */
#ifndef LATE_VICTIM_H
#define LATE_VICTIM_H

#include <stddef.h>
#include <stdint.h>

#include "late_abi.h"

struct victim_opts {
	int threads;
	int seconds;
	int churn;
	int two_copies;
	int with_sdk;
	int self_start;
};

int victim_parse(int argc, char **argv, struct victim_opts *o);
/* The directory late_victim lies in. */
int victim_dir(char *dir, size_t len);
int victim_map_sdk(const char *dir);
/* The runtime's own functions, and the value mix must give. */
void victim_fill_table(struct late_hip_table *t);
uint64_t victim_mix_ref(uint64_t seed);
/* --self-start: the variables, invoke_all_registrations in each copy, the SDK's status. */
void victim_self_start(void *const *copies, int n_copies);

#endif
