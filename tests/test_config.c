/*
 * test_config: the configuration loader. Defaults (every documented one),
 * optional sections, path resolution, the key table, the error messages of
 * invalid configs (each names its JSON path), syntax errors with line and
 * column, and the shipped examples.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config_table.h"
#include "util.h"

#define URL1 "http://127.0.0.1:7800/b/b1/v1/chat/completions"
#define URL2 "http://127.0.0.1:7800/b/small-v1/v1/chat/completions"

/*
 * A config around the minimal one: top-level keys (each ending with a
 * comma) go first, then extra keys of backends[0], then extra keys of
 * routes[0] (each starting with a comma). Extras that start with
 * backends[0]'s "name" or "url", or routes[0]'s "name" or "targets",
 * replace the defaults. A second backend "small-v1" exists for the references.
 */
static char *
cfg(const char *top, const char *backend, const char *route)
{
	int rname = strncmp(route, ", \"name\"", 8) == 0;
	int rtargets = strncmp(route, ", \"targets\"", 11) == 0;
	const char *sep = "";
	struct buf b;

	buf_init(&b, 1 << 20);
	buf_printf(&b, "{%s \"backends\": [{", top);
	if (strncmp(backend, ", \"name\"", 8) != 0)
		buf_puts(&b, "\"name\": \"b1\", ");
	if (strncmp(backend, ", \"url\"", 7) != 0)
		buf_puts(&b, "\"url\": \"" URL1 "\", ");
	buf_printf(&b,
		   "\"model\": \"m\"%s}, {\"name\": \"small-v1\", \"url\": \"" URL2
		   "\", \"model\": \"s\"}],"
		   " \"routes\": [{",
		   backend);
	if (!rname) {
		buf_puts(&b, "\"name\": \"r1\"");
		sep = ", ";
	}
	if (!rtargets) {
		buf_printf(&b, "%s\"targets\": [{\"backend\": \"b1\"}]", sep);
		sep = ", ";
	}
	if (*sep == '\0' && strncmp(route, ", ", 2) == 0)
		route += 2;
	buf_printf(&b, "%s}]}", route);
	return buf_steal(&b);
}

static const char *minimal =
	"{\"backends\": [{\"name\": \"b1\", \"url\": \"" URL1 "\", \"model\": \"m\"}],"
	" \"routes\": [{\"name\": \"r1\", \"targets\": [{\"backend\": \"b1\"}]}]}";

static struct config *
load_ok(const char *json)
{
	struct config *c = NULL;
	char *cause = NULL;
	int rc;

	rc = config_load_string(json, "/srv/fb", &c, &cause);
	ck_assert_msg(rc == 0, "load failed (%d): %s", rc, cause ? cause : "(no cause)");
	ck_assert_ptr_null(cause);
	ck_assert_ptr_nonnull(c);
	return c;
}

static struct config *
load_route_ok(const char *route)
{
	char *json = cfg("", "", route);
	struct config *c = load_ok(json);

	free(json);
	return c;
}

/* Load json expecting failure rc; returns the cause (caller frees). */
static char *
load_err(const char *json, int want)
{
	struct config *c = NULL;
	char *cause = NULL;
	int rc;

	rc = config_load_string(json, "/srv/fb", &c, &cause);
	ck_assert_msg(rc == want, "rc %d, want %d; cause: %s", rc, want, cause ? cause : "(none)");
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(cause);
	return cause;
}

