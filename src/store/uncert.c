/* SPDX-License-Identifier: MIT */
/* The error bar of an exact-window energy figure; see uncert.h. */
#include "store/uncert.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/energy.h"
#include "core/reading.h"

#define NS 1e9

double wt_uncert_resolution_j(const struct wt_series_info *si)
{
    if (si->kind == WT_SK_INTEGRATED)
        return 0;
    if (strcmp(si->metric, "wattage_gpu_energy_joules_total") == 0)
        return 1e-3; /* nvmlDeviceGetTotalEnergyConsumption counts mJ */
    if (strcmp(si->metric, "wattage_cpu_energy_joules_total") == 0)
        return 1e-6; /* RAPL's energy_uj */
    return 0;
}

/* The power of segment j (p[j] -> p[j + 1]) in W; false when it is a gap. */
static bool seg_power(const struct wt_uncert_series *s, const struct wt_point *p, size_t j,
                      double *w)
{
    double d;
    bool covered;
    if (p[j + 1].t_ns <= p[j].t_ns)
        return false;
    wt_segment(s->rule, p[j].t_ns, p[j].v, p[j + 1].t_ns, p[j + 1].v, &d, &covered);
    *w = d / ((double)(p[j + 1].t_ns - p[j].t_ns) / NS);
    return covered;
}

/* The min and max of the covered segment powers of segments lo..hi (0, 0 when none). */
static void seg_range(const struct wt_uncert_series *s, const struct wt_point *p, size_t n, long lo,
                      long hi, double *min, double *max)
{
    double mn = INFINITY, mx = -INFINITY, w;
    if (lo < 0)
        lo = 0;
    for (long j = lo; j <= hi && j + 1 < (long)n; j++)
        if (seg_power(s, p, (size_t)j, &w)) {
            mn = w < mn ? w : mn;
            mx = w > mx ? w : mx;
        }
    *min = mx >= mn ? mn : 0;
    *max = mx >= mn ? mx : 0;
}

/*
 * The levels the power may take around segment i: the range [mn, mx] of the covered segment
 * powers within WT_UNCERT_SWING_SEGMENTS segments on either side, each end widened by
 * WT_UNCERT_LEVEL_MARGIN of the range unless at least two segments sit on it (within
 * WT_UNCERT_LEVEL_TOL of the range): a level two segments reach is the power's own, while a lone
 * extreme may be a segment mean short of it.
 */
static void levels(const struct wt_uncert_series *s, const struct wt_point *p, size_t n, size_t i,
                   double *lo, double *hi)
{
    long a = (long)i - WT_UNCERT_SWING_SEGMENTS, b = (long)i + WT_UNCERT_SWING_SEGMENTS;
    double mn, mx, w;
    int nlo = 0, nhi = 0;
    seg_range(s, p, n, a, b, &mn, &mx);
    double r = mx - mn;
    for (long j = a < 0 ? 0 : a; j <= b && j + 1 < (long)n; j++)
        if (seg_power(s, p, (size_t)j, &w)) {
            nlo += w - mn <= WT_UNCERT_LEVEL_TOL * r;
            nhi += mx - w <= WT_UNCERT_LEVEL_TOL * r;
        }
    *lo = mn - (nlo >= 2 ? 0 : WT_UNCERT_LEVEL_MARGIN * r);
    *hi = mx + (nhi >= 2 ? 0 : WT_UNCERT_LEVEL_MARGIN * r);
}

