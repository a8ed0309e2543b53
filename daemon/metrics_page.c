/*
 * metrics_page: GET /metrics, every family in page order. First what obs
 * counts (calls, attempts, retries, degradations, validation failures,
 * durations, SLOs, alerts; read through obs.h), then the engine state
 * (breakers, bulkheads, route levels, retry budget), the review queue
 * (read from SQLite: the families are left out when the query fails
 * rather than reported as zeros), and the unlabelled counters of the
 * store, the jobs and the engine, then the process_* families and
 * fusebox_build_info. Counters of every configured route and backend are
 * there at 0 from the start (a rate() sees their first increase).
 *
 * Reading a breaker's state ticks it, so a scrape may emit breaker events.
 * Engine thread.
 */
#include "metrics_page.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "commit.h"
#include "engine.h"
#include "http.h"
#include "jobs.h"
#include "metrics.h"
#include "notify.h"
#include "obs.h"
#include "trace.h"
#include "util.h"

#define METRICS_MAX_BYTES (16u << 20)

/* The families of obs: what it counted, the SLOs and the alerts. */
static void
page_obs(struct metrics *m, const struct obs *o, int64_t now_wall_ms)
{
	const struct config *cfg = obs_config(o);
	const struct alert_rule *rule;
	const struct alert *alert;
	struct notify_stats ns;
	struct metrics_label l[4];
	char lvl[8];
	int i, j, k, w, nrules;

	metrics_family(m, "fusebox_calls_total", METRICS_COUNTER,
		       "Guarded calls answered, by route, answer source and route level.");
	for (i = 0; i < cfg->nroutes; i++) {
		for (j = 0; j < SOURCE__COUNT; j++) {
			for (k = 0; k < OBS_LEVELS; k++) {
				uint64_t n = obs_route_counts(o, i)->calls[j][k];

				snprintf(lvl, sizeof lvl, "%d", k);
				l[0] = (struct metrics_label){"route", cfg->routes[i].name};
				l[1] = (struct metrics_label){"source",
							      source_name((enum source)j)};
				l[2] = (struct metrics_label){"level", lvl};
				metrics_sample(m, "fusebox_calls_total", l, 3, (double)n);
			}
		}
	}
	metrics_family(m, "fusebox_attempts_total", METRICS_COUNTER,
		       "Upstream attempts, by backend and outcome class.");
	for (i = 0; i < cfg->nbackends; i++) {
		for (j = 0; j < OUTCOME__COUNT; j++) {
			uint64_t n = obs_backend_counts(o, i)->attempts[j];

			l[0] = (struct metrics_label){"backend", cfg->backends[i].name};
			l[1] = (struct metrics_label){"outcome", outcome_name((enum outcome)j)};
			metrics_sample(m, "fusebox_attempts_total", l, 2, (double)n);
		}
	}
	metrics_family(m, "fusebox_retries_total", METRICS_COUNTER, "Retries made, by route.");
	for (i = 0; i < cfg->nroutes; i++) {
		l[0] = (struct metrics_label){"route", cfg->routes[i].name};
		metrics_sample(m, "fusebox_retries_total", l, 1,
			       (double)obs_route_counts(o, i)->retries);
	}
	metrics_family(m, "fusebox_degradations_total", METRICS_COUNTER,
		       "Falls and skips down the ladder, by route and reason.");
	for (i = 0; i < cfg->nroutes; i++) {
		for (j = 0; j <= OBS_MAX_NAMED; j++) {
			const struct obs_named *d = &obs_route_counts(o, i)->degr[j];

			if (d->name == NULL)
				continue;
			l[0] = (struct metrics_label){"route", cfg->routes[i].name};
			l[1] = (struct metrics_label){"reason", d->name};
			metrics_sample(m, "fusebox_degradations_total", l, 2, (double)d->n);
		}
	}
	metrics_family(m, "fusebox_validation_failures_total", METRICS_COUNTER,
		       "Failed output checks, by route and stage.");
	for (i = 0; i < cfg->nroutes; i++) {
		for (j = 0; j <= OBS_MAX_NAMED; j++) {
			const struct obs_named *d = &obs_route_counts(o, i)->vfail[j];

			if (d->name == NULL)
				continue;
			l[0] = (struct metrics_label){"route", cfg->routes[i].name};
			l[1] = (struct metrics_label){"stage", d->name};
			metrics_sample(m, "fusebox_validation_failures_total", l, 2, (double)d->n);
		}
	}
	metrics_family(m, "fusebox_call_duration_seconds", METRICS_HISTOGRAM,
		       "Guarded call duration as the caller saw it, by route.");
	for (i = 0; i < cfg->nroutes; i++) {
		l[0] = (struct metrics_label){"route", cfg->routes[i].name};
		metrics_histogram(m, "fusebox_call_duration_seconds", l, 1,
				  &obs_route_counts(o, i)->duration);
	}
	metrics_family(m, "fusebox_attempt_duration_seconds", METRICS_HISTOGRAM,
		       "Upstream attempt duration, by backend.");
	for (i = 0; i < cfg->nbackends; i++) {
		l[0] = (struct metrics_label){"backend", cfg->backends[i].name};
		metrics_histogram(m, "fusebox_attempt_duration_seconds", l, 1,
				  &obs_backend_counts(o, i)->duration);
	}
	metrics_family(m, "fusebox_slo_calls_total", METRICS_COUNTER,
		       "Calls counted by the SLOs (all but caller errors), by route.");
	for (i = 0; i < cfg->nroutes; i++) {
		l[0] = (struct metrics_label){"route", cfg->routes[i].name};
		metrics_sample(m, "fusebox_slo_calls_total", l, 1,
			       (double)obs_route_counts(o, i)->slo_total);
	}
	metrics_family(m, "fusebox_slo_good_total", METRICS_COUNTER,
		       "Good calls by route and kind: service (2xx/202 within budget, any "
		       "source) or smart (answered by llm or backup).");
	for (i = 0; i < cfg->nroutes; i++) {
		for (k = 0; k < SLO_KIND__COUNT; k++) {
			l[0] = (struct metrics_label){"route", cfg->routes[i].name};
			l[1] = (struct metrics_label){"kind", slo_kind_name((enum slo_kind)k)};
			metrics_sample(m, "fusebox_slo_good_total", l, 2,
				       (double)obs_route_counts(o, i)->slo_good[k]);
		}
	}
	metrics_family(m, "fusebox_slo_eligible_calls_total", METRICS_COUNTER,
		       "The denominator of each SLO, by route and kind: service counts every call "
		       "but caller errors, smart leaves out the calls whose caller did not ask for "
		       "a model (allow_llm: false).");
	for (i = 0; i < cfg->nroutes; i++) {
		for (k = 0; k < SLO_KIND__COUNT; k++) {
			l[0] = (struct metrics_label){"route", cfg->routes[i].name};
			l[1] = (struct metrics_label){"kind", slo_kind_name((enum slo_kind)k)};
			metrics_sample(m, "fusebox_slo_eligible_calls_total", l, 2,
				       (double)obs_route_counts(o, i)->slo_eligible[k]);
		}
	}
	metrics_family(m, "fusebox_tokens_total", METRICS_COUNTER,
		       "Tokens the backends reported using, by backend and kind (input|output).");
	for (i = 0; i < cfg->nbackends; i++) {
		l[0] = (struct metrics_label){"backend", cfg->backends[i].name};
		l[1] = (struct metrics_label){"kind", "input"};
		metrics_sample(m, "fusebox_tokens_total", l, 2,
			       (double)obs_backend_counts(o, i)->tokens_in);
		l[1] = (struct metrics_label){"kind", "output"};
		metrics_sample(m, "fusebox_tokens_total", l, 2,
			       (double)obs_backend_counts(o, i)->tokens_out);
	}
	metrics_family(m, "fusebox_slo_objective", METRICS_GAUGE,
		       "Configured availability target, by route and kind (routes with an slo "
		       "section).");
	for (i = 0; i < cfg->nroutes; i++) {
		const struct slo_cfg *s = &cfg->routes[i].slo;

		if (!s->enabled)
			continue;
		for (k = 0; k < SLO_KIND__COUNT; k++) {
			l[0] = (struct metrics_label){"route", cfg->routes[i].name};
			l[1] = (struct metrics_label){"kind", slo_kind_name((enum slo_kind)k)};
			metrics_sample(m, "fusebox_slo_objective", l, 2,
				       k == SLO_KIND_SERVICE ? s->service_availability
							     : s->smart_availability);
		}
	}
	metrics_family(m, "fusebox_slo_availability", METRICS_GAUGE,
		       "Availability over a window, by route, kind (service|smart) and window; "
		       "absent while the window has no calls.");
	for (i = 0; i < cfg->nroutes; i++) {
		struct slo_counts sums[WIN__COUNT];

		obs_window_sums(o, i, now_wall_ms, sums);
		for (w = 0; w < WIN__COUNT; w++) {
			const struct slo_counts *c = &sums[w];

			for (k = 0; k < SLO_KIND__COUNT; k++) {
				uint64_t den = slo_total(c, (enum slo_kind)k);

				if (den == 0)
					continue;
				l[0] = (struct metrics_label){"route", cfg->routes[i].name};
				l[1] = (struct metrics_label){"kind",
							      slo_kind_name((enum slo_kind)k)};
				l[2] = (struct metrics_label){"window",
							      slo_window_name((enum slo_window)w)};
				metrics_sample(m, "fusebox_slo_availability", l, 3,
					       (double)slo_good(c, (enum slo_kind)k) / (double)den);
			}
		}
	}
	metrics_family(m, "fusebox_alert_firing", METRICS_GAUGE,
		       "1 while the alert fires, else 0; one series per configured rule and per "
		       "alert the canary guard or the review queue raised.");
	nrules = obs_alert_count(o);
	for (i = 0; i < nrules; i++) {
		obs_alert_get(o, i, &rule, &alert);
		l[0] = (struct metrics_label){"rule", rule->name};
		l[1] = (struct metrics_label){"route", cfg->routes[rule->route].name};
		metrics_sample(m, "fusebox_alert_firing", l, 2,
			       alert->state == ALERT_FIRING ? 1.0 : 0.0);
	}
	{
		uint64_t applied, refused;

		obs_reload_counts(o, &applied, &refused);
		metrics_family(m, "fusebox_config_reload_total", METRICS_COUNTER,
			       "Configuration reloads (POST /v1/reload, SIGHUP) by result: success "
			       "(applied) or failure (refused, the running one kept).");
		l[0] = (struct metrics_label){"result", "success"};
		metrics_sample(m, "fusebox_config_reload_total", l, 1, (double)applied);
		l[0] = (struct metrics_label){"result", "failure"};
		metrics_sample(m, "fusebox_config_reload_total", l, 1, (double)refused);
	}
	if (obs_notify_stats(o, &ns) == 0) {
		metrics_family(m, "fusebox_alert_notifications_total", METRICS_COUNTER,
			       "Alert notifications (webhook, Alertmanager) by result.");
		l[0] = (struct metrics_label){"result", "delivered"};
		metrics_sample(m, "fusebox_alert_notifications_total", l, 1, (double)ns.delivered);
		l[0] = (struct metrics_label){"result", "failed"};
		metrics_sample(m, "fusebox_alert_notifications_total", l, 1, (double)ns.failed);
		l[0] = (struct metrics_label){"result", "dropped"};
		metrics_sample(m, "fusebox_alert_notifications_total", l, 1, (double)ns.dropped);
	}
}

