/* SPDX-License-Identifier: MIT */
/*
 * --late-start's check of a tool: the rocprofiler-sdk it links must exist
 * where the dynamic linker will look for it from the tool, and be the SDK
 * the tool asks for. rocprofiler-register aborts the whole process (glog
 * FATAL) when it is told to load an SDK that is not there or lacks
 * rocprofiler_set_api_table (see common/late.h), so this is ruled out here.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/late.h"
#include "late_needs.h"
#include "late_tool.h"
#include "symbols.h"

struct dyn_info {
	char needed[256];    /* the first DT_NEEDED librocprofiler-sdk.so* */
	char soname[256];    /* DT_SONAME */
	char path[PATH_MAX]; /* DT_RUNPATH, else DT_RPATH */
};

static void dyn_entry(Elf *elf, size_t strndx, const GElf_Dyn *d, struct dyn_info *di,
		      bool *runpath)
{
	const char *s = elf_strptr(elf, strndx, d->d_un.d_val);

	if (!s)
		return;
	if (d->d_tag == DT_NEEDED && !di->needed[0] &&
	    !strncmp(s, RA_LATE_SDK_PREFIX, strlen(RA_LATE_SDK_PREFIX)))
		snprintf(di->needed, sizeof(di->needed), "%s", s);
	else if (d->d_tag == DT_SONAME)
		snprintf(di->soname, sizeof(di->soname), "%s", s);
	else if (d->d_tag == DT_RUNPATH || (d->d_tag == DT_RPATH && !*runpath))
		snprintf(di->path, sizeof(di->path), "%s", s);
	if (d->d_tag == DT_RUNPATH)
		*runpath = true;
}

/* The dynamic section's strings of the ELF file on fd: 0, or -ENOEXEC. */
static int read_dyn(int fd, struct dyn_info *di)
{
	Elf_Scn *scn = NULL;
	bool runpath = false;
	int ret = -ENOEXEC;
	GElf_Shdr sh;
	Elf *elf;

	memset(di, 0, sizeof(*di));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		GElf_Dyn d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++)
			if (gelf_getdyn(data, (int)i, &d))
				dyn_entry(elf, sh.sh_link, &d, di, &runpath);
		ret = 0;
	}
	elf_end(elf);
	return ret;
}

static int read_dyn_path(const char *path, struct dyn_info *di)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), ret;

	if (fd < 0)
		return -errno;
	ret = read_dyn(fd, di);
	close(fd);
	return ret;
}

/* dir with $ORIGIN / ${ORIGIN} replaced by origin. */
static void expand(const char *dir, size_t n, const char *origin, char *out, size_t len)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 1 < len;) {
		size_t skip = !strncmp(dir + i, "${ORIGIN}", 9) ? 9
			      : !strncmp(dir + i, "$ORIGIN", 7) ? 7
								: 0;

		if (skip) {
			k += (size_t)snprintf(out + k, len - k, "%s", origin);
			i += skip;
		} else {
			out[k++] = dir[i++];
		}
		if (k >= len)
			k = len - 1;
	}
	out[k] = '\0';
}

static bool is_file(const char *path)
{
	struct stat sb;

	return !stat(path, &sb) && S_ISREG(sb.st_mode);
}

/* The first dir of the search path (then origin) that holds name: 0, else -ENOENT. */
static int search(const char *paths, const char *origin, const char *name, char *out, size_t len)
{
	char dir[PATH_MAX];

	for (const char *p = paths; *p;) {
		size_t n = strcspn(p, ":");

		expand(p, n, origin, dir, sizeof(dir));
		if (dir[0] && snprintf(out, len, "%s/%s", dir, name) < (int)len && is_file(out))
			return 0;
		p += n + (p[n] == ':');
	}
	if (snprintf(out, len, "%s/%s", origin, name) < (int)len && is_file(out))
		return 0;
	return -ENOENT;
}

/* The SDK file has the soname asked for and the entry points the start needs. */
static int check_sdk(const char *tool, const char *needed, const char *sdk, struct ra_err *e)
{
	static const char *const names[] = {RA_LATE_SET_API_TABLE, RA_LATE_IS_INITIALIZED};
	uint64_t v[2], base, off;
	struct dyn_info di;
	int fd, n = -1;

	if (read_dyn_path(sdk, &di) || strcmp(di.soname, needed))
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				 "the SDK %s found for tool %s is not the %s it links (its soname "
				 "is '%s'): install the rocprofiler-sdk the tool was built with",
				 sdk, tool, needed, di.soname);
	fd = open(sdk, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		n = ra_elf_lookup_fd(fd, names, 2, v, &base, &off);
		close(fd);
	}
	if (n != 2)
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				 "the SDK %s of tool %s exports no " RA_LATE_SET_API_TABLE
				 " or " RA_LATE_IS_INITIALIZED
				 ": not a rocprofiler-sdk; install the one the tool was built with",
				 sdk, tool);
	return ra_late_tool_needs(tool, needed, sdk, e);
}

int ra_late_tool_sdk(const char *tool, char *sdk, size_t len, struct ra_err *e)
{
	char origin[PATH_MAX], *slash;
	struct dyn_info di;

	if (!realpath(tool, origin) || read_dyn_path(origin, &di))
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				 "tool %s cannot be read as a shared library: give the tool's "
				 "absolute path (-t)",
				 tool);
	if (!di.needed[0])
		return 1;
	slash = strrchr(origin, '/');
	*slash = '\0';
	if (search(di.path, origin, di.needed, sdk, len))
		return RA_REFUSE(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
				 "tool %s links %s, which is neither in its RUNPATH '%s' nor "
				 "beside it: nothing was started (rocprofiler-register would abort "
				 "the process); install rocprofiler-sdk beside the tool",
				 tool, di.needed, di.path);
	return check_sdk(tool, di.needed, sdk, e) ? -1 : 0;
}
