/*
 * review_q: the human review queue.
 *
 * Design. The reviews table is the queue; nothing about an item lives only
 * in memory. An item is inserted (state pending) and committed
 * (engine_commit_later(): the loop does not wait for the fsync, the caller
 * does) before the caller is told "review": "pending", and every later
 * change goes through review_q_set_state(), the one setter, which commits
 * the UPDATE together with the rows that record why (audit for operators,
 * events for the overflow policy) before anything in memory moves.
 *
 * In memory: per route, the open items (pending and claimed) by priority,
 * loaded at start with one GROUP BY and moved by the setter; the overdue
 * count of the last tick; whether the "over capacity, nothing to do" event
 * was already written in this episode. The overflow policy reads these
 * counts, so deciding whether to act costs no query.
 *
 * Overdue. The 1 Hz tick asks for open items whose due_at lies in
 * (watermark, now] and writes one review_overdue event each, with at = now;
 * the watermark then becomes now. At start the watermark is the time of the
 * newest review_overdue event, so an item that passed its SLA while the
 * daemon was down is reported once after the restart and none twice (bar
 * the last un-committed batch of a crash, and events pruned by retention).
 *
 * Thread: the engine thread, except review_q_load() (daemon_create, before
 * the loop starts). The pure policy (names, transitions, counts, the
 * overflow decision) is core/review.c.
 */
#include "review_q.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "control.h"
#include "engine.h"
#include "log.h"
#include "obs.h"
#include "util.h"
#include "jsonutil.h"

#define REVIEW_EXTRA_OPS_MAX 7
#define REVIEW_ACCEPT_BATCH  256 /* auto-accepts per overflow pass (one commit) */
#define REVIEW_UPDATE_VALS   7	 /* values of STORE_REVIEW_UPDATE */

struct review_q {
	char **names; /* route names (copied: a reload frees the config) */
	int nroutes;
	struct review_counts *counts; /* one per route */
	int *over_noted;	      /* the KEEP event was written in this over-capacity episode */
	int64_t overdue_mark;	      /* due_at up to which overdue items were reported */
};

/* ---- items --------------------------------------------------------------- */

void
review_item_clear(struct review_item *it)
{
	if (it == NULL)
		return;
	free(it->route);
	free(it->request_id);
	free(it->reason);
	free(it->input);
	free(it->raw_output);
	free(it->result);
	free(it->alt_result);
	free(it->reviewer);
	free(it->verdict);
	free(it->corrected_result);
	free(it->note);
	free(it->callback_url);
	memset(it, 0, sizeof *it);
}

static char *
column_dup(sqlite3_stmt *row, int col)
{
	const unsigned char *t = sqlite3_column_text(row, col);

	return t != NULL ? xstrdup((const char *)t) : NULL;
}

int
review_item_from_row(sqlite3_stmt *row, struct review_item *it)
{
	int64_t prio = sqlite3_column_int64(row, 4);
	const unsigned char *state = sqlite3_column_text(row, 6);
	enum review_state st;
	int r = 0;

	memset(it, 0, sizeof *it);
	if (review_state_parse((const char *)state, &st) != 0 || prio < 0 ||
	    prio >= PRIORITY__COUNT) {
		r = -EINVAL;
		goto out;
	}
	it->id = sqlite3_column_int64(row, 0);
	it->route = column_dup(row, 1);
	it->request_id = column_dup(row, 2);
	it->call_id = sqlite3_column_int64(row, 3);
	it->priority = (enum priority)prio;
	it->reason = column_dup(row, 5);
	it->state = st;
	it->created_at = sqlite3_column_int64(row, 7);
	it->due_at = sqlite3_column_int64(row, 8);
	it->input = column_dup(row, 9);
	it->raw_output = column_dup(row, 10);
	it->result = column_dup(row, 11);
	it->has_confidence = sqlite3_column_type(row, 12) != SQLITE_NULL;
	it->confidence = sqlite3_column_double(row, 12);
	it->alt_result = column_dup(row, 13);
	it->reviewer = column_dup(row, 14);
	it->verdict = column_dup(row, 15);
	it->corrected_result = column_dup(row, 16);
	it->note = column_dup(row, 17);
	it->decided_at = sqlite3_column_int64(row, 18);
	it->callback_url = column_dup(row, 19);
out:
	return r;
}

