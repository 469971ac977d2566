/* SPDX-License-Identifier: MIT */
/*
 * The best start time of a flexible run over a rate step function (see schedule.h): a running
 * integral of the rate at the step boundaries, then a sweep over the candidate starts with two
 * forward-only cursors (constant power) or a walk over the profile's slots (a job's profile).
 */
#include "audit/schedule.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

#define J_PER_KWH 3.6e6

/* Running integrals at the boundaries: F of the rate (rate x ns), H of the filled time (ns). */
struct integ {
    const struct wt_carbon_step *s;
    size_t n;
    double *F, *H; /* n + 1 each, at s[k].from_ns (k < n) and s[n-1].to_ns */
};

static bool filled(enum wt_carbon_src src)
{
    return src != WT_CSRC_ACTUAL && src != WT_CSRC_FORECAST;
}

static int integ_init(struct integ *g, const struct wt_carbon_step *s, size_t n)
{
    g->s = s;
    g->n = n;
    g->F = malloc((n + 1) * sizeof *g->F);
    g->H = malloc((n + 1) * sizeof *g->H);
    if (!g->F || !g->H) {
        free(g->F);
        free(g->H);
        return -ENOMEM;
    }
    g->F[0] = g->H[0] = 0;
    for (size_t k = 0; k < n; k++) {
        double dt = (double)(s[k].to_ns - s[k].from_ns);
        g->F[k + 1] = g->F[k] + s[k].value * dt;
        g->H[k + 1] = g->H[k] + (filled(s[k].src) ? dt : 0);
    }
    return 0;
}

static void integ_free(struct integ *g)
{
    free(g->F);
    free(g->H);
}

/* F and H at t, with the step index *k as a cursor (moved forward, or found when *k is -1). */
static void at(const struct integ *g, int64_t t, ptrdiff_t *k, double *F, double *H)
{
    const struct wt_carbon_step *s = g->s;
    if (*k < 0) {
        size_t lo = 0, hi = g->n;
        while (lo + 1 < hi) {
            size_t mid = (lo + hi) / 2;
            if (s[mid].from_ns <= t)
                lo = mid;
            else
                hi = mid;
        }
        *k = (ptrdiff_t)lo;
    }
    while ((size_t)*k + 1 < g->n && s[*k].to_ns <= t)
        (*k)++;
    const struct wt_carbon_step *st = &s[*k];
    double dt = (double)(t - st->from_ns);
    *F = g->F[*k] + st->value * dt;
    *H = g->H[*k] + (filled(st->src) ? dt : 0);
}

static double power_factor(const struct wt_sched_req *r)
{
    return r->pue > 0 ? r->pue : 1.0;
}

/* Cost of a start with the profile (or constant power), cursors found by search. */
static void eval_profile(const struct integ *g, const struct wt_sched_req *r, int64_t start,
                         struct wt_sched_option *o)
{
    double pf = power_factor(r);
    o->start_ns = start;
    o->cost = o->energy_kwh = o->filled_kwh = 0;
    if (!r->nprofile) {
        ptrdiff_t k0 = -1, k1 = -1;
        double F0, H0, F1, H1;
        at(g, start, &k0, &F0, &H0);
        at(g, start + r->duration_ns, &k1, &F1, &H1);
        double w = r->power_w * pf / 1e9 / J_PER_KWH; /* kWh per ns */
        o->cost = w * (F1 - F0);
        o->energy_kwh = w * (double)r->duration_ns;
        o->filled_kwh = w * (H1 - H0);
        return;
    }
    ptrdiff_t k = -1;
    double Fa, Ha;
    at(g, start, &k, &Fa, &Ha);
    for (size_t j = 0; j < r->nprofile; j++) {
        int64_t b = start + (int64_t)(j + 1) * r->profile_step_ns;
        if (b > start + r->duration_ns)
            b = start + r->duration_ns;
        double Fb, Hb;
        at(g, b, &k, &Fb, &Hb);
        double w = r->profile_w[j] * pf / 1e9 / J_PER_KWH;
        int64_t a = start + (int64_t)j * r->profile_step_ns;
        o->cost += w * (Fb - Fa);
        o->energy_kwh += w * (double)(b - a);
        o->filled_kwh += w * (Hb - Ha);
        Fa = Fb;
        Ha = Hb;
        if (b >= start + r->duration_ns)
            break;
    }
}

