/*
 * reload: a new configuration applied to the running daemon (POST
 * /v1/reload, SIGHUP). Backends and routes are matched by name and keep
 * their breakers, windows, bulkheads, levels and escalation state; live
 * calls finish on the configuration they started with (kept until the
 * last of them ends, engine_hold_put). The only step that can fail (the
 * SLO book's reconfigure) goes first, so a refused file changes nothing.
 * Engine thread.
 */
#include "reload.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "clock.h"
#include "engine.h"
#include "gate.h"
#include "http.h"
#include "log.h"
#include "notify.h"
#include "obs.h"
#include "review_q.h"
#include "sdnotify.h"
#include "tokens.h"
#include "util.h"

/* A raised cap hands free slots to waiting calls at once. */
static void
bulkhead_wake(struct engine *e, struct backend_rt *b)
{
	struct bulkhead_waiter *w;

	while ((w = bulkhead_next(&b->bulkhead)) != NULL)
		call_bulkhead_granted(e, w);
}

static int
backend_rt_busy(const struct backend_rt *b)
{
	return b->bulkhead.inflight > 0 || b->bulkhead.nwaiting > 0;
}

static int
same_targets(const struct route_cfg *a, const struct route_cfg *b)
{
	int i;

	if (a->ntargets != b->ntargets)
		return 0;
	for (i = 0; i < a->ntargets; i++)
		if (strcmp(a->targets[i].backend, b->targets[i].backend) != 0)
			return 0;
	return 1;
}

int
reload_apply(struct engine *e, struct config *ncfg, char **cause)
{
	const struct config *ocfg = e->cfg;
	struct backend_rt *nb = NULL;
	struct route_rt *nr = NULL;
	int *bmap = NULL, *rmap = NULL; /* old index -> new index (-1: gone) */
	int onb = e->nbackends_all, onr = e->nroutes_all, nnb, nnr, i, j;
	int64_t now = clock_mono_ms();
	struct cfg_hold *h;
	char detail[256];

	/* The only step that can fail goes first: then nothing has changed. */
	if (obs_reconfigure(e->obs, ncfg, clock_wall_ms(), cause) != 0) {
		config_free(ncfg);
		return -EIO;
	}
	if (strcmp(ocfg->listen, ncfg->listen) != 0)
		log_warn("reload", "listen changed (%s -> %s): takes effect at restart",
			 ocfg->listen, ncfg->listen);
	if (strcmp(ocfg->database, ncfg->database) != 0)
		log_warn("reload", "database changed: takes effect at restart");
	bmap = xcalloc((size_t)MAX(onb, 1), sizeof *bmap);
	rmap = xcalloc((size_t)MAX(onr, 1), sizeof *rmap);
	for (i = 0; i < onb; i++)
		bmap[i] = -1;
	for (i = 0; i < onr; i++)
		rmap[i] = -1;

	/* Backends: matched by name, state moved; removed ones still in use
	 * stay after the configured ones until their calls end. */
	nnb = ncfg->nbackends;
	for (i = 0; i < onb; i++)
		if (config_backend_index(ncfg, e->backends[i].cfg->name) < 0 &&
		    backend_rt_busy(&e->backends[i]))
			nnb++;
	nb = xcalloc((size_t)MAX(nnb, 1), sizeof *nb);
	for (i = 0; i < ncfg->nbackends; i++) {
		for (j = 0; j < onb; j++)
			if (bmap[j] < 0 &&
			    strcmp(e->backends[j].cfg->name, ncfg->backends[i].name) == 0)
				break;
		if (j == onb) {
			engine_backend_rt_init(&nb[i], &ncfg->backends[i]);
			continue;
		}
		nb[i] = e->backends[j];
		bmap[j] = i;
		nb[i].cfg = &ncfg->backends[i];
		breaker_reconfigure(&nb[i].breaker, &ncfg->backends[i].breaker, now);
		gate_reconfigure(&nb[i].gate, &ncfg->backends[i], &nb[i].bulkhead, now);
		free(nb[i].api_key);
		nb[i].api_key = NULL;
		if (ncfg->backends[i].api_key_env && getenv(ncfg->backends[i].api_key_env) &&
		    *getenv(ncfg->backends[i].api_key_env))
			nb[i].api_key = xstrdup(getenv(ncfg->backends[i].api_key_env));
	}
	for (i = 0, j = ncfg->nbackends; i < onb; i++) {
		if (bmap[i] >= 0)
			continue;
		if (backend_rt_busy(&e->backends[i])) {
			nb[j] = e->backends[i];
			bmap[i] = j++;
		} else {
			engine_backend_rt_free(&e->backends[i]);
		}
	}

	/* Routes: the same by name; live weights kept when the targets did not change. */
	nnr = ncfg->nroutes;
	for (i = 0; i < onr; i++)
		if (config_route(ncfg, e->routes[i].cfg->name) == NULL &&
		    e->routes[i].live_calls > 0)
			nnr++;
	nr = xcalloc((size_t)MAX(nnr, 1), sizeof *nr);
	for (i = 0; i < ncfg->nroutes; i++) {
		const struct route_cfg *rc = &ncfg->routes[i];

		for (j = 0; j < onr; j++)
			if (rmap[j] < 0 && strcmp(e->routes[j].cfg->name, rc->name) == 0)
				break;
		if (j == onr) {
			engine_route_rt_init(&nr[i], rc);
			continue;
		}
		nr[i] = e->routes[j];
		rmap[j] = i;
		if (!same_targets(e->routes[j].cfg, rc) ||
		    rc->canary_guard.enabled != (nr[i].canary != NULL)) {
			free(nr[i].weights);
			nr[i].weights =
				xcalloc((size_t)MAX(rc->ntargets, 1), sizeof *nr[i].weights);
			for (j = 0; j < rc->ntargets; j++)
				nr[i].weights[j] = rc->targets[j].weight;
			free(nr[i].canary);
			nr[i].canary = rc->canary_guard.enabled
					       ? xcalloc((size_t)MAX(rc->ntargets, 1),
							 sizeof *nr[i].canary)
					       : NULL;
		}
		nr[i].cfg = rc;
	}
	for (i = 0, j = ncfg->nroutes; i < onr; i++) {
		if (rmap[i] >= 0)
			continue;
		if (e->routes[i].live_calls > 0) {
			nr[j] = e->routes[i];
			rmap[i] = j++;
		} else {
			engine_route_rt_free(&e->routes[i]);
		}
	}

	/* Live calls and attempts point into the arrays: move them along. */
	call_remap_all(e, nr, rmap, nb, bmap);

	free(e->backends);
	free(e->routes);
	e->backends = nb;
	e->routes = nr;
	e->nbackends = ncfg->nbackends;
	e->nbackends_all = nnb;
	e->nroutes = ncfg->nroutes;
	e->nroutes_all = nnr;
	for (i = 0; i < e->nbackends_all; i++)
		bulkhead_wake(e, &e->backends[i]);

	free(e->route_names);
	e->route_names = xcalloc((size_t)MAX(ncfg->nroutes, 1), sizeof *e->route_names);
	for (i = 0; i < ncfg->nroutes; i++)
		e->route_names[i] = ncfg->routes[i].name;
	h = xcalloc(1, sizeof *h);
	h->cfg = ncfg;
	h->next = e->hold;
	e->hold = h;
	e->cfg = ncfg;
	notify_allow_set(e->notify, ncfg->callbacks_allow, ncfg->ncallbacks_allow);
	store_limit_set(e->store, ncfg->log.max_input_bytes);
	store_reader_deadline_set(e->reader, ncfg->database_read_timeout_ms);
	review_q_reconfigure(e, clock_wall_ms());
	log_set_level(ncfg->log.level);
	log_set_format(ncfg->log.format);
	/* The previous configuration goes when its last call ends (maybe now). */
	h->next->refs++;
	engine_hold_put(e, h->next);

	snprintf(detail, sizeof detail, "configuration reloaded: %d backends, %d routes",
		 ncfg->nbackends, ncfg->nroutes);
	log_info("reload", "%s", detail);
	engine_event(e, "reload", ncfg->path ? ncfg->path : "config", detail);
	free(bmap);
	free(rmap);
	return 0;
}

