/*
 * store: SQLite persistence with one writer thread. This file opens and
 * closes the store, holds the writer's statements and the named read
 * queries, the SQL helpers and the migrations, and the producer side of
 * the queue (store_put). The writer thread is store_writer.c, the row
 * blocks store_rows.c, the read connections store_reader.c; what they
 * share, the queue and its locking included, is store_int.h.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "migrations.h"
#include "store_int.h"

#define STORE_BUSY_TIMEOUT_MS 5000

/* The writer's statements; column orders are documented in store.h. */
const struct store_stmt_def store_stmt_defs[STORE_STMT__COUNT] = {
	[STORE_CALL_INSERT] = {"call_insert",
			       "INSERT OR REPLACE INTO calls (id, request_id, route, started_at, "
			       "finished_at, elapsed_ms, budget_ms, level, source, backend, "
			       "degraded, reason, attempts, confidence, review, http_status, "
			       "input, result, response, status, trace_id) VALUES (?1, ?2, ?3, ?4, "
			       "?5, ?6, ?7, ?8, ?9, ?10, coalesce(?11, 0), ?12, coalesce(?13, 0), "
			       "?14, coalesce(?15, 0), ?16, ?17, ?18, ?19, ?20, ?21)"},
	[STORE_ATTEMPT_INSERT] =
		{"attempt_insert",
		 "INSERT INTO attempts (id, call_id, request_id, route, backend, "
		 "attempt_no, started_at, timeout_ms, connect_ms, first_byte_ms, "
		 "total_ms, http_status, outcome, retry_after_ms, input_tokens, "
		 "output_tokens, raw_output, span_id, upstream_headers) VALUES (?1, "
		 "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
		 "?16, ?17, ?18, ?19)"},
	[STORE_VFAIL_INSERT] = {"vfail_insert",
				"INSERT INTO validation_failures (id, attempt_id, call_id, route, "
				"stage, rule, detail, raw_output, at) VALUES (?1, ?2, ?3, ?4, ?5, "
				"?6, ?7, ?8, ?9)"},
	[STORE_DEGRADATION_INSERT] = {"degradation_insert",
				      "INSERT INTO degradations (id, call_id, route, from_step, "
				      "to_step, reason, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
	[STORE_EVENT_INSERT] = {"event_insert", "INSERT INTO events (at, kind, subject, detail) "
						"VALUES (?1, ?2, ?3, ?4)"},
	[STORE_SLO_MINUTE_ADD] =
		{"slo_minute_add",
		 "INSERT INTO slo_minutes (route, minute, total, service_good, "
		 "smart_good, latency_ok, timeouts, retries, attempts, "
		 "format_violations, src_llm, src_backup, src_rules, src_cache, "
		 "src_preset, src_manual, review_decided, review_corrected, "
		 "shadow_total, shadow_agree, cross_total, cross_agree, no_llm) VALUES "
		 "(?1, ?2, coalesce(?3, 0), coalesce(?4, 0), coalesce(?5, 0), "
		 "coalesce(?6, 0), coalesce(?7, 0), coalesce(?8, 0), "
		 "coalesce(?9, 0), coalesce(?10, 0), coalesce(?11, 0), "
		 "coalesce(?12, 0), coalesce(?13, 0), coalesce(?14, 0), "
		 "coalesce(?15, 0), coalesce(?16, 0), coalesce(?17, 0), "
		 "coalesce(?18, 0), coalesce(?19, 0), coalesce(?20, 0), "
		 "coalesce(?21, 0), coalesce(?22, 0), coalesce(?23, 0)) "
		 "ON CONFLICT (route, minute) DO UPDATE SET "
		 "total = total + excluded.total, "
		 "service_good = service_good + excluded.service_good, "
		 "smart_good = smart_good + excluded.smart_good, "
		 "latency_ok = latency_ok + excluded.latency_ok, "
		 "timeouts = timeouts + excluded.timeouts, "
		 "retries = retries + excluded.retries, "
		 "attempts = attempts + excluded.attempts, "
		 "format_violations = format_violations + "
		 "excluded.format_violations, "
		 "src_llm = src_llm + excluded.src_llm, "
		 "src_backup = src_backup + excluded.src_backup, "
		 "src_rules = src_rules + excluded.src_rules, "
		 "src_cache = src_cache + excluded.src_cache, "
		 "src_preset = src_preset + excluded.src_preset, "
		 "src_manual = src_manual + excluded.src_manual, "
		 "review_decided = review_decided + excluded.review_decided, "
		 "review_corrected = review_corrected + excluded.review_corrected, "
		 "shadow_total = shadow_total + excluded.shadow_total, "
		 "shadow_agree = shadow_agree + excluded.shadow_agree, "
		 "cross_total = cross_total + excluded.cross_total, "
		 "cross_agree = cross_agree + excluded.cross_agree, "
		 "no_llm = no_llm + excluded.no_llm"},
	[STORE_JOB_INSERT] = {"job_insert",
			      "INSERT INTO jobs (request_id, route, state, body, created_at, "
			      "updated_at, tries, response) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
			      "coalesce(?7, 0), ?8)"},
	[STORE_JOB_UPDATE] = {"job_update",
			      "UPDATE jobs SET state = ?1, updated_at = ?2, "
			      "tries = coalesce(?3, 0), response = ?4 WHERE request_id = ?5"},
	[STORE_OVERRIDE_UPSERT] = {"override_upsert",
				   "INSERT INTO overrides (kind, subject, value, actor, reason, "
				   "until, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
				   "ON CONFLICT (kind, subject) DO UPDATE SET "
				   "value = excluded.value, actor = excluded.actor, "
				   "reason = excluded.reason, until = excluded.until, "
				   "at = excluded.at"},
	[STORE_OVERRIDE_DELETE] = {"override_delete",
				   "DELETE FROM overrides WHERE kind = ?1 AND subject = ?2"},
	[STORE_AUDIT_INSERT] = {"audit_insert",
				"INSERT INTO audit (at, actor, action, target, before, after, "
				"remote) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
	[STORE_ALERT_INSERT] = {"alert_insert",
				"INSERT INTO alerts (rule, route, severity, state, value, "
				"threshold, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
	[STORE_REVIEW_INSERT] = {"review_insert",
				 "INSERT INTO reviews (id, route, request_id, call_id, priority, "
				 "reason, state, created_at, due_at, input, raw_output, result, "
				 "confidence, alt_result, callback_url) VALUES (?1, ?2, ?3, ?4, "
				 "coalesce(?5, 0), ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"},
	[STORE_REVIEW_UPDATE] = {"review_update",
				 "UPDATE reviews SET state = ?1, reviewer = ?2, verdict = ?3, "
				 "corrected_result = ?4, note = ?5, decided_at = ?6 "
				 "WHERE id = ?7"},
	[STORE_CACHE_UPSERT] = {"cache_upsert",
				"INSERT INTO cache (route, key, result, confidence, stored_at) "
				"VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (route, key) DO UPDATE "
				"SET result = excluded.result, confidence = excluded.confidence, "
				"stored_at = excluded.stored_at"},
	[STORE_AUDIT_ACTION_ID_SET] = {"audit_action_id_set",
				       "UPDATE audit SET action_id = ?1 WHERE id = (SELECT max(id) "
				       "FROM audit WHERE actor = ?2 AND target = ?3) AND action_id "
				       "IS NULL"},
};

/* The columns of a review item, as daemon/review_q.h's review_item_from_row() reads them. */
#define STORE_REVIEW_COLUMNS                                                                       \
	"id, route, request_id, call_id, priority, reason, state, "                                \
	"created_at, due_at, input, raw_output, result, confidence, "                              \
	"alt_result, reviewer, verdict, corrected_result, note, "                                  \
	"decided_at, callback_url"

/* The list of reviews, filtered: where is the first condition. */
#define STORE_REVIEW_LIST(where)                                                                   \
	"SELECT " STORE_REVIEW_COLUMNS " FROM reviews WHERE " where                                \
	" AND (?3 IS NULL OR route = ?3) AND (?4 IS NULL OR priority = ?4) "                       \
	"ORDER BY due_at, id LIMIT ?5"

/* slo_minutes' counters in enum slo_field order (daemon/core/slo.h). */
#define STORE_SLO_COLUMNS                                                                          \
	"total, service_good, smart_good, latency_ok, timeouts, "                                  \
	"retries, attempts, format_violations, src_llm, src_backup, "                              \
	"src_rules, src_cache, src_preset, src_manual, review_decided, "                           \
	"review_corrected, shadow_total, shadow_agree, cross_total, "                              \
	"cross_agree, no_llm"

/*
 * The read queries; parameters and columns are documented in store.h.
 * by_key: looked up by a key on an API request, so its plan must search
 * an index (test_store checks it).
 */
const struct store_query_def store_query_defs[STORE_Q__COUNT] = {
	[STORE_Q_SCHEMA_VERSION] = {"schema_version",
				    "SELECT coalesce(max(version), 0) FROM schema_migrations"},
	[STORE_Q_CALL_REPLAY] = {"call_replay",
				 "SELECT response FROM calls WHERE route = ?1 AND request_id = ?2 "
				 "AND started_at >= ?3 AND http_status = 200",
				 .by_key = 1},
	[STORE_Q_CALL_ROUTE] = {"call_route",
				"SELECT route FROM calls WHERE request_id = ?1 "
				"ORDER BY id DESC LIMIT 1",
				.by_key = 1},
	[STORE_Q_CALL_RESPONSE] = {"call_response",
				   "SELECT response FROM calls WHERE request_id = ?1 "
				   "ORDER BY id DESC LIMIT 1",
				   .by_key = 1},
	[STORE_Q_CALL_MAX_ID] = {"call_max_id", "SELECT coalesce(max(id),0) FROM calls"},
	[STORE_Q_ATTEMPT_MAX_ID] = {"attempt_max_id", "SELECT coalesce(max(id),0) FROM attempts"},
	[STORE_Q_VFAIL_MAX_ID] = {"vfail_max_id",
				  "SELECT coalesce(max(id),0) FROM validation_failures"},
	[STORE_Q_DEGRADATION_MAX_ID] = {"degradation_max_id",
					"SELECT coalesce(max(id),0) FROM degradations"},
	[STORE_Q_ROUTE_CALLS] = {"route_calls",
				 "SELECT count(*) FROM calls WHERE route = ?1 AND "
				 "started_at >= ?2 AND finished_at >= ?3 AND "
				 "elapsed_ms IS NOT NULL",
				 .by_key = 1},
	[STORE_Q_ROUTE_ELAPSED_RANK] = {"route_elapsed_rank",
					"SELECT elapsed_ms FROM calls WHERE route = ?1 AND "
					"started_at >= ?2 AND finished_at >= ?3 AND "
					"elapsed_ms IS NOT NULL "
					"ORDER BY elapsed_ms LIMIT 1 OFFSET ?4",
					.by_key = 1},
	[STORE_Q_ROUTE_REVIEWS_OPEN] = {"route_reviews_open",
					"SELECT count(*) FROM reviews WHERE route = ?1 AND "
					"state IN ('pending', 'claimed')",
					.by_key = 1},
	[STORE_Q_REVIEW_GET] = {"review_get",
				"SELECT " STORE_REVIEW_COLUMNS " FROM reviews WHERE id = ?1",
				.by_key = 1},
	[STORE_Q_REVIEW_LIST_STATE] = {"review_list_state", STORE_REVIEW_LIST("state = ?1")},
	[STORE_Q_REVIEW_LIST_OPEN] = {"review_list_open",
				      STORE_REVIEW_LIST("state IN ('pending', 'claimed')")},
	[STORE_Q_REVIEW_LIST_OVERDUE] = {"review_list_overdue",
					 STORE_REVIEW_LIST("state IN ('pending', 'claimed') AND "
							   "due_at <= ?2")},
	[STORE_Q_REVIEW_LIST_DECIDED] = {"review_list_decided",
					 STORE_REVIEW_LIST("state IN ('approved', 'corrected', "
							   "'rejected')")},
	[STORE_Q_REVIEW_LIST_ALL] = {"review_list_all", STORE_REVIEW_LIST("1")},
	[STORE_Q_REVIEW_LIST_COUNTS] =
		{"review_list_counts",
		 "SELECT count(*), coalesce(sum(due_at <= ?3), 0) FROM reviews "
		 "WHERE state IN ('pending', 'claimed') AND (?1 IS NULL OR "
		 "route = ?1) AND (?2 IS NULL OR priority = ?2)"},
	[STORE_Q_REVIEW_EXPORT] = {"review_export",
				   "SELECT " STORE_REVIEW_COLUMNS " FROM reviews WHERE decided_at "
				   "IS NOT NULL AND decided_at >= ?1 AND state IN ('approved', "
				   "'corrected', 'rejected') ORDER BY decided_at, id LIMIT ?2"},
	[STORE_Q_REVIEW_OVERFLOW] =
		{"review_overflow", "SELECT id FROM reviews WHERE route = ?1 AND state = 'pending' "
				    "AND priority = ?2 ORDER BY created_at, id LIMIT ?3"},
	[STORE_Q_REVIEW_NEWLY_OVERDUE] =
		{"review_newly_overdue",
		 "SELECT id, route, priority, reason, due_at FROM reviews "
		 "WHERE state IN ('pending', 'claimed') AND due_at > ?1 AND "
		 "due_at <= ?2 ORDER BY due_at, id"},
	[STORE_Q_REVIEW_OVERDUE_BY_ROUTE] =
		{"review_overdue_by_route",
		 "SELECT route, count(*) FROM reviews WHERE state IN "
		 "('pending', 'claimed') AND due_at <= ?1 GROUP BY route"},
	[STORE_Q_REVIEW_OPEN_COUNTS] =
		{"review_open_counts",
		 "SELECT route, priority, state, count(*) FROM reviews WHERE state "
		 "IN ('pending', 'claimed') GROUP BY route, priority, state"},
	[STORE_Q_REVIEW_METRICS] =
		{"review_metrics",
		 "SELECT route, priority, count(*), "
		 "sum(due_at IS NOT NULL AND due_at < ?1) FROM reviews "
		 "WHERE state IN ('pending', 'claimed') GROUP BY route, priority"},
	[STORE_Q_JOBS_QUEUED] = {"jobs_queued",
				 "SELECT id, request_id, route, state, body, tries, created_at "
				 "FROM jobs WHERE state IN ('queued', 'running') AND id > ?1 "
				 "ORDER BY id LIMIT ?2"},
	[STORE_Q_JOBS_QUEUED_COUNT] =
		{"jobs_queued_count",
		 "SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')"},
	[STORE_Q_JOB_STATE] = {"job_state",
			       "SELECT route, state, response FROM jobs WHERE request_id = ?1",
			       .by_key = 1},
	[STORE_Q_OVERRIDES] = {"overrides",
			       "SELECT kind, subject, value, actor, reason, until FROM overrides "
			       "ORDER BY at, kind, subject"},
	[STORE_Q_CACHE_LOAD] = {"cache_load",
				"SELECT route, key, result, confidence, stored_at FROM cache "
				"WHERE stored_at >= ?1 ORDER BY stored_at"},
	[STORE_Q_SLO_HISTORY] = {"slo_history",
				 "SELECT route, minute, " STORE_SLO_COLUMNS " FROM slo_minutes "
				 "WHERE minute >= ?1 ORDER BY minute"},
	[STORE_Q_SLO_HISTORY_ROUTE] = {"slo_history_route",
				       "SELECT route, minute, " STORE_SLO_COLUMNS
				       " FROM slo_minutes "
				       "WHERE minute >= ?1 AND route = ?2 ORDER BY minute"},
	[STORE_Q_ALERT_LAST] = {"alert_last",
				"SELECT state, at FROM alerts WHERE rule = ?1 AND route = ?2 "
				"ORDER BY id DESC LIMIT 1"},
	[STORE_Q_ALERT_FIRING] = {"alert_firing",
				  "SELECT state = 'firing' FROM alerts WHERE rule = ?1 AND "
				  "route = ?2 ORDER BY id DESC LIMIT 1"},
	[STORE_Q_ALERT_EPISODE_START] =
		{"alert_episode_start",
		 "SELECT coalesce(min(at), 0) FROM alerts WHERE rule = ?1 AND "
		 "route = ?2 AND id > coalesce((SELECT max(id) FROM alerts "
		 "WHERE rule = ?1 AND route = ?2 AND state IN ('resolved', "
		 "'inactive')), 0)"},
	[STORE_Q_ALERTS_OPEN] = {"alerts_open",
				 "SELECT rule, route, severity, state FROM alerts WHERE id IN "
				 "(SELECT max(id) FROM alerts GROUP BY rule, route) "
				 "AND state IN ('pending', 'firing')"},
	[STORE_Q_ALERTS_FOLD_AFTER] =
		{"alerts_fold_after",
		 "SELECT coalesce(min(coalesce((SELECT max(c.id) FROM alerts c "
		 "WHERE c.rule = a.rule AND c.route IS a.route AND c.id < a.id "
		 "AND c.state IN ('resolved', 'inactive')), 0)), -1) FROM alerts "
		 "a WHERE a.id IN (SELECT max(id) FROM alerts WHERE at < ?1 "
		 "GROUP BY rule, route) AND a.state IN ('pending', 'firing')"},
	[STORE_Q_ALERTS_FOLD] = {"alerts_fold",
				 "SELECT id, rule, route, severity, state, value, threshold, at "
				 "FROM alerts WHERE at >= ?1 OR id > ?2 ORDER BY id"},
	[STORE_Q_EVENTS_AFTER] = {"events_after",
				  "SELECT id, at, kind, subject, detail FROM events WHERE id > ?1 "
				  "ORDER BY id LIMIT ?2",
				  .by_key = 1},
	[STORE_Q_EVENT_LAST_AT] = {"event_last_at",
				   "SELECT coalesce(max(at), 0) FROM events WHERE kind = ?1"},
	[STORE_Q_REPORT_SLO_ROWS] = {"report_slo_rows",
				     "SELECT count(*) FROM slo_minutes WHERE minute >= ?1"},
	[STORE_Q_REPORT_AVAIL_SLO] =
		{"report_avail_slo",
		 "SELECT route, sum(total), sum(service_good), sum(smart_good), "
		 "sum(no_llm) FROM slo_minutes WHERE minute >= ?1 GROUP BY route "
		 "ORDER BY route"},
	[STORE_Q_REPORT_AVAIL_CALLS] =
		{"report_avail_calls",
		 "SELECT route, "
		 "sum(CASE WHEN http_status BETWEEN 400 AND 499 THEN 0 ELSE 1 "
		 "END), "
		 "sum(CASE WHEN http_status IN (200, 202) AND (budget_ms IS NULL "
		 "OR elapsed_ms IS NULL OR elapsed_ms <= budget_ms) THEN 1 ELSE 0 "
		 "END), "
		 "sum(CASE WHEN http_status = 200 AND source IN ('llm', 'backup') "
		 "THEN 1 ELSE 0 END), "
		 "sum(CASE WHEN reason = 'llm_disallowed' AND (http_status IS NULL OR "
		 "http_status NOT BETWEEN 400 AND 499) THEN 1 ELSE 0 END) "
		 "FROM calls WHERE started_at >= ?1 GROUP BY route ORDER BY route"},
	[STORE_Q_REPORT_DEGRADATIONS] =
		{"report_degradations",
		 "SELECT reason, count(*), count(DISTINCT call_id), "
		 "group_concat(DISTINCT route) FROM degradations WHERE at >= ?1 "
		 "GROUP BY reason ORDER BY 2 DESC, 1 LIMIT ?2"},
	[STORE_Q_REPORT_FAILURES] =
		{"report_failures",
		 "SELECT route, stage, rule, count(*) AS n, max(detail) FROM "
		 "validation_failures v WHERE coalesce(at, (SELECT started_at FROM "
		 "calls c WHERE c.id = v.call_id), 0) >= ?1 GROUP BY route, stage, "
		 "rule ORDER BY n DESC, route, stage, rule LIMIT ?2"},
	[STORE_Q_HISTORY_CALLS] =
		{"history_calls",
		 "SELECT route, m * 60000, n, deg, elapsed_ms FROM (SELECT route, "
		 "started_at / 60000 AS m, coalesce(elapsed_ms, 0) AS elapsed_ms, "
		 "row_number() OVER (PARTITION BY route, started_at / 60000 ORDER BY "
		 "coalesce(elapsed_ms, 0)) AS rn, count(*) OVER (PARTITION BY route, "
		 "started_at / 60000) AS n, sum(degraded) OVER (PARTITION BY route, "
		 "started_at / 60000) AS deg FROM calls WHERE started_at >= ?1) "
		 "WHERE rn = max(1, (n * 99 + 99) / 100) ORDER BY route, m"},
	[STORE_Q_HISTORY_OUTCOMES] = {"history_outcomes",
				      "SELECT backend, coalesce(outcome, ''), count(*) FROM "
				      "attempts WHERE started_at >= ?1 AND backend IS NOT NULL "
				      "GROUP BY backend, outcome ORDER BY backend, 3 DESC"},
	[STORE_Q_AUDIT_AFTER] = {"audit_after",
				 "SELECT id, at, actor, action, target, before, after, remote, "
				 "action_id FROM audit WHERE id > ?1 ORDER BY id LIMIT ?2",
				 .by_key = 1},
	[STORE_Q_DIAG_CALLS] = {"diag_calls",
				"SELECT id, route, started_at, degraded, reason, source, "
				"http_status, elapsed_ms, budget_ms FROM calls INDEXED BY "
				"calls_diag WHERE started_at >= ?1 AND started_at < ?2 AND (?3 "
				"IS NULL OR route = ?3) AND degraded <> 0 ORDER BY started_at, id "
				"LIMIT ?4",
				.by_key = 1},
	[STORE_Q_DIAG_HEALTHY] =
		{"diag_healthy",
		 "SELECT route, started_at / 60000 * 8 + CASE WHEN http_status BETWEEN 400 AND "
		 "499 THEN 1 ELSE 0 END + CASE WHEN (http_status = 200 OR http_status = 202) AND "
		 "(budget_ms IS NULL OR elapsed_ms IS NULL OR elapsed_ms <= budget_ms OR "
		 "budget_ms < 0 OR elapsed_ms < 0) THEN 2 ELSE 0 END + CASE WHEN http_status = "
		 "200 AND (source = 'llm' OR source = 'backup') THEN 4 ELSE 0 END FROM calls "
		 "INDEXED BY calls_diag WHERE started_at >= ?1 AND "
		 "started_at < ?2 AND (?3 IS NULL OR route = ?3) AND degraded = 0 ORDER BY "
		 "started_at, id LIMIT ?4",
		 .by_key = 1},
	[STORE_Q_DIAG_ATTEMPTS] = {"diag_attempts",
				   "SELECT id, call_id, route, backend, attempt_no, started_at, "
				   "connect_ms, first_byte_ms, total_ms, http_status, outcome, "
				   "retry_after_ms, input_tokens FROM attempts INDEXED BY "
				   "attempts_diag WHERE started_at >= ?1 AND started_at < ?2 "
				   "AND (?3 IS NULL OR route = ?3) ORDER BY started_at, id "
				   "LIMIT ?4",
				   .by_key = 1},
	[STORE_Q_DIAG_VFAILS] = {"diag_vfails",
				 "SELECT attempt_id, call_id, route, stage, rule, detail, at "
				 "FROM validation_failures WHERE at >= ?1 AND at < ?2 AND (?3 "
				 "IS NULL OR route = ?3) ORDER BY at LIMIT ?4",
				 .by_key = 1},
	[STORE_Q_DIAG_EVENTS] = {"diag_events",
				 "SELECT at, kind, subject, detail FROM events WHERE at >= ?1 "
				 "AND at < ?2 ORDER BY at LIMIT ?3",
				 .by_key = 1},
	[STORE_Q_DIAG_AUDIT] = {"diag_audit",
				"SELECT at, actor, action, target FROM audit WHERE at >= ?1 AND "
				"at < ?2 ORDER BY at LIMIT ?3",
				.by_key = 1},
	[STORE_Q_DIAG_PREV_MINUTES] = {"diag_prev_minutes",
				       "SELECT route, minute, total, total - src_llm FROM "
				       "slo_minutes WHERE minute >= ?1 AND minute < ?2 AND (?3 IS "
				       "NULL OR route = ?3) ORDER BY minute LIMIT ?4",
				       .by_key = 1},
	[STORE_Q_DIAG_PREV_REASONS] = {"diag_prev_reasons",
				       "SELECT route, reason, count(DISTINCT call_id) FROM "
				       "degradations WHERE at >= ?1 AND at < ?2 AND (?3 IS NULL OR "
				       "route = ?3) GROUP BY route, reason LIMIT ?4",
				       .by_key = 1},
	[STORE_Q_CALL_TRACE_ID] = {"call_trace_id",
				   "SELECT trace_id FROM calls WHERE request_id = ?1 "
				   "ORDER BY id DESC LIMIT 1",
				   .by_key = 1},
	[STORE_Q_REQUEST_ATTEMPTS] = {"request_attempts",
				      "SELECT attempt_no, backend, outcome, http_status, "
				      "connect_ms, first_byte_ms, total_ms, span_id, "
				      "upstream_headers FROM attempts WHERE call_id = (SELECT id "
				      "FROM calls WHERE request_id = ?1 ORDER BY id DESC LIMIT 1) "
				      "ORDER BY attempt_no, id LIMIT ?2",
				      .by_key = 1},
};

void *
store_alloc(size_t n)
{
	void *p;

	p = malloc(n);
	if (p == NULL) {
		fprintf(stderr, "store: out of memory\n");
		abort();
	}
	return p;
}

char *
store_strdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(store_alloc(n), s, n);
}

/* Set *cause (when cause is not NULL) to a fresh string. */
void
store_cause_set(char **cause, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (cause != NULL) {
		va_start(ap, fmt);
		if (vasprintf(&s, fmt, ap) < 0) {
			fprintf(stderr, "store: out of memory\n");
			abort();
		}
		va_end(ap);
		*cause = s;
	}
}

int64_t
store_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
store_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run SQL without results on the writer connection. 0 or STORE_E_SQL. */
int
store_exec(sqlite3 *db, const char *sql, char **cause)
{
	char *err = NULL;
	int rc = 0;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		store_cause_set(cause, "%s: %s", sql, err != NULL ? err : sqlite3_errmsg(db));
		rc = STORE_E_SQL;
	}
	sqlite3_free(err);
	return rc;
}

/* Bind vals to ?1..?nvals. SQLite result code. */
int
store_bind(sqlite3_stmt *stmt, const struct store_val *vals, int nvals)
{
	int i, rc = SQLITE_OK;

	for (i = 0; i < nvals && rc == SQLITE_OK; i++) {
		switch (vals[i].type) {
		case SV_INT:
			rc = sqlite3_bind_int64(stmt, i + 1, vals[i].i);
			break;
		case SV_REAL:
			rc = sqlite3_bind_double(stmt, i + 1, vals[i].d);
			break;
		case SV_TEXT:
			if (vals[i].s != NULL) {
				rc = sqlite3_bind_text(stmt, i + 1, vals[i].s, -1, SQLITE_STATIC);
				break;
			}
			/* FALLTHROUGH */
		case SV_NULL:
		default:
			rc = sqlite3_bind_null(stmt, i + 1);
			break;
		}
	}
	return rc;
}

/*
 * Execute one writer statement with vals. The statement is reset and its
 * bindings cleared whatever happens. 0 or STORE_E_SQL with *cause.
 */
int
store_stmt_run(struct store *st, enum store_stmt which, const struct store_val *vals, int nvals,
	       char **cause)
{
	sqlite3_stmt *stmt = st->stmts[which];
	int rc = 0, src;

	src = store_bind(stmt, vals, nvals);
	if (src == SQLITE_OK)
		src = sqlite3_step(stmt);
	if (src != SQLITE_DONE && src != SQLITE_ROW) {
		store_cause_set(cause, "%s: %s", store_stmt_defs[which].name,
				sqlite3_errmsg(st->db));
		rc = STORE_E_SQL;
	}
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
	return rc;
}

/*
 * Check arguments shared by store_put() and store_commit_now().
 * 0 or -EINVAL.
 */
int
store_args_check(const struct store *st, enum store_stmt stmt, const struct store_val *vals,
		 int nvals)
{
	int rc = 0;

	if ((int)stmt < 0 || stmt >= STORE_STMT__COUNT)
		rc = -EINVAL;
	else if (nvals < 0 || nvals > st->nparams[stmt])
		rc = -EINVAL;
	else if (nvals > 0 && vals == NULL)
		rc = -EINVAL;
	return rc;
}

/* Highest applied migration, 0 when none. 0 or STORE_E_SQL. */
static int
store_version_read(sqlite3 *db, int *version, char **cause)
{
	sqlite3_stmt *stmt = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(db, store_query_defs[STORE_Q_SCHEMA_VERSION].sql, -1, &stmt, NULL) !=
		    SQLITE_OK ||
	    sqlite3_step(stmt) != SQLITE_ROW) {
		store_cause_set(cause, "reading schema_migrations: %s", sqlite3_errmsg(db));
		rc = STORE_E_SQL;
		goto out;
	}
	*version = sqlite3_column_int(stmt, 0);
out:
	sqlite3_finalize(stmt);
	return rc;
}

