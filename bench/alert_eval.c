/* SPDX-License-Identifier: MIT */
/*
 * alert_eval: what one evaluation of the alert engine costs, on a snapshot shaped like the NVML
 * collector's for 8 GPUs (every per-GPU metric, nine throttle reasons each, the integrated
 * energy series) plus CPU and memory series, with 50 rules (matchers, relative thresholds,
 * hysteresis, `for`) and every built-in detector on at its defaults.
 *
 * Two cases: "quiet" (values that keep every rule and detector clear, as on a healthy node) and
 * "all active" (every rule true on every series it visits: 400 firing instances with rendered
 * summaries, the worst case). Each tick gets new timestamps and values, so the detectors do their
 * per-sample work (the 120-s regression window fills at 1 s per tick). Every tick is timed alone
 * (CLOCK_MONOTONIC) after a warm-up; prints the median, min and max as JSON lines for
 * bench/run.sh's external section, and a human line on stderr.
 *   alert_eval [TICKS [quiet|active|both]]   (default 5000 both; one case for callgrind)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/engine.h"
#include "core/clock.h"

#define GPUS 8
#define RULES 50
#define WARMUP 200

static const char *const reasons[] = {"gpu_idle",
                                      "applications_clocks_setting",
                                      "sw_power_cap",
                                      "hw_slowdown",
                                      "sync_boost",
                                      "sw_thermal_slowdown",
                                      "hw_thermal_slowdown",
                                      "hw_power_brake_slowdown",
                                      "display_clocks_setting"};

static void add(struct wt_batch *b, int m, const char *l, int64_t t, double v)
{
    if (wt_batch_add(b, m, l, t, v) != 0) {
        fprintf(stderr, "alert_eval: out of memory\n");
        exit(1);
    }
}

/* The snapshot at tick k (1 s apart). */
static void snapshot(struct wt_batch *b, int k, int64_t t)
{
    wt_batch_clear(b);
    for (int i = 0; i < GPUS; i++) {
        char l[WT_LABELS_LEN], x[WT_LABELS_LEN], idx[16], uuid[64];
        snprintf(idx, sizeof idx, "%d", i);
        snprintf(uuid, sizeof uuid, "GPU-5f3c1d2e-8a7b-4c6d-9e0f-%012d", i);
        (void)wt_labels(l, sizeof l, "gpu", idx, "uuid", uuid, "model", "NVIDIA H200", NULL);
        double p = 300 + 100 * sin(k / 7.0 + i), u = (p - 60) / 640;
        memcpy(x, l, sizeof x);
        (void)wt_labels_add(x, sizeof x, "pci_bus_id", "00000000:18:00.0");
        add(b, WT_M_GPU_INFO, x, t, 1);
        add(b, WT_M_GPU_UP, l, t, 1);
        add(b, WT_M_GPU_POWER_W, l, t, p);
        add(b, WT_M_GPU_ENERGY_INTEGRATED_J, l, t, 300.0 * k);
        add(b, WT_M_GPU_ENERGY_GAPS, l, t, 0);
        add(b, WT_M_GPU_ENERGY_J, l, t, 1e6 + 300.0 * k);
        add(b, WT_M_GPU_TEMP_C, l, t, 45 + i + (k % 3));
        add(b, WT_M_GPU_SLOWDOWN_TEMP_C, l, t, 87);
        add(b, WT_M_GPU_SHUTDOWN_TEMP_C, l, t, 92);
        add(b, WT_M_GPU_UTIL_RATIO, l, t, u);
        add(b, WT_M_GPU_MEM_UTIL_RATIO, l, t, 0.6 * u);
        add(b, WT_M_GPU_MEM_USED_B, l, t, 1e10 + 1e11 * u);
        add(b, WT_M_GPU_MEM_TOTAL_B, l, t, 1.5e11);
        add(b, WT_M_GPU_SM_CLOCK_HZ, l, t, (345 + 1635 * u) * 1e6);
        add(b, WT_M_GPU_MEM_CLOCK_HZ, l, t, 2619e6);
        add(b, WT_M_GPU_POWER_LIMIT_W, l, t, 700);
        add(b, WT_M_GPU_POWER_LIMIT_MIN_W, l, t, 200);
        add(b, WT_M_GPU_POWER_LIMIT_MAX_W, l, t, 700);
        add(b, WT_M_GPU_PSTATE, l, t, 0);
        add(b, WT_M_GPU_THROTTLE_REASONS, l, t, 0);
        for (size_t r = 0; r < sizeof reasons / sizeof reasons[0]; r++) {
            memcpy(x, l, sizeof x);
            (void)wt_labels_add(x, sizeof x, "reason", reasons[r]);
            add(b, WT_M_GPU_THROTTLED, x, t, 0);
        }
    }
    for (int c = 0; c < 2; c++) {
        char l[WT_LABELS_LEN], pk[8];
        snprintf(pk, sizeof pk, "%d", c);
        (void)wt_labels(l, sizeof l, "package", pk, "domain", "package", NULL);
        add(b, WT_M_CPU_ENERGY_J, l, t, 100.0 * k);
        add(b, WT_M_CPU_POWER_W, l, t, 100);
    }
    add(b, WT_M_CPU_UTIL_RATIO, "cpu=\"all\"", t, 0.3);
    add(b, WT_M_MEM_USED_RATIO, "", t, 0.4);
}

