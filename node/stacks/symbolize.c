/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer (symbolize.h). Everything read from an ELF file is
 * untrusted: every libelf and libdw call is checked, and a bad file only
 * means "no name here".
 */
#include "symbolize.h"
#include "debugfile.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef RA_HAVE_LIBDW
#include <dwarf.h>
#include <elfutils/libdw.h>
#endif

struct sym {
	uint64_t value, size;
	const char *name; /* in the ELF file's string table */
	int rank;	  /* of names at one address, the lowest is shown (sym_rank) */
};

struct module {
	char *path;
	unsigned long inode;
	bool loaded, usable;
	int fd;
	Elf *elf;
	int dbg_fd;   /* its separate debug file (debugfile.h), -1: none */
	Elf *dbg_elf; /* where .symtab and DWARF come from when the file lacks them */
	struct sym *syms;
	size_t n_syms;
	GElf_Phdr *loads; /* PT_LOAD headers */
	size_t n_loads;
#ifdef RA_HAVE_LIBDW
	Dwarf *dw;
#endif
};

struct mapping {
	uint64_t start, end, pgoff;
	struct module *mod; /* NULL: anonymous or a special mapping */
	char special[32];   /* "[vdso]", "[stack]"... */
};

struct ra_symbolizer {
	char root[PATH_MAX];
	struct mapping *maps;
	size_t n_maps, cap_maps;
	struct module **mods;
	size_t n_mods;
};

bool ra_symbolizer_has_dwarf(void)
{
#ifdef RA_HAVE_LIBDW
	return true;
#else
	return false;
#endif
}

struct ra_symbolizer *ra_symbolizer_new(const char *root)
{
	struct ra_symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (root && strcmp(root, "/"))
		snprintf(s->root, sizeof(s->root), "%s", root);
	elf_version(EV_CURRENT);
	return s;
}

static void module_free(struct module *m)
{
#ifdef RA_HAVE_LIBDW
	if (m->dw)
		dwarf_end(m->dw);
#endif
	if (m->elf)
		elf_end(m->elf);
	if (m->fd >= 0)
		close(m->fd);
	if (m->dbg_elf)
		elf_end(m->dbg_elf);
	if (m->dbg_fd >= 0)
		close(m->dbg_fd);
	free(m->syms);
	free(m->loads);
	free(m->path);
	free(m);
}

void ra_symbolizer_free(struct ra_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_mods; i++)
		module_free(s->mods[i]);
	free(s->mods);
	free(s->maps);
	free(s);
}

static struct module *module_get(struct ra_symbolizer *s, const char *path, unsigned long inode)
{
	struct module *m, **grown;

	for (size_t i = 0; i < s->n_mods; i++)
		if (!strcmp(s->mods[i]->path, path))
			return s->mods[i];
	m = calloc(1, sizeof(*m));
	grown = realloc(s->mods, (s->n_mods + 1) * sizeof(*grown));
	if (!m || !grown || !(m->path = strdup(path))) {
		free(m);
		if (grown)
			s->mods = grown;
		return NULL;
	}
	m->fd = -1;
	m->dbg_fd = -1;
	m->inode = inode;
	s->mods = grown;
	s->mods[s->n_mods++] = m;
	return m;
}

static int add_mapping(struct ra_symbolizer *s, const struct mapping *mp)
{
	if (s->n_maps == s->cap_maps) {
		size_t cap = s->cap_maps ? 2 * s->cap_maps : 64;
		struct mapping *grown = realloc(s->maps, cap * sizeof(*grown));

		if (!grown)
			return -1;
		s->maps = grown;
		s->cap_maps = cap;
	}
	s->maps[s->n_maps++] = *mp;
	return 0;
}

