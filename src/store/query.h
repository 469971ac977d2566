/* SPDX-License-Identifier: MIT */
/*
 * Queries on the store: energy over an exact window, and the stored readings of a series.
 *
 * Energy of a counter series over [from, to] follows the segment rule of store/segment.h.
 *
 * Long windows read the readings kept in chunks through the chunks' summaries (whole chunks
 * inside the window are not decoded), and elsewhere the per-minute rollups (which hold exactly
 * these per-minute shares) for the whole minutes and raw readings for the partial minutes at the
 * edges; where raw readings were pruned, an edge minute is prorated from its rollup, except the
 * minute that holds the oldest raw reading, which is read raw (its rollup has nothing before
 * that reading).
 */
#ifndef WT_STORE_QUERY_H
#define WT_STORE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/reading.h"
#include "store/segment.h"
#include "store/store.h"

struct wt_series_info {
    int64_t id;
    char node[64];
    char metric[96];
    char labels[WT_LABELS_LEN];
    enum wt_series_kind kind;
    int64_t rolled_to; /* rollups exist for minutes before this (0: none) */
};

/*
 * Series matching a selector: `metric` or `metric{key="value",...}` (every pair must match;
 * other labels may exist). energy_only lists every energy series and ignores sel (may be NULL).
 * *out is malloc'd (free it). Returns 0, or -EINVAL with err for a bad selector.
 */
int wt_store_series(struct wt_store *st, const char *sel, bool energy_only,
                    struct wt_series_info **out, size_t *n, struct wt_err *err) WT_MUST_USE;

enum {
    WT_Q_RAW_ONLY = 1, /* readings only, no rollups (where readings were pruned: nothing) */
    WT_Q_DECODE = 2,   /* decode every chunk, no chunk summaries (tests, benchmarks) */
};

/*
 * Energy of one series over [a, b]: joules and covered seconds. Where readings are kept in
 * chunks, whole chunks inside the window count by their summaries (store.h's wt_store_window);
 * where readings were pruned, by the rollups; where they are not compacted yet, rollups inside
 * and readings at the edges. Returns 0 or -EIO.
 */
int wt_store_series_energy(struct wt_store *st, const struct wt_series_info *si,
                           const struct wt_run_list *runs, int64_t a, int64_t b, int flags,
                           double *energy_j, double *covered_s) WT_MUST_USE;

struct wt_energy_row {
    struct wt_series_info s;
    double energy_j;
    double covered_s;
    double coverage;    /* covered_s / window */
    const char *method; /* "counter" or "integrated" */
    bool chosen;        /* counted in the total (counter first per GPU) */
    /* The error bar (store/uncert.h): |energy_j - the energy really used| is at most
     * uncertainty_j, sampling-wise; sensor_j is the sensor's +-5 W for integrated series. */
    double uncertainty_j;
    double sensor_j;
};

/*
 * The counter-first rule on rows already measured (every row chosen on entry): per GPU (node +
 * gpu + uuid) the integrated series is unchosen when the hardware counter covers any of the
 * window, else the counter is; then the rows are sorted (node, GPUs by index, the rest by name).
 */
void wt_energy_choose(struct wt_energy_row *rows, size_t n);

/*
 * Energy of every energy series over [from, to] (from < to). Per GPU (node + gpu + uuid) the
 * hardware counter is chosen when it covers any of the window, else the integrated series; other
 * series are all chosen. *rows is malloc'd. Returns 0, -EINVAL (err) or -EIO.
 */
int wt_store_energy(struct wt_store *st, int64_t from, int64_t to, int flags,
                    struct wt_energy_row **rows, size_t *n, struct wt_err *err) WT_MUST_USE;

/*
 * Stored readings of a series in [from, to]. step_ns > 0 downsamples to one point per step
 * (the mean of gauges, the last value of counters, stamped at the bucket start); where raw
 * readings were pruned and step >= 1 min, points come from the rollups. *pts is malloc'd.
 * Returns 0 or -EIO / -ENOMEM.
 */
int wt_store_points(struct wt_store *st, const struct wt_series_info *si, int64_t from, int64_t to,
                    int64_t step_ns, struct wt_point **pts, size_t *n) WT_MUST_USE;

#endif
