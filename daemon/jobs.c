/*
 * jobs: the L3 queue.
 *
 * Memory holds unfinished jobs (being accepted, queued, running) in a
 * FIFO in accept order, at most JOBS_MEM_MAX queued ones (the rest wait in
 * the table, see below); finished jobs live only in the DB. Rows: an
 * accept is committed before its 202, "running" is written asynchronously
 * (a crash re-runs the job anyway), "done"/"failed" are committed before
 * the callback is sent. The commits that someone waits for go through
 * engine_commit_later(): the loop never waits for an fsync here.
 */
#include "jobs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "call.h"
#include "clock.h"
#include "engine.h"
#include "jobstate.h"
#include "log.h"
#include "notify.h"
#include "util.h"

/* The states are core/jobstate.h's; JOB_ACCEPTING (the row being committed) is never a row's. */

/* Who waits for an accept's commit: the first accept, then duplicates. */
struct job_waiter {
	jobs_accept_fn fn;
	void *arg;
	struct job_waiter *next;
};

struct job {
	struct job *next, *prev; /* jobs.head..tail */
	struct job *hnext;	 /* chain in jobs.buckets */
	struct jobs *owner;
	char *route; /* by name: a reload may move routes */
	char *request_id;
	char *body;
	enum job_state state;
	int tries;
	int64_t created_at;
	int64_t id;		    /* the row's id (0 while accepting) */
	struct job_waiter *waiters; /* JOB_ACCEPTING: in arrival order */
};

/*
 * Unfinished jobs are also hashed by request_id: every L3 accept and every
 * GET /v1/requests/{id} looks one up, and during an outage the queue holds
 * tens of thousands (a list scan per accept made accepting slow down as
 * the queue grew: 1,850 -> 460 per second over 30 s at 26,000 queued).
 */
#define JOBS_BUCKETS 16384

/*
 * Memory holds a window of the queue: at most mem_max queued jobs, the
 * oldest. An outage at full traffic accepts tens of thousands of jobs a
 * second, and each costs ~0.3 KB here; the rest wait in the jobs table
 * only (nspilled of them, all with ids above last_id) and are read back,
 * oldest first, as the window drains (at most JOBS_LOAD_MAX a tick). Every
 * unfinished job with an id <= last_id is in memory.
 */
#define JOBS_MEM_MAX  10000
#define JOBS_LOAD_MAX 256 /* rows read back per tick */

struct jobs {
	struct engine *e;
	struct job *buckets[JOBS_BUCKETS];
	struct job *head, *tail; /* unfinished jobs in memory, oldest first */
	int nqueued;
	int nrunning;
	int mem_max;
	int64_t last_id;
	int64_t nspilled;
	struct timer tick;
};

static void
job_free(struct job *jb)
{
	struct job_waiter *w;

	while ((w = jb->waiters) != NULL) {
		jb->waiters = w->next;
		free(w);
	}
	free(jb->route);
	free(jb->request_id);
	free(jb->body);
	free(jb);
}

static struct job **
job_bucket(struct jobs *j, const char *request_id)
{
	return &j->buckets[str_hash(STR_HASH_SEED, request_id) % JOBS_BUCKETS];
}

static struct job *
job_find(struct jobs *j, const char *request_id)
{
	struct job *jb;

	for (jb = *job_bucket(j, request_id); jb; jb = jb->hnext)
		if (strcmp(jb->request_id, request_id) == 0)
			return jb;
	return NULL;
}

static void
job_unlink(struct jobs *j, struct job *jb)
{
	struct job **pp;

	for (pp = job_bucket(j, jb->request_id); *pp; pp = &(*pp)->hnext) {
		if (*pp == jb) {
			*pp = jb->hnext;
			break;
		}
	}
	if (jb->prev)
		jb->prev->next = jb->next;
	else
		j->head = jb->next;
	if (jb->next)
		jb->next->prev = jb->prev;
	else
		j->tail = jb->prev;
	jb->next = jb->prev = NULL;
}

static void
job_append(struct jobs *j, struct job *jb)
{
	struct job **b = job_bucket(j, jb->request_id);

	jb->hnext = *b;
	*b = jb;
	jb->next = NULL;
	jb->prev = j->tail;
	if (j->tail)
		j->tail->next = jb;
	else
		j->head = jb;
	j->tail = jb;
}