/* Apply one migration in its own transaction unless already applied. */
static int
store_migration_apply(sqlite3 *db, const struct migration *m, char **cause)
{
	sqlite3_stmt *stmt = NULL;
	char *err = NULL;
	int rc, version, in_tx = 0;

	rc = store_exec(db, "BEGIN IMMEDIATE", cause);
	if (rc != 0)
		goto out;
	in_tx = 1;
	/* Another process may have applied it while we waited for the lock. */
	rc = store_version_read(db, &version, cause);
	if (rc != 0 || version >= m->version)
		goto out;
	if (sqlite3_exec(db, m->sql, NULL, NULL, &err) != SQLITE_OK) {
		store_cause_set(cause, "migration %s: %s", m->name,
				err != NULL ? err : sqlite3_errmsg(db));
		rc = STORE_E_SQL;
		goto out;
	}
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO schema_migrations (version, "
			       "applied_at) VALUES (?1, ?2)",
			       -1, &stmt, NULL) != SQLITE_OK ||
	    sqlite3_bind_int(stmt, 1, m->version) != SQLITE_OK ||
	    sqlite3_bind_int64(stmt, 2, store_wall_ms()) != SQLITE_OK ||
	    sqlite3_step(stmt) != SQLITE_DONE) {
		store_cause_set(cause, "migration %s: recording it: %s", m->name,
				sqlite3_errmsg(db));
		rc = STORE_E_SQL;
		goto out;
	}
