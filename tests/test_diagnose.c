/*
 * diagnose: the ranked diagnosis from literal rows — one TCase per cause
 * kind (first-byte timeouts, schema drift, an open breaker, a 429 storm,
 * long inputs), the ranking, the episode and the "since" forms.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "harness.h"
#include "store.h"

#define T0     1764684000000LL /* 2025-12-02T14:00:00Z */
#define MINUTE (60000LL)
#define SEC    (1000LL)

/* The rows of one test: filled by the helpers below. */
static struct diag_call calls[400];
static struct diag_attempt atts[800];
static struct diag_vfail vfails[400];
static struct diag_call pcalls[400];
static struct diag_event events[16];
static struct diag_audit audit[16];
static int ncalls, natts, nvfails, npcalls, nevents, naudit;
static int64_t next_id;

static void
reset(void)
{
	ncalls = natts = nvfails = npcalls = nevents = naudit = 0;
	next_id = 1;
}

/* A call of route at t; degraded with reason (NULL: healthy, answered by the llm). */
static int64_t
call(const char *route, int64_t t, const char *reason, const char *source)
{
	struct diag_call *c = &calls[ncalls++];

	*c = (struct diag_call){next_id++, route, t,   reason != NULL, reason, source,
				200,	   900,	  6000};
	return c->id;
}

static void
prev_call(const char *route, int64_t t, const char *reason)
{
	pcalls[npcalls] = (struct diag_call){100000 + npcalls,
					     route,
					     t,
					     reason != NULL,
					     reason,
					     reason ? "rules" : "llm",
					     200,
					     900,
					     6000};
	npcalls++;
}

static int64_t
attempt(int64_t call_id, const char *route, const char *backend, int no, int64_t t,
	const char *outcome, int64_t connect, int64_t fb, int status, int64_t retry_after,
	int64_t tokens)
{
	struct diag_attempt *a = &atts[natts++];

	*a = (struct diag_attempt){1000 + natts, call_id, route, backend, no,	   t,
				   connect,	 fb,	  900,	 status,  outcome, retry_after,
				   tokens};
	return a->id;
}

static void
event(int64_t at, const char *kind, const char *subject, const char *detail)
{
	events[nevents++] = (struct diag_event){at, kind, subject, detail};
}

static void
audit_row(int64_t at, const char *actor, const char *action, const char *target)
{
	audit[naudit++] = (struct diag_audit){at, actor, action, target};
}

static const struct diag_target targets_backup[] = {
	{"intent", "primary-v2", DIAG_PRIMARY, 100, 1000, 2500},
	{"intent", "small-v1", DIAG_BACKUP, 0, 1000, 2500},
};
static const struct diag_target targets_canary[] = {
	{"intent", "primary-v2", DIAG_PRIMARY, 90, 1000, 2500},
	{"intent", "canary-v3", DIAG_CANARY, 10, 1000, 2500},
};

/* Healthy traffic: one call a minute over the previous window, and n calls in the window. */
static void
healthy(const char *route, int n, int64_t step)
{
	int i;

	for (i = 0; i < 15; i++)
		prev_call(route, T0 - 15 * MINUTE + i * MINUTE + SEC, NULL);
	for (i = 0; i < n; i++) {
		int64_t id = call(route, T0 + i * step, NULL, "llm");

		attempt(id, route, "primary-v2", 1, T0 + i * step, "ok", 2, 300, 200, -1, 120);
	}
}

static cJSON *
run(const char *route, const struct diag_target *tg, int ntg)
{
	struct diag_input in;

	memset(&in, 0, sizeof in);
	in.route = route;
	in.cur = (struct diag_rows){T0,	   T0 + 15 * MINUTE, calls,  ncalls, atts,
				    natts, vfails,	     nvfails};
	in.prev = (struct diag_rows){T0 - 15 * MINUTE, T0, pcalls, npcalls, NULL, 0, NULL, 0};
	in.events = events;
	in.nevents = nevents;
	in.audit = audit;
	in.naudit = naudit;
	in.targets = tg;
	in.ntargets = ntg;
	return diagnose_run(&in);
}

