/*
 * attempt_gate: the h2 connection gate between an attempt and libcurl's
 * multi handle (why and how: the comment at the top of attempt_gate.c).
 * Engine thread.
 */
#include "attempt_gate.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "util.h"

/*
 * libcurl keeps an attempt's upload buffer (16 KiB, its minimum; the body
 * is copied into it on HTTP/2, one page touched) until the transfer ends,
 * a whole wait. Once the body is out (curl's progress says so) setting
 * CURLOPT_UPLOAD_BUFFERSIZE again frees it (libcurl 7.88: "force a realloc
 * next opportunity"; a re-send on a dead connection gets a new one). Not
 * inside curl's callback: on the next turn, by a timer.
 */
static int
on_progress(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
	    curl_off_t ulnow)
{
	struct attempt_gw *a = clientp;

	if (!a->ulbuf_freed && ultotal > 0 && ulnow >= ultotal) {
		a->ulbuf_freed = 1;
		engine_timer_arm(a->e, &a->t_ulbuf, clock_mono_us());
	}
	return 0;
}

static void
attempt_timer_ulbuf(struct timer *t, void *arg)
{
	struct attempt_gw *a = arg;

	curl_easy_setopt(a->easy, CURLOPT_UPLOAD_BUFFERSIZE, 16384L);
}

/*
 * The h2 connection gate. libcurl 7.88 multiplexes a transfer only onto a
 * connection that is up: while every established connection to a host is
 * at its stream limit, each transfer started opens a connection of its
 * own, PIPEWAIT or not (it waits only for a host's very first one). A
 * burst of 1,000 calls opened ~200 TLS connections, 190 of them carrying
 * one stream, at ~65 KB each; curl's own tool does the same (300 parallel
 * transfers: 201 connections). So the attempts on a multiplexed host are
 * handed to curl here: at once while its connections have room
 * (H2_GATE_STREAMS a connection: libcurl's default
 * CURLMOPT_MAX_CONCURRENT_STREAMS), else held in a queue while one of them
 * (up to H2_GATE_OPENERS, one per H2_GATE_STREAMS held) opens a
 * connection; once that one's request is out, the held ones follow onto
 * it. The counts are estimates (curl closes idle connections unseen): a
 * wrong one only lets curl do what it does alone, and is corrected when
 * curl opens a connection the gate thought unneeded. A held attempt's
 * timers run: cut while held, it leaves the queue. A host is its URL;
 * gates are per engine. Engine thread.
 */
#define H2_GATE_STREAMS 100
#define H2_GATE_OPENERS 8
#define H2_GATE_HOSTS	64
#define H2_GATE_URL_MAX 512

enum { GW_NONE = 0, GW_HELD, GW_ADDED, GW_SENT };

struct h2_gate {
	const struct engine *e; /* NULL: free */
	char url[H2_GATE_URL_MAX];
	struct attempt_gw *head, *tail; /* held back, oldest first */
	int held;
	int streams; /* attempts handed to curl and not ended */
	int opening; /* of those, openers whose request is not out yet */
	int conns;   /* connections believed up */
};

static struct h2_gate h2_gates[H2_GATE_HOSTS];

/* The gate of e's attempts on url; NULL (not gated) when the table is full or the URL long. */
static struct h2_gate *
gate_of(const struct engine *e, const char *url)
{
	struct h2_gate *spare = NULL;
	int i;

	if (strlen(url) >= H2_GATE_URL_MAX)
		return NULL;
	for (i = 0; i < H2_GATE_HOSTS; i++) {
		struct h2_gate *g = &h2_gates[i];

		if (g->e == e && strcmp(g->url, url) == 0)
			return g;
		if (spare == NULL && (g->e == NULL || (g->streams == 0 && g->held == 0)))
			spare = g;
	}
	if (spare != NULL) {
		memset(spare, 0, sizeof *spare);
		spare->e = e;
		snprintf(spare->url, sizeof spare->url, "%s", url);
	}
	return spare;
}

/* Free stream slots on the connections believed up. */
static int
gate_fit(const struct h2_gate *g)
{
	return g->conns * H2_GATE_STREAMS - (g->streams - g->opening);
}

static void
gate_hand(struct attempt_gw *a, int opener)
{
	struct h2_gate *g = a->gate;

	a->state = GW_ADDED;
	a->opener = opener;
	g->streams++;
	g->opening += opener;
	curl_multi_add_handle(a->e->multi, a->easy);
}

