/*
 * report: the offline report (see report.h).
 *
 * Availability comes from slo_minutes, the daemon's own per-minute SLO
 * counters (DESIGN.md "SLO definitions"). When the period has no
 * slo_minutes rows (an older daemon, or counters not flushed yet) it is
 * derived from the calls table with the same definitions: total = calls
 * except caller errors (4xx), service_good = 200/202 within budget,
 * smart_good = 200 answered by llm or backup (validation passed). Smart
 * availability divides by the calls whose caller asked for a model (the
 * total less allow_llm: false calls, slo_minutes.no_llm). The report
 * says which source it used.
 *
 * The DB is opened read-only through store_reader (db/store.h); nothing is
 * written, so a live daemon is not disturbed and a stopped one is fine.
 */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "fmt.h"
#include "store.h"
#include "table.h"
#include "util.h"

#define TOP_FAILURES 10
#define TOP_REASONS  20

struct avail_row {
	char route[128];
	int64_t total, service_good, smart_good;
	int64_t no_llm; /* calls whose caller did not ask for a model: not in smart's total */
};

struct report {
	struct avail_row *avail;
	int navail, cap;
	cJSON *degr;  /* array of objects */
	cJSON *fails; /* array of objects */
};

static const char *
col_text(sqlite3_stmt *row, int i)
{
	const unsigned char *t = sqlite3_column_text(row, i);

	return t != NULL ? (const char *)t : "";
}

static int
on_avail(void *arg, sqlite3_stmt *row)
{
	struct report *rp = arg;
	struct avail_row *a;

	if (rp->navail == rp->cap) {
		rp->cap = rp->cap ? rp->cap * 2 : 16;
		rp->avail = xrealloc(rp->avail, (size_t)rp->cap * sizeof *rp->avail);
	}
	a = &rp->avail[rp->navail++];
	snprintf(a->route, sizeof a->route, "%s", col_text(row, 0));
	a->total = sqlite3_column_int64(row, 1);
	a->service_good = sqlite3_column_int64(row, 2);
	a->smart_good = sqlite3_column_int64(row, 3);
	a->no_llm = sqlite3_column_int64(row, 4);
	return 0;
}

static int
on_degradation(void *arg, sqlite3_stmt *row)
{
	struct report *rp = arg;
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "reason", col_text(row, 0));
	cJSON_AddNumberToObject(o, "count", (double)sqlite3_column_int64(row, 1));
	cJSON_AddNumberToObject(o, "calls", (double)sqlite3_column_int64(row, 2));
	cJSON_AddStringToObject(o, "routes", col_text(row, 3));
	cJSON_AddItemToArray(rp->degr, o);
	return 0;
}

static int
on_failure(void *arg, sqlite3_stmt *row)
{
	struct report *rp = arg;
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "route", col_text(row, 0));
	cJSON_AddStringToObject(o, "stage", col_text(row, 1));
	cJSON_AddStringToObject(o, "rule", col_text(row, 2));
	cJSON_AddNumberToObject(o, "count", (double)sqlite3_column_int64(row, 3));
	cJSON_AddStringToObject(o, "example", col_text(row, 4));
	cJSON_AddItemToArray(rp->fails, o);
	return 0;
}

static double
ratio(int64_t good, int64_t total)
{
	return total > 0 ? (double)good / (double)total : NAN;
}

static void
add_avail_json(cJSON *arr, const char *route, int64_t total, int64_t sg, int64_t mg, int64_t no_llm)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "route", route);
	cJSON_AddNumberToObject(o, "total", (double)total);
	cJSON_AddNumberToObject(o, "service_good", (double)sg);
	cJSON_AddNumberToObject(o, "smart_good", (double)mg);
	cJSON_AddNumberToObject(o, "smart_total", (double)(total - no_llm));
	if (total > 0)
		cJSON_AddNumberToObject(o, "service_availability", ratio(sg, total));
	else
		cJSON_AddNullToObject(o, "service_availability");
	if (total - no_llm > 0)
		cJSON_AddNumberToObject(o, "smart_availability", ratio(mg, total - no_llm));
	else
		cJSON_AddNullToObject(o, "smart_availability");
	cJSON_AddItemToArray(arr, o);
}

