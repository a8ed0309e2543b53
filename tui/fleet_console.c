/*
 * fleet_console: the fleet console's loop and keys (see fleet_console.h;
 * the files and threads: fleet_console_int.h).
 */
#include "fleet_console_int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "console.h"
#include "fmt.h"
#include "util.h"

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

/* The hosts' snapshots (under fleet_fc.mu). */
static void
snaps(struct fleet_snap *s)
{
	int i;

	for (i = 0; i < fleet_fc.f->n; i++)
		s[i] = (struct fleet_snap){.name = fleet_fc.f->hosts[i].name,
					   .up = fleet_fc.h[i].up,
					   .state = fleet_fc.h[i].state,
					   .slo = fleet_fc.h[i].slo,
					   .alerts = fleet_fc.h[i].alerts};
}

static void
open_host(int i)
{
	int rc;

	if (fleet_fc.h[i].init_error != NULL) {
		snprintf(fleet_ui.msg, sizeof fleet_ui.msg, " %s: %s", fleet_fc.f->hosts[i].name,
			 fleet_fc.h[i].init_error);
		return;
	}
	fleet_pause_poller(1);
	rc = console_run_host(&fleet_fc.h[i].c, fleet_fc.f->hosts[i].name);
	signals_install();
	fleet_pause_poller(0);
	if (rc == 0 || console_stopped())
		fleet_ui.quit = 1;
	else if (rc == 2)
		snprintf(fleet_ui.msg, sizeof fleet_ui.msg, " %s: the console could not start",
			 fleet_fc.f->hosts[i].name);
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

static enum fleet_act_kind
act_kind(int k)
{
	return k == 'A' ? FLEET_ACT_RELEASE : k == 'W' ? FLEET_ACT_WEIGHTS : FLEET_ACT_LEVEL;
}

/* B: the breaker form, on the first backend open across the fleet if any. */
static void
breaker_open(const struct fleet_sums *s)
{
	int i;

	for (i = 0; i < s->nb && s->b[i].open == 0; i++)
		;
	fleet_act_open(FLEET_ACT_BREAKER, i < s->nb ? s->b[i].name : "", fleet_ui.mark);
}

static void
key(int k, const struct fleet_sums *s)
{
	enum form_res fr;

	fleet_ui.msg[0] = '\0';
	if (fleet_act.form.active) {
		fr = form_key(&fleet_act.form, NULL, k);
		if (fr == FORM_CANCEL) {
			fleet_act.form.active = 0;
		} else if (fr == FORM_CONFIRM) {
			fleet_act.form.active = 0;
			fleet_act_start(fleet_ui.view);
			fleet_ui.view = VIEW_RESULT;
		}
		return;
	}
	if (fleet_rq.form.active) {
		fleet_reviews_key(k);
		return;
	}
	if (fleet_ui.help) {
		/* The key that closes the help also acts, as in the console. */
		fleet_ui.help = 0;
		if (k == K_ESC || k == '?')
			return;
	}
	if (k == '?') {
		fleet_ui.help = 1;
		return;
	}
	if (k == 'q' || k == 'Q') {
		fleet_ui.quit = 1;
		return;
	}
	if (fleet_ui.view == VIEW_RESULT) {
		if (k == 'r' && fleet_act.failed > 0)
			fleet_act_retry();
		else if (k == 'r')
			snprintf(fleet_ui.msg, sizeof fleet_ui.msg,
				 " every host applied it: nothing to retry");
		else if (k == K_ESC || k == FK(KEY_LEFT) || k == FK(KEY_BACKSPACE))
			fleet_ui.view = fleet_act.back;
		return;
	}
	if (fleet_ui.view == VIEW_REVIEWS) {
		if (k == K_ESC || k == FK(KEY_LEFT) || k == FK(KEY_BACKSPACE))
			fleet_ui.view = VIEW_ROUTES;
		else
			fleet_reviews_key(k);
		return;
	}
	if (fleet_ui.view == VIEW_ROUTES) {
		if (listsel_key(&fleet_ui.rs, k, s->nr, fleet_ui.page))
			return;
		if (k == 'v') {
			fleet_ui.view = VIEW_REVIEWS;
			return;
		}
		if ((k == 'L' || k == 'A' || k == 'W') && fleet_ui.rs.sel >= 0 &&
		    fleet_ui.rs.sel < s->nr) {
			fleet_act_open(act_kind(k), s->r[fleet_ui.rs.sel].name, fleet_ui.mark);
			return;
		}
		if (k == 'B') {
			breaker_open(s);
			return;
		}
		if (k == K_ENTER && fleet_ui.rs.sel >= 0 && fleet_ui.rs.sel < s->nr) {
			snprintf(fleet_ui.route, sizeof fleet_ui.route, "%s",
				 s->r[fleet_ui.rs.sel].name);
			fleet_ui.view = VIEW_HOSTS;
			memset(&fleet_ui.hs, 0, sizeof fleet_ui.hs);
		}
		return;
	}
	if (listsel_key(&fleet_ui.hs, k, fleet_fc.f->n, fleet_ui.page))
		return;
	if (k == 'L' || k == 'A' || k == 'W')
		fleet_act_open(act_kind(k), fleet_ui.route, fleet_ui.mark);
	else if (k == 'B')
		breaker_open(s);
	else if (k == ' ' && fleet_ui.hs.sel >= 0 && fleet_ui.hs.sel < fleet_fc.f->n)
		fleet_ui.mark[fleet_ui.hs.sel] = !fleet_ui.mark[fleet_ui.hs.sel];
	else if (k == K_ESC || k == FK(KEY_LEFT) || k == FK(KEY_BACKSPACE))
		fleet_ui.view = VIEW_ROUTES;
	else if (k == K_ENTER && fleet_ui.hs.sel >= 0 && fleet_ui.hs.sel < fleet_fc.f->n)
		open_host(fleet_ui.hs.sel);
}

/* Sum under fleet_fc.mu (the fleet_poller swaps answers in meanwhile). */
static void
sums_now(struct fleet_snap *sn, struct fleet_sums *s)
{
	snaps(sn);
	fleet_sums_build(sn, fleet_fc.f->n, s);
	/* Hosts not asked yet are neither up nor down. */
	int i;

	for (i = 0; i < fleet_fc.f->n; i++)
		if (!fleet_fc.h[i].seen && fleet_fc.h[i].init_error == NULL)
			s->down--;
}

int
fleet_console_run(const struct fleet *f, const char *token, int role, const char *path)
{
	struct fleet_snap *sn;
	struct fleet_sums s;
	struct pollfd pfd[2];
	SCREEN *scr;
	int i, k, wait_ms, started = 0;

	memset(&fleet_fc, 0, sizeof fleet_fc);
	memset(&fleet_ui, 0, sizeof fleet_ui);
	memset(&fleet_act, 0, sizeof fleet_act);
	memset(&fleet_rq, 0, sizeof fleet_rq);
	fleet_fc.f = f;
	fleet_ui.path = path;
	if (console_term_open(&scr) != 0)
		return 1;
	fleet_ui.utf8 = fmt_locale_utf8();
	fleet_fc.h = xcalloc((size_t)MAX(f->n, 1), sizeof *fleet_fc.h);
	sn = xcalloc((size_t)MAX(f->n, 1), sizeof *sn);
	fleet_ui.mark = xcalloc((size_t)MAX(f->n, 1), sizeof *fleet_ui.mark);
	fleet_act.sel = xcalloc((size_t)MAX(f->n, 1), sizeof *fleet_act.sel);
	fleet_act.res = xcalloc((size_t)MAX(f->n, 1), sizeof *fleet_act.res);
	fleet_act.try_of = xcalloc((size_t)MAX(f->n, 1), sizeof *fleet_act.try_of);
	pthread_mutex_init(&fleet_fc.mu, NULL);
	pthread_mutex_init(&fleet_fc.busy, NULL);
	fleet_hosts_init(token, role);
	if (fleet_pipes_open() != 0 ||
	    pthread_create(&fleet_fc.th, NULL, fleet_poller, NULL) != 0) {
		console_term_close(scr);
		fprintf(stderr, "fusebox: the fleet console cannot start: %s\n", strerror(errno));
		goto out;
	}
	started = 1;
	signals_install();
	pfd[0] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
	pfd[1] = (struct pollfd){.fd = fleet_fc.note[0], .events = POLLIN};
	while (!fleet_ui.quit && !fleet_stop) {
		pthread_mutex_lock(&fleet_fc.mu);
		sums_now(sn, &s);
		fleet_draw(&s);
		pthread_mutex_unlock(&fleet_fc.mu);
		wait_ms = 1000 - (int)(clock_wall_ms() % 1000) + 5;
		if (poll(pfd, 2, wait_ms) < 0 && errno != EINTR) {
			fleet_sums_free(&s);
			break;
		}
		fleet_pipe_drain(fleet_fc.note[0]);
		/* Not under fleet_fc.mu: opening a host waits for the fleet_poller's round. */
		while (!fleet_ui.quit && !fleet_stop && read_key(&k))
			key(k, &s);
		fleet_sums_free(&s);
	}
	console_term_close(scr);
out:
	if (started) {
		atomic_store(&fleet_fc.stop, 1);
		fleet_pipe_poke(fleet_fc.wake[1]);
		pthread_join(fleet_fc.th, NULL);
	}
	for (i = 0; i < 2; i++) {
		if (fleet_fc.wake[i] > 0)
			close(fleet_fc.wake[i]);
		if (fleet_fc.note[i] > 0)
			close(fleet_fc.note[i]);
	}
	for (i = 0; i < f->n; i++) {
		if (fleet_fc.h[i].init_error == NULL)
			client_free(&fleet_fc.h[i].c);
		free(fleet_fc.h[i].init_error);
		state_free(fleet_fc.h[i].state);
		slo_free(fleet_fc.h[i].slo);
		alerts_free(fleet_fc.h[i].alerts);
		reviews_free(fleet_fc.h[i].reviews);
	}
	fleet_reviews_free();
	free(fleet_fc.h);
	free(sn);
	free(fleet_ui.mark);
	free(fleet_act.sel);
	free(fleet_act.res);
	free(fleet_act.try_of);
	fleet_fanout_free(&fleet_act.fo);
	pthread_mutex_destroy(&fleet_fc.mu);
	pthread_mutex_destroy(&fleet_fc.busy);
	return started ? 0 : 1;
}
