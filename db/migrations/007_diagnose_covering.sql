-- 007_diagnose_covering: GET /v1/diagnose reads its window from indexes.
--
-- API.md "Diagnosis": the diagnosis reads every call and attempt started
-- in its window (100k attempts an hour on a busy route). By started_at
-- alone each row cost a lookup of the table's row (wide with inputs,
-- answers and raw output); these indexes hold the columns the diagnosis
-- reads, in (started_at, id) order, so its queries never leave them.
-- The window before counts its degradations by reason from
-- degradations_diag. The indexes by time alone stay (other reads use them).
-- Applied by store.c inside one transaction; do not add BEGIN/COMMIT here.

CREATE INDEX calls_diag ON calls (started_at, id, route, degraded, reason, source,
	http_status, elapsed_ms, budget_ms);
CREATE INDEX attempts_diag ON attempts (started_at, id, route, outcome, backend, call_id,
	attempt_no, connect_ms, first_byte_ms, total_ms, http_status, retry_after_ms,
	input_tokens);
CREATE INDEX degradations_diag ON degradations (at, route, reason, call_id);
