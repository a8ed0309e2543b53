/*
 * config_syntax: name where a config file stops being JSON (config_syntax.h).
 *
 * Locating syntax errors: cJSON says only that parsing failed, and where
 * it stopped is often past the mistake. This strict scanner re-reads the
 * text (only after a failure) to find the first offending byte and name
 * the problem. It accepts exactly RFC 8259 JSON.
 */
#include "config_syntax.h"

#include <string.h>

#include "util.h"

struct scan {
	const char *s;
	size_t len, off;
	const char *err;
	int depth;
};

#define SCAN_MAX_DEPTH 1000

static int scan_value(struct scan *sc);

static void
scan_ws(struct scan *sc)
{
	while (sc->off < sc->len && strchr(" \t\r\n", sc->s[sc->off]) != NULL &&
	       sc->s[sc->off] != '\0')
		sc->off++;
}

static int
scan_fail(struct scan *sc, const char *err)
{
	if (sc->off >= sc->len)
		err = "unexpected end of input";
	else if (sc->s[sc->off] == '/')
		err = "comments are not allowed (the file is strict JSON)";
	else if (sc->s[sc->off] == '\'')
		err = "strings take double quotes";
	sc->err = err;
	return -1;
}

static int
scan_string(struct scan *sc)
{
	unsigned char ch;
	int i;

	sc->off++;
	while (sc->off < sc->len) {
		ch = (unsigned char)sc->s[sc->off];
		if (ch == '"') {
			sc->off++;
			return 0;
		}
		if (ch < 0x20)
			return scan_fail(sc, "control character in a string (escape it, e.g. \\n)");
		if (ch == '\\') {
			sc->off++;
			if (sc->off >= sc->len)
				break;
			ch = (unsigned char)sc->s[sc->off];
			if (ch == 'u') {
				for (i = 1; i <= 4; i++) {
					if (sc->off + (size_t)i >= sc->len ||
					    strchr("0123456789abcdefABCDEF",
						   sc->s[sc->off + (size_t)i]) == NULL ||
					    sc->s[sc->off + (size_t)i] == '\0') {
						sc->off += (size_t)i;
						return scan_fail(sc, "\\u needs four hex digits");
					}
				}
				sc->off += 4;
			} else if (strchr("\"\\/bfnrt", ch) == NULL || ch == '\0') {
				return scan_fail(sc, "invalid escape in a string");
			}
		}
		sc->off++;
	}
	sc->err = "unterminated string";
	return -1;
}

static int
scan_digits(struct scan *sc)
{
	size_t start = sc->off;

	while (sc->off < sc->len && sc->s[sc->off] >= '0' && sc->s[sc->off] <= '9')
		sc->off++;
	return sc->off > start ? 0 : scan_fail(sc, "invalid number");
}

static int
scan_number(struct scan *sc)
{
	if (sc->s[sc->off] == '-')
		sc->off++;
	if (sc->off < sc->len && sc->s[sc->off] == '0')
		sc->off++;
	else if (scan_digits(sc) != 0)
		return -1;
	if (sc->off < sc->len && sc->s[sc->off] == '.') {
		sc->off++;
		if (scan_digits(sc) != 0)
			return -1;
	}
	if (sc->off < sc->len && (sc->s[sc->off] == 'e' || sc->s[sc->off] == 'E')) {
		sc->off++;
		if (sc->off < sc->len && (sc->s[sc->off] == '+' || sc->s[sc->off] == '-'))
			sc->off++;
		if (scan_digits(sc) != 0)
			return -1;
	}
	return 0;
}

/* An object or array; sc->off is at its opening bracket. */
static int
scan_container(struct scan *sc, char close)
{
	int first = 1;

	if (++sc->depth > SCAN_MAX_DEPTH)
		return scan_fail(sc, "nested too deeply");
	sc->off++;
	for (;;) {
		scan_ws(sc);
		if (sc->off < sc->len && sc->s[sc->off] == close) {
			if (!first)
				return scan_fail(sc, close == '}' ? "trailing comma before '}'"
								  : "trailing comma before ']'");
			break;
		}
		if (close == '}') {
			if (sc->off >= sc->len || sc->s[sc->off] != '"')
				return scan_fail(sc, "expected a double-quoted key");
			if (scan_string(sc) != 0)
				return -1;
			scan_ws(sc);
			if (sc->off >= sc->len || sc->s[sc->off] != ':')
				return scan_fail(sc, "expected ':' after the key");
			sc->off++;
		}
		if (scan_value(sc) != 0)
			return -1;
		first = 0;
		scan_ws(sc);
		if (sc->off < sc->len && sc->s[sc->off] == ',') {
			sc->off++;
			continue;
		}
		if (sc->off < sc->len && sc->s[sc->off] == close)
			break;
		return scan_fail(sc, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
	}
	sc->off++;
	sc->depth--;
	return 0;
}

static int
scan_value(struct scan *sc)
{
	static const char *const lits[] = {"true", "false", "null"};
	size_t i, n;
	char ch;

	scan_ws(sc);
	if (sc->off >= sc->len)
		return scan_fail(sc, "expected a value");
	ch = sc->s[sc->off];
	if (ch == '{')
		return scan_container(sc, '}');
	if (ch == '[')
		return scan_container(sc, ']');
	if (ch == '"')
		return scan_string(sc);
	if (ch == '-' || (ch >= '0' && ch <= '9'))
		return scan_number(sc);
	for (i = 0; i < ARRAY_SIZE(lits); i++) {
		n = strlen(lits[i]);
		if (sc->len - sc->off >= n && memcmp(sc->s + sc->off, lits[i], n) == 0) {
			sc->off += n;
			return 0;
		}
	}
	return scan_fail(sc,
			 "expected a value (object, array, string, number, true, false or null)");
}

/* NULL when text is strict JSON, else "NAME:LINE:COL: invalid JSON: problem". */
char *
config_syntax_check(const char *name, const char *text, size_t len)
{
	struct scan sc = {.s = text, .len = len};
	int line = 1, col = 1;
	size_t i;

	if (scan_value(&sc) == 0) {
		scan_ws(&sc);
		if (sc.off < sc.len && text[sc.off] == '\0')
			sc.err = "NUL byte in the file";
		else if (sc.off < sc.len)
			scan_fail(&sc, "unexpected text after the JSON value");
	}
	if (sc.err == NULL)
		return NULL;
	for (i = 0; i < sc.off && i < len; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	return xasprintf("%s:%d:%d: invalid JSON: %s", name, line, col, sc.err);
}
