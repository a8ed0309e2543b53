#pragma once
/*
 * breaker: one circuit breaker per backend (DESIGN.md "State machines").
 * Pure: time is an argument, no I/O, no globals. Runs on the engine thread;
 * the engine compares ntransitions to emit transition events.
 */
#include <stdint.h>

#include "config.h"
#include "outcome.h"

enum breaker_state {
	BREAKER_CLOSED = 0,
	BREAKER_OPEN,
	BREAKER_HALF_OPEN,
	BREAKER_FORCED_OPEN,
	BREAKER_FORCED_CLOSED,
	BREAKER__COUNT
};

enum breaker_e {
	BREAKER_E_OPEN = 1, /* open, forced open, or half-open with all probe slots taken */
};

enum breaker_verdict { BREAKER_SUCCESS = 0, BREAKER_FAILURE, BREAKER_IGNORE };

enum breaker_force { BREAKER_FORCE_AUTO = 0, BREAKER_FORCE_OPEN, BREAKER_FORCE_CLOSED };

struct breaker_transition {
	int64_t at_ms;
	enum breaker_state from, to;
	char reason[128];
};

struct breaker_stats {
	int consecutive_failures;
	int calls_in_window; /* count and time modes; 0 in consecutive mode */
	double failure_rate;
	double slow_call_rate;
};

/* One second of the time-mode window. */
struct breaker_bucket {
	int64_t sec;
	int calls;
	int failures;
	int slow;
};

/*
 * Invariants: only breaker_set_state() (breaker.c) writes state. ring is
 * allocated (window entries) in count mode only, buckets (window_s entries)
 * in time mode only. probes_inflight counts probe permissions handed out
 * and not yet recorded or cancelled, whatever the state.
 */
struct breaker {
	struct breaker_cfg cfg;
	enum breaker_state state;
	int consecutive_failures;

	uint8_t *ring; /* count mode: per attempt, bit 0 failure, bit 1 slow */
	int ring_len;
	int ring_pos; /* next slot to write */
	int ring_n;   /* recorded entries, <= ring_len */
	int ring_failures;
	int ring_slow;

	struct breaker_bucket *buckets; /* time mode, indexed by sec mod nbuckets */
	int nbuckets;

	int64_t opened_at_ms;	 /* -1 when closed */
	int64_t half_open_at_ms; /* OPEN: when the next probe is admitted; else -1 */
	int reopens;		 /* n: failed probe rounds since the last CLOSED */
	int probes_inflight;
	int probe_successes;

	uint64_t ntransitions;		/* bumped by every transition */
	struct breaker_transition last; /* the last transition */
};

/* "closed", "open", "half_open", "forced_open", "forced_closed"; NULL if out of range. */
const char *breaker_state_name(enum breaker_state s);

/* Initialise b CLOSED with a copy of cfg: 0 or -ENOMEM. */
int breaker_init(struct breaker *b, const struct breaker_cfg *cfg);
/* Release the windows; b may be NULL. */
void breaker_free(struct breaker *b);
/*
 * Re-apply a new config after reload, keeping the state (and the windows
 * when the mode and window sizes are unchanged, else resetting them).
 * 0, or -ENOMEM with b unchanged.
 */
int breaker_reconfigure(struct breaker *b, const struct breaker_cfg *cfg, int64_t now_ms);

/*
 * What an outcome means to the breaker: ok is a success; transport errors,
 * timeouts, 5xx and invalid responses are failures; 429 fails iff
 * count_429; validation classes fail iff count_validation_failures (else the
 * transport worked: success); other 4xx are ignored (the caller's fault).
 */
enum breaker_verdict breaker_classify(const struct breaker_cfg *cfg, enum outcome o);

/*
 * Would an attempt be admitted now? 0 or BREAKER_E_OPEN. No side effect but
 * the OPEN -> HALF_OPEN transition once half_open_at has come.
 */
int breaker_admits(struct breaker *b, int64_t now_ms);
/*
 * Take permission for one attempt: 0 (*is_probe = 1 when a half-open probe
 * slot was taken, else 0) or BREAKER_E_OPEN. Every permission must be
 * followed by exactly one breaker_record() or breaker_cancel().
 */
int breaker_allow(struct breaker *b, int64_t now_ms, int *is_probe);
/*
 * Record one attempt's result (duration_ms for slow calls: slow means
 * strictly above slow_call_ms when slow_call_ms > 0). CLOSED opens per mode;
 * in HALF_OPEN a probe failure reopens (open_ms x open_multiplier^n, capped
 * at max_open_ms) and half_open_probes successes close. IGNORE only releases
 * a probe slot. Results arriving while OPEN, FORCED_OPEN, or non-probe
 * results arriving while HALF_OPEN (attempts begun before the breaker
 * opened) change nothing. FORCED_CLOSED keeps counting but never opens.
 */
void breaker_record(struct breaker *b, int64_t now_ms, enum breaker_verdict v, enum outcome o,
		    int64_t duration_ms, int is_probe);
/*
 * A permitted attempt that produced no result: releases the probe slot; a
 * cancelled probe counts as a failure so a half-open breaker never sticks.
 */
void breaker_cancel(struct breaker *b, int64_t now_ms, int is_probe);
/*
 * Operator override. OPEN / CLOSED pin the state; AUTO returns to CLOSED
 * with empty windows. reason (may be NULL) goes into the transition.
 */
void breaker_force(struct breaker *b, int64_t now_ms, enum breaker_force f, const char *reason);
/* The state now (applies a due OPEN -> HALF_OPEN first). */
enum breaker_state breaker_state(struct breaker *b, int64_t now_ms);
/* Window statistics as of now_ms (time mode drops expired buckets). */
void breaker_get_stats(const struct breaker *b, int64_t now_ms, struct breaker_stats *out);
/* When the current open episode began (OPEN, HALF_OPEN, FORCED_OPEN); -1 otherwise. */
int64_t breaker_opened_at(const struct breaker *b);
/* When an OPEN breaker admits a probe; -1 in any other state. */
int64_t breaker_half_open_at(const struct breaker *b);
