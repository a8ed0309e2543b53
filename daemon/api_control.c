/*
 * api_control: the control plane of API.md (viewer / operator endpoints).
 * Engine thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "clock.h"
#include "engine.h"
#include "http.h"
#include "util.h"

static cJSON *
rfc3339_or_null(int64_t wall_ms)
{
	char ts[40];

	if (wall_ms <= 0)
		return cJSON_CreateNull();
	time_format_rfc3339(wall_ms, ts, sizeof ts);
	return cJSON_CreateString(ts);
}

static cJSON *
breaker_json(struct engine *e, struct backend_rt *b, int64_t now_ms)
{
	cJSON *o = cJSON_CreateObject(), *lt;
	struct breaker_stats bs;
	enum breaker_state st = breaker_state(&b->breaker, now_ms);
	static const char *const modes[] = { "consecutive", "count", "time" };
	int64_t t;

	breaker_get_stats(&b->breaker, now_ms, &bs);
	cJSON_AddStringToObject(o, "state", breaker_state_name(st));
	cJSON_AddStringToObject(o, "mode", modes[b->cfg->breaker.mode]);
	cJSON_AddNumberToObject(o, "failures", bs.consecutive_failures);
	cJSON_AddNumberToObject(o, "calls_in_window", bs.calls_in_window);
	cJSON_AddNumberToObject(o, "failure_rate", bs.failure_rate);
	cJSON_AddNumberToObject(o, "slow_call_rate", bs.slow_call_rate);
	t = breaker_opened_at(&b->breaker);
	cJSON_AddItemToObject(o, "opened_at", rfc3339_or_null(t >= 0 ? clock_mono_to_wall_ms(t) : 0));
	t = breaker_half_open_at(&b->breaker);
	cJSON_AddItemToObject(o, "half_open_at",
			      rfc3339_or_null(t >= 0 ? clock_mono_to_wall_ms(t) : 0));
	if (b->breaker.ntransitions) {
		lt = cJSON_AddObjectToObject(o, "last_transition");
		cJSON_AddItemToObject(lt, "at",
				      rfc3339_or_null(clock_mono_to_wall_ms(b->breaker.last.at_ms)));
		cJSON_AddStringToObject(lt, "from", breaker_state_name(b->breaker.last.from));
		cJSON_AddStringToObject(lt, "to", breaker_state_name(b->breaker.last.to));
		cJSON_AddStringToObject(lt, "reason", b->breaker.last.reason);
	} else {
		cJSON_AddNullToObject(o, "last_transition");
	}
	return o;
}

static void
handle_state(struct http_req *r, struct engine *e)
{
	cJSON *o = cJSON_CreateObject(), *routes, *backends;
	int64_t now_ms = clock_mono_ms(), now_wall = clock_wall_ms();
	char ts[40];
	char *body;
	int i, j;

	cJSON_AddStringToObject(o, "version", FB_VERSION);
	time_format_rfc3339(e->started_wall_ms, ts, sizeof ts);
	cJSON_AddStringToObject(o, "started_at", ts);
	cJSON_AddNumberToObject(o, "uptime_s", (double)((now_wall - e->started_wall_ms) / 1000));
	cJSON_AddNumberToObject(o, "inflight", e->inflight);
	routes = cJSON_AddArrayToObject(o, "routes");
	for (i = 0; i < e->nroutes; i++) {
		struct route_rt *rt = &e->routes[i];
		cJSON *ro = cJSON_CreateObject(), *targets;

		cJSON_AddStringToObject(ro, "name", rt->cfg->name);
		cJSON_AddNumberToObject(ro, "level", engine_route_level(e, i));
		cJSON_AddNumberToObject(ro, "auto_level", rt->auto_level);
		if (rt->forced_level >= 0) {
			cJSON *f = cJSON_AddObjectToObject(ro, "forced_level");

			cJSON_AddNumberToObject(f, "level", rt->forced_level);
			cJSON_AddStringToObject(f, "actor", rt->forced_actor ? rt->forced_actor : "");
			cJSON_AddStringToObject(f, "reason", rt->forced_reason ? rt->forced_reason : "");
			cJSON_AddItemToObject(f, "until", rfc3339_or_null(rt->forced_until_wall));
		} else {
			cJSON_AddNullToObject(ro, "forced_level");
		}
		cJSON_AddNumberToObject(ro, "budget_ms", rt->cfg->budget_ms);
		targets = cJSON_AddArrayToObject(ro, "targets");
		for (j = 0; j < rt->cfg->ntargets; j++) {
			cJSON *t = cJSON_CreateObject();

			cJSON_AddStringToObject(t, "backend", rt->cfg->targets[j].backend);
			cJSON_AddNumberToObject(t, "weight", rt->weights[j]);
			cJSON_AddBoolToObject(t, "canary", rt->cfg->targets[j].canary);
			cJSON_AddItemToArray(targets, t);
		}
		cJSON_AddItemToArray(routes, ro);
	}
	backends = cJSON_AddArrayToObject(o, "backends");
	for (i = 0; i < e->nbackends; i++) {
		struct backend_rt *b = &e->backends[i];
		cJSON *bo = cJSON_CreateObject();

		cJSON_AddStringToObject(bo, "name", b->cfg->name);
		if (b->cfg->version)
			cJSON_AddStringToObject(bo, "version", b->cfg->version);
		else
			cJSON_AddNullToObject(bo, "version");
		cJSON_AddItemToObject(bo, "breaker", breaker_json(e, b, now_ms));
		engine_breaker_events(e, b);
		cJSON_AddNumberToObject(bo, "inflight", b->bulkhead.inflight);
		cJSON_AddNumberToObject(bo, "max_concurrent", b->bulkhead.max);
		cJSON_AddNumberToObject(bo, "health",
					health_score(&b->health, now_ms, 0, b->bulkhead.inflight,
						     b->bulkhead.max));
		cJSON_AddNumberToObject(bo, "p90_ms_5m",
					(double)health_percentile(&b->health, now_ms, 300, 0.9, 1));
		cJSON_AddItemToArray(backends, bo);
	}
	body = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	http_respond(r, 200, body, strlen(body));
}

const struct endpoint api_control_endpoints[] = {
	{ HTTP_GET, "/v1/state", ACCESS_VIEWER, handle_state, 0 },
	{ 0, NULL, 0, NULL, 0 },
};
