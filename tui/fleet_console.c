/*
 * fleet_console: the fleet's overview and host list (see fleet_console.h).
 *
 * Threads: the poller owns the schedule (fleet_poll) and the requests; it
 * swaps each host's parsed answers into fc.h[i] under fc.mu and writes a
 * byte to a pipe. The UI thread sums under fc.mu at each draw. While a
 * host's single-daemon screens are up the poller is paused (it holds
 * fc.busy during a round, so pausing waits for the round in flight).
 */
#include "fleet_console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "console.h"
#include "fleet_cli.h"
#include "fleet_fetch.h"
#include "fmt.h"
#include "util.h"
#include "widgets.h"

#define POLL_TIMEOUT_MS 900
#define DOWN_LINES_MAX	5

/* --- sums (pure) --- */

static struct fleet_route_sum *
route_get(struct fleet_sums *s, const char *name)
{
	int i;

	for (i = 0; i < s->nr; i++)
		if (strcmp(s->r[i].name, name) == 0)
			return &s->r[i];
	s->r = xrealloc(s->r, (size_t)(s->nr + 1) * sizeof *s->r);
	memset(&s->r[s->nr], 0, sizeof s->r[0]);
	snprintf(s->r[s->nr].name, sizeof s->r[0].name, "%s", name);
	return &s->r[s->nr++];
}

static struct fleet_backend_sum *
backend_get(struct fleet_sums *s, const char *name)
{
	int i;

	for (i = 0; i < s->nb; i++)
		if (strcmp(s->b[i].name, name) == 0)
			return &s->b[i];
	s->b = xrealloc(s->b, (size_t)(s->nb + 1) * sizeof *s->b);
	memset(&s->b[s->nb], 0, sizeof s->b[0]);
	snprintf(s->b[s->nb].name, sizeof s->b[0].name, "%s", name);
	return &s->b[s->nb++];
}

static int
is_open(const struct backend_v *b)
{
	return b != NULL && (b->st == BS_OPEN || b->st == BS_FORCED_OPEN);
}

void
fleet_sums_build(const struct fleet_snap *h, int n, struct fleet_sums *s)
{
	int i, j, k;

	memset(s, 0, sizeof *s);
	for (i = 0; i < n; i++) {
		const struct state_v *st = h[i].state;

		if (!h[i].up) {
			s->down++;
			for (j = 0; st != NULL && j < st->nroutes; j++)
				route_get(s, st->routes[j].name)->down++;
			continue;
		}
		s->up++;
		for (j = 0; st != NULL && j < st->nroutes; j++) {
			const struct route_v *r = &st->routes[j];
			const struct slo_route_v *sr = slo_route(h[i].slo, r->name);
			struct fleet_route_sum *q = route_get(s, r->name);
			int l = MIN(MAX(r->level, 0), 3);

			q->hosts[l]++;
			q->forced[l] |= r->forced;
			q->reviews += MAX(r->review_pending, 0);
			q->alerts += alerts_firing(h[i].alerts, r->name);
			if (sr != NULL && sr->w[SLO_1H].present) {
				q->total += sr->w[SLO_1H].total;
				q->service_good += sr->w[SLO_1H].service_good;
				q->smart_good += sr->w[SLO_1H].smart_good;
			}
			for (k = 0; k < r->ntargets; k++)
				q->open += is_open(state_backend(st, r->targets[k].backend));
		}
		for (j = 0; st != NULL && j < st->nbackends; j++) {
			const struct backend_v *b = &st->backends[j];
			struct fleet_backend_sum *q = backend_get(s, b->name);
			size_t o;

			q->hosts++;
			if (is_open(b)) {
				o = strlen(q->where);
				if (o < sizeof q->where)
					snprintf(q->where + o, sizeof q->where - o, "%s%s(%s)",
						 o ? " " : "", h[i].name, b->state);
				q->open++;
			}
		}
	}
}

void
fleet_sums_free(struct fleet_sums *s)
{
	free(s->r);
	free(s->b);
	memset(s, 0, sizeof *s);
}

void
fleet_levels_text(const struct fleet_route_sum *r, int utf8, char *out, size_t outsz)
{
	const char *sep = utf8 ? " · " : " | ";
	size_t o = 0;
	int l;

	out[0] = '\0';
	for (l = 0; l < 4 && o < outsz; l++)
		if (r->hosts[l] > 0)
			o += (size_t)snprintf(out + o, outsz - o, "%sL%d%s %d", o ? sep : "", l,
					      r->forced[l] ? "*" : "", r->hosts[l]);
	if (r->down > 0 && o < outsz)
		snprintf(out + o, outsz - o, "%sdown %d", o ? sep : "", r->down);
}

void
fleet_avail_text(char *out, size_t outsz, int64_t good, int64_t total)
{
	if (total <= 0)
		snprintf(out, outsz, "- 0/0");
	else
		snprintf(out, outsz, "%.2f%% %lld/%lld", 100.0 * (double)good / (double)total,
			 (long long)good, (long long)total);
}

/* --- the poller --- */

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
};

static struct {
	const struct fleet *f;
	struct fhost *h;
	pthread_mutex_t mu, busy;
	pthread_t th;
	int wake[2]; /* UI -> poller */
	int note[2]; /* poller -> UI */
	atomic_int stop, paused;
} fc;

