/*
 * prom_driver: tui/prom.c from the command line, for tests/prometheus/run.sh
 * (compiled there with the build's flags and linked with the build's
 * libraries) until `fusebox slo --prometheus` is wired; then it still
 * drives what the CLI cannot reach (a bad expression, a range query).
 *
 *   prom_driver query URL EXPR
 *   prom_driver range URL EXPR START_MS END_MS STEP_MS
 *   prom_driver slo URL [ROUTE] [--json]
 *
 * query / range print one line per series, "{labels} value" (range: the
 * values one after another); an error goes to stderr as "fusebox: CAUSE"
 * followed by "rc N error_type T". Exit 0, 1 refused or failed, 2 usage,
 * like the CLI.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "prom.h"
#include "util.h"

#define TIMEOUT_MS 5000

static void
print_result(const struct prom_result *r)
{
	int i, j;

	if (r->type == PROM_STRING) {
		printf("\"%s\"\n", r->string);
		return;
	}
	for (i = 0; i < r->nseries; i++) {
		const struct prom_series *s = &r->series[i];

		fputc('{', stdout);
		for (j = 0; j < s->nlabels; j++)
			printf("%s%s=\"%s\"", j ? "," : "", s->labels[j].name, s->labels[j].value);
		fputc('}', stdout);
		for (j = 0; j < s->npoints; j++)
			printf(" %.17g", s->points[j].v);
		fputc('\n', stdout);
	}
}

static int
fail(int rc, const struct prom_result *r, char *cause)
{
	fprintf(stderr, "fusebox: %s\nrc %d error_type %s\n", cause, rc,
		r != NULL && r->error_type[0] ? r->error_type : "-");
	free(cause);
	return 1;
}

static int
parse_ms(const char *s, int64_t *out)
{
	return parse_int64(s, out) == 0 && *out >= 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	struct prom_result r;
	char *cause = NULL;
	int64_t a, b, c;
	int rc, json = 0, i, npos = 0;
	const char *pos[3] = {NULL, NULL, NULL};

	setlocale(LC_ALL, "");
	fmt_set_ascii(!fmt_locale_utf8());
	if (argc == 4 && strcmp(argv[1], "query") == 0) {
		rc = prom_query(argv[2], argv[3], TIMEOUT_MS, &r, &cause);
		if (rc != 0)
			return fail(rc, &r, cause);
		print_result(&r);
		prom_result_free(&r);
		return 0;
	}
	if (argc == 7 && strcmp(argv[1], "range") == 0) {
		if (parse_ms(argv[4], &a) != 0 || parse_ms(argv[5], &b) != 0 ||
		    parse_ms(argv[6], &c) != 0) {
			fputs("prom_driver: START_MS END_MS STEP_MS are integers\n", stderr);
			return 2;
		}
		rc = prom_query_range(argv[2], argv[3], a, b, c, TIMEOUT_MS, &r, &cause);
		if (rc != 0)
			return fail(rc, &r, cause);
		print_result(&r);
		prom_result_free(&r);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "slo") == 0) {
		for (i = 2; i < argc; i++) {
			if (strcmp(argv[i], "--json") == 0)
				json = 1;
			else if (npos < 2)
				pos[npos++] = argv[i];
			else
				npos = 3;
		}
		if (npos < 1 || npos > 2) {
			fputs("usage: prom_driver slo URL [ROUTE] [--json]\n", stderr);
			return 2;
		}
		rc = prom_slo_print(stdout, pos[0], pos[1], json, TIMEOUT_MS, &cause);
		if (rc != 0)
			return fail(rc, NULL, cause);
		return 0;
	}
	fputs("usage: prom_driver query URL EXPR | range URL EXPR START_MS END_MS STEP_MS | "
	      "slo URL [ROUTE] [--json]\n",
	      stderr);
	return 2;
}
