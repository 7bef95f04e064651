/* SPDX-License-Identifier: MIT */
/*
 * --late-start: the SDK found for a tool has its soname, but may be another
 * version of rocprofiler-sdk. Once a librocprofiler-sdk.so.1 is loaded into
 * the target, the tool binds to that one, for the rest of the process's
 * life; a symbol it needs that is not there fails its load there (or later,
 * lazily, kills the process). So the tool's needs are read from its ELF and
 * held against the SDK's exports before anything is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "late_needs.h"

#define PREFIX "rocprofiler_"
#define REGISTER_PREFIX "rocprofiler_register_" /* rocprofiler-register's, not the SDK's */

struct elf_file {
	int fd;
	Elf *elf;
};

static int elf_open(const char *path, struct elf_file *f)
{
	elf_version(EV_CURRENT);
	f->elf = NULL;
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f->fd < 0)
		return -errno;
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf) {
		close(f->fd);
		return -ENOEXEC;
	}
	return 0;
}

static void elf_close(struct elf_file *f)
{
	elf_end(f->elf);
	close(f->fd);
}

/* The first section of type type, its header in sh. */
static Elf_Scn *section(Elf *elf, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

static bool defines(Elf *elf, const char *name)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section(elf, SHT_DYNSYM, &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	GElf_Sym s;

	for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
		const char *n;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
			continue;
		n = elf_strptr(elf, sh.sh_link, s.st_name);
		if (n && !strcmp(n, name))
			return true;
	}
	return false;
}

/* The first symbol the tool needs and sdk lacks, copied to out: 1; 0: none. */
static int missing_symbol(Elf *tool, Elf *sdk, char *out, size_t len)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section(tool, SHT_DYNSYM, &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	GElf_Sym s;

	for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
		const char *n;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx != SHN_UNDEF ||
		    GELF_ST_BIND(s.st_info) == STB_WEAK)
			continue;
		n = elf_strptr(tool, sh.sh_link, s.st_name);
		if (!n || strncmp(n, PREFIX, strlen(PREFIX)) ||
		    !strncmp(n, REGISTER_PREFIX, strlen(REGISTER_PREFIX)) || defines(sdk, n))
			continue;
		snprintf(out, len, "%s", n);
		return 1;
	}
	return 0;
}

static bool defines_version(Elf *elf, const char *name)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section(elf, SHT_GNU_verdef, &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	size_t off = 0;
	GElf_Verdef vd;
	GElf_Verdaux va;

	for (size_t i = 0; d && i < sh.sh_info && gelf_getverdef(d, (int)off, &vd); i++) {
		const char *n = gelf_getverdaux(d, (int)(off + vd.vd_aux), &va)
				    ? elf_strptr(elf, sh.sh_link, va.vda_name)
				    : NULL;

		if (n && !strcmp(n, name))
			return true;
		if (!vd.vd_next)
			break;
		off += vd.vd_next;
	}
	return false;
}

/* The first version the tool needs from needed that sdk does not define: 1; 0: none. */
static int missing_version(Elf *tool, Elf *sdk, const char *needed, char *out, size_t len)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section(tool, SHT_GNU_verneed, &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	size_t off = 0;
	GElf_Verneed vn;
	GElf_Vernaux va;

	for (size_t i = 0; d && i < sh.sh_info && gelf_getverneed(d, (int)off, &vn); i++) {
		const char *file = elf_strptr(tool, sh.sh_link, vn.vn_file);
		size_t a = off + vn.vn_aux;

		for (size_t k = 0; file && !strcmp(file, needed) && k < vn.vn_cnt &&
				   gelf_getvernaux(d, (int)a, &va);
		     k++, a += va.vna_next) {
			const char *n = elf_strptr(tool, sh.sh_link, va.vna_name);

			if (n && !defines_version(sdk, n)) {
				snprintf(out, len, "%s", n);
				return 1;
			}
			if (!va.vna_next)
				break;
		}
		if (!vn.vn_next)
			break;
		off += vn.vn_next;
	}
	return 0;
}

int ra_late_tool_needs(const char *tool, const char *needed, const char *sdk, struct ra_err *e)
{
	struct elf_file t, s;
	char what[256];
	int ret = 0;

	if (elf_open(tool, &t))
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				 "tool %s cannot be read as ELF: give a rocprofiler-sdk tool (-t)",
				 tool);
	if (elf_open(sdk, &s)) {
		elf_close(&t);
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				 "the SDK %s of tool %s cannot be read as ELF: install the "
				 "rocprofiler-sdk the tool was built with",
				 sdk, tool);
	}
	if (missing_symbol(t.elf, s.elf, what, sizeof(what)))
		ret = RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				"tool %s needs %s, which the SDK %s (%s, another version) does "
				"not export: nothing was touched; install the rocprofiler-sdk "
				"the tool was built with beside it",
				tool, what, sdk, needed);
	else if (missing_version(t.elf, s.elf, needed, what, sizeof(what)))
		ret = RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				"tool %s needs symbol version %s of %s, which the SDK %s does not "
				"define: nothing was touched; install the rocprofiler-sdk the tool "
				"was built with beside it",
				tool, what, needed, sdk);
	elf_close(&s);
	elf_close(&t);
	return ret;
}