static const cJSON *
get(const cJSON *o, const char *path)
{
	char key[64];
	const char *dot;

	while (o != NULL && *path != '\0') {
		size_t n;

		dot = strchr(path, '.');
		n = dot ? (size_t)(dot - path) : strlen(path);
		snprintf(key, sizeof key, "%.*s", (int)n, path);
		if (key[0] >= '0' && key[0] <= '9')
			o = cJSON_GetArrayItem(o, (int)strtol(key, NULL, 10));
		else
			o = cJSON_GetObjectItemCaseSensitive(o, key);
		path += n + (dot != NULL);
	}
	return o;
}

static const char *
str(const cJSON *o, const char *path)
{
	const cJSON *x = get(o, path);

	return cJSON_IsString(x) ? x->valuestring : "(not a string)";
}

static double
num(const cJSON *o, const char *path)
{
	const cJSON *x = get(o, path);

	return cJSON_IsNumber(x) ? x->valuedouble : -12345;
}

/* The contrast of factor in route 0, or NULL. */
static const cJSON *
contrast(const cJSON *o, const char *factor)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, get(o, "routes.0.contrasts"))
	{
		if (strcmp(str(x, "factor"), factor) == 0)
			return x;
	}
	return NULL;
}

START_TEST(first_byte_timeout_on_primary)
{
	cJSON *o;
	int i;

	reset();
	healthy("intent", 20, 20 * SEC);
	event(T0 - 30 * MINUTE, "reload", "fusebox.json", "too early to matter");
	event(T0 + 6 * MINUTE, "reload", "fusebox.json", "2 backends, 1 route");
	audit_row(T0 + 6 * MINUTE, "ops", "config.reload", "config");
	for (i = 0; i < 20; i++) {
		int64_t t = T0 + 7 * MINUTE + 11 * SEC + i * 5 * SEC;
		int64_t id = call("intent", t, "first_byte_timeout", "backup");

		attempt(id, "intent", "primary-v2", 1, t, "first_byte_timeout", 2, -1, -1, -1, 120);
		attempt(id, "intent", "small-v1", 2, t + 2500, "ok", 3, 200, 200, -1, 120);
	}
	for (i = 0; i < 2; i++) {
		int64_t t = T0 + 9 * MINUTE + i * SEC;
		int64_t id = call("intent", t, "http_5xx", "backup");

		attempt(id, "intent", "primary-v2", 1, t, "http_5xx", 2, 40, 503, -1, 120);
		attempt(id, "intent", "small-v1", 2, t + 50, "ok", 3, 200, 200, -1, 120);
	}
	o = run("intent", targets_backup, 2);
	ck_assert_int_eq((int)num(o, "routes.0.degraded_calls"), 22);
	ck_assert_int_eq((int)num(o, "routes.0.calls"), 42);
	ck_assert_str_eq(str(o, "routes.0.causes.0.reason"), "first_byte_timeout");
	ck_assert_str_eq(str(o, "routes.0.causes.0.backend"), "primary-v2");
	ck_assert_str_eq(str(o, "routes.0.causes.0.phase"), "first_byte");
	ck_assert_double_eq_tol(num(o, "routes.0.causes.0.share"), 20.0 / 22, 1e-9);
	ck_assert_str_eq(str(o, "routes.0.causes.0.text"),
			 "91 % of degraded calls: first_byte_timeout on primary-v2 (connect p50 2 "
			 "ms, first byte > 2500 ms in 48 %) \xe2\x80\x94 began 14:07:11");
	ck_assert_str_eq(str(o, "routes.0.causes.0.since"), "2025-12-02T14:07:11.000Z");
	ck_assert_str_eq(str(o, "routes.0.causes.1.reason"), "http_5xx");
	ck_assert_str_eq(str(o, "routes.0.episode_start"), "2025-12-02T14:07:11.000Z");
	/* Both count the backup's answers. */
	ck_assert_double_eq_tol(num(o, "routes.0.service_availability"), 1.0, 1e-9);
	ck_assert_double_eq_tol(num(o, "routes.0.smart_availability"), 1.0, 1e-9);
	ck_assert_ptr_nonnull(
		strstr(str(o, "routes.0.causes.0.query"), "c.reason = 'first_byte_timeout'"));
	ck_assert_ptr_nonnull(
		strstr(str(o, "routes.0.causes.0.query"), "a.backend = 'primary-v2'"));
	/* The reload 6 min before the episode, with its actor; not the one 37 min before. */
	ck_assert_int_eq(cJSON_GetArraySize(get(o, "routes.0.changes")), 1);
	ck_assert_str_eq(str(o, "routes.0.changes.0.kind"), "reload");
	ck_assert_str_eq(str(o, "routes.0.changes.0.actor"), "ops");
	ck_assert_str_eq(str(o, "routes.0.suggestions.0.text"),
			 "backup small-v1 healthy (100 % valid): force level 1");
	ck_assert_str_eq(str(o, "routes.0.suggestions.0.action"),
			 "fusebox level intent 1 --reason \"first_byte_timeout on primary-v2\"");
	ck_assert_ptr_nonnull(contrast(o, "phase"));
	ck_assert_str_eq(str(contrast(o, "phase"), "failing"), "first_byte");
	ck_assert_str_eq(str(contrast(o, "backend"), "failing"), "primary-v2");
	/* Same inputs on both sides: no token contrast. */
	ck_assert_ptr_null(contrast(o, "input_tokens"));
	cJSON_Delete(o);
}
END_TEST

