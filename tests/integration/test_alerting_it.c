/*
 * Integration: alerts and SLOs held against the real components (issue
 * 25). A real Alertmanager (Debian package prometheus-alertmanager) on
 * 127.0.0.1 runs the shipped contrib/alertmanager/alertmanager.yml and
 * receives fuseboxd's alerts; a fleet page inhibits the host's page of the
 * same alertname, route and kind; a canary rollback pages and resolves
 * when an operator restores the weight (whose change restarts the guard's
 * window); calls with allow_llm: false are not smart failures; a level
 * event is readable as soon as the level it records shows. The tests that
 * need Alertmanager are skipped when it is not installed.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itd.h"

static struct itd T;

/*
 * Rows are committed in the background (batched every <= 50 ms): wait for
 * count(*) FROM sql_tail to be want (up to 5 s, where itd_settle slept
 * 150 ms) and assert it.
 */
#define ASSERT_COUNT(sql_tail, want)                                                               \
	ck_assert_int_eq(itd_count_wait(&T, (sql_tail), (want), 5000), (want))

#define HEAD "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
#define RULES                                                                                      \
	"\"rules\":{\"match\":[{\"any\":[\"refund\"],\"result\":{\"intent\":\"refund\"},"          \
	"\"confidence\":0.6}],\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}}"
#define AM_BIN	  "/usr/bin/prometheus-alertmanager"
#define AMTOOL	  "/usr/bin/amtool"
#define AM_CONFIG "contrib/alertmanager/alertmanager.yml"

/* ---- a real Alertmanager on 127.0.0.1 ---- */

struct am {
	pid_t pid;
	int port;
	char *dir;
	char url[64];
};

static struct am AM = {-1, 0, NULL, ""};

static int
have_am(void)
{
	return access(AM_BIN, X_OK) == 0 && access(AMTOOL, X_OK) == 0;
}

/* A port nothing listens on now (bind 127.0.0.1:0, read it, close). */
static int
free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static void
am_start(struct am *am)
{
	char cfg[1024], listen[64], storage[512];
	int64_t end;

	snprintf(cfg, sizeof cfg, "--config.file=%s/" AM_CONFIG, harness_source_root());
	am->dir = harness_tmpdir();
	ck_assert_ptr_nonnull(am->dir);
	snprintf(storage, sizeof storage, "--storage.path=%s", am->dir);
	am->port = free_port();
	snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", am->port);
	snprintf(am->url, sizeof am->url, "http://127.0.0.1:%d", am->port);
	am->pid = fork();
	ck_assert_int_ge(am->pid, 0);
	if (am->pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1); /* its log goes nowhere; stderr stays the test's */
		/* No cluster: it would listen on 0.0.0.0:9094. */
		execl(AM_BIN, AM_BIN, cfg, storage, listen,
		      "--cluster.listen-address=", "--log.level=warn", (char *)NULL);
		_exit(127);
	}
	end = harness_now_ms() + 20000;
	for (;;) {
		struct http_resp r;
		char url[128];
		int ok;

		snprintf(url, sizeof url, "%s/-/ready", am->url);
		ok = http_do("GET", url, NULL, NULL, 1000, &r) == 0 && r.status == 200;
		http_resp_free(&r);
		if (ok)
			break;
		ck_assert_msg(harness_now_ms() < end, "Alertmanager never became ready");
		usleep(100000);
	}
}

static void
am_stop(struct am *am)
{
	char cmd[600];

	if (am->pid > 0) {
		kill(am->pid, SIGTERM);
		waitpid(am->pid, NULL, 0);
		am->pid = -1;
	}
	if (am->dir != NULL) {
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", am->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", am->dir);
		free(am->dir);
		am->dir = NULL;
	}
}

