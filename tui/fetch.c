/*
 * fetch: the console's background transfers (see fetch.h).
 *
 * Design: the worker sleeps in curl_multi_poll() until the next tick, a
 * socket event or curl_multi_wakeup() from fetch_kick()/fetch_action()/
 * fetch_stop(). Ticks are aligned (next = previous + 1 s), so the console
 * refreshes at 1 Hz whatever the answers cost. At most one poll per kind is
 * in flight; connections are kept alive by the multi handle's cache.
 *
 * Invariants: mu guards want, kick, stop, the action queue and the result
 * queue. The worker alone touches the multi handle and the transfers. The
 * result queue is bounded (RESULTS_MAX): when the UI falls behind, the
 * oldest poll results are dropped (newer ones supersede them); action
 * results are never dropped.
 */
#include "fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

#define TICK_MS	    1000
#define RESULTS_MAX 64

struct action {
	struct action *next;
	int tag;
	enum fetch_kind kind; /* FETCH_ACTION, or a kind fetch_get() asked for */
	long timeout_ms;      /* 0: the fetch's own */
	char method[8];
	char *path;
	char *body;
};

struct xfer {
	struct xfer *next, *prev; /* the worker's list of running transfers */
	struct client_xfer x;
	enum fetch_kind kind;
	int tag;
	long timeout_ms;
	char base[sizeof((struct client *)0)->base]; /* where it went */
};

struct fetch {
	struct client c;
	long timeout_ms;
	CURLM *multi;
	pthread_t th;
	int started;
	int pipe[2];

	pthread_mutex_t mu;
	unsigned want;
	int kick;
	int stop;
	int next_tag;
	struct action *actions, *actions_tail;
	struct fetch_result *head, *tail;
	int nresults;

	/* worker only */
	struct xfer *running;
	int busy[FETCH__COUNT];
	int64_t next_tick;
	int64_t events_after;
	int64_t audit_after;
	int64_t history_next; /* monotonic ms of the next history poll */
	int lost;	      /* the last state poll got no answer: look in addr_file */
};

static const char *const poll_paths[] = {
	[FETCH_STATE] = "/v1/state",
	[FETCH_SLO] = "/v1/slo",
	[FETCH_ALERTS] = "/v1/alerts",
	[FETCH_REVIEWS] = "/v1/reviews?limit=200",
	[FETCH_HISTORY] = "/v1/slo/history?minutes=60",
	[FETCH_AUDIT] = "/v1/audit",
	[FETCH_DIAGNOSE] = "/v1/diagnose",
};

void
fetch_result_free(struct fetch_result *r)
{
	if (r == NULL)
		return;
	free(r->error);
	free(r->body);
	state_free(r->state);
	slo_free(r->slo);
	alerts_free(r->alerts);
	reviews_free(r->reviews);
	events_free(r->events);
	slo_hist_free(r->hist);
	audits_free(r->audit);
	diag_free(r->diag);
	free(r);
}

static void
push_result(struct fetch *f, struct fetch_result *r)
{
	struct fetch_result **pp, *old;
	ssize_t w;

	pthread_mutex_lock(&f->mu);
	if (f->nresults >= RESULTS_MAX) {
		for (pp = &f->head; *pp != NULL; pp = &(*pp)->next) {
			if ((*pp)->kind < FETCH_ACTION) { /* a poll: a newer one follows */
				old = *pp;
				*pp = old->next;
				f->nresults--;
				fetch_result_free(old);
				break;
			}
		}
		f->tail = NULL;
		for (old = f->head; old != NULL; old = old->next)
			f->tail = old;
	}
	if (f->tail != NULL)
		f->tail->next = r;
	else
		f->head = r;
	f->tail = r;
	f->nresults++;
	pthread_mutex_unlock(&f->mu);
	/* Non-blocking: when the pipe is full the UI is awake already. */
	w = write(f->pipe[1], "r", 1);
	(void)w;
}

