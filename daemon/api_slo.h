#pragma once
/*
 * api_slo: the SLO, alert, event and metrics endpoints of API.md
 * (GET /v1/slo, /v1/alerts, /v1/events, /metrics). Handlers run on the
 * engine thread; they read obs.c and the DB through the engine's reader.
 */
#include "http.h"
