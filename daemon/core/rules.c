/*
 * rules: the rule engine (CONFIG.md "rules"), the rung that is always
 * there.
 *
 * One evaluation lower-cases the input's ASCII bytes once into a stack
 * buffer (a heap one only for inputs over RULES_STACK_BYTES) and indexes
 * its byte pairs: a presence bitmap, and for stack-sized inputs a chain of
 * the positions of each (hashed) pair. An "any" keyword is rejected without
 * a search when one of its byte pairs is absent, which is most keywords for
 * ordinary inputs; a survivor is confirmed by comparing at the positions of
 * its first pair (at most PAIR_CHAIN_MAX of them, then memmem(), so a
 * repetitive input cannot make it quadratic). A "regex" rule runs
 * regexec() on a NUL-terminated copy of the original text (regexes are
 * case-sensitive), made on the first regex rule only. First match wins,
 * then the default.
 *
 * The config is borrowed and only read; regexec() on a shared regex_t is
 * safe. Pure, allocation-free for inputs up to RULES_STACK_BYTES (about
 * 20 KiB of stack per call); larger inputs allocate two copies and fail
 * with -ENOMEM. Runs on the engine thread (and in the rule-engine shadow).
 */
#include "rules.h"

#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Inputs up to this many bytes are evaluated without allocating. */
#define RULES_STACK_BYTES 4096

/* Byte-pair presence bitmap: 8192 bits, hashed. */
#define PAIR_BITS 8192u

/* Byte-pair position chains: heads per (coarser) hash, positions walked at most. */
#define PAIR_HEADS     1024u
#define PAIR_CHAIN_MAX 16

struct rules_input {
	const char *orig; /* the caller's bytes */
	size_t len;
	char *low;	/* ASCII-lower-cased copy, len bytes */
	char *cstr;	/* NUL-terminated copy of orig, made on demand; NULL until then */
	char *heap_low; /* owned when the input is larger than the stack buffers */
	char *heap_cstr;
	bool chained;			  /* head and next are built (len <= RULES_STACK_BYTES) */
	uint64_t bytes[4];		  /* which byte values occur in low */
	uint64_t pairs[PAIR_BITS / 64];	  /* which (hashed) byte pairs occur in low */
	uint16_t head[PAIR_HEADS];	  /* 1 + a position of a pair with this hash, 0: none */
	uint16_t next[RULES_STACK_BYTES]; /* 1 + the next position with the same hash, 0: end */
};

static inline unsigned
pair_hash(unsigned char a, unsigned char b)
{
	return (((unsigned)a << 5) ^ b) & (PAIR_BITS - 1);
}

static inline unsigned
pair_head(unsigned char a, unsigned char b)
{
	return (((unsigned)a << 3) ^ b ^ ((unsigned)a >> 5)) & (PAIR_HEADS - 1);
}

static inline bool
bit_test(const uint64_t *map, unsigned i)
{
	return (map[i >> 6] >> (i & 63)) & 1;
}

static inline void
bit_set(uint64_t *map, unsigned i)
{
	map[i >> 6] |= (uint64_t)1 << (i & 63);
}

static void
input_index(struct rules_input *in)
{
	const unsigned char *s = (const unsigned char *)in->orig;
	unsigned char *d = (unsigned char *)in->low;
	unsigned char c, prev = 0;
	unsigned h;
	size_t i;

	in->chained = in->len <= RULES_STACK_BYTES;
	memset(in->bytes, 0, sizeof in->bytes);
	memset(in->pairs, 0, sizeof in->pairs);
	if (in->chained)
		memset(in->head, 0, sizeof in->head);
	for (i = 0; i < in->len; i++) {
		c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		d[i] = c;
		bit_set(in->bytes, c);
		if (i > 0) {
			bit_set(in->pairs, pair_hash(prev, c));
			if (in->chained) {
				h = pair_head(prev, c);
				in->next[i - 1] = in->head[h];
				in->head[h] = (uint16_t)i;
			}
		}
		prev = c;
	}
}

/* Whether the lower-cased input contains kw (already lower-cased). */
static bool
input_has(const struct rules_input *in, const char *kw)
{
	const unsigned char *k = (const unsigned char *)kw;
	size_t n = strlen(kw), i, p;
	unsigned walked = 0, pos;
	bool has = false;

	if (n == 0 || n > in->len)
		goto out;
	if (n == 1) {
		has = bit_test(in->bytes, k[0]);
		goto out;
	}
	for (i = 1; i < n; i++) {
		if (!bit_test(in->pairs, pair_hash(k[i - 1], k[i])))
			goto out;
	}
	if (in->chained) {
		pos = in->head[pair_head(k[0], k[1])];
		for (; pos != 0 && walked < PAIR_CHAIN_MAX; pos = in->next[p], walked++) {
			p = pos - 1;
			if (p + n <= in->len && memcmp(in->low + p, kw, n) == 0) {
				has = true;
				goto out;
			}
		}
		if (pos == 0)
			goto out;
	}
	has = memmem(in->low, in->len, kw, n) != NULL;
out:
	return has;
}

static bool
rule_any_match(const struct rule_match *m, const struct rules_input *in)
{
	bool hit = false;
	int i;

	for (i = 0; i < m->nany && !hit; i++)
		hit = m->any[i] != NULL && input_has(in, m->any[i]);
	return hit;
}

int
rules_eval(const struct rules_cfg *rc, const char *input, size_t len, struct rules_hit *hit)
{
	char low_stack[RULES_STACK_BYTES], cstr_stack[RULES_STACK_BYTES + 1];
	struct rules_input in; /* not zeroed whole: input_index() clears what it reads */
	const struct rule_match *m;
	int i, r = RULES_E_NOMATCH;

	in.orig = input != NULL ? input : "";
	in.len = input != NULL ? len : 0;
	in.low = NULL;
	in.cstr = NULL;
	in.heap_low = NULL;
	in.heap_cstr = NULL;
	hit->result = NULL;
	hit->confidence = 0;
	hit->index = -1;
	if (rc == NULL || !rc->enabled) {
		r = RULES_E_DISABLED;
		goto out;
	}
	if (in.len <= RULES_STACK_BYTES) {
		in.low = low_stack;
	} else {
		in.heap_low = malloc(in.len);
		if (in.heap_low == NULL) {
			r = -ENOMEM;
			goto out;
		}
		in.low = in.heap_low;
	}
	input_index(&in);
	for (i = 0; i < rc->nmatch; i++) {
		m = &rc->match[i];
		if (m->regex != NULL) {
			if (in.cstr == NULL) {
				if (in.len <= RULES_STACK_BYTES) {
					in.cstr = cstr_stack;
				} else {
					in.heap_cstr = malloc(in.len + 1);
					if (in.heap_cstr == NULL) {
						r = -ENOMEM;
						goto out;
					}
					in.cstr = in.heap_cstr;
				}
				memcpy(in.cstr, in.orig, in.len);
				in.cstr[in.len] = '\0';
			}
			if (regexec(&m->re, in.cstr, 0, NULL, 0) != 0)
				continue;
		} else if (!rule_any_match(m, &in)) {
			continue;
		}
		hit->result = m->result;
		hit->confidence = m->confidence;
		hit->index = i;
		r = 0;
		goto out;
	}
	if (rc->has_default) {
		hit->result = rc->default_result;
		hit->confidence = rc->default_confidence;
		hit->index = -1;
		r = 0;
	}
out:
	free(in.heap_cstr);
	free(in.heap_low);
	return r;
}
