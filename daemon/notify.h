#pragma once
/*
 * notify: fire-and-forget JSON POSTs off the engine thread — alert
 * webhooks, Alertmanager, async job results, review corrections. One
 * worker thread with its own curl multi; a bounded queue (full → the
 * message is dropped and counted, never blocking the caller); each message
 * is retried with exponential backoff (1 s, 2 s, 4 s, … at most `tries`
 * times) on connect errors, timeouts and 5xx/429. Thread-safe.
 */
#include <stdint.h>

struct notify;

struct notify_stats {
	uint64_t queued, delivered, failed, dropped;
};

int notify_new(int queue_cap, struct notify **out);
/* Flush what can be delivered within grace_ms, then stop. NULL ok. */
void notify_free(struct notify *n, int grace_ms);
/* POST body (copied) as application/json to url; kind ("alert", "callback", ...) for logs. 0 or
 * -ENOSPC (dropped). */
int notify_post(struct notify *n, const char *url, const char *body, const char *kind, int tries);
void notify_get_stats(struct notify *n, struct notify_stats *out);
