#pragma once
/*
 * trace: OpenTelemetry spans of calls and attempts, and their export.
 * A span is built as its OTLP/JSON object (engine thread) and handed to
 * the exporter's bounded queue; one exporter thread batches the queue into
 * OTLP/HTTP JSON POSTs to tracing.endpoint with a timeout and retries.
 * When the queue is full a span is dropped and counted: a slow collector
 * never slows a call. The exporter is one per process (trace_install).
 */
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"

struct store;
struct trace_exporter;

/* OTLP span kinds and status codes (opentelemetry/proto/trace/v1/trace.proto). */
enum trace_kind { TRACE_KIND_SERVER = 2, TRACE_KIND_CLIENT = 3 };

/* A span being built (engine thread). */
struct trace_span {
	cJSON *o;
	cJSON *attrs;
	cJSON *events;
};

/*
 * The exporter for tc (tc->endpoint set), its thread started; st gets the
 * "trace_spans_dropped" event (once a minute at most). host and version:
 * the resource's host.name and service.version. NULL when tc has no
 * endpoint or the thread could not start (*cause then set, caller frees).
 */
struct trace_exporter *trace_exporter_new(const struct tracing_cfg *tc, struct store *st,
					  const char *host, const char *version, char **cause);
/* Stop the thread after one last flush of at most tracing.timeout_ms; free. */
void trace_exporter_free(struct trace_exporter *x);
/* The process's exporter (NULL: none): set by the composition root. */
void trace_install(struct trace_exporter *x);
struct trace_exporter *trace_installed(void);
/* Whether spans are exported at all (an exporter is installed). */
int trace_enabled(void);
/* Whether inputs and outputs go into attributes (tracing.include_io). */
int trace_include_io(void);
/* Spans dropped because the queue was full, since start (any thread). */
uint64_t trace_spans_dropped(void);

/*
 * Begin a span: name, kind, ids (parent NULL or all zero: a root span),
 * start in ns since the epoch.
 */
void trace_span_begin(struct trace_span *s, const char *name, enum trace_kind kind,
		      const uint8_t trace_id[16], const uint8_t span_id[8], const uint8_t parent[8],
		      int64_t start_ns);
void trace_attr_str(struct trace_span *s, const char *key, const char *v);
void trace_attr_int(struct trace_span *s, const char *key, int64_t v);
void trace_attr_bool(struct trace_span *s, const char *key, int v);
/* An attribute whose value is an array of one string (http.response.header.*). */
void trace_attr_str_array1(struct trace_span *s, const char *key, const char *v);
/*
 * An event at t_ns with string attributes: keys and values alternate in
 * kv, n pairs (a NULL value is left out).
 */
void trace_event(struct trace_span *s, const char *name, int64_t t_ns, const char *const *kv,
		 int n);
/*
 * End s at end_ns with status ERROR (error_msg, may be NULL) or unset, and
 * queue it for export (dropped and counted when the queue is full). s is
 * empty afterwards. Without an exporter the span is just freed.
 */
void trace_span_end(struct trace_span *s, int64_t end_ns, int error, const char *error_msg);
/* Free a span begun but not to be exported. */
void trace_span_discard(struct trace_span *s);

/*
 * The OTLP/HTTP JSON request body (ExportTraceServiceRequest) for n spans
 * (borrowed), with the resource attributes service.name, service.version
 * and host.name. New string. Pure (for tests, and the exporter).
 */
char *trace_export_body(cJSON *const *spans, int n, const char *service, const char *version,
			const char *host);
