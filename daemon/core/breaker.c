/*
 * breaker: a per-backend circuit breaker.
 *
 * CLOSED counts attempts in one of three windows (consecutive failures, a
 * ring of the last `window` attempts, or `window_s` one-second buckets) and
 * opens when its mode's threshold is reached. OPEN refuses until
 * half_open_at, then HALF_OPEN hands out at most half_open_probes concurrent
 * probe slots: any probe failure reopens for open_ms x open_multiplier^n
 * (capped, n = failed probe rounds since the last CLOSED), half_open_probes
 * successes close with empty windows. The OPEN -> HALF_OPEN edge is taken
 * lazily by whichever call first looks at the breaker at or after
 * half_open_at. breaker_set_state() is the only writer of b->state.
 */
#include "breaker.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define RING_FAILURE 0x1
#define RING_SLOW    0x2

/* Tolerance for comparing a measured rate with a configured one. */
#define RATE_EPSILON 1e-9

static const char *const breaker_state_names[BREAKER__COUNT] = {
	[BREAKER_CLOSED] = WIRE_BREAKER_CLOSED,
	[BREAKER_OPEN] = WIRE_BREAKER_OPEN,
	[BREAKER_HALF_OPEN] = WIRE_BREAKER_HALF_OPEN,
	[BREAKER_FORCED_OPEN] = WIRE_BREAKER_FORCED_OPEN,
	[BREAKER_FORCED_CLOSED] = WIRE_BREAKER_FORCED_CLOSED,
};

const char *
breaker_state_name(enum breaker_state s)
{
	const char *name = NULL;

	if ((unsigned)s < BREAKER__COUNT)
		name = breaker_state_names[s];
	return name;
}

static const char *
breaker_outcome_name(enum outcome o)
{
	const char *name = outcome_name(o);

	return name != NULL ? name : "unknown";
}

static int64_t
breaker_sec(int64_t ms)
{
	int64_t q = ms / 1000;

	if (ms % 1000 < 0)
		q--;
	return q;
}

static int
breaker_ring_len(const struct breaker_cfg *cfg)
{
	return cfg->window > 0 ? cfg->window : 1;
}

static int
breaker_nbuckets(const struct breaker_cfg *cfg)
{
	return cfg->window_s > 0 ? cfg->window_s : 1;
}

static int
breaker_probe_limit(const struct breaker *b)
{
	return b->cfg.half_open_probes > 0 ? b->cfg.half_open_probes : 1;
}

static int
breaker_min_calls(const struct breaker *b)
{
	return b->cfg.min_calls > 0 ? b->cfg.min_calls : 1;
}

static void
breaker_windows_clear(struct breaker *b)
{
	int i;

	if (b->ring != NULL)
		memset(b->ring, 0, (size_t)b->ring_len);
	b->ring_pos = 0;
	b->ring_n = 0;
	b->ring_failures = 0;
	b->ring_slow = 0;
	for (i = 0; i < b->nbuckets; i++) {
		b->buckets[i].sec = INT64_MIN;
		b->buckets[i].calls = 0;
		b->buckets[i].failures = 0;
		b->buckets[i].slow = 0;
	}
	b->consecutive_failures = 0;
}

/*
 * Allocate the window storage cfg's mode needs into *ring / *buckets (the
 * other stays NULL). 0 or -ENOMEM with nothing allocated.
 */
static int
breaker_windows_alloc(const struct breaker_cfg *cfg, uint8_t **ring, int *ring_len,
		      struct breaker_bucket **buckets, int *nbuckets)
{
	int error = 0;

	*ring = NULL;
	*ring_len = 0;
	*buckets = NULL;
	*nbuckets = 0;
	if (cfg->mode == BREAKER_MODE_COUNT) {
		*ring = calloc((size_t)breaker_ring_len(cfg), 1);
		if (*ring == NULL)
			error = -ENOMEM;
		else
			*ring_len = breaker_ring_len(cfg);
	} else if (cfg->mode == BREAKER_MODE_TIME) {
		*buckets = calloc((size_t)breaker_nbuckets(cfg), sizeof **buckets);
		if (*buckets == NULL)
			error = -ENOMEM;
		else
			*nbuckets = breaker_nbuckets(cfg);
	}
	return error;
}

/* Open time for the n-th reopen: open_ms x open_multiplier^n, capped. */
static int64_t
breaker_open_duration(const struct breaker_cfg *cfg, int n)
{
	double cap = cfg->max_open_ms > 0 ? (double)cfg->max_open_ms : 9.0e15;
	double d = cfg->open_ms > 0 ? (double)cfg->open_ms : 0.0;
	int i;

	for (i = 0; i < n && d < cap; i++)
		d *= cfg->open_multiplier > 0 ? cfg->open_multiplier : 1.0;
	if (d > cap)
		d = cap;
	return (int64_t)d;
}

