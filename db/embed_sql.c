/*
 * embed_sql: build-time generator (runs on the build machine). Turns the
 * migration files db/migrations/NNN_name.sql into one C file defining
 *
 *	const struct migration migrations[];	(sorted by version)
 *	const int migrations_count;
 *
 * Usage: embed_sql OUTPUT.c INPUT1.sql [INPUT2.sql ...]
 *
 * The version is the decimal NNN prefix of each basename (followed by '_'),
 * the name is the basename without ".sql", and the SQL is the whole file as
 * an escaped string literal, one source line per SQL line. Duplicate or
 * malformed versions fail the build, so a bad file name cannot silently
 * reorder the schema. The output must match struct migration in
 * db/migrations.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A migration file larger than this is certainly a mistake. */
#define EMBED_FILE_MAX (4 * 1024 * 1024)

struct embed_file {
	int version;
	char *name;
	char *sql;
	size_t len;
};

static void *
embed_alloc(size_t n)
{
	void *p;

	p = malloc(n);
	if (p == NULL) {
		fprintf(stderr, "embed_sql: out of memory\n");
		abort();
	}
	return p;
}

/*
 * Parse "NNN_name.sql" (directories stripped) into version and name.
 * Returns 0 or -EINVAL.
 */
static int
embed_name_parse(const char *path, int *version, char **name)
{
	const char *base, *slash, *us;
	char *end;
	size_t len;
	long v;
	int rc = -EINVAL;

	*name = NULL;
	slash = strrchr(path, '/');
	base = slash != NULL ? slash + 1 : path;
	len = strlen(base);
	if (len < 5 || strcmp(base + len - 4, ".sql") != 0)
		goto out;
	us = strchr(base, '_');
	if (us == NULL || us == base)
		goto out;
	for (const char *p = base; p < base + len - 4; p++) {
		if (strchr("abcdefghijklmnopqrstuvwxyz"
			   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
			   *p) == NULL)
			goto out;
	}
	for (const char *p = base; p < us; p++) {
		if (*p < '0' || *p > '9')
			goto out;
	}
	errno = 0;
	v = strtol(base, &end, 10);
	if (errno != 0 || end != us || v <= 0 || v > INT_MAX)
		goto out;
	*version = (int)v;
	*name = embed_alloc(len - 4 + 1);
	memcpy(*name, base, len - 4);
	(*name)[len - 4] = '\0';
	rc = 0;
out:
	return rc;
}

/* Read a whole file (at most EMBED_FILE_MAX bytes). 0 or -errno. */
static int
embed_file_read(const char *path, char **data, size_t *len)
{
	FILE *f = NULL;
	char *buf = NULL;
	size_t n;
	int rc;

	f = fopen(path, "rb");
	if (f == NULL) {
		rc = -errno;
		goto out;
	}
	buf = embed_alloc(EMBED_FILE_MAX + 1);
	n = fread(buf, 1, EMBED_FILE_MAX + 1, f);
	if (ferror(f)) {
		rc = -EIO;
		goto out;
	}
	if (n > EMBED_FILE_MAX) {
		rc = -E2BIG;
		goto out;
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	if (f != NULL)
		fclose(f);
	return rc;
}

static int
embed_file_cmp(const void *a, const void *b)
{
	const struct embed_file *fa = a, *fb = b;

	return (fa->version > fb->version) - (fa->version < fb->version);
}

/*
 * Write s[0..len) as a C string literal, one literal per source line.
 * Octal escapes are always three digits so a following digit can't extend
 * them; '?' is escaped so no trigraph can form under -std=c11.
 */
static void
embed_literal_write(FILE *out, const char *s, size_t len)
{
	unsigned char c;
	size_t i;

	fputs("\t\t\"", out);
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c == '\n' && i + 1 < len)
			fputs("\\n\"\n\t\t\"", out);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\\')
			fputs("\\\\", out);
		else if (c == '"')
			fputs("\\\"", out);
		else if (c == '?')
			fputs("\\?", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\%03o", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

int
main(int argc, char **argv)
{
	struct embed_file *files = NULL;
	FILE *out = NULL;
	int nfiles = 0, i, rc, status = 1;

	if (argc < 3) {
		fprintf(stderr, "usage: embed_sql OUTPUT.c INPUT.sql ...\n");
		goto out;
	}
	nfiles = argc - 2;
	files = embed_alloc(sizeof(*files) * (size_t)nfiles);
	memset(files, 0, sizeof(*files) * (size_t)nfiles);
	for (i = 0; i < nfiles; i++) {
		const char *path = argv[i + 2];

		if (embed_name_parse(path, &files[i].version, &files[i].name) != 0) {
			fprintf(stderr,
				"embed_sql: %s: name must be "
				"NNN_name.sql with NNN > 0\n",
				path);
			goto out;
		}
		rc = embed_file_read(path, &files[i].sql, &files[i].len);
		if (rc != 0) {
			fprintf(stderr, "embed_sql: %s: %s\n", path, strerror(-rc));
			goto out;
		}
		if (strlen(files[i].sql) != files[i].len) {
			fprintf(stderr, "embed_sql: %s: contains a NUL byte\n", path);
			goto out;
		}
	}
	qsort(files, (size_t)nfiles, sizeof(*files), embed_file_cmp);
	for (i = 1; i < nfiles; i++) {
		if (files[i].version == files[i - 1].version) {
			fprintf(stderr,
				"embed_sql: %s and %s share version "
				"%d\n",
				files[i - 1].name, files[i].name, files[i].version);
			goto out;
		}
	}

	out = fopen(argv[1], "w");
	if (out == NULL) {
		fprintf(stderr, "embed_sql: %s: %s\n", argv[1], strerror(errno));
		goto out;
	}
	fputs("/* Generated by db/embed_sql.c from db/migrations/NNN_name.sql: "
	      "do not edit. */\n#include \"migrations.h\"\n\n"
	      "const struct migration migrations[] = {\n",
	      out);
	for (i = 0; i < nfiles; i++) {
		fprintf(out, "\t{\n\t\t%d,\n\t\t\"%s\",\n", files[i].version, files[i].name);
		if (files[i].len == 0)
			fputs("\t\t\"\"", out);
		else
			embed_literal_write(out, files[i].sql, files[i].len);
		fputs("\n\t},\n", out);
	}
	fprintf(out, "};\n\nconst int migrations_count = %d;\n", nfiles);
	if (fflush(out) != 0 || ferror(out)) {
		fprintf(stderr, "embed_sql: %s: write error\n", argv[1]);
		goto out;
	}
	status = 0;
out:
	if (out != NULL && fclose(out) != 0)
		status = 1;
	if (status != 0 && out != NULL)
		remove(argv[1]);
	for (i = 0; files != NULL && i < nfiles; i++) {
		free(files[i].name);
		free(files[i].sql);
	}
	free(files);
	return status;
}