static int
count_lines(const char *s)
{
	int n = 1;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

/* --- defaults ------------------------------------------------------------ */

START_TEST(test_defaults_top)
{
	struct config *c = load_ok(minimal);

	ck_assert_str_eq(c->listen, "127.0.0.1:7700");
	ck_assert_str_eq(c->listen_host, "127.0.0.1");
	ck_assert_int_eq(c->listen_port, 7700);
	ck_assert_str_eq(c->database, "/srv/fb/var/fusebox.db");
	ck_assert_str_eq(c->tokens_file, "/srv/fb/var/tokens");
	ck_assert(!c->callers_require_token);
	ck_assert(!c->metrics_public);
	ck_assert_int_eq(c->max_body_bytes, 1048576);
	ck_assert_int_eq(c->max_inflight, 10000);
	ck_assert_int_eq(c->idempotency_ttl_s, 86400);
	ck_assert_int_eq(c->log.level, LOG_LEVEL_INFO);
	ck_assert(c->log.inputs);
	ck_assert_int_eq(c->log.raw_output_bytes, 4096);
	ck_assert_int_eq(c->log.retention_days, 14);
	ck_assert_ptr_null(c->alert_webhook);
	ck_assert_ptr_null(c->alertmanager_url);
	ck_assert_ptr_null(c->path);
	ck_assert_str_eq(c->dir, "/srv/fb");
	ck_assert_int_eq(c->nbackends, 1);
	ck_assert_int_eq(c->nroutes, 1);
	config_free(c);
}
END_TEST

START_TEST(test_defaults_backend)
{
	struct config *c = load_ok(minimal);
	const struct backend_cfg *b = &c->backends[0];

	ck_assert_str_eq(b->name, "b1");
	ck_assert_str_eq(b->url, URL1);
	ck_assert_str_eq(b->model, "m");
	ck_assert_ptr_null(b->api_key_env);
	ck_assert_ptr_null(b->version);
	ck_assert_int_eq(b->nheaders, 0);
	ck_assert_int_eq(b->connect_ms, 1000);
	ck_assert_int_eq(b->first_byte_ms, 2500);
	ck_assert_int_eq(b->total_ms, 3000);
	ck_assert_int_eq(b->max_concurrent, 60);
	ck_assert_int_eq(b->queue_ms, 0);
	ck_assert_int_eq(b->max_response_bytes, 4194304);
	ck_assert_int_eq(b->http_version, HTTP_VERSION_1_1);
	ck_assert_ptr_null(b->tls_ca_file);
	ck_assert_int_eq(b->breaker.mode, BREAKER_MODE_CONSECUTIVE);
	ck_assert_int_eq(b->breaker.failure_threshold, 3);
	ck_assert_int_eq(b->breaker.window, 50);
	ck_assert_int_eq(b->breaker.window_s, 10);
	ck_assert_int_eq(b->breaker.min_calls, 20);
	ck_assert_double_eq(b->breaker.failure_rate, 0.5);
	ck_assert_int_eq(b->breaker.slow_call_ms, 0);
	ck_assert_double_eq(b->breaker.slow_call_rate, 1.0);
	ck_assert_int_eq(b->breaker.open_ms, 60000);
	ck_assert_int_eq(b->breaker.half_open_probes, 1);
	ck_assert_double_eq(b->breaker.open_multiplier, 1.0);
	ck_assert_int_eq(b->breaker.max_open_ms, 600000);
	ck_assert(b->breaker.count_validation_failures);
	ck_assert(b->breaker.count_429);
	config_free(c);
}
END_TEST

START_TEST(test_defaults_route)
{
	struct config *c = load_ok(minimal);
	const struct route_cfg *r = &c->routes[0];

	ck_assert_str_eq(r->name, "r1");
	ck_assert_int_eq(r->budget_ms, 6000);
	ck_assert_int_eq(r->min_attempt_ms, 100);
	ck_assert_int_eq(r->timeout.mode, TIMEOUT_FIXED);
	ck_assert_int_eq(r->retry.max_retries, 1);
	ck_assert_int_eq(r->retry.backoff, BACKOFF_NONE);
	ck_assert_int_eq(r->retry.base_ms, 500);
	ck_assert_double_eq(r->retry.multiplier, 2.0);
	ck_assert_int_eq(r->retry.max_ms, 8000);
	ck_assert_double_eq(r->retry.jitter, 0.2);
	ck_assert(!r->retry.jitter_full);
	ck_assert_uint_eq(r->retry.retry_on,
			  OUTCOME_BIT(OUTCOME_CONNECT_ERROR) | OUTCOME_BIT(OUTCOME_RESET) |
				  OUTCOME_BIT(OUTCOME_HTTP_5XX) | OUTCOME_BIT(OUTCOME_HTTP_429));
	ck_assert(r->retry.honor_retry_after);
	ck_assert_double_eq(r->retry.budget_ratio, 0.2);
	ck_assert_double_eq(r->retry.budget_min_per_s, 3);
	ck_assert_int_eq(r->ntargets, 1);
	ck_assert_str_eq(r->targets[0].backend, "b1");
	ck_assert_int_eq(r->targets[0].backend_idx, 0);
	ck_assert_int_eq(r->targets[0].weight, 1);
	ck_assert(!r->targets[0].canary);
	ck_assert(r->health_weighting);
	ck_assert_ptr_null(r->prompt.system);
	ck_assert_str_eq(r->prompt.user, "{{input}}");
	ck_assert_double_eq(r->prompt.temperature, 0.7);
	ck_assert_int_eq(r->prompt.max_tokens, 128);
	ck_assert(r->prompt.response_format_json);
	ck_assert_int_eq(r->on_exhausted, ON_EXHAUSTED_ERROR);
	config_free(c);
}
END_TEST

START_TEST(test_defaults_output)
{
	struct config *c = load_ok(minimal);
	const struct output_cfg *o = &c->routes[0].output;

	ck_assert(!o->present);
	ck_assert_ptr_null(o->schema);
	ck_assert_ptr_null(o->vschema);
	ck_assert_int_eq(o->ndeny, 0);
	ck_assert_int_eq(o->nrules, 0);
	ck_assert_str_eq(o->confidence_field, "confidence");
	ck_assert(o->clamp_confidence);
	ck_assert_double_eq(o->reject_below, 0.0);
	ck_assert_double_eq(o->review_below, 0.7);
	config_free(c);
}
END_TEST

START_TEST(test_defaults_review)
{
	struct config *c = load_ok(minimal);
	const struct review_cfg *rv = &c->routes[0].review;

	ck_assert_double_eq(rv->sample_rate, 0.0);
	ck_assert_int_eq(rv->priority, PRIORITY_MEDIUM);
	ck_assert_int_eq(rv->sla_s[PRIORITY_HIGH], 900);
	ck_assert_int_eq(rv->sla_s[PRIORITY_MEDIUM], 7200);
	ck_assert_int_eq(rv->sla_s[PRIORITY_LOW], 86400);
	ck_assert_int_eq(rv->capacity, 1000);
	ck_assert_int_eq(rv->overflow, OVERFLOW_AUTO_ACCEPT_LOW);
	config_free(c);

	c = load_route_ok(", \"review\": {\"sample_rate\": 0.01, \"sla_s\": {\"low\": 3600}}");
	rv = &c->routes[0].review;
	ck_assert_double_eq(rv->sample_rate, 0.01);
	ck_assert_int_eq(rv->sla_s[PRIORITY_HIGH], 900);
	ck_assert_int_eq(rv->sla_s[PRIORITY_LOW], 3600);
	ck_assert_int_eq(rv->capacity, 1000);
	config_free(c);
}
END_TEST

START_TEST(test_sections_off)
{
	struct config *c = load_ok(minimal);
	const struct route_cfg *r = &c->routes[0];

	ck_assert(!r->canary_guard.enabled);
	ck_assert(!r->backup.enabled);
	ck_assert_int_eq(r->backup.ntargets, 0);
	ck_assert(!r->rules.enabled);
	ck_assert(!r->rules.has_default);
	ck_assert(!r->cache.enabled);
	ck_assert(!r->preset.enabled);
	ck_assert(!r->escalation.enabled);
	ck_assert(!r->cross_check.enabled);
	ck_assert(!r->rules_shadow.enabled);
	ck_assert(!r->slo.enabled);
	ck_assert_int_eq(r->timeout.mode, TIMEOUT_FIXED);
	config_free(c);
}
END_TEST

START_TEST(test_sections_on)
{
	struct config *c = load_route_ok(
		", \"canary_guard\": {}, \"backup\": {\"targets\": [{\"backend\": \"small-v1\"}]},"
		" \"rules\": {\"match\": [{\"any\": [\"Refund\"], \"result\": {\"intent\": "
		"\"refund\"}}],"
		"             \"default\": {\"result\": {\"intent\": \"other\"}}},"
		" \"cache\": {}, \"preset\": {\"text\": \"sorry\"}, \"escalation\": {},"
		" \"cross_check\": {\"backend\": \"small-v1\"}, \"rules_shadow\": {}, \"slo\": {},"
		" \"timeout\": {\"mode\": \"dynamic\"}");
	const struct route_cfg *r = &c->routes[0];

	ck_assert(r->canary_guard.enabled);
	ck_assert_int_eq(r->canary_guard.min_calls, 50);
	ck_assert_double_eq(r->canary_guard.max_failure_delta, 0.05);
	ck_assert_int_eq(r->canary_guard.window_s, 300);

	ck_assert(r->backup.enabled);
	ck_assert_int_eq(r->backup.ntargets, 1);
	ck_assert_int_eq(r->backup.targets[0].backend_idx, 1);
	ck_assert(!r->backup.has_temperature);
	ck_assert_int_eq(r->backup.nfew_shot, 0);

	ck_assert(r->rules.enabled);
	ck_assert_int_eq(r->rules.nmatch, 1);
	ck_assert_double_eq(r->rules.match[0].confidence, 0.6);
	ck_assert(r->rules.has_default);
	ck_assert_double_eq(r->rules.default_confidence, 0.3);
	ck_assert_ptr_nonnull(r->rules.default_result);

	ck_assert(r->cache.enabled);
	ck_assert_int_eq(r->cache.ttl_s, 86400);
	ck_assert(r->preset.enabled);
	ck_assert_str_eq(r->preset.text, "sorry");
	ck_assert_ptr_null(r->preset.result);

	ck_assert(r->escalation.enabled);
	ck_assert_int_eq(r->escalation.l1_after, 3);
	ck_assert_int_eq(r->escalation.l2_after, 5);
	ck_assert_int_eq(r->escalation.window_s, 60);
	ck_assert_double_eq(r->escalation.error_rate, 0.5);
	ck_assert_int_eq(r->escalation.min_calls, 20);
	ck_assert_int_eq(r->escalation.recover_after_s, 60);

	ck_assert(r->cross_check.enabled);
	ck_assert_str_eq(r->cross_check.backend, "small-v1");
	ck_assert_int_eq(r->cross_check.backend_idx, 1);
	ck_assert_double_eq(r->cross_check.sample_rate, 0.0);
	ck_assert_int_eq(r->cross_check.ncompare, 0);

	ck_assert(r->rules_shadow.enabled);
	ck_assert_double_eq(r->rules_shadow.sample_rate, 0.0);

	ck_assert(r->slo.enabled);
	ck_assert_double_eq(r->slo.service_availability, 0.999);
	ck_assert_double_eq(r->slo.smart_availability, 0.95);
	ck_assert_int_eq(r->slo.latency_ms, 2000);
	ck_assert_double_eq(r->slo.latency_target, 0.99);
	ck_assert(r->slo.burn_rate_alerts);
	ck_assert_int_eq(r->slo.burn_rate_min_calls, 10);
	ck_assert_int_eq(r->slo.nalerts, 0);

	ck_assert_int_eq(r->timeout.mode, TIMEOUT_DYNAMIC);
	ck_assert_double_eq(r->timeout.percentile, 0.9);
	ck_assert_int_eq(r->timeout.window_s, 300);
	ck_assert_double_eq(r->timeout.per_100_tokens, 0.3);
	ck_assert_int_eq(r->timeout.margin_ms, 1500);
	ck_assert_int_eq(r->timeout.min_ms, 5000);
	ck_assert_int_eq(r->timeout.max_ms, 120000);
	ck_assert_int_eq(r->timeout.default_ms, 8000);
	config_free(c);
}
END_TEST

START_TEST(test_cache_disabled)
{
	struct config *c = load_route_ok(", \"cache\": {\"enabled\": false, \"ttl_s\": 60}");

	ck_assert(!c->routes[0].cache.enabled);
	ck_assert_int_eq(c->routes[0].cache.ttl_s, 60);
	config_free(c);
}
END_TEST

START_TEST(test_slo_alert_defaults)
{
	struct config *c = load_route_ok(", \"slo\": {\"alerts\": [{\"name\": \"smart-low\", "
					 "\"metric\": \"smart_availability\","
					 " \"op\": \"<\", \"value\": 0.9}, {\"name\": \"t\", "
					 "\"metric\": \"timeout_rate\", \"op\": \">=\","
					 " \"value\": 0.005, \"for_s\": 600, \"window\": \"30d\", "
					 "\"severity\": \"page\", \"min_calls\": 3}]}");
	const struct slo_cfg *s = &c->routes[0].slo;

	ck_assert_int_eq(s->nalerts, 2);
	ck_assert_str_eq(s->alerts[0].name, "smart-low");
	ck_assert_str_eq(s->alerts[0].metric, "smart_availability");
	ck_assert_int_eq(s->alerts[0].op, ALERT_OP_LT);
	ck_assert_double_eq(s->alerts[0].value, 0.9);
	ck_assert_int_eq(s->alerts[0].for_s, 300);
	ck_assert_int_eq(s->alerts[0].window, WIN_5M);
	ck_assert_int_eq(s->alerts[0].severity, SEVERITY_TICKET);
	ck_assert_int_eq(s->alerts[0].min_calls, 10);
	ck_assert_int_eq(s->alerts[1].op, ALERT_OP_GE);
	ck_assert_int_eq(s->alerts[1].for_s, 600);
	ck_assert_int_eq(s->alerts[1].window, WIN_30D);
	ck_assert_int_eq(s->alerts[1].severity, SEVERITY_PAGE);
	ck_assert_int_eq(s->alerts[1].min_calls, 3);
	config_free(c);
}
END_TEST

/* --- values read ----------------------------------------------------------- */

START_TEST(test_listen_forms)
{
	static const struct {
		const char *listen, *host;
		int port;
	} cases[] = {
		{"127.0.0.1:0", "127.0.0.1", 0},
		{"0.0.0.0:65535", "0.0.0.0", 65535},
		{"[::1]:7700", "::1", 7700},
		{"localhost:8080", "localhost", 8080},
	};
	struct config *c;
	char *top, *json;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		top = xasprintf("\"listen\": \"%s\",", cases[i].listen);
		json = cfg(top, "", "");
		c = load_ok(json);
		ck_assert_str_eq(c->listen, cases[i].listen);
		ck_assert_str_eq(c->listen_host, cases[i].host);
		ck_assert_int_eq(c->listen_port, cases[i].port);
		config_free(c);
		free(json);
		free(top);
	}
}
END_TEST

