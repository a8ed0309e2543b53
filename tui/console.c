/*
 * console: the ncurses loop (see console.h).
 *
 * Layout: row 0 title and screen tabs; row 1 connection status; rows
 * 2..LINES-2 the current screen; the last row the footer (filter input,
 * message, or key hints). Overlays (help, forms) are drawn last into the
 * same virtual screen.
 *
 * Redraw policy: whenever something changed (a result, a key, a resize)
 * and once per wall-clock second (countdowns): erase(), draw everything,
 * one doupdate(). clear() is never called, so ncurses' diff against what
 * the terminal shows sends only the changed cells: no flicker.
 *
 * Disconnected: when the state poll receives no HTTP answer, the status row
 * says "daemon unreachable since hh:mm:ss (why)" and the last data are
 * drawn greyed; polls keep going every second (to the URL the address
 * file names by then, fetch.h) and the first answer brings the colours
 * back, the status row saying "reconnected at hh:mm:ss" for a minute.
 *
 * The Why panel (why.h) is drawn over the screen's body while it is up and
 * takes the keys it knows; any other key closes it and acts.
 */
#include "console.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "console_ctx.h"
#include "fmt.h"
#include "screen_breakers.h"
#include "screen_events.h"
#include "screen_overview.h"
#include "screen_reviews.h"
#include "screen_routes.h"
#include "screen_slo.h"
#include "tokens.h"
#include "util.h"
#include "why.h"

#define REQUEST_TIMEOUT_MS 800
#define EVENTS_KEPT	   2000
#define MSG_TTL_MS	   8000
#define MSG_ERR_TTL_MS	   15000
#define RESTART_SHOWN_MS   (10 * 60000)
#define AUDIT_KEPT	   2000
#define COALESCE_MS	   15
#define RECONNECT_SHOWN_MS 60000
/*
 * Polled on every screen: causes read the events, sparklines the history,
 * and a key pressed on the Reviews screen at once finds the queue loaded.
 */
#define WANT_ALWAYS (FETCH_BIT(FETCH_EVENTS) | FETCH_BIT(FETCH_HISTORY) | FETCH_BIT(FETCH_REVIEWS))

static const struct screen *const screens[SCR__COUNT] = {
	[SCR_OVERVIEW] = &screen_overview, [SCR_BREAKERS] = &screen_breakers,
	[SCR_REVIEWS] = &screen_reviews,   [SCR_SLO] = &screen_slo,
	[SCR_ROUTES] = &screen_routes,	   [SCR_EVENTS] = &screen_events,
};

static const char *const global_help[] = {
	"1-6  Tab  S-Tab   switch screen",
	"j k  arrows       move",
	"PgUp PgDn g G     page, first, last",
	"/                 filter the list (Enter keeps, Esc clears)",
	"Esc               back / clear filter / clear message",
	"?                 this help (the next key closes it and acts)",
	"q                 quit (warns first while overrides without TTL remain)",
	NULL,
};

/* Show screen i (SCR_*) and poll what it needs now. */
static void
show(struct console *c, int i)
{
	c->screen = i;
	c->filtering = 0;
	fetch_want(c->fetch, screens[i]->want | WANT_ALWAYS);
	fetch_kick(c->fetch);
}

