#pragma once
/*
 * config_table: the one table of configuration keys (CONFIG.md), internal
 * to the config module. A row names a key by its path pattern
 * ("routes[].retry.multiplier": "[]" stands for any array index), its type,
 * range, default (JSON text), unit and help. The loader (config_walk.c,
 * config.c) reads types, defaults and ranges from here and suggests unknown
 * keys' nearest neighbours from here; --help prints it; the state API may
 * read it.
 * Pure constant data.
 *
 * Offsets: a row's off is relative to the struct of the nearest enclosing
 * array element (struct backend_cfg for "backends[].…", struct route_cfg
 * for "routes[].…", struct target_cfg for "routes[].targets[].…", …) or to
 * struct config at the top level. CKEY_NOFF: the loader's own code reads
 * the key.
 */
#include <stddef.h>

enum ckey_type {
	CKEY_BOOL = 0,
	CKEY_INT,    /* int */
	CKEY_INT64,  /* int64_t */
	CKEY_NUMBER, /* double */
	CKEY_STRING, /* char *, owned by the config; names: allowed values */
	CKEY_ENUM,   /* int-sized enum; names[i] is the spelling of value i */
	CKEY_OBJECT, /* nested object; its keys are rows of their own */
	CKEY_ARRAY,  /* read by the loader's code (elements may have rows) */
	CKEY_ANY,    /* any JSON value, read by the loader's code */
};

enum ckey_flag {
	CKEY_REQUIRED = 1 << 0, /* error when absent (from a present parent) */
	CKEY_SECTION = 1 << 1,	/* optional object: off holds its enabled flag */
	CKEY_CUSTOM = 1 << 2,	/* typed row the loader reads itself */
};

#define CKEY_NOFF ((size_t)-1)

struct config_key {
	const char *path;
	enum ckey_type type;
	unsigned flags;
	size_t off;
	double min, max;	  /* numbers: value range; strings: length in bytes */
	const char *def;	  /* default as JSON text; NULL: none (absent stays NULL/0) */
	const char *const *names; /* CKEY_ENUM names, CKEY_STRING allowed values; NULL-terminated */
	const char *tname;	  /* type shown in --help when not the plain type name */
	const char *unit;	  /* "ms", "s", "bytes", …, or NULL */
	const char *help;
};

extern const struct config_key config_keys[];
extern const size_t config_nkeys;

/* The row whose path is exactly path, or NULL. */
const struct config_key *config_key_find(const char *path);
/* Is row k a direct child of the object pattern parent ("" = top level)? */
int config_key_is_child(const struct config_key *k, const char *parent);
/* The last component of k->path ("multiplier"). */
const char *config_key_name(const struct config_key *k);
/* "integer", "number", "boolean", "string", "object", "array", … */
const char *config_key_type_name(const struct config_key *k);

/* Names tables shared with config.h's *_name() functions. NULL-terminated. */
extern const char *const config_names_breaker_mode[];
extern const char *const config_names_http_version[];
extern const char *const config_names_backoff[];
extern const char *const config_names_timeout_mode[];
extern const char *const config_names_on_exhausted[];
extern const char *const config_names_tool_calls[];
extern const char *const config_names_priority[];
extern const char *const config_names_overflow[];
extern const char *const config_names_alert_op[];
extern const char *const config_names_severity[];
extern const char *const config_names_slo_window[];
extern const char *const config_names_log_level[];
extern const char *const config_names_message_role[];
