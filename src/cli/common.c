/* SPDX-License-Identifier: MIT */
/* What several subcommands share: finding and loading the configuration. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/log.h"

int wt_cli_load_config(const char *path, struct wt_config *cfg)
{
    struct wt_err err = {{0}};
    wt_config_defaults(cfg);
    if (!path) {
        if (access(WT_DEFAULT_CONFIG, F_OK) != 0)
            return 0; /* no file: the built-in defaults */
        path = WT_DEFAULT_CONFIG;
    }
    int rc = wt_config_load(path, cfg, &err);
    if (rc != 0) {
        fprintf(stderr, "wattage: %s\n", err.msg);
        return 2;
    }
    wt_log_set_level(cfg->daemon.log_level);
    return 0;
}