/* One line: "start-end perms offset dev inode [path]"; lines that do not parse are skipped. */
static int parse_line(struct ra_symbolizer *s, const char *line)
{
	struct mapping mp = {0};
	unsigned long long start, end, off;
	unsigned long inode;
	char perms[8], path[PATH_MAX];
	int n = 0;

	path[0] = '\0';
	if (sscanf(line, "%llx-%llx %7s %llx %*s %lu %n", &start, &end, perms, &off, &inode, &n) <
		5 ||
	    start >= end)
		return 0;
	sscanf(line + n, "%4095[^\n]", path);
	mp.start = start;
	mp.end = end;
	mp.pgoff = off;
	if (path[0] == '/') {
		char *del = strstr(path, " (deleted)");

		if (del && !del[10])
			*del = '\0';
		mp.mod = module_get(s, path, inode);
		if (!mp.mod)
			return -1;
	} else if (path[0] == '[') {
		snprintf(mp.special, sizeof(mp.special), "%s", path);
	}
	return add_mapping(s, &mp);
}

int ra_symbolizer_add_maps(struct ra_symbolizer *s, const char *text)
{
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[PATH_MAX + 128];

		if (len < sizeof(line)) {
			memcpy(line, p, len);
			line[len] = '\0';
			if (parse_line(s, line)) {
				errno = ENOMEM;
				return -1;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* Sized symbols first at one address: they say where a function ends. */
	if ((x->size == 0) != (y->size == 0))
		return (x->size == 0) - (y->size == 0);
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/*
 * Of aliases at one address, the exported name (read) before a debug
 * file's internal ones (__GI___libc_read, __libc_read): .dynsym first, then
 * global, weak, local; of equals, a name without a leading '_' (getpid, not
 * __getpid).
 */
static int sym_rank(GElf_Word table, const GElf_Sym *sym, const char *name)
{
	int bind = GELF_ST_BIND(sym->st_info), r;

	if (table == SHT_DYNSYM)
		r = bind == STB_LOCAL ? 2 : 0;
	else
		r = bind == STB_GLOBAL ? 1 : bind == STB_WEAK ? 2 : 3;
	return 2 * r + (name[0] == '_');
}

/* Functions of one symbol table (.symtab or .dynsym) of elf, appended. */
static void read_symtab(struct module *m, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n, k = 0;
	struct sym *grown;

	if (!data || !sh->sh_entsize)
		return;
	n = sh->sh_size / sh->sh_entsize;
	grown = realloc(m->syms, (m->n_syms + n) * sizeof(*grown));
	if (!grown)
		return;
	m->syms = grown;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int type;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		m->syms[m->n_syms + k++] = (struct sym){sym.st_value, sym.st_size, name,
							sym_rank(sh->sh_type, &sym, name)};
	}
	m->n_syms += k;
}

static void read_loads(struct module *m)
{
	size_t n;

	if (elf_getphdrnum(m->elf, &n) || !n)
		return;
	m->loads = calloc(n, sizeof(*m->loads));
	if (!m->loads)
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(m->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			m->loads[m->n_loads++] = ph;
	}
}

/*
 * A regular file, and the process's (its inode): the paths come from a
 * file the target's user wrote, so a FIFO or a device named there is
 * never read (the open does not block: O_NONBLOCK).
 */
static bool same_file(const struct ra_symbolizer *s, const struct module *m, int fd)
{
	struct stat stbuf;

	if (fstat(fd, &stbuf) || !S_ISREG(stbuf.st_mode))
		return false;
	if (s->root[0] || !m->inode)
		return true; /* a captured tree: its inodes are not the process's */
	return stbuf.st_ino == m->inode;
}

/* The symbol tables of one type in elf, appended; how many there were. */
static int read_symtabs(struct module *m, Elf *elf, GElf_Word type)
{
	Elf_Scn *scn = NULL;
	int n = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == type) {
			read_symtab(m, elf, scn, &sh);
			n++;
		}
	}
	return n;
}

