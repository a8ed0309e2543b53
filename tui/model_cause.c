/*
 * model_cause: why a route or a breaker is degraded, in words, from the
 * snapshot and the event ring (see model.h). Pure; the UI thread calls it
 * while drawing, the tests with literals.
 *
 * The daemon's breaker events read "closed -> open (REASON)"; its
 * escalation events "auto 0 -> 2 (REASON); actor escalation". A breaker
 * keeps the cause of its first opening until it closes again: a failed
 * probe (half_open -> open) does not replace it.
 */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "util.h"

#define SEP_MAX 512

/* The text inside the outermost parentheses that follow "-> STATE ", or NULL. */
static const char *
paren_after(const char *s, const char *arrow, char *out, size_t outsz)
{
	const char *p = strstr(s, arrow);

	if (p == NULL)
		return NULL;
	p = strchr(p, '(');
	if (p == NULL)
		return NULL;
	fmt_paren_inner(p, out, outsz);
	return out;
}

void
cause_short(const char *reason, int utf8, char *out, size_t outsz)
{
	char what[128];
	double rate, thr;
	int n, calls;

	if (sscanf(reason, "%d consecutive failures (%127[^)])", &n, what) == 2) {
		snprintf(out, outsz, "%d%s %s", n, utf8 ? "\xc3\x97" : "x", what);
		return;
	}
	if (sscanf(reason, "failure rate %lf >= %lf over %d calls", &rate, &thr, &calls) == 3) {
		snprintf(out, outsz, "failures %.0f%% of %d calls", rate * 100.0, calls);
		return;
	}
	if (sscanf(reason, "slow call rate %lf >= %lf over %d calls", &rate, &thr, &calls) == 3) {
		snprintf(out, outsz, "slow %.0f%% of %d calls", rate * 100.0, calls);
		return;
	}
	snprintf(out, outsz, "%s", reason);
}

void
cause_window(const char *reason, int *failures, int *calls)
{
	double rate, thr;
	int n;

	*failures = *calls = -1;
	if (sscanf(reason, "%d consecutive failures", &n) == 1) {
		*failures = *calls = n;
	} else if (sscanf(reason, "failure rate %lf >= %lf over %d calls", &rate, &thr, &n) == 3) {
		*calls = n;
		*failures = (int)lround(rate * n);
	}
}

int
cause_breaker(const struct event_ring *ev, const struct backend_v *b, char *out, size_t outsz,
	      int64_t *at)
{
	char buf[MODEL_TEXT_MAX];
	int i, found = 0;

	out[0] = '\0';
	*at = 0;
	if (b->st == BS_CLOSED || b->st == BS_FORCED_CLOSED || b->st == BS_UNKNOWN)
		return 0;
	for (i = ev != NULL ? ev->n - 1 : -1; i >= 0; i--) {
		const struct event_v *e = event_ring_get(ev, i);

		if (strcmp(e->kind, "breaker") != 0 || strcmp(e->subject, b->name) != 0 ||
		    e->detail == NULL)
			continue;
		if (strstr(e->detail, "-> closed") != NULL ||
		    strstr(e->detail, "-> forced_closed") != NULL)
			break;
		if (paren_after(e->detail, "-> open", buf, sizeof buf) != NULL ||
		    paren_after(e->detail, "-> forced_open", buf, sizeof buf) != NULL) {
			snprintf(out, outsz, "%s", buf);
			*at = e->at;
			found = 1;
			if (strncmp(e->detail, "closed", 6) == 0)
				break;
		}
	}
	if (found)
		return 1;
	if (b->has_transition) {
		snprintf(out, outsz, "%s", b->tr_reason);
		*at = b->opened_at > 0 ? b->opened_at : b->tr_at;
	}
	return 1;
}

int64_t
cause_auto_level(const struct event_ring *ev, const char *route, char *out, size_t outsz)
{
	int i;

	out[0] = '\0';
	for (i = ev != NULL ? ev->n - 1 : -1; i >= 0; i--) {
		const struct event_v *e = event_ring_get(ev, i);

		if (strcmp(e->kind, "level") != 0 || strcmp(e->subject, route) != 0 ||
		    e->detail == NULL || strncmp(e->detail, "auto ", 5) != 0)
			continue;
		if (paren_after(e->detail, "->", out, outsz) == NULL)
			out[0] = '\0';
		return e->at;
	}
	return 0;
}

static void
append(char *out, size_t outsz, const char *sep, const char *s)
{
	size_t n = strlen(out), k;

	if (n > 0 && sep != NULL) {
		k = MIN(strlen(sep), outsz - 1 - n);
		memcpy(out + n, sep, k);
		n += k;
	}
	k = MIN(strlen(s), outsz - 1 - n);
	memcpy(out + n, s, k);
	out[n + k] = '\0';
}

static const char *
state_word(enum breaker_st st)
{
	switch (st) {
	case BS_OPEN:
		return "OPEN";
	case BS_HALF_OPEN:
		return "half-open";
	case BS_FORCED_OPEN:
		return "forced open";
	default:
		return "?";
	}
}

int
cause_route(const struct state_v *s, const struct event_ring *ev, const struct slo_route_v *sr,
	    const struct route_v *r, int utf8, void (*clock_text)(char *, size_t, int64_t),
	    char *out, size_t outsz)
{
	char why[MODEL_TEXT_MAX], part[SEP_MAX], brk[SEP_MAX] = "", when[32];
	int i, shut = 0, known = 0;
	int64_t at;
	double smart = sr != NULL ? sr->w[SLO_5M].smart : NAN;

	out[0] = '\0';
	for (i = 0; i < r->ntargets; i++) {
		const struct backend_v *b = state_backend(s, r->targets[i].backend);
		char sh[MODEL_TEXT_MAX];

		if (b == NULL || r->targets[i].weight == 0)
			continue;
		known++;
		if (!cause_breaker(ev, b, why, sizeof why, &at))
			continue;
		shut += b->st == BS_OPEN || b->st == BS_FORCED_OPEN;
		cause_short(why, utf8, sh, sizeof sh);
		if (sh[0])
			snprintf(part, sizeof part, "%s %s (%s)", b->name, state_word(b->st), sh);
		else
			snprintf(part, sizeof part, "%s %s", b->name, state_word(b->st));
		append(brk, sizeof brk, ", ", part);
	}
	if (r->level > 0 && !r->forced) {
		at = cause_auto_level(ev, r->name, why, sizeof why);
		if (at > 0 && clock_text != NULL) {
			clock_text(when, sizeof when, at);
			snprintf(part, sizeof part, "L%d auto since %s", r->level, when);
		} else {
			snprintf(part, sizeof part, "L%d auto", r->level);
		}
		append(out, outsz, NULL, part);
		if (!brk[0] && why[0])
			append(out, outsz, ": ", why);
	}
	if (known > 0 && shut == known && r->level == 0)
		append(out, outsz, out[0] ? ": " : NULL, "no model target admits calls");
	if (brk[0])
		append(out, outsz, out[0] ? ": " : NULL, brk);
	if (sr != NULL && !isnan(smart) && !isnan(sr->obj_smart) && smart < sr->obj_smart) {
		snprintf(part, sizeof part, "smart %.1f%% < %.1f%% 5m", smart * 100.0,
			 sr->obj_smart * 100.0);
		append(out, outsz, "; ", part);
	}
	return out[0] != '\0';
}
