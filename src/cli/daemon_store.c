/* SPDX-License-Identifier: MIT */
/*
 * Where the running daemon keeps its store, asked of the daemon itself: a reader started
 * without --db or a configuration (another user, another directory, a daemon started with
 * --db) finds the store the daemon writes through its "store": {"path"} in GET /api/v1/status.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int wt_cli_daemon_store(const struct wt_cli_conn *conn, char *path, size_t n, char *why,
                        size_t whyn)
{
    struct wt_cli_api api;
    long status = 0;
    char *reply = NULL;
    int rc = -ENOENT;
    path[0] = '\0';
    if (wt_cli_api_setup(conn, &api) != 0) {
        snprintf(why, whyn, "the daemon's address cannot be worked out");
        return -EINVAL;
    }
    /* A reader must not hang on a daemon that is not there: a short connect and reply. */
    api.connect_ms = 500;
    api.timeout_ms = 2000;
    if (wt_cli_api_call(&api, "GET", "/api/v1/status", NULL, &status, &reply, why, whyn) != 0)
        return -EIO;
    cJSON *doc = status == 200 ? cJSON_Parse(reply) : NULL;
    const char *p = cJSON_GetStringValue(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "store"), "path"));
    if (status != 200)
        snprintf(why, whyn, "the daemon at %s answered HTTP %ld to GET /api/v1/status%s", api.url,
                 status, status == 401 ? " (its token: WATTAGE_TOKEN or client.token_file)" : "");
    else if (!p || !*p)
        snprintf(why, whyn, "the daemon at %s does not say where its store is", api.url);
    else if (strlen(p) >= n)
        snprintf(why, whyn, "the daemon at %s names a store path too long", api.url);
    else {
        snprintf(path, n, "%s", p);
        snprintf(why, whyn, "the store of the daemon at %s", api.url);
        rc = 0;
    }
    cJSON_Delete(doc);
    free(reply);
    return rc;
}
