#pragma once
/*
 * prom: the Prometheus HTTP API for the CLI — instant and range queries
 * (/api/v1/query, /api/v1/query_range) with libcurl, answers parsed with
 * cJSON into series with labels — and the fleet SLO report of `fusebox slo
 * --prometheus URL [ROUTE]`, read from the recording rules of
 * contrib/prometheus/fusebox-rules.yml. Blocking; main thread.
 */
#include <stdint.h>
#include <stdio.h>

enum prom_e {
	PROM_E_UNREACHABLE = 1, /* no HTTP answer: refused, timed out, too big */
	PROM_E_QUERY,		/* Prometheus refused the query (error_type says why) */
	PROM_E_ANSWER,		/* an answer that is not the Prometheus HTTP API's */
	PROM_E_NO_SERIES,	/* the report: Prometheus has no fusebox fleet series */
};

enum prom_type { PROM_VECTOR, PROM_MATRIX, PROM_SCALAR, PROM_STRING };

struct prom_label {
	char *name;
	char *value;
};

struct prom_point {
	int64_t t_ms; /* sample time, epoch ms */
	double v;     /* NaN and +-Inf as Prometheus sent them */
};

/*
 * One series: its labels sorted by name (__name__ included when the answer
 * has it) and its points, oldest first (a vector's and a scalar's: one).
 */
struct prom_series {
	struct prom_label *labels;
	int nlabels;
	struct prom_point *points;
	int npoints;
};

struct prom_result {
	enum prom_type type;
	struct prom_series *series; /* a scalar: one series without labels */
	int nseries;
	char *string;	     /* PROM_STRING: the value */
	char error_type[32]; /* PROM_E_QUERY: "bad_data", "timeout", "execution", ... */
};

/*
 * An instant query at Prometheus's now: GET URL/api/v1/query?query=expr.
 * url is Prometheus's base ("http://127.0.0.1:9090", a path prefix
 * allowed). 0 with *out filled (free with prom_result_free()), or a
 * prom_e with *cause: PROM_E_UNREACHABLE ("Prometheus at URL unreachable:
 * ..."), PROM_E_QUERY with Prometheus's own error text and out->error_type
 * set, PROM_E_ANSWER. timeout_ms bounds the whole transfer and is passed
 * on as the query's own timeout.
 */
int prom_query(const char *url, const char *expr, long timeout_ms, struct prom_result *out,
	       char **cause);
/*
 * A range query over [start_ms, end_ms] every step_ms: a matrix. As
 * prom_query; -EINVAL with *cause for a bad range (nothing sent).
 */
int prom_query_range(const char *url, const char *expr, int64_t start_ms, int64_t end_ms,
		     int64_t step_ms, long timeout_ms, struct prom_result *out, char **cause);
/*
 * Parse an answer body of the HTTP status it came with. Pure: 0,
 * PROM_E_QUERY or PROM_E_ANSWER with *cause (prom_query's).
 */
int prom_parse(const char *body, size_t len, long status, struct prom_result *out, char **cause);
void prom_result_free(struct prom_result *r);
/* The value of label name, or NULL. */
const char *prom_series_label(const struct prom_series *s, const char *name);

/* ---- the fleet SLO report ---- */

/* The windows of the fleet recording rules, shortest first. */
#define PROM_SLO_NWIN 8
extern const char *const prom_slo_windows[PROM_SLO_NWIN];

enum { PROM_SLO_SERVICE, PROM_SLO_SMART, PROM_SLO_NKIND };

/* Values are NaN where Prometheus has no series (no calls, no objective). */
struct prom_slo_kind {
	double objective;		    /* route_kind:fusebox_slo_objective:max */
	double calls[PROM_SLO_NWIN];	    /* route_kind:fusebox_slo_calls:increase<w> */
	double availability[PROM_SLO_NWIN]; /* route_kind:fusebox_slo_availability:ratio_rate<w> */
	double burn[PROM_SLO_NWIN];	    /* route_kind:fusebox_slo_burn_rate:ratio_rate<w> */
	double budget_left; /* route_kind:fusebox_slo_error_budget_remaining:ratio_rate30d */
};

struct prom_slo_alert {
	char alertname[64];
	char kind[16];
	char window[16];
	char severity[16];
	char factor[16];
};

struct prom_slo_route {
	char route[64];
	struct prom_slo_kind k[PROM_SLO_NKIND];
	int hosts[4]; /* hosts at each effective level (route_level:fusebox_hosts:count) */
	/* firing fleet alerts (ALERTS{source="fleet"}), pages first */
	struct prom_slo_alert *alerts;
	int nalerts;
};

struct prom_slo {
	char url[512];
	struct prom_slo_route *routes; /* by name */
	int n;
};

/*
 * Build the report from the answers of the two queries prom_slo_fetch()
 * makes: series (the recording rules' series, any order) and alerts
 * (ALERTS series; NULL: none). Pure. 0, or PROM_E_NO_SERIES with *cause
 * when no fusebox fleet series is in it (route: for that route).
 */
int prom_slo_build(const char *url, const char *route, const struct prom_result *series,
		   const struct prom_result *alerts, struct prom_slo **out, char **cause);
/* Query Prometheus at url for route (NULL: every route) and build the report. As prom_query. */
int prom_slo_fetch(const char *url, const char *route, long timeout_ms, struct prom_slo **out,
		   char **cause);
/*
 * The report as `fusebox slo` prints one daemon's: per route a header (the
 * fleet's objectives, hosts per level), a table per window (calls, service
 * and smart availability, their burn rates), the 30-day budget left and
 * the fleet alerts firing.
 */
void prom_slo_render(FILE *out, const struct prom_slo *s);
/* The report as JSON, shaped like GET /v1/slo (windows, error_budget) plus hosts and alerts. */
void prom_slo_json(FILE *out, const struct prom_slo *s);
void prom_slo_free(struct prom_slo *s);
/*
 * fetch + render (json: prom_slo_json) to out. 0, or a prom_e with *cause
 * (nothing printed).
 */
int prom_slo_print(FILE *out, const char *url, const char *route, int json, long timeout_ms,
		   char **cause);

/* ---- the console's fleet mode (screen_slo.c) ---- */

/*
 * The recorded fleet availability of route (NULL: every route) and kind (PROM_SLO_SERVICE,
 * PROM_SLO_SMART) over window (a prom_slo_windows[] entry) as a range
 * query over [start_ms, end_ms] every step_ms. As prom_query_range.
 */
int prom_slo_history(const char *url, const char *route, int kind, const char *window,
		     int64_t start_ms, int64_t end_ms, int64_t step_ms, long timeout_ms,
		     struct prom_result *out, char **cause);
/* The texts prom_slo_render() prints: firing alerts ("none"), hosts per level, a burn rate. */
void prom_slo_alerts_text(const struct prom_slo_route *r, char *out, size_t outsz);
void prom_slo_levels_text(const struct prom_slo_route *r, char *out, size_t outsz);
void prom_burn_text(char *out, size_t outsz, double v);
/*
 * The fleet mode's status line. Pure: err (non-empty) gives "prometheus
 * unreachable since HH:MM:SS (err)"; no answer yet (ok_wall <= 0)
 * "fetching... from URL"; else "prometheus URL: updated 3s ago" (",
 * fetching" while a refresh runs).
 */
void prom_status_text(char *out, size_t outsz, const char *url, int fetching, const char *err,
		      int64_t err_since_wall, int64_t ok_wall, int64_t now_wall);
