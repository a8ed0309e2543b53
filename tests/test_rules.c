/*
 * test_rules: the rule engine with hand-built rules_cfg structs (keywords
 * lower-cased and regexes compiled here, as the config loader does).
 */
#include <check.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"
#include "util.h"

static struct rules_cfg rc;

static struct rule_match *
rule_add(const char *result_json, double confidence)
{
	struct rule_match *m;

	rc.match = xrealloc(rc.match, (size_t)(rc.nmatch + 1) * sizeof *rc.match);
	m = &rc.match[rc.nmatch++];
	memset(m, 0, sizeof *m);
	m->result = cJSON_Parse(result_json);
	ck_assert_ptr_nonnull(m->result);
	m->confidence = confidence;
	return m;
}

/* An "any" rule; the keyword list ends with NULL. */
static void
rule_any(const char *result_json, double confidence, ...)
{
	struct rule_match *m = rule_add(result_json, confidence);
	const char *kw;
	char *low;
	va_list ap;
	size_t i;

	va_start(ap, confidence);
	while ((kw = va_arg(ap, const char *)) != NULL) {
		low = xstrdup(kw);
		for (i = 0; low[i] != '\0'; i++) {
			if (low[i] >= 'A' && low[i] <= 'Z')
				low[i] = (char)(low[i] - 'A' + 'a');
		}
		m->any = xrealloc(m->any, (size_t)(m->nany + 1) * sizeof *m->any);
		m->any[m->nany++] = low;
	}
	va_end(ap);
}

static void
rule_regex(const char *regex, const char *result_json, double confidence)
{
	struct rule_match *m = rule_add(result_json, confidence);

	m->regex = xstrdup(regex);
	ck_assert_int_eq(regcomp(&m->re, regex, REG_EXTENDED | REG_NOSUB), 0);
}

static void
rules_default(const char *result_json, double confidence)
{
	rc.has_default = true;
	rc.default_result = cJSON_Parse(result_json);
	ck_assert_ptr_nonnull(rc.default_result);
	rc.default_confidence = confidence;
}

static void
setup(void)
{
	memset(&rc, 0, sizeof rc);
	rc.enabled = true;
}

static void
teardown(void)
{
	struct rule_match *m;
	int i, k;

	for (i = 0; i < rc.nmatch; i++) {
		m = &rc.match[i];
		for (k = 0; k < m->nany; k++)
			free(m->any[k]);
		free(m->any);
		if (m->regex != NULL)
			regfree(&m->re);
		free(m->regex);
		cJSON_Delete(m->result);
	}
	free(rc.match);
	cJSON_Delete(rc.default_result);
	memset(&rc, 0, sizeof rc);
}

/* The CONFIG.md example rules plus a default. */
static void
config_example(bool with_default)
{
	rule_any("{\"intent\": \"refund\"}", 0.6, "退款", "refund", "money back", NULL);
	rule_regex("投诉|complain", "{\"intent\": \"complaint\"}", 0.6);
	if (with_default)
		rules_default("{\"intent\": \"other\"}", 0.3);
}

static int
eval(const char *input, struct rules_hit *hit)
{
	return rules_eval(&rc, input, strlen(input), hit);
}

static const char *
hit_intent(const struct rules_hit *hit)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(hit->result, "intent");

	ck_assert(cJSON_IsString(v));
	return v->valuestring;
}

START_TEST(test_first_match_wins)
{
	struct rules_hit hit;

	config_example(true);
	rule_any("{\"intent\": \"late\"}", 0.9, "refund", NULL);
	ck_assert_int_eq(eval("I want a refund, and I complain about it", &hit), 0);
	ck_assert_int_eq(hit.index, 0);
	ck_assert_ptr_eq(hit.result, rc.match[0].result);
	ck_assert_double_eq(hit.confidence, 0.6);
	ck_assert_str_eq(hit_intent(&hit), "refund");
	ck_assert_int_eq(eval("I complain", &hit), 0);
	ck_assert_int_eq(hit.index, 1);
	ck_assert_str_eq(hit_intent(&hit), "complaint");
}
END_TEST

START_TEST(test_any_case_insensitive)
{
	struct rules_hit hit;

	config_example(false);
	ck_assert_int_eq(eval("REFUND NOW", &hit), 0);
	ck_assert_int_eq(hit.index, 0);
	ck_assert_int_eq(eval("Can I get my Money Back?", &hit), 0);
	ck_assert_int_eq(hit.index, 0);
	ck_assert_int_eq(eval("money  back", &hit), RULES_E_NOMATCH);
	ck_assert_int_eq(eval("refun", &hit), RULES_E_NOMATCH);
	/* Only ASCII folds: fullwidth letters are other characters. */
	ck_assert_int_eq(eval("ＲＥＦＵＮＤ", &hit), RULES_E_NOMATCH);
}
END_TEST

