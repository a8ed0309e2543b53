#pragma once
/*
 * config: the configuration of ../shared/CONFIG.md as typed structs.
 *
 * config_load() parses one JSON file with cJSON, applies the documented
 * defaults (optional sections off when absent), resolves relative paths
 * against the file's folder, validates everything and reports *all* errors,
 * each naming its JSON path ("routes[1].retry.multiplier: must be >= 1.0
 * (got 0.5)"). The key table lives in config_table.c and also feeds
 * --help. A loaded config is immutable and owned by whoever loaded it;
 * config_free() releases it. Runs on the main thread (load, reload).
 */
#include <regex.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "addr.h"
#include "hedge.h"
#include "limiter.h"
#include "outcome.h"
#include "ratelimit.h"

struct vschema; /* compiled output schema, schema.h */

enum config_e {
	CONFIG_E_INVALID = 1, /* the file parsed but failed validation: see cause */
	CONFIG_E_SYNTAX,      /* not JSON */
	CONFIG_E_IO,	      /* cannot read the file */
};

enum breaker_mode { BREAKER_MODE_CONSECUTIVE = 0, BREAKER_MODE_COUNT, BREAKER_MODE_TIME };

struct breaker_cfg {
	enum breaker_mode mode;
	int failure_threshold; /* consecutive */
	int window;	       /* count: last N attempts */
	int window_s;	       /* time: last N seconds */
	int min_calls;
	double failure_rate;
	int slow_call_ms; /* 0 = not tracked */
	double slow_call_rate;
	int open_ms;
	int half_open_probes;
	double open_multiplier;
	int max_open_ms;
	bool count_validation_failures;
	bool count_429;
};

/* HTTP version spoken to a backend (backends[].http_version). */
enum http_version { HTTP_VERSION_1_1 = 0, HTTP_VERSION_2 };

struct header_kv {
	char *name;
	char *value;
};

struct backend_cfg {
	char *name;
	char *url;
	char *model;
	char *api_key_env; /* NULL: no Authorization header */
	char *version;	   /* NULL when absent */
	struct header_kv *headers;
	int nheaders;
	char **record_headers; /* record_response_headers, lower case */
	int nrecord_headers;
	int connect_ms;
	int first_byte_ms;
	int total_ms;
	int max_concurrent;
	int queue_ms;
	int64_t max_response_bytes;
	enum http_version http_version; /* 2: h2 (ALPN on https, prior knowledge on http) */
	char *tls_ca_file;		/* resolved path; NULL: the system's CAs */
	struct breaker_cfg breaker;
	/*
	 * adaptive_concurrency: enabled when the object is present; max_limit
	 * is always max_concurrent (the limit's ceiling).
	 */
	struct limiter_cfg adaptive;
	/* rate_limits: always present (absent: rpm 0, tpm 0, headers honoured). */
	struct ratelimit_cfg rate_limits;
};

struct target_cfg {
	char *backend;
	int backend_idx; /* index into config.backends, resolved at load */
	int weight;
	bool canary;
};

enum backoff_kind { BACKOFF_NONE = 0, BACKOFF_EXPONENTIAL };

struct retry_cfg {
	int max_retries;
	enum backoff_kind backoff;
	int base_ms;
	double multiplier;
	int max_ms;
	double jitter;	   /* ± fraction; ignored when jitter_full */
	bool jitter_full;  /* "jitter": "full" → uniform(0, delay) */
	unsigned retry_on; /* OUTCOME_BIT() mask */
	bool honor_retry_after;
	double budget_ratio;
	double budget_min_per_s;
	/* retry.hedge: enabled when present; exactly one of after_ms / after_quantile set. */
	struct hedge_cfg hedge;
};

enum timeout_mode { TIMEOUT_FIXED = 0, TIMEOUT_DYNAMIC };

struct timeout_cfg {
	enum timeout_mode mode;
	double percentile;
	int window_s;
	double per_100_tokens;
	int margin_ms;
	int min_ms;
	int max_ms;
	int default_ms;
};

struct canary_guard_cfg {
	bool enabled;
	int min_calls;
	double max_failure_delta;
	int window_s;
};

struct message_cfg {
	char *role;
	char *content;
};

struct backup_cfg {
	bool enabled;
	struct target_cfg *targets;
	int ntargets;
	bool has_temperature;
	double temperature;
	struct message_cfg *few_shot;
	int nfew_shot;
};

