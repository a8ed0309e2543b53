/*
 * fleet_host: the fleet console's hosts and the fleet_poller thread (see
 * fleet_console_int.h).
 */
#include "fleet_console_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "fleet_fetch.h"
#include "util.h"

#define POLL_TIMEOUT_MS 900
#define NQ		4 /* the requests per host and round */

struct fleet_fc fleet_fc;

void
fleet_pipe_drain(int fd)
{
	char b[64];

	while (read(fd, b, sizeof b) > 0)
		;
}

void
fleet_pipe_poke(int fd)
{
	ssize_t r = write(fd, "x", 1);

	(void)r;
}

/* Why r is no usable answer (caller frees), or NULL for a 2xx. */
static char *
req_error(const struct fleet_req *r)
{
	if (!r->answered)
		return xstrdup(r->error ? r->error : "no answer");
	if (r->status < 200 || r->status > 299)
		return client_error_text(r->status, r->resp, r->len);
	return NULL;
}

/*
 * Host i's answers q[0..NQ-1] into fleet_fc.h[i]. 1 when it answered. The
 * review queue (q[3]) does not make a host down: its error is kept apart.
 */
static int
host_merge(int i, struct fleet_req *q, int64_t now_wall)
{
	struct fhost *h = &fleet_fc.h[i];
	struct state_v *s = NULL;
	struct slo_v *slo = NULL;
	struct alerts_v *al = NULL;
	struct reviews_v *rv = NULL;
	char *err, *rerr, *cause = NULL;

	err = req_error(&q[0]);
	if (err == NULL && model_parse_state(q[0].resp, q[0].len, &s, &cause) != 0)
		err = xasprintf("GET /v1/state: %s", cause);
	if (err == NULL && (err = req_error(&q[1])) == NULL &&
	    model_parse_slo(q[1].resp, q[1].len, &slo, &cause) != 0)
		err = xasprintf("GET /v1/slo: %s", cause);
	if (err == NULL && (err = req_error(&q[2])) == NULL &&
	    model_parse_alerts(q[2].resp, q[2].len, &al, &cause) != 0)
		err = xasprintf("GET /v1/alerts: %s", cause);
	free(cause);
	cause = NULL;
	rerr = req_error(&q[3]);
	if (rerr != NULL) {
		cause = rerr;
		rerr = xasprintf("GET /v1/reviews: %s", cause);
	} else if (model_parse_reviews(q[3].resp, q[3].len, 0, &rv, &cause) != 0) {
		rerr = xasprintf("GET /v1/reviews: %s", cause);
	}
	free(cause);
	pthread_mutex_lock(&fleet_fc.mu);
	h->seen = 1;
	reviews_free(h->reviews);
	h->reviews = err == NULL ? rv : NULL;
	if (err != NULL)
		reviews_free(rv);
	snprintf(h->rev_error, sizeof h->rev_error, "%s", rerr != NULL ? rerr : "");
	if (err != NULL) {
		if (h->up || h->down_since == 0)
			h->down_since = now_wall;
		h->up = 0;
		snprintf(h->error, sizeof h->error, "%s", err);
		state_free(s);
		slo_free(slo);
		alerts_free(al);
	} else {
		h->up = 1;
		h->down_since = 0;
		h->error[0] = '\0';
		state_free(h->state);
		slo_free(h->slo);
		alerts_free(h->alerts);
		h->state = s;
		h->slo = slo;
		h->alerts = al;
	}
	pthread_mutex_unlock(&fleet_fc.mu);
	free(rerr);
	free(err);
	return err == NULL;
}

