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
    bool chosen;        /* counted in the total (wt_energy_counter_first per GPU) */
    /* A chosen integrated row of a GPU whose counter covers only part of the window, less than
     * the integrated series (a counter that froze or stopped answering while power went on):
     * counter_partial is set and counter_coverage is the counter's coverage (0..1). */
    bool counter_partial;
    double counter_coverage;
    /* The error bar (store/uncert.h): |energy_j - the energy really used| is at most
     * uncertainty_j, sampling-wise; sensor_j is the sensor's +-5 W for integrated series. */
    double uncertainty_j;
    double sensor_j;
};

/* Two covered times closer than this are the same: a GPU's counter and integrated series are
 * stamped by the same poll, so they differ by far less (microseconds) where both are read, and
 * a poll (0.2 s at the least) is far more. */
#define WT_ENERGY_COVER_TOL_S 1e-3

/*
 * The method rule for one GPU over a window, from what each of its series covers (seconds, and
 * the counter's coverage 0..1 of the window): true when the hardware counter is the figure,
 * false when the integrated series is.
 *   - the counter covers the whole window: the counter (exact to its unit);
 *   - it covers part of it, and the integrated series covers more (by more than
 *     WT_ENERGY_COVER_TOL_S): the integrated series. The counter's figure holds no energy for the
 *     time it does not cover, and its bar cannot say so (a counter frozen 2 s into a 5-s window
 *     gave 27 % of the energy with a bar of 2 mJ), while the integrated figure is the whole
 *     window's with a bar that bounds it. (Counter over its stretches plus integrated over the
 *     rest would need each stretch's edges; one method per GPU and window keeps each figure
 *     one series' and its bar that series' bar.)
 *   - else (the counter covers as much or more, or the integrated series covers nothing): the
 *     counter when it covers any of the window, else the integrated series.
 */
bool wt_energy_counter_first(double counter_covered_s, double counter_coverage,
                             double integrated_covered_s);

/*
 * The method rule on rows already measured (every row chosen on entry): per GPU (node + gpu +
 * uuid) with both a hardware counter and an integrated series, wt_energy_counter_first picks one
 * and the other is unchosen (an integrated row chosen over a counter that covers part of the
 * window says so: counter_partial, counter_coverage); then the rows are sorted (node, GPUs by
 * index, the rest by name).
 */
void wt_energy_choose(struct wt_energy_row *rows, size_t n);

/*
 * Energy of every energy series over [from, to] (from < to). Per GPU (node + gpu + uuid) the
 * hardware counter or the integrated series by wt_energy_counter_first; other series are all
 * chosen. *rows is malloc'd. Returns 0, -EINVAL (err) or -EIO.
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
