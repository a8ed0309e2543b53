#pragma once
/*
 * wire: the names the daemon puts on the wire (API answers, events, DB
 * rows) and the console reads back, spelt once for both sides (tmux's
 * tmux-protocol.h). String literals only, so they concatenate into SQL and
 * format strings; the enums and their names tables stay with their modules
 * (breaker.c, outcome.c). A name here is part of the HTTP API and of the
 * DB's rows: renaming one is an API change. Levels travel as numbers (0-3)
 * and have no names. Pure; any thread.
 */

/* Breaker states: breaker_state_name(), "state" in /v1/state's "breaker". */
#define WIRE_BREAKER_CLOSED	   "closed"
#define WIRE_BREAKER_OPEN	   "open"
#define WIRE_BREAKER_HALF_OPEN	   "half_open"
#define WIRE_BREAKER_FORCED_OPEN   "forced_open"
#define WIRE_BREAKER_FORCED_CLOSED "forced_closed"
/* PUT /v1/backends/B/breaker {"state": "auto"}: release a forced state. */
#define WIRE_BREAKER_AUTO "auto"

/* Answer sources: source_name(), the call answer's "source", calls.source. */
#define WIRE_SOURCE_LLM	   "llm"
#define WIRE_SOURCE_BACKUP "backup"
#define WIRE_SOURCE_RULES  "rules"
#define WIRE_SOURCE_CACHE  "cache"
#define WIRE_SOURCE_PRESET "preset"
#define WIRE_SOURCE_MANUAL "manual"
#define WIRE_SOURCE_NONE   "none"

/* Ladder steps: step_name(), degradations.from_step / to_step. */
#define WIRE_STEP_PRIMARY   "primary"
#define WIRE_STEP_BACKUP    "backup"
#define WIRE_STEP_RULES	    "rules"
#define WIRE_STEP_CACHE	    "cache"
#define WIRE_STEP_PRESET    "preset"
#define WIRE_STEP_EXHAUSTED "exhausted"

/*
 * Attempt outcome classes: outcome_name(), attempts.outcome. A failed
 * attempt's class is also the degradation reason of the step it ends.
 */
#define WIRE_OUTCOME_OK			 "ok"
#define WIRE_OUTCOME_CONNECT_ERROR	 "connect_error"
#define WIRE_OUTCOME_RESET		 "reset"
#define WIRE_OUTCOME_FIRST_BYTE_TIMEOUT	 "first_byte_timeout"
#define WIRE_OUTCOME_TOTAL_TIMEOUT	 "total_timeout"
#define WIRE_OUTCOME_HTTP_5XX		 "http_5xx"
#define WIRE_OUTCOME_HTTP_429		 "http_429"
#define WIRE_OUTCOME_HTTP_4XX		 "http_4xx"
#define WIRE_OUTCOME_INVALID_RESPONSE	 "invalid_response"
#define WIRE_OUTCOME_VALIDATION_FORMAT	 "validation_format"
#define WIRE_OUTCOME_VALIDATION_SCHEMA	 "validation_schema"
#define WIRE_OUTCOME_VALIDATION_SEMANTIC "validation_semantic"
#define WIRE_OUTCOME_LOW_CONFIDENCE	 "low_confidence"
#define WIRE_OUTCOME_HEDGE_CANCELLED	 "hedge_cancelled"

/*
 * The other degradation reasons (degradations.reason, the answer's
 * "reason"): why a step was left or skipped without an attempt outcome.
 */
#define WIRE_REASON_BREAKER_OPEN	"breaker_open"
#define WIRE_REASON_BULKHEAD_FULL	"bulkhead_full"
#define WIRE_REASON_CONCURRENCY_LIMITED "concurrency_limited"
#define WIRE_REASON_RATE_LIMITED_LOCAL	"rate_limited_local"
#define WIRE_REASON_BUDGET_EXHAUSTED	"budget_exhausted"
#define WIRE_REASON_NO_TARGET		"no_target"
#define WIRE_REASON_NO_WEIGHT		"no_weight"
#define WIRE_REASON_RULES_NO_MATCH	"rules_no_match"
#define WIRE_REASON_CACHE_MISS		"cache_miss"
#define WIRE_REASON_LLM_DISALLOWED	"llm_disallowed"
#define WIRE_REASON_FORCED_LEVEL	"forced_level"
#define WIRE_REASON_AUTO_LEVEL		"auto_level"
