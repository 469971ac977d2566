/* SPDX-License-Identifier: MIT */
/*
 * Queries on the store: energy over an exact window, and the stored readings of a series.
 *
 * Energy of a counter series over [from, to]: consecutive readings (t0, v0), (t1, v1) make a
 * segment; its increase is spread linearly over [t0, t1], so a window edge between two readings
 * takes the interpolated share. A segment is *covered* or a *gap* (wt_segment):
 *   - v1 < v0: a reset (driver reload, daemon restart of a counter kept by the daemon): a gap
 *     contributing 0 (a new baseline: never negative, never a jump);
 *   - the segment contains a daemon start (a row of runs for the series' node): a gap
 *     contributing 0, unless the series is the GPU hardware counter, which keeps counting while
 *     the daemon is down (its increase is then exact);
 *   - an integrated series (kind WT_SK_INTEGRATED) whose readings are more than 3 poll intervals
 *     apart: a gap (the daemon did not integrate across it either); its increase still counts;
 *   - otherwise covered.
 * The spans of the window before the first reading and after the last one are gaps.
 * coverage = covered time / window length.
 *
 * Long windows read the per-minute rollups (which hold exactly these per-minute shares) for the
 * whole minutes and raw readings for the partial minutes at the edges; where raw readings were
 * pruned, an edge minute is prorated from its rollup.
 */
#ifndef WT_STORE_QUERY_H
#define WT_STORE_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/reading.h"
#include "store/store.h"

struct wt_run {
    char node[64];
    int64_t start_ns;
    int64_t interval_ns;
};

/* Every run, sorted by node then start. */
struct wt_run_list {
    struct wt_run *r;
    size_t n;
};

int wt_runs_load(struct wt_store *st, struct wt_run_list *out) WT_MUST_USE;
void wt_runs_free(struct wt_run_list *l);

/* What wt_segment needs of a series: its kind and its node's runs (a sorted slice). */
struct wt_segment_rule {
    enum wt_series_kind kind;
    const struct wt_run *runs;
    size_t nruns;
};

/* The rule for the series of node (runs must stay alive while the rule is used). */
struct wt_segment_rule wt_segment_rule_for(const struct wt_run_list *runs, const char *node,
                                           enum wt_series_kind kind);

/* Classifies the segment (t0, v0) → (t1, v1), t0 < t1: its energy (J) and whether covered. */
void wt_segment(const struct wt_segment_rule *rule, int64_t t0, double v0, int64_t t1, double v1,
                double *delta_j, bool *covered);

/*
 * The exact-window energy of a counter from its readings in time order: wt_window_add each
 * reading (the last one at or before a, those inside, the first one at or after b); each segment
 * adds its share inside [a, b] as wt_segment says. energy_j and covered_ns are the result. Pure:
 * the store's raw query and the engine client (store/promsrc.h) both use it.
 */
struct wt_window {
    const struct wt_segment_rule *rule;
    int64_t a, b;
    bool have;
    int64_t pt;
    double pv;
    double energy_j, covered_ns;
};
struct wt_window wt_window_begin(const struct wt_segment_rule *rule, int64_t a, int64_t b);
void wt_window_add(struct wt_window *w, int64_t t, double v);

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

enum { WT_Q_RAW_ONLY = 1 };

/* Energy of one series over [a, b]: joules and covered seconds. Returns 0 or -EIO. */
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

struct wt_point {
    int64_t t_ns;
    double v;
};

/*
 * Stored readings of a series in [from, to]. step_ns > 0 downsamples to one point per step
 * (the mean of gauges, the last value of counters, stamped at the bucket start); where raw
 * readings were pruned and step >= 1 min, points come from the rollups. *pts is malloc'd.
 * Returns 0 or -EIO / -ENOMEM.
 */
int wt_store_points(struct wt_store *st, const struct wt_series_info *si, int64_t from, int64_t to,
                    int64_t step_ns, struct wt_point **pts, size_t *n) WT_MUST_USE;

#endif
