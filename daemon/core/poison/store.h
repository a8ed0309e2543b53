/*
 * Build guard: daemon/core/ is the pure policy core. It is compiled with
 * this folder first on its include path, so an include of <store.h> (or of an
 * I/O module's header) from core/ fails here instead of linking libcurl,
 * libmicrohttpd, SQLite or the engine into the core. Pass facts in as
 * arguments instead (docs/ARCHITECTURE.md, "The core").
 */
#error "daemon/core/ must not include store.h: the core takes no I/O dependency"
