/* SPDX-License-Identifier: MIT */
/*
 * GET /api/v1/alerts: the active and recently resolved alerts of the engine (alert/engine.h,
 * wt_alerts_list_json), firing first.
 */
#ifndef WT_API_ALERTS_H
#define WT_API_ALERTS_H

#include "alert/engine.h"
#include "serve/http.h"

/* Adds the route to h (before wt_http_start); x outlives h. Returns 0 or -ENOSPC. */
int wt_api_alerts_add(struct wt_http *h, struct wt_alerts *x) WT_MUST_USE;

#endif
