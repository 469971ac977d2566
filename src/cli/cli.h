/* SPDX-License-Identifier: MIT */
/* The subcommands of `wattage`; each returns the process exit status (0, 1 runtime, 2 usage). */
#ifndef WT_CLI_H
#define WT_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"

int wt_cmd_run(int argc, char **argv);
int wt_cmd_status(int argc, char **argv);
int wt_cmd_check_config(int argc, char **argv);
int wt_cmd_energy(int argc, char **argv);
int wt_cmd_query(int argc, char **argv);
int wt_cmd_import(int argc, char **argv);

struct wt_store;
/*
 * Opens the store for a command: db when given, else store.path of the configuration (config or
 * the default file). Prints the error; returns 0, 1 (no store, cannot open) or 2 (bad config).
 */
int wt_cli_open_store(const char *config, const char *db, bool create, struct wt_store **out);
/* Parses a time argument with wt_time_parse; prints "wattage CMD: OPT: expected …", returns 2. */
int wt_cli_parse_time(const char *cmd, const char *opt, const char *s, int64_t now,
                      int64_t *out);

/*
 * Loads the configuration for a command: `path` when given (must exist), else the default file
 * when it exists, else the built-in defaults. Prints the error and returns 2 on bad input.
 */
int wt_cli_load_config(const char *path, struct wt_config *cfg);

#endif
