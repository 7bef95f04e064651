/* SPDX-License-Identifier: MIT */
/*
 * Addresses of dynamic symbols in a live process, read with libelf from the
 * ELF files behind its mappings (container-safe: /proc/PID/map_files/A-B,
 * else /proc/PID/root/PATH checked against the mapping's dev/inode).
 */
#ifndef RA_SYMBOLS_H
#define RA_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "common/procfs.h"

/*
 * Look up the defined (global or weak) function symbols names[0..n) in the
 * dynamic symbol table (.dynsym) of an ELF file open on fd. vaddr[i] receives
 * st_value (not yet relocated). *load_bias_base receives the p_vaddr of the
 * first PT_LOAD rounded down to its page, *load_offset its p_offset rounded
 * down likewise, so bias = (start of the mapping of that offset) - base.
 * Returns the number of names found (0..n), or -errno (-ENOEXEC: not an ELF
 * of this machine's class and architecture, or corrupt).
 */
int ra_elf_lookup_fd(int fd, const char *const *names, size_t n, uint64_t *vaddr,
		     uint64_t *load_bias_base, uint64_t *load_offset) RA_MUST_CHECK;

/* What an ELF file's header says (ra_elf_header_fd). */
struct ra_elf_header {
	bool elf;	      /* an ELF file at all; the rest is 0 if not */
	int elf_class;	      /* ELFCLASS64, ELFCLASS32; ELFCLASSNONE if the header is cut short */
	unsigned int machine; /* e_machine */
	unsigned int type;    /* e_type */
};

/*
 * The header of the ELF file open on fd, read with libelf: 0 and *h, or
 * -errno when the file cannot be read at all (an O_PATH descriptor, say).
 */
int ra_elf_header_fd(int fd, struct ra_elf_header *h) RA_MUST_CHECK;

/*
 * Find one mapped object of pid that defines all names[0..n) as functions
 * and return their run-time addresses (each checked to land in an executable
 * mapping of that object). Objects whose basename starts with one of
 * prefer[] (NULL-terminated, may be NULL) are tried first, in that order;
 * then every other file-backed object, in address order.
 * obj receives the object's path as the target sees it.
 * Returns 0, -ENOENT if no object defines them all, other -errno with e set.
 */
int ra_symbols_find(const char *procfs, pid_t pid, const struct ra_maps *maps,
		    const char *const *names, size_t n, const char *const *prefer, uint64_t *addrs,
		    char *obj, size_t objlen, struct ra_err *e) RA_MUST_CHECK;

/*
 * The same, among the objects named by only[] alone (no other object is
 * read), where names[nfn..n) are optional and may be variables (data
 * objects) as well as functions: their run-time address, or 0 if the object
 * lacks them. 1 <= nfn <= n.
 */
int ra_symbols_find_only(const char *procfs, pid_t pid, const struct ra_maps *maps,
			 const char *const *names, size_t n, size_t nfn, const char *const *only,
			 uint64_t *addrs, struct ra_err *e) RA_MUST_CHECK;

/*
 * Open the file behind mapping m of pid read-only (map_files, else the
 * path in its root checked against the mapping's dev/inode): fd or -errno.
 */
int ra_map_open(const char *procfs, pid_t pid, const struct ra_map *m) RA_MUST_CHECK;

#endif