START_TEST(schema_drift_on_canary)
{
	cJSON *o;
	int i;

	reset();
	healthy("intent", 20, 15 * SEC);
	event(T0 + 5 * MINUTE, "weights", "intent",
	      "primary-v2 100 -> 90, canary-v3 0 -> 10 (by alice: canary)");
	audit_row(T0 + 5 * MINUTE, "alice", "weights.set", "route:intent");
	for (i = 0; i < 12; i++) {
		int64_t t = T0 + 5 * MINUTE + 30 * SEC + i * SEC;
		int64_t id = call("intent", t, "validation_schema", "rules");
		int64_t aid = attempt(id, "intent", "canary-v3", 1, t, "validation_schema", 2, 300,
				      200, -1, 120);

		vfails[nvfails++] =
			(struct diag_vfail){aid,
					    id,
					    "intent",
					    "schema",
					    "enum",
					    i < 11 ? "intent: \"refund_request\" not in enum"
						   : "intent: \"refund-please\" not in enum",
					    t};
	}
	o = run("intent", targets_canary, 2);
	ck_assert_str_eq(str(o, "routes.0.causes.0.reason"), "validation_schema");
	ck_assert_str_eq(str(o, "routes.0.causes.0.backend"), "canary-v3");
	ck_assert_str_eq(str(o, "routes.0.causes.0.phase"), "validation");
	ck_assert_double_eq_tol(num(o, "routes.0.causes.0.share"), 1.0, 1e-9);
	ck_assert_str_eq(str(o, "routes.0.causes.0.text"),
			 "100 % of degraded calls: validation_schema on canary-v3 (intent: "
			 "\"refund_request\" not in enum \xc3\x97"
			 "11; intent: \"refund-please\" not in enum \xc3\x97"
			 "1) \xe2\x80\x94 began 14:05:30");
	ck_assert_int_eq((int)num(o, "routes.0.causes.0.evidence.details.0.count"), 11);
	ck_assert_int_eq((int)num(o, "routes.0.causes.0.evidence.failures"), 12);
	ck_assert_str_eq(str(o, "routes.0.changes.0.kind"), "weights");
	ck_assert_str_eq(str(o, "routes.0.changes.0.actor"), "alice");
	ck_assert_str_eq(str(o, "routes.0.suggestions.0.text"),
			 "schema drift on canary-v3: set its weight to 0");
	ck_assert_str_eq(str(o, "routes.0.suggestions.0.action"),
			 "fusebox weights intent primary-v2=90 canary-v3=0");
	ck_assert_str_eq(str(contrast(o, "backend"), "failing"), "canary-v3");
	ck_assert_str_eq(str(contrast(o, "backend"), "succeeding"), "primary-v2");
	ck_assert_ptr_null(contrast(o, "http_status"));
	cJSON_Delete(o);
}
END_TEST

