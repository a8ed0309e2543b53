#pragma once
/*
 * tracectx: W3C Trace Context level 1 (version 00). A traceparent header
 * parsed or formatted, a malformed one rejected (the caller then starts a
 * new trace), tracestate carried unchanged, trace and span ids drawn from
 * an injected struct rng. Pure; any thread.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rng.h"

/* "00-" 32 hex "-" 16 hex "-" 2 hex: 55 characters. */
#define TRACECTX_TRACEPARENT_LEN 55
#define TRACECTX_TRACE_HEX	 32
#define TRACECTX_SPAN_HEX	 16
/* W3C: tracestate up to 32 list members; 512 bytes is what a vendor must keep. */
#define TRACECTX_TRACESTATE_MAX 512

struct tracectx {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t flags; /* bit 0: sampled */
};

/*
 * Parse a traceparent value (leading and trailing blanks allowed). True
 * and *out set when it is a valid version-00 value (or a later version
 * whose first 55 characters read as one, as level 1 asks); false when
 * malformed, when the version is ff, or when either id is all zeros.
 */
bool tracectx_parse(const char *s, struct tracectx *out);
/* "00-{trace}-{span}-{flags}" into buf (at least TRACECTX_TRACEPARENT_LEN + 1). */
void tracectx_format(const struct tracectx *c, char *buf, size_t size);
/* Lowercase hex of the trace id (33 bytes) and a span id (17 bytes). */
void tracectx_trace_hex(const uint8_t id[16], char out[TRACECTX_TRACE_HEX + 1]);
void tracectx_span_hex(const uint8_t id[8], char out[TRACECTX_SPAN_HEX + 1]);
bool tracectx_sampled(const struct tracectx *c);
/* A new random, non-zero trace id; a new random, non-zero span id. */
void tracectx_new_trace_id(struct rng *r, uint8_t id[16]);
void tracectx_new_span_id(struct rng *r, uint8_t id[8]);
/*
 * The context of a call's span. With a parent (the caller's valid
 * traceparent), the trace id and the sampled flag are the parent's and
 * *parent_span gets the caller's span id; without one, a new trace starts,
 * sampled when sample_draw < sample_rate, and *parent_span is zeroed.
 */
void tracectx_child(const struct tracectx *parent, struct rng *r, double sample_rate,
		    double sample_draw, struct tracectx *out, uint8_t parent_span[8]);
/*
 * True when s is a tracestate worth forwarding: at most
 * TRACECTX_TRACESTATE_MAX bytes, visible ASCII, blanks and commas only
 * (no control characters, so it can go into a header unchanged).
 */
bool tracectx_tracestate_ok(const char *s);
