/* SPDX-License-Identifier: MIT */
/*
 * Run-time addresses of dynamic symbols in another process, from the ELF
 * files behind its mappings. Everything read from an ELF file is untrusted:
 * every libelf call is checked, and a bad file only means "not found here".
 */
#include "arch/arch.h"
#include "symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RA_ELF_DATA ELFDATA2LSB
#else
#define RA_ELF_DATA ELFDATA2MSB
#endif

/* .gnu.version: a non-default version (sym@VER, not sym@@VER) that dlsym never returns. */
#define RA_VERSYM_HIDDEN 0x8000

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static bool elf_ready;

/* elf_version() sets libelf's global state: once per process, not per call. */
static void elf_init(void)
{
	elf_ready = elf_version(EV_CURRENT) != EV_NONE;
}

/* READ_MMAP shares the page cache; plain READ copies, for files that cannot be mapped. */
static Elf *elf_open(int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	return elf ? elf : elf_begin(fd, ELF_C_READ, NULL);
}

static int check_header(Elf *elf)
{
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 ||
	    !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	if (eh.e_ident[EI_DATA] != RA_ELF_DATA || eh.e_machine != ra_arch_elf_machine())
		return -ENOEXEC;
	return eh.e_type == ET_DYN || eh.e_type == ET_EXEC ? 0 : -ENOEXEC;
}

/*
 * The first PT_LOAD, rounded down to the page the way the kernel and ld.so
 * map it: its mapping starts at bias + base and has file offset off.
 */
static int first_load(Elf *elf, uint64_t *base, uint64_t *off)
{
	uint64_t mask = ~((uint64_t)sysconf(_SC_PAGESIZE) - 1);
	GElf_Phdr ph;
	size_t i, num;

	if (elf_getphdrnum(elf, &num) != 0 || num > INT_MAX)
		return -ENOEXEC;
	for (i = 0; i < num; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD)
			continue;
		/* ld.so refuses a segment whose address and offset disagree mod the page. */
		if ((ph.p_vaddr & ~mask) != (ph.p_offset & ~mask))
			return -ENOEXEC;
		*base = ph.p_vaddr & mask;
		*off = ph.p_offset & mask;
		return 0;
	}
	return -ENOEXEC;
}

/* A defined, visible function or (data) variable; 0 if neither. */
static int defined(const GElf_Sym *sym)
{
	int bind = GELF_ST_BIND(sym->st_info), vis = GELF_ST_VISIBILITY(sym->st_other);
	int type = GELF_ST_TYPE(sym->st_info);

	/* STT_GNU_IFUNC is a resolver, not the function: calling it would be wrong. */
	if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0 ||
	    (type != STT_FUNC && type != STT_OBJECT) || (bind != STB_GLOBAL && bind != STB_WEAK) ||
	    vis == STV_HIDDEN || vis == STV_INTERNAL)
		return 0;
	return type;
}

/*
 * Record value for every still-missing names[i] equal to name; returns how
 * many. names[0..nfn) are functions; the others may be variables too.
 */
static size_t match(const char *name, int type, const char *const *names, size_t n, size_t nfn,
		    uint64_t *vaddr, uint64_t value)
{
	size_t i, hits = 0;

	for (i = 0; i < n; i++) {
		if (vaddr[i] || strcmp(name, names[i]) || (i < nfn && type != STT_FUNC))
			continue;
		vaddr[i] = value;
		hits++;
	}
	return hits;
}

static int scan_syms(Elf *elf, Elf_Scn *symscn, size_t strndx, Elf_Scn *verscn,
		     const char *const *names, size_t n, size_t nfn, uint64_t *vaddr)
{
	Elf_Data *syms = elf_getdata(symscn, NULL);
	Elf_Data *vers = verscn ? elf_getdata(verscn, NULL) : NULL;
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t i, count, found = 0;
	const char *name;
	GElf_Versym vs;
	GElf_Sym sym;
	int type;

	if (!syms || !entsize)
		return -ENOEXEC;
	count = syms->d_size / entsize;
	if (count > INT_MAX)
		count = INT_MAX;
	/* Entry 0 is the null symbol. */
	for (i = 1; i < count && found < n; i++) {
		if (!gelf_getsym(syms, (int)i, &sym))
			break;
		type = defined(&sym);
		if (!type)
			continue;
		if (vers && gelf_getversym(vers, (int)i, &vs) && (vs & RA_VERSYM_HIDDEN))
			continue;
		name = elf_strptr(elf, strndx, sym.st_name);
		if (name)
			found += match(name, type, names, n, nfn, vaddr, sym.st_value);
	}
	return (int)found;
}

