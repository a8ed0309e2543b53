/*
 * test_tui_prom: tui/prom.c without a Prometheus — answers of the HTTP API
 * parsed (vector, matrix, scalar, string; NaN and Inf values; labels sorted),
 * Prometheus's errors kept with their errorType, other servers' answers
 * named as such, and the fleet SLO report built from canned answers and
 * rendered (table and JSON) exactly; the console fleet mode's status line.
 * The real thing is tests/prometheus/run.sh.
 */
#include <check.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "fmt.h"
#include "prom.h"

static void
parse_ok(const char *body, struct prom_result *r)
{
	char *cause = NULL;
	int rc = prom_parse(body, strlen(body), 200, r, &cause);

	ck_assert_msg(rc == 0, "prom_parse: %d %s", rc, cause ? cause : "");
	free(cause);
}

START_TEST(test_vector)
{
	struct prom_result r;

	parse_ok("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
		 "{\"metric\":{\"route\":\"intent\",\"__name__\":\"x\",\"kind\":\"smart\"},"
		 "\"value\":[1764660000.5,\"0.8333\"]},"
		 "{\"metric\":{},\"value\":[1764660000,\"NaN\"]},"
		 "{\"metric\":{\"a\":\"b\"},\"value\":[1764660000,\"+Inf\"]}]}}",
		 &r);
	ck_assert_int_eq(r.type, PROM_VECTOR);
	ck_assert_int_eq(r.nseries, 3);
	ck_assert_int_eq(r.series[0].nlabels, 3);
	/* sorted by name */
	ck_assert_str_eq(r.series[0].labels[0].name, "__name__");
	ck_assert_str_eq(r.series[0].labels[1].name, "kind");
	ck_assert_str_eq(r.series[0].labels[2].name, "route");
	ck_assert_str_eq(prom_series_label(&r.series[0], "route"), "intent");
	ck_assert_ptr_null(prom_series_label(&r.series[0], "instance"));
	ck_assert_int_eq(r.series[0].npoints, 1);
	ck_assert_int_eq(r.series[0].points[0].t_ms, 1764660000500LL);
	ck_assert_double_eq_tol(r.series[0].points[0].v, 0.8333, 1e-12);
	ck_assert(isnan(r.series[1].points[0].v));
	ck_assert_int_eq(r.series[1].nlabels, 0);
	ck_assert(isinf(r.series[2].points[0].v) && r.series[2].points[0].v > 0);
	prom_result_free(&r);
	prom_result_free(&r); /* twice: a no-op */
	prom_result_free(NULL);
}
END_TEST

START_TEST(test_matrix_scalar_string)
{
	struct prom_result r;

	parse_ok(
		"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
		"{\"metric\":{\"level\":\"2\"},\"values\":[[10,\"1\"],[15,\"2\"],[20,\"-Inf\"]]}]},"
		"\"warnings\":[\"w\"]}",
		&r);
	ck_assert_int_eq(r.type, PROM_MATRIX);
	ck_assert_int_eq(r.nseries, 1);
	ck_assert_int_eq(r.series[0].npoints, 3);
	ck_assert_int_eq(r.series[0].points[1].t_ms, 15000);
	ck_assert_double_eq(r.series[0].points[1].v, 2);
	ck_assert(isinf(r.series[0].points[2].v) && r.series[0].points[2].v < 0);
	prom_result_free(&r);

	parse_ok("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}", &r);
	ck_assert_int_eq(r.nseries, 0);
	prom_result_free(&r);

	parse_ok("{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[7,\"3\"]}"
		 "}",
		 &r);
	ck_assert_int_eq(r.type, PROM_SCALAR);
	ck_assert_int_eq(r.nseries, 1);
	ck_assert_int_eq(r.series[0].nlabels, 0);
	ck_assert_double_eq(r.series[0].points[0].v, 3);
	prom_result_free(&r);

	parse_ok("{\"status\":\"success\",\"data\":{\"resultType\":\"string\",\"result\":[7,\"hi\"]"
		 "}}",
		 &r);
	ck_assert_int_eq(r.type, PROM_STRING);
	ck_assert_str_eq(r.string, "hi");
	prom_result_free(&r);
}
END_TEST

