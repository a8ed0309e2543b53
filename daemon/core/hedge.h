#pragma once
/*
 * hedge: when a hedged attempt starts (routes[].retry.hedge). A window of
 * the backend's recent successful first-byte times gives the delay: a fixed
 * after_ms, or a quantile ("p95") of the last HEDGE_WINDOW_MS clamped to
 * [min_ms, max_ms]. Pure (time is an argument), no allocation; runs on the
 * engine thread.
 */
#include <stdbool.h>
#include <stdint.h>

#define HEDGE_RING	  256	/* first-byte times kept */
#define HEDGE_WINDOW_MS	  60000 /* only these last ms count */
#define HEDGE_MIN_SAMPLES 20	/* fewer: the quantile is not trusted, max_ms */
#define HEDGE_MAX_HEDGES  3

/* Where a hedge goes: the same backend, or preferably another of the step. */
enum hedge_targets { HEDGE_SAME = 0, HEDGE_OTHER };

struct hedge_cfg {
	bool enabled;	       /* the route has retry.hedge */
	int after_ms;	       /* fixed delay, or 0: after_quantile */
	double after_quantile; /* 0.5..0.999 ("p95" = 0.95), used when after_ms is 0 */
	int min_ms;	       /* quantile clamp */
	int max_ms;
	int max_hedges; /* 1..HEDGE_MAX_HEDGES extra attempts at most */
	enum hedge_targets targets;
};

struct hedge_sample {
	int64_t at_ms;	       /* when the first byte came */
	int64_t first_byte_ms; /* how long it took */
};

struct hedge_window {
	struct hedge_sample ring[HEDGE_RING]; /* the last successful attempts */
	int pos;			      /* next slot to write */
	int n;
};

void hedge_window_init(struct hedge_window *w);
/* A successful attempt's first byte came at now_ms, first_byte_ms after it started. */
void hedge_window_add(struct hedge_window *w, int64_t now_ms, int64_t first_byte_ms);
/*
 * The quantile q (0..1, nearest rank) of the first-byte times added in the
 * last HEDGE_WINDOW_MS before now_ms, or -1 with fewer than min_samples.
 */
int64_t hedge_window_quantile(const struct hedge_window *w, int64_t now_ms, double q,
			      int min_samples);
/*
 * The delay after an attempt's start at which a hedge starts when no first
 * byte has come: -1 when h is off (NULL or !enabled); after_ms when set;
 * else the after_quantile of the window clamped to [min_ms, max_ms], or
 * max_ms while the window holds fewer than HEDGE_MIN_SAMPLES.
 */
int64_t hedge_delay_ms(const struct hedge_cfg *h, const struct hedge_window *w, int64_t now_ms);
/* "same" / "other". */
const char *hedge_targets_name(enum hedge_targets t);
