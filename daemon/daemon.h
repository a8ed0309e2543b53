#pragma once
/*
 * daemon: the composition root. It builds the engine and the services
 * around it, registers their hooks with the loop, attaches the HTTP
 * server as the loop's source, and takes it all down in order. The main
 * thread, before engine_start() and after engine_stop().
 */
struct config;
struct engine;
struct http_server;
struct store;

/*
 * The engine for cfg (consumed, also on failure) and st with every
 * service wired: idempotency table, cache (refilled from the store), SLO
 * book and alerts, notify thread, operator overrides restored, the async
 * job queue and the review queue loaded; cron and before-sleep hooks
 * registered. 0, or an error with *cause (nothing left to free).
 */
int daemon_create(struct config *cfg, struct store *st, struct engine **out, char **cause);
/* The API's endpoint tables, in dispatch order, into o (http_start's options). */
struct http_opts;
void daemon_http_endpoints(struct http_opts *o);
/* srv (borrowed; outlives the engine's loop) as the engine's HTTP source. 0 or -errno. */
int daemon_attach_http(struct engine *e, struct http_server *srv);
/* Stop the engine (drain) and free it with its services. NULL is a no-op. */
void daemon_free(struct engine *e);
