#pragma once
/*
 * diagnose: why a route is degraded (API.md "Diagnosis"). Pure: the caller
 * fills plain rows of the window and of the window before it (calls,
 * attempts, validation failures, events, audit; a call's degradation
 * reason is calls.reason, the first of its degradations rows; the
 * healthy calls may come as per-minute aggregates instead) and gets
 * the ranked diagnosis as the JSON of GET /v1/diagnose. Rows and strings
 * are borrowed; integers are -1 where the column is NULL. Any thread.
 */
#include <stdint.h>

#include <cjson/cJSON.h>

struct diag_call {
	int64_t id;
	const char *route;
	int64_t started_at;
	int degraded;
	const char *reason;
	const char *source;
	int http_status;
	int64_t elapsed_ms;
	int64_t budget_ms;
};

struct diag_attempt {
	int64_t id;
	int64_t call_id;
	const char *route;
	const char *backend;
	int attempt_no;
	int64_t started_at;
	int64_t connect_ms;
	int64_t first_byte_ms;
	int64_t total_ms;
	int http_status;
	const char *outcome;
	int64_t retry_after_ms;
	int64_t input_tokens;
};

struct diag_vfail {
	int64_t attempt_id;
	int64_t call_id;
	const char *route;
	const char *stage;
	const char *rule;
	const char *detail;
	int64_t at;
};

struct diag_event {
	int64_t at;
	const char *kind;
	const char *subject;
	const char *detail;
};

struct diag_audit {
	int64_t at;
	const char *actor;
	const char *action;
	const char *target;
};

/* The rows of one window [from, to), each array by time (prev: calls only). */
struct diag_rows {
	int64_t from, to;
	const struct diag_call *calls;
	int ncalls;
	const struct diag_attempt *attempts;
	int nattempts;
	const struct diag_vfail *vfails;
	int nvfails;
};

/*
 * The window before as aggregates, when its calls are not given as rows:
 * a route's minute (epoch ms of its start) with its calls and degraded
 * calls, and how many of its calls fell for a reason.
 */
struct diag_minute {
	const char *route;
	int64_t minute;
	int calls;
	int degraded;
};

struct diag_reason_count {
	const char *route;
	const char *reason;
	int calls;
};

/*
 * The window's calls that were not degraded, as aggregates, when they are
 * not given as rows in cur.calls: a route's minute (epoch ms of its start)
 * with those calls, how many answered 4xx, how many answered 200 or 202
 * within budget and how many 200 came from the llm or the backup (the
 * same tests route_json applies to a row). Rows and aggregates add up.
 */
struct diag_healthy {
	const char *route;
	int64_t minute;
	int calls;
	int client_errors;
	int service_good;
	int smart_good;
};

enum diag_role { DIAG_PRIMARY = 0, DIAG_CANARY, DIAG_BACKUP };

/* A backend a route may call, with the live weight and the timeouts it runs with. */
struct diag_target {
	const char *route;
	const char *backend;
	enum diag_role role;
	int weight;
	int64_t connect_ms, first_byte_ms;
};

struct diag_input {
	const char *route; /* NULL: every route with a degraded call in cur */
	struct diag_rows cur, prev;
	/* The window before as aggregates (added to prev's rows, if any). */
	const struct diag_minute *prev_minutes;
	int nprev_minutes;
	const struct diag_reason_count *prev_reasons;
	int nprev_reasons;
	/* The window's healthy calls as aggregates (added to cur's rows), by minute. */
	const struct diag_healthy *healthy;
	int nhealthy;
	/* Events and audit rows from 10 minutes before prev.from to cur.to, by time. */
	const struct diag_event *events;
	int nevents;
	const struct diag_audit *audit;
	int naudit;
	const struct diag_target *targets;
	int ntargets;
};

/* Minutes of healthy traffic that close an episode (API.md: "after >= 5 healthy ones"). */
#define DIAG_HEALTHY_MINUTES 5
/* How far before the episode a change is reported. */
#define DIAG_CHANGES_MS (10 * 60000LL)

/*
 * The diagnosis of in, as GET /v1/diagnose answers it: {"window",
 * "routes": [...]} (caller deletes). Never NULL.
 */
cJSON *diagnose_run(const struct diag_input *in);

/*
 * Parse a "since" argument: a duration ("30s", "15m", "2h", "1d") before
 * now_ms, or an RFC 3339 time. 0 with *from_ms set, or -EINVAL.
 */
int diagnose_since_parse(const char *s, int64_t now_ms, int64_t *from_ms);
