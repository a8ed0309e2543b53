/*
 * api_diagnose: GET /v1/diagnose?route=R&since=15m (viewer).
 *
 * The window is [now - since, now], its rows read by time on the tables'
 * time indexes (STORE_Q_DIAG_*; calls and attempts on covering ones, so
 * that no row of the wide tables is visited): its degraded calls as rows,
 * its other calls only as what the diagnosis counts of them, by route and
 * minute (STORE_Q_DIAG_HEALTHY: three in four calls of a large window,
 * each one packed integer instead of nine columns). The one before it, as
 * long again, only as
 * the episode and the causes' history need it: its SLO minutes and its
 * degradations by reason (its calls as rows were a third of the cost of a
 * large window). All after a flush marker, so that every row queued
 * before the request counts. The reads go through the diagnoses' own
 * reader (kept open, see worker below), bounded by
 * DIAG_READ_MS of wall time and DIAG_ROWS_MAX rows a query (the answer's
 * window says "truncated": true when one had more): the engine's
 * reader keeps its own short deadline for the call path. Strings are
 * interned, so a 100k-row window costs a few distinct strings, not one
 * allocation a row. Successful attempts beyond the first
 * DIAG_OK_SAMPLE_FROM keep only route, backend and outcome (they count),
 * and every DIAG_OK_SAMPLE_EVERY-th keeps its figures: the succeeding
 * side's medians come from that sample, and reading the columns of every
 * success was most of the time a large window took. The handler runs on
 * the engine thread, the reads and the analysis on the diagnose worker.
 */
#include "api_diagnose.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "clock.h"
#include "diagnose.h"
#include "engine.h"
#include "jsonutil.h"
#include "util.h"
#include "wire.h"

#define DIAG_ROWS_MAX	     300000
#define DIAG_OK_SAMPLE_FROM  10000
#define DIAG_OK_SAMPLE_EVERY 8
#define DIAG_META_ROWS_MAX   10000
#define DIAG_READ_MS	     2000
#define DIAG_MMAP_BYTES	     (256LL << 20)
#define DIAG_CACHE_KIB	     16384
#define DIAG_KEEP_BYTES	     (32u << 20)
#define DIAG_SINCE_DEFAULT   "15m"
#define DIAG_SINCE_MAX_MS    (31LL * 24 * 3600 * 1000)
#define INTERN_INITIAL_SLOTS 256

/*
 * Interned strings: one copy of each distinct text, freed with the pool.
 * Most columns repeat the previous row's value, so each column slot
 * remembers its last string and tries it before the hash.
 */
#define POOL_SLOTS 18

struct pool {
	char **slot;
	size_t nslots, used;
	const char *last[POOL_SLOTS];
};

static const char *
pool_lookup(struct pool *p, const char *s)
{
	size_t i, j;

	if (2 * (p->used + 1) > p->nslots) {
		size_t n = p->nslots ? 2 * p->nslots : INTERN_INITIAL_SLOTS;
		char **ns = xcalloc(n, sizeof *ns);

		for (i = 0; i < p->nslots; i++) {
			if (p->slot[i] == NULL)
				continue;
			for (j = str_hash(STR_HASH_SEED, p->slot[i]) & (n - 1); ns[j] != NULL;
			     j = (j + 1) & (n - 1))
				;
			ns[j] = p->slot[i];
		}
		free(p->slot);
		p->slot = ns;
		p->nslots = n;
	}
	for (j = str_hash(STR_HASH_SEED, s) & (p->nslots - 1); p->slot[j] != NULL;
	     j = (j + 1) & (p->nslots - 1))
		if (strcmp(p->slot[j], s) == 0)
			return p->slot[j];
	p->slot[j] = xstrdup(s);
	p->used++;
	return p->slot[j];
}

/* The interned copy of text t (NULL for NULL), trying slot's last string first. */
static const char *
pool_intern(struct pool *p, int slot, const unsigned char *t)
{
	const char *s = (const char *)t;

	if (s == NULL)
		return NULL;
	if (p->last[slot] == NULL || strcmp(p->last[slot], s) != 0)
		p->last[slot] = pool_lookup(p, s);
	return p->last[slot];
}