START_TEST(test_errors)
{
	static const char bad[] = "{\"status\":\"error\",\"errorType\":\"bad_data\","
				  "\"error\":\"1:32: parse error: unclosed left parenthesis\"}";
	static const char *const not_prom[] = {
		"404 page not found\n",
		"{\"error\":{\"code\":\"not_found\",\"message\":\"no such endpoint\"}}",
		"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{"
		"\"value\":1}]}}",
		"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{"
		"\"metric\":"
		"{},\"value\":[1,\"one\"]}]}}",
		"",
	};
	struct prom_result r;
	char *cause = NULL;
	size_t i;

	ck_assert_int_eq(prom_parse(bad, strlen(bad), 400, &r, &cause), PROM_E_QUERY);
	ck_assert_str_eq(cause, "bad_data: 1:32: parse error: unclosed left parenthesis");
	ck_assert_str_eq(r.error_type, "bad_data");
	free(cause);
	prom_result_free(&r);
	for (i = 0; i < sizeof not_prom / sizeof not_prom[0]; i++) {
		cause = NULL;
		ck_assert_int_eq(
			prom_parse(not_prom[i], strlen(not_prom[i]), i < 2 ? 404 : 200, &r, &cause),
			PROM_E_ANSWER);
		ck_assert_msg(strstr(cause, "not a Prometheus API answer") != NULL, "%zu: %s", i,
			      cause);
		ck_assert_int_eq(r.nseries, 0);
		free(cause);
	}
	/* nothing sent for a bad range or no URL */
	cause = NULL;
	ck_assert_int_eq(prom_query_range("http://127.0.0.1:9", "up", 20, 10, 5, 100, &r, &cause),
			 -EINVAL);
	free(cause);
	cause = NULL;
	ck_assert_int_eq(prom_query("", "up", 100, &r, &cause), PROM_E_UNREACHABLE);
	ck_assert_str_eq(cause, "no Prometheus URL");
	free(cause);
}
END_TEST

/* The two answers prom_slo_fetch() would get: route ticket on 3 hosts. */
static const char series_json[] =
	"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
#define S(name, kind, v)                                                                           \
	"{\"metric\":{\"__name__\":\"" name "\",\"route\":\"ticket\",\"kind\":\"" kind "\"},"      \
	"\"value\":[1,\"" v "\"]},"
	S("route_kind:fusebox_slo_objective:max", "service",
	  "0.999") S("route_kind:fusebox_slo_objective:max", "smart",
		     "0.99") S("route_kind:fusebox_slo_calls:increase5m", "service",
			       "24") S("route_kind:fusebox_slo_calls:increase5m", "smart",
				       "24") S("route_kind:fusebox_slo_availability:ratio_rate5m",
					       "service", "0.75")
		S("route_kind:fusebox_slo_availability:ratio_rate5m", "smart",
		  "0.4166666") S("route_kind:fusebox_slo_burn_rate:ratio_rate5m", "service",
				 "250") S("route_kind:fusebox_slo_burn_rate:ratio_rate5m", "smart",
					  "58.33") S("route_kind:fusebox_slo_calls:increase1h",
						     "service", "24.4")
			S("route_kind:fusebox_slo_availability:ratio_rate1h", "service",
			  "0.75") S("route_kind:fusebox_slo_availability:ratio_rate1h", "smart",
				    "NaN") S("route_kind:fusebox_slo_burn_rate:ratio_rate1h",
					     "service", "+Inf")
				S("route_kind:fusebox_slo_error_budget_remaining:ratio_rate30d",
				  "service", "-249") S("route_kind:fusebox_slo_error_budget_"
						       "remaining:ratio_rate30d",
						       "smart", "0.5")
					S("route_kind:fusebox_slo_availability:ratio_rate7w",
					  "smart", "0.1")			/* no such window */
	S("route_kind:fusebox_slo_availability:ratio_rate5m", "latency", "0.1") /* no such kind */
#undef S
	"{\"metric\":{\"__name__\":\"route_level:fusebox_hosts:count\",\"route\":\"ticket\","
	"\"level\":\"0\"},\"value\":[1,\"2\"]},"
	"{\"metric\":{\"__name__\":\"route_level:fusebox_hosts:count\",\"route\":\"ticket\","
	"\"level\":\"2\"},\"value\":[1,\"1\"]},"
	"{\"metric\":{\"__name__\":\"route_level:fusebox_hosts:count\",\"route\":\"alpha\","
	"\"level\":\"0\"},\"value\":[1,\"1\"]}]}}";

