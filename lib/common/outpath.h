/* SPDX-License-Identifier: MIT */
/*
 * Output files (reports, timelines, traces): can this path be written?
 * Every program that writes an output checks it with this, before it
 * touches any process. libc only.
 */
#ifndef RA_COMMON_OUTPATH_H
#define RA_COMMON_OUTPATH_H

#include <stddef.h>

/*
 * 0 if path can take an output file, else -1 with one line in err that
 * names opt, the path, the cause and the fix. NULL path: nothing to check.
 *
 * Outputs are written to PATH.tmp and renamed over PATH (whole or not at
 * all), so PATH must be a file's name in a directory that exists and that
 * this process can write; it must not be a directory. Paths in /proc,
 * /sys and /dev (after symbolic links) and on proc or sysfs mounts are
 * refused, /dev/stdout and /dev/null included: a rename there would
 * replace a device node or fail. Space is not checked: a full disk shows
 * when the file is written.
 */
int ra_outpath_check(const char *path, const char *opt, char *err, size_t len);

#endif