out:
	sqlite3_finalize(stmt);
	sqlite3_free(err);
	if (in_tx && rc == 0)
		rc = store_exec(db, "COMMIT", cause);
	if (in_tx && rc != 0)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * Bring the schema up to date. A DB newer than every compiled-in migration
 * is refused rather than half-understood.
 */
int
store_migrate(sqlite3 *db, char **cause)
{
	int rc, i, version = 0, known = store_known_version();

	rc = store_exec(db,
			"CREATE TABLE IF NOT EXISTS schema_migrations "
			"(version INTEGER PRIMARY KEY, applied_at INTEGER)",
			cause);
	if (rc != 0)
		goto out;
	rc = store_version_read(db, &version, cause);
	if (rc != 0)
		goto out;
	if (version > known) {
		store_cause_set(cause,
				"database schema version %d is newer "
				"than this fuseboxd (knows %d): upgrade fuseboxd",
				version, known);
		rc = STORE_E_NEWER;
		goto out;
	}
	for (i = 0; i < migrations_count; i++) {
		if (migrations[i].version <= version)
			continue;
		rc = store_migration_apply(db, &migrations[i], cause);
		if (rc != 0)
			goto out;
	}
out:
	return rc;
}

/* Open a connection with the settings every connection shares. */
int
store_db_open(const char *path, int flags, sqlite3 **out, char **cause)
{
	sqlite3 *db = NULL;
	int rc = 0;

	if (sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		store_cause_set(cause, "%s: %s", path,
				db != NULL ? sqlite3_errmsg(db) : "out of memory");
		rc = STORE_E_SQL;
		goto out;
	}
	sqlite3_extended_result_codes(db, 1);
	sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
	*out = db;
	db = NULL;
out:
	sqlite3_close(db);
	return rc;
}

