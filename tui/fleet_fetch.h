#pragma once
/*
 * fleet_fetch: one request to each of many daemons at once — one libcurl
 * multi handle, at most FLEET_FETCH_PARALLEL transfers in flight, each
 * bounded by its own timeout, so a dead host costs one timeout, not one
 * per host in turn. Fan-out writes carry X-Fusebox-Action-Id (API.md
 * "Fleet"). Blocking; the calling thread.
 */
#include <stddef.h>

#include "client.h"

#define FLEET_FETCH_PARALLEL 32

struct fleet_req {
	const struct client *c; /* the host's client (borrowed) */
	const char *method;
	const char *path;
	const char *body;      /* JSON, or NULL */
	const char *action_id; /* NULL: no X-Fusebox-Action-Id */
	/* Results. */
	int answered; /* 1: an HTTP answer came (any status) */
	long status;
	char *resp; /* the body, NUL-terminated, when answered */
	size_t len;
	char *error; /* why there was no answer, when not answered */
};

/* Run r[0..n-1], each within timeout_ms. Free with fleet_req_free(). */
void fleet_fetch_run(struct fleet_req *r, int n, long timeout_ms);
void fleet_req_free(struct fleet_req *r);
/* A fresh random (version 4) UUID into out (>= 37 bytes). */
void fleet_action_id_new(char *out, size_t outsz);
