/*
 * prom: the Prometheus HTTP API and the fleet SLO report (see prom.h).
 *
 * Requests go through client.c (one blocking libcurl transfer, bounded in
 * time and size, no token): GET with the expression percent-encoded, and
 * Prometheus's own timeout parameter set a little below ours so that a
 * slow query comes back as Prometheus's "timeout" error rather than as a
 * cut connection. Every answer is {"status": "success"|"error", ...}: an
 * error's errorType and text are passed on as they came (a parse error is
 * "bad_data" with the position in the expression), anything else is not a
 * Prometheus API and says so with the start of the body.
 *
 * The report reads only the series of contrib/prometheus/fusebox-rules.yml
 * (the fleet sums are made there, not here): one query for every recorded
 * series of the route(s) and one for the fleet alerts firing. Building it
 * from the two answers is pure (prom_slo_build), so it is tested with
 * literals.
 */
#include "prom.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "client.h"
#include "fmt.h"
#include "table.h"
#include "util.h"

#define EXPR_EXCERPT 160
#define ROUTES_MAX   1024

const char *const prom_slo_windows[PROM_SLO_NWIN] = {"5m", "30m", "1h", "2h",
						     "6h", "1d",  "3d", "30d"};

static const char *const kind_names[PROM_SLO_NKIND] = {"service", "smart"};

/* ---- the answer ---- */

static void
series_free(struct prom_series *s)
{
	int i;

	for (i = 0; i < s->nlabels; i++) {
		free(s->labels[i].name);
		free(s->labels[i].value);
	}
	free(s->labels);
	free(s->points);
}

void
prom_result_free(struct prom_result *r)
{
	int i;

	if (r == NULL)
		return;
	for (i = 0; i < r->nseries; i++)
		series_free(&r->series[i]);
	free(r->series);
	free(r->string);
	memset(r, 0, sizeof *r);
}

const char *
prom_series_label(const struct prom_series *s, const char *name)
{
	int i;

	for (i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].name, name) == 0)
			return s->labels[i].value;
	return NULL;
}

static int
label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct prom_label *)a)->name, ((const struct prom_label *)b)->name);
}

/* [t, "v"]: 0, or -EINVAL. Values are strings ("1", "NaN", "+Inf"). */
static int
point_parse(const cJSON *p, struct prom_point *out, const char **str)
{
	const cJSON *t = cJSON_GetArrayItem(p, 0), *v = cJSON_GetArrayItem(p, 1);
	char *end;

	if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(t) ||
	    !cJSON_IsString(v))
		return -EINVAL;
	out->t_ms = llround(t->valuedouble * 1000.0);
	if (str != NULL) {
		*str = v->valuestring;
		out->v = NAN;
		return 0;
	}
	errno = 0;
	out->v = strtod(v->valuestring, &end);
	if (end == v->valuestring || *end != '\0')
		return -EINVAL;
	return 0;
}

static int
series_parse(const cJSON *item, int matrix, struct prom_series *s)
{
	const cJSON *metric = cJSON_GetObjectItemCaseSensitive(item, "metric"), *l, *p;
	const cJSON *values = cJSON_GetObjectItemCaseSensitive(item, matrix ? "values" : "value");
	int n = 0;

	memset(s, 0, sizeof *s);
	if (!cJSON_IsObject(item) || (metric != NULL && !cJSON_IsObject(metric)))
		return -EINVAL;
	cJSON_ArrayForEach(l, metric) n++;
	s->labels = xcalloc((size_t)MAX(n, 1), sizeof *s->labels);
	cJSON_ArrayForEach(l, metric)
	{
		if (!cJSON_IsString(l) || l->string == NULL)
			return -EINVAL;
		s->labels[s->nlabels].name = xstrdup(l->string);
		s->labels[s->nlabels++].value = xstrdup(l->valuestring);
	}
	qsort(s->labels, (size_t)s->nlabels, sizeof *s->labels, label_cmp);
	if (values == NULL) /* a native histogram sample: no float value */
		return 0;
	if (!matrix) {
		s->points = xcalloc(1, sizeof *s->points);
		s->npoints = 1;
		return point_parse(values, &s->points[0], NULL);
	}
	if (!cJSON_IsArray(values))
		return -EINVAL;
	s->points = xcalloc((size_t)MAX(cJSON_GetArraySize(values), 1), sizeof *s->points);
	cJSON_ArrayForEach(p, values)
	{
		if (point_parse(p, &s->points[s->npoints], NULL) != 0)
			return -EINVAL;
		s->npoints++;
	}
	return 0;
}