START_TEST(breaker_open_since)
{
	cJSON *o;
	int i;

	reset();
	healthy("intent", 20, 20 * SEC);
	for (i = 0; i < 5; i++) {
		int64_t t = T0 + 8 * MINUTE + 35 * SEC + i * SEC;
		int64_t id = call("intent", t, "http_5xx", "rules");

		attempt(id, "intent", "primary-v2", 1, t, "http_5xx", 2, 30, 500, -1, 120);
	}
	event(T0 + 8 * MINUTE + 40 * SEC, "breaker", "primary-v2",
	      "closed -> open (5 of 5 failed)");
	for (i = 0; i < 30; i++)
		call("intent", T0 + 8 * MINUTE + 41 * SEC + i * SEC, "breaker_open", "rules");
	o = run("intent", targets_backup, 2);
	ck_assert_double_eq_tol(num(o, "routes.0.smart_availability"), 20.0 / 55, 1e-9);
	ck_assert_str_eq(str(o, "routes.0.causes.0.reason"), "breaker_open");
	ck_assert_str_eq(str(o, "routes.0.causes.0.backend"), "primary-v2");
	ck_assert_str_eq(str(o, "routes.0.causes.0.phase"), "breaker");
	ck_assert_str_eq(str(o, "routes.0.causes.0.since"), "2025-12-02T14:08:40.000Z");
	ck_assert_str_eq(str(o, "routes.0.causes.0.text"),
			 "86 % of degraded calls: breaker primary-v2 OPEN since 14:08:40 (5 of 5 "
			 "failed) \xe2\x80\x94 30 calls answered without it");
	ck_assert_str_eq(str(o, "routes.0.causes.1.reason"), "http_5xx");
	ck_assert_str_eq(str(o, "routes.0.causes.1.text"),
			 "14 % of degraded calls: http_5xx on primary-v2 (5 of 25 attempts "
			 "http_5xx) \xe2\x80\x94 began 14:08:35");
	/* An automatic breaker transition is the cause, not a change. */
	ck_assert_int_eq(cJSON_GetArraySize(get(o, "routes.0.changes")), 0);
	cJSON_Delete(o);
}
END_TEST

START_TEST(rate_limit_storm)
{
	cJSON *o;
	const cJSON *c;
	int i;

	reset();
	healthy("intent", 20, 20 * SEC);
	for (i = 0; i < 10; i++) {
		int64_t t = T0 + 8 * MINUTE + i * SEC;
		int64_t id = call("intent", t, "http_429", "rules");

		attempt(id, "intent", "primary-v2", 1, t, "http_429", 2, 10, 429, 2000, 120);
	}
	o = run("intent", targets_backup, 2);
	ck_assert_str_eq(str(o, "routes.0.causes.0.reason"), "http_429");
	ck_assert_str_eq(str(o, "routes.0.causes.0.phase"), "rate_limit");
	ck_assert_int_eq((int)num(o, "routes.0.causes.0.evidence.retry_after_p50_ms"), 2000);
	c = contrast(o, "http_status");
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq((int)num(c, "failing"), 429);
	ck_assert_int_eq((int)num(c, "succeeding"), 200);
	c = contrast(o, "retry_after");
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq((int)num(c, "failing"), 2000);
	ck_assert_ptr_nonnull(get(c, "succeeding"));
	ck_assert(cJSON_IsNull(get(c, "succeeding")));
	ck_assert_ptr_nonnull(strstr(str(o, "routes.0.suggestions.0.text"), "rate-limiting"));
	cJSON_Delete(o);
}
END_TEST

