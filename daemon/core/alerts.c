/*
 * alerts: rule building, conditions and the alert state machine.
 *
 * Threshold rules compare one metric over one window with a value and must
 * hold for for_s before they fire. Burn-rate pairs (Google SRE workbook,
 * "multiwindow, multi-burn-rate alerts") fire at once (for_s 0) when both
 * the long and the short window burn the error budget faster than the
 * pair's factor. A window with fewer than min_calls calls never makes a
 * condition true, so one failed call at 3 a.m. pages nobody; a burn pair
 * needs them in both windows, counted in its kind's denominator (smart:
 * smart_total), so a fresh start with a handful of calls cannot flap.
 * alert_set_state() is the only writer of a->state.
 */
#include "alerts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const struct alert_burn_pair alert_burn_pairs[ALERT_NBURN_PAIRS] = {
	{"1h", 14.4, 60, 5, SEVERITY_PAGE},
	{"6h", 6.0, 360, 30, SEVERITY_PAGE},
	{"1d", 3.0, 1440, 120, SEVERITY_TICKET},
	{"3d", 1.0, 4320, 360, SEVERITY_TICKET},
};

static const char *const alert_state_names[ALERT__COUNT] = {
	[ALERT_INACTIVE] = "inactive",
	[ALERT_PENDING] = "pending",
	[ALERT_FIRING] = "firing",
	[ALERT_RESOLVED] = "resolved",
};

const char *
alert_state_name(enum alert_state s)
{
	const char *name = NULL;

	if ((unsigned)s < ALERT__COUNT)
		name = alert_state_names[s];
	return name;
}

int
alert_state_parse(const char *name, enum alert_state *out)
{
	int i, ret = -EINVAL;

	for (i = 0; i < ALERT__COUNT; i++) {
		if (strcmp(alert_state_names[i], name) == 0) {
			*out = (enum alert_state)i;
			ret = 0;
			break;
		}
	}
	return ret;
}

const char *
alert_op_name(enum alert_op op)
{
	static const char *const names[] = {"<", "<=", ">", ">="};

	return (unsigned)op < ARRAY_SIZE(names) ? names[op] : "?";
}

void
alert_name_make(const char *name, char *out, size_t n)
{
	size_t i, j;

	if (n == 0)
		return;
	j = (size_t)snprintf(out, n, "fusebox_");
	for (i = 0; name[i] != '\0' && j + 1 < n; i++, j++) {
		char c = name[i];

		out[j] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
				 ? c
				 : '_';
	}
	out[MIN(j, n - 1)] = '\0';
}

void
alert_window_label(int minutes, char *out, size_t n)
{
	if (minutes > 0 && minutes % 1440 == 0)
		snprintf(out, n, "%dd", minutes / 1440);
	else if (minutes > 0 && minutes % 60 == 0)
		snprintf(out, n, "%dh", minutes / 60);
	else
		snprintf(out, n, "%dm", minutes);
}

int
alert_rules_build(const struct config *cfg, struct alert_rule **out)
{
	struct alert_rule *rules = NULL, *r;
	int i, j, k, n = 0, cap = 0;

	for (i = 0; i < cfg->nroutes; i++) {
		const struct slo_cfg *s = &cfg->routes[i].slo;

		if (!s->enabled)
			continue;
		cap += s->nalerts + (s->burn_rate_alerts ? 2 * ALERT_NBURN_PAIRS : 0);
	}
	rules = xcalloc((size_t)MAX(cap, 1), sizeof *rules);
	for (i = 0; i < cfg->nroutes; i++) {
		const struct slo_cfg *s = &cfg->routes[i].slo;

		if (!s->enabled)
			continue;
		for (j = 0; j < s->nalerts; j++) {
			const struct slo_alert_cfg *ac = &s->alerts[j];

			r = &rules[n++];
			snprintf(r->name, sizeof r->name, "%s", ac->name);
			r->route = i;
			r->kind = ALERT_KIND_THRESHOLD;
			r->severity = ac->severity;
			r->for_s = ac->for_s;
			r->min_calls = ac->min_calls;
			r->metric = ac->metric;
			r->op = ac->op;
			r->threshold = ac->value;
			r->window_min = slo_window_minutes(ac->window);
			r->reachable = 1;
			alert_name_make(ac->name, r->alertname, sizeof r->alertname);
			snprintf(r->kind_label, sizeof r->kind_label, "%s", ac->metric);
			alert_window_label(r->window_min, r->window_label, sizeof r->window_label);
		}
		if (!s->burn_rate_alerts)
			continue;
		for (k = 0; k < SLO_KIND__COUNT; k++) {
			for (j = 0; j < ALERT_NBURN_PAIRS; j++) {
				const struct alert_burn_pair *p = &alert_burn_pairs[j];

				r = &rules[n++];
				snprintf(r->name, sizeof r->name, "%s-burn-%s",
					 slo_kind_name((enum slo_kind)k), p->name);
				r->route = i;
				r->kind = ALERT_KIND_BURN;
				r->severity = p->severity;
				r->for_s = 0;
				r->min_calls = s->burn_rate_min_calls;
				r->metric = k == SLO_KIND_SERVICE ? "service_burn_rate"
								  : "smart_burn_rate";
				r->op = ALERT_OP_GT;
				r->threshold = p->factor;
				r->window_min = p->long_min;
				r->short_min = p->short_min;
				r->slo = (enum slo_kind)k;
				r->target = k == SLO_KIND_SERVICE ? s->service_availability
								  : s->smart_availability;
				r->reachable = slo_burn_factor_reachable(p->factor, r->target);
				snprintf(r->alertname, sizeof r->alertname,
					 "fusebox_error_budget_burn");
				snprintf(r->kind_label, sizeof r->kind_label, "%s",
					 slo_kind_name((enum slo_kind)k));
				snprintf(r->window_label, sizeof r->window_label, "%s", p->name);
			}
		}
	}
	*out = rules;
	return n;
}