static void
pool_free(struct pool *p)
{
	size_t i;

	for (i = 0; i < p->nslots; i++)
		free(p->slot[i]);
	free(p->slot);
}

/* What the row callbacks fill. */
struct diag_read {
	struct pool pool;
	struct diag_call *calls;
	int ncalls, cap_calls;
	struct diag_minute *minutes;
	int nminutes, cap_minutes;
	struct diag_reason_count *reasons;
	int nreasons, cap_reasons;
	struct diag_healthy *healthy;
	int nhealthy, cap_healthy, nhealthy_rows;
	struct diag_attempt *atts;
	int natts, cap_atts, nok;
	struct diag_vfail *vfails;
	int nvfails, cap_vfails;
	struct diag_event *events;
	int nevents, cap_events;
	struct diag_audit *audit;
	int naudit, cap_audit;
	int truncated;
};

/* Room for one more element in *v (n used, *cap allocated) of size sz. */
static void *
grow(void *v, int n, int *cap, size_t sz)
{
	if (n < *cap)
		return v;
	*cap = *cap ? 2 * *cap : 1024;
	return xrealloc(v, (size_t)*cap * sz);
}

/* One call into the statement a column (the value's own accessors are cheap). */
static int64_t
col_i64(sqlite3_stmt *row, int i)
{
	sqlite3_value *v = sqlite3_column_value(row, i);

	return sqlite3_value_type(v) == SQLITE_NULL ? -1 : sqlite3_value_int64(v);
}

static int
prev_minute_row(void *arg, sqlite3_stmt *row)
{
	struct diag_read *d = arg;
	struct diag_minute *m;

	d->minutes = grow(d->minutes, d->nminutes, &d->cap_minutes, sizeof *d->minutes);
	m = &d->minutes[d->nminutes++];
	m->route = pool_intern(&d->pool, 16, sqlite3_column_text(row, 0));
	m->minute = sqlite3_column_int64(row, 1);
	m->calls = sqlite3_column_int(row, 2);
	m->degraded = sqlite3_column_int(row, 3);
	return 0;
}

static int
prev_reason_row(void *arg, sqlite3_stmt *row)
{
	struct diag_read *d = arg;
	struct diag_reason_count *r;

	d->reasons = grow(d->reasons, d->nreasons, &d->cap_reasons, sizeof *d->reasons);
	r = &d->reasons[d->nreasons++];
	r->route = pool_intern(&d->pool, 17, sqlite3_column_text(row, 0));
	r->reason = pool_intern(&d->pool, 17, sqlite3_column_text(row, 1));
	r->calls = sqlite3_column_int(row, 2);
	return 0;
}

static int
call_row(void *arg, sqlite3_stmt *row)
{
	struct diag_read *d = arg;
	struct diag_call *c;

	d->calls = grow(d->calls, d->ncalls, &d->cap_calls, sizeof *d->calls);
	c = &d->calls[d->ncalls++];
	c->id = sqlite3_column_int64(row, 0);
	c->route = pool_intern(&d->pool, 0, sqlite3_column_text(row, 1));
	c->started_at = sqlite3_column_int64(row, 2);
	c->degraded = sqlite3_column_int(row, 3) != 0;
	c->reason = pool_intern(&d->pool, 1, sqlite3_column_text(row, 4));
	c->source = pool_intern(&d->pool, 2, sqlite3_column_text(row, 5));
	c->http_status = (int)col_i64(row, 6);
	c->elapsed_ms = col_i64(row, 7);
	c->budget_ms = col_i64(row, 8);
	return 0;
}

/*
 * A healthy call, counted into its route's minute: rows come by time, so
 * a route's minute is its newest entry (found by route, few of them).
 */
