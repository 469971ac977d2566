/* SPDX-License-Identifier: MIT */
/*
 * GET /api/v1/status, GET /api/v1/health and GET /readyz (see api_status.h): each request takes
 * a copy of the hub's snapshot and answers from it, never waiting for the poll loop.
 */
#include "serve/api_status.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/cadence.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/health.h"
#include "core/snapshot.h"
#include "store/store.h"

#define MAX_COLLECTORS WT_HUB_MAX_COLLECTORS

/* The daemon's store, for "store" in /api/v1/status (one daemon per process). */
static char store_path[WT_PATH_LEN];

static void reply_json(struct wt_http_reply *rep, unsigned status, char *s)
{
    rep->status = status;
    rep->body = s;
    rep->len = strlen(s);
    rep->content_type = "application/json";
}

/* Adds "store": {"path": ...} to the status document s (consumed); NULL when out of memory. */
static char *with_store(char *s)
{
    if (!store_path[0])
        return s;
    cJSON *doc = cJSON_Parse(s), *st;
    char *out = NULL;
    free(s);
    if (doc && (st = cJSON_AddObjectToObject(doc, "store")) &&
        cJSON_AddStringToObject(st, "path", store_path))
        out = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return out;
}

#define MAX_SLOW_FIELDS 32

char *wt_api_status_cadence(char *doc)
{
    if (!doc)
        return NULL;
    cJSON *root = cJSON_Parse(doc);
    cJSON *cols = root ? cJSON_GetObjectItem(root, "collectors") : NULL, *c;
    bool added = false, failed = !root;
    cJSON_ArrayForEach(c, cols)
    {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name"));
        const char *fields[MAX_SLOW_FIELDS];
        size_t n = 0;
        int64_t slow_ns = 0;
        if (!name || !wt_cadence_slow_fields(name, fields, MAX_SLOW_FIELDS, &n, &slow_ns))
            continue;
        cJSON *arr = cJSON_AddArrayToObject(c, "slow_fields");
        failed |= !arr || !cJSON_AddNumberToObject(c, "slow_interval_seconds",
                                                   (double)slow_ns / WT_NS_PER_S);
        for (size_t k = 0; arr && k < n && k < MAX_SLOW_FIELDS; k++) {
            cJSON *f = cJSON_CreateString(fields[k]);
            failed |= !f || !cJSON_AddItemToArray(arr, f);
        }
        added = true;
    }
    char *out = NULL;
    if (!added && !failed) {
        cJSON_Delete(root);
        return doc;
    }
    if (!failed)
        out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(doc);
    return out;
}

/* The snapshot document with the health reasons folded in; NULL when out of memory. */
static char *status_json(struct wt_hub *hub, const struct wt_batch *b)
{
    struct wt_hub_collector cs[MAX_COLLECTORS];
    struct wt_health_reason why[WT_HEALTH_MAX_REASONS];
    size_t n = wt_hub_collectors(hub, cs, MAX_COLLECTORS);
    size_t nh = wt_health_collect(b, why, WT_HEALTH_MAX_REASONS);
    char *doc =
        wt_snapshot_json(b, cs, n < MAX_COLLECTORS ? n : MAX_COLLECTORS, wt_now_real_ns(), 0);
    char *s = doc ? wt_health_json_into(
                        doc, why, nh < WT_HEALTH_MAX_REASONS ? nh : WT_HEALTH_MAX_REASONS, false)
                  : NULL;
    free(doc);
    return s ? with_store(wt_api_status_cadence(s)) : NULL;
}

static int route_status(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    struct wt_batch b = {0};
    (void)req;
    int rc = wt_hub_snapshot(ctx, &b);
    if (rc == 0) {
        char *s = status_json(ctx, &b);
        if (s)
            reply_json(rep, 200, s);
        else
            rc = -ENOMEM;
    }
    wt_batch_free(&b);
    return rc;
}

/*
 * Readiness (GET /readyz: 200 or 503) and health (GET /api/v1/health: always 200): the same
 * document; see core/health.h. /healthz stays liveness: a degraded daemon still serves and must
 * not be restarted for a full disk.
 */
static int health_reply(struct wt_hub *hub, struct wt_http_reply *rep, bool ready_status)
{
    struct wt_batch b = {0};
    struct wt_health_reason why[WT_HEALTH_MAX_REASONS];
    int rc = wt_hub_snapshot(hub, &b);
    if (rc != 0)
        return rc;
    size_t n = wt_health_collect(&b, why, WT_HEALTH_MAX_REASONS);
    wt_batch_free(&b);
    char *s = wt_health_json(why, n < WT_HEALTH_MAX_REASONS ? n : WT_HEALTH_MAX_REASONS);
    if (!s)
        return -ENOMEM;
    reply_json(rep, ready_status && n ? 503 : 200, s);
    return 0;
}

static int route_readyz(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    (void)req;
    return health_reply(ctx, rep, true);
}

static int route_health(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    (void)req;
    return health_reply(ctx, rep, false);
}

int wt_api_status_add(struct wt_http *h, struct wt_hub *hub, const char *path)
{
    int rc;
    /* Absolute, so that a reader started in another directory opens the same file. */
    char *abs = path && *path ? realpath(path, NULL) : NULL;
    snprintf(store_path, sizeof store_path, "%s", abs ? abs : path ? path : "");
    free(abs);
    if ((rc = wt_http_add_route(h, "GET", "/readyz", true, route_readyz, hub)) ||
        (rc = wt_http_add_route(h, "GET", "/api/v1/health", false, route_health, hub)) ||
        (rc = wt_http_add_route(h, "GET", "/api/v1/status", false, route_status, hub)))
        return rc;
    return 0;
}

int wt_api_store_families_add(struct wt_http *h, struct wt_store *st)
{
    int rc = 0;
    for (int k = 0; k < WT_STORE_FAMILIES && !rc; k++)
        rc = wt_http_add_family(h, wt_store_family_fn, wt_store_family_ctx(st, k));
    return rc;
}