/* "HTTP 404: <start of the body>" (caller frees). */
static char *
not_prometheus(long status, const char *body, size_t len, const char *why)
{
	char *excerpt = client_error_text(status, body, len), *r;

	r = xasprintf("not a Prometheus API answer (%s): %s", why, excerpt);
	free(excerpt);
	return r;
}

int
prom_parse(const char *body, size_t len, long status, struct prom_result *out, char **cause)
{
	cJSON *root = NULL;
	const cJSON *st, *data, *rtype, *result, *et, *err, *item;
	const char *str = NULL;
	int rc = PROM_E_ANSWER, matrix;

	memset(out, 0, sizeof *out);
	if (body != NULL && len > 0)
		root = cJSON_ParseWithLength(body, len);
	st = cJSON_GetObjectItemCaseSensitive(root, "status");
	if (!cJSON_IsString(st)) {
		*cause = not_prometheus(status, body, len, "no \"status\"");
		goto out;
	}
	if (strcmp(st->valuestring, "error") == 0) {
		et = cJSON_GetObjectItemCaseSensitive(root, "errorType");
		err = cJSON_GetObjectItemCaseSensitive(root, "error");
		snprintf(out->error_type, sizeof out->error_type, "%s",
			 cJSON_IsString(et) ? et->valuestring : "unknown");
		*cause = xasprintf("%s: %s", out->error_type,
				   cJSON_IsString(err) ? err->valuestring : "(no error text)");
		rc = PROM_E_QUERY;
		goto out;
	}
	data = cJSON_GetObjectItemCaseSensitive(root, "data");
	rtype = cJSON_GetObjectItemCaseSensitive(data, "resultType");
	result = cJSON_GetObjectItemCaseSensitive(data, "result");
	if (strcmp(st->valuestring, "success") != 0 || status < 200 || status > 299 ||
	    !cJSON_IsString(rtype) || result == NULL) {
		*cause = not_prometheus(status, body, len, "no data.resultType / data.result");
		goto out;
	}
	if (strcmp(rtype->valuestring, "scalar") == 0 ||
	    strcmp(rtype->valuestring, "string") == 0) {
		out->type = rtype->valuestring[1] == 'c' ? PROM_SCALAR : PROM_STRING;
		out->series = xcalloc(1, sizeof *out->series);
		out->nseries = 1;
		out->series[0].labels = xcalloc(1, sizeof *out->series[0].labels);
		out->series[0].points = xcalloc(1, sizeof *out->series[0].points);
		out->series[0].npoints = 1;
		if (point_parse(result, &out->series[0].points[0],
				out->type == PROM_STRING ? &str : NULL) != 0) {
			*cause = not_prometheus(status, body, len, "a bad scalar");
			goto out;
		}
		if (str != NULL)
			out->string = xstrdup(str);
		rc = 0;
		goto out;
	}
	if (strcmp(rtype->valuestring, "vector") != 0 &&
	    strcmp(rtype->valuestring, "matrix") != 0) {
		*cause = xasprintf("unknown resultType \"%s\"", rtype->valuestring);
		goto out;
	}
	matrix = rtype->valuestring[0] == 'm';
	out->type = matrix ? PROM_MATRIX : PROM_VECTOR;
	if (!cJSON_IsArray(result)) {
		*cause = not_prometheus(status, body, len, "data.result is not a list");
		goto out;
	}
	out->series = xcalloc((size_t)MAX(cJSON_GetArraySize(result), 1), sizeof *out->series);
	cJSON_ArrayForEach(item, result)
	{
		/* counted first: a half-parsed series is freed with the rest */
		out->nseries++;
		if (series_parse(item, matrix, &out->series[out->nseries - 1]) != 0) {
			*cause = not_prometheus(status, body, len, "a malformed series");
			goto out;
		}
	}
	rc = 0;
out:
	cJSON_Delete(root);
	if (rc != 0 && rc != PROM_E_QUERY) {
		char et_copy[sizeof out->error_type];

		memcpy(et_copy, out->error_type, sizeof et_copy);
		prom_result_free(out);
		memcpy(out->error_type, et_copy, sizeof et_copy);
	}
	return rc;
}