/*
 * A job's state changes here, with the counts, and only as
 * job_state_next_ok() allows. Its row: "running" is written here,
 * asynchronously (a crash re-runs the job anyway); "done" and "failed"
 * were committed by job_done() before they get here.
 */
static void
job_set_state(struct jobs *j, struct job *jb, enum job_state to)
{
	struct store_val v[] = {SVT(job_state_name(to)), SVI(clock_wall_ms()), SVI(jb->tries), SVN,
				SVT(jb->request_id)};

	const struct logline_ctx ctx = {.request_id = jb->request_id, .route = jb->route};

	if (jb->state == to)
		return;
	if (!job_state_next_ok(jb->state, to)) {
		/* can't happen: a caller's bug, not a state to move into */
		log_ctx(LOG_LEVEL_ERROR, "jobs", &ctx, "%s: refused %s -> %s", jb->request_id,
			job_state_name(jb->state), job_state_name(to));
		return;
	}
	if (jb->state == JOB_QUEUED)
		j->nqueued--;
	if (jb->state == JOB_RUNNING)
		j->nrunning--;
	if (to == JOB_QUEUED)
		j->nqueued++;
	if (to == JOB_RUNNING)
		j->nrunning++;
	log_ctx(LOG_LEVEL_DEBUG, "jobs", &ctx, "%s: %s -> %s", jb->request_id,
		job_state_name(jb->state), job_state_name(to));
	jb->state = to;
	if (to == JOB_RUNNING)
		store_put(j->e->store, STORE_JOB_UPDATE, v, (int)ARRAY_SIZE(v));
}

/* A finished job whose result is being committed (it still counts as running). */
struct job_result {
	struct job *jb;
	enum job_state to;
	char *response;
};

/* The result is committed (or could not be): send the callback, forget the job. */
static void
job_recorded(struct engine *e, void *arg, int rc, int64_t rowid, const char *cause)
{
	struct job_result *jr = arg;
	struct job *jb = jr->jb;
	struct jobs *j = jb->owner;
	cJSON *body = cJSON_Parse(jb->body), *cb;

	if (rc != 0)
		log_error("jobs", "%s: cannot record the result: %s", jb->request_id,
			  cause ? cause : "?");
	job_set_state(j, jb, jr->to);
	cb = body ? cJSON_GetObjectItemCaseSensitive(body, "callback_url") : NULL;
	if (cJSON_IsString(cb) && e->notify) {
		cJSON *msg = cJSON_Parse(jr->response);
		char *out;

		if (msg) {
			cJSON_AddStringToObject(msg, "event", "result");
			out = cJSON_PrintUnformatted(msg);
			notify_post(e->notify, cb->valuestring, out, "job_result", 5);
			free(out);
			cJSON_Delete(msg);
		}
	}
	cJSON_Delete(body);
	free(jr->response);
	free(jr);
	job_unlink(j, jb);
	job_free(jb);
	(void)rowid;
}

/*
 * The job's call ended: commit its result (without stopping the loop for
 * the fsync), then the callback. GET shows "running" until the commit.
 */
static void
job_done(struct call *c, const struct call_answer *a, void *arg)
{
	struct job *jb = arg;
	struct jobs *j = jb->owner;
	struct job_result *jr = xcalloc(1, sizeof *jr);
	int r;

	jr->jb = jb;
	jr->to = a->http_status == 200 ? JOB_DONE : JOB_FAILED;
	jr->response = xstrdup(a->json);
	{
		struct store_val v[] = {SVT(job_state_name(jr->to)), SVI(clock_wall_ms()),
					SVI(jb->tries), SVT(jr->response), SVT(jb->request_id)};
		struct store_op op = {STORE_JOB_UPDATE, v, (int)ARRAY_SIZE(v)};

		r = engine_commit_later(j->e, &op, 1, job_recorded, jr);
	}
	if (r != 0)
		job_recorded(j->e, jr, r, 0, "the store refused the result");
	(void)c;
}

/*
 * Build the call request of a job from its stored body; its call is a
 * child of the caller's span when the job was accepted with a traceparent.
 */
