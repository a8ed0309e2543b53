#pragma once
/*
 * canary: the canary guard's action on the engine thread. Once a second
 * (an engine_on_tick hook) every guarded route's windows go through
 * canary_align() and canary_pick() (core/canary_guard.h); a canary that
 * fails more than max_failure_delta above the baseline gets weight 0 —
 * persisted, audited and evented with actor "canary_guard" through
 * control_weights_set(), plus a canary_rollback event and a page alert
 * (fusebox_canary_rollback, through obs's alert lifecycle and delivery).
 * An operator can put the weight back: that restarts the target's window
 * (control.c) and resolves the alert.
 */
#include <stdint.h>

#include "canary_guard.h"

struct engine;

/* Evaluate every guarded route (an engine_on_tick hook; arg unused). */
void canary_tick(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms);