/* ---- requests ---- */

/* The expression, cut for a message. */
static void
expr_excerpt(const char *expr, char *out, size_t outsz)
{
	size_t n = strlen(expr);

	if (n < outsz && n <= EXPR_EXCERPT) {
		memcpy(out, expr, n + 1);
		return;
	}
	snprintf(out, outsz, "%.*s...", EXPR_EXCERPT, expr);
}

/* GET url + endpoint ?query=expr + extra ("&start=..."), parsed into *out. */
static int
prom_get(const char *url, const char *endpoint, const char *expr, const char *extra,
	 long timeout_ms, struct prom_result *out, char **cause)
{
	struct client c;
	struct client_resp resp = {0};
	char *why = NULL, *e = NULL, *path = NULL, ex[EXPR_EXCERPT + 8];
	int rc;

	memset(out, 0, sizeof *out);
	if (url == NULL || url[0] == '\0') {
		*cause = xstrdup("no Prometheus URL");
		return PROM_E_UNREACHABLE;
	}
	if (client_init(&c, url, NULL, CLIENT_ROLE_UNKNOWN, &why) != 0) {
		*cause = xasprintf("Prometheus: %s", why);
		free(why);
		return PROM_E_UNREACHABLE;
	}
	e = client_escape(expr);
	path = xasprintf("%s?query=%s%s&timeout=%ldms", endpoint, e, extra,
			 MAX(timeout_ms * 9 / 10, 1L));
	rc = client_do(&c, "GET", path, NULL, timeout_ms, &resp, &why);
	if (rc != 0) {
		*cause = xasprintf("Prometheus unreachable: %s", why);
		rc = PROM_E_UNREACHABLE;
		goto out;
	}
	rc = prom_parse(resp.body, resp.len, resp.status, out, &why);
	if (rc == PROM_E_QUERY) {
		expr_excerpt(expr, ex, sizeof ex);
		*cause =
			xasprintf("Prometheus at %s refused the query \"%s\": %s", c.base, ex, why);
	} else if (rc != 0) {
		*cause = xasprintf("%s%s: %s", c.base, endpoint, why);
	}
out:
	free(why);
	free(path);
	free(e);
	client_resp_free(&resp);
	client_free(&c);
	return rc;
}

int
prom_query(const char *url, const char *expr, long timeout_ms, struct prom_result *out,
	   char **cause)
{
	return prom_get(url, "/api/v1/query", expr, "", timeout_ms, out, cause);
}

int
prom_query_range(const char *url, const char *expr, int64_t start_ms, int64_t end_ms,
		 int64_t step_ms, long timeout_ms, struct prom_result *out, char **cause)
{
	char *extra;
	int rc;

	memset(out, 0, sizeof *out);
	if (step_ms <= 0 || start_ms < 0 || end_ms < start_ms) {
		*cause = xasprintf("bad range: start %lld, end %lld, step %lld ms",
				   (long long)start_ms, (long long)end_ms, (long long)step_ms);
		return -EINVAL;
	}
	extra = xasprintf("&start=%lld.%03lld&end=%lld.%03lld&step=%lld.%03lld",
			  (long long)(start_ms / 1000), (long long)(start_ms % 1000),
			  (long long)(end_ms / 1000), (long long)(end_ms % 1000),
			  (long long)(step_ms / 1000), (long long)(step_ms % 1000));
	rc = prom_get(url, "/api/v1/query_range", expr, extra, timeout_ms, out, cause);
	free(extra);
	return rc;
}

/* ---- the fleet SLO report ---- */

