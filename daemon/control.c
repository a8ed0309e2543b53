/*
 * control: operator overrides, applied and persisted.
 *
 * Order of a change: validate, build the rows (override upsert or delete,
 * audit with before/after JSON, event), commit them with one
 * store_commit_now() — the engine thread blocks for that one synchronous
 * commit, which operator actions can afford — and only when it succeeded
 * change the runtime state. A failed commit therefore leaves the daemon as
 * it was and the operator gets an error, never a change that a restart
 * would silently undo.
 *
 * The forced part of a route's level has one writer here,
 * control_level_set(), which also writes (or is told the caller's
 * transaction wrote) its "level" event: the operator's force and release,
 * the restore at start, the TTL expiry (control_level_tick, run by the TTL
 * timer and the cron) and the review queue's overflow all go through it. Breakers change only
 * through breaker_force(), whose transition event engine_breaker_events() writes, so a breaker
 * change adds no events row of its own.
 *
 * `overrides` rows: kind "level" value {"level":N} (actor, reason, until in
 * their columns); kind "weights" value {"<backend>":W,...} for every
 * primary target; kind "breaker" value {"state":"forced_open"|"forced_closed"}
 * ("auto" deletes the row). A TTL that ends while the daemon runs:
 * control_level_tick() deletes the row; a TTL that ended while the daemon
 * was down: control_restore() drops the row.
 */
#include "control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "engine.h"
#include "log.h"
#include "store.h"
#include "util.h"
#include "jsonutil.h"

cJSON *
control_forced_json(const struct engine *e, int route)
{
	const struct route_rt *rt = &e->routes[route];
	cJSON *f;

	if (engine_route_forced(e, route) < 0)
		return cJSON_CreateNull();
	f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "level", rt->forced_level);
	cJSON_AddStringToObject(f, "actor", rt->forced_actor ? rt->forced_actor : "");
	cJSON_AddStringToObject(f, "reason", rt->forced_reason ? rt->forced_reason : "");
	cJSON_AddItemToObject(f, "until", json_time(rt->forced_until_wall));
	return f;
}

/* {"level": effective, "auto_level", "forced_level": …} for audit rows. */
static char *
level_audit_json(struct engine *e, int route)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	cJSON_AddNumberToObject(o, "level", engine_route_level(e, route));
	cJSON_AddNumberToObject(o, "auto_level", e->routes[route].auto_level);
	cJSON_AddItemToObject(o, "forced_level", control_forced_json(e, route));
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

struct control {
	struct engine *e;
	struct timer ttl; /* at the earliest forced_until of the routes */
};

/* Arm (or cancel) the TTL timer at the earliest forced level's expiry. */
static void
ttl_arm(struct engine *e)
{
	int64_t first = 0, wall, mono;
	int i;

	if (e->control == NULL)
		return;
	for (i = 0; i < e->nroutes; i++) {
		const struct route_rt *rt = &e->routes[i];

		if (rt->forced_level >= 0 && rt->forced_until_wall > 0 &&
		    (first == 0 || rt->forced_until_wall < first))
			first = rt->forced_until_wall;
	}
	if (first == 0) {
		engine_timer_cancel(e, &e->control->ttl);
		return;
	}
	wall = clock_wall_ms();
	mono = clock_mono_us();
	engine_timer_arm(e, &e->control->ttl, mono + (first > wall ? first - wall : 0) * 1000);
}

static void
ttl_fire(struct timer *t, void *arg)
{
	struct control *c = arg;

	control_level_tick(c->e, NULL, clock_mono_ms(), clock_wall_ms());
	ttl_arm(c->e);
}

struct control *
control_new(struct engine *e)
{
	struct control *c = xcalloc(1, sizeof *c);

	c->e = e;
	timer_init(&c->ttl, "level_ttl", ttl_fire, c);
	return c;
}

void
control_free(struct control *c)
{
	if (c == NULL)
		return;
	engine_timer_cancel(c->e, &c->ttl);
	free(c);
}

void
control_level_set(struct engine *e, int route, const struct control_level *lv,
		  enum control_event ev, int64_t now_wall)
{
	struct route_rt *rt = &e->routes[route];

