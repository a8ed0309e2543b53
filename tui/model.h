#pragma once
/*
 * model: the console's picture of the daemon. Parsers turn the control
 * API's JSON (API.md) into plain structs with bounded strings, so screens
 * read fields without touching cJSON and rendering allocates nothing; the
 * history keeps per-route samples of the 1 Hz snapshots for sparklines;
 * the event ring keeps the tail of /v1/events; pure helpers (weights
 * steps, review ordering, filter matching) live here so they are tested
 * with literals.
 *
 * Parsers are pure and run on the fetch thread; the results are handed to
 * the UI thread, which owns them from then on. A missing or null number is
 * NAN (doubles) or -1 (counts), a missing time is 0, a missing string "".
 */
#include <stddef.h>
#include <stdint.h>

#include "model_json.h"

#define MODEL_NAME_MAX	  64
#define MODEL_TEXT_MAX	  256
#define MODEL_TARGETS_MAX 16
#define HIST_LEN	  600 /* samples kept per route: 10 min at 1 Hz */

enum breaker_st {
	BS_UNKNOWN = 0,
	BS_CLOSED,
	BS_HALF_OPEN,
	BS_OPEN,
	BS_FORCED_OPEN,
	BS_FORCED_CLOSED,
};

struct target_v {
	char backend[MODEL_NAME_MAX];
	int weight;
	int canary;
};

/*
 * A route's hedging ("hedge" of the route object): null or absent is off.
 * The counters are cumulative since the daemon started (-1: absent); the
 * per-minute rates are not in the answer: rates_update() fills them from
 * successive snapshots (NAN until two are known).
 */
enum { HV_WON, HV_LOST, HV_FAILED, HV_DENIED, HV__COUNT };
extern const char *const model_hedge_results[HV__COUNT]; /* "won", "lost", ... */

struct hedge_v {
	int on;
	int delay_ms; /* -1: not known (null) */
	int max_hedges;
	char targets[8]; /* "same" | "other" */
	int64_t n[HV__COUNT];
	double per_min[HV__COUNT];
};

struct route_v {
	char name[MODEL_NAME_MAX];
	int level;
	int auto_level;
	int forced; /* forced_level present: the fields below are set */
	int forced_lvl;
	char forced_actor[MODEL_NAME_MAX];
	char forced_reason[MODEL_TEXT_MAX];
	int64_t forced_until; /* epoch ms; 0: until released */
	int budget_ms;
	struct target_v targets[MODEL_TARGETS_MAX];
	int ntargets;
	double rps;	    /* rps_1m */
	double p50_ms;	    /* p50_ms_1m */
	double p99_ms;	    /* p99_ms_1m */
	int review_pending; /* -1: not reported */
	struct hedge_v hedge;
};

struct backend_v {
	char name[MODEL_NAME_MAX];
	char version[32];
	char state[20]; /* as the daemon spelled it */
	enum breaker_st st;
	char mode[16];
	int failures;
	int calls_in_window;
	double failure_rate;
	double slow_call_rate;
	int64_t opened_at;    /* epoch ms, 0: none */
	int64_t half_open_at; /* epoch ms, 0: none */
	int has_transition;
	int64_t tr_at;
	char tr_from[20];
	char tr_to[20];
	char tr_reason[MODEL_TEXT_MAX];
	int inflight;
	int max_concurrent;
	double health;
	double p90_ms;
	/* "concurrency" (-1 / NAN when absent: an older daemon) */
	int adaptive;	    /* the limit moves (adaptive_concurrency) */
	int limit;	    /* the cap in force now */
	int limit_max;	    /* its ceiling: max_concurrent */
	int conc_inflight;  /* attempts in flight */
	int waiting;	    /* calls queued for a slot */
	double baseline_ms; /* the limiter's latency baseline (NAN: none yet) */
	double latency_ms;  /* its latest window's latency */
	/* "rate_limits": what the router knows is left (-1: unknown) */
	int64_t rl_requests;
	int64_t rl_tokens;
	int64_t rl_skipped; /* times it was passed over, its known limit spent */
	int hedged;	    /* routes that target it and hedge (set by the parser) */
	/* Hedges started per minute by those routes (rates_update; NAN: unknown). */
	double hedges_per_min;
};