/* 50 rules over the GPU metrics: absolute and relative thresholds, matchers, hysteresis. When
 * active, each is true on every series it visits; otherwise each is clear. */
static void rules(struct wt_alerts_config *c, bool active)
{
    static const struct {
        int metric, relative_to;
        const char *match_key, *match_val;
        enum wt_cmp cmp;
        double quiet, hot; /* thresholds: never / always true */
    } kinds[] = {
        {WT_M_GPU_TEMP_C, WT_M_GPU_SLOWDOWN_TEMP_C, NULL, NULL, WT_CMP_GE, 0.95, 0.1},
        {WT_M_GPU_TEMP_C, -1, NULL, NULL, WT_CMP_GT, 85, 10},
        {WT_M_GPU_POWER_W, WT_M_GPU_POWER_LIMIT_W, NULL, NULL, WT_CMP_GT, 0.98, 0.01},
        {WT_M_GPU_POWER_W, -1, "model", "NVIDIA H200", WT_CMP_GT, 690, 1},
        {WT_M_GPU_UTIL_RATIO, -1, NULL, NULL, WT_CMP_LT, -1, 2},
        {WT_M_GPU_MEM_USED_B, WT_M_GPU_MEM_TOTAL_B, NULL, NULL, WT_CMP_GT, 0.99, 0.01},
        {WT_M_GPU_SM_CLOCK_HZ, -1, NULL, NULL, WT_CMP_LT, 1e6, 1e12},
        {WT_M_GPU_THROTTLED, -1, "reason", "hw_slowdown", WT_CMP_GT, 0.5, -1},
        {WT_M_GPU_UP, -1, NULL, NULL, WT_CMP_LT, 0.5, 2},
        {WT_M_GPU_ENERGY_GAPS, -1, NULL, NULL, WT_CMP_GT, 10, -1},
    };
    c->nrules = RULES;
    for (int i = 0; i < RULES; i++) {
        struct wt_alert_rule *r = &c->rules[i];
        const size_t k = (size_t)i % (sizeof kinds / sizeof kinds[0]);
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "Rule%02d", i);
        r->metric = kinds[k].metric;
        r->relative_to = kinds[k].relative_to;
        r->cmp = kinds[k].cmp;
        r->threshold = active ? kinds[k].hot : kinds[k].quiet;
        if (kinds[k].match_key)
            (void)wt_labels(r->match, sizeof r->match, kinds[k].match_key, kinds[k].match_val,
                            NULL);
        if (r->cmp == WT_CMP_GT || r->cmp == WT_CMP_GE) {
            r->has_clear = true;
            r->clear = r->threshold - fabs(r->threshold) * 0.05;
        }
        r->for_ns = (i % 3) * 30 * WT_NS_PER_S;
        r->severity = WT_SEV_WARNING;
        snprintf(r->summary, sizeof r->summary,
                 "GPU {{labels.gpu}} ({{labels.model}}): {{value}} vs {{threshold}}");
        (void)wt_labels(r->labels, sizeof r->labels, "team", "ml", NULL);
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t transitions;

static void count(void *ctx, const struct wt_alert *a, enum wt_alert_state from)
{
    (void)ctx, (void)a, (void)from;
    transitions++;
}

static void run(const char *name, bool active, int ticks)
{
    struct wt_alerts_config cfg;
    struct wt_alert_eval *e = NULL;
    struct wt_batch b = {0};
    wt_alerts_config_defaults(&cfg);
    rules(&cfg, active);
    if (wt_alert_eval_new(&cfg, WT_NS_PER_S, &e) != 0) {
        fprintf(stderr, "alert_eval: out of memory\n");
        exit(1);
    }
    int64_t *ns = calloc((size_t)ticks, sizeof *ns);
    int64_t t0 = wt_now_real_ns();
    transitions = 0;
    for (int k = 0; k < WARMUP + ticks; k++) {
        int64_t t = t0 + (int64_t)k * WT_NS_PER_S;
        snapshot(&b, k, t);
        struct wt_alert_input in = {.snap = &b, .now_ns = t, .now_mono = t};
        int64_t a = wt_now_mono_ns();
        wt_alert_eval_tick(e, &in, count, NULL);
        int64_t d = wt_now_mono_ns() - a;
        if (k >= WARMUP)
            ns[k - WARMUP] = d;
    }
    size_t counts[4];
    wt_alert_eval_counts(e, counts);
    qsort(ns, (size_t)ticks, sizeof *ns, cmp_i64);
    double med = ns[ticks / 2] / 1e3, mn = ns[0] / 1e3, mx = ns[ticks - 1] / 1e3;
    double p99 = ns[(size_t)(ticks * 0.99)] / 1e3;
    printf("{\"section\": \"Alerts\", \"what\": \"one evaluation, %d GPUs x %d rules + every "
           "detector, %s (%zu readings)\", \"unit\": \"us\", \"wattage\": {\"median\": %.2f, "
           "\"min\": %.2f, \"max\": %.2f, \"n\": %d}, \"peer\": null, \"peer_name\": null, "
           "\"note\": \"p99 %.2f us; %zu firing, %zu pending at the end\"}\n",
           GPUS, RULES, name, b.len, med, mn, mx, ticks, p99, counts[WT_ALERT_FIRING],
           counts[WT_ALERT_PENDING]);
    fprintf(stderr,
            "alert_eval: %s: median %.2f us, p99 %.2f us, min %.2f, max %.2f over %d ticks; "
            "%zu readings, %zu firing, %zu pending, %zu transitions\n",
            name, med, p99, mn, mx, ticks, b.len, counts[WT_ALERT_FIRING], counts[WT_ALERT_PENDING],
            transitions);
    free(ns);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

int main(int argc, char **argv)
{
    int ticks = argc > 1 ? atoi(argv[1]) : 5000;
    if (ticks < 10) {
        fprintf(stderr, "usage: alert_eval [TICKS >= 10 [quiet|active|both]]\n");
        return 2;
    }
    const char *which = argc > 2 ? argv[2] : "both";
    if (strcmp(which, "active") != 0)
        run("quiet", false, ticks);
    if (strcmp(which, "quiet") != 0)
        run("all active", true, ticks);
    return 0;
}
