-- 003_calls_request_id: GET /v1/requests/{id} by request id alone.
--
-- The latest call of a request id (STORE_Q_CALL_ROUTE, STORE_Q_CALL_RESPONSE:
-- "WHERE request_id = ?1 ORDER BY id DESC LIMIT 1") was a full scan of calls,
-- since the only index on request_id leads with route. With (request_id, id)
-- an unknown id costs one index probe however large the table is
-- (issue 27, F1).
-- Applied by store.c inside one transaction; do not add BEGIN/COMMIT here.

CREATE INDEX calls_request_id ON calls (request_id, id);
