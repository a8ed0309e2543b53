/*
 * ratelimit: a backend's rate limits (ratelimit.h).
 *
 * Design: a remaining count from the headers is known until its reset
 * (x-ratelimit-reset-*, from the same or a later answer; without one it
 * holds RATELIMIT_DEFAULT_RESET_MS), then unknown again: after a reset the
 * provider has refilled it, and the next answer says by how much. Every
 * send spends one request and its estimated tokens from the known counts,
 * so requests sent before the next answer are accounted for; a later
 * answer's count replaces ours (the provider's is the truth, even when an
 * answer overtakes another). Configured rpm / tpm are counted in 1 s
 * buckets over the last RATELIMIT_WINDOW_S seconds (a bucket leaves the
 * window 60 s after its second began). Both sources apply: the tighter
 * wins. A request larger than the whole tpm is admitted into an empty
 * window (else it could never go); against header counts it waits for the
 * reset (the provider would refuse it).
 *
 * Invariants: requests_left / tokens_left are -1 or >= 0. Pure; runs on
 * the engine thread.
 */
#include "ratelimit.h"

#include <string.h>
#include <strings.h>

#define NS_PER_MS 1000000LL
#define MAX_NS	  (366LL * 86400 * 1000 * NS_PER_MS) /* 366 days: longer is not a duration */
#define MAX_FRAC  9
#define VALUE_MAX 64

static const int64_t tens[MAX_FRAC + 1] = {
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
};

/* Units in the order they must come, longest spelling first where one is a prefix. */
static const struct {
	const char *name;
	int64_t ns;
	int rank; /* order: each component's rank is above the one before */
} units[] = {
	{"h", 3600LL * 1000 * NS_PER_MS, 0},
	{"ms", NS_PER_MS, 3},
	{"m", 60LL * 1000 * NS_PER_MS, 1},
	{"s", 1000 * NS_PER_MS, 2},
	{"us", 1000, 4},
	{"\xc2\xb5s", 1000, 4}, /* µs */
	{"ns", 1, 5},
};

static int64_t
floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/*
 * A number "12", "0.5", ".5", "3." at *p times unit_ns, rounded up, into
 * *ns; *p advanced. 0, or -1 (no digits, too large).
 */
static int
number_scan(const char **p, int64_t unit_ns, int64_t *ns)
{
	const char *s = *p;
	int64_t ip = 0, frac = 0, v;
	int digits = 0, fd = 0;

	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		ip = ip * 10 + (*s - '0');
		if (ip > MAX_NS)
			return -1;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++, digits++) {
			if (fd < MAX_FRAC) {
				frac = frac * 10 + (*s - '0');
				fd++;
			}
		}
	}
	if (digits == 0 || ip > MAX_NS / unit_ns)
		return -1;
	v = ip * unit_ns;
	/* frac / 10^fd x unit_ns, exactly: frac < 10^fd keeps each product in range. */
	v += frac * (unit_ns / tens[fd]) + (frac * (unit_ns % tens[fd]) + tens[fd] - 1) / tens[fd];
	if (v > MAX_NS)
		return -1;
	*ns = v;
	*p = s;
	return 0;
}

int
ratelimit_parse_duration(const char *s, int64_t *ms)
{
	const char *p = s, *u;
	int64_t total = 0, part;
	size_t i;
	int rank = -1, found;

	if (s == NULL || *s == '\0')
		return RATELIMIT_E_SYNTAX;
	while (*p != '\0') {
		for (u = p; (*u >= '0' && *u <= '9') || *u == '.'; u++)
			;
		found = -1;
		for (i = 0; *u != '\0' && i < sizeof units / sizeof units[0]; i++) {
			if (strncmp(u, units[i].name, strlen(units[i].name)) == 0) {
				found = (int)i;
				break;
			}
		}
		if (*u == '\0' && rank < 0) {
			/* A plain number: seconds. */
			if (number_scan(&p, 1000 * NS_PER_MS, &total) != 0 || p != u)
				return RATELIMIT_E_SYNTAX;
			break;
		}
		if (found < 0 || units[found].rank <= rank)
			return RATELIMIT_E_SYNTAX;
		rank = units[found].rank;
		if (number_scan(&p, units[found].ns, &part) != 0 || p != u || part > MAX_NS - total)
			return RATELIMIT_E_SYNTAX;
		total += part;
		p = u + strlen(units[found].name);
	}
	*ms = (total + NS_PER_MS - 1) / NS_PER_MS;
	return 0;
}

void
ratelimit_init(struct ratelimit *r, const struct ratelimit_cfg *cfg)
{
	int i;

	memset(r, 0, sizeof *r);
	r->cfg = *cfg;
	if (r->cfg.rpm < 0)
		r->cfg.rpm = 0;
	if (r->cfg.tpm < 0)
		r->cfg.tpm = 0;
	r->requests_left = -1;
	r->tokens_left = -1;
	for (i = 0; i < RATELIMIT_WINDOW_S; i++)
		r->win[i].sec = INT64_MIN;
}

