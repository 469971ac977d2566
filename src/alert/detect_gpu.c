/* SPDX-License-Identifier: MIT */
/*
 * The built-in detectors per GPU: the throttle forecast, throttling, idle burn, impossible
 * and stuck readings, the sibling outlier, and GPU health (XIDs, ECC, row remapping, PCIe
 * replays). alert/detect.c calls each from its tick.
 */
#include "alert/detect_base.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/notify.h"
#include "audit/ashrae.h"
#include "collect/nvml.h"
#include "core/clock.h"

/* ---- the detectors, per GPU ---- */

/* ---- the throttle forecast ---- */

/* A window shorter than the longest forecasts at most this many of its own spans ahead: a line
 * through 10 s of a warm-up says little about where it is 60 s on, but a sudden rise is seen
 * first there. The longest window forecasts the whole lead. */
#define FORECAST_SPANS 2.5
/* A window shorter than the longest warns only when even its slope's lower bound heats this
 * fast (°C/s): those windows are there for a sudden rise. A slow climb read in ten readings of
 * noise (a GPU steady a few degrees under the slowdown) is left to the longer windows. */
#define FORECAST_MIN_RISE 0.25
/* The sums' origin moves this often (and the sums are recomputed from the ring then), so that
 * x stays small next to the windows' spans and what adding and subtracting lost is reset. */
#define FORECAST_REBASE_NS (3600 * WT_NS_PER_S)

static double sample_x(const struct gpu *g, uint64_t k)
{
    return (double)(g->rt[k % RING] - g->rorigin) / WT_NS_PER_S;
}

static void fw_put(struct fwin *w, double x, double y, double sign)
{
    w->sx += sign * x;
    w->sy += sign * y;
    w->sxx += sign * x * x;
    w->sxy += sign * x * y;
    w->syy += sign * y * y;
}

static void fw_rebuild(struct gpu *g)
{
    for (int j = 0; j < g->nfw; j++) {
        struct fwin *w = &g->fw[j];
        uint64_t tail = w->tail;
        memset(w, 0, sizeof *w);
        w->tail = tail;
        for (uint64_t k = tail; k < g->rcount; k++)
            fw_put(w, sample_x(g, k), g->rv[k % RING], 1);
    }
}

/* Takes the new sample (if any) into the ring and every window, and drops what fell out. */
static void forecast_take(struct gpu *g, const struct wt_alerts_config *cfg,
                          const struct wt_alert_input *in)
{
    const struct now *v = &g->v;
    int nw = cfg->throttle_forecast.nwindows;
    if (nw != g->nfw ||
        memcmp(g->fw_ns, cfg->throttle_forecast.windows_ns, (size_t)nw * sizeof g->fw_ns[0])) {
        /* New windows (a reload): every one starts from the samples kept. */
        g->nfw = nw;
        memcpy(g->fw_ns, cfg->throttle_forecast.windows_ns, (size_t)nw * sizeof g->fw_ns[0]);
        for (int j = 0; j < nw; j++)
            g->fw[j].tail = g->rhead;
        fw_rebuild(g);
    }
    if (v->have_temp && v->t_temp > g->last_temp_t) {
        if (g->rcount - g->rhead == RING) {
            for (int j = 0; j < nw; j++)
                if (g->fw[j].tail == g->rhead) {
                    fw_put(&g->fw[j], sample_x(g, g->rhead), g->rv[g->rhead % RING], -1);
                    g->fw[j].tail++;
                }
            g->rhead++;
        }
        if (g->rcount == g->rhead) {
            /* Nothing kept (a long gap): the sums start again from exact zeros. */
            g->rorigin = v->t_temp;
            for (int j = 0; j < nw; j++)
                g->fw[j] = (struct fwin){.tail = g->rcount};
        }
        g->rt[g->rcount % RING] = v->t_temp;
        g->rv[g->rcount % RING] = v->temp;
        g->rcount++;
        double x = sample_x(g, g->rcount - 1);
        for (int j = 0; j < nw; j++)
            fw_put(&g->fw[j], x, v->temp, 1);
        g->last_temp_t = v->t_temp;
    }
    for (int j = 0; j < nw; j++) {
        struct fwin *w = &g->fw[j];
        while (w->tail < g->rcount && g->rt[w->tail % RING] < in->now_ns - g->fw_ns[j]) {
            fw_put(w, sample_x(g, w->tail), g->rv[w->tail % RING], -1);
            w->tail++;
        }
    }
    /* The longest window starts first: nothing older is needed. */
    if (nw)
        g->rhead = g->fw[nw - 1].tail;
    if (g->rcount > g->rhead && g->rt[(g->rcount - 1) % RING] - g->rorigin > FORECAST_REBASE_NS) {
        g->rorigin = g->rt[g->rhead % RING];
        fw_rebuild(g);
    }
}