static void
start_xfer(struct fetch *f, enum fetch_kind kind, int tag, const char *method, const char *path,
	   const char *body, long timeout_ms)
{
	struct xfer *t = xcalloc(1, sizeof *t);

	t->kind = kind;
	t->tag = tag;
	t->timeout_ms = timeout_ms > 0 ? timeout_ms : f->timeout_ms;
	memcpy(t->base, f->c.base, sizeof t->base);
	client_xfer_setup(&f->c, &t->x, method, path, body, t->timeout_ms);
	curl_easy_setopt(t->x.h, CURLOPT_PRIVATE, t);
	if (curl_multi_add_handle(f->multi, t->x.h) != CURLM_OK)
		abort();
	t->next = f->running;
	if (f->running != NULL)
		f->running->prev = t;
	f->running = t;
	if (kind < FETCH_ACTION)
		f->busy[kind] = 1;
}

static void
xfer_drop(struct fetch *f, struct xfer *t)
{
	if (t->prev != NULL)
		t->prev->next = t->next;
	else
		f->running = t->next;
	if (t->next != NULL)
		t->next->prev = t->prev;
	curl_multi_remove_handle(f->multi, t->x.h);
	client_xfer_cleanup(&t->x);
	free(t);
}

static void
start_polls(struct fetch *f, unsigned want, int kick)
{
	char path[96];
	int64_t now = clock_mono_ms();
	int k;

	for (k = 0; k < FETCH_ACTION; k++) {
		if (!(want & FETCH_BIT(k)) || f->busy[k])
			continue;
		if (k == FETCH_HISTORY) {
			if (!kick && now < f->history_next)
				continue;
			f->history_next = now + FETCH_HISTORY_MS;
		}
		if (k == FETCH_AUDIT) {
			snprintf(path, sizeof path, "/v1/audit?after=%lld&limit=%d",
				 (long long)f->audit_after, FETCH_EVENTS_PAGE);
			start_xfer(f, (enum fetch_kind)k, 0, "GET", path, NULL, 0);
		} else if (k == FETCH_EVENTS) {
			snprintf(path, sizeof path, "/v1/events?after=%lld&limit=%d",
				 (long long)f->events_after, FETCH_EVENTS_PAGE);
			start_xfer(f, (enum fetch_kind)k, 0, "GET", path, NULL, 0);
		} else {
			start_xfer(f, (enum fetch_kind)k, 0, "GET", poll_paths[k], NULL, 0);
		}
	}
}

static void
parse_answer(struct fetch *f, struct fetch_result *r, const char *body, size_t len)
{
	char *cause = NULL;
	int rc = 0, i;

	switch (r->kind) {
	case FETCH_STATE:
		rc = model_parse_state(body, len, &r->state, &cause);
		break;
	case FETCH_SLO:
		rc = model_parse_slo(body, len, &r->slo, &cause);
		break;
	case FETCH_ALERTS:
		rc = model_parse_alerts(body, len, &r->alerts, &cause);
		break;
	case FETCH_REVIEWS:
		rc = model_parse_reviews(body, len, 0, &r->reviews, &cause);
		if (rc == 0)
			reviews_sort(r->reviews);
		break;
	case FETCH_EVENTS:
		rc = model_parse_events(body, len, &r->events, &cause);
		if (rc != 0)
			break;
		for (i = 0; i < r->events->n; i++)
			if (r->events->v[i].id > f->events_after)
				f->events_after = r->events->v[i].id;
		/* A full page: more are waiting, fetch them without waiting a tick. */
		if (r->events->n >= FETCH_EVENTS_PAGE) {
			pthread_mutex_lock(&f->mu);
			f->kick = 1;
			pthread_mutex_unlock(&f->mu);
		}
		break;
	case FETCH_HISTORY:
		rc = model_parse_history(body, len, &r->hist, &cause);
		break;
	case FETCH_DIAGNOSE:
		rc = model_parse_diagnose(body, len, &r->diag, &cause);
		break;
	case FETCH_AUDIT:
		rc = model_parse_audit(body, len, &r->audit, &cause);
		if (rc != 0)
			break;
		for (i = 0; i < r->audit->n; i++)
			if (r->audit->v[i].id > f->audit_after)
				f->audit_after = r->audit->v[i].id;
		if (r->audit->n >= FETCH_EVENTS_PAGE) {
			pthread_mutex_lock(&f->mu);
			f->kick = 1;
			pthread_mutex_unlock(&f->mu);
		}
		break;
	default:
		break;
	}
	if (rc != 0) {
		r->error = xasprintf("%s: %s", poll_paths[r->kind] ? poll_paths[r->kind] : "answer",
				     cause);
		free(cause);
	}
}

