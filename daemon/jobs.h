#pragma once
/*
 * jobs: the durable async queue (level 3 and mode "async"). A job is
 * committed to the `jobs` table before its 202 is sent; the engine drains
 * queued jobs oldest first while their route's effective level is below 3
 * (at most JOBS_MAX_RUNNING at once, started at most JOBS_START_PER_TICK
 * per 100 ms tick), runs each as a normal guarded call with the job's
 * request_id (so a re-run after a crash reaches the upstream with the same
 * X-Request-ID), commits the result exactly once and POSTs it to the
 * job's callback_url. Jobs found `running` at start-up were interrupted by
 * a crash: they are queued again. Engine thread.
 */
#include <stdint.h>

#include <cjson/cJSON.h>

#define JOBS_MAX_RUNNING    16
#define JOBS_START_PER_TICK 8
#define JOBS_TICK_MS	    100

struct engine;
struct jobs;

enum jobs_e {
	JOBS_E_EXISTS = 1, /* a job with this request_id is already known */
};

int jobs_new(struct engine *e, struct jobs **out, char **cause);
void jobs_free(struct jobs *j);
/*
 * The outcome of jobs_accept(), on the engine thread: 0 (the job is
 * committed, state "queued"), JOBS_E_EXISTS (state: the known job's), or
 * a store error with cause (borrowed for the call).
 */
typedef void (*jobs_accept_fn)(struct engine *e, void *arg, int rc, const char *state,
			       const char *cause);
/*
 * Accept a job for route with request_id; body is the call request as
 * JSON (input or messages, budget_ms, allow_llm, callback_url, metadata;
 * borrowed). fn is called at once for a known request_id or a store that
 * refuses the commit, else once the job row is committed (synchronous=FULL,
 * without blocking the loop: engine_commit_later). An accept of the same
 * request_id while that commit is under way waits for it and gets
 * JOBS_E_EXISTS "queued" (or the same failure). Until committed a job
 * does not run and GET /v1/requests/{id} does not know it.
 */
void jobs_accept(struct jobs *j, int route, const char *request_id, const cJSON *body,
		 jobs_accept_fn fn, void *arg);
/* Start what may start now. Called every JOBS_TICK_MS by the engine. */
void jobs_tick(struct jobs *j);
/* State of a job ("queued", "running", "done", "failed") and its response (new cJSON or NULL);
 * -ENOENT when unknown. */
int jobs_lookup(struct jobs *j, const char *request_id, const char **route, const char **state,
		cJSON **response);
/* Jobs waiting to run (in memory or only in the table, see JOBS_MEM_MAX in jobs.c). */
int64_t jobs_queued(const struct jobs *j);
int jobs_running(const struct jobs *j);