struct state_v {
	char version[32];
	int64_t started_at;
	int64_t uptime_s;
	int inflight;
	struct route_v *routes;
	int nroutes;
	struct backend_v *backends;
	int nbackends;
};

enum { SLO_5M, SLO_30M, SLO_1H, SLO_6H, SLO_1D, SLO_3D, SLO_30D, SLO_NWIN };
extern const char *const model_slo_windows[SLO_NWIN];

struct slo_window_v {
	int present;
	int64_t total;
	int64_t service_good;
	int64_t smart_good;
	double service; /* availabilities: NAN when total is 0 */
	double smart;
	double latency_ok;
	double timeout_rate;
	double retry_rate;
	double format_violation_rate;
};

struct slo_route_v {
	char route[MODEL_NAME_MAX];
	double obj_service;
	double obj_smart;
	double obj_latency_ms;
	double obj_latency_target;
	struct slo_window_v w[SLO_NWIN];
	double budget_service; /* error budget remaining, fraction (may be < 0) */
	double budget_smart;
	double burn_service; /* burn_rate_1h */
	double burn_smart;
};

struct slo_v {
	struct slo_route_v *routes;
	int n;
};

struct alert_v {
	char id[32];
	char rule[MODEL_NAME_MAX];
	char route[MODEL_NAME_MAX];
	char severity[16];
	char state[16];
	double value;
	double threshold;
	int64_t since;
	int64_t resolved_at;
};

struct alerts_v {
	struct alert_v *v;
	int n;
};

struct review_v {
	int64_t id;
	char route[MODEL_NAME_MAX];
	char request_id[96];
	char priority[16];
	char reason[MODEL_NAME_MAX];
	char state[16];
	int64_t created_at;
	int64_t due_at;
	int overdue;
	char *input;	  /* text (a JSON input is printed compactly) */
	char *raw_output; /* text */
	char *result;	  /* JSON text, or NULL */
	char *alt_result; /* JSON text, or NULL */
	double confidence;
	char reviewer[MODEL_NAME_MAX];
	int64_t decision_at;
};

struct reviews_v {
	struct review_v *v;
	int n;
	int pending; /* counts.pending, -1 when absent */
	int overdue;
};

struct event_v {
	int64_t id;
	int64_t at;
	char kind[32];
	char subject[MODEL_NAME_MAX];
	char *detail; /* text (an object is printed compactly) */
};

struct events_v {
	struct event_v *v;
	int n;
};

/* Parsers: 0 with *out owned by the caller, or MODEL_E_PARSE with *cause. */
int model_parse_state(const char *json, size_t len, struct state_v **out, char **cause);
int model_parse_slo(const char *json, size_t len, struct slo_v **out, char **cause);
int model_parse_alerts(const char *json, size_t len, struct alerts_v **out, char **cause);
/* A list ({"items": [...]}) or, with single set, one item object. */
int model_parse_reviews(const char *json, size_t len, int single, struct reviews_v **out,
			char **cause);
int model_parse_events(const char *json, size_t len, struct events_v **out, char **cause);
/* One route object (the answer of the level endpoints). */
int model_parse_route(const char *json, size_t len, struct route_v *out, char **cause);

void state_free(struct state_v *s);
void slo_free(struct slo_v *s);
void alerts_free(struct alerts_v *a);
void reviews_free(struct reviews_v *r);
void events_free(struct events_v *e);

enum breaker_st breaker_st_parse(const char *name);
/* The backend / route / slo row with that name, or NULL. */
const struct backend_v *state_backend(const struct state_v *s, const char *name);
const struct route_v *state_route(const struct state_v *s, const char *name);
const struct slo_route_v *slo_route(const struct slo_v *s, const char *name);
/* Alerts in state "firing" for route (NULL: all routes). */
int alerts_firing(const struct alerts_v *a, const char *route);