static void
finish_xfer(struct fetch *f, struct xfer *t, CURLcode code)
{
	struct fetch_result *r = xcalloc(1, sizeof *r);
	struct client at = f->c; /* the URL the transfer went to, for its messages */

	r->kind = t->kind;
	r->tag = t->tag;
	r->done_ms = clock_mono_ms();
	memcpy(r->base, t->base, sizeof r->base);
	memcpy(at.base, t->base, sizeof at.base);
	if (t->kind == FETCH_STATE)
		f->lost = code != CURLE_OK;
	if (code != CURLE_OK) {
		r->transport = 1;
		r->error = client_xfer_error(&at, &t->x, code, t->timeout_ms);
		goto out;
	}
	curl_easy_getinfo(t->x.h, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->status < 200 || r->status > 299)
		r->error = client_error_text(r->status, t->x.body.data, t->x.body.len);
	if (t->kind == FETCH_ACTION) {
		r->len = t->x.body.len;
		r->body = buf_steal(&t->x.body);
	} else if (r->error == NULL) {
		parse_answer(f, r, t->x.body.data ? t->x.body.data : "", t->x.body.len);
	}
out:
	if (t->kind < FETCH_ACTION)
		f->busy[t->kind] = 0;
	xfer_drop(f, t);
	push_result(f, r);
}

/*
 * The daemon went away: when the address file names another URL, use
 * that one from now on (the transfers still running to the old one end on
 * their own). A missing or unreadable file changes nothing.
 */
static void
rediscover(struct fetch *f)
{
	char url[sizeof f->c.base], *cause = NULL;

	if (!f->lost || f->c.addr_file[0] == '\0')
		return;
	if (client_addr_read(f->c.addr_file, url, sizeof url, &cause) != 0) {
		free(cause);
		return;
	}
	if (strcmp(url, f->c.base) != 0)
		snprintf(f->c.base, sizeof f->c.base, "%s", url);
}

