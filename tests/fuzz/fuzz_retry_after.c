/*
 * fuzz_retry_after: an upstream's Retry-After header value through
 * retry_parse_retry_after(). The value is handed over as (pointer, length)
 * without a terminating NUL, and parsed against several wall clocks
 * (the epoch, a 2026 date, the extremes) so the date arithmetic meets its
 * overflow edges. Asserted: 0 with a wait >= 0, or -EINVAL; the answer
 * for an HTTP-date moves with the clock, never below 0.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "retry.h"
#include "util.h"

static const int64_t clocks[] = {
	0, 1795435200000 /* 2026-11-22T12:00:00Z */, -1, INT64_MIN, INT64_MAX,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *value = xmalloc(size > 0 ? size : 1);
	int64_t out, first = -1;
	size_t i;
	int r, r0 = 0;

	memcpy(value, data, size);
	for (i = 0; i < ARRAY_SIZE(clocks); i++) {
		out = -42;
		r = retry_parse_retry_after(value, size, clocks[i], &out);
		if (r == 0)
			assert(out >= 0);
		else
			assert(r == -EINVAL && out == -42);
		/* Whether the value parses does not depend on the clock. */
		if (i == 0)
			r0 = r;
		assert(r == r0);
		if (r == 0 && i == 0)
			first = out;
		/* A later clock never makes the wait longer. */
		if (r == 0 && i == 1 && first >= 0)
			assert(out <= first);
	}
	free(value);
	return 0;
}