struct review_counts {
	struct engine *e;
	int64_t (*pending)[PRIORITY__COUNT];
	int64_t *overdue;
};

static int
review_row(void *arg, sqlite3_stmt *row)
{
	struct review_counts *rc = arg;
	const unsigned char *name = sqlite3_column_text(row, 0);
	int route = engine_route_index(rc->e, name ? (const char *)name : "");
	int64_t prio = sqlite3_column_int64(row, 1);

	if (route < 0 || prio < 0 || prio >= PRIORITY__COUNT)
		return 0;
	rc->pending[route][prio] += sqlite3_column_int64(row, 2);
	rc->overdue[route] += sqlite3_column_int64(row, 3);
	return 0;
}

static void
page_reviews(struct metrics *m, struct engine *e, int64_t now_wall)
{
	int64_t(*pending)[PRIORITY__COUNT] = xcalloc((size_t)MAX(e->nroutes, 1), sizeof *pending);
	int64_t *overdue = xcalloc((size_t)MAX(e->nroutes, 1), sizeof *overdue);
	struct review_counts rc = {e, pending, overdue};
	struct store_val v[] = {SVI(now_wall)};
	struct metrics_label l[2];
	char *cause = NULL;
	int i, p;

	if (store_reader_run(e->reader, STORE_Q_REVIEW_METRICS, v, 1, review_row, &rc, &cause) !=
	    0) {
		free(cause);
		goto out; /* leave the families out rather than report zeros */
	}
	metrics_family(m, "fusebox_review_pending", METRICS_GAUGE,
		       "Open review items (pending or claimed, overdue included), by route and "
		       "priority.");
	for (i = 0; i < e->nroutes; i++) {
		for (p = 0; p < PRIORITY__COUNT; p++) {
			l[0] = (struct metrics_label){"route", e->routes[i].cfg->name};
			l[1] = (struct metrics_label){"priority", priority_name((enum priority)p)};
			metrics_sample(m, "fusebox_review_pending", l, 2, (double)pending[i][p]);
		}
	}
	metrics_family(m, "fusebox_review_overdue", METRICS_GAUGE,
		       "Open review items past their SLA, by route.");
	for (i = 0; i < e->nroutes; i++) {
		l[0] = (struct metrics_label){"route", e->routes[i].cfg->name};
		metrics_sample(m, "fusebox_review_overdue", l, 1, (double)overdue[i]);
	}
out:
	free(pending);
	free(overdue);
}

