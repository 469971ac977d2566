/* SPDX-License-Identifier: MIT */
/*
 * --source: the engine a fleet command reads instead of the local store (store/promsrc.h). The
 * client certificate settings are the CLI's: WATTAGE_CACERT, WATTAGE_CERT, WATTAGE_KEY; a bearer
 * token from WATTAGE_SOURCE_TOKEN_FILE.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "store/promsrc.h"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int wt_cli_open_source(const char *source, struct wt_promsrc **out)
{
    struct wt_promsrc_opts o = {.ca_file = env("WATTAGE_CACERT"),
                                .cert_file = env("WATTAGE_CERT"),
                                .key_file = env("WATTAGE_KEY"),
                                .token_file = env("WATTAGE_SOURCE_TOKEN_FILE")};
    struct wt_err err = {{0}};
    int rc = wt_promsrc_open(source, &o, out, &err);
    if (rc)
        fprintf(stderr, "wattage: %s\n", err.msg);
    return rc;
}
