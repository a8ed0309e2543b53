/*
 * The h2 connection gate (attempt_gate.c): attempts on a multiplexed host
 * are handed to libcurl while its connections have room, else held back
 * while one of them opens a connection; and libcurl's upload buffer of an
 * attempt is freed once its body is out. Engine thread.
 */
#ifndef FUSEBOX_ATTEMPT_GATE_H
#define FUSEBOX_ATTEMPT_GATE_H

#include <curl/curl.h>

#include "config.h"
#include "engine.h"
#include "timerheap.h"

/* An attempt's place at its gate (in struct attempt; attempt_gate.c's). */
struct attempt_gw {
	struct engine *e;
	CURL *easy;
	struct h2_gate *gate;	 /* NULL: not gated */
	struct attempt_gw *next; /* in the gate's queue while held back */
	int state;		 /* GW_*, attempt_gate.c's */
	int opener;		 /* released to open a connection of its own */
	struct timer t_gate;	 /* its request went out: the gate lets the next ones go */
	struct timer t_ulbuf;	 /* its body went out: libcurl's upload buffer is freed */
	int ulbuf_freed;
};

/* Hand a (its easy handle set up) to curl now, or hold it back. */
void attempt_gate_start(struct attempt_gw *a, struct engine *e, CURL *easy,
			const struct backend_cfg *bc);
/* a's request goes out (curl's prereq callback): its connection is up. */
void attempt_gate_settled(struct attempt_gw *a);
/* a ends (its handle removed): out of the gate; the held ones that fit go. */
void attempt_gate_end(struct attempt_gw *a);

#endif
