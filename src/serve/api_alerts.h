/* SPDX-License-Identifier: MIT */
/*
 * GET /api/v1/alerts: the active and recently resolved alerts of the engine (alert/engine.h,
 * wt_alerts_list_json), firing first; and the engine's families on /metrics (wattage_alerts,
 * delivery's, capping's: wt_alerts_families).
 */
#ifndef WT_API_ALERTS_H
#define WT_API_ALERTS_H

#include "alert/engine.h"
#include "serve/http.h"

/*
 * Adds the route and the families to h (before wt_http_start, right after wt_alerts_open);
 * x outlives h. Returns 0, or -ENOSPC when the route or wattage_alerts finds no room (the
 * other families are then left out with a warning).
 */
int wt_api_alerts_add(struct wt_http *h, struct wt_alerts *x) WT_MUST_USE;

#endif