START_TEST(test_paths_relative)
{
	struct config *c = NULL;
	char *json, *cause = NULL, dir[] = "/tmp/fb-config-XXXXXX", *file, *cwd;
	FILE *fp;

	json = cfg("\"database\": \"/var/lib/fb.db\", \"tokens_file\": \"etc/tokens\",", "", "");
	ck_assert_int_eq(config_load_string(json, "/srv/fb/", &c, &cause), 0);
	ck_assert_str_eq(c->database, "/var/lib/fb.db");
	ck_assert_str_eq(c->tokens_file, "/srv/fb/etc/tokens");
	config_free(c);
	c = NULL;

	/* NULL dir: the current directory. */
	ck_assert_int_eq(config_load_string(json, NULL, &c, &cause), 0);
	cwd = getcwd(NULL, 0);
	ck_assert_str_eq(c->dir, cwd);
	config_free(c);
	c = NULL;

	/* A file: its folder, whatever the working directory. */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	file = xasprintf("%s/fusebox.json", dir);
	fp = fopen(file, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(minimal, fp);
	fclose(fp);
	ck_assert_int_eq(config_load(file, &c, &cause), 0);
	ck_assert_str_eq(c->path, file);
	ck_assert_str_eq(c->dir, dir);
	free(json);
	json = xasprintf("%s/var/fusebox.db", dir);
	ck_assert_str_eq(c->database, json);
	config_free(c);
	unlink(file);
	rmdir(dir);
	free(file);
	free(json);
	free(cwd);
}
END_TEST

START_TEST(test_alert_webhook)
{
	struct config *c;
	char *json;

	json = cfg("\"alert_webhook\": \"http://127.0.0.1:9/hook\",", "", "");
	c = load_ok(json);
	ck_assert_str_eq(c->alert_webhook, "http://127.0.0.1:9/hook");
	ck_assert_ptr_null(c->alertmanager_url);
	config_free(c);
	free(json);

	json = cfg("\"alert_webhook\": {\"alertmanager\": \"http://127.0.0.1:9093\"},", "", "");
	c = load_ok(json);
	ck_assert_ptr_null(c->alert_webhook);
	ck_assert_str_eq(c->alertmanager_url, "http://127.0.0.1:9093");
	config_free(c);
	free(json);

	json = cfg("\"alert_webhook\": null,", "", "");
	c = load_ok(json);
	ck_assert_ptr_null(c->alert_webhook);
	ck_assert_ptr_null(c->alertmanager_url);
	config_free(c);
	free(json);
}
END_TEST

START_TEST(test_backend_values)
{
	char *json =
		cfg("",
		    ", \"api_key_env\": \"DEEPSEEK_API_KEY\", \"version\": \"v2\","
		    " \"headers\": {\"X-Extra\": \"value\", \"X-Two\": \"2\"},"
		    " \"timeouts\": {\"connect_ms\": 5000, \"first_byte_ms\": 30000, \"total_ms\": "
		    "120000},"
		    " \"max_response_bytes\": 65536, \"http_version\": \"2\","
		    " \"breaker\": {\"mode\": \"time\", \"window_s\": 10, \"failure_rate\": 0.4}",
		    "");
	struct config *c = load_ok(json);
	const struct backend_cfg *b = &c->backends[0];

	ck_assert_str_eq(b->api_key_env, "DEEPSEEK_API_KEY");
	ck_assert_str_eq(b->version, "v2");
	ck_assert_int_eq(b->nheaders, 2);
	ck_assert_str_eq(b->headers[0].name, "X-Extra");
	ck_assert_str_eq(b->headers[0].value, "value");
	ck_assert_str_eq(b->headers[1].name, "X-Two");
	ck_assert_int_eq(b->connect_ms, 5000);
	ck_assert_int_eq(b->first_byte_ms, 30000);
	ck_assert_int_eq(b->total_ms, 120000);
	ck_assert_int_eq(b->max_response_bytes, 65536);
	ck_assert_int_eq(b->http_version, HTTP_VERSION_2);
	ck_assert_int_eq(c->backends[1].http_version, HTTP_VERSION_1_1); /* per backend */
	ck_assert_int_eq(b->breaker.mode, BREAKER_MODE_TIME);
	ck_assert_double_eq(b->breaker.failure_rate, 0.4);
	ck_assert_int_eq(config_backend_index(c, "small-v1"), 1);
	ck_assert_int_eq(config_backend_index(c, "nope"), -1);
	ck_assert_ptr_eq(config_route(c, "r1"), &c->routes[0]);
	ck_assert_ptr_null(config_route(c, "r2"));
	config_free(c);
	free(json);
}
END_TEST

/* backends[].http_version: "1.1" (the default) or "2", per backend. */
START_TEST(test_http_version)
{
	char *json = cfg("", ", \"http_version\": \"1.1\"", "");
	struct config *c = load_ok(json);

	ck_assert_int_eq(c->backends[0].http_version, HTTP_VERSION_1_1);
	config_free(c);
	free(json);
	json = cfg("", ", \"http_version\": \"2\"", "");
	c = load_ok(json);
	ck_assert_int_eq(c->backends[0].http_version, HTTP_VERSION_2);
	ck_assert_int_eq(c->backends[1].http_version, HTTP_VERSION_1_1);
	config_free(c);
	free(json);
}
END_TEST

/* backends[].tls_ca_file: resolved like the other paths; https only. */
START_TEST(test_tls_ca_file)
{
	char *json = cfg("",
			 ", \"url\": \"https://llm.example/v1/chat/completions\","
			 " \"tls_ca_file\": \"certs/ca.pem\"",
			 "");
	struct config *c = load_ok(json);
	char *cause;

	ck_assert_str_eq(c->backends[0].tls_ca_file, "/srv/fb/certs/ca.pem");
	ck_assert_ptr_null(c->backends[1].tls_ca_file);
	config_free(c);
	free(json);
	json = cfg("",
		   ", \"url\": \"https://llm.example/v1/chat/completions\","
		   " \"tls_ca_file\": \"/etc/fb/ca.pem\"",
		   "");
	c = load_ok(json);
	ck_assert_str_eq(c->backends[0].tls_ca_file, "/etc/fb/ca.pem");
	config_free(c);
	free(json);
	json = cfg("", ", \"tls_ca_file\": \"ca.pem\"", ""); /* URL1 is http:// */
	cause = load_err(json, CONFIG_E_INVALID);
	ck_assert_str_eq(cause, "backends[0].tls_ca_file: only used with an https:// url");
	free(cause);
	free(json);
}
END_TEST

START_TEST(test_retry_values)
{
	struct config *c = load_route_ok(
		", \"retry\": {\"max_retries\": 2, \"backoff\": \"exponential\", \"base_ms\": 1500,"
		" \"multiplier\": 1.5, \"jitter\": \"full\", \"retry_on\": [\"http_429\", "
		"\"total_timeout\"]}");
	const struct retry_cfg *rt = &c->routes[0].retry;

	ck_assert_int_eq(rt->max_retries, 2);
	ck_assert_int_eq(rt->backoff, BACKOFF_EXPONENTIAL);
	ck_assert_int_eq(rt->base_ms, 1500);
	ck_assert_double_eq(rt->multiplier, 1.5);
	ck_assert(rt->jitter_full);
	ck_assert_uint_eq(rt->retry_on,
			  OUTCOME_BIT(OUTCOME_HTTP_429) | OUTCOME_BIT(OUTCOME_TOTAL_TIMEOUT));
	config_free(c);

	c = load_route_ok(", \"retry\": {\"retry_on\": [], \"jitter\": 0}");
	ck_assert_uint_eq(c->routes[0].retry.retry_on, 0);
	ck_assert(!c->routes[0].retry.jitter_full);
	ck_assert_double_eq(c->routes[0].retry.jitter, 0.0);
	config_free(c);
}
END_TEST

START_TEST(test_targets_values)
{
	struct config *c = load_route_ok(
		"}, {\"name\": \"r2\", \"targets\": [{\"backend\": \"b1\", \"weight\": 95},"
		" {\"backend\": \"small-v1\", \"weight\": 0, \"canary\": true}]");
	const struct route_cfg *r = config_route(c, "r2");

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->ntargets, 2);
	ck_assert_int_eq(r->targets[0].weight, 95);
	ck_assert_int_eq(r->targets[0].backend_idx, 0);
	ck_assert(!r->targets[0].canary);
	ck_assert_int_eq(r->targets[1].weight, 0);
	ck_assert_int_eq(r->targets[1].backend_idx, 1);
	ck_assert(r->targets[1].canary);
	config_free(c);
}
END_TEST

START_TEST(test_rules_compiled)
{
	struct config *c = load_route_ok(", \"rules\": {\"match\": [{\"any\": [\"Money BACK\", "
					 "\"退款\"], \"result\": {\"intent\": \"refund\"}},"
					 " {\"regex\": \"投诉|Complain\", \"result\": {\"intent\": "
					 "\"complaint\"}, \"confidence\": 0.7}]}");
	const struct rules_cfg *rc = &c->routes[0].rules;

	ck_assert_int_eq(rc->nmatch, 2);
	ck_assert_int_eq(rc->match[0].nany, 2);
	ck_assert_str_eq(rc->match[0].any[0], "money back");
	ck_assert_str_eq(rc->match[0].any[1], "退款");
	ck_assert_ptr_null(rc->match[0].regex);
	ck_assert_str_eq(rc->match[1].regex, "投诉|Complain");
	ck_assert_int_eq(regexec(&rc->match[1].re, "I Complain", 0, NULL, 0), 0);
	ck_assert_int_ne(regexec(&rc->match[1].re, "i complain", 0, NULL, 0),
			 0); /* case-sensitive */
	ck_assert_double_eq(rc->match[1].confidence, 0.7);
	ck_assert(!rc->has_default);
	config_free(c);
}
END_TEST

START_TEST(test_output_compiled)
{
	struct config *c = load_route_ok(
		", \"output\": {\"schema\": {\"type\": \"object\", \"required\": [\"intent\"],"
		" \"properties\": {\"intent\": {\"type\": \"string\"}}},"
		" \"deny\": [{\"field\": \"summary\", \"pattern\": \"未知|unknown\"}],"
		" \"rules\": [{\"when\": {\"field\": \"intent\", \"equals\": \"complaint\"},"
		"            \"deny\": {\"field\": \"summary\", \"pattern\": \"感谢|表扬\"}}],"
		" \"review_below\": 0.5}");
	const struct output_cfg *o = &c->routes[0].output;
	cJSON *want = cJSON_CreateString("complaint");

	ck_assert(o->present);
	ck_assert_ptr_nonnull(o->schema);
	ck_assert_ptr_nonnull(o->vschema);
	ck_assert_int_eq(o->ndeny, 1);
	ck_assert_str_eq(o->deny[0].field, "summary");
	ck_assert_int_eq(regexec(&o->deny[0].re, "it is unknown", 0, NULL, 0), 0);
	ck_assert_int_eq(o->nrules, 1);
	ck_assert_str_eq(o->rules[0].when_field, "intent");
	ck_assert(cJSON_Compare(o->rules[0].when_equals, want, 1));
	ck_assert_int_eq(regexec(&o->rules[0].deny.re, "非常感谢", 0, NULL, 0), 0);
	ck_assert_double_eq(o->review_below, 0.5);
	ck_assert_str_eq(o->confidence_field, "confidence");
	cJSON_Delete(want);
	config_free(c);
}
END_TEST

START_TEST(test_backup_values)
{
	struct config *c =
		load_route_ok(", \"backup\": {\"targets\": [{\"backend\": \"small-v1\", "
			      "\"weight\": 1}], \"temperature\": 0.2,"
			      " \"few_shot\": [{\"role\": \"user\", \"content\": \"hi\"}, "
			      "{\"role\": \"assistant\", \"content\": \"{}\"}]}");
	const struct backup_cfg *b = &c->routes[0].backup;

	ck_assert(b->enabled);
	ck_assert(b->has_temperature);
	ck_assert_double_eq(b->temperature, 0.2);
	ck_assert_int_eq(b->nfew_shot, 2);
	ck_assert_str_eq(b->few_shot[0].role, "user");
	ck_assert_str_eq(b->few_shot[1].content, "{}");
	config_free(c);
}
END_TEST

START_TEST(test_cross_check_values)
{
	struct config *c = load_route_ok(", \"cross_check\": {\"backend\": \"small-v1\", "
					 "\"sample_rate\": 0.1, \"compare\": [\"intent\", \"x\"]}");
	const struct cross_check_cfg *cc = &c->routes[0].cross_check;

	ck_assert_int_eq(cc->backend_idx, 1);
	ck_assert_double_eq(cc->sample_rate, 0.1);
	ck_assert_int_eq(cc->ncompare, 2);
	ck_assert_str_eq(cc->compare[0], "intent");
	config_free(c);
}
END_TEST