/* What one window says. */
struct fverdict {
    double slope, span_s, left, horizon;
};

/* Where the window's samples are heading, by the thirds (wt_detect_plateau); NAN when it does
 * not level off. O(window), so only asked when the window would warn. */
static double window_level(struct wt_detect *d, const struct gpu *g, const struct fwin *w)
{
    size_t n = 0;
    for (uint64_t k = w->tail; k < g->rcount; k++, n++) {
        d->xs[n] = sample_x(g, k);
        d->ys[n] = g->rv[k % RING];
    }
    double level;
    return wt_detect_plateau(d->xs, d->ys, n, &level) == 0 ? level : NAN;
}

/*
 * The windows from the shortest: each fits a line (from its running sums) and bounds the slope
 * by its standard error from the residuals at the configured confidence. A window decides when
 * it is confident either way: the slope's lower bound reaches the slowdown within its horizon
 * (warn), or it levels off under the threshold, or even the slope's upper bound stays clear of
 * it (quiet). A window that cannot tell (too noisy, or a rise just begun in it) leaves it to the
 * next, longer one; when none can, the last ready one's bound is held in the band (no change).
 * Returns whether any window was ready.
 */
static bool forecast_judge(struct wt_detect *d, struct gpu *g, const struct wt_alerts_config *cfg,
                           const struct wt_alert_input *in, bool new_sample, struct fverdict *out)
{
    const struct now *v = &g->v;
    double lead = (double)cfg->throttle_forecast.lead_ns / WT_NS_PER_S;
    bool ready = false, warned = false;
    for (int j = 0; j < g->nfw; j++) {
        const struct fwin *w = &g->fw[j];
        uint64_t n = g->rcount - w->tail;
        if (n < 5)
            continue;
        int64_t first = g->rt[w->tail % RING], last = g->rt[(g->rcount - 1) % RING];
        /* A shorter window speaks once it is (nearly) full: a half-full one right after a
         * start is a few readings of noise. The longest starts at half its span. */
        if (last - first < (j == g->nfw - 1 ? g->fw_ns[j] / 2 : g->fw_ns[j] * 9 / 10))
            continue;
        double nn = (double)n, mx = w->sx / nn, my = w->sy / nn;
        double sxx = w->sxx - w->sx * mx, sxy = w->sxy - w->sx * my, syy = w->syy - w->sy * my;
        if (!(sxx > 0))
            continue;
        double b = sxy / sxx, rss = syy - b * sxy;
        double s2 = (rss > 0 ? rss : 0) / (nn - 2);
        /* Whole-degree readings make a short window's residuals small by chance now and then
         * (ten readings of 84 and 85 that happen to climb): the sensor's usual scatter is the
         * floor. */
        if (j == 0 && new_sample)
            g->noise_s2 += (s2 - g->noise_s2) / (g->noise_n < 300 ? ++g->noise_n : 300);
        double se = sqrt((s2 > g->noise_s2 ? s2 : g->noise_s2) / sxx);
        double tq = wt_detect_t_quantile(cfg->throttle_forecast.confidence, nn - 2);
        /* Where the line is at the latest sample (not the sample itself: one reading a degree
         * up in the noise, near the threshold, would be a warning). */
        double t_now = my + b * (sample_x(g, g->rcount - 1) - mx);
        double stale = (double)(in->now_ns - last) / WT_NS_PER_S;
        double h = (double)g->fw_ns[j] / WT_NS_PER_S * FORECAST_SPANS;
        if (j == g->nfw - 1 || h > lead)
            h = lead;
        /* The latest the slowdown can come (the slope's lower bound), and the earliest. */
        double late = wt_detect_time_to(t_now, b - tq * se, v->slow);
        double soon = wt_detect_time_to(t_now, b + tq * se, v->slow);
        if (isfinite(late) && late > 0)
            late = late - stale > 0 ? late - stale : 0;
        if (warned) {
            /* The window that warned is checked by the next longer one: when that one is
             * confidently quiet (a steady GPU whose last ten readings happen to climb), it is
             * noise. A rise just begun leaves the longer one unsure, not quiet. */
            if (soon - stale > 1.5 * h)
                *out = (struct fverdict){b, (double)(last - first) / WT_NS_PER_S, INFINITY, h};
            return true;
        }
        *out = (struct fverdict){b, (double)(last - first) / WT_NS_PER_S, late, h};
        ready = true;
        if (late > 0 && late < 1.5 * h) {
            /* A GPU warming up after a job starts rises fast, then levels off: a straight line
             * through the rise would forecast a throttle that never comes (on every job
             * start). When the rise is clearly slowing towards a level under the threshold,
             * this window is sure there is none. */
            double level = window_level(d, g, w);
            if (level < v->slow - 0.5) {
                out->left = INFINITY;
                return true;
            }
        }
        /* Confident: it warns, or even the steepest slope it allows stays clear, or it knows
         * its slope to within half: then a longer window, which averages over older and other
         * behaviour, has nothing to add. */
        if (late < h && j < g->nfw - 1) {
            if (b - tq * se >= FORECAST_MIN_RISE)
                warned = true;
            continue;
        }
        if (late < h || soon - stale > 1.5 * h || tq * se <= 0.5 * fabs(b))
            return true;
    }
    return ready;
}

