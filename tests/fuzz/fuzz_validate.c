/*
 * fuzz_validate: model text (untrusted: the upstream writes it) through the
 * output contract and the rule engine.
 *
 * Three output_cfgs are built once, by hand as in test_validate.c so that
 * this target does not depend on config.c: "full" (a schema using every
 * keyword, compiled by validate_compile(), deny patterns, a conditional
 * rule, clamp, reject_below / review_below), "loose" (output present, no
 * schema, a dotted confidence field, no clamp) and "text" (no output
 * section). Each input goes through validate_output() and
 * validate_extract_object() (on a copy without a terminating NUL, so ASan
 * sees any read past len), validate_value() when cJSON parses it, and
 * rules_eval() over a rules_cfg with keyword and regex rules. The
 * documented contracts are asserted; every allocation is released.
 */
#include <assert.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"
#include "util.h"
#include "validate.h"

#define SCHEMA                                                                                     \
	"{\"type\": \"object\", \"required\": [\"intent\", \"confidence\"],"                       \
	" \"properties\": {"                                                                       \
	"  \"intent\": {\"type\": \"string\", \"enum\": [\"refund\", \"complaint\", \"consult\","  \
	"   \"other\"]},"                                                                          \
	"  \"confidence\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 1},"                \
	"  \"summary\": {\"type\": \"string\", \"minLength\": 4, \"maxLength\": 100,"              \
	"   \"pattern\": \"^[^<>]*$\"},"                                                           \
	"  \"priority\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 5},"                 \
	"  \"urgent\": {\"type\": \"boolean\"},"                                                   \
	"  \"note\": {\"type\": [\"string\", \"null\"], \"maxLength\": 20},"                       \
	"  \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\", \"maxLength\": 16}}," \
	"  \"scores\": {\"type\": \"array\", \"items\": {\"type\": \"number\"}},"                  \
	"  \"address\": {\"type\": \"object\", \"additionalProperties\": false,"                   \
	"   \"required\": [\"province\"],"                                                         \
	"   \"properties\": {\"province\": {\"type\": \"string\", \"minLength\": 1},"              \
	"    \"city\": {\"type\": \"string\"}, \"postcode\": {\"type\": [\"string\", "             \
	"\"integer\"],"                                                                            \
	"    \"pattern\": \"^[0-9]{6}$\"}}}},"                                                     \
	" \"description\": \"ticket classification\", \"$comment\": \"fuzz\"}"

struct fixture {
	struct output_cfg full;
	struct output_cfg loose;
	struct output_cfg text;
	struct rules_cfg rules;
};

static struct fixture fx;

