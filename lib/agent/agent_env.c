/* SPDX-License-Identifier: MIT */
/*
 * The environment an attach brings (agent.h): the buffer read in one pass
 * once it is checked, its pairs applied to environ, undone if the attach
 * fails.
 *
 * A reattach with the same variables (rocprofv3's tool cannot take other
 * collection options, and nothing unsets them at a detach) finds every one
 * already set. Looking each up by name (getenv scans environ, and every
 * ROCP* entry shares its first bytes) was most of what 31 of rocprofv3's
 * variables still cost a warm attach (see bench/README.md). So the agent
 * keeps where each variable it was sent stands in environ, by its name's
 * hash, and checks that place instead: the entry there must still read NAME=VALUE.
 * The places hold while environ keeps its array and its length: setenv and
 * putenv replace an entry in place or append one, unsetenv moves entries
 * down and shortens the array, clearenv empties it. Whenever an attach sets
 * a variable, or the array or its length changed, the places are dropped
 * and found again by name on the next attach, as before. What the tools
 * see does not change: a variable whose entry differs is set as before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rocattach/tool.h>

#include "agent/agent_base.h"
#include "agent/agent_env.h"
#include "common/envbuf.h"
#include "common/protocol.h"

extern char **environ;

/*
 * Of the last attach that applied its buffer (one refused before, or one
 * finding the window open, applies none): [0] the pairs the tools see,
 * [1] of those, set (absent or different before), [2] found with their
 * value at their kept place in environ (no lookup by name). Written before
 * the entry point returns.
 */
RA_EXPORT uint32_t rocattach_agent_env_counts[3];

struct env_prev {
	char *name;
	char *value; /* NULL: was unset */
};

/*
 * Where one variable stands in environ, by the hash of its name only: the
 * entry at idx is read in full before it counts (two names of one hash
 * share a slot, and the one not kept is looked up by name, as before).
 * Nothing else is read, so a reattach touches few cache lines.
 */
struct env_place {
	uint64_t hash; /* 0: free slot */
	size_t idx;
};

/* Open addressing, a power of two, at most half full. Under agent_lock. */
static struct {
	char **at;    /* environ when the places were found */
	size_t count; /* its entries then */
	struct env_place *slot;
	size_t cap, used;
} places;

/* FNV-1a over the name, never 0. */
static uint64_t name_hash(const char *s, size_t len)
{
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h ? h : 1;
}

static struct env_place *place_slot(uint64_t hash)
{
	size_t i = (size_t)hash & (places.cap - 1);

	while (places.slot[i].hash && places.slot[i].hash != hash)
		i = (i + 1) & (places.cap - 1);
	return &places.slot[i];
}

static void places_drop(void)
{
	if (places.used)
		memset(places.slot, 0, places.cap * sizeof(*places.slot));
	places.used = 0;
	places.at = NULL;
	places.count = 0;
}

static size_t environ_count(void)
{
	size_t n = 0;

	while (environ && environ[n])
		n++;
	return n;
}

/* Double the table; false if out of memory (the place is then not kept). */
static bool places_grow(void)
{
	struct env_place *old = places.slot;
	size_t oldcap = places.cap, cap = oldcap ? 2 * oldcap : 64;

	places.slot = calloc(cap, sizeof(*places.slot));
	if (!places.slot) {
		places.slot = old;
		return false;
	}
	places.cap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].hash)
			*place_slot(old[i].hash) = old[i];
	free(old);
	return true;
}

static void place_keep(uint64_t hash, size_t idx)
{
	struct env_place *p;

	if (2 * (places.used + 1) > places.cap && !places_grow())
		return;
	p = place_slot(hash);
	if (!p->hash) {
		p->hash = hash;
		places.used++;
	}
	p->idx = idx;
}

/* Does the entry read NAME=VALUE? */
static bool entry_is(const char *e, const char *name, size_t namelen, const char *value)
{
	return !strncmp(e, name, namelen) && e[namelen] == '=' && !strcmp(e + namelen + 1, value);
}

/* name's kept place still holds its value: nothing to do. */
static bool still_set(uint64_t hash, const char *name, size_t namelen, const char *value)
{
	struct env_place *p;

	if (!places.used)
		return false;
	p = place_slot(hash);
	return p->hash && p->idx < places.count && entry_is(environ[p->idx], name, namelen, value);
}

