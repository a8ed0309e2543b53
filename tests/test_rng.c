/*
 * test_rng: xoshiro256** and its splitmix64 seeding against the reference
 * algorithm's outputs (computed from Vigna's published definitions), and
 * rng_double's range.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "rng.h"

START_TEST(reference_state_1234)
{
	/* xoshiro256** from the state {1, 2, 3, 4}. */
	struct rng r = {{1, 2, 3, 4}};

	ck_assert_uint_eq(rng_u64(&r), 0x2d00ULL);
	ck_assert_uint_eq(rng_u64(&r), 0x0ULL);
	ck_assert_uint_eq(rng_u64(&r), 0x5a007080ULL);
	ck_assert_uint_eq(rng_u64(&r), 0x10e0000000009d80ULL);
}
END_TEST

START_TEST(seeded_through_splitmix64)
{
	struct rng r;

	rng_seed(&r, 0);
	ck_assert_uint_eq(r.s[0], 0xe220a8397b1dcdafULL);
	ck_assert_uint_eq(r.s[3], 0xf88bb8a8724c81ecULL);
	ck_assert_uint_eq(rng_u64(&r), 0x99ec5f36cb75f2b4ULL);
	ck_assert_uint_eq(rng_u64(&r), 0xbf6e1f784956452aULL);
	ck_assert_uint_eq(rng_u64(&r), 0x1a5f849d4933e6e0ULL);

	rng_seed(&r, 42);
	ck_assert_uint_eq(rng_u64(&r), 0x15780b2e0c2ec716ULL);
	ck_assert_uint_eq(rng_u64(&r), 0x6104d9866d113a7eULL);
	ck_assert_uint_eq(rng_u64(&r), 0xae17533239e499a1ULL);
}
END_TEST

START_TEST(double_in_unit_interval)
{
	struct rng r;
	double lo = 1, hi = 0, sum = 0;
	int i;

	rng_seed(&r, 7);
	for (i = 0; i < 100000; i++) {
		double d = rng_double(&r);

		ck_assert(d >= 0 && d < 1);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		sum += d;
	}
	/* 100,000 uniform draws: the mean is 0.5 within a few standard errors. */
	ck_assert(sum / 100000 > 0.49 && sum / 100000 < 0.51);
	ck_assert(lo < 0.001 && hi > 0.999);
}
END_TEST

static Suite *
rng_suite(void)
{
	Suite *s = suite_create("rng");
	TCase *tc = tcase_create("xoshiro256**");

	tcase_add_test(tc, reference_state_1234);
	tcase_add_test(tc, seeded_through_splitmix64);
	tcase_add_test(tc, double_in_unit_interval);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(rng_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
