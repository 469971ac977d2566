/* SPDX-License-Identifier: MIT */
/*
 * GET /api/v1/alerts and the engine's families on /metrics (see api_alerts.h): the engine
 * lists and counts, this file serves.
 */
#include "serve/api_alerts.h"

#include <errno.h>
#include <string.h>

#include "core/log.h"

#define MOD "alert"

static int route(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    char *body = NULL;
    (void)req;
    int rc = wt_alerts_list_json(ctx, &body);
    if (rc)
        return rc;
    rep->status = 200;
    rep->body = body;
    rep->len = strlen(body);
    return 0;
}

/* Registers the families of group g; stops at the first the server has no room for. */
static int add_group(struct wt_http *h, struct wt_alerts *x, enum wt_alerts_fam_group g)
{
    struct wt_alerts_family f[WT_ALERTS_FAMS_MAX];
    size_t n = wt_alerts_families(x, g, f, WT_ALERTS_FAMS_MAX);
    int rc = 0;
    for (size_t i = 0; i < n && i < WT_ALERTS_FAMS_MAX && rc == 0; i++)
        rc = wt_http_add_family(h, f[i].fn, f[i].ctx);
    return rc;
}

int wt_api_alerts_add(struct wt_http *h, struct wt_alerts *x)
{
    int rc;
    if ((rc = wt_http_add_route(h, "GET", "/api/v1/alerts", false, route, x)) ||
        (rc = add_group(h, x, WT_ALERTS_FAMS_ALERTS)))
        return rc;
    /* Delivery's and capping's families are additions: without room the daemon still serves. */
    if (add_group(h, x, WT_ALERTS_FAMS_DELIVERY) != 0)
        wt_warn(MOD, "no room for the alert delivery families on /metrics "
                     "(WT_HTTP_MAX_FAMILIES): wattage_alert_notification* are not exported");
    if (add_group(h, x, WT_ALERTS_FAMS_CAP) != 0)
        wt_warn(MOD, "no room for the power capping families on /metrics "
                     "(WT_HTTP_MAX_FAMILIES): wattage_gpu_power_cap_watts and "
                     "wattage_power_cap_actions_total are not exported");
    if (add_group(h, x, WT_ALERTS_FAMS_CAP_REASONS) != 0)
        wt_warn(MOD, "no room for wattage_power_cap_reasons_total on /metrics "
                     "(WT_HTTP_MAX_FAMILIES)");
    return 0;
}
