/* SPDX-License-Identifier: MIT */
/*
 * GET /api/v1/series?match=SEL[&from=T][&to=T][&step=D]: the stored readings of every series
 * that matches a selector over a window, downsampled to one point per step (the mean of gauges,
 * the last value of counters; store/query.h's wt_store_points), for the live page's charts and
 * any other client. The daemon's store is read on a connection of its own, one request at a time.
 *
 * SEL is `metric` or `metric{key="value",...}` (store/query.h). from and to are RFC 3339, unix
 * seconds or relative ("-1h"; default -1h and now); step is a duration (default: the window over
 * 360). A window is at most WT_SERIES_MAX_WINDOW long; a step finer than window /
 * WT_SERIES_MAX_POINTS is coarsened to that, and the reply says the step it used. At most
 * WT_SERIES_MAX_SERIES series are answered ("truncated": true beyond). Reply:
 *   {"from": S, "to": S, "step": S, "truncated": false,
 *    "series": [{"node": "", "metric": "...", "labels": {"gpu": "0", ...},
 *                "points": [[T_S, V], ...]}]}
 * Bad parameters are a 400 naming the parameter.
 */
#ifndef WT_API_SERIES_H
#define WT_API_SERIES_H

#include <stdint.h>

#include "core/err.h"
#include "serve/http.h"

#define WT_SERIES_MAX_WINDOW (7LL * 86400 * 1000000000LL)
#define WT_SERIES_MAX_POINTS 2000
#define WT_SERIES_MAX_SERIES 256

struct wt_api_series;

/*
 * Opens a reading connection to the store at db_path (which the daemon has already created).
 * Returns 0, or a negative errno with err saying why.
 */
int wt_api_series_open(const char *db_path, struct wt_api_series **out,
                       struct wt_err *err) WT_MUST_USE;
/* Adds GET /api/v1/series to h (a read: protected like the other reads). Returns 0 or -ENOSPC. */
int wt_api_series_add(struct wt_http *h, struct wt_api_series *s) WT_MUST_USE;
/* Closes the connection; accepts NULL. After the server is closed. */
void wt_api_series_close(struct wt_api_series *s);

/*
 * The reply for the query parameters (each NULL when absent) at now_ns: *status and *json
 * (malloc'd) in every case but -ENOMEM / -EIO. For the tests.
 */
int wt_api_series_query(struct wt_api_series *s, const char *match, const char *from,
                        const char *to, const char *step, int64_t now_ns, unsigned *status,
                        char **json) WT_MUST_USE;

#endif