static int
healthy_row(void *arg, sqlite3_stmt *row)
{
	struct diag_read *d = arg;
	const char *route = pool_intern(&d->pool, 0, sqlite3_column_text(row, 0));
	int64_t v = sqlite3_column_int64(row, 1), minute = v / 8 * 60000;
	struct diag_healthy *h = NULL;
	int i;

	d->nhealthy_rows++;
	for (i = d->nhealthy - 1; i >= 0; i--)
		if (d->healthy[i].route == route) {
			h = &d->healthy[i];
			break;
		}
	if (h == NULL || h->minute != minute) {
		d->healthy = grow(d->healthy, d->nhealthy, &d->cap_healthy, sizeof *d->healthy);
		h = &d->healthy[d->nhealthy++];
		*h = (struct diag_healthy){route, minute, 0, 0, 0, 0};
	}
	h->calls++;
	h->client_errors += (v & 1) != 0;
	h->service_good += (v & 2) != 0;
	h->smart_good += (v & 4) != 0;
	return 0;
}

static int
attempt_row(void *arg, sqlite3_stmt *row)
{
	struct diag_read *d = arg;
	struct diag_attempt *a;

	d->atts = grow(d->atts, d->natts, &d->cap_atts, sizeof *d->atts);
	a = &d->atts[d->natts++];
	a->route = pool_intern(&d->pool, 3, sqlite3_column_text(row, 2));
	a->backend = pool_intern(&d->pool, 4, sqlite3_column_text(row, 3));
	a->outcome = pool_intern(&d->pool, 5, sqlite3_column_text(row, 10));
	if (a->outcome != NULL && strcmp(a->outcome, WIRE_OUTCOME_OK) == 0 &&
	    d->nok++ >= DIAG_OK_SAMPLE_FROM && d->nok % DIAG_OK_SAMPLE_EVERY != 0) {
		a->id = a->call_id = -1;
		a->attempt_no = a->http_status = -1;
		a->started_at = a->connect_ms = a->first_byte_ms = a->total_ms = -1;
		a->retry_after_ms = a->input_tokens = -1;
		return 0;
	}
	a->id = sqlite3_column_int64(row, 0);
	a->call_id = sqlite3_column_int64(row, 1);
	a->attempt_no = (int)col_i64(row, 4);
	a->started_at = sqlite3_column_int64(row, 5);
	a->connect_ms = col_i64(row, 6);
	a->first_byte_ms = col_i64(row, 7);
	a->total_ms = col_i64(row, 8);
	a->http_status = (int)col_i64(row, 9);
	a->retry_after_ms = col_i64(row, 11);
	a->input_tokens = col_i64(row, 12);
	return 0;
}

static int
vfail_row(void *arg, sqlite3_stmt *row)
{
	struct diag_read *d = arg;
	struct diag_vfail *v;

	d->vfails = grow(d->vfails, d->nvfails, &d->cap_vfails, sizeof *d->vfails);
	v = &d->vfails[d->nvfails++];
	v->attempt_id = col_i64(row, 0);
	v->call_id = sqlite3_column_int64(row, 1);
	v->route = pool_intern(&d->pool, 6, sqlite3_column_text(row, 2));
	v->stage = pool_intern(&d->pool, 7, sqlite3_column_text(row, 3));
	v->rule = pool_intern(&d->pool, 8, sqlite3_column_text(row, 4));
	v->detail = pool_intern(&d->pool, 9, sqlite3_column_text(row, 5));
	v->at = col_i64(row, 6);
	return 0;
}

static int
event_row(void *arg, sqlite3_stmt *row)
{
	struct diag_read *d = arg;
	struct diag_event *ev;

	d->events = grow(d->events, d->nevents, &d->cap_events, sizeof *d->events);
	ev = &d->events[d->nevents++];
	ev->at = sqlite3_column_int64(row, 0);
	ev->kind = pool_intern(&d->pool, 10, sqlite3_column_text(row, 1));
	ev->subject = pool_intern(&d->pool, 11, sqlite3_column_text(row, 2));
	ev->detail = pool_intern(&d->pool, 12, sqlite3_column_text(row, 3));
	return 0;
}