/*
 * The one setter of b->state. Returns early when nothing changes; otherwise
 * runs the entry actions of the new state and records the transition.
 */
static void __attribute__((format(printf, 4, 5)))
breaker_set_state(struct breaker *b, int64_t now_ms, enum breaker_state to, const char *fmt, ...)
{
	enum breaker_state from = b->state;
	va_list ap;

	if (from != to) {
		switch (to) {
		case BREAKER_CLOSED:
			breaker_windows_clear(b);
			b->reopens = 0;
			b->opened_at_ms = -1;
			b->half_open_at_ms = -1;
			break;
		case BREAKER_OPEN:
			if (from == BREAKER_HALF_OPEN)
				b->reopens++;
			b->opened_at_ms = now_ms;
			b->half_open_at_ms = now_ms + breaker_open_duration(&b->cfg, b->reopens);
			break;
		case BREAKER_HALF_OPEN:
			b->half_open_at_ms = -1;
			break;
		case BREAKER_FORCED_OPEN:
			b->opened_at_ms = now_ms;
			b->half_open_at_ms = -1;
			break;
		case BREAKER_FORCED_CLOSED:
			b->reopens = 0;
			b->opened_at_ms = -1;
			b->half_open_at_ms = -1;
			break;
		case BREAKER__COUNT:
			break;
		}
		b->probe_successes = 0;
		b->state = to;

		b->ntransitions++;
		b->last.at_ms = now_ms;
		b->last.from = from;
		b->last.to = to;
		va_start(ap, fmt);
		vsnprintf(b->last.reason, sizeof b->last.reason, fmt, ap);
		va_end(ap);
	}
}

/* Take the OPEN -> HALF_OPEN edge when it is due. */
static void
breaker_tick(struct breaker *b, int64_t now_ms)
{
	if (b->state == BREAKER_OPEN && now_ms >= b->half_open_at_ms)
		breaker_set_state(b, now_ms, BREAKER_HALF_OPEN, "open time elapsed");
}

int
breaker_init(struct breaker *b, const struct breaker_cfg *cfg)
{
	int error;

	memset(b, 0, sizeof *b);
	b->cfg = *cfg;
	b->state = BREAKER_CLOSED;
	b->opened_at_ms = -1;
	b->half_open_at_ms = -1;
	b->last.from = BREAKER_CLOSED;
	b->last.to = BREAKER_CLOSED;
	error = breaker_windows_alloc(cfg, &b->ring, &b->ring_len, &b->buckets, &b->nbuckets);
	if (error == 0)
		breaker_windows_clear(b);
	return error;
}

void
breaker_free(struct breaker *b)
{
	if (b != NULL) {
		free(b->ring);
		b->ring = NULL;
		b->ring_len = 0;
		free(b->buckets);
		b->buckets = NULL;
		b->nbuckets = 0;
	}
}

int
breaker_reconfigure(struct breaker *b, const struct breaker_cfg *cfg, int64_t now_ms)
{
	struct breaker_bucket *buckets = NULL;
	uint8_t *ring = NULL;
	int ring_len, nbuckets, same, error = 0;

	same = cfg->mode == b->cfg.mode;
	if (same && cfg->mode == BREAKER_MODE_COUNT)
		same = breaker_ring_len(cfg) == breaker_ring_len(&b->cfg);
	if (same && cfg->mode == BREAKER_MODE_TIME)
		same = breaker_nbuckets(cfg) == breaker_nbuckets(&b->cfg);

	if (!same) {
		error = breaker_windows_alloc(cfg, &ring, &ring_len, &buckets, &nbuckets);
		if (error != 0)
			goto out;
		free(b->ring);
		free(b->buckets);
		b->ring = ring;
		b->ring_len = ring_len;
		b->buckets = buckets;
		b->nbuckets = nbuckets;
		breaker_windows_clear(b);
	}
	b->cfg = *cfg;
	breaker_tick(b, now_ms);
out:
	return error;
}

enum breaker_verdict
breaker_classify(const struct breaker_cfg *cfg, enum outcome o)
{
	enum breaker_verdict v = BREAKER_IGNORE;

	switch (o) {
	case OUTCOME_OK:
		v = BREAKER_SUCCESS;
		break;
	case OUTCOME_CONNECT_ERROR:
	case OUTCOME_RESET:
	case OUTCOME_FIRST_BYTE_TIMEOUT:
	case OUTCOME_TOTAL_TIMEOUT:
	case OUTCOME_HTTP_5XX:
	case OUTCOME_INVALID_RESPONSE:
		v = BREAKER_FAILURE;
		break;
	case OUTCOME_HTTP_429:
		v = cfg->count_429 ? BREAKER_FAILURE : BREAKER_IGNORE;
		break;
	case OUTCOME_VALIDATION_FORMAT:
	case OUTCOME_VALIDATION_SCHEMA:
	case OUTCOME_VALIDATION_SEMANTIC:
	case OUTCOME_LOW_CONFIDENCE:
		v = cfg->count_validation_failures ? BREAKER_FAILURE : BREAKER_SUCCESS;
		break;
	case OUTCOME_HTTP_4XX:
	case OUTCOME_HEDGE_CANCELLED:
	case OUTCOME__COUNT:
		v = BREAKER_IGNORE;
		break;
	}
	return v;
}