static const char alerts_json[] =
	"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
	"{\"metric\":{\"__name__\":\"ALERTS\",\"alertname\":\"fusebox_error_budget_burn\","
	"\"alertstate\":\"firing\",\"route\":\"ticket\",\"kind\":\"smart\",\"window\":\"1d\","
	"\"severity\":\"ticket\",\"factor\":\"3\",\"source\":\"fleet\"},\"value\":[1,\"1\"]},"
	"{\"metric\":{\"__name__\":\"ALERTS\",\"alertname\":\"fusebox_error_budget_burn\","
	"\"alertstate\":\"firing\",\"route\":\"ticket\",\"kind\":\"service\",\"window\":\"6h\","
	"\"severity\":\"page\",\"factor\":\"6\",\"source\":\"fleet\"},\"value\":[1,\"1\"]},"
	"{\"metric\":{\"__name__\":\"ALERTS\",\"alertname\":\"fusebox_error_budget_burn\","
	"\"alertstate\":\"firing\",\"route\":\"ticket\",\"kind\":\"service\",\"window\":\"1h\","
	"\"severity\":\"page\",\"factor\":\"14.4\",\"source\":\"fleet\"},\"value\":[1,\"1\"]},"
	"{\"metric\":{\"__name__\":\"ALERTS\",\"alertname\":\"fusebox_review_overdue\","
	"\"alertstate\":\"firing\",\"route\":\"ticket\",\"kind\":\"review\",\"window\":\"15m\","
	"\"severity\":\"ticket\",\"source\":\"fleet\"},\"value\":[1,\"1\"]},"
	"{\"metric\":{\"__name__\":\"ALERTS\",\"alertname\":\"fusebox_breaker_not_closed\","
	"\"alertstate\":\"firing\",\"backend\":\"v1\",\"severity\":\"ticket\"},\"value\":[1,\"1\"]}"
	","
	"{\"metric\":{\"__name__\":\"ALERTS\",\"alertname\":\"fusebox_error_budget_burn\","
	"\"alertstate\":\"pending\",\"route\":\"ticket\",\"kind\":\"smart\",\"window\":\"3d\","
	"\"severity\":\"ticket\",\"factor\":\"1\",\"source\":\"fleet\"},\"value\":[1,\"1\"]}]}}";

static struct prom_slo *
build(const char *route)
{
	struct prom_result s, a;
	struct prom_slo *slo = NULL;
	char *cause = NULL;

	parse_ok(series_json, &s);
	parse_ok(alerts_json, &a);
	ck_assert_int_eq(prom_slo_build("http://p:9090", route, &s, &a, &slo, &cause), 0);
	prom_result_free(&s);
	prom_result_free(&a);
	return slo;
}

static char *
capture(const struct prom_slo *s, int json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(fp);
	if (json)
		prom_slo_json(fp, s);
	else
		prom_slo_render(fp, s);
	fclose(fp);
	return text;
}

START_TEST(test_slo_build_render)
{
	struct prom_slo *s;
	const struct prom_slo_route *t;
	char *text;

	ck_assert_ptr_nonnull(setlocale(LC_ALL, "C.UTF-8"));
	fmt_set_ascii(0);
	s = build(NULL);
	ck_assert_int_eq(s->n, 2);
	ck_assert_str_eq(s->routes[0].route, "alpha"); /* by name */
	t = &s->routes[1];
	ck_assert_str_eq(t->route, "ticket");
	ck_assert_double_eq(t->k[PROM_SLO_SERVICE].objective, 0.999);
	ck_assert_int_eq(t->hosts[0], 2);
	ck_assert_int_eq(t->hosts[2], 1);
	ck_assert(isnan(t->k[PROM_SLO_SMART].availability[2]));
	ck_assert(isnan(t->k[PROM_SLO_SMART].calls[1]));
	/* firing only, routes only, pages first, then the shorter window */
	ck_assert_int_eq(t->nalerts, 4);
	ck_assert_str_eq(t->alerts[0].window, "1h");
	ck_assert_str_eq(t->alerts[1].window, "6h");
	ck_assert_str_eq(t->alerts[2].window, "15m");
	ck_assert_str_eq(t->alerts[3].window, "1d");
	text = capture(s, 0);
	ck_assert_str_eq(
		text,
		"alpha (fleet, http://p:9090): objectives service -, smart -; 1 host: L0 1\n"
		"WINDOW  CALLS  SERVICE  BURN  SMART  BURN\n"
		"error budget left (30d): service - (burn 1h -), smart - (burn 1h -)\n"
		"fleet alerts firing: none\n"
		"\n"
		"ticket (fleet, http://p:9090): objectives service 99.9%, smart 99%; 3 hosts: L0 2 "
		"\xc2\xb7 L2 1\n"
		"WINDOW  CALLS  SERVICE     BURN   SMART    BURN\n"
		"5m         24   75.00%  250.00x  41.67%  58.33x\n"
		"1h         24   75.00%      inf       -       -\n"
		"error budget left (30d): service -24900.0% (burn 1h inf), smart 50.0% (burn 1h "
		"-)\n"
		"fleet alerts firing: page service 1h (14.4x), page service 6h (6x), ticket "
		"fusebox_review_overdue 15m, ticket smart 1d (3x)\n");
	free(text);
	fmt_set_ascii(1);
	text = capture(s, 0);
	ck_assert_ptr_nonnull(strstr(text, "3 hosts: L0 2 | L2 1\n"));
	free(text);
	fmt_set_ascii(0);
	prom_slo_free(s);
}
END_TEST

