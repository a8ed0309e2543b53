#pragma once
/*
 * jobstate: an async job's state machine (DESIGN.md step 8, API.md
 * "GET /v1/requests/{id}"): accepting (its row being committed, memory
 * only) -> queued -> running -> done | failed. The names are the jobs
 * rows' state column. Pure; jobs.c's job_set_state() is the one setter
 * and refuses what job_state_next_ok() refuses.
 */

enum job_state {
	JOB_QUEUED = 0,
	JOB_RUNNING,
	JOB_DONE,
	JOB_FAILED,
	JOB_ACCEPTING,
	JOB_STATE__COUNT
};

/* "queued", "running", "done", "failed", "accepting"; NULL out of range. */
const char *job_state_name(enum job_state s);
/* 1 when from -> to is a transition of the machine (a no-op from == to is not), else 0. */
int job_state_next_ok(enum job_state from, enum job_state to);