/* GET /api/v2/alerts of the Alertmanager (caller deletes). */
static cJSON *
am_alerts(struct am *am)
{
	struct http_resp r;
	char url[128];
	cJSON *o;

	snprintf(url, sizeof url, "%s/api/v2/alerts", am->url);
	ck_assert_int_eq(http_do("GET", url, NULL, NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	o = cJSON_Parse(r.body);
	http_resp_free(&r);
	ck_assert_ptr_nonnull(o);
	return o;
}

static const char *
label(const cJSON *alert, const char *name)
{
	return itd_str(cJSON_GetObjectItem(alert, "labels"), name);
}

/*
 * Wait for an alert of alertname with label source = source to show in
 * Alertmanager with status.state state ("active", "suppressed"); a copy of
 * it, or NULL at the timeout (caller deletes).
 */
static cJSON *
am_wait_alert(struct am *am, const char *alertname, const char *source, const char *state,
	      int timeout_ms)
{
	int64_t end = harness_now_ms() + timeout_ms;

	do {
		cJSON *all = am_alerts(am), *it, *hit = NULL;

		cJSON_ArrayForEach(it, all)
		{
			if (strcmp(label(it, "alertname"), alertname) == 0 &&
			    strcmp(label(it, "source"), source) == 0 &&
			    strcmp(itd_str(cJSON_GetObjectItem(it, "status"), "state"), state) == 0)
				hit = cJSON_Duplicate(it, 1);
		}
		cJSON_Delete(all);
		if (hit != NULL)
			return hit;
		usleep(50000);
	} while (harness_now_ms() < end);
	return NULL;
}

static void
teardown(void)
{
	itd_stop(&T);
	am_stop(&AM);
}

/* ---- helpers on the daemon ---- */

static void
call_ok(const char *body, const char *source)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_call(&T, "intent", body, 10000, &r), 0);
	ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
	o = itd_json(&r);
	ck_assert_ptr_nonnull(o);
	if (source != NULL)
		ck_assert_str_eq(itd_str(o, "source"), source);
	cJSON_Delete(o);
	http_resp_free(&r);
}

static char *
metrics(void)
{
	struct http_resp r;
	char *m;

	ck_assert_int_eq(itd_req(&T, "GET", "/metrics", NULL, "view-token", 10000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	m = strdup(r.body);
	http_resp_free(&r);
	return m;
}

static int
metrics_has(const char *needle)
{
	char *m = metrics();
	int ok = strstr(m, needle) != NULL;

	free(m);
	return ok;
}

static int
wait_metrics_has(const char *needle, int timeout_ms)
{
	int64_t end = harness_now_ms() + timeout_ms;

	while (!metrics_has(needle)) {
		if (harness_now_ms() >= end)
			return 0;
		usleep(20000);
	}
	return 1;
}

static void
put(const char *path, const char *body)
{
	struct http_resp r;

	ck_assert_int_eq(itd_req(&T, "PUT", path, body, "op-token", 5000, &r), 0);
	ck_assert_msg(r.status == 200, "PUT %s: %ld %s", path, r.status, r.body);
	http_resp_free(&r);
}

/* The live weight of backend in route intent. */
static int
weight_of(const char *backend)
{
	struct http_resp r;
	cJSON *st, *t;
	int w = -1;

	ck_assert_int_eq(itd_req(&T, "GET", "/v1/state", NULL, "view-token", 5000, &r), 0);
	st = itd_json(&r);
	http_resp_free(&r);
	cJSON_ArrayForEach(
		t, cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "routes"), 0),
				       "targets"))
	{
		if (strcmp(itd_str(t, "backend"), backend) == 0)
			w = (int)itd_num(t, "weight");
	}
	cJSON_Delete(st);
	return w;
}

/* ---- the tests ---- */

