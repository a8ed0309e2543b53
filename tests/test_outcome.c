/*
 * test_outcome: names tables for outcome classes, ladder steps and sources.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "outcome.h"

static const char *const want_outcomes[OUTCOME__COUNT] = {
	"ok",
	"connect_error",
	"reset",
	"first_byte_timeout",
	"total_timeout",
	"http_5xx",
	"http_429",
	"http_4xx",
	"invalid_response",
	"validation_format",
	"validation_schema",
	"validation_semantic",
	"low_confidence",
	"hedge_cancelled",
};

START_TEST(test_outcome_names)
{
	int i;

	ck_assert_int_eq(OUTCOME__COUNT, 14);
	for (i = 0; i < OUTCOME__COUNT; i++) {
		const char *n = outcome_name((enum outcome)i);

		ck_assert_ptr_nonnull(n);
		ck_assert_str_eq(n, want_outcomes[i]);
	}
	ck_assert_ptr_null(outcome_name(OUTCOME__COUNT));
	ck_assert_ptr_null(outcome_name((enum outcome) - 1));
	ck_assert_ptr_null(outcome_name((enum outcome)1000));
}
END_TEST

START_TEST(test_outcome_roundtrip)
{
	int i;

	for (i = 0; i < OUTCOME__COUNT; i++) {
		enum outcome o = OUTCOME__COUNT;

		ck_assert_int_eq(outcome_parse(outcome_name((enum outcome)i), &o), 0);
		ck_assert_int_eq(o, i);
	}
}
END_TEST

START_TEST(test_outcome_parse_unknown)
{
	const char *bad[] = {"",    "OK",  "Ok",	"http_5XX", "timeout",
			     "ok ", " ok", "http_5xx_", "connect",  "low_confidence\n"};
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		enum outcome o = OUTCOME_HTTP_429;

		ck_assert_msg(outcome_parse(bad[i], &o) == -EINVAL, "\"%s\" accepted", bad[i]);
		ck_assert_int_eq(o, OUTCOME_HTTP_429);
	}
}
END_TEST

START_TEST(test_is_validation)
{
	const int want[OUTCOME__COUNT] = {
		[OUTCOME_VALIDATION_FORMAT] = 1,
		[OUTCOME_VALIDATION_SCHEMA] = 1,
		[OUTCOME_VALIDATION_SEMANTIC] = 1,
		[OUTCOME_LOW_CONFIDENCE] = 1,
	};
	int i;

	for (i = 0; i < OUTCOME__COUNT; i++)
		ck_assert_msg(!!outcome_is_validation((enum outcome)i) == want[i], "%s",
			      outcome_name((enum outcome)i));
}
END_TEST

START_TEST(test_is_timeout)
{
	const int want[OUTCOME__COUNT] = {
		[OUTCOME_FIRST_BYTE_TIMEOUT] = 1,
		[OUTCOME_TOTAL_TIMEOUT] = 1,
	};
	int i;

	for (i = 0; i < OUTCOME__COUNT; i++)
		ck_assert_msg(!!outcome_is_timeout((enum outcome)i) == want[i], "%s",
			      outcome_name((enum outcome)i));
}
END_TEST

START_TEST(test_bits)
{
	ck_assert_uint_eq(OUTCOME_BIT(OUTCOME_OK), 1u);
	ck_assert_uint_eq(OUTCOME_BIT(OUTCOME_LOW_CONFIDENCE), 1u << 12);
	ck_assert_uint_eq(OUTCOME_BIT(OUTCOME_HTTP_5XX) & OUTCOME_BIT(OUTCOME_HTTP_429), 0u);
}
END_TEST

START_TEST(test_step_names)
{
	static const char *const want[STEP__COUNT] = {
		"primary", "backup", "rules", "cache", "preset", "exhausted",
	};
	int i;

	ck_assert_int_eq(STEP__COUNT, 6);
	for (i = 0; i < STEP__COUNT; i++) {
		ck_assert_ptr_nonnull(step_name((enum step)i));
		ck_assert_str_eq(step_name((enum step)i), want[i]);
	}
	ck_assert_ptr_null(step_name(STEP__COUNT));
	ck_assert_ptr_null(step_name((enum step) - 1));
}
END_TEST

START_TEST(test_source_names)
{
	static const char *const want[SOURCE__COUNT] = {
		"llm", "backup", "rules", "cache", "preset", "manual", "none",
	};
	int i;

	ck_assert_int_eq(SOURCE__COUNT, 7);
	for (i = 0; i < SOURCE__COUNT; i++) {
		ck_assert_ptr_nonnull(source_name((enum source)i));
		ck_assert_str_eq(source_name((enum source)i), want[i]);
	}
	ck_assert_ptr_null(source_name(SOURCE__COUNT));
	ck_assert_ptr_null(source_name((enum source) - 1));
}
END_TEST

static Suite *
outcome_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"outcome_names", test_outcome_names},
		{"outcome_roundtrip", test_outcome_roundtrip},
		{"outcome_parse_unknown", test_outcome_parse_unknown},
		{"is_validation", test_is_validation},
		{"is_timeout", test_is_timeout},
		{"bits", test_bits},
		{"step_names", test_step_names},
		{"source_names", test_source_names},
	};
	Suite *s = suite_create("outcome");
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
	SRunner *sr = srunner_create(outcome_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
