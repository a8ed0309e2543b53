#pragma once
/*
 * fleet_console_int: what the fleet console's files share (not a public
 * header). The files, each calling only the ones below it:
 *   fleet_console.c  the loop and the keys
 *   fleet_draw.c     the view state (fleet_ui) and its drawing
 *   fleet_reviews.c  the merged review queue: its rows, claim and decide
 *   fleet_act.c      fan-out: the form, sending, the per-host result
 *   fleet_host.c     the hosts (fleet_fc) and the poller thread
 *   fleet_sums.c     the overview's sums (pure, fleet_console.h)
 *
 * Threads: the poller owns the schedule (fleet_poll) and the requests
 * (per host and round: state, slo, alerts and the open reviews); it
 * swaps each host's parsed answers into fleet_fc.h[i] under fleet_fc.mu
 * and writes a byte to a pipe. The UI thread sums under fleet_fc.mu at
 * each draw. While a host's single-daemon screens are up, or a fan-out or
 * a review decision is sent, the poller is paused (it holds fleet_fc.busy
 * during a round, so pausing waits for the round in flight).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "client.h"
#include "fleet.h"
#include "fleet_cli.h"
#include "fleet_fetch.h"
#include "fleet_console.h"
#include "model.h"
#include "widgets.h"

/* --- fleet_host.c --- */

struct fhost {
	struct client c;
	char *init_error;    /* the client could not be set up: down with this */
	struct fleet_poll p; /* poller thread only */
	atomic_int kick;     /* UI: it just answered a fan-out; ask it now if in backoff */
	/* Under fc.mu. */
	int seen, up;
	int64_t down_since; /* wall ms */
	char error[512];
	struct state_v *state;
	struct slo_v *slo;
	struct alerts_v *alerts;
	struct reviews_v *reviews; /* open items (NULL while down) */
	char rev_error[512];	   /* GET /v1/reviews failed though the host is up */
};

struct fleet_fc {
	const struct fleet *f;
	struct fhost *h;
	pthread_mutex_t mu, busy;
	pthread_t th;
	int wake[2]; /* UI -> poller */
	int note[2]; /* poller -> UI */
	atomic_int stop, paused;
};

extern struct fleet_fc fleet_fc;

void fleet_pipe_drain(int fd);
void fleet_pipe_poke(int fd);
void *fleet_poller(void *arg);
/* 1: pause the poller, waiting for its round in flight; 0: resume it. */
void fleet_pause_poller(int on);
void fleet_hosts_init(const char *token, int role);
int fleet_pipes_open(void);

/* --- fleet_act.c: one fan-out at a time --- */

enum fleet_act_kind { FLEET_ACT_LEVEL, FLEET_ACT_RELEASE, FLEET_ACT_WEIGHTS, FLEET_ACT_BREAKER };

struct fleet_act {
	struct form form;
	enum fleet_act_kind kind;
	int level;		    /* L: 0..3 */
	char route[MODEL_NAME_MAX]; /* the route, or B: the backend */
	char desc[1024];	    /* "Force route R to L2" */
	char reason[FIELD_TEXT_MAX];
	int64_t ttl_s;			 /* 0: none */
	char scope[FIELD_TEXT_MAX + 16]; /* "all hosts", "group eu", "hosts h1,h3" */
	char aid[64];			 /* the one action id, kept across retries */
	struct fleet_fanout fo;
	int *sel;		  /* the hosts the action is for */
	struct fleet_result *res; /* per host, the last try's outcome */
	int *try_of;		  /* per host, the try that gave res[i] */
	int nsel, failed, tries;
	int back; /* the view Esc returns to */
};

extern struct fleet_act fleet_act;

/*
 * The form for kind on name (a route; B: a backend, may be ""); mark: the
 * hosts marked with Space (preset as the scope).
 */
void fleet_act_open(enum fleet_act_kind kind, const char *name, const int *mark);
/* y on the confirmation page: the first try. back: the view Esc returns to. */
void fleet_act_start(int back);
/* r on the result: the failed hosts only, with the same action id. */
void fleet_act_retry(void);
void fleet_act_draw_result(int top, int rows, int cols);

/* --- fleet_reviews.c: the merged review queue (VIEW_REVIEWS) --- */

struct fleet_rq {
	struct listsel ls;
	int page;	  /* list rows at the last draw */
	struct form form; /* claim or decision on one item, confirmed first */
	int host;	  /* the form's item's host */
	char msg[640];	  /* the last answer: "h2: reject review #7: done" */
	int msg_bad;
};

extern struct fleet_rq fleet_rq;

/* The rows from top (the down hosts are named above by the caller). Under fleet_fc.mu. */
void fleet_reviews_draw(int top, int rows, int cols, int64_t now_wall);
/* A key on the view (or its form); 0 when not taken. Not under fleet_fc.mu. */
int fleet_reviews_key(int k);
void fleet_reviews_free(void);

/* --- fleet_draw.c --- */

enum { VIEW_ROUTES, VIEW_HOSTS, VIEW_RESULT, VIEW_REVIEWS };

struct fleet_ui {
	const char *path;
	int view;
	struct listsel rs, hs;
	int *mark;		    /* hosts marked with Space: the fan-out scope "these hosts" */
	char route[MODEL_NAME_MAX]; /* VIEW_HOSTS: its route */
	int utf8;
	int quit;
	int help; /* the help box is up; the next key closes it */
	int page; /* list rows at the last draw */
	char msg[256];
};

extern struct fleet_ui fleet_ui;

void fleet_draw(const struct fleet_sums *s);
