/*
 * test_metrics: the Prometheus text exposition writer — exact text of
 * families, samples, label escaping, histograms and the size ceiling.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static char *
finish(struct metrics *m)
{
	char *out = NULL;
	size_t len = 0;

	ck_assert_int_eq(metrics_finish(m, &out, &len), 0);
	ck_assert_uint_eq(len, strlen(out));
	return out;
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

START_TEST(test_proc_stat_parse)
{
	/* A comm with a space and a ')' in it, as proc(5) allows. */
	static const char stat[] =
		"4242 (fuse boxd) x) S 1 4242 4242 0 -1 4194560 1200 0 3 0 250 75 0 0 20 0 "
		"7 0 123456 104857600 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 "
		"17 1 0 0 0 0 0\n";
	struct metrics_proc p;

	memset(&p, 0, sizeof p);
	ck_assert_int_eq(metrics_proc_parse(stat, &p), 0);
	ck_assert_uint_eq(p.utime_ticks, 250);
	ck_assert_uint_eq(p.stime_ticks, 75);
	ck_assert_uint_eq(p.threads, 7);
	ck_assert_uint_eq(p.start_ticks, 123456);
	ck_assert_uint_eq(p.vsize_bytes, 104857600);
	ck_assert_uint_eq(p.rss_pages, 2048);
	ck_assert_int_eq(metrics_proc_parse("4242 (x S 1 2", &p), -EINVAL);
	ck_assert_int_eq(metrics_proc_parse("4242 (x) S 1 2 3", &p), -EINVAL);
}
END_TEST

START_TEST(test_counter_family_and_samples)
{
	struct metrics m;
	struct metrics_label l[] = {{"route", "intent"}, {"source", "llm"}, {"level", "0"}};
	char *out;

	metrics_init(&m, 1 << 16);
	metrics_family(&m, "fusebox_calls_total", METRICS_COUNTER, "Calls.");
	metrics_sample(&m, "fusebox_calls_total", l, 3, 7);
	metrics_sample(&m, "fusebox_log_rows_dropped_total", NULL, 0, 0);
	out = finish(&m);
	ck_assert_str_eq(out, "# HELP fusebox_calls_total Calls.\n"
			      "# TYPE fusebox_calls_total counter\n"
			      "fusebox_calls_total{route=\"intent\",source=\"llm\",level=\"0\"} 7\n"
			      "fusebox_log_rows_dropped_total 0\n");
	free(out);
}
END_TEST

START_TEST(test_label_escaping)
{
	struct metrics m;
	struct metrics_label l[] = {{"reason", "a\\b\"c\nd"}};
	char *out;

	metrics_init(&m, 1 << 16);
	metrics_family(&m, "x", METRICS_GAUGE, "help with \\ and\nnewline \"quotes\"");
	metrics_sample(&m, "x", l, 1, 1);
	out = finish(&m);
	/* HELP escapes \ and newline only; label values also escape ". */
	ck_assert_str_eq(out, "# HELP x help with \\\\ and\\nnewline \"quotes\"\n"
			      "# TYPE x gauge\n"
			      "x{reason=\"a\\\\b\\\"c\\nd\"} 1\n");
	free(out);
}
END_TEST

START_TEST(test_value_format)
{
	char b[64];

	metrics_format_value(0, b, sizeof b);
	ck_assert_str_eq(b, "0");
	metrics_format_value(123456789, b, sizeof b);
	ck_assert_str_eq(b, "123456789");
	metrics_format_value(0.7, b, sizeof b);
	ck_assert_str_eq(b, "0.7");
	metrics_format_value(0.1 + 0.2, b, sizeof b);
	ck_assert_double_eq(strtod(b, NULL), 0.1 + 0.2);
	metrics_format_value(NAN, b, sizeof b);
	ck_assert_str_eq(b, "NaN");
	metrics_format_value(INFINITY, b, sizeof b);
	ck_assert_str_eq(b, "+Inf");
	metrics_format_value(-INFINITY, b, sizeof b);
	ck_assert_str_eq(b, "-Inf");
	metrics_format_value(-2.5, b, sizeof b);
	ck_assert_str_eq(b, "-2.5");
}
END_TEST

