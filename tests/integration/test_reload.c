/*
 * Integration: live reload (POST /v1/reload and SIGHUP). Backends and
 * routes are matched by name and keep their breakers; a bad file is
 * refused and the running configuration stays; calls in flight finish on
 * the configuration they started with, even when the reload removed their
 * backend.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itd.h"

static struct itd T;

#define OP "op-token"

static const char *v1 =
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
	"\"backends\":[{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/"
	"completions\",\"model\":\"m\","
	"\"breaker\":{\"failure_threshold\":2,\"open_ms\":60000}}],"
	"\"routes\":[{\"name\":\"intent\",\"budget_ms\":3000,\"targets\":[{\"backend\":\"primary\"}"
	"],"
	"\"retry\":{\"max_retries\":0},"
	"\"rules\":{\"match\":[],\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}"
	"}}]}";

/* v2: a second backend and route; intent now on both backends. */
static const char *v2 =
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
	"\"backends\":[{\"name\":\"secondary\",\"url\":\"@MOCK@/b/secondary/v1/chat/"
	"completions\",\"model\":\"m2\"},"
	"{\"name\":\"primary\",\"url\":\"@MOCK@/b/primary/v1/chat/completions\",\"model\":\"m\","
	"\"breaker\":{\"failure_threshold\":2,\"open_ms\":60000}}],"
	"\"routes\":[{\"name\":\"ticket\",\"targets\":[{\"backend\":\"secondary\"}]},"
	"{\"name\":\"intent\",\"budget_ms\":3000,\"targets\":[{\"backend\":\"primary\",\"weight\":"
	"1},"
	"{\"backend\":\"secondary\",\"weight\":1}],\"retry\":{\"max_retries\":0},"
	"\"rules\":{\"match\":[],\"default\":{\"result\":{\"intent\":\"other\"},\"confidence\":0.3}"
	"}}]}";

/* v3: primary removed entirely. */
static const char *v3 =
	"{\"listen\":\"127.0.0.1:0\",\"database\":\"@DB@\",\"tokens_file\":\"tokens\","
	"\"backends\":[{\"name\":\"secondary\",\"url\":\"@MOCK@/b/secondary/v1/chat/"
	"completions\",\"model\":\"m2\"}],"
	"\"routes\":[{\"name\":\"intent\",\"budget_ms\":3000,\"targets\":[{\"backend\":"
	"\"secondary\"}],"
	"\"retry\":{\"max_retries\":0}}]}";

static void
teardown(void)
{
	itd_stop(&T);
}

/* Write config text (with @MOCK@ / @DB@) over the daemon's config file. */
static void
write_config(const char *text)
{
	ck_assert_int_eq(itd_write_config(&T, text), 0);
}

static cJSON *
backend_state(const char *name)
{
	cJSON *st = itd_expect(&T, "GET", "/v1/state", NULL, OP, 200), *b, *out = NULL;

	cJSON_ArrayForEach(
		b, cJSON_GetObjectItem(st, "backends")) if (strcmp(itd_str(b, "name"), name) == 0)
		out = cJSON_Duplicate(b, 1);
	cJSON_Delete(st);
	return out;
}

START_TEST(reload_applies_changes_and_keeps_breakers)
{
	cJSON *o, *b;
	int i;

	ck_assert_int_eq(itd_start(&T, v1), 0);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"status\":500}"), 0);
	for (i = 0; i < 2; i++)
		cJSON_Delete(itd_expect(&T, "POST", "/v1/routes/intent/call", "{\"input\":\"x\"}",
					NULL, 200));
	b = backend_state("primary");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(b, "breaker"), "state"), "open");
	cJSON_Delete(b);
	cJSON_Delete(
		itd_expect(&T, "POST", "/v1/routes/ticket/call", "{\"input\":\"x\"}", NULL, 404));

	write_config(v2);
	o = itd_expect(&T, "POST", "/v1/reload", NULL, OP, 200);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "reloaded")));
	ck_assert_int_eq((int)itd_num(o, "routes"), 2);
	ck_assert_int_eq((int)itd_num(o, "backends"), 2);
	cJSON_Delete(o);
	/* the breaker of the backend that stayed is still open */
	b = backend_state("primary");
	ck_assert_str_eq(itd_str(cJSON_GetObjectItem(b, "breaker"), "state"), "open");
	cJSON_Delete(b);
	/* the new route works; intent now reaches secondary while primary is open */
	o = itd_expect(&T, "POST", "/v1/routes/ticket/call", "{\"input\":\"x\"}", NULL, 200);
	ck_assert_str_eq(itd_str(o, "backend"), "secondary");
	cJSON_Delete(o);
	o = itd_expect(&T, "POST", "/v1/routes/intent/call", "{\"input\":\"x\"}", NULL, 200);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	ck_assert_str_eq(itd_str(o, "backend"), "secondary");
	cJSON_Delete(o);
	ck_assert_int_eq(mock_requests(&T.mock, "primary"), 2);
	/* audited before the answer; a reload event */
	ck_assert_int_eq(itd_count(&T, "audit WHERE action='config.reload' AND actor='alice'"), 1);
	itd_settle();
	ck_assert_int_eq(itd_count(&T, "events WHERE kind='reload'"), 1);
}
END_TEST

