/* SPDX-License-Identifier: MIT */
/*
 * The daemon's own state over HTTP, from the hub's snapshot (core/snapshot.h, core/health.h):
 *   GET /api/v1/status   the snapshot document with "health" (as `wattage status` reads it)
 *   GET /api/v1/health   {"status": "ok"|"degraded", "reasons": [...]}, always 200
 *   GET /readyz          the same document, 503 while degraded (probes carry no token)
 * /healthz (liveness) and /metrics stay with the server (serve/http.h).
 */
#ifndef WT_API_STATUS_H
#define WT_API_STATUS_H

#include "core/hub.h"
#include "serve/http.h"

/* Adds the routes above to h (before wt_http_start); hub outlives h. Returns 0 or -ENOSPC. */
int wt_api_status_add(struct wt_http *h, struct wt_hub *hub) WT_MUST_USE;

#endif