START_TEST(long_inputs_time_out)
{
	cJSON *o;
	const cJSON *c;
	int i;

	reset();
	healthy("intent", 20, 20 * SEC);
	for (i = 0; i < 9; i++) {
		int64_t t = T0 + 8 * MINUTE + i * SEC;
		int64_t id = call("intent", t, "first_byte_timeout", "rules");

		attempt(id, "intent", "primary-v2", 1, t, "first_byte_timeout", 2, -1, -1, -1,
			400 + i * 3);
	}
	o = run("intent", targets_backup, 2);
	ck_assert_str_eq(str(o, "routes.0.causes.0.reason"), "first_byte_timeout");
	c = contrast(o, "input_tokens");
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq((int)num(c, "failing"), 412);
	ck_assert_int_eq((int)num(c, "succeeding"), 120);
	ck_assert_str_eq(str(c, "text"),
			 "failures on primary-v2 had median 412 input tokens vs 120");
	ck_assert_ptr_nonnull(
		strstr(str(o, "routes.0.suggestions.0.text"), "long inputs time out"));
	cJSON_Delete(o);
}
END_TEST

START_TEST(ranking_by_share)
{
	cJSON *o;
	const cJSON *x;
	double last = 2, sum = 0;
	int i;

	reset();
	healthy("intent", 5, 20 * SEC);
	for (i = 0; i < 3; i++)
		call("intent", T0 + 6 * MINUTE + i * SEC, "bulkhead_full", "rules");
	for (i = 0; i < 5; i++)
		call("intent", T0 + 7 * MINUTE + i * SEC, "budget_exhausted", "rules");
	for (i = 0; i < 2; i++)
		call("intent", T0 + 5 * MINUTE + i * SEC, "forced_level", "rules");
	o = run("intent", targets_backup, 2);
	ck_assert_str_eq(str(o, "routes.0.causes.0.reason"), "budget_exhausted");
	ck_assert_str_eq(str(o, "routes.0.causes.0.phase"), "budget");
	ck_assert_str_eq(str(o, "routes.0.causes.1.reason"), "bulkhead_full");
	ck_assert_str_eq(str(o, "routes.0.causes.1.phase"), "bulkhead");
	ck_assert_str_eq(str(o, "routes.0.causes.2.reason"), "forced_level");
	ck_assert_str_eq(str(o, "routes.0.causes.2.phase"), "forced");
	ck_assert(cJSON_IsNull(get(o, "routes.0.causes.0.backend")));
	ck_assert_double_eq_tol(num(o, "routes.0.causes.0.share"), 0.5, 1e-9);
	cJSON_ArrayForEach(x, get(o, "routes.0.causes"))
	{
		ck_assert(num(x, "share") <= last);
		last = num(x, "share");
		sum += last;
	}
	ck_assert_double_eq_tol(sum, 1.0, 1e-9);
	ck_assert_ptr_nonnull(strstr(str(o, "routes.0.causes.0.query"), "a.id IS NULL"));
	cJSON_Delete(o);
}
END_TEST

START_TEST(episode_start_and_end)
{
	cJSON *o;
	int i;

	/* Degraded at 14:01, five healthy minutes, degraded again at 14:07:20. */
	reset();
	healthy("intent", 9, MINUTE);
	call("intent", T0 + 1 * MINUTE + 5 * SEC, "http_5xx", "rules");
	call("intent", T0 + 7 * MINUTE + 20 * SEC, "http_5xx", "rules");
	call("intent", T0 + 9 * MINUTE + 20 * SEC, "http_5xx", "rules");
	o = run("intent", targets_backup, 2);
	ck_assert_str_eq(str(o, "routes.0.episode_start"), "2025-12-02T14:07:20.000Z");
	cJSON_Delete(o);

	/* Healthy for the last five minutes with calls: the episode is over. */
	reset();
	healthy("intent", 15, MINUTE);
	call("intent", T0 + 2 * MINUTE + 5 * SEC, "http_5xx", "rules");
	o = run("intent", targets_backup, 2);
	ck_assert(cJSON_IsNull(get(o, "routes.0.episode_start")));
	ck_assert_int_eq((int)num(o, "routes.0.degraded_calls"), 1);
	cJSON_Delete(o);

	/* Degraded since the first row: the first degraded minute. */
	reset();
	for (i = 0; i < 10; i++)
		call("intent", T0 + i * MINUTE + 3 * SEC, "http_5xx", "rules");
	o = run("intent", targets_backup, 2);
	ck_assert_str_eq(str(o, "routes.0.episode_start"), "2025-12-02T14:00:03.000Z");
	cJSON_Delete(o);
}
END_TEST