static int
audit_row(void *arg, sqlite3_stmt *row)
{
	struct diag_read *d = arg;
	struct diag_audit *a;

	d->audit = grow(d->audit, d->naudit, &d->cap_audit, sizeof *d->audit);
	a = &d->audit[d->naudit++];
	a->at = sqlite3_column_int64(row, 0);
	a->actor = pool_intern(&d->pool, 13, sqlite3_column_text(row, 1));
	a->action = pool_intern(&d->pool, 14, sqlite3_column_text(row, 2));
	a->target = pool_intern(&d->pool, 15, sqlite3_column_text(row, 3));
	return 0;
}

/* The arrays' bytes (what keeping them for the next diagnosis holds). */
static size_t
diag_read_bytes(const struct diag_read *d)
{
	return (size_t)d->cap_calls * sizeof *d->calls +
	       (size_t)d->cap_minutes * sizeof *d->minutes +
	       (size_t)d->cap_reasons * sizeof *d->reasons +
	       (size_t)d->cap_healthy * sizeof *d->healthy + (size_t)d->cap_atts * sizeof *d->atts +
	       (size_t)d->cap_vfails * sizeof *d->vfails +
	       (size_t)d->cap_events * sizeof *d->events + (size_t)d->cap_audit * sizeof *d->audit;
}

/* Empty d for the next diagnosis, its arrays kept (their pages are already mapped). */
static void
diag_read_reset(struct diag_read *d)
{
	pool_free(&d->pool);
	memset(&d->pool, 0, sizeof d->pool);
	d->ncalls = d->nminutes = d->nreasons = d->nhealthy = d->nhealthy_rows = 0;
	d->natts = d->nok = d->nvfails = d->nevents = d->naudit = d->truncated = 0;
}

static void
diag_read_free(struct diag_read *d)
{
	pool_free(&d->pool);
	free(d->calls);
	free(d->minutes);
	free(d->reasons);
	free(d->healthy);
	free(d->atts);
	free(d->vfails);
	free(d->events);
	free(d->audit);
}

/*
 * Read one table's window: q with from, to, route (routed queries only)
 * and the limit; counts toward d->truncated when the limit was reached.
 */
static int
read_window(struct store_reader *rd, enum store_query q, int64_t from, int64_t to,
	    const char *route, int routed, int64_t limit, store_row_cb cb, struct diag_read *d,
	    const int *count, char **cause)
{
	struct store_val v[4];
	int n = 0, before = *count, rc;

	v[n++] = SVI(from);
	v[n++] = SVI(to);
	if (routed)
		v[n++] = SVT(route);
	v[n++] = SVI(limit);
	rc = store_reader_run(rd, q, v, n, cb, d, cause);
	if (rc == 0 && *count - before >= limit)
		d->truncated = 1;
	return rc;
}

/*
 * The routes' targets (primary, canary, backup) with their live weights and
 * timeouts; the names are borrowed from e->cfg. Engine thread.
 */
static struct diag_target *
targets_of(const struct engine *e, int *n)
{
	const struct config *cfg = e->cfg;
	struct diag_target *t;
	int i, j, k = 0, cap = 0;

	for (i = 0; i < e->nroutes; i++)
		cap += e->routes[i].cfg->ntargets + e->routes[i].cfg->backup.ntargets;
	t = xcalloc((size_t)cap + 1, sizeof *t);
	for (i = 0; i < e->nroutes; i++) {
		const struct route_cfg *rc = e->routes[i].cfg;

		for (j = 0; j < rc->ntargets; j++) {
			const struct backend_cfg *b = &cfg->backends[rc->targets[j].backend_idx];

			t[k++] = (struct diag_target){rc->name,
						      rc->targets[j].backend,
						      rc->targets[j].canary ? DIAG_CANARY
									    : DIAG_PRIMARY,
						      e->routes[i].weights[j],
						      b->connect_ms,
						      b->first_byte_ms};
		}
		for (j = 0; rc->backup.enabled && j < rc->backup.ntargets; j++) {
			const struct backend_cfg *b =
				&cfg->backends[rc->backup.targets[j].backend_idx];

			t[k++] = (struct diag_target){rc->name,	     rc->backup.targets[j].backend,
						      DIAG_BACKUP,   rc->backup.targets[j].weight,
						      b->connect_ms, b->first_byte_ms};
		}
	}
	*n = k;
	return t;
}