/* A count: digits only. 0 with *v, or -1. */
static int
count_parse(const char *s, int64_t *v)
{
	int64_t n = 0;
	int digits = 0;

	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		n = n * 10 + (*s - '0');
		if (n > INT64_MAX / 20)
			return -1;
	}
	if (digits == 0 || *s != '\0')
		return -1;
	*v = n;
	return 0;
}

/* A plain number times unit_ns into whole ms (rounded up). 0, or -1. */
static int
plain_parse(const char *s, int64_t unit_ns, int64_t *ms)
{
	int64_t ns;

	if (number_scan(&s, unit_ns, &ns) != 0 || *s != '\0')
		return -1;
	*ms = (ns + NS_PER_MS - 1) / NS_PER_MS;
	return 0;
}

static void
remaining_set(int64_t *left, int64_t *reset_ms, int64_t now_ms, int64_t v)
{
	*left = v;
	if (*reset_ms <= now_ms)
		*reset_ms = now_ms + RATELIMIT_DEFAULT_RESET_MS;
}

static void
reset_set(int64_t *reset_ms, int64_t now_ms, int64_t d)
{
	*reset_ms = now_ms + (d < RATELIMIT_MAX_RESET_MS ? d : RATELIMIT_MAX_RESET_MS);
}

static void
block_set(struct ratelimit *r, int64_t now_ms, int64_t d)
{
	int64_t until = now_ms + (d < RATELIMIT_MAX_BLOCK_MS ? d : RATELIMIT_MAX_BLOCK_MS);

	if (until > r->blocked_until_ms)
		r->blocked_until_ms = until;
}

static bool
name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

int
ratelimit_header(struct ratelimit *r, int64_t now_ms, const char *name, size_t name_len,
		 const char *value, size_t value_len)
{
	enum { REM_REQ, REM_TOK, RESET_REQ, RESET_TOK, RETRY_AFTER, RETRY_AFTER_MS };
	static const char *const names[] = {
		[REM_REQ] = "x-ratelimit-remaining-requests",
		[REM_TOK] = "x-ratelimit-remaining-tokens",
		[RESET_REQ] = "x-ratelimit-reset-requests",
		[RESET_TOK] = "x-ratelimit-reset-tokens",
		[RETRY_AFTER] = "retry-after",
		[RETRY_AFTER_MS] = "retry-after-ms",
	};
	char v[VALUE_MAX];
	int64_t n;
	int which = -1, i;

	for (i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
		if (name_is(name, name_len, names[i]))
			which = i;
	}
	if (which < 0)
		return 0;
	if (!r->cfg.honor_headers || value == NULL)
		return 1;
	while (value_len > 0 && (*value == ' ' || *value == '\t')) {
		value++;
		value_len--;
	}
	while (value_len > 0 && (value[value_len - 1] == ' ' || value[value_len - 1] == '\t'))
		value_len--;
	if (value_len == 0 || value_len >= sizeof v || memchr(value, '\0', value_len) != NULL)
		return 1;
	memcpy(v, value, value_len);
	v[value_len] = '\0';
	switch (which) {
	case REM_REQ:
		if (count_parse(v, &n) == 0)
			remaining_set(&r->requests_left, &r->requests_reset_ms, now_ms, n);
		break;
	case REM_TOK:
		if (count_parse(v, &n) == 0)
			remaining_set(&r->tokens_left, &r->tokens_reset_ms, now_ms, n);
		break;
	case RESET_REQ:
		if (ratelimit_parse_duration(v, &n) == 0)
			reset_set(&r->requests_reset_ms, now_ms, n);
		break;
	case RESET_TOK:
		if (ratelimit_parse_duration(v, &n) == 0)
			reset_set(&r->tokens_reset_ms, now_ms, n);
		break;
	case RETRY_AFTER:
		if (plain_parse(v, 1000 * NS_PER_MS, &n) == 0)
			block_set(r, now_ms, n);
		break;
	case RETRY_AFTER_MS:
		if (plain_parse(v, NS_PER_MS, &n) == 0)
			block_set(r, now_ms, n);
		break;
	}
	return 1;
}

/* A header count still valid at now_ms, or -1. */
static int64_t
known(int64_t left, int64_t reset_ms, int64_t now_ms)
{
	return left >= 0 && now_ms < reset_ms ? left : -1;
}

/* The slot of second sec in the ring. */
static int
slot(int64_t sec)
{
	return (int)(sec - floor_div(sec, RATELIMIT_WINDOW_S) * RATELIMIT_WINDOW_S);
}

static struct ratelimit_bucket *
bucket_at(struct ratelimit *r, int64_t sec)
{
	struct ratelimit_bucket *b = &r->win[slot(sec)];

	if (b->sec != sec) {
		b->sec = sec;
		b->requests = 0;
		b->tokens = 0;
	}
	return b;
}

void
ratelimit_sent(struct ratelimit *r, int64_t now_ms, int est_tokens)
{
	struct ratelimit_bucket *b;
	int64_t est = est_tokens > 0 ? est_tokens : 0;

	if (known(r->requests_left, r->requests_reset_ms, now_ms) > 0)
		r->requests_left--;
	if (known(r->tokens_left, r->tokens_reset_ms, now_ms) >= 0)
		r->tokens_left = r->tokens_left > est ? r->tokens_left - est : 0;
	b = bucket_at(r, floor_div(now_ms, 1000));
	b->requests++;
	b->tokens += est;
}

