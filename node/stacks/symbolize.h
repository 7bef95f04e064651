/* SPDX-License-Identifier: MIT */
/*
 * Symbols on the node: addresses of a process (taken in the process, as by
 * librocattach-stacks.so) named from a copy of its /proc/PID/maps and the ELF
 * files behind it, after the process may have exited. Names come from
 * .symtab and .dynsym (libelf); file:line and inlined frames from DWARF
 * (libdw) when the build has it (RA_HAVE_LIBDW) and the file has debug
 * information; C++ names are demangled. An address with no symbol is named
 * by its file and its address in that file's ELF space, as addr2line -e
 * takes it: "libfoo.so+0x1234". Nothing is ever invented: an address in no
 * file-backed mapping is "[unknown]+0x<address>" (or "[vdso]+0x...").
 *
 * Files are read from root + the path in the maps (root "" or NULL: "/"),
 * so captured trees can be symbolized elsewhere. A file replaced since the
 * maps were taken would give wrong names: with the default root, a file
 * whose inode is not the one in the maps is not read, and its frames are
 * named by file and offset.
 */
#ifndef RA_SYMBOLIZE_H
#define RA_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ra_symbolizer;

struct ra_frame {
	char func[512];	  /* demangled function name, "" if unknown */
	char file[512];	  /* source file, "" if unknown */
	int line;	  /* 0 if unknown */
	char module[256]; /* basename of the mapped file, or "[unknown]", "[vdso]"... */
	uint64_t offset;  /* address in the module's ELF space (or the raw address) */
	bool inlined;	  /* an inlined call inside the next frame */
};

/* NULL on allocation failure. root: see above. */
struct ra_symbolizer *ra_symbolizer_new(const char *root);
void ra_symbolizer_free(struct ra_symbolizer *s);

/* Add the mappings of a /proc/PID/maps text. 0, or -1 (errno) on allocation failure. */
int ra_symbolizer_add_maps(struct ra_symbolizer *s, const char *maps_text);

/*
 * The frames of one address, innermost first: the inlined calls at that
 * address (with libdw and debug information), then the function that holds
 * them. is_return: addr is a return address (every frame of a stack but the
 * first), looked up at addr - 1 so the call, not the next line, is named.
 * Returns how many frames were written (1 at least when max > 0).
 */
int ra_symbolize(struct ra_symbolizer *s, uint64_t addr, bool is_return, struct ra_frame *out,
		 int max);

/* "func (file:line)", "func", or "module+0xoffset"; inlined frames end with " [inlined]". */
void ra_frame_format(const struct ra_frame *f, char *buf, size_t len);

/* Whether the build reads DWARF (file:line, inlined frames). */
bool ra_symbolizer_has_dwarf(void);

/* The demangled form of a C++ name (malloc'ed), or NULL if name is not a C++ one. */
char *ra_demangle(const char *name);

#ifdef __cplusplus
}
#endif

#endif
