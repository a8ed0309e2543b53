/*
 * test_router: weighted selection over seeded random numbers.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "router.h"

/* Picks n times and counts how often each id (0..9) came up. */
static void
pick_many(const struct router_cand *c, int nc, int avoid, uint64_t seed, int n, int counts[10])
{
	struct rng r;
	int i, id;

	rng_seed(&r, seed);
	for (i = 0; i < 10; i++)
		counts[i] = 0;
	for (i = 0; i < n; i++) {
		id = -1;
		ck_assert_int_eq(router_pick(c, nc, avoid, &r, &id), 0);
		ck_assert(id >= 0 && id < 10);
		counts[id]++;
	}
}

START_TEST(test_split_95_5)
{
	const struct router_cand c[] = {{0, 95, 1}, {1, 5, 1}};
	int counts[10];
	double share;

	pick_many(c, 2, -1, 12345, 20000, counts);
	share = 100.0 * counts[1] / 20000;
	ck_assert_msg(fabs(share - 5.0) <= 1.0, "canary share %.2f%%", share);
	ck_assert_int_eq(counts[0] + counts[1], 20000);
}
END_TEST

START_TEST(test_split_three_way)
{
	const struct router_cand c[] = {{0, 1.0, 1}, {1, 2.0, 1}, {2, 1.0, 1}};
	int counts[10];

	pick_many(c, 3, -1, 1, 20000, counts);
	ck_assert(fabs(100.0 * counts[0] / 20000 - 25.0) <= 1.0);
	ck_assert(fabs(100.0 * counts[1] / 20000 - 50.0) <= 1.0);
	ck_assert(fabs(100.0 * counts[2] / 20000 - 25.0) <= 1.0);
}
END_TEST

START_TEST(test_zero_weight)
{
	const struct router_cand c[] = {{0, 0, 1}, {1, 3, 1}, {2, -1, 1}, {3, NAN, 1}};
	int counts[10];

	pick_many(c, 4, -1, 1, 5000, counts);
	ck_assert_int_eq(counts[0], 0);
	ck_assert_int_eq(counts[2], 0);
	ck_assert_int_eq(counts[3], 0);
	ck_assert_int_eq(counts[1], 5000);
}
END_TEST

START_TEST(test_ineligible)
{
	const struct router_cand c[] = {{0, 95, 0}, {1, 5, 1}, {2, 50, 0}};
	int counts[10];

	pick_many(c, 3, -1, 2, 5000, counts);
	ck_assert_int_eq(counts[0], 0);
	ck_assert_int_eq(counts[2], 0);
	ck_assert_int_eq(counts[1], 5000);
}
END_TEST

START_TEST(test_avoid_honoured)
{
	const struct router_cand c[] = {{0, 95, 1}, {1, 5, 1}, {2, 0, 1}, {3, 10, 0}};
	int counts[10];

	pick_many(c, 4, 0, 3, 5000, counts);
	ck_assert_int_eq(counts[0], 0);
	ck_assert_int_eq(counts[1], 5000);
}
END_TEST

START_TEST(test_avoid_ignored_alone)
{
	/* Only the avoided backend is usable: the retry goes to it again. */
	const struct router_cand one[] = {{7, 1, 1}};
	const struct router_cand rest[] = {{0, 95, 1}, {1, 0, 1}, {2, 5, 0}};
	int counts[10];

	pick_many(one, 1, 7, 4, 100, counts);
	ck_assert_int_eq(counts[7], 100);
	pick_many(rest, 3, 0, 5, 100, counts);
	ck_assert_int_eq(counts[0], 100);
	/* Avoiding an id that is not a candidate changes nothing. */
	pick_many(rest, 3, 9, 5, 100, counts);
	ck_assert_int_eq(counts[0], 100);
}
END_TEST

START_TEST(test_none)
{
	const struct router_cand c[] = {{0, 0, 1}, {1, 5, 0}};
	struct rng r;
	int id = 42;

	rng_seed(&r, 6);
	ck_assert_int_eq(router_pick(c, 2, -1, &r, &id), ROUTER_E_NONE);
	ck_assert_int_eq(router_pick(c, 2, 1, &r, &id), ROUTER_E_NONE);
	ck_assert_int_eq(router_pick(c, 0, -1, &r, &id), ROUTER_E_NONE);
	ck_assert_int_eq(router_pick(NULL, 0, -1, &r, &id), ROUTER_E_NONE);
	ck_assert_int_eq(id, 42);
}
END_TEST

START_TEST(test_tiny_weights)
{
	const struct router_cand c[] = {{0, 1e-300, 1}, {1, 1e-300, 1}};
	int counts[10];

	pick_many(c, 2, -1, 8, 2000, counts);
	ck_assert_int_gt(counts[0], 800);
	ck_assert_int_gt(counts[1], 800);
}
END_TEST

static Suite *
router_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"split_95_5", test_split_95_5},
		{"split_three_way", test_split_three_way},
		{"zero_weight", test_zero_weight},
		{"ineligible", test_ineligible},
		{"avoid_honoured", test_avoid_honoured},
		{"avoid_ignored_alone", test_avoid_ignored_alone},
		{"none", test_none},
		{"tiny_weights", test_tiny_weights},
	};
	Suite *s = suite_create("router");
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
	SRunner *sr = srunner_create(router_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