/* What the daemon said to a change, in one line. */
static void
action_answer(struct console *c, struct fetch_result *r)
{
	struct route_v rv;
	const char *what = "change";
	const cJSON *st;
	cJSON *ans = NULL;
	char *cause = NULL;
	int i;

	for (i = 0; i < CONSOLE_ACTIONS; i++)
		if (c->actions[i].tag == r->tag)
			what = c->actions[i].label;

	if (r->error != NULL) {
		if (r->status == 403)
			c->cli->role = ROLE_VIEWER;
		console_msg(c, 1, "%s: refused: %s", what, r->error);
		/* A rejected form comes back with the daemon's words, to be fixed. */
		if (r->status == 400 && c->sent.reopen_on_400 && !c->form.active) {
			c->form = c->sent;
			c->form.active = 1;
			c->form.confirming = 0;
			snprintf(c->form.error, sizeof c->form.error, "%s", r->error);
		}
		goto out;
	}
	if (r->body != NULL && strstr(r->body, "\"targets\"") != NULL &&
	    model_parse_route(r->body, r->len, &rv, &cause) == 0) {
		if (rv.forced)
			console_msg(c, 0, "%s: done (%ld): %s now L%d, forced by %s", what,
				    r->status, rv.name, rv.level, rv.forced_actor);
		else
			console_msg(c, 0, "%s: done (%ld): %s now L%d (auto)", what, r->status,
				    rv.name, rv.level);
		goto out;
	}
	/* A backend object: say the breaker's new state; a review item: its state. */
	ans = r->body != NULL ? cJSON_ParseWithLength(r->body, r->len) : NULL;
	st = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ans, "breaker"),
					      "state");
	if (!cJSON_IsString(st))
		st = cJSON_GetObjectItemCaseSensitive(ans, "state");
	if (cJSON_IsString(st))
		console_msg(c, 0, "%s: done (%ld): now %s", what, r->status, st->valuestring);
	else
		console_msg(c, 0, "%s: done (%ld)", what, r->status);
out:
	cJSON_Delete(ans);
	free(cause);
	fetch_kick(c->fetch);
}

static void
push_history(struct console *c)
{
	const struct slo_route_v *sr;
	int i;

	for (i = 0; i < c->state->nroutes; i++) {
		const struct route_v *r = &c->state->routes[i];

		sr = slo_route(c->slo, r->name);
		history_push(&c->hist, r->name, r->rps, sr != NULL ? sr->w[SLO_5M].smart : NAN);
	}
}

/*
 * The daemon restarted when its uptime went back (or it started at another
 * time): say so, and what the old process had that the new one has not
 * (automatic levels and breaker states live in memory; forced levels,
 * weights and breakers are restored from the database).
 */
static void
check_restart(struct console *c, const struct state_v *old, const struct state_v *now)
{
	char lost[400] = "", item[128], when[32];
	size_t n;
	int i;

	if (old == NULL || now->uptime_s < 0 || old->uptime_s < 0)
		return;
	if (now->uptime_s >= old->uptime_s && (old->started_at == 0 || now->started_at == 0 ||
					       llabs(now->started_at - old->started_at) < 2000))
		return;
	for (i = 0; i < old->nroutes; i++) {
		const struct route_v *o = &old->routes[i], *r = state_route(now, o->name);

		item[0] = '\0';
		if (o->forced && (r == NULL || !r->forced))
			snprintf(item, sizeof item, "%s forced L%d", o->name, o->forced_lvl);
		else if (o->auto_level > 0 && (r == NULL || r->auto_level < o->auto_level))
			snprintf(item, sizeof item, "%s auto L%d", o->name, o->auto_level);
		if (item[0] && (n = strlen(lost)) + strlen(item) + 3 < sizeof lost)
			snprintf(lost + n, sizeof lost - n, "%s%s", n ? ", " : "", item);
	}
	for (i = 0; i < old->nbackends; i++) {
		const struct backend_v *o = &old->backends[i], *b = state_backend(now, o->name);

		if (o->st == BS_CLOSED || (b != NULL && b->st == o->st))
			continue;
		snprintf(item, sizeof item, "%s %s", o->name, breaker_words(o->st, o->state));
		if ((n = strlen(lost)) + strlen(item) + 3 < sizeof lost)
			snprintf(lost + n, sizeof lost - n, "%s%s", n ? ", " : "", item);
	}
	c->restart_at = clock_wall_ms();
	fmt_clock(when, sizeof when, c->restart_at, c->restart_at);
	console_msg(c, 1, "fuseboxd restarted (uptime went back) at %s: %s%s", when,
		    lost[0] ? "did not survive: " : "nothing lost: levels and breakers as before",
		    lost);
}

