/*
 * test_budget: deadline arithmetic, per-attempt timeouts and their plan
 * (reserve, crowd), the caller's budget parsed, token estimates and
 * dynamic timeouts, with literal clocks.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"

static char *
repeat(const char *unit, int n)
{
	size_t ulen = strlen(unit);
	char *s = malloc(ulen * (size_t)n + 1);
	int i;

	ck_assert_ptr_nonnull(s);
	for (i = 0; i < n; i++)
		memcpy(s + ulen * (size_t)i, unit, ulen);
	s[ulen * (size_t)n] = '\0';
	return s;
}

static int64_t
tokens(const char *s)
{
	return budget_estimate_tokens(s, strlen(s));
}

static struct timeout_cfg
dyn_cfg(void)
{
	struct timeout_cfg t;

	memset(&t, 0, sizeof t);
	t.mode = TIMEOUT_DYNAMIC;
	t.percentile = 0.9;
	t.window_s = 300;
	t.per_100_tokens = 0.3;
	t.margin_ms = 1500;
	t.min_ms = 5000;
	t.max_ms = 120000;
	t.default_ms = 8000;
	return t;
}

START_TEST(test_init_caller_shortens)
{
	struct budget b;

	budget_init(&b, 1000, 6000, 0);
	ck_assert_int_eq(b.budget_ms, 6000);
	ck_assert_int_eq(b.start_ms, 1000);
	ck_assert_int_eq(b.deadline_ms, 7000);
	budget_init(&b, 1000, 6000, 2500);
	ck_assert_int_eq(b.budget_ms, 2500);
	ck_assert_int_eq(b.deadline_ms, 3500);
	/* Never lengthened. */
	budget_init(&b, 1000, 6000, 9000);
	ck_assert_int_eq(b.budget_ms, 6000);
	budget_init(&b, 1000, 6000, -5);
	ck_assert_int_eq(b.budget_ms, 6000);
	budget_init(&b, 0, 6000, 6000);
	ck_assert_int_eq(b.budget_ms, 6000);
}
END_TEST

START_TEST(test_remaining)
{
	struct budget b;

	budget_init(&b, 1000, 3000, 0);
	ck_assert_int_eq(budget_remaining(&b, 1000), 3000);
	ck_assert_int_eq(budget_remaining(&b, 2500), 1500);
	ck_assert_int_eq(budget_remaining(&b, 4000), 0);
	ck_assert_int_eq(budget_remaining(&b, 9000), 0);
}
END_TEST

START_TEST(test_attempt_clipping)
{
	struct attempt_timeouts t;
	struct budget b;

	budget_init(&b, 0, 3000, 0);
	ck_assert_int_eq(budget_attempt_timeouts(&b, 0, 1000, 2500, 3000, 0, 100, &t), 0);
	ck_assert_int_eq(t.connect_ms, 1000);
	ck_assert_int_eq(t.first_byte_ms, 2500);
	ck_assert_int_eq(t.total_ms, 3000);
	/* 2000 left: total and first byte clipped, connect fits. */
	ck_assert_int_eq(budget_attempt_timeouts(&b, 1000, 1000, 2500, 3000, 0, 100, &t), 0);
	ck_assert_int_eq(t.connect_ms, 1000);
	ck_assert_int_eq(t.first_byte_ms, 2000);
	ck_assert_int_eq(t.total_ms, 2000);
	/* A reserve for the rungs below. */
	ck_assert_int_eq(budget_attempt_timeouts(&b, 1000, 1000, 2500, 3000, 50, 100, &t), 0);
	ck_assert_int_eq(t.total_ms, 1950);
	ck_assert_int_eq(t.first_byte_ms, 1950);
	/* 500 left: everything clipped. */
	ck_assert_int_eq(budget_attempt_timeouts(&b, 2500, 1000, 2500, 3000, 0, 100, &t), 0);
	ck_assert_int_eq(t.connect_ms, 500);
	ck_assert_int_eq(t.first_byte_ms, 500);
	ck_assert_int_eq(t.total_ms, 500);
}
END_TEST