static void *
worker(void *arg)
{
	struct fetch *f = arg;
	struct action *acts, *a;
	struct CURLMsg *msg;
	struct xfer *t;
	int64_t now;
	unsigned want;
	int kick, running, left, wait_ms;

	f->next_tick = clock_mono_ms();
	for (;;) {
		pthread_mutex_lock(&f->mu);
		if (f->stop) {
			pthread_mutex_unlock(&f->mu);
			break;
		}
		want = f->want | FETCH_BIT(FETCH_STATE);
		kick = f->kick;
		f->kick = 0;
		acts = f->actions;
		f->actions = f->actions_tail = NULL;
		pthread_mutex_unlock(&f->mu);

		now = clock_mono_ms();
		if (kick || now >= f->next_tick) {
			rediscover(f);
			start_polls(f, want, kick);
			if (now >= f->next_tick) {
				f->next_tick += TICK_MS;
				if (f->next_tick <= now)
					f->next_tick = now + TICK_MS;
			}
		}
		while ((a = acts) != NULL) {
			acts = a->next;
			start_xfer(f, a->kind, a->tag, a->method, a->path, a->body, a->timeout_ms);
			free(a->path);
			free(a->body);
			free(a);
		}
		curl_multi_perform(f->multi, &running);
		while ((msg = curl_multi_info_read(f->multi, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			t = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
			finish_xfer(f, t, msg->data.result);
		}
		now = clock_mono_ms();
		wait_ms = (int)(f->next_tick - now);
		if (wait_ms < 0)
			wait_ms = 0;
		if (wait_ms > TICK_MS)
			wait_ms = TICK_MS;
		curl_multi_poll(f->multi, NULL, 0, wait_ms, NULL);
	}
	return NULL;
}

int
fetch_start(const struct client *c, long timeout_ms, struct fetch **out, char **cause)
{
	struct fetch *f = xcalloc(1, sizeof *f);
	int rc = 0, i;

	f->pipe[0] = f->pipe[1] = -1;
	f->c = *c;
	f->c.token = c->token != NULL ? xstrdup(c->token) : NULL;
	f->timeout_ms = timeout_ms;
	pthread_mutex_init(&f->mu, NULL);
	if (pipe2(f->pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		rc = -errno;
		*cause = xasprintf("pipe: %s", strerror(errno));
		goto out;
	}
	f->multi = curl_multi_init();
	if (f->multi == NULL)
		abort();
	curl_multi_setopt(f->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 8L);
	i = pthread_create(&f->th, NULL, worker, f);
	if (i != 0) {
		rc = -i;
		*cause = xasprintf("pthread_create: %s", strerror(i));
		goto out;
	}
	f->started = 1;
	*out = f;
	f = NULL;
out:
	fetch_stop(f);
	return rc;
}

void
fetch_stop(struct fetch *f)
{
	struct fetch_result *r;
	struct action *a;

	if (f == NULL)
		return;
	if (f->started) {
		pthread_mutex_lock(&f->mu);
		f->stop = 1;
		pthread_mutex_unlock(&f->mu);
		curl_multi_wakeup(f->multi);
		pthread_join(f->th, NULL);
	}
	if (f->multi != NULL) {
		while (f->running != NULL)
			xfer_drop(f, f->running);
		curl_multi_cleanup(f->multi);
	}
	while ((r = f->head) != NULL) {
		f->head = r->next;
		fetch_result_free(r);
	}
	while ((a = f->actions) != NULL) {
		f->actions = a->next;
		free(a->path);
		free(a->body);
		free(a);
	}
	if (f->pipe[0] >= 0)
		close(f->pipe[0]);
	if (f->pipe[1] >= 0)
		close(f->pipe[1]);
	pthread_mutex_destroy(&f->mu);
	client_free(&f->c);
	free(f);
}

int
fetch_fd(const struct fetch *f)
{
	return f->pipe[0];
}

void
fetch_want(struct fetch *f, unsigned mask)
{
	pthread_mutex_lock(&f->mu);
	f->want = mask;
	pthread_mutex_unlock(&f->mu);
}

void
fetch_kick(struct fetch *f)
{
	pthread_mutex_lock(&f->mu);
	f->kick = 1;
	pthread_mutex_unlock(&f->mu);
	curl_multi_wakeup(f->multi);
}

static int
queue(struct fetch *f, enum fetch_kind kind, long timeout_ms, const char *method, const char *path,
      const char *body)
{
	struct action *a = xcalloc(1, sizeof *a);
	int tag;

	a->kind = kind;
	a->timeout_ms = timeout_ms;
	snprintf(a->method, sizeof a->method, "%s", method);
	a->path = xstrdup(path);
	a->body = body != NULL ? xstrdup(body) : NULL;
	pthread_mutex_lock(&f->mu);
	tag = a->tag = ++f->next_tag;
	if (f->actions_tail != NULL)
		f->actions_tail->next = a;
	else
		f->actions = a;
	f->actions_tail = a;
	pthread_mutex_unlock(&f->mu);
	curl_multi_wakeup(f->multi);
	return tag;
}

int
fetch_action(struct fetch *f, const char *method, const char *path, const char *body)
{
	return queue(f, FETCH_ACTION, 0, method, path, body);
}

int
fetch_get(struct fetch *f, enum fetch_kind kind, const char *path, long timeout_ms)
{
	return queue(f, kind, timeout_ms, "GET", path, NULL);
}

struct fetch_result *
fetch_take(struct fetch *f)
{
	struct fetch_result *r;
	char drain[64];

	while (read(f->pipe[0], drain, sizeof drain) > 0)
		;
	pthread_mutex_lock(&f->mu);
	r = f->head;
	f->head = f->tail = NULL;
	f->nresults = 0;
	pthread_mutex_unlock(&f->mu);
	return r;
}