void wt_detect_forecast(struct wt_detect *d, struct gpu *g, const struct wt_alerts_config *cfg,
                        const struct wt_alert_input *in, const struct emit *em)
{
    const struct now *v = &g->v;
    struct fverdict f;
    bool new_sample = v->have_temp && v->t_temp > g->last_temp_t;
    forecast_take(g, cfg, in);
    if (!v->have_temp || !v->have_slow || !forecast_judge(d, g, cfg, in, new_sample, &f))
        return;
    double left = f.left;
    enum wt_cond c = left < f.horizon         ? WT_COND_TRUE
                     : left > 1.5 * f.horizon ? WT_COND_FALSE
                                              : WT_COND_HOLD;
    char s[256];
    if (c != WT_COND_FALSE) {
        if (left <= 0)
            wt_detect_say(s, sizeof s,
                          "GPU %d (%s) is at its slowdown temperature %.0f °C (%.0f °C, rising "
                          "%.2f °C/s over the last %.0f s)",
                          g->index, g->model, v->slow, v->temp, f.slope, f.span_s);
        else
            wt_detect_say(s, sizeof s,
                          "GPU %d (%s) reaches its slowdown temperature %.0f °C in %.0f s: %.0f °C "
                          "now, rising %.2f °C/s over the last %.0f s",
                          g->index, g->model, v->slow, left, v->temp, f.slope, f.span_s);
    }
    wt_detect_report(em, WT_DET_THROTTLE_FORECAST, g->labels, c, WT_SEV_WARNING, 0,
                     isfinite(left) ? left : -1, s, g->index);
}

static const struct {
    const char *reason;
    enum wt_severity sev;
    const char *what;
} throttle_reasons[] = {
    {"sw_thermal_slowdown", WT_SEV_WARNING, "the driver lowers clocks to hold the temperature"},
    {"hw_thermal_slowdown", WT_SEV_CRITICAL, "the hardware halves clocks: it is too hot"},
    {"hw_slowdown", WT_SEV_CRITICAL, "the hardware slows down (thermal or power brake)"},
    {"hw_power_brake_slowdown", WT_SEV_CRITICAL,
     "the power brake is asserted (external power supply limit)"},
};

void wt_detect_throttling(struct gpu *g, const struct wt_alerts_config *cfg,
                          const struct wt_batch *b, const struct emit *em)
{
    const struct now *v = &g->v;
    for (int i = 0; i < v->nreason; i++) {
        const struct wt_reading *r = &b->r[v->reason[i]];
        size_t n;
        const char *rv = wt_detect_label(r->labels, "reason", &n);
        for (size_t k = 0; rv && k < sizeof throttle_reasons / sizeof throttle_reasons[0]; k++) {
            if (strlen(throttle_reasons[k].reason) != n ||
                memcmp(rv, throttle_reasons[k].reason, n) != 0)
                continue;
            const char *reason = throttle_reasons[k].reason;
            char s[256];
            enum wt_cond c = r->value >= 0.5 ? WT_COND_TRUE : WT_COND_FALSE;
            if (c == WT_COND_TRUE) {
                char temp[48] = "";
                if (v->have_temp)
                    snprintf(temp, sizeof temp, " at %.0f °C", v->temp);
                wt_detect_say(s, sizeof s, "GPU %d (%s) throttled by %s%s: %s", g->index, g->model,
                              reason, temp, throttle_reasons[k].what);
            }
            wt_detect_report(em, WT_DET_THROTTLING, r->labels, c, throttle_reasons[k].sev,
                             cfg->throttling.for_ns, r->value, s, g->index);
        }
    }
}

