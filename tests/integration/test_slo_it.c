/*
 * Integration: SLOs, alerts, events and /metrics through the real daemon
 * (issue "SLOs keep service and smart availability apart"). A scripted mix
 * of 7 model answers and 3 rules answers must read service 1.0 / smart 0.7
 * in /v1/slo, show in /metrics, survive a restart (SIGTERM, start again on
 * the same DB), and fire a threshold alert that a tiny Alertmanager stand-in
 * on 127.0.0.1 receives as POST /api/v2/alerts. promtool checks run when
 * promtool is installed (Debian package "prometheus"), else they are skipped.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "itd.h"

#define SCHEMA                                                                                     \
	"\"output\":{\"schema\":{\"type\":\"object\",\"required\":[\"intent\",\"confidence\"],"    \
	"\"properties\":{\"intent\":{\"type\":\"string\",\"enum\":[\"refund\",\"complaint\","      \
	"\"consult\",\"other\"]},\"confidence\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1}" \
	"}},"                                                                                      \
	"\"review_below\":0.0}"
#define RULES                                                                                      \
	"\"rules\":{\"match\":[{\"any\":[\"refund\"],\"result\":{\"intent\":\"refund\"},"          \
	"\"confidence\":0.6}],\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}}"
/*
 * Smart target 0.92: 14.4 x 0.08 > 1, so the 1h page pair can never fire;
 * with 7/10 smart the burn is 0.3 / 0.08 = 3.75x: the 1d (3x) and 3d (1x)
 * ticket pairs fire, 6h (6x) does not.
 */
#define SLO                                                                                        \
	"\"slo\":{\"service_availability\":0.999,\"smart_availability\":0.92,\"latency_ms\":2000," \
	"\"latency_target\":0.99,\"burn_rate_alerts\":true,\"burn_rate_min_calls\":5,"             \
	"\"alerts\":[{\"name\":\"smart-low\",\"metric\":\"smart_availability\",\"op\":\"<\","      \
	"\"value\":0.9,\"for_s\":1,\"window\":\"5m\",\"severity\":\"page\",\"min_calls\":5}]}"

/* ---- a tiny Alertmanager: records "PATH BODY\n" of every POST ---- */

struct am {
	int fd;
	int port;
	pthread_t thread;
	volatile int stop;
	pthread_mutex_t mu;
	char *log; /* every request, "METHOD PATH BODY\n" */
	size_t len;
	int posts;
};

static struct am AM;

static void
am_record(struct am *a, const char *line, size_t n)
{
	pthread_mutex_lock(&a->mu);
	a->log = realloc(a->log, a->len + n + 2);
	if (a->log == NULL)
		abort();
	memcpy(a->log + a->len, line, n);
	a->len += n;
	a->log[a->len++] = '\n';
	a->log[a->len] = '\0';
	a->posts++;
	pthread_mutex_unlock(&a->mu);
}