START_TEST(test_attempt_never_above_total)
{
	struct attempt_timeouts t;
	struct budget b;

	budget_init(&b, 0, 60000, 0);
	ck_assert_int_eq(budget_attempt_timeouts(&b, 0, 5000, 30000, 3000, 0, 100, &t), 0);
	ck_assert_int_eq(t.total_ms, 3000);
	ck_assert_int_eq(t.first_byte_ms, 3000);
	ck_assert_int_eq(t.connect_ms, 3000);
	/* Unset (0) limits take the clip. */
	ck_assert_int_eq(budget_attempt_timeouts(&b, 0, 0, 0, 0, 0, 100, &t), 0);
	ck_assert_int_eq(t.total_ms, 60000);
	ck_assert_int_eq(t.first_byte_ms, 60000);
	ck_assert_int_eq(t.connect_ms, 60000);
}
END_TEST

START_TEST(test_attempt_exhausted)
{
	struct attempt_timeouts t = {-7, -7, -7, 0};
	struct budget b;

	budget_init(&b, 0, 3000, 0);
	ck_assert_int_eq(budget_attempt_timeouts(&b, 2900, 1000, 2500, 3000, 0, 100, &t), 0);
	ck_assert_int_eq(t.total_ms, 100);
	t.total_ms = -7;
	ck_assert_int_eq(budget_attempt_timeouts(&b, 2901, 1000, 2500, 3000, 0, 100, &t),
			 BUDGET_E_EXHAUSTED);
	ck_assert_int_eq(t.total_ms, -7);
	ck_assert_int_eq(budget_attempt_timeouts(&b, 2850, 1000, 2500, 3000, 51, 100, &t),
			 BUDGET_E_EXHAUSTED);
	/* Nothing left is exhausted even with min_attempt_ms 0. */
	ck_assert_int_eq(budget_attempt_timeouts(&b, 3000, 1000, 2500, 3000, 0, 0, &t),
			 BUDGET_E_EXHAUSTED);
	ck_assert_int_eq(budget_attempt_timeouts(&b, 2999, 1000, 2500, 3000, 0, 0, &t), 0);
	ck_assert_int_eq(t.total_ms, 1);
}
END_TEST

START_TEST(test_tokens_ascii)
{
	char *s = repeat("abcd", 100);

	ck_assert_int_eq(tokens(s), 100);
	ck_assert_int_eq(budget_estimate_tokens(s, 401 - 2), 100);
	ck_assert_int_eq(budget_estimate_tokens(s, 397), 100);
	ck_assert_int_eq(budget_estimate_tokens(s, 396), 99);
	ck_assert_int_eq(tokens(""), 0);
	ck_assert_int_eq(tokens("a"), 1);
	ck_assert_int_eq(budget_estimate_tokens(NULL, 0), 0);
	free(s);
}
END_TEST

START_TEST(test_tokens_cjk)
{
	char *s = repeat("\xe4\xb8\xad", 100); /* 中 */
	char *k = repeat("\xed\x95\x9c", 10);  /* 한 */
	char *f = repeat("\xef\xbc\x81", 10);  /* ！ fullwidth */

	ck_assert_int_eq(tokens(s), 100);
	ck_assert_int_eq(tokens(k), 10);
	ck_assert_int_eq(tokens(f), 10);
	ck_assert_int_eq(tokens("\xe3\x80\x80"), 1); /* U+3000 */
	ck_assert_int_eq(tokens("\xe9\xbf\xbf"), 1); /* U+9FFF */
	/* Mixed: 8 ASCII (2) + 2 CJK (2). */
	ck_assert_int_eq(tokens("refund \xe9\x80\x80\xe6\xac\xbe!"), 4);
	free(s);
	free(k);
	free(f);
}
END_TEST