/* The recorded series the report reads: contrib/prometheus/fusebox-rules.yml. */
#define REC_AVAIL  "route_kind:fusebox_slo_availability:ratio_rate"
#define REC_BURN   "route_kind:fusebox_slo_burn_rate:ratio_rate"
#define REC_CALLS  "route_kind:fusebox_slo_calls:increase"
#define REC_OBJ	   "route_kind:fusebox_slo_objective:max"
#define REC_BUDGET "route_kind:fusebox_slo_error_budget_remaining:ratio_rate30d"
#define REC_LEVELS "route_level:fusebox_hosts:count"
#define SLO_SELECTOR                                                                               \
	"{__name__=~\"route_kind:fusebox_slo_(availability|burn_rate):ratio_rate.+"                \
	"|route_kind:fusebox_slo_calls:increase.+|" REC_OBJ "|" REC_BUDGET "|" REC_LEVELS "\""

void
prom_slo_free(struct prom_slo *s)
{
	int i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++)
		free(s->routes[i].alerts);
	free(s->routes);
	free(s);
}

static int
window_index(const char *w)
{
	int i;

	for (i = 0; i < PROM_SLO_NWIN; i++)
		if (strcmp(prom_slo_windows[i], w) == 0)
			return i;
	return -1;
}

static int
kind_index(const char *k)
{
	int i;

	for (i = 0; k != NULL && i < PROM_SLO_NKIND; i++)
		if (strcmp(kind_names[i], k) == 0)
			return i;
	return -1;
}

static struct prom_slo_route *
route_get(struct prom_slo *s, const char *name)
{
	struct prom_slo_route *r;
	int i, k, w;

	if (name == NULL || strlen(name) >= sizeof s->routes[0].route)
		return NULL;
	for (i = 0; i < s->n; i++)
		if (strcmp(s->routes[i].route, name) == 0)
			return &s->routes[i];
	if (s->n >= ROUTES_MAX)
		return NULL;
	s->routes = xrealloc(s->routes, (size_t)(s->n + 1) * sizeof *s->routes);
	r = &s->routes[s->n++];
	memset(r, 0, sizeof *r);
	snprintf(r->route, sizeof r->route, "%s", name);
	for (k = 0; k < PROM_SLO_NKIND; k++) {
		r->k[k].objective = NAN;
		r->k[k].budget_left = NAN;
		for (w = 0; w < PROM_SLO_NWIN; w++)
			r->k[k].calls[w] = r->k[k].availability[w] = r->k[k].burn[w] = NAN;
	}
	return r;
}

/* One recorded series into its route's slot; others are ignored. */
static void
slo_take(struct prom_slo *s, const struct prom_series *se)
{
	const char *name = prom_series_label(se, "__name__");
	const char *route = prom_series_label(se, "route");
	const char *lvl;
	struct prom_slo_route *r;
	double v;
	int k, w;

	if (name == NULL || route == NULL || se->npoints < 1)
		return;
	v = se->points[se->npoints - 1].v;
	if (strcmp(name, REC_LEVELS) == 0) {
		lvl = prom_series_label(se, "level");
		if (lvl == NULL || strlen(lvl) != 1 || lvl[0] < '0' || lvl[0] > '3' || !(v >= 0) ||
		    (r = route_get(s, route)) == NULL)
			return;
		r->hosts[lvl[0] - '0'] += (int)llround(v);
		return;
	}
	k = kind_index(prom_series_label(se, "kind"));
	if (k < 0 || (r = route_get(s, route)) == NULL)
		return;
	if (strcmp(name, REC_OBJ) == 0)
		r->k[k].objective = v;
	else if (strcmp(name, REC_BUDGET) == 0)
		r->k[k].budget_left = v;
	else if (strncmp(name, REC_AVAIL, strlen(REC_AVAIL)) == 0 &&
		 (w = window_index(name + strlen(REC_AVAIL))) >= 0)
		r->k[k].availability[w] = v;
	else if (strncmp(name, REC_BURN, strlen(REC_BURN)) == 0 &&
		 (w = window_index(name + strlen(REC_BURN))) >= 0)
		r->k[k].burn[w] = v;
	else if (strncmp(name, REC_CALLS, strlen(REC_CALLS)) == 0 &&
		 (w = window_index(name + strlen(REC_CALLS))) >= 0)
		r->k[k].calls[w] = v;
}