/*
 * Idle burn: utilization under util_below while power is over power_share of the limit. An idle
 * GPU's power swings (clocks ramp, fans, memory refresh), so the condition is held with
 * hysteresis: once on, utilization at twice util_below (work started) clears it at once, but
 * power under 90% of the share must last IDLE_DWELL_NS (or `for`, when shorter) before it
 * clears; after a clear it comes back no sooner than that. A GPU hovering at the threshold thus
 * changes state (and logs pending or cleared) at most once per dwell, not every tick.
 */
#define IDLE_DWELL_NS (60 * WT_NS_PER_S)

/*
 * An AMD package (collect/rocm.h: an MI250X's two dies, an MI300X's partitions) draws its power
 * through its primary, the GPU with the power reading: it is busy when any member is. The
 * highest utilization of g's package in the snapshot, members named by wattage_gpu_info's
 * package="<g's index>"; util itself for an NVIDIA GPU or a package of one.
 */
static double package_util(const struct gpu *g, const struct wt_batch *snap, double util)
{
    char idx[16], v[WT_LABELS_LEN];
    if (strncmp(g->uuid, "AMD-", 4) != 0 || g->index < 0 || !snap)
        return util;
    snprintf(idx, sizeof idx, "%d", g->index);
    for (size_t i = 0; i < snap->len; i++) {
        const struct wt_reading *r = &snap->r[i];
        char uuid[96];
        if (r->metric != WT_M_GPU_INFO || wt_labels_get(r->labels, "package", v, sizeof v) != 0 ||
            strcmp(v, idx) != 0 || wt_labels_get(r->labels, "uuid", uuid, sizeof uuid) != 0 ||
            strcmp(uuid, g->uuid) == 0)
            continue;
        for (size_t k = 0; k < snap->len; k++) {
            const struct wt_reading *u = &snap->r[k];
            if (u->metric == WT_M_GPU_UTIL_RATIO && u->value > util &&
                wt_labels_get(u->labels, "uuid", v, sizeof v) == 0 && strcmp(v, uuid) == 0)
                util = u->value;
        }
    }
    return util;
}

void wt_detect_idle_burn(struct gpu *g, const struct wt_alerts_config *cfg,
                         const struct wt_alert_input *in, int64_t interval, const struct emit *em)
{
    const struct now *v = &g->v;
    double limit = v->have_limit ? v->limit : v->have_max ? v->max : 0;
    if (!v->have_util || !v->have_power || limit <= 0)
        return;
    double util = package_util(g, in->snap, v->util);
    double below = cfg->idle_burn.util_below, share = cfg->idle_burn.power_share;
    int64_t dwell = cfg->idle_burn.for_ns > 0 && cfg->idle_burn.for_ns < IDLE_DWELL_NS
                        ? cfg->idle_burn.for_ns
                        : IDLE_DWELL_NS;
    int64_t t = v->t_power;
    bool idle_high = util < below && v->power > share * limit;
    enum wt_cond c = WT_COND_FALSE;
    if (g->idle_on) {
        c = idle_high ? WT_COND_TRUE : WT_COND_HOLD;
        if (util >= 2 * below) {
            c = WT_COND_FALSE;
        } else if (v->power < 0.9 * share * limit) {
            if (!g->idle_low_since)
                g->idle_low_since = t;
            if (t - g->idle_low_since >= dwell)
                c = WT_COND_FALSE;
        } else {
            g->idle_low_since = 0;
        }
        if (c == WT_COND_FALSE) {
            g->idle_on = false;
            g->idle_low_since = 0;
            g->idle_off_at = t;
        }
    } else if (idle_high && (!g->idle_off_at || t - g->idle_off_at >= dwell)) {
        c = WT_COND_TRUE;
        g->idle_on = true;
        g->idle_since = t;
        g->idle_j = 0;
        g->idle_low_since = 0;
    }
    bool fresh = v->t_power > g->last_power_t;
    if (g->idle_on && fresh && g->last_power_t && v->t_power > g->idle_since) {
        /* The energy drawn while idle: trapezoids over the power samples, never across a gap
         * of more than 3 intervals. */
        int64_t dt =
            v->t_power - (g->last_power_t > g->idle_since ? g->last_power_t : g->idle_since);
        if (dt <= 3 * interval)
            g->idle_j += (g->last_power + v->power) / 2 * (double)dt / WT_NS_PER_S;
    }
    char s[256], dur[32];
    if (c != WT_COND_FALSE) {
        wt_detect_fmt_duration(in->now_ns - g->idle_since, dur, sizeof dur);
        wt_detect_say(s, sizeof s,
                      "GPU %d (%s) idle (%.0f%% utilization) while drawing %.0f W (%.0f%% of its "
                      "%.0f W limit) for %s: %.3f kWh so far",
                      g->index, g->model, 100 * util, v->power, 100 * v->power / limit, limit, dur,
                      g->idle_j / 3.6e6);
    }
    wt_detect_report(em, WT_DET_IDLE_BURN, g->labels, c, WT_SEV_WARNING, cfg->idle_burn.for_ns,
                     v->power, s, g->index);
}

