/* SPDX-License-Identifier: MIT */
/*
 * Counter-first energy integration; see energy.h. Wrap and reset handling are the most repeated
 * defects in the peers (codecarbon#1309, scaphandre#280, zeus#91), hence the small pure functions.
 */
#include "core/energy.h"

#include "core/clock.h"

enum wt_delta_kind wt_counter_delta(uint64_t prev, uint64_t cur, uint64_t modulus,
                                    uint64_t max_delta, uint64_t *delta)
{
    if (cur >= prev) {
        *delta = cur - prev;
        return WT_DELTA_OK;
    }
    /* RAPL counts 0..max_energy_range_uj and wraps to 0; a value above the range means the
     * range we were told is wrong, so this cannot be a wrap. */
    if (modulus && prev <= modulus) {
        uint64_t d = (modulus - prev) + cur;
        if (max_delta == 0 || d <= max_delta) {
            *delta = d;
            return WT_DELTA_WRAP;
        }
    }
    *delta = 0;
    return WT_DELTA_RESET;
}

enum wt_delta_kind wt_energy_counter_update(struct wt_energy_counter *c, int64_t t_ns, uint64_t raw,
                                            uint64_t modulus, uint64_t max_delta)
{
    if (!c->have) {
        c->have = true;
        c->last_raw = raw;
        c->last_t_ns = t_ns;
        return WT_DELTA_FIRST;
    }
    uint64_t d = 0;
    enum wt_delta_kind k = wt_counter_delta(c->last_raw, raw, modulus, max_delta, &d);
    if (k == WT_DELTA_RESET) {
        /* The counter restarted from zero since the last reading (driver reload): what it has
         * counted since is energy of this interval, when plausible. */
        c->resets++;
        d = (max_delta == 0 || raw <= max_delta) ? raw : 0;
    } else if (k == WT_DELTA_WRAP) {
        c->wraps++;
    }
    c->total_raw += d;
    c->last_raw = raw;
    c->last_t_ns = t_ns;
    return k;
}

int wt_energy_integral_update(struct wt_energy_integral *g, int64_t t_ns, double power_w,
                              int64_t max_gap_ns)
{
    if (g->have && t_ns <= g->last_t_ns)
        return 0;
    int gap = 0;
    if (g->have) {
        int64_t span = t_ns - g->last_t_ns;
        double span_s = (double)span / WT_NS_PER_S;
        if (g->broken || (max_gap_ns > 0 && span > max_gap_ns)) {
            g->gaps++;
            g->gap_s += span_s;
            gap = 1;
        } else {
            g->total_j += 0.5 * (g->last_power_w + power_w) * span_s;
            g->covered_s += span_s;
        }
    }
    g->have = true;
    g->broken = false;
    g->last_t_ns = t_ns;
    g->last_power_w = power_w;
    return gap;
}

void wt_energy_integral_break(struct wt_energy_integral *g)
{
    if (g->have)
        g->broken = true;
}