struct item_read {
	struct review_item *it;
	int found;
	int bad;
};

static int
item_row(void *arg, sqlite3_stmt *row)
{
	struct item_read *ir = arg;

	if (review_item_from_row(row, ir->it) != 0)
		ir->bad = 1;
	else
		ir->found = 1;
	return 1;
}

int
review_q_get(struct engine *e, int64_t id, struct review_item *out, char **cause)
{
	struct store_val v[] = {SVI(id)};
	struct item_read ir = {out, 0, 0};
	int r;

	memset(out, 0, sizeof *out);
	r = store_reader_run(e->reader, STORE_Q_REVIEW_GET, v, 1, item_row, &ir, cause);
	if (r != 0) {
		r = REVIEW_Q_E_STORE;
		goto out;
	}
	if (ir.bad) {
		*cause =
			xasprintf("review %lld: unreadable row (state or priority)", (long long)id);
		r = REVIEW_Q_E_STORE;
		goto out;
	}
	if (!ir.found)
		r = REVIEW_Q_E_NOT_FOUND;
out:
	return r;
}

cJSON *
review_json_value(const char *text)
{
	cJSON *v;

	if (text == NULL)
		return cJSON_CreateNull();
	v = cJSON_Parse(text);
	return v != NULL ? v : cJSON_CreateString(text);
}

cJSON *
review_item_json(const struct review_item *it, int64_t now_wall_ms)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "id", (double)it->id);
	json_add_string(o, "route", it->route);
	json_add_string(o, "request_id", it->request_id);
	cJSON_AddStringToObject(o, "priority", priority_name(it->priority));
	json_add_string(o, "reason", it->reason);
	cJSON_AddStringToObject(o, "state", review_state_name(it->state));
	json_add_time(o, "created_at", it->created_at);
	json_add_time(o, "due_at", it->due_at);
	cJSON_AddBoolToObject(o, "overdue", review_is_overdue(it->state, it->due_at, now_wall_ms));
	json_add_string(o, "input", it->input);
	json_add_string(o, "raw_output", it->raw_output);
	cJSON_AddItemToObject(o, "result", review_json_value(it->result));
	if (it->has_confidence)
		cJSON_AddNumberToObject(o, "confidence", it->confidence);
	else
		cJSON_AddNullToObject(o, "confidence");
	cJSON_AddItemToObject(o, "alt_result", review_json_value(it->alt_result));
	json_add_string(o, "reviewer", it->reviewer);
	json_add_time(o, "decision_at", it->decided_at);
	json_add_string(o, "verdict", it->verdict);
	cJSON_AddItemToObject(o, "corrected_result", review_json_value(it->corrected_result));
	json_add_string(o, "note", it->note);
	return o;
}

/* ---- the queue ----------------------------------------------------------- */

struct review_q *
review_q_new(const struct config *cfg)
{
	struct review_q *q = xcalloc(1, sizeof *q);
	int i;

	q->nroutes = cfg->nroutes;
	q->names = xcalloc((size_t)MAX(cfg->nroutes, 1), sizeof *q->names);
	for (i = 0; i < cfg->nroutes; i++)
		q->names[i] = xstrdup(cfg->routes[i].name);
	q->counts = xcalloc((size_t)MAX(cfg->nroutes, 1), sizeof *q->counts);
	q->over_noted = xcalloc((size_t)MAX(cfg->nroutes, 1), sizeof *q->over_noted);
	return q;
}

void
review_q_free(struct review_q *q)
{
	int i;

	if (q == NULL)
		return;
	for (i = 0; i < q->nroutes; i++)
		free(q->names[i]);
	free(q->names);
	free(q->counts);
	free(q->over_noted);
	free(q);
}

const struct review_counts *
review_q_route_counts(const struct review_q *q, int route)
{
	if (q == NULL || route < 0 || route >= q->nroutes)
		return NULL;
	return &q->counts[route];
}

static int
route_of(const struct review_q *q, const char *name)
{
	int i;

	for (i = 0; name != NULL && i < q->nroutes; i++)
		if (strcmp(q->names[i], name) == 0)
			return i;
	return -1;
}