static void
print_json(const struct report *rp, const char *db, const char *since, const char *source)
{
	cJSON *o = cJSON_CreateObject(), *av, *arr;
	int64_t t = 0, s = 0, m = 0, n = 0;
	char *text;
	int i;

	cJSON_AddStringToObject(o, "db", db);
	cJSON_AddStringToObject(o, "since", since);
	av = cJSON_AddObjectToObject(o, "availability");
	cJSON_AddStringToObject(av, "source", source);
	arr = cJSON_AddArrayToObject(av, "routes");
	for (i = 0; i < rp->navail; i++) {
		const struct avail_row *a = &rp->avail[i];

		add_avail_json(arr, a->route, a->total, a->service_good, a->smart_good, a->no_llm);
		t += a->total;
		s += a->service_good;
		m += a->smart_good;
		n += a->no_llm;
	}
	arr = cJSON_AddArrayToObject(av, "all");
	add_avail_json(arr, "all", t, s, m, n);
	cJSON_AddItemReferenceToObject(o, "degradations", rp->degr);
	cJSON_AddItemReferenceToObject(o, "validation_failures", rp->fails);
	text = cJSON_Print(o);
	printf("%s\n", text);
	cJSON_free(text);
	cJSON_Delete(o);
}

static void
print_human(const struct report *rp, const char *db, const char *since, const char *since_arg,
	    const char *source)
{
	static const char *const at[] = {"ROUTE", "CALLS", "SERVICE", "SMART"};
	static const char *const dt[] = {"REASON", "COUNT", "CALLS", "ROUTES"};
	static const char *const ft[] = {"ROUTE", "STAGE", "RULE", "COUNT", "EXAMPLE"};
	struct table *t;
	const cJSON *it;
	char n1[32], n2[32], n3[32], p1[16], p2[16];
	int64_t tt = 0, ts = 0, tm = 0, tn = 0;
	int i;

	printf("fusebox report: %s since %s (%s)\n\n", db, since, since_arg);
	printf("Availability (from %s)\n", source);
	t = table_new(4, at, " rrr");
	for (i = 0; i < rp->navail; i++) {
		const struct avail_row *a = &rp->avail[i];
		const char *cells[] = {a->route, n1, p1, p2};

		snprintf(n1, sizeof n1, "%lld", (long long)a->total);
		fmt_pct(p1, sizeof p1, ratio(a->service_good, a->total), 2);
		fmt_pct(p2, sizeof p2, ratio(a->smart_good, a->total - a->no_llm), 2);
		table_add(t, cells);
		tt += a->total;
		ts += a->service_good;
		tm += a->smart_good;
		tn += a->no_llm;
	}
	{
		const char *cells[] = {"all", n1, p1, p2};

		snprintf(n1, sizeof n1, "%lld", (long long)tt);
		fmt_pct(p1, sizeof p1, ratio(ts, tt), 2);
		fmt_pct(p2, sizeof p2, ratio(tm, tt - tn), 2);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);

	printf("\nDegradations by reason\n");
	if (cJSON_GetArraySize(rp->degr) == 0) {
		printf("(none)\n");
	} else {
		t = table_new(4, dt, " rr ");
		cJSON_ArrayForEach(it, rp->degr)
		{
			const char *cells[] = {cJSON_GetObjectItem(it, "reason")->valuestring, n1,
					       n2, cJSON_GetObjectItem(it, "routes")->valuestring};

			snprintf(n1, sizeof n1, "%.0f",
				 cJSON_GetObjectItem(it, "count")->valuedouble);
			snprintf(n2, sizeof n2, "%.0f",
				 cJSON_GetObjectItem(it, "calls")->valuedouble);
			table_add(t, cells);
		}
		table_print(t, stdout);
		table_free(t);
	}

	printf("\nTop validation failures\n");
	if (cJSON_GetArraySize(rp->fails) == 0) {
		printf("(none)\n");
		return;
	}
	t = table_new(5, ft, "   r ");
	cJSON_ArrayForEach(it, rp->fails)
	{
		const char *cells[] = {cJSON_GetObjectItem(it, "route")->valuestring,
				       cJSON_GetObjectItem(it, "stage")->valuestring,
				       cJSON_GetObjectItem(it, "rule")->valuestring, n3,
				       cJSON_GetObjectItem(it, "example")->valuestring};

		snprintf(n3, sizeof n3, "%.0f", cJSON_GetObjectItem(it, "count")->valuedouble);
		table_add(t, cells);
	}
	table_print(t, stdout);
	table_free(t);
}