static void
am_serve(struct am *a, int c)
{
	char buf[65536], *hdr_end, *cl, line[256];
	size_t got = 0, need;
	ssize_t n;
	long clen = 0;
	static const char ok[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

	for (;;) {
		n = read(c, buf + got, sizeof buf - 1 - got);
		if (n <= 0)
			return;
		got += (size_t)n;
		buf[got] = '\0';
		hdr_end = strstr(buf, "\r\n\r\n");
		if (hdr_end != NULL)
			break;
		if (got == sizeof buf - 1)
			return;
	}
	cl = strcasestr(buf, "Content-Length:");
	if (cl != NULL && cl < hdr_end)
		clen = strtol(cl + 15, NULL, 10);
	need = (size_t)(hdr_end + 4 - buf) + (size_t)clen;
	while (got < need && got < sizeof buf - 1) {
		n = read(c, buf + got, sizeof buf - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	/* "POST /api/v2/alerts HTTP/1.1" -> "POST /api/v2/alerts" + body */
	{
		char *sp = strchr(buf, ' '), *sp2 = sp ? strchr(sp + 1, ' ') : NULL;
		size_t m = sp2 ? (size_t)(sp2 - buf) : 0;
		char *rec;

		m = m < sizeof line - 1 ? m : sizeof line - 1;
		memcpy(line, buf, m);
		line[m] = '\0';
		if (asprintf(&rec, "%s %s", line, hdr_end + 4) < 0)
			abort();
		am_record(a, rec, strlen(rec));
		free(rec);
	}
	n = write(c, ok, sizeof ok - 1);
	(void)n;
}

static void *
am_main(void *arg)
{
	struct am *a = arg;

	while (!a->stop) {
		struct pollfd p = {a->fd, POLLIN, 0};
		int c;

		if (poll(&p, 1, 100) <= 0)
			continue;
		c = accept(a->fd, NULL, NULL);
		if (c < 0)
			continue;
		am_serve(a, c);
		close(c);
	}
	return NULL;
}

static void
am_start(struct am *a)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof sa;

	memset(a, 0, sizeof *a);
	pthread_mutex_init(&a->mu, NULL);
	a->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(a->fd, 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(a->fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(listen(a->fd, 16), 0);
	ck_assert_int_eq(getsockname(a->fd, (struct sockaddr *)&sa, &sl), 0);
	a->port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&a->thread, NULL, am_main, a), 0);
}

static void
am_stop(struct am *a)
{
	a->stop = 1;
	pthread_join(a->thread, NULL);
	close(a->fd);
	free(a->log);
	a->log = NULL;
	pthread_mutex_destroy(&a->mu);
}

/* Wait until the recorded log contains both needles (needle2 may be NULL). */
static int
am_wait(struct am *a, const char *needle, const char *needle2, int timeout_ms)
{
	int64_t end = harness_now_ms() + timeout_ms;
	int found = 0;

	while (!found && harness_now_ms() < end) {
		char *line, *save;

		pthread_mutex_lock(&a->mu);
		save = a->log ? strdup(a->log) : NULL;
		pthread_mutex_unlock(&a->mu);
		for (line = save; line && *line;) {
			char *nl = strchr(line, '\n');

			if (nl)
				*nl = '\0';
			if (strstr(line, needle) && (needle2 == NULL || strstr(line, needle2)))
				found = 1;
			line = nl ? nl + 1 : line + strlen(line);
		}
		free(save);
		if (!found)
			usleep(50000);
	}
	return found;
}

/* ---- the daemon ---- */

static struct itd T;

/*
 * Rows are committed in the background (batched every <= 50 ms): wait for
 * count(*) FROM sql_tail to be want (up to 5 s, where itd_settle slept
 * 150 ms) and assert it.
 */
#define ASSERT_COUNT(sql_tail, want)                                                               \
	ck_assert_int_eq(itd_count_wait(&T, (sql_tail), (want), 5000), (want))

/* Start the daemon with alert_webhook set to the JSON fragment fmt (one %d: the AM port). */
static void
start_with(const char *webhook_fmt)
{
	char *cfg = NULL, *hook = NULL;
	int r;

	am_start(&AM);
	if (asprintf(&hook, webhook_fmt, AM.port) < 0)
		abort();
	if (asprintf(&cfg,
		     "{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
		     "\"alert_webhook\":%s,"
		     "\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
		     "completions\","
		     "\"model\":\"m\",\"breaker\":{\"mode\":\"consecutive\",\"failure_threshold\":"
		     "100}}],"
		     "\"routes\":[{\"name\":\"intent\",\"budget_ms\":3000,"
		     "\"targets\":[{\"backend\":\"primary\",\"weight\":1}],"
		     "\"retry\":{\"max_retries\":0}," SCHEMA "," RULES "," SLO "},"
		     "{\"name\":\"other\",\"targets\":[{\"backend\":\"primary\",\"weight\":1}]"
		     "," RULES "}]}",
		     hook) < 0)
		abort();
	r = itd_start(&T, cfg);
	free(cfg);
	free(hook);
	ck_assert_int_eq(r, 0);
}

static void
setup(void)
{
	start_with("{\"alertmanager\":\"http://127.0.0.1:%d\"}");
}

static void
setup_webhook(void)
{
	start_with("\"http://127.0.0.1:%d/hook\"");
}

static void
teardown(void)
{
	itd_stop(&T);
	am_stop(&AM);
}

static cJSON *
get_json(const char *path, long want_status)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_req(&T, "GET", path, NULL, "view-token", 10000, &r), 0);
	ck_assert_msg(r.status == want_status, "GET %s: status %ld, want %ld: %s", path, r.status,
		      want_status, r.body);
	o = itd_json(&r);
	http_resp_free(&r);
	ck_assert_ptr_nonnull(o);
	return o;
}

