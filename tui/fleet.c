/*
 * fleet: the fleet file and the per-host polling schedule (see fleet.h).
 */
#include "fleet.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int
name_ok(const char *s)
{
	size_t i;

	if (s[0] == '\0' || strlen(s) >= FLEET_NAME_MAX)
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

static int
url_ok(const char *s)
{
	return (strncmp(s, "http://", 7) == 0 && s[7] != '\0') ||
	       (strncmp(s, "https://", 8) == 0 && s[8] != '\0');
}

static int
line_error(char **cause, int lineno, const char *fmt, const char *arg)
{
	char msg[256];

	snprintf(msg, sizeof msg, fmt, arg);
	*cause = xasprintf("fleet line %d: %s", lineno, msg);
	return -EINVAL;
}

/* Split line (modified in place) into at most max fields; the count, or max + 1 when more. */
static int
split(char *line, char **field, int max)
{
	int n = 0;
	char *p = line;

	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (*p == '\0' || *p == '#')
			return n;
		if (n == max)
			return max + 1;
		field[n++] = p;
		while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\r')
			p++;
		if (*p == '\0')
			return n;
		*p++ = '\0';
	}
}

static int
parse_line(char *line, int lineno, const char *dir, struct fleet *f, char **cause)
{
	struct fleet_host *h;
	char *fld[4];
	int n = split(line, fld, 4);

	if (n == 0)
		return 0;
	if (n == 1)
		return line_error(cause, lineno, "\"%s\": expected NAME URL [TOKEN_FILE] [GROUP]",
				  fld[0]);
	if (n > 4)
		return line_error(cause, lineno,
				  "%s: too many fields (NAME URL [TOKEN_FILE] [GROUP])", fld[0]);
	if (!name_ok(fld[0]))
		return line_error(cause, lineno,
				  "name \"%s\": letters, digits, '.', '_' or '-', at most 63",
				  fld[0]);
	if (fleet_find(f, fld[0]) >= 0)
		return line_error(cause, lineno, "name \"%s\" given twice", fld[0]);
	if (!url_ok(fld[1]) || strlen(fld[1]) >= sizeof f->hosts[0].url)
		return line_error(cause, lineno, "URL \"%s\": must be http:// or https://", fld[1]);
	if (n == 4 && !name_ok(fld[3]))
		return line_error(cause, lineno,
				  "group \"%s\": letters, digits, '.', '_' or '-', at most 63",
				  fld[3]);
	if (f->n == FLEET_HOSTS_MAX)
		return line_error(cause, lineno, "more than %s hosts", "256");
	h = &f->hosts[f->n++];
	memset(h, 0, sizeof *h);
	snprintf(h->name, sizeof h->name, "%s", fld[0]);
	snprintf(h->url, sizeof h->url, "%s", fld[1]);
	while (strlen(h->url) > 0 && h->url[strlen(h->url) - 1] == '/')
		h->url[strlen(h->url) - 1] = '\0';
	if (n >= 3 && strcmp(fld[2], "-") != 0) {
		if (fld[2][0] == '/' || dir == NULL || dir[0] == '\0')
			h->token_file = xstrdup(fld[2]);
		else
			h->token_file = xasprintf("%s/%s", dir, fld[2]);
	}
	if (n == 4)
		snprintf(h->group, sizeof h->group, "%s", fld[3]);
	return 0;
}

int
fleet_parse(const char *text, size_t len, const char *dir, struct fleet *f, char **cause)
{
	size_t start = 0, end;
	char *line;
	int lineno = 0, rc = 0;

	memset(f, 0, sizeof *f);
	f->hosts = xcalloc(FLEET_HOSTS_MAX, sizeof *f->hosts);
	while (rc == 0 && start < len) {
		for (end = start; end < len && text[end] != '\n'; end++)
			;
		lineno++;
		line = xstrndup(text + start, end - start);
		if (strlen(line) != end - start)
			rc = line_error(cause, lineno, "%s", "NUL byte");
		else
			rc = parse_line(line, lineno, dir, f, cause);
		free(line);
		start = end + 1;
	}
	if (rc == 0 && f->n == 0) {
		*cause = xstrdup("fleet file: no host (lines NAME URL [TOKEN_FILE] [GROUP])");
		rc = -EINVAL;
	}
	if (rc != 0)
		fleet_free(f);
	return rc;
}

int
fleet_load(const char *path, struct fleet *f, char **cause)
{
	struct buf b;
	char chunk[4096], *dir, *slash, *inner = NULL;
	size_t n;
	FILE *fp;
	int rc = 0;

	memset(f, 0, sizeof *f);
	fp = fopen(path, "r");
	if (fp == NULL) {
		rc = -errno;
		*cause = xasprintf("fleet file %s: %s", path, strerror(errno));
		return rc;
	}
	buf_init(&b, 1024 * 1024);
	while (rc == 0 && (n = fread(chunk, 1, sizeof chunk, fp)) > 0)
		rc = buf_append(&b, chunk, n);
	if (rc == 0 && ferror(fp))
		rc = -EIO;
	fclose(fp);
	if (rc != 0) {
		*cause = xasprintf("fleet file %s: %s", path, strerror(-rc));
		buf_free(&b);
		return rc;
	}
	dir = xstrdup(path);
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	else
		dir[0] = '\0';
	rc = fleet_parse(b.data ? b.data : "", b.len, dir, f, &inner);
	if (rc != 0) {
		*cause = xasprintf("%s: %s", path, inner);
		free(inner);
	}
	free(dir);
	buf_free(&b);
	return rc;
}

void
fleet_free(struct fleet *f)
{
	int i;

	for (i = 0; f->hosts != NULL && i < f->n; i++)
		free(f->hosts[i].token_file);
	free(f->hosts);
	memset(f, 0, sizeof *f);
}

int
fleet_find(const struct fleet *f, const char *name)
{
	int i;

	for (i = 0; i < f->n; i++)
		if (strcmp(f->hosts[i].name, name) == 0)
			return i;
	return -1;
}

int
fleet_in_group(const struct fleet *f, int i, const char *group)
{
	return group == NULL || group[0] == '\0' || strcmp(f->hosts[i].group, group) == 0;
}

int
fleet_poll_due(const struct fleet_poll *p, int64_t now)
{
	return p->next_at <= now;
}

void
fleet_poll_done(struct fleet_poll *p, int ok, int64_t now, int64_t now_wall)
{
	int64_t wait = 1000;
	int k;

	if (ok) {
		p->fails = 0;
		p->down_since = 0;
		p->next_at = now + FLEET_POLL_MS;
		return;
	}
	if (p->fails++ == 0)
		p->down_since = now_wall;
	for (k = 1; k < p->fails && wait < FLEET_BACKOFF_MAX; k++)
		wait *= 2;
	p->next_at = now + MIN(wait, FLEET_BACKOFF_MAX);
}