START_TEST(test_tokens_other)
{
	char *e = repeat("\xc3\xa9", 10);	     /* é */
	char *emoji = repeat("\xf0\x9f\x98\x80", 3); /* U+1F600 */

	ck_assert_int_eq(tokens(e), 5);
	ck_assert_int_eq(tokens(emoji), 2);
	/* Invalid bytes count as "other", one each; a truncated tail too. */
	ck_assert_int_eq(tokens("\xff\xfe"), 1);
	ck_assert_int_eq(budget_estimate_tokens("\xe4\xb8\xad", 2), 1);
	ck_assert_int_eq(tokens("\xc0\xaf"), 1);     /* overlong */
	ck_assert_int_eq(tokens("\xed\xa0\x80"), 2); /* surrogate */
	/* ASCII is counted eight bytes at a time: a multibyte character
	 * inside, at or across such a block counts as it does alone. */
	ck_assert_int_eq(tokens("abcdefghijklmnopq\xe4\xb8\xad"
				"123456789"),
			 7 + 1);
	ck_assert_int_eq(tokens("abcdefg\xe4\xb8\xad"
				"hijklmn"),
			 4 + 1);
	ck_assert_int_eq(tokens("abcdefgh\xc3\xa9\xc3\xa9"
				"abcdefgh"),
			 4 + 1);
	ck_assert_int_eq(tokens("abcdefghabcdefgh\xff"), 4 + 1);
	free(e);
	free(emoji);
}
END_TEST

START_TEST(test_dynamic_default)
{
	struct timeout_cfg t = dyn_cfg();

	ck_assert_int_eq(budget_dynamic_timeout(&t, -1, 0), 8000);
	ck_assert_int_eq(budget_dynamic_timeout(&t, -1, 100000), 8000);
}
END_TEST

START_TEST(test_dynamic_clamp)
{
	struct timeout_cfg t = dyn_cfg();

	/* 1000 x 1 + 1500 = 2500 -> min 5000 */
	ck_assert_int_eq(budget_dynamic_timeout(&t, 1000, 0), 5000);
	ck_assert_int_eq(budget_dynamic_timeout(&t, 0, 0), 5000);
	/* 200000 + 1500 -> max 120000 */
	ck_assert_int_eq(budget_dynamic_timeout(&t, 200000, 0), 120000);
	ck_assert_int_eq(budget_dynamic_timeout(&t, INT64_MAX / 2, INT64_MAX / 2), 120000);
	/* In between: 10000 x 1 + 1500. */
	ck_assert_int_eq(budget_dynamic_timeout(&t, 10000, 0), 11500);
}
END_TEST

START_TEST(test_dynamic_tokens)
{
	struct timeout_cfg t = dyn_cfg();

	/* 10000 x (1 + 0.3 x 1000 / 100) + 1500 = 41500 */
	ck_assert_int_eq(budget_dynamic_timeout(&t, 10000, 1000), 41500);
	/* 10000 x (1 + 0.3 x 100 / 100) + 1500 = 14500 */
	ck_assert_int_eq(budget_dynamic_timeout(&t, 10000, 100), 14500);
	ck_assert_int_gt(budget_dynamic_timeout(&t, 10000, 200),
			 budget_dynamic_timeout(&t, 10000, 100));
	ck_assert_int_eq(budget_dynamic_timeout(&t, 10000, -50), 11500);
}
END_TEST

START_TEST(test_crowd_grows_with_calls_ahead)
{
	static struct budget_crowd c;
	int i;

	budget_crowd_init(&c, 25000); /* 25 us per answer */
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 10500, 40), 0);
	for (i = 0; i < 40; i++)
		budget_crowd_add(&c, 10500);
	/* 40 ahead x 25 us = 1 ms */
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 10500, 40), 1);
	for (i = 0; i < 960; i++)
		budget_crowd_add(&c, 10500);
	/* 1000 ahead x 25 us = 25 ms */
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 10500, 40), 25);
	/* capped */
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 10500, 20), 20);
	/* a deadline 10 ms later still sees them (the window), 11 ms later not */
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 10510, 40), 25);
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 10511, 40), 0);
	/* an earlier deadline does not wait for later ones */
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 10499, 40), 0);
}
END_TEST