static void
alert_take(struct prom_slo *s, const struct prom_series *se)
{
	const char *route = prom_series_label(se, "route"), *v;
	struct prom_slo_alert *a;
	struct prom_slo_route *r = NULL;
	int i;

	v = prom_series_label(se, "alertstate");
	if (route == NULL || (v != NULL && strcmp(v, "firing") != 0))
		return;
	for (i = 0; i < s->n && r == NULL; i++)
		if (strcmp(s->routes[i].route, route) == 0)
			r = &s->routes[i];
	if (r == NULL)
		return;
	r->alerts = xrealloc(r->alerts, (size_t)(r->nalerts + 1) * sizeof *r->alerts);
	a = &r->alerts[r->nalerts++];
	memset(a, 0, sizeof *a);
#define ALERT_LABEL(field, label)                                                                  \
	snprintf(a->field, sizeof a->field, "%s",                                                  \
		 (v = prom_series_label(se, label)) != NULL ? v : "")
	ALERT_LABEL(alertname, "alertname");
	ALERT_LABEL(kind, "kind");
	ALERT_LABEL(window, "window");
	ALERT_LABEL(severity, "severity");
	ALERT_LABEL(factor, "factor");
#undef ALERT_LABEL
}

static int
route_cmp(const void *a, const void *b)
{
	return strcmp(((const struct prom_slo_route *)a)->route,
		      ((const struct prom_slo_route *)b)->route);
}

/* A window's length for ordering ("15m", "1d"); unknown ones last. */
static int64_t
window_ms(const char *w)
{
	int64_t ms;

	return fmt_parse_duration(w, &ms) == 0 ? ms : INT64_MAX;
}

/* Pages first, then the shorter window, then kind and name. */
static int
alert_cmp(const void *pa, const void *pb)
{
	const struct prom_slo_alert *a = pa, *b = pb;
	int pa_page = strcmp(a->severity, "page") == 0, pb_page = strcmp(b->severity, "page") == 0;
	int64_t wa = window_ms(a->window), wb = window_ms(b->window);
	int c;

	if (pa_page != pb_page)
		return pb_page - pa_page;
	if (wa != wb)
		return wa < wb ? -1 : 1;
	if ((c = strcmp(a->kind, b->kind)) != 0)
		return c;
	return strcmp(a->alertname, b->alertname);
}

int
prom_slo_build(const char *url, const char *route, const struct prom_result *series,
	       const struct prom_result *alerts, struct prom_slo **out, char **cause)
{
	struct prom_slo *s = xcalloc(1, sizeof *s);
	int i;

	snprintf(s->url, sizeof s->url, "%s", url != NULL ? url : "");
	for (i = 0; series != NULL && i < series->nseries; i++)
		slo_take(s, &series->series[i]);
	for (i = 0; alerts != NULL && i < alerts->nseries; i++)
		alert_take(s, &alerts->series[i]);
	if (s->n == 0) {
		if (route != NULL)
			*cause = xasprintf("Prometheus at %s has no fleet series for route \"%s\"",
					   s->url, route);
		else
			*cause = xasprintf("Prometheus at %s has no fusebox fleet series: does it "
					   "scrape the daemons' /metrics with the rules of "
					   "contrib/prometheus/fusebox-rules.yml loaded?",
					   s->url);
		prom_slo_free(s);
		return PROM_E_NO_SERIES;
	}
	qsort(s->routes, (size_t)s->n, sizeof *s->routes, route_cmp);
	for (i = 0; i < s->n; i++)
		if (s->routes[i].nalerts > 1)
			qsort(s->routes[i].alerts, (size_t)s->routes[i].nalerts,
			      sizeof *s->routes[i].alerts, alert_cmp);
	*out = s;
	return 0;
}

/* A label value as a PromQL string literal's inside (\ and " escaped). */
static char *
promql_quote(const char *v)
{
	struct buf b;
	const char *p;

	buf_init(&b, 4096);
	for (p = v; *p != '\0'; p++) {
		if (*p == '\\' || *p == '"')
			buf_append(&b, "\\", 1);
		if (*p == '\n')
			buf_puts(&b, "\\n");
		else
			buf_append(&b, p, 1);
	}
	return buf_steal(&b);
}

