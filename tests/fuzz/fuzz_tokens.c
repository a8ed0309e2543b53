/*
 * fuzz_tokens: the text of a bearer tokens file through tokens_parse()
 * (cut at its first NUL, as tokens_load() reads a file into a C string).
 * Asserted: 0 with a set in which every token is found again by
 * tokens_find() with a known role and a name, or TOKENS_E_INVALID with a
 * cause of "line N: ..." lines; tokens_free() releases the set.
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokens.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xmalloc(size + 1), *cause = NULL;
	struct tokens *t = NULL;
	const struct token *found;
	int i, r;

	memcpy(text, data, size);
	text[size] = '\0';
	r = tokens_parse(text, &t, &cause);
	if (r == 0) {
		assert(t != NULL && cause == NULL && t->n >= 0);
		for (i = 0; i < t->n; i++) {
			assert(t->v[i].token != NULL && t->v[i].token[0] != '\0');
			assert(t->v[i].name != NULL && t->v[i].name[0] != '\0');
			assert(role_name(t->v[i].role) != NULL);
			found = tokens_find(t, t->v[i].token);
			assert(found == &t->v[i]);
		}
		assert(tokens_find(t, "") == NULL);
	} else {
		assert(r == TOKENS_E_INVALID);
		assert(t == NULL && cause != NULL && strncmp(cause, "line ", 5) == 0);
	}
	tokens_free(t);
	free(cause);
	free(text);
	return 0;
}