START_TEST(test_crowd_remove_and_stale_slots)
{
	static struct budget_crowd c;
	int i;

	budget_crowd_init(&c, 1000000); /* 1 ms per answer */
	for (i = 0; i < 3; i++)
		budget_crowd_add(&c, 7000);
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 7000, 40), 3);
	budget_crowd_remove(&c, 7000);
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 7000, 40), 2);
	/* removing from a slot that counts another ms changes nothing */
	budget_crowd_remove(&c, 7000 + BUDGET_CROWD_SLOTS);
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 7000, 40), 2);
	/* the same slot, BUDGET_CROWD_SLOTS ms later: the old count is stale */
	budget_crowd_add(&c, 7000 + BUDGET_CROWD_SLOTS);
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 7000 + BUDGET_CROWD_SLOTS, 40), 1);
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 7000, 40), 0);
	/* never below zero */
	for (i = 0; i < 5; i++)
		budget_crowd_remove(&c, 7000 + BUDGET_CROWD_SLOTS);
	ck_assert_int_eq(budget_crowd_extra_ms(&c, 7000 + BUDGET_CROWD_SLOTS, 40), 0);
}
END_TEST

START_TEST(test_crowd_cost_average)
{
	static struct budget_crowd c;
	int i;

	budget_crowd_init(&c, 20000);
	budget_crowd_cost(&c, 100000);
	ck_assert_int_eq(c.cost_ns, 30000); /* 20000 + (100000 - 20000) / 8 */
	budget_crowd_cost(&c, -5);
	ck_assert_int_eq(c.cost_ns, 30000);
	for (i = 0; i < 200; i++)
		budget_crowd_cost(&c, 8000);
	ck_assert_int_le(c.cost_ns, 8100);
	ck_assert_int_ge(c.cost_ns, 8000);
}
END_TEST

START_TEST(test_attempt_room)
{
	struct budget b;

	budget_init(&b, 0, 3000, 0);
	ck_assert_int_eq(budget_attempt_room(&b, 1000), 3000 - 1000 - BUDGET_ANSWER_RESERVE_MS);
	ck_assert_int_eq(budget_attempt_room(&b, 2995), -5);
	ck_assert_int_eq(budget_attempt_room(&b, 5000), -BUDGET_ANSWER_RESERVE_MS);
}
END_TEST