START_TEST(test_cjk)
{
	struct rules_hit hit;

	config_example(false);
	ck_assert_int_eq(eval("我要退款，谢谢", &hit), 0);
	ck_assert_int_eq(hit.index, 0);
	ck_assert_int_eq(eval("我要退货", &hit), RULES_E_NOMATCH);
	ck_assert_int_eq(eval("我要投诉你们的客服", &hit), 0);
	ck_assert_int_eq(hit.index, 1);
	/* Half of a keyword is not the keyword. */
	ck_assert_int_eq(eval("退", &hit), RULES_E_NOMATCH);
}
END_TEST

START_TEST(test_regex)
{
	struct rules_hit hit;

	rule_regex("^order [0-9]+$", "{\"intent\": \"status\"}", 0.8);
	config_example(true);
	ck_assert_int_eq(eval("order 12345", &hit), 0);
	ck_assert_int_eq(hit.index, 0);
	ck_assert_double_eq(hit.confidence, 0.8);
	ck_assert_int_eq(eval("my order 12345", &hit), 0);
	ck_assert_int_eq(hit.index, -1);
	/* Regexes see the original text: case-sensitive. */
	ck_assert_int_eq(eval("I COMPLAIN", &hit), 0);
	ck_assert_int_eq(hit.index, -1);
	ck_assert_int_eq(eval("I complain", &hit), 0);
	ck_assert_int_eq(hit.index, 2);
}
END_TEST

START_TEST(test_default)
{
	struct rules_hit hit;

	config_example(true);
	ck_assert_int_eq(eval("where is my parcel", &hit), 0);
	ck_assert_int_eq(hit.index, -1);
	ck_assert_ptr_eq(hit.result, rc.default_result);
	ck_assert_double_eq(hit.confidence, 0.3);
	ck_assert_str_eq(hit_intent(&hit), "other");
	ck_assert_int_eq(rules_eval(&rc, NULL, 0, &hit), 0);
	ck_assert_int_eq(hit.index, -1);
	ck_assert_int_eq(eval("", &hit), 0);
	ck_assert_int_eq(hit.index, -1);
}
END_TEST

START_TEST(test_no_default)
{
	struct rules_hit hit;

	config_example(false);
	ck_assert_int_eq(eval("where is my parcel", &hit), RULES_E_NOMATCH);
	ck_assert_ptr_null(hit.result);
	ck_assert_int_eq(eval("", &hit), RULES_E_NOMATCH);
	teardown();
	setup();
	ck_assert_int_eq(eval("anything", &hit), RULES_E_NOMATCH);
}
END_TEST

START_TEST(test_disabled)
{
	struct rules_hit hit;

	config_example(true);
	rc.enabled = false;
	ck_assert_int_eq(eval("refund", &hit), RULES_E_DISABLED);
	ck_assert_ptr_null(hit.result);
	ck_assert_int_eq(rules_eval(NULL, "refund", 6, &hit), RULES_E_DISABLED);
}
END_TEST

START_TEST(test_not_nul_terminated)
{
	static const char buf[] = "xx refund complain order 7";
	struct rules_hit hit;

	rule_regex("^order 7$", "{\"intent\": \"status\"}", 0.8);
	rule_regex("^abc$", "{\"intent\": \"abc\"}", 0.8);
	config_example(false);
	/* "xx r": the keyword lies past len. */
	ck_assert_int_eq(rules_eval(&rc, buf, 4, &hit), RULES_E_NOMATCH);
	/* "xx refund": ends exactly at len. */
	ck_assert_int_eq(rules_eval(&rc, buf, 9, &hit), 0);
	ck_assert_int_eq(hit.index, 2);
	/* "complai": the regex must not read past len. */
	ck_assert_int_eq(rules_eval(&rc, buf + 10, 7, &hit), RULES_E_NOMATCH);
	ck_assert_int_eq(rules_eval(&rc, buf + 10, 8, &hit), 0);
	ck_assert_int_eq(hit.index, 3);
	/* "$" anchors at len, not at the caller's NUL. */
	ck_assert_int_eq(rules_eval(&rc, "abcdef", 3, &hit), 0);
	ck_assert_int_eq(hit.index, 1);
	ck_assert_int_eq(rules_eval(&rc, buf + 19, 7, &hit), 0);
	ck_assert_int_eq(hit.index, 0);
}
END_TEST

