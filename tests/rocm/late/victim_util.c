/* SPDX-License-Identifier: MIT */
/* late_victim's options, its runtime functions and its --self-start (late_victim.h). */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "late_victim.h"

extern char **environ;

static const char usage[] = "usage: late_victim [--threads N] [--churn] [--two-copies] "
			    "[--with-sdk] [--seconds S] [--self-start]\n";

static int number(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	if (!s)
		return -1;
	v = strtol(s, &end, 10);
	if (*end || end == s || v < lo || v > hi)
		return -1;
	*out = (int)v;
	return 0;
}

int victim_parse(int argc, char **argv, struct victim_opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--threads") && !number(argv[i + 1], 1, 64, &o->threads))
			i++;
		else if (!strcmp(a, "--seconds") && !number(argv[i + 1], 1, 86400, &o->seconds))
			i++;
		else if (!strcmp(a, "--churn"))
			o->churn = 1;
		else if (!strcmp(a, "--two-copies"))
			o->two_copies = 1;
		else if (!strcmp(a, "--with-sdk"))
			o->with_sdk = 1;
		else if (!strcmp(a, "--self-start"))
			o->self_start = 1;
		else {
			fprintf(stderr, "late_victim: bad argument '%s'\n%s", a, usage);
			return -1;
		}
	}
	return 0;
}

int victim_dir(char *dir, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", dir, len - 1);
	char *slash;

	if (n <= 0) {
		perror("late_victim: /proc/self/exe");
		return -1;
	}
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return 0;
}

int victim_map_sdk(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/sdk/librocprofiler-sdk.so.1", dir);
	if (dlopen(path, RTLD_NOW | RTLD_GLOBAL))
		return 0;
	fprintf(stderr, "late_victim: cannot map %s: %s\n", path, dlerror());
	return -1;
}

static int real_devices(int *count)
{
	*count = LATE_HIP_DEVICES;
	return 0;
}

/* splitmix64's finalizer: cheap, and every input has its own answer. */
uint64_t victim_mix_ref(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t real_mix(uint64_t seed)
{
	return victim_mix_ref(seed);
}

static int64_t real_add(int64_t a, int64_t b)
{
	return a + b;
}

void victim_fill_table(struct late_hip_table *t)
{
	t->size = sizeof(*t);
	t->get_device_count = real_devices;
	t->mix = real_mix;
	t->add = real_add;
}

static void apply_start_env(void)
{
	static const char prefix[] = "LATE_START_";
	char **names = NULL;
	size_t n = 0;

	/* Copy first: setenv may move environ. */
	for (char **e = environ; *e; e++)
		if (!strncmp(*e, prefix, sizeof(prefix) - 1)) {
			char **more = realloc(names, (n + 1) * sizeof(*names));

			if (!more)
				break;
			names = more;
			names[n++] = strdup(*e + sizeof(prefix) - 1);
		}
	for (size_t i = 0; i < n; i++) {
		char *eq = names[i] ? strchr(names[i], '=') : NULL;

		if (eq) {
			*eq = '\0';
			setenv(names[i], eq + 1, 1);
		}
		free(names[i]);
	}
	free(names);
}

void victim_self_start(void *const *copies, int n_copies)
{
	int (*initialized)(int *);
	int status = 0;

	apply_start_env();
	for (int c = 0; c < n_copies; c++) {
		int (*invoke)(void);

		*(void **)&invoke =
		    dlsym(copies[c], "rocprofiler_register_invoke_all_registrations");
		printf("self-start copy=%d rc=%d\n", c, invoke ? invoke() : -1);
	}
	*(void **)&initialized = dlsym(RTLD_DEFAULT, "rocprofiler_is_initialized");
	if (initialized && !initialized(&status))
		printf("self-start initialized=%d\n", status);
	else
		printf("self-start initialized=none\n");
	fflush(stdout);
}
