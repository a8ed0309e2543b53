-- 005_trace_upstream_headers: trace ids and what the upstream said.
--
-- API.md "Tracing": calls.trace_id is the W3C trace id of the call's span
-- (32 lowercase hex), attempts.span_id the span id of the attempt's span
-- (16 hex), the one sent upstream in traceparent. CONFIG.md
-- "record_response_headers": attempts.upstream_headers is a JSON object of
-- the backend's recorded response headers (lowercase names), NULL when
-- none was configured or present. Rows written before read NULL.
-- Applied by store.c inside one transaction; do not add BEGIN/COMMIT here.

ALTER TABLE calls ADD COLUMN trace_id TEXT;
ALTER TABLE attempts ADD COLUMN span_id TEXT;
ALTER TABLE attempts ADD COLUMN upstream_headers TEXT;
