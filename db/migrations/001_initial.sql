-- 001_initial: the fusebox schema (contract: /work/shared/SCHEMA.md).
--
-- Times are Unix epoch milliseconds (INTEGER); JSON is TEXT.
-- slo_minutes.minute is the epoch ms of the minute's start (a multiple of
-- 60000). Log-row ids (calls, attempts, validation_failures, degradations)
-- are assigned by fuseboxd, because rows are written asynchronously and must
-- reference each other; the other tables let SQLite assign ids.
-- Applied by store.c inside one transaction; do not add BEGIN/COMMIT here.

CREATE TABLE IF NOT EXISTS schema_migrations (
	version		INTEGER PRIMARY KEY,
	applied_at	INTEGER
);

-- One row per guarded call.
CREATE TABLE calls (
	id		INTEGER PRIMARY KEY,
	request_id	TEXT,
	route		TEXT NOT NULL,
	started_at	INTEGER NOT NULL,
	finished_at	INTEGER,
	elapsed_ms	INTEGER,
	budget_ms	INTEGER,
	level		TEXT,		-- route level in force (L0..L3)
	source		TEXT,		-- llm|backup|rules|cache|preset|manual
	backend		TEXT,
	degraded	INTEGER NOT NULL DEFAULT 0,
	reason		TEXT,
	attempts	INTEGER NOT NULL DEFAULT 0,
	confidence	REAL,
	review		INTEGER NOT NULL DEFAULT 0,
	http_status	INTEGER,
	input		TEXT,		-- JSON
	result		TEXT,		-- JSON
	response	TEXT,		-- full JSON answer body, for idempotent replay
	status		TEXT		-- done|failed
);
CREATE UNIQUE INDEX calls_route_request_id ON calls (route, request_id);
CREATE INDEX calls_started_at ON calls (started_at);

-- One row per upstream HTTP attempt.
CREATE TABLE attempts (
	id		INTEGER PRIMARY KEY,
	call_id		INTEGER NOT NULL,
	request_id	TEXT,
	route		TEXT NOT NULL,
	backend		TEXT,
	attempt_no	INTEGER,
	started_at	INTEGER NOT NULL,
	timeout_ms	INTEGER,	-- total timeout this attempt was given
	connect_ms	INTEGER,
	first_byte_ms	INTEGER,
	total_ms	INTEGER,
	http_status	INTEGER,
	outcome		TEXT,		-- outcome class (DESIGN.md step 6)
	retry_after_ms	INTEGER,
	input_tokens	INTEGER,
	output_tokens	INTEGER,
	raw_output	TEXT		-- bounded excerpt
);
CREATE INDEX attempts_call_id ON attempts (call_id);
CREATE INDEX attempts_started_at ON attempts (started_at);

-- One row per failed check of an attempt's output. "at" (not in the
-- contract) is the time of the check; retention prunes by it.
CREATE TABLE validation_failures (
	id		INTEGER PRIMARY KEY,
	attempt_id	INTEGER,
	call_id		INTEGER NOT NULL,
	route		TEXT NOT NULL,
	stage		TEXT,		-- format|schema|semantic|confidence
	rule		TEXT,
	detail		TEXT,
	raw_output	TEXT,
	at		INTEGER
);
CREATE INDEX validation_failures_call_id ON validation_failures (call_id);
CREATE INDEX validation_failures_at ON validation_failures (at);

-- One row per fall or skip on the ladder.
CREATE TABLE degradations (
	id		INTEGER PRIMARY KEY,
	call_id		INTEGER NOT NULL,
	route		TEXT NOT NULL,
	from_step	TEXT,
	to_step		TEXT,
	reason		TEXT,
	at		INTEGER NOT NULL
);
CREATE INDEX degradations_call_id ON degradations (call_id);
CREATE INDEX degradations_at ON degradations (at);

-- Breaker transitions, level and weight changes, canary rollbacks, alert
-- changes, review overflow, dropped log rows.
CREATE TABLE events (
	id		INTEGER PRIMARY KEY,
	at		INTEGER NOT NULL,
	kind		TEXT NOT NULL,
	subject		TEXT,
	detail		TEXT
);
CREATE INDEX events_at ON events (at);

