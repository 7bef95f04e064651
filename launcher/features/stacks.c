/* SPDX-License-Identifier: MIT */
/*
 * rocattach-mpi --stacks (docs/stacks.md): every node attaches the stack
 * tool for one snapshot at the window's start, reads back each target's
 * file after the detach, names its addresses here and sends the stacks to
 * rank 0 as folded lines, with its records (one message, so the records'
 * deadlines bound it). Rank 0 merges them into one tree.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stacks.h"
#include "pyframes.h"
#include "stacks_tree.h"

#define STACKS_SONAME "librocattach-stacks.so"

static char found_tool[PATH_MAX];

static bool is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* path's directory + STACKS_SONAME into found_tool; true if it is there. */
static bool beside(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	if (!slash)
		return false;
	snprintf(found_tool, sizeof(found_tool), "%.*s/%s", (int)(slash - path), path,
		 STACKS_SONAME);
	return is_file(found_tool);
}

/*
 * The tool: $ROCATTACH_STACKS_TOOL, else beside the agent as the library
 * finds it ($ROCATTACH_AGENT, else beside librocattach.so).
 */
int rm_stacks_find_tool(struct rm_opts *o, char *err, size_t len)
{
	const char *env = getenv("ROCATTACH_STACKS_TOOL"), *agent = getenv("ROCATTACH_AGENT");
	char where[PATH_MAX] = "librocattach's directory";
	Dl_info info;

	if (env && *env) {
		snprintf(found_tool, sizeof(found_tool), "%s", env);
		if (!is_file(found_tool)) {
			snprintf(
			    err, len,
			    "the stack tool: ROCATTACH_STACKS_TOOL=%s: %s: set it to the path of "
			    "%s, or unset it",
			    env, strerror(errno ? errno : ENOENT), STACKS_SONAME);
			return -1;
		}
	} else if (agent && *agent) {
		snprintf(where, sizeof(where), "%s", agent);
		if (!beside(agent))
			goto missing;
	} else if (!dladdr((void *)rocattach_attach, &info) || !info.dli_fname ||
		   !realpath(info.dli_fname, where) || !beside(where)) {
		goto missing;
	}
	o->tools = found_tool;
	return 0;
missing:
	snprintf(err, len,
		 "the stack tool: cannot find %s beside %s: install it there, or set "
		 "ROCATTACH_STACKS_TOOL=/path/to/%s",
		 STACKS_SONAME, where, STACKS_SONAME);
	return -1;
}

/* The folder of uid in s, NULL if none was prepared. */
static const struct rm_stacks_user *user_of(const struct rm_stacks *s, uid_t uid)
{
	for (size_t i = 0; i < s->n_users; i++)
		if (s->users[i].uid == uid)
			return &s->users[i];
	return NULL;
}

/*
 * uid's folder u<uid> in the directory (dfd): made here (no one else can
 * write in the directory), then given to uid, private to it, so that the
 * tool in its targets writes there and no other user can.
 */
static void make_user(struct rm_stacks *s, int dfd, struct rm_stacks_user *u, uid_t uid, int hz)
{
	char name[16];

	memset(u, 0, sizeof(*u));
	u->uid = uid;
	snprintf(name, sizeof(name), "u%u", (unsigned)uid);
	snprintf(u->dir, sizeof(u->dir), "%s/%s", s->dir, name);
	snprintf(u->var[0], sizeof(u->var[0]), "ROCPROF_OUTPUT_PATH=%s", u->dir);
	snprintf(u->var[1], sizeof(u->var[1]), "ROCPROF_STACKS_HZ=%d", hz);
	if (mkdirat(dfd, name, 0700) || fchmodat(dfd, name, 0700, 0) ||
	    (uid != geteuid() && fchownat(dfd, name, uid, (gid_t)-1, AT_SYMLINK_NOFOLLOW)))
		snprintf(u->error, sizeof(u->error),
			 "cannot make a folder for user %u in %s: %s (this launcher runs as uid "
			 "%u)",
			 (unsigned)uid, s->dir, strerror(errno), (unsigned)geteuid());
}

/* A folder for each user of t[0..n) (s->dir made); -1 out of memory. */
static int make_users(struct rm_stacks *s, int dfd, const struct rn_target *t, size_t n, int hz)
{
	size_t cap = 0;
	void *more;

	for (size_t k = 0; k < n; k++) {
		if (user_of(s, t[k].uid))
			continue;
		if (s->n_users == cap) {
			cap = cap ? 2 * cap : 4;
			if (!(more = realloc(s->users, cap * sizeof(*s->users))))
				return -1;
			s->users = more;
		}
		make_user(s, dfd, &s->users[s->n_users++], t[k].uid, hz);
	}
	/* Once every folder is where it stays. */
	for (size_t i = 0; i < s->n_users; i++) {
		s->users[i].env[0] = s->users[i].var[0];
		s->users[i].env[1] = s->users[i].var[1];
		s->users[i].env[2] = NULL;
	}
	return 0;
}