	free(rt->forced_actor);
	free(rt->forced_reason);
	rt->forced_actor = rt->forced_reason = NULL;
	rt->forced_until_wall = 0;
	rt->forced_level = lv->level >= 0 ? lv->level : -1;
	if (lv->level >= 0) {
		rt->forced_actor = xstrdup(lv->actor ? lv->actor : "");
		rt->forced_reason = xstrdup(lv->reason ? lv->reason : "");
		rt->forced_until_wall = lv->until_wall;
	}
	if (ev == CONTROL_EVENT_WRITE && lv->detail != NULL)
		engine_event_at(e, now_wall, "level", rt->cfg->name, lv->detail);
	ttl_arm(e);
}

void
control_level_tick(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms)
{
	int i;

	for (i = 0; i < e->nroutes; i++) {
		struct route_rt *rt = &e->routes[i];
		struct store_val v[] = {SVT("level"), SVT(rt->cfg->name)};
		struct control_level lv = {.level = -1};
		char detail[160];

		if (rt->forced_level < 0 || rt->forced_until_wall <= 0 ||
		    now_wall_ms < rt->forced_until_wall)
			continue;
		snprintf(detail, sizeof detail, "forced level %d expired (ttl) -> auto %d",
			 rt->forced_level, rt->auto_level);
		log_info("control", "route %s: %s", rt->cfg->name, detail);
		/* The override row goes first (async, ordered before later commits). */
		store_put(e->store, STORE_OVERRIDE_DELETE, v, (int)ARRAY_SIZE(v));
		lv.detail = detail;
		control_level_set(e, i, &lv, CONTROL_EVENT_WRITE, now_wall_ms);
	}
}

/*
 * A free-text operator reason: when required, present and non-empty; at
 * most CONTROL_REASON_MAX code points; no control characters (it goes into
 * one-line logs and events). 0 or CONTROL_E_INVALID with *cause.
 */
static int
reason_check(const char *reason, int required, char **cause)
{
	const unsigned char *p;
	size_t chars = 0;

	if (reason == NULL || reason[0] == '\0') {
		if (!required)
			return 0;
		*cause = xasprintf("reason: required (a non-empty string)");
		return CONTROL_E_INVALID;
	}
	for (p = (const unsigned char *)reason; *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			*cause = xasprintf("reason: must not contain control characters");
			return CONTROL_E_INVALID;
		}
		if ((*p & 0xc0) != 0x80)
			chars++;
	}
	if (chars > CONTROL_REASON_MAX) {
		*cause = xasprintf("reason: at most %d characters (got %zu)", CONTROL_REASON_MAX,
				   chars);
		return CONTROL_E_INVALID;
	}
	return 0;
}

/* Commit ops; STORE_* failures become CONTROL_E_STORE with *cause. */
static int
commit(struct engine *e, const struct store_op *ops, int nops, char **cause)
{
	char *why = NULL;
	int r;

	r = store_commit_now(e->store, ops, nops, NULL, &why);
	if (r != 0) {
		if (why == NULL && r < 0)
			why = xstrdup(strerror(-r));
		else if (why == NULL)
			why = xstrdup(r == STORE_E_CLOSED ? "store closing" : "store error");
		*cause = xasprintf("cannot persist the change: %s", why);
		log_error("control", "%s", *cause);
		r = CONTROL_E_STORE;
	}
	free(why);
	return r;
}

