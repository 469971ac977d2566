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

/*
 * Adds the routes above to h (before wt_http_start); hub outlives h. store_path is the daemon's
 * store, answered in /api/v1/status as "store": {"path": "..."} so that the CLI's readers find
 * it (copied; one daemon per process). Returns 0 or -ENOSPC.
 */
int wt_api_status_add(struct wt_http *h, struct wt_hub *hub, const char *store_path) WT_MUST_USE;

/*
 * Adds to each collector of the status document doc (consumed) that publishes its fields'
 * cadence (collect/cadence.h) "slow_interval_seconds" (0: every tick) and "slow_fields" (their
 * names); `wattage status --json` does the same. Returns the new document, doc itself when there
 * is nothing to add, or NULL when out of memory.
 */
char *wt_api_status_cadence(char *doc);

/* The store's health families on /metrics (store/store.h); st outlives h. 0 or -ENOSPC. */
struct wt_store;
int wt_api_store_families_add(struct wt_http *h, struct wt_store *st) WT_MUST_USE;

#endif