double wt_schedule_cost(const struct wt_carbon_step *s, size_t n, const struct wt_sched_req *r,
                        int64_t start, double *energy_kwh, double *filled_kwh)
{
    struct integ g;
    struct wt_sched_option o;
    if (!n || integ_init(&g, s, n) != 0)
        return NAN;
    eval_profile(&g, r, start, &o);
    integ_free(&g);
    if (energy_kwh)
        *energy_kwh = o.energy_kwh;
    if (filled_kwh)
        *filled_kwh = o.filled_kwh;
    return o.cost;
}

static void consider(struct wt_sched_result *out, const struct wt_sched_option *o)
{
    out->candidates++;
    /* Ties (within rounding) go to the earliest start, which comes first. */
    if (out->candidates == 1 || o->cost < out->best.cost - 1e-9 * fabs(out->best.cost))
        out->best = *o;
}

int wt_schedule_best(const struct wt_carbon_step *s, size_t n, const struct wt_sched_req *r,
                     struct wt_sched_result *out, struct wt_err *err)
{
    struct integ g;
    memset(out, 0, sizeof *out);
    if (r->duration_ns <= 0)
        return wt_err_set(err, "the run's duration must be > 0");
    int64_t last = r->deadline_ns - r->duration_ns;
    if (last < r->now_ns)
        return wt_err_set(err,
                          "the run (%.2f h) does not fit between now and the deadline "
                          "(%.2f h away)",
                          (double)r->duration_ns / 3.6e12,
                          (double)(r->deadline_ns - r->now_ns) / 3.6e12);
    if (!n || s[0].from_ns > r->now_ns || s[n - 1].to_ns < r->deadline_ns)
        return wt_err_set(err, "the series does not cover now .. deadline");
    for (size_t k = 1; k < n; k++) {
        if (s[k].from_ns != s[k - 1].to_ns)
            return wt_err_set(err, "the series' steps are not consecutive");
    }
    if (r->nprofile && r->profile_step_ns <= 0)
        return wt_err_set(err, "the profile's step must be > 0");
    if (integ_init(&g, s, n) != 0)
        return -ENOMEM;
    eval_profile(&g, r, r->now_ns, &out->now);

    if (!r->nprofile) {
        /* Candidates in time order: now, the boundaries b and b - D within (now, last], last.
         * The cursors of s and s + D only move forward: O(n). */
        ptrdiff_t k0 = 0, k1 = 0;
        size_t i = 0, j = 0; /* next boundary as a start, next boundary as an end */
        double w = r->power_w * power_factor(r) / 1e9 / J_PER_KWH;
        int64_t prev = INT64_MIN;
        for (;;) {
            int64_t c1 = INT64_MAX, c2 = INT64_MAX, c;
            while (i <= n && (i == n ? s[n - 1].to_ns : s[i].from_ns) <= prev)
                i++;
            while (j <= n && (j == n ? s[n - 1].to_ns : s[j].from_ns) - r->duration_ns <= prev)
                j++;
            if (i <= n)
                c1 = i == n ? s[n - 1].to_ns : s[i].from_ns;
            if (j <= n)
                c2 = (j == n ? s[n - 1].to_ns : s[j].from_ns) - r->duration_ns;
            if (prev == INT64_MIN)
                c = r->now_ns;
            else
                c = c1 < c2 ? c1 : c2;
            if (c < r->now_ns)
                c = r->now_ns;
            if (c > last) {
                if (prev >= last)
                    break;
                c = last;
            }
            double F0, H0, F1, H1;
            at(&g, c, &k0, &F0, &H0);
            at(&g, c + r->duration_ns, &k1, &F1, &H1);
            struct wt_sched_option o = {.start_ns = c,
                                        .cost = w * (F1 - F0),
                                        .energy_kwh = w * (double)r->duration_ns,
                                        .filled_kwh = w * (H1 - H0)};
            consider(out, &o);
            prev = c;
            if (c == last)
                break;
        }
    } else {
        /* A profile: now, every boundary within (now, last], and last. */
        struct wt_sched_option o;
        consider(out, &out->now);
        for (size_t k = 0; k <= n; k++) {
            int64_t c = k == n ? s[n - 1].to_ns : s[k].from_ns;
            if (c <= r->now_ns || c > last)
                continue;
            eval_profile(&g, r, c, &o);
            consider(out, &o);
        }
        if (last > r->now_ns) {
            eval_profile(&g, r, last, &o);
            consider(out, &o);
        }
    }
    integ_free(&g);
    out->saving = out->now.cost - out->best.cost;
    out->saving_pct = out->now.cost > 0 ? 100.0 * out->saving / out->now.cost : 0;
    return 0;
}