/*
 * One diagnosis at a time runs on a thread of its own: the engine thread
 * checks the arguments, copies the route's targets (their strings borrowed
 * from the configuration, kept alive by a config hold), waits suspended
 * for the writer to commit what is queued (a flush marker) and starts the
 * worker; the worker reads the window and runs the analysis; its answer
 * goes back through engine_post() and is sent on the engine thread. A
 * second request while one runs gets 503 diagnose_busy with Retry-After.
 * api_diagnose_stop() (daemon_free, before the drain) refuses new ones
 * and joins the worker. The lock guards busy, stopping and started.
 */
struct diag_job {
	struct http_req *r;
	struct engine *e;
	struct cfg_hold *hold;
	char *route, *database;
	int64_t from, now, span;
	struct diag_target *targets;
	int ntargets;
	pthread_t th;
	/* The worker's answer. */
	int status, rc;
	char *body, *cause;
};

static struct {
	pthread_mutex_t lock;
	int busy, stopping, started;
	pthread_t th;
	/*
	 * The diagnoses' reader, kept open between them (its mapped pages
	 * and cache were a tenth of a large window's time when opened each
	 * time): only the worker of the diagnosis running uses it (busy
	 * serializes them), reopened when the database path changed,
	 * closed by api_diagnose_stop() after the join.
	 */
	struct store_reader *rd;
	char *rd_path;
	/*
	 * The last diagnosis' arrays, emptied, for the next one (up to
	 * DIAG_KEEP_BYTES): growing them afresh each time was a tenth of
	 * a large window's time in page faults. Same owner as rd.
	 */
	struct diag_read spare;
} worker = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Worker thread: the kept reader of path, opened (and tuned) when needed. */
static int
diag_reader_get(const char *path, struct store_reader **out, char **cause)
{
	if (worker.rd != NULL && strcmp(worker.rd_path, path) != 0) {
		store_reader_close(worker.rd);
		free(worker.rd_path);
		worker.rd = NULL;
		worker.rd_path = NULL;
	}
	if (worker.rd == NULL) {
		if (store_reader_open(path, &worker.rd, cause) != 0)
			return -1;
		/* a smaller map or cache only costs time: not fatal */
		if (store_reader_tune(worker.rd, DIAG_MMAP_BYTES, DIAG_CACHE_KIB, cause) != 0) {
			free(*cause);
			*cause = NULL;
		}
		worker.rd_path = xstrdup(path);
	}
	*out = worker.rd;
	return 0;
}