-- Review items.
CREATE TABLE reviews (
	id		INTEGER PRIMARY KEY,
	route		TEXT NOT NULL,
	request_id	TEXT,
	call_id		INTEGER,
	priority	INTEGER NOT NULL DEFAULT 0,
	reason		TEXT,
	state		TEXT NOT NULL,
	created_at	INTEGER NOT NULL,
	due_at		INTEGER,
	input		TEXT,		-- JSON
	raw_output	TEXT,
	result		TEXT,		-- JSON
	confidence	REAL,
	alt_result	TEXT,		-- JSON
	reviewer	TEXT,
	verdict		TEXT,
	corrected_result TEXT,		-- JSON
	note		TEXT,
	decided_at	INTEGER
);
CREATE INDEX reviews_state_due_at ON reviews (state, due_at);
CREATE INDEX reviews_route ON reviews (route);
CREATE INDEX reviews_request_id ON reviews (request_id);
CREATE INDEX reviews_decided_at ON reviews (decided_at);

-- Async (L3) requests.
CREATE TABLE jobs (
	id		INTEGER PRIMARY KEY,
	request_id	TEXT NOT NULL,
	route		TEXT NOT NULL,
	state		TEXT NOT NULL,	-- queued|running|done|failed
	body		TEXT,		-- JSON request body
	created_at	INTEGER NOT NULL,
	updated_at	INTEGER NOT NULL,
	tries		INTEGER NOT NULL DEFAULT 0,
	response	TEXT		-- JSON answer once done/failed
);
CREATE INDEX jobs_state_created_at ON jobs (state, created_at);
CREATE UNIQUE INDEX jobs_request_id ON jobs (request_id);
CREATE INDEX jobs_updated_at ON jobs (updated_at);

-- Live operator overrides in force.
CREATE TABLE overrides (
	kind		TEXT NOT NULL,	-- level|weights|breaker
	subject		TEXT NOT NULL,
	value		TEXT,
	actor		TEXT,
	reason		TEXT,
	until		INTEGER,	-- NULL: until removed
	at		INTEGER NOT NULL,
	PRIMARY KEY (kind, subject)
);

-- Operator actions.
CREATE TABLE audit (
	id		INTEGER PRIMARY KEY,
	at		INTEGER NOT NULL,
	actor		TEXT,
	action		TEXT NOT NULL,
	target		TEXT,
	before		TEXT,		-- JSON
	after		TEXT,		-- JSON
	remote		TEXT
);
CREATE INDEX audit_at ON audit (at);

-- Alert state changes.
CREATE TABLE alerts (
	id		INTEGER PRIMARY KEY,
	rule		TEXT NOT NULL,
	route		TEXT,
	severity	TEXT,
	state		TEXT NOT NULL,
	value		REAL,
	threshold	REAL,
	at		INTEGER NOT NULL
);
CREATE INDEX alerts_at ON alerts (at);

-- Route x minute counters.
CREATE TABLE slo_minutes (
	route		TEXT NOT NULL,
	minute		INTEGER NOT NULL,	-- epoch ms of the minute's start
	total		INTEGER NOT NULL DEFAULT 0,
	service_good	INTEGER NOT NULL DEFAULT 0,
	smart_good	INTEGER NOT NULL DEFAULT 0,
	latency_ok	INTEGER NOT NULL DEFAULT 0,
	timeouts	INTEGER NOT NULL DEFAULT 0,
	retries		INTEGER NOT NULL DEFAULT 0,
	attempts	INTEGER NOT NULL DEFAULT 0,
	format_violations INTEGER NOT NULL DEFAULT 0,
	src_llm		INTEGER NOT NULL DEFAULT 0,
	src_backup	INTEGER NOT NULL DEFAULT 0,
	src_rules	INTEGER NOT NULL DEFAULT 0,
	src_cache	INTEGER NOT NULL DEFAULT 0,
	src_preset	INTEGER NOT NULL DEFAULT 0,
	src_manual	INTEGER NOT NULL DEFAULT 0,
	review_decided	INTEGER NOT NULL DEFAULT 0,
	review_corrected INTEGER NOT NULL DEFAULT 0,
	shadow_total	INTEGER NOT NULL DEFAULT 0,
	shadow_agree	INTEGER NOT NULL DEFAULT 0,
	cross_total	INTEGER NOT NULL DEFAULT 0,
	cross_agree	INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (route, minute)
);
CREATE INDEX slo_minutes_minute ON slo_minutes (minute);

-- Result cache.
CREATE TABLE cache (
	route		TEXT NOT NULL,
	key		TEXT NOT NULL,
	result		TEXT,		-- JSON
	confidence	REAL,
	stored_at	INTEGER NOT NULL,
	PRIMARY KEY (route, key)
);