/*
 * A directory of this node for the tool's files, in $ROCATTACH_STACKS_DIR,
 * else $TMPDIR, else /tmp: private to this run, this launcher's, and
 * writable by no one else (mode 0711: each target user reaches its own
 * folder in it, and nothing more).
 */
int rm_stacks_prepare(struct rm_stacks *s, int hz, const struct rn_target *t, size_t n, char *err,
		      size_t len)
{
	const char *tmp = getenv("ROCATTACH_STACKS_DIR");
	int dfd = -1, e;

	if (!tmp || !*tmp)
		tmp = getenv("TMPDIR");
	snprintf(s->dir, sizeof(s->dir), "%s/rocattach-mpi-stacks.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	s->users = NULL;
	s->n_users = 0;
	if (mkdtemp(s->dir) && !chmod(s->dir, 0711) &&
	    (dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0 &&
	    !make_users(s, dfd, t, n, hz)) {
		close(dfd);
		return 0;
	}
	e = errno;
	snprintf(err, len,
		 "--stacks: cannot make a directory %s: %s: set ROCATTACH_STACKS_DIR to a "
		 "writable directory",
		 s->dir, strerror(e));
	if (dfd >= 0)
		close(dfd);
	rm_stacks_cleanup(s);
	return -1;
}

/* Every target's user has a folder (rm_stacks_prepare), so never NULL while attaching. */
const char *const *rm_stacks_env_of(const struct rn_target *t, void *arg)
{
	const struct rm_stacks_user *u = user_of(arg, t->uid);

	return u ? u->env : NULL;
}

/* The pid and n of "rocattach-stacks.<host>.<pid>.<n>.txt" (host names may hold dots). */
static bool parse_name(const char *name, long *pid, long *n)
{
	size_t nl = strlen(name);
	char buf[NAME_MAX + 1], *dot;

	if (strncmp(name, "rocattach-stacks.", 17) || nl < 21 || nl > NAME_MAX ||
	    strcmp(name + nl - 4, ".txt"))
		return false;
	memcpy(buf, name, nl - 4);
	buf[nl - 4] = '\0';
	for (int i = 0; i < 2; i++) {
		char *end;

		dot = strrchr(buf, '.');
		if (!dot || !dot[1])
			return false;
		*(i ? pid : n) = strtol(dot + 1, &end, 10);
		if (*end)
			return false;
		*dot = '\0';
	}
	return true;
}

/* The file of nspid with the highest n (its last attach). */
static bool find_file(const char *dir, pid_t nspid, char *path, size_t len)
{
	long best = 0, pid, n;
	struct dirent *d;
	DIR *dp = opendir(dir);

	if (!dp)
		return false;
	while ((d = readdir(dp)))
		if (parse_name(d->d_name, &pid, &n) && pid == nspid && n > best) {
			best = n;
			snprintf(path, len, "%s/%s", dir, d->d_name);
		}
	closedir(dp);
	return best > 0;
}

/* One frame in brackets for a target whose stacks are not there, and why. */
static void fold_missing(FILE *out, const char *host, long rank, const char *why)
{
	fprintf(out, "%s;rank %ld;[no stacks: ", host, rank);
	for (; *why; why++)
		fputc(*why == ';' || *why == '\n' ? ',' : *why, out);
	fputs("] 1\n", out);
}

/* One target's file: its snapshot into snap, its samples into samples (either may be NULL). */
static void fold_one(FILE *snap, FILE *samples, FILE *timed, const char *host,
		     const struct rn_target *t, const char *path, size_t *missing)
{
	char prefix[400];

	struct ra_stackfile f;
	struct ra_symbolizer *sym;
	char err[512];
	long lines = 0;

	if (ra_stackfile_read_owned(path, t->uid, &f, err, sizeof(err))) {
		if (snap)
			fold_missing(snap, host, t->rank, err);
		*missing += samples != NULL;
		return;
	}
	/* Python frames are named from the target's memory: it runs on, untraced. */
	ra_py_open(&f, t->pid);
	sym = ra_symbolizer_new(NULL);
	if (!sym || ra_symbolizer_add_maps(sym, f.maps ? f.maps : "")) {
		lines = -1;
	} else {
		if (snap && ra_stackfile_fold(&f, sym, host, t->rank, false, snap) < 0)
			lines = -1;
		if (samples && lines >= 0)
			lines = ra_stackfile_fold(&f, sym, host, t->rank, true, samples);
		snprintf(prefix, sizeof(prefix), "%s\t%ld\t%d", host, t->rank, (int)t->pid);
		if (timed && lines >= 0 && ra_stackfile_timed(&f, sym, prefix, timed) < 0)
			lines = -1;
	}
	if (lines < 0 && snap)
		fold_missing(snap, host, t->rank, "out of memory naming its frames");
	*missing += samples && lines < 0;
	ra_symbolizer_free(sym);
	ra_stackfile_free(&f);
}

/* Why the folder of uid is missing (NULL: it is there, in *dir). */
static const char *user_error(const struct rm_stacks *s, uid_t uid, const char **dir)
{
	const struct rm_stacks_user *u = user_of(s, uid);

	if (!u)
		return "no folder was made for its user";
	*dir = u->dir;
	return u->error[0] ? u->error : NULL;
}

/* Why target t has no stacks, or NULL if its file should be there. */
static const char *no_stacks(const struct rn_target *t, const char *node_error)
{
	if (node_error[0])
		return node_error;
	if (t->state == RN_DETACHED || t->state == RN_DIED_ATTACHED)
		return NULL;
	return t->state == RN_ATTACH_FAILED ? "not attached" : rn_state_name(t->state);
}

static FILE *open_text(char **text, size_t *size, bool want)
{
	free(*text);
	*text = NULL;
	return want ? open_memstream(text, size) : NULL;
}

static void close_text(FILE *f, char **text)
{
	if (f && fclose(f)) {
		free(*text);
		*text = NULL;
	}
}

/*
 * After the detach: each target's file, named and folded, into s->text
 * (the snapshot) and s->samples. In the snapshot a target that got none is
 * one bracketed frame saying why; in the samples it is counted
 * (s->samples_missing; a target that used no CPU has no sample, and is not). A target with no rank
 * cannot be put in a tree and is left out (counted).
 */
void rm_stacks_fold(struct rm_stacks *s, const char *host, const struct rn_target *t, size_t n,
		    const char *node_error, bool snapshot, bool samples, bool timed)
{
	char path[PATH_MAX + 300];
	size_t size[3] = {0, 0, 0};
	FILE *snap = open_text(&s->text, &size[0], snapshot);
	FILE *smp = open_text(&s->samples, &size[1], samples);
	FILE *tmd = open_text(&s->timed, &size[2], timed);
	const char *why, *dir = NULL;

	s->no_rank = s->samples_missing = 0;
	for (size_t i = 0; i < n; i++) {
		if (t[i].rank < 0) {
			s->no_rank++;
		} else if ((why = no_stacks(&t[i], node_error)) ||
			   (why = user_error(s, t[i].uid, &dir)) ||
			   !find_file(dir, t[i].nspid, path, sizeof(path))) {
			if (snap)
				fold_missing(snap, host, t[i].rank,
					     why ? why : "the tool wrote no file");
			s->samples_missing += smp != NULL;
		} else {
			fold_one(snap, smp, tmd, host, &t[i], path, &s->samples_missing);
		}
	}
	close_text(snap, &s->text);
	close_text(smp, &s->samples);
	close_text(tmd, &s->timed);
}

/* Whatever is in the folder name of dfd (a user's: anything it put there), then the folder. */
static void empty_folder(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *d;

	if (!dp) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((d = readdir(dp)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") &&
		    unlinkat(dirfd(dp), d->d_name, 0))
			(void)unlinkat(dirfd(dp), d->d_name, AT_REMOVEDIR);
	closedir(dp);
	(void)unlinkat(dfd, name, AT_REMOVEDIR);
}

/* The users' folders and their files, then the directory (s->text stays). */
void rm_stacks_cleanup(struct rm_stacks *s)
{
	char name[32];
	int dfd;

	if (s->dir[0] &&
	    (dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		for (size_t i = 0; i < s->n_users; i++) {
			snprintf(name, sizeof(name), "u%u", (unsigned)s->users[i].uid);
			empty_folder(dfd, name);
		}
		close(dfd);
		(void)rmdir(s->dir);
	}
	free(s->users);
	s->users = NULL;
	s->n_users = 0;
	s->dir[0] = '\0';
}

/* Rank 0: one node's folded lines into the tree; the lines refused, counted. */
size_t rm_stacks_merge(struct ra_stack_tree *tree, const char *text, size_t len)
{
	size_t bad = 0;
	char err[256], *copy = strndup(text, len), *save = NULL;

	if (!copy)
		return 1;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		bad += ra_stack_tree_add_folded(tree, line, err, sizeof(err)) != 0;
	free(copy);
	return bad;
}