static void
pattern_init(struct pattern_rule *pr, const char *field, const char *pattern)
{
	pr->field = xstrdup(field);
	pr->pattern = xstrdup(pattern);
	if (regcomp(&pr->re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
		abort();
}

static void
pattern_fini(struct pattern_rule *pr)
{
	free(pr->field);
	free(pr->pattern);
	regfree(&pr->re);
}

static void
full_init(struct output_cfg *oc)
{
	char *cause = NULL;

	oc->present = true;
	oc->schema = cJSON_Parse(SCHEMA);
	if (oc->schema == NULL || validate_compile(oc->schema, &oc->vschema, &cause) != 0)
		abort();
	oc->ndeny = 3;
	oc->deny = xcalloc((size_t)oc->ndeny, sizeof *oc->deny);
	pattern_init(&oc->deny[0], "summary", "未知|无法解析|unknown");
	pattern_init(&oc->deny[1], "tags", "^(internal|secret)$");
	pattern_init(&oc->deny[2], "address.province", "^(N/A|none|-)$");
	oc->nrules = 2;
	oc->rules = xcalloc((size_t)oc->nrules, sizeof *oc->rules);
	oc->rules[0].when_field = xstrdup("intent");
	oc->rules[0].when_equals = cJSON_CreateString("complaint");
	pattern_init(&oc->rules[0].deny, "summary", "感谢|表扬|thank");
	oc->rules[1].when_field = xstrdup("urgent");
	oc->rules[1].when_equals = cJSON_CreateTrue();
	pattern_init(&oc->rules[1].deny, "note", "^$");
	oc->confidence_field = xstrdup("confidence");
	oc->clamp_confidence = true;
	oc->reject_below = 0.3;
	oc->review_below = 0.7;
}

static void
loose_init(struct output_cfg *oc)
{
	oc->present = true;
	oc->ndeny = 1;
	oc->deny = xcalloc(1, sizeof *oc->deny);
	pattern_init(&oc->deny[0], "answer", "(ignore|disregard) (all )?previous");
	oc->confidence_field = xstrdup("meta.score");
	oc->reject_below = 0.5;
	oc->review_below = 0.9;
}

static void
output_fini(struct output_cfg *oc)
{
	int i;

	for (i = 0; i < oc->ndeny; i++)
		pattern_fini(&oc->deny[i]);
	free(oc->deny);
	for (i = 0; i < oc->nrules; i++) {
		free(oc->rules[i].when_field);
		cJSON_Delete(oc->rules[i].when_equals);
		pattern_fini(&oc->rules[i].deny);
	}
	free(oc->rules);
	free(oc->confidence_field);
	vschema_free(oc->vschema);
	cJSON_Delete(oc->schema);
	memset(oc, 0, sizeof *oc);
}

/* Keywords lower-cased, as the config loader leaves them. */
static void
rule_any(struct rule_match *m, const char *const *kw, int n, const char *intent, double conf)
{
	int i;

	m->any = xcalloc((size_t)n, sizeof *m->any);
	for (i = 0; i < n; i++)
		m->any[m->nany++] = xstrdup(kw[i]);
	m->result = cJSON_CreateObject();
	cJSON_AddStringToObject(m->result, "intent", intent);
	m->confidence = conf;
}

static void
rule_regex(struct rule_match *m, const char *re, const char *intent, double conf)
{
	m->regex = xstrdup(re);
	if (regcomp(&m->re, re, REG_EXTENDED | REG_NOSUB) != 0)
		abort();
	m->result = cJSON_CreateObject();
	cJSON_AddStringToObject(m->result, "intent", intent);
	m->confidence = conf;
}

static void
rules_init(struct rules_cfg *rc)
{
	static const char *const refund[] = {"退款", "退钱", "refund", "money back", "rf"};
	static const char *const consult[] = {"请问", "咨询", "how do i", "what is", "?"};
	static const char *const rep[] = {"aaaaaaaaaaaaaaaaab", "abababababababababc"};

	rc->enabled = true;
	rc->nmatch = 4;
	rc->match = xcalloc((size_t)rc->nmatch, sizeof *rc->match);
	rule_any(&rc->match[0], refund, (int)ARRAY_SIZE(refund), "refund", 0.6);
	rule_regex(&rc->match[1], "投诉|[Cc]omplain(t|ed)?", "complaint", 0.6);
	rule_any(&rc->match[2], rep, (int)ARRAY_SIZE(rep), "other", 0.4);
	rule_any(&rc->match[3], consult, (int)ARRAY_SIZE(consult), "consult", 0.5);
	rc->has_default = true;
	rc->default_result = cJSON_CreateObject();
	cJSON_AddStringToObject(rc->default_result, "intent", "other");
	rc->default_confidence = 0.3;
}

static void
rules_fini(struct rules_cfg *rc)
{
	int i, j;

	for (i = 0; i < rc->nmatch; i++) {
		for (j = 0; j < rc->match[i].nany; j++)
			free(rc->match[i].any[j]);
		free(rc->match[i].any);
		if (rc->match[i].regex != NULL)
			regfree(&rc->match[i].re);
		free(rc->match[i].regex);
		cJSON_Delete(rc->match[i].result);
	}
	free(rc->match);
	cJSON_Delete(rc->default_result);
	memset(rc, 0, sizeof *rc);
}

static void
fixture_fini(void)
{
	output_fini(&fx.full);
	output_fini(&fx.loose);
	output_fini(&fx.text);
	rules_fini(&fx.rules);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	full_init(&fx.full);
	loose_init(&fx.loose);
	rules_init(&fx.rules);
	atexit(fixture_fini);
	return 0;
}

static bool
terminated(const char *s, size_t n)
{
	return memchr(s, '\0', n) != NULL;
}

/* The documented contract of a validate_* answer. */
static void
result_check(int r, const struct validate_result *res, bool model_text)
{
	assert(terminated(res->rule, sizeof res->rule));
	assert(terminated(res->field, sizeof res->field));
	assert(terminated(res->detail, sizeof res->detail));
	if (r == 0) {
		assert(res->stage == 0);
		assert(res->result != NULL);
		if (res->has_confidence)
			assert(res->confidence == res->confidence);
		if (!model_text)
			assert(!res->review);
	} else {
		assert(r >= VALIDATE_E_FORMAT && r <= VALIDATE_E_CONFIDENCE);
		assert(res->stage == r);
		assert(res->result == NULL);
		assert(res->rule[0] != '\0');
		assert(strcmp(validate_stage_name(r), "unknown") != 0);
	}
}

static void
run_output(const struct output_cfg *oc, const char *text, size_t len)
{
	struct validate_result res;
	int r;

	r = validate_output(oc, text, len, &res);
	result_check(r, &res, true);
	if (r == 0 && oc->present && res.has_confidence)
		assert(res.confidence >= oc->reject_below);
	validate_result_clear(&res);
}

static void
run_value(const struct output_cfg *oc, const cJSON *v)
{
	struct validate_result res;
	int r;

	r = validate_value(oc, v, &res);
	result_check(r, &res, false);
	validate_result_clear(&res);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xmalloc(size > 0 ? size : 1);
	struct rules_hit hit;
	size_t start = 0, end = 0;
	cJSON *v;
	int r;

	/* Exactly size bytes, no terminating NUL: validate and rules take a length. */
	memcpy(text, data, size);

	run_output(&fx.full, text, size);
	run_output(&fx.loose, text, size);
	run_output(&fx.text, text, size);

	r = validate_extract_object(text, size, &start, &end);
	if (r == 0)
		assert(start < end && end <= size && text[start] == '{' && text[end - 1] == '}');
	else
		assert(r == VALIDATE_E_FORMAT);

	v = cJSON_ParseWithLength(text, size);
	if (v != NULL) {
		run_value(&fx.full, v);
		run_value(&fx.loose, v);
		run_value(&fx.text, v);
		cJSON_Delete(v);
	}

	r = rules_eval(&fx.rules, text, size, &hit);
	assert(r == 0); /* the rules have a default */
	assert(hit.result != NULL && hit.index >= -1 && hit.index < fx.rules.nmatch);

	free(text);
	return 0;
}