int
prom_slo_fetch(const char *url, const char *route, long timeout_ms, struct prom_slo **out,
	       char **cause)
{
	struct prom_result series = {0}, alerts = {0};
	char *q = NULL, *expr = NULL, *aexpr = NULL, *rm = NULL;
	int rc;

	if (route != NULL) {
		q = promql_quote(route);
		rm = xasprintf(",route=\"%s\"", q);
	}
	expr = xasprintf(SLO_SELECTOR "%s}", rm != NULL ? rm : "");
	aexpr = xasprintf("ALERTS{alertstate=\"firing\",source=\"fleet\"%s}", rm != NULL ? rm : "");
	rc = prom_query(url, expr, timeout_ms, &series, cause);
	if (rc == 0)
		rc = prom_query(url, aexpr, timeout_ms, &alerts, cause);
	if (rc == 0)
		rc = prom_slo_build(url, route, &series, &alerts, out, cause);
	prom_result_free(&alerts);
	prom_result_free(&series);
	free(aexpr);
	free(expr);
	free(rm);
	free(q);
	return rc;
}

static void
burn_text(char *out, size_t outsz, double v)
{
	if (isnan(v))
		snprintf(out, outsz, "-");
	else if (isinf(v))
		snprintf(out, outsz, "%sinf", v < 0 ? "-" : "");
	else
		snprintf(out, outsz, "%.2fx", v);
}

static void
calls_text(char *out, size_t outsz, double v)
{
	if (isnan(v))
		snprintf(out, outsz, "-");
	else
		snprintf(out, outsz, "%.0f", v);
}

/* "3 hosts: L0 2 · L2 1" (route_level:fusebox_hosts:count), "hosts -" without it. */
static void
levels_text(const struct prom_slo_route *r, char *out, size_t outsz)
{
	size_t o;
	int l, n = 0, first = 1;

	for (l = 0; l < 4; l++)
		n += r->hosts[l];
	if (n == 0) {
		snprintf(out, outsz, "hosts -");
		return;
	}
	o = (size_t)snprintf(out, outsz, "%d host%s", n, n == 1 ? "" : "s");
	for (l = 0; l < 4 && o < outsz; l++) {
		if (r->hosts[l] == 0)
			continue;
		o += (size_t)snprintf(out + o, outsz - o, "%sL%d %d",
				      first ? ": " : (fmt_is_ascii() ? " | " : " \xc2\xb7 "), l,
				      r->hosts[l]);
		first = 0;
	}
}

static void
alerts_text(const struct prom_slo_route *r, char *out, size_t outsz)
{
	size_t o = 0;
	int i;

	if (r->nalerts == 0) {
		snprintf(out, outsz, "none");
		return;
	}
	out[0] = '\0';
	for (i = 0; i < r->nalerts && o < outsz; i++) {
		const struct prom_slo_alert *a = &r->alerts[i];

		if (strcmp(a->alertname, "fusebox_error_budget_burn") == 0)
			o += (size_t)snprintf(out + o, outsz - o, "%s%s %s %s%s%s%s", i ? ", " : "",
					      a->severity, a->kind, a->window,
					      a->factor[0] ? " (" : "", a->factor,
					      a->factor[0] ? "x)" : "");
		else
			o += (size_t)snprintf(out + o, outsz - o, "%s%s %s%s%s", i ? ", " : "",
					      a->severity, a->alertname, a->window[0] ? " " : "",
					      a->window);
	}
}

static int
window_present(const struct prom_slo_route *r, int w)
{
	int k;

	for (k = 0; k < PROM_SLO_NKIND; k++)
		if (!isnan(r->k[k].calls[w]) || !isnan(r->k[k].availability[w]) ||
		    !isnan(r->k[k].burn[w]))
			return 1;
	return 0;
}