START_TEST(test_plan_reserve_and_cut)
{
	struct attempt_limits lim = {1000, 2500, 6000};
	struct attempt_timeouts t;
	struct budget b;

	ck_assert_int_eq(BUDGET_ANSWER_RESERVE_MS, 10);
	ck_assert_int_eq(BUDGET_MAX_RESERVE_MS, 50);
	budget_init(&b, 0, 3000, 0);
	/* the budget is shorter than the attempt: runs to the cut, 10 ms before the deadline */
	ck_assert_int_eq(budget_attempt_plan(&b, 0, NULL, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 2990);
	ck_assert_int_eq(t.first_byte_ms, 2500);
	ck_assert_int_eq(t.connect_ms, 1000);
	ck_assert_int_eq(t.at_cut, 1);
	/* the same instant, the time left planned once */
	ck_assert_int_eq(budget_attempt_plan(&b, 1000, NULL, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 1990);
	ck_assert_int_eq(t.first_byte_ms, 1990);
	ck_assert_int_eq(t.at_cut, 1);
	/* an attempt that ends by its own total is not one of the crowd */
	lim.total_ms = 2000;
	ck_assert_int_eq(budget_attempt_plan(&b, 0, NULL, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 2000);
	ck_assert_int_eq(t.first_byte_ms, 2000);
	ck_assert_int_eq(t.at_cut, 0);
	/* exactly up to the cut counts */
	lim.total_ms = 2990;
	ck_assert_int_eq(budget_attempt_plan(&b, 0, NULL, &lim, &t), 0);
	ck_assert_int_eq(t.at_cut, 1);
	/* a dynamic total above INT32_MAX is clipped like any other */
	budget_init(&b, 0, 60000, 0);
	lim.total_ms = (int64_t)1 << 40;
	ck_assert_int_eq(budget_attempt_plan(&b, 0, NULL, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 59990);
}
END_TEST

START_TEST(test_plan_crowd)
{
	static struct budget_crowd c;
	struct attempt_limits lim = {1000, 2500, 6000};
	struct attempt_timeouts t;
	struct budget b;
	int i;

	budget_crowd_init(&c, 1000000); /* 1 ms per answer */
	budget_init(&b, 0, 3000, 0);
	/* nobody ahead: the plain reserve */
	ck_assert_int_eq(budget_attempt_plan(&b, 0, &c, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 2990);
	/* 5 ahead within the window: 5 ms more */
	for (i = 0; i < 5; i++)
		budget_crowd_add(&c, 2995);
	ck_assert_int_eq(budget_attempt_plan(&b, 0, &c, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 2985);
	ck_assert_int_eq(t.at_cut, 1);
	/* the reserve stops at BUDGET_MAX_RESERVE_MS */
	for (i = 0; i < 100; i++)
		budget_crowd_add(&c, 3000);
	ck_assert_int_eq(budget_attempt_plan(&b, 0, &c, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 2950);
	ck_assert_int_eq(t.at_cut, 1);
	/* 40 ms left: the crowd's reserve would leave nothing, the plain one applies */
	ck_assert_int_eq(budget_attempt_plan(&b, 2960, &c, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 30);
	ck_assert_int_eq(t.first_byte_ms, 30);
	ck_assert_int_eq(t.connect_ms, 30);
	ck_assert_int_eq(t.at_cut, 1);
	/* 51 ms left: 1 ms past the full reserve */
	ck_assert_int_eq(budget_attempt_plan(&b, 2949, &c, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 1);
}
END_TEST

START_TEST(test_plan_exhausted)
{
	static struct budget_crowd c;
	struct attempt_limits lim = {1000, 2500, 6000};
	struct attempt_timeouts t = {-7, -7, -7, -7};
	struct budget b;

	budget_crowd_init(&c, 1000000);
	budget_init(&b, 0, 3000, 0);
	/* 11 ms left: 1 ms for the attempt */
	ck_assert_int_eq(budget_attempt_plan(&b, 2989, &c, &lim, &t), 0);
	ck_assert_int_eq(t.total_ms, 1);
	/* 10 ms left: only the reserve */
	ck_assert_int_eq(budget_attempt_plan(&b, 2990, &c, &lim, &t), BUDGET_E_EXHAUSTED);
	ck_assert_int_eq(t.total_ms, 0);
	ck_assert_int_eq(t.first_byte_ms, 0);
	ck_assert_int_eq(t.connect_ms, 0);
	ck_assert_int_eq(t.at_cut, 1);
	ck_assert_int_eq(budget_attempt_plan(&b, 9000, NULL, &lim, &t), BUDGET_E_EXHAUSTED);
	ck_assert_int_eq(t.total_ms, 0);
}
END_TEST

START_TEST(test_caller_parse_header)
{
	static const char *const bad[] = {"0", "-1", "86400001", "abc", "", "12ms", "1.5"};
	int64_t ms = -7;
	char *cause = NULL;
	size_t i;

	ck_assert_int_eq(BUDGET_MAX_MS, 86400000);
	ck_assert_int_eq(budget_caller_parse(NULL, NULL, &ms, &cause), 0);
	ck_assert_int_eq(ms, 0);
	ck_assert_ptr_null(cause);
	ck_assert_int_eq(budget_caller_parse("2500", NULL, &ms, &cause), 0);
	ck_assert_int_eq(ms, 2500);
	ck_assert_int_eq(budget_caller_parse("1", NULL, &ms, &cause), 0);
	ck_assert_int_eq(ms, 1);
	ck_assert_int_eq(budget_caller_parse("86400000", NULL, &ms, &cause), 0);
	ck_assert_int_eq(ms, 86400000);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ms = -7;
		ck_assert_int_eq(budget_caller_parse(bad[i], NULL, &ms, &cause), BUDGET_E_INVALID);
		ck_assert_int_eq(ms, -7);
		ck_assert_str_eq(cause,
				 "X-Fusebox-Budget-Ms: must be a positive integer of milliseconds");
		free(cause);
		cause = NULL;
	}
	/* cause may be NULL */
	ck_assert_int_eq(budget_caller_parse("0", NULL, &ms, NULL), BUDGET_E_INVALID);
}
END_TEST

START_TEST(test_caller_parse_body)
{
	static const char *const bad[] = {"0",	  "-5", "1.5", "86400001", "\"100\"",
					  "true", "{}", "[]",  "1e300"};
	int64_t ms = -7;
	char *cause = NULL;
	cJSON *v;
	size_t i;

	/* the body wins over the header, even a bad header */
	v = cJSON_Parse("1200");
	ck_assert_int_eq(budget_caller_parse("2500", v, &ms, &cause), 0);
	ck_assert_int_eq(ms, 1200);
	ck_assert_int_eq(budget_caller_parse("nope", v, &ms, &cause), 0);
	ck_assert_int_eq(ms, 1200);
	ck_assert_ptr_null(cause);
	cJSON_Delete(v);
	v = cJSON_Parse("86400000");
	ck_assert_int_eq(budget_caller_parse(NULL, v, &ms, &cause), 0);
	ck_assert_int_eq(ms, 86400000);
	cJSON_Delete(v);
	/* JSON null is absent: the header decides */
	v = cJSON_Parse("null");
	ck_assert_int_eq(budget_caller_parse("2500", v, &ms, &cause), 0);
	ck_assert_int_eq(ms, 2500);
	ck_assert_int_eq(budget_caller_parse(NULL, v, &ms, &cause), 0);
	ck_assert_int_eq(ms, 0);
	cJSON_Delete(v);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		v = cJSON_Parse(bad[i]);
		ck_assert_ptr_nonnull(v);
		ms = -7;
		ck_assert_int_eq(budget_caller_parse("2500", v, &ms, &cause), BUDGET_E_INVALID);
		ck_assert_int_eq(ms, -7);
		ck_assert_str_eq(cause, "budget_ms: must be a positive integer of milliseconds");
		free(cause);
		cause = NULL;
		cJSON_Delete(v);
	}
}
END_TEST

static Suite *
budget_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"init_caller_shortens", test_init_caller_shortens},
		{"remaining", test_remaining},
		{"attempt_clipping", test_attempt_clipping},
		{"attempt_never_above_total", test_attempt_never_above_total},
		{"attempt_exhausted", test_attempt_exhausted},
		{"tokens_ascii", test_tokens_ascii},
		{"tokens_cjk", test_tokens_cjk},
		{"tokens_other", test_tokens_other},
		{"dynamic_default", test_dynamic_default},
		{"dynamic_clamp", test_dynamic_clamp},
		{"dynamic_tokens", test_dynamic_tokens},
		{"crowd_grows_with_calls_ahead", test_crowd_grows_with_calls_ahead},
		{"crowd_remove_and_stale_slots", test_crowd_remove_and_stale_slots},
		{"crowd_cost_average", test_crowd_cost_average},
		{"attempt_room", test_attempt_room},
		{"plan_reserve_and_cut", test_plan_reserve_and_cut},
		{"plan_crowd", test_plan_crowd},
		{"plan_exhausted", test_plan_exhausted},
		{"caller_parse_header", test_caller_parse_header},
		{"caller_parse_body", test_caller_parse_body},
	};
	Suite *s = suite_create("budget");
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
	SRunner *sr = srunner_create(budget_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