int
control_level_force(struct engine *e, int route, int level, const char *reason, int64_t ttl_s,
		    const struct control_who *who, char **cause)
{
	struct route_rt *rt = &e->routes[route];
	char *before = NULL, *after = NULL, value[32], target[160], detail[400];
	int64_t now = clock_wall_ms(), until;
	int old, r;

	if (level < 0 || level > CONTROL_LEVEL_MAX) {
		*cause = xasprintf("level: must be an integer 0-%d (got %d)", CONTROL_LEVEL_MAX,
				   level);
		r = CONTROL_E_INVALID;
		goto out;
	}
	if (ttl_s < 0 || ttl_s > CONTROL_TTL_MAX_S) {
		*cause = xasprintf("ttl_s: must be a positive integer <= %lld", CONTROL_TTL_MAX_S);
		r = CONTROL_E_INVALID;
		goto out;
	}
	if ((r = reason_check(reason, 1, cause)) != 0)
		goto out;
	until = ttl_s > 0 ? now + ttl_s * 1000 : 0;
	old = engine_route_level(e, route);
	before = level_audit_json(e, route);
	{
		cJSON *o = cJSON_CreateObject(), *f;

		cJSON_AddNumberToObject(o, "level", level);
		cJSON_AddNumberToObject(o, "auto_level", rt->auto_level);
		f = cJSON_AddObjectToObject(o, "forced_level");
		cJSON_AddNumberToObject(f, "level", level);
		cJSON_AddStringToObject(f, "actor", who->actor);
		cJSON_AddStringToObject(f, "reason", reason);
		cJSON_AddItemToObject(f, "until", json_time(until));
		after = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
	}
	snprintf(value, sizeof value, "{\"level\":%d}", level);
	snprintf(target, sizeof target, "route:%s", rt->cfg->name);
	if (ttl_s > 0)
		snprintf(detail, sizeof detail, "L%d -> forced L%d by %s for %llds: %s", old, level,
			 who->actor, (long long)ttl_s, reason);
	else
		snprintf(detail, sizeof detail, "L%d -> forced L%d by %s: %s", old, level,
			 who->actor, reason);
	{
		struct store_val ov[] = {
			SVT("level"), SVT(rt->cfg->name),	SVT(value), SVT(who->actor),
			SVT(reason),  until ? SVI(until) : SVN, SVI(now)};
		struct store_val av[] = {SVI(now),	  SVT(who->actor), SVT("level.force"),
					 SVT(target),	  SVT(before),	   SVT(after),
					 SVT(who->remote)};
		struct store_val ev[] = {SVI(now), SVT("level"), SVT(rt->cfg->name), SVT(detail)};
		struct store_op ops[] = {
			{STORE_OVERRIDE_UPSERT, ov, (int)ARRAY_SIZE(ov)},
			{STORE_AUDIT_INSERT, av, (int)ARRAY_SIZE(av)},
			{STORE_EVENT_INSERT, ev, (int)ARRAY_SIZE(ev)},
		};

		if ((r = commit(e, ops, (int)ARRAY_SIZE(ops), cause)) != 0)
			goto out;
	}
	{
		struct control_level lv = {level, who->actor, reason, until, detail};

		control_level_set(e, route, &lv, CONTROL_EVENT_COMMITTED, now);
	}
	log_info("control", "route %s: %s", rt->cfg->name, detail);
out:
	free(before);
	free(after);
	return r;
}

int
control_level_release(struct engine *e, int route, const struct control_who *who, char **cause)
{
	struct route_rt *rt = &e->routes[route];
	char *before = NULL, *after = NULL, target[160], detail[200];
	int was, old, r;
	int64_t now = clock_wall_ms();

	old = engine_route_level(e, route);
	was = rt->forced_level;
	before = level_audit_json(e, route);
	{
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "level", rt->auto_level);
		cJSON_AddNumberToObject(o, "auto_level", rt->auto_level);
		cJSON_AddNullToObject(o, "forced_level");
		after = cJSON_PrintUnformatted(o);
		cJSON_Delete(o);
	}
	snprintf(target, sizeof target, "route:%s", rt->cfg->name);
	snprintf(detail, sizeof detail, "forced L%d -> auto L%d (released by %s)", old,
		 rt->auto_level, who->actor);
	{
		struct store_val dv[] = {SVT("level"), SVT(rt->cfg->name)};
		struct store_val av[] = {SVI(now),	  SVT(who->actor), SVT("level.release"),
					 SVT(target),	  SVT(before),	   SVT(after),
					 SVT(who->remote)};
		struct store_val ev[] = {SVI(now), SVT("level"), SVT(rt->cfg->name), SVT(detail)};
		struct store_op ops[] = {
			{STORE_OVERRIDE_DELETE, dv, (int)ARRAY_SIZE(dv)},
			{STORE_AUDIT_INSERT, av, (int)ARRAY_SIZE(av)},
			{STORE_EVENT_INSERT, ev, (int)ARRAY_SIZE(ev)},
		};

		/* Nothing was forced: no level change, so no event. */
		if ((r = commit(e, ops, was >= 0 ? 3 : 2, cause)) != 0)
			goto out;
	}
	{
		struct control_level lv = {.level = -1, .detail = detail};

		control_level_set(e, route, &lv, CONTROL_EVENT_COMMITTED, now);
	}
	if (was >= 0)
		log_info("control", "route %s: %s", rt->cfg->name, detail);
