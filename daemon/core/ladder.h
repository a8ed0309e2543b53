#pragma once
/*
 * ladder: the rungs a call walks (DESIGN.md "The call, step by step") —
 * which of them a route configures, where a walk starts, the next rung,
 * and which moves are allowed. Pure; any thread. The rungs' names are
 * step_name() (outcome.h).
 */
#include "config.h"
#include "outcome.h"

/* Route rc has rung s (STEP_EXHAUSTED always: on_exhausted). */
int ladder_step_configured(const struct route_cfg *rc, enum step s);
/* The first rung after s that rc configures; STEP_EXHAUSTED from there on. */
enum step ladder_step_next(const struct route_cfg *rc, enum step s);
/*
 * Where a call's walk starts: the call-site gate (allow_llm 0: the rule
 * engine), then the route's level (1: backup, 2 or more: the rule engine),
 * moved down to the next rung rc configures.
 */
enum step ladder_step_first(const struct route_cfg *rc, int allow_llm, int level);
/*
 * A call may move from rung from to rung to: the walk only goes down, and
 * nothing follows STEP_EXHAUSTED. 1 or 0.
 */
int ladder_transition_ok(enum step from, enum step to);