START_TEST(test_histogram_cumulative)
{
	struct metrics m;
	struct metrics_hist h;
	struct metrics_label l[] = {{"route", "intent"}};
	char *out, *p;

	memset(&h, 0, sizeof h);
	metrics_hist_observe(&h, 0.004); /* le 0.005 */
	metrics_hist_observe(&h, 0.005); /* le 0.005 (upper bound inclusive) */
	metrics_hist_observe(&h, 1.5);	 /* le 2.5 */
	metrics_hist_observe(&h, 500);	 /* +Inf only */
	ck_assert_uint_eq(h.count, 4);
	metrics_init(&m, 1 << 16);
	metrics_family(&m, "fusebox_call_duration_seconds", METRICS_HISTOGRAM, "Durations.");
	metrics_histogram(&m, "fusebox_call_duration_seconds", l, 1, &h);
	out = finish(&m);
	ck_assert_ptr_nonnull(strstr(out, "# TYPE fusebox_call_duration_seconds histogram\n"));
	ck_assert_ptr_nonnull(strstr(
		out, "fusebox_call_duration_seconds_bucket{route=\"intent\",le=\"0.005\"} 2\n"));
	ck_assert_ptr_nonnull(
		strstr(out, "fusebox_call_duration_seconds_bucket{route=\"intent\",le=\"1\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(
		out, "fusebox_call_duration_seconds_bucket{route=\"intent\",le=\"2.5\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(
		out, "fusebox_call_duration_seconds_bucket{route=\"intent\",le=\"120\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(
		out, "fusebox_call_duration_seconds_bucket{route=\"intent\",le=\"+Inf\"} 4\n"));
	ck_assert_ptr_nonnull(
		strstr(out, "fusebox_call_duration_seconds_sum{route=\"intent\"} 501.509\n"));
	ck_assert_ptr_nonnull(
		strstr(out, "fusebox_call_duration_seconds_count{route=\"intent\"} 4\n"));
	/* Buckets come in ascending le order and +Inf is last before _sum. */
	p = strstr(out, "le=\"+Inf\"");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_null(strstr(p, "_bucket"));
	/* HELP + TYPE + every bound + +Inf + _sum + _count. */
	ck_assert_int_eq(count_lines(out), 2 + METRICS_HIST_NBOUNDS + 1 + 2);
	free(out);
}
END_TEST

START_TEST(test_histogram_no_labels)
{
	struct metrics m;
	struct metrics_hist h;
	char *out;

	memset(&h, 0, sizeof h);
	metrics_init(&m, 1 << 16);
	metrics_histogram(&m, "h", NULL, 0, &h);
	out = finish(&m);
	ck_assert_ptr_nonnull(strstr(out, "h_bucket{le=\"0.005\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(out, "h_bucket{le=\"+Inf\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(out, "h_sum 0\nh_count 0\n"));
	free(out);
}
END_TEST

START_TEST(test_ceiling_sticks)
{
	struct metrics m;
	char *out = (char *)"x";
	size_t len = 5;

	metrics_init(&m, 64);
	metrics_family(&m, "fusebox_a_rather_long_metric_name_total", METRICS_COUNTER,
		       "more than sixty-four bytes of help text in total here");
	metrics_sample(&m, "y", NULL, 0, 1);
	ck_assert_int_eq(metrics_finish(&m, &out, &len), -E2BIG);
	ck_assert_ptr_null(out);
	ck_assert_uint_eq(len, 0);
}
END_TEST

static Suite *
metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc;

	tc = tcase_create("text");
	tcase_add_test(tc, test_counter_family_and_samples);
	tcase_add_test(tc, test_proc_stat_parse);
	tcase_add_test(tc, test_label_escaping);
	tcase_add_test(tc, test_value_format);
	tcase_add_test(tc, test_ceiling_sticks);
	suite_add_tcase(s, tc);
	tc = tcase_create("histogram");
	tcase_add_test(tc, test_histogram_cumulative);
	tcase_add_test(tc, test_histogram_no_labels);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(metrics_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