/* .dynsym, its string table (sh_link) and .gnu.version, found by section headers. */
static int lookup_dynsym(Elf *elf, const char *const *names, size_t n, size_t nfn, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL, *symscn = NULL, *verscn = NULL;
	size_t strndx = 0, shnum;
	GElf_Ehdr eh;
	GElf_Shdr sh;

	/* libelf quietly drops a section header table cut short: corrupt, not stripped. */
	if (!gelf_getehdr(elf, &eh) || elf_getshdrnum(elf, &shnum) != 0 || (eh.e_shoff && !shnum))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (sh.sh_type == SHT_DYNSYM && !symscn) {
			symscn = scn;
			strndx = sh.sh_link;
		} else if (sh.sh_type == SHT_GNU_versym && !verscn) {
			verscn = scn;
		}
	}
	/* A static executable, or one whose section headers were stripped. */
	if (!symscn)
		return 0;
	return scan_syms(elf, symscn, strndx, verscn, names, n, nfn, vaddr);
}

static int elf_lookup(int fd, const char *const *names, size_t n, size_t nfn, uint64_t *vaddr,
		      uint64_t *load_bias_base, uint64_t *load_offset)
{
	uint64_t base = 0, off = 0;
	struct stat sb;
	Elf *elf;
	int r;

	if (fd < 0 || (n && (!names || !vaddr)))
		return -EINVAL;
	if (n)
		memset(vaddr, 0, n * sizeof(*vaddr));
	pthread_once(&elf_once, elf_init);
	if (!elf_ready)
		return -ENOSYS;
	if (fstat(fd, &sb) < 0)
		return -errno;
	if (!S_ISREG(sb.st_mode) || sb.st_size < (off_t)sizeof(Elf64_Ehdr))
		return -ENOEXEC;
	elf = elf_open(fd);
	if (!elf)
		return -ENOEXEC;
	r = check_header(elf);
	if (r == 0)
		r = first_load(elf, &base, &off);
	if (r == 0)
		r = lookup_dynsym(elf, names, n, nfn, vaddr);
	elf_end(elf);
	if (r >= 0 && load_bias_base)
		*load_bias_base = base;
	if (r >= 0 && load_offset)
		*load_offset = off;
	return r;
}

int ra_elf_lookup_fd(int fd, const char *const *names, size_t n, uint64_t *vaddr,
		     uint64_t *load_bias_base, uint64_t *load_offset)
{
	return elf_lookup(fd, names, n, n, vaddr, load_bias_base, load_offset);
}

int ra_elf_header_fd(int fd, struct ra_elf_header *h)
{
	GElf_Ehdr eh;
	Elf *elf;

	memset(h, 0, sizeof(*h));
	pthread_once(&elf_once, elf_init);
	if (!elf_ready)
		return -ENOSYS;
	elf = elf_open(fd);
	if (!elf)
		return -EIO;
	if (elf_kind(elf) == ELF_K_ELF) {
		h->elf = true;
		if (gelf_getehdr(elf, &eh)) {
			h->elf_class = gelf_getclass(elf);
			h->machine = eh.e_machine;
			h->type = eh.e_type;
		}
	}
	elf_end(elf);
	return 0;
}

/* ---- objects of a live process ---- */

struct find_ctx {
	const char *procfs;
	pid_t pid;
	const struct ra_maps *maps;
	const char *const *names;
	size_t n;
	size_t nfn;	 /* names[nfn..n): optional variables */
	uint64_t *vaddr; /* link-time values of the object being tried */
	uint64_t *addrs; /* run-time addresses, the result */
	bool only;	 /* only the preferred objects */
};

