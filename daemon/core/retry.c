/*
 * retry: retry decisions, backoff, Retry-After and the retry budget.
 *
 * Retry-After parsing is hand-written over (pointer, length) so that it
 * never reads past the value, needs no NUL and no locale (strptime would
 * need both); it is a fuzz target. The retry budget keeps one bucket per
 * second, indexed by second mod 10; a bucket whose second is outside the
 * last 10 s counts as empty.
 */
#include "retry.h"

#include <errno.h>
#include <string.h>

#define BACKOFF_CAP_MS 9.0e15 /* beyond any budget; keeps doubles exact in int64 */
#define RATE_EPSILON   1e-9

static const char *const retry_e_names[] = {
	[0] = "ok",
	[RETRY_E_CLASS] = "class",
	[RETRY_E_EXHAUSTED] = "exhausted",
	[RETRY_E_BUDGET] = "budget",
	[RETRY_E_DEADLINE] = "deadline",
};

const char *
retry_e_name(int e)
{
	const char *name = NULL;

	if (e >= 0 && (size_t)e < sizeof retry_e_names / sizeof retry_e_names[0])
		name = retry_e_names[e];
	return name;
}

int64_t
retry_backoff_ms(const struct retry_cfg *rc, int n, struct rng *rng)
{
	double cap = rc->max_ms > 0 ? (double)rc->max_ms : BACKOFF_CAP_MS;
	double d = 0.0, j;
	int i;

	if (rc->backoff == BACKOFF_EXPONENTIAL && rc->base_ms > 0) {
		d = (double)rc->base_ms;
		for (i = 1; i < n && d < cap; i++)
			d *= rc->multiplier > 0 ? rc->multiplier : 1.0;
		if (d > cap)
			d = cap;
		if (rng != NULL && rc->jitter_full)
			d *= rng_double(rng);
		else if (rng != NULL && rc->jitter > 0) {
			j = rc->jitter < 1.0 ? rc->jitter : 1.0;
			d *= 1.0 - j + 2.0 * j * rng_double(rng);
		}
	}
	return (int64_t)(d + 0.5);
}

/* A cursor over a bounded, not NUL-terminated string. */
struct scan {
	const char *p;
	size_t n;
};

static int
scan_is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
scan_is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
scan_peek(const struct scan *s)
{
	return s->n > 0 ? (unsigned char)*s->p : -1;
}

static void
scan_skip(struct scan *s, size_t k)
{
	s->p += k;
	s->n -= k;
}

/* Consume exactly c: 0 or -EINVAL. */
static int
scan_char(struct scan *s, int c)
{
	int error = -EINVAL;

	if (scan_peek(s) == c) {
		scan_skip(s, 1);
		error = 0;
	}
	return error;
}

/* Consume one or more spaces: 0 or -EINVAL. */
static int
scan_spaces(struct scan *s)
{
	int error = scan_char(s, ' ');

	while (error == 0 && scan_peek(s) == ' ')
		scan_skip(s, 1);
	return error;
}

/* Consume between min and max digits into *v: 0 or -EINVAL. */
static int
scan_number(struct scan *s, size_t min, size_t max, int *v)
{
	size_t k = 0;

	*v = 0;
	while (k < max && scan_is_digit(scan_peek(s))) {
		*v = *v * 10 + (scan_peek(s) - '0');
		scan_skip(s, 1);
		k++;
	}
	return k >= min ? 0 : -EINVAL;
}

/* Consume a run of letters matching one of names (case-sensitive): its index or -EINVAL. */
static int
scan_word(struct scan *s, const char *const *names, int nnames)
{
	size_t k = 0;
	int i, found = -EINVAL;

	while (k < s->n && scan_is_alpha((unsigned char)s->p[k]))
		k++;
	for (i = 0; i < nnames && found < 0; i++) {
		if (strlen(names[i]) == k && memcmp(names[i], s->p, k) == 0)
			found = i;
	}
	if (found >= 0)
		scan_skip(s, k);
	return found;
}

static const char *const month_names[12] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};

static const char *const day_names[14] = {
	"Mon",	  "Tue",     "Wed",	  "Thu",      "Fri",	"Sat",	    "Sun",
	"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
};

