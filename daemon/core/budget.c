/*
 * budget: deadline arithmetic. All values are milliseconds on the monotonic
 * clock the caller passes in; nothing here reads a clock.
 */
#include "budget.h"

#include <string.h>

#include "util.h"

void
budget_init(struct budget *b, int64_t now_ms, int route_budget_ms, int64_t caller_ms)
{
	int64_t ms = route_budget_ms > 0 ? route_budget_ms : 0;

	if (caller_ms > 0 && caller_ms < ms)
		ms = caller_ms;
	b->start_ms = now_ms;
	b->budget_ms = ms;
	b->deadline_ms = now_ms + ms;
}

int64_t
budget_remaining(const struct budget *b, int64_t now_ms)
{
	return b->deadline_ms > now_ms ? b->deadline_ms - now_ms : 0;
}

int64_t
budget_attempt_room(const struct budget *b, int64_t now_ms)
{
	return budget_remaining(b, now_ms) - BUDGET_ANSWER_RESERVE_MS;
}

static void
budget_cause(char **cause, const char *text)
{
	if (cause != NULL)
		*cause = xstrdup(text);
}

int
budget_caller_parse(const char *hdr, const cJSON *body_value, int64_t *out, char **cause)
{
	const cJSON *v = body_value;
	int64_t ms = 0;
	int error = 0;

	if (v != NULL && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 1 ||
		    v->valuedouble > (double)BUDGET_MAX_MS ||
		    v->valuedouble != (double)(int64_t)v->valuedouble) {
			error = BUDGET_E_INVALID;
			budget_cause(cause,
				     "budget_ms: must be a positive integer of milliseconds");
		} else {
			ms = (int64_t)v->valuedouble;
		}
	} else if (hdr != NULL) {
		if (parse_int64(hdr, &ms) != 0 || ms < 1 || ms > BUDGET_MAX_MS) {
			error = BUDGET_E_INVALID;
			budget_cause(
				cause,
				"X-Fusebox-Budget-Ms: must be a positive integer of milliseconds");
		}
	}
	if (error == 0)
		*out = ms;
	return error;
}

static int64_t
budget_clip(int configured, int64_t limit)
{
	return configured > 0 && configured < limit ? configured : limit;
}

int
budget_attempt_timeouts(const struct budget *b, int64_t now_ms, int connect_ms, int first_byte_ms,
			int total_ms, int reserve_ms, int min_attempt_ms,
			struct attempt_timeouts *out)
{
	int64_t avail = budget_remaining(b, now_ms) - (reserve_ms > 0 ? reserve_ms : 0);
	int64_t total;
	int error = 0;

	if (avail < min_attempt_ms || avail < 1)
		error = BUDGET_E_EXHAUSTED;
	else {
		total = budget_clip(total_ms, avail);
		out->total_ms = total;
		out->first_byte_ms = budget_clip(first_byte_ms, total);
		out->connect_ms = budget_clip(connect_ms, total);
	}
	return error;
}

int
budget_attempt_plan(const struct budget *b, int64_t now_ms, const struct budget_crowd *crowd,
		    const struct attempt_limits *lim, struct attempt_timeouts *out)
{
	int total = (int)(lim->total_ms < INT32_MAX ? lim->total_ms : INT32_MAX);
	int reserve = BUDGET_ANSWER_RESERVE_MS;
	int error;

	if (crowd != NULL)
		reserve += budget_crowd_extra_ms(crowd, b->deadline_ms,
						 BUDGET_MAX_RESERVE_MS - BUDGET_ANSWER_RESERVE_MS);
	error = budget_attempt_timeouts(b, now_ms, lim->connect_ms, lim->first_byte_ms, total,
					reserve, 1, out);
	if (error != 0 && reserve > BUDGET_ANSWER_RESERVE_MS) {
		reserve = BUDGET_ANSWER_RESERVE_MS;
		error = budget_attempt_timeouts(b, now_ms, lim->connect_ms, lim->first_byte_ms,
						total, reserve, 1, out);
	}
	if (error != 0) {
		out->connect_ms = 0;
		out->first_byte_ms = 0;
		out->total_ms = 0;
	}
	out->at_cut = out->total_ms >= budget_remaining(b, now_ms) - reserve;
	return error;
}