/* One mapped file: all mappings with the same identity as first. */
struct object {
	const struct ra_map *first;
	size_t rank; /* index of the first prefer[] entry matching the basename */
	bool exec;
};

static bool same_file(const struct ra_map *a, const struct ra_map *b)
{
	return a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->inode == b->inode && a->deleted == b->deleted && !strcmp(a->path, b->path);
}

static size_t prefer_rank(const char *path, const char *const *prefer, size_t nprefer)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t i;

	for (i = 0; i < nprefer; i++)
		if (!strncmp(base, prefer[i], strlen(prefer[i])))
			return i;
	return nprefer;
}

/* Group file-backed mappings (not "[vdso]", anonymous or "anon_inode:") in address order. */
static size_t group_objects(const struct ra_maps *maps, const char *const *prefer, size_t nprefer,
			    struct object *objs)
{
	const struct ra_map *m;
	size_t i, j, nobj = 0;

	for (i = 0; i < maps->n; i++) {
		m = &maps->v[i];
		if (m->inode == 0 || m->path[0] != '/')
			continue;
		/* Mappings of one file are nearly always adjacent: search backwards. */
		for (j = nobj; j > 0 && !same_file(objs[j - 1].first, m); j--)
			;
		if (j == 0) {
			objs[nobj].first = m;
			objs[nobj].rank = prefer_rank(m->path, prefer, nprefer);
			objs[nobj].exec = false;
			j = ++nobj;
		}
		objs[j - 1].exec |= m->x;
	}
	return nobj;
}

/* <procfs>/PID/map_files/START-END: the mapped file itself. */
static int map_files_path(const struct find_ctx *c, const struct ra_map *m, char *path, size_t len)
{
	char rest[64];

	snprintf(rest, sizeof(rest), "map_files/%" PRIx64 "-%" PRIx64, m->start, m->end);
	return ra_proc_path(path, len, c->procfs, c->pid, rest);
}

/* <procfs>/PID/root/PATH: the mapped path as the process sees it (maybe replaced since). */
static int root_path(const struct find_ctx *c, const struct ra_map *m, char *path, size_t len)
{
	char rest[PATH_MAX];
	int r = snprintf(rest, sizeof(rest), "root%s", m->path);

	if (r < 0 || (size_t)r >= sizeof(rest))
		return -ENAMETOOLONG;
	return ra_proc_path(path, len, c->procfs, c->pid, rest);
}

