/* SPDX-License-Identifier: MIT */
/* Compatibility: AMD's include path for the rocattach API. */
#pragma once
#include <rocprofiler-sdk-rocattach/defines.h>
#include <rocprofiler-sdk-rocattach/types.h>
#include <rocprofiler-sdk-rocattach/version.h>
