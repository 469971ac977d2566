/* SPDX-License-Identifier: MIT */
/*
 * forecast_eval: how early GPUThrottleForecast warns, and how often it warns for nothing, on
 * synthetic temperature traces run through the real alert engine (every other detector off),
 * at the defaults (or at the throttle_forecast settings given as YAML flow mapping).
 *
 * Every trace is sampled at 1 s and rounded to whole degrees, as NVML reports it, after uniform
 * noise of +-a °C (a fixed seed per trace, so a run is the same every time); slowdown is 87 °C.
 *   ramps     120 s steady at a baseline (30, 40, 50, 60 °C), then linear heating at 0.5, 1, 1.5,
 *             3 °C/s: the lead is when the true temperature reaches 87 °C minus when the alert
 *             fired (the smallest over 8 noise seeds; "late" when it fired after, "none" never)
 *   warm-ups  120 s at 40 or 50 °C, then an exponential approach to 87 - gap (gap 3..15 °C, tau
 *             10..120 s), held 10 min: any firing is a false alarm
 *   days      one GPU-day each: job after job (a warm-up to a random level 3..15 °C under the
 *             slowdown with a random tau 10..120 s, held 5..60 min, then cooling back to idle
 *             with tau 60 s for 2..20 min), and a day of noise only at 80 and 84 °C: firings per
 *             GPU-day
 *   forecast_eval [NOISE_MAX] [SETTINGS]    (default 1; e.g. '{windows: [2m]}')
 * Prints Markdown tables on stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/engine.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/yamltree.h"
#include "core/yget.h"

#define SLOW 87.0
#define T0 (1764439200LL * WT_NS_PER_S)
#define SEEDS 8

static struct wt_alerts_config cfg;
static int fired;      /* firing transitions of the trace */
static double fire_at; /* seconds into the trace of the first */

static void on_tr(void *ctx, const struct wt_alert *a, enum wt_alert_state from)
{
    double *now = ctx;
    (void)from;
    if (a->state == WT_ALERT_FIRING && strcmp(a->name, "GPUThrottleForecast") == 0) {
        if (!fired)
            fire_at = *now;
        fired++;
    }
}