int
review_q_open(const struct engine *e, int route)
{
	const struct review_counts *c = review_q_route_counts(e->review_q, route);

	return c != NULL ? c->open : 0;
}

void
review_q_counts(const struct engine *e, int route, struct review_counts *out)
{
	const struct review_counts *c = review_q_route_counts(e->review_q, route);

	if (c != NULL)
		*out = *c;
	else
		memset(out, 0, sizeof *out);
}

/* The reviews row update of a change: its values into v, the op into *op. */
static void
review_change_op(const struct review_item *it, const struct review_change *ch,
		 struct store_val v[REVIEW_UPDATE_VALS], struct store_op *op)
{
	v[0] = SVT(review_state_name(ch->to));
	v[1] = SVT(ch->reviewer);
	v[2] = SVT(ch->verdict);
	v[3] = SVT(ch->corrected_result);
	v[4] = SVT(ch->note);
	v[5] = ch->decided_at > 0 ? SVI(ch->decided_at) : SVN;
	v[6] = SVI(it->id);
	*op = (struct store_op){STORE_REVIEW_UPDATE, v, REVIEW_UPDATE_VALS};
}

/* it and its route's counts once the change is committed. */
static void
review_change_apply(struct review_q *q, struct review_item *it, const struct review_change *ch)
{
	enum review_state from = it->state;
	int route;

	route = route_of(q, it->route);
	if (route >= 0)
		review_counts_move(&q->counts[route], it->priority, from, ch->to);
	it->state = ch->to;
	free(it->reviewer);
	free(it->verdict);
	free(it->corrected_result);
	free(it->note);
	it->reviewer = ch->reviewer ? xstrdup(ch->reviewer) : NULL;
	it->verdict = ch->verdict ? xstrdup(ch->verdict) : NULL;
	it->corrected_result = ch->corrected_result ? xstrdup(ch->corrected_result) : NULL;
	it->note = ch->note ? xstrdup(ch->note) : NULL;
	it->decided_at = ch->decided_at;
	log_ctx(LOG_LEVEL_INFO, "review", &(struct logline_ctx){.route = it->route},
		"%lld (%s): %s -> %s (%s)", (long long)it->id, it->route ? it->route : "?",
		review_state_name(from), review_state_name(ch->to), ch->why ? ch->why : "");
}

int
review_q_set_state(struct review_q *q, struct store *st, struct review_item *it,
		   const struct review_change *ch, const struct store_op *extra, int nextra,
		   char **cause)
{
	struct store_op ops[2 + REVIEW_EXTRA_OPS_MAX];
	struct store_val v[REVIEW_UPDATE_VALS], ev[4];
	char detail[256];
	int i, r = 0;

	if (it->state == ch->to)
		goto out;
	if (nextra < 0 || nextra > REVIEW_EXTRA_OPS_MAX || review_state_name(ch->to) == NULL) {
		*cause = xasprintf("review %lld: bad change", (long long)it->id);
		r = -EINVAL;
		goto out;
	}
	review_change_op(it, ch, v, &ops[0]);
	for (i = 0; i < nextra; i++)
		ops[1 + i] = extra[i];
	/* A claim or a decision is an event too ("review"), in the same commit. */
	snprintf(detail, sizeof detail, "review %lld: %s -> %s by %s%s%s", (long long)it->id,
		 review_state_name(it->state), review_state_name(ch->to),
		 ch->reviewer ? ch->reviewer : "?", ch->note ? ": " : "", ch->note ? ch->note : "");
	ev[0] = SVI(ch->decided_at > 0 ? ch->decided_at : clock_wall_ms());
	ev[1] = SVT("review");
	ev[2] = SVT(it->route);
	ev[3] = SVT(detail);
	ops[1 + nextra] = (struct store_op){STORE_EVENT_INSERT, ev, 4};
	if (store_commit_now(st, ops, 2 + nextra, NULL, cause) != 0) {
		r = REVIEW_Q_E_STORE;
		goto out;
	}
	review_change_apply(q, it, ch);
out:
	return r;
}

/* ---- overflow ------------------------------------------------------------ */

