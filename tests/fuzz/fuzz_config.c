/*
 * fuzz_config: an operator's configuration file through config_load_string().
 *
 * The input (cut at its first NUL, as a file's text would be) is loaded
 * with a folder that does not exist, so path resolution is exercised
 * without touching the disk. A config that loads is then used the way the
 * engine uses it: route and backend lookups, and for every route the
 * output contract (its compiled schema, deny and conditional regexes) on a
 * few model answers and the rule engine (its keywords and regexes) on a
 * few caller inputs. The cause contract is asserted; config_free()
 * releases everything.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "rules.h"
#include "util.h"
#include "validate.h"

static const char *const answers[] = {
	"{\"intent\": \"refund\", \"confidence\": 0.92, \"summary\": \"wants the money back\"}",
	"```json\n{\"Intent\": \"complaint\", \"CONFIDENCE\": \"1.5\", \"summary\": "
	"\"unknown\"}\n```",
	"{\"province\": \"广东省\", \"city\": \"深圳市\", \"district\": \"南山区\", "
	"\"confidence\": 0.4}",
	"Sure: {\"answer\": \"42\", \"tags\": [\"a\", \"b\"], \"n\": 3, \"ok\": true, \"x\": null}",
	"{\"intent\": \"other\"",
	"",
};

static const char *const inputs[] = {
	"I want a refund for my order 12345",
	"请问怎么退款？投诉！",
	"HOW DO I reset my password",
	"",
};

static void
route_exercise(const struct config *c, const struct route_cfg *rc)
{
	struct validate_result res;
	struct rules_hit hit;
	size_t i;
	int r;

	assert(config_route(c, rc->name) != NULL);
	for (i = 0; i < ARRAY_SIZE(answers); i++) {
		r = validate_output(&rc->output, answers[i], strlen(answers[i]), &res);
		assert((r == 0) == (res.result != NULL));
		validate_result_clear(&res);
	}
	for (i = 0; i < ARRAY_SIZE(inputs); i++) {
		r = rules_eval(&rc->rules, inputs[i], strlen(inputs[i]), &hit);
		assert(r == 0 || r == RULES_E_NOMATCH || r == RULES_E_DISABLED);
		assert(r != 0 || hit.index < rc->rules.nmatch);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xmalloc(size + 1), *cause = NULL;
	struct config *c = NULL;
	int i, r;

	memcpy(text, data, size);
	text[size] = '\0';
	r = config_load_string(text, "/nonexistent/fuzz", &c, &cause);
	if (r == 0) {
		assert(c != NULL && cause == NULL);
		for (i = 0; i < c->nbackends; i++)
			assert(config_backend_index(c, c->backends[i].name) >= 0);
		for (i = 0; i < c->nroutes; i++)
			route_exercise(c, &c->routes[i]);
		assert(config_route(c, "\x01no such route") == NULL);
	} else {
		assert(r == CONFIG_E_INVALID || r == CONFIG_E_SYNTAX);
		assert(c == NULL && cause != NULL && cause[0] != '\0');
	}
	config_free(c);
	free(cause);
	free(text);
	return 0;
}
