/*
 * notify: fire-and-forget JSON POSTs on one worker thread.
 *
 * notify_post() copies the message into a bounded list under a mutex and
 * wakes the worker with curl_multi_wakeup(); it never blocks on the
 * network. The worker owns a curl multi: it starts every message whose
 * next_at has come, polls, and sorts finished transfers into delivered
 * (2xx), retried later (connect errors, timeouts, 5xx, 429 while tries
 * remain: 1 s, 2 s, 4 s, ...) or failed. A message counts against the
 * capacity from notify_post() until it is delivered or given up, so a dead
 * receiver can't grow memory. No proxy (targets are usually loopback);
 * each POST has 2 s end to end.
 *
 * Allow list (callbacks.allow). curl resolves the URL's host and then
 * asks opensocket_cb for each socket it would connect: the address
 * checked is the one the connection uses, so a name that resolves to an
 * allowed address once and elsewhere the next time (DNS rebinding) is
 * judged on the second answer too. Name rules compare the host curl
 * parsed from the URL (curl_url), not our own reading of it. Redirects
 * are off, proxies too.
 *
 * Locking: mu guards incoming, held, stopping, stop_at, stats and the
 * allow list; the worker's own list (active) is touched only by the
 * worker, and each message keeps a copy of the rules it starts with.
 */
#include "notify.h"

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "log.h"
#include "util.h"

#define NOTIFY_TIMEOUT_MS     2000L
#define NOTIFY_MAX_BODY	      (1 << 20)
#define NOTIFY_MAX_BACKOFF_MS 60000

struct notify_msg {
	struct notify_msg *next;
	char *url;
	char *body;
	char *kind;
	int tries;   /* attempts allowed */
	int attempt; /* attempts made */
	int64_t next_at_ms;
	CURL *easy; /* non-NULL while a transfer runs */
	struct curl_slist *hdrs;
	int restricted; /* the rules below apply */
	struct addr_rule *rules;
	int nrules;
	char host[256]; /* the URL's host as curl reads it */
	char why[128];	/* set when opensocket_cb refused an address */
	int opened;	/* opensocket_cb let an address through */
};

struct notify {
	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	CURLM *multi;
	struct notify_msg *incoming; /* posted, not yet seen by the worker */
	struct notify_msg *active;   /* worker only: waiting or transferring */
	int cap;
	int held; /* messages not yet finished, incoming + active */
	int stopping;
	int64_t stop_at_ms;
	struct notify_stats stats;
	int restricted; /* notify_allow_set was called */
	struct addr_rule *rules;
	int nrules;
};

static size_t
discard_cb(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static void
msg_free(struct notify_msg *m)
{
	if (m == NULL)
		return;
	free(m->url);
	free(m->body);
	free(m->kind);
	free(m->rules);
	curl_slist_free_all(m->hdrs);
	free(m);
}

/*
 * The connection curl is about to make: to an address the message's rules
 * let through, or none (CURL_SOCKET_BAD: curl tries the next address, then
 * fails the transfer with a connect error).
 */
static curl_socket_t
opensocket_cb(void *arg, curlsocktype purpose, struct curl_sockaddr *sa)
{
	struct notify_msg *m = arg;
	struct addr a;
	char text[64];
	int port = 0;

	memset(&a, 0, sizeof a);
	if (sa->family == AF_INET && sa->addrlen >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)&sa->addr;

		a.family = 4;
		memcpy(a.b, &in->sin_addr, 4);
		port = ntohs(in->sin_port);
	} else if (sa->family == AF_INET6 && sa->addrlen >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)&sa->addr;
		static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};

		a.family = 6;
		memcpy(a.b, &in6->sin6_addr, 16);
		if (memcmp(a.b, mapped, 12) == 0) {
			memmove(a.b, a.b + 12, 4);
			memset(a.b + 4, 0, 12);
			a.family = 4;
		}
		port = ntohs(in6->sin6_port);
	} else if (m->restricted) {
		snprintf(m->why, sizeof m->why, "address family %d", sa->family);
		return CURL_SOCKET_BAD;
	}
	if (m->restricted && (purpose != CURLSOCKTYPE_IPCXN ||
			      !addr_allowed(m->rules, m->nrules, m->host, &a, port))) {
		addr_format(&a, text, sizeof text);
		snprintf(m->why, sizeof m->why, "%s port %d (%s) is not in callbacks.allow", text,
			 port, addr_class_name(addr_classify(&a)));
		return CURL_SOCKET_BAD;
	}
	m->opened = 1;
	return socket(sa->family, sa->socktype | SOCK_CLOEXEC, sa->protocol);
}