/* The HTTP front: open connections by state, and what it turned away. */
static void
page_http(struct metrics *m, struct http_server *srv)
{
	struct http_conn_stats hs;
	struct metrics_label l[1];
	int i;

	http_conn_stats(srv, &hs);
	metrics_family(m, "fusebox_connections", METRICS_GAUGE,
		       "Open client connections: reading (waiting for a request's headers), "
		       "active (a request open), idle (kept alive between requests).");
	for (i = 0; i < HTTP_CONN__COUNT; i++) {
		l[0] = (struct metrics_label){"state", http_conn_state_name(i)};
		metrics_sample(m, "fusebox_connections", l, 1, (double)hs.conns[i]);
	}
	metrics_family(m, "fusebox_connections_refused_total", METRICS_COUNTER,
		       "Connections or requests the HTTP front turned away, by reason (503: "
		       "capacity, per_ip, fd_limit, body_memory; 408: header_timeout).");
	for (i = 0; i < HTTP_REFUSED__COUNT; i++) {
		l[0] = (struct metrics_label){"reason", http_refusal_name(i)};
		metrics_sample(m, "fusebox_connections_refused_total", l, 1, (double)hs.refused[i]);
	}
	metrics_family(m, "fusebox_buffered_body_bytes", METRICS_GAUGE,
		       "Request body bytes held (or announced) now, against "
		       "max_buffered_body_bytes.");
	metrics_sample(m, "fusebox_buffered_body_bytes", NULL, 0, (double)hs.buffered_body_bytes);
}

