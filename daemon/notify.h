#pragma once
/*
 * notify: fire-and-forget JSON POSTs off the engine thread — alert
 * webhooks, Alertmanager, async job results, review corrections. One
 * worker thread with its own curl multi; a bounded queue (full → the
 * message is dropped and counted, never blocking the caller); each message
 * is retried with exponential backoff (1 s, 2 s, 4 s, … at most `tries`
 * times) on connect errors, timeouts and 5xx/429. Redirects are not
 * followed. With an allow list (notify_allow_set) every connection is
 * checked against it after DNS, at the address it would connect to.
 * Thread-safe.
 */
#include <stdint.h>

#include "addr.h"

struct notify;

struct notify_stats {
	uint64_t queued, delivered, failed, dropped;
	uint64_t refused; /* not sent: the target is not on the allow list */
};

int notify_new(int queue_cap, struct notify **out);
/* Flush what can be delivered within grace_ms, then stop. NULL ok. */
void notify_free(struct notify *n, int grace_ms);
/* POST body (copied) as application/json to url; kind ("alert", "callback", ...) for logs. 0 or
 * -ENOSPC (dropped). */
int notify_post(struct notify *n, const char *url, const char *body, const char *kind, int tries);
void notify_get_stats(struct notify *n, struct notify_stats *out);
/*
 * From now on, connect only where rules (copied; n may be 0: nowhere) let
 * through: addr_allowed() on the URL's host, the resolved address and its
 * port. A message refused so is not retried (logged, stats.refused). An
 * instance never given a list connects anywhere (alert webhooks: targets
 * the config names).
 */
void notify_allow_set(struct notify *n, const struct addr_rule *rules, int nrules);
