/* SPDX-License-Identifier: MIT */
/*
 * The carbon layer's daemon part: fetching the configured sources on schedule on a thread of its
 * own, and the grid intensity gauge.
 */
#ifndef WT_CARBON_FETCH_H
#define WT_CARBON_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "audit/carbon.h"
#include "core/config.h"
#include "core/err.h"

struct wt_carbon;
struct wt_hub;

/*
 * Opens the carbon layer of `wattage run` on its own connection to the store at db_path (which
 * exists) and creates its table. A thread of its own fetches or re-reads the sources on their
 * schedule (doubling backoff on failure, from retry up to interval) and, every 30 s, publishes
 * wattage_grid_carbon_intensity_grams_per_kwh{zone} for carbon.zone, the zones of carbon.nodes
 * and of the intensity sources (actual, else forecast, else the hole rule) as hub slot "carbon"
 * (hub may be NULL). Returns 0 or a negative errno with err filled.
 */
int wt_carbon_open(const struct wt_carbon_conf *cf, const char *db_path, struct wt_hub *hub,
                   struct wt_carbon **out, struct wt_err *err) WT_MUST_USE;
/* Stops the thread (an ongoing request is aborted) and closes; accepts NULL. */
void wt_carbon_close(struct wt_carbon *c);
/*
 * For `wattage run`: the carbon section of cfg and wt_carbon_open on cfg's store. The measured
 * PUE reads a private copy of the configuration file, owned by the layer (its conf's cfg).
 * Carbon settings take effect at the next restart. The caller hands wt_carbon_config to the
 * jobs (wt_jobs_set_carbon) and closes the layer after them. Returns 0 or a negative errno with
 * err.
 */
int wt_carbon_attach(const struct wt_config *cfg, struct wt_hub *hub, struct wt_carbon **out,
                     struct wt_err *err) WT_MUST_USE;
/* The configuration the layer runs with (valid until wt_carbon_close). */
const struct wt_carbon_conf *wt_carbon_config(const struct wt_carbon *c);

/*
 * A source URL as fetched: "{now}" becomes the current UTC time as the UK API writes it
 * (2026-11-29T18:00Z), for URLs such as .../intensity/{now}/fw48h. Bounded by n.
 */
void wt_carbon_url_expand(const char *url, int64_t now_ns, char *out, size_t n);

struct wt_carbon_fetch_stats {
    uint64_t attempts, failures, successes;
    int64_t next_retry_ns; /* the backoff the source waits now (0: none) */
};
/* Counters of source i (for the tests). 0 or -ENOENT. */
int wt_carbon_fetch_stats(struct wt_carbon *c, size_t i, struct wt_carbon_fetch_stats *out);

/*
 * Fetches url once (timeout_ns for the whole request, the token header when token is not NULL)
 * into *body (malloc'd, NUL-terminated, at most 16 MiB). abort (may be NULL) stops it when it
 * becomes true. Returns 0, -ETIMEDOUT, -EIO (HTTP status >= 400 or a transfer error: why says).
 */
int wt_carbon_fetch(const char *url, const char *token_header, const char *token,
                    int64_t timeout_ns, const volatile int *abort, char **body, size_t *len,
                    char *why, size_t whyn) WT_MUST_USE;

#endif