/* The window before as the endpoint reads it: SLO minutes and reason counts. */
START_TEST(window_before_as_aggregates)
{
	struct diag_minute mins[15];
	struct diag_reason_count why[] = {{"intent", "http_5xx", 7}, {"other", "http_5xx", 9}};
	struct diag_input in;
	cJSON *o;
	int i;

	reset();
	for (i = 0; i < 15; i++)
		mins[i] = (struct diag_minute){"intent", T0 - 15 * MINUTE + i * MINUTE, 10,
					       i >= 12 ? 2 : 0};
	call("intent", T0 + 20 * SEC, "http_5xx", "rules");
	memset(&in, 0, sizeof in);
	in.route = "intent";
	in.cur = (struct diag_rows){T0, T0 + 15 * MINUTE, calls, ncalls, atts, natts, NULL, 0};
	in.prev = (struct diag_rows){T0 - 15 * MINUTE, T0, NULL, 0, NULL, 0, NULL, 0};
	in.prev_minutes = mins;
	in.nprev_minutes = 15;
	in.prev_reasons = why;
	in.nprev_reasons = 2;
	o = diagnose_run(&in);
	/* Degraded since 13:57 (after 12 healthy minutes): the episode began then. */
	ck_assert_str_eq(str(o, "routes.0.episode_start"), "2025-12-02T13:57:00.000Z");
	ck_assert_int_eq((int)num(o, "routes.0.causes.0.evidence.previous_calls"), 7);
	cJSON_Delete(o);
	/* Healthy minutes before: the episode starts in the window. */
	for (i = 0; i < 15; i++)
		mins[i].degraded = 0;
	o = diagnose_run(&in);
	ck_assert_str_eq(str(o, "routes.0.episode_start"), "2025-12-02T14:00:20.000Z");
	cJSON_Delete(o);
}
END_TEST

START_TEST(every_degraded_route)
{
	cJSON *o;

	reset();
	call("zeta", T0 + SEC, "http_5xx", "rules");
	call("calm", T0 + SEC, NULL, "llm");
	call("alpha", T0 + 2 * SEC, "http_429", "rules");
	call("zeta", T0 + 3 * SEC, "http_5xx", "rules");
	o = run(NULL, NULL, 0);
	ck_assert_int_eq(cJSON_GetArraySize(get(o, "routes")), 2);
	ck_assert_str_eq(str(o, "routes.0.route"), "alpha");
	ck_assert_str_eq(str(o, "routes.1.route"), "zeta");
	ck_assert_str_eq(str(o, "window.from"), "2025-12-02T14:00:00.000Z");
	ck_assert_str_eq(str(o, "window.to"), "2025-12-02T14:15:00.000Z");
	cJSON_Delete(o);

	/* A route asked for by name is answered also when healthy. */
	o = run("calm", NULL, 0);
	ck_assert_int_eq((int)num(o, "routes.0.degraded_calls"), 0);
	ck_assert_int_eq(cJSON_GetArraySize(get(o, "routes.0.causes")), 0);
	ck_assert(cJSON_IsNull(get(o, "routes.0.episode_start")));
	cJSON_Delete(o);

	/* Quotes in a name are doubled in the query. */
	reset();
	call("it's", T0 + SEC, "http_5xx", "rules");
	o = run(NULL, NULL, 0);
	ck_assert_ptr_nonnull(strstr(str(o, "routes.0.causes.0.query"), "c.route = 'it''s'"));
	cJSON_Delete(o);
}
END_TEST