static int
compare(enum alert_op op, double v, double threshold)
{
	switch (op) {
	case ALERT_OP_LT:
		return v < threshold;
	case ALERT_OP_LE:
		return v <= threshold;
	case ALERT_OP_GT:
		return v > threshold;
	case ALERT_OP_GE:
		return v >= threshold;
	}
	return 0;
}

int
alert_condition(const struct alert_rule *r, const struct slo_counts *lng,
		const struct slo_counts *shrt, double *value)
{
	double v = NAN, bl, bs;
	uint64_t lt, st;
	int cond = 0;

	if (r->kind == ALERT_KIND_THRESHOLD) {
		if (lng->v[SLO_TOTAL] < (uint64_t)MAX(r->min_calls, 0))
			goto out;
		if (slo_metric_value(lng, r->metric, &v) != 0) {
			v = NAN;
			goto out;
		}
		cond = compare(r->op, v, r->threshold);
		goto out;
	}
	/* Both windows need min_calls in the kind's own denominator. */
	lt = slo_total(lng, r->slo);
	st = slo_total(shrt, r->slo);
	if (lt < (uint64_t)MAX(r->min_calls, 1) || st < (uint64_t)MAX(r->min_calls, 1))
		goto out; /* too few calls (or none: the burn has stopped) */
	bl = slo_burn_rate(slo_good(lng, r->slo), lt, r->target);
	bs = slo_burn_rate(slo_good(shrt, r->slo), st, r->target);
	if (isnan(bl) || isnan(bs))
		goto out;
	v = MIN(bl, bs);
	cond = bl > r->threshold && bs > r->threshold;
out:
	*value = v;
	return cond;
}

void
alert_init(struct alert *a, const struct alert_rule *r)
{
	memset(a, 0, sizeof *a);
	a->rule = r;
	a->state = ALERT_INACTIVE;
	a->value = NAN;
	a->since_ms = -1;
	a->state_at_ms = -1;
}

/* The only writer of a->state. */
static int
alert_set_state(struct alert *a, enum alert_state to, int64_t now_ms, double value)
{
	if (a->state == to)
		return 0;
	a->last.at_ms = now_ms;
	a->last.from = a->state;
	a->last.to = to;
	a->last.value = value;
	if (to == ALERT_PENDING || (to == ALERT_FIRING && a->state != ALERT_PENDING))
		a->since_ms = now_ms;
	a->state = to;
	a->state_at_ms = now_ms;
	a->ntransitions++;
	return 1;
}

int
alert_restore(struct alert *a, enum alert_state state, int64_t since_ms, int64_t state_at_ms)
{
	if (state != ALERT_PENDING && state != ALERT_FIRING)
		return -EINVAL;
	alert_set_state(a, state, state_at_ms, NAN);
	a->since_ms = since_ms;
	a->ntransitions = 0; /* not a new transition: nothing to emit */
	return 0;
}

void
alert_rebind(struct alert *a, const struct alert_rule *r)
{
	a->rule = r;
}

int
alert_update(struct alert *a, int cond, double value, int64_t now_ms)
{
	int changed = 0;

	a->value = value;
	switch (a->state) {
	case ALERT_INACTIVE:
	case ALERT_RESOLVED:
		if (cond)
			changed = alert_set_state(
				a, a->rule->for_s <= 0 ? ALERT_FIRING : ALERT_PENDING, now_ms,
				value);
		break;
	case ALERT_PENDING:
		if (!cond)
			changed = alert_set_state(a, ALERT_INACTIVE, now_ms, value);
		else if (now_ms - a->since_ms >= (int64_t)a->rule->for_s * 1000)
			changed = alert_set_state(a, ALERT_FIRING, now_ms, value);
		break;
	case ALERT_FIRING:
		if (!cond)
			changed = alert_set_state(a, ALERT_RESOLVED, now_ms, value);
		break;
	default:
		break;
	}
	return changed;
}

int
alert_is_active(const struct alert *a)
{
	return a->state == ALERT_PENDING || a->state == ALERT_FIRING;
}