enum { BAD_POWER, BAD_ENERGY, BAD_TEMP, BAD_UTIL };

void wt_detect_impossible(struct gpu *g, const struct wt_alerts_config *cfg,
                          const struct wt_alert_input *in, const struct emit *em)
{
    static const char *const kind[] = {"power", "energy", "temperature", "utilization"};
    const struct now *v = &g->v;
    double max = v->have_max ? v->max : v->have_limit ? v->limit : 0;
    bool bad[4] = {false};
    double val[4] = {0};
    if (v->have_power && max > 0 && v->power > max * (1 + cfg->impossible.power_margin))
        bad[BAD_POWER] = true, val[BAD_POWER] = v->power;
    if (v->have_energy && v->t_energy > g->last_energy_t) {
        if (v->energy < 0) {
            bad[BAD_ENERGY] = true, val[BAD_ENERGY] = v->energy;
            g->energy_back_j = v->energy;
        } else if (g->have_last_energy && v->energy < g->last_energy - 1e-3) {
            bad[BAD_ENERGY] = true, val[BAD_ENERGY] = v->energy;
            g->energy_back_j = g->last_energy - v->energy;
        }
        g->last_energy = v->energy;
        g->have_last_energy = true;
        g->last_energy_t = v->t_energy;
    }
    if (v->have_temp &&
        (v->temp < cfg->impossible.temp_min_c || v->temp > cfg->impossible.temp_max_c))
        bad[BAD_TEMP] = true, val[BAD_TEMP] = v->temp;
    if (v->have_util && (v->util < 0 || v->util > 1))
        bad[BAD_UTIL] = true, val[BAD_UTIL] = v->util;
    for (int k = 0; k < 4; k++) {
        if (bad[k]) {
            g->bad_at[k] = in->now_ns;
            g->bad_val[k] = val[k];
        }
        if (!g->bad_at[k])
            continue;
        enum wt_cond c = bad[k]                                                     ? WT_COND_TRUE
                         : in->now_ns - g->bad_at[k] < WT_DETECT_IMPOSSIBLE_HOLD_NS ? WT_COND_HOLD
                                                                                    : WT_COND_FALSE;
        char labels[WT_LABELS_LEN], s[256];
        memcpy(labels, g->labels, sizeof labels);
        if (wt_labels_add(labels, sizeof labels, "reading", kind[k]) != 0)
            continue;
        if (c != WT_COND_FALSE) {
            switch (k) {
            case BAD_POWER:
                wt_detect_say(
                    s, sizeof s,
                    "GPU %d (%s) reports %.0f W, over its max power limit %.0f W + %.0f%%: "
                    "the power sensor cannot be trusted",
                    g->index, g->model, g->bad_val[k], max, 100 * cfg->impossible.power_margin);
                break;
            case BAD_ENERGY:
                if (g->bad_val[k] < 0)
                    wt_detect_say(
                        s, sizeof s,
                        "GPU %d (%s) energy counter is negative (%.3f J): energy figures over "
                        "this time are wrong",
                        g->index, g->model, g->bad_val[k]);
                else
                    wt_detect_say(
                        s, sizeof s,
                        "GPU %d (%s) energy counter went backwards by %.3f J: energy figures "
                        "over this time are wrong",
                        g->index, g->model, g->energy_back_j);
                break;
            case BAD_TEMP:
                wt_detect_say(
                    s, sizeof s,
                    "GPU %d (%s) reports %.0f °C, outside the physical range %.0f..%.0f °C",
                    g->index, g->model, g->bad_val[k], cfg->impossible.temp_min_c,
                    cfg->impossible.temp_max_c);
                break;
            default:
                wt_detect_say(s, sizeof s,
                              "GPU %d (%s) reports a utilization of %.2f, outside 0..1", g->index,
                              g->model, g->bad_val[k]);
            }
        } else {
            g->bad_at[k] = 0;
        }
        wt_detect_report(em, WT_DET_IMPOSSIBLE, labels, c, WT_SEV_WARNING, 0, g->bad_val[k], s,
                         g->index);
    }
}