static void
merge(struct console *c, struct fetch_result *r)
{
	struct endpoint_status *ep = &c->ep[r->kind];

	if (r->kind == FETCH_ACTION) {
		action_answer(c, r);
		return;
	}
	if (r->kind == FETCH_DIAGNOSE) {
		why_merge(c, r);
		return;
	}
	ep->seen = 1;
	ep->ok = r->error == NULL;
	ep->status = r->status;
	if (r->error != NULL)
		snprintf(ep->err, sizeof ep->err, "%s", r->error);
	if (r->kind == FETCH_STATE) {
		if (r->transport) {
			if (c->connected || c->down_since == 0) {
				c->down_since = r->done_ms;
				c->down_wall = clock_wall_ms();
			}
			c->connected = 0;
		} else {
			if (!c->connected && c->down_since != 0) {
				c->reconnected_at = clock_wall_ms();
				c->moved_from[0] = '\0';
			}
			c->connected = 1;
			c->down_since = 0;
		}
		/* The address file named another URL and the daemon answered there. */
		if (!r->transport && r->base[0] && strcmp(r->base, c->cli->base) != 0) {
			snprintf(c->moved_from, sizeof c->moved_from, "%s", c->cli->base);
			snprintf(c->cli->base, sizeof c->cli->base, "%s", r->base);
		}
	}
	if (r->error != NULL)
		return;
	switch (r->kind) {
	case FETCH_STATE:
		check_restart(c, c->state, r->state);
		state_free(c->state);
		c->state = r->state;
		r->state = NULL;
		rates_update(&c->rates, c->state, r->done_ms);
		push_history(c);
		break;
	case FETCH_SLO:
		slo_free(c->slo);
		c->slo = r->slo;
		r->slo = NULL;
		break;
	case FETCH_ALERTS:
		alerts_free(c->alerts);
		c->alerts = r->alerts;
		r->alerts = NULL;
		break;
	case FETCH_REVIEWS:
		reviews_free(c->reviews);
		c->reviews = r->reviews;
		r->reviews = NULL;
		break;
	case FETCH_EVENTS:
		event_ring_push(&c->events, r->events);
		break;
	case FETCH_HISTORY:
		slo_hist_free(c->hist_d);
		c->hist_d = r->hist;
		r->hist = NULL;
		break;
	case FETCH_AUDIT:
		audit_list_push(&c->audit, r->audit, AUDIT_KEPT);
		break;
	default:
		break;
	}
}

static void
draw_title(struct console *c)
{
	int x = 0, i, full = 9;

	ui_fill(0, 0, COLS, C_TITLE);
	for (i = 0; i < SCR__COUNT; i++)
		full += 4 + fmt_width(screens[i]->name);
	if (c->fleet_host != NULL)
		full += 1 + fmt_width(c->fleet_host);
	if (c->fleet_host != NULL)
		x += ui_printf(0, x, COLS - x, C_TITLE, 0, " fusebox %s ", c->fleet_host);
	else
		x += ui_put(0, x, COLS - x, C_TITLE, " fusebox ", 0);
	/* Narrow terminals: only the current tab keeps its name. */
	for (i = 0; i < SCR__COUNT && x < COLS; i++) {
		if (full <= COLS || i == c->screen)
			x += ui_printf(0, x, COLS - x, i == c->screen ? C_TAB_ACTIVE : C_TAB, 0,
				       " %d %s ", i + 1, screens[i]->name);
		else
			x += ui_printf(0, x, COLS - x, C_TAB, 0, " %d ", i + 1);
	}
	if (COLS - x > fmt_width(c->cli->base) + 2)
		ui_put(0, COLS - fmt_width(c->cli->base) - 1, fmt_width(c->cli->base), C_TITLE,
		       c->cli->base, 0);
}

/* s without "http://" (the status row is short; https:// stays as it says something). */
static void
strip_http(const char *s, char *out, size_t outsz)
{
	size_t o = 0;

	while (*s != '\0' && o + 1 < outsz) {
		if (strncmp(s, "http://", 7) == 0) {
			s += 7;
			continue;
		}
		out[o++] = *s++;
	}
	out[o] = '\0';
}