out:
	free(before);
	free(after);
	return r;
}

/* {"<backend>": w, ...} of route's primary targets. */
static char *
weights_json(const struct route_rt *rt, const int *w)
{
	cJSON *o = cJSON_CreateObject();
	char *s;
	int j;

	for (j = 0; j < rt->cfg->ntargets; j++)
		if (cJSON_GetObjectItemCaseSensitive(o, rt->cfg->targets[j].backend) == NULL)
			cJSON_AddNumberToObject(o, rt->cfg->targets[j].backend, w[j]);
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

int
control_weights_set(struct engine *e, int route, const int *weights, const char *reason,
		    const struct control_who *who, char **cause)
{
	struct route_rt *rt = &e->routes[route];
	char *before = NULL, *after = NULL, target[160];
	struct buf detail;
	int64_t now = clock_wall_ms();
	int j, positive = 0, r;

	buf_init(&detail, 1024);
	for (j = 0; j < rt->cfg->ntargets; j++) {
		if (weights[j] < 0) {
			*cause = xasprintf("weights.%s: must be an integer >= 0 (got %d)",
					   rt->cfg->targets[j].backend, weights[j]);
			r = CONTROL_E_INVALID;
			goto out;
		}
		positive |= weights[j] > 0;
	}
	if (!positive) {
		*cause = xasprintf("weights: at least one weight must be > 0");
		r = CONTROL_E_INVALID;
		goto out;
	}
	if ((r = reason_check(reason, 0, cause)) != 0)
		goto out;
	before = weights_json(rt, rt->weights);
	after = weights_json(rt, weights);
	snprintf(target, sizeof target, "route:%s", rt->cfg->name);
	for (j = 0; j < rt->cfg->ntargets; j++)
		buf_printf(&detail, "%s%s %d -> %d", j ? ", " : "", rt->cfg->targets[j].backend,
			   rt->weights[j], weights[j]);
	buf_printf(&detail, " (by %s%s%s)", who->actor, reason && *reason ? ": " : "",
		   reason && *reason ? reason : "");
	{
		struct store_val ov[] = {SVT("weights"),  SVT(rt->cfg->name), SVT(after),
					 SVT(who->actor), SVT(reason),	      SVN,
					 SVI(now)};
		struct store_val av[] = {SVI(now),	  SVT(who->actor), SVT("weights.set"),
					 SVT(target),	  SVT(before),	   SVT(after),
					 SVT(who->remote)};
		struct store_val ev[] = {SVI(now), SVT("weights"), SVT(rt->cfg->name),
					 SVT(detail.data)};
		struct store_op ops[] = {
			{STORE_OVERRIDE_UPSERT, ov, (int)ARRAY_SIZE(ov)},
			{STORE_AUDIT_INSERT, av, (int)ARRAY_SIZE(av)},
			{STORE_EVENT_INSERT, ev, (int)ARRAY_SIZE(ev)},
		};

		if ((r = commit(e, ops, (int)ARRAY_SIZE(ops), cause)) != 0)
			goto out;
	}
	/* An operator's change restarts the guard's window of each target it
	 * moves: failures from before it do not overrule it. */
	for (j = 0; j < rt->cfg->ntargets && rt->canary != NULL; j++)
		if (weights[j] != rt->weights[j] && strcmp(who->actor, "canary_guard") != 0)
			canary_reset(&rt->canary[j]);
	memcpy(rt->weights, weights, (size_t)rt->cfg->ntargets * sizeof *weights);
	log_info("control", "route %s weights: %s", rt->cfg->name, detail.data);
out:
	buf_free(&detail);
	free(before);
	free(after);
	return r;
}

static const char *const force_names[] = {
	[BREAKER_FORCE_AUTO] = "auto",
	[BREAKER_FORCE_OPEN] = "forced_open",
	[BREAKER_FORCE_CLOSED] = "forced_closed",
};

int
control_breaker_force(struct engine *e, int backend, enum breaker_force f, const char *reason,
		      const struct control_who *who, char **cause)
{
	struct backend_rt *b = &e->backends[backend];
	char before[64], after[512], value[64], target[160];
	int64_t now = clock_wall_ms();
	int r;

	if ((unsigned)f >= ARRAY_SIZE(force_names)) {
		*cause = xasprintf("state: must be forced_open, forced_closed or auto");
		r = CONTROL_E_INVALID;
		goto out;
	}
	if ((r = reason_check(reason, 0, cause)) != 0)
		goto out;
	snprintf(before, sizeof before, "{\"state\":\"%s\"}",
		 breaker_state_name(breaker_state(&b->breaker, clock_mono_ms())));
	/* A due OPEN -> HALF_OPEN just taken gets its own event. */
	engine_breaker_events(e, b);
	{
		cJSON *o = cJSON_CreateObject();
		char *s;

		cJSON_AddStringToObject(o, "state",
					f == BREAKER_FORCE_AUTO ? "closed" : force_names[f]);
		cJSON_AddStringToObject(o, "override", force_names[f]);
		if (reason && *reason)
			cJSON_AddStringToObject(o, "reason", reason);
		else
			cJSON_AddNullToObject(o, "reason");
		s = cJSON_PrintUnformatted(o);
		snprintf(after, sizeof after, "%s", s);
		free(s);
		cJSON_Delete(o);
	}
	snprintf(value, sizeof value, "{\"state\":\"%s\"}", force_names[f]);
	snprintf(target, sizeof target, "backend:%s", b->cfg->name);
	{
		struct store_val ov[] = {SVT("breaker"),  SVT(b->cfg->name), SVT(value),
					 SVT(who->actor), SVT(reason),	     SVN,
					 SVI(now)};
		struct store_val av[] = {SVI(now),	  SVT(who->actor), SVT("breaker.force"),
					 SVT(target),	  SVT(before),	   SVT(after),
					 SVT(who->remote)};
		int del = f == BREAKER_FORCE_AUTO;
		struct store_op ops[] = {
			{del ? STORE_OVERRIDE_DELETE : STORE_OVERRIDE_UPSERT, ov,
			 del ? 2 : (int)ARRAY_SIZE(ov)},
			{STORE_AUDIT_INSERT, av, (int)ARRAY_SIZE(av)},
		};

		if ((r = commit(e, ops, (int)ARRAY_SIZE(ops), cause)) != 0)
			goto out;
	}
	breaker_force(&b->breaker, clock_mono_ms(), f, reason);
	engine_breaker_events(e, b);
	log_info("control", "backend %s breaker: %s by %s", b->cfg->name, force_names[f],
		 who->actor);
out:
	return r;
}

/* ---- restore at start ---- */

struct restore {
	struct engine *e;
	int64_t now;
	int applied, dropped, skipped;
};

static void
restore_drop(struct restore *rs, const char *kind, const char *subject)
{
	struct store_val v[] = {SVT(kind), SVT(subject)};

	store_put(rs->e->store, STORE_OVERRIDE_DELETE, v, (int)ARRAY_SIZE(v));
	rs->dropped++;
}

static int
restore_level(struct restore *rs, const char *subject, const cJSON *value, const char *actor,
	      const char *reason, int64_t until)
{
	struct engine *e = rs->e;
	const cJSON *lv = cJSON_GetObjectItemCaseSensitive(value, "level");
	int route = engine_route_index(e, subject);
	char detail[200];

	if (route < 0 || !cJSON_IsNumber(lv) || lv->valuedouble != (int)lv->valuedouble ||
	    lv->valueint < 0 || lv->valueint > CONTROL_LEVEL_MAX)
		return -EINVAL;
	if (until > 0 && until <= rs->now) {
		snprintf(detail, sizeof detail,
			 "forced level %d expired (ttl) while fuseboxd was stopped -> auto %d",
			 lv->valueint, e->routes[route].auto_level);
		log_info("control", "route %s: %s", subject, detail);
		engine_event(e, "level", subject, detail);
		restore_drop(rs, "level", subject);
		return 0;
	}
	{
		struct control_level set = {lv->valueint, actor, reason, until > 0 ? until : 0,
					    NULL};

		control_level_set(e, route, &set, CONTROL_EVENT_NONE, rs->now);
	}
	log_info("control", "route %s: restored forced L%d (by %s: %s)", subject, lv->valueint,
		 actor ? actor : "?", reason ? reason : "");
	rs->applied++;
	return 0;
}

static int
restore_weights(struct restore *rs, const char *subject, const cJSON *value)
{
	struct engine *e = rs->e;
	int route = engine_route_index(e, subject), j, positive = 0, *w;
	struct route_rt *rt;
	char *shown;

	if (route < 0 || !cJSON_IsObject(value))
		return -EINVAL;
	rt = &e->routes[route];
	w = xcalloc((size_t)MAX(rt->cfg->ntargets, 1), sizeof *w);
	for (j = 0; j < rt->cfg->ntargets; j++) {
		const char *name = rt->cfg->targets[j].backend;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(value, name);

		w[j] = rt->weights[j];
		if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 1e9 &&
		    v->valuedouble == (int)v->valuedouble)
			w[j] = v->valueint;
		positive |= w[j] > 0;
	}
	if (positive)
		memcpy(rt->weights, w, (size_t)rt->cfg->ntargets * sizeof *w);
	free(w);
	if (!positive)
		return -EINVAL;
	shown = weights_json(rt, rt->weights);
	log_info("control", "route %s: restored weights %s", subject, shown);
	free(shown);
	rs->applied++;
	return 0;
}