static void
pipe_drain(int fd)
{
	char b[64];

	while (read(fd, b, sizeof b) > 0)
		;
}

static void
pipe_poke(int fd)
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

/* Host i's three answers q[0..2] into fc.h[i]. 1 when it answered. */
static int
host_merge(int i, struct fleet_req *q, int64_t now_wall)
{
	struct fhost *h = &fc.h[i];
	struct state_v *s = NULL;
	struct slo_v *slo = NULL;
	struct alerts_v *al = NULL;
	char *err, *cause = NULL;

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
	pthread_mutex_lock(&fc.mu);
	h->seen = 1;
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
	pthread_mutex_unlock(&fc.mu);
	free(err);
	return err == NULL;
}

static void *
poller(void *arg)
{
	static const char *const paths[] = {"/v1/state", "/v1/slo", "/v1/alerts"};
	int n = fc.f->n, *idx = xcalloc((size_t)n, sizeof *idx);
	struct fleet_req *q = xcalloc((size_t)n * 3, sizeof *q);
	struct pollfd pfd = {.fd = fc.wake[0], .events = POLLIN};
	int64_t now, next, wait;
	int i, j, m, ok;

	(void)arg;
	while (!atomic_load(&fc.stop)) {
		if (atomic_load(&fc.paused)) {
			poll(&pfd, 1, 1000);
			pipe_drain(fc.wake[0]);
			continue;
		}
		pthread_mutex_lock(&fc.busy);
		now = clock_mono_ms();
		for (i = 0; i < n; i++)
			if (atomic_exchange(&fc.h[i].kick, 0) && fc.h[i].p.fails > 0)
				fc.h[i].p.next_at = now;
		for (i = 0, m = 0; i < n; i++)
			if (fc.h[i].init_error == NULL && fleet_poll_due(&fc.h[i].p, now))
				idx[m++] = i;
		for (i = 0; i < m; i++)
			for (j = 0; j < 3; j++)
				q[i * 3 + j] = (struct fleet_req){
					.c = &fc.h[idx[i]].c, .method = "GET", .path = paths[j]};
		if (m > 0) {
			fleet_fetch_run(q, m * 3, POLL_TIMEOUT_MS);
			for (i = 0; i < m; i++) {
				ok = host_merge(idx[i], &q[i * 3], clock_wall_ms());
				/* From the round's start: a healthy host is asked once a second. */
				fleet_poll_done(&fc.h[idx[i]].p, ok, now, clock_wall_ms());
				for (j = 0; j < 3; j++)
					fleet_req_free(&q[i * 3 + j]);
			}
			pipe_poke(fc.note[1]);
		}
		pthread_mutex_unlock(&fc.busy);
		now = clock_mono_ms();
		next = now + 1000;
		for (i = 0; i < n; i++)
			if (fc.h[i].init_error == NULL && fc.h[i].p.next_at < next)
				next = fc.h[i].p.next_at;
		wait = MIN(MAX(next - now, 5), 1000);
		poll(&pfd, 1, (int)wait);
		pipe_drain(fc.wake[0]);
	}
	free(idx);
	free(q);
	return NULL;
}

/* --- the UI --- */

enum { VIEW_ROUTES, VIEW_HOSTS, VIEW_RESULT };

static struct {
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
} ui;

static volatile sig_atomic_t fleet_stop;

static void
on_signal(int sig)
{
	(void)sig;
	fleet_stop = 1;
}

static void
signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* The hosts' snapshots (under fc.mu). */
static void
snaps(struct fleet_snap *s)
{
	int i;

	for (i = 0; i < fc.f->n; i++)
		s[i] = (struct fleet_snap){.name = fc.f->hosts[i].name,
					   .up = fc.h[i].up,
					   .state = fc.h[i].state,
					   .slo = fc.h[i].slo,
					   .alerts = fc.h[i].alerts};
}

/* 80 columns: SVC/SMART fit "99.95% 19990/20000"; wide screens give more room. */
static const struct colspec route_cols[] = {
	{"ROUTE", 14, FMT_PAD, 0, 0},	 {"HOSTS BY LEVEL", 20, FMT_PAD, 0, 0},
	{"SVC 1h", 16, FMT_RIGHT, 0, 0}, {"SMART 1h", 16, FMT_RIGHT, 1, 0},
	{"BRK", 4, FMT_RIGHT, 3, 0},	 {"ALRT", 4, FMT_RIGHT, 2, 0},
	{"REV", 4, FMT_RIGHT, 0, 0},
};

static const struct colspec route_cols_wide[] = {
	{"ROUTE", 24, FMT_PAD, 0, 0},	 {"HOSTS BY LEVEL", 40, FMT_PAD, 0, 0},
	{"SVC 1h", 26, FMT_RIGHT, 0, 0}, {"SMART 1h", 26, FMT_RIGHT, 1, 0},
	{"BRK", 5, FMT_RIGHT, 3, 0},	 {"ALRT", 5, FMT_RIGHT, 2, 0},
	{"REV", 5, FMT_RIGHT, 0, 0},
};

static const struct colspec backend_cols[] = {
	{"BACKEND", 14, FMT_PAD, 0, 0},
	{"OPEN", 7, FMT_RIGHT, 0, 0},
	{"HOSTS OPEN", 0, 0, 0, 10},
};