START_TEST(shipped_alertmanager_config_checks_and_routes)
{
	char cmd[1024];
	FILE *p;
	char out[256];

	if (!have_am()) {
		fprintf(stderr, "prometheus-alertmanager not installed: skipped\n");
		return;
	}
	snprintf(cmd, sizeof cmd, AMTOOL " check-config '%s/" AM_CONFIG "' >&2",
		 harness_source_root());
	ck_assert_int_eq(system(cmd), 0);
	/* Routing by severity. */
	snprintf(cmd, sizeof cmd,
		 AMTOOL " config routes test --config.file='%s/" AM_CONFIG
			"' severity=page alertname=fusebox_error_budget_burn source=daemon "
			"2>/dev/null",
		 harness_source_root());
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(out, sizeof out, p));
	pclose(p);
	ck_assert_str_eq(out, "page\n");
	snprintf(cmd, sizeof cmd,
		 AMTOOL " config routes test --config.file='%s/" AM_CONFIG
			"' severity=ticket alertname=fusebox_review_overdue 2>/dev/null",
		 harness_source_root());
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(out, sizeof out, p));
	pclose(p);
	ck_assert_str_eq(out, "ticket\n");
}
END_TEST

START_TEST(daemon_alert_reaches_alertmanager_and_fleet_page_inhibits_it)
{
	char cfg[4096], url[128], body[1024];
	struct http_resp r;
	cJSON *a;
	int i;

	if (!have_am()) {
		fprintf(stderr, "prometheus-alertmanager not installed: skipped\n");
		return;
	}
	am_start(&AM);
	snprintf(cfg, sizeof cfg,
		 HEAD "\"alert_webhook\":{\"alertmanager\":\"%s\"},"
		      "\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
		      "completions\",\"model\":\"m\",\"breaker\":{\"failure_threshold\":1000}}],"
		      "\"routes\":[{\"name\":\"intent\",\"retry\":{\"max_retries\":0},"
		      "\"targets\":[{\"backend\":\"primary\"}]," RULES ","
		      "\"slo\":{\"service_availability\":0.999,\"smart_availability\":0.9,"
		      "\"latency_ms\":5000,\"latency_target\":0.9,"
		      "\"alerts\":[{\"name\":\"smart-low\",\"metric\":\"smart_availability\","
		      "\"op\":\"<\",\"value\":0.9,\"for_s\":0,\"window\":\"5m\","
		      "\"severity\":\"page\",\"min_calls\":5}]}}]}",
		 AM.url);
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	for (i = 0; i < 5; i++)
		call_ok("{\"input\":\"refund\"}", "rules");
	a = am_wait_alert(&AM, "fusebox_smart_low", "daemon", "active", 10000);
	ck_assert_msg(a != NULL, "the real Alertmanager never showed fusebox_smart_low");
	ck_assert_str_eq(label(a, "route"), "intent");
	ck_assert_str_eq(label(a, "kind"), "smart_availability");
	ck_assert_str_eq(label(a, "window"), "5m");
	ck_assert_str_eq(label(a, "severity"), "page");
	ck_assert_str_eq(label(a, "rule"), "smart-low");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(a, "annotations"), "runbook_url"),
			 "docs/OBSERVABILITY.md#fusebox_smart_low");
	ck_assert(strlen(itd_str(cJSON_GetObjectItem(a, "annotations"), "summary")) > 0);
	ck_assert(strlen(itd_str(cJSON_GetObjectItem(a, "annotations"), "description")) > 0);
	cJSON_Delete(a);

	/* The fleet rule pages for the same alertname, route and kind: the
	 * host's page is inhibited. */
	snprintf(body, sizeof body,
		 "[{\"labels\":{\"alertname\":\"fusebox_smart_low\",\"route\":\"intent\","
		 "\"kind\":\"smart_availability\",\"window\":\"5m\",\"severity\":\"page\","
		 "\"source\":\"fleet\"},\"annotations\":{\"summary\":\"fleet\"}}]");
	snprintf(url, sizeof url, "%s/api/v2/alerts", AM.url);
	ck_assert_int_eq(http_do("POST", url, body, NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	http_resp_free(&r);
	a = am_wait_alert(&AM, "fusebox_smart_low", "daemon", "suppressed", 10000);
	ck_assert_msg(a != NULL, "the fleet page did not inhibit the host's page");
	ck_assert_int_ge(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "status"),
								"inhibitedBy")),
			 1);
	cJSON_Delete(a);
	a = am_wait_alert(&AM, "fusebox_smart_low", "fleet", "active", 1000);
	ck_assert_ptr_nonnull(a);
	cJSON_Delete(a);
}
END_TEST