START_TEST(bad_reload_keeps_the_running_config)
{
	cJSON *o;
	struct http_resp r;

	ck_assert_int_eq(itd_start(&T, v1), 0);
	write_config("{\"listen\":\"127.0.0.1:0\",\"backends\":[],\"routes\":[{\"name\":\"intent\","
		     "\"budget_ms\":-5,\"targets\":[]}]}");
	ck_assert_int_eq(itd_req(&T, "POST", "/v1/reload", NULL, OP, 5000, &r), 0);
	ck_assert_int_eq(r.status, 400);
	ck_assert_ptr_nonnull(strstr(r.body, "routes[0].budget_ms"));
	ck_assert_ptr_nonnull(strstr(r.body, "invalid_config"));
	http_resp_free(&r);
	o = itd_expect(&T, "POST", "/v1/routes/intent/call", "{\"input\":\"x\"}", NULL, 200);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	cJSON_Delete(o);
	/* viewers may not reload */
	cJSON_Delete(itd_expect(&T, "POST", "/v1/reload", NULL, "view-token", 403));
	ck_assert_int_eq(itd_count(&T, "audit WHERE action='config.reload'"), 0);
}
END_TEST

START_TEST(sighup_reloads)
{
	cJSON *o;
	int i;

	ck_assert_int_eq(itd_start(&T, v1), 0);
	write_config(v2);
	ck_assert_int_eq(kill(T.d.pid, SIGHUP), 0);
	for (i = 0; i < 50; i++) {
		struct http_resp r;

		ck_assert_int_eq(itd_call(&T, "ticket", "{\"input\":\"x\"}", 2000, &r), 0);
		if (r.status == 200) {
			http_resp_free(&r);
			break;
		}
		http_resp_free(&r);
		usleep(50 * 1000);
	}
	ck_assert_int_lt(i, 50);
	o = itd_expect(&T, "POST", "/v1/routes/ticket/call", "{\"input\":\"x\"}", NULL, 200);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	cJSON_Delete(o);
}
END_TEST

START_TEST(inflight_call_finishes_on_its_config)
{
	struct itd_bg b;
	cJSON *o;

	ck_assert_int_eq(itd_start(&T, v1), 0);
	ck_assert_int_eq(mock_set(&T.mock, "primary", "{\"delay_ms\":800}"), 0);
	ck_assert_int_eq(itd_bg_start(&b, &T, "intent", "{\"input\":\"x\"}"), 0);
	usleep(200 * 1000);
	/* the backend the call is waiting on disappears from the config */
	write_config(v3);
	cJSON_Delete(itd_expect(&T, "POST", "/v1/reload", NULL, OP, 200));
	o = itd_expect(&T, "POST", "/v1/routes/intent/call", "{\"input\":\"x\"}", NULL, 200);
	ck_assert_str_eq(itd_str(o, "backend"), "secondary");
	cJSON_Delete(o);
	ck_assert_int_eq(itd_bg_join(&b), 0);
	ck_assert_int_eq(b.r.status, 200);
	o = itd_json(&b.r);
	ck_assert_str_eq(itd_str(o, "source"), "llm");
	ck_assert_str_eq(itd_str(o, "backend"), "primary");
	ck_assert_msg(itd_num(o, "elapsed_ms") >= 790, "elapsed %.0f", itd_num(o, "elapsed_ms"));
	cJSON_Delete(o);
	http_resp_free(&b.r);
	/* the removed backend is gone from the state */
	ck_assert_ptr_null(backend_state("primary"));
}
END_TEST

static Suite *
reload_suite(void)
{
	Suite *s = suite_create("reload");

#define ADD(t) ITD_ADD_TEST(s, t, NULL, teardown, 60)
	ADD(reload_applies_changes_and_keeps_breakers);
	ADD(bad_reload_keeps_the_running_config);
	ADD(sighup_reloads);
	ADD(inflight_call_finishes_on_its_config);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(reload_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
