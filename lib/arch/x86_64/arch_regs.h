/* SPDX-License-Identifier: MIT */
#ifndef RA_ARCH_REGS_H
#define RA_ARCH_REGS_H

#include <sys/user.h>

struct ra_regs {
	struct user_regs_struct r;
};

#endif