void wt_detect_stuck(struct gpu *g, const struct wt_alerts_config *cfg, const struct emit *em)
{
    const struct now *v = &g->v;
    if (!v->have_power)
        return;
    if (v->t_power > g->last_power_t) {
        if (g->last_power_t && v->power == g->last_power) {
            g->same++;
        } else {
            g->same = 0;
            g->util_min = INFINITY;
            g->util_max = -INFINITY;
        }
        if (v->have_util) {
            if (v->util < g->util_min)
                g->util_min = v->util;
            if (v->util > g->util_max)
                g->util_max = v->util;
        }
    }
    if (!v->have_util)
        return;
    /* same counts repeats: N equal readings are N - 1 repeats */
    bool moved = g->util_max - g->util_min >= 0.02;
    enum wt_cond c = g->same == 0                               ? WT_COND_FALSE
                     : g->same + 1 >= cfg->stuck.ticks && moved ? WT_COND_TRUE
                                                                : WT_COND_HOLD;
    char s[256];
    if (c != WT_COND_FALSE)
        wt_detect_say(s, sizeof s,
                      "GPU %d (%s) power reads %.3f W for %d samples in a row while utilization "
                      "moved between %.0f%% and %.0f%%: the power sensor looks stuck",
                      g->index, g->model, v->power, g->same + 1, 100 * g->util_min,
                      100 * g->util_max);
    wt_detect_report(em, WT_DET_STUCK, g->labels, c, WT_SEV_WARNING, 0, v->power, s, g->index);
}

void wt_detect_sibling(struct wt_detect *d, const struct wt_alerts_config *cfg,
                       const struct emit *em)
{
    bool done[MAX_GPUS] = {false};
    double temps[MAX_GPUS], powers[MAX_GPUS];
    for (int i = 0; i < d->ng; i++) {
        struct gpu *a = d->g[i];
        if (done[i] || !a->v.have_temp || !a->v.have_power)
            continue;
        int members[MAX_GPUS], n = 0;
        for (int j = i; j < d->ng; j++) {
            struct gpu *b = d->g[j];
            if (!done[j] && b->v.have_temp && b->v.have_power && strcmp(a->model, b->model) == 0) {
                done[j] = true;
                members[n++] = j;
            }
        }
        if (n < 3)
            continue;
        for (int k = 0; k < n; k++) {
            temps[k] = d->g[members[k]]->v.temp;
            powers[k] = d->g[members[k]]->v.power;
        }
        double mt = wt_detect_median(temps, (size_t)n), mp = wt_detect_median(powers, (size_t)n);
        for (int k = 0; k < n; k++) {
            struct gpu *g = d->g[members[k]];
            double hot = g->v.temp - mt;
            bool similar = fabs(g->v.power - mp) <= cfg->sibling.power_band * mp;
            enum wt_cond c = hot < 0.7 * cfg->sibling.delta_c         ? WT_COND_FALSE
                             : hot >= cfg->sibling.delta_c && similar ? WT_COND_TRUE
                                                                      : WT_COND_HOLD;
            char s[256];
            if (c != WT_COND_FALSE)
                wt_detect_say(
                    s, sizeof s,
                    "GPU %d (%s) runs %.0f °C hotter than the median %.0f °C of its %d "
                    "siblings at similar power (%.0f W, median %.0f W): check its cooling",
                    g->index, g->model, hot, mt, n, g->v.power, mp);
            wt_detect_report(em, WT_DET_SIBLING, g->labels, c, WT_SEV_WARNING, cfg->sibling.for_ns,
                             hot, s, g->index);
        }
    }
}