static void
draw_status(struct console *c)
{
	const struct state_v *s = c->state;
	char up[32], down[32], line[512], conn[600] = "connected";
	const char *err = console_ep_error(c, FETCH_STATE);
	const char *role = c->cli->role >= 0 ? role_name((enum role)c->cli->role) : NULL;
	int x, restarted;

	if (!c->connected && c->ep[FETCH_STATE].seen) {
		char why[sizeof c->ep[0].err];

		fmt_clock(down, sizeof down, c->down_wall, c->now_wall);
		strip_http(err ? err : "no answer", why, sizeof why);
		snprintf(line, sizeof line, " daemon unreachable since %s (%s)", down, why);
		ui_put(1, 0, COLS, C_STATUS_BAD, line, FMT_PAD);
		return;
	}
	if (!c->ep[FETCH_STATE].seen) {
		ui_printf(1, 0, COLS, C_STATUS, FMT_PAD, " connecting to %s ...", c->cli->base);
		return;
	}
	if (err != NULL) {
		ui_printf(1, 0, COLS, C_STATUS_BAD, FMT_PAD, " %s", err);
		return;
	}
	fmt_duration(up, sizeof up, s->uptime_s * 1000, 0);
	restarted = c->restart_at > 0 && c->now_wall - c->restart_at < RESTART_SHOWN_MS;
	if (c->reconnected_at > 0 && c->now_wall - c->reconnected_at < RECONNECT_SHOWN_MS) {
		char when[32];
		const char *host = c->cli->base;

		/* A minute long: when it came back, and where when that moved. */
		fmt_clock(when, sizeof when, c->reconnected_at, c->now_wall);
		if (strncmp(host, "http://", 7) == 0)
			host += 7;
		snprintf(conn, sizeof conn, "reconnected at %s%s%s", when,
			 c->moved_from[0] ? " on " : "", c->moved_from[0] ? host : "");
	}
	/* Flagged, the restart takes the place of the route and backend counts. */
	if (restarted)
		snprintf(line, sizeof line, " %s  fuseboxd %s  up %s  inflight %d%s%s%s", conn,
			 s->version, up, s->inflight, role ? "  [" : "", role ? role : "",
			 role ? "]" : "");
	else
		snprintf(line, sizeof line,
			 " %s  fuseboxd %s  up %s  inflight %d  routes %d  backends %d%s%s%s", conn,
			 s->version, up, s->inflight, s->nroutes, s->nbackends, role ? "  [" : "",
			 role ? role : "", role ? "]" : "");
	ui_put(1, 0, COLS, C_STATUS, line, FMT_PAD);
	if (restarted) {
		char when[32], flag[64];
		int w;

		fmt_clock(when, sizeof when, c->restart_at, c->now_wall);
		snprintf(flag, sizeof flag, " RESTARTED %s ", when);
		w = fmt_width(flag);
		x = MIN(fmt_width(line) + 1, COLS - w);
		ui_put(1, MAX(x, 0), w, C_STATUS_BAD, flag, 0);
	}
}

/* Rows the message takes above the footer: 0 (none, or expired), 1 or 2. */
static int
msg_rows(struct console *c)
{
	if (!c->msg[0])
		return 0;
	if (c->now_mono - c->msg_at >= (c->msg_err ? MSG_ERR_TTL_MS : MSG_TTL_MS)) {
		c->msg[0] = '\0';
		return 0;
	}
	if (LINES < 8)
		return 0;
	return fmt_width(c->msg) > COLS ? 2 : 1;
}

static void
draw_footer(struct console *c, int *cy, int *cx)
{
	const struct screen *sc = screens[c->screen];
	const char *tail =
		c->fleet_host != NULL ? "  Esc fleet  ? help  q quit" : "  ? help  q quit";
	int y = LINES - 1, x, end;
	int viewer = c->cli->role == ROLE_VIEWER || c->cli->role == ROLE_CALLER;

	if (c->filtering) {
		x = ui_put(y, 0, COLS, C_ACCENT, "filter: ", 0);
		field_draw(&c->filter_field, y, x, COLS - x, C_NORMAL, cx);
		*cy = y;
		return;
	}
	if (msg_rows(c) > 0) {
		const char *p = c->msg;
		char first[1024];
		enum colour col = c->msg_err ? C_MSG_ERR : C_MSG_OK;

		/* Its own line above the hints; a long answer takes the row above too. */
		if (msg_rows(c) == 2 && fmt_wrap(&p, COLS, first, sizeof first)) {
			ui_put(y - 2, 0, COLS, col, first, FMT_PAD);
			ui_put(y - 1, 0, COLS, col, p, FMT_PAD);
		} else {
			ui_put(y - 1, 0, COLS, col, c->msg, FMT_PAD);
		}
	}
	/* "? help  q quit" always shows; the screen's hints take the rest. */
	end = MAX(COLS - fmt_width(tail), 0);
	x = 0;
	if (why_active()) {
		x += ui_put(y, x, end - x, C_NORMAL, WHY_HINTS, 0);
		ui_put(y, x, COLS - x, C_NORMAL, tail, 0);
		return;
	}
	if (c->filter[c->screen][0])
		x += ui_printf(y, x, end - x, C_ACCENT, 0, "[/%s] ", c->filter[c->screen]);
	x += ui_put(y, x, end - x, C_NORMAL, sc->hints ? sc->hints : "", 0);
	if (sc->op_hints && !viewer)
		x += ui_printf(y, x, end - x, C_NORMAL, 0, "  %s", sc->op_hints);
	if (viewer)
		x += ui_put(y, x, end - x, C_DIM, "  (read-only token)", 0);
	ui_put(y, x, COLS - x, C_NORMAL, tail, 0);
}

