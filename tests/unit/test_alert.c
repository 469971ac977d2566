/* SPDX-License-Identifier: MIT */
/*
 * The alert engine over known snapshots: the state machine (pending and `for`, hysteresis so a
 * value hovering at the threshold does not flap, resolve, series that disappear), rules with
 * matchers and relative thresholds, templates, the JSON reply, a reload; then each built-in
 * detector on a scripted GPU, and the regression math of the throttle forecast.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "alert/detect.h"
#include "alert/engine.h"
#include "alert/notify.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/yamltree.h"
#include "core/yget.h"
#include "runner.h"

#define T0 (1764439200LL * WT_NS_PER_S)
#define S(x) ((int64_t)((x)*WT_NS_PER_S))

/* ---- recording transitions ---- */

struct rec {
    struct wt_alert a;
    enum wt_alert_state from;
};
static struct rec recs[512];
static int nrec;

static void on_tr(void *ctx, const struct wt_alert *a, enum wt_alert_state from)
{
    (void)ctx;
    if (nrec < 512) {
        recs[nrec].a = *a;
        recs[nrec].from = from;
    }
    nrec++;
}

/* How many recorded transitions of alertname into state (for labels containing `with`). */
static int count(const char *name, enum wt_alert_state to, const char *with)
{
    int n = 0;
    for (int i = 0; i < nrec && i < 512; i++)
        n += strcmp(recs[i].a.name, name) == 0 && recs[i].a.state == to &&
             (!with || strstr(recs[i].a.labels, with));
    return n;
}

static const struct rec *last(void)
{
    WT_ASSERT(nrec > 0);
    return &recs[nrec - 1];
}

/* ---- config ---- */

static struct wt_alerts_config cfg;

/* Parses an `alerts` section; with quiet, the built-in detectors are off unless it turns them
 * on. */
