#pragma once
/*
 * budget: one deadline per call (DESIGN.md step 2) and the arithmetic that
 * spends it: per-attempt timeouts clipped to what is left, dynamic timeouts,
 * and token estimates. Pure; runs on any thread.
 */
#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum budget_e {
	BUDGET_E_EXHAUSTED = 1, /* too little budget left to start an attempt */
};

struct budget {
	int64_t start_ms;
	int64_t deadline_ms;
	int64_t budget_ms;
};

struct attempt_timeouts {
	int64_t connect_ms, first_byte_ms, total_ms;
};

/*
 * budget_ms = route_budget_ms, shortened (never lengthened) by caller_ms
 * when caller_ms > 0; the deadline is now_ms + budget_ms.
 */
void budget_init(struct budget *b, int64_t now_ms, int route_budget_ms, int64_t caller_ms);
/* Milliseconds left before the deadline, >= 0. */
int64_t budget_remaining(const struct budget *b, int64_t now_ms);
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
#define BUDGET_CROWD_SLOTS 8192
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