/* Sort review items oldest due first (due_at 0 last), then by id. */
void reviews_sort(struct reviews_v *r);

/*
 * Per-route samples for sparklines. history_push() appends one sample
 * (NAN allowed) to the route's series, creating it; history_find() returns
 * the series or NULL. history_get() copies the last count samples of a
 * series, oldest first, into out and returns how many there were.
 */
struct hist_series {
	char name[MODEL_NAME_MAX];
	float rps[HIST_LEN];
	float smart[HIST_LEN];
	int head; /* next slot to write */
	int n;	  /* samples held, <= HIST_LEN */
};

struct history {
	struct hist_series *s;
	int n;
	int cap;
	int hint; /* where the next lookup starts */
};

enum hist_what { HIST_RPS, HIST_SMART };

void history_push(struct history *h, const char *name, double rps, double smart);
const struct hist_series *history_find(const struct history *h, const char *name);
int history_get(const struct hist_series *s, enum hist_what what, int count, float *out);
void history_free(struct history *h);

/*
 * The tail of /v1/events: at most cap events, oldest dropped. push() takes
 * over the details of e (e stays valid but its details become NULL) and
 * skips ids <= last_id. get(i) is the i-th oldest held.
 */
struct event_ring {
	struct event_v *v;
	int cap;
	int head; /* index of the oldest */
	int n;
	int64_t last_id;
};

void event_ring_init(struct event_ring *r, int cap);
void event_ring_push(struct event_ring *r, struct events_v *e);
const struct event_v *event_ring_get(const struct event_ring *r, int i);
void event_ring_free(struct event_ring *r);

/*
 * Per-minute rates of cumulative counters (the hedge results of each
 * route), from the snapshots the console polls. rates_update() records the
 * counts of s at now_ms (monotonic) and fills s's per_min fields: the
 * increase since the oldest sample of the last minute, scaled to a minute
 * over at least RATE_MIN_SPAN_MS (so the first seconds do not spike), NAN
 * when there is no earlier sample; a counter that went back (the daemon
 * restarted) starts its series again. It also sets each backend's
 * hedges_per_min: the hedges started (won + lost + failed) per minute of
 * the routes that have it as a target, NAN when none of them hedges.
 */
#define RATE_SAMPLES	 128
#define RATE_WINDOW_MS	 60000
#define RATE_MIN_SPAN_MS 10000

struct rate_series {
	char name[MODEL_NAME_MAX];
	int64_t at[RATE_SAMPLES];
	int64_t v[RATE_SAMPLES][HV__COUNT];
	int head; /* next slot to write */
	int n;
	int seen; /* in the last update */
};

struct rate_track {
	struct rate_series *s;
	int n;
	int cap;
};

void rates_update(struct rate_track *t, struct state_v *s, int64_t now_ms);
void rate_track_free(struct rate_track *t);

/*
 * Step the weight of target idx among n weights (cur) up (dir > 0) or
 * down through the canary ladder 0, 1, 5, 10, 20, 25, 50, 75, 100 percent
 * of the total; the other targets share the rest in proportion to their
 * current weights (equally when they are all 0). out receives the new weights
 * summing to 100. 0, or 1 when there is no further step (or n < 2).
 */
int weights_step(const int *cur, int n, int idx, int dir, int *out);

/* Case-insensitive substring match of needle in any of the strings (NULL-terminated list). */
int filter_match(const char *needle, const char *const *fields);

/*
 * GET /v1/slo/history (docs/CONSOLE.md): per route one slot per minute,
 * oldest first, the last the minute now running (NAN: no calls); per
 * backend the outcomes of its attempts over the last 5 minutes. Parsed
 * in model_hist.c.
 */
#define HIST_MINUTES  60
#define HIST_OUTCOMES 16

struct hist_route_v {
	char route[MODEL_NAME_MAX];
	float calls[HIST_MINUTES];
	float degraded[HIST_MINUTES];
	float service[HIST_MINUTES];
	float smart[HIST_MINUTES];
	float p99_ms[HIST_MINUTES];
};