/* Count the entries of /proc/self/fd (the descriptor opendir holds included). */
static int
open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

/* The process_* families every Prometheus client exposes, and build info. */
static void
page_process(struct metrics *m, struct engine *e)
{
	struct metrics_label l[2];
	struct metrics_proc p;
	struct rlimit rl;
	char text[1024];
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/proc/self/stat", "r");
	int n;

	if (f != NULL) {
		size_t len = fread(text, 1, sizeof text - 1, f);

		fclose(f);
		text[len] = '\0';
		if (tick > 0 && metrics_proc_parse(text, &p) == 0) {
			metrics_family(m, "process_cpu_seconds_total", METRICS_COUNTER,
				       "Total user and system CPU time spent in seconds.");
			metrics_sample(m, "process_cpu_seconds_total", NULL, 0,
				       (double)(p.utime_ticks + p.stime_ticks) / (double)tick);
			metrics_family(m, "process_resident_memory_bytes", METRICS_GAUGE,
				       "Resident memory size in bytes.");
			metrics_sample(m, "process_resident_memory_bytes", NULL, 0,
				       (double)p.rss_pages * (double)MAX(page, 1));
			metrics_family(m, "process_virtual_memory_bytes", METRICS_GAUGE,
				       "Virtual memory size in bytes.");
			metrics_sample(m, "process_virtual_memory_bytes", NULL, 0,
				       (double)p.vsize_bytes);
		}
	}
	if ((n = open_fds()) >= 0) {
		metrics_family(m, "process_open_fds", METRICS_GAUGE,
			       "Number of open file descriptors.");
		metrics_sample(m, "process_open_fds", NULL, 0, (double)n);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		metrics_family(m, "process_max_fds", METRICS_GAUGE,
			       "Maximum number of open file descriptors (the soft limit).");
		metrics_sample(m, "process_max_fds", NULL, 0,
			       rl.rlim_cur == RLIM_INFINITY ? INFINITY : (double)rl.rlim_cur);
	}
	metrics_family(m, "process_start_time_seconds", METRICS_GAUGE,
		       "Start time of the process since unix epoch in seconds.");
	metrics_sample(m, "process_start_time_seconds", NULL, 0,
		       (double)e->started_wall_ms / 1000.0);
	metrics_family(m, "fusebox_build_info", METRICS_GAUGE,
		       "Always 1; the labels name the build.");
	l[0] = (struct metrics_label){"version", FB_VERSION};
	l[1] = (struct metrics_label){"commit", FB_COMMIT};
	metrics_sample(m, "fusebox_build_info", l, 2, 1.0);
}