START_TEST(since_forms)
{
	int64_t from = 0;

	ck_assert_int_eq(diagnose_since_parse("30s", T0, &from), 0);
	ck_assert_int_eq(from, T0 - 30 * SEC);
	ck_assert_int_eq(diagnose_since_parse("15m", T0, &from), 0);
	ck_assert_int_eq(from, T0 - 15 * MINUTE);
	ck_assert_int_eq(diagnose_since_parse("2h", T0, &from), 0);
	ck_assert_int_eq(from, T0 - 120 * MINUTE);
	ck_assert_int_eq(diagnose_since_parse("2025-12-02T13:00:00Z", T0, &from), 0);
	ck_assert_int_eq(from, T0 - 60 * MINUTE);
	ck_assert_int_eq(diagnose_since_parse("0m", T0, &from), -EINVAL);
	ck_assert_int_eq(diagnose_since_parse("-5m", T0, &from), -EINVAL);
	ck_assert_int_eq(diagnose_since_parse("15x", T0, &from), -EINVAL);
	ck_assert_int_eq(diagnose_since_parse("m", T0, &from), -EINVAL);
	ck_assert_int_eq(diagnose_since_parse("2025-12-02T15:00:00Z", T0, &from), -EINVAL);
	ck_assert_int_eq(diagnose_since_parse(NULL, T0, &from), -EINVAL);
}
END_TEST

/* EXPLAIN QUERY PLAN's detail rows of one query, joined. */
static int
plan_row(void *arg, sqlite3_stmt *row)
{
	char *plan = arg;
	size_t n = strlen(plan);

	snprintf(plan + n, 1024 - n, "%s; ", (const char *)sqlite3_column_text(row, 3));
	return 0;
}

/*
 * The window's healthy calls given as aggregates by minute (as
 * api_diagnose.c reads them) answer exactly as the same calls as rows:
 * counts, availability, the episode and the causes.
 */
START_TEST(healthy_calls_as_aggregates)
{
	static struct diag_call deg[400];
	static struct diag_healthy agg[400];
	struct diag_input in;
	cJSON *o;
	char *rows_json, *agg_json;
	int i, j, ndeg = 0, nagg = 0;

	reset();
	healthy("intent", 30, 25 * SEC);
	call("intent", T0 + 2 * MINUTE + 7 * SEC, NULL, "rules");
	calls[ncalls - 1].http_status = 422;
	call("intent", T0 + 3 * MINUTE + 9 * SEC, NULL, "llm");
	calls[ncalls - 1].elapsed_ms = 7000;
	call("intent", T0 + 4 * MINUTE, NULL, "cache");
	calls[ncalls - 1].http_status = 202;
	call("other", T0 + 4 * MINUTE, NULL, "llm");
	for (i = 0; i < 12; i++) {
		int64_t t = T0 + 8 * MINUTE + i * 7 * SEC;
		int64_t id = call("intent", t, "first_byte_timeout", "backup");

		attempt(id, "intent", "primary-v2", 1, t, "first_byte_timeout", 2, -1, -1, -1, 120);
		attempt(id, "intent", "small-v1", 2, t + 2500, "ok", 3, 200, 200, -1, 120);
	}
	o = run("intent", targets_backup, 2);
	rows_json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	for (i = 0; i < ncalls; i++) {
		const struct diag_call *c = &calls[i];
		int64_t minute = c->started_at / MINUTE * MINUTE;

		if (c->degraded) {
			deg[ndeg++] = *c;
			continue;
		}
		for (j = 0; j < nagg && (agg[j].minute != minute || strcmp(agg[j].route, c->route));
		     j++)
			;
		if (j == nagg)
			agg[nagg++] = (struct diag_healthy){c->route, minute, 0, 0, 0, 0};
		agg[j].calls++;
		agg[j].client_errors += c->http_status >= 400 && c->http_status <= 499;
		agg[j].service_good += (c->http_status == 200 || c->http_status == 202) &&
				       c->elapsed_ms <= c->budget_ms;
		agg[j].smart_good += c->http_status == 200 && strcmp(c->source, "llm") == 0;
	}
	ck_assert_int_gt(nagg, 10);
	memset(&in, 0, sizeof in);
	in.route = "intent";
	in.cur = (struct diag_rows){T0, T0 + 15 * MINUTE, deg, ndeg, atts, natts, vfails, nvfails};
	in.prev = (struct diag_rows){T0 - 15 * MINUTE, T0, pcalls, npcalls, NULL, 0, NULL, 0};
	in.healthy = agg;
	in.nhealthy = nagg;
	in.targets = targets_backup;
	in.ntargets = 2;
	o = diagnose_run(&in);
	agg_json = cJSON_PrintUnformatted(o);
	ck_assert_str_eq(agg_json, rows_json);
	ck_assert_double_eq(num(o, "routes.0.calls"), 45);
	ck_assert_str_eq(str(o, "routes.0.causes.0.reason"), "first_byte_timeout");
	cJSON_Delete(o);
	free(rows_json);
	free(agg_json);
}
END_TEST