/*
 * A reload that leaves no viewer or operator token shuts the control
 * plane (the console, /v1/state, the next /v1/reload): said loudly, in
 * the log and as a reload event, since only a restart or SIGHUP undoes it.
 */
static void
tokens_warn_closed(struct engine *e, const struct tokens *t)
{
	static const char what[] =
		"NO CONTROL-PLANE TOKENS after reload: every control-plane request is refused "
		"with 401 until the tokens file has a viewer or operator token and the daemon "
		"reloads (SIGHUP)";
	const char *why = "missing";
	int i;

	for (i = 0; t != NULL && i < t->n; i++)
		if (t->v[i].role >= ROLE_VIEWER)
			return;
	if (t != NULL)
		why = t->n == 0 ? "empty" : "caller tokens only";
	log_warn("reload", "%s (tokens file %s: %s)", what, e->cfg->tokens_file, why);
	engine_event(e, "reload", e->cfg->tokens_file, what);
}

static int
reload_read_apply(struct engine *e, char **cause)
{
	struct config *ncfg = NULL;
	struct tokens *tokens = NULL;
	int r;

	r = config_load(e->cfg->path, &ncfg, cause);
	if (r != 0)
		return r;
	r = tokens_load(ncfg->tokens_file, &tokens, cause);
	if (r != 0 && r != -ENOENT) {
		config_free(ncfg);
		return r;
	}
	if (r == -ENOENT) {
		free(*cause);
		*cause = NULL;
	}
	{
		int crt = ncfg->callers_require_token, mp = ncfg->metrics_public;

		/* Tokens change only with a configuration that was applied. */
		r = reload_apply(e, ncfg, cause);
		if (r == 0)
			tokens_warn_closed(e, tokens);
		if (r == 0 && e->srv)
			http_set_auth(e->srv, tokens, crt, mp);
		else
			tokens_free(tokens);
	}
	return r;
}

/*
 * The service manager sees the reload as one: RELOADING=1, then READY=1
 * either way (still serving). A refusal is one log line, its errors (one a
 * line in *cause) joined by "; ".
 */
int
reload_from_disk(struct engine *e, char **cause)
{
	struct buf joined;
	const char *p, *nl;
	int r;

	sdnotify_reloading();
	r = reload_read_apply(e, cause);
	if (r != 0) {
		buf_init(&joined, SIZE_MAX);
		for (p = *cause ? *cause : ""; *p != '\0'; p = *nl ? nl + 1 : nl) {
			nl = p + strcspn(p, "\n");
			if (nl > p)
				buf_printf(&joined, "%s%.*s", joined.len ? "; " : "", (int)(nl - p),
					   p);
		}
		log_error("reload", "configuration refused, keeping the running one: %s",
			  joined.data ? joined.data : "unknown error");
		buf_free(&joined);
	}
	obs_reload_counted(e->obs, r == 0);
	sdnotify_send(r == 0 ? "READY=1\nSTATUS=configuration reloaded"
			     : "READY=1\nSTATUS=configuration refused: running the previous one");
	return r;
}