static const struct colspec host_cols[] = {
	{"HOST", 14, FMT_PAD, 0, 0},	   {"LVL", 4, FMT_PAD, 0, 0},
	{"FORCED", 6, FMT_PAD, 2, 0},	   {"SVC 1h", 16, FMT_RIGHT, 0, 0},
	{"SMART 1h", 16, FMT_RIGHT, 1, 0}, {"OPEN BREAKERS", 0, 0, 0, 10},
};

static const struct colspec host_cols_wide[] = {
	{"HOST", 24, FMT_PAD, 0, 0},	   {"LVL", 4, FMT_PAD, 0, 0},
	{"FORCED", 6, FMT_PAD, 2, 0},	   {"SVC 1h", 26, FMT_RIGHT, 0, 0},
	{"SMART 1h", 26, FMT_RIGHT, 1, 0}, {"OPEN BREAKERS", 0, 0, 0, 10},
};

#define WIDE_COLS 120

static enum colour
level_colour(int level)
{
	return level <= 0 ? C_OK : level == 1 ? C_WARN : C_BAD;
}

static void
down_text(int i, char *out, size_t outsz, int64_t now_wall)
{
	const struct fhost *h = &fc.h[i];
	char when[32];

	if (h->init_error != NULL) {
		snprintf(out, outsz, "not asked: %s", h->init_error);
		return;
	}
	fmt_clock(when, sizeof when, h->down_since, now_wall);
	snprintf(out, outsz, "down since %s: %s", when, h->error);
}

/* The "host NAME down since ...: error" lines; returns the rows used. */
static int
draw_down(int y, int rows, int cols, int64_t now_wall)
{
	char line[768];
	int i, used = 0, down = 0;

	for (i = 0; i < fc.f->n; i++)
		down += fc.h[i].seen && !fc.h[i].up;
	for (i = 0; i < fc.f->n && used < rows; i++) {
		if (!fc.h[i].seen || fc.h[i].up)
			continue;
		if (used == DOWN_LINES_MAX - 1 && down > DOWN_LINES_MAX) {
			ui_printf(y + used, 0, cols, C_BAD, 0, " ... and %d more hosts down",
				  down - used);
			used++;
			break;
		}
		down_text(i, line, sizeof line, now_wall);
		ui_printf(y + used++, 0, cols, C_BAD, 0, " host %s %s", fc.f->hosts[i].name, line);
	}
	return used;
}

static void
draw_routes(int top, int rows, int cols, const struct fleet_sums *s, int64_t now_wall)
{
	char lv[160], sv[48], sm[48], b[16];
	int y = top, i, page, nb_rows, bottom = top + rows;
	const struct colspec *rc = cols >= WIDE_COLS ? route_cols_wide : route_cols;
	int nrc = (int)ARRAY_SIZE(route_cols);
	struct row row;

	y += draw_down(y, MIN(DOWN_LINES_MAX, rows / 3), cols, now_wall);
	if (s->down > 0)
		ui_printf(y++, 0, cols, C_WARN, 0,
			  " routes: sums over the %d answering hosts of %d (partial: %d down)",
			  s->up, s->up + s->down, s->down);
	else
		ui_printf(y++, 0, cols, C_ACCENT, 0, " routes: sums over all %d hosts", s->up);
	ui_header(y++, cols, rc, nrc);
	/* The backends below take at most a third of what is left. */
	nb_rows = s->nb > 0 ? MIN(s->nb, MAX((bottom - y) / 3, 1)) + 2 : 0;
	page = MAX(MIN(s->nr, bottom - y - nb_rows), 1);
	ui.page = page;
	listsel_clamp(&ui.rs, s->nr, page);
	if (s->nr == 0)
		ui_put(y, 0, cols, C_DIM, s->up > 0 ? " no routes" : " no host answers yet", 0);
	for (i = ui.rs.top; i < s->nr && i < ui.rs.top + page; i++) {
		const struct fleet_route_sum *r = &s->r[i];
		int l, worst = 0;

		for (l = 0; l < 4; l++)
			if (r->hosts[l] > 0)
				worst = l;
		row_begin(&row, y++, cols, i == ui.rs.sel, rc, nrc);
		row_cell(&row, C_NORMAL, r->name);
		fleet_levels_text(r, ui.utf8, lv, sizeof lv);
		row_cell(&row, level_colour(worst), lv);
		fleet_avail_text(sv, sizeof sv, r->service_good, r->total);
		row_cell(&row, C_NORMAL, sv);
		fleet_avail_text(sm, sizeof sm, r->smart_good, r->total);
		row_cell(&row, C_NORMAL, sm);
		snprintf(b, sizeof b, "%d", r->open);
		row_cell(&row, r->open ? C_BAD : C_NORMAL, b);
		snprintf(b, sizeof b, "%d", r->alerts);
		row_cell(&row, r->alerts ? C_BAD : C_NORMAL, b);
		snprintf(b, sizeof b, "%d", r->reviews);
		row_cell(&row, r->reviews ? C_WARN : C_NORMAL, b);
	}
	if (s->nb == 0)
		return;
	y = MAX(y, bottom - nb_rows);
	ui_put(y++, 0, cols, C_ACCENT, " breakers open per backend (answering hosts)", 0);
	ui_header(y++, cols, backend_cols, (int)ARRAY_SIZE(backend_cols));
	for (i = 0; i < s->nb && y < bottom; i++) {
		const struct fleet_backend_sum *q = &s->b[i];

		if (y == bottom - 1 && i < s->nb - 1) {
			ui_printf(y++, 0, cols, C_DIM, 0, " ... %d more backends", s->nb - i);
			break;
		}
		row_begin(&row, y++, cols, 0, backend_cols, (int)ARRAY_SIZE(backend_cols));
		row_cell(&row, C_NORMAL, q->name);
		snprintf(b, sizeof b, "%d/%d", q->open, q->hosts);
		row_cell(&row, q->open ? C_BAD : C_OK, b);
		row_cell(&row, q->open ? C_BAD : C_DIM, q->open ? q->where : "-");
	}
}

