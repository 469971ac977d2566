/* SPDX-License-Identifier: MIT */
/*
 * GET /api/v1/series (see api_series.h): stored readings over a window, downsampled, from a
 * reading connection of the server's own. The store's writer thread keeps its own connection;
 * SQLite's WAL lets this one read while it writes.
 */
#include "serve/api_series.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/reading.h"
#include "store/query.h"
#include "store/store.h"

#define DEFAULT_WINDOW (3600LL * WT_NS_PER_S)
#define DEFAULT_STEPS 360

struct wt_api_series {
    pthread_mutex_t mu; /* one request at a time on the connection */
    struct wt_store *st;
};

int wt_api_series_open(const char *db_path, struct wt_api_series **out, struct wt_err *err)
{
    struct wt_store_opts o = {.create = false};
    struct wt_api_series *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s)
        return -ENOMEM;
    int rc = wt_store_open(db_path, &o, &s->st, err);
    if (rc) {
        free(s);
        return rc;
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return 0;
}

void wt_api_series_close(struct wt_api_series *s)
{
    if (!s)
        return;
    wt_store_close(s->st);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* A 400 whose message names the parameter: "PARAM: why". */
static int bad(unsigned *status, char **json, const char *param, const char *why)
{
    char msg[WT_ERR_LEN + 64];
    snprintf(msg, sizeof msg, "%s: %s", param, why);
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "error", msg)) {
        cJSON_Delete(o);
        return -ENOMEM;
    }
    *json = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    *status = 400;
    return *json ? 0 : -ENOMEM;
}

/* Adds one series with its points; NULL when out of memory. */
static cJSON *series_json(const struct wt_series_info *si, const struct wt_point *p, size_t n)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *labels = cJSON_AddObjectToObject(o, "labels");
    cJSON *pts = cJSON_AddArrayToObject(o, "points");
    if (!o || !labels || !pts || !cJSON_AddStringToObject(o, "node", si->node) ||
        !cJSON_AddStringToObject(o, "metric", si->metric))
        goto fail;
    size_t pos = 0;
    char k[64], v[WT_LABELS_LEN];
    while (wt_labels_next(si->labels, &pos, k, sizeof k, v, sizeof v) == 1)
        if (!cJSON_AddStringToObject(labels, k, v))
            goto fail;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(p[i].v))
            continue; /* JSON has no NaN: a point without a value is left out */
        cJSON *pair = cJSON_CreateArray();
        if (!pair || !cJSON_AddItemToArray(pts, pair)) {
            cJSON_Delete(pair);
            goto fail;
        }
        /* Milliseconds are enough for a chart and keep the reply short. */
        if (!cJSON_AddItemToArray(pair, cJSON_CreateNumber(round(p[i].t_ns / 1e6) / 1e3)) ||
            !cJSON_AddItemToArray(pair, cJSON_CreateNumber(p[i].v)))
            goto fail;
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

int wt_api_series_query(struct wt_api_series *s, const char *match, const char *from,
                        const char *to, const char *step, int64_t now_ns, unsigned *status,
                        char **json)
{
    int64_t a, b, st_ns = 0;
    struct wt_err err = {{0}};
    *json = NULL;
    if (!match || !*match)
        return bad(status, json, "match", "a series selector is required (metric{k=\"v\"})");
    if (wt_time_parse(to ? to : "now", now_ns, &b) != 0)
        return bad(status, json, "to",
                   "expected RFC 3339, unix seconds or a relative time like -1h");
    if (from) {
        if (wt_time_parse(from, now_ns, &a) != 0)
            return bad(status, json, "from",
                       "expected RFC 3339, unix seconds or a relative time like -1h");
    } else {
        a = b - DEFAULT_WINDOW;
    }
    if (b <= a)
        return bad(status, json, "to", "the window is empty: to must be after from");
    if (b - a > WT_SERIES_MAX_WINDOW)
        return bad(status, json, "from", "the window is longer than 7 days");
    if (step && wt_duration_parse(step, &st_ns) != 0)
        return bad(status, json, "step", "expected a duration (10s, 1m...)");
    if (!step)
        st_ns = (b - a) / DEFAULT_STEPS;
    if (st_ns < (b - a) / WT_SERIES_MAX_POINTS)
        st_ns = (b - a) / WT_SERIES_MAX_POINTS;
    if (st_ns < 1000000)
        st_ns = 1000000; /* 1 ms: the finest the reply writes */

    struct wt_series_info *si = NULL;
    size_t n = 0;
    cJSON *root = NULL, *arr;
    int rc;
    pthread_mutex_lock(&s->mu);
    rc = wt_store_series(s->st, match, false, &si, &n, &err);
    if (rc == -EINVAL) {
        pthread_mutex_unlock(&s->mu);
        return bad(status, json, "match", err.msg);
    }
    if (rc)
        goto out;
    rc = -ENOMEM;
    root = cJSON_CreateObject();
    if (!root || !cJSON_AddNumberToObject(root, "from", a / 1e9) ||
        !cJSON_AddNumberToObject(root, "to", b / 1e9) ||
        !cJSON_AddNumberToObject(root, "step", st_ns / 1e9) ||
        !cJSON_AddBoolToObject(root, "truncated", n > WT_SERIES_MAX_SERIES) ||
        !(arr = cJSON_AddArrayToObject(root, "series")))
        goto out;
    for (size_t i = 0; i < n && i < WT_SERIES_MAX_SERIES; i++) {
        struct wt_point *p = NULL;
        size_t np = 0;
        if ((rc = wt_store_points(s->st, &si[i], a, b, st_ns, &p, &np)) != 0)
            goto out;
        cJSON *one = series_json(&si[i], p, np);
        free(p);
        rc = -ENOMEM;
        if (!one || !cJSON_AddItemToArray(arr, one)) {
            cJSON_Delete(one);
            goto out;
        }
    }
    *json = cJSON_PrintUnformatted(root);
    *status = 200;
    rc = *json ? 0 : -ENOMEM;
out:
    pthread_mutex_unlock(&s->mu);
    cJSON_Delete(root);
    free(si);
    return rc;
}

static int route(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    unsigned status = 500;
    char *json = NULL;
    int rc = wt_api_series_query(ctx, wt_http_query(req, "match"), wt_http_query(req, "from"),
                                 wt_http_query(req, "to"), wt_http_query(req, "step"),
                                 wt_now_real_ns(), &status, &json);
    if (rc)
        return rc;
    rep->status = status;
    rep->body = json;
    rep->len = strlen(json);
    rep->content_type = "application/json";
    return 0;
}

int wt_api_series_add(struct wt_http *h, struct wt_api_series *s)
{
    return wt_http_add_route(h, "GET", "/api/v1/series", false, route, s);
}