/* xorshift64*: a seeded uniform in [0, 1). */
static uint64_t rng;
static double uniform(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static void setup(const char *settings)
{
    char yaml[512];
    struct wt_ynode *root = NULL;
    struct wt_err err = {{0}};
    snprintf(yaml, sizeof yaml, "alerts:\n  detectors:\n    throttle_forecast: %s\n",
             settings ? settings : "true");
    if (wt_yaml_parse("forecast_eval", yaml, strlen(yaml), &root, &err) != 0 ||
        wt_alerts_config_parse("forecast_eval", wt_y_get(root, "alerts"), &cfg, &err) != 0) {
        fprintf(stderr, "forecast_eval: %s\n", err.msg);
        exit(2);
    }
    wt_ynode_free(root);
    cfg.throttling.enabled = cfg.idle_burn.enabled = cfg.impossible.enabled = false;
    cfg.stuck.enabled = cfg.sibling.enabled = cfg.data_gap.enabled = false;
    cfg.delivery_failing.enabled = false;
}

typedef double (*trace_fn)(double s, const double *p);

/* Runs trace f(s) for `secs` seconds with noise +-a; stops at the first firing when stop. */
static void run(trace_fn f, const double *p, int secs, double a, uint64_t seed, bool stop)
{
    struct wt_alert_eval *e = NULL;
    struct wt_batch b = {0};
    double now = 0;
    if (wt_alert_eval_new(&cfg, WT_NS_PER_S, &e) != 0)
        exit(1);
    rng = seed * 0x9E3779B97F4A7C15ULL + 1;
    fired = 0;
    fire_at = -1;
    char l[WT_LABELS_LEN];
    (void)wt_labels(l, sizeof l, "gpu", "0", "uuid", "GPU-eval", "model", "NVIDIA H200", NULL);
    for (int s = 0; s < secs && !(stop && fired); s++) {
        int64_t t = T0 + (int64_t)s * WT_NS_PER_S;
        double temp = round(f(s, p) + a * (2 * uniform() - 1));
        wt_batch_clear(&b);
        if (wt_batch_add(&b, WT_M_GPU_TEMP_C, l, t, temp) != 0 ||
            wt_batch_add(&b, WT_M_GPU_SLOWDOWN_TEMP_C, l, t, SLOW) != 0)
            exit(1);
        struct wt_alert_input in = {.snap = &b, .now_ns = t, .now_mono = t};
        now = s;
        wt_alert_eval_tick(e, &in, on_tr, &now);
    }
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

/* p: baseline, rate */
static double ramp(double s, const double *p)
{
    return s < 120 ? p[0] : p[0] + p[1] * (s - 120);
}

/* p: start, level, tau */
static double warm(double s, const double *p)
{
    return s < 120 ? p[0] : p[1] - (p[1] - p[0]) * exp(-(s - 120) / p[2]);
}

/* A day of jobs, precomputed per second. */
static float day[86400];
static double day_trace(double s, const double *p)
{
    (void)p;
    return day[(int)s];
}

static void make_day(uint64_t seed)
{
    double temp = 40, idle = 40;
    int s = 0;
    rng = seed * 0xD1B54A32D192ED03ULL + 7;
    while (s < 86400) {
        double level = SLOW - 3 - 12 * uniform(), tau = 10 + 110 * uniform();
        int hold = 300 + (int)(3300 * uniform()), cool = 120 + (int)(1080 * uniform());
        double from = temp;
        for (int k = 0; k < hold && s < 86400; k++, s++)
            day[s] = (float)(temp = level - (level - from) * exp(-k / tau));
        from = temp;
        for (int k = 0; k < cool && s < 86400; k++, s++)
            day[s] = (float)(temp = idle + (from - idle) * exp(-k / 60.0));
    }
}

static double flat_level;
static double flat(double s, const double *p)
{
    (void)s, (void)p;
    return flat_level;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && strcmp(argv[1], "warm") == 0) {
        /* One warm-up, for a closer look: warm START LEVEL TAU NOISE [SEED] */
        double p[3] = {atof(argv[2]), atof(argv[3]), atof(argv[4])};
        setup(NULL);
        run(warm, p, 720, atof(argv[5]), argc > 6 ? (uint64_t)atoll(argv[6]) : 1, true);
        printf("fired %d, first %.0f s after the start\n", fired, fire_at - 120);
        return 0;
    }
    double amax = argc > 1 ? atof(argv[1]) : 1;
    setup(argc > 2 ? argv[2] : NULL);
    static const double bases[] = {30, 40, 50, 60}, rates[] = {0.5, 1, 1.5, 3};
    static const double gaps[] = {3, 5, 8, 10, 15}, taus[] = {10, 20, 30, 60, 120};
    const double noises[] = {0.5, amax};
    printf("settings: %s; noise up to +-%.1f °C; slowdown %.0f °C\n\n",
           argc > 2 ? argv[2] : "defaults", amax, SLOW);
    printf("Lead (s before slowdown, least of %d seeds x noise +-0.5/+-%.1f)\n\n", SEEDS, amax);
    printf("| from \\ rate | 0.5 °C/s | 1 °C/s | 1.5 °C/s | 3 °C/s |\n| --- | --- | --- | --- "
           "| --- |\n");
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        printf("| %.0f °C |", bases[i]);
        for (size_t j = 0; j < sizeof rates / sizeof rates[0]; j++) {
            double p[2] = {bases[i], rates[j]}, least = INFINITY;
            double reach = 120 + (SLOW - bases[i]) / rates[j];
            bool none = false;
            for (int n = 0; n < 2; n++)
                for (int k = 0; k < SEEDS; k++) {
                    run(ramp, p, (int)reach + 30, noises[n], (uint64_t)(k + 1), true);
                    if (!fired || fire_at < 120)
                        none = true; /* never, or before the rise (a false alarm) */
                    else if (reach - fire_at < least)
                        least = reach - fire_at;
                }
            if (none)
                printf(" none |");
            else
                printf(" %.0f |", least);
        }
        printf("\n");
    }
    printf("\nWarm-ups that level off under the slowdown: traces that fired, of %d (from 40 and "
           "50 °C x %d seeds x 2 noises)\n\n",
           2 * SEEDS * 2, SEEDS);
    printf("| gap \\ tau |");
    for (size_t j = 0; j < sizeof taus / sizeof taus[0]; j++)
        printf(" %.0f s |", taus[j]);
    printf("\n| --- | --- | --- | --- | --- | --- |\n");
    int wfa = 0, wn = 0;
    for (size_t i = 0; i < sizeof gaps / sizeof gaps[0]; i++) {
        printf("| %.0f °C |", gaps[i]);
        for (size_t j = 0; j < sizeof taus / sizeof taus[0]; j++) {
            int bad = 0;
            for (int st = 0; st < 2; st++)
                for (int n = 0; n < 2; n++)
                    for (int k = 0; k < SEEDS; k++) {
                        double p[3] = {st ? 50 : 40, SLOW - gaps[i], taus[j]};
                        run(warm, p, 720, noises[n], (uint64_t)(k + 1), true);
                        bad += fired > 0;
                        wn++;
                    }
            wfa += bad;
            printf(" %d |", bad);
        }
        printf("\n");
    }
    printf("\n%d of %d warm-ups fired\n\n", wfa, wn);
    printf("| GPU-days (noise +-%.1f) | firings per GPU-day |\n| --- | --- |\n", amax);
    int total = 0;
    for (int k = 0; k < SEEDS; k++) {
        make_day((uint64_t)k + 1);
        run(day_trace, NULL, 86400, amax, (uint64_t)k + 1, false);
        total += fired;
    }
    printf("| %d days of jobs (warm-ups 3-15 °C under, tau 10-120 s) | %.2f |\n", SEEDS,
           (double)total / SEEDS);
    static const double levels[] = {80, 84};
    for (size_t i = 0; i < 2; i++) {
        flat_level = levels[i];
        run(flat, NULL, 86400, amax, 99 + i, false);
        printf("| 1 day steady at %.0f °C | %d |\n", levels[i], fired);
    }
    return 0;
}
