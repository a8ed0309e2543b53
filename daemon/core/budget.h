#pragma once
/*
 * budget: one deadline per call (DESIGN.md step 2) and the arithmetic that
 * spends it: the caller's budget parsed, per-attempt timeouts clipped to
 * what is left less the answer reserve, dynamic timeouts, and token
 * estimates. Pure; runs on any thread.
 */
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"

enum budget_e {
	BUDGET_E_EXHAUSTED = 1, /* too little budget left to start an attempt */
	BUDGET_E_INVALID,	/* a caller's budget that is not 1..BUDGET_MAX_MS whole ms */
};

/* The longest budget a caller may ask for: one day. */
#define BUDGET_MAX_MS 86400000

/*
 * Time kept back from the last attempt to answer from the rungs below
 * (DESIGN.md allows up to 50 ms): the rules, the cache and rendering and
 * writing the answer fit in it. When many calls reach their deadline
 * together (a burst against a hanging upstream), the crowd (below) adds
 * the time the engine needs to answer the calls due before this one, up
 * to BUDGET_MAX_RESERVE_MS in all: their cuts spread out ahead of the
 * deadline instead of piling up on it.
 */
#define BUDGET_ANSWER_RESERVE_MS 10
#define BUDGET_MAX_RESERVE_MS	 50
/*
 * A cut-and-answer is measured from the timer to the answer rendered; its
 * write happens in the loop's next HTTP pass, on the same thread, and costs
 * about as much again: the crowd counts twice the measured time.
 */
#define BUDGET_CROWD_COST_FACTOR 2

struct budget {
	int64_t start_ms;
	int64_t deadline_ms;
	int64_t budget_ms;
};

struct attempt_timeouts {
	int64_t connect_ms, first_byte_ms, total_ms;
	int at_cut; /* budget_attempt_plan(): total_ms runs to the cut before the deadline */
};

/* An attempt's own limits (the backend's; a value <= 0: none of its own). */
struct attempt_limits {
	int connect_ms;
	int first_byte_ms;
	int64_t total_ms; /* the static total, or the dynamic timeout */
};

/*
 * budget_ms = route_budget_ms, shortened (never lengthened) by caller_ms
 * when caller_ms > 0; the deadline is now_ms + budget_ms.
 */
void budget_init(struct budget *b, int64_t now_ms, int route_budget_ms, int64_t caller_ms);
/* Milliseconds left before the deadline, >= 0. */
int64_t budget_remaining(const struct budget *b, int64_t now_ms);
/*
 * What attempts may still spend at now_ms: the time left less
 * BUDGET_ANSWER_RESERVE_MS (negative once the reserve is being spent).
 */
int64_t budget_attempt_room(const struct budget *b, int64_t now_ms);
/*
 * The caller's budget (API.md): the body's budget_ms (body_value, borrowed;
 * NULL or JSON null: absent) wins over the X-Fusebox-Budget-Ms header value
 * hdr (NULL: absent); either must be a whole number of milliseconds in
 * 1..BUDGET_MAX_MS. 0 with *out set (0 when neither is given), or
 * BUDGET_E_INVALID with *out untouched and *cause (when cause is not NULL)
 * the message naming the field (new string).
 */
int budget_caller_parse(const char *hdr, const cJSON *body_value, int64_t *out, char **cause);
/*
 * Per-attempt timeouts: each clipped to remaining - reserve_ms (a configured
 * value <= 0 means "no own limit": the clip alone); first_byte and connect
 * never above total. 0 with *out set, or BUDGET_E_EXHAUSTED (out untouched)
 * when remaining - reserve_ms < min_attempt_ms (or < 1 ms: a zero timeout
 * would mean "none" to libcurl).
 */
int budget_attempt_timeouts(const struct budget *b, int64_t now_ms, int connect_ms,
			    int first_byte_ms, int total_ms, int reserve_ms, int min_attempt_ms,
			    struct attempt_timeouts *out);
/*
 * Token estimate of len bytes of UTF-8: ASCII ~ 4 characters per token
 * (rounded up), a CJK character (U+3000-9FFF, U+AC00-D7AF, U+F900-FAFF,
 * U+FF00-FFEF) 1 token, other code points (and invalid bytes) 1 per 2.
 */
int64_t budget_estimate_tokens(const char *s, size_t len);
/*
 * Dynamic per-attempt total timeout (CONFIG.md "Dynamic timeouts"):
 * default_ms when p_ms < 0 (too few samples), else clamp(p_ms x (1 +
 * per_100_tokens x input_tokens / 100) + margin_ms, min_ms, max_ms).
 */
int64_t budget_dynamic_timeout(const struct timeout_cfg *tc, int64_t p_ms, int64_t input_tokens);

/*
 * Crowded deadlines. When many calls reach their deadline together (a
 * burst that arrived at once against a hanging upstream), their attempts
 * are cut together and the engine answers them one after another: the
 * last would answer late. A crowd counts the calls whose attempt runs to
 * the cut, per deadline millisecond; a new call's answer reserve grows by
 * (calls already due within BUDGET_CROWD_WINDOW_MS before its deadline) x
 * (measured cost of one cut-and-answer), so the cuts of a crowd spread
 * out ahead of the deadline instead of piling up on it. Counts older than
 * BUDGET_CROWD_SLOTS ms are forgotten (a slot holds its deadline).
 */
#define BUDGET_CROWD_SLOTS     8192
#define BUDGET_CROWD_WINDOW_MS 10

struct budget_crowd {
	int64_t ms[BUDGET_CROWD_SLOTS]; /* the deadline millisecond a slot counts */
	uint32_t n[BUDGET_CROWD_SLOTS];
	int64_t cost_ns; /* moving average of one cut-and-answer */
};

void budget_crowd_init(struct budget_crowd *c, int64_t cost_ns);
/* Extra reserve in ms (0..max_extra_ms) for a call with this deadline. */
int budget_crowd_extra_ms(const struct budget_crowd *c, int64_t deadline_ms, int max_extra_ms);
void budget_crowd_add(struct budget_crowd *c, int64_t deadline_ms);
/* Undo one budget_crowd_add() (the attempt ended before its cut). */
void budget_crowd_remove(struct budget_crowd *c, int64_t deadline_ms);
/* Fold one measured cut-and-answer (ns) into the average (1/8 weight). */
void budget_crowd_cost(struct budget_crowd *c, int64_t ns);

/*
 * One attempt's timeouts at now_ms, all read from that one instant: the
 * limits clipped to the time left less the answer reserve, which grows
 * by crowd's extra (when crowd is not NULL) up to BUDGET_MAX_RESERVE_MS
 * unless that would leave nothing, when the plain reserve applies (a
 * crowd never takes the attempt itself away). out->at_cut says the
 * attempt runs to the cut before the deadline (one of the crowd). 0, or
 * BUDGET_E_EXHAUSTED with out's timeouts 0 when not even 1 ms is left.
 */
int budget_attempt_plan(const struct budget *b, int64_t now_ms, const struct budget_crowd *crowd,
			const struct attempt_limits *lim, struct attempt_timeouts *out);