/* ---- GPU health ---- */

enum wt_severity wt_detect_xid_severity(unsigned int xid)
{
    /* From NVIDIA's XID catalog: what a restart of the application resolves, or the hardware
     * already contained or recorded, is a warning; the rest needs the GPU looked at. */
    static const unsigned int warning[] = {8, 13, 31, 32, 43, 45, 63, 68, 69, 92, 94};
    for (size_t i = 0; i < sizeof warning / sizeof warning[0]; i++)
        if (warning[i] == xid)
            return WT_SEV_WARNING;
    return WT_SEV_CRITICAL;
}

void wt_detect_xid_alerts(struct gpu *g, const struct wt_alerts_config *cfg,
                          const struct wt_alert_input *in, const struct emit *em)
{
    const struct now *v = &g->v;
    for (int i = 0; i < v->nxid; i++) {
        unsigned int code = v->xid[i].code;
        struct xid_seen *x = NULL;
        for (int k = 0; k < g->nxid && !x; k++)
            if (g->xid[k].code == code)
                x = &g->xid[k];
        if (!x) {
            if (g->nxid == MAX_XIDS)
                continue;
            /* A series appears with its first event: it starts from none. */
            x = &g->xid[g->nxid++];
            *x = (struct xid_seen){.code = code};
        }
        bool rose = v->xid[i].n > x->n;
        if (v->xid[i].n < x->n) /* the collector restarted: its count too */
            rose = v->xid[i].n > 0;
        if (rose)
            x->last_rise = in->now_ns;
        double added = rose ? (v->xid[i].n > x->n ? v->xid[i].n - x->n : v->xid[i].n) : 0;
        x->n = v->xid[i].n;
        enum wt_cond c = rose ? WT_COND_TRUE
                         : x->last_rise && in->now_ns - x->last_rise < cfg->xid.hold_ns
                             ? WT_COND_HOLD
                             : WT_COND_FALSE;
        char labels[WT_LABELS_LEN], s[256], code_s[16], ago[32];
        if (code)
            snprintf(code_s, sizeof code_s, "%u", code);
        else
            snprintf(code_s, sizeof code_s, "other");
        memcpy(labels, g->labels, sizeof labels);
        if (wt_labels_add(labels, sizeof labels, "xid", code_s) != 0)
            continue;
        if (c != WT_COND_FALSE) {
            const char *m = code ? wt_nvml_xid_meaning(code) : NULL;
            wt_detect_fmt_duration(in->now_ns - x->last_rise, ago, sizeof ago);
            if (rose)
                wt_detect_say(
                    s, sizeof s,
                    "GPU %d (%s) reported XID %s: %s (%.0f new, %.0f since wattage started)",
                    g->index, g->model, code_s,
                    m      ? m
                    : code ? "see NVIDIA's XID catalog"
                           : "one of several codes",
                    added, x->n);
            else
                wt_detect_say(
                    s, sizeof s,
                    "GPU %d (%s) reported XID %s: %s (%.0f since wattage started, the last %s ago)",
                    g->index, g->model, code_s,
                    m      ? m
                    : code ? "see NVIDIA's XID catalog"
                           : "one of several codes",
                    x->n, ago);
        }
        wt_detect_report(em, WT_DET_XID, labels, c, wt_detect_xid_severity(code), 0, x->n, s,
                         g->index);
    }
}

