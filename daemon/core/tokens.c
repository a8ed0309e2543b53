/*
 * tokens: parse, load and look up bearer tokens.
 *
 * Design: tokens_parse() is pure and reports every bad line, so an operator
 * fixes the file in one go. Messages name the line and the problem, never
 * the token itself (a typo'd role must not leak the secret into a log).
 * tokens_load() checks the mode on the open descriptor (fstat, no race
 * between the check and the read). tokens_find() compares the presented
 * value with every token without an early exit, so the time taken does not
 * say which token, or how much of one, matched.
 */
#include "tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define TOKENS_MAX_FILE	 (1024 * 1024)
#define TOKENS_MAX_LINE	 4096
#define TOKENS_MAX_CAUSE (64 * 1024)

static const char *const role_names[] = {
	[ROLE_CALLER] = "caller",
	[ROLE_VIEWER] = "viewer",
	[ROLE_OPERATOR] = "operator",
};

const char *
role_name(enum role r)
{
	if ((unsigned)r >= ARRAY_SIZE(role_names))
		return NULL;
	return role_names[r];
}

int
role_parse(const char *name, enum role *out)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(role_names); i++) {
		if (strcmp(role_names[i], name) == 0) {
			*out = (enum role)i;
			return 0;
		}
	}
	return -EINVAL;
}

static void
wipe_free(char *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

void
tokens_free(struct tokens *t)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n; i++) {
		wipe_free(t->v[i].token);
		free(t->v[i].name);
	}
	free(t->v);
	free(t);
}

/* Split off the next run of non-blank bytes; *p advances past it. */
static size_t
field_next(const char **p, const char *end, const char **start)
{
	const char *s = *p;
	size_t n = 0;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	*start = s;
	while (s + n < end && s[n] != ' ' && s[n] != '\t')
		n++;
	*p = s + n;
	return n;
}

/* Bytes a token may hold: visible ASCII (it travels in an HTTP header). */
static bool
token_chars_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	}
	return true;
}

static bool
name_chars_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	}
	return true;
}

static void __attribute__((format(printf, 3, 4)))
cause_add(struct buf *b, int lineno, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	buf_printf(b, "%sline %d: %s", b->len > 0 ? "\n" : "", lineno,
		   msg != NULL ? msg : "invalid line");
	free(msg);
}

/* Parse one non-comment line into tok; 0 or -EINVAL with a message in errs. */
static int
line_parse(const char *s, const char *end, int lineno, const struct tokens *t, const int *linenos,
	   struct token *tok, struct buf *errs)
{
	const char *ftok, *frole, *fname, *fextra, *p = s;
	size_t ntok, nrole, nname, nextra;
	char role[32];
	enum role r;
	int i, rc = -EINVAL;

	ntok = field_next(&p, end, &ftok);
	nrole = field_next(&p, end, &frole);
	nname = field_next(&p, end, &fname);
	nextra = field_next(&p, end, &fextra);
	if (nrole == 0 || nname == 0 || nextra != 0) {
		cause_add(errs, lineno, "expected \"<token> <role> <name>\" (%s)",
			  nextra != 0 ? "more than three fields" : "fewer than three fields");
		goto out;
	}
	if (!token_chars_ok(ftok, ntok)) {
		cause_add(errs, lineno, "%s", "token holds a control or non-ASCII byte");
		goto out;
	}
	/* The role's text is not echoed: on a misordered line it may be the secret. */
	memset(role, 0, sizeof role);
	if (nrole < sizeof role)
		memcpy(role, frole, nrole);
	if (role_parse(role, &r) != 0) {
		cause_add(errs, lineno, "%s",
			  "second field is not a role (expected caller, viewer or operator)");
		goto out;
	}
	if (!name_chars_ok(fname, nname)) {
		cause_add(errs, lineno, "%s", "name holds a control byte");
		goto out;
	}
	for (i = 0; i < t->n; i++) {
		if (strlen(t->v[i].token) == ntok && memcmp(t->v[i].token, ftok, ntok) == 0) {
			cause_add(errs, lineno, "duplicate token (same as line %d)", linenos[i]);
			goto out;
		}
	}
	tok->token = xstrndup(ftok, ntok);
	tok->role = r;
	tok->name = xstrndup(fname, nname);
	rc = 0;
out:
	explicit_bzero(role, sizeof role);
	return rc;
}