/* Hand the held attempts that fit to curl, openers for the rest (not in a curl callback). */
static void
gate_release(struct h2_gate *g)
{
	struct attempt_gw *a;
	int opener;

	while ((a = g->head) != NULL) {
		if (gate_fit(g) > 0)
			opener = 0;
		else if (g->opening < MIN(H2_GATE_OPENERS, 1 + (g->held - 1) / H2_GATE_STREAMS))
			opener = 1;
		else
			break;
		g->head = a->next;
		if (g->head == NULL)
			g->tail = NULL;
		a->next = NULL;
		g->held--;
		gate_hand(a, opener);
	}
}

static void
gate_timer(struct timer *t, void *arg)
{
	struct attempt_gw *a = arg;

	if (a->gate != NULL)
		gate_release(a->gate);
}

/* Hand a to curl now or hold it back (the last step of attempt_start). */
static void
gate_submit(struct attempt_gw *a)
{
	struct h2_gate *g = a->gate;

	/* idle: its connections may be gone (curl closes idle ones unseen);
	 * counted anew, a first attempt that finds one up costs a loop turn */
	if (g->streams == 0 && g->held == 0)
		g->conns = 0;
	a->state = GW_HELD;
	if (g->tail)
		g->tail->next = a;
	else
		g->head = a;
	g->tail = a;
	g->held++;
	gate_release(g);
}

/* a's request goes out (curl's prereq callback): its connection is up. */
void
attempt_gate_settled(struct attempt_gw *a)
{
	struct h2_gate *g = a->gate;
	long fresh = 0;

	if (g == NULL || a->state != GW_ADDED)
		return;
	a->state = GW_SENT;
	curl_easy_getinfo(a->easy, CURLINFO_NUM_CONNECTS, &fresh);
	if (a->opener) {
		g->opening--;
		a->opener = 0;
	} else if (fresh > 0) {
		/* curl found no room where the gate saw some: recount */
		g->conns = (g->streams - g->opening - 1 + H2_GATE_STREAMS - 1) / H2_GATE_STREAMS;
	}
	if (fresh > 0)
		g->conns++;
	else
		/* on a connection up already: at least the ones these streams need */
		g->conns = MAX(g->conns,
			       (g->streams - g->opening + H2_GATE_STREAMS - 1) / H2_GATE_STREAMS);
	/* curl refuses new handles inside its callbacks: release on the next turn */
	if (g->head != NULL)
		engine_timer_arm(a->e, &a->t_gate, clock_mono_us());
}

/* a ends: out of the queue, or its stream no longer counted. */
static void
gate_leave(struct attempt_gw *a)
{
	struct h2_gate *g = a->gate;
	struct attempt_gw **pp;

	if (g == NULL)
		return;
	engine_timer_cancel(a->e, &a->t_gate);
	if (a->state == GW_HELD) {
		for (pp = &g->head; *pp != NULL && *pp != a; pp = &(*pp)->next)
			;
		if (*pp == a) {
			*pp = a->next;
			if (g->tail == a) {
				struct attempt_gw *p;

				g->tail = NULL;
				for (p = g->head; p != NULL; p = p->next)
					g->tail = p;
			}
			g->held--;
		}
	} else if (a->state != GW_NONE) {
		g->streams--;
		if (a->opener)
			g->opening--; /* it never got its connection */
	}
	a->gate = NULL;
	a->state = GW_NONE;
	a->next = NULL;
}

void
attempt_gate_start(struct attempt_gw *a, struct engine *e, CURL *easy, const struct backend_cfg *bc)
{
	a->e = e;
	a->easy = easy;
	timer_init(&a->t_ulbuf, "upload_buffer", attempt_timer_ulbuf, a);
	timer_init(&a->t_gate, "h2_gate", gate_timer, a);
	if (bc->http_version != HTTP_VERSION_1_1) {
		/* only h2 copies the body into the upload buffer: HTTP/1.1
		 * attempts (the common fast path) pay no progress callback */
		curl_easy_setopt(a->easy, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(a->easy, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(a->easy, CURLOPT_XFERINFODATA, a);
		if (strncmp(bc->url, "https://", 8) == 0 || e->h2c_reuse)
			a->gate = gate_of(e, bc->url);
	}
	if (a->gate != NULL)
		gate_submit(a);
	else
		curl_multi_add_handle(e->multi, a->easy);
}

void
attempt_gate_end(struct attempt_gw *a)
{
	struct h2_gate *g = a->gate;

	if (a->e == NULL)
		return; /* never started */
	engine_timer_cancel(a->e, &a->t_ulbuf);
	gate_leave(a);
	if (g != NULL)
		gate_release(g);
}