static void
draw(struct console *c)
{
	const char *help[64];
	int cy = -1, cx = -1, n = 0, i;

	c->now_wall = clock_wall_ms();
	c->now_mono = clock_mono_ms();
	erase();
	draw_title(c);
	draw_status(c);
	if (LINES > 3) {
		ui_grey(!c->connected && c->ep[FETCH_STATE].seen);
		screens[c->screen]->draw(c, 2, LINES - 3 - msg_rows(c), COLS);
		ui_grey(0);
		if (why_active())
			why_draw(c, 2, LINES - 3 - msg_rows(c), COLS);
	}
	draw_footer(c, &cy, &cx);
	if (c->help) {
		for (i = 0; why_active() && why_help[i] && n < (int)ARRAY_SIZE(help) - 40; i++)
			help[n++] = why_help[i];
		if (n > 0)
			help[n++] = "";
		for (i = 0; !why_active() && screens[c->screen]->help &&
			    screens[c->screen]->help[i] && n < (int)ARRAY_SIZE(help) - 20;
		     i++)
			help[n++] = screens[c->screen]->help[i];
		help[n++] = "";
		for (i = 0; global_help[i]; i++)
			help[n++] = global_help[i];
		help[n] = NULL;
		help_draw(why_active() ? "Why" : screens[c->screen]->name, help);
	}
	if (c->form.active)
		form_draw(&c->form, &cy, &cx);
	if (cy >= 0 && cx >= 0) {
		curs_set(1);
		move(cy, cx);
	} else {
		curs_set(0);
	}
	wnoutrefresh(stdscr);
	doupdate();
}

/*
 * q: quit, unless overrides without an end stay in force after the
 * operator leaves (a forced level without TTL, a forced breaker): then say
 * which, and quit on the second q.
 */
static void
quit_key(struct console *c)
{
	char left[400] = "", item[128];
	size_t n;
	int i;

	for (i = 0; c->state != NULL && i < c->state->nroutes; i++) {
		const struct route_v *r = &c->state->routes[i];

		if (!r->forced || r->forced_until > 0)
			continue;
		snprintf(item, sizeof item, "%s L%d forced, no TTL", r->name, r->forced_lvl);
		if ((n = strlen(left)) + strlen(item) + 3 < sizeof left)
			snprintf(left + n, sizeof left - n, "%s%s", n ? ", " : "", item);
	}
	for (i = 0; c->state != NULL && i < c->state->nbackends; i++) {
		const struct backend_v *b = &c->state->backends[i];

		if (b->st != BS_FORCED_OPEN && b->st != BS_FORCED_CLOSED)
			continue;
		snprintf(item, sizeof item, "breaker %s %s", b->name,
			 breaker_words(b->st, b->state));
		if ((n = strlen(left)) + strlen(item) + 3 < sizeof left)
			snprintf(left + n, sizeof left - n, "%s%s", n ? ", " : "", item);
	}
	if (!left[0] || c->quit_asked) {
		c->quit = 1;
		return;
	}
	c->quit_asked = 1;
	console_msg(c, 1, "still in force after you leave: %s. q again quits, any other key stays",
		    left);
}