static char *
get_metrics(void)
{
	struct http_resp r;
	char *body, *ct;

	ck_assert_int_eq(itd_req(&T, "GET", "/metrics", NULL, "view-token", 10000, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ct = http_resp_header(&r, "Content-Type");
	ck_assert_ptr_nonnull(ct);
	ck_assert_ptr_nonnull(strstr(ct, "text/plain"));
	free(ct);
	body = strdup(r.body);
	http_resp_free(&r);
	return body;
}

static const cJSON *
path_get(const cJSON *o, const char *a, const char *b, const char *c)
{
	o = cJSON_GetObjectItemCaseSensitive(o, a);
	if (b)
		o = cJSON_GetObjectItemCaseSensitive(o, b);
	if (c)
		o = cJSON_GetObjectItemCaseSensitive(o, c);
	return o;
}

/* The route object of a /v1/slo body. */
static const cJSON *
slo_route(const cJSON *slo, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(
				       slo, "routes")) if (strcmp(itd_str(it, "route"), name) ==
							   0) return it;
	return NULL;
}

static void
call_expect(const char *source)
{
	struct http_resp r;
	cJSON *o;

	ck_assert_int_eq(itd_call(&T, "intent", "{\"input\":\"I want a refund\"}", 10000, &r), 0);
	ck_assert_msg(r.status == 200, "status %ld: %s", r.status, r.body);
	o = itd_json(&r);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(itd_str(o, "source"), source);
	cJSON_Delete(o);
	http_resp_free(&r);
}

/* 7 model answers then 3 rules answers (upstream 500, no retry). */
static void
run_mix(void)
{
	struct http_resp r;
	int i;

	ck_assert_int_eq(
		mock_set(&T.mock, "primary", "{\"status\":500,\"script\":[{},{},{},{},{},{},{}]}"),
		0);
	for (i = 0; i < 7; i++)
		call_expect("llm");
	for (i = 0; i < 3; i++)
		call_expect("rules");
	/* A caller error is not an SLO call. */
	ck_assert_int_eq(itd_call(&T, "intent", "{\"input\":5}", 10000, &r), 0);
	ck_assert_int_eq(r.status, 400);
	http_resp_free(&r);
}

static void
assert_mix_window(const cJSON *w, const char *name)
{
	ck_assert_msg(cJSON_IsObject(w), "window %s missing", name);
	ck_assert_int_eq((int)itd_num(w, "total"), 10);
	ck_assert_int_eq((int)itd_num(w, "service_good"), 10);
	ck_assert_int_eq((int)itd_num(w, "smart_good"), 7);
	ck_assert_double_eq_tol(itd_num(w, "service_availability"), 1.0, 1e-9);
	ck_assert_double_eq_tol(itd_num(w, "smart_availability"), 0.7, 1e-9);
	ck_assert_double_eq_tol(itd_num(w, "latency_ok"), 1.0, 1e-9);
	ck_assert_double_eq_tol(itd_num(w, "retry_rate"), 0.0, 1e-9);
	ck_assert_double_eq_tol(itd_num(w, "timeout_rate"), 0.0, 1e-9);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(w, "by_source"), "llm"), 7);
	ck_assert_int_eq((int)itd_num(cJSON_GetObjectItem(w, "by_source"), "rules"), 3);
}