/* A .debug_info section with contents (a debug file's stripped one is SHT_NOBITS). */
static bool has_dwarf(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

/* The separate debug file, where the file lacks a .symtab or DWARF (libc6-dbg's). */
static void debug_file(struct ra_symbolizer *s, struct module *m)
{
	m->dbg_fd = ra_debugfile_open(s->root, m->path, m->elf);
	if (m->dbg_fd < 0)
		return;
	m->dbg_elf = elf_begin(m->dbg_fd, ELF_C_READ_MMAP, NULL);
	if (m->dbg_elf && elf_kind(m->dbg_elf) == ELF_K_ELF)
		return;
	if (m->dbg_elf)
		elf_end(m->dbg_elf);
	m->dbg_elf = NULL;
	close(m->dbg_fd);
	m->dbg_fd = -1;
}

static void module_load(struct ra_symbolizer *s, struct module *m)
{
	char path[2 * PATH_MAX];
	struct stat pre;

	m->loaded = true;
	snprintf(path, sizeof(path), "%s%s", s->root, m->path);
	/* Looked at before the open too: opening a device may act on it. */
	if (stat(path, &pre) || !S_ISREG(pre.st_mode))
		return;
	m->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (m->fd < 0 || !same_file(s, m, m->fd))
		return;
	m->elf = elf_begin(m->fd, ELF_C_READ_MMAP, NULL);
	if (!m->elf || elf_kind(m->elf) != ELF_K_ELF)
		return;
	read_loads(m);
	read_symtabs(m, m->elf, SHT_DYNSYM);
	if (!read_symtabs(m, m->elf, SHT_SYMTAB) || !has_dwarf(m->elf))
		debug_file(s, m);
	if (m->dbg_elf)
		read_symtabs(m, m->dbg_elf, SHT_SYMTAB);
	if (m->n_syms)
		qsort(m->syms, m->n_syms, sizeof(*m->syms), sym_cmp);
#ifdef RA_HAVE_LIBDW
	m->dw = dwarf_begin_elf(m->elf, DWARF_C_READ, NULL);
	if (!m->dw && m->dbg_elf)
		m->dw = dwarf_begin_elf(m->dbg_elf, DWARF_C_READ, NULL);
#endif
	m->usable = true;
}

/* The file offset of a mapped address, as an address of the ELF file's own space. */
static uint64_t file_vaddr(const struct module *m, uint64_t off)
{
	for (size_t i = 0; i < m->n_loads; i++) {
		const GElf_Phdr *ph = &m->loads[i];

		if (off >= ph->p_offset && off < ph->p_offset + ph->p_filesz)
			return off - ph->p_offset + ph->p_vaddr;
	}
	return off;
}

static const struct sym *find_sym(const struct module *m, uint64_t a)
{
	size_t lo = 0, hi = m->n_syms;
	const struct sym *best;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->syms[mid].value <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* The last symbol at or below a; of several at one address, the sized one. */
	best = &m->syms[lo - 1];
	while (best > m->syms && best[-1].value == best->value)
		best--;
	if (best->size && a >= best->value + best->size)
		return NULL;
	return best;
}

static void set_name(char *dst, size_t len, const char *name)
{
	char *d = ra_demangle(name);

	snprintf(dst, len, "%s", d ? d : name);
	free(d);
}

static const struct mapping *find_mapping(const struct ra_symbolizer *s, uint64_t addr)
{
	for (size_t i = 0; i < s->n_maps; i++)
		if (addr >= s->maps[i].start && addr < s->maps[i].end)
			return &s->maps[i];
	return NULL;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

#ifdef RA_HAVE_LIBDW
static const char *die_func_name(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	const char *n = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
		n = dwarf_formstring(&at);
	return n ? n : dwarf_diename(die);
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *inl, int *line)
{
	Dwarf_Attribute at;
	Dwarf_Word idx = 0, ln = 0;
	Dwarf_Files *files;
	size_t nfiles;

	*line = 0;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &at), &ln) == 0)
		*line = (int)ln;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &at), &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

