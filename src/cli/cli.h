/* SPDX-License-Identifier: MIT */
/* The subcommands of `wattage`; each returns the process exit status (0, 1 runtime, 2 usage). */
#ifndef WT_CLI_H
#define WT_CLI_H

#include "core/config.h"

int wt_cmd_run(int argc, char **argv);
int wt_cmd_status(int argc, char **argv);
int wt_cmd_check_config(int argc, char **argv);

/*
 * Loads the configuration for a command: `path` when given (must exist), else the default file
 * when it exists, else the built-in defaults. Prints the error and returns 2 on bad input.
 */
int wt_cli_load_config(const char *path, struct wt_config *cfg);

#endif