static int
forced_by_us(const struct route_rt *rt)
{
	return rt->forced_level >= 0 && rt->forced_actor != NULL &&
	       strcmp(rt->forced_actor, REVIEW_OVERFLOW_ACTOR) == 0;
}

/* An events row at now (async, like every log row). */
static void
review_event(struct engine *e, int64_t now, const char *kind, const char *subject,
	     const char *detail)
{
	struct store_val v[] = {SVI(now), SVT(kind), SVT(subject), SVT(detail)};

	store_put(e->store, STORE_EVENT_INSERT, v, (int)ARRAY_SIZE(v));
}

/*
 * Force route rt to level 2 as review_overflow (level < 0: release),
 * through control_level_set() like every forced level. The force is not
 * persisted in overrides: review_q_load() re-derives it from the counts
 * at start.
 */
static void
overflow_force_level(struct engine *e, int route, int level, int open, int capacity, int64_t now)
{
	struct route_rt *rt = &e->routes[route];
	const char *name = rt->cfg->name;
	char reason[128], detail[256], level_detail[256];
	int old = engine_route_level(e, route);
	struct control_level lv = {.level = -1, .detail = level_detail};

	if (level >= 0) {
		snprintf(reason, sizeof reason, "review queue over capacity (%d > %d)", open,
			 capacity);
		snprintf(level_detail, sizeof level_detail, "L%d -> forced L%d by %s: %s", old,
			 level, REVIEW_OVERFLOW_ACTOR, reason);
		lv = (struct control_level){level, REVIEW_OVERFLOW_ACTOR, reason, 0, level_detail};
		snprintf(detail, sizeof detail,
			 "queue over capacity (%d > %d): route forced to L%d", open, capacity,
			 level);
	} else {
		if (rt->cfg->review.overflow != OVERFLOW_FORCE_L2)
			snprintf(reason, sizeof reason,
				 "review overflow policy is no longer force_l2");
		else
			snprintf(reason, sizeof reason, "review queue below capacity (%d < %d)",
				 open, capacity);
		snprintf(level_detail, sizeof level_detail,
			 "forced L%d -> auto L%d (released by %s: %s)", old, rt->auto_level,
			 REVIEW_OVERFLOW_ACTOR, reason);
		snprintf(detail, sizeof detail, "%s: forced level released", reason);
	}
	control_level_set(e, route, &lv, CONTROL_EVENT_WRITE, now);
	review_event(e, now, "review_overflow", name, detail);
	log_warn("review", "route %s: %s", name, detail);
}

struct id_list {
	int64_t ids[REVIEW_ACCEPT_BATCH];
	int n;
};

static int
id_row(void *arg, sqlite3_stmt *row)
{
	struct id_list *l = arg;

	if (l->n < (int)ARRAY_SIZE(l->ids))
		l->ids[l->n++] = sqlite3_column_int64(row, 0);
	return 0;
}

/*
 * Auto-approve up to n low-priority pending items of route, oldest first:
 * every approval and its events row in one commit (one fsync on the engine
 * thread for the pass, not one per item: a pass of 256 took the loop
 * ~256 fsyncs), then the items and counts change.
 */