static void
diag_compute(struct diag_job *j)
{
	struct store_reader *rd = NULL;
	struct diag_read d;
	struct diag_input in;
	int64_t from = j->from, now = j->now, span = j->span;
	const char *route = j->route;
	char **cause = &j->cause;
	cJSON *o;
	int rc = 0;

	d = worker.spare;
	memset(&worker.spare, 0, sizeof worker.spare);
	if (diag_reader_get(j->database, &rd, cause) != 0) {
		j->rc = -1;
		goto out;
	}
	store_reader_deadline_set(rd, DIAG_READ_MS);
	rc = read_window(rd, STORE_Q_DIAG_CALLS, from, now, route, 1, DIAG_ROWS_MAX, call_row, &d,
			 &d.ncalls, cause);
	if (rc == 0)
		rc = read_window(rd, STORE_Q_DIAG_HEALTHY, from, now, route, 1, DIAG_ROWS_MAX,
				 healthy_row, &d, &d.nhealthy_rows, cause);
	if (rc == 0)
		rc = read_window(rd, STORE_Q_DIAG_PREV_MINUTES, from - span, from, route, 1,
				 DIAG_ROWS_MAX, prev_minute_row, &d, &d.nminutes, cause);
	if (rc == 0)
		rc = read_window(rd, STORE_Q_DIAG_PREV_REASONS, from - span, from, route, 1,
				 DIAG_META_ROWS_MAX, prev_reason_row, &d, &d.nreasons, cause);
	if (rc == 0)
		rc = read_window(rd, STORE_Q_DIAG_ATTEMPTS, from, now, route, 1, DIAG_ROWS_MAX,
				 attempt_row, &d, &d.natts, cause);
	if (rc == 0)
		rc = read_window(rd, STORE_Q_DIAG_VFAILS, from, now, route, 1, DIAG_ROWS_MAX,
				 vfail_row, &d, &d.nvfails, cause);
	if (rc == 0)
		rc = read_window(rd, STORE_Q_DIAG_EVENTS, from - span - DIAG_CHANGES_MS, now, NULL,
				 0, DIAG_META_ROWS_MAX, event_row, &d, &d.nevents, cause);
	if (rc == 0)
		rc = read_window(rd, STORE_Q_DIAG_AUDIT, from - span - DIAG_CHANGES_MS, now, NULL,
				 0, DIAG_META_ROWS_MAX, audit_row, &d, &d.naudit, cause);
	if (rc != 0) {
		j->rc = rc;
		goto out;
	}
	memset(&in, 0, sizeof in);
	in.route = route;
	in.cur = (struct diag_rows){from,   now,     d.calls,  d.ncalls,
				    d.atts, d.natts, d.vfails, d.nvfails};
	in.prev = (struct diag_rows){from - span, from, NULL, 0, NULL, 0, NULL, 0};
	in.prev_minutes = d.minutes;
	in.nprev_minutes = d.nminutes;
	in.prev_reasons = d.reasons;
	in.nprev_reasons = d.nreasons;
	in.healthy = d.healthy;
	in.nhealthy = d.nhealthy;
	in.events = d.events;
	in.nevents = d.nevents;
	in.audit = d.audit;
	in.naudit = d.naudit;
	in.targets = j->targets;
	in.ntargets = j->ntargets;
	o = diagnose_run(&in);
	if (d.truncated)
		cJSON_AddTrueToObject(cJSON_GetObjectItemCaseSensitive(o, "window"), "truncated");
	j->body = json_print(o);
	cJSON_Delete(o);
	j->status = j->body != NULL ? 200 : 500;
out:
	if (diag_read_bytes(&d) <= DIAG_KEEP_BYTES) {
		diag_read_reset(&d);
		worker.spare = d;
	} else {
		diag_read_free(&d);
	}
}

static void
diag_respond(struct diag_job *j)
{
	struct http_req *r = j->r;

	if (j->status == 200) {
		http_respond(r, 200, j->body, strlen(j->body));
		j->body = NULL;
	} else if (j->status == 500) {
		http_respond_error(r, 500, "internal", "cannot render JSON");
	} else if (j->rc == STORE_E_SLOW) {
		http_req_add_header(r, "Retry-After", "1");
		http_respond_error(r, 503, "storage_slow",
				   "reading the window took too long; try a shorter since");
	} else if (j->status == 503) {
		http_req_add_header(r, "Retry-After", "1");
		http_respond_error(r, 503, "draining", "fuseboxd is shutting down");
	} else {
		http_respond_error(r, 500, "store_error", "%s",
				   j->cause ? j->cause : "query failed");
	}
}

static void
diag_job_free(struct diag_job *j)
{
	engine_hold_put(j->e, j->hold);
	free(j->route);
	free(j->database);
	free(j->targets);
	free(j->body);
	free(j->cause);
	free(j);
}

/* Engine thread: the worker's answer leaves; the worker is joined (it has returned or is about to).
 */