/* backends[].adaptive_concurrency: off when absent; max_limit is max_concurrent. */
START_TEST(test_adaptive_values)
{
	char *json = cfg("", ", \"adaptive_concurrency\": {}", "");
	struct config *c = load_ok(json);
	const struct limiter_cfg *a = &c->backends[0].adaptive;

	ck_assert(a->enabled);
	ck_assert_int_eq(a->min_limit, 2);
	ck_assert_int_eq(a->initial_limit, 10);
	ck_assert_int_eq(a->max_limit, 60);
	ck_assert_int_eq(a->window_ms, 1000);
	ck_assert_double_eq(a->smoothing, 0.2);
	ck_assert_double_eq(a->tolerance, 1.5);
	ck_assert_double_eq(a->backoff_ratio, 0.9);
	a = &c->backends[1].adaptive; /* absent */
	ck_assert(!a->enabled);
	ck_assert_int_eq(a->max_limit, 60);
	ck_assert_int_eq(a->min_limit, 2);
	config_free(c);
	free(json);

	json = cfg(
		"",
		", \"max_concurrent\": 20, \"adaptive_concurrency\": {\"min_limit\": 4, "
		"\"initial_limit\": 8, \"window_ms\": 500, \"smoothing\": 0.5, \"tolerance\": 2, "
		"\"backoff_ratio\": 0.8}",
		"");
	c = load_ok(json);
	a = &c->backends[0].adaptive;
	ck_assert(a->enabled);
	ck_assert_int_eq(a->min_limit, 4);
	ck_assert_int_eq(a->initial_limit, 8);
	ck_assert_int_eq(a->max_limit, 20);
	ck_assert_int_eq(a->window_ms, 500);
	ck_assert_double_eq(a->smoothing, 0.5);
	ck_assert_double_eq(a->tolerance, 2.0);
	ck_assert_double_eq(a->backoff_ratio, 0.8);
	config_free(c);
	free(json);

	/* An absent initial_limit is brought within [min_limit, max_concurrent]. */
	json = cfg("", ", \"max_concurrent\": 5, \"adaptive_concurrency\": {\"min_limit\": 1}", "");
	c = load_ok(json);
	ck_assert_int_eq(c->backends[0].adaptive.initial_limit, 5);
	ck_assert_int_eq(c->backends[0].adaptive.max_limit, 5);
	config_free(c);
	free(json);
	json = cfg("", ", \"adaptive_concurrency\": {\"min_limit\": 30}", "");
	c = load_ok(json);
	ck_assert_int_eq(c->backends[0].adaptive.initial_limit, 30);
	config_free(c);
	free(json);
}
END_TEST

/* backends[].rate_limits: always there; headers honoured by default. */
START_TEST(test_rate_limits_values)
{
	char *json = cfg("",
			 ", \"rate_limits\": {\"rpm\": 500, \"tpm\": 100000, "
			 "\"honor_headers\": false}",
			 "");
	struct config *c = load_ok(json);
	const struct ratelimit_cfg *rl = &c->backends[0].rate_limits;

	ck_assert_int_eq(rl->rpm, 500);
	ck_assert_int_eq(rl->tpm, 100000);
	ck_assert(!rl->honor_headers);
	rl = &c->backends[1].rate_limits; /* absent */
	ck_assert_int_eq(rl->rpm, 0);
	ck_assert_int_eq(rl->tpm, 0);
	ck_assert(rl->honor_headers);
	config_free(c);
	free(json);
	json = cfg("", ", \"rate_limits\": {\"rpm\": 60}", "");
	c = load_ok(json);
	ck_assert_int_eq(c->backends[0].rate_limits.rpm, 60);
	ck_assert_int_eq(c->backends[0].rate_limits.tpm, 0);
	ck_assert(c->backends[0].rate_limits.honor_headers);
	config_free(c);
	free(json);
}
END_TEST

/* routes[].retry.hedge: off when absent; after_ms or after "pNN". */
START_TEST(test_hedge_values)
{
	struct config *c = load_ok(minimal);
	const struct hedge_cfg *h = &c->routes[0].retry.hedge;

	ck_assert(!h->enabled);
	ck_assert_int_eq(h->after_ms, 0);
	ck_assert_int_eq(h->max_hedges, 1);
	ck_assert_int_eq(h->targets, HEDGE_OTHER);
	ck_assert_int_eq(h->min_ms, 50);
	ck_assert_int_eq(h->max_ms, 2500);
	config_free(c);

	c = load_route_ok(", \"retry\": {\"hedge\": {\"after_ms\": 800}}");
	h = &c->routes[0].retry.hedge;
	ck_assert(h->enabled);
	ck_assert_int_eq(h->after_ms, 800);
	ck_assert_double_eq(h->after_quantile, 0);
	ck_assert_int_eq(h->max_hedges, 1);
	ck_assert_int_eq(h->targets, HEDGE_OTHER);
	ck_assert_int_eq(c->routes[0].retry.max_retries, 1); /* the rest of retry unchanged */
	config_free(c);

	c = load_route_ok(", \"retry\": {\"hedge\": {\"after\": \"p95\", \"min_ms\": 100, "
			  "\"max_ms\": 3000, \"max_hedges\": 2, \"targets\": \"same\"}}");
	h = &c->routes[0].retry.hedge;
	ck_assert(h->enabled);
	ck_assert_int_eq(h->after_ms, 0);
	ck_assert_double_eq(h->after_quantile, 0.95);
	ck_assert_int_eq(h->min_ms, 100);
	ck_assert_int_eq(h->max_ms, 3000);
	ck_assert_int_eq(h->max_hedges, 2);
	ck_assert_int_eq(h->targets, HEDGE_SAME);
	config_free(c);

	c = load_route_ok(", \"retry\": {\"hedge\": {\"after\": \"p99.9\"}}");
	ck_assert_double_eq_tol(c->routes[0].retry.hedge.after_quantile, 0.999, 1e-12);
	config_free(c);
	c = load_route_ok(", \"retry\": {\"hedge\": {\"after\": \"p50\", \"max_hedges\": 3}}");
	ck_assert_double_eq(c->routes[0].retry.hedge.after_quantile, 0.5);
	ck_assert_int_eq(c->routes[0].retry.hedge.max_hedges, 3);
	config_free(c);
	c = load_route_ok(", \"retry\": {\"hedge\": {\"after\": \"p97.5\"}}");
	ck_assert_double_eq_tol(c->routes[0].retry.hedge.after_quantile, 0.975, 1e-12);
	config_free(c);
}
END_TEST

/* --- the table ----------------------------------------------------------------- */

START_TEST(test_table_consistent)
{
	const struct config_key *k, *parent;
	char *ppath, *dot;
	cJSON *d;
	size_t i;

	for (i = 0; i < config_nkeys; i++) {
		k = &config_keys[i];
		ck_assert_ptr_eq(config_key_find(k->path), k); /* unique paths */
		ck_assert_msg(k->help != NULL && *k->help != '\0', "%s: no help", k->path);
		if (k->def != NULL) {
			d = cJSON_Parse(k->def);
			ck_assert_msg(d != NULL, "%s: default is not JSON", k->path);
			if (k->type == CKEY_INT || k->type == CKEY_INT64 ||
			    k->type == CKEY_NUMBER) {
				ck_assert_msg(cJSON_IsNumber(d), "%s: default not a number",
					      k->path);
				ck_assert_msg(d->valuedouble >= k->min && d->valuedouble <= k->max,
					      "%s: default out of range", k->path);
			}
			if (k->type == CKEY_BOOL)
				ck_assert_msg(cJSON_IsBool(d), "%s", k->path);
			if (k->type == CKEY_STRING || k->type == CKEY_ENUM)
				ck_assert_msg(cJSON_IsString(d), "%s", k->path);
			cJSON_Delete(d);
		}
		if (k->type == CKEY_ENUM)
			ck_assert_ptr_nonnull(k->names);
		if (k->type == CKEY_ARRAY || k->type == CKEY_ANY)
			ck_assert_msg(k->off == CKEY_NOFF, "%s", k->path);
		if (k->flags & CKEY_SECTION)
			ck_assert_msg(k->type == CKEY_OBJECT && k->off != CKEY_NOFF, "%s", k->path);
		/* The parent of every nested key is an object row, or an array's "[]". */
		dot = strrchr(k->path, '.');
		if (dot == NULL)
			continue;
		ppath = xstrndup(k->path, (size_t)(dot - k->path));
		if (strlen(ppath) > 2 && strcmp(ppath + strlen(ppath) - 2, "[]") == 0) {
			ppath[strlen(ppath) - 2] = '\0';
			parent = config_key_find(ppath);
			ck_assert_msg(parent != NULL && parent->type == CKEY_ARRAY,
				      "%s: no array parent", k->path);
		} else {
			parent = config_key_find(ppath);
			ck_assert_msg(parent != NULL && (parent->type == CKEY_OBJECT ||
							 parent->type == CKEY_ANY),
				      "%s: no object parent", k->path);
		}
		free(ppath);
	}
}
END_TEST

START_TEST(test_reference)
{
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(fp);
	config_print_reference(fp);
	fclose(fp);
	ck_assert_ptr_nonnull(
		strstr(text, "routes[].retry.multiplier (number, default 2.0, 1.0..100.0)"));
	ck_assert_ptr_nonnull(strstr(text, "routes[].budget_ms (integer ms, default 6000"));
	ck_assert_ptr_nonnull(strstr(text, "routes[].cache (object, optional section)"));
	ck_assert_ptr_nonnull(
		strstr(text, "backends[].breaker.mode (string, default \"consecutive\", one of"));
	ck_assert_ptr_nonnull(
		strstr(text, "backends[].http_version (string, default \"1.1\", one of"));
	ck_assert_ptr_nonnull(
		strstr(text, "backends[].adaptive_concurrency (object, optional section)"));
	ck_assert_ptr_nonnull(strstr(
		text,
		"backends[].adaptive_concurrency.tolerance (number, default 1.5, 1.0..10.0)"));
	ck_assert_ptr_nonnull(strstr(text, "backends[].rate_limits.honor_headers (boolean, "
					   "default true)"));
	ck_assert_ptr_nonnull(strstr(text, "routes[].retry.hedge (object, optional section)"));
	ck_assert_ptr_nonnull(strstr(text, "routes[].retry.hedge.after (\"pNN\")"));
	ck_assert_ptr_nonnull(strstr(
		text, "routes[].retry.hedge.targets (string, default \"other\", one of \"same\" or "
		      "\"other\")"));
	free(text);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(priority_name(PRIORITY_HIGH), "high");
	ck_assert_str_eq(priority_name(PRIORITY_LOW), "low");
	ck_assert_ptr_null(priority_name(PRIORITY__COUNT));
	ck_assert_str_eq(slo_window_name(WIN_5M), "5m");
	ck_assert_str_eq(slo_window_name(WIN_1D), "1d");
	ck_assert_str_eq(slo_window_name(WIN_30D), "30d");
	ck_assert_ptr_null(slo_window_name(WIN__COUNT));
	ck_assert_int_eq(slo_window_minutes(WIN_5M), 5);
	ck_assert_int_eq(slo_window_minutes(WIN_30M), 30);
	ck_assert_int_eq(slo_window_minutes(WIN_1H), 60);
	ck_assert_int_eq(slo_window_minutes(WIN_6H), 360);
	ck_assert_int_eq(slo_window_minutes(WIN_1D), 1440);
	ck_assert_int_eq(slo_window_minutes(WIN_3D), 4320);
	ck_assert_int_eq(slo_window_minutes(WIN_30D), 43200);
	ck_assert_str_eq(severity_name(SEVERITY_PAGE), "page");
	ck_assert_str_eq(severity_name(SEVERITY_TICKET), "ticket");
	ck_assert_str_eq(config_alert_metric_names[0], "service_availability");
}
END_TEST

