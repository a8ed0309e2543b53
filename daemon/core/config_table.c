/*
 * config_table: every configuration key, once. See config_table.h.
 *
 * The defaults are JSON text so that one string is both what --help prints
 * and what the loader parses and stores through the same type and range
 * checks as a value read from the file (a bad default fails the unit test
 * that loads every row's default). Rows are in the order of CONFIG.md; the
 * loader walks them in this order, so errors come out in this order too.
 */
#include "config_table.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "util.h"

#define H   3600000.0  /* one hour in ms: the ceiling of most durations */
#define D   86400000.0 /* one day in ms */
#define GIB 1073741824.0

/* Names tables: index = enum value (config.h), NULL-terminated. */
const char *const config_names_breaker_mode[] = {"consecutive", "count", "time", NULL};
const char *const config_names_http_version[] = {"1.1", "2", NULL};
const char *const config_names_backoff[] = {"none", "exponential", NULL};
const char *const config_names_timeout_mode[] = {"fixed", "dynamic", NULL};
const char *const config_names_on_exhausted[] = {"error", "manual", NULL};
const char *const config_names_priority[] = {"high", "medium", "low", NULL};
const char *const config_names_overflow[] = {"auto_accept_low", "force_l2", NULL};
const char *const config_names_alert_op[] = {"<", "<=", ">", ">=", NULL};
const char *const config_names_severity[] = {"page", "ticket", NULL};
const char *const config_names_slo_window[] = {"5m", "30m", "1h", "6h", "1d", "3d", "30d", NULL};
const char *const config_names_log_level[] = {"debug", "info", "warn", "error", NULL};
static const char *const config_names_log_format[] = {"text", "json", NULL};
const char *const config_names_message_role[] = {"system", "user", "assistant", NULL};
const char *const config_names_tool_calls[] = {"auto", "allow", "deny", NULL};
static const char *const config_names_hedge_targets[] = {"same", "other", NULL};

/* Every one is a fraction 0..1 over the alert's window (DESIGN.md "SLO definitions"). */
const char *const config_alert_metric_names[] = {
	"service_availability",
	"smart_availability",
	"latency_ok",
	"timeout_rate",
	"retry_rate",
	"format_violation_rate",
	"degraded_rate",
	"backup_rate",
	"rules_rate",
	"cache_rate",
	"preset_rate",
	"manual_rate",
	"review_diff_rate",
	"shadow_agreement",
	"cross_check_agreement",
	NULL,
};

static const int slo_window_mins[WIN__COUNT] = {5, 30, 60, 360, 1440, 4320, 43200};

/* Offsets into the base structs. */
#define CF(f) offsetof(struct config, f)
#define BK(f) offsetof(struct backend_cfg, f)
#define RT(f) offsetof(struct route_cfg, f)
#define TG(f) offsetof(struct target_cfg, f)
#define MS(f) offsetof(struct message_cfg, f)
#define PR(f) offsetof(struct pattern_rule, f)
#define CR(f) offsetof(struct cond_rule, f)
#define RM(f) offsetof(struct rule_match, f)
#define AL(f) offsetof(struct slo_alert_cfg, f)

/* Row builders: path, flags, offset, range, default, unit, help. */
/* clang-format off */
#define B(p, o, d, h)                 {p, CKEY_BOOL, 0, o, 0, 0, d, NULL, NULL, NULL, h}
#define I(p, fl, o, lo, hi, d, u, h)  {p, CKEY_INT, fl, o, lo, hi, d, NULL, NULL, u, h}
#define L(p, fl, o, lo, hi, d, u, h)  {p, CKEY_INT64, fl, o, lo, hi, d, NULL, NULL, u, h}
#define N(p, fl, o, lo, hi, d, u, h)  {p, CKEY_NUMBER, fl, o, lo, hi, d, NULL, NULL, u, h}
#define S(p, fl, o, lo, hi, d, h)     {p, CKEY_STRING, fl, o, lo, hi, d, NULL, NULL, NULL, h}
#define SC(p, fl, o, names, d, h)     {p, CKEY_STRING, fl, o, 1, 64, d, names, NULL, NULL, h}
#define E(p, fl, o, names, d, h)      {p, CKEY_ENUM, fl, o, 0, 0, d, names, NULL, NULL, h}
#define O(p, fl, o, h)                {p, CKEY_OBJECT, fl, o, 0, 0, NULL, NULL, NULL, NULL, h}
#define A(p, fl, d, h)                {p, CKEY_ARRAY, fl, CKEY_NOFF, 0, 0, d, NULL, NULL, NULL, h}
#define J(p, fl, tn, h)               {p, CKEY_ANY, fl, CKEY_NOFF, 0, 0, NULL, NULL, tn, NULL, h}

