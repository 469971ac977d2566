/* SPDX-License-Identifier: MIT */
/*
 * The error bar of an exact-window energy figure (store/segment.h, store/query.h): a bound on
 * how far the figure can be from the energy really used over [a, b], from what the readings can
 * and cannot see. Terms, in joules: the two edges added by side (not in quadrature: on a periodic
 * load the errors at a window's two edges are not independent), the method term in quadrature
 * with them (the interior's sampling jitter is independent of where the steps fell around the
 * edges), gaps and resolution added:
 *
 *   edges       a window edge e between two readings (t0, v0), (t1, v1) takes the linear share
 *               of the segment; the energy really used in [t0, e] differs from it by
 *               x*(p1 - w) = y*(w - p2), where x = e - t0, y = t1 - e, w is the segment's mean
 *               power (v1 - v0) / (t1 - t0) and p1, p2 are the mean powers of [t0, e] and
 *               [e, t1]. p1 and p2 lie within the power's levels: the range of the covered
 *               segment powers within WT_UNCERT_SWING_SEGMENTS segments on either side, each
 *               end widened by WT_UNCERT_LEVEL_MARGIN of the range unless two segments sit on it
 *               (segment means, which hide a swing faster than the sampling, widen with the
 *               neighbourhood; what the sampling never sees, it cannot bound). So a segment on a
 *               level (no step inside) costs nothing, one whose mean is halfway costs at most
 *               x*y/g times the levels' spread. The estimate at e may be short by `under` or
 *               over by `over` (wt_uncert_edge_sides); the window's energy is the estimate at b
 *               less the one at a, so the edges cost max(under_b + over_a, over_b + under_a):
 *               an estimate too high at both edges cancels. An edge on a reading costs
 *               nothing: that is what edge samples (core/hub.h) are for. Where raw readings
 *               were pruned and the edge is prorated from a rollup, the minute's share is
 *               bounded with a swing of twice the window's mean power.
 *   method      integrated series only (wt_energy_integral): a power reading averaged over a
 *               window W (wt_energy_nvml_power_window_ns of the series' model) counts exactly the
 *               span it averaged, so a step of g between readings is off by at most |g - W| times
 *               the local swing (0 when the readings are W apart); instantaneous readings (W = 0)
 *               by g/2 times the change of power between samples. Steps are independent (sampling
 *               jitter): their bounds add in quadrature. Readings closer than W overlap: each
 *               averages some of its neighbour's span, so their errors do not add up but cancel
 *               inside the window; what is left is the integrator's lag at each end
 *               (wt_uncert_lag): a mean stamped at its middle smears a step over W, which moves
 *               at most W/8 of its size across an edge (a step right at it), W/24 on average;
 *               W/16 of the swing of the segments within W/2 of the edge is taken (W/24 held
 *               only 96.7 % of 20-s windows at 0.2-s ticks). Each end's lag and its edge
 *               term bound two sides of one error (where in the segment the step fell, and how
 *               much of it the averaging moved across), seldom both at their worst: they add in
 *               quadrature, hypot(edge, lag), not linearly.
 *   gaps        a gap inside the window (a reset, a daemon restart of a counter it kept, an
 *               integrated series not integrated across) adds its length times the largest
 *               segment power beside it: the energy it may hide.
 *   resolution  the counter's unit (NVML 1 mJ, RAPL 1 uJ) at each end of the window.
 *
 *   read skew   a counter reading carries its poll's stamp but was read up to its read skew
 *               later (wattage_gpu_energy_read_skew_seconds, stored beside it by collect/nvml.c
 *               and collect/rocm.c): the estimate at an edge on or between such readings may be
 *               over by the skew times the power after them, added to the edge's `over` side.
 *               That power is the top of the levels of the segments between the readings' read
 *               times (stamp + skew): by their stamps, a short segment between a reading read
 *               late and one read early shows more power than was drawn.
 *
 * Not in the bar: the sensor's absolute accuracy, which a stand-in cannot check and which is
 * systematic rather than a sampling error: NVML's power is +-5 W (FIELD-NOTES), reported
 * separately for integrated series as sensor_j = 5 W x covered seconds.
 */