/* Host i's open breakers among the route's targets, "b1(open) b2(forced_open)". */
static void
host_open(const struct state_v *st, const struct route_v *r, char *out, size_t outsz)
{
	size_t o = 0;
	int k;

	out[0] = '\0';
	for (k = 0; k < r->ntargets && o < outsz; k++) {
		const struct backend_v *b = state_backend(st, r->targets[k].backend);

		if (is_open(b))
			o += (size_t)snprintf(out + o, outsz - o, "%s%s(%s)", o ? " " : "", b->name,
					      b->state);
	}
	if (o == 0)
		snprintf(out, outsz, "-");
}

static void
draw_hosts(int top, int rows, int cols, const struct fleet_sums *s, int64_t now_wall)
{
	const struct fleet_route_sum *rs = NULL;
	char lv[160], sv[48], sm[48], b[32], open[256], line[768];
	int y = top, i, page, n = fc.f->n, nhc = (int)ARRAY_SIZE(host_cols);
	const struct colspec *hc = cols >= WIDE_COLS ? host_cols_wide : host_cols;
	struct row row;

	for (i = 0; i < s->nr; i++)
		if (strcmp(s->r[i].name, ui.route) == 0)
			rs = &s->r[i];
	if (rs != NULL)
		fleet_levels_text(rs, ui.utf8, lv, sizeof lv);
	else
		snprintf(lv, sizeof lv, "no host has it now");
	ui_printf(y++, 0, cols, C_ACCENT, 0, " route %s on %d hosts: %s", ui.route, n, lv);
	ui_header(y++, cols, hc, nhc);
	page = MAX(top + rows - y, 1);
	ui.page = page;
	listsel_clamp(&ui.hs, n, page);
	for (i = ui.hs.top; i < n && i < ui.hs.top + page; i++) {
		const struct fhost *h = &fc.h[i];
		const struct route_v *r = h->up ? state_route(h->state, ui.route) : NULL;
		const struct slo_route_v *sr = r ? slo_route(h->slo, ui.route) : NULL;

		row_begin(&row, y, cols, i == ui.hs.sel, hc, nhc);
		snprintf(line, sizeof line, "%s%s", ui.mark[i] ? "+" : "", fc.f->hosts[i].name);
		row_cell(&row, ui.mark[i] ? C_ACCENT : C_NORMAL, line);
		if (!h->up || r == NULL) {
			if (!h->seen && h->init_error == NULL)
				snprintf(line, sizeof line, "asking...");
			else if (!h->up)
				down_text(i, line, sizeof line, now_wall);
			else
				snprintf(line, sizeof line, "no route %s on this host", ui.route);
			ui_put(y, cols - row_left(&row), row_left(&row), h->up ? C_DIM : C_BAD,
			       line, i == ui.hs.sel ? UI_SEL : 0);
			y++;
			continue;
		}
		snprintf(b, sizeof b, "L%d%s", r->level, r->forced ? "*" : "");
		row_cell(&row, level_colour(r->level), b);
		row_cell(&row, r->forced ? C_WARN : C_NORMAL, r->forced ? "forced" : "auto");
		if (sr != NULL && sr->w[SLO_1H].present) {
			fleet_avail_text(sv, sizeof sv, sr->w[SLO_1H].service_good,
					 sr->w[SLO_1H].total);
			fleet_avail_text(sm, sizeof sm, sr->w[SLO_1H].smart_good,
					 sr->w[SLO_1H].total);
		} else {
			snprintf(sv, sizeof sv, "- 0/0");
			snprintf(sm, sizeof sm, "- 0/0");
		}
		row_cell(&row, C_NORMAL, sv);
		row_cell(&row, C_NORMAL, sm);
		host_open(h->state, r, open, sizeof open);
		row_cell(&row, open[0] == '-' ? C_DIM : C_BAD, open);
		y++;
	}
}

/* --- fan-out: L / A on a route (the CLI's path, fleet_cli.h) --- */

static void pause_poller(int on);

static const char *const level_choices[] = {"L0", "L1", "L2", "L3"};
static const char *const scope_choices[] = {"all hosts", "a group", "these hosts"};

static struct {
	struct form form;
	int release; /* A: release to auto; L: force level */
	int level;   /* L: 0..3 */
	char route[MODEL_NAME_MAX];
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
} act;

/* The form's first scope field: L has level, reason, TTL before it. */
static int
act_scope_field(void)
{
	return act.release ? 0 : 3;
}