/* --- invalid configs --------------------------------------------------------------- */

struct bad {
	const char *top, *backend, *route; /* pieces for cfg() */
	const char *want;		   /* a substring of the cause: "path: problem" */
};

static void
check_bad(const struct bad *b)
{
	char *json = cfg(b->top, b->backend, b->route);
	char *cause = load_err(json, CONFIG_E_INVALID);

	ck_assert_msg(strstr(cause, b->want) != NULL, "want \"%s\" in:\n%s", b->want, cause);
	free(cause);
	free(json);
}

static const struct bad bad_keys[] = {
	{"", "", ", \"retry\": {\"max_retrys\": 2}",
	 "routes[0].retry.max_retrys: unknown key (did you mean \"max_retries\"?)"},
	{"\"lisen\": \"127.0.0.1:1\",", "", "", "lisen: unknown key (did you mean \"listen\"?)"},
	{"", ", \"breaker\": {\"failure_treshold\": 3}", "",
	 "backends[0].breaker.failure_treshold: unknown key (did you mean \"failure_threshold\"?)"},
	{"", "", ", \"budget\": 6000",
	 "routes[0].budget: unknown key (did you mean \"budget_ms\"?)"},
	{"", "", ", \"zzzzzzzzzz\": 1",
	 "routes[0].zzzzzzzzzz: unknown key (known keys here: name, budget_ms"},
	{"", "", ", \"budget_ms\": 5000, \"budget_ms\": 6000",
	 "routes[0].budget_ms: duplicate key"},
	{"", "",
	 ", \"slo\": {\"alerts\": [{\"name\": \"a\", \"metric\": \"retry_rate\", \"op\": \">\", "
	 "\"value\": 0.1, \"for\": 60}]}",
	 "routes[0].slo.alerts[0].for: unknown key (did you mean \"for_s\"?)"},
	{"", "", ", \"timeout\": {\"mode\": \"fixed\", \"percentile\": 0.5}",
	 "routes[0].timeout.percentile: only used with \"mode\": \"dynamic\""},
	{"", "", ", \"output\": {\"confidence\": \"c\"}",
	 "routes[0].output.confidence: unknown key (did you mean \"confidence_field\"?)"},
	{"\"auth\": {\"callers_require_tokens\": true},", "", "",
	 "auth.callers_require_tokens: unknown key (did you mean \"callers_require_token\"?)"},
	{"", "", ", \"targets\": [{\"backend\": \"b1\", \"wieght\": 3}]",
	 "routes[0].targets[0].wieght: unknown key (did you mean \"weight\"?)"},
	{"\"alert_webhook\": {\"alertmanger\": \"http://x\"},", "", "",
	 "alert_webhook.alertmanger: unknown key (did you mean \"alertmanager\"?)"},
	{"", "", ", \"retry\": {\"hedge\": {\"after_m\": 800}}",
	 "routes[0].retry.hedge.after_m: unknown key (did you mean \"after_ms\"?)"},
	{"", ", \"rate_limits\": {\"rmp\": 60}", "",
	 "backends[0].rate_limits.rmp: unknown key (did you mean \"rpm\"?)"},
	{"", ", \"adaptive_concurrency\": {\"min\": 2}", "",
	 "backends[0].adaptive_concurrency.min: unknown key (did you mean \"min_limit\"?)"},
	{"", "", ", \"retry\": {\"hedge\": {\"after_ms\": 800, \"min_ms\": 100}}",
	 "routes[0].retry.hedge.min_ms: only used with \"after\""},
	{"", "", ", \"retry\": {\"hedge\": {\"after_ms\": 800, \"max_ms\": 100}}",
	 "routes[0].retry.hedge.max_ms: only used with \"after\""},
};

START_TEST(test_bad_keys)
{
	check_bad(&bad_keys[_i]);
}
END_TEST

static const struct bad bad_types[] = {
	{"", "", ", \"budget_ms\": \"6000\"",
	 "routes[0].budget_ms: must be an integer (got \"6000\")"},
	{"", "", ", \"budget_ms\": 1.5", "routes[0].budget_ms: must be an integer (got 1.5)"},
	{"", "", ", \"health_weighting\": \"yes\"",
	 "routes[0].health_weighting: must be true or false (got \"yes\")"},
	{"", "", ", \"prompt\": {\"temperature\": \"hot\"}",
	 "routes[0].prompt.temperature: must be a number (got \"hot\")"},
	{"", "", ", \"retry\": 5", "routes[0].retry: must be an object (got 5)"},
	{"", "", ", \"retry\": {\"retry_on\": \"http_5xx\"}",
	 "routes[0].retry.retry_on: must be an array of outcome classes"},
	{"", "", ", \"prompt\": {\"user\": null}",
	 "routes[0].prompt.user: must be a string (got null)"},
	{"", ", \"headers\": {\"X-A\": 1}", "",
	 "backends[0].headers.X-A: must be a string (got 1)"},
	{"", ", \"headers\": {\"Bad Name\": \"v\"}", "",
	 "backends[0].headers.Bad Name: not a valid HTTP header name"},
	{"", ", \"headers\": [\"X-A: v\"]", "", "backends[0].headers: must be an object"},
	{"\"alert_webhook\": 5,", "", "",
	 "alert_webhook: must be null, a URL or {\"alertmanager\": URL} (got 5)"},
	{"", "", ", \"output\": {\"schema\": [1]}",
	 "routes[0].output.schema: must be an object (got an array)"},
	{"", "", ", \"rules\": {\"match\": [{\"any\": [\"x\"], \"result\": \"refund\"}]}",
	 "routes[0].rules.match[0].result: must be an object (got \"refund\")"},
	{"", "", ", \"rules\": {\"match\": [{\"any\": [\"x\", 3], \"result\": {}}]}",
	 "routes[0].rules.match[0].any[1]: must be a non-empty string (got 3)"},
	{"", "", ", \"rules\": {\"match\": [{\"any\": [], \"result\": {}}]}",
	 "routes[0].rules.match[0].any: must be a non-empty array of keywords (got an empty "
	 "array)"},
	{"", "", ", \"rules\": {\"match\": {}}",
	 "routes[0].rules.match: must be an array (got an object)"},
	{"", "", ", \"targets\": {\"backend\": \"b1\"}",
	 "routes[0].targets: must be an array (got an object)"},
	{"", "", ", \"targets\": [\"b1\"]", "routes[0].targets[0]: must be an object (got \"b1\")"},
	{"", "", ", \"cross_check\": {\"backend\": \"b1\", \"compare\": [\"\"]}",
	 "routes[0].cross_check.compare[0]: must be a non-empty string"},
	{"", "", ", \"name\": \"\"", "routes[0].name: must not be empty"},
	{"", "",
	 ", \"backup\": {\"targets\": [{\"backend\": \"b1\"}], \"few_shot\": [{\"role\": \"bot\", "
	 "\"content\": \"x\"}]}",
	 "routes[0].backup.few_shot[0].role: must be one of \"system\", \"user\" or \"assistant\" "
	 "(got \"bot\")"},
	{"", ", \"adaptive_concurrency\": 5", "",
	 "backends[0].adaptive_concurrency: must be an object (got 5)"},
	{"", ", \"rate_limits\": {\"honor_headers\": \"yes\"}", "",
	 "backends[0].rate_limits.honor_headers: must be true or false (got \"yes\")"},
	{"", "", ", \"retry\": {\"hedge\": true}",
	 "routes[0].retry.hedge: must be an object (got true)"},
};

START_TEST(test_bad_types)
{
	check_bad(&bad_types[_i]);
}
END_TEST