static int
overflow_accept_low(struct engine *e, int route, int n, int open, int capacity, int64_t now,
		    char **cause)
{
	const char *name = e->routes[route].cfg->name;
	struct store_val v[] = {SVT(name), SVI(PRIORITY_LOW), SVI(MIN(n, REVIEW_ACCEPT_BATCH))};
	struct id_list l = {.n = 0};
	struct accept {
		struct review_item it;
		struct store_val rv[REVIEW_UPDATE_VALS];
		struct store_val ev[4];
		char detail[256];
	} *acc = NULL;
	struct store_op *ops = NULL;
	struct review_change ch;
	char note[128];
	int i, r;

	r = store_reader_run(e->reader, STORE_Q_REVIEW_OVERFLOW, v, (int)ARRAY_SIZE(v), id_row, &l,
			     cause);
	if (r != 0) {
		r = REVIEW_Q_E_STORE;
		goto out;
	}
	if (l.n == 0)
		goto out;
	snprintf(note, sizeof note, "auto-accepted by %s: review queue over capacity (%d > %d)",
		 REVIEW_OVERFLOW_ACTOR, open, capacity);
	ch = (struct review_change){
		.to = REVIEW_APPROVED,
		.reviewer = REVIEW_OVERFLOW_ACTOR,
		.verdict = review_action_name(REVIEW_APPROVE),
		.note = note,
		.decided_at = now,
		.why = "overflow auto_accept_low",
	};
	acc = xcalloc((size_t)l.n, sizeof *acc);
	ops = xcalloc((size_t)l.n * 2, sizeof *ops);
	for (i = 0; i < l.n; i++) {
		struct accept *a = &acc[i];

		if ((r = review_q_get(e, l.ids[i], &a->it, cause)) != 0)
			goto out;
		snprintf(a->detail, sizeof a->detail,
			 "queue over capacity (%d > %d): review %lld (low) auto-accepted by %s",
			 open - i, capacity, (long long)a->it.id, REVIEW_OVERFLOW_ACTOR);
		review_change_op(&a->it, &ch, a->rv, &ops[2 * i]);
		a->ev[0] = SVI(now);
		a->ev[1] = SVT("review_overflow");
		a->ev[2] = SVT(name);
		a->ev[3] = SVT(a->detail);
		ops[2 * i + 1] = (struct store_op){STORE_EVENT_INSERT, a->ev, 4};
	}
	if (store_commit_now(e->store, ops, 2 * l.n, NULL, cause) != 0) {
		r = REVIEW_Q_E_STORE;
		goto out;
	}
	for (i = 0; i < l.n; i++) {
		review_change_apply(e->review_q, &acc[i].it, &ch);
		log_warn("review", "route %s: %s", name, acc[i].detail);
	}
out:
	for (i = 0; acc != NULL && i < l.n; i++)
		review_item_clear(&acc[i].it);
	free(acc);
	free(ops);
	return r;
}

int
review_q_overflow(struct engine *e, int route, int64_t now_wall_ms, char **cause)
{
	struct review_q *q = e->review_q;
	struct review_overflow_in in;
	struct review_overflow_plan plan;
	struct route_rt *rt;
	struct review_counts *c;
	char detail[256];
	int pass, r = 0;

	if (q == NULL || route < 0 || route >= q->nroutes || route >= e->nroutes)
		goto out;
	rt = &e->routes[route];
	c = &q->counts[route];
	/*
	 * Up to three passes: a released force (policy changed) is followed
	 * by the current policy, and accepting every low item may still
	 * leave the queue over capacity (KEEP).
	 */
	for (pass = 0; pass < 3; pass++) {
		in = (struct review_overflow_in){
			.policy = rt->cfg->review.overflow,
			.capacity = rt->cfg->review.capacity,
			.open = c->open,
			.low_pending = c->pending[PRIORITY_LOW],
			.forced_by_us = forced_by_us(rt),
			.forced_by_op = rt->forced_level >= 0 && !forced_by_us(rt),
		};
		review_overflow_plan(&in, &plan);
		if (in.open <= in.capacity)
			q->over_noted[route] = 0;
		switch (plan.act) {
		case REVIEW_OVERFLOW_NONE:
			goto out;
		case REVIEW_OVERFLOW_ACCEPT_LOW:
			r = overflow_accept_low(e, route, plan.accept, in.open, in.capacity,
						now_wall_ms, cause);
			if (r != 0)
				goto out;
			break;
		case REVIEW_OVERFLOW_KEEP:
			if (q->over_noted[route])
				goto out;
			q->over_noted[route] = 1;
			if (in.policy == OVERFLOW_FORCE_L2)
				snprintf(detail, sizeof detail,
					 "queue over capacity (%d > %d): the forced level L%d "
					 "set by %s stays; every item kept",
					 in.open, in.capacity, rt->forced_level,
					 rt->forced_actor ? rt->forced_actor : "?");
			else
				snprintf(detail, sizeof detail,
					 "queue over capacity (%d > %d): no low-priority pending "
					 "item to auto-accept; every item kept",
					 in.open, in.capacity);
			review_event(e, now_wall_ms, "review_overflow", rt->cfg->name, detail);
			log_warn("review", "route %s: %s", rt->cfg->name, detail);
			goto out;
		case REVIEW_OVERFLOW_FORCE_L2:
			overflow_force_level(e, route, 2, in.open, in.capacity, now_wall_ms);
			goto out;
		case REVIEW_OVERFLOW_RELEASE_L2:
			/* then the next pass applies the route's current policy */
			overflow_force_level(e, route, -1, in.open, in.capacity, now_wall_ms);
			break;
		}
	}
out:
	return r;
}