static int
act_check(struct form *f, struct console *c)
{
	char who[FIELD_TEXT_MAX], ttl[64] = "", err[512], *p;
	int base = act_scope_field(), scope, i, o;
	int64_t ttl_ms = 0;

	(void)c;
	act.ttl_s = 0;
	act.reason[0] = '\0';
	if (!act.release) {
		act.level = f->fields[0].choice;
		field_get(&f->fields[1], act.reason, sizeof act.reason);
		for (p = act.reason; *p == ' '; p++)
			;
		if (*p == '\0') {
			snprintf(f->error, sizeof f->error, "a reason is required");
			f->focus = 1;
			return 1;
		}
		field_get(&f->fields[2], ttl, sizeof ttl);
		if (ttl[0] != '\0' && (fmt_parse_duration(ttl, &ttl_ms) != 0 || ttl_ms < 1000)) {
			snprintf(f->error, sizeof f->error,
				 "TTL: seconds or a duration like 30m, or empty (got \"%s\")", ttl);
			f->focus = 2;
			return 1;
		}
		act.ttl_s = ttl_ms / 1000;
	}
	scope = f->fields[base].choice;
	field_get(&f->fields[base + 1], who, sizeof who);
	if (scope > 0 && who[0] == '\0') {
		snprintf(f->error, sizeof f->error, "%s",
			 scope == 1 ? "name the group"
				    : "name the hosts (H1,H2), or mark them with Space on a "
				      "route's hosts");
		f->focus = base + 1;
		return 1;
	}
	if (fleet_select(fc.f, scope == 1 ? who : NULL, scope == 2 ? who : NULL, act.sel, err,
			 sizeof err) != 0) {
		snprintf(f->error, sizeof f->error, "%s", err);
		f->focus = base + 1;
		return 1;
	}
	if (scope == 0)
		snprintf(act.scope, sizeof act.scope, "all hosts");
	else
		snprintf(act.scope, sizeof act.scope, "%s %s", scope == 1 ? "group" : "hosts", who);
	fleet_action_id_new(act.aid, sizeof act.aid);
	for (i = 0, act.nsel = 0; i < fc.f->n; i++)
		act.nsel += act.sel[i];
	if (act.release)
		o = snprintf(f->summary, sizeof f->summary,
			     "Release route %s to auto on %d host%s (%s):\n", act.route, act.nsel,
			     act.nsel == 1 ? "" : "s", act.scope);
	else
		o = snprintf(f->summary, sizeof f->summary,
			     "Force route %s to L%d on %d host%s (%s):\n", act.route, act.level,
			     act.nsel, act.nsel == 1 ? "" : "s", act.scope);
	pthread_mutex_lock(&fc.mu);
	for (i = 0, p = f->summary; i < fc.f->n && o < (int)sizeof f->summary; i++) {
		if (!act.sel[i])
			continue;
		o += snprintf(p + o, sizeof f->summary - (size_t)o, "%s%s%s",
			      o > 0 && p[o - 1] != '\n' ? ", " : "  ", fc.f->hosts[i].name,
			      fc.h[i].seen && !fc.h[i].up ? " (down now)" : "");
	}
	pthread_mutex_unlock(&fc.mu);
	if (o < (int)sizeof f->summary && !act.release)
		o += snprintf(p + o, sizeof f->summary - (size_t)o, "\nReason: %s\nTTL: %s",
			      act.reason, ttl[0] ? ttl : "none (until released)");
	if (o < (int)sizeof f->summary)
		snprintf(p + o, sizeof f->summary - (size_t)o, "\nAction id: %s", act.aid);
	return 0;
}

static void
act_field(struct field *fl, const char *label, const char *hint)
{
	memset(fl, 0, sizeof *fl);
	snprintf(fl->label, sizeof fl->label, "%s", label);
	snprintf(fl->hint, sizeof fl->hint, "%s", hint);
	fl->kind = FIELD_TEXT;
}

/* L (release 0) or A (1) on route: the form. */
static void
act_open(const char *route, int release)
{
	struct form *f = &act.form;
	struct field *fl;
	char marked[FIELD_TEXT_MAX];
	size_t o = 0;
	int i, base;

	fleet_fanout_free(&act.fo);
	memset(f, 0, sizeof *f);
	act.release = release;
	snprintf(act.route, sizeof act.route, "%s", route);
	snprintf(f->title, sizeof f->title, "%s %s on the fleet",
		 release ? "Release to auto:" : "Force a level:", route);
	if (!release) {
		fl = &f->fields[0];
		memset(fl, 0, sizeof *fl);
		snprintf(fl->label, sizeof fl->label, "Level");
		snprintf(fl->hint, sizeof fl->hint, "<- ->");
		fl->kind = FIELD_CHOICE;
		fl->choices = level_choices;
		fl->nchoices = 4;
		fl->choice = 2;
		act_field(&f->fields[1], "Reason", "required");
		act_field(&f->fields[2], "TTL", "e.g. 30m; empty: none");
	}
	base = act_scope_field();
	fl = &f->fields[base];
	memset(fl, 0, sizeof *fl);
	snprintf(fl->label, sizeof fl->label, "Scope");
	snprintf(fl->hint, sizeof fl->hint, "<- ->");
	fl->kind = FIELD_CHOICE;
	fl->choices = scope_choices;
	fl->nchoices = 3;
	act_field(&f->fields[base + 1], "Group / hosts", "G, or H1,H2");
	marked[0] = '\0';
	for (i = 0; i < fc.f->n && o < sizeof marked; i++)
		if (ui.mark[i])
			o += (size_t)snprintf(marked + o, sizeof marked - o, "%s%s", o ? "," : "",
					      fc.f->hosts[i].name);
	if (o > 0) {
		f->fields[base].choice = 2;
		field_set(&f->fields[base + 1], marked);
	}
	f->nfields = base + 2;
	f->focus = release ? 0 : 1;
	f->check = act_check;
	form_open(f, NULL);
	f->focus = release ? 0 : 1;
}