void wt_uncert_edge_sides(const struct wt_uncert_series *s, const struct wt_point *p, size_t n,
                          int64_t e, double *under, double *over)
{
    *under = *over = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (p[i].t_ns == e || p[i + 1].t_ns == e)
            return;
        if (!(p[i].t_ns < e && e < p[i + 1].t_ns))
            continue;
        double w, lo, hi;
        if (!seg_power(s, p, i, &w))
            return; /* a gap: the gaps term and the coverage say it */
        levels(s, p, n, i, &lo, &hi);
        double x = (double)(e - p[i].t_ns) / NS, y = (double)(p[i + 1].t_ns - e) / NS;
        /* The share is off by x*(w - p1) = y*(p2 - w), p1, p2 the mean powers of [t0, e] and
         * [e, t1], w the segment's (x*p1 + y*p2 = (x + y)*w). With p1, p2 in [lo, hi], the share
         * is short by at most min(x*(hi - w), y*(w - lo)) and over by min(x*(w - lo),
         * y*(hi - w)): 0 for a segment on a level, x*y/g*(hi - lo) at worst. */
        *under = fmax(0, fmin(x * (hi - w), y * (w - lo)));
        *over = fmax(0, fmin(x * (w - lo), y * (hi - w)));
        return;
    }
}

double wt_uncert_edge(const struct wt_uncert_series *s, const struct wt_point *p, size_t n,
                      int64_t e)
{
    double under, over;
    wt_uncert_edge_sides(s, p, n, e, &under, &over);
    return fmax(under, over);
}

void wt_uncert_interior(const struct wt_uncert_series *s, const struct wt_point *p, size_t n,
                        int64_t a, int64_t b, double *method_sq, double *gaps_j)
{
    *method_sq = 0;
    *gaps_j = 0;
    for (size_t j = 0; j + 1 < n; j++) {
        int64_t t0 = p[j].t_ns, t1 = p[j + 1].t_ns;
        int64_t lo = t0 > a ? t0 : a, hi = t1 < b ? t1 : b;
        if (hi <= lo)
            continue;
        double g = (double)(t1 - t0) / NS, ov = (double)(hi - lo) / NS, w, min, max;
        seg_range(s, p, n, (long)j - 2, (long)j + 2, &min, &max);
        double range = max - min;
        if (!seg_power(s, p, j, &w)) {
            *gaps_j += ov * max; /* what the gap may hide, at the power beside it */
            continue;
        }
        if (s->rule->kind != WT_SK_INTEGRATED)
            continue;
        double W = (double)s->power_window_ns / NS;
        if (W > 0 && g < W)
            continue; /* overlapping averages: their error does not add up (wt_uncert_lag) */
        double m = W > 0 ? (g - W) * range : g / 2 * range;
        m *= ov / g;
        *method_sq += m * m;
    }
}

double wt_uncert_lag(const struct wt_uncert_series *s, const struct wt_point *p, size_t n,
                     int64_t e)
{
    double W = (double)s->power_window_ns / NS;
    if (!(W > 0))
        return 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (!(p[i].t_ns <= e && e < p[i + 1].t_ns))
            continue;
        double g = (double)(p[i + 1].t_ns - p[i].t_ns) / NS, mn, mx;
        /* Means over W stamped at their middle smear a step over W: a step d from the edge
         * (|d| < W/2) leaves (W/2 - |d|)^2 / (2 W) times its size on the wrong side, W/8 at
         * worst and W/24 on average. W/16 of the swing of the edge's segment and of its
         * neighbours within W/2 of it (at least one on either side) is taken. */
        long k = g >= W / 2 ? 1 : (long)ceil(W / (2 * g));
        seg_range(s, p, n, (long)i - k, (long)i + k, &mn, &mx);
        return W / 16 * (mx - mn);
    }
    return 0;
}

/* The run interval of the series' node around t (1 s when no run says). */
static int64_t interval_at(const struct wt_segment_rule *r, int64_t t)
{
    int64_t iv = 0;
    for (size_t i = 0; i < r->nruns && r->runs[i].start_ns <= t; i++)
        iv = r->runs[i].interval_ns;
    return iv > 0 ? iv : 1000000000;
}

/* The readings p[0..n) at their read times: each moved by its read skew (sk[0..nsk), stamped
 * as the readings) where it has one. NULL when out of memory. */