/* WAL, synchronous=NORMAL, foreign_keys off on the writer connection. */
int
store_db_configure(sqlite3 *db, const char *path, char **cause)
{
	sqlite3_stmt *stmt = NULL;
	const char *mode;
	int rc = 0;

	if (sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &stmt, NULL) != SQLITE_OK ||
	    sqlite3_step(stmt) != SQLITE_ROW) {
		store_cause_set(cause, "%s: setting WAL mode: %s", path, sqlite3_errmsg(db));
		rc = STORE_E_SQL;
		goto out;
	}
	mode = (const char *)sqlite3_column_text(stmt, 0);
	if (mode == NULL || (strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)) {
		store_cause_set(cause,
				"%s: cannot use WAL mode (journal mode "
				"is %s)",
				path, mode != NULL ? mode : "unknown");
		rc = STORE_E_SQL;
		goto out;
	}
	rc = store_exec(db, "PRAGMA synchronous = NORMAL", cause);
	if (rc == 0)
		rc = store_exec(db, "PRAGMA foreign_keys = OFF", cause);
	/* Trim the WAL file after checkpoints instead of keeping its peak. */
	if (rc == 0)
		rc = store_exec(db, "PRAGMA journal_size_limit = 67108864", cause);
out:
	sqlite3_finalize(stmt);
	return rc;
}

int
store_known_version(void)
{
	return migrations_count > 0 ? migrations[migrations_count - 1].version : 0;
}