/* Send the action to the hosts with sel[i] (the poller paused meanwhile). */
static void
act_send(const int *sel)
{
	struct client **cp = xcalloc((size_t)fc.f->n, sizeof *cp);
	const char **why = xcalloc((size_t)fc.f->n, sizeof *why);
	int i, n = 0;

	for (i = 0; i < fc.f->n; i++) {
		cp[i] = fc.h[i].init_error == NULL ? &fc.h[i].c : NULL;
		why[i] = fc.h[i].init_error;
		n += sel[i];
	}
	ui_printf(LINES - 1, 0, COLS, C_MSG_OK, FMT_PAD, " sending to %d host%s ...", n,
		  n == 1 ? "" : "s");
	refresh();
	pause_poller(1);
	fleet_fanout_send(fc.f, cp, why, sel, &act.fo, act.aid, act.res);
	act.failed = 0;
	act.tries++;
	for (i = 0; i < fc.f->n; i++) {
		if (sel[i])
			act.try_of[i] = act.tries;
		act.failed += act.sel[i] && !act.res[i].applied;
		/* A host in backoff that took the action is back: refresh it now. */
		if (sel[i] && act.res[i].applied)
			atomic_store(&fc.h[i].kick, 1);
	}
	pause_poller(0);
	free(cp);
	free(why);
}

/* y on the confirmation page: the first try. */
static void
act_start(void)
{
	fleet_fanout_level(&act.fo, act.route, act.release ? -1 : act.level, act.reason, act.ttl_s);
	memset(act.res, 0, (size_t)fc.f->n * sizeof *act.res);
	act.tries = 0;
	act.back = ui.view;
	ui.view = VIEW_RESULT;
	act_send(act.sel);
}

/* r on the result: the failed hosts only, with the same action id. */
static void
act_retry(void)
{
	int *sel = xcalloc((size_t)fc.f->n, sizeof *sel), i;

	for (i = 0; i < fc.f->n; i++)
		sel[i] = act.sel[i] && !act.res[i].applied;
	act_send(sel);
	free(sel);
}

static const struct colspec result_cols[] = {
	{"HOST", 14, FMT_PAD, 0, 0},
	{"RESULT", 0, 0, 0, 10},
};

static void
draw_result(int top, int rows, int cols)
{
	int y = top, i, bottom = top + rows, applied = act.nsel - act.failed;
	char text[600];
	struct row row;

	ui_printf(y++, 0, cols, C_ACCENT, 0, " action %s", act.aid);
	if (act.release)
		ui_printf(y++, 0, cols, C_NORMAL, 0, " release %s to auto on %d hosts (%s), try %d",
			  act.route, act.nsel, act.scope, act.tries);
	else
		ui_printf(y++, 0, cols, C_NORMAL, 0, " force %s to L%d on %d hosts (%s), try %d",
			  act.route, act.level, act.nsel, act.scope, act.tries);
	y++;
	ui_header(y++, cols, result_cols, (int)ARRAY_SIZE(result_cols));
	for (i = 0; i < fc.f->n && y < bottom - 2; i++) {
		if (!act.sel[i])
			continue;
		row_begin(&row, y++, cols, 0, result_cols, (int)ARRAY_SIZE(result_cols));
		row_cell(&row, C_NORMAL, fc.f->hosts[i].name);
		if (act.tries > 1)
			snprintf(text, sizeof text, "%s (try %d)", act.res[i].text, act.try_of[i]);
		else
			snprintf(text, sizeof text, "%s", act.res[i].text);
		row_cell(&row, act.res[i].applied ? C_OK : C_BAD, text);
	}
	y++;
	ui_printf(MIN(y, bottom - 1), 0, cols, act.failed ? C_BAD : C_OK, 0,
		  " %d applied, %d failed%s", applied, act.failed,
		  act.failed ? "  (r retries the failed hosts, same action id)" : "");
}

static const char *const fleet_help[] = {
	"Overview: every route over the fleet",
	"  HOSTS BY LEVEL  answering hosts per level; * forced on one at least;",
	"                  down N: hosts down whose last answer had the route",
	"  SVC/SMART 1h    good/total summed over the answering hosts",
	"  BRK             breakers open on the route's targets (host x backend)",
	"  ALRT  REV       firing alerts, pending reviews, summed",
	"  partial         some hosts do not answer: named above, not summed",
	"Enter             the route's hosts; on a host, its own screens",
	"Esc               back (from a host's screens: to its route's hosts)",
	"L                 force a level on the route: on all hosts, a group or",
	"                  the hosts listed; confirm, then a result per host",
	"A                 release the route to auto, the same way",
	"Space             on a route's hosts: mark a host (scope: these hosts)",
	"r                 on a result: retry the failed hosts (same action id)",
	"j k  arrows       move;  PgUp PgDn g G  page, first, last",
	"q                 quit",
	NULL,
};