static struct wt_point *at_read_times(const struct wt_point *p, size_t n, const struct wt_point *sk,
                                      size_t nsk)
{
    struct wt_point *q = malloc(n * sizeof *q);
    if (!q)
        return NULL;
    memcpy(q, p, n * sizeof *q);
    for (size_t j = 0, k = 0; j < n; j++) {
        while (k < nsk && sk[k].t_ns < p[j].t_ns)
            k++;
        if (k < nsk && sk[k].t_ns == p[j].t_ns && sk[k].v > 0)
            q[j].t_ns += llround(sk[k].v * NS);
    }
    return q;
}

/*
 * A counter's readings carry their poll's stamp, but each was read up to its read skew later
 * (collect/nvml.c, collect/rocm.c, wattage_gpu_energy_read_skew_seconds): the estimate at e, on
 * the reading or between two, may be over by that skew (the larger of the readings that make it)
 * times the power just after them, at most the top of the levels around. The levels are those
 * of the segments between the readings' read times (stamp + skew): between a reading read late
 * and one read early, a short segment's stamps would show more power than was drawn (771 W on
 * a 700-W level, a 4-ms skew next to an edge sample 0.1 s from its tick), and the bar more than
 * skew x power. sk[0..nsk): the skew readings, in time order.
 */
static double skew_over(const struct wt_uncert_series *s, const struct wt_point *p, size_t n,
                        const struct wt_point *sk, size_t nsk, int64_t e)
{
    for (size_t i = 0; i < n && n >= 2; i++) {
        bool on = p[i].t_ns == e, in = i + 1 < n && p[i].t_ns < e && e < p[i + 1].t_ns;
        if (!on && !in)
            continue;
        double skew = 0, lo, hi;
        for (size_t k = 0; k < nsk; k++)
            if (sk[k].t_ns == p[i].t_ns || (in && sk[k].t_ns == p[i + 1].t_ns))
                skew = fmax(skew, sk[k].v);
        if (!(skew > 0))
            return 0;
        struct wt_point *q = at_read_times(p, n, sk, nsk);
        levels(s, q ? q : p, n, i + 1 < n ? i : i - 1, &lo, &hi);
        free(q);
        return skew * fmax(hi, 0);
    }
    return 0;
}

/* One window edge: how far the estimate at it may lie below (under) and above (over) the energy
 * really used up to it, and the smoothing lag there. */
struct edge_bound {
    double under, over, lag;
};

static int edge_term(wt_uncert_points_fn points, wt_uncert_points_fn skew, void *ctx,
                     const struct wt_series_info *si, const struct wt_uncert_series *s, int64_t e,
                     int64_t a, int64_t b, double energy_j, struct edge_bound *out)
{
    struct wt_point *p = NULL, *sk = NULL;
    size_t n = 0, nsk = 0;
    int64_t iv = interval_at(s->rule, e), r = (WT_UNCERT_SWING_SEGMENTS + 2) * iv;
    if (s->power_window_ns + 3 * iv > r)
        r = s->power_window_ns + 3 * iv; /* the lag's neighbourhood */
    memset(out, 0, sizeof *out);
    int rc = points(ctx, e - r, e + r, &p, &n);
    if (rc)
        return rc;
    if (n == 0 && si->rolled_to && e < si->rolled_to) {
        /* pruned: the edge minute is prorated from its rollup */
        int64_t m = wt_minute_floor(e);
        double x = (double)(e - m) / NS, y = 60 - x;
        out->under = out->over = x > 0 ? x * y / 60 * 2 * energy_j / ((double)(b - a) / NS) : 0;
    } else {
        wt_uncert_edge_sides(s, p, n, e, &out->under, &out->over);
        out->lag = wt_uncert_lag(s, p, n, e);
        if (skew && n > 0) {
            rc = skew(ctx, p[0].t_ns, p[n - 1].t_ns, &sk, &nsk);
            if (rc == 0)
                out->over += skew_over(s, p, n, sk, nsk, e);
        }
    }
    free(p);
    free(sk);
    return rc;
}