static void
job_call_req(struct engine *e, const struct job *jb, int route, struct call_req *cr)
{
	cJSON *o = cJSON_Parse(jb->body);
	const cJSON *v;

	memset(cr, 0, sizeof *cr);
	cr->route = route;
	cr->request_id = xstrdup(jb->request_id);
	cr->allow_llm = 1;
	if (o == NULL)
		return;
	v = cJSON_GetObjectItemCaseSensitive(o, "input");
	if (cJSON_IsString(v))
		cr->input = xstrdup(v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(o, "messages");
	if (cJSON_IsArray(v))
		cr->messages = cJSON_Duplicate(v, 1);
	if (cr->input == NULL && cr->messages == NULL)
		cr->input = xstrdup("");
	v = cJSON_GetObjectItemCaseSensitive(o, "budget_ms");
	if (budget_caller_parse(NULL, v, &cr->caller_budget_ms, NULL) != 0)
		cr->caller_budget_ms = 0;
	v = cJSON_GetObjectItemCaseSensitive(o, "allow_llm");
	if (cJSON_IsBool(v))
		cr->allow_llm = cJSON_IsTrue(v);
	v = cJSON_GetObjectItemCaseSensitive(o, "callback_url");
	if (cJSON_IsString(v))
		cr->callback_url = xstrdup(v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(o, "metadata");
	if (v)
		cr->metadata = cJSON_Duplicate(v, 1);
	v = cJSON_GetObjectItemCaseSensitive(o, "traceparent");
	if (cJSON_IsString(v)) {
		const cJSON *ts = cJSON_GetObjectItemCaseSensitive(o, "tracestate");

		call_req_trace(e, cr, v->valuestring, cJSON_IsString(ts) ? ts->valuestring : NULL);
	}
	cJSON_Delete(o);
}

static int jobs_load(struct jobs *j, int n);

void
jobs_tick(struct jobs *j)
{
	struct engine *e = j->e;
	struct job *jb, *next;
	int i, started = 0, runnable = 0;

	/* Every route at L3 (an outage): nothing can start, and the queue
	 * may be long; do not walk it ten times a second for nothing. */
	for (i = 0; i < e->nroutes && !runnable; i++)
		runnable = engine_route_level(e, i) < 3;
	if (!runnable)
		return;
	/* A few rows a tick (the loop does not stall on a big read): the
	 * window loses at most JOBS_START_PER_TICK jobs a tick. */
	if (j->nspilled > 0 && j->nqueued < j->mem_max)
		jobs_load(j, MIN(j->mem_max - j->nqueued, JOBS_LOAD_MAX));
	if (j->nqueued == 0)
		return;
	for (jb = j->head; jb && started < JOBS_START_PER_TICK && j->nrunning < JOBS_MAX_RUNNING;
	     jb = next) {
		struct call_req cr;
		int route;

		next = jb->next;
		if (jb->state != JOB_QUEUED || e->stopping)
			continue;
		route = engine_route_index(e, jb->route);
		if (route < 0 || engine_route_level(e, route) >= 3)
			continue; /* a route gone by reload waits for one that brings it back */
		jb->tries++;
		job_set_state(j, jb, JOB_RUNNING);
		job_call_req(e, jb, route, &cr);
		started++;
		call_start(e, &cr, job_done, jb);
	}
}

static void
tick_fire(struct timer *t, void *arg)
{
	struct jobs *j = arg;

	jobs_tick(j);
	engine_timer_arm(j->e, &j->tick, clock_mono_us() + JOBS_TICK_MS * 1000);
}

struct load_ctx {
	struct jobs *j;
	int seen;
	int loaded;
	int requeued;
};

static int
load_row(void *arg, sqlite3_stmt *row)
{
	struct load_ctx *lc = arg;
	struct jobs *j = lc->j;
	int64_t id = sqlite3_column_int64(row, 0);
	const char *rid = (const char *)sqlite3_column_text(row, 1);
	const char *route = (const char *)sqlite3_column_text(row, 2);
	const char *state = (const char *)sqlite3_column_text(row, 3);
	const char *body = (const char *)sqlite3_column_text(row, 4);
	struct job *jb;

	lc->seen++;
	if (id > j->last_id)
		j->last_id = id;
	/* An accept whose commit is done but not yet reported: it stays. */
	if (rid == NULL || route == NULL || state == NULL || job_find(j, rid) != NULL)
		return 0;
	if (engine_route_index(j->e, route) < 0)
		log_warn("jobs", "job %s names route %s, which is not configured: it waits", rid,
			 route);
	jb = xcalloc(1, sizeof *jb);
	jb->owner = j;
	jb->id = id;
	jb->route = xstrdup(route);
	jb->request_id = xstrdup(rid);
	jb->body = xstrdup(body ? body : "{}");
	jb->tries = sqlite3_column_int(row, 5);
	jb->created_at = sqlite3_column_int64(row, 6);
	jb->state = JOB_ACCEPTING; /* read back from the table: queued from here */
	job_set_state(j, jb, JOB_QUEUED);
	lc->loaded++;
	if (strcmp(state, "running") == 0) {
		/* Interrupted by a crash: run it again (at least once upstream). */
		struct store_val v[] = {SVT("queued"), SVI(clock_wall_ms()), SVI(jb->tries), SVN,
					SVT(jb->request_id)};

		store_put(j->e->store, STORE_JOB_UPDATE, v, (int)ARRAY_SIZE(v));
		lc->requeued++;
	}
	job_append(j, jb);
	return 0;
}

/*
 * Read up to n unfinished jobs past last_id into memory, oldest first.
 * Returns the number loaded or STORE_E_SQL.
 */
static int
jobs_load(struct jobs *j, int n)
{
	struct store_val v[] = {SVI(j->last_id), SVI(n)};
	struct load_ctx lc = {j, 0, 0, 0};
	char *cause = NULL;
	int r;

	r = store_reader_run(j->e->reader, STORE_Q_JOBS_QUEUED, v, (int)ARRAY_SIZE(v), load_row,
			     &lc, &cause);
	if (r != 0) {
		log_error("jobs", "cannot read queued jobs: %s", cause ? cause : "?");
		free(cause);
		return r;
	}
	if (lc.requeued)
		log_info("jobs", "%d jobs interrupted by a crash, queued again", lc.requeued);
	/* Fewer than asked: none is left past last_id. */
	j->nspilled = lc.seen < n ? 0 : MAX(j->nspilled - lc.loaded, 0);
	return lc.loaded;
}

int
jobs_new(struct engine *e, struct jobs **out, char **cause)
{
	struct jobs *j = xcalloc(1, sizeof *j);
	const char *env = getenv("FUSEBOX_JOBS_IN_MEMORY");
	int64_t n;

	j->e = e;
	j->mem_max = JOBS_MEM_MAX;
	if (env && parse_int64(env, &n) == 0 && n >= 2 && n <= 10000000)
		j->mem_max = (int)n;
	timer_init(&j->tick, "jobs", tick_fire, j);
	j->nspilled = store_reader_run_int(e->reader, STORE_Q_JOBS_QUEUED_COUNT, NULL, 0, -1);
	if (j->nspilled < 0 || jobs_load(j, j->mem_max) < 0) {
		*cause = xstrdup("jobs: cannot read the queued jobs");
		jobs_free(j);
		return STORE_E_SQL;
	}
	if (j->nqueued)
		log_info("jobs", "%lld unfinished jobs in the queue (%d read into memory)",
			 (long long)(j->nqueued + j->nspilled), j->nqueued);
	engine_timer_arm(e, &j->tick, clock_mono_us() + JOBS_TICK_MS * 1000);
	*out = j;
	return 0;
}

void
jobs_free(struct jobs *j)
{
	struct job *jb, *next;

	if (j == NULL)
		return;
	engine_timer_cancel(j->e, &j->tick);
	for (jb = j->head; jb; jb = next) {
		next = jb->next;
		job_free(jb);
	}
	free(j);
}

struct state_ctx {
	char *route;
	char *state;
	char *response;
};

static int
state_row(void *arg, sqlite3_stmt *row)
{
	struct state_ctx *sc = arg;
	const char *t;

	if ((t = (const char *)sqlite3_column_text(row, 0)) != NULL)
		sc->route = xstrdup(t);
	if ((t = (const char *)sqlite3_column_text(row, 1)) != NULL)
		sc->state = xstrdup(t);
	if ((t = (const char *)sqlite3_column_text(row, 2)) != NULL)
		sc->response = xstrdup(t);
	return 1;
}

int
jobs_lookup(struct jobs *j, const char *request_id, const char **route, const char **state,
	    cJSON **response)
{
	struct job *jb = job_find(j, request_id);
	struct store_val v[] = {SVT(request_id)};
	struct state_ctx sc = {NULL, NULL, NULL};
	char *cause = NULL;
	int i, r = -ENOENT;

	*response = NULL;
	if (jb && jb->state == JOB_ACCEPTING)
		return -ENOENT;
	if (jb) {
		*route = jb->route;
		*state = job_state_name(jb->state);
		return 0;
	}
	store_reader_run(j->e->reader, STORE_Q_JOB_STATE, v, 1, state_row, &sc, &cause);
	free(cause);
	if (sc.state == NULL)
		goto out;
	for (i = 0; i < JOB_ACCEPTING; i++) /* the states a row can hold */
		if (strcmp(sc.state, job_state_name(i)) == 0)
			*state = job_state_name(i);
	i = sc.route ? engine_route_index(j->e, sc.route) : -1;
	*route = i >= 0 ? j->e->routes[i].cfg->name : "(unconfigured)";
	if (sc.response)
		*response = cJSON_Parse(sc.response);
	r = 0;
out:
	free(sc.route);
	free(sc.state);
	free(sc.response);
	return r;
}

static void
job_wait(struct job *jb, jobs_accept_fn fn, void *arg)
{
	struct job_waiter *w = xcalloc(1, sizeof *w), **pp;

	w->fn = fn;
	w->arg = arg;
	for (pp = &jb->waiters; *pp; pp = &(*pp)->next)
		;
	*pp = w;
}

/* The accept's commit is over: the job is queued (or gone); tell its waiters. */
static void
job_accepted(struct engine *e, void *arg, int rc, int64_t rowid, const char *cause)
{
	struct job *jb = arg;
	struct jobs *j = jb->owner;
	struct job_waiter *w, *waiters = jb->waiters;
	int first = 1;

	jb->waiters = NULL;
	if (rc == 0 && rowid > j->last_id && (j->nspilled > 0 || j->nqueued >= j->mem_max)) {
		/* Past the window: it waits in the table (see JOBS_MEM_MAX). */
		j->nspilled++;
		job_unlink(j, jb);
	} else if (rc == 0) {
		jb->id = rowid;
		job_set_state(j, jb, JOB_QUEUED);
		j->last_id = MAX(j->last_id, rowid);
	} else {
		log_error("jobs", "%s: the job could not be stored: %s", jb->request_id,
			  cause ? cause : "?");
		job_unlink(j, jb);
	}
	while ((w = waiters) != NULL) {
		waiters = w->next;
		w->fn(e, w->arg,
		      rc != 0 ? rc
		      : first ? 0
			      : JOBS_E_EXISTS,
		      rc == 0 ? job_state_name(JOB_QUEUED) : NULL, cause);
		first = 0;
		free(w);
	}
	if (jb->state == JOB_ACCEPTING)
		job_free(jb);
}

void
jobs_accept(struct jobs *j, int route, const char *request_id, const cJSON *body, jobs_accept_fn fn,
	    void *arg)
{
	const char *rname = j->e->routes[route].cfg->name, *known_route = NULL, *state = NULL;
	int64_t now = clock_wall_ms();
	struct job *jb = job_find(j, request_id);
	cJSON *resp = NULL;
	int r;

	if (jb && jb->state == JOB_ACCEPTING) {
		job_wait(jb, fn, arg);
		return;
	}
	if (jobs_lookup(j, request_id, &known_route, &state, &resp) == 0) {
		cJSON_Delete(resp);
		fn(j->e, arg, JOBS_E_EXISTS, state, NULL);
		return;
	}
	jb = xcalloc(1, sizeof *jb);
	jb->owner = j;
	jb->route = xstrdup(rname);
	jb->request_id = xstrdup(request_id);
	jb->body = cJSON_PrintUnformatted(body);
	jb->state = JOB_ACCEPTING;
	jb->created_at = now;
	{
		struct store_val v[] = {SVT(request_id), SVT(rname), SVT("queued"), SVT(jb->body),
					SVI(now),	 SVI(now),   SVI(0),	    SVN};
		struct store_op op = {STORE_JOB_INSERT, v, (int)ARRAY_SIZE(v)};

		r = engine_commit_later(j->e, &op, 1, job_accepted, jb);
	}
	if (r != 0) {
		job_free(jb);
		fn(j->e, arg, r, NULL,
		   r == STORE_E_CLOSED ? "the store is closing" : "the job is too large to store");
		return;
	}
	/* Queue order is accept order; jobs_tick passes over it until committed. */
	job_append(j, jb);
	job_wait(jb, fn, arg);
}

int64_t
jobs_queued(const struct jobs *j)
{
	return j->nqueued + j->nspilled;
}

int
jobs_running(const struct jobs *j)
{
	return j->nrunning;
}