static void
key(struct console *c, int k)
{
	enum next nx;

	if (k == FK(KEY_RESIZE))
		return; /* ncurses has resized stdscr; the next draw fills it */
	c->now_wall = clock_wall_ms();
	c->now_mono = clock_mono_ms();
	if (c->form.active) {
		switch (form_key(&c->form, c, k)) {
		case FORM_CONFIRM:
			c->form.active = 0;
			c->sent = c->form;
			if (c->form.apply != NULL)
				c->form.apply(&c->form, c);
			break;
		case FORM_CANCEL:
			c->form.active = 0;
			console_msg(c, 0, "%s: cancelled", c->form.title);
			break;
		default:
			break;
		}
		return;
	}
	if (c->help) {
		/* Help is a panel, not a trap: the key that closes it also acts. */
		c->help = 0;
		if (k == K_ESC || k == '?' || k == FK(KEY_F(1)))
			return;
	}
	if (k != 'q' && k != 'Q')
		c->quit_asked = 0;
	if (c->filtering) {
		if (k == K_ESC) {
			c->filter[c->screen][0] = '\0';
			c->filtering = 0;
		} else if (k == K_ENTER || k == '\n' || k == FK(KEY_ENTER)) {
			c->filtering = 0;
		} else {
			field_key(&c->filter_field, k);
			field_get(&c->filter_field, c->filter[c->screen], sizeof c->filter[0]);
		}
		return;
	}
	/* The Why panel takes its keys; any other closes it and acts below. */
	if (why_active() && why_key(c, k))
		return;
	nx = screens[c->screen]->key(c, k);
	if (nx == NEXT_QUIT)
		c->quit = 1;
	if (nx != NEXT_PASS)
		return;
	switch (k) {
	case 'q':
	case 'Q':
		quit_key(c);
		break;
	case '?':
	case FK(KEY_F(1)):
		c->help = 1;
		break;
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
		show(c, k - '1');
		break;
	case K_TAB:
		show(c, (c->screen + 1) % SCR__COUNT);
		break;
	case FK(KEY_BTAB):
		show(c, (c->screen + SCR__COUNT - 1) % SCR__COUNT);
		break;
	case '/':
		c->filtering = 1;
		memset(&c->filter_field, 0, sizeof c->filter_field);
		field_set(&c->filter_field, c->filter[c->screen]);
		break;
	case K_ESC:
		if (c->msg[0])
			c->msg[0] = '\0';
		else if (c->filter[c->screen][0] || c->fleet_host == NULL)
			c->filter[c->screen][0] = '\0';
		else
			c->back = 1; /* a fleet's host: back to the fleet views */
		break;
	case K_CTRL('l'):
		clearok(curscr, TRUE);
		break;
	default:
		break;
	}
}

static volatile sig_atomic_t console_stop;

static void
on_signal(int sig)
{
	(void)sig;
	console_stop = 1;
}

static int
read_key(int *k)
{
	wint_t wc;
	int r = get_wch(&wc);

	if (r == ERR)
		return 0;
	*k = r == KEY_CODE_YES ? FK((int)wc) : (int)wc;
	if (*k == FK(KEY_ENTER) || *k == '\n')
		*k = K_ENTER;
	return 1;
}

/* A terminal the console cannot draw on: say so, and what works there. */
static void
refuse_terminal(const char *term)
{
	fprintf(stderr,
		"fusebox: the console needs a terminal that can move the cursor (TERM=%s has no "
		"terminfo entry with one).\n"
		"The CLI works anywhere: fusebox status, fusebox routes, fusebox breakers, "
		"fusebox reviews, fusebox events (fusebox --help).\n",
		term && term[0] ? term : "<unset>");
}

static char start_error[512];

