-- 006_audit_action_id: one fan-out action traced across the fleet.
--
-- API.md "Fleet": a fan-out operation sends the same request to each
-- daemon with X-Fusebox-Action-Id; each daemon stores that id on the audit
-- row the request wrote. NULL for a change made without the header, and
-- for rows written before this migration.
-- Applied by store.c inside one transaction; do not add BEGIN/COMMIT here.

ALTER TABLE audit ADD COLUMN action_id TEXT;