static void
draw(const struct fleet_sums *s)
{
	int64_t now_wall = clock_wall_ms();
	const char *hints = ui.view == VIEW_ROUTES ? " Enter hosts  L force level  A auto  j k"
			    : ui.view == VIEW_HOSTS
				    ? " Enter screens  Space mark  L force  A auto  Esc fleet"
			    : act.failed > 0 ? " r retry the failed hosts  Esc back"
					     : " Esc back";
	const char *tail = "  ? help  q quit";
	static const char *const view_names[] = {"routes", "hosts", "action"};
	int end, cy, cx;

	erase();
	ui_fill(0, 0, COLS, C_TITLE);
	ui_printf(0, 0, COLS, C_TITLE, 0, " fusebox fleet  %s", view_names[ui.view]);
	if (COLS > 40)
		ui_put(0, MAX(COLS - fmt_width(ui.path) - 1, 30), COLS - 31, C_TITLE, ui.path, 0);
	ui_printf(1, 0, COLS, s->down > 0 ? C_STATUS_BAD : C_STATUS, FMT_PAD,
		  " fleet: %d hosts, %d answering, %d down%s", fc.f->n, s->up, s->down,
		  s->down > 0 ? "  (sums partial)" : "");
	if (LINES > 3) {
		if (ui.view == VIEW_ROUTES)
			draw_routes(2, LINES - 3, COLS, s, now_wall);
		else if (ui.view == VIEW_HOSTS)
			draw_hosts(2, LINES - 3, COLS, s, now_wall);
		else
			draw_result(2, LINES - 3, COLS);
	}
	end = MAX(COLS - fmt_width(tail), 0);
	if (ui.msg[0])
		ui_put(LINES - 1, 0, end, C_MSG_ERR, ui.msg, 0);
	else
		ui_put(LINES - 1, 0, end, C_NORMAL, hints, 0);
	ui_put(LINES - 1, end, COLS - end, C_NORMAL, tail, 0);
	if (ui.help)
		help_draw("Fleet", fleet_help);
	curs_set(0);
	if (act.form.active) {
		form_draw(&act.form, &cy, &cx);
		if (cy >= 0) {
			move(cy, cx);
			curs_set(1);
		}
	}
	wnoutrefresh(stdscr);
	doupdate();
}

static void
pause_poller(int on)
{
	if (on) {
		atomic_store(&fc.paused, 1);
		/* Wait for the round in flight: the host's client is then ours. */
		pthread_mutex_lock(&fc.busy);
		pthread_mutex_unlock(&fc.busy);
	} else {
		atomic_store(&fc.paused, 0);
		pipe_poke(fc.wake[1]);
	}
}