/* ---- enqueue, tick, load ------------------------------------------------- */

/* An enqueue whose row is being committed. */
struct review_enqueue {
	review_q_done_fn fn;
	void *arg;
	char *route;
	char *reason;
	char *request_id;
	enum priority prio;
	int64_t now_wall_ms;
};

static void
review_enqueue_free(struct review_enqueue *q)
{
	free(q->route);
	free(q->reason);
	free(q->request_id);
	free(q);
}

/* The row is committed (or not): count it, tell the caller, run the overflow policy. */
static void
review_q_enqueued(struct engine *e, void *arg, int rc, int64_t rowid, const char *cause)
{
	struct review_enqueue *q = arg;
	/* A route removed by a reload meanwhile: the item is stored, not counted. */
	int route = e->review_q ? route_of(e->review_q, q->route) : -1;
	char *ocause = NULL;

	if (rc != 0) {
		if (q->fn)
			q->fn(e, q->arg, REVIEW_Q_E_STORE, 0, cause);
		else
			log_ctx(LOG_LEVEL_ERROR, "review",
				&(struct logline_ctx){.request_id = q->request_id,
						      .route = q->route},
				"%s %s: review enqueue failed: %s", q->route,
				q->request_id ? q->request_id : "-", cause ? cause : "?");
		goto out;
	}
	if (route >= 0)
		review_counts_move(&e->review_q->counts[route], q->prio, REVIEW_STATE__COUNT,
				   REVIEW_PENDING);
	log_ctx(LOG_LEVEL_INFO, "review",
		&(struct logline_ctx){.request_id = q->request_id, .route = q->route},
		"%lld (%s): new -> pending (%s, %s, request %s)", (long long)rowid, q->route,
		q->reason, priority_name(q->prio), q->request_id ? q->request_id : "-");
	if (q->fn)
		q->fn(e, q->arg, 0, rowid, NULL);
	/* The item is in; an overflow action that fails is logged, not returned. */
	if (route >= 0 && review_q_overflow(e, route, q->now_wall_ms, &ocause) != 0)
		log_error("review", "route %s: overflow policy: %s", q->route,
			  ocause ? ocause : "failed");
out:
	free(ocause);
	review_enqueue_free(q);
}

int
review_q_enqueue(struct engine *e, const struct review_new *n, int64_t now_wall_ms,
		 review_q_done_fn fn, void *arg, char **cause)
{
	const struct route_cfg *rc = n->rc;
	struct review_enqueue *q;
	char *res = NULL, *alt = NULL;
	int64_t due;
	int r = 0;

	if (e->review_q == NULL || rc == NULL || n->reason == NULL) {
		*cause = xasprintf("review enqueue: no queue, route or reason");
		return -EINVAL;
	}
	q = xcalloc(1, sizeof *q);
	q->fn = fn;
	q->arg = arg;
	q->route = xstrdup(rc->name);
	q->reason = xstrdup(n->reason);
	q->request_id = n->request_id ? xstrdup(n->request_id) : NULL;
	q->prio = review_priority_for(&rc->review, n->reason);
	q->now_wall_ms = now_wall_ms;
	due = review_due_at(&rc->review, q->prio, now_wall_ms);
	res = n->result ? cJSON_PrintUnformatted(n->result) : NULL;
	alt = n->alt_result ? cJSON_PrintUnformatted(n->alt_result) : NULL;
	{
		struct store_val v[] = {
			SVN,
			SVT(rc->name),
			SVT(n->request_id),
			n->call_id > 0 ? SVI(n->call_id) : SVN,
			SVI(q->prio),
			SVT(n->reason),
			SVT(review_state_name(REVIEW_PENDING)),
			SVI(now_wall_ms),
			SVI(due),
			SVT(n->input),
			SVT(n->raw_output),
			SVT(res),
			n->has_confidence ? SVR(n->confidence) : SVN,
			SVT(alt),
			SVT(n->callback_url),
		};
		struct store_op op = {STORE_REVIEW_INSERT, v, (int)ARRAY_SIZE(v)};

		r = engine_commit_later(e, &op, 1, review_q_enqueued, q);
	}
	if (r != 0) {
		*cause = xasprintf("review enqueue: the store refused the item (%d)", r);
		review_enqueue_free(q);
		r = REVIEW_Q_E_STORE;
	}
	free(res);
	free(alt);
	return r;
}