START_TEST(test_long_input)
{
	size_t len = 100 * 1024, i;
	struct rules_hit hit;
	char *big;

	config_example(true);
	big = xmalloc(len);
	for (i = 0; i < len; i++)
		big[i] = (char)('a' + i % 26);
	ck_assert_int_eq(rules_eval(&rc, big, len, &hit), 0);
	ck_assert_int_eq(hit.index, -1);
	memcpy(big + len - 6, "REFUND", 6);
	ck_assert_int_eq(rules_eval(&rc, big, len, &hit), 0);
	ck_assert_int_eq(hit.index, 0);
	memcpy(big + len - 8, "complain", 8);
	ck_assert_int_eq(rules_eval(&rc, big, len, &hit), 0);
	ck_assert_int_eq(hit.index, 1);
	/* Around the 4 KiB stack-buffer threshold, ending exactly at len. */
	for (i = 0; i < len; i++)
		big[i] = ' ';
	memcpy(big + 4093, "退款", 6);
	ck_assert_int_eq(rules_eval(&rc, big, 4099, &hit), 0);
	ck_assert_int_eq(hit.index, 0);
	ck_assert_int_eq(rules_eval(&rc, big, 4098, &hit), 0);
	ck_assert_int_eq(hit.index, -1);
	free(big);
}
END_TEST

/* The pair index never hides a match: compare with a naive search. */
START_TEST(test_matches_naive)
{
	static const char *const kws[] = {"ab", "ba",	 "abc", "zz",	    "a",
					  "q",	"xyzzy", "cab", "\xe9\x80", "aaab"};
	static const char alphabet[] = "abcABCxyzZq \xe9\x80\x80";
	static char input[6000], low[6000];
	struct rules_hit hit;
	unsigned seed = 12345;
	size_t i, k, len;
	int round, want, got;

	for (k = 0; k < ARRAY_SIZE(kws); k++)
		rule_any("{\"intent\": \"k\"}", 0.5, kws[k], NULL);
	for (round = 0; round < 20000; round++) {
		seed = seed * 1103515245u + 12345u;
		/* Mostly short inputs, some over the stack-buffer threshold. */
		len = (seed >> 16) % (round % 100 == 0 ? sizeof input : 64);
		for (i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			input[i] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
			low[i] = input[i] >= 'A' && input[i] <= 'Z' ? (char)(input[i] + 32)
								    : input[i];
		}
		want = -2;
		for (k = 0; k < ARRAY_SIZE(kws) && want == -2; k++) {
			if (memmem(low, len, kws[k], strlen(kws[k])) != NULL)
				want = (int)k;
		}
		got = rules_eval(&rc, input, len, &hit) == 0 ? hit.index : -2;
		ck_assert_int_eq(got, want);
	}
}
END_TEST

/* A pair repeated many times: the position walk is capped, the answer is not. */
START_TEST(test_repetitive)
{
	char input[301];
	struct rules_hit hit;

	rule_any("{\"intent\": \"c\"}", 0.5, "aac", NULL);
	rule_any("{\"intent\": \"b\"}", 0.5, "aab", NULL);
	memset(input, 'a', 300);
	input[300] = 'b';
	ck_assert_int_eq(rules_eval(&rc, input, 301, &hit), 0);
	ck_assert_int_eq(hit.index, 1);
	ck_assert_int_eq(rules_eval(&rc, input, 300, &hit), RULES_E_NOMATCH);
	input[0] = 'b';
	ck_assert_int_eq(rules_eval(&rc, input, 300, &hit), RULES_E_NOMATCH);
}
END_TEST

static Suite *
rules_suite(void)
{
	const struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{"first_match_wins", test_first_match_wins},
		{"any_case_insensitive", test_any_case_insensitive},
		{"cjk", test_cjk},
		{"regex", test_regex},
		{"default", test_default},
		{"no_default", test_no_default},
		{"disabled", test_disabled},
		{"not_nul_terminated", test_not_nul_terminated},
		{"long_input", test_long_input},
		{"matches_naive", test_matches_naive},
		{"repetitive", test_repetitive},
	};
	Suite *s = suite_create("rules");
	TCase *tc;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		tc = tcase_create(cases[i].name);
		tcase_add_checked_fixture(tc, setup, teardown);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(rules_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