/* The single-daemon console on an open terminal: 0 when q (or a signal), 1 when Esc went back. */
static int
console_loop(struct client *cli, const char *fleet_host)
{
	struct console c;
	struct fetch_result *res, *r;
	struct pollfd pfd[2];
	struct sigaction sa;
	char *cause = NULL;
	int rc = 0, i, k, wait_ms;

	memset(&c, 0, sizeof c);
	c.cli = cli;
	c.connected = 1;
	c.next_screen = -1;
	c.fleet_host = fleet_host;
	c.utf8 = fmt_locale_utf8();
	event_ring_init(&c.events, EVENTS_KEPT);
	if (fetch_start(cli, REQUEST_TIMEOUT_MS, &c.fetch, &cause) != 0) {
		snprintf(start_error, sizeof start_error, "%s", cause);
		free(cause);
		rc = 2;
		goto out;
	}
	for (i = 0; i < SCR__COUNT; i++)
		if (screens[i]->init)
			screens[i]->init(&c);
	show(&c, SCR_OVERVIEW);

	/* ^C, SIGTERM, SIGHUP: leave through endwin(), not with the terminal in raw mode. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	pfd[0].fd = STDIN_FILENO;
	pfd[0].events = POLLIN;
	pfd[1].fd = fetch_fd(c.fetch);
	pfd[1].events = POLLIN;
	draw(&c);
	while (!c.quit && !c.back && !console_stop) {
		/* Wake at the next wall-clock second at the latest: countdowns move. */
		wait_ms = 1000 - (int)(clock_wall_ms() % 1000) + 5;
		if (poll(pfd, 2, wait_ms) < 0 && errno != EINTR)
			break;
		/*
		 * The answers of one tick arrive a few ms apart: when only the
		 * fetch pipe woke us, give its siblings a moment so that one
		 * tick costs one redraw. Keys end the wait at once.
		 */
		if ((pfd[1].revents & POLLIN) && !(pfd[0].revents & POLLIN))
			poll(pfd, 1, COALESCE_MS);
		res = fetch_take(c.fetch);
		while ((r = res) != NULL) {
			res = r->next;
			merge(&c, r);
			fetch_result_free(r);
		}
		while (!c.quit && !c.back && read_key(&k)) {
			key(&c, k);
			if (c.next_screen >= 0) {
				show(&c, c.next_screen);
				c.next_screen = -1;
			}
		}
		if (c.quit || c.back)
			break;
		why_tick(&c);
		draw(&c);
	}
	rc = c.back && !c.quit && !console_stop;
out:
	fetch_stop(c.fetch);
	state_free(c.state);
	slo_free(c.slo);
	alerts_free(c.alerts);
	reviews_free(c.reviews);
	event_ring_free(&c.events);
	history_free(&c.hist);
	rate_track_free(&c.rates);
	slo_hist_free(c.hist_d);
	audit_list_free(&c.audit);
	why_free();
	return rc;
}

int
console_term_open(SCREEN **scr)
{
	const char *nc = getenv("NO_COLOR"), *term;
	char *cup;

	*scr = NULL;
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr,
			"fusebox: the console needs a terminal (or give a verb; see --help)\n");
		return 1;
	}
	term = getenv("TERM");
	if (term == NULL || term[0] == '\0' || strcmp(term, "dumb") == 0) {
		refuse_terminal(term);
		return 1;
	}
	fmt_set_ascii(!fmt_locale_utf8());
	/* newterm, not initscr: an unknown TERM is an error message, not an exit. */
	*scr = newterm(NULL, stdout, stdin);
	if (*scr == NULL) {
		refuse_terminal(term);
		return 1;
	}
	cup = tigetstr("cup");
	if (cup == NULL || cup == (char *)-1) {
		endwin();
		delscreen(*scr);
		*scr = NULL;
		refuse_terminal(term);
		return 1;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(40);
	curs_set(0);
	ui_colours_init(nc != NULL && *nc != '\0');
	return 0;
}

void
console_term_close(SCREEN *scr)
{
	if (scr == NULL)
		return;
	endwin();
	delscreen(scr);
}

int
console_run_host(struct client *cli, const char *name)
{
	return console_loop(cli, name);
}

int
console_stopped(void)
{
	return console_stop != 0;
}

int
console_run(struct client *cli)
{
	SCREEN *scr;
	int rc;

	if (console_term_open(&scr) != 0)
		return 1;
	rc = console_loop(cli, NULL);
	console_term_close(scr);
	if (rc == 2)
		fprintf(stderr, "fusebox: %s\n", start_error);
	return rc == 0 ? 0 : 1;
}
