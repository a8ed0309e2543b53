#pragma once
/*
 * fetch: the console's HTTP, off the UI thread. One thread drives a curl
 * multi handle: once a second (aligned ticks) it GETs /v1/state plus what
 * the current screen wants (slo, alerts, reviews, events), all at once and
 * each bounded by the timeout (800 ms), so a slow or dead daemon never
 * holds a key press; operator actions go out as soon as they are queued.
 * Finished transfers are parsed here (model.c) and queued as results; the
 * UI thread waits on fetch_fd() and takes them with fetch_take(). A poll
 * whose previous transfer is still running is skipped, not stacked.
 *
 * Rediscovery: when the client names an address file (client.h
 * addr_file) and the state poll gets no answer, the worker reads the file
 * before each tick's polls; a URL there other than the one in use becomes
 * the one in use. Each result says which URL it went to (base).
 *
 * Threads: fetch_* may be called from the UI thread; the worker owns the
 * multi handle. Results are handed over whole (the taker frees them).
 */
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "model.h"

enum fetch_kind {
	FETCH_STATE,
	FETCH_SLO,
	FETCH_ALERTS,
	FETCH_REVIEWS,
	FETCH_EVENTS,
	FETCH_HISTORY, /* /v1/slo/history: every HISTORY_EVERY_MS, not every tick */
	FETCH_AUDIT,
	FETCH_ACTION,
	FETCH_DIAGNOSE, /* /v1/diagnose: on demand (fetch_get), parsed into ->diag */
	FETCH__COUNT
};
#define FETCH_BIT(k) (1u << (k))

#define FETCH_EVENTS_PAGE 500 /* events (and audit rows) asked for per request */
#define FETCH_HISTORY_MS  5000

struct fetch_result {
	struct fetch_result *next;
	enum fetch_kind kind;
	int tag;       /* FETCH_ACTION: the tag fetch_action() returned */
	long status;   /* HTTP status; 0 when no answer arrived */
	int transport; /* no answer (refused, timed out): the daemon is unreachable */
	char *error;   /* NULL for a parsed 2xx answer, else one line of text */
	char *body;    /* FETCH_ACTION: the answer body (NUL-terminated) or NULL */
	size_t len;
	int64_t done_ms; /* monotonic, when the transfer ended */
	struct state_v *state;
	struct slo_v *slo;
	struct alerts_v *alerts;
	struct reviews_v *reviews;
	struct events_v *events;
	struct slo_hist_v *hist;
	struct audits_v *audit;
	struct diag_v *diag;
	char base[512]; /* the daemon's URL the request went to (client.h base) */
};

struct fetch;

/* c is copied (token included). 0, or -errno with *cause. */
int fetch_start(const struct client *c, long timeout_ms, struct fetch **out, char **cause);
/* Stop the thread, abandon transfers, free queued results. NULL ok. */
void fetch_stop(struct fetch *f);
/* Readable while results are waiting (a pipe; drained by fetch_take). */
int fetch_fd(const struct fetch *f);
/* What to GET each tick besides FETCH_STATE (a mask of FETCH_BIT()). */
void fetch_want(struct fetch *f, unsigned mask);
/* Start this tick's polls now (after a change, or a screen switch). */
void fetch_kick(struct fetch *f);
/* Queue a request (body copied, may be NULL). Returns its tag (> 0). */
int fetch_action(struct fetch *f, const char *method, const char *path, const char *body);
/*
 * Queue a GET whose answer is parsed as kind (FETCH_DIAGNOSE), with its own
 * timeout (a diagnosis takes longer than a poll). Returns its tag (> 0).
 */
int fetch_get(struct fetch *f, enum fetch_kind kind, const char *path, long timeout_ms);
/* All waiting results, oldest first (a list through ->next), or NULL. */
struct fetch_result *fetch_take(struct fetch *f);
/* Free one result and whatever it still holds (fields may be stolen first). */
void fetch_result_free(struct fetch_result *r);