static void
render_route(FILE *fp, const char *url, const struct prom_slo_route *r)
{
	static const char *const titles[] = {"WINDOW", "CALLS", "SERVICE", "BURN", "SMART", "BURN"};
	struct table *t = table_new(6, titles, " rrrrr");
	const struct prom_slo_kind *sv = &r->k[PROM_SLO_SERVICE], *sm = &r->k[PROM_SLO_SMART];
	char calls[24], a1[16], b1[24], a2[16], b2[24], o1[16], o2[16], lv[96], al[1024];
	int w;

	fmt_pct(o1, sizeof o1, sv->objective, -1);
	fmt_pct(o2, sizeof o2, sm->objective, -1);
	levels_text(r, lv, sizeof lv);
	fprintf(fp, "%s (fleet, %s): objectives service %s, smart %s; %s\n", r->route, url, o1, o2,
		lv);
	for (w = 0; w < PROM_SLO_NWIN; w++) {
		const char *cells[] = {prom_slo_windows[w], calls, a1, b1, a2, b2};

		if (!window_present(r, w))
			continue;
		calls_text(calls, sizeof calls, sv->calls[w]);
		fmt_pct(a1, sizeof a1, sv->availability[w], 2);
		burn_text(b1, sizeof b1, sv->burn[w]);
		fmt_pct(a2, sizeof a2, sm->availability[w], 2);
		burn_text(b2, sizeof b2, sm->burn[w]);
		table_add(t, cells);
	}
	table_print(t, fp);
	table_free(t);
	fmt_pct(a1, sizeof a1, sv->budget_left, 1);
	fmt_pct(a2, sizeof a2, sm->budget_left, 1);
	burn_text(b1, sizeof b1, sv->burn[2]);
	burn_text(b2, sizeof b2, sm->burn[2]);
	fprintf(fp, "error budget left (30d): service %s (burn 1h %s), smart %s (burn 1h %s)\n", a1,
		b1, a2, b2);
	alerts_text(r, al, sizeof al);
	fprintf(fp, "fleet alerts firing: %s\n", al);
}

void
prom_slo_render(FILE *fp, const struct prom_slo *s)
{
	int i;

	for (i = 0; i < s->n; i++) {
		if (i)
			fputc('\n', fp);
		render_route(fp, s->url, &s->routes[i]);
	}
}

static void
json_num(cJSON *o, const char *name, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, name, v);
	else
		cJSON_AddNullToObject(o, name);
}

void
prom_slo_json(FILE *fp, const struct prom_slo *s)
{
	cJSON *root = cJSON_CreateObject(), *routes, *ro, *o, *wins, *wo, *eb, *ko, *arr, *ao;
	char *text, name[16];
	int i, k, w, l, j;

	if (root == NULL)
		abort();
	cJSON_AddStringToObject(root, "prometheus", s->url);
	routes = cJSON_AddArrayToObject(root, "routes");
	for (i = 0; i < s->n; i++) {
		const struct prom_slo_route *r = &s->routes[i];

		ro = cJSON_CreateObject();
		cJSON_AddItemToArray(routes, ro);
		cJSON_AddStringToObject(ro, "route", r->route);
		o = cJSON_AddObjectToObject(ro, "objectives");
		json_num(o, "service_availability", r->k[PROM_SLO_SERVICE].objective);
		json_num(o, "smart_availability", r->k[PROM_SLO_SMART].objective);
		o = cJSON_AddObjectToObject(ro, "hosts_by_level");
		for (l = 0; l < 4; l++) {
			snprintf(name, sizeof name, "%d", l);
			cJSON_AddNumberToObject(o, name, r->hosts[l]);
		}
		wins = cJSON_AddObjectToObject(ro, "windows");
		for (w = 0; w < PROM_SLO_NWIN; w++) {
			if (!window_present(r, w))
				continue;
			wo = cJSON_AddObjectToObject(wins, prom_slo_windows[w]);
			json_num(wo, "calls", r->k[PROM_SLO_SERVICE].calls[w]);
			json_num(wo, "smart_calls", r->k[PROM_SLO_SMART].calls[w]);
			json_num(wo, "service_availability",
				 r->k[PROM_SLO_SERVICE].availability[w]);
			json_num(wo, "smart_availability", r->k[PROM_SLO_SMART].availability[w]);
			json_num(wo, "service_burn_rate", r->k[PROM_SLO_SERVICE].burn[w]);
			json_num(wo, "smart_burn_rate", r->k[PROM_SLO_SMART].burn[w]);
		}
		eb = cJSON_AddObjectToObject(ro, "error_budget");
		for (k = 0; k < PROM_SLO_NKIND; k++) {
			ko = cJSON_AddObjectToObject(eb, kind_names[k]);
			json_num(ko, "remaining", r->k[k].budget_left);
			json_num(ko, "burn_rate_1h", r->k[k].burn[2]);
		}
		arr = cJSON_AddArrayToObject(ro, "alerts");
		for (j = 0; j < r->nalerts; j++) {
			ao = cJSON_CreateObject();
			cJSON_AddItemToArray(arr, ao);
			cJSON_AddStringToObject(ao, "alertname", r->alerts[j].alertname);
			cJSON_AddStringToObject(ao, "kind", r->alerts[j].kind);
			cJSON_AddStringToObject(ao, "window", r->alerts[j].window);
			cJSON_AddStringToObject(ao, "severity", r->alerts[j].severity);
			cJSON_AddStringToObject(ao, "factor", r->alerts[j].factor);
		}
	}
	text = cJSON_Print(root);
	if (text == NULL)
		abort();
	fputs(text, fp);
	fputc('\n', fp);
	free(text);
	cJSON_Delete(root);
}

