/* SPDX-License-Identifier: MIT */
/* GET /api/v1/alerts (see api_alerts.h): the engine lists, this file answers. */
#include "serve/api_alerts.h"

#include <string.h>

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

int wt_api_alerts_add(struct wt_http *h, struct wt_alerts *x)
{
    return wt_http_add_route(h, "GET", "/api/v1/alerts", false, route, x);
}
