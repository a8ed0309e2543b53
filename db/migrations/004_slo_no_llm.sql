-- 004_slo_no_llm: smart availability leaves out the caller's own choice.
--
-- DESIGN.md "SLO definitions": smart_total = total minus the calls whose
-- caller did not ask for a model (allow_llm: false). no_llm counts those
-- calls per route and minute (they stay in total and in the service SLO);
-- rows written before this migration read 0, as they were counted then.
-- Applied by store.c inside one transaction; do not add BEGIN/COMMIT here.

ALTER TABLE slo_minutes ADD COLUMN no_llm INTEGER NOT NULL DEFAULT 0;