struct outcome_v {
	char name[32];
	int64_t n;
};

struct hist_backend_v {
	char backend[MODEL_NAME_MAX];
	struct outcome_v o[HIST_OUTCOMES]; /* most first */
	int n;
	int64_t total;
};

struct slo_hist_v {
	int64_t from; /* epoch ms of the first slot's minute */
	int minutes;  /* slots filled, <= HIST_MINUTES */
	struct hist_route_v *routes;
	int nroutes;
	struct hist_backend_v *backends;
	int nbackends;
};

int model_parse_history(const char *json, size_t len, struct slo_hist_v **out, char **cause);
void slo_hist_free(struct slo_hist_v *h);
const struct hist_route_v *slo_hist_route(const struct slo_hist_v *h, const char *route);
const struct hist_backend_v *slo_hist_backend(const struct slo_hist_v *h, const char *backend);
/*
 * An outcome breakdown in words, most first, in at most outsz bytes:
 * "ok 40  first_byte_timeout 3  http_5xx 2". "" when there is none.
 */
void hist_outcomes_text(const struct hist_backend_v *b, char *out, size_t outsz);

/* GET /v1/audit (API.md "Fleet"): who changed what. */
struct audit_v {
	int64_t id;
	int64_t at;
	char actor[MODEL_NAME_MAX];
	char action[MODEL_NAME_MAX];
	char target[MODEL_NAME_MAX];
	char remote[64];
	char *before; /* compact JSON text, or NULL */
	char *after;
};

struct audits_v {
	struct audit_v *v;
	int n;
};

int model_parse_audit(const char *json, size_t len, struct audits_v **out, char **cause);
void audits_free(struct audits_v *a);
/*
 * The audit rows the console keeps: at most cap, oldest dropped; push()
 * takes over the texts of a (leaving them NULL) and skips ids <= last_id.
 */
struct audit_list {
	struct audit_v *v;
	int n;
	int cap;
	int64_t last_id;
};

void audit_list_push(struct audit_list *l, struct audits_v *a, int cap);
void audit_list_free(struct audit_list *l);

/*
 * Causes (model_cause.c), pure. cause_short() turns the daemon's breaker
 * reasons into a few words: "3 consecutive failures (first_byte_timeout)"
 * -> "3x first_byte_timeout" ("3×" when utf8), "failure rate 0.53 >= 0.50
 * over 20 calls" -> "failures 53% of 20 calls"; other text is kept.
 */
void cause_short(const char *reason, int utf8, char *out, size_t outsz);
/*
 * Why backend b's breaker is not closed: the reason of its first opening
 * since it last closed (from the event ring, else its last transition);
 * *at gets when (0: unknown). Returns 0 and "" when it is closed.
 */
int cause_breaker(const struct event_ring *ev, const struct backend_v *b, char *out, size_t outsz,
		  int64_t *at);
/*
 * The window as the breaker saw it when it opened, read from the opening
 * cause: failures and calls (-1 when the cause does not say).
 */
void cause_window(const char *reason, int *failures, int *calls);
/*
 * The newest automatic level change of route in the ring: when (0: none)
 * and the escalation's reason ("error rate 0.60 >= 0.50 over 10 calls in
 * 10 s") into out.
 */
int64_t cause_auto_level(const struct event_ring *ev, const char *route, char *out, size_t outsz);
/*
 * The cause line of route r, or 0 and "" when nothing is degraded: for a
 * level above L0 (not forced) "L2 auto since 14:02:40: ", then every
 * target whose breaker is not closed with its cause ("primary-v2 OPEN (3x
 * first_byte_timeout)"), "no model target admits calls" when none of
 * them does, else the escalation's reason; then "smart 84.2% < 95.0% 5m"
 * when smart availability is below its objective. clock_text formats a
 * wall time (the console's local clock); sr may be NULL.
 */
int cause_route(const struct state_v *s, const struct event_ring *ev, const struct slo_route_v *sr,
		const struct route_v *r, int utf8, void (*clock_text)(char *, size_t, int64_t),
		char *out, size_t outsz);