void wt_detect_ecc_alert(struct gpu *g, const struct wt_alert_input *in, const struct emit *em)
{
    const struct now *v = &g->v;
    if (!v->have_unc_vol && !v->have_unc_agg)
        return;
    if (v->have_unc_agg) {
        if (!g->have_first_agg || v->unc_agg < g->last_agg) {
            /* The first look (or a board swapped at this index): what it carried is history. */
            g->have_first_agg = true;
            g->first_agg = v->unc_agg;
        } else if (v->unc_agg > g->last_agg) {
            g->agg_rise_at = in->now_ns;
        }
        g->last_agg = v->unc_agg;
    }
    bool vol = v->have_unc_vol && v->unc_vol > 0;
    bool agg = g->agg_rise_at && in->now_ns - g->agg_rise_at < WT_DETECT_ECC_HOLD_NS;
    enum wt_cond c = vol || agg ? WT_COND_TRUE : WT_COND_FALSE;
    char s[256];
    if (c != WT_COND_FALSE) {
        if (vol)
            wt_detect_say(
                s, sizeof s,
                "GPU %d (%s) has %.0f uncorrectable ECC errors since the driver loaded: data on "
                "it may be corrupt; drain it, reset it, replace it if they come back",
                g->index, g->model, v->unc_vol);
        else
            wt_detect_say(
                s, sizeof s,
                "GPU %d (%s) uncorrectable ECC errors rose to %.0f over its life (%.0f since "
                "wattage started): drain it, reset it, replace it if they come back",
                g->index, g->model, v->unc_agg, v->unc_agg - g->first_agg);
    }
    wt_detect_report(em, WT_DET_ECC_UNCORRECTABLE, g->labels, c, WT_SEV_CRITICAL, 0,
                     vol ? v->unc_vol : v->unc_agg, s, g->index);
}

void wt_detect_remap_alert(struct gpu *g, const struct emit *em)
{
    const struct now *v = &g->v;
    if (!v->have_pending && !v->have_failure)
        return;
    bool failed = v->have_failure && v->failure > 0;
    bool pending = v->have_pending && v->pending > 0;
    enum wt_cond c = failed || pending ? WT_COND_TRUE : WT_COND_FALSE;
    char s[256];
    if (failed)
        wt_detect_say(
            s, sizeof s,
            "GPU %d (%s) row remapping failed: its memory cannot be repaired; replace the board",
            g->index, g->model);
    else if (pending)
        wt_detect_say(
            s, sizeof s,
            "GPU %d (%s) has a memory row remap pending (%.0f rows remapped for uncorrectable "
            "errors): reset the GPU to apply it",
            g->index, g->model, v->unc_rows);
    wt_detect_report(em, WT_DET_ROW_REMAP, g->labels, c, failed ? WT_SEV_CRITICAL : WT_SEV_WARNING,
                     0,
                     failed    ? 1
                     : pending ? 1
                               : 0,
                     s, g->index);
}

/*
 * PCIe replays over the window: checkpoints of the counter every window / 32; the rise is now
 * minus the newest checkpoint at least a window old (or the oldest kept, while the window fills).
 */
void wt_detect_replay_alert(struct gpu *g, const struct wt_alerts_config *cfg,
                            const struct emit *em)
{
    const struct now *v = &g->v;
    if (!v->have_replays)
        return;
    int64_t w = cfg->pcie_replays.window_ns, t = v->t_replays;
    if (g->rp_n && v->replays < g->rp_last)
        g->rp_n = 0; /* the counter restarted (driver reload): a new baseline */
    g->rp_last = v->replays;
    int newest = (g->rp_head + g->rp_n - 1) % REPLAY_CKPT;
    if (!g->rp_n || t - g->rp[newest].t >= w / 32) {
        if (g->rp_n == REPLAY_CKPT) {
            g->rp_head = (g->rp_head + 1) % REPLAY_CKPT;
            g->rp_n--;
        }
        int at = (g->rp_head + g->rp_n) % REPLAY_CKPT;
        g->rp[at].t = t;
        g->rp[at].v = v->replays;
        g->rp_n++;
    }
    double base = g->rp[g->rp_head].v;
    for (int k = 0; k < g->rp_n; k++) {
        int at = (g->rp_head + k) % REPLAY_CKPT;
        if (g->rp[at].t <= t - w)
            base = g->rp[at].v;
    }
    double rise = v->replays - base;
    enum wt_cond c = rise >= cfg->pcie_replays.threshold ? WT_COND_TRUE
                     : rise <= 0                         ? WT_COND_FALSE
                                                         : WT_COND_HOLD;
    char s[256], win[32];
    if (c != WT_COND_FALSE) {
        wt_detect_fmt_duration(w, win, sizeof win);
        wt_detect_say(
            s, sizeof s,
            "GPU %d (%s) PCIe replays rose by %.0f in the last %s (%.0f in all): the link is "
            "retransmitting; check the riser, slot and cabling",
            g->index, g->model, rise, win, v->replays);
    }
    wt_detect_report(em, WT_DET_PCIE_REPLAYS, g->labels, c, WT_SEV_WARNING, 0, rise, s, g->index);
}