/*
 * The window's buckets at now_ms, oldest first, into secs / reqs / toks
 * (RATELIMIT_WINDOW_S each); returns how many; *req_sum / *tok_sum their totals.
 */
static int
window_list(const struct ratelimit *r, int64_t now_ms, int64_t *secs, int64_t *reqs, int64_t *toks,
	    int64_t *req_sum, int64_t *tok_sum)
{
	int64_t now_s = floor_div(now_ms, 1000), s;
	const struct ratelimit_bucket *b;
	int n = 0;

	*req_sum = 0;
	*tok_sum = 0;
	for (s = now_s - RATELIMIT_WINDOW_S + 1; s <= now_s; s++) {
		b = &r->win[slot(s)];
		if (b->sec != s || (b->requests == 0 && b->tokens == 0))
			continue;
		secs[n] = s;
		reqs[n] = b->requests;
		toks[n] = b->tokens;
		*req_sum += b->requests;
		*tok_sum += b->tokens;
		n++;
	}
	return n;
}

int
ratelimit_admits(const struct ratelimit *r, int64_t now_ms, int est_tokens, int64_t *until_ms)
{
	int64_t secs[RATELIMIT_WINDOW_S], reqs[RATELIMIT_WINDOW_S], toks[RATELIMIT_WINDOW_S];
	int64_t est = est_tokens > 0 ? est_tokens : 0, until = 0, req_sum, tok_sum, left, t;
	int rc = 0, n, i;

	if (r->blocked_until_ms > now_ms) {
		rc = RATELIMIT_E_BLOCKED;
		until = r->blocked_until_ms;
	}
	left = known(r->requests_left, r->requests_reset_ms, now_ms);
	if (left == 0) {
		rc = rc != 0 ? rc : RATELIMIT_E_REQUESTS;
		until = r->requests_reset_ms > until ? r->requests_reset_ms : until;
	}
	n = window_list(r, now_ms, secs, reqs, toks, &req_sum, &tok_sum);
	if (r->cfg.rpm > 0 && req_sum >= r->cfg.rpm) {
		rc = rc != 0 ? rc : RATELIMIT_E_REQUESTS;
		for (i = 0, t = req_sum; i < n; i++) {
			t -= reqs[i];
			if (t < r->cfg.rpm)
				break;
		}
		t = (secs[i < n ? i : n - 1] + RATELIMIT_WINDOW_S) * 1000;
		until = t > until ? t : until;
	}
	left = known(r->tokens_left, r->tokens_reset_ms, now_ms);
	if (left >= 0 && (left == 0 || left < est)) {
		rc = rc != 0 ? rc : RATELIMIT_E_TOKENS;
		until = r->tokens_reset_ms > until ? r->tokens_reset_ms : until;
	}
	if (r->cfg.tpm > 0 && tok_sum > 0 && tok_sum + est > r->cfg.tpm) {
		rc = rc != 0 ? rc : RATELIMIT_E_TOKENS;
		for (i = 0, t = tok_sum; i < n; i++) {
			t -= toks[i];
			if (t == 0 || t + est <= r->cfg.tpm)
				break;
		}
		t = (secs[i < n ? i : n - 1] + RATELIMIT_WINDOW_S) * 1000;
		until = t > until ? t : until;
	}
	if (rc != 0 && until_ms != NULL)
		*until_ms = until;
	return rc;
}

/* What a known remaining count and a per-minute config limit leave (the tighter); -1 unknown. */
static int64_t
remaining(const struct ratelimit *r, int64_t now_ms, int64_t known_left, int per_min, int tokens)
{
	int64_t secs[RATELIMIT_WINDOW_S], reqs[RATELIMIT_WINDOW_S], toks[RATELIMIT_WINDOW_S];
	int64_t left = known_left, req_sum, tok_sum, used, c;

	if (per_min > 0) {
		window_list(r, now_ms, secs, reqs, toks, &req_sum, &tok_sum);
		used = tokens ? tok_sum : req_sum;
		c = used < per_min ? per_min - used : 0;
		if (left < 0 || c < left)
			left = c;
	}
	return left;
}

int64_t
ratelimit_remaining_requests(const struct ratelimit *r, int64_t now_ms)
{
	return remaining(r, now_ms, known(r->requests_left, r->requests_reset_ms, now_ms),
			 r->cfg.rpm, 0);
}

int64_t
ratelimit_remaining_tokens(const struct ratelimit *r, int64_t now_ms)
{
	return remaining(r, now_ms, known(r->tokens_left, r->tokens_reset_ms, now_ms), r->cfg.tpm,
			 1);
}

int64_t
ratelimit_blocked_until(const struct ratelimit *r, int64_t now_ms)
{
	return r->blocked_until_ms > now_ms ? r->blocked_until_ms : 0;
}