/*
 * The edges' share of the window's error bar. The window's energy is the estimate at b less the
 * one at a, so its error is d(b) - d(a), d(e) in [-under, over] at each edge: it lies in
 * [-(under_b + over_a), over_b + under_a], and the larger side is the bound (a sum of each
 * edge's larger side would count an estimate too high at both edges as adding up, where it
 * cancels). An edge's smoothing lag bounds another error at the same edge (where the step fell
 * within the segment, and how much of it W smeared across the edge), seldom both at their worst:
 * it adds to each side in quadrature. *edges_j gets the same without the lag.
 */
static double edges_bar(const struct edge_bound *ea, const struct edge_bound *eb, double *edges_j)
{
    *edges_j = fmax(eb->under + ea->over, eb->over + ea->under);
    return fmax(hypot(eb->under, eb->lag) + hypot(ea->over, ea->lag),
                hypot(eb->over, eb->lag) + hypot(ea->under, ea->lag));
}

int wt_uncert_series_bar(const struct wt_series_info *si, const struct wt_run_list *runs,
                         wt_uncert_points_fn points, wt_uncert_points_fn skew, void *ctx, int64_t a,
                         int64_t b, double energy_j, double covered_s, struct wt_uncert *out)
{
    struct wt_segment_rule rule = wt_segment_rule_for(runs, si->node, si->kind);
    struct wt_uncert_series s = {.rule = &rule, .resolution_j = wt_uncert_resolution_j(si)};
    char model[128];
    struct wt_point *p = NULL;
    size_t n = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if (b <= a || covered_s <= 0)
        return 0;
    if (si->kind == WT_SK_INTEGRATED)
        s.power_window_ns = wt_energy_nvml_power_window_ns(
            wt_labels_get(si->labels, "model", model, sizeof model) == 0 ? model : NULL);
    struct edge_bound ea, eb;
    if (si->kind != WT_SK_HWCOUNTER)
        skew = NULL;
    rc = edge_term(points, skew, ctx, si, &s, a, a, b, energy_j, &ea);
    if (rc == 0)
        rc = edge_term(points, skew, ctx, si, &s, b, a, b, energy_j, &eb);
    if (rc)
        return rc;
    double edges_lag = edges_bar(&ea, &eb, &out->edges_j);
    out->resolution_j = 2 * s.resolution_j;

    /* The interior: integrated series always (the method term), counters when the coverage
     * says there is a gap. Long windows are read at their two ends and the method scaled. */
    bool full = covered_s >= (double)(b - a) / NS - 1e-3;
    if (si->kind == WT_SK_INTEGRATED || !full) {
        int64_t pad = 3 * interval_at(&rule, a), span = WT_UNCERT_METHOD_SPAN_NS;
        int64_t parts[2][2] = {{a, b}, {0, 0}};
        int np = 1;
        double scale = 1;
        if (b - a > 2 * span) {
            parts[0][1] = a + span;
            parts[1][0] = b - span;
            parts[1][1] = b;
            np = 2;
            scale = (double)(b - a) / (double)(2 * span);
        }
        double msq = 0, gaps = 0;
        for (int k = 0; k < np; k++) {
            double m1, g1;
            rc = points(ctx, parts[k][0] - pad, parts[k][1] + pad, &p, &n);
            if (rc)
                return rc;
            wt_uncert_interior(&s, p, n, parts[k][0], parts[k][1], &m1, &g1);
            free(p);
            p = NULL;
            msq += m1;
            gaps += g1;
        }
        /* The interior's error (each step's sampling jitter) is independent of where the steps
         * fell around the edges: it adds to theirs in quadrature. */
        out->method_j = hypot(edges_lag, sqrt(msq * scale)) - out->edges_j;
        out->gaps_j = gaps;
    }
    if (si->kind == WT_SK_INTEGRATED)
        out->sensor_j = WT_UNCERT_SENSOR_W * covered_s;
    out->total_j = out->edges_j + out->method_j + out->gaps_j + out->resolution_j;
    return 0;
}
