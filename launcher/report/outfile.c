/* SPDX-License-Identifier: MIT */
/*
 * What the writers share: times as text, the files, written whole or not
 * at all (PATH.tmp renamed over PATH), and JSON strings.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "report_int.h"

/* ------------------------------------------------------------------------ */
/* Times as text. */

/* CLOCK_REALTIME ns as ISO-8601 UTC with milliseconds; "-" for 0. */
void rm_fmt_time(uint64_t ns, char *buf, size_t len)
{
	time_t sec = (time_t)(ns / 1000000000u);
	struct tm tm;
	size_t k;

	if (!ns || !gmtime_r(&sec, &tm) || !(k = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm))) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf + k, len - k, ".%03uZ", (unsigned)(ns / 1000000u % 1000u));
}

/* ------------------------------------------------------------------------ */
/* Files, written whole or not at all: PATH.tmp, then renamed over PATH. */

static int out_fail(struct rm_out *o, int e, char *err, size_t len)
{
	snprintf(err, len, "cannot write %s %s: %s", o->what, o->path, strerror(e));
	if (o->f)
		fclose(o->f);
	if (o->tmp) {
		unlink(o->tmp);
		free(o->tmp);
	}
	o->f = NULL;
	o->tmp = NULL;
	return -1;
}

int rm_out_abort(struct rm_out *o, int e, char *err, size_t len)
{
	return out_fail(o, e, err, len);
}

/*
 * Rank 0 may run as root and PATH may be in a shared directory: never
 * follow a symbolic link planted at PATH.tmp.
 */
int rm_out_open(struct rm_out *o, const char *path, const char *what, char *err, size_t len)
{
	int fd, e;

	*o = (struct rm_out){.path = path, .what = what};
	if (asprintf(&o->tmp, "%s.tmp", path) < 0) {
		o->tmp = NULL;
		return out_fail(o, ENOMEM, err, len);
	}
	fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		/* Nothing was created: keep unlink away from a file that is not ours. */
		e = errno;
		free(o->tmp);
		o->tmp = NULL;
		return out_fail(o, e, err, len);
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		e = errno;
		close(fd);
		return out_fail(o, e, err, len);
	}
	errno = 0;
	return 0;
}

int rm_out_close(struct rm_out *o, char *err, size_t len)
{
	int e = 0;

	if (ferror(o->f))
		e = errno ? errno : EIO;
	if (fclose(o->f) && !e)
		e = errno;
	o->f = NULL;
	if (!e && rename(o->tmp, o->path))
		e = errno;
	if (e)
		return out_fail(o, e, err, len);
	free(o->tmp);
	return 0;
}

int rm_out_done(struct rm_out *o, const struct rm_store *s, char *err, size_t len)
{
	char why[512];

	if (!rm_store_check(s, why, sizeof(why)))
		return rm_out_close(o, err, len);
	out_fail(o, EIO, err, len);
	snprintf(err, len, "cannot write %s %s: %s", o->what, o->path, why);
	return -1;
}

/* ------------------------------------------------------------------------ */
/* JSON files (the report, the trace). */

/* One JSON string maker for every layer (node/record_json.c): any length, non-UTF-8 as '?'. */
json_t *rm_jstr(const char *s, size_t width)
{
	return rn_json_str(s, width);
}

json_t *rm_jstr_or_null(const char *s)
{
	return s ? rm_jstr(s, (size_t)-1) : json_null();
}