START_TEST(canary_rollback_pages_and_restoring_the_weight_resolves_it)
{
	char cfg[4096], script[4096];
	cJSON *a;
	size_t n = 0;
	int i, w = -1, am = have_am();
	int64_t wait_end;

	if (am)
		am_start(&AM);
	snprintf(cfg, sizeof cfg,
		 HEAD "%s%s%s"
		      "\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
		      "completions\",\"model\":\"m\",\"max_concurrent\":500,"
		      "\"breaker\":{\"failure_threshold\":100000}},"
		      "{\"name\":\"canary\",\"url\":\"@MOCK@/b/canary/v1/chat/completions\","
		      "\"model\":\"m\",\"max_concurrent\":500,"
		      "\"breaker\":{\"failure_threshold\":100000}}],"
		      "\"routes\":[{\"name\":\"intent\",\"health_weighting\":false,"
		      "\"retry\":{\"max_retries\":0}," RULES ","
		      "\"canary_guard\":{\"min_calls\":20,\"max_failure_delta\":0.05,"
		      "\"window_s\":60},"
		      "\"targets\":[{\"backend\":\"primary\",\"weight\":50},"
		      "{\"backend\":\"canary\",\"weight\":50,\"canary\":true}]}]}",
		 am ? "\"alert_webhook\":{\"alertmanager\":\"" : "", am ? AM.url : "",
		 am ? "\"}," : "");
	ck_assert_int_eq(itd_start(&T, cfg), 0);
	/* Counters and the weight gauges exist before any traffic. */
	ck_assert(metrics_has("fusebox_route_target_weight{route=\"intent\",backend=\"canary\","
			      "canary=\"true\"} 50\n"));
	ck_assert(wait_metrics_has(
		"fusebox_alert_firing{rule=\"canary_guard:canary\",route=\"intent\"} 0\n", 3000));
	/* The canary fails 30 % of its requests, the primary none. */
	n += (size_t)snprintf(script + n, sizeof script - n, "{\"script\":[");
	for (i = 0; i < 100; i++)
		n += (size_t)snprintf(script + n, sizeof script - n, "%s%s", i ? "," : "",
				      i % 10 < 3 ? "{\"status\":500}" : "{}");
	snprintf(script + n, sizeof script - n, "]}");
	ck_assert_int_eq(mock_set(&T.mock, "canary", script), 0);
	for (i = 0; i < 120; i++)
		call_ok("{\"input\":\"refund\"}", NULL);
	/* the guard looks once a second: up to 3 s (it was 30 looks 100 ms apart) */
	wait_end = harness_now_ms() + 3000;
	while ((w = weight_of("canary")) != 0 && harness_now_ms() < wait_end)
		usleep(20000);
	ck_assert_int_eq(w, 0);
	/* The page goes through the one lifecycle: /metrics, rows, Alertmanager. */
	ck_assert(wait_metrics_has(
		"fusebox_alert_firing{rule=\"canary_guard:canary\",route=\"intent\"} 1\n", 3000));
	ck_assert(metrics_has("fusebox_route_target_weight{route=\"intent\",backend=\"canary\","
			      "canary=\"true\"} 0\n"));
	if (am) {
		a = am_wait_alert(&AM, "fusebox_canary_rollback", "daemon", "active", 10000);
		ck_assert_msg(a != NULL, "Alertmanager never showed fusebox_canary_rollback");
		ck_assert_str_eq(label(a, "backend"), "canary");
		ck_assert_str_eq(label(a, "kind"), "canary");
		ck_assert_str_eq(label(a, "severity"), "page");
		cJSON_Delete(a);
	}

	/* The operator restores the weight (the canary is fixed): the alert
	 * resolves, and the failures from before the restore do not overrule
	 * the operator (the change restarted the guard's window). */
	ck_assert_int_eq(mock_set(&T.mock, "canary", "{}"), 0);
	put("/v1/routes/intent/weights", "{\"weights\":{\"primary\":50,\"canary\":50}}");
	ck_assert(wait_metrics_has(
		"fusebox_alert_firing{rule=\"canary_guard:canary\",route=\"intent\"} 0\n", 3000));
	n = (size_t)mock_requests(&T.mock, "canary");
	for (i = 0; i < 80; i++)
		call_ok("{\"input\":\"refund\"}", "llm");
	/* min_calls (20) on each side since the restore */
	ck_assert_int_ge(mock_requests(&T.mock, "canary"), (int)n + 20);
	usleep(2500000); /* a few guard ticks */
	ck_assert_int_eq(weight_of("canary"), 50);
	ASSERT_COUNT("audit WHERE actor='canary_guard' AND action='weights.set'", 1);
	ASSERT_COUNT("alerts WHERE rule='canary_guard:canary' AND state='firing'", 1);
	ASSERT_COUNT("alerts WHERE rule='canary_guard:canary' AND state='resolved'", 1);
	/* at least one: waits for the first, up to 5 s */
	ck_assert_int_ge(itd_count_wait(&T,
					"events WHERE kind='alert' AND detail LIKE "
					"'canary_guard:canary intent: resolved%'",
					1, 5000),
			 1);
}
END_TEST