static const struct bad bad_ranges[] = {
	{"", "", ", \"retry\": {\"multiplier\": 0.5}",
	 "routes[0].retry.multiplier: must be >= 1.0 (got 0.5)"},
	{"", "", ", \"budget_ms\": 0", "routes[0].budget_ms: must be >= 1 (got 0)"},
	{"", ", \"breaker\": {\"failure_rate\": 1.5}", "",
	 "backends[0].breaker.failure_rate: must be <= 1.0 (got 1.5)"},
	{"", ", \"breaker\": {\"half_open_probes\": 0}", "",
	 "backends[0].breaker.half_open_probes: must be >= 1 (got 0)"},
	{"", ", \"breaker\": {\"open_multiplier\": 0.9}", "",
	 "backends[0].breaker.open_multiplier: must be >= 1.0 (got 0.9)"},
	{"", ", \"timeouts\": {\"connect_ms\": -5}", "",
	 "backends[0].timeouts.connect_ms: must be >= 1 (got -5)"},
	{"", ", \"queue_ms\": -1", "", "backends[0].queue_ms: must be >= 0 (got -1)"},
	{"", "", ", \"targets\": [{\"backend\": \"b1\", \"weight\": -1}]",
	 "routes[0].targets[0].weight: must be >= 0 (got -1)"},
	{"", "",
	 ", \"targets\": [{\"backend\": \"b1\", \"weight\": 0}, {\"backend\": \"small-v1\", "
	 "\"weight\": 0}]",
	 "routes[0].targets: at least one target needs a weight > 0"},
	{"", "", ", \"review\": {\"sample_rate\": 2}",
	 "routes[0].review.sample_rate: must be <= 1.0 (got 2.0)"},
	{"", "", ", \"retry\": {\"jitter\": 1.5}",
	 "routes[0].retry.jitter: must be <= 1.0 (got 1.5)"},
	{"", "", ", \"retry\": {\"jitter\": \"half\"}",
	 "routes[0].retry.jitter: must be a number 0..1 or \"full\" (got \"half\")"},
	{"", "", ", \"min_attempt_ms\": 7000",
	 "routes[0].min_attempt_ms: must be <= budget_ms (6000) (got 7000)"},
	{"", "", ", \"timeout\": {\"mode\": \"dynamic\", \"min_ms\": 9000, \"max_ms\": 8000}",
	 "routes[0].timeout.min_ms: must be <= max_ms (8000) (got 9000)"},
	{"\"max_body_bytes\": 0,", "", "", "max_body_bytes: must be >= 1 (got 0)"},
	{"\"log\": {\"retention_days\": 0},", "", "", "log.retention_days: must be >= 1 (got 0)"},
	{"", "",
	 ", \"slo\": {\"alerts\": [{\"name\": \"a\", \"metric\": \"retry_rate\", \"op\": \">\", "
	 "\"value\": 5}]}",
	 "routes[0].slo.alerts[0].value: must be <= 1.0 (got 5.0)"},
	{"", "", ", \"output\": {\"review_below\": -0.1}",
	 "routes[0].output.review_below: must be >= 0.0 (got -0.1)"},
	{"", "", ", \"retry\": {\"max_retries\": 1e300}",
	 "routes[0].retry.max_retries: must be <= 100"},
	{"\"listen\": \"127.0.0.1:70000\",", "", "",
	 "listen: port must be an integer 0..65535 (got \"70000\")"},
	{"\"listen\": \"localhost\",", "", "", "listen: must be \"host:port\""},
	{"\"listen\": \"::1:7700\",", "", "", "listen: IPv6 addresses go in brackets"},
	{"\"listen\": \"example.com:80\",", "", "", "listen: must be \"host:port\""},
	{"",
	 ", \"max_concurrent\": 10, \"adaptive_concurrency\": {\"min_limit\": 12, "
	 "\"initial_limit\": 12}",
	 "", "backends[0].adaptive_concurrency.min_limit: must be <= max_concurrent (10) (got 12)"},
	{"", ", \"adaptive_concurrency\": {\"min_limit\": 80}", "",
	 "backends[0].adaptive_concurrency.min_limit: must be <= max_concurrent (60) (got 80)"},
	{"", ", \"adaptive_concurrency\": {\"min_limit\": 5, \"initial_limit\": 4}", "",
	 "backends[0].adaptive_concurrency.min_limit: must be <= initial_limit (4) (got 5)"},
	{"", ", \"max_concurrent\": 8, \"adaptive_concurrency\": {\"initial_limit\": 9}", "",
	 "backends[0].adaptive_concurrency.initial_limit: must be <= max_concurrent (8) (got 9)"},
	{"", ", \"adaptive_concurrency\": {\"min_limit\": 0}", "",
	 "backends[0].adaptive_concurrency.min_limit: must be >= 1 (got 0)"},
	{"", ", \"adaptive_concurrency\": {\"window_ms\": 5}", "",
	 "backends[0].adaptive_concurrency.window_ms: must be >= 10 (got 5)"},
	{"", ", \"adaptive_concurrency\": {\"smoothing\": 0}", "",
	 "backends[0].adaptive_concurrency.smoothing: must be >= 0.01 (got 0.0)"},
	{"", ", \"adaptive_concurrency\": {\"tolerance\": 0.5}", "",
	 "backends[0].adaptive_concurrency.tolerance: must be >= 1.0 (got 0.5)"},
	{"", ", \"adaptive_concurrency\": {\"backoff_ratio\": 1.5}", "",
	 "backends[0].adaptive_concurrency.backoff_ratio: must be <= 1.0 (got 1.5)"},
	{"", ", \"rate_limits\": {\"rpm\": -1}", "",
	 "backends[0].rate_limits.rpm: must be >= 0 (got -1)"},
	{"", ", \"rate_limits\": {\"tpm\": 1.5}", "",
	 "backends[0].rate_limits.tpm: must be an integer (got 1.5)"},
	{"", "", ", \"retry\": {\"hedge\": {\"after\": \"p200\"}}",
	 "routes[0].retry.hedge.after: must be \"pNN\" with NN 50..99.9, e.g. \"p95\" (got "
	 "\"p200\")"},
	{"", "", ", \"retry\": {\"hedge\": {\"after\": \"p49\"}}",
	 "routes[0].retry.hedge.after: must be \"pNN\" with NN 50..99.9, e.g. \"p95\" (got "
	 "\"p49\")"},
	{"", "", ", \"retry\": {\"hedge\": {\"after\": \"p99.95\"}}",
	 "routes[0].retry.hedge.after: must be \"pNN\""},
	{"", "", ", \"retry\": {\"hedge\": {\"after\": \"95\"}}",
	 "routes[0].retry.hedge.after: must be \"pNN\""},
	{"", "", ", \"retry\": {\"hedge\": {\"after\": \"p95.\"}}",
	 "routes[0].retry.hedge.after: must be \"pNN\""},
	{"", "", ", \"retry\": {\"hedge\": {\"after\": 95}}",
	 "routes[0].retry.hedge.after: must be \"pNN\" with NN 50..99.9, e.g. \"p95\" (got 95)"},
	{"", "", ", \"retry\": {\"hedge\": {\"after_ms\": 0}}",
	 "routes[0].retry.hedge.after_ms: must be >= 1 (got 0)"},
	{"", "", ", \"retry\": {\"hedge\": {\"after_ms\": 800, \"max_hedges\": 4}}",
	 "routes[0].retry.hedge.max_hedges: must be <= 3 (got 4)"},
	{"", "", ", \"retry\": {\"hedge\": {\"after_ms\": 800, \"max_hedges\": 0}}",
	 "routes[0].retry.hedge.max_hedges: must be >= 1 (got 0)"},
	{"", "", ", \"retry\": {\"hedge\": {\"after\": \"p95\", \"min_ms\": 3000}}",
	 "routes[0].retry.hedge.min_ms: must be <= max_ms (2500) (got 3000)"},
};

START_TEST(test_bad_ranges)
{
	check_bad(&bad_ranges[_i]);
}
END_TEST

static const struct bad bad_refs[] = {
	{"", "", ", \"targets\": [{\"backend\": \"smal-v1\"}]",
	 "routes[0].targets[0].backend: unknown backend \"smal-v1\" (did you mean \"small-v1\"?)"},
	{"", "", ", \"targets\": [{\"backend\": \"gpt\"}]",
	 "routes[0].targets[0].backend: unknown backend \"gpt\""},
	{"", "", ", \"backup\": {\"targets\": [{\"backend\": \"tiny\"}]}",
	 "routes[0].backup.targets[0].backend: unknown backend \"tiny\""},
	{"", "", ", \"backup\": {}", "routes[0].backup.targets: missing (required)"},
	{"", "", ", \"cross_check\": {\"backend\": \"other\"}",
	 "routes[0].cross_check.backend: unknown backend \"other\""},
	{"", "", ", \"cross_check\": {}", "routes[0].cross_check.backend: missing (required)"},
	{"", "", ", \"targets\": [{\"backend\": \"b1\"}, {\"backend\": \"b1\"}]",
	 "routes[0].targets[1].backend: backend \"b1\" listed twice (also routes[0].targets[0])"},
	{"", "", ", \"targets\": []", "routes[0].targets: must list at least one target"},
	{"", "", "}, {\"name\": \"r1\", \"targets\": [{\"backend\": \"b1\"}]",
	 "routes[1].name: duplicate route name \"r1\" (also routes[0])"},
	{"", ", \"name\": \"small-v1\"", "",
	 "backends[1].name: duplicate backend name \"small-v1\" (also backends[0])"},
	{"", ", \"name\": \"a b\"", "", "backends[0].name: must hold only letters, digits"},
	{"", ", \"url\": \"ftp://x\"", "",
	 "backends[0].url: must be an http:// or https:// URL with a host"},
	{"", ", \"api_key_env\": \"1KEY\"", "",
	 "backends[0].api_key_env: must name an environment variable"},
	{"", "",
	 ", \"slo\": {\"alerts\": [{\"name\": \"a\", \"metric\": \"retry_rate\", \"op\": \">\", "
	 "\"value\": 0.1},"
	 " {\"name\": \"a\", \"metric\": \"timeout_rate\", \"op\": \">\", \"value\": 0.1}]}",
	 "routes[0].slo.alerts[1].name: duplicate alert name \"a\" (also routes[0].slo.alerts[0])"},
	{"", "", ", \"slo\": {\"alerts\": [{\"name\": \"a\", \"op\": \">\", \"value\": 0.1}]}",
	 "routes[0].slo.alerts[0].metric: missing (required)"},
	{"", "", ", \"rules\": {}", "routes[0].rules: needs rules in \"match\" or a \"default\""},
	{"", "", ", \"rules\": {\"match\": [{\"any\": [\"a\"], \"regex\": \"a\", \"result\": {}}]}",
	 "routes[0].rules.match[0]: needs exactly one of \"any\" or \"regex\""},
	{"", "", ", \"rules\": {\"match\": [{\"any\": [\"a\"]}]}",
	 "routes[0].rules.match[0].result: missing (required)"},
	{"", "", ", \"rules\": {\"default\": {\"confidence\": 0.3}}",
	 "routes[0].rules.default.result: missing (required)"},
	{"", "", ", \"preset\": {}", "routes[0].preset: needs \"result\" or \"text\""},
	{"", "",
	 ", \"output\": {\"rules\": [{\"when\": {\"field\": \"x\"}, \"deny\": {\"field\": \"y\", "
	 "\"pattern\": \"z\"}}]}",
	 "routes[0].output.rules[0].when.equals: missing (required)"},
	{"", "", ", \"retry\": {\"hedge\": {}}",
	 "routes[0].retry.hedge: needs exactly one of \"after_ms\" or \"after\""},
	{"", "", ", \"retry\": {\"hedge\": {\"after_ms\": 800, \"after\": \"p95\"}}",
	 "routes[0].retry.hedge: needs exactly one of \"after_ms\" or \"after\""},
};

START_TEST(test_bad_refs)
{
	check_bad(&bad_refs[_i]);
}
END_TEST

static const struct bad bad_regex[] = {
	{"", "", ", \"output\": {\"deny\": [{\"field\": \"a\", \"pattern\": \"((\"}]}",
	 "routes[0].output.deny[0].pattern: invalid regex: "},
	{"", "",
	 ", \"output\": {\"rules\": [{\"when\": {\"field\": \"x\", \"equals\": 1}, \"deny\": "
	 "{\"field\": \"y\", \"pattern\": \"[a\"}}]}",
	 "routes[0].output.rules[0].deny.pattern: invalid regex: "},
	{"", "", ", \"rules\": {\"match\": [{\"regex\": \"a{2,1}\", \"result\": {}}]}",
	 "routes[0].rules.match[0].regex: invalid regex: "},
	{"", "", ", \"output\": {\"schema\": {\"type\": \"objekt\"}}", "routes[0].output.schema"},
};

START_TEST(test_bad_regex)
{
	check_bad(&bad_regex[_i]);
}
END_TEST

