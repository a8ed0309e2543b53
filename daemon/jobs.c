/*
 * jobs: the L3 queue.
 *
 * Memory holds the jobs not yet finished (queued or running), in a FIFO
 * per the created_at order; finished jobs live only in the DB. Every state
 * change goes through job_set_state(), which writes the row: "running"
 * asynchronously (a crash re-runs the job anyway), "done"/"failed"
 * committed before the callback is sent.
 */
#include "jobs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "clock.h"
#include "engine.h"
#include "log.h"
#include "notify.h"
#include "util.h"

enum job_state { JOB_QUEUED = 0, JOB_RUNNING, JOB_DONE, JOB_FAILED };

static const char *const job_state_names[] = { "queued", "running", "done", "failed" };

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
};

/*
 * Unfinished jobs are also hashed by request_id: every L3 accept and every
 * GET /v1/requests/{id} looks one up, and during an outage the queue holds
 * tens of thousands (a list scan per accept made accepting slow down as
 * the queue grew: 1,850 -> 460 per second over 30 s at 26,000 queued).
 */
#define JOBS_BUCKETS 16384

struct jobs {
	struct engine *e;
	struct job *buckets[JOBS_BUCKETS];
	struct job *head, *tail; /* unfinished jobs, oldest first */
	int nqueued;
	int nrunning;
	struct timer tick;
};

static void
job_free(struct job *jb)
{
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

/* The one place a job's state changes. response may be NULL. */
static int
job_set_state(struct jobs *j, struct job *jb, enum job_state to, const char *response)
{
	struct store_val v[] = { SVT(job_state_names[to]), SVI(clock_wall_ms()), SVI(jb->tries),
				 SVT(response), SVT(jb->request_id) };
	struct store_op op = { STORE_JOB_UPDATE, v, (int)ARRAY_SIZE(v) };
	char *cause = NULL;
	int r = 0;

	if (jb->state == to)
		return 0;
	if (jb->state == JOB_QUEUED)
		j->nqueued--;
	if (jb->state == JOB_RUNNING)
		j->nrunning--;
	if (to == JOB_QUEUED)
		j->nqueued++;
	if (to == JOB_RUNNING)
		j->nrunning++;
	log_debug("jobs", "%s: %s -> %s", jb->request_id, job_state_names[jb->state],
		  job_state_names[to]);
	jb->state = to;
	if (to == JOB_DONE || to == JOB_FAILED) {
		r = store_commit_now(j->e->store, &op, 1, NULL, &cause);
		if (r != 0)
			log_error("jobs", "%s: cannot record the result: %s", jb->request_id,
				  cause ? cause : "?");
		free(cause);
	} else {
		store_put(j->e->store, STORE_JOB_UPDATE, v, (int)ARRAY_SIZE(v));
	}
	return r;
}

static void
job_done(struct call *c, const struct call_answer *a, void *arg)
{
	struct job *jb = arg;
	struct jobs *j = jb->owner;
	char *response = xstrdup(a->json);
	cJSON *body = cJSON_Parse(jb->body), *cb;

	job_set_state(j, jb, a->http_status == 200 ? JOB_DONE : JOB_FAILED, response);
	cb = body ? cJSON_GetObjectItemCaseSensitive(body, "callback_url") : NULL;
	if (cJSON_IsString(cb) && j->e->notify) {
		cJSON *msg = cJSON_Parse(response);
		char *out;

		if (msg) {
			cJSON_AddStringToObject(msg, "event", "result");
			out = cJSON_PrintUnformatted(msg);
			notify_post(j->e->notify, cb->valuestring, out, "job_result", 5);
			free(out);
			cJSON_Delete(msg);
		}
	}
	cJSON_Delete(body);
	free(response);
	job_unlink(j, jb);
	job_free(jb);
	(void)c;
}

/* Build the call request of a job from its stored body. */
static void
job_call_req(const struct job *jb, int route, struct call_req *cr)
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
	if (cJSON_IsNumber(v) && v->valuedouble >= 1)
		cr->caller_budget_ms = (int64_t)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(o, "allow_llm");
	if (cJSON_IsBool(v))
		cr->allow_llm = cJSON_IsTrue(v);
	v = cJSON_GetObjectItemCaseSensitive(o, "callback_url");
	if (cJSON_IsString(v))
		cr->callback_url = xstrdup(v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(o, "metadata");
	if (v)
		cr->metadata = cJSON_Duplicate(v, 1);
	cJSON_Delete(o);
}

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
	if (!runnable || j->nqueued == 0)
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
		job_set_state(j, jb, JOB_RUNNING, NULL);
		job_call_req(jb, route, &cr);
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
	int requeued;
};