/* "HH:MM:SS" into seconds of the day: 0 or -EINVAL. */
static int
scan_time(struct scan *s, int64_t *secs)
{
	int h, m, sec, error;

	error = scan_number(s, 2, 2, &h);
	if (error == 0)
		error = scan_char(s, ':');
	if (error == 0)
		error = scan_number(s, 2, 2, &m);
	if (error == 0)
		error = scan_char(s, ':');
	if (error == 0)
		error = scan_number(s, 2, 2, &sec);
	if (error == 0 && (h > 23 || m > 59 || sec > 60))
		error = -EINVAL;
	if (error == 0)
		*secs = (int64_t)h * 3600 + m * 60 + sec;
	return error;
}

static int
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm). */
static int64_t
days_from_civil(int y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/*
 * Parse an HTTP-date into epoch milliseconds:
 *   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
 *   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"
 *   asctime      "Sun Nov  6 08:49:37 1994"
 * Runs of spaces are accepted where one is expected. 0 or -EINVAL.
 */
static int
http_date_parse(struct scan *s, int64_t *epoch_ms)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int64_t tod = 0;
	int day = 0, mon = -1, year = 0, error = 0;

	if (scan_word(s, day_names, 14) < 0)
		error = -EINVAL;
	else if (scan_peek(s) == ',') {
		scan_skip(s, 1);
		error = scan_spaces(s);
		if (error == 0)
			error = scan_number(s, 1, 2, &day);
		if (error == 0 && scan_peek(s) == '-') {
			/* RFC 850 */
			scan_skip(s, 1);
			if ((mon = scan_word(s, month_names, 12)) < 0)
				error = -EINVAL;
			if (error == 0)
				error = scan_char(s, '-');
			if (error == 0)
				error = scan_number(s, 2, 4, &year);
			if (error == 0 && year < 100)
				year += year < 70 ? 2000 : 1900;
		} else if (error == 0) {
			/* IMF-fixdate */
			error = scan_spaces(s);
			if (error == 0 && (mon = scan_word(s, month_names, 12)) < 0)
				error = -EINVAL;
			if (error == 0)
				error = scan_spaces(s);
			if (error == 0)
				error = scan_number(s, 4, 4, &year);
		}
		if (error == 0)
			error = scan_spaces(s);
		if (error == 0)
			error = scan_time(s, &tod);
		if (error == 0)
			error = scan_spaces(s);
		if (error == 0 && scan_word(s, (const char *const[]){"GMT", "UTC"}, 2) < 0)
			error = -EINVAL;
	} else {
		/* asctime */
		error = scan_spaces(s);
		if (error == 0 && (mon = scan_word(s, month_names, 12)) < 0)
			error = -EINVAL;
		if (error == 0)
			error = scan_spaces(s);
		if (error == 0)
			error = scan_number(s, 1, 2, &day);
		if (error == 0)
			error = scan_spaces(s);
		if (error == 0)
			error = scan_time(s, &tod);
		if (error == 0)
			error = scan_spaces(s);
		if (error == 0)
			error = scan_number(s, 4, 4, &year);
	}
	if (error == 0 && s->n != 0)
		error = -EINVAL;
	if (error == 0 && (mon < 0 || day < 1 || day > mdays[mon] + (mon == 1 && is_leap(year))))
		error = -EINVAL;
	if (error == 0)
		*epoch_ms = (days_from_civil(year, mon + 1, day) * 86400 + tod) * 1000;
	return error;
}