/* The first entry of name, as getenv finds it; -1 if none. */
static long env_index(const char *name, size_t namelen)
{
	for (size_t i = 0; environ && environ[i]; i++)
		if (!strncmp(environ[i], name, namelen) && environ[i][namelen] == '=')
			return (long)i;
	return -1;
}

/* old: the value name has now (NULL: unset), kept to be restored. */
static int env_save(struct env_undo *u, const char *name, const char *old)
{
	struct env_prev *v;

	if (u->n == u->cap) {
		v = realloc(u->v, (u->cap ? 2 * u->cap : 8) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		u->v = v;
		u->cap = u->cap ? 2 * u->cap : 8;
	}
	v = &u->v[u->n];
	v->name = strdup(name);
	v->value = old ? strdup(old) : NULL;
	if (!v->name || (old && !v->value)) {
		free(v->name);
		free(v->value);
		return -ENOMEM;
	}
	u->n++;
	return 0;
}

/* One pair: left as it is when it already has its value, else set with its undo kept. */
static int apply_one(struct env_undo *u, const char *name, const char *value)
{
	size_t namelen = strlen(name);
	uint64_t hash = name_hash(name, namelen);
	long i;

	if (still_set(hash, name, namelen, value)) {
		rocattach_agent_env_counts[2]++;
		return 0;
	}
	i = env_index(name, namelen);
	if (i >= 0 && !strcmp(environ[i] + namelen + 1, value)) {
		place_keep(hash, (size_t)i);
		return 0;
	}
	if (env_save(u, name, i >= 0 ? environ[i] + namelen + 1 : NULL))
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "out of memory");
	if (setenv(name, value, 1))
		return fail(ROCATTACH_REGISTER_ROCPROFILER_ERROR, "setenv(%s): %s", name,
			    strerror(errno));
	rocattach_agent_env_counts[1]++;
	return 0;
}

int env_apply(const struct env_scan *sc, struct env_undo *u)
{
	int ret = 0;

	rocattach_agent_env_counts[0] = (uint32_t)sc->n;
	rocattach_agent_env_counts[1] = rocattach_agent_env_counts[2] = 0;
	if (!environ || environ != places.at || environ_count() != places.count) {
		places_drop();
		places.at = environ;
		places.count = environ_count();
	}
	for (size_t k = 0; k < sc->n && !ret; k++)
		ret = apply_one(u, sc->pair[2 * k], sc->pair[2 * k + 1]);
	/* A set variable may have moved the array or appended to it. */
	if (u->n)
		places_drop();
	return ret;
}

/* Newest first, so a name given twice gets its original value back. */
void env_rollback(struct env_undo *u)
{
	for (size_t i = u->n; i-- > 0;) {
		if (u->v[i].value)
			setenv(u->v[i].name, u->v[i].value, 1);
		else
			unsetenv(u->v[i].name);
	}
}

void env_undo_free(struct env_undo *u)
{
	for (size_t i = 0; i < u->n; i++) {
		free(u->v[i].name);
		free(u->v[i].value);
	}
	free(u->v);
	*u = (struct env_undo){0};
}

/* Our private variables are ours to read: they never enter environ. */
static int scan_one(const char *name, const char *value, void *arg)
{
	struct env_scan *sc = arg;
	const char **p;

	if (!strcmp(name, RA_ENV_OWNER)) {
		sc->owner = value;
		return 0;
	}
	if (!strcmp(name, RA_ENV_START_NS)) {
		sc->start = value;
		return 0;
	}
	if (!strcmp(name, RA_ENV_END_NS)) {
		sc->end = value;
		return 0;
	}
	if (!strcmp(name, "ROCPROFILER_REGISTER_TOOL_ATTACHED") ||
	    ra_env_is_private(name, strlen(name)))
		return 0;
	if (sc->n == sc->cap) {
		p = realloc(sc->pair, (sc->cap ? 2 * sc->cap : 32) * 2 * sizeof(*p));
		if (!p)
			return -ENOMEM;
		sc->pair = p;
		sc->cap = sc->cap ? 2 * sc->cap : 32;
	}
	sc->pair[2 * sc->n] = name;
	sc->pair[2 * sc->n + 1] = value;
	sc->n++;
	return 0;
}

int env_scan(const char *env, size_t len, struct env_scan *sc)
{
	return ra_envbuf_decode(env, len, scan_one, sc);
}

void env_scan_free(struct env_scan *sc)
{
	free(sc->pair);
	*sc = (struct env_scan){0};
}