START_TEST(allow_llm_false_is_not_a_smart_failure)
{
	cJSON *slo, *w;
	struct http_resp r;
	int i;

	ck_assert_int_eq(
		itd_start(
			&T, HEAD
			"\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
			"completions\",\"model\":\"m\"}],"
			"\"routes\":[{\"name\":\"intent\",\"targets\":[{\"backend\":\"primary\"}],"
			"\"retry\":{\"max_retries\":0}," RULES ","
			"\"slo\":{\"service_availability\":0.99,\"smart_availability\":0.95,"
			"\"latency_ms\":5000,\"latency_target\":0.9,\"burn_rate_alerts\":true,"
			"\"burn_rate_min_calls\":10}}]}"),
		0);
	/* 20 model answers and 10 calls whose caller did not ask for a model. */
	for (i = 0; i < 20; i++)
		call_ok("{\"input\":\"refund\"}", "llm");
	for (i = 0; i < 10; i++)
		call_ok("{\"input\":\"refund\",\"allow_llm\":false}", "rules");
	ck_assert_int_eq(itd_req(&T, "GET", "/v1/slo?route=intent", NULL, "view-token", 5000, &r),
			 0);
	slo = itd_json(&r);
	http_resp_free(&r);
	w = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(slo, "routes"), 0),
				    "windows"),
		"5m");
	ck_assert_int_eq((int)itd_num(w, "total"), 30);
	ck_assert_int_eq((int)itd_num(w, "smart_total"), 20);
	ck_assert_int_eq((int)itd_num(w, "smart_good"), 20);
	ck_assert_double_eq_tol(itd_num(w, "smart_availability"), 1.0, 1e-9);
	ck_assert_double_eq_tol(itd_num(w, "service_availability"), 1.0, 1e-9);
	cJSON_Delete(slo);
	usleep(2500000); /* a few alert ticks: no burn pair may fire */
	ck_assert(metrics_has("fusebox_alert_firing{rule=\"smart-burn-3d\",route=\"intent\"} 0\n"));
	ck_assert(metrics_has("fusebox_alert_firing{rule=\"smart-burn-1d\",route=\"intent\"} 0\n"));
	ck_assert(metrics_has("fusebox_slo_eligible_calls_total{route=\"intent\",kind=\"smart\"} "
			      "20\n"));
	ck_assert(metrics_has("fusebox_slo_eligible_calls_total{route=\"intent\",kind=\"service\"} "
			      "30\n"));
	ck_assert(metrics_has("fusebox_slo_availability{route=\"intent\",kind=\"smart\",window="
			      "\"5m\"} 1\n"));
	/* The skipped rungs count in fusebox_degradations_total like in the DB. */
	ck_assert(metrics_has("fusebox_degradations_total{route=\"intent\",reason=\"llm_"
			      "disallowed\"} 10\n"));
	/* An operator's forced level is a smart failure and a degradation. */
	put("/v1/routes/intent/level", "{\"level\":2,\"reason\":\"drill\"}");
	for (i = 0; i < 5; i++)
		call_ok("{\"input\":\"refund\"}", "rules");
	ck_assert(metrics_has("fusebox_degradations_total{route=\"intent\",reason=\"forced_"
			      "level\"} 5\n"));
	ck_assert(metrics_has("fusebox_slo_eligible_calls_total{route=\"intent\",kind=\"smart\"} "
			      "25\n"));
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "degradations WHERE reason='forced_level'"), 5);
	ck_assert_int_eq(itd_count(&T, "degradations WHERE reason='llm_disallowed'"), 10);
	ck_assert_int_eq(db_scalar_int(T.db, "SELECT sum(no_llm) FROM slo_minutes"), 10);
}
END_TEST