/* The live weight of every primary target (operator and canary guard changes). */
static void
page_weights(struct metrics *m, struct engine *e)
{
	struct metrics_label l[3];
	int i, j;

	metrics_family(m, "fusebox_route_target_weight", METRICS_GAUGE,
		       "Live routing weight of each primary target, by route, backend and "
		       "canary (true|false); the canary guard sets a failing canary's to 0.");
	for (i = 0; i < e->nroutes; i++) {
		const struct route_cfg *rc = e->routes[i].cfg;

		for (j = 0; j < rc->ntargets; j++) {
			l[0] = (struct metrics_label){"route", rc->name};
			l[1] = (struct metrics_label){"backend", rc->targets[j].backend};
			l[2] = (struct metrics_label){"canary",
						      rc->targets[j].canary ? "true" : "false"};
			metrics_sample(m, "fusebox_route_target_weight", l, 3,
				       (double)e->routes[i].weights[j]);
		}
	}
}

/* Hedges, the adaptive concurrency limit and the local rate limiting (gate.c). */
static void
page_gate(struct metrics *m, struct engine *e)
{
	static const char *const results[HEDGE__COUNT] = {"won", "lost", "failed", "denied"};
	struct metrics_label l[2];
	int i, k;

	metrics_family(m, "fusebox_hedges_total", METRICS_COUNTER,
		       "Hedged attempts by route and how they ended: won (answered first), lost "
		       "(cancelled: the attempt it hedged answered), failed, denied (due, but the "
		       "retry budget or the backend had no room).");
	for (i = 0; i < e->nroutes; i++)
		for (k = 0; k < HEDGE__COUNT; k++) {
			l[0] = (struct metrics_label){"route", e->routes[i].cfg->name};
			l[1] = (struct metrics_label){"result", results[k]};
			metrics_sample(m, "fusebox_hedges_total", l, 2,
				       (double)e->routes[i].hedges[k]);
		}
	metrics_family(
		m, "fusebox_concurrency_limit", METRICS_GAUGE,
		"Attempts a backend admits at once: the adaptive limit, else max_concurrent.");
	for (i = 0; i < e->nbackends; i++) {
		l[0] = (struct metrics_label){"backend", e->backends[i].cfg->name};
		metrics_sample(m, "fusebox_concurrency_limit", l, 1,
			       (double)e->backends[i].bulkhead.max);
	}
	metrics_family(m, "fusebox_concurrency_baseline_seconds", METRICS_GAUGE,
		       "The adaptive limiter's latency baseline (recent minimum of its windows' "
		       "first-byte latency), by backend; absent until it has one.");
	for (i = 0; i < e->nbackends; i++) {
		double base = limiter_baseline_ms(&e->backends[i].gate.limiter);

		if (!e->backends[i].cfg->adaptive.enabled || base <= 0)
			continue;
		l[0] = (struct metrics_label){"backend", e->backends[i].cfg->name};
		metrics_sample(m, "fusebox_concurrency_baseline_seconds", l, 1, base / 1000.0);
	}
	metrics_family(m, "fusebox_rate_limited_local_total", METRICS_COUNTER,
		       "Times the router passed a backend over because its known rate limit "
		       "(headers or config) was spent until its reset.");
	for (i = 0; i < e->nbackends; i++) {
		l[0] = (struct metrics_label){"backend", e->backends[i].cfg->name};
		metrics_sample(m, "fusebox_rate_limited_local_total", l, 1,
			       (double)e->backends[i].gate.rate_limited_local);
	}
}