/* The file itself, or a path to it that must be checked to be the same file. */
static int open_object(const struct find_ctx *c, const struct ra_map *m)
{
	char path[PATH_MAX];
	struct stat sb;
	int fd, r;

	/*
	 * map_files hands us the mapped file even if it was deleted or lives in
	 * another mount namespace, but opening it needs CAP_SYS_ADMIN.
	 * O_NONBLOCK: a path swapped for a FIFO must not hang us.
	 */
	if (map_files_path(c, m, path, sizeof(path)) == 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd >= 0)
			return fd;
	}
	if (m->deleted)
		return -ENOENT;
	r = root_path(c, m, path, sizeof(path));
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* The path may have been replaced since it was mapped. */
	if (fstat(fd, &sb) < 0 || sb.st_dev != makedev(m->dev_major, m->dev_minor) ||
	    sb.st_ino != m->inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * With this bias, does every function land in an executable mapping of the
 * object? A variable is relocated with the bias its functions proved (it may
 * lie in .bss, an anonymous mapping); one not found stays 0.
 */
static bool relocate(const struct find_ctx *c, const struct ra_map *id, uint64_t bias)
{
	const struct ra_map *m;
	size_t i;

	for (i = c->nfn; i < c->n; i++)
		c->addrs[i] = c->vaddr[i] ? c->vaddr[i] + bias : 0;
	for (i = 0; i < c->nfn; i++) {
		c->addrs[i] = c->vaddr[i] + bias;
		m = ra_maps_find(c->maps, c->addrs[i]);
		if (!m || !m->x || !same_file(m, id))
			return false;
	}
	return true;
}

/*
 * Every mapping at the first segment's file offset is a candidate load
 * address: the file may be mapped twice (dlmopen), or a tiny file may have a
 * later segment at the same page offset. Address order puts the first
 * PT_LOAD of the lowest copy first.
 */
static int place(const struct find_ctx *c, const struct ra_map *id, uint64_t base, uint64_t off)
{
	const struct ra_map *m;
	size_t i;

	for (i = 0; i < c->maps->n; i++) {
		m = &c->maps->v[i];
		if (m->offset == off && same_file(m, id) && relocate(c, id, m->start - base))
			return 0;
	}
	return -ENOENT;
}

/*
 * What one ELF file defines, kept per file and names list: every process
 * that maps the same agent or libc reads it once. A file is known by what
 * stat says of it through the process's mapping (device, inode, size,
 * modification and change times: a library rebuilt in place is read again);
 * the names lists are the callers' constant arrays, known by address.
 */
#define ELF_CACHE 32
#define ELF_CACHE_NAMES 8

struct elf_entry {
	bool used;
	struct stat sb;
	const char *const *names;
	size_t n, nfn;
	int r;
	uint64_t vaddr[ELF_CACHE_NAMES], base, off;
};

static struct elf_entry elf_cache[ELF_CACHE];
static size_t elf_cache_next;
static pthread_mutex_t elf_cache_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The mapped file's identity, through map_files (else the process's root), checked against m. */
static bool object_stat(const struct find_ctx *c, const struct ra_map *m, struct stat *sb)
{
	char path[PATH_MAX];

	if (m->deleted)
		return false;
	if (map_files_path(c, m, path, sizeof(path)) < 0 || stat(path, sb)) {
		if (root_path(c, m, path, sizeof(path)) < 0 || stat(path, sb))
			return false;
	}
	return sb->st_dev == makedev(m->dev_major, m->dev_minor) && sb->st_ino == m->inode;
}

static struct elf_entry *elf_cache_find(const struct find_ctx *c, const struct stat *sb)
{
	for (size_t i = 0; i < ELF_CACHE; i++) {
		struct elf_entry *x = &elf_cache[i];

		if (x->used && same_stat(&x->sb, sb) && x->names == c->names && x->n == c->n &&
		    x->nfn == c->nfn)
			return x;
	}
	return NULL;
}

static bool elf_cached(const struct find_ctx *c, const struct stat *sb, int *r, uint64_t *base,
		       uint64_t *off)
{
	struct elf_entry *x;
	bool hit = false;

	pthread_mutex_lock(&elf_cache_lock);
	x = elf_cache_find(c, sb);
	if (x) {
		*r = x->r;
		*base = x->base;
		*off = x->off;
		memcpy(c->vaddr, x->vaddr, c->n * sizeof(*c->vaddr));
		hit = true;
	}
	pthread_mutex_unlock(&elf_cache_lock);
	return hit;
}

static void elf_keep(const struct find_ctx *c, const struct stat *sb, int r, uint64_t base,
		     uint64_t off)
{
	struct elf_entry *x;

	pthread_mutex_lock(&elf_cache_lock);
	x = elf_cache_find(c, sb);
	if (!x)
		x = &elf_cache[elf_cache_next++ % ELF_CACHE];
	x->used = true;
	x->sb = *sb;
	x->names = c->names;
	x->n = c->n;
	x->nfn = c->nfn;
	x->r = r;
	x->base = base;
	x->off = off;
	memcpy(x->vaddr, c->vaddr, c->n * sizeof(*c->vaddr));
	pthread_mutex_unlock(&elf_cache_lock);
}

