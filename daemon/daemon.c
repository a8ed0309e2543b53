/*
 * daemon: the composition root.
 *
 * The engine is the loop and the runtime state; the services below live
 * beside it and reach the loop only through what they register here:
 * cron hooks (engine_on_tick, run in this order once a second after the
 * engine's own breaker and escalation ticks), the before-sleep reap of
 * finished calls (engine_on_before_sleep), and the HTTP server as the
 * loop's source. Creation order matters: the cache, the SLO book and the
 * overrides read the store through the engine's reader before the job and
 * review queues load (jobs may need a route's restored level). Freeing
 * goes the other way, after the drain.
 */
#include "daemon.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_diagnose.h"
#include "cache.h"
#include "call.h"
#include "canary.h"
#include "clock.h"
#include "config.h"
#include "control.h"
#include "engine.h"
#include "http.h"
#include "idem.h"
#include "jobs.h"
#include "notify.h"
#include "obs.h"
#include "review_q.h"
#include "sdnotify.h"
#include "trace.h"
#include "util.h"

#define IDEM_CAPACITY	200000
#define CACHE_CAPACITY	100000
#define NOTIFY_QUEUE	4096
#define NOTIFY_GRACE_MS 1000

/* The longest cache TTL of the routes, in ms (0 when no route caches: all go). */
static int64_t
cache_ttl_max_ms(const struct engine *e)
{
	int64_t ttl = 0;
	int i;

	for (i = 0; i < e->nroutes; i++) {
		const struct route_cfg *rc = e->routes[i].cfg;

		if (rc->cache.enabled && (int64_t)rc->cache.ttl_s * 1000 > ttl)
			ttl = (int64_t)rc->cache.ttl_s * 1000;
	}
	return ttl;
}

static void
tick_idem(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms)
{
	idem_expire(e->idem, now_wall_ms);
}

static void
tick_cache(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms)
{
	cache_expire(e->cache, now_wall_ms - cache_ttl_max_ms(e));
}

static void
tick_obs(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms)
{
	obs_tick(e->obs, now_wall_ms);
}

static void
tick_review_q(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms)
{
	review_q_tick(e, now_wall_ms);
}

/* The service manager's watchdog: pinged from the loop's cron, so a stuck loop stops the pings. */
static void
tick_watchdog(struct engine *e, void *arg, int64_t now_ms, int64_t now_wall_ms)
{
	sdnotify_send("WATCHDOG=1");
}

static void
reap_calls(struct engine *e, void *arg)
{
	call_reap(e);
}

static int
hooks_register(struct engine *e)
{
	static const engine_tick_fn ticks[] = {
		control_level_tick, tick_idem,	 tick_cache,	 tick_obs,
		tick_review_q,	    canary_tick, call_gate_tick,
	};
	size_t i;
	int r = 0;

	for (i = 0; i < ARRAY_SIZE(ticks) && r == 0; i++)
		r = engine_on_tick(e, ticks[i], NULL);
	if (r == 0 && sdnotify_watchdog_ms() > 0)
		r = engine_on_tick(e, tick_watchdog, NULL);
	if (r == 0)
		r = engine_on_before_sleep(e, reap_calls, NULL);
	return r;
}

int
daemon_create(struct config *cfg, struct store *st, struct engine **out, char **cause)
{
	struct engine *e = NULL;
	int r;

	r = engine_create(cfg, st, &e, cause);
	if (r != 0)
		return r; /* engine_create freed cfg */
	e->idem = idem_new(IDEM_CAPACITY);
	e->cache = cache_new(CACHE_CAPACITY);
	cache_load(e->cache, e->reader, clock_wall_ms() - cache_ttl_max_ms(e));
	r = obs_new(e->cfg, st, e->reader, clock_wall_ms(), &e->obs, cause);
	if (r != 0)
		goto out;
	r = notify_new(NOTIFY_QUEUE, &e->notify);
	if (r != 0) {
		*cause = xasprintf("notify: %s", strerror(-r));
		goto out;
	}
	/* Callbacks go only where callbacks.allow says (checked after DNS). */
	notify_allow_set(e->notify, e->cfg->callbacks_allow, e->cfg->ncallbacks_allow);
	e->control = control_new(e);
	e->call_after_answer = call_shadow_after_answer;
	r = control_restore(e, cause);
	if (r != 0)
		goto out;
	r = jobs_new(e, &e->jobs, cause);
	if (r != 0)
		goto out;
	r = review_q_load(e, cause);
	if (r != 0)
		goto out;
	r = hooks_register(e);
	if (r != 0) {
		*cause = xasprintf("engine hooks: %s", strerror(-r));
		goto out;
	}
	if (e->cfg->tracing.endpoint != NULL) {
		char host[256] = "";
		struct trace_exporter *x;

		gethostname(host, sizeof host - 1);
		x = trace_exporter_new(&e->cfg->tracing, st, host[0] ? host : NULL, FB_VERSION,
				       cause);
		if (x == NULL) {
			r = -1;
			goto out;
		}
		trace_install(x);
	}
	*out = e;
	e = NULL;
out:
	daemon_free(e);
	return r;
}

/* Dispatch order: the first table with a matching pattern and method wins. */
static const struct endpoint *const endpoint_tables[] = {
	api_call_endpoints, api_control_endpoints, api_review_endpoints,
	api_chat_endpoints, api_slo_endpoints,	   api_diagnose_endpoints,
};

void
daemon_http_endpoints(struct http_opts *o)
{
	o->tables = endpoint_tables;
	o->ntables = (int)ARRAY_SIZE(endpoint_tables);
}

int
daemon_attach_http(struct engine *e, struct http_server *srv)
{
	struct engine_source src;

	http_engine_source(srv, &src);
	e->srv = srv;
	return engine_attach_source(e, &src);
}

void
daemon_free(struct engine *e)
{
	if (e == NULL)
		return;
	/* The diagnose worker ends first (its answer leaves in the drain). */
	api_diagnose_stop(e);
	/* Drain first: calls finish, answers leave, posted tasks run. */
	engine_stop(e);
	engine_before_sleep(e);
	/* The drained calls' spans leave in one last flush. */
	trace_exporter_free(trace_installed());
	/* The services go before the engine: some hold its reader connection. */
	jobs_free(e->jobs);
	review_q_free(e->review_q);
	idem_free(e->idem);
	cache_free(e->cache);
	obs_free(e->obs);
	notify_free(e->notify, NOTIFY_GRACE_MS);
	control_free(e->control);
	e->control = NULL;
	e->jobs = NULL;
	e->review_q = NULL;
	e->idem = NULL;
	e->cache = NULL;
	e->obs = NULL;
	e->notify = NULL;
	engine_free(e);
}
