/*
 * bench_rules: rules_eval() on a 200-character input against 100 rules,
 * in nanoseconds per evaluation. No rule matches, so every rule is tried
 * (the worst case short of a pathological config). Scenarios:
 *
 *   any        100 "any" rules of 3 customer-service keywords each
 *   any-near   100 "any" rules whose keywords are made of the input's own
 *              byte pairs, so the pair filter passes and memmem() runs
 *   mixed      90 "any" rules and 10 POSIX regex rules
 *   cjk        a 200-character Chinese input, 100 rules of Chinese keywords
 *
 * Target (rules.h): a few microseconds per input. Prints the best of
 * BENCH_ROUNDS rounds, in thread CPU time. Usage: bench_rules [iterations per round].
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rules.h"
#include "util.h"

#define NRULES	  100
#define NKEYWORDS 3

static const char input_en[] =
	"Hello, I ordered a pair of shoes last week and the delivery has not arrived. "
	"Could you check the status of order 452100 and tell me when it will come? The tracking "
	"page shows nothing new since Monday.";

static const char *const words_en[] = {
	"refund",      "money back",  "cancel",	      "invoice",       "broken",      "damaged",
	"exchange",    "coupon",      "discount",     "password",      "login",	      "account",
	"payment",     "charged",     "twice",	      "warranty",      "repair",      "replace",
	"receipt",     "subscribe",   "complain",     "manager",       "rude",	      "scam",
	"fraud",       "stolen",      "phone number", "wrong size",    "too small",   "too big",
	"color",       "missing",     "leaking",      "smell",	       "expired",     "allergy",
	"voucher",     "gift card",   "loyalty",      "points",	       "unsubscribe", "spam",
	"privacy",     "delete my",   "gdpr",	      "lawyer",	       "court",	      "police",
	"credit card", "paypal",      "bank",	      "chargeback",    "duplicate",   "overcharged",
	"price match", "cheaper",     "promo",	      "free shipping", "customs",     "tax",
	"vat",	       "business",    "wholesale",    "bulk",	       "partner",     "affiliate",
	"job",	       "career",      "hiring",	      "press",	       "feedback",    "suggestion",
	"compliment",  "great job",   "awesome",      "love it",       "hate",	      "terrible",
	"worst",       "never again", "disappointed", "angry",	       "upset",	      "furious",
	"speak to",    "supervisor",  "escalate",     "urgent",	       "asap",	      "immediately",
	"broken link", "app crash",   "error code",   "bug",	       "freeze",      "slow",
	"battery",     "charger",     "cable",	      "screen",
};

/* Pieces of the input rearranged: their byte pairs occur in the input, the strings do not. */
static const char *const words_near[] = {
	"the order has", "shoes arrived", "week and tell",  "status of me",  "come the",
	"check order",	 "pair of week",  "tracking shoes", "delivery yet",  "monday the",
	"nothing since", "last order",	  "hello week",	    "could tell",    "when it come",
	"page arrived",	 "new order",	  "shows the",	    "thanks monday", "of shoes week",
};

static const char input_cjk[] =
	"您好，我上周在你们的店里买了一双运动鞋，到现在还没有收到货。物流信息从周一开始就一直没有更"
	"新，"
	"订单号是四五二一。请帮我查一下现在的配送状态，告诉我大概什么时候能送到。如果实在找不到包裹"
	"，"
	"我希望能重新发货或者给我一个明确的处理方案。另外我想问一下，你们的会员积分是怎么计算的，"
	"之前的订单有没有积分，积分能不能用来抵扣运费。"
	"谢谢，期待你们的回复，祝工作顺利，生活愉快，身体健康，万事如意，下次再聊，再见了";

