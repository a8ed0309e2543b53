#pragma once
/*
 * tokens: the bearer tokens file (CONFIG.md "tokens_file"). One token a
 * line, "<token> <role> <name>", role caller | viewer | operator; blank
 * lines and lines starting with '#' are ignored. The file must not be
 * readable by group or others. Token values are secrets: they never appear
 * in a cause message. Loaded on the main thread (start, reload); a loaded
 * set is immutable and may be read from any thread.
 */
#include <stdint.h>

enum role { ROLE_CALLER = 0, ROLE_VIEWER, ROLE_OPERATOR };

enum tokens_e {
	TOKENS_E_INVALID = 1, /* a bad line (all of them are listed in cause) */
	TOKENS_E_PERMS,	      /* the file is group/world accessible: refused */
};

struct token {
	char *token; /* the secret */
	enum role role;
	char *name; /* the actor name written to audit rows */
};

struct tokens {
	struct token *v;
	int n;
};

/*
 * Parse the text of a tokens file. Pure. On success *out owns a new set
 * (possibly empty). On TOKENS_E_INVALID *cause lists every bad line as
 * "line N: problem", one per line (caller frees). Duplicate tokens are an
 * error; duplicate names are not.
 */
int tokens_parse(const char *text, struct tokens **out, char **cause);

/*
 * Read and parse path: -ENOENT when missing (and other -errno for I/O
 * errors), TOKENS_E_PERMS when st_mode & 077 (cause says the mode and the
 * chmod fix), else as tokens_parse with the path in front of each line.
 */
int tokens_load(const char *path, struct tokens **out, char **cause);

/*
 * The token equal to presented, or NULL. Compares against every token in
 * constant time per token, without an early exit.
 */
const struct token *tokens_find(const struct tokens *t, const char *presented);

/* Free t (secrets are wiped first); NULL is a no-op. */
void tokens_free(struct tokens *t);

/* "caller", "viewer", "operator"; NULL when out of range. */
const char *role_name(enum role r);
/* 0 and *out set, or -EINVAL for an unknown name. */
int role_parse(const char *name, enum role *out);
