/* SPDX-License-Identifier: MIT */
/*
 * Separate debug files (debugfile.c): where a distribution installs the
 * symbols and DWARF it stripped from a library (Debian's libc6-dbg), found
 * as gdb and eu-stack find them.
 */
#ifndef RA_DEBUGFILE_H
#define RA_DEBUGFILE_H

#include <gelf.h>

/*
 * The debug file of the ELF file elf, which the target knows as path, under
 * root ("" for this machine): by its GNU build-id
 * (/usr/lib/debug/.build-id/xx/rest.debug), else by its .gnu_debuglink
 * (beside it, in .debug/ beside it, or under /usr/lib/debug/ + its
 * directory). A candidate counts only if its build-id is the file's, or
 * if the file has none, its CRC is the link's. Returns an open descriptor,
 * or -1 if there is none (or no libdw in this build).
 */
int ra_debugfile_open(const char *root, const char *path, Elf *elf);

#endif
