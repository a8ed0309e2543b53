#pragma once
/*
 * fleet_cli: `fusebox --fleet FILE VERB` — status (per route, summed over
 * the hosts that answer; those that do not are named with the error),
 * level (fan-out with a shared action id; exit 0 only when every host
 * applied it) and reviews (merged by due time). --host NAME runs any verb
 * against that one host as without a fleet. Main thread; blocking.
 *
 * The fan-out path (select the hosts, build the request, send it with one
 * X-Fusebox-Action-Id, a result per host) is shared with the fleet
 * console (fleet_console.c), so both send the same requests.
 */
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "fleet.h"

/*
 * Run argv[0] over the fleet. token / role: the token of hosts whose line
 * names no token file (may be NULL). Exit codes as cli.h.
 */
int fleet_cli_run(const struct fleet *f, const char *token, int role, const char *host, int json,
		  int argc, char **argv);

/* What a host's 2xx answer is, for its result text. */
enum fleet_answer { FLEET_ANSWER_LEVEL, FLEET_ANSWER_TARGETS, FLEET_ANSWER_BREAKER };

/* One fan-out request, the same for every selected host. */
struct fleet_fanout {
	char what[256]; /* "force intent", "release intent", ... */
	const char *method;
	char path[512];
	char *body; /* JSON or NULL; fleet_fanout_free frees it */
	enum fleet_answer answer;
};

/*
 * The level change on route: level 0..3 forced with reason (ttl_s > 0: it
 * expires), or level < 0: released to auto (PUT / DELETE
 * /v1/routes/ROUTE/level). The caller validated the arguments.
 */
void fleet_fanout_level(struct fleet_fanout *fo, const char *route, int level, const char *reason,
			int64_t ttl_s);
/*
 * The weights of route's backends: pairs[0..n) "BACKEND=WEIGHT" (PUT
 * /v1/routes/ROUTE/weights); reason may be NULL or empty. 0, or -1 with
 * why in err (then fo holds nothing).
 */
int fleet_fanout_weights(struct fleet_fanout *fo, const char *route, const char *const *pairs,
			 int n, const char *reason, char *err, size_t errsz);
/* backend's breaker to "open", "closed" (forced) or "auto" (PUT /v1/backends/B/breaker). */
int fleet_fanout_breaker(struct fleet_fanout *fo, const char *backend, const char *to,
			 const char *reason, char *err, size_t errsz);
void fleet_fanout_free(struct fleet_fanout *fo);

/*
 * sel[i] = 1 for the hosts of group (NULL: any) and of the comma list
 * hosts (NULL: every host of the group). 0, or -1 with why in err (an
 * unknown host, nothing selected).
 */
int fleet_select(const struct fleet *f, const char *group, const char *hosts, int *sel, char *err,
		 size_t errsz);

/* One host's result of a fan-out. */
struct fleet_result {
	int asked;	/* the host was selected */
	int applied;	/* it answered 2xx */
	char text[512]; /* "applied: L2 (forced)", or "failed: why" */
};

/*
 * Send fo to the hosts with sel[i], all at once, with X-Fusebox-Action-Id
 * aid: c[i] is host i's client, or NULL when it could not be set up (why[i]
 * says why; why may be NULL). res[i] for every selected host (the others
 * are left as they are). Returns how many failed. Blocking.
 */
int fleet_fanout_send(const struct fleet *f, struct client *const *c, const char *const *why,
		      const int *sel, const struct fleet_fanout *fo, const char *aid,
		      struct fleet_result *res);

struct review_v;

/* A review item of host `host` in a merged queue (pointer into that host's list). */
struct host_review {
	int host;
	const struct review_v *r;
};

/* qsort order of a merged queue: due time (none last), then host, then id. */
int host_review_cmp(const void *a, const void *b);