static int
budget_is_cjk(uint32_t cp)
{
	return (cp >= 0x3000 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7AF) ||
	       (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFF00 && cp <= 0xFFEF);
}

/*
 * Decode one UTF-8 sequence at s[0..n): its length, with *cp set; an
 * invalid or truncated sequence is one byte with *cp = 0xFFFD.
 */
static size_t
budget_utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t need = 0, i, adv = 1;
	uint32_t c = s[0], min = 0;

	*cp = 0xFFFD;
	if (c < 0x80) {
		*cp = c;
	} else if (c >= 0xC2 && c <= 0xDF) {
		need = 1;
		c &= 0x1F;
		min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		c &= 0x0F;
		min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		c &= 0x07;
		min = 0x10000;
	}
	if (need > 0 && need < n) {
		for (i = 1; i <= need && (s[i] & 0xC0) == 0x80; i++)
			c = (c << 6) | (s[i] & 0x3F);
		if (i > need && c >= min && c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF)) {
			*cp = c;
			adv = need + 1;
		}
	}
	return adv;
}

int64_t
budget_estimate_tokens(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	int64_t ascii = 0, cjk = 0, other = 0;
	size_t i = 0;
	uint32_t cp;

	while (p != NULL && i < len) {
		uint64_t w = 0x80; /* the usual text: eight ASCII bytes at a time */

		if (len - i >= 8)
			memcpy(&w, p + i, 8);
		if ((w & 0x8080808080808080ULL) == 0) {
			ascii += 8;
			i += 8;
			continue;
		}
		if (p[i] < 0x80) { /* nor a byte below 0x80 decoded */
			ascii++;
			i++;
			continue;
		}
		i += budget_utf8_next(p + i, len - i, &cp);
		if (cp < 0x80)
			ascii++;
		else if (budget_is_cjk(cp))
			cjk++;
		else
			other++;
	}
	return (ascii + 3) / 4 + cjk + (other + 1) / 2;
}

int64_t
budget_dynamic_timeout(const struct timeout_cfg *tc, int64_t p_ms, int64_t input_tokens)
{
	double t;
	int64_t ms = tc->default_ms;

	if (p_ms >= 0) {
		if (input_tokens < 0)
			input_tokens = 0;
		t = (double)p_ms * (1.0 + tc->per_100_tokens * (double)input_tokens / 100.0) +
		    tc->margin_ms;
		if (!(t <= (double)tc->max_ms))
			t = tc->max_ms;
		if (t < (double)tc->min_ms)
			t = tc->min_ms;
		ms = (int64_t)(t + 0.5);
	}
	return ms;
}

void
budget_crowd_init(struct budget_crowd *c, int64_t cost_ns)
{
	int i;

	for (i = 0; i < BUDGET_CROWD_SLOTS; i++) {
		c->ms[i] = -1;
		c->n[i] = 0;
	}
	c->cost_ns = cost_ns;
}

static int
crowd_slot(int64_t ms)
{
	return (int)(((ms % BUDGET_CROWD_SLOTS) + BUDGET_CROWD_SLOTS) % BUDGET_CROWD_SLOTS);
}

int
budget_crowd_extra_ms(const struct budget_crowd *c, int64_t deadline_ms, int max_extra_ms)
{
	int64_t ms, ahead = 0, extra;

	for (ms = deadline_ms - BUDGET_CROWD_WINDOW_MS; ms <= deadline_ms; ms++) {
		int i = crowd_slot(ms);

		if (c->ms[i] == ms)
			ahead += c->n[i];
	}
	extra = (ahead * c->cost_ns + 999999) / 1000000;
	return (int)(extra < max_extra_ms ? extra : max_extra_ms);
}

void
budget_crowd_add(struct budget_crowd *c, int64_t deadline_ms)
{
	int i = crowd_slot(deadline_ms);

	if (c->ms[i] != deadline_ms) {
		c->ms[i] = deadline_ms;
		c->n[i] = 0;
	}
	c->n[i]++;
}

void
budget_crowd_remove(struct budget_crowd *c, int64_t deadline_ms)
{
	int i = crowd_slot(deadline_ms);

	if (c->ms[i] == deadline_ms && c->n[i] > 0)
		c->n[i]--;
}

void
budget_crowd_cost(struct budget_crowd *c, int64_t ns)
{
	if (ns < 0)
		return;
	c->cost_ns += (ns - c->cost_ns) / 8;
}
