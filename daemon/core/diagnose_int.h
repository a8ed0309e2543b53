#pragma once
/*
 * diagnose_int: what the files of diagnose share (private to them): one
 * route's rows and causes (diagnose_rows.c, the lowest), the causes'
 * evidence, text and query (diagnose_cause.c), the contrasts, changes and
 * suggestions (diagnose_advice.c); diagnose.c puts the answer together.
 * Any thread.
 */
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "diagnose.h"

struct buf;

#define MAX_CAUSES     32
#define MAX_DETAILS    3
#define TEXT_MAX       512
#define MINUTE_MS      60000LL
#define MAX_MINUTES    (40 * 1440)
#define HEALTHY_SHARE  0.95
#define TOKENS_RATIO   1.5
#define CAUSE_TEXT_MAX 160

struct cause {
	char reason[48];
	const char *backend;
	const char *phase;
	int ncalls;
	int64_t since;
	int prev_ncalls;
};

struct route_ctx {
	const struct diag_input *in;
	const char *route;
	int *calls, ncalls; /* indices into in->cur.calls */
	int *att, natt;	    /* indices into in->cur.attempts */
	int *decide;	    /* per route call: attempt index deciding it, -1 */
	struct cause causes[MAX_CAUSES];
	int ncauses;
	int degraded;
	int64_t episode;
};

struct id_idx {
	int64_t id;
	int idx;
};

/*
 * id -> index. fuseboxd hands out ids in order, so a window's ids are
 * dense: a direct table then, sorted pairs and a binary search otherwise.
 */
struct id_map {
	struct id_idx *pairs;
	int n;
	int64_t base;
	int *direct; /* NULL: search pairs */
	int64_t ndirect;
};

/* Interned strings (api_diagnose.c) are mostly equal by pointer. */
int diag_str_eq(const char *a, const char *b);
const char *diag_str_or(const char *s, const char *def);
int diag_pct(double share);
/*
 * Nearest-rank median of v[0..n-1] (reordered here: a quickselect, linear
 * on the window's 100k values where a sort is not); -1 when n is 0.
 */
int64_t diag_median(int64_t *v, int n);
/* "14:02:11" (UTC) of a wall-clock ms. */
void diag_hhmmss(int64_t ms, char *out, size_t n);
/* Append s to b as an SQL string literal ('' inside). */
void diag_sql_quote(struct buf *b, const char *s);
int diag_is_ok(const struct diag_attempt *a);
int diag_is_failed(const struct diag_attempt *a);
/* The phase of a reason, refined by the attempt's timings when there is one. */
const char *diag_phase_of(const char *reason, const struct diag_attempt *a);
int diag_is_timeout(const char *reason);
const struct diag_target *diag_target_find(const struct diag_input *in, const char *route,
					   const char *backend);
/* The event that left backend's breaker open at time t, or NULL when it was not open. */
const struct diag_event *diag_breaker_open_at(const struct diag_input *in, const char *backend,
					      int64_t t);
void diag_id_map_seal(struct id_map *m);
int diag_id_map_find(const struct id_map *m, int64_t id);
void diag_id_map_free(struct id_map *m);
void diag_route_ctx_init(struct route_ctx *rc, const struct diag_input *in, const char *route);
void diag_route_ctx_free(struct route_ctx *rc);
void diag_causes_collect(struct route_ctx *rc);
void diag_episode_find(struct route_ctx *rc);
cJSON *diag_cause_json(const struct route_ctx *rc, const struct cause *cs);
/*
 * Contrasts of the route's failing and succeeding attempts: the backend
 * over all of them, the rest over the attempts on the top cause's backend
 * (when it has one), so that a backup answering long inputs does not hide
 * that the primary failed on them. *tok_fail / *tok_ok: their token p50.
 */
cJSON *diag_contrasts_json(const struct route_ctx *rc, int64_t *tok_fail, int64_t *tok_ok);
cJSON *diag_changes_json(const struct route_ctx *rc);
cJSON *diag_suggestions_json(const struct route_ctx *rc, int64_t tok_fail, int64_t tok_ok);
