/* SPDX-License-Identifier: MIT */
/* `wattage check-config FILE`: validates a configuration without running anything. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct wt_cli_opt check_opts[] = {{NULL}};

const struct wt_cli_form wt_cli_form_check_config = {
    "check-config",
    "FILE",
    "validates a configuration file (exit 2 with file:line: key: problem on error)",
    __FILE__,
    false,
    {check_opts}};

int wt_cmd_check_config(int argc, char **argv)
{
    int c;
    optind = 1;
    while ((c = wt_cli_getopt(&wt_cli_form_check_config, argc, argv)) != -1)
        return c == WT_CLI_HELP ? 0 : 2;
    if (optind != argc - 1) {
        wt_cli_help(stderr, &wt_cli_form_check_config);
        return 2;
    }
    struct wt_config cfg;
    int rc = wt_cli_load_config(argv[optind], &cfg);
    if (rc != 0)
        return rc;
    printf("%s: ok\n", argv[optind]);
    wt_config_free(&cfg);
    return 0;
}
