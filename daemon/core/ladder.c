/*
 * ladder: the order of the rungs and what a route configures of them.
 */
#include "ladder.h"

int
ladder_step_configured(const struct route_cfg *rc, enum step s)
{
	switch (s) {
	case STEP_PRIMARY:
		return rc->ntargets > 0;
	case STEP_BACKUP:
		return rc->backup.enabled && rc->backup.ntargets > 0;
	case STEP_RULES:
		return rc->rules.enabled;
	case STEP_CACHE:
		return rc->cache.enabled;
	case STEP_PRESET:
		return rc->preset.enabled;
	default:
		return 1;
	}
}

enum step
ladder_step_next(const struct route_cfg *rc, enum step s)
{
	if (s >= STEP_EXHAUSTED)
		return STEP_EXHAUSTED;
	do
		s++;
	while (s < STEP_EXHAUSTED && !ladder_step_configured(rc, s));
	return s;
}

enum step
ladder_step_first(const struct route_cfg *rc, int allow_llm, int level)
{
	enum step first = STEP_PRIMARY;

	if (!allow_llm)
		first = STEP_RULES;
	else if (level >= 1)
		first = level == 1 ? STEP_BACKUP : STEP_RULES;
	if (first != STEP_PRIMARY && !ladder_step_configured(rc, first))
		first = ladder_step_next(rc, first);
	return first;
}

int
ladder_transition_ok(enum step from, enum step to)
{
	int f = (int)from, t = (int)to;

	return f >= STEP_PRIMARY && f < STEP_EXHAUSTED && t > f && t <= STEP_EXHAUSTED;
}
