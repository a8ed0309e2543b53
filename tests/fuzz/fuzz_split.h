#pragma once
/*
 * fuzz_split: the input layout shared by the request-body targets:
 *
 *	BODY [ NUL X-Request-ID [ NUL X-Fusebox-Budget-Ms ] ]
 *
 * A header value is a C string (MHD hands them over NUL-terminated), so a
 * NUL cannot occur in one and is free to separate them; an absent part is
 * an absent header (NULL), an empty part an empty value. The body is
 * copied into a buffer of exactly its length, without a terminating NUL,
 * so ASan reports any read past it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct fuzz_split {
	char *body; /* len bytes, not NUL-terminated */
	size_t len;
	char *hdr_request_id; /* NULL: absent */
	char *hdr_budget;     /* NULL: absent */
};

static inline void
fuzz_split(const uint8_t *data, size_t size, struct fuzz_split *s)
{
	const uint8_t *nul = memchr(data, '\0', size), *rest, *nul2;
	size_t n;

	memset(s, 0, sizeof *s);
	s->len = nul != NULL ? (size_t)(nul - data) : size;
	s->body = xmalloc(s->len > 0 ? s->len : 1);
	memcpy(s->body, data, s->len);
	if (nul == NULL)
		return;
	rest = nul + 1;
	n = size - (size_t)(rest - data);
	nul2 = memchr(rest, '\0', n);
	s->hdr_request_id = xstrndup((const char *)rest, nul2 != NULL ? (size_t)(nul2 - rest) : n);
	if (nul2 != NULL) {
		rest = nul2 + 1;
		n = size - (size_t)(rest - data);
		s->hdr_budget = xstrndup((const char *)rest, n);
	}
}

static inline void
fuzz_split_free(struct fuzz_split *s)
{
	free(s->body);
	free(s->hdr_request_id);
	free(s->hdr_budget);
	memset(s, 0, sizeof *s);
}