struct prompt_cfg {
	char *system; /* NULL: no system message */
	char *user;   /* template; "{{input}}" is replaced by the call's input */
	double temperature;
	int max_tokens;
	bool response_format_json;
};

struct pattern_rule {
	char *field;
	char *pattern;
	regex_t re; /* REG_EXTENDED | REG_NOSUB, compiled at load */
};

struct cond_rule {
	char *when_field;
	cJSON *when_equals; /* owned; compared with cJSON_Compare */
	struct pattern_rule deny;
};

/* output.tool_calls; AUTO: allowed on routes without an output schema. */
enum tool_calls_policy { TOOL_CALLS_DEFAULT = 0, TOOL_CALLS_ALLOW, TOOL_CALLS_DENY };

struct output_cfg {
	bool present;		 /* the route has an "output" section */
	cJSON *schema;		 /* owned; NULL when absent */
	struct vschema *vschema; /* compiled from schema by validate_compile() */
	struct pattern_rule *deny;
	int ndeny;
	struct cond_rule *rules;
	int nrules;
	char *confidence_field; /* default "confidence" */
	bool clamp_confidence;
	double reject_below;
	double review_below;
	enum tool_calls_policy tool_calls; /* a tool-call reply: answer or format failure */
};

struct rule_match {
	char **any; /* keywords, ASCII-lower-cased at load */
	int nany;
	char *regex; /* NULL when the rule is an "any" rule */
	regex_t re;
	cJSON *result; /* owned */
	double confidence;
};

struct rules_cfg {
	bool enabled;
	struct rule_match *match;
	int nmatch;
	bool has_default;
	cJSON *default_result; /* owned */
	double default_confidence;
};

struct cache_cfg {
	bool enabled;
	int ttl_s;
};

struct preset_cfg {
	bool enabled;
	cJSON *result; /* owned, may be NULL */
	char *text;    /* may be NULL */
};

enum on_exhausted { ON_EXHAUSTED_ERROR = 0, ON_EXHAUSTED_MANUAL };

struct escalation_cfg {
	bool enabled;
	int l1_after;
	int l2_after;
	int window_s;
	double error_rate;
	int min_calls;
	int recover_after_s;
};

enum priority { PRIORITY_HIGH = 0, PRIORITY_MEDIUM, PRIORITY_LOW, PRIORITY__COUNT };
enum overflow { OVERFLOW_AUTO_ACCEPT_LOW = 0, OVERFLOW_FORCE_L2 };

struct review_cfg {
	double sample_rate;
	enum priority priority;
	int sla_s[PRIORITY__COUNT]; /* defaults 900 / 7200 / 86400 */
	int capacity;
	enum overflow overflow;
};

struct cross_check_cfg {
	bool enabled;
	char *backend;
	int backend_idx;
	double sample_rate;
	char **compare;
	int ncompare;
};

struct rules_shadow_cfg {
	bool enabled;
	double sample_rate;
};

enum alert_op { ALERT_OP_LT = 0, ALERT_OP_LE, ALERT_OP_GT, ALERT_OP_GE };
enum severity { SEVERITY_PAGE = 0, SEVERITY_TICKET };

/* SLO windows, in the order of API.md. */
enum slo_window { WIN_5M = 0, WIN_30M, WIN_1H, WIN_6H, WIN_1D, WIN_3D, WIN_30D, WIN__COUNT };

struct slo_alert_cfg {
	char *name;
	char *metric; /* service_availability, smart_availability, timeout_rate, retry_rate, ... */
	enum alert_op op;
	double value;
	int for_s;
	enum slo_window window;
	enum severity severity;
	int min_calls; /* default 10 */
};

struct slo_cfg {
	bool enabled;
	double service_availability;
	double smart_availability;
	int latency_ms;
	double latency_target;
	bool burn_rate_alerts;
	int burn_rate_min_calls;
	struct slo_alert_cfg *alerts;
	int nalerts;
};