/*
 * The inlined chain at a, innermost first, and the line of each. Frame k's
 * function is scope k's; its file:line is the line table's for k = 0 and
 * the call site recorded in scope k-1 (the inlined call) after that.
 */
static int dwarf_frames(struct module *m, uint64_t a, struct ra_frame *out, int max)
{
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Line *l;
	const char *file = NULL;
	int line = 0, n = 0, ns;

	if (!m->dw || !dwarf_addrdie(m->dw, a, &cu))
		return 0;
	l = dwarf_getsrc_die(&cu, a);
	if (l) {
		file = dwarf_linesrc(l, NULL, NULL);
		dwarf_lineno(l, &line);
	}
	/*
	 * dwarf_getscopes stops at the innermost inlined call's abstract
	 * scopes; the DIE nesting of that call (dwarf_getscopes_die) holds the
	 * functions it is inlined in.
	 */
	ns = dwarf_getscopes(&cu, a, &scopes);
	for (int i = 0; i < ns; i++) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Die die;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		die = scopes[i];
		free(scopes);
		scopes = NULL;
		ns = dwarf_getscopes_die(&die, &scopes);
		break;
	}
	for (int i = 0; i < ns && n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		const char *name;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		name = die_func_name(&scopes[i]);
		set_name(out[n].func, sizeof(out[n].func), name ? name : "");
		snprintf(out[n].file, sizeof(out[n].file), "%s", file ? file : "");
		out[n].line = line;
		out[n].inlined = tag == DW_TAG_inlined_subroutine;
		n++;
		if (tag == DW_TAG_subprogram)
			break;
		file = call_file(&cu, &scopes[i], &line);
	}
	free(scopes);
	return n;
}
#endif

static void frame_base(struct ra_frame *f, const char *module, uint64_t offset)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->module, sizeof(f->module), "%s", module);
	f->offset = offset;
}

int ra_symbolize(struct ra_symbolizer *s, uint64_t addr, bool is_return, struct ra_frame *out,
		 int max)
{
	uint64_t a = is_return && addr ? addr - 1 : addr;
	const struct mapping *mp = find_mapping(s, a);
	const struct sym *sym;
	struct module *m;
	uint64_t va;
	int n = 0;

	if (max <= 0)
		return 0;
	if (!mp || !mp->mod) {
		frame_base(out, mp && mp->special[0] ? mp->special : "[unknown]",
			   mp && mp->special[0] ? a - mp->start : a);
		return 1;
	}
	m = mp->mod;
	if (!m->loaded)
		module_load(s, m);
	va = m->usable ? file_vaddr(m, a - mp->start + mp->pgoff) : a - mp->start + mp->pgoff;
	frame_base(out, base_name(m->path), va);
	if (!m->usable)
		return 1;
#ifdef RA_HAVE_LIBDW
	{
		struct ra_frame tmp[16];
		int k = dwarf_frames(m, va, tmp, max < 16 ? max : 16);

		for (int i = 0; i < k; i++) {
			out[i] = tmp[i];
			snprintf(out[i].module, sizeof(out[i].module), "%s", base_name(m->path));
			out[i].offset = va;
		}
		n = k;
	}
#endif
	sym = find_sym(m, va);
	/* The symbol table's name is the outer function's full (mangled) one: prefer it. */
	if (sym && (n == 0 || !out[n - 1].inlined)) {
		if (n == 0)
			n = 1;
		set_name(out[n - 1].func, sizeof(out[n - 1].func), sym->name);
	}
	return n ? n : 1;
}

void ra_frame_format(const struct ra_frame *f, char *buf, size_t len)
{
	const char *in = f->inlined ? " [inlined]" : "";

	if (!f->func[0])
		snprintf(buf, len, "%s+0x%" PRIx64, f->module, f->offset);
	else if (f->file[0] && f->line)
		snprintf(buf, len, "%s (%s:%d)%s", f->func, f->file, f->line, in);
	else
		snprintf(buf, len, "%s%s", f->func, in);
}
