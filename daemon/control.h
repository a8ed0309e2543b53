#pragma once
/*
 * control: operator overrides of live state — a route's forced level, a
 * route's primary weights, a backend's breaker. Each change is persisted
 * (its `overrides` row, an `audit` row and, for levels and weights, an
 * `events` row) in ONE store_commit_now() transaction and only then applied
 * to the engine's runtime state, so what the daemon runs and what survives
 * a restart never differ. control_restore() re-applies the rows at start.
 * Engine thread (control_restore: the thread that creates the engine,
 * before engine_start()).
 */
#include <stdint.h>

#include <cjson/cJSON.h>

#include "breaker.h"

struct engine;

enum control_e {
	CONTROL_E_INVALID = 1, /* a value out of range: *cause names the field */
	CONTROL_E_STORE,       /* the commit failed: nothing was changed */
};

#define CONTROL_REASON_MAX 200	      /* characters (UTF-8 code points) */
#define CONTROL_TTL_MAX_S  31536000LL /* one year */
#define CONTROL_LEVEL_MAX  3

/* Who changes something: the token name and the peer address (borrowed). */
struct control_who {
	const char *actor;
	const char *remote;
};

/*
 * Force route's level to level (0..3) for ttl_s seconds (0: until
 * released), with a non-empty reason. 0; CONTROL_E_INVALID; CONTROL_E_STORE
 * with *cause (caller frees), nothing changed.
 */
int control_level_force(struct engine *e, int route, int level, const char *reason, int64_t ttl_s,
			const struct control_who *who, char **cause);
/* Back to the auto level (a no-op release is still audited). As above. */
int control_level_release(struct engine *e, int route, const struct control_who *who, char **cause);
/*
 * Set the live weights of route's primary targets: weights[0..ntargets-1]
 * in cfg->targets order, each >= 0, at least one > 0. reason may be NULL.
 * A change by anyone but the canary guard restarts the guard's window of
 * each target whose weight moves.
 */
int control_weights_set(struct engine *e, int route, const int *weights, const char *reason,
			const struct control_who *who, char **cause);
/*
 * Force backend's breaker (BREAKER_FORCE_AUTO drops the override and resets
 * it to CLOSED with empty windows). reason may be NULL. The transition's
 * events row comes from engine_breaker_events().
 */
int control_breaker_force(struct engine *e, int backend, enum breaker_force f, const char *reason,
			  const struct control_who *who, char **cause);

/*
 * Re-apply the `overrides` rows to a freshly built engine (runtime state
 * set up from the config, engine thread not started). Level overrides whose
 * TTL has passed are deleted (with a "level" event) instead; rows naming a
 * route or backend the config no longer has, or holding values the config
 * cannot take, are skipped with a warning and kept. Uses e->reader when
 * set, else a reader of its own. 0, or CONTROL_E_STORE with *cause.
 */
int control_restore(struct engine *e, char **cause);

/*
 * {"level","actor","reason","until"} of route's forced level, or a JSON
 * null when none (the "forced_level" of API.md). Caller deletes.
 */
cJSON *control_forced_json(const struct engine *e, int route);

/*
 * The TTL timer of e's forced levels, in e->control: armed by
 * control_level_set() at the earliest forced_until of the routes, so a
 * level expires (event, override row) when its TTL ends, not at the next
 * cron second. daemon_create() makes it before control_restore();
 * control_free() (NULL is a no-op) cancels and frees it.
 */
struct control;
struct control *control_new(struct engine *e);
void control_free(struct control *c);

/* A route's forced level as control_level_set() takes it (strings borrowed, copied). */
struct control_level {
	int level; /* -1: released (back to the auto level) */
	const char *actor;
	const char *reason;
	int64_t until_wall; /* 0: no TTL */
	const char *detail; /* the "level" event's text; NULL: no event */
};

/* Who writes the change's "level" event. */
enum control_event {
	CONTROL_EVENT_WRITE,	 /* control_level_set() writes it (async, like every log row) */
	CONTROL_EVENT_COMMITTED, /* the caller's transaction already committed it */
	CONTROL_EVENT_NONE,	 /* none: the restore at start */
};

/*
 * The one writer of a route's forced level: sets (lv->level >= 0) or
 * clears it and writes its "level" event as ev says. Every change of
 * route_rt.forced_* goes through here: control_level_force/_release,
 * control_restore, control_level_tick (TTL expiry) and the review queue's
 * overflow. Engine thread.
 */
void control_level_set(struct engine *e, int route, const struct control_level *lv,
		       enum control_event ev, int64_t now_wall);
/*
 * Clear every forced level whose TTL has passed: drop its `overrides`
 * row, write its "level" event. Run by the TTL timer at the earliest
 * expiry (control_new) and, as a backstop for a wall clock that moved,
 * as an engine_on_tick hook (arg unused).
 */
void control_level_tick(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms);