struct overdue_scan {
	struct engine *e;
	int64_t now;
	int *overdue; /* per route */
};

static int
overdue_row(void *arg, sqlite3_stmt *row)
{
	struct overdue_scan *s = arg;
	const unsigned char *route = sqlite3_column_text(row, 1);
	int64_t prio = sqlite3_column_int64(row, 2);
	const unsigned char *reason = sqlite3_column_text(row, 3);
	int64_t due = sqlite3_column_int64(row, 4);
	char detail[256], ts[40];

	time_format_rfc3339(due, ts, sizeof ts);
	snprintf(detail, sizeof detail, "review %lld (%s, %s) overdue: due %s",
		 (long long)sqlite3_column_int64(row, 0),
		 prio >= 0 && prio < PRIORITY__COUNT ? priority_name((enum priority)prio) : "?",
		 reason ? (const char *)reason : "-", ts);
	review_event(s->e, s->now, "review_overdue", route ? (const char *)route : "", detail);
	return 0;
}

static int
overdue_count_row(void *arg, sqlite3_stmt *row)
{
	struct overdue_scan *s = arg;
	int route = route_of(s->e->review_q, (const char *)sqlite3_column_text(row, 0));

	if (route >= 0)
		s->overdue[route] = (int)sqlite3_column_int64(row, 1);
	return 0;
}

/*
 * The queue's alerts (issue "review queue": overdue items and an overflowing
 * queue feed an alert): firing while the condition holds, resolved when it
 * ends, through obs's one alert lifecycle and delivery (rows, events,
 * webhook / Alertmanager, fusebox_alert_firing); an episode open before a
 * restart goes on.
 */
static void
review_alert(struct engine *e, int route, const char *rule, enum severity severity, int now_true,
	     double value, double threshold, int64_t now)
{
	char summary[160];
	struct obs_alert_spec sp = {
		.rule = rule,
		.route = route,
		.kind = "review",
		.window = "1m",
		.severity = severity,
		.threshold = threshold,
		.summary = summary,
	};

	if (strcmp(rule, "review_overdue") == 0) {
		sp.alertname = "fusebox_review_overdue";
		snprintf(summary, sizeof summary, "%g review items past their SLA", value);
	} else {
		sp.alertname = "fusebox_review_overflow";
		snprintf(summary, sizeof summary, "review queue over capacity (%g > %g)", value,
			 threshold);
	}
	obs_alert_set(e->obs, &sp, now_true, value, now);
}

void
review_q_tick(struct engine *e, int64_t now_wall_ms)
{
	struct review_q *q = e->review_q;
	struct overdue_scan s = {e, now_wall_ms, NULL};
	char *cause = NULL;
	int i, open = 0;

	if (q == NULL)
		return;
	for (i = 0; i < q->nroutes; i++)
		open += q->counts[i].open;
	s.overdue = xcalloc((size_t)MAX(q->nroutes, 1), sizeof *s.overdue);
	if (open > 0 && now_wall_ms > q->overdue_mark) {
		struct store_val v[] = {SVI(q->overdue_mark), SVI(now_wall_ms)};

		if (store_reader_run(e->reader, STORE_Q_REVIEW_NEWLY_OVERDUE, v, (int)ARRAY_SIZE(v),
				     overdue_row, &s, &cause) != 0)
			goto out;
		q->overdue_mark = now_wall_ms;
	}
	if (open > 0) {
		struct store_val v[] = {SVI(now_wall_ms)};

		if (store_reader_run(e->reader, STORE_Q_REVIEW_OVERDUE_BY_ROUTE, v, 1,
				     overdue_count_row, &s, &cause) != 0)
			goto out;
	}
	if (now_wall_ms > q->overdue_mark)
		q->overdue_mark = now_wall_ms;
	for (i = 0; i < q->nroutes; i++)
		q->counts[i].overdue = s.overdue[i];
	for (i = 0; i < q->nroutes && i < e->nroutes; i++) {
		if (review_q_overflow(e, i, now_wall_ms, &cause) != 0)
			goto out;
	}
	for (i = 0; i < q->nroutes && i < e->nroutes; i++) {
		struct review_counts *c = &q->counts[i];
		const struct review_cfg *rv = &e->routes[i].cfg->review;
		int route = engine_route_index(e, q->names[i]);

		if (route < 0)
			continue;
		review_alert(e, route, "review_overdue", SEVERITY_TICKET, c->overdue > 0,
			     c->overdue, 0, now_wall_ms);
		review_alert(e, route, "review_overflow", SEVERITY_PAGE, c->open > rv->capacity,
			     c->open, rv->capacity, now_wall_ms);
	}
out:
	if (cause != NULL)
		log_error("review", "tick: %s", cause);
	free(cause);
	free(s.overdue);
}