struct route_cfg {
	char *name;
	int budget_ms;
	int min_attempt_ms;
	struct timeout_cfg timeout;
	struct retry_cfg retry;
	struct target_cfg *targets;
	int ntargets;
	bool health_weighting;
	struct canary_guard_cfg canary_guard;
	struct backup_cfg backup;
	struct prompt_cfg prompt;
	struct output_cfg output;
	struct rules_cfg rules;
	struct cache_cfg cache;
	struct preset_cfg preset;
	enum on_exhausted on_exhausted;
	struct escalation_cfg escalation;
	struct review_cfg review;
	struct cross_check_cfg cross_check;
	struct rules_shadow_cfg rules_shadow;
	struct slo_cfg slo;
};

enum log_level { LOG_LEVEL_DEBUG = 0, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };
enum log_format { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON };

struct log_cfg {
	enum log_level level;
	enum log_format format; /* stderr lines: text or one JSON object each */
	bool inputs;		/* store call inputs in the DB */
	int raw_output_bytes;
	int max_input_bytes; /* calls.input and calls.result stored at most this long, 0: whole */
	int retention_days;
};

/* The HTTP front (CONFIG-NOTES.md "HTTP front"). */
struct http_cfg {
	int header_timeout_s;
	int body_timeout_s;
	int idle_timeout_s;
	char **allowed_hosts; /* lower case, without port */
	int nallowed_hosts;
	char **allowed_origins;
	int nallowed_origins;
};

/* Trace export (CONFIG.md "tracing", CONFIG-NOTES.md "Tracing"). */
struct tracing_cfg {
	char *endpoint; /* OTLP/HTTP traces URL; NULL: no export */
	char *service_name;
	double sample_rate; /* new traces (no caller's flag) */
	int max_queue;
	int batch;
	int flush_ms;
	int timeout_ms;
	struct header_kv *headers;
	int nheaders;
	bool include_io;
};

/* record_response_headers: at most this many names, each at most this long. */
#define CONFIG_RECORD_HEADERS_MAX     8
#define CONFIG_RECORD_HEADER_NAME_MAX 256

struct config {
	char *path;   /* the file loaded (absolute) */
	char *dir;    /* its folder, for relative paths */
	char *listen; /* "127.0.0.1:7700" */
	char *listen_host;
	int listen_port;
	char *database;			   /* resolved path */
	char *tokens_file;		   /* resolved path */
	char *database_group;		   /* DB files 0640 with this group; NULL: 0600 */
	int database_read_timeout_ms;	   /* bound of one read on the engine thread */
	struct addr_rule *callbacks_allow; /* callbacks.allow, parsed */
	int ncallbacks_allow;
	bool callers_require_token;
	bool metrics_public;
	int64_t max_body_bytes;
	int64_t max_buffered_body_bytes;
	int max_connections_per_ip; /* 0: no cap */
	struct http_cfg http;
	int max_inflight;
	int idempotency_ttl_s;
	struct log_cfg log;
	char *alert_webhook;	/* URL or NULL */
	char *alertmanager_url; /* or NULL */
	struct tracing_cfg tracing;
	struct backend_cfg *backends;
	int nbackends;
	struct route_cfg *routes;
	int nroutes;
};

/*
 * Load and validate path. On success *out owns a new config. On failure
 * returns CONFIG_E_* and *cause holds every error, one per line (caller
 * frees).
 */
int config_load(const char *path, struct config **out, char **cause);
/* Same from a string; dir resolves relative paths (NULL: cwd). */
int config_load_string(const char *json, const char *dir, struct config **out, char **cause);
void config_free(struct config *c);

/* Lookups by name; NULL / -1 when absent. */
const struct route_cfg *config_route(const struct config *c, const char *name);
int config_backend_index(const struct config *c, const char *name);

/* Print the key reference (path, type, default, unit, help) for --help. */
void config_print_reference(FILE *fp);

/* Names for enums, shared with the API. */
const char *priority_name(enum priority p);
const char *slo_window_name(enum slo_window w);
int slo_window_minutes(enum slo_window w);
const char *severity_name(enum severity s);

/*
 * The slo.alerts[].metric names the loader accepts, NULL-terminated (added
 * by the config module). Each is a fraction 0..1 over the alert's window:
 * service_availability, smart_availability, latency_ok, timeout_rate,
 * retry_rate, format_violation_rate, degraded_rate, backup_rate, rules_rate,
 * cache_rate, preset_rate, manual_rate, review_diff_rate, shadow_agreement,
 * cross_check_agreement.
 */
extern const char *const config_alert_metric_names[];
