#pragma once
/*
 * ratelimit: a backend's rate limits, read before they bite
 * (backends[].rate_limits). Two sources: the provider's headers
 * (x-ratelimit-remaining-* / x-ratelimit-reset-* in OpenAI's duration
 * format, retry-after, retry-after-ms) and the configured rpm / tpm,
 * counted here over a sliding 60 s window. ratelimit_admits() says whether
 * a request would still fit. Pure (time is an argument), no allocation;
 * runs on the engine thread.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ratelimit_e {
	RATELIMIT_E_SYNTAX = 1, /* not a duration */
	RATELIMIT_E_REQUESTS,	/* no request left before the reset */
	RATELIMIT_E_TOKENS,	/* not enough tokens left before the reset */
	RATELIMIT_E_BLOCKED,	/* retry-after has not passed */
};

#define RATELIMIT_WINDOW_S 60 /* config rpm / tpm: a sliding window of 1 s buckets */
/* A remaining value without a reset header holds this long. */
#define RATELIMIT_DEFAULT_RESET_MS 60000
#define RATELIMIT_MAX_RESET_MS	   86400000 /* longer resets are cut to a day */
#define RATELIMIT_MAX_BLOCK_MS	   3600000  /* longer retry-afters are cut to an hour */

struct ratelimit_cfg {
	int rpm; /* 0: not configured */
	int tpm; /* 0: not configured */
	bool honor_headers;
};

struct ratelimit_bucket {
	int64_t sec; /* now_ms / 1000 of the bucket; INT64_MIN: unused */
	int64_t requests;
	int64_t tokens;
};

struct ratelimit {
	struct ratelimit_cfg cfg;
	int64_t requests_left;	   /* from headers, less the sends since; -1 unknown */
	int64_t requests_reset_ms; /* when requests_left expires */
	int64_t tokens_left;	   /* -1 unknown */
	int64_t tokens_reset_ms;
	int64_t blocked_until_ms;			 /* retry-after; 0: none */
	struct ratelimit_bucket win[RATELIMIT_WINDOW_S]; /* by second mod RATELIMIT_WINDOW_S */
};

/* Nothing known yet (cfg borrowed: copied). */
void ratelimit_init(struct ratelimit *r, const struct ratelimit_cfg *cfg);
/*
 * s in OpenAI's (Go's) duration format into *ms: components
 * <number><unit>, units h, m, s, ms, us (or µs), ns in that order, each at
 * most once, numbers with an optional fraction ("6m0s", "20ms", "0.5s",
 * "1h2m3.5s"); or a plain number of seconds ("2", "1.5"). Rounded up to a
 * whole ms. 0, or RATELIMIT_E_SYNTAX (empty, signs, spaces, unknown
 * units, out of order, over a year) with *ms untouched.
 */
int ratelimit_parse_duration(const char *s, int64_t *ms);
/*
 * One response header (name case-insensitive, value with or without
 * surrounding blanks): x-ratelimit-remaining-requests / -tokens (a count),
 * x-ratelimit-reset-requests / -tokens (a duration from now),
 * retry-after (whole seconds; an HTTP-date is ignored), retry-after-ms.
 * A malformed value is ignored; everything is ignored when
 * !cfg.honor_headers. Returns 1 when the name is one of these, else 0.
 */
int ratelimit_header(struct ratelimit *r, int64_t now_ms, const char *name, size_t name_len,
		     const char *value, size_t value_len);
/* A request with est_tokens estimated tokens was sent: spend them. */
void ratelimit_sent(struct ratelimit *r, int64_t now_ms, int est_tokens);
/*
 * Would a request of est_tokens be refused? 0: no. Else
 * RATELIMIT_E_BLOCKED, _REQUESTS or _TOKENS (in that order of precedence)
 * and, when until_ms is not NULL, *until_ms = when every limit it hits has
 * freed (a reset, the end of retry-after, a bucket leaving the window).
 */
int ratelimit_admits(const struct ratelimit *r, int64_t now_ms, int est_tokens, int64_t *until_ms);
/* Requests / tokens known to be left (the tighter of headers and config), -1 unknown. */
int64_t ratelimit_remaining_requests(const struct ratelimit *r, int64_t now_ms);
int64_t ratelimit_remaining_tokens(const struct ratelimit *r, int64_t now_ms);
/* retry-after's end when it lies after now_ms, else 0. */
int64_t ratelimit_blocked_until(const struct ratelimit *r, int64_t now_ms);