#ifndef WT_STORE_UNCERT_H
#define WT_STORE_UNCERT_H

#include <stddef.h>
#include <stdint.h>

#include "store/query.h"
#include "store/segment.h"

#define WT_UNCERT_SWING_SEGMENTS 10
#define WT_UNCERT_LEVEL_MARGIN 0.2
#define WT_UNCERT_LEVEL_TOL 1e-3
#define WT_UNCERT_SENSOR_W 5.0
/* Integrated series (and counters with a gap) over windows longer than twice this: the interior
 * terms are read over this much (2 min) of raw readings at each end, the method term scaled to the
 * window (a sum in quadrature grows as its square root) and gaps in the middle not seen, so a
 * 72-h query stays cheap. */
#define WT_UNCERT_METHOD_SPAN_NS (120 * (int64_t)1000000000)

struct wt_uncert {
    double edges_j, method_j, gaps_j, resolution_j;
    double total_j;  /* edges + method + gaps + resolution */
    double sensor_j; /* separate: the sensor's absolute accuracy (integrated series) */
};

/* What the pure functions need to know of a series. */
struct wt_uncert_series {
    const struct wt_segment_rule *rule;
    double resolution_j;     /* the counter's unit (0: none) */
    int64_t power_window_ns; /* integrated series: the power readings' averaging window */
};

/* The counter's unit of a series: NVML's 1 mJ, RAPL's 1 uJ, 0 for what the daemon integrates. */
double wt_uncert_resolution_j(const struct wt_series_info *si);

/*
 * The edge term at e from readings p[0..n) in time order around e (as many as there are within
 * WT_UNCERT_SWING_SEGMENTS segments on either side). 0 when e falls on a reading or outside the
 * readings (the window's coverage says the latter).
 */
double wt_uncert_edge(const struct wt_uncert_series *s, const struct wt_point *p, size_t n,
                      int64_t e);

/* The same, by side: how far the linear share at e may lie below (*under) and above (*over) the
 * energy really used up to e, both >= 0; wt_uncert_edge is the larger. */
void wt_uncert_edge_sides(const struct wt_uncert_series *s, const struct wt_point *p, size_t n,
                          int64_t e, double *under, double *over);

/* The smoothing lag at an edge e of an integrated series whose readings average over W: W/16
 * times the swing of e's segment and its neighbours within W/2 of e (at least one on either
 * side); 0 for instantaneous readings. */
double wt_uncert_lag(const struct wt_uncert_series *s, const struct wt_point *p, size_t n,
                     int64_t e);

/*
 * The method term (integrated series; 0 for counters) and the gaps term over [a, b] from the
 * readings p[0..n) in time order (the last one at or before a to the first one at or after b).
 * method_sq gets the sum of squares (the caller takes the root, after scaling if it sampled).
 */
void wt_uncert_interior(const struct wt_uncert_series *s, const struct wt_point *p, size_t n,
                        int64_t a, int64_t b, double *method_sq, double *gaps_j);

/*
 * The stored readings of the series in [from, to], in time order (wt_store_points with step 0:
 * query.c passes it, so this file reads no table itself). *pts malloc'd. Returns 0 or -errno.
 */
typedef int (*wt_uncert_points_fn)(void *ctx, int64_t from, int64_t to, struct wt_point **pts,
                                   size_t *n);

/*
 * The error bar of series si over [a, b] (energy_j and covered_s as wt_store_series_energy
 * gave them), from its readings as points(ctx, ...) gives them, and for a hardware counter the
 * read skew of those readings (seconds, stamped as the readings) as skew(ctx, ...) gives them
 * (NULL, or none stored: 0). Returns 0 or what points or skew returned.
 */
int wt_uncert_series_bar(const struct wt_series_info *si, const struct wt_run_list *runs,
                         wt_uncert_points_fn points, wt_uncert_points_fn skew, void *ctx, int64_t a,
                         int64_t b, double energy_j, double covered_s,
                         struct wt_uncert *out) WT_MUST_USE;

#endif