void *
fleet_poller(void *arg)
{
	static const char *const paths[NQ] = {"/v1/state", "/v1/slo", "/v1/alerts",
					      "/v1/reviews?limit=200"};
	int n = fleet_fc.f->n, *idx = xcalloc((size_t)n, sizeof *idx);
	struct fleet_req *q = xcalloc((size_t)n * NQ, sizeof *q);
	struct pollfd pfd = {.fd = fleet_fc.wake[0], .events = POLLIN};
	int64_t now, next, wait;
	int i, j, m, ok;

	(void)arg;
	while (!atomic_load(&fleet_fc.stop)) {
		if (atomic_load(&fleet_fc.paused)) {
			poll(&pfd, 1, 1000);
			fleet_pipe_drain(fleet_fc.wake[0]);
			continue;
		}
		pthread_mutex_lock(&fleet_fc.busy);
		now = clock_mono_ms();
		for (i = 0; i < n; i++)
			if (atomic_exchange(&fleet_fc.h[i].kick, 0) && fleet_fc.h[i].p.fails > 0)
				fleet_fc.h[i].p.next_at = now;
		for (i = 0, m = 0; i < n; i++)
			if (fleet_fc.h[i].init_error == NULL &&
			    fleet_poll_due(&fleet_fc.h[i].p, now))
				idx[m++] = i;
		for (i = 0; i < m; i++)
			for (j = 0; j < NQ; j++)
				q[i * NQ + j] = (struct fleet_req){.c = &fleet_fc.h[idx[i]].c,
								   .method = "GET",
								   .path = paths[j]};
		if (m > 0) {
			fleet_fetch_run(q, m * NQ, POLL_TIMEOUT_MS);
			for (i = 0; i < m; i++) {
				ok = host_merge(idx[i], &q[i * NQ], clock_wall_ms());
				/* From the round's start: a healthy host is asked once a second. */
				fleet_poll_done(&fleet_fc.h[idx[i]].p, ok, now, clock_wall_ms());
				for (j = 0; j < NQ; j++)
					fleet_req_free(&q[i * NQ + j]);
			}
			fleet_pipe_poke(fleet_fc.note[1]);
		}
		pthread_mutex_unlock(&fleet_fc.busy);
		now = clock_mono_ms();
		next = now + 1000;
		for (i = 0; i < n; i++)
			if (fleet_fc.h[i].init_error == NULL && fleet_fc.h[i].p.next_at < next)
				next = fleet_fc.h[i].p.next_at;
		wait = MIN(MAX(next - now, 5), 1000);
		poll(&pfd, 1, (int)wait);
		fleet_pipe_drain(fleet_fc.wake[0]);
	}
	free(idx);
	free(q);
	return NULL;
}

void
fleet_pause_poller(int on)
{
	if (on) {
		atomic_store(&fleet_fc.paused, 1);
		/* Wait for the round in flight: the host's client is then ours. */
		pthread_mutex_lock(&fleet_fc.busy);
		pthread_mutex_unlock(&fleet_fc.busy);
	} else {
		atomic_store(&fleet_fc.paused, 0);
		fleet_pipe_poke(fleet_fc.wake[1]);
	}
}

void
fleet_hosts_init(const char *token, int role)
{
	char *tok, *cause = NULL;
	int i, r;

	for (i = 0; i < fleet_fc.f->n; i++) {
		const struct fleet_host *fh = &fleet_fc.f->hosts[i];
		struct fhost *h = &fleet_fc.h[i];

		tok = NULL;
		r = role;
		if (fh->token_file != NULL &&
		    client_token_read(fh->token_file, &tok, &r, &cause) != 0) {
			h->init_error = xasprintf("token file %s: %s", fh->token_file, cause);
		} else if (client_init(&h->c, fh->url, tok != NULL ? tok : token, r, &cause) != 0) {
			h->init_error = cause;
			cause = NULL;
		}
		free(cause);
		cause = NULL;
		if (tok != NULL) {
			explicit_bzero(tok, strlen(tok));
			free(tok);
		}
		if (h->init_error != NULL) {
			h->seen = 1;
			h->down_since = clock_wall_ms();
			snprintf(h->error, sizeof h->error, "%s", h->init_error);
		}
	}
}

int
fleet_pipes_open(void)
{
	int *p[] = {fleet_fc.wake, fleet_fc.note}, i, j;

	for (i = 0; i < 2; i++) {
		if (pipe(p[i]) != 0)
			return -errno;
		for (j = 0; j < 2; j++)
			fcntl(p[i][j], F_SETFL, fcntl(p[i][j], F_GETFL) | O_NONBLOCK);
	}
	return 0;
}