int
metrics_page_write(struct engine *e, int64_t now_wall, int64_t now_mono, char **body, size_t *len)
{
	struct metrics m;
	struct metrics_label l[1];
	struct store_stats ss;
	int i;

	metrics_init(&m, METRICS_MAX_BYTES);
	if (e->obs != NULL)
		page_obs(&m, e->obs, now_wall);
	metrics_family(&m, "fusebox_breaker_state", METRICS_GAUGE,
		       "Circuit breaker state: 0 closed, 1 open, 2 half_open, 3 forced_open, "
		       "4 forced_closed.");
	for (i = 0; i < e->nbackends; i++) {
		enum breaker_state st = breaker_state(&e->backends[i].breaker, now_mono);

		engine_breaker_events(e, &e->backends[i]);
		l[0] = (struct metrics_label){"backend", e->backends[i].cfg->name};
		metrics_sample(&m, "fusebox_breaker_state", l, 1, (double)st);
	}
	metrics_family(&m, "fusebox_inflight", METRICS_GAUGE,
		       "Attempts holding a bulkhead slot, by backend.");
	for (i = 0; i < e->nbackends; i++) {
		l[0] = (struct metrics_label){"backend", e->backends[i].cfg->name};
		metrics_sample(&m, "fusebox_inflight", l, 1,
			       (double)e->backends[i].bulkhead.inflight);
	}
	page_gate(&m, e);
	metrics_family(&m, "fusebox_route_level", METRICS_GAUGE,
		       "Effective route level (0 primary, 1 backup, 2 rules, 3 async).");
	for (i = 0; i < e->nroutes; i++) {
		l[0] = (struct metrics_label){"route", e->routes[i].cfg->name};
		metrics_sample(&m, "fusebox_route_level", l, 1, (double)engine_route_level(e, i));
	}
	metrics_family(&m, "fusebox_retry_budget_denied_total", METRICS_COUNTER,
		       "Retries the retry budget refused, by route.");
	for (i = 0; i < e->nroutes; i++) {
		l[0] = (struct metrics_label){"route", e->routes[i].cfg->name};
		metrics_sample(&m, "fusebox_retry_budget_denied_total", l, 1,
			       (double)e->routes[i].retries_denied);
	}
	page_weights(&m, e);
	page_reviews(&m, e, now_wall);
	page_process(&m, e);
	if (e->srv != NULL)
		page_http(&m, e->srv);
	store_get_stats(e->store, &ss);
	{
		/* the samples without a label */
		const struct {
			const char *name;
			enum metrics_type type;
			const char *help;
			double v;
		} ec[] = {
			{"fusebox_log_rows_dropped_total", METRICS_COUNTER,
			 "Log rows that never reached the database (writer queue full, or a "
			 "failed write).",
			 (double)ss.rows_dropped},
			{"fusebox_log_queue_rows", METRICS_GAUGE,
			 "Log rows waiting for the SQLite writer.", (double)ss.queued},
			{"fusebox_log_writer_boosts_total", METRICS_COUNTER,
			 "Times the idle-priority SQLite writer was raised to normal scheduling "
			 "(backlog, a commit waited on, shutdown).",
			 (double)ss.boosts},
			{"fusebox_jobs_queued", METRICS_GAUGE,
			 "Async jobs (L3, mode async) committed and waiting to run.",
			 (double)jobs_queued(e->jobs)},
			{"fusebox_jobs_running", METRICS_GAUGE, "Async jobs running now.",
			 (double)jobs_running(e->jobs)},
			{"fusebox_store_promises_total", METRICS_COUNTER,
			 "Durable writes requested (jobs accepted, results, reviews, overrides, "
			 "audit).",
			 (double)ss.requests},
			{"fusebox_store_sync_commits_total", METRICS_COUNTER,
			 "Transactions committed with synchronous=FULL (one fsync each; "
			 "promises made together share one).",
			 (double)ss.sync_commits},
			{"fusebox_replays_total", METRICS_COUNTER,
			 "Calls answered from the idempotency table (replay or single flight): no "
			 "calls row",
			 (double)e->counters.replays},
			{"fusebox_rejected_inflight_total", METRICS_COUNTER,
			 "Calls refused 429: max_inflight reached",
			 (double)e->counters.rejected_inflight},
			{"fusebox_wire_resends_total", METRICS_COUNTER,
			 "Requests libcurl re-sent on a dead reused connection (each an attempt)",
			 (double)e->counters.wire_resends},
			{"fusebox_inflight_calls", METRICS_GAUGE,
			 "Calls admitted and not yet answered.", (double)e->inflight},
			{"fusebox_trace_spans_dropped_total", METRICS_COUNTER,
			 "Spans not exported because the trace export queue was full "
			 "(tracing.max_queue).",
			 (double)trace_spans_dropped()},
		};
		size_t k;

		for (k = 0; k < ARRAY_SIZE(ec); k++) {
			metrics_family(&m, ec[k].name, ec[k].type, ec[k].help);
			metrics_sample(&m, ec[k].name, NULL, 0, ec[k].v);
		}
	}
	return metrics_finish(&m, body, len);
}