static int
count_row(void *arg, sqlite3_stmt *row)
{
	struct review_q *q = arg;
	int route = route_of(q, (const char *)sqlite3_column_text(row, 0));
	int64_t prio = sqlite3_column_int64(row, 1);
	enum review_state st;
	int64_t n = sqlite3_column_int64(row, 3);

	if (route < 0 || prio < 0 || prio >= PRIORITY__COUNT ||
	    review_state_parse((const char *)sqlite3_column_text(row, 2), &st) != 0)
		return 0;
	if (st == REVIEW_PENDING)
		q->counts[route].pending[prio] += (int)n;
	else
		q->counts[route].claimed[prio] += (int)n;
	q->counts[route].open += (int)n;
	return 0;
}

/* Count the open items of q's routes from the reviews table. */
static int
review_q_count(struct engine *e, struct review_q *q, char **cause)
{
	if (store_reader_run(e->reader, STORE_Q_REVIEW_OPEN_COUNTS, NULL, 0, count_row, q, cause) !=
	    0)
		return REVIEW_Q_E_STORE;
	return 0;
}

/* Install q as e's queue (the old one is freed) and apply every route's policy. */
static void
review_q_install(struct engine *e, struct review_q *q, int64_t now)
{
	char *cause = NULL;
	int i;

	review_q_free(e->review_q);
	e->review_q = q;
	for (i = 0; i < e->nroutes && i < q->nroutes; i++) {
		if (q->counts[i].open > 0)
			log_info("review", "route %s: %d open items", q->names[i],
				 q->counts[i].open);
		if (review_q_overflow(e, i, now, &cause) != 0) {
			log_error("review", "route %s: overflow policy: %s", q->names[i],
				  cause ? cause : "failed");
			free(cause);
			cause = NULL;
		}
	}
}

int
review_q_load(struct engine *e, char **cause)
{
	struct review_q *q = review_q_new(e->cfg);
	struct store_val v[] = {SVT("review_overdue")};
	int r;

	if ((r = review_q_count(e, q, cause)) != 0)
		goto out;
	q->overdue_mark = store_reader_run_int(e->reader, STORE_Q_EVENT_LAST_AT, v, 1, 0);
	review_q_install(e, q, clock_wall_ms());
	q = NULL;
out:
	review_q_free(q);
	return r;
}

void
review_q_reconfigure(struct engine *e, int64_t now_wall_ms)
{
	struct review_q *old = e->review_q, *q = review_q_new(e->cfg);
	char *cause = NULL;
	int i, j;

	if (old != NULL)
		q->overdue_mark = old->overdue_mark;
	if (review_q_count(e, q, &cause) != 0) {
		/* The counts move by name; a route that is new to this process starts at 0. */
		log_warn("review", "reload: recount failed (%s); counts carried over by route name",
			 cause ? cause : "?");
		memset(q->counts, 0, (size_t)q->nroutes * sizeof *q->counts);
		for (i = 0; old != NULL && i < q->nroutes; i++)
			if ((j = route_of(old, q->names[i])) >= 0)
				q->counts[i] = old->counts[j];
	}
	free(cause);
	review_q_install(e, q, now_wall_ms);
}