/*
 * GET /v1/diagnose (API.md "Diagnosis", docs/DIAGNOSE.md): why a route is
 * degraded, as the daemon analysed it. Parsed in model_diag.c; the strings
 * are the daemon's (its sentences give times in UTC).
 */
struct diag_cause_v {
	double share; /* of the window's degraded calls */
	char reason[MODEL_NAME_MAX];
	char backend[MODEL_NAME_MAX]; /* "" when the cause has none */
	char phase[32];
	int64_t since;
	char text[512];		 /* the daemon's sentence */
	int calls;		 /* evidence.calls, -1 absent */
	int previous_calls;	 /* evidence.previous_calls: the window before */
	char breaker_event[256]; /* evidence.breaker_event */
	char *query;		 /* the SQL that proves it, or NULL */
};

struct diag_contrast_v {
	char factor[32];
	char text[256];
};

struct diag_change_v {
	int64_t at;
	char kind[32];
	char subject[MODEL_NAME_MAX];
	char actor[MODEL_NAME_MAX];
	char detail[256];
};

struct diag_suggestion_v {
	char text[256];
	char action[512]; /* the CLI command, "" when there is none */
};

struct diag_route_v {
	char route[MODEL_NAME_MAX];
	double service; /* availabilities over the window (NAN: none) */
	double smart;
	int calls;
	int degraded;
	int64_t episode_start; /* 0: healthy now */
	struct diag_cause_v *causes;
	int ncauses;
	struct diag_contrast_v *contrasts;
	int ncontrasts;
	struct diag_change_v *changes;
	int nchanges;
	struct diag_suggestion_v *suggestions;
	int nsuggestions;
};

struct diag_v {
	int64_t from; /* the window */
	int64_t to;
	int truncated;
	struct diag_route_v *routes;
	int nroutes;
};

int model_parse_diagnose(const char *json, size_t len, struct diag_v **out, char **cause);
void diag_free(struct diag_v *d);
const struct diag_route_v *diag_route(const struct diag_v *d, const char *route);
/*
 * The words of a cause's sentence without its share and its tail
 * ("first_byte_timeout on primary-v2 (connect p50 2 ms, first byte > 800
 * ms in 96 %)"), and the evidence in its parentheses ("connect p50 2 ms,
 * ..."; "" when it has none). Built from the fields when the sentence is
 * not the daemon's usual one.
 */
void diag_cause_words(const struct diag_cause_v *c, char *out, size_t outsz);
void diag_cause_evidence(const struct diag_cause_v *c, char *out, size_t outsz);
/*
 * The Overview's line for a diagnosed route from its first cause: share,
 * reason, backend and the evidence in a few words (cause_short): "92%
 * first_byte_timeout on primary-v2 (connect p50 2 ms, first byte > 800 ms
 * in 96 %)", "88% breaker_open on flaky-v1 (3x http_5xx)"; 0 and "" when
 * the diagnosis names none (or r is NULL).
 */
int diag_why(const struct diag_route_v *r, int utf8, char *out, size_t outsz);

/*
 * The Why panel's text, line by line (pure, so tested with literals):
 * the route's figures, the first cause (share, phase, backend, evidence,
 * the calls behind it, the query that proves it), the other causes, what
 * differs between failing and succeeding attempts, the changes before the
 * episode and the advice with its command. clock_text formats a wall time
 * as the console shows it.
 */
enum diag_line_kind { DL_TEXT, DL_HEAD, DL_MAIN, DL_DIM, DL_CMD };

struct diag_line {
	enum diag_line_kind kind;
	int indent; /* columns before the text */
	char *text;
};

struct diag_lines {
	struct diag_line *v;
	int n;
	int cap;
};

void diag_lines_build(const struct diag_route_v *r, int64_t from, int64_t to,
		      void (*clock_text)(char *, size_t, int64_t), struct diag_lines *out);
void diag_lines_free(struct diag_lines *l);