START_TEST(level_event_is_readable_once_the_level_shows)
{
	struct http_resp r;
	int64_t end;
	int i, seen = 0, released = 0;

	ck_assert_int_eq(
		itd_start(
			&T, HEAD
			"\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
			"completions\",\"model\":\"m\"}],"
			"\"routes\":[{\"name\":\"intent\",\"targets\":[{\"backend\":\"primary\"}],"
			"\"retry\":{\"max_retries\":0}," RULES "}]}"),
		0);
	/* Three rounds: a forced level with a TTL ends on the engine's tick;
	 * the moment the state shows it released, the event saying why must
	 * be in GET /v1/events. */
	for (i = 0; i < 3; i++) {
		put("/v1/routes/intent/level", "{\"level\":2,\"reason\":\"drill\",\"ttl_s\":1}");
		end = harness_now_ms() + 5000;
		released = 0;
		while (!released && harness_now_ms() < end) {
			cJSON *st;

			ck_assert_int_eq(
				itd_req(&T, "GET", "/v1/state", NULL, "view-token", 5000, &r), 0);
			st = itd_json(&r);
			http_resp_free(&r);
			released = cJSON_IsNull(cJSON_GetObjectItem(
				cJSON_GetArrayItem(cJSON_GetObjectItem(st, "routes"), 0),
				"forced_level"));
			cJSON_Delete(st);
			if (!released)
				usleep(2000);
		}
		ck_assert(released);
		ck_assert_int_eq(itd_req(&T, "GET", "/v1/events?after=0&limit=1000", NULL,
					 "view-token", 5000, &r),
				 0);
		ck_assert_int_eq(r.status, 200);
		seen = 0;
		{
			cJSON *o = itd_json(&r), *it;

			cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "events"))
			{
				if (strcmp(itd_str(it, "kind"), "level") == 0 &&
				    strstr(itd_str(it, "detail"), "expired (ttl)") != NULL)
					seen++;
			}
			cJSON_Delete(o);
		}
		http_resp_free(&r);
		ck_assert_msg(seen == i + 1, "round %d: %d ttl events visible", i, seen);
	}
}
END_TEST

static Suite *
alerting_suite(void)
{
	Suite *s = suite_create("alerting_it");

	ITD_ADD_TEST(s, shipped_alertmanager_config_checks_and_routes, NULL, NULL, 30);
	ITD_ADD_TEST(s, daemon_alert_reaches_alertmanager_and_fleet_page_inhibits_it, NULL,
		     teardown, 60);
	ITD_ADD_TEST(s, canary_rollback_pages_and_restoring_the_weight_resolves_it, NULL, teardown,
		     90);
	ITD_ADD_TEST(s, allow_llm_false_is_not_a_smart_failure, NULL, teardown, 60);
	ITD_ADD_TEST(s, level_event_is_readable_once_the_level_shows, NULL, teardown, 60);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(alerting_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