static const struct bad bad_enums[] = {
	{"", "", ", \"retry\": {\"backoff\": \"exponentail\"}",
	 "routes[0].retry.backoff: must be one of \"none\" or \"exponential\" (got "
	 "\"exponentail\"; did you mean \"exponential\"?)"},
	{"", ", \"breaker\": {\"mode\": \"sliding\"}", "",
	 "backends[0].breaker.mode: must be one of \"consecutive\", \"count\" or \"time\" (got "
	 "\"sliding\")"},
	{"", ", \"http_version\": \"3\"", "",
	 "backends[0].http_version: must be one of \"1.1\" or \"2\" (got \"3\""},
	{"", ", \"http_version\": 2", "",
	 "backends[0].http_version: must be one of \"1.1\" or \"2\" (got 2)"},
	{"", ", \"http_version\": \"HTTP/2\"", "",
	 "backends[0].http_version: must be one of \"1.1\" or \"2\" (got \"HTTP/2\")"},
	{"", "", ", \"on_exhausted\": \"retry\"",
	 "routes[0].on_exhausted: must be one of \"error\" or \"manual\" (got \"retry\")"},
	{"", "", ", \"review\": {\"overflow\": \"drop\"}",
	 "routes[0].review.overflow: must be one of \"auto_accept_low\" or \"force_l2\""},
	{"", "", ", \"review\": {\"priority\": \"urgent\"}",
	 "routes[0].review.priority: must be one of \"high\", \"medium\" or \"low\""},
	{"", "", ", \"timeout\": {\"mode\": \"adaptive\"}",
	 "routes[0].timeout.mode: must be one of \"fixed\" or \"dynamic\""},
	{"\"log\": {\"level\": \"verbose\"},", "", "",
	 "log.level: must be one of \"debug\", \"info\", \"warn\" or \"error\""},
	{"", "",
	 ", \"slo\": {\"alerts\": [{\"name\": \"a\", \"metric\": \"retry_rate\", \"op\": \"!=\", "
	 "\"value\": 0.1}]}",
	 "routes[0].slo.alerts[0].op: must be one of \"<\", \"<=\", \">\" or \">=\""},
	{"", "",
	 ", \"slo\": {\"alerts\": [{\"name\": \"a\", \"metric\": \"retry_rate\", \"op\": \">\", "
	 "\"value\": 0.1, \"window\": \"2h\"}]}",
	 "routes[0].slo.alerts[0].window: must be one of \"5m\", \"30m\", \"1h\", \"6h\", \"1d\", "
	 "\"3d\" or \"30d\" (got \"2h\""},
	{"", "",
	 ", \"slo\": {\"alerts\": [{\"name\": \"a\", \"metric\": \"retry_rate\", \"op\": \">\", "
	 "\"value\": 0.1, \"severity\": \"sms\"}]}",
	 "routes[0].slo.alerts[0].severity: must be one of \"page\" or \"ticket\" (got \"sms\")"},
	{"", "",
	 ", \"slo\": {\"alerts\": [{\"name\": \"a\", \"metric\": \"smart_availabilty\", \"op\": "
	 "\">\", \"value\": 0.1}]}",
	 "routes[0].slo.alerts[0].metric: must be one of \"service_availability\""},
	{"", "", ", \"retry\": {\"retry_on\": [\"reset\", \"timeout\"]}",
	 "routes[0].retry.retry_on[1]: unknown outcome class \"timeout\""},
	{"", "", ", \"retry\": {\"retry_on\": [\"http5xx\"]}",
	 "routes[0].retry.retry_on[0]: unknown outcome class \"http5xx\" (did you mean "
	 "\"http_5xx\"?)"},
	{"", "", ", \"retry\": {\"retry_on\": [\"http_4xx\"]}",
	 "routes[0].retry.retry_on[0]: \"http_4xx\" is never retried"},
	{"", "", ", \"retry\": {\"retry_on\": [\"validation_schema\"]}",
	 "routes[0].retry.retry_on[0]: \"validation_schema\" is never retried"},
	{"", "", ", \"retry\": {\"hedge\": {\"after_ms\": 800, \"targets\": \"both\"}}",
	 "routes[0].retry.hedge.targets: must be one of \"same\" or \"other\" (got \"both\")"},
};

START_TEST(test_bad_enums)
{
	check_bad(&bad_enums[_i]);
}
END_TEST

START_TEST(test_bad_structure)
{
	char *cause;

	cause = load_err("[1, 2]", CONFIG_E_INVALID);
	ck_assert_str_eq(cause, "(top level): must be a JSON object (got an array)");
	free(cause);

	cause = load_err("{}", CONFIG_E_INVALID);
	ck_assert_str_eq(cause, "backends: missing (required)\nroutes: missing (required)");
	free(cause);

	cause = load_err("{\"backends\": [], \"routes\": []}", CONFIG_E_INVALID);
	ck_assert_str_eq(cause, "backends: at least one backend is required\nroutes: at least one "
				"route is required");
	free(cause);

	cause = load_err("{\"backends\": [{\"name\": \"b1\", \"url\": \"" URL1
			 "\"}], \"routes\": [{\"name\": \"r\"}]}",
			 CONFIG_E_INVALID);
	ck_assert_ptr_nonnull(strstr(cause, "backends[0].model: missing (required)"));
	ck_assert_ptr_nonnull(strstr(cause, "routes[0].targets: missing (required)"));
	free(cause);
}
END_TEST

START_TEST(test_errors_all_reported)
{
	char *json = cfg("\"lisen\": 1, \"log\": {\"level\": \"loud\"},",
			 ", \"breaker\": {\"failure_rate\": 2}",
			 ", \"targets\": [{\"backend\": \"zz\"}], \"retry\": {\"multiplier\": 0.5, "
			 "\"max_retrys\": 2},"
			 " \"on_exhausted\": \"panic\"");
	char *cause = load_err(json, CONFIG_E_INVALID);

	ck_assert_int_eq(count_lines(cause), 7);
	ck_assert_ptr_nonnull(strstr(cause, "lisen: unknown key"));
	ck_assert_ptr_nonnull(strstr(cause, "log.level: must be one of"));
	ck_assert_ptr_nonnull(
		strstr(cause, "backends[0].breaker.failure_rate: must be <= 1.0 (got 2.0)"));
	ck_assert_ptr_nonnull(
		strstr(cause, "routes[0].retry.multiplier: must be >= 1.0 (got 0.5)"));
	ck_assert_ptr_nonnull(strstr(cause, "routes[0].retry.max_retrys: unknown key"));
	ck_assert_ptr_nonnull(
		strstr(cause, "routes[0].targets[0].backend: unknown backend \"zz\""));
	ck_assert_ptr_nonnull(strstr(cause, "routes[0].on_exhausted: must be one of"));
	free(cause);
	free(json);
}
END_TEST

START_TEST(test_errors_capped)
{
	struct buf b;
	char *cause;
	int i;

	buf_init(&b, 1 << 20);
	buf_puts(&b, "{");
	for (i = 0; i < 150; i++)
		buf_printf(&b, "\"k%d\": 1, ", i);
	buf_puts(&b, "\"x\": 1}");
	cause = load_err(b.data, CONFIG_E_INVALID);
	ck_assert_int_eq(count_lines(cause), 101);
	ck_assert_ptr_nonnull(strstr(cause, "\n... and 53 more errors"));
	free(cause);
	buf_free(&b);
}
END_TEST

START_TEST(test_secrets_not_echoed)
{
	/* An unknown key's value never appears (it may be a pasted secret). */
	char *json = cfg("", ", \"api_key\": \"sk-SECRET123\"", "");
	char *cause = load_err(json, CONFIG_E_INVALID);

	ck_assert_ptr_nonnull(
		strstr(cause, "backends[0].api_key: unknown key (did you mean \"api_key_env\"?)"));
	ck_assert_ptr_null(strstr(cause, "sk-SECRET123"));
	free(cause);
	free(json);

	/* Nor does a key pasted where the variable's name goes. */
	json = cfg("", ", \"api_key_env\": \"sk-SECRET456\"", "");
	cause = load_err(json, CONFIG_E_INVALID);
	ck_assert_ptr_nonnull(
		strstr(cause, "backends[0].api_key_env: must name an environment variable"));
	ck_assert_ptr_null(strstr(cause, "SECRET456"));
	free(cause);
	free(json);
}
END_TEST

/* --- syntax -------------------------------------------------------------------------- */

static const struct {
	const char *text, *want;
} bad_syntax[] = {
	{"{\n  \"listen\": \"x\",\n}\n", "<string>:3:1: invalid JSON: trailing comma before '}'"},
	{"{\n  // a comment\n  \"a\": 1}", "<string>:2:3: invalid JSON: comments are not allowed"},
	{"", "<string>:1:1: invalid JSON: unexpected end of input"},
	{"{\"a\": ", "<string>:1:7: invalid JSON: unexpected end of input"},
	{"{'a': 1}", "<string>:1:2: invalid JSON: strings take double quotes"},
	{"{\"a\" 1}", "<string>:1:6: invalid JSON: expected ':' after the key"},
	{"{\"a\": 1\n \"b\": 2}", "<string>:2:2: invalid JSON: expected ',' or '}'"},
	{"{\"a\": [1,]}", "<string>:1:10: invalid JSON: trailing comma before ']'"},
	{"{\"a\": tru}", "<string>:1:7: invalid JSON: expected a value"},
	{"{\"a\": \"x\ty\"}", "<string>:1:9: invalid JSON: control character in a string"},
	{"{\"a\": 01}", "<string>:1:8: invalid JSON: expected ',' or '}'"},
	{"{} {}", "<string>:1:4: invalid JSON: unexpected text after the JSON value"},
	{"{\"名前\": \"é\", x}", "<string>:1:13: invalid JSON: expected a double-quoted key"},
	{"{\"a\": \"\\q\"}", "<string>:1:9: invalid JSON: invalid escape in a string"},
};

START_TEST(test_syntax)
{
	char *cause = load_err(bad_syntax[_i].text, CONFIG_E_SYNTAX);

	ck_assert_msg(strstr(cause, bad_syntax[_i].want) == cause, "want \"%s\", got \"%s\"",
		      bad_syntax[_i].want, cause);
	free(cause);
}
END_TEST