static void
assert_mix_slo(void)
{
	cJSON *slo = get_json("/v1/slo?route=intent", 200);
	const cJSON *rt = slo_route(slo, "intent"), *eb, *it;
	const char *wins[] = {"5m", "30m", "1h", "6h", "1d", "3d", "30d"};
	int i, seen = 0;

	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(slo, "routes")), 1);
	ck_assert_ptr_nonnull(rt);
	ck_assert_double_eq_tol(
		itd_num(cJSON_GetObjectItem(rt, "objectives"), "smart_availability"), 0.92, 1e-9);
	for (i = 0; i < 7; i++)
		assert_mix_window(path_get(rt, "windows", wins[i], NULL), wins[i]);
	eb = cJSON_GetObjectItem(rt, "error_budget");
	/* service: no errors; smart: 1 - 3 / (10 x 0.08) = -2.75, burn 0.3 / 0.08 = 3.75 */
	ck_assert_double_eq_tol(itd_num(cJSON_GetObjectItem(eb, "service"), "remaining"), 1.0,
				1e-9);
	ck_assert_double_eq_tol(itd_num(cJSON_GetObjectItem(eb, "service"), "burn_rate_1h"), 0.0,
				1e-9);
	ck_assert_double_eq_tol(itd_num(cJSON_GetObjectItem(eb, "smart"), "remaining"), -2.75,
				1e-9);
	ck_assert_double_eq_tol(itd_num(cJSON_GetObjectItem(eb, "smart"), "burn_rate_1h"), 3.75,
				1e-9);
	/* The pair the target makes unreachable is marked. */
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(rt, "burn_rate_alerts"))
	{
		const char *rule = itd_str(it, "rule");
		int can = cJSON_IsTrue(cJSON_GetObjectItem(it, "can_fire"));

		if (strcmp(rule, "smart-burn-1h") == 0) {
			ck_assert_int_eq(can, 0);
			seen++;
		} else if (strcmp(rule, "service-burn-1h") == 0 ||
			   strcmp(rule, "smart-burn-6h") == 0) {
			ck_assert_int_eq(can, 1);
			seen++;
		}
	}
	ck_assert_int_eq(seen, 3);
	cJSON_Delete(slo);
}

/* The alert episode of rule in /v1/alerts (NULL when absent); caller deletes *root. */
static const cJSON *
find_alert(cJSON **root, const char *rule)
{
	const cJSON *it;

	*root = get_json("/v1/alerts", 200);
	cJSON_ArrayForEach(it,
			   cJSON_GetObjectItem(*root, "alerts")) if (strcmp(itd_str(it, "rule"),
									    rule) == 0) return it;
	return NULL;
}

static int
wait_alert_state(const char *rule, const char *state, int timeout_ms)
{
	int64_t end = harness_now_ms() + timeout_ms;

	while (harness_now_ms() < end) {
		cJSON *root;
		const cJSON *a = find_alert(&root, rule);
		int ok = a != NULL && strcmp(itd_str(a, "state"), state) == 0;

		cJSON_Delete(root);
		if (ok)
			return 1;
		usleep(20000);
	}
	return 0;
}

static void
assert_has(const char *text, const char *needle)
{
	ck_assert_msg(strstr(text, needle) != NULL, "missing in /metrics: %s", needle);
}

static int
have_promtool(void)
{
	return system("command -v promtool >/dev/null 2>&1") == 0;
}

