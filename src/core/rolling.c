/* SPDX-License-Identifier: MIT */
/* Rolling power means over several windows; see rolling.h. */
#include "core/rolling.h"

#include <math.h>
#include <string.h>

#include "core/clock.h"

void wt_rolling_init(struct wt_rolling *r, int64_t max_gap_ns)
{
    memset(r, 0, sizeof *r);
    r->max_gap_ns = max_gap_ns;
}

static const struct wt_rolling_point *at(const struct wt_rolling *r, size_t i)
{
    return &r->ring[(r->start + i) % WT_ROLLING_CAP];
}

void wt_rolling_add(struct wt_rolling *r, int64_t t_ns, double watts)
{
    if (!isfinite(watts))
        return;
    if (r->have_last) {
        if (t_ns <= r->last_t_ns)
            return;
        int64_t dt = t_ns - r->last_t_ns;
        if (dt <= r->max_gap_ns) {
            double s = (double)dt / 1e9;
            r->head.energy_j += (r->last_w + watts) / 2 * s;
            r->head.covered_s += s;
        }
    }
    r->head.t_ns = t_ns;
    r->have_last = true;
    r->last_t_ns = t_ns;
    r->last_w = watts;
    if (r->len > 0 && t_ns - at(r, r->len - 1)->t_ns < WT_ROLLING_STEP_NS)
        return;
    if (r->len == WT_ROLLING_CAP) {
        r->start = (r->start + 1) % WT_ROLLING_CAP;
        r->len--;
    }
    r->ring[(r->start + r->len) % WT_ROLLING_CAP] = r->head;
    r->len++;
}

/* Entry i of the ring followed by the head (when newer): n = len or len + 1 points. */
static struct wt_rolling_point point(const struct wt_rolling *r, size_t i)
{
    return i < r->len ? *at(r, i) : r->head;
}

/* The running pair at time t, interpolated between the points around it. */
static struct wt_rolling_point value_at(const struct wt_rolling *r, size_t n, int64_t t)
{
    struct wt_rolling_point first = point(r, 0);
    if (t <= first.t_ns)
        return first;
    size_t lo = 0, hi = n - 1; /* point(lo).t < t; find the last such lo */
    if (point(r, hi).t_ns <= t)
        return point(r, hi);
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (point(r, mid).t_ns <= t)
            lo = mid;
        else
            hi = mid;
    }
    struct wt_rolling_point a = point(r, lo), b = point(r, hi);
    double f = (double)(t - a.t_ns) / (double)(b.t_ns - a.t_ns);
    return (struct wt_rolling_point){t, a.energy_j + f * (b.energy_j - a.energy_j),
                                     a.covered_s + f * (b.covered_s - a.covered_s)};
}

double wt_rolling_mean(const struct wt_rolling *r, int64_t now_ns, int64_t window_ns)
{
    if (r->len == 0 || window_ns <= 0 || window_ns > (int64_t)WT_ROLLING_SPAN_S * WT_NS_PER_S)
        return NAN;
    size_t n = r->len + (r->head.t_ns > at(r, r->len - 1)->t_ns ? 1 : 0);
    struct wt_rolling_point end = value_at(r, n, now_ns);
    struct wt_rolling_point begin = value_at(r, n, now_ns - window_ns);
    double covered = end.covered_s - begin.covered_s;
    if (covered <= 0 || covered < (double)window_ns / 2e9)
        return NAN;
    return (end.energy_j - begin.energy_j) / covered;
}