int
breaker_admits(struct breaker *b, int64_t now_ms)
{
	int error = BREAKER_E_OPEN;

	breaker_tick(b, now_ms);
	switch (b->state) {
	case BREAKER_CLOSED:
	case BREAKER_FORCED_CLOSED:
		error = 0;
		break;
	case BREAKER_HALF_OPEN:
		if (b->probes_inflight < breaker_probe_limit(b))
			error = 0;
		break;
	case BREAKER_OPEN:
	case BREAKER_FORCED_OPEN:
	case BREAKER__COUNT:
		break;
	}
	return error;
}

int
breaker_allow(struct breaker *b, int64_t now_ms, int *is_probe)
{
	int error;

	*is_probe = 0;
	error = breaker_admits(b, now_ms);
	if (error == 0 && b->state == BREAKER_HALF_OPEN) {
		b->probes_inflight++;
		*is_probe = 1;
	}
	return error;
}

/* Sums over the active window as of now_ms (zeros in consecutive mode). */
static void
breaker_window_counts(const struct breaker *b, int64_t now_ms, int *calls, int *failures, int *slow)
{
	int64_t now_sec = breaker_sec(now_ms);
	int i;

	*calls = 0;
	*failures = 0;
	*slow = 0;
	if (b->cfg.mode == BREAKER_MODE_COUNT) {
		*calls = b->ring_n;
		*failures = b->ring_failures;
		*slow = b->ring_slow;
	} else if (b->cfg.mode == BREAKER_MODE_TIME) {
		for (i = 0; i < b->nbuckets; i++) {
			const struct breaker_bucket *k = &b->buckets[i];

			if (k->sec > now_sec - b->nbuckets && k->sec <= now_sec) {
				*calls += k->calls;
				*failures += k->failures;
				*slow += k->slow;
			}
		}
	}
}

static void
breaker_window_add(struct breaker *b, int64_t now_ms, int failure, int slow)
{
	struct breaker_bucket *k;
	int64_t sec;
	int idx;
	uint8_t old;

	if (b->cfg.mode == BREAKER_MODE_COUNT && b->ring_len > 0) {
		if (b->ring_n == b->ring_len) {
			old = b->ring[b->ring_pos];
			b->ring_failures -= (old & RING_FAILURE) != 0;
			b->ring_slow -= (old & RING_SLOW) != 0;
		} else
			b->ring_n++;
		b->ring[b->ring_pos] =
			(uint8_t)((failure ? RING_FAILURE : 0) | (slow ? RING_SLOW : 0));
		b->ring_failures += failure != 0;
		b->ring_slow += slow != 0;
		b->ring_pos = (b->ring_pos + 1) % b->ring_len;
	} else if (b->cfg.mode == BREAKER_MODE_TIME && b->nbuckets > 0) {
		sec = breaker_sec(now_ms);
		idx = (int)(sec % b->nbuckets);
		if (idx < 0)
			idx += b->nbuckets;
		k = &b->buckets[idx];
		if (k->sec != sec) {
			k->sec = sec;
			k->calls = 0;
			k->failures = 0;
			k->slow = 0;
		}
		k->calls++;
		k->failures += failure != 0;
		k->slow += slow != 0;
	}
}

static int
breaker_rate_reached(int k, int n, double rate)
{
	return k > 0 && n > 0 && (double)k / n >= rate - RATE_EPSILON;
}