static const char *const words_cjk[] = {
	"退款", "退货",	  "投诉", "发票", "损坏", "破损", "换货", "优惠券", "折扣",   "密码",
	"登录", "账户",	  "付款", "扣款", "保修", "维修", "更换", "收据",   "订阅",   "经理",
	"态度", "诈骗",	  "欺诈", "被盗", "尺码", "太小", "太大", "颜色",   "漏水",   "过期",
	"过敏", "礼品卡", "取消", "隐私", "删除", "律师", "法院", "报警",   "信用卡", "银行",
};

static const char *const regexes[] = {
	"refund|money back",
	"cancel(led|ation)?",
	"invoice [0-9]+",
	"(broken|damaged) item",
	"^urgent",
	"password reset",
	"charged (twice|two times)",
	"wrong (size|color)",
	"[A-Z]{3}-[0-9]{6}",
	"speak to (a|the) manager",
};

static struct rules_cfg rc;

static void
rules_build(const char *const *words, size_t nwords, int nregex)
{
	struct rule_match *m;
	size_t w = 0;
	int i, k;

	memset(&rc, 0, sizeof rc);
	rc.enabled = true;
	rc.match = xcalloc(NRULES, sizeof *rc.match);
	rc.nmatch = NRULES;
	for (i = 0; i < NRULES; i++) {
		m = &rc.match[i];
		m->result = cJSON_Parse("{\"intent\": \"x\"}");
		m->confidence = 0.6;
		if (i >= NRULES - nregex) {
			m->regex = xstrdup(
				regexes[(i - (NRULES - nregex)) % (int)ARRAY_SIZE(regexes)]);
			if (regcomp(&m->re, m->regex, REG_EXTENDED | REG_NOSUB) != 0)
				abort();
			continue;
		}
		m->any = xcalloc(NKEYWORDS, sizeof *m->any);
		m->nany = NKEYWORDS;
		for (k = 0; k < NKEYWORDS; k++)
			m->any[k] = xstrdup(words[w++ % nwords]);
	}
}

static void
rules_destroy(void)
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
	memset(&rc, 0, sizeof rc);
}

/* Thread CPU time: a busy machine preempting us does not inflate the figure. */
static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Best of BENCH_ROUNDS rounds of iterations evaluations each. */
#define BENCH_ROUNDS 5

static void
bench(const char *name, const char *input, long iterations)
{
	size_t len = strlen(input);
	struct rules_hit hit;
	double t0, t1, best = 0;
	long i;
	int r, round;

	r = rules_eval(&rc, input, len, &hit);
	if (r != RULES_E_NOMATCH) {
		fprintf(stderr, "bench_rules: %s: expected no match, got %d (rule %d)\n", name, r,
			hit.index);
		exit(1);
	}
	for (round = 0; round < BENCH_ROUNDS; round++) {
		t0 = now_ns();
		for (i = 0; i < iterations; i++)
			r |= rules_eval(&rc, input, len, &hit);
		t1 = now_ns();
		if (round == 0 || t1 - t0 < best)
			best = t1 - t0;
	}
	printf("bench_rules: %-8s %d rules, %zu-byte input: %8.0f ns/eval\n", name, rc.nmatch, len,
	       best / (double)iterations);
	if (r != RULES_E_NOMATCH)
		exit(1);
}

int
main(int argc, char **argv)
{
	long iterations = 50000;

	if (argc > 1)
		iterations = strtol(argv[1], NULL, 10);
	if (iterations <= 0)
		iterations = 1;

	rules_build(words_en, ARRAY_SIZE(words_en), 0);
	bench("any", input_en, iterations);
	rules_destroy();

	rules_build(words_near, ARRAY_SIZE(words_near), 0);
	bench("any-near", input_en, iterations);
	rules_destroy();

	rules_build(words_en, ARRAY_SIZE(words_en), 10);
	bench("mixed", input_en, iterations / 10 + 1);
	rules_destroy();

	rules_build(words_cjk, ARRAY_SIZE(words_cjk), 0);
	bench("cjk", input_cjk, iterations);
	rules_destroy();
	return 0;
}