static int
usage(const char *msg)
{
	fprintf(stderr,
		"fusebox: report: %s\nusage: fusebox report --db FILE [--since T]\n"
		"  T: RFC3339 (2026-11-30T12:00:00Z) or a duration back from now (1h, 30m, 7d)\n",
		msg);
	return REPORT_USAGE;
}

int
report_run(int json, int argc, char **argv)
{
	struct store_reader *rd = NULL;
	struct report rp;
	struct store_val vals[2];
	struct stat sb;
	const char *db = NULL, *since_arg = "24h", *source;
	char *cause = NULL, since[40];
	int64_t now = clock_wall_ms(), since_ms;
	int i, rc = REPORT_FAILED, ver;

	memset(&rp, 0, sizeof rp);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
			db = argv[++i];
		else if (strncmp(argv[i], "--db=", 5) == 0)
			db = argv[i] + 5;
		else if (strcmp(argv[i], "--since") == 0 && i + 1 < argc)
			since_arg = argv[++i];
		else if (strncmp(argv[i], "--since=", 8) == 0)
			since_arg = argv[i] + 8;
		else
			return usage(strncmp(argv[i], "--", 2) == 0
					     ? "unknown option or missing value"
					     : "unexpected argument");
	}
	if (db == NULL)
		return usage("--db FILE is required");
	if (fmt_parse_since(since_arg, now, &since_ms) != 0)
		return usage("--since: not RFC3339 or a duration");
	time_format_rfc3339(since_ms, since, sizeof since);
	if (stat(db, &sb) != 0) {
		fprintf(stderr, "fusebox: report: %s: %s\n", db, strerror(errno));
		goto out;
	}
	if (store_reader_open(db, &rd, &cause) != 0) {
		fprintf(stderr, "fusebox: report: %s: %s\n", db, cause ? cause : "cannot open");
		goto out;
	}
	ver = store_schema_version(rd);
	if (ver <= 0) {
		fprintf(stderr, "fusebox: report: %s: not a fusebox database (no schema)\n", db);
		goto out;
	}
	if (ver > store_known_version())
		fprintf(stderr,
			"fusebox: report: warning: %s has schema %d, this binary knows %d\n", db,
			ver, store_known_version());
	rp.degr = cJSON_CreateArray();
	rp.fails = cJSON_CreateArray();
	vals[0] = SVI(since_ms - since_ms % 60000);
	if (store_reader_run_int(rd, STORE_Q_REPORT_SLO_ROWS, vals, 1, 0) > 0) {
		source = "slo_minutes";
		rc = store_reader_run(rd, STORE_Q_REPORT_AVAIL_SLO, vals, 1, on_avail, &rp, &cause);
	} else {
		source = "calls (no slo_minutes rows in the period)";
		vals[0] = SVI(since_ms);
		rc = store_reader_run(rd, STORE_Q_REPORT_AVAIL_CALLS, vals, 1, on_avail, &rp,
				      &cause);
	}
	vals[0] = SVI(since_ms);
	vals[1] = SVI(TOP_REASONS);
	if (rc == 0)
		rc = store_reader_run(rd, STORE_Q_REPORT_DEGRADATIONS, vals, 2, on_degradation, &rp,
				      &cause);
	vals[1] = SVI(TOP_FAILURES);
	if (rc == 0)
		rc = store_reader_run(rd, STORE_Q_REPORT_FAILURES, vals, 2, on_failure, &rp,
				      &cause);
	if (rc != 0) {
		fprintf(stderr, "fusebox: report: %s: %s\n", db, cause ? cause : "query failed");
		rc = REPORT_FAILED;
		goto out;
	}
	if (json)
		print_json(&rp, db, since, source);
	else
		print_human(&rp, db, since, since_arg, source);
	rc = REPORT_OK;
out:
	free(cause);
	free(rp.avail);
	cJSON_Delete(rp.degr);
	cJSON_Delete(rp.fails);
	store_reader_close(rd);
	return rc;
}