START_TEST(test_slo_json)
{
	struct prom_slo *s = build("ticket");
	char *text = capture(s, 1);
	cJSON *root = cJSON_Parse(text), *r, *w;

	ck_assert_ptr_nonnull(root);
	ck_assert_str_eq(cJSON_GetObjectItem(root, "prometheus")->valuestring, "http://p:9090");
	r = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "routes"), 1);
	ck_assert_str_eq(cJSON_GetObjectItem(r, "route")->valuestring, "ticket");
	ck_assert_double_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r, "objectives"), "smart_availability")
			->valuedouble,
		0.99);
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r, "hosts_by_level"), "2")->valueint, 1);
	w = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "windows"), "1h");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(w, "smart_availability")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(w, "service_burn_rate"))); /* +Inf */
	ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "windows"), "30m"));
	ck_assert_double_eq(
		cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error_budget"), "service"),
			"remaining")
			->valuedouble,
		-249);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "alerts")), 4);
	cJSON_Delete(root);
	free(text);
	prom_slo_free(s);
}
END_TEST

START_TEST(test_slo_no_series)
{
	struct prom_result empty;
	struct prom_slo *s = NULL;
	char *cause = NULL;

	parse_ok("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
		 &empty);
	ck_assert_int_eq(prom_slo_build("http://p:9090", NULL, &empty, NULL, &s, &cause),
			 PROM_E_NO_SERIES);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(cause, "has no fusebox fleet series"));
	free(cause);
	cause = NULL;
	ck_assert_int_eq(prom_slo_build("http://p:9090", "x", &empty, NULL, &s, &cause),
			 PROM_E_NO_SERIES);
	ck_assert_str_eq(cause, "Prometheus at http://p:9090 has no fleet series for route \"x\"");
	free(cause);
	prom_result_free(&empty);
}
END_TEST

/* The SLO screen's fleet mode status line: fetching, fresh, failing. */
START_TEST(test_status_text)
{
	/* 2026-12-02 14:00:10 UTC */
	const int64_t now = 1796220010000LL;
	char out[512], want[512];

	setenv("TZ", "UTC", 1);
	tzset();
	prom_status_text(out, sizeof out, "http://p:9090", 1, NULL, 0, 0, now);
	snprintf(want, sizeof want, "fetching%s from http://p:9090",
		 fmt_is_ascii() ? "..." : "\xe2\x80\xa6");
	ck_assert_str_eq(out, want);
	prom_status_text(out, sizeof out, "http://p:9090", 0, "", 0, now - 3000, now);
	ck_assert_str_eq(out, "prometheus http://p:9090: updated 3s ago");
	prom_status_text(out, sizeof out, "http://p:9090", 1, "", 0, now - 3000, now);
	ck_assert_str_eq(out, "prometheus http://p:9090: updated 3s ago, fetching");
	/* an error wins over an older good answer; the CLI's prefix is not repeated */
	prom_status_text(out, sizeof out, "http://p:9090", 0,
			 "Prometheus unreachable: cannot reach http://p:9090: Connection refused",
			 now - 70000, now - 90000, now);
	ck_assert_str_eq(out, "prometheus unreachable since 13:59:00 (cannot reach "
			      "http://p:9090: Connection refused)");
	prom_status_text(out, sizeof out, "http://p:9090", 0,
			 "Prometheus at http://p:9090 refused the query \"x\": bad_data: oops",
			 now - 1000, 0, now);
	ck_assert_str_eq(out, "prometheus unreachable since 14:00:09 (Prometheus at "
			      "http://p:9090 refused the query \"x\": bad_data: oops)");
}
END_TEST

static Suite *
tui_prom_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"vector", test_vector},
		{"matrix_scalar_string", test_matrix_scalar_string},
		{"errors", test_errors},
		{"slo_build_render", test_slo_build_render},
		{"slo_json", test_slo_json},
		{"slo_no_series", test_slo_no_series},
		{"status_text", test_status_text},
	};
	Suite *s = suite_create("tui_prom");
	TCase *tc;
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tc = tcase_create(cases[i].name);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(tui_prom_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