int
retry_parse_retry_after(const char *value, size_t len, int64_t now_wall_ms, int64_t *out_ms)
{
	struct scan s = {value, value != NULL ? len : 0};
	int64_t secs = 0, at_ms = 0, wait;
	int digit, error = 0;

	while (s.n > 0 && (s.p[0] == ' ' || s.p[0] == '\t'))
		scan_skip(&s, 1);
	while (s.n > 0 && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t'))
		s.n--;
	if (s.n == 0)
		error = -EINVAL;
	else if (scan_is_digit(scan_peek(&s))) {
		while (error == 0 && s.n > 0) {
			digit = scan_peek(&s) - '0';
			if (digit < 0 || digit > 9 || secs > (INT64_MAX / 1000 - digit) / 10)
				error = -EINVAL;
			else
				secs = secs * 10 + digit;
			scan_skip(&s, 1);
		}
		if (error == 0)
			*out_ms = secs * 1000;
	} else {
		error = http_date_parse(&s, &at_ms);
		if (error == 0) {
			if (__builtin_sub_overflow(at_ms, now_wall_ms, &wait))
				wait = at_ms > now_wall_ms ? INT64_MAX : 0;
			*out_ms = wait > 0 ? wait : 0;
		}
	}
	return error;
}

int
retry_decide(const struct retry_cfg *rc, enum outcome o, int retries_done, int64_t retry_after_ms,
	     int64_t remaining_ms, int min_attempt_ms, struct retry_budget *rb, int64_t now_ms,
	     struct rng *rng, int64_t *delay_ms)
{
	int64_t wait = 0;
	int error = 0;

	if ((unsigned)o >= OUTCOME__COUNT || o == OUTCOME_OK || outcome_is_validation(o) ||
	    (rc->retry_on & OUTCOME_BIT(o)) == 0)
		error = RETRY_E_CLASS;
	else if (retries_done >= rc->max_retries)
		error = RETRY_E_EXHAUSTED;
	if (error == 0) {
		wait = retry_backoff_ms(rc, retries_done + 1, rng);
		if (rc->honor_retry_after && retry_after_ms > wait)
			wait = retry_after_ms;
		if (remaining_ms < 0)
			remaining_ms = 0;
		if (remaining_ms - min_attempt_ms < wait)
			error = RETRY_E_DEADLINE;
	}
	if (error == 0 && rb != NULL) {
		error = retry_budget_try_acquire(rb, rc->budget_ratio, rc->budget_min_per_s,
						 now_ms);
	}
	if (error == 0)
		*delay_ms = wait;
	return error;
}

static int64_t
budget_sec(int64_t ms)
{
	int64_t q = ms / 1000;

	if (ms % 1000 < 0)
		q--;
	return q;
}

/* The bucket of now_ms, emptied first when it holds an older second. */
static struct retry_budget_bucket *
retry_budget_bucket(struct retry_budget *rb, int64_t now_ms)
{
	int64_t sec = budget_sec(now_ms);
	int idx = (int)(sec % RETRY_BUDGET_WINDOW_S);
	struct retry_budget_bucket *k;

	if (idx < 0)
		idx += RETRY_BUDGET_WINDOW_S;
	k = &rb->buckets[idx];
	if (k->sec != sec) {
		k->sec = sec;
		k->calls = 0;
		k->retries = 0;
	}
	return k;
}

void
retry_budget_init(struct retry_budget *rb)
{
	int i;

	for (i = 0; i < RETRY_BUDGET_WINDOW_S; i++) {
		rb->buckets[i].sec = INT64_MIN;
		rb->buckets[i].calls = 0;
		rb->buckets[i].retries = 0;
	}
}

void
retry_budget_record_call(struct retry_budget *rb, int64_t now_ms)
{
	retry_budget_bucket(rb, now_ms)->calls++;
}

void
retry_budget_counts(const struct retry_budget *rb, int64_t now_ms, int64_t *calls, int64_t *retries)
{
	int64_t sec = budget_sec(now_ms), c = 0, r = 0;
	int i;

	for (i = 0; i < RETRY_BUDGET_WINDOW_S; i++) {
		if (rb->buckets[i].sec > sec - RETRY_BUDGET_WINDOW_S && rb->buckets[i].sec <= sec) {
			c += rb->buckets[i].calls;
			r += rb->buckets[i].retries;
		}
	}
	if (calls != NULL)
		*calls = c;
	if (retries != NULL)
		*retries = r;
}

int
retry_budget_try_acquire(struct retry_budget *rb, double ratio, double min_per_s, int64_t now_ms)
{
	int64_t calls, retries;
	double allowed, floor;
	int error = RETRY_E_BUDGET;

	retry_budget_counts(rb, now_ms, &calls, &retries);
	allowed = ratio * (double)calls;
	floor = min_per_s * RETRY_BUDGET_WINDOW_S;
	if (floor > allowed)
		allowed = floor;
	if ((double)(retries + 1) <= allowed + RATE_EPSILON) {
		retry_budget_bucket(rb, now_ms)->retries++;
		error = 0;
	}
	return error;
}