/* GET /v1/diagnose reads by time: each query searches its table's time index, never scans. */
START_TEST(queries_search_the_time_indexes)
{
	static const struct {
		enum store_query q;
		const char *index;
	} want[] = {
		{STORE_Q_DIAG_CALLS, "COVERING INDEX calls_diag"},
		{STORE_Q_DIAG_HEALTHY, "COVERING INDEX calls_diag"},
		{STORE_Q_DIAG_ATTEMPTS, "COVERING INDEX attempts_diag"},
		{STORE_Q_DIAG_VFAILS, "validation_failures_at"},
		{STORE_Q_DIAG_EVENTS, "events_at"},
		{STORE_Q_DIAG_AUDIT, "audit_at"},
		{STORE_Q_DIAG_PREV_MINUTES, "slo_minutes_minute"},
		{STORE_Q_DIAG_PREV_REASONS, "COVERING INDEX degradations_diag"},
	};
	char *dir = harness_tmpdir(), *path = NULL, *sql = NULL, *cause = NULL, plan[1024];
	struct store *st = NULL;
	struct store_reader *r = NULL;
	size_t i;

	ck_assert_int_ge(asprintf(&path, "%s/plan.db", dir), 0);
	ck_assert_int_eq(store_open(path, 16, &st, &cause), 0);
	ck_assert_int_eq(store_reader_open(path, &r, &cause), 0);
	for (i = 0; i < sizeof want / sizeof want[0]; i++) {
		plan[0] = '\0';
		ck_assert_int_ge(
			asprintf(&sql, "EXPLAIN QUERY PLAN %s", store_query_defs[want[i].q].sql),
			0);
		ck_assert_msg(store_reader_query(r, sql, NULL, 0, plan_row, plan, &cause) == 0,
			      "%s: %s", store_query_defs[want[i].q].name, cause);
		ck_assert_msg(strstr(plan, "SEARCH") != NULL && strstr(plan, want[i].index) &&
				      strstr(plan, "SCAN") == NULL &&
				      (strstr(plan, "TEMP B-TREE") == NULL ||
				       want[i].q == STORE_Q_DIAG_PREV_REASONS),
			      "%s: %s", store_query_defs[want[i].q].name, plan);
		free(sql);
	}
	store_reader_close(r);
	store_close(st);
	free(path);
	free(dir);
}
END_TEST

static Suite *
diagnose_suite(void)
{
	Suite *s = suite_create("diagnose");
	TCase *tc;

#define ADD(t)                                                                                     \
	tc = tcase_create(#t);                                                                     \
	tcase_add_test(tc, t);                                                                     \
	suite_add_tcase(s, tc)
	ADD(first_byte_timeout_on_primary);
	ADD(schema_drift_on_canary);
	ADD(breaker_open_since);
	ADD(rate_limit_storm);
	ADD(long_inputs_time_out);
	ADD(ranking_by_share);
	ADD(episode_start_and_end);
	ADD(window_before_as_aggregates);
	ADD(every_degraded_route);
	ADD(healthy_calls_as_aggregates);
	ADD(since_forms);
	ADD(queries_search_the_time_indexes);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(diagnose_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