int
prom_slo_print(FILE *fp, const char *url, const char *route, int json, long timeout_ms,
	       char **cause)
{
	struct prom_slo *s = NULL;
	int rc = prom_slo_fetch(url, route, timeout_ms, &s, cause);

	if (rc != 0)
		return rc;
	if (json)
		prom_slo_json(fp, s);
	else
		prom_slo_render(fp, s);
	prom_slo_free(s);
	return 0;
}

/* ---- the console's fleet mode (screen_slo.c) ---- */

int
prom_slo_history(const char *url, const char *route, int kind, const char *window, int64_t start_ms,
		 int64_t end_ms, int64_t step_ms, long timeout_ms, struct prom_result *out,
		 char **cause)
{
	char *q = route != NULL ? promql_quote(route) : NULL, *expr;
	int rc;

	expr = xasprintf(REC_AVAIL "%s{%s%s%skind=\"%s\"}", window, q ? "route=\"" : "", q ? q : "",
			 q ? "\"," : "",
			 kind_names[kind == PROM_SLO_SMART ? PROM_SLO_SMART : PROM_SLO_SERVICE]);
	rc = prom_query_range(url, expr, start_ms, end_ms, step_ms, timeout_ms, out, cause);
	free(expr);
	free(q);
	return rc;
}

void
prom_slo_alerts_text(const struct prom_slo_route *r, char *out, size_t outsz)
{
	alerts_text(r, out, outsz);
}

void
prom_slo_levels_text(const struct prom_slo_route *r, char *out, size_t outsz)
{
	levels_text(r, out, outsz);
}

void
prom_burn_text(char *out, size_t outsz, double v)
{
	burn_text(out, outsz, v);
}

void
prom_status_text(char *out, size_t outsz, const char *url, int fetching, const char *err,
		 int64_t err_since_wall, int64_t ok_wall, int64_t now_wall)
{
	char since[32], ago[32];

	if (err != NULL && err[0] != '\0') {
		if (strncmp(err, "Prometheus unreachable: ", 24) == 0)
			err += 24;
		fmt_clock(since, sizeof since, err_since_wall, now_wall);
		snprintf(out, outsz, "prometheus unreachable since %s (%s)", since, err);
	} else if (ok_wall <= 0) {
		snprintf(out, outsz, "fetching%s from %s", fmt_is_ascii() ? "..." : "\xe2\x80\xa6",
			 url);
	} else {
		fmt_duration(ago, sizeof ago, now_wall - ok_wall, 0);
		snprintf(out, outsz, "prometheus %s: updated %s ago%s", url, ago,
			 fetching ? ", fetching" : "");
	}
}