/* The host curl will connect to for url, into m->host. 0 or -1. */
static int
msg_host(struct notify_msg *m)
{
	CURLU *u = curl_url();
	char *host = NULL;
	int r = -1;

	if (u != NULL && curl_url_set(u, CURLUPART_URL, m->url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		size_t n = strlen(host);

		/* an IPv6 literal comes back in brackets */
		if (n >= 2 && host[0] == '[' && host[n - 1] == ']')
			snprintf(m->host, sizeof m->host, "%.*s", (int)(n - 2), host + 1);
		else
			snprintf(m->host, sizeof m->host, "%s", host);
		r = 0;
	}
	curl_free(host);
	curl_url_cleanup(u);
	return r;
}

static int
msg_start(struct notify *n, struct notify_msg *m)
{
	CURL *c;

	pthread_mutex_lock(&n->mu);
	if (n->restricted && !m->restricted) {
		m->restricted = 1;
		m->nrules = n->nrules;
		m->rules = n->nrules > 0 ? xcalloc((size_t)n->nrules, sizeof *m->rules) : NULL;
		if (n->nrules > 0)
			memcpy(m->rules, n->rules, sizeof *m->rules * (size_t)n->nrules);
	}
	pthread_mutex_unlock(&n->mu);
	if (m->restricted && m->host[0] == '\0' && msg_host(m) != 0)
		return -EINVAL;
	c = curl_easy_init();
	if (c == NULL)
		return -ENOMEM;
	m->why[0] = '\0';
	m->opened = 0;
	if (m->hdrs == NULL)
		m->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, m->url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, m->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(m->body));
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, m->hdrs);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, NOTIFY_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, NOTIFY_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard_cb);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "fuseboxd-notify");
	curl_easy_setopt(c, CURLOPT_PRIVATE, m);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, opensocket_cb);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, m);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	m->easy = c;
	m->attempt++;
	curl_multi_add_handle(n->multi, c);
	return 0;
}

/* Unlink m from the worker's list and count how it ended (1 delivered, 0 failed, -1 refused). */
static void
msg_finish(struct notify *n, struct notify_msg *m, int delivered)
{
	struct notify_msg **pp;

	for (pp = &n->active; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	}
	pthread_mutex_lock(&n->mu);
	if (delivered > 0)
		n->stats.delivered++;
	else if (delivered < 0)
		n->stats.refused++;
	else
		n->stats.failed++;
	n->held--;
	pthread_mutex_unlock(&n->mu);
	msg_free(m);
}

static void
transfer_done(struct notify *n, CURL *c, CURLcode res)
{
	struct notify_msg *m = NULL;
	long status = 0;
	int retry;

	curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&m);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(n->multi, c);
	curl_easy_cleanup(c);
	m->easy = NULL;
	if (res == CURLE_OK && status >= 200 && status < 300) {
		msg_finish(n, m, 1);
		return;
	}
	if (m->why[0] != '\0' && !m->opened) {
		log_warn("notify", "%s to %s refused: %s", m->kind, m->url, m->why);
		msg_finish(n, m, -1);
		return;
	}
	retry = res != CURLE_OK || status >= 500 || status == 429;
	if (retry && m->attempt < m->tries) {
		int64_t backoff = 1000LL << MIN(m->attempt - 1, 16);

		m->next_at_ms = clock_mono_ms() + MIN(backoff, NOTIFY_MAX_BACKOFF_MS);
		log_debug("notify", "%s to %s: %s (status %ld), retry %d/%d", m->kind, m->url,
			  res != CURLE_OK ? curl_easy_strerror(res) : "http error", status,
			  m->attempt, m->tries);
		return;
	}
	log_warn("notify", "%s to %s failed after %d tries: %s (status %ld)", m->kind, m->url,
		 m->attempt, res != CURLE_OK ? curl_easy_strerror(res) : "http error", status);
	msg_finish(n, m, 0);
}