static int
load_row(void *arg, sqlite3_stmt *row)
{
	struct load_ctx *lc = arg;
	struct jobs *j = lc->j;
	const char *rid = (const char *)sqlite3_column_text(row, 0);
	const char *route = (const char *)sqlite3_column_text(row, 1);
	const char *state = (const char *)sqlite3_column_text(row, 2);
	const char *body = (const char *)sqlite3_column_text(row, 3);
	struct job *jb;

	if (rid == NULL || route == NULL || state == NULL)
		return 0;
	if (engine_route_index(j->e, route) < 0)
		log_warn("jobs", "job %s names route %s, which is not configured: it waits", rid,
			 route);
	jb = xcalloc(1, sizeof *jb);
	jb->owner = j;
	jb->route = xstrdup(route);
	jb->request_id = xstrdup(rid);
	jb->body = xstrdup(body ? body : "{}");
	jb->tries = sqlite3_column_int(row, 4);
	jb->created_at = sqlite3_column_int64(row, 5);
	jb->state = JOB_QUEUED;
	j->nqueued++;
	if (strcmp(state, "running") == 0) {
		/* Interrupted by a crash: run it again (at least once upstream). */
		struct store_val v[] = { SVT("queued"), SVI(clock_wall_ms()), SVI(jb->tries), SVN,
					 SVT(jb->request_id) };

		store_put(j->e->store, STORE_JOB_UPDATE, v, (int)ARRAY_SIZE(v));
		lc->requeued++;
	}
	job_append(j, jb);
	return 0;
}

int
jobs_new(struct engine *e, struct jobs **out, char **cause)
{
	struct jobs *j = xcalloc(1, sizeof *j);
	struct load_ctx lc = { j, 0 };
	int r;

	j->e = e;
	timer_init(&j->tick, "jobs", tick_fire, j);
	r = store_reader_query(e->reader,
			       "SELECT request_id, route, state, body, tries, created_at FROM jobs "
			       "WHERE state IN ('queued', 'running') ORDER BY created_at, id",
			       NULL, 0, load_row, &lc, cause);
	if (r != 0) {
		jobs_free(j);
		return r;
	}
	if (j->nqueued)
		log_info("jobs", "%d unfinished jobs loaded (%d interrupted by a crash, queued again)",
			 j->nqueued, lc.requeued);
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

static struct job *
job_find(struct jobs *j, const char *request_id)
{
	struct job *jb;

	for (jb = *job_bucket(j, request_id); jb; jb = jb->hnext)
		if (strcmp(jb->request_id, request_id) == 0)
			return jb;
	return NULL;
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
	struct store_val v[] = { SVT(request_id) };
	struct state_ctx sc = { NULL, NULL, NULL };
	char *cause = NULL;
	int i, r = -ENOENT;

	*response = NULL;
	if (jb) {
		*route = jb->route;
		*state = job_state_names[jb->state];
		return 0;
	}
	store_reader_query(j->e->reader,
			   "SELECT route, state, response FROM jobs WHERE request_id = ?1", v, 1,
			   state_row, &sc, &cause);
	free(cause);
	if (sc.state == NULL)
		goto out;
	for (i = 0; i < 4; i++)
		if (strcmp(sc.state, job_state_names[i]) == 0)
			*state = job_state_names[i];
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

int
jobs_enqueue(struct jobs *j, int route, const char *request_id, const cJSON *body,
	     const char **state, char **cause)
{
	const char *rname = j->e->routes[route].cfg->name, *known_route = NULL;
	int64_t now = clock_wall_ms();
	char *text = cJSON_PrintUnformatted(body);
	cJSON *resp = NULL;
	struct store_val v[] = { SVT(request_id), SVT(rname), SVT("queued"), SVT(text), SVI(now),
				 SVI(now), SVI(0), SVN };
	struct store_op op = { STORE_JOB_INSERT, v, (int)ARRAY_SIZE(v) };
	struct job *jb;
	int r;

	if (jobs_lookup(j, request_id, &known_route, state, &resp) == 0) {
		cJSON_Delete(resp);
		free(text);
		return JOBS_E_EXISTS;
	}
	r = store_commit_now(j->e->store, &op, 1, NULL, cause);
	if (r != 0) {
		free(text);
		return r;
	}
	jb = xcalloc(1, sizeof *jb);
	jb->owner = j;
	jb->route = xstrdup(rname);
	jb->request_id = xstrdup(request_id);
	jb->body = text;
	jb->state = JOB_QUEUED;
	jb->created_at = now;
	j->nqueued++;
	job_append(j, jb);
	*state = "queued";
	return 0;
}

int
jobs_queued(const struct jobs *j)
{
	return j->nqueued;
}

int
jobs_running(const struct jobs *j)
{
	return j->nrunning;
}