/* 0 if the object defines every name; -ENOMEM is the only error worth stopping for. */
static int try_object(const struct find_ctx *c, const struct object *o)
{
	bool keep = c->n <= ELF_CACHE_NAMES;
	uint64_t base, off;
	struct stat sb;
	int fd, r;

	keep = keep && object_stat(c, o->first, &sb);
	if (!keep || !elf_cached(c, &sb, &r, &base, &off)) {
		fd = open_object(c, o->first);
		if (fd < 0)
			return fd;
		r = elf_lookup(fd, c->names, c->n, c->nfn, c->vaddr, &base, &off);
		close(fd);
		if (keep && r >= 0)
			elf_keep(c, &sb, r, base, off);
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->nfn; i++)
		if (!c->vaddr[i])
			return -ENOENT;
	return place(c, o->first, base, off);
}

/* Preferred objects first, in prefer[] order, then the rest; each rank in address order. */
static const struct object *search(const struct find_ctx *c, const struct object *objs, size_t nobj,
				   size_t nprefer, int *err)
{
	size_t rank, i;
	int r;

	for (rank = 0; rank <= nprefer && !(rank == nprefer && c->only); rank++) {
		for (i = 0; i < nobj; i++) {
			if (objs[i].rank != rank || !objs[i].exec)
				continue;
			r = try_object(c, &objs[i]);
			if (r == 0)
				return &objs[i];
			if (r == -ENOMEM) {
				*err = r;
				return NULL;
			}
		}
	}
	*err = -ENOENT;
	return NULL;
}

static int find(const char *procfs, pid_t pid, const struct ra_maps *maps, const char *const *names,
		size_t n, size_t nfn, const char *const *prefer, bool only, uint64_t *addrs,
		char *obj, size_t objlen, struct ra_err *e)
{
	struct find_ctx c = {procfs, pid, maps, names, n, nfn, NULL, addrs, only};
	const struct object *found;
	struct object *objs = NULL;
	size_t nprefer = 0, nobj;
	int r;

	if (pid <= 0 || !maps || !names || !n || !nfn || nfn > n || !addrs) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR_INVALID_ARGUMENT,
			   "symbol lookup in pid %d: invalid argument", (int)pid);
		return -EINVAL;
	}
	if (!maps->n) {
		ra_err_set(e, ROCATTACH_STATUS_ERROR,
			   "symbol lookup in pid %d: no memory mappings (exited or zombie?)",
			   (int)pid);
		return -ESRCH;
	}
	while (prefer && prefer[nprefer])
		nprefer++;
	c.vaddr = calloc(n, sizeof(*c.vaddr));
	objs = calloc(maps->n, sizeof(*objs));
	if (!c.vaddr || !objs) {
		r = -ENOMEM;
		goto out;
	}
	nobj = group_objects(maps, prefer, nprefer, objs);
	found = search(&c, objs, nobj, nprefer, &r);
	if (found && obj && objlen)
		snprintf(obj, objlen, "%s", found->first->path);
	if (found)
		r = 0;
out:
	if (r < 0)
		memset(addrs, 0, n * sizeof(*addrs));
	/* -ENOENT is an answer, not a failure: the caller knows what it was looking for. */
	if (r < 0 && r != -ENOENT)
		ra_err_set(e, ROCATTACH_STATUS_ERROR, "symbol lookup in pid %d (%s): %s", (int)pid,
			   names[0], strerror(-r));
	free(objs);
	free(c.vaddr);
	return r;
}

int ra_symbols_find(const char *procfs, pid_t pid, const struct ra_maps *maps,
		    const char *const *names, size_t n, const char *const *prefer, uint64_t *addrs,
		    char *obj, size_t objlen, struct ra_err *e)
{
	return find(procfs, pid, maps, names, n, n, prefer, false, addrs, obj, objlen, e);
}

int ra_symbols_find_only(const char *procfs, pid_t pid, const struct ra_maps *maps,
			 const char *const *names, size_t n, size_t nfn, const char *const *only,
			 uint64_t *addrs, struct ra_err *e)
{
	return find(procfs, pid, maps, names, n, nfn, only, true, addrs, NULL, 0, e);
}

int ra_map_open(const char *procfs, pid_t pid, const struct ra_map *m)
{
	struct find_ctx c = {.procfs = procfs, .pid = pid};

	return open_object(&c, m);
}