int
tokens_parse(const char *text, struct tokens **out, char **cause)
{
	struct tokens *t = NULL;
	struct buf errs;
	const char *s = text, *nl, *end, *p;
	int *linenos = NULL;
	int lineno = 0, cap = 0, rc = 0;
	struct token tok;

	buf_init(&errs, TOKENS_MAX_CAUSE);
	t = xcalloc(1, sizeof *t);
	while (*s != '\0') {
		lineno++;
		nl = strchr(s, '\n');
		end = nl != NULL ? nl : s + strlen(s);
		if (end > s && end[-1] == '\r')
			end--;
		p = s;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - s > TOKENS_MAX_LINE) {
			cause_add(&errs, lineno, "line too long (more than %d bytes)",
				  TOKENS_MAX_LINE);
		} else if (p < end && *p != '#') {
			memset(&tok, 0, sizeof tok);
			if (line_parse(p, end, lineno, t, linenos, &tok, &errs) == 0) {
				if (t->n == cap) {
					cap = cap ? cap * 2 : 8;
					t->v = xrealloc(t->v, (size_t)cap * sizeof *t->v);
					linenos = xrealloc(linenos, (size_t)cap * sizeof *linenos);
				}
				linenos[t->n] = lineno;
				t->v[t->n++] = tok;
			}
		}
		if (nl == NULL)
			break;
		s = nl + 1;
	}
	if (errs.len > 0) {
		rc = TOKENS_E_INVALID;
		if (cause != NULL)
			*cause = buf_steal(&errs);
		goto out;
	}
	*out = t;
	t = NULL;
out:
	buf_free(&errs);
	free(linenos);
	tokens_free(t);
	return rc;
}

/* Prefix every line of msg with "path: ". */
static char *
cause_prefix(const char *path, const char *msg)
{
	struct buf b;
	const char *s = msg, *nl;

	buf_init(&b, TOKENS_MAX_CAUSE + 64 * 1024);
	for (;;) {
		nl = strchr(s, '\n');
		buf_printf(&b, "%s%s: ", b.len > 0 ? "\n" : "", path);
		buf_append(&b, s, nl != NULL ? (size_t)(nl - s) : strlen(s));
		if (nl == NULL)
			break;
		s = nl + 1;
	}
	return buf_steal(&b);
}

int
tokens_load(const char *path, struct tokens **out, char **cause)
{
	struct stat st;
	struct buf data;
	char chunk[4096], *pcause = NULL;
	ssize_t n;
	int fd = -1, rc = 0;

	buf_init(&data, TOKENS_MAX_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		rc = -errno;
		if (cause != NULL)
			*cause = xasprintf("%s: %s", path, strerror(errno));
		goto out;
	}
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		if (cause != NULL)
			*cause = xasprintf("%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		if (cause != NULL)
			*cause = xasprintf("%s: not a regular file", path);
		goto out;
	}
	if ((st.st_mode & 077) != 0) {
		rc = TOKENS_E_PERMS;
		if (cause != NULL)
			*cause = xasprintf("%s: mode %04o lets group/others access the tokens "
					   "file; fix with: chmod 600 %s",
					   path, (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	for (;;) {
		n = read(fd, chunk, sizeof chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			if (cause != NULL)
				*cause = xasprintf("%s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		if (memchr(chunk, '\0', (size_t)n) != NULL) {
			rc = TOKENS_E_INVALID;
			if (cause != NULL)
				*cause = xasprintf("%s: holds a NUL byte (not a text file)", path);
			goto out;
		}
		if (buf_append(&data, chunk, (size_t)n) != 0) {
			rc = -E2BIG;
			if (cause != NULL)
				*cause = xasprintf("%s: larger than %d bytes", path,
						   TOKENS_MAX_FILE);
			goto out;
		}
	}
	rc = tokens_parse(data.data != NULL ? data.data : "", out, &pcause);
	if (rc != 0 && cause != NULL)
		*cause = cause_prefix(path, pcause != NULL ? pcause : "invalid");
out:
	explicit_bzero(chunk, sizeof chunk);
	if (data.data != NULL)
		explicit_bzero(data.data, data.len);
	buf_free(&data);
	free(pcause);
	if (fd >= 0)
		close(fd);
	return rc;
}

const struct token *
tokens_find(const struct tokens *t, const char *presented)
{
	const struct token *found = NULL;
	int i;

	if (t == NULL || presented == NULL || *presented == '\0')
		return NULL;
	for (i = 0; i < t->n; i++) {
		/* str_consttime_eq walks presented fully: timing depends on it only. */
		if (str_consttime_eq(t->v[i].token, presented) && found == NULL)
			found = &t->v[i];
	}
	return found;
}