static int
restore_breaker(struct restore *rs, const char *subject, const cJSON *value, const char *reason)
{
	struct engine *e = rs->e;
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(value, "state");
	enum breaker_force f;
	int i;

	if (!cJSON_IsString(st))
		return -EINVAL;
	if (strcmp(st->valuestring, "forced_open") == 0)
		f = BREAKER_FORCE_OPEN;
	else if (strcmp(st->valuestring, "forced_closed") == 0)
		f = BREAKER_FORCE_CLOSED;
	else
		return -EINVAL;
	for (i = 0; i < e->nbackends; i++)
		if (strcmp(e->backends[i].cfg->name, subject) == 0)
			break;
	if (i == e->nbackends)
		return -EINVAL;
	breaker_force(&e->backends[i].breaker, clock_mono_ms(), f, reason);
	log_info("control", "backend %s: restored breaker %s", subject, st->valuestring);
	rs->applied++;
	return 0;
}

static int
restore_row(void *arg, sqlite3_stmt *row)
{
	struct restore *rs = arg;
	const char *kind = (const char *)sqlite3_column_text(row, 0);
	const char *subject = (const char *)sqlite3_column_text(row, 1);
	const char *text = (const char *)sqlite3_column_text(row, 2);
	const char *actor = (const char *)sqlite3_column_text(row, 3);
	const char *reason = (const char *)sqlite3_column_text(row, 4);
	int64_t until =
		sqlite3_column_type(row, 5) == SQLITE_NULL ? 0 : sqlite3_column_int64(row, 5);
	cJSON *value = text ? cJSON_Parse(text) : NULL;
	int r = -EINVAL;

	if (kind == NULL || subject == NULL || value == NULL)
		r = -EINVAL;
	else if (strcmp(kind, "level") == 0)
		r = restore_level(rs, subject, value, actor, reason, until);
	else if (strcmp(kind, "weights") == 0)
		r = restore_weights(rs, subject, value);
	else if (strcmp(kind, "breaker") == 0)
		r = restore_breaker(rs, subject, value, reason);
	if (r != 0) {
		log_warn("control",
			 "override %s/%s (value %s) does not fit the configuration: not applied, "
			 "row kept",
			 kind ? kind : "?", subject ? subject : "?", text ? text : "null");
		rs->skipped++;
	}
	cJSON_Delete(value);
	return 0;
}

int
control_restore(struct engine *e, char **cause)
{
	struct store_reader *own = NULL, *rd = e->reader;
	struct restore rs = {.e = e, .now = clock_wall_ms()};
	char *why = NULL;
	int r = 0;

	if (rd == NULL) {
		if (store_reader_open(e->cfg->database, &own, &why) != 0) {
			r = CONTROL_E_STORE;
			goto out;
		}
		rd = own;
	}
	if (store_reader_run(rd, STORE_Q_OVERRIDES, NULL, 0, restore_row, &rs, &why) != 0) {
		r = CONTROL_E_STORE;
		goto out;
	}
	if (rs.applied || rs.dropped || rs.skipped)
		log_info("control", "overrides restored: %d applied, %d expired, %d skipped",
			 rs.applied, rs.dropped, rs.skipped);
out:
	if (r != 0)
		*cause = xasprintf("cannot restore operator overrides: %s",
				   why ? why : "store error");
	free(why);
	store_reader_close(own);
	return r;
}
