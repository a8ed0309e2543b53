#pragma once
/*
 * console_ctx: the console's state (struct console) and what a screen may
 * do with it: put up a message, open a form, send a change, ask for another
 * screen, read its filter and the endpoints' errors. It knows no screen:
 * the screens are const descriptors (tui/screen_*.c) that console.c
 * collects in one table and drives; their key handlers return what to do
 * next. UI thread only.
 */
#include <stdint.h>

#include "client.h"
#include "fetch.h"
#include "model.h"
#include "widgets.h"

enum next {
	NEXT_PASS = 0, /* not handled here: the console's global keys get it */
	NEXT_DONE,     /* handled: redraw */
	NEXT_QUIT,
};

struct screen {
	const char *name;
	const char *const *help; /* NULL-terminated "key  what" lines for '?' */
	unsigned want;		 /* FETCH_BIT()s polled while it is shown (state always) */
	void (*init)(struct console *c);
	/* Draw the body: rows lines from row top, cols columns. */
	void (*draw)(struct console *c, int top, int rows, int cols);
	enum next (*key)(struct console *c, int key);
	/* Key hints for the footer: all, and the operator ones (hidden for viewers). */
	const char *hints;
	const char *op_hints;
};

#define CONSOLE_ACTIONS 8

enum { SCR_OVERVIEW, SCR_BREAKERS, SCR_REVIEWS, SCR_SLO, SCR_ROUTES, SCR_EVENTS, SCR__COUNT };

struct endpoint_status {
	int seen;      /* an answer (or failure) arrived */
	int ok;	       /* the last one was a parsed 2xx */
	long status;   /* its HTTP status (0: none) */
	char err[320]; /* its error line when !ok */
};

struct console {
	struct client *cli;
	struct fetch *fetch;
	int utf8;
	int screen;

	/* Last good answers; kept (and drawn greyed) while disconnected. */
	struct state_v *state;
	struct slo_v *slo;
	struct alerts_v *alerts;
	struct reviews_v *reviews;
	struct event_ring events; /* polled on every screen: causes read it */
	struct history hist;
	struct rate_track rates;   /* per-minute rates of the state's counters (hedges) */
	struct slo_hist_v *hist_d; /* the daemon's per-minute history (NULL: none yet) */
	struct audit_list audit;
	struct endpoint_status ep[FETCH__COUNT];
	int connected;		/* the last /v1/state poll got an HTTP answer */
	int64_t down_since;	/* monotonic ms when it went away */
	int64_t down_wall;	/* the same, wall ms (the status row says since when) */
	int64_t reconnected_at; /* wall ms of the first answer after it went away */
	char moved_from[512];	/* the URL it answered on before it moved ("" same) */
	int64_t restart_at;	/* wall ms when the daemon was seen restarting (uptime went back) */

	/* UI */
	char filter[SCR__COUNT][128];
	int filtering;
	struct field filter_field;
	struct form form;
	struct form sent; /* the form whose change is on its way */
	int help;	  /* the help box is up; the next key closes it and still acts */
	int quit_asked;	  /* q warned about overrides left in force; q again quits */
	char msg[512];
	int msg_err;
	int64_t msg_at;
	struct sent_action {
		int tag; /* fetch_action()'s tag */
		char label[320];
	} actions[CONSOLE_ACTIONS]; /* the last changes sent, to name their answers */
	int nactions;
	int64_t now_wall; /* refreshed before each draw and key */
	int64_t now_mono;
	int quit;
	int back;		/* Esc on a fleet's host: back to the fleet views */
	const char *fleet_host; /* the host's name in the fleet file, or NULL (no fleet) */
	/*
	 * What a screen asked for: a screen (SCR_*, -1: none) that console.c
	 * shows after the key handler, and the route the Routes screen selects
	 * at its next draw ("" none).
	 */
	int next_screen;
	char route_select[MODEL_NAME_MAX];
};

/*
 * Operator actions: 1 when allowed; 0 when the token is known to be a
 * viewer's (or caller's), after putting up a message that says so.
 */
int console_can_operate(struct console *c);
/*
 * A message on its own line above the key hints (until replaced, Esc, or
 * a few seconds: 8 s, an error 15 s).
 */
void console_msg(struct console *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Send a change to the daemon (off the UI thread); label names it in the
 * messages ("force intent to L2"). The daemon's answer, errors included,
 * becomes the footer message, and the next poll starts at once.
 */
void console_send(struct console *c, const char *label, const char *method, const char *path,
		  const char *body);
/*
 * Ask for screen i (SCR_*): the console shows it, and polls what it needs,
 * as soon as the current key handler returns.
 */
void console_switch(struct console *c, int i);
/* Switch to the Routes screen with route selected. */
void console_route_select(struct console *c, const char *route);
/* Open a modal form (copied). */
void console_form(struct console *c, const struct form *f);
/* The current screen's filter ("" when none). */
const char *console_filter(const struct console *c, int screen);
/* A one-line error for the endpoint, or NULL when its last answer was fine. */
const char *console_ep_error(const struct console *c, enum fetch_kind k);
