/* SPDX-License-Identifier: MIT */
/* Compatibility: AMD's include path for the rocattach API. */
#pragma once
#include <rocattach/rocattach.h>
