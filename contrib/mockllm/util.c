/*
 * util: what every file of the mock shares and main.c only wires — the
 * mock's state (struct mock, mockllm.h), allocation that aborts, the
 * monotonic clock, the log line, the seeded random numbers, the duration
 * format of the rate-limit headers. Private copies of the daemon's
 * helpers: the mock links nothing of the daemon.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>

#include "mockllm.h"

struct mock mock = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.epfd = -1,
	.wakefd = -1,
};

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL) {
		fprintf(stderr, "fusebox-mockllm: out of memory (%zu)\n", n);
		abort();
	}
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL) {
		fprintf(stderr, "fusebox-mockllm: out of memory (%zu)\n", n);
		abort();
	}
	return q;
}

char *
xstrdup(const char *s)
{
	size_t n = strlen(s);
	char *p = xmalloc(n + 1);

	memcpy(p, s, n + 1);
	return p;
}

char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0) {
		fprintf(stderr, "fusebox-mockllm: out of memory\n");
		abort();
	}
	va_end(ap);
	return p;
}

int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
log_line(const char *fmt, ...)
{
	va_list ap;

	if (mock.quiet)
		return;
	va_start(ap, fmt);
	fputs("fusebox-mockllm: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* splitmix64; caller holds mock.lock. */
uint64_t
rng_next(void)
{
	uint64_t z;

	mock.rng += 0x9e3779b97f4a7c15ULL;
	z = mock.rng;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * ms as Go's time.Duration prints it, which is OpenAI's rate-limit reset
 * format: "0s", "20ms", "1.5s", "6m0s", "1h2m3.25s".
 */
void
duration_format(char *buf, size_t n, int64_t ms)
{
	char sec[32];
	int64_t h, m, s, frac;
	size_t len;

	if (ms <= 0) {
		snprintf(buf, n, "0s");
		return;
	}
	if (ms < 1000) {
		snprintf(buf, n, "%" PRId64 "ms", ms);
		return;
	}
	h = ms / 3600000;
	m = ms / 60000 % 60;
	s = ms / 1000 % 60;
	frac = ms % 1000;
	if (frac == 0) {
		snprintf(sec, sizeof sec, "%" PRId64, s);
	} else {
		snprintf(sec, sizeof sec, "%" PRId64 ".%03" PRId64, s, frac);
		len = strlen(sec);
		while (sec[len - 1] == '0')
			sec[--len] = '\0';
	}
	if (h > 0)
		snprintf(buf, n, "%" PRId64 "h%" PRId64 "m%ss", h, m, sec);
	else if (m > 0)
		snprintf(buf, n, "%" PRId64 "m%ss", m, sec);
	else
		snprintf(buf, n, "%ss", sec);
}
