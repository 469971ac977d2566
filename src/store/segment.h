/* SPDX-License-Identifier: MIT */
/*
 * The segment rule: how stored counter readings become energy and coverage.
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
 * Pure functions (no SQL), shared by the store's writer and reader (store.c, query.c) and the
 * engine client (promsrc.c); wt_runs_load, which reads the runs table, is the store's.
 */
#ifndef WT_STORE_SEGMENT_H
#define WT_STORE_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Loads every run of the store (store.c: the runs table). */
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

/*
 * The segments between the points p[0..n) (times strictly increasing), summed: their energy
 * (wt_segment's delta of each, in order) and their covered time. What a window that holds them
 * all adds for them: the store keeps it per chunk (store.c) so that a window applies a whole
 * chunk inside it without decoding it.
 */
void wt_segment_sum(const struct wt_segment_rule *rule, const struct wt_point *p, size_t n,
                    double *energy_j, int64_t *covered_ns);

/*
 * Applies such a sum to a window: the points from (t0, v0) to (t1, v1), all inside [a, b], with
 * their segments' energy_j and covered_ns (wt_segment_sum of them). The segment from the
 * window's last point to t0 is added as wt_window_add would.
 */
void wt_window_add_sum(struct wt_window *w, int64_t t0, double v0, int64_t t1, double v1,
                       double energy_j, int64_t covered_ns);

#endif