static void
diag_done(struct engine *e, void *arg)
{
	struct diag_job *j = arg;
	int join;

	pthread_mutex_lock(&worker.lock);
	join = worker.started && pthread_equal(worker.th, j->th);
	if (join)
		worker.started = 0;
	pthread_mutex_unlock(&worker.lock);
	if (join)
		pthread_join(j->th, NULL);
	diag_respond(j);
	diag_job_free(j);
	pthread_mutex_lock(&worker.lock);
	worker.busy = 0;
	pthread_mutex_unlock(&worker.lock);
}

static void *
diag_worker(void *arg)
{
	struct diag_job *j = arg;

	diag_compute(j);
	engine_post(j->e, diag_done, j);
	return NULL;
}

/* Engine thread: everything queued before the request is committed; start the worker. */
static void
diag_flushed(struct engine *e, void *arg, int unused_rc, int64_t unused_rowid,
	     const char *unused_cause)
{
	struct diag_job *j = arg;
	int r = -ESHUTDOWN;

	pthread_mutex_lock(&worker.lock);
	if (!worker.stopping) {
		r = pthread_create(&j->th, NULL, diag_worker, j);
		if (r == 0) {
			worker.th = j->th;
			worker.started = 1;
		}
	}
	pthread_mutex_unlock(&worker.lock);
	if (r == 0)
		return;
	j->status = 503;
	diag_done(e, j);
}

static void
handle_diagnose(struct http_req *r, struct engine *e)
{
	const char *route = http_req_arg(r, "route"), *since = http_req_arg(r, "since");
	/* The window ends after the current millisecond: a call that started in it counts. */
	int64_t now = clock_wall_ms() + 1, from;
	struct diag_job *j;
	int busy;

	if (route != NULL && engine_route_index(e, route) < 0) {
		http_respond_error(r, 404, "unknown_route", "no route named \"%s\"", route);
		return;
	}
	if (diagnose_since_parse(since != NULL ? since : DIAG_SINCE_DEFAULT, now, &from) != 0 ||
	    now - from > DIAG_SINCE_MAX_MS) {
		http_respond_error(r, 400, "bad_request",
				   "since: a duration (30s, 15m, 2h) or an RFC 3339 time in the "
				   "last 31 days");
		return;
	}
	pthread_mutex_lock(&worker.lock);
	busy = worker.busy || worker.stopping;
	if (!busy)
		worker.busy = 1;
	pthread_mutex_unlock(&worker.lock);
	if (busy) {
		http_req_add_header(r, "Retry-After", "1");
		http_respond_error(r, 503, "diagnose_busy",
				   "a diagnosis is already running; retry shortly");
		return;
	}
	j = xcalloc(1, sizeof *j);
	j->r = r;
	j->e = e;
	j->hold = engine_hold_get(e);
	j->route = route != NULL ? xstrdup(route) : NULL;
	j->database = xstrdup(e->cfg->database);
	j->from = from;
	j->now = now;
	j->span = now - from;
	j->targets = targets_of(e, &j->ntargets);
	if (engine_commit_later(e, NULL, 0, diag_flushed, j) != 0)
		diag_flushed(e, j, 0, 0, NULL);
}

void
api_diagnose_stop(struct engine *e)
{
	pthread_t th;
	int join;

	pthread_mutex_lock(&worker.lock);
	worker.stopping = 1;
	join = worker.started;
	th = worker.th;
	worker.started = 0;
	pthread_mutex_unlock(&worker.lock);
	if (join)
		pthread_join(th, NULL);
	diag_read_free(&worker.spare);
	memset(&worker.spare, 0, sizeof worker.spare);
	store_reader_close(worker.rd);
	free(worker.rd_path);
	worker.rd = NULL;
	worker.rd_path = NULL;
}

const struct endpoint api_diagnose_endpoints[] = {
	{HTTP_GET, "/v1/diagnose", ACCESS_VIEWER, handle_diagnose},
	{0, NULL, 0, NULL},
};
