/*
 * test_ladder: the rungs a route configures, where a walk starts, the
 * next rung, and every move between two rungs (allowed and refused),
 * with literal routes.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "ladder.h"

#define P STEP_PRIMARY
#define B STEP_BACKUP
#define R STEP_RULES
#define C STEP_CACHE
#define S STEP_PRESET
#define X STEP_EXHAUSTED

/* A route with the rungs of mask (1 << step) configured. */
static struct route_cfg
route(unsigned mask)
{
	struct route_cfg rc;

	memset(&rc, 0, sizeof rc);
	rc.ntargets = mask & (1u << P) ? 2 : 0;
	rc.backup.enabled = (mask & (1u << B)) != 0;
	rc.backup.ntargets = 1;
	rc.rules.enabled = (mask & (1u << R)) != 0;
	rc.cache.enabled = (mask & (1u << C)) != 0;
	rc.preset.enabled = (mask & (1u << S)) != 0;
	return rc;
}

#define ALL ((1u << P) | (1u << B) | (1u << R) | (1u << C) | (1u << S))

START_TEST(test_configured)
{
	struct route_cfg rc = route(ALL);
	int s;

	for (s = P; s <= X; s++)
		ck_assert_int_eq(ladder_step_configured(&rc, (enum step)s), 1);
	rc = route(0);
	for (s = P; s < X; s++)
		ck_assert_int_eq(ladder_step_configured(&rc, (enum step)s), 0);
	ck_assert_int_eq(ladder_step_configured(&rc, X), 1);
	/* a backup without targets is not a rung */
	rc = route(1u << B);
	rc.backup.ntargets = 0;
	ck_assert_int_eq(ladder_step_configured(&rc, B), 0);
}
END_TEST

START_TEST(test_next)
{
	struct route_cfg rc = route(ALL);

	ck_assert_int_eq(ladder_step_next(&rc, P), B);
	ck_assert_int_eq(ladder_step_next(&rc, B), R);
	ck_assert_int_eq(ladder_step_next(&rc, R), C);
	ck_assert_int_eq(ladder_step_next(&rc, C), S);
	ck_assert_int_eq(ladder_step_next(&rc, S), X);
	ck_assert_int_eq(ladder_step_next(&rc, X), X);
	/* skips what the route does not configure */
	rc = route((1u << P) | (1u << C));
	ck_assert_int_eq(ladder_step_next(&rc, P), C);
	ck_assert_int_eq(ladder_step_next(&rc, B), C);
	ck_assert_int_eq(ladder_step_next(&rc, C), X);
	rc = route(1u << P);
	ck_assert_int_eq(ladder_step_next(&rc, P), X);
}
END_TEST

START_TEST(test_first)
{
	struct route_cfg rc = route(ALL);

	ck_assert_int_eq(ladder_step_first(&rc, 1, 0), P);
	ck_assert_int_eq(ladder_step_first(&rc, 1, 1), B);
	ck_assert_int_eq(ladder_step_first(&rc, 1, 2), R);
	ck_assert_int_eq(ladder_step_first(&rc, 1, 3), R);
	/* the call-site gate wins over the level */
	ck_assert_int_eq(ladder_step_first(&rc, 0, 0), R);
	ck_assert_int_eq(ladder_step_first(&rc, 0, 1), R);
	/* moved down to the next configured rung */
	rc = route((1u << P) | (1u << S));
	ck_assert_int_eq(ladder_step_first(&rc, 1, 0), P);
	ck_assert_int_eq(ladder_step_first(&rc, 1, 1), S);
	ck_assert_int_eq(ladder_step_first(&rc, 0, 0), S);
	rc = route(1u << P);
	ck_assert_int_eq(ladder_step_first(&rc, 1, 2), X);
	/* level 0 starts at the primary even when the route has none */
	rc = route(0);
	ck_assert_int_eq(ladder_step_first(&rc, 1, 0), P);
}
END_TEST

/* Every (from, to) pair: only moves down, and none from STEP_EXHAUSTED. */
START_TEST(test_transitions)
{
	static const char want[STEP__COUNT][STEP__COUNT + 1] = {
		/* to:  P  B  R  C  S  X  __COUNT */
		[P] = {0, 1, 1, 1, 1, 1, 0}, [B] = {0, 0, 1, 1, 1, 1, 0},
		[R] = {0, 0, 0, 1, 1, 1, 0}, [C] = {0, 0, 0, 0, 1, 1, 0},
		[S] = {0, 0, 0, 0, 0, 1, 0}, [X] = {0, 0, 0, 0, 0, 0, 0},
	};
	int from, to;

	for (from = 0; from < STEP__COUNT; from++)
		for (to = 0; to <= STEP__COUNT; to++)
			ck_assert_msg(ladder_transition_ok((enum step)from, (enum step)to) ==
					      want[from][to],
				      "%d -> %d", from, to);
	ck_assert_int_eq(ladder_transition_ok(STEP__COUNT, X), 0);
	ck_assert_int_eq(ladder_transition_ok((enum step) - 1, P), 0);
	ck_assert_int_eq(ladder_transition_ok(P, (enum step) - 1), 0);
}
END_TEST

/* A walk as call.c makes it: the start, then falls, each move allowed. */
START_TEST(test_walk)
{
	struct route_cfg rc = route((1u << P) | (1u << B) | (1u << S));
	enum step s = ladder_step_first(&rc, 1, 0), to;
	enum step seen[8];
	int n = 0;

	seen[n++] = s;
	while (s != X) {
		to = ladder_step_next(&rc, s);
		ck_assert_int_eq(ladder_transition_ok(s, to), 1);
		s = to;
		seen[n++] = s;
	}
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(seen[0], P);
	ck_assert_int_eq(seen[1], B);
	ck_assert_int_eq(seen[2], S);
	ck_assert_int_eq(seen[3], X);
	/* at the end nothing moves: next is where it stands */
	ck_assert_int_eq(ladder_transition_ok(X, ladder_step_next(&rc, X)), 0);
}
END_TEST

static Suite *
ladder_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"configured", test_configured},   {"next", test_next}, {"first", test_first},
		{"transitions", test_transitions}, {"walk", test_walk},
	};
	Suite *s = suite_create("ladder");
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
	SRunner *sr = srunner_create(ladder_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