#define REQ CKEY_REQUIRED
#define SEC CKEY_SECTION

/* The keys of one target list (primary or backup). */
#define TARGET_ROWS(pre)                                                                  \
	S(pre "[].backend", REQ, TG(backend), 1, 64, NULL, "backend name (backends[].name)"), \
	I(pre "[].weight", 0, TG(weight), 0, 1000000, "1", NULL,                            \
	    "relative weight; 0 takes the target out of rotation"),                          \
	B(pre "[].canary", TG(canary), "false", "canary target, watched by canary_guard")
/* clang-format on */

const struct config_key config_keys[] = {
	S("listen", 0, CF(listen), 1, 300, "\"127.0.0.1:7700\"",
	  "address to bind: \"a.b.c.d:port\", \"[v6]:port\" or \"localhost:port\"; port 0 = "
	  "ephemeral"),
	S("database", 0, CF(database), 1, 4096, "\"var/fusebox.db\"",
	  "SQLite file; relative to the config file's folder"),
	S("database_group", 0, CF(database_group), 1, 64, NULL,
	  "group (name or number) given the SQLite files, mode 0640; absent: mode 0600"),
	I("database_read_timeout_ms", 0, CF(database_read_timeout_ms), 1, 60000, "100", "ms",
	  "longest read of the SQLite file on the engine thread (the request then gets 503)"),
	S("tokens_file", 0, CF(tokens_file), 1, 4096, "\"var/tokens\"",
	  "bearer tokens, \"<token> <role> <name>\" a line; relative to the config file's folder; "
	  "mode 0600"),
	O("auth", 0, CKEY_NOFF, "who may call what"),
	B("auth.callers_require_token", CF(callers_require_token), "false",
	  "data-plane calls need a token (any role)"),
	B("auth.metrics_public", CF(metrics_public), "false", "/metrics without a token"),
	L("max_body_bytes", 0, CF(max_body_bytes), 1, GIB, "1048576", "bytes",
	  "largest request body (413 above)"),
	L("max_buffered_body_bytes", 0, CF(max_buffered_body_bytes), 1, 64 * GIB, "67108864",
	  "bytes", "request bodies held at once, daemon-wide (new bodies get 503 above)"),
	I("max_connections_per_ip", 0, CF(max_connections_per_ip), 0, 10000000, "0", NULL,
	  "open connections from one client address (0 = no cap; 503 and close above)"),
	O("http", 0, CKEY_NOFF, "the HTTP front: timeouts, Host and Origin checks"),
	I("http.header_timeout_s", 0, CF(http.header_timeout_s), 1, 3600, "10", "s",
	  "a new connection's request line and headers must arrive within this (408 and close)"),
	I("http.body_timeout_s", 0, CF(http.body_timeout_s), 1, 3600, "30", "s",
	  "a request body may pause this long between reads"),
	I("http.idle_timeout_s", 0, CF(http.idle_timeout_s), 1, 3600, "30", "s",
	  "a keep-alive connection with no request open is closed after this"),
	A("http.allowed_hosts", 0, "[]",
	  "Host names accepted besides the listen address (DNS rebinding guard)"),
	A("http.allowed_origins", 0, "[]",
	  "browser Origins accepted (\"https://app.example\"); any other Origin gets 403"),
	I("max_inflight", 0, CF(max_inflight), 1, 10000000, "10000", NULL,
	  "daemon-wide calls in flight; over it -> 429"),
	I("idempotency_ttl_s", 0, CF(idempotency_ttl_s), 0, 31536000, "86400", "s",
	  "how long a completed request_id replays its answer"),
	O("log", 0, CKEY_NOFF, "logging and stored rows"),
	E("log.level", 0, CF(log.level), config_names_log_level, "\"info\"", "stderr log level"),
	E("log.format", 0, CF(log.format), config_names_log_format, "\"text\"",
	  "stderr lines: text, or json (one object a line)"),
	B("log.inputs", CF(log.inputs), "true", "store call inputs in the database"),
	I("log.raw_output_bytes", 0, CF(log.raw_output_bytes), 0, 16777216, "4096", "bytes",
	  "raw model output kept per attempt (truncated)"),
	I("log.max_input_bytes", 0, CF(log.max_input_bytes), 0, 16777216, "65536", "bytes",
	  "calls.input and calls.result stored at most this long (truncated, marked); 0 = whole"),
	I("log.retention_days", 0, CF(log.retention_days), 1, 3650, "14", "days",
	  "log rows older than this are pruned"),
	J("alert_webhook", 0, "null | URL | object",
	  "POST alert changes to this URL, or {\"alertmanager\": URL}"),
	S("alert_webhook.alertmanager", REQ, CF(alertmanager_url), 1, 4096, NULL,
	  "Prometheus Alertmanager base URL (v2 API)"),
	O("callbacks", 0, CKEY_NOFF, "where callback_url may point"),
	A("callbacks.allow", 0, "[]",
	  "callback targets: \"host:port\", \"host\", \"addr/prefix\" or \"addr/prefix:port\"; "
	  "empty = no callbacks"),
	O("tracing", 0, CKEY_NOFF, "OpenTelemetry trace export (OTLP/HTTP JSON)"),
	S("tracing.endpoint", 0, CF(tracing.endpoint), 1, 4096, NULL,
	  "OTLP traces URL (http://host:4318/v1/traces); absent = no export"),
	S("tracing.service_name", 0, CF(tracing.service_name), 1, 256, "\"fuseboxd\"",
	  "resource attribute service.name"),
	N("tracing.sample_rate", 0, CF(tracing.sample_rate), 0, 1, "1.0", NULL,
	  "share of new traces sampled (a caller's sampled flag wins)"),
	I("tracing.max_queue", 0, CF(tracing.max_queue), 1, 1000000, "4096", "spans",
	  "spans waiting for export; more are dropped and counted"),
	I("tracing.batch", 0, CF(tracing.batch), 1, 100000, "256", "spans",
	  "spans per export request"),
	I("tracing.flush_ms", 0, CF(tracing.flush_ms), 1, H, "1000", "ms",
	  "a partial batch is sent after this"),
	I("tracing.timeout_ms", 0, CF(tracing.timeout_ms), 1, H, "2000", "ms",
	  "one export request"),
	J("tracing.headers", 0, "object", "extra export request headers, name -> string value"),
	B("tracing.include_io", CF(tracing.include_io), "false",
	  "inputs and outputs as span attributes"),

	A("backends", REQ, NULL, "upstream models (at least one)"),
	S("backends[].name", REQ, BK(name), 1, 64, NULL, "unique name: letters, digits, . _ -"),
	S("backends[].url", REQ, BK(url), 1, 4096, NULL,
	  "chat completions URL (http:// or https://)"),
	S("backends[].model", REQ, BK(model), 1, 256, NULL, "model name sent upstream"),
	S("backends[].api_key_env", 0, BK(api_key_env), 1, 128, NULL,
	  "environment variable holding the API key (Bearer); never logged"),
	S("backends[].version", 0, BK(version), 1, 64, NULL, "version label shown in state"),
	J("backends[].headers", 0, "object", "extra request headers, name -> string value"),
	A("backends[].record_response_headers", 0, "[]",
	  "response header names kept per attempt (at most 8, case-insensitive)"),
	O("backends[].timeouts", 0, CKEY_NOFF, "per-attempt timeouts, each clipped to the budget"),
	I("backends[].timeouts.connect_ms", 0, BK(connect_ms), 1, H, "1000", "ms",
	  "TCP + TLS connect"),
	I("backends[].timeouts.first_byte_ms", 0, BK(first_byte_ms), 1, H, "2500", "ms",
	  "until the status line and headers"),
	I("backends[].timeouts.total_ms", 0, BK(total_ms), 1, H, "3000", "ms", "whole attempt"),
	I("backends[].max_concurrent", 0, BK(max_concurrent), 1, 100000, "60", NULL,
	  "bulkhead: attempts in flight on this backend"),
	I("backends[].queue_ms", 0, BK(queue_ms), 0, H, "0", "ms",
	  "bulkhead: wait for a slot at most this long"),
	L("backends[].max_response_bytes", 0, BK(max_response_bytes), 1, GIB, "4194304", "bytes",
	  "a bigger upstream body is invalid_response"),
	E("backends[].http_version", 0, BK(http_version), config_names_http_version, "\"1.1\"",
	  "1.1 | 2 (h2: ALPN on https, prior knowledge on http; attempts share connections)"),
	S("backends[].tls_ca_file", 0, BK(tls_ca_file), 1, 4096, NULL,
	  "PEM file of the CAs trusted for an https url instead of the system's; relative to "
	  "the config file's folder"),
	O("backends[].breaker", 0, CKEY_NOFF, "circuit breaker"),
	E("backends[].breaker.mode", 0, BK(breaker.mode), config_names_breaker_mode,
	  "\"consecutive\"", "consecutive | count | time"),
	I("backends[].breaker.failure_threshold", 0, BK(breaker.failure_threshold), 1, 100000, "3",
	  NULL, "consecutive: failures in a row that open"),
	I("backends[].breaker.window", 0, BK(breaker.window), 1, 100000, "50", NULL,
	  "count: last N attempts"),
	I("backends[].breaker.window_s", 0, BK(breaker.window_s), 1, 3600, "10", "s",
	  "time: last N seconds"),
	I("backends[].breaker.min_calls", 0, BK(breaker.min_calls), 1, 1000000, "20", NULL,
	  "count/time: attempts needed in the window before it may open"),
	N("backends[].breaker.failure_rate", 0, BK(breaker.failure_rate), 0, 1, "0.5", NULL,
	  "count/time: opens at this failure fraction"),
	I("backends[].breaker.slow_call_ms", 0, BK(breaker.slow_call_ms), 0, H, "0", "ms",
	  "slower attempts are slow calls; 0 = not tracked"),
	N("backends[].breaker.slow_call_rate", 0, BK(breaker.slow_call_rate), 0, 1, "1.0", NULL,
	  "count/time: opens at this slow fraction"),
	I("backends[].breaker.open_ms", 0, BK(breaker.open_ms), 0, D, "60000", "ms",
	  "open this long before a half-open probe"),
	I("backends[].breaker.half_open_probes", 0, BK(breaker.half_open_probes), 1, 10000, "1",
	  NULL, "concurrent probes; that many successes close"),
	N("backends[].breaker.open_multiplier", 0, BK(breaker.open_multiplier), 1, 1000, "1.0",
	  NULL, "each re-open waits open_ms x multiplier^n"),
	I("backends[].breaker.max_open_ms", 0, BK(breaker.max_open_ms), 0, D, "600000", "ms",
	  "cap of the re-open wait"),
	B("backends[].breaker.count_validation_failures", BK(breaker.count_validation_failures),
	  "true", "invalid model output counts as a failure"),
	B("backends[].breaker.count_429", BK(breaker.count_429), "true", "429 counts as a failure"),
	O("backends[].adaptive_concurrency", SEC, BK(adaptive.enabled),
	  "a concurrency limit between min_limit and max_concurrent moved by latency (off when "
	  "absent)"),
	I("backends[].adaptive_concurrency.min_limit", 0, BK(adaptive.min_limit), 1, 100000, "2",
	  NULL, "floor of the limit"),
	I("backends[].adaptive_concurrency.initial_limit", 0, BK(adaptive.initial_limit), 1, 100000,
	  "10", NULL, "the limit at start (absent: 10 within [min_limit, max_concurrent])"),
	I("backends[].adaptive_concurrency.window_ms", 0, BK(adaptive.window_ms), 10, H, "1000",
	  "ms", "the limit moves at most once per window"),
	N("backends[].adaptive_concurrency.smoothing", 0, BK(adaptive.smoothing), 0.01, 1, "0.2",
	  NULL, "weight of each window's new limit"),
	N("backends[].adaptive_concurrency.tolerance", 0, BK(adaptive.tolerance), 1, 10, "1.5",
	  NULL, "latency may grow this much over the baseline before the limit falls"),
	N("backends[].adaptive_concurrency.backoff_ratio", 0, BK(adaptive.backoff_ratio), 0.1, 1,
	  "0.9", NULL, "a timeout, 429 or 5xx multiplies the limit by this (once per window)"),
	O("backends[].rate_limits", 0, CKEY_NOFF,
	  "the provider's rate limits, read before they bite (always on: headers honoured)"),
	I("backends[].rate_limits.rpm", 0, BK(rate_limits.rpm), 0, 100000000, "0", NULL,
	  "requests a minute the backend allows (0 = not configured; headers refine it)"),
	I("backends[].rate_limits.tpm", 0, BK(rate_limits.tpm), 0, 2000000000, "0", NULL,
	  "tokens a minute the backend allows (0 = not configured; estimated tokens)"),
	B("backends[].rate_limits.honor_headers", BK(rate_limits.honor_headers), "true",
	  "read x-ratelimit-remaining-* / x-ratelimit-reset-* / retry-after[-ms] of every answer"),

	A("routes", REQ, NULL, "call routes (at least one)"),
	S("routes[].name", REQ, RT(name), 1, 64, NULL, "unique name: letters, digits, . _ -"),
	I("routes[].budget_ms", 0, RT(budget_ms), 1, H, "6000", "ms",
	  "deadline of the whole call, retries and ladder included"),
	I("routes[].min_attempt_ms", 0, RT(min_attempt_ms), 0, H, "100", "ms",
	  "never start an attempt with less budget left"),
	O("routes[].timeout", 0, CKEY_NOFF, "per-attempt total timeout: fixed or dynamic"),
	E("routes[].timeout.mode", 0, RT(timeout.mode), config_names_timeout_mode, "\"fixed\"",
	  "fixed (backend timeouts) | dynamic (keys below)"),
	N("routes[].timeout.percentile", 0, RT(timeout.percentile), 0, 1, "0.9", NULL,
	  "dynamic: percentile of recent successful attempts"),
	I("routes[].timeout.window_s", 0, RT(timeout.window_s), 1, 86400, "300", "s",
	  "dynamic: window of those attempts"),
	N("routes[].timeout.per_100_tokens", 0, RT(timeout.per_100_tokens), 0, 100, "0.3", NULL,
	  "dynamic: factor added per 100 input tokens"),
	I("routes[].timeout.margin_ms", 0, RT(timeout.margin_ms), 0, H, "1500", "ms",
	  "dynamic: added margin"),
	I("routes[].timeout.min_ms", 0, RT(timeout.min_ms), 1, H, "5000", "ms",
	  "dynamic: lower clamp"),
	I("routes[].timeout.max_ms", 0, RT(timeout.max_ms), 1, H, "120000", "ms",
	  "dynamic: upper clamp"),
	I("routes[].timeout.default_ms", 0, RT(timeout.default_ms), 1, H, "8000", "ms",
	  "dynamic: used until 20 samples"),
	O("routes[].retry", 0, CKEY_NOFF, "retries within each model step, inside the budget"),
	I("routes[].retry.max_retries", 0, RT(retry.max_retries), 0, 100, "1", NULL,
	  "retries after the first attempt"),
	E("routes[].retry.backoff", 0, RT(retry.backoff), config_names_backoff, "\"none\"",
	  "none | exponential"),
	I("routes[].retry.base_ms", 0, RT(retry.base_ms), 0, H, "500", "ms", "first backoff"),
	N("routes[].retry.multiplier", 0, RT(retry.multiplier), 1, 100, "2.0", NULL,
	  "n-th retry waits min(base_ms x multiplier^(n-1), max_ms)"),
	I("routes[].retry.max_ms", 0, RT(retry.max_ms), 0, H, "8000", "ms", "backoff cap"),
	{"routes[].retry.jitter", CKEY_NUMBER, CKEY_CUSTOM, RT(retry.jitter), 0, 1, "0.2", NULL,
	 "number | \"full\"", NULL, "+/- fraction of the delay, or \"full\" = uniform(0, delay)"},
	A("routes[].retry.retry_on", 0,
	  "[\"connect_error\", \"reset\", \"http_5xx\", \"http_429\"]",
	  "outcome classes retried (transport classes only)"),
	B("routes[].retry.honor_retry_after", RT(retry.honor_retry_after), "true",
	  "wait Retry-After when it fits the budget"),
	N("routes[].retry.budget_ratio", 0, RT(retry.budget_ratio), 0, 1, "0.2", NULL,
	  "retry budget: retries in 10 s <= max(ratio x calls, min_per_s x 10)"),
	N("routes[].retry.budget_min_per_s", 0, RT(retry.budget_min_per_s), 0, 100000, "3", NULL,
	  "retry budget floor per second"),
	O("routes[].retry.hedge", SEC, RT(retry.hedge.enabled),
	  "hedged attempts: another attempt when the first has no first byte after a delay (off "
	  "when absent)"),
	I("routes[].retry.hedge.after_ms", 0, RT(retry.hedge.after_ms), 1, H, NULL, "ms",
	  "fixed delay; exactly one of after_ms or after"),
	{"routes[].retry.hedge.after", CKEY_STRING, CKEY_CUSTOM, CKEY_NOFF, 3, 6, NULL, NULL,
	 "\"pNN\"", NULL,
	 "delay = this quantile (p50..p99.9) of the backend's successful first-byte times of the "
	 "last 60 s, clamped to [min_ms, max_ms]; max_ms below 20 samples"},
	I("routes[].retry.hedge.min_ms", 0, RT(retry.hedge.min_ms), 0, H, "50", "ms",
	  "after: lower clamp of the delay"),
	I("routes[].retry.hedge.max_ms", 0, RT(retry.hedge.max_ms), 1, H, "2500", "ms",
	  "after: upper clamp of the delay, and the delay while samples are few"),
	I("routes[].retry.hedge.max_hedges", 0, RT(retry.hedge.max_hedges), 1, HEDGE_MAX_HEDGES,
	  "1", NULL, "hedged attempts per model step at most (they count in the retry budget)"),
	E("routes[].retry.hedge.targets", 0, RT(retry.hedge.targets), config_names_hedge_targets,
	  "\"other\"", "same (backend) | other (another target of the step when there is one)"),
	A("routes[].targets", REQ, NULL, "primary targets (at least one, one weight > 0)"),
	TARGET_ROWS("routes[].targets"),
	B("routes[].health_weighting", RT(health_weighting), "true",
	  "scale weights by recent backend health"),
	O("routes[].canary_guard", SEC, RT(canary_guard.enabled),
	  "roll a bad canary back to weight 0 (off when absent)"),
	I("routes[].canary_guard.min_calls", 0, RT(canary_guard.min_calls), 1, 1000000, "50", NULL,
	  "calls needed on each side within the window"),
	N("routes[].canary_guard.max_failure_delta", 0, RT(canary_guard.max_failure_delta), 0, 1,
	  "0.05", NULL, "canary failure rate minus baseline's that trips"),
	I("routes[].canary_guard.window_s", 0, RT(canary_guard.window_s), 1, 86400, "300", "s",
	  "comparison window"),
	O("routes[].backup", SEC, RT(backup.enabled), "L1 backup model step (off when absent)"),
	A("routes[].backup.targets", REQ, NULL, "backup targets"),
	TARGET_ROWS("routes[].backup.targets"),
	N("routes[].backup.temperature", 0, RT(backup.temperature), 0, 2, NULL, NULL,
	  "overrides prompt.temperature on the backup step"),
	A("routes[].backup.few_shot", 0, NULL, "messages put before the input on the backup step"),
	SC("routes[].backup.few_shot[].role", REQ, MS(role), config_names_message_role, NULL,
	   "system | user | assistant"),
	S("routes[].backup.few_shot[].content", REQ, MS(content), 0, 65536, NULL, "message text"),
	O("routes[].prompt", 0, CKEY_NOFF, "the upstream request"),
	S("routes[].prompt.system", 0, RT(prompt.system), 0, 65536, NULL,
	  "system message; absent = none"),
	S("routes[].prompt.user", 0, RT(prompt.user), 0, 65536, "\"{{input}}\"",
	  "user message template; {{input}} = the call's input"),
	N("routes[].prompt.temperature", 0, RT(prompt.temperature), 0, 2, "0.7", NULL,
	  "sampling temperature"),
	I("routes[].prompt.max_tokens", 0, RT(prompt.max_tokens), 1, 1000000, "128", NULL,
	  "max_tokens sent upstream"),
	B("routes[].prompt.response_format_json", RT(prompt.response_format_json), "true",
	  "ask for response_format json_object"),
	O("routes[].output", SEC, RT(output.present),
	  "the output contract (absent: any non-empty text)"),
	J("routes[].output.schema", 0, "object", "JSON-schema subset the answer must match"),
	A("routes[].output.deny", 0, NULL, "semantic deny patterns"),
	S("routes[].output.deny[].field", REQ, PR(field), 1, 256, NULL, "result field checked"),
	S("routes[].output.deny[].pattern", REQ, PR(pattern), 1, 4096, NULL,
	  "POSIX extended regex; a match rejects the answer"),
	A("routes[].output.rules", 0, NULL, "conditional deny rules"),
	O("routes[].output.rules[].when", REQ, CKEY_NOFF, "condition"),
	S("routes[].output.rules[].when.field", REQ, CR(when_field), 1, 256, NULL, "result field"),
	J("routes[].output.rules[].when.equals", REQ, "any", "value the field must equal"),
	O("routes[].output.rules[].deny", REQ, CKEY_NOFF, "deny applied when the condition holds"),
	S("routes[].output.rules[].deny.field", REQ, CR(deny.field), 1, 256, NULL,
	  "result field checked"),
	S("routes[].output.rules[].deny.pattern", REQ, CR(deny.pattern), 1, 4096, NULL,
	  "POSIX extended regex"),
	S("routes[].output.confidence_field", 0, RT(output.confidence_field), 1, 256,
	  "\"confidence\"", "result field holding the confidence"),
	B("routes[].output.clamp_confidence", RT(output.clamp_confidence), "true",
	  "clamp confidence into [0, 1] before the schema check"),
	N("routes[].output.reject_below", 0, RT(output.reject_below), 0, 1, "0.0", NULL,
	  "model answers below this confidence are failures"),
	N("routes[].output.review_below", 0, RT(output.review_below), 0, 1, "0.7", NULL,
	  "model answers below this confidence go to review"),
	E("routes[].output.tool_calls", 0, RT(output.tool_calls), config_names_tool_calls,
	  "\"auto\"", "tool-call replies: allow | deny | auto (allow without a schema)"),
	O("routes[].rules", SEC, RT(rules.enabled),
	  "rule engine: ordered, first match wins (off when absent)"),
	A("routes[].rules.match", 0, NULL, "rules; each has \"any\" or \"regex\""),
	A("routes[].rules.match[].any", 0, NULL, "keywords (substring, ASCII case-insensitive)"),
	S("routes[].rules.match[].regex", 0, RM(regex), 1, 4096, NULL, "POSIX extended regex"),
	J("routes[].rules.match[].result", REQ, "object", "the answer"),
	N("routes[].rules.match[].confidence", 0, RM(confidence), 0, 1, "0.6", NULL,
	  "confidence reported"),
	O("routes[].rules.default", SEC, RT(rules.has_default),
	  "answer when no rule matches (absent: fall through to cache)"),
	J("routes[].rules.default.result", REQ, "object", "the answer"),
	N("routes[].rules.default.confidence", 0, RT(rules.default_confidence), 0, 1, "0.3", NULL,
	  "confidence reported"),
	O("routes[].cache", SEC, RT(cache.enabled),
	  "last good llm result per normalised input (off when absent)"),
	B("routes[].cache.enabled", RT(cache.enabled), "true", "false turns the cache off"),
	I("routes[].cache.ttl_s", 0, RT(cache.ttl_s), 1, 31536000, "86400", "s", "entry lifetime"),
	O("routes[].preset", SEC, RT(preset.enabled), "fixed last-resort answer (off when absent)"),
	J("routes[].preset.result", 0, "object", "the answer"),
	S("routes[].preset.text", 0, RT(preset.text), 0, 65536, NULL,
	  "text answer (chat facade); result or text required"),
	E("routes[].on_exhausted", 0, RT(on_exhausted), config_names_on_exhausted, "\"error\"",
	  "error (503) | manual (queue for a human)"),
	O("routes[].escalation", SEC, RT(escalation.enabled),
	  "automatic level changes (off when absent)"),
	I("routes[].escalation.l1_after", 0, RT(escalation.l1_after), 1, 100000, "3", NULL,
	  "consecutive validation failures at L0 -> L1"),
	I("routes[].escalation.l2_after", 0, RT(escalation.l2_after), 1, 100000, "5", NULL,
	  "consecutive calls no model answered (at L1, or at L0 with the backup failing too) -> "
	  "L2"),
	I("routes[].escalation.window_s", 0, RT(escalation.window_s), 1, 86400, "60", "s",
	  "error-rate window"),
	N("routes[].escalation.error_rate", 0, RT(escalation.error_rate), 0, 1, "0.5", NULL,
	  "error rate over the window -> L2"),
	I("routes[].escalation.min_calls", 0, RT(escalation.min_calls), 1, 1000000, "20", NULL,
	  "calls needed in the window"),
	I("routes[].escalation.recover_after_s", 0, RT(escalation.recover_after_s), 0, 86400, "60",
	  "s", "step one level back up after this long"),
	O("routes[].review", 0, CKEY_NOFF, "human review queue (always present)"),
	N("routes[].review.sample_rate", 0, RT(review.sample_rate), 0, 1, "0", NULL,
	  "fraction of model answers sampled for review"),
	E("routes[].review.priority", 0, RT(review.priority), config_names_priority, "\"medium\"",
	  "high | medium | low"),
	O("routes[].review.sla_s", 0, CKEY_NOFF, "time to decide, per priority"),
	I("routes[].review.sla_s.high", 0, RT(review.sla_s[PRIORITY_HIGH]), 1, 31536000, "900", "s",
	  "high priority"),
	I("routes[].review.sla_s.medium", 0, RT(review.sla_s[PRIORITY_MEDIUM]), 1, 31536000, "7200",
	  "s", "medium priority"),
	I("routes[].review.sla_s.low", 0, RT(review.sla_s[PRIORITY_LOW]), 1, 31536000, "86400", "s",
	  "low priority"),
	I("routes[].review.capacity", 0, RT(review.capacity), 1, 10000000, "1000", NULL,
	  "open items before the overflow policy applies"),
	E("routes[].review.overflow", 0, RT(review.overflow), config_names_overflow,
	  "\"auto_accept_low\"", "auto_accept_low | force_l2"),
	O("routes[].cross_check", SEC, RT(cross_check.enabled),
	  "sampled second opinion (off when absent)"),
	S("routes[].cross_check.backend", REQ, RT(cross_check.backend), 1, 64, NULL,
	  "backend asked"),
	N("routes[].cross_check.sample_rate", 0, RT(cross_check.sample_rate), 0, 1, "0.0", NULL,
	  "fraction of model answers cross-checked"),
	A("routes[].cross_check.compare", 0, "[]",
	  "result fields compared; [] = the whole result but the confidence field"),
	O("routes[].rules_shadow", SEC, RT(rules_shadow.enabled),
	  "sampled rule-engine shadow (off when absent)"),
	N("routes[].rules_shadow.sample_rate", 0, RT(rules_shadow.sample_rate), 0, 1, "0.0", NULL,
	  "fraction of model answers also run through the rules"),
	O("routes[].slo", SEC, RT(slo.enabled), "objectives and alerts (off when absent)"),
	N("routes[].slo.service_availability", 0, RT(slo.service_availability), 0, 1, "0.999", NULL,
	  "objective: answered within budget, any source"),
	N("routes[].slo.smart_availability", 0, RT(slo.smart_availability), 0, 1, "0.95", NULL,
	  "objective: answered by a model, validated"),
	I("routes[].slo.latency_ms", 0, RT(slo.latency_ms), 1, H, "2000", "ms",
	  "latency objective"),
	N("routes[].slo.latency_target", 0, RT(slo.latency_target), 0, 1, "0.99", NULL,
	  "fraction under latency_ms"),
	B("routes[].slo.burn_rate_alerts", RT(slo.burn_rate_alerts), "true",
	  "multi-window burn-rate alerts on both availabilities"),
	I("routes[].slo.burn_rate_min_calls", 0, RT(slo.burn_rate_min_calls), 0, 1000000, "10",
	  NULL, "calls needed in a window before it can burn"),
	A("routes[].slo.alerts", 0, NULL, "threshold-for-duration alerts"),
	S("routes[].slo.alerts[].name", REQ, AL(name), 1, 64, NULL, "unique within the route"),
	SC("routes[].slo.alerts[].metric", REQ, AL(metric), config_alert_metric_names, NULL,
	   "fraction over the window, e.g. smart_availability, timeout_rate, retry_rate"),
	E("routes[].slo.alerts[].op", REQ, AL(op), config_names_alert_op, NULL, "< | <= | > | >="),
	N("routes[].slo.alerts[].value", REQ, AL(value), 0, 1, NULL, NULL, "threshold"),
	I("routes[].slo.alerts[].for_s", 0, AL(for_s), 0, 31536000, "300", "s",
	  "condition must hold this long to fire"),
	E("routes[].slo.alerts[].window", 0, AL(window), config_names_slo_window, "\"5m\"",
	  "5m | 30m | 1h | 6h | 1d | 3d | 30d"),
	E("routes[].slo.alerts[].severity", 0, AL(severity), config_names_severity, "\"ticket\"",
	  "page | ticket"),
	I("routes[].slo.alerts[].min_calls", 0, AL(min_calls), 0, 1000000, "10", NULL,
	  "calls needed in the window to evaluate"),
};

