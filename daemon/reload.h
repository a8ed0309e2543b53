#pragma once
/*
 * reload: apply a new configuration to the running daemon, keeping the
 * runtime state of what stays. Engine thread.
 */
struct config;
struct engine;

/*
 * Apply ncfg (consumed): backends and routes are matched by name and keep
 * their breakers, windows, bulkheads, levels and escalation state; live
 * calls finish on the configuration they started with. The listen address
 * and the database path take effect only at restart (a warning says so).
 * 0, or -EIO with *cause (nothing changed).
 */
int reload_apply(struct engine *e, struct config *ncfg, char **cause);
/* Reload from the current configuration file (and the tokens file). 0, or CONFIG_E_* / -errno with
 * *cause. */
int reload_from_disk(struct engine *e, char **cause);
