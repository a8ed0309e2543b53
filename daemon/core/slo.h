#pragma once
/*
 * slo: pure SLO arithmetic (DESIGN.md "SLO definitions"). Per route, a
 * compact ring of per-minute counters (only minutes that saw traffic take a
 * slot; at most 30 days), window sums in O(minutes), availabilities, rates,
 * error budget and burn rates. Time is an argument; no I/O. Runs on the
 * engine thread (through obs.c) and in tests.
 */
#include <stdint.h>

#include "config.h"
#include "outcome.h"

enum slo_e {
	SLO_E_CALLER_ERROR = 1, /* a 4xx call: not counted in the SLO */
	SLO_E_TOO_OLD,		/* the minute is older than the ring keeps */
};

/*
 * The per-minute counters, in the column order of STORE_SLO_MINUTE_ADD
 * (?3 .. ?23), so that field i binds ?(3 + i).
 */
enum slo_field {
	SLO_TOTAL = 0,	  /* calls except caller errors (4xx) */
	SLO_SERVICE_GOOD, /* 2xx/202 within budget + grace, any source */
	SLO_SMART_GOOD,	  /* answered by llm or backup */
	SLO_LATENCY_OK,	  /* elapsed <= slo.latency_ms */
	SLO_TIMEOUTS,	  /* calls with at least one timed-out attempt */
	SLO_RETRIES,
	SLO_ATTEMPTS,
	SLO_FORMAT_VIOLATIONS, /* attempts that ended validation_format */
	SLO_SRC_LLM,
	SLO_SRC_BACKUP,
	SLO_SRC_RULES,
	SLO_SRC_CACHE,
	SLO_SRC_PRESET,
	SLO_SRC_MANUAL,
	SLO_REVIEW_DECIDED,
	SLO_REVIEW_CORRECTED,
	SLO_SHADOW_TOTAL,
	SLO_SHADOW_AGREE,
	SLO_CROSS_TOTAL,
	SLO_CROSS_AGREE,
	SLO_NO_LLM, /* counted calls whose caller said allow_llm: false */
	SLO_FIELD__COUNT
};

/* Column names of slo_minutes for each field. */
const char *slo_field_column(enum slo_field f);

/* Grace added to a call's budget before it stops counting as service-good. */
#define SLO_BUDGET_GRACE_MS 10
/* The ring keeps this many minutes (30 days), the longest window. */
#define SLO_MAX_MINUTES 43200
#define SLO_MINUTE_MS	60000LL

/* Start of the minute holding wall_ms (floor, also for negative times). */
int64_t slo_minute_of(int64_t wall_ms);

/* Sums over a window (64-bit: a month of traffic). */
struct slo_counts {
	uint64_t v[SLO_FIELD__COUNT];
};

/* One minute of one route. */
struct slo_minute {
	int64_t minute; /* epoch ms of the minute's start */
	uint32_t v[SLO_FIELD__COUNT];
};

/*
 * Minutes in ascending order in a circular array that grows (doubling) up
 * to SLO_MAX_MINUTES + 1 slots; minutes older than SLO_MAX_MINUTES before
 * the newest are dropped. Minutes without traffic take no slot.
 */
struct slo_ring {
	struct slo_minute *m;
	int cap;
	int head; /* index of the oldest */
	int n;
};

void slo_ring_init(struct slo_ring *r);
void slo_ring_free(struct slo_ring *r);
/*
 * Add delta to the minute holding wall_ms, creating it in order. Returns 0
 * or SLO_E_TOO_OLD (older than SLO_MAX_MINUTES before the newest minute:
 * ignored). Counters saturate at UINT32_MAX.
 */
int slo_ring_add(struct slo_ring *r, int64_t wall_ms, const uint32_t delta[SLO_FIELD__COUNT]);
/* Drop minutes that no window ending at now_ms can reach. */
void slo_ring_expire(struct slo_ring *r, int64_t now_ms);
/*
 * Sums for n windows ending at now_ms (the current minute included, so a
 * window of W minutes spans the current minute and the W - 1 before it), in
 * one backward pass. minutes[] must be ascending. O(minutes of the longest
 * window that hold traffic).
 */
void slo_ring_sums(const struct slo_ring *r, int64_t now_ms, const int *minutes, int n,
		   struct slo_counts *out);

/* What one finished call adds to its minute. */
struct slo_call {
	unsigned http_status;
	int no_llm; /* the caller did not ask for a model (allow_llm: false) */
	enum source source;
	int64_t elapsed_ms;
	int64_t budget_ms;
	int latency_ms; /* slo.latency_ms; <= 0: every answer counts as fast */
	int attempts;
	int retries;
	int timeouts;
	int format_violations;
};

/* Fill delta for c: 0, or SLO_E_CALLER_ERROR (4xx; delta all zero). */
int slo_call_delta(const struct slo_call *c, uint32_t delta[SLO_FIELD__COUNT]);

/* The ratios of one window; NAN where the denominator is 0. */
struct slo_stats {
	double service_availability;
	double smart_availability;
	double latency_ok;
	double timeout_rate;	      /* calls with a timeout / total */
	double retry_rate;	      /* retries / attempts */
	double format_violation_rate; /* format violations / attempts */
};

void slo_stats_compute(const struct slo_counts *c, struct slo_stats *out);

/*
 * The value of an alert metric (config_alert_metric_names) over c: 0 and
 * *out set; -EINVAL for an unknown name; -EDOM when its denominator is 0.
 */
int slo_metric_value(const struct slo_counts *c, const char *metric, double *out);

/* Which objective: the two availabilities have error budgets. */
enum slo_kind { SLO_KIND_SERVICE = 0, SLO_KIND_SMART, SLO_KIND__COUNT };

const char *slo_kind_name(enum slo_kind k);
/* The good counter of kind. */
uint64_t slo_good(const struct slo_counts *c, enum slo_kind k);
/*
 * The denominator of kind: total for service, smart_total (total minus the
 * calls whose caller did not ask for a model) for smart.
 */
uint64_t slo_total(const struct slo_counts *c, enum slo_kind k);
/*
 * The reason a call's caller gives for not asking a model: its calls stay
 * in the service SLO and leave the smart one. 1 when reason is it.
 */
int slo_reason_no_llm(const char *reason);
/*
 * The degradation reasons a call can give besides an outcome class name
 * (outcome.h): the three a call starts below the primary with
 * (llm_disallowed, forced_level, auto_level: one degradations row for the
 * rungs skipped), then the falls of the ladder. NULL-terminated; /metrics
 * shows each at 0 from the start.
 */
extern const char *const slo_degradation_reasons[];
/* 1 when reason is one a call starts below the primary with. */
int slo_reason_is_entry(const char *reason);
/* Error rate / (1 - target); NAN when total is 0 or target >= 1. */
double slo_burn_rate(uint64_t good, uint64_t total, double target);
/* 1 - errors / (total x (1 - target)); NAN when total is 0 or target >= 1. */
double slo_budget_remaining(uint64_t good, uint64_t total, double target);
/*
 * Can a burn-rate alert with factor ever fire for target? The largest
 * possible burn rate (everything failing) is 1 / (1 - target), so it can't
 * when factor x (1 - target) > 1. 1 when it can, 0 when it can't.
 */
int slo_burn_factor_reachable(double factor, double target);
