/* SPDX-License-Identifier: MIT */
/* The segment rule and exact windows over counter readings; see segment.h. Pure: no SQL. */
#include "store/segment.h"

#include <stdlib.h>
#include <string.h>

void wt_runs_free(struct wt_run_list *l)
{
    free(l->r);
    l->r = NULL;
    l->n = 0;
}

struct wt_segment_rule wt_segment_rule_for(const struct wt_run_list *runs, const char *node,
                                           enum wt_series_kind kind)
{
    struct wt_segment_rule r = {.kind = kind};
    size_t i = 0;
    while (i < runs->n && strcmp(runs->r[i].node, node) != 0)
        i++;
    r.runs = runs->r ? runs->r + i : NULL;
    while (i < runs->n && strcmp(runs->r[i].node, node) == 0) {
        i++;
        r.nruns++;
    }
    return r;
}

/* Index of the first run starting after t (nruns when none). */
static size_t first_run_after(const struct wt_segment_rule *r, int64_t t)
{
    size_t lo = 0, hi = r->nruns;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->runs[mid].start_ns > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void wt_segment(const struct wt_segment_rule *rule, int64_t t0, double v0, int64_t t1, double v1,
                double *delta_j, bool *covered)
{
    *delta_j = 0;
    *covered = false;
    if (v1 < v0)
        return; /* reset: new baseline, the span is a gap */
    size_t k = first_run_after(rule, t0);
    bool restart = k < rule->nruns && rule->runs[k].start_ns <= t1;
    if (restart && rule->kind != WT_SK_HWCOUNTER)
        return; /* the daemon restarted: a counter it kept starts over */
    *delta_j = v1 - v0;
    *covered = true;
    if (rule->kind == WT_SK_INTEGRATED && k > 0) {
        int64_t iv = rule->runs[k - 1].interval_ns;
        if (iv > 0 && t1 - t0 > 3 * iv)
            *covered = false; /* not integrated across: the daemon recorded a gap */
    }
}

struct wt_window wt_window_begin(const struct wt_segment_rule *rule, int64_t a, int64_t b)
{
    struct wt_window w = {.rule = rule, .a = a, .b = b};
    return w;
}

void wt_window_add(struct wt_window *w, int64_t t, double v)
{
    if (w->have && t > w->pt) {
        int64_t lo = w->pt > w->a ? w->pt : w->a, hi = t < w->b ? t : w->b;
        if (hi > lo) {
            double d;
            bool c;
            wt_segment(w->rule, w->pt, w->pv, t, v, &d, &c);
            w->energy_j += d * (double)(hi - lo) / (double)(t - w->pt);
            if (c)
                w->covered_ns += (double)(hi - lo);
        }
    }
    if (w->have && t <= w->pt)
        return; /* out of order or repeated: the first one stands */
    w->have = true;
    w->pt = t;
    w->pv = v;
}

void wt_segment_sum(const struct wt_segment_rule *rule, const struct wt_point *p, size_t n,
                    double *energy_j, int64_t *covered_ns)
{
    double e = 0;
    int64_t cov = 0;
    for (size_t i = 1; i < n; i++) {
        double d;
        bool c;
        if (p[i].t_ns <= p[i - 1].t_ns)
            continue;
        wt_segment(rule, p[i - 1].t_ns, p[i - 1].v, p[i].t_ns, p[i].v, &d, &c);
        e += d;
        if (c)
            cov += p[i].t_ns - p[i - 1].t_ns;
    }
    *energy_j = e;
    *covered_ns = cov;
}

void wt_window_add_sum(struct wt_window *w, int64_t t0, double v0, int64_t t1, double v1,
                       double energy_j, int64_t covered_ns)
{
    wt_window_add(w, t0, v0);
    if (t1 <= t0 || w->pt != t0)
        return; /* one point, or t0 was not taken (not after the window's last) */
    w->energy_j += energy_j;
    w->covered_ns += (double)covered_ns;
    w->pt = t1;
    w->pv = v1;
}