/* CLOSED: open when the mode's threshold is reached. */
static void
breaker_evaluate(struct breaker *b, int64_t now_ms, enum outcome o)
{
	const struct breaker_cfg *c = &b->cfg;
	int calls, failures, slow, enough, threshold;
	char span[32] = "";

	if (c->mode == BREAKER_MODE_CONSECUTIVE) {
		threshold = c->failure_threshold > 0 ? c->failure_threshold : 1;
		if (b->consecutive_failures >= threshold)
			breaker_set_state(b, now_ms, BREAKER_OPEN, "%d consecutive failures (%s)",
					  b->consecutive_failures, breaker_outcome_name(o));
	} else {
		breaker_window_counts(b, now_ms, &calls, &failures, &slow);
		if (c->mode == BREAKER_MODE_TIME)
			snprintf(span, sizeof span, " in %d s", b->nbuckets);
		enough = calls >= breaker_min_calls(b);
		if (enough && breaker_rate_reached(failures, calls, c->failure_rate))
			breaker_set_state(b, now_ms, BREAKER_OPEN,
					  "failure rate %.2f >= %.2f over %d calls%s",
					  (double)failures / calls, c->failure_rate, calls, span);
		else if (enough && c->slow_call_ms > 0 &&
			 breaker_rate_reached(slow, calls, c->slow_call_rate))
			breaker_set_state(
				b, now_ms, BREAKER_OPEN,
				"slow call rate %.2f >= %.2f over %d calls%s (slow > %d ms)",
				(double)slow / calls, c->slow_call_rate, calls, span,
				c->slow_call_ms);
	}
}

void
breaker_record(struct breaker *b, int64_t now_ms, enum breaker_verdict v, enum outcome o,
	       int64_t duration_ms, int is_probe)
{
	int slow;

	if (is_probe && b->probes_inflight > 0)
		b->probes_inflight--;
	breaker_tick(b, now_ms);
	switch (v == BREAKER_IGNORE ? BREAKER__COUNT : b->state) {
	case BREAKER_CLOSED:
	case BREAKER_FORCED_CLOSED:
		if (v == BREAKER_FAILURE)
			b->consecutive_failures++;
		else
			b->consecutive_failures = 0;
		slow = b->cfg.slow_call_ms > 0 && duration_ms > b->cfg.slow_call_ms;
		breaker_window_add(b, now_ms, v == BREAKER_FAILURE, slow);
		if (b->state == BREAKER_CLOSED)
			breaker_evaluate(b, now_ms, o);
		break;
	case BREAKER_HALF_OPEN:
		if (!is_probe)
			break;
		if (v == BREAKER_FAILURE) {
			breaker_set_state(b, now_ms, BREAKER_OPEN, "probe failed (%s)",
					  breaker_outcome_name(o));
		} else if (++b->probe_successes >= breaker_probe_limit(b)) {
			breaker_set_state(b, now_ms, BREAKER_CLOSED, "%d probe%s succeeded",
					  b->probe_successes, b->probe_successes == 1 ? "" : "s");
		}
		break;
	case BREAKER_OPEN:
	case BREAKER_FORCED_OPEN:
	case BREAKER__COUNT:
		break;
	}
}

void
breaker_cancel(struct breaker *b, int64_t now_ms, int is_probe)
{
	if (is_probe) {
		if (b->probes_inflight > 0)
			b->probes_inflight--;
		breaker_tick(b, now_ms);
		if (b->state == BREAKER_HALF_OPEN)
			breaker_set_state(b, now_ms, BREAKER_OPEN, "probe cancelled");
	}
}

void
breaker_force(struct breaker *b, int64_t now_ms, enum breaker_force f, const char *reason)
{
	const char *sep = reason != NULL && *reason != '\0' ? ": " : "";

	if (reason == NULL)
		reason = "";
	switch (f) {
	case BREAKER_FORCE_OPEN:
		breaker_set_state(b, now_ms, BREAKER_FORCED_OPEN, "forced open by operator%s%s",
				  sep, reason);
		break;
	case BREAKER_FORCE_CLOSED:
		breaker_set_state(b, now_ms, BREAKER_FORCED_CLOSED, "forced closed by operator%s%s",
				  sep, reason);
		break;
	case BREAKER_FORCE_AUTO:
		breaker_windows_clear(b);
		breaker_set_state(b, now_ms, BREAKER_CLOSED, "reset to auto by operator%s%s", sep,
				  reason);
		break;
	}
}

enum breaker_state
breaker_state(struct breaker *b, int64_t now_ms)
{
	breaker_tick(b, now_ms);
	return b->state;
}

void
breaker_get_stats(const struct breaker *b, int64_t now_ms, struct breaker_stats *out)
{
	int calls, failures, slow;

	breaker_window_counts(b, now_ms, &calls, &failures, &slow);
	out->consecutive_failures = b->consecutive_failures;
	out->calls_in_window = calls;
	out->failure_rate = calls > 0 ? (double)failures / calls : 0.0;
	out->slow_call_rate = calls > 0 ? (double)slow / calls : 0.0;
}

int64_t
breaker_opened_at(const struct breaker *b)
{
	int64_t at = -1;

	if (b->state == BREAKER_OPEN || b->state == BREAKER_HALF_OPEN ||
	    b->state == BREAKER_FORCED_OPEN)
		at = b->opened_at_ms;
	return at;
}

int64_t
breaker_half_open_at(const struct breaker *b)
{
	return b->state == BREAKER_OPEN ? b->half_open_at_ms : -1;
}