/* Enter on host i: its single-daemon screens until Esc (back) or q. */
static void
open_host(int i)
{
	int rc;

	if (fc.h[i].init_error != NULL) {
		snprintf(ui.msg, sizeof ui.msg, " %s: %s", fc.f->hosts[i].name, fc.h[i].init_error);
		return;
	}
	pause_poller(1);
	rc = console_run_host(&fc.h[i].c, fc.f->hosts[i].name);
	signals_install();
	pause_poller(0);
	if (rc == 0 || console_stopped())
		ui.quit = 1;
	else if (rc == 2)
		snprintf(ui.msg, sizeof ui.msg, " %s: the console could not start",
			 fc.f->hosts[i].name);
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

static void
key(int k, const struct fleet_sums *s)
{
	enum form_res fr;

	ui.msg[0] = '\0';
	if (act.form.active) {
		fr = form_key(&act.form, NULL, k);
		if (fr == FORM_CANCEL) {
			act.form.active = 0;
		} else if (fr == FORM_CONFIRM) {
			act.form.active = 0;
			act_start();
		}
		return;
	}
	if (ui.help) {
		/* The key that closes the help also acts, as in the console. */
		ui.help = 0;
		if (k == K_ESC || k == '?')
			return;
	}
	if (k == '?') {
		ui.help = 1;
		return;
	}
	if (k == 'q' || k == 'Q') {
		ui.quit = 1;
		return;
	}
	if (ui.view == VIEW_RESULT) {
		if (k == 'r' && act.failed > 0)
			act_retry();
		else if (k == 'r')
			snprintf(ui.msg, sizeof ui.msg, " every host applied it: nothing to retry");
		else if (k == K_ESC || k == FK(KEY_LEFT) || k == FK(KEY_BACKSPACE))
			ui.view = act.back;
		return;
	}
	if (ui.view == VIEW_ROUTES) {
		if (listsel_key(&ui.rs, k, s->nr, ui.page))
			return;
		if ((k == 'L' || k == 'A') && ui.rs.sel >= 0 && ui.rs.sel < s->nr) {
			act_open(s->r[ui.rs.sel].name, k == 'A');
			return;
		}
		if (k == K_ENTER && ui.rs.sel >= 0 && ui.rs.sel < s->nr) {
			snprintf(ui.route, sizeof ui.route, "%s", s->r[ui.rs.sel].name);
			ui.view = VIEW_HOSTS;
			memset(&ui.hs, 0, sizeof ui.hs);
		}
		return;
	}
	if (listsel_key(&ui.hs, k, fc.f->n, ui.page))
		return;
	if (k == 'L' || k == 'A')
		act_open(ui.route, k == 'A');
	else if (k == ' ' && ui.hs.sel >= 0 && ui.hs.sel < fc.f->n)
		ui.mark[ui.hs.sel] = !ui.mark[ui.hs.sel];
	else if (k == K_ESC || k == FK(KEY_LEFT) || k == FK(KEY_BACKSPACE))
		ui.view = VIEW_ROUTES;
	else if (k == K_ENTER && ui.hs.sel >= 0 && ui.hs.sel < fc.f->n)
		open_host(ui.hs.sel);
}

/* Sum under fc.mu (the poller swaps answers in meanwhile). */
static void
sums_now(struct fleet_snap *sn, struct fleet_sums *s)
{
	snaps(sn);
	fleet_sums_build(sn, fc.f->n, s);
	/* Hosts not asked yet are neither up nor down. */
	int i;

	for (i = 0; i < fc.f->n; i++)
		if (!fc.h[i].seen && fc.h[i].init_error == NULL)
			s->down--;
}

static void
hosts_init(const char *token, int role)
{
	char *tok, *cause = NULL;
	int i, r;

	for (i = 0; i < fc.f->n; i++) {
		const struct fleet_host *fh = &fc.f->hosts[i];
		struct fhost *h = &fc.h[i];

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

static int
pipes_open(void)
{
	int *p[] = {fc.wake, fc.note}, i, j;

	for (i = 0; i < 2; i++) {
		if (pipe(p[i]) != 0)
			return -errno;
		for (j = 0; j < 2; j++)
			fcntl(p[i][j], F_SETFL, fcntl(p[i][j], F_GETFL) | O_NONBLOCK);
	}
	return 0;
}

int
fleet_console_run(const struct fleet *f, const char *token, int role, const char *path)
{
	struct fleet_snap *sn;
	struct fleet_sums s;
	struct pollfd pfd[2];
	SCREEN *scr;
	int i, k, wait_ms, started = 0;

	memset(&fc, 0, sizeof fc);
	memset(&ui, 0, sizeof ui);
	memset(&act, 0, sizeof act);
	fc.f = f;
	ui.path = path;
	if (console_term_open(&scr) != 0)
		return 1;
	ui.utf8 = fmt_locale_utf8();
	fc.h = xcalloc((size_t)MAX(f->n, 1), sizeof *fc.h);
	sn = xcalloc((size_t)MAX(f->n, 1), sizeof *sn);
	ui.mark = xcalloc((size_t)MAX(f->n, 1), sizeof *ui.mark);
	act.sel = xcalloc((size_t)MAX(f->n, 1), sizeof *act.sel);
	act.res = xcalloc((size_t)MAX(f->n, 1), sizeof *act.res);
	act.try_of = xcalloc((size_t)MAX(f->n, 1), sizeof *act.try_of);
	pthread_mutex_init(&fc.mu, NULL);
	pthread_mutex_init(&fc.busy, NULL);
	hosts_init(token, role);
	if (pipes_open() != 0 || pthread_create(&fc.th, NULL, poller, NULL) != 0) {
		console_term_close(scr);
		fprintf(stderr, "fusebox: the fleet console cannot start: %s\n", strerror(errno));
		goto out;
	}
	started = 1;
	signals_install();
	pfd[0] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = fc.note[0], .events = POLLIN};
	while (!ui.quit && !fleet_stop) {
		pthread_mutex_lock(&fc.mu);
		sums_now(sn, &s);
		draw(&s);
		pthread_mutex_unlock(&fc.mu);
		wait_ms = 1000 - (int)(clock_wall_ms() % 1000) + 5;
		if (poll(pfd, 2, wait_ms) < 0 && errno != EINTR) {
			fleet_sums_free(&s);
			break;
		}
		pipe_drain(fc.note[0]);
		/* Not under fc.mu: opening a host waits for the poller's round. */
		while (!ui.quit && !fleet_stop && read_key(&k))
			key(k, &s);
		fleet_sums_free(&s);
	}
	console_term_close(scr);
out:
	if (started) {
		atomic_store(&fc.stop, 1);
		pipe_poke(fc.wake[1]);
		pthread_join(fc.th, NULL);
	}
	for (i = 0; i < 2; i++) {
		if (fc.wake[i] > 0)
			close(fc.wake[i]);
		if (fc.note[i] > 0)
			close(fc.note[i]);
	}
	for (i = 0; i < f->n; i++) {
		if (fc.h[i].init_error == NULL)
			client_free(&fc.h[i].c);
		free(fc.h[i].init_error);
		state_free(fc.h[i].state);
		slo_free(fc.h[i].slo);
		alerts_free(fc.h[i].alerts);
	}
	free(fc.h);
	free(sn);
	free(ui.mark);
	free(act.sel);
	free(act.res);
	free(act.try_of);
	fleet_fanout_free(&act.fo);
	pthread_mutex_destroy(&fc.mu);
	pthread_mutex_destroy(&fc.busy);
	return started ? 0 : 1;
}