/* Pipe text into "promtool check metrics"; its exit status. */
static int
promtool_check_metrics(const char *text)
{
	FILE *p = popen("promtool check metrics >&2", "w");
	int st;

	ck_assert_ptr_nonnull(p);
	fputs(text, p);
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Rewrite the daemon's config file (replace what with with) and POST /v1/reload. */
static void
reload_config(const char *what, const char *with)
{
	struct http_resp r;
	FILE *f = fopen(T.cfg_path, "r");
	char buf[16384], *hit, *out = NULL;
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	hit = strstr(buf, what);
	ck_assert_ptr_nonnull(hit);
	*hit = '\0';
	if (asprintf(&out, "%s%s%s", buf, with, hit + strlen(what)) < 0)
		abort();
	f = fopen(T.cfg_path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(out, f);
	fclose(f);
	free(out);
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/reload", "{}", "op-token", 10000, &r), 0);
	ck_assert_msg(r.status == 200, "reload: %ld %s", r.status, r.body);
	http_resp_free(&r);
}

START_TEST(mix_availabilities_metrics_alert_restart)
{
	struct http_resp r;
	cJSON *root, *o;
	const cJSON *a, *it;
	char *m;
	long long pend;
	int64_t last_id = 0;
	int n;

	run_mix();
	assert_mix_slo();

	/* Unknown route, no token. */
	o = get_json("/v1/slo?route=nope", 404);
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(o, "error"), "code"), "unknown_route");
	cJSON_Delete(o);
	ck_assert_int_eq(itd_req(&T, "GET", "/v1/slo", NULL, NULL, 5000, &r), 0);
	ck_assert_int_eq(r.status, 401);
	http_resp_free(&r);
	/* All routes: "other" has no objectives and null availabilities. */
	o = get_json("/v1/slo", 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "routes")), 2);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(slo_route(o, "other"), "objectives")));
	ck_assert(cJSON_IsNull(
		path_get(slo_route(o, "other"), "windows", "5m", "smart_availability")));
	ck_assert_int_eq(
		(int)itd_num(path_get(slo_route(o, "other"), "windows", "5m", NULL), "total"), 0);
	cJSON_Delete(o);

	/* smart 0.7 < 0.9 for 1 s: pending, then firing; Alertmanager hears of it. */
	ck_assert_msg(wait_alert_state("smart-low", "firing", 8000), "smart-low never fired");
	ck_assert_msg(
		am_wait(&AM, "POST /api/v2/alerts", "\"alertname\":\"fusebox_smart_low\"", 5000),
		"Alertmanager got no smart-low alert");
	ck_assert(am_wait(&AM, "POST /api/v2/alerts", "\"severity\":\"page\"", 100));
	/* One label set for the daemon's alerts and the fleet rules. */
	ck_assert(am_wait(&AM, "\"alertname\":\"fusebox_smart_low\"",
			  "\"rule\":\"smart-low\",\"route\":\"intent\",\"kind\":\"smart_"
			  "availability\",\"window\":\"5m\",\"severity\":\"page\",\"source\":"
			  "\"daemon\"",
			  100));
	ck_assert(am_wait(&AM, "\"alertname\":\"fusebox_smart_low\"",
			  "\"runbook_url\":\"docs/OBSERVABILITY.md#fusebox_smart_low\"", 100));
	ck_assert(am_wait(&AM, "\"alertname\":\"fusebox_error_budget_burn\"",
			  "\"kind\":\"smart\",\"window\":\"1d\",\"severity\":\"ticket\","
			  "\"source\":\"daemon\",\"factor\":\"3\"",
			  3000));
	/* Burn-rate pairs fire at once: 3.75x over 1d & 2h and 3d & 6h, not 6x. */
	ck_assert(wait_alert_state("smart-burn-1d", "firing", 3000));
	ck_assert(wait_alert_state("smart-burn-3d", "firing", 3000));
	a = find_alert(&root, "smart-low");
	ck_assert_str_eq(itd_str(a, "route"), "intent");
	ck_assert_str_eq(itd_str(a, "severity"), "page");
	ck_assert_double_eq_tol(itd_num(a, "value"), 0.7, 1e-9);
	ck_assert_double_eq_tol(itd_num(a, "threshold"), 0.9, 1e-9);
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(a, "since")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(a, "resolved_at")));
	ck_assert_ptr_null(find_alert(&o, "smart-burn-6h"));
	cJSON_Delete(o);
	ck_assert_ptr_null(find_alert(&o, "service-burn-1h"));
	cJSON_Delete(o);
	cJSON_Delete(root);

	/* Rows: pending then firing for smart-low; events of kind alert. */
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "alerts WHERE rule = 'smart-low' AND state = 'pending'"), 1);
	ck_assert_int_eq(itd_count(&T, "alerts WHERE rule = 'smart-low' AND state = 'firing'"), 1);
	ck_assert_int_eq(itd_count(&T, "alerts WHERE rule = 'smart-burn-1d' AND state = 'pending'"),
			 0);
	ck_assert_int_ge(itd_count(&T, "events WHERE kind = 'alert' AND subject = 'intent'"), 4);

	/* /v1/events: ascending ids, paging with after/limit, bad args. */
	o = get_json("/v1/events?after=0&limit=1000", 200);
	n = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "events"))
	{
		int64_t id = (int64_t)itd_num(it, "id");

		ck_assert_int_gt(id, last_id);
		last_id = id;
		if (strcmp(itd_str(it, "kind"), "alert") == 0 &&
		    strstr(itd_str(it, "detail"), "smart-low: pending -> firing") != NULL) {
			ck_assert_str_eq(itd_str(it, "subject"), "intent");
			ck_assert(cJSON_IsString(cJSON_GetObjectItem(it, "at")));
			n++;
		}
	}
	ck_assert_int_eq(n, 1);
	cJSON_Delete(o);
	o = get_json("/v1/events?limit=1", 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")), 1);
	cJSON_Delete(o);
	o = get_json("/v1/events?limit=1000&after=999999999", 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "events")), 0);
	cJSON_Delete(o);
	cJSON_Delete(get_json("/v1/events?limit=abc", 400));
	cJSON_Delete(get_json("/v1/events?after=-1", 400));

	/* /metrics */
	m = get_metrics();
	assert_has(m, "# TYPE fusebox_calls_total counter\n");
	assert_has(m, "fusebox_calls_total{route=\"intent\",source=\"llm\",level=\"0\"} 7\n");
	assert_has(m, "fusebox_calls_total{route=\"intent\",source=\"rules\",level=\"0\"} 3\n");
	assert_has(m, "fusebox_attempts_total{backend=\"primary\",outcome=\"ok\"} 7\n");
	assert_has(m, "fusebox_attempts_total{backend=\"primary\",outcome=\"http_5xx\"} 3\n");
	assert_has(m, "fusebox_retries_total{route=\"intent\"} 0\n");
	assert_has(m, "fusebox_degradations_total{route=\"intent\",reason=\"http_5xx\"} 3\n");
	assert_has(m, "# TYPE fusebox_call_duration_seconds histogram\n");
	assert_has(m, "fusebox_call_duration_seconds_bucket{route=\"intent\",le=\"+Inf\"}");
	assert_has(m, "fusebox_attempt_duration_seconds_count{backend=\"primary\"} 10\n");
	assert_has(m, "fusebox_breaker_state{backend=\"primary\"} 0\n");
	assert_has(m, "fusebox_route_level{route=\"intent\"} 0\n");
	assert_has(m, "fusebox_inflight{backend=\"primary\"} 0\n");
	assert_has(m, "fusebox_review_pending{route=\"intent\",priority=\"high\"} 0\n");
	assert_has(m, "fusebox_review_overdue{route=\"intent\"} 0\n");
	assert_has(m,
		   "fusebox_slo_availability{route=\"intent\",kind=\"service\",window=\"5m\"} 1\n");
	assert_has(
		m,
		"fusebox_slo_availability{route=\"intent\",kind=\"smart\",window=\"30d\"} 0.7\n");
	assert_has(m, "fusebox_slo_calls_total{route=\"intent\"} 10\n");
	assert_has(m, "fusebox_slo_good_total{route=\"intent\",kind=\"smart\"} 7\n");
	assert_has(m, "fusebox_slo_objective{route=\"intent\",kind=\"smart\"} 0.92\n");
	assert_has(m, "fusebox_alert_firing{rule=\"smart-low\",route=\"intent\"} 1\n");
	assert_has(m, "fusebox_alert_firing{rule=\"service-burn-1h\",route=\"intent\"} 0\n");
	assert_has(m, "fusebox_alert_firing{rule=\"smart-burn-3d\",route=\"intent\"} 1\n");
	assert_has(m, "fusebox_log_rows_dropped_total 0\n");
	assert_has(m, "# TYPE fusebox_log_queue_rows gauge\n");
	assert_has(m, "# TYPE fusebox_log_writer_boosts_total counter\n");
	assert_has(m, "fusebox_retry_budget_denied_total{route=\"intent\"} 0\n");
	/* Every configured route and backend at 0 from the start. */
	assert_has(m, "fusebox_calls_total{route=\"other\",source=\"llm\",level=\"0\"} 0\n");
	assert_has(m, "fusebox_attempts_total{backend=\"primary\",outcome=\"reset\"} 0\n");
	assert_has(m, "fusebox_degradations_total{route=\"other\",reason=\"forced_level\"} 0\n");
	assert_has(m, "fusebox_degradations_total{route=\"intent\",reason=\"llm_disallowed\"} 0\n");
	assert_has(m, "fusebox_slo_eligible_calls_total{route=\"intent\",kind=\"smart\"} 10\n");
	assert_has(m, "fusebox_validation_failures_total{route=\"other\",stage=\"schema\"} 0\n");
	assert_has(m, "fusebox_config_reload_total{result=\"failure\"} 0\n");
	assert_has(m, "fusebox_slo_eligible_calls_total{route=\"other\",kind=\"service\"} 0\n");
	assert_has(m, "fusebox_tokens_total{backend=\"primary\",kind=\"input\"} ");
	assert_has(m, "# TYPE process_cpu_seconds_total counter\n");
	assert_has(m, "# TYPE process_resident_memory_bytes gauge\n");
	assert_has(m, "# TYPE process_open_fds gauge\n");
	assert_has(m, "# TYPE process_max_fds gauge\n");
	assert_has(m, "# TYPE process_start_time_seconds gauge\n");
	assert_has(m, "fusebox_build_info{version=\"");
	assert_has(m, "fusebox_route_target_weight{route=\"intent\",backend=\"primary\","
		      "canary=\"false\"} 1\n");
	ck_assert_ptr_null(strstr(m, "window=\"5m\"} NaN"));
	if (have_promtool())
		ck_assert_int_eq(promtool_check_metrics(m), 0);
	free(m);

	/* Restart: the minute counters and the firing episode survive. */
	ck_assert_int_eq(itd_kill_daemon(&T, SIGTERM), 0);
	ck_assert_int_eq(
		db_scalar_int(T.db, "SELECT sum(total) FROM slo_minutes WHERE route = 'intent'"),
		10);
	ck_assert_int_eq(
		db_scalar_int(T.db,
			      "SELECT sum(smart_good) FROM slo_minutes WHERE route = 'intent'"),
		7);
	ck_assert_int_eq(itd_restart_daemon(&T), 0);
	assert_mix_slo();
	ck_assert(wait_alert_state("smart-low", "firing", 1000));
	usleep(2500000); /* a few ticks: a resumed episode writes no new rows */
	pend = itd_count(&T, "alerts WHERE rule = 'smart-low'");
	ck_assert_int_eq(pend, 2);
	m = get_metrics();
	assert_has(m, "fusebox_alert_firing{rule=\"smart-low\",route=\"intent\"} 1\n");
	free(m);

	/* Recovery: 20 more model answers make smart 27/30 = 0.9, not < 0.9. */
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{}"), 0);
	for (n = 0; n < 20; n++)
		call_expect("llm");
	ck_assert_msg(wait_alert_state("smart-low", "resolved", 5000), "smart-low never resolved");
	a = find_alert(&root, "smart-low");
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(a, "resolved_at")));
	cJSON_Delete(root);
	ck_assert_msg(am_wait(&AM, "\"alertname\":\"fusebox_smart_low\"", "\"endsAt\"", 5000),
		      "Alertmanager got no resolution for smart-low");
	o = get_json("/v1/slo?route=intent", 200);
	ck_assert_int_eq(
		(int)itd_num(path_get(slo_route(o, "intent"), "windows", "5m", NULL), "total"), 30);
	cJSON_Delete(o);

	/* Reload without burn-rate alerts: counters stay, the firing pair resolves. */
	reload_config("\"burn_rate_alerts\":true", "\"burn_rate_alerts\":false");
	o = get_json("/v1/slo?route=intent", 200);
	it = path_get(slo_route(o, "intent"), "windows", "5m", NULL);
	ck_assert_int_eq((int)itd_num(it, "total"), 30);
	ck_assert_int_eq((int)itd_num(it, "smart_good"), 27);
	ck_assert_int_eq(
		cJSON_GetArraySize(cJSON_GetObjectItem(slo_route(o, "intent"), "burn_rate_alerts")),
		0);
	cJSON_Delete(o);
	ck_assert_msg(wait_alert_state("smart-burn-3d", "resolved", 3000),
		      "a firing rule removed by a reload must resolve");
	ASSERT_COUNT("events WHERE kind = 'alert' AND detail = 'smart-burn-3d: "
		     "firing -> resolved (rule no longer configured)'",
		     1);
	m = get_metrics();
	ck_assert_ptr_null(strstr(m, "rule=\"smart-burn-3d\""));
	assert_has(m, "fusebox_alert_firing{rule=\"smart-low\",route=\"intent\"} 0\n");
	assert_has(m, "fusebox_calls_total{route=\"intent\",source=\"llm\",level=\"0\"} 20\n");
	free(m);
}
END_TEST

