/* SPDX-License-Identifier: MIT */
/*
 * Counter-first energy integration; see energy.h. Wrap and reset handling are the most repeated
 * defects in the peers (codecarbon#1309, scaphandre#280, zeus#91), hence the small pure functions.
 */
#include "core/energy.h"

#include <string.h>
#include <strings.h>

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
    int64_t half = g->window_ns > 0 ? g->window_ns / 2 : 0;
    int64_t placed = t_ns - half; /* the middle of the reading's averaging window */
    double head_s = (double)half / WT_NS_PER_S;
    if (g->have && !g->broken && !(max_gap_ns > 0 && t_ns - g->last_t_ns > max_gap_ns)) {
        g->placed_j +=
            0.5 * (g->last_power_w + power_w) * (double)(placed - g->last_placed_ns) / WT_NS_PER_S;
        g->covered_s += (double)(t_ns - g->last_t_ns) / WT_NS_PER_S;
        /* The energy from the placed sample to its stamp: its power times window/2, when the
         * readings are as far apart as the window (exact then, as energy.h says). Closer
         * readings overlap; their slope then says how the power moved within the last half
         * window: exact for power that changes linearly. Between the two, in proportion. */
        double span_s = (double)(t_ns - g->last_t_ns) / WT_NS_PER_S;
        double win_s = 2 * head_s;
        double lambda = win_s > span_s ? 1 - span_s / win_s : 0;
        double slope = (power_w - g->last_power_w) / span_s;
        double tilt = head_s * lambda * slope * win_s / 4;
        if (g->fresh) {
            /* the baseline's half window had this slope too: its estimate stays what it was */
            g->placed_j -= tilt;
            g->fresh = false;
        }
        double est = g->placed_j + head_s * power_w + tilt;
        if (est > g->total_j)
            g->total_j = est;
    } else {
        if (g->have) {
            g->gaps++;
            g->gap_s += (double)(t_ns - g->last_t_ns) / WT_NS_PER_S;
            gap = 1;
        }
        /* A (re)start: this sample is the baseline, placed like any other, with the trapezoid
         * set so that the estimate at its stamp is what was counted so far. Nothing before the
         * stamp is counted, and the next step is exact as above. */
        g->placed_j = g->total_j - power_w * head_s;
        g->fresh = true;
    }
    g->have = true;
    g->broken = false;
    g->last_t_ns = t_ns;
    g->last_placed_ns = placed;
    g->last_power_w = power_w;
    return gap;
}

void wt_energy_integral_break(struct wt_energy_integral *g)
{
    if (g->have)
        g->broken = true;
}

/*
 * Which GPUs read instantaneous power. The NVML API reference, nvmlDeviceGetPowerUsage: "On
 * Ampere (except GA100) or newer GPUs, the API returns power averaged over 1 sec interval. On
 * GA100 and older architectures, instantaneous power is returned" (NVML_FI_DEV_POWER_AVERAGE and
 * NVML_FI_DEV_POWER_INSTANT name the two). GA100 is the A100, A800 and A30; older: Volta (V100,
 * TITAN V), Turing (T4, Quadro RTX, GeForce RTX 20 and GTX 16), Pascal (P100, P40, P4), Maxwell
 * (M60, M40) and Kepler (K80). Every Tesla-, Quadro-, TITAN- and GTX-branded board is one of
 * those. Averaging over 1 s: A10, A16, A2, A40, RTX A-series, GeForce RTX 30/40/50, L4, L40,
 * H100, H200, GH200, B200... and whatever is newer than this table, hence the 1 s default.
 * "Instantaneous" is itself a short average: Yang, Adamek and Armour (arXiv 2312.02741) measured a
 * ~25 ms window refreshed every 100 ms on A100 and H100, i.e. placed within 0.1 s of the stamp.
 */
static bool token_is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(p, word, n) == 0;
}

int64_t wt_energy_nvml_power_window_ns(const char *model)
{
    static const char *const instant[] = {"A100", "A800",  "A30", "V100",  "V100S",  "T4",
                                          "P100", "P40",   "P4",  "P6",    "K80",    "K40",
                                          "K20",  "K20X",  "M60", "M40",   "M10",    "M6",
                                          "M4",   "Tesla", "GTX", "TITAN", "Quadro", NULL};
    const char *p = model ? model : "";
    bool after_rtx = false;
    while (*p) {
        size_t n = strcspn(p, " -_/");
        if (n > 0) {
            for (size_t i = 0; instant[i]; i++)
                if (token_is(p, n, instant[i]))
                    return 0;
            /* GeForce RTX 20xx (Turing) reads instantaneously; RTX 30xx and later average. */
            if (after_rtx && n == 4 && strncmp(p, "20", 2) == 0)
                return 0;
            after_rtx = token_is(p, n, "RTX");
        }
        p += n;
        if (*p)
            p++;
    }
    return WT_ENERGY_NVML_WINDOW_DEFAULT_NS;
}

double wt_energy_read_skew_s(int64_t stamp_ns, int64_t read_end_ns)
{
    int64_t skew_ns = read_end_ns > stamp_ns ? read_end_ns - stamp_ns : 0;
    return (double)((skew_ns + 9999) / 10000) / 1e5;
}
