/* SPDX-License-Identifier: MIT */
/* `wattage check-config FILE`: validates a configuration without running anything. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int wt_cmd_check_config(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: wattage check-config FILE\n");
        return 2;
    }
    struct wt_config cfg;
    int rc = wt_cli_load_config(argv[1], &cfg);
    if (rc != 0)
        return rc;
    printf("%s: ok\n", argv[1]);
    wt_config_free(&cfg);
    return 0;
}