START_TEST(test_file_errors)
{
	struct config *c = NULL;
	char *cause = NULL, dir[] = "/tmp/fb-config-XXXXXX", *file;
	FILE *fp;

	ck_assert_int_eq(config_load("/nonexistent/fusebox.json", &c, &cause), CONFIG_E_IO);
	ck_assert_str_eq(cause, "/nonexistent/fusebox.json: No such file or directory");
	ck_assert_ptr_null(c);
	free(cause);
	cause = NULL;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(config_load(dir, &c, &cause), CONFIG_E_IO);
	free(cause);
	cause = NULL;

	file = xasprintf("%s/bad.json", dir);
	fp = fopen(file, "w");
	fputs("{\n\"a\": 1,,\n}", fp);
	fclose(fp);
	ck_assert_int_eq(config_load(file, &c, &cause), CONFIG_E_SYNTAX);
	ck_assert_ptr_nonnull(strstr(cause, ":2:8: invalid JSON: expected a double-quoted key"));
	ck_assert(strncmp(cause, file, strlen(file)) == 0);
	free(cause);
	unlink(file);
	rmdir(dir);
	free(file);
	config_free(NULL);
}
END_TEST

/* --- shipped examples ----------------------------------------------------------------- */

static struct config *
example_load(const char *name)
{
	const char *root = getenv("FB_SOURCE_ROOT");
	struct config *c = NULL;
	char *path, *cause = NULL;
	int rc;

	path = xasprintf("%s/contrib/examples/%s", root != NULL ? root : ".", name);
	rc = config_load(path, &c, &cause);
	ck_assert_msg(rc == 0, "%s: %s", path, cause ? cause : "?");
	free(path);
	return c;
}

START_TEST(test_example_intent)
{
	struct config *c = example_load("intent-fast-path.json");
	const struct route_cfg *r = &c->routes[0];
	const struct backend_cfg *b = &c->backends[0];

	ck_assert_int_eq(r->budget_ms, 6000);
	ck_assert_int_eq(r->retry.max_retries, 1);
	ck_assert_int_eq(r->retry.backoff, BACKOFF_NONE);
	ck_assert_int_eq(b->breaker.mode, BREAKER_MODE_CONSECUTIVE);
	ck_assert_int_eq(b->breaker.failure_threshold, 3);
	ck_assert_int_eq(b->breaker.open_ms, 60000);
	ck_assert_int_eq(b->breaker.half_open_probes, 1);
	ck_assert(r->rules.enabled);
	ck_assert(r->rules.has_default);
	ck_assert_ptr_nonnull(strstr(c->database, "/contrib/examples/var/fusebox.db"));
	config_free(c);
}
END_TEST

START_TEST(test_example_ticket)
{
	struct config *c = example_load("ticket-classification.json");
	const struct route_cfg *r = config_route(c, "ticket");
	const struct backend_cfg *b = &c->backends[0];

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(b->total_ms, 2000);
	ck_assert_int_eq(r->retry.max_retries, 2);
	ck_assert_int_eq(r->retry.backoff, BACKOFF_EXPONENTIAL);
	ck_assert_int_eq(r->retry.base_ms, 1500);
	ck_assert_double_eq(r->retry.multiplier, 1.5);
	ck_assert_double_eq(r->retry.jitter, 0.2);
	ck_assert_int_eq(b->breaker.mode, BREAKER_MODE_TIME);
	ck_assert_int_eq(b->breaker.window_s, 10);
	ck_assert_double_eq(b->breaker.failure_rate, 0.5);
	ck_assert_int_eq(b->breaker.min_calls, 50);
	ck_assert_int_eq(b->breaker.half_open_probes, 5);
	ck_assert_int_eq(b->max_concurrent, 20);
	ck_assert_int_eq(r->escalation.l1_after, 3);
	ck_assert_int_eq(r->escalation.l2_after, 5);
	ck_assert_double_eq(r->output.review_below, 0.7);
	ck_assert_int_eq(r->ntargets, 2);
	ck_assert_int_eq(r->targets[1].weight, 5);
	ck_assert(r->targets[1].canary);
	ck_assert(r->canary_guard.enabled);
	config_free(c);
}
END_TEST

START_TEST(test_example_address)
{
	struct config *c = example_load("address-parsing.json");
	const struct route_cfg *r = &c->routes[0];
	const struct backend_cfg *b = &c->backends[0];

	ck_assert_int_eq(r->budget_ms, 3000);
	ck_assert_int_eq(b->connect_ms, 1000);
	ck_assert_int_eq(b->first_byte_ms, 2500);
	ck_assert_int_eq(b->breaker.mode, BREAKER_MODE_COUNT);
	ck_assert_int_eq(b->breaker.window, 50);
	ck_assert_int_eq(b->breaker.min_calls, 20);
	ck_assert_double_eq(b->breaker.failure_rate, 0.4);
	ck_assert_int_eq(b->breaker.open_ms, 15000);
	ck_assert_int_eq(b->breaker.half_open_probes, 5);
	ck_assert_int_eq(b->max_concurrent, 60);
	ck_assert_uint_eq(r->retry.retry_on,
			  OUTCOME_BIT(OUTCOME_HTTP_429) | OUTCOME_BIT(OUTCOME_HTTP_5XX));
	ck_assert_int_eq(r->retry.base_ms, 500);
	ck_assert_double_eq(r->retry.multiplier, 2.0);
	ck_assert_int_eq(r->retry.max_ms, 8000);
	ck_assert_double_eq(r->output.review_below, 0.7);
	ck_assert_int_eq(r->on_exhausted, ON_EXHAUSTED_MANUAL);
	ck_assert(r->rules.enabled);
	ck_assert_int_eq(r->slo.nalerts, 2);
	ck_assert_str_eq(r->slo.alerts[0].metric, "smart_availability");
	ck_assert_double_eq(r->slo.alerts[0].value, 0.90);
	ck_assert_int_eq(r->slo.alerts[0].for_s, 600);
	ck_assert_str_eq(r->slo.alerts[1].metric, "retry_rate");
	ck_assert_double_eq(r->slo.alerts[1].value, 0.05);
	config_free(c);
}
END_TEST

START_TEST(test_example_agent)
{
	struct config *c = example_load("agent-platform.json");
	const struct route_cfg *r = &c->routes[0];
	const struct backend_cfg *b = &c->backends[0];

	ck_assert_int_eq(r->timeout.mode, TIMEOUT_DYNAMIC);
	ck_assert_double_eq(r->timeout.percentile, 0.9);
	ck_assert_int_eq(r->timeout.margin_ms, 15000);
	ck_assert_int_eq(r->timeout.min_ms, 5000);
	ck_assert_int_eq(r->timeout.max_ms, 120000);
	ck_assert_int_eq(b->connect_ms, 5000);
	ck_assert_int_eq(b->first_byte_ms, 30000);
	ck_assert_int_eq(b->total_ms, 120000);
	ck_assert_int_eq(r->retry.backoff, BACKOFF_EXPONENTIAL);
	ck_assert(r->retry.jitter_full);
	ck_assert(r->backup.enabled);
	ck_assert(r->rules.enabled);
	ck_assert(r->cache.enabled);
	ck_assert(r->preset.enabled);
	ck_assert_ptr_nonnull(r->preset.text);
	ck_assert_str_eq(r->slo.alerts[0].metric, "timeout_rate");
	ck_assert_double_eq(r->slo.alerts[0].value, 0.005);
	config_free(c);
}
END_TEST

START_TEST(test_example_demo)
{
	struct config *c = example_load("demo.json");
	const struct route_cfg *intent = config_route(c, "intent"),
			       *ticket = config_route(c, "ticket");
	int i, canary = 0;

	ck_assert_ptr_nonnull(intent);
	ck_assert_ptr_nonnull(ticket);
	for (i = 0; i < ticket->ntargets; i++)
		canary += ticket->targets[i].canary;
	ck_assert_int_eq(canary, 1);
	ck_assert(intent->rules.enabled && ticket->rules.enabled);
	ck_assert(intent->backup.enabled && intent->cache.enabled && intent->preset.enabled);
	ck_assert_double_eq(intent->output.review_below, 0.7);
	ck_assert(intent->escalation.enabled);
	ck_assert(intent->slo.enabled && intent->slo.burn_rate_alerts && intent->slo.nalerts > 0);
	config_free(c);
}
END_TEST

static Suite *
config_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
		int loop; /* rows of a table test, 0 = plain */
	} cases[] = {
		{"defaults_top", test_defaults_top, 0},
		{"defaults_backend", test_defaults_backend, 0},
		{"defaults_route", test_defaults_route, 0},
		{"defaults_output", test_defaults_output, 0},
		{"defaults_review", test_defaults_review, 0},
		{"sections_off", test_sections_off, 0},
		{"sections_on", test_sections_on, 0},
		{"cache_disabled", test_cache_disabled, 0},
		{"slo_alert_defaults", test_slo_alert_defaults, 0},
		{"listen_forms", test_listen_forms, 0},
		{"paths_relative", test_paths_relative, 0},
		{"alert_webhook", test_alert_webhook, 0},
		{"backend_values", test_backend_values, 0},
		{"http_version", test_http_version, 0},
		{"tls_ca_file", test_tls_ca_file, 0},
		{"retry_values", test_retry_values, 0},
		{"targets_values", test_targets_values, 0},
		{"rules_compiled", test_rules_compiled, 0},
		{"output_compiled", test_output_compiled, 0},
		{"backup_values", test_backup_values, 0},
		{"cross_check_values", test_cross_check_values, 0},
		{"adaptive_values", test_adaptive_values, 0},
		{"rate_limits_values", test_rate_limits_values, 0},
		{"hedge_values", test_hedge_values, 0},
		{"table_consistent", test_table_consistent, 0},
		{"reference", test_reference, 0},
		{"names", test_names, 0},
		{"bad_keys", test_bad_keys, (int)ARRAY_SIZE(bad_keys)},
		{"bad_types", test_bad_types, (int)ARRAY_SIZE(bad_types)},
		{"bad_ranges", test_bad_ranges, (int)ARRAY_SIZE(bad_ranges)},
		{"bad_refs", test_bad_refs, (int)ARRAY_SIZE(bad_refs)},
		{"bad_regex", test_bad_regex, (int)ARRAY_SIZE(bad_regex)},
		{"bad_enums", test_bad_enums, (int)ARRAY_SIZE(bad_enums)},
		{"bad_structure", test_bad_structure, 0},
		{"errors_all_reported", test_errors_all_reported, 0},
		{"errors_capped", test_errors_capped, 0},
		{"secrets_not_echoed", test_secrets_not_echoed, 0},
		{"syntax", test_syntax, (int)ARRAY_SIZE(bad_syntax)},
		{"file_errors", test_file_errors, 0},
		{"example_intent", test_example_intent, 0},
		{"example_ticket", test_example_ticket, 0},
		{"example_address", test_example_address, 0},
		{"example_agent", test_example_agent, 0},
		{"example_demo", test_example_demo, 0},
	};
	Suite *s = suite_create("config");
	TCase *tc;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		tc = tcase_create(cases[i].name);
		if (cases[i].loop > 0)
			tcase_add_loop_test(tc, cases[i].test, 0, cases[i].loop);
		else
			tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
