/* SPDX-License-Identifier: MIT */
/*
 * Merge the benchmarks' result files into one JSON document and print the
 * table: every figure beside its baseline and its target.
 *
 *   bench_report --out latest.json [--set KEY=VALUE]... RESULT.json...
 *   bench_report --print latest.json
 *
 * Schema rocattach-bench/1: { "schema", "date" (UTC, ISO 8601), "host",
 * "cpus", "kernel", "loadavg", KEY: VALUE..., "benches": [RESULT...] }.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static void fmt_num(char *buf, size_t len, json_t *v, const char *unit)
{
	double x;

	if (!json_is_number(v)) {
		snprintf(buf, len, "-");
		return;
	}
	x = json_number_value(v);
	if (fabs(x) >= 100)
		snprintf(buf, len, "%.0f %s", x, unit);
	else if (fabs(x) >= 10)
		snprintf(buf, len, "%.1f %s", x, unit);
	else
		snprintf(buf, len, "%.3g %s", x, unit);
}

static const char *str(json_t *o, const char *k, const char *def)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : def;
}

static void print_row(json_t *row, const char *bench)
{
	const char *unit = str(row, "unit", ""), *op = str(row, "target_op", NULL);
	char value[32], base[32], target[48] = "", ok[16] = "";
	json_t *met = json_object_get(row, "met");

	fmt_num(value, sizeof(value), json_object_get(row, "value"), unit);
	fmt_num(base, sizeof(base), json_object_get(row, "baseline"), unit);
	if (op) {
		char t[32];

		if (!strcmp(str(row, "checked", ""), "value/baseline"))
			snprintf(t, sizeof(t), "%gx base",
				 json_number_value(json_object_get(row, "target")));
		else
			fmt_num(t, sizeof(t), json_object_get(row, "target"), unit);
		snprintf(target, sizeof(target), "%s %s%s", op, t,
			 !strcmp(str(row, "checked", ""), "value-baseline") ? " (diff)" : "");
		snprintf(ok, sizeof(ok), "%s",
			 json_is_true(met)    ? "met"
			 : json_is_false(met) ? "MISSED"
					      : "n/a");
	}
	if (json_object_get(row, "na")) {
		snprintf(value, sizeof(value), "n/a");
		snprintf(ok, sizeof(ok), "n/a");
	}
	printf("%-8s %-56.56s %12s %12s %-18s %s\n", bench, str(row, "figure", "?"), value, base,
	       target, ok);
	if (json_object_get(row, "na"))
		printf("%-8s   %s\n", "", str(row, "na", ""));
	else if (json_object_get(row, "note"))
		printf("%-8s   %s\n", "", str(row, "note", ""));
}

static void print_table(json_t *doc)
{
	json_t *b, *row;
	size_t i, k, met = 0, missed = 0;

	printf("\nrocattach-mpi benchmarks: %s, host %s (%lld CPUs, Linux %s), commit %s%s%s\n",
	       str(doc, "date", "?"), str(doc, "host", "?"),
	       (long long)json_integer_value(json_object_get(doc, "cpus")), str(doc, "kernel", "?"),
	       str(doc, "commit", "?"),
	       json_is_true(json_object_get(doc, "dirty")) ? " (dirty tree)" : "",
	       json_is_true(json_object_get(doc, "quick")) ? ", --quick" : "");
	printf("load average before: %s\n\n", str(doc, "loadavg", "?"));
	printf("%-8s %-56s %12s %12s %-18s %s\n", "bench", "figure", "value", "baseline", "target",
	       "");
	json_array_foreach (json_object_get(doc, "benches"), i, b) {
		json_array_foreach (json_object_get(b, "rows"), k, row) {
			print_row(row, str(b, "bench", "?"));
			met += json_is_true(json_object_get(row, "met"));
			missed += json_is_false(json_object_get(row, "met"));
		}
	}
	printf("\nbaselines (same run):\n");
	json_array_foreach (json_object_get(doc, "benches"), i, b) {
		json_t *seen = json_object();

		json_array_foreach (json_object_get(b, "rows"), k, row) {
			const char *w = str(row, "baseline_what", NULL);

			if (!w || json_object_get(seen, w))
				continue;
			json_object_set_new(seen, w, json_true());
			printf("  %-8s %s\n", str(b, "bench", "?"), w);
		}
		json_decref(seen);
	}
	printf("\ntargets: %zu met, %zu missed (benchmarks report, they never fail)\n", met,
	       missed);
}

static json_t *machine(void)
{
	char host[256] = "?", date[64], load[64] = "?";
	struct utsname u;
	time_t now = time(NULL);
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (!fgets(load, sizeof(load), f))
			snprintf(load, sizeof(load), "?");
		load[strcspn(load, "\n")] = '\0';
		fclose(f);
	}
	gethostname(host, sizeof(host) - 1);
	uname(&u);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	return json_pack("{s:s, s:s, s:s, s:I, s:s, s:s}", "schema", "rocattach-bench/1", "date",
			 date, "host", host, "cpus", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN),
			 "kernel", u.release, "loadavg", load);
}

/* "true"/"false" become booleans, everything else a string. */
static void set_kv(json_t *doc, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char key[64];

	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key))
		return;
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	if (!strcmp(eq + 1, "true") || !strcmp(eq + 1, "false"))
		json_object_set_new(doc, key, json_boolean(!strcmp(eq + 1, "true")));
	else
		json_object_set_new(doc, key, json_string(eq + 1));
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	json_t *doc, *benches = json_array();
	json_error_t err;
	int i;

	if (argc == 3 && !strcmp(argv[1], "--print")) {
		doc = json_load_file(argv[2], 0, &err);
		if (!doc)
			return fprintf(stderr, "%s: %s\n", argv[2], err.text), 1;
		print_table(doc);
		return 0;
	}
	doc = machine();
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--out") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
			set_kv(doc, argv[++i]);
		} else {
			json_t *b = json_load_file(argv[i], 0, &err);

			if (!b) {
				fprintf(stderr, "bench_report: skipping %s: %s\n", argv[i],
					err.text);
				continue;
			}
			json_array_append_new(benches, b);
		}
	}
	if (!out)
		return fprintf(stderr,
			       "usage: %s --out FILE [--set K=V]... RESULT...\n"
			       "       %s --print FILE\n",
			       argv[0], argv[0]),
		       2;
	json_object_set_new(doc, "benches", benches);
	if (json_dump_file(doc, out, JSON_INDENT(1) | JSON_REAL_PRECISION(6)))
		return fprintf(stderr, "bench_report: cannot write %s\n", out), 1;
	print_table(doc);
	json_decref(doc);
	return 0;
}
