#pragma once
/*
 * migrations: the schema migrations compiled into the binary. embed_sql
 * generates the definitions from db/migrations/NNN_name.sql at build time;
 * the array is sorted by version (strictly increasing, starting anywhere
 * above 0). Read-only, shared by every thread.
 */

struct migration {
	int version;	  /* NNN of the file name */
	const char *name; /* file name without ".sql", e.g. "001_initial" */
	const char *sql;  /* the whole file, run with sqlite3_exec() */
};

extern const struct migration migrations[];
extern const int migrations_count;