static void load(const char *yaml, bool quiet)
{
    struct wt_ynode *root = NULL;
    struct wt_err err = {{0}};
    if (wt_yaml_parse("t.yaml", yaml, strlen(yaml), &root, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "yaml: %s", err.msg);
    if (wt_alerts_config_parse("t.yaml", wt_y_get(root, "alerts"), &cfg, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "config: %s", err.msg);
    wt_ynode_free(root);
    if (!quiet)
        return;
    if (!strstr(yaml, "throttle_forecast"))
        cfg.throttle_forecast.enabled = false;
    if (!strstr(yaml, "throttling"))
        cfg.throttling.enabled = false;
    if (!strstr(yaml, "idle_burn"))
        cfg.idle_burn.enabled = false;
    if (!strstr(yaml, "impossible"))
        cfg.impossible.enabled = false;
    if (!strstr(yaml, "stuck"))
        cfg.stuck.enabled = false;
    if (!strstr(yaml, "sibling"))
        cfg.sibling.enabled = false;
    if (!strstr(yaml, "data_gap"))
        cfg.data_gap.enabled = false;
    if (!strstr(yaml, "delivery_failing"))
        cfg.delivery_failing.enabled = false;
}

/* ---- snapshots ---- */

struct gv {
    double power, temp, util, slow, limit, max, energy;
    bool no_util;
};

static const struct gv base = {
    .power = 300, .temp = 50, .util = 0.5, .slow = 87, .limit = 700, .max = 700, .energy = 1000};

static void labels_of(int i, const char *model, char *l, size_t n)
{
    char idx[16], uuid[48];
    snprintf(idx, sizeof idx, "%d", i);
    snprintf(uuid, sizeof uuid, "GPU-test-%04d", i);
    WT_EQ_INT(wt_labels(l, n, "gpu", idx, "uuid", uuid, "model", model, NULL), 0);
}

static void put(struct wt_batch *b, int m, const char *l, int64_t t, double v)
{
    WT_EQ_INT(wt_batch_add(b, m, l, t, v), 0);
}

static void add_gpu(struct wt_batch *b, int i, const char *model, int64_t t, const struct gv *v)
{
    char l[WT_LABELS_LEN];
    labels_of(i, model, l, sizeof l);
    put(b, WT_M_GPU_UP, l, t, 1);
    put(b, WT_M_GPU_POWER_W, l, t, v->power);
    put(b, WT_M_GPU_ENERGY_INTEGRATED_J, l, t, 5);
    put(b, WT_M_GPU_ENERGY_J, l, t, v->energy);
    put(b, WT_M_GPU_TEMP_C, l, t, v->temp);
    put(b, WT_M_GPU_SLOWDOWN_TEMP_C, l, t, v->slow);
    if (!v->no_util)
        put(b, WT_M_GPU_UTIL_RATIO, l, t, v->util);
    put(b, WT_M_GPU_POWER_LIMIT_W, l, t, v->limit);
    put(b, WT_M_GPU_POWER_LIMIT_MAX_W, l, t, v->max);
}

static void add_gpu_down(struct wt_batch *b, int i, const char *model, int64_t t)
{
    char l[WT_LABELS_LEN];
    labels_of(i, model, l, sizeof l);
    put(b, WT_M_GPU_UP, l, t, 0);
}

static void add_throttled(struct wt_batch *b, int i, int64_t t, const char *reason, double v)
{
    char l[WT_LABELS_LEN];
    labels_of(i, "NVIDIA H200", l, sizeof l);
    WT_EQ_INT(wt_labels_add(l, sizeof l, "reason", reason), 0);
    put(b, WT_M_GPU_THROTTLED, l, t, v);
}

/* One tick at t over b (no collector states). */
static void tick(struct wt_alert_eval *e, const struct wt_batch *b, int64_t t)
{
    struct wt_alert_input in = {.snap = b, .now_ns = t, .now_mono = t};
    wt_alert_eval_tick(e, &in, on_tr, NULL);
}

/* A tick where GPU 0 has temperature temp and the rest is base (nGPUs). */
static void tick_temp(struct wt_alert_eval *e, struct wt_batch *b, int ngpus, int64_t t,
                      double temp)
{
    wt_batch_clear(b);
    for (int i = 0; i < ngpus; i++) {
        struct gv v = base;
        if (i == 0)
            v.temp = temp;
        add_gpu(b, i, "NVIDIA H200", t, &v);
    }
    tick(e, b, t);
}

static const char hot_rule[] =
    "alerts:\n"
    "  rules:\n"
    "    - name: GPUHot\n"
    "      metric: wattage_gpu_temperature_celsius\n"
    "      op: '>'\n"
    "      threshold: 80\n"
    "      clear_below: 75\n"
    "      for: 3s\n"
    "      severity: critical\n"
    "      summary: 'GPU {{labels.gpu}} at {{value}} C > {{threshold}}'\n"
    "      labels: {team: ml}\n";

static struct wt_alert_eval *new_eval(void)
{
    struct wt_alert_eval *e = NULL;
    WT_EQ_INT(wt_alert_eval_new(&cfg, WT_NS_PER_S, &e), 0);
    nrec = 0;
    return e;
}

/* ---- the state machine ---- */

WT_TEST(pending_then_firing_after_for)
{
    load(hot_rule, true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    tick_temp(e, &b, 2, T0, 79);
    WT_EQ_INT(nrec, 0);
    tick_temp(e, &b, 2, T0 + S(1), 81);
    WT_EQ_INT(nrec, 1);
    WT_EQ_INT(last()->a.state, WT_ALERT_PENDING);
    WT_EQ_INT(last()->from, WT_ALERT_INACTIVE);
    WT_EQ_STR(last()->a.name, "GPUHot");
    WT_EQ_STR(last()->a.labels, "gpu=\"0\",uuid=\"GPU-test-0000\",model=\"NVIDIA H200\","
                                "team=\"ml\"");
    WT_EQ_INT(last()->a.active_since_ns, T0 + S(1));
    WT_EQ_INT(last()->a.severity, WT_SEV_CRITICAL);
    WT_EQ_INT(last()->a.gpu, 0);
    tick_temp(e, &b, 2, T0 + S(2), 82);
    tick_temp(e, &b, 2, T0 + S(3), 82);
    WT_EQ_INT(nrec, 1); /* 2 s of 3 */
    tick_temp(e, &b, 2, T0 + S(4), 83);
    WT_EQ_INT(nrec, 2);
    WT_EQ_INT(last()->a.state, WT_ALERT_FIRING);
    WT_EQ_INT(last()->from, WT_ALERT_PENDING);
    WT_EQ_INT(last()->a.fired_at_ns, T0 + S(4));
    WT_EQ_STR(last()->a.summary, "GPU 0 at 83 C > 80");
    WT_NEAR(last()->a.value, 83, 1e-9);
    size_t c[4];
    wt_alert_eval_counts(e, c);
    WT_EQ_INT(c[WT_ALERT_FIRING], 1);
    WT_EQ_INT(c[WT_ALERT_PENDING], 0);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(hovering_at_the_threshold_does_not_flap)
{
    load(hot_rule, true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    int64_t t = T0;
    for (int i = 0; i < 5; i++, t += S(1))
        tick_temp(e, &b, 1, t, 81);
    WT_EQ_INT(count("GPUHot", WT_ALERT_FIRING, NULL), 1);
    /* 79 / 81 / 80 / 76 / 81...: inside the band [75, 80] the alert holds. */
    static const double hover[] = {79, 81, 80, 76, 81, 79.5, 80.5, 75, 78, 81, 77};
    for (size_t i = 0; i < sizeof hover / sizeof hover[0]; i++, t += S(1))
        tick_temp(e, &b, 1, t, hover[i]);
    WT_EQ_INT(nrec, 2); /* pending, firing: nothing since */
    tick_temp(e, &b, 1, t, 74.9);
    WT_EQ_INT(nrec, 3);
    WT_EQ_INT(last()->a.state, WT_ALERT_RESOLVED);
    WT_EQ_INT(last()->from, WT_ALERT_FIRING);
    WT_EQ_INT(last()->a.resolved_at_ns, t);
    /* Hovering below the threshold after that never starts it again. */
    for (int i = 0; i < 10; i++)
        tick_temp(e, &b, 1, t += S(1), i % 2 ? 79.9 : 76);
    WT_EQ_INT(nrec, 3);
    /* The resolved one is listed after the active ones. */
    struct wt_alert l[4];
    WT_EQ_INT(wt_alert_eval_list(e, l, 4), 1);
    WT_EQ_INT(l[0].state, WT_ALERT_RESOLVED);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(without_clear_a_rule_clears_at_the_threshold)
{
    load("alerts:\n  rules:\n    - name: Hot\n      metric: wattage_gpu_temperature_celsius\n"
         "      op: '>'\n      threshold: 80\n",
         true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    tick_temp(e, &b, 1, T0, 81);
    /* for 0: firing at once, no pending step */
    WT_EQ_INT(nrec, 1);
    WT_EQ_INT(last()->a.state, WT_ALERT_FIRING);
    WT_EQ_INT(last()->from, WT_ALERT_INACTIVE);
    tick_temp(e, &b, 1, T0 + S(1), 80);
    WT_EQ_INT(last()->a.state, WT_ALERT_RESOLVED);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(pending_that_clears_never_fires)
{
    load(hot_rule, true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    tick_temp(e, &b, 1, T0, 81);
    tick_temp(e, &b, 1, T0 + S(1), 79); /* in the band: still pending */
    WT_EQ_INT(nrec, 1);
    tick_temp(e, &b, 1, T0 + S(2), 70);
    WT_EQ_INT(nrec, 2);
    WT_EQ_INT(last()->a.state, WT_ALERT_INACTIVE);
    WT_EQ_INT(last()->from, WT_ALERT_PENDING);
    tick_temp(e, &b, 1, T0 + S(10), 70);
    WT_EQ_INT(count("GPUHot", WT_ALERT_FIRING, NULL), 0);
    /* Pending again: `for` counts from the new start. */
    tick_temp(e, &b, 1, T0 + S(11), 90);
    tick_temp(e, &b, 1, T0 + S(13), 90);
    WT_EQ_INT(count("GPUHot", WT_ALERT_FIRING, NULL), 0);
    tick_temp(e, &b, 1, T0 + S(14), 90);
    WT_EQ_INT(count("GPUHot", WT_ALERT_FIRING, NULL), 1);
    struct wt_alert l[4];
    WT_EQ_INT(wt_alert_eval_list(e, l, 4), 1); /* a pending that cleared is not "resolved" */
    WT_EQ_INT(l[0].state, WT_ALERT_FIRING);
    WT_EQ_INT(l[0].active_since_ns, T0 + S(11));
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

/* The daemon's transition callback as it logs: wt_alert_log_transition, then recorded. */
static void on_tr_logged(void *ctx, const struct wt_alert *a, enum wt_alert_state from)
{
    wt_alert_log_transition(a, from);
    on_tr(ctx, a, from);
}

static const struct wt_alert_tcount *tcount(struct wt_alert_eval *e, const char *name)
{
    static struct wt_alert_tcount tc[8];
    size_t n = wt_alert_eval_transitions(e, tc, 8);
    for (size_t i = 0; i < n && i < 8; i++)
        if (strcmp(tc[i].name, name) == 0)
            return &tc[i];
    return NULL;
}

/* A tick where GPU 0 has temperature temp, the transitions logged. */
static void tick_logged(struct wt_alert_eval *e, struct wt_batch *b, int64_t t, double temp)
{
    wt_batch_clear(b);
    struct gv v = base;
    v.temp = temp;
    add_gpu(b, 0, "NVIDIA H200", t, &v);
    struct wt_alert_input in = {.snap = b, .now_ns = t, .now_mono = t};
    wt_alert_eval_tick(e, &in, on_tr_logged, NULL);
}

static int occurrences(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

WT_TEST(pending_and_cleared_are_counted_and_logged_at_debug_only)
{
    /* Issue 48 item 7: a load swinging around a threshold every 2 s made 252 of 284 info lines
     * "alert: pending" / "cleared before firing". At info those are counted, not logged; firing
     * (warn) and resolved (info) still are. */
    load(hot_rule, true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    char logp[512];
    snprintf(logp, sizeof logp, "%s/stderr", wt_test_dir());
    enum wt_log_level saved_level = wt_log_get_level();
    wt_log_set_level(WT_LOG_INFO);
    fflush(stderr);
    int saved = dup(2);
    WT_ASSERT(freopen(logp, "w", stderr) != NULL);
    int64_t t = T0;
    for (int i = 0; i < 10; i++) {
        tick_logged(e, &b, t += S(1), 81); /* pending */
        tick_logged(e, &b, t += S(1), 70); /* cleared before its 3 s */
    }
    for (int i = 0; i < 5; i++)
        tick_logged(e, &b, t += S(1), 90); /* pending, then firing after 3 s */
    tick_logged(e, &b, t += S(1), 70);     /* resolved */
    wt_log_set_level(WT_LOG_DEBUG);
    tick_logged(e, &b, t += S(1), 81);
    tick_logged(e, &b, t += S(1), 70);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    wt_log_set_level(saved_level);
    char *log = wt_test_read(logp, NULL);
    WT_ASSERT(log != NULL);
    /* at info: firing and resolved, once each; the 11 pending and 10 cleared not at all */
    WT_EQ_INT(occurrences(log, "warn  alert: firing alertname=GPUHot"), 1);
    WT_EQ_INT(occurrences(log, "info  alert: resolved alertname=GPUHot"), 1);
    WT_EQ_INT(occurrences(log, "info  alert: pending"), 0);
    WT_EQ_INT(occurrences(log, "info  alert: cleared"), 0);
    /* at debug: the last pending and its clearing, with the alert's labels and value */
    WT_EQ_INT(
        occurrences(log, "alert: pending alertname=GPUHot severity=critical labels={gpu=\"0\""), 1);
    WT_EQ_INT(occurrences(log, "alert: cleared before firing alertname=GPUHot"), 1);
    WT_EQ_INT(occurrences(log, "debug alert: "), 2);
    WT_EQ_INT(occurrences(log, " alert: "), 4);
    free(log);
    /* every transition counted, whatever the log level */
    const struct wt_alert_tcount *tc = tcount(e, "GPUHot");
    WT_ASSERT(tc != NULL);
    WT_EQ_INT(tc->n[WT_ALERT_TO_PENDING], 12);
    WT_EQ_INT(tc->n[WT_ALERT_TO_CLEARED], 11);
    WT_EQ_INT(tc->n[WT_ALERT_TO_FIRING], 1);
    WT_EQ_INT(tc->n[WT_ALERT_TO_RESOLVED], 1);
    WT_EQ_INT(nrec, 25);
    WT_EQ_INT(wt_alert_eval_transitions(e, NULL, 0), 1);
    WT_EQ_STR(wt_alert_to_name(WT_ALERT_TO_CLEARED), "cleared");
    WT_EQ_STR(wt_alert_to_name(WT_ALERT_TO_PENDING), "pending");
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(transitions_are_counted_without_a_callback_and_through_a_reload)
{
    load(hot_rule, true);
    cfg.rules[0].for_ns = 0;
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    wt_batch_clear(&b);
    struct gv v = base;
    v.temp = 90;
    add_gpu(&b, 0, "NVIDIA H200", T0, &v);
    add_gpu(&b, 1, "NVIDIA H200", T0, &v);
    struct wt_alert_input in = {.snap = &b, .now_ns = T0, .now_mono = T0};
    wt_alert_eval_tick(e, &in, NULL, NULL); /* two instances fire at once, no pending */
    const struct wt_alert_tcount *tc = tcount(e, "GPUHot");
    WT_ASSERT(tc != NULL);
    WT_EQ_INT(tc->n[WT_ALERT_TO_FIRING], 2);
    WT_EQ_INT(tc->n[WT_ALERT_TO_PENDING], 0);
    /* The rule goes away: both resolve, and the counts stay after the reload. */
    load("alerts:\n  rules: []\n", true);
    WT_EQ_INT(wt_alert_eval_reconfigure(e, &cfg, WT_NS_PER_S, T0 + S(1), NULL, NULL), 0);
    tc = tcount(e, "GPUHot");
    WT_ASSERT(tc != NULL);
    WT_EQ_INT(tc->n[WT_ALERT_TO_RESOLVED], 2);
    WT_EQ_INT(tc->n[WT_ALERT_TO_FIRING], 2);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(a_series_that_disappears_resolves_after_three_intervals)
{
    load(hot_rule, true);
    cfg.rules[0].for_ns = 0;
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    tick_temp(e, &b, 2, T0, 90);
    WT_EQ_INT(count("GPUHot", WT_ALERT_FIRING, NULL), 1);
    /* GPU 0 gone from the snapshot: only GPU 1 remains */
    wt_batch_clear(&b);
    struct gv v = base;
    add_gpu(&b, 1, "NVIDIA H200", T0 + S(1), &v);
    tick(e, &b, T0 + S(1));
    tick(e, &b, T0 + S(3));
    WT_EQ_INT(count("GPUHot", WT_ALERT_RESOLVED, NULL), 0);
    tick(e, &b, T0 + S(3.5));
    WT_EQ_INT(count("GPUHot", WT_ALERT_RESOLVED, NULL), 1);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(matchers_relative_thresholds_and_one_instance_per_series)
{
    load("alerts:\n  rules:\n"
         "    - name: NearSlowdown\n      metric: wattage_gpu_temperature_celsius\n"
         "      op: '>='\n      threshold: 0.95\n"
         "      relative_to: wattage_gpu_slowdown_temperature_celsius\n"
         "      summary: '{{alertname}} {{ $labels.gpu }} {{ $value }}/{{threshold}}'\n"
         "    - name: Gpu1Power\n      metric: wattage_gpu_power_watts\n"
         "      match: {gpu: '1'}\n      op: '>'\n      threshold: 100\n",
         true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    for (int i = 0; i < 4; i++) {
        struct gv v = base;
        v.slow = i == 3 ? 90 : 87; /* 0.95 x 87 = 82.65; 0.95 x 90 = 85.5 */
        v.temp = i == 0 ? 82 : 83;
        add_gpu(&b, i, "NVIDIA H200", T0, &v);
    }
    tick(e, &b, T0);
    WT_EQ_INT(count("NearSlowdown", WT_ALERT_FIRING, NULL), 2);
    WT_EQ_INT(count("NearSlowdown", WT_ALERT_FIRING, "gpu=\"1\""), 1);
    WT_EQ_INT(count("NearSlowdown", WT_ALERT_FIRING, "gpu=\"2\""), 1);
    WT_EQ_INT(count("Gpu1Power", WT_ALERT_FIRING, NULL), 1);
    WT_EQ_INT(count("Gpu1Power", WT_ALERT_FIRING, "gpu=\"1\""), 1);
    for (int i = 0; i < nrec; i++)
        if (strstr(recs[i].a.labels, "gpu=\"1\"") && strcmp(recs[i].a.name, "NearSlowdown") == 0)
            WT_EQ_STR(recs[i].a.summary, "NearSlowdown 1 83/82.65");
    /* Same series again: no new instance, no transition. */
    tick(e, &b, T0 + S(1));
    WT_EQ_INT(nrec, 3);
    /* Distinct fingerprints per series, stable across ticks. */
    struct wt_alert l[8];
    WT_EQ_INT(wt_alert_eval_list(e, l, 8), 3);
    WT_ASSERT(l[0].fingerprint != l[1].fingerprint && l[1].fingerprint != l[2].fingerprint);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(the_json_reply)
{
    load(hot_rule, true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    tick_temp(e, &b, 2, T0, 85);
    struct wt_alert l[4];
    size_t n = wt_alert_eval_list(e, l, 4);
    char *j = wt_alert_json(l, n);
    WT_ASSERT(j);
    WT_CONTAINS(j, "\"alertname\":\"GPUHot\"");
    WT_CONTAINS(j, "\"state\":\"pending\"");
    WT_CONTAINS(j, "\"severity\":\"critical\"");
    WT_CONTAINS(j, "\"labels\":{\"gpu\":\"0\",\"uuid\":\"GPU-test-0000\",\"model\":\"NVIDIA "
                   "H200\",\"team\":\"ml\"}");
    WT_CONTAINS(j, "\"active_since\":\"2025-11-29T18:00:00.000Z\"");
    WT_CONTAINS(j, "\"firing\":0");
    WT_CONTAINS(j, "\"pending\":1");
    WT_ASSERT(!strstr(j, "fired_at"));
    free(j);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(a_reload_keeps_what_stays_and_resolves_what_goes)
{
    load(hot_rule, true);
    cfg.rules[0].for_ns = 0;
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    tick_temp(e, &b, 1, T0, 90);
    WT_EQ_INT(nrec, 1);
    /* The same rule with another threshold: the instance stays firing, no transition. */
    struct wt_alerts_config next = cfg;
    next.rules[0].threshold = 85;
    WT_EQ_INT(wt_alert_eval_reconfigure(e, &next, WT_NS_PER_S, T0 + S(1), on_tr, NULL), 0);
    tick_temp(e, &b, 1, T0 + S(1), 90);
    WT_EQ_INT(nrec, 1);
    /* The rule removed: it resolves. */
    next.nrules = 0;
    WT_EQ_INT(wt_alert_eval_reconfigure(e, &next, WT_NS_PER_S, T0 + S(2), on_tr, NULL), 0);
    WT_EQ_INT(nrec, 2);
    WT_EQ_INT(last()->a.state, WT_ALERT_RESOLVED);
    tick_temp(e, &b, 1, T0 + S(3), 90);
    WT_EQ_INT(nrec, 2);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(disabled_alerts_do_nothing)
{
    load("alerts:\n  enabled: false\n  rules:\n    - name: Hot\n"
         "      metric: wattage_gpu_temperature_celsius\n      op: '>'\n      threshold: 1\n",
         false);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    for (int i = 0; i < 5; i++)
        tick_temp(e, &b, 8, T0 + S(i), 200);
    WT_EQ_INT(nrec, 0);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

/* ---- templates ---- */

WT_TEST(templates_render_and_check)
{
    char out[128], why[160];
    wt_alert_render("{{alertname}}: GPU {{labels.gpu}} ({{ $labels.model }}) {{value}} > "
                    "{{threshold}}{{labels.nope}}!",
                    "Hot", "gpu=\"3\",model=\"NVIDIA H200\"", 81.25, 80, out, sizeof out);
    WT_EQ_STR(out, "Hot: GPU 3 (NVIDIA H200) 81.25 > 80!");
    wt_alert_render("{{value}}", "x", "", 1.0 / 3, 0, out, 5);
    WT_EQ_STR(out, "0.33");
    WT_EQ_INT(wt_alert_template_check("{{ value }} {{$threshold}}", why, sizeof why), 0);
    WT_EQ_INT(wt_alert_template_check("{{ labels.a-b }}", why, sizeof why), -EINVAL);
    WT_EQ_INT(wt_alert_template_check("a {{value", why, sizeof why), -EINVAL);
    WT_CONTAINS(why, "unclosed");
    WT_EQ_INT(wt_alert_template_check("{{humanize $value}}", why, sizeof why), -EINVAL);
    WT_CONTAINS(why, "unknown placeholder {{humanize $value}}");
    WT_ASSERT(wt_alert_fingerprint("a", "x=\"1\"") != wt_alert_fingerprint("a", "x=\"2\""));
    WT_ASSERT(wt_alert_fingerprint("a", "") == wt_alert_fingerprint("a", ""));
}

/* ---- the regression math ---- */

WT_TEST(least_squares_and_time_to_threshold)
{
    double x[50], y[50], slope, icpt;
    for (int i = 0; i < 50; i++) {
        x[i] = 1.7e9 + i * 0.5; /* unix seconds: large origin, centred internally */
        y[i] = 40 + 0.25 * (x[i] - x[0]);
    }
    WT_EQ_INT(wt_detect_lsq(x, y, 50, &slope, &icpt), 0);
    WT_NEAR(slope, 0.25, 1e-9);
    WT_NEAR(icpt, 40, 1e-7);
    /* Noise that averages out: +-1 alternating. */
    for (int i = 0; i < 50; i++)
        y[i] = 60 + 0.1 * (x[i] - x[0]) + (i % 2 ? 1 : -1);
    WT_EQ_INT(wt_detect_lsq(x, y, 50, &slope, &icpt), 0);
    WT_NEAR(slope, 0.1, 0.01);
    double same[3] = {5, 5, 5};
    WT_EQ_INT(wt_detect_lsq(same, y, 3, &slope, &icpt), -EINVAL);
    WT_EQ_INT(wt_detect_lsq(x, y, 1, &slope, &icpt), -EINVAL);
    WT_NEAR(wt_detect_time_to(80, 0.5, 87), 14, 1e-9);
    WT_NEAR(wt_detect_time_to(87, 0.5, 87), 0, 0);
    WT_NEAR(wt_detect_time_to(90, -1, 87), 0, 0);
    WT_ASSERT(isinf(wt_detect_time_to(80, 0, 87)));
    WT_ASSERT(isinf(wt_detect_time_to(80, -0.1, 87)));
    double m[] = {5, 1, 4, 2, 3};
    WT_NEAR(wt_detect_median(m, 5), 3, 0);
    double m2[] = {4, 1, 3, 2};
    WT_NEAR(wt_detect_median(m2, 4), 2.5, 0);
}

/* ---- the detectors ---- */

WT_TEST(throttle_forecast_fires_before_the_slowdown_and_says_how_long)
{
    load("alerts:\n  detectors:\n    throttle_forecast: {window: 20s, lead: 60s}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    /* GPU 0 heats 0.5 C/s from 40 C (slowdown 87: reached at t = 94 s); GPU 1 stays at 50. */
    int64_t fired = 0;
    double left_at_fire = 0;
    for (int s = 0; s <= 100 && !fired; s++) {
        tick_temp(e, &b, 2, T0 + S(s), 40 + 0.5 * s);
        if (count("GPUThrottleForecast", WT_ALERT_FIRING, NULL)) {
            fired = T0 + S(s);
            left_at_fire = last()->a.value;
            WT_CONTAINS(last()->a.labels, "gpu=\"0\"");
            WT_CONTAINS(last()->a.summary, "reaches its slowdown temperature 87 °C in");
        }
    }
    WT_ASSERT(fired);
    double t_fire = (double)(fired - T0) / WT_NS_PER_S;
    /* Fires as soon as less than the lead is left (87 - 60 x 0.5 = 57 C at t = 34 s) and never
     * before the window holds half its span. */
    WT_NEAR(t_fire, 35, 1.01);
    WT_NEAR(left_at_fire, 94 - t_fire, 0.5);
    WT_ASSERT(94 - t_fire >= 30);
    WT_EQ_INT(count("GPUThrottleForecast", WT_ALERT_FIRING, "gpu=\"1\""), 0);
    /* Cooling down: it resolves once well clear (more than 1.5 x lead left, or falling). */
    int64_t t = fired;
    for (int s = 1; s <= 40; s++)
        tick_temp(e, &b, 2, t + S(s), 57 - 0.5 * s);
    WT_EQ_INT(count("GPUThrottleForecast", WT_ALERT_RESOLVED, NULL), 1);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(throttle_forecast_stays_quiet_for_a_steady_or_noisy_gpu)
{
    load("alerts:\n  detectors:\n    throttle_forecast: {window: 20s, lead: 60s}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    for (int s = 0; s <= 120; s++)
        tick_temp(e, &b, 1, T0 + S(s), 70 + (s % 3) - 1); /* 69..71, no trend */
    WT_EQ_INT(nrec, 0);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

/*
 * A job starts: the GPU warms from 50 C towards a level with time constant tau (slowdown 87).
 * Returns the seconds after the start at which the forecast first fired, or -1 when it never did.
 * The noise is a fixed +-0.3 C pattern, so the test is the same every run.
 */
static double warm_up(double level, double tau)
{
    load("alerts:\n  detectors:\n    throttle_forecast: {window: 2m, lead: 60s}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    static const double noise[] = {0.3, -0.1, -0.3, 0.2, 0, -0.2, 0.1};
    double fired = -1;
    nrec = 0;
    for (int s = 0; s <= 480 && fired < 0; s++) {
        double temp = level - (level - 50) * exp(-s / tau) + noise[s % 7];
        tick_temp(e, &b, 2, T0 + S(s), temp);
        if (count("GPUThrottleForecast", WT_ALERT_FIRING, NULL))
            fired = s;
    }
    wt_batch_free(&b);
    wt_alert_eval_free(e);
    return fired;
}

WT_TEST(throttle_forecast_is_quiet_for_a_warm_up_that_levels_off_below_the_threshold)
{
    /* Levels 75, 80 and 84 C: a straight line through the rise would forecast a throttle. */
    WT_EQ_INT((int)warm_up(75, 30), -1);
    WT_EQ_INT((int)warm_up(80, 45), -1);
    WT_EQ_INT((int)warm_up(84, 60), -1);
    /* Heading above the threshold, it still fires, and well before: 90 C with tau 30 s reaches
     * 87 C at 78 s; 95 C with tau 60 s at 104 s. */
    double f = warm_up(90, 30);
    WT_ASSERT(f >= 0 && 30 * log(40.0 / 3) - f >= 15);
    f = warm_up(95, 60);
    WT_ASSERT(f >= 0 && 60 * log(45.0 / 8) - f >= 30);
}

/* ---- the throttle forecast at its defaults (windows 10 s, 30 s, 2 min) ---- */

/* A fixed uniform noise in [-1, 1): the same every run. */
static double noise_at(uint64_t *st)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*st >> 11) / 4503599627370496.0 - 1;
}

typedef double (*temp_fn)(double s, const double *p);

/*
 * A GPU idle for 120 s, then temp(s - 120, p) for `secs` more seconds, plus noise +-a, rounded to
 * whole degrees as NVML reports them (slowdown 87 C), at the default settings. Returns the
 * seconds after the idle part at which the forecast first fired, or -1.
 */
static double forecast_run(temp_fn f, const double *p, double idle, int secs, double a,
                           uint64_t seed)
{
    load("alerts:\n  detectors:\n    throttle_forecast: true\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    double fired = -1;
    nrec = 0;
    for (int s = 0; s <= 120 + secs && fired < 0; s++) {
        double temp = s < 120 ? idle : f(s - 120, p);
        tick_temp(e, &b, 1, T0 + S(s), round(temp + a * noise_at(&seed)));
        if (count("GPUThrottleForecast", WT_ALERT_FIRING, NULL))
            fired = s - 120;
    }
    wt_batch_free(&b);
    wt_alert_eval_free(e);
    return fired;
}

static double linear(double s, const double *p)
{
    return p[0] + p[1] * s;
}

static double approach(double s, const double *p)
{
    return p[1] - (p[1] - p[0]) * exp(-s / p[2]);
}

WT_TEST(throttle_forecast_warns_15_s_ahead_of_a_sudden_rise)
{
    /* 40 C, then 1.5 C/s: 87 C after 31.3 s. One 2-min line needs a minute of the rise to see it
     * (it warned 2-6 s ahead); the 10-s window sees it after a few seconds. */
    for (uint64_t seed = 1; seed <= 4; seed++) {
        double p[2] = {40, 1.5};
        double f = forecast_run(linear, p, 40, 60, seed > 2 ? 0.5 : 0, seed);
        WT_ASSERT(f >= 0);
        WT_ASSERT(47 / 1.5 - f >= 15);
    }
    WT_CONTAINS(last()->a.summary, "reaches its slowdown temperature 87 °C in");
}

WT_TEST(throttle_forecast_is_quiet_for_a_warm_up_after_idle)
{
    /* A job starts on an idle GPU: from 50 C towards 75 C with tau 30 s (the straight line
     * through the first seconds of the rise heads for 87 C within a minute), and from 40 C to 10
     * and 3 C under the slowdown more slowly, with noise. */
    static const double ups[][3] = {{50, 75, 30}, {40, 77, 60}, {50, 72, 20}, {40, 84, 120}};
    for (size_t i = 0; i < sizeof ups / sizeof ups[0]; i++)
        for (uint64_t seed = 1; seed <= 3; seed++)
            WT_EQ_INT((int)forecast_run(approach, ups[i], ups[i][0], 600, 0.5 * (double)seed, seed),
                      -1);
}

WT_TEST(throttle_forecast_is_quiet_for_noise_alone)
{
    /* An hour at 70 and at 80 C with +-1 C of noise (readings 69..71, 79..81). */
    static const double at[][3] = {{70, 70, 1}, {80, 80, 1}};
    for (size_t i = 0; i < 2; i++)
        WT_EQ_INT((int)forecast_run(approach, at[i], at[i][0], 3600, 1, 7 + i), -1);
}

WT_TEST(throttle_forecast_is_quiet_at_84_c_with_noise)
{
    /* Six hours at 84 C, 3 C under the slowdown, with +-1 C of noise in whole degrees: ten
     * readings that happen to climb are not a rise (the 10-s window warned 33 times a day). */
    static const double at[3] = {84, 84, 1};
    for (uint64_t seed = 1; seed <= 2; seed++)
        WT_EQ_INT((int)forecast_run(approach, at, 84, 6 * 3600, 1, 40 + seed), -1);
}

WT_TEST(t_quantiles)
{
    WT_NEAR(wt_detect_t_quantile(0.95, 0), 1.645, 0.002);
    WT_NEAR(wt_detect_t_quantile(0.975, INFINITY), 1.960, 0.002);
    WT_NEAR(wt_detect_t_quantile(0.95, 8), 1.860, 0.01);
    WT_NEAR(wt_detect_t_quantile(0.975, 3), 3.182, 0.05);
    WT_NEAR(wt_detect_t_quantile(0.99, 28), 2.467, 0.01);
    WT_NEAR(wt_detect_t_quantile(0.05, 8), -1.860, 0.01);
}

/* The error a bad throttle_forecast setting gets. */
static void forecast_err(const char *settings, const char *want)
{
    char yaml[256];
    struct wt_ynode *root = NULL;
    struct wt_err err = {{0}};
    struct wt_alerts_config c;
    snprintf(yaml, sizeof yaml, "alerts:\n  detectors:\n    throttle_forecast:\n%s", settings);
    WT_EQ_INT(wt_yaml_parse("t.yaml", yaml, strlen(yaml), &root, &err), 0);
    WT_EQ_INT(wt_alerts_config_parse("t.yaml", wt_y_get(root, "alerts"), &c, &err), -EINVAL);
    WT_EQ_STR(err.msg, want);
    wt_ynode_free(root);
}

WT_TEST(throttle_forecast_settings)
{
    load("alerts: {}\n", false);
    WT_EQ_INT(cfg.throttle_forecast.nwindows, 3);
    WT_EQ_INT(cfg.throttle_forecast.windows_ns[0], S(10));
    WT_EQ_INT(cfg.throttle_forecast.windows_ns[2], S(120));
    WT_NEAR(cfg.throttle_forecast.confidence, 0.95, 0);
    load("alerts:\n  detectors:\n    throttle_forecast:\n      windows: [5s, 1m]\n"
         "      confidence: 0.99\n",
         false);
    WT_EQ_INT(cfg.throttle_forecast.nwindows, 2);
    WT_EQ_INT(cfg.throttle_forecast.windows_ns[1], S(60));
    WT_EQ_INT(cfg.throttle_forecast.window_ns, S(60));
    WT_NEAR(cfg.throttle_forecast.confidence, 0.99, 0);
    load("alerts:\n  detectors:\n    throttle_forecast: {window: 20s}\n", false);
    WT_EQ_INT(cfg.throttle_forecast.nwindows, 1);
    WT_EQ_INT(cfg.throttle_forecast.windows_ns[0], S(20));
    forecast_err("      windows: [30s, 10s]\n",
                 "t.yaml:4: alerts.detectors.throttle_forecast.windows[1]: expected windows from "
                 "the shortest to the longest");
    forecast_err("      windows: [10s, soon]\n",
                 "t.yaml:4: alerts.detectors.throttle_forecast.windows[1]: expected a duration "
                 "from 1s to 1h such as 30s");
    forecast_err("      windows: [500ms]\n",
                 "t.yaml:4: alerts.detectors.throttle_forecast.windows[0]: expected a duration "
                 "from 1s to 1h such as 30s");
    forecast_err("      windows: [1s, 2s, 3s, 4s, 5s]\n",
                 "t.yaml:4: alerts.detectors.throttle_forecast.windows: expected a list of 1 to "
                 "4 durations such as [10s, 30s, 2m]");
    forecast_err("      windows: [10s]\n      window: 10s\n",
                 "t.yaml:5: alerts.detectors.throttle_forecast.windows: windows and window "
                 "together: window is one of the windows");
    forecast_err("      confidence: 1\n",
                 "t.yaml:4: alerts.detectors.throttle_forecast.confidence: expected a number "
                 "from 0.5 to 0.9999 (got \"1\")");
}

WT_TEST(plateau_of_a_slowing_rise)
{
    double x[60], y[60], level;
    for (int i = 0; i < 60; i++) {
        x[i] = i * 2;
        y[i] = 80 - 30 * exp(-x[i] / 40);
    }
    WT_EQ_INT(wt_detect_plateau(x, y, 60, &level), 0);
    WT_NEAR(level, 80, 1.5);
    for (int i = 0; i < 60; i++)
        y[i] = 40 + 0.3 * x[i]; /* a straight line: no level to speak of */
    WT_EQ_INT(wt_detect_plateau(x, y, 60, &level), -ERANGE);
    for (int i = 0; i < 60; i++)
        y[i] = 40 + 0.002 * x[i] * x[i]; /* accelerating */
    WT_EQ_INT(wt_detect_plateau(x, y, 60, &level), -ERANGE);
    WT_EQ_INT(wt_detect_plateau(x, y, 5, &level), -EINVAL);
}

/* A whole-degree reading of a GPU heating at 1 °C/s, polled every 0.2 s over a 4-s window whose
 * readings from gap_at to gap_at + gap are missing (polls late on a loaded machine); its samples
 * in x, y, how many returned. */
static size_t heating_with_gap(double end, double gap_at, double gap, double (*f)(double),
                               double *x, double *y)
{
    size_t n = 0;
    for (int i = 0; i <= 20; i++) {
        double t = end - 4 + 0.2 * i;
        if (t > end - 4 + gap_at && t < end - 4 + gap_at + gap)
            continue;
        x[n] = t;
        y[n++] = (double)lround(f(t));
    }
    return n;
}
static double rising_line(double t)
{
    return 48 + t;
}
static double levelling_off(double t)
{
    return 80 - 12 * exp(-(t - 30) / 2);
}

WT_TEST(plateau_is_not_read_into_a_straight_rise_with_missed_polls)
{
    /* Before the thirds' steps took their mean times, a gap of a second made about a third of
     * these windows "level off" near 80 °C, and the throttle forecast resolved and fired again
     * on its way to 87 °C (issue 48: test_alerts on a loaded machine). */
    static const double gaps[] = {0.3, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0};
    double x[21], y[21], level;
    for (int e = 0; e < 100; e++)
        for (int a = 0; a < 40; a++)
            for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
                size_t n = heating_with_gap(30 + e * 0.03, a * 0.1, gaps[g], rising_line, x, y);
                if (wt_detect_plateau(x, y, n, &level) == 0)
                    wt_test_fail(__FILE__, __LINE__,
                                 "a level %.1f °C in a straight rise (window to %.2f s, a gap of "
                                 "%.1f s from %.1f s)",
                                 level, 30 + e * 0.03, gaps[g], a * 0.1);
            }
    /* and a rise that does level off is still seen through most such gaps, near its level */
    int seen = 0, near = 0;
    for (int a = 0; a < 40; a += 2)
        for (size_t g = 0; g < 4; g++) {
            size_t n = heating_with_gap(34, a * 0.1, g ? gaps[g + 1] : 0, levelling_off, x, y);
            if (wt_detect_plateau(x, y, n, &level) == 0) {
                seen++;
                near += fabs(level - 80) < 3;
            }
        }
    WT_ASSERT(seen >= 60 && near == seen);
}

WT_TEST(throttling_fires_after_for_and_names_the_reason)
{
    load("alerts:\n  detectors:\n    throttling: {for: 5s}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    for (int s = 0; s <= 8; s++) {
        wt_batch_clear(&b);
        struct gv v = base;
        add_gpu(&b, 0, "NVIDIA H200", T0 + S(s), &v);
        add_throttled(&b, 0, T0 + S(s), "sw_power_cap", 1); /* normal at the limit: ignored */
        add_throttled(&b, 0, T0 + S(s), "hw_thermal_slowdown", s >= 2 ? 1 : 0);
        add_throttled(&b, 0, T0 + S(s), "sw_thermal_slowdown", 0);
        tick(e, &b, T0 + S(s));
        if (s == 6)
            WT_EQ_INT(count("GPUThrottling", WT_ALERT_FIRING, NULL), 0);
    }
    WT_EQ_INT(count("GPUThrottling", WT_ALERT_FIRING, NULL), 1);
    WT_CONTAINS(last()->a.labels, "reason=\"hw_thermal_slowdown\"");
    WT_CONTAINS(last()->a.summary, "throttled by hw_thermal_slowdown");
    WT_EQ_INT(last()->a.severity, WT_SEV_CRITICAL);
    WT_EQ_INT(count("GPUThrottling", WT_ALERT_PENDING, "sw_power_cap"), 0);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

/* An instance is one label string, told apart to the last byte and kept from tick to tick
 * (issue 49: the index hashes labels eight bytes at a time): four series whose labels differ in
 * one byte mid-word, in the tail, or by a pair more fire four alerts, each pending once; two
 * GPUs throttled fire two. */
WT_TEST(an_instance_is_one_label_string_to_the_last_byte)
{
    load(hot_rule, true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    char l[4][WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(l[0], sizeof l[0], "gpu", "0", "uuid", "GPU-0123456789abcdef-0123", "model",
                        "NVIDIA H200", NULL),
              0);
    snprintf(l[1], sizeof l[1], "%s", l[0]);
    l[1][13] ^= 1; /* inside the second word */
    snprintf(l[2], sizeof l[2], "%s", l[0]);
    l[2][strlen(l[2]) - 2] ^= 1; /* in the tail */
    snprintf(l[3], sizeof l[3], "%s", l[0]);
    WT_EQ_INT(wt_labels_add(l[3], sizeof l[3], "pci_bus_id", "0"), 0);
    for (int s = 0; s <= 5; s++) {
        wt_batch_clear(&b);
        for (int i = 0; i < 4; i++) {
            char copy[WT_LABELS_LEN]; /* the same labels from another place each tick */
            snprintf(copy, sizeof copy, "%s", l[(i + s) % 4]);
            put(&b, WT_M_GPU_TEMP_C, copy, T0 + S(s), 90);
        }
        tick(e, &b, T0 + S(s));
    }
    WT_EQ_INT(count("GPUHot", WT_ALERT_PENDING, NULL), 4);
    WT_EQ_INT(count("GPUHot", WT_ALERT_FIRING, NULL), 4);
    for (int i = 0; i < 4; i++) {
        int n = 0;
        for (int k = 0; k < nrec; k++)
            n += recs[k].a.state == WT_ALERT_FIRING &&
                 strncmp(recs[k].a.labels, l[i], strlen(l[i])) == 0 &&
                 (recs[k].a.labels[strlen(l[i])] == '\0' ||
                  strncmp(recs[k].a.labels + strlen(l[i]), ",team=", 6) == 0);
        WT_EQ_INT(n, 1);
    }
    wt_alert_eval_free(e);

    load("alerts:\n  detectors:\n    throttling: {for: 2s}\n", true);
    e = new_eval();
    for (int s = 0; s <= 4; s++) {
        wt_batch_clear(&b);
        for (int g = 0; g < 2; g++) {
            struct gv v = base;
            add_gpu(&b, g, "NVIDIA H200", T0 + S(s), &v);
            add_throttled(&b, g, T0 + S(s), "hw_thermal_slowdown", 1);
        }
        tick(e, &b, T0 + S(s));
    }
    WT_EQ_INT(count("GPUThrottling", WT_ALERT_PENDING, NULL), 2);
    WT_EQ_INT(count("GPUThrottling", WT_ALERT_FIRING, NULL), 2);
    WT_EQ_INT(count("GPUThrottling", WT_ALERT_FIRING, "GPU-test-0001"), 1);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(idle_burn_fires_with_the_energy_and_resolves_under_load)
{
    load("alerts:\n  detectors:\n    idle_burn: {for: 60s}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    int s;
    for (s = 0; s <= 61; s++) {
        wt_batch_clear(&b);
        struct gv v = base, w = base;
        v.util = 0.01;
        v.power = 360; /* over 0.4 x 700 = 280 W */
        add_gpu(&b, 0, "NVIDIA H200", T0 + S(s), &v);
        w.util = 0.01;
        w.power = 90; /* idle and low: fine */
        add_gpu(&b, 1, "NVIDIA H200", T0 + S(s), &w);
        tick(e, &b, T0 + S(s));
        if (s == 59)
            WT_EQ_INT(count("GPUIdleBurn", WT_ALERT_FIRING, NULL), 0);
    }
    WT_EQ_INT(count("GPUIdleBurn", WT_ALERT_FIRING, NULL), 1);
    WT_EQ_INT(count("GPUIdleBurn", WT_ALERT_PENDING, "gpu=\"1\""), 0);
    /* 360 W over 60 s = 21.6 kJ = 0.006 kWh */
    WT_CONTAINS(last()->a.summary, "0.006 kWh so far");
    WT_CONTAINS(last()->a.summary, "idle (1% utilization) while drawing 360 W");
    /* 8% utilization is inside the band (5..10%): holds; 50% clears. */
    for (int k = 0; k < 2; k++, s++) {
        wt_batch_clear(&b);
        struct gv v = base;
        v.util = k == 0 ? 0.08 : 0.5;
        v.power = 360;
        add_gpu(&b, 0, "NVIDIA H200", T0 + S(s), &v);
        tick(e, &b, T0 + S(s));
        WT_EQ_INT(count("GPUIdleBurn", WT_ALERT_RESOLVED, NULL), k);
    }
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

/* Ticks GPU 0 at second sec with utilization util and power w (limit 700 W: threshold 280 W). */
static void tick_idle(struct wt_alert_eval *e, struct wt_batch *b, int sec, double util, double w)
{
    wt_batch_clear(b);
    struct gv v = base;
    v.util = util;
    v.power = w;
    add_gpu(b, 0, "NVIDIA H200", T0 + S(sec), &v);
    tick(e, b, T0 + S(sec));
}

/* State changes of GPUIdleBurn: pending, and pending cleared before firing. */
static int idle_changes(void)
{
    int n = 0;
    for (int i = 0; i < nrec && i < 512; i++)
        n += strcmp(recs[i].a.name, "GPUIdleBurn") == 0 &&
             (recs[i].a.state == WT_ALERT_PENDING || recs[i].a.state == WT_ALERT_INACTIVE);
    return n;
}

WT_TEST(idle_burn_hysteresis_when_power_swings_around_the_threshold)
{
    /* Idle (1%) at 300 W, 250 W, 300 W...: over and under 90% of the 280 W threshold every tick.
     * One pending, no clear, firing after `for`: it is idle burn all along. */
    load("alerts:\n  detectors:\n    idle_burn: {for: 60s}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    int s;
    for (s = 0; s <= 90; s++)
        tick_idle(e, &b, s, 0.01, s % 2 ? 250 : 300);
    WT_EQ_INT(count("GPUIdleBurn", WT_ALERT_PENDING, NULL), 1);
    WT_EQ_INT(idle_changes(), 1);
    WT_EQ_INT(count("GPUIdleBurn", WT_ALERT_FIRING, NULL), 1);
    /* Power under the band for good: cleared once the dwell (for: 60 s) has passed, not before. */
    int resolved_at = -1;
    for (; s <= 200 && resolved_at < 0; s++) {
        tick_idle(e, &b, s, 0.01, 100);
        if (count("GPUIdleBurn", WT_ALERT_RESOLVED, NULL) == 1)
            resolved_at = s;
    }
    WT_EQ_INT(resolved_at, 91 + 60);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(idle_burn_utilization_flapping_changes_state_once_per_dwell)
{
    /* 360 W with utilization 1%, 50%, 1%...: work clears at once, but the alert comes back no
     * sooner than the dwell: over 120 s at most 3 pending, never firing. */
    load("alerts:\n  detectors:\n    idle_burn: {for: 60s}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    for (int s = 0; s < 120; s++)
        tick_idle(e, &b, s, s % 2 ? 0.5 : 0.01, 360);
    WT_ASSERT(count("GPUIdleBurn", WT_ALERT_PENDING, NULL) >= 1);
    WT_ASSERT(count("GPUIdleBurn", WT_ALERT_PENDING, NULL) <= 3);
    WT_ASSERT(idle_changes() <= 6);
    WT_EQ_INT(count("GPUIdleBurn", WT_ALERT_FIRING, NULL), 0);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(impossible_readings_fire_and_hold_a_while)
{
    load("alerts:\n  detectors:\n    impossible: {power_margin: 0.1}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    struct gv v = base;
    add_gpu(&b, 0, "NVIDIA H200", T0, &v);
    tick(e, &b, T0);
    WT_EQ_INT(nrec, 0);
    /* power 780 W > 700 x 1.1; energy 900 J after 1000 J; temperature 200 C */
    wt_batch_clear(&b);
    v.power = 780;
    v.energy = 900;
    v.temp = 200;
    add_gpu(&b, 0, "NVIDIA H200", T0 + S(1), &v);
    tick(e, &b, T0 + S(1));
    WT_EQ_INT(count("GPUImpossibleReading", WT_ALERT_FIRING, "reading=\"power\""), 1);
    WT_EQ_INT(count("GPUImpossibleReading", WT_ALERT_FIRING, "reading=\"energy\""), 1);
    WT_EQ_INT(count("GPUImpossibleReading", WT_ALERT_FIRING, "reading=\"temperature\""), 1);
    for (int i = 0; i < nrec; i++)
        if (strstr(recs[i].a.labels, "energy"))
            WT_CONTAINS(recs[i].a.summary, "went backwards by 100.000 J");
    /* Back to normal: held for a minute, then resolved. */
    v = base;
    v.energy = 1100;
    int64_t t = T0 + S(2);
    for (; t < T0 + S(60); t += S(1)) {
        wt_batch_clear(&b);
        add_gpu(&b, 0, "NVIDIA H200", t, &v);
        tick(e, &b, t);
    }
    WT_EQ_INT(count("GPUImpossibleReading", WT_ALERT_RESOLVED, NULL), 0);
    for (; t < T0 + S(63); t += S(1)) {
        wt_batch_clear(&b);
        add_gpu(&b, 0, "NVIDIA H200", t, &v);
        tick(e, &b, t);
    }
    WT_EQ_INT(count("GPUImpossibleReading", WT_ALERT_RESOLVED, NULL), 3);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(a_stuck_power_sensor_fires_only_while_utilization_moves)
{
    load("alerts:\n  detectors:\n    stuck: {ticks: 10}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    int s;
    /* GPU 0: 312.5 W for 12 samples while utilization moves; GPU 1: 80 W at a steady 0%. */
    for (s = 0; s < 12; s++) {
        wt_batch_clear(&b);
        struct gv v = base, w = base;
        v.power = 312.5;
        v.util = 0.2 + 0.05 * (s % 4);
        add_gpu(&b, 0, "NVIDIA H200", T0 + S(s), &v);
        w.power = 80;
        w.util = 0;
        add_gpu(&b, 1, "NVIDIA H200", T0 + S(s), &w);
        tick(e, &b, T0 + S(s));
        /* the same snapshot evaluated twice does not count twice */
        tick(e, &b, T0 + S(s) + S(0.5));
        if (s == 8)
            WT_EQ_INT(count("GPUSensorStuck", WT_ALERT_FIRING, NULL), 0);
    }
    WT_EQ_INT(count("GPUSensorStuck", WT_ALERT_FIRING, "gpu=\"0\""), 1);
    WT_EQ_INT(count("GPUSensorStuck", WT_ALERT_FIRING, "gpu=\"1\""), 0);
    WT_CONTAINS(last()->a.summary, "power reads 312.500 W for 10 samples");
    wt_batch_clear(&b);
    struct gv v = base;
    v.power = 313;
    add_gpu(&b, 0, "NVIDIA H200", T0 + S(s), &v);
    tick(e, &b, T0 + S(s));
    WT_EQ_INT(count("GPUSensorStuck", WT_ALERT_RESOLVED, "gpu=\"0\""), 1);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(a_sibling_much_hotter_at_similar_power_fires)
{
    load("alerts:\n  detectors:\n    sibling: {delta: 10, power_band: 0.15, for: 10s}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    for (int s = 0; s <= 10; s++) {
        wt_batch_clear(&b);
        for (int i = 0; i < 8; i++) {
            struct gv v = base;
            v.temp = 50 + (i % 3);
            v.power = 400 + 5 * i;
            if (i == 5)
                v.temp = 66; /* +15 over the median at similar power */
            if (i == 6)
                v.temp = 70, v.power = 650; /* hotter, but at much higher power: fine */
            add_gpu(&b, i, "NVIDIA H200", T0 + S(s), &v);
        }
        /* two of another model: too few to compare */
        struct gv o = base;
        o.temp = 90;
        add_gpu(&b, 8, "NVIDIA A100", T0 + S(s), &o);
        add_gpu(&b, 9, "NVIDIA A100", T0 + S(s), &o);
        tick(e, &b, T0 + S(s));
    }
    WT_EQ_INT(count("GPUSiblingOutlier", WT_ALERT_FIRING, NULL), 1);
    WT_EQ_INT(count("GPUSiblingOutlier", WT_ALERT_FIRING, "gpu=\"5\""), 1);
    WT_CONTAINS(last()->a.summary, "runs 15 °C hotter than the median 51 °C of its 8 siblings");
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(a_lost_gpu_fires_the_data_gap_while_the_others_stay_quiet)
{
    load("alerts:\n  detectors:\n    data_gap: {intervals: 3}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    struct wt_hub_collector cols[2] = {
        {.name = "nvml", .interval_ns = WT_NS_PER_S, .present = true, .up = true},
        {.name = "rapl", .interval_ns = WT_NS_PER_S, .present = true, .up = true},
    };
    for (int s = 0; s <= 10; s++) {
        int64_t t = T0 + S(s);
        wt_batch_clear(&b);
        for (int i = 0; i < 4; i++) {
            struct gv v = base;
            if (i == 2 && s >= 3)
                add_gpu_down(&b, i, "NVIDIA H200", t);
            else
                add_gpu(&b, i, "NVIDIA H200", t, &v);
        }
        cols[0].last_ok_mono = cols[0].last_tick_mono = t;
        cols[1].last_tick_mono = t;
        cols[1].last_ok_mono = s < 4 ? t : T0 + S(3); /* rapl stops succeeding after 3 s */
        struct wt_alert_input in = {
            .snap = &b, .cols = cols, .ncols = 2, .now_ns = t, .now_mono = t};
        wt_alert_eval_tick(e, &in, on_tr, NULL);
        if (s == 5) /* silent since 2 s: 3 s, not more than 3 intervals yet */
            WT_EQ_INT(count("WattageDataGap", WT_ALERT_FIRING, NULL), 0);
    }
    WT_EQ_INT(count("WattageDataGap", WT_ALERT_FIRING, "gpu=\"2\""), 1);
    WT_EQ_INT(count("WattageDataGap", WT_ALERT_FIRING, "collector=\"rapl\""), 1);
    WT_EQ_INT(count("WattageDataGap", WT_ALERT_FIRING, NULL), 2);
    for (int i = 0; i < nrec; i++)
        if (strstr(recs[i].a.labels, "gpu=\"2\""))
            WT_CONTAINS(recs[i].a.summary, "the GPU is down");
    /* It comes back: resolved. */
    wt_batch_clear(&b);
    struct gv v = base;
    add_gpu(&b, 2, "NVIDIA H200", T0 + S(11), &v);
    tick(e, &b, T0 + S(11));
    WT_EQ_INT(count("WattageDataGap", WT_ALERT_RESOLVED, "gpu=\"2\""), 1);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(the_default_detectors_stay_quiet_on_a_healthy_node)
{
    load("alerts: {}\n", false);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    for (int s = 0; s < 400; s++) {
        wt_batch_clear(&b);
        for (int i = 0; i < 8; i++) {
            struct gv v = base;
            v.power = 300 + 100 * sin(s / 7.0 + i);
            v.util = (v.power - 60) / 640;
            v.temp = 45 + i;
            v.energy = 1000 + 300.0 * s;
            add_gpu(&b, i, "NVIDIA H200", T0 + S(s), &v);
            add_throttled(&b, i, T0 + S(s), "sw_power_cap", 0);
        }
        tick(e, &b, T0 + S(s));
    }
    WT_EQ_INT(nrec, 0);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(labels_found_as_written_and_matchers_on_escaped_values)
{
    char l[WT_LABELS_LEN];
    size_t n;
    WT_EQ_INT(
        wt_labels(l, sizeof l, "gpu", "1", "name", "a \"quoted\", odd=\"x\"", "uuid", "U-1", NULL),
        0);
    const char *v = wt_detect_label(l, "uuid", &n);
    WT_ASSERT(v && n == 3 && memcmp(v, "U-1", 3) == 0);
    v = wt_detect_label(l, "name", &n);
    WT_ASSERT(v && n == strlen("a \\\"quoted\\\", odd=\\\"x\\\""));
    /* "odd" only appears inside a value: not a key */
    WT_ASSERT(!wt_detect_label(l, "odd", &n));
    WT_ASSERT(!wt_detect_label(l, "pu", &n));
    WT_ASSERT(!wt_detect_label("", "gpu", &n));
    /* A rule matching that escaped value, and not a prefix of it. */
    load("alerts:\n  rules:\n    - name: Named\n      metric: wattage_gpu_power_watts\n"
         "      match: {name: 'a \"quoted\", odd=\"x\"'}\n      op: '>'\n      threshold: 0\n"
         "    - name: Prefix\n      metric: wattage_gpu_power_watts\n"
         "      match: {name: 'a \"quoted\"'}\n      op: '>'\n      threshold: 0\n",
         true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    put(&b, WT_M_GPU_POWER_W, l, T0, 100);
    tick(e, &b, T0);
    WT_EQ_INT(count("Named", WT_ALERT_FIRING, NULL), 1);
    WT_EQ_INT(count("Prefix", WT_ALERT_FIRING, NULL), 0);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(a_gpu_that_never_answered_fires_the_data_gap)
{
    load("alerts:\n  detectors:\n    data_gap: {intervals: 3}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    for (int s = 0; s <= 4; s++) {
        wt_batch_clear(&b);
        struct gv v = base;
        add_gpu(&b, 0, "NVIDIA H200", T0 + S(s), &v);
        /* GPU 1: only up=0, with the index alone (its uuid was never read) */
        put(&b, WT_M_GPU_UP, "gpu=\"1\",uuid=\"\",model=\"\"", T0 + S(s), 0);
        tick(e, &b, T0 + S(s));
        if (s == 3)
            WT_EQ_INT(count("WattageDataGap", WT_ALERT_FIRING, NULL), 0);
    }
    WT_EQ_INT(count("WattageDataGap", WT_ALERT_FIRING, "gpu=\"1\""), 1);
    WT_EQ_INT(count("WattageDataGap", WT_ALERT_FIRING, NULL), 1);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

WT_TEST(the_json_lists_resolved_alerts_newest_first)
{
    load(hot_rule, true);
    cfg.rules[0].for_ns = 0;
    struct wt_alert_eval *e = new_eval();
    struct wt_batch b = {0};
    tick_temp(e, &b, 2, T0, 90);
    tick_temp(e, &b, 2, T0 + S(1), 70);
    tick_temp(e, &b, 2, T0 + S(2), 91);
    tick_temp(e, &b, 2, T0 + S(3), 70);
    tick_temp(e, &b, 2, T0 + S(4), 92);
    struct wt_alert l[8];
    size_t n = wt_alert_eval_list(e, l, 8);
    WT_EQ_INT(n, 3);
    WT_EQ_INT(l[0].state, WT_ALERT_FIRING);
    WT_EQ_INT(l[1].state, WT_ALERT_RESOLVED);
    WT_EQ_INT(l[1].resolved_at_ns, T0 + S(3));
    WT_EQ_INT(l[2].resolved_at_ns, T0 + S(1));
    WT_EQ_STR(l[0].summary, "GPU 0 at 92 C > 80");
    WT_EQ_STR(l[1].summary, "GPU 0 at 91 C > 80"); /* the summary it fired with */
    WT_NEAR(l[1].value, 70, 0);                    /* the value it resolved at */
    char *j = wt_alert_json(l, n);
    WT_ASSERT(j);
    WT_CONTAINS(j, "\"state\":\"resolved\"");
    WT_CONTAINS(j, "\"resolved_at\":\"2025-11-29T18:00:03.000Z\"");
    WT_CONTAINS(j, "\"firing\":1");
    free(j);
    wt_batch_free(&b);
    wt_alert_eval_free(e);
}

/* One tick at t with the delivery channels' health h[0..n). */
static void tick_delivery(struct wt_alert_eval *e, const struct wt_notify_health *h, size_t n,
                          int64_t t)
{
    static const struct wt_batch empty = {0};
    struct wt_alert_input in = {
        .snap = &empty, .now_ns = t, .now_mono = t, .delivery = h, .ndelivery = n};
    wt_alert_eval_tick(e, &in, on_tr, NULL);
}

WT_TEST(a_failing_delivery_channel_fires_after_its_for_and_resolves_when_it_delivers)
{
    load("alerts:\n  detectors:\n    delivery_failing: {for: 30s}\n", true);
    struct wt_alert_eval *e = new_eval();
    struct wt_notify_health h[2] = {{.channel = "alertmanager", .sent = 4},
                                    {.channel = "webhook", .sent = 2}};
    for (int s = 0; s < 10; s++)
        tick_delivery(e, h, 2, T0 + S(s));
    WT_EQ_INT(nrec, 0);
    /* The webhook fails from t = 10 s on; Alertmanager keeps delivering. */
    h[1].failing_since_mono = T0 + S(10);
    h[1].failed = 3;
    h[1].queued = 7;
    snprintf(h[1].error, sizeof h[1].error, "HTTP 503 {}");
    for (int s = 10; s < 39; s++)
        tick_delivery(e, h, 2, T0 + S(s));
    WT_EQ_INT(count("WattageAlertDeliveryFailing", WT_ALERT_PENDING, "channel=\"webhook\""), 1);
    WT_EQ_INT(count("WattageAlertDeliveryFailing", WT_ALERT_FIRING, NULL), 0);
    tick_delivery(e, h, 2, T0 + S(40));
    WT_EQ_INT(count("WattageAlertDeliveryFailing", WT_ALERT_FIRING, "channel=\"webhook\""), 1);
    WT_EQ_INT(count("WattageAlertDeliveryFailing", WT_ALERT_FIRING, NULL), 1);
    WT_EQ_STR(last()->a.labels, "channel=\"webhook\"");
    WT_EQ_INT(last()->a.severity, WT_SEV_CRITICAL);
    WT_CONTAINS(last()->a.summary, "alert delivery to webhook failing for 30.0s: HTTP 503 {}");
    WT_CONTAINS(last()->a.summary, "7 waiting");
    WT_NEAR(last()->a.value, 30, 1e-9);
    /* Still failing: no new transition. Then a delivery succeeds: resolved. */
    tick_delivery(e, h, 2, T0 + S(50));
    WT_EQ_INT(nrec, 2);
    h[1].failing_since_mono = 0;
    tick_delivery(e, h, 2, T0 + S(51));
    WT_EQ_INT(count("WattageAlertDeliveryFailing", WT_ALERT_RESOLVED, "channel=\"webhook\""), 1);
    WT_EQ_INT(nrec, 3);
    /* A short failure (under `for`) only goes pending, and back. */
    h[0].failing_since_mono = T0 + S(60);
    tick_delivery(e, h, 2, T0 + S(60));
    h[0].failing_since_mono = 0;
    tick_delivery(e, h, 2, T0 + S(70));
    WT_EQ_INT(count("WattageAlertDeliveryFailing", WT_ALERT_FIRING, "channel=\"alertmanager\""), 0);
    WT_EQ_INT(count("WattageAlertDeliveryFailing", WT_ALERT_INACTIVE, "channel=\"alertmanager\""),
              1);
    wt_alert_eval_free(e);
}

/*
 * The evaluation thread's wake-up: one evaluation a tick, started by the batch that completes
 * the tick, not by each collector's; a collector that stops, slows down or backs off is not
 * waited for after one tick; edge samples between ticks start nothing.
 */
WT_TEST(gather_one_evaluation_per_tick)
{
    static struct wt_alerts_gather g; /* zeroed */
    const int64_t iv = S(1);
#define M(x) (S(100) + S(x)) /* CLOCK_MONOTONIC: never 0 */
    const char *cols[] = {"nvml", "procfs", "netdev"};
    int evals = 0;
    /* Tick 0: nothing is regular yet (two batches make a gap), so each batch starts one, as
     * before; tick 1 settles (its first collector is regular first); tick 2 is in step. */
    for (int t = 0; t < 2; t++) {
        for (int c = 0; c < 3; c++) {
            if (wt_alerts_gather_batch(&g, cols[c], M(t) + c * S(0.001), iv)) {
                wt_alerts_gather_evaluated(&g);
                evals++;
            }
        }
    }
    WT_EQ_INT(evals, 4);
    /* From tick 2 on: only the last batch of the tick starts the evaluation. */
    for (int t = 2; t < 6; t++) {
        for (int c = 0; c < 3; c++) {
            bool go = wt_alerts_gather_batch(&g, cols[c], M(t) + c * S(0.001), iv);
            WT_ASSERT(go == (c == 2));
            if (go)
                wt_alerts_gather_evaluated(&g);
        }
    }
    /* Whatever order they come in. */
    WT_ASSERT(!wt_alerts_gather_batch(&g, "netdev", M(6), iv));
    WT_ASSERT(!wt_alerts_gather_batch(&g, "nvml", M(6.002), iv));
    WT_ASSERT(wt_alerts_gather_batch(&g, "procfs", M(6.003), iv));
    wt_alerts_gather_evaluated(&g);
    /* An edge sample between ticks (a job's mark) does not complete a tick, nor does a batch
     * left from the tick before. */
    WT_ASSERT(!wt_alerts_gather_batch(&g, "nvml", M(6.4), iv));
    WT_ASSERT(!wt_alerts_gather_batch(&g, "nvml", M(7), iv));
    WT_ASSERT(!wt_alerts_gather_batch(&g, "procfs", M(7.001), iv));
    WT_ASSERT(wt_alerts_gather_batch(&g, "netdev", M(7.002), iv));
    wt_alerts_gather_evaluated(&g);
    /* netdev stops: tick 8 is never complete (the thread's own timer evaluates it)... */
    WT_ASSERT(!wt_alerts_gather_batch(&g, "nvml", M(8), iv));
    WT_ASSERT(!wt_alerts_gather_batch(&g, "procfs", M(8.001), iv));
    wt_alerts_gather_evaluated(&g); /* the timer's evaluation */
    /* ...and from tick 9 it is not waited for. */
    WT_ASSERT(!wt_alerts_gather_batch(&g, "nvml", M(9), iv));
    WT_ASSERT(wt_alerts_gather_batch(&g, "procfs", M(9.001), iv));
    wt_alerts_gather_evaluated(&g);
    /* Back after 3 s: a gap of 2 intervals is not regular, so not waited for either... */
    WT_ASSERT(!wt_alerts_gather_batch(&g, "nvml", M(10), iv));
    WT_ASSERT(wt_alerts_gather_batch(&g, "procfs", M(10.001), iv));
    WT_ASSERT(wt_alerts_gather_batch(&g, "netdev", M(10.002), iv)); /* late, in tick 10's */
    wt_alerts_gather_evaluated(&g);
    /* ...nor at tick 11, its first regular gap closing only with its own batch... */
    WT_ASSERT(!wt_alerts_gather_batch(&g, "nvml", M(11), iv));
    WT_ASSERT(wt_alerts_gather_batch(&g, "procfs", M(11.001), iv));
    wt_alerts_gather_evaluated(&g);
    WT_ASSERT(!wt_alerts_gather_batch(&g, "netdev", M(11.002), iv));
    /* ...and from tick 12 it is waited for again. */
    WT_ASSERT(!wt_alerts_gather_batch(&g, "nvml", M(12), iv));
    WT_ASSERT(!wt_alerts_gather_batch(&g, "procfs", M(12.001), iv));
    WT_ASSERT(wt_alerts_gather_batch(&g, "netdev", M(12.002), iv));
}
#undef M

WT_TEST(gather_untracked_collectors_always_start_one)
{
    static struct wt_alerts_gather g;
    char name[32];
    for (int i = 0; i < WT_ALERTS_GATHER_MAX; i++) {
        snprintf(name, sizeof name, "snmp:t%d", i);
        wt_alerts_gather_batch(&g, name, S(0), S(1));
    }
    WT_EQ_U64(g.n, WT_ALERTS_GATHER_MAX);
    WT_ASSERT(wt_alerts_gather_batch(&g, "one-too-many", S(0.5), S(1)));
    WT_EQ_U64(g.n, WT_ALERTS_GATHER_MAX);
}
