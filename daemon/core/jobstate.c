/*
 * jobstate: the async job's states and transitions.
 */
#include "jobstate.h"

static const char *const names[JOB_STATE__COUNT] = {
	[JOB_QUEUED] = "queued", [JOB_RUNNING] = "running",	[JOB_DONE] = "done",
	[JOB_FAILED] = "failed", [JOB_ACCEPTING] = "accepting",
};

const char *
job_state_name(enum job_state s)
{
	return (int)s >= 0 && s < JOB_STATE__COUNT ? names[s] : 0;
}

int
job_state_next_ok(enum job_state from, enum job_state to)
{
	switch (from) {
	case JOB_ACCEPTING:
		return to == JOB_QUEUED; /* the accept committed, or read back at start */
	case JOB_QUEUED:
		return to == JOB_RUNNING;
	case JOB_RUNNING:
		return to == JOB_DONE || to == JOB_FAILED;
	default:
		return 0; /* done and failed are final */
	}
}