static void *
notify_main(void *arg)
{
	struct notify *n = arg;
	struct notify_msg *m;

	for (;;) {
		struct notify_msg *in, *next;
		int64_t now, wait_ms = 1000;
		int running, left, stopping, give_up;
		CURLMsg *cm;

		pthread_mutex_lock(&n->mu);
		in = n->incoming;
		n->incoming = NULL;
		stopping = n->stopping;
		give_up = stopping && clock_mono_ms() >= n->stop_at_ms;
		pthread_mutex_unlock(&n->mu);
		for (; in != NULL; in = next) {
			next = in->next;
			in->next = n->active;
			n->active = in;
		}
		if (stopping && (n->active == NULL || give_up))
			break;
		now = clock_mono_ms();
		for (m = n->active; m != NULL; m = m->next) {
			if (m->easy != NULL)
				continue;
			if (m->next_at_ms <= now) {
				int sr = msg_start(n, m);

				if (sr == -EINVAL) {
					log_warn("notify",
						 "%s to %s refused: no host curl can read", m->kind,
						 m->url);
					msg_finish(n, m, -1);
					wait_ms = 1;
					break; /* the list changed under the walk */
				}
				if (sr != 0)
					m->next_at_ms = now + 1000;
			} else {
				wait_ms = MIN(wait_ms, m->next_at_ms - now);
			}
		}
		curl_multi_perform(n->multi, &running);
		while ((cm = curl_multi_info_read(n->multi, &left)) != NULL)
			if (cm->msg == CURLMSG_DONE)
				transfer_done(n, cm->easy_handle, cm->data.result);
		if (stopping)
			wait_ms = MIN(wait_ms, 50);
		curl_multi_poll(n->multi, NULL, 0, (int)MAX(wait_ms, 1), NULL);
		curl_multi_perform(n->multi, &running);
		while ((cm = curl_multi_info_read(n->multi, &left)) != NULL)
			if (cm->msg == CURLMSG_DONE)
				transfer_done(n, cm->easy_handle, cm->data.result);
	}
	/* Out of grace: whatever is left fails. */
	while (n->active != NULL) {
		m = n->active;
		if (m->easy != NULL) {
			curl_multi_remove_handle(n->multi, m->easy);
			curl_easy_cleanup(m->easy);
			m->easy = NULL;
		}
		log_warn("notify", "%s to %s dropped at shutdown", m->kind, m->url);
		msg_finish(n, m, 0);
	}
	return NULL;
}

int
notify_new(int queue_cap, struct notify **out)
{
	struct notify *n = xcalloc(1, sizeof *n);
	int r = 0;

	pthread_mutex_init(&n->mu, NULL);
	n->cap = MAX(queue_cap, 1);
	n->multi = curl_multi_init();
	if (n->multi == NULL) {
		r = -ENOMEM;
		goto out;
	}
	r = pthread_create(&n->thread, NULL, notify_main, n);
	if (r != 0) {
		r = -r;
		goto out;
	}
	n->started = 1;
	*out = n;
	n = NULL;
out:
	if (n != NULL) {
		if (n->multi)
			curl_multi_cleanup(n->multi);
		pthread_mutex_destroy(&n->mu);
		free(n);
	}
	return r;
}

void
notify_free(struct notify *n, int grace_ms)
{
	struct notify_msg *m, *next;

	if (n == NULL)
		return;
	pthread_mutex_lock(&n->mu);
	n->stopping = 1;
	n->stop_at_ms = clock_mono_ms() + MAX(grace_ms, 0);
	pthread_mutex_unlock(&n->mu);
	curl_multi_wakeup(n->multi);
	if (n->started)
		pthread_join(n->thread, NULL);
	for (m = n->incoming; m != NULL; m = next) {
		next = m->next;
		msg_free(m);
	}
	curl_multi_cleanup(n->multi);
	pthread_mutex_destroy(&n->mu);
	free(n->rules);
	free(n);
}

void
notify_allow_set(struct notify *n, const struct addr_rule *rules, int nrules)
{
	struct addr_rule *copy = NULL;

	if (n == NULL)
		return;
	if (nrules > 0) {
		copy = xcalloc((size_t)nrules, sizeof *copy);
		memcpy(copy, rules, sizeof *copy * (size_t)nrules);
	}
	pthread_mutex_lock(&n->mu);
	free(n->rules);
	n->rules = copy;
	n->nrules = MAX(nrules, 0);
	n->restricted = 1;
	pthread_mutex_unlock(&n->mu);
}

int
notify_post(struct notify *n, const char *url, const char *body, const char *kind, int tries)
{
	struct notify_msg *m, **pp;
	int r = 0;

	if (n == NULL || url == NULL || body == NULL)
		return -EINVAL;
	if (strlen(body) > NOTIFY_MAX_BODY)
		return -E2BIG;
	pthread_mutex_lock(&n->mu);
	if (n->stopping || n->held >= n->cap) {
		n->stats.dropped++;
		pthread_mutex_unlock(&n->mu);
		log_warn("notify", "%s to %s dropped: queue full", kind ? kind : "message", url);
		r = -ENOSPC;
		goto out;
	}
	m = xcalloc(1, sizeof *m);
	m->url = xstrdup(url);
	m->body = xstrdup(body);
	m->kind = xstrdup(kind ? kind : "message");
	m->tries = MAX(tries, 1);
	/* Keep posting order: append. */
	for (pp = &n->incoming; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = m;
	n->held++;
	n->stats.queued++;
	pthread_mutex_unlock(&n->mu);
	curl_multi_wakeup(n->multi);
out:
	return r;
}

void
notify_get_stats(struct notify *n, struct notify_stats *out)
{
	memset(out, 0, sizeof *out);
	if (n == NULL)
		return;
	pthread_mutex_lock(&n->mu);
	*out = n->stats;
	pthread_mutex_unlock(&n->mu);
}