START_TEST(plain_webhook_gets_firing)
{
	run_mix();
	ck_assert_msg(am_wait(&AM, "POST /hook", "\"rule\":\"smart-low\"", 8000),
		      "webhook got no smart-low");
	ck_assert(am_wait(&AM, "\"rule\":\"smart-low\"", "\"state\":\"firing\"", 100));
	ck_assert(am_wait(&AM, "\"rule\":\"smart-low\"", "\"previous\":\"pending\"", 100));
	ck_assert(am_wait(&AM, "\"rule\":\"smart-low\"", "\"value\":0.7", 100));
	ck_assert(am_wait(&AM, "\"rule\":\"smart-low\"", "\"route\":\"intent\"", 100));
	/* Pending is not posted; nothing goes to Alertmanager's path. */
	ck_assert(!am_wait(&AM, "\"state\":\"pending\"", NULL, 100));
	ck_assert(!am_wait(&AM, "/api/v2/alerts", NULL, 100));
}
END_TEST

START_TEST(promtool_rules)
{
	char *cmd = NULL;
	int st;

	if (!have_promtool()) {
		fprintf(stderr, "promtool not installed: rules checks skipped\n");
		return;
	}
	if (asprintf(&cmd,
		     "cd '%s/contrib/prometheus' && promtool check rules fusebox-rules.yml >&2 && "
		     "promtool test rules fusebox-rules-test.yml >&2",
		     harness_source_root()) < 0)
		abort();
	st = system(cmd);
	free(cmd);
	ck_assert_int_eq(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
}
END_TEST

static Suite *
slo_it_suite(void)
{
	Suite *s = suite_create("slo_it");
	TCase *tc;

	tc = tcase_create("daemon");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mix_availabilities_metrics_alert_restart);
	suite_add_tcase(s, tc);
	tc = tcase_create("webhook");
	tcase_add_checked_fixture(tc, setup_webhook, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, plain_webhook_gets_firing);
	suite_add_tcase(s, tc);
	tc = tcase_create("promtool");
	tcase_add_test(tc, promtool_rules);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(slo_it_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
