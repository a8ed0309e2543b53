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

#define JOBS_MAX_RUNNING 16
#define JOBS_START_PER_TICK 8
#define JOBS_TICK_MS 100

struct engine;
struct jobs;

enum jobs_e {
	JOBS_E_EXISTS = 1, /* a job with this request_id is already known */
};

int jobs_new(struct engine *e, struct jobs **out, char **cause);
void jobs_free(struct jobs *j);
/*
 * Accept a job for route with request_id; body is the call request as
 * JSON (input or messages, budget_ms, allow_llm, callback_url, metadata;
 * borrowed). Committed before return. 0, JOBS_E_EXISTS (*state set to the
 * known job's state), or STORE_E_SQL with *cause.
 */
int jobs_enqueue(struct jobs *j, int route, const char *request_id, const cJSON *body,
		 const char **state, char **cause);
/* Start what may start now. Called every JOBS_TICK_MS by the engine. */
void jobs_tick(struct jobs *j);
/* State of a job ("queued", "running", "done", "failed") and its response (new cJSON or NULL); -ENOENT when unknown. */
int jobs_lookup(struct jobs *j, const char *request_id, const char **route, const char **state,
		cJSON **response);
int jobs_queued(const struct jobs *j);
int jobs_running(const struct jobs *j);