const size_t config_nkeys = ARRAY_SIZE(config_keys);

const struct config_key *
config_key_find(const char *path)
{
	size_t i;

	for (i = 0; i < config_nkeys; i++) {
		if (strcmp(config_keys[i].path, path) == 0)
			return &config_keys[i];
	}
	return NULL;
}

int
config_key_is_child(const struct config_key *k, const char *parent)
{
	size_t n = strlen(parent);
	const char *rest;

	if (n == 0)
		return strchr(k->path, '.') == NULL;
	if (strncmp(k->path, parent, n) != 0 || k->path[n] != '.')
		return 0;
	rest = k->path + n + 1;
	return strchr(rest, '.') == NULL;
}

const char *
config_key_name(const struct config_key *k)
{
	const char *dot = strrchr(k->path, '.');

	return dot != NULL ? dot + 1 : k->path;
}

const char *
config_key_type_name(const struct config_key *k)
{
	static const char *const names[] = {
		[CKEY_BOOL] = "boolean",  [CKEY_INT] = "integer",   [CKEY_INT64] = "integer",
		[CKEY_NUMBER] = "number", [CKEY_STRING] = "string", [CKEY_ENUM] = "string",
		[CKEY_OBJECT] = "object", [CKEY_ARRAY] = "array",   [CKEY_ANY] = "any",
	};

	if (k->tname != NULL)
		return k->tname;
	return names[k->type];
}

const char *
priority_name(enum priority p)
{
	if ((unsigned)p >= PRIORITY__COUNT)
		return NULL;
	return config_names_priority[p];
}

const char *
slo_window_name(enum slo_window w)
{
	if ((unsigned)w >= WIN__COUNT)
		return NULL;
	return config_names_slo_window[w];
}

int
slo_window_minutes(enum slo_window w)
{
	if ((unsigned)w >= WIN__COUNT)
		return -1;
	return slo_window_mins[w];
}

const char *
severity_name(enum severity s)
{
	if ((unsigned)s > SEVERITY_TICKET)
		return NULL;
	return config_names_severity[s];
}
