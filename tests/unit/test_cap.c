/* SPDX-License-Identifier: MIT */
/*
 * Power capping (src/alert/cap.c) on the fake NVML only: it records every limit set in
 * FAKE_NVML_LIMITS_FILE, reports it back as the enforced limit, clamps its power to it and
 * refuses values outside 200..700 W like the driver. The file is the driver's state too: a limit
 * written there by one process (an earlier daemon, `cap clear`, "someone else") is what every
 * other process reads. Never a real GPU.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alert/alert.h"
#include "audit/jobs.h"
#include "collect/nvml.h"
#include "collect/nvml_api.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/yamltree.h"
#include "core/yget.h"
#include "runner.h"
#include "serve/api_jobs.h"
#include "serve/expo.h"
#include "store/store.h"

static char limits_path[600];

/* Points NVML at the fake, with every GPU drawing power_w, and the record in the test's dir. */
static void use_fake(const char *power)
{
    snprintf(limits_path, sizeof limits_path, "%s/limits", wt_test_dir());
    setenv("WATTAGE_NVML_LIBRARY", wt_test_build_path("tests/fakes/libnvidia-ml.so.1"), 1);
    setenv("FAKE_NVML_LIMITS_FILE", limits_path, 1);
    setenv("FAKE_NVML_POWER", power, 1);
    setenv("FAKE_NVML_GPUS", "8", 1);
}

/* The fake's own view, through the same library the capper loaded. */
static void *lib(void)
{
    static bool session;
    void *dl = dlopen(wt_test_build_path("tests/fakes/libnvidia-ml.so.1"), RTLD_NOW);
    WT_ASSERT(dl);
    if (!session) {
        /* A session of the test's own, so the fake answers after the capper closed its. */
        wt_nvml_init_fn *init = (wt_nvml_init_fn *)dlsym(dl, "nvmlInit_v2");
        WT_EQ_INT(init(), NVML_SUCCESS);
        session = true;
    }
    return dl;
}

static nvmlDevice_t dev(int i)
{
    wt_nvml_handle_fn *h = (wt_nvml_handle_fn *)dlsym(lib(), "nvmlDeviceGetHandleByIndex");
    nvmlDevice_t d;
    WT_EQ_INT(h((unsigned int)i, &d), NVML_SUCCESS);
    return d;
}

static double enforced_w(int i)
{
    wt_nvml_uint_fn *f = (wt_nvml_uint_fn *)dlsym(lib(), "nvmlDeviceGetEnforcedPowerLimit");
    unsigned int mw;
    WT_EQ_INT(f(dev(i), &mw), NVML_SUCCESS);
    return mw / 1000.0;
}

static double power_w(int i)
{
    wt_nvml_uint_fn *f = (wt_nvml_uint_fn *)dlsym(lib(), "nvmlDeviceGetPowerUsage");
    unsigned int mw;
    WT_EQ_INT(f(dev(i), &mw), NVML_SUCCESS);
    return mw / 1000.0;
}

/* The lines of the limits record, "GPU WATTS" each, joined by ';' ("" when none). */
static const char *record(void)
{
    static char out[4096];
    out[0] = '\0';
    FILE *f = fopen(limits_path, "r");
    char line[64];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (out[0])
            strcat(out, ";");
        strcat(out, line);
    }
    if (f)
        fclose(f);
    return out;
}

static void one_rule(struct wt_alerts_config *c, const char *name, double watts, double share)
{
    memset(c, 0, sizeof *c);
    c->enabled = true;
    c->budget_clear_share = 0.95;
    c->nrules = 1;
    snprintf(c->rules[0].name, sizeof c->rules[0].name, "%s", name);
    c->rules[0].action = WT_ACTION_CAP;
    c->rules[0].cap_watts = watts;
    c->rules[0].cap_share = share;
}

static struct wt_alert alert(const char *name, int gpu, enum wt_alert_state st, double cap_w)
{
    struct wt_alert a;
    char g[16];
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "%s", name);
    snprintf(g, sizeof g, "%d", gpu);
    WT_ASSERT(wt_labels(a.labels, sizeof a.labels, "gpu", g, NULL) == 0);
    a.state = st;
    a.action = WT_ACTION_CAP;
    a.gpu = gpu;
    a.cap_watts = cap_w;
    a.fingerprint = (uint64_t)gpu * 1000003u + (uint64_t)name[0] * 31u + strlen(name);
    return a;
}

static struct wt_cap *open_cap(const struct wt_alerts_config *c)
{
    struct wt_cap *cap = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_cap_open(NULL, c, &cap, &err), 0);
    WT_ASSERT(cap);
    return cap;
}

/* The value of the sample with these labels in a family, NAN when absent. */
static double fam_value(int (*fn)(void *, struct wt_expo_family *), struct wt_cap *cap,
                        const char *labels, size_t *n)
{
    struct wt_expo_family f;
    double v = NAN;
    WT_EQ_INT(fn(cap, &f), 0);
    for (size_t i = 0; i < f.n; i++)
        if (strcmp(f.s[i].labels, labels) == 0)
            v = f.s[i].value;
    if (n)
        *n = f.n;
    free(f.s);
    return v;
}

WT_TEST(nothing_to_cap_opens_nothing)
{
    struct wt_alerts_config c;
    struct wt_cap *cap = (struct wt_cap *)1;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    WT_EQ_INT(wt_cap_open(NULL, &c, &cap, &err), 0);
    WT_ASSERT(cap == NULL);
    struct wt_alert a = alert("X", 0, WT_ALERT_FIRING, 300);
    wt_cap_apply(NULL, &a);
    wt_cap_budget(NULL, NULL, 0);
    wt_cap_close(NULL);
    size_t n = 9;
    WT_ASSERT(isnan(fam_value(wt_cap_family_limits, NULL, "gpu=\"0\"", &n)));
    WT_EQ_INT(n, 0);
}

WT_TEST(fake_refuses_limits_outside_constraints)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    one_rule(&c, "Hot", 450, 0);
    struct wt_cap *cap = open_cap(&c); /* holds an NVML session */
    wt_nvml_set_limit_fn *set =
        (wt_nvml_set_limit_fn *)dlsym(lib(), "nvmlDeviceSetPowerManagementLimit");
    WT_ASSERT(set);
    WT_EQ_INT(set(dev(1), 199999), NVML_ERROR_INVALID_ARGUMENT);
    WT_EQ_INT(set(dev(1), 700001), NVML_ERROR_INVALID_ARGUMENT);
    WT_EQ_STR(record(), "");
    WT_EQ_INT(set(dev(1), 250000), NVML_SUCCESS);
    WT_EQ_STR(record(), "1 250");
    WT_NEAR(enforced_w(1), 250, 1e-9);
    WT_NEAR(power_w(1), 250, 1e-9); /* the GPU obeys its cap */
    WT_NEAR(power_w(2), 600, 1e-9);
    WT_EQ_INT(set(dev(1), 700000), NVML_SUCCESS);
    wt_cap_close(cap);
}

WT_TEST(firing_caps_resolving_restores)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    one_rule(&c, "Hot", 450, 0);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 2, WT_ALERT_FIRING, 450);
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "2 450");
    WT_NEAR(enforced_w(2), 450, 1e-9);
    WT_NEAR(power_w(2), 450, 1e-9);
    WT_NEAR(enforced_w(3), 700, 1e-9);
    WT_NEAR(fam_value(wt_cap_family_limits, cap, "gpu=\"2\"", NULL), 450, 1e-9);
    WT_NEAR(fam_value(wt_cap_family_actions, cap, "action=\"cap\",dry_run=\"false\"", NULL), 1, 0);
    /* firing again (the engine re-posts) changes nothing */
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "2 450");
    a.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "2 450;2 700");
    WT_NEAR(enforced_w(2), 700, 1e-9);
    size_t n = 9;
    WT_ASSERT(isnan(fam_value(wt_cap_family_limits, cap, "gpu=\"2\"", &n)));
    WT_EQ_INT(n, 0);
    WT_NEAR(fam_value(wt_cap_family_actions, cap, "action=\"restore\",dry_run=\"false\"", NULL), 1,
            0);
    /* an alert without action cap is not ours */
    struct wt_alert other = alert("Hot", 4, WT_ALERT_FIRING, 300);
    other.action = WT_ACTION_NONE;
    wt_cap_apply(cap, &other);
    WT_EQ_STR(record(), "2 450;2 700");
    wt_cap_close(cap);
    WT_EQ_STR(record(), "2 450;2 700");
}

WT_TEST(limits_stay_within_constraints_and_are_never_raised)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    one_rule(&c, "Hot", 100, 0);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert lo = alert("Hot", 0, WT_ALERT_FIRING, 100);
    wt_cap_apply(cap, &lo);
    WT_EQ_STR(record(), "0 200"); /* the GPU's minimum, not 100 */
    struct wt_alert hi = alert("Hot", 1, WT_ALERT_FIRING, 900);
    wt_cap_apply(cap, &hi);
    WT_EQ_STR(record(), "0 200"); /* over the current 700: nothing to lower */
    /* someone set GPU 5 to 300 W; a cap of 500 W does not raise it */
    wt_nvml_set_limit_fn *set =
        (wt_nvml_set_limit_fn *)dlsym(lib(), "nvmlDeviceSetPowerManagementLimit");
    WT_EQ_INT(set(dev(5), 300000), NVML_SUCCESS);
    struct wt_alert five = alert("Hot", 5, WT_ALERT_FIRING, 500);
    wt_cap_apply(cap, &five);
    WT_EQ_STR(record(), "0 200;5 300");
    /* a GPU the node does not have */
    struct wt_alert none = alert("Hot", 12, WT_ALERT_FIRING, 300);
    wt_cap_apply(cap, &none);
    WT_EQ_STR(record(), "0 200;5 300");
    wt_cap_close(cap);
    WT_EQ_STR(record(), "0 200;5 300;0 700");
}

WT_TEST(cap_share_of_the_max_and_the_lowest_alert_wins)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    one_rule(&c, "Half", 0, 0.5);
    c.nrules = 2;
    snprintf(c.rules[1].name, sizeof c.rules[1].name, "Low");
    c.rules[1].action = WT_ACTION_CAP;
    c.rules[1].cap_watts = 250;
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert half = alert("Half", 3, WT_ALERT_FIRING, 0); /* share left to the capper */
    wt_cap_apply(cap, &half);
    WT_EQ_STR(record(), "3 350");
    struct wt_alert low = alert("Low", 3, WT_ALERT_FIRING, 250);
    wt_cap_apply(cap, &low);
    WT_EQ_STR(record(), "3 350;3 250");
    low.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &low);
    WT_EQ_STR(record(), "3 350;3 250;3 350");
    half.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &half);
    WT_EQ_STR(record(), "3 350;3 250;3 350;3 700");
    /* a cap over the GPU's own limit left alone when the lower one resolves: restored */
    struct wt_alert big = alert("Big", 4, WT_ALERT_FIRING, 900);
    low = alert("Low", 4, WT_ALERT_FIRING, 250);
    wt_cap_apply(cap, &big);
    wt_cap_apply(cap, &low);
    low.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &low);
    WT_EQ_STR(record(), "3 350;3 250;3 350;3 700;4 250;4 700");
    size_t n = 9;
    WT_ASSERT(isnan(fam_value(wt_cap_family_limits, cap, "gpu=\"4\"", &n)));
    WT_EQ_INT(n, 0);
    wt_cap_close(cap);
}

WT_TEST(close_restores_every_limit)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    one_rule(&c, "Hot", 400, 0);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 0, WT_ALERT_FIRING, 400);
    struct wt_alert b = alert("Hot", 6, WT_ALERT_FIRING, 400);
    wt_cap_apply(cap, &a);
    wt_cap_apply(cap, &b);
    WT_EQ_STR(record(), "0 400;6 400");
    wt_cap_close(cap);
    WT_EQ_STR(record(), "0 400;6 400;0 700;6 700");
    WT_NEAR(enforced_w(0), 700, 1e-9);
    WT_NEAR(enforced_w(6), 700, 1e-9);
}

WT_TEST(a_limit_changed_by_someone_else_is_left_alone)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    one_rule(&c, "Hot", 400, 0);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 1, WT_ALERT_FIRING, 400);
    wt_cap_apply(cap, &a);
    wt_nvml_set_limit_fn *set =
        (wt_nvml_set_limit_fn *)dlsym(lib(), "nvmlDeviceSetPowerManagementLimit");
    WT_EQ_INT(set(dev(1), 550000), NVML_SUCCESS); /* an operator's nvidia-smi -pl */
    a.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "1 400;1 550");
    wt_cap_close(cap);
    WT_EQ_STR(record(), "1 400;1 550");
}

WT_TEST(dry_run_changes_nothing_but_says_what_it_would)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    one_rule(&c, "Hot", 450, 0);
    c.dry_run = true;
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 2, WT_ALERT_FIRING, 450);
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "");
    WT_NEAR(enforced_w(2), 700, 1e-9);
    WT_NEAR(fam_value(wt_cap_family_limits, cap, "gpu=\"2\"", NULL), 450, 1e-9);
    WT_NEAR(fam_value(wt_cap_family_actions, cap, "action=\"cap\",dry_run=\"true\"", NULL), 1, 0);
    a.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &a);
    WT_NEAR(fam_value(wt_cap_family_actions, cap, "action=\"restore\",dry_run=\"true\"", NULL), 1,
            0);
    wt_cap_close(cap);
    WT_EQ_STR(record(), "");
}

WT_TEST(run_dry_run_flag_forces_dry_run)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    one_rule(&c, "Hot", 450, 0);
    wt_cap_force_dry_run(true);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 2, WT_ALERT_FIRING, 450);
    wt_cap_apply(cap, &a);
    wt_cap_close(cap);
    wt_cap_force_dry_run(false);
    WT_EQ_STR(record(), "");
}

/* A snapshot of every GPU's power as the fake reports it now (or `each` watts when > 0). */
static void snapshot(struct wt_batch *b, double each)
{
    wt_batch_clear(b);
    for (int i = 0; i < 8; i++) {
        char labels[64], g[16];
        snprintf(g, sizeof g, "%d", i);
        WT_ASSERT(wt_labels(labels, sizeof labels, "gpu", g, "uuid", "GPU-x", NULL) == 0);
        WT_EQ_INT(wt_batch_add(b, WT_M_GPU_POWER_W, labels, wt_now_real_ns(),
                               each > 0 ? each : power_w(i)),
                  0);
        WT_EQ_INT(wt_batch_add(b, WT_M_GPU_POWER_LIMIT_W, labels, wt_now_real_ns(), 700), 0);
    }
}

static double total_w(void)
{
    double t = 0;
    for (int i = 0; i < 8; i++)
        t += power_w(i);
    return t;
}

WT_TEST(site_budget_brings_the_node_under_and_lifts_with_hysteresis)
{
    use_fake("600,0,0"); /* 8 x 600 W = 4800 W */
    struct wt_alerts_config c;
    memset(&c, 0, sizeof c);
    c.power_budget_watts = 4000;
    c.budget_clear_share = 0.9;
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    int64_t t = wt_now_real_ns();
    snapshot(&b, 0);
    WT_NEAR(total_w(), 4800, 1e-6);
    wt_cap_budget(cap, &b, t);
    /* under budget, at the midpoint of budget and budget x clear share */
    WT_ASSERT(total_w() <= 4000);
    WT_NEAR(total_w(), 3800, 8);
    for (int i = 0; i < 8; i++) {
        WT_ASSERT(enforced_w(i) >= 200 && enforced_w(i) <= 700);
        WT_NEAR(enforced_w(i), 475, 1);
    }
    WT_NEAR(fam_value(wt_cap_family_actions, cap, "action=\"budget_cap\",dry_run=\"false\"", NULL),
            8, 0);
    /* capped and steady: nothing changes tick after tick */
    char before[4096];
    snprintf(before, sizeof before, "%s", record());
    for (int k = 1; k <= 5; k++) {
        snapshot(&b, 0);
        wt_cap_budget(cap, &b, t + k * WT_NS_PER_S);
    }
    WT_EQ_STR(record(), before);
    /* between budget x clear share (3600 W) and the budget: still capped */
    snapshot(&b, 460);
    wt_cap_budget(cap, &b, t + 10 * WT_NS_PER_S);
    WT_EQ_STR(record(), before);
    /* the load falls under 3600 W: every limit back to 700 W */
    snapshot(&b, 100);
    wt_cap_budget(cap, &b, t + 11 * WT_NS_PER_S);
    for (int i = 0; i < 8; i++)
        WT_NEAR(enforced_w(i), 700, 1e-9);
    size_t n = 9;
    fam_value(wt_cap_family_limits, cap, "gpu=\"0\"", &n);
    WT_EQ_INT(n, 0);
    /* the load returns: capped again */
    snapshot(&b, 0);
    WT_NEAR(total_w(), 4800, 1e-6);
    wt_cap_budget(cap, &b, t + 12 * WT_NS_PER_S);
    WT_ASSERT(total_w() <= 4000);
    wt_cap_close(cap);
    for (int i = 0; i < 8; i++)
        WT_NEAR(enforced_w(i), 700, 1e-9);
    wt_batch_free(&b);
}

WT_TEST(site_budget_shares_in_proportion_to_draw)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    memset(&c, 0, sizeof c);
    c.power_budget_watts = 2500;
    c.budget_clear_share = 0.9;
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    /* GPUs 0..3 draw 600 W, 4..7 150 W: 3000 W, over 2500 W */
    wt_batch_clear(&b);
    for (int i = 0; i < 8; i++) {
        char labels[64], g[16];
        snprintf(g, sizeof g, "%d", i);
        WT_ASSERT(wt_labels(labels, sizeof labels, "gpu", g, NULL) == 0);
        WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, labels, 0, i < 4 ? 600 : 150), 0);
    }
    wt_cap_budget(cap, &b, wt_now_real_ns());
    double sum = 0;
    for (int i = 0; i < 8; i++)
        sum += enforced_w(i);
    WT_NEAR(sum, 2375, 2); /* (2500 + 2250) / 2 */
    /* in proportion, 4..7 would get under 200 W: their minimum holds, 0..3 share the rest */
    for (int i = 4; i < 8; i++)
        WT_NEAR(enforced_w(i), 200, 1e-9);
    for (int i = 0; i < 4; i++)
        WT_NEAR(enforced_w(i), (2375 - 800) / 4.0, 0.5);
    wt_cap_close(cap);
    wt_batch_free(&b);
}

WT_TEST(site_budget_under_the_minimums_puts_every_gpu_at_its_minimum)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    memset(&c, 0, sizeof c);
    c.power_budget_watts = 1000; /* 8 x 200 W minimum = 1600 W */
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    snapshot(&b, 0);
    wt_cap_budget(cap, &b, wt_now_real_ns());
    for (int i = 0; i < 8; i++)
        WT_NEAR(enforced_w(i), 200, 1e-9);
    wt_cap_close(cap);
    wt_batch_free(&b);
}

WT_TEST(site_budget_dry_run_changes_nothing)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    memset(&c, 0, sizeof c);
    c.power_budget_watts = 4000;
    c.dry_run = true;
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    snapshot(&b, 0);
    wt_cap_budget(cap, &b, wt_now_real_ns());
    WT_EQ_STR(record(), "");
    WT_NEAR(total_w(), 4800, 1e-6);
    size_t n = 0;
    fam_value(wt_cap_family_limits, cap, "gpu=\"0\"", &n);
    WT_EQ_INT(n, 8);
    wt_cap_close(cap);
    WT_EQ_STR(record(), "");
    wt_batch_free(&b);
}

WT_TEST(without_nvml_capping_logs_and_sets_nothing)
{
    setenv("WATTAGE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    struct wt_alerts_config c;
    one_rule(&c, "Hot", 450, 0);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 2, WT_ALERT_FIRING, 450);
    wt_cap_apply(cap, &a);
    WT_NEAR(fam_value(wt_cap_family_actions, cap, "action=\"error\",dry_run=\"false\"", NULL), 1,
            0);
    size_t n = 9;
    fam_value(wt_cap_family_limits, cap, "gpu=\"2\"", &n);
    WT_EQ_INT(n, 0);
    wt_cap_close(cap);
}

WT_TEST(meter_selector_parses_or_says_why)
{
    int m = -1;
    char match[WT_LABELS_LEN], why[200];
    WT_EQ_INT(wt_cap_meter_parse(" wattage_facility_power_watts{target=\"pdu-r12\", "
                                 "point=\"inlet\\\"1\"} ",
                                 &m, match, sizeof match, why, sizeof why),
              0);
    WT_EQ_INT(m, WT_M_FAC_POWER_W);
    char v[64];
    WT_EQ_INT(wt_labels_get(match, "target", v, sizeof v), 0);
    WT_EQ_STR(v, "pdu-r12");
    WT_EQ_INT(wt_labels_get(match, "point", v, sizeof v), 0);
    WT_EQ_STR(v, "inlet\"1");
    WT_EQ_INT(
        wt_cap_meter_parse("wattage_gpu_power_watts", &m, match, sizeof match, why, sizeof why), 0);
    WT_EQ_STR(match, "");
    WT_EQ_INT(
        wt_cap_meter_parse("wattage_facility_powr_watts", &m, match, sizeof match, why, sizeof why),
        -EINVAL);
    WT_CONTAINS(why, "unknown metric \"wattage_facility_powr_watts\"");
    WT_EQ_INT(wt_cap_meter_parse("wattage_facility_power_watts{target=pdu}", &m, match,
                                 sizeof match, why, sizeof why),
              -EINVAL);
    WT_CONTAINS(why, "expected label=\"value\"");
    WT_EQ_INT(wt_cap_meter_parse("wattage_facility_power_watts{target=\"pdu", &m, match,
                                 sizeof match, why, sizeof why),
              -EINVAL);
    WT_EQ_INT(wt_cap_meter_parse("wattage_facility_power_watts{} x", &m, match, sizeof match, why,
                                 sizeof why),
              -EINVAL);
    WT_CONTAINS(why, "unexpected");
    struct wt_alerts_config c;
    struct wt_cap *cap = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    c.power_budget_watts = 1000;
    snprintf(c.power_budget_meter, sizeof c.power_budget_meter, "nope{");
    WT_EQ_INT(wt_cap_open(NULL, &c, &cap, &err), -EINVAL);
    WT_ASSERT(cap == NULL);
    WT_CONTAINS(err.msg, "alerts.power_budget_meter: unknown metric");
}

WT_TEST(site_budget_on_a_meter_sheds_the_excess_from_the_gpus)
{
    use_fake("600,0,0"); /* the GPUs: 8 x 600 W = 4800 W */
    struct wt_alerts_config c;
    memset(&c, 0, sizeof c);
    c.power_budget_watts = 4500;
    c.budget_clear_share = 0.9;
    snprintf(c.power_budget_meter, sizeof c.power_budget_meter,
             "wattage_facility_power_watts{target=\"pdu1\"}");
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    snapshot(&b, 0);
    /* the PDU feeding the node reads 5000 W (GPUs and 200 W of the rest); another is ignored */
    char l1[128], l2[128];
    WT_ASSERT(
        wt_labels(l1, sizeof l1, "source", "snmp", "target", "pdu1", "point", "inlet1", NULL) == 0);
    WT_ASSERT(
        wt_labels(l2, sizeof l2, "source", "snmp", "target", "pdu2", "point", "inlet1", NULL) == 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_POWER_W, l1, 0, 5000), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_POWER_W, l2, 0, 9999), 0);
    wt_cap_budget(cap, &b, wt_now_real_ns());
    /* down to (4500 + 4050) / 2 = 4275 W at the meter: the GPUs give up 725 W */
    WT_NEAR(total_w(), 4800 - 725, 8);
    /* without the meter's series the GPUs' sum is held to the budget (4800 > 4500: capped) */
    wt_cap_close(cap);
    cap = open_cap(&c);
    snapshot(&b, 0);
    wt_cap_budget(cap, &b, wt_now_real_ns());
    WT_NEAR(total_w(), 4275, 8);
    wt_cap_close(cap);
    wt_batch_free(&b);
}

/* ---- the record of changes, crashes, guardrails ------------------------------------------ */

static char rec_path[200];

/* A config with one cap rule and its record in the test's directory. */
static void recorded_rule(struct wt_alerts_config *c, const char *name, double watts)
{
    one_rule(c, name, watts, 0);
    snprintf(rec_path, sizeof rec_path, "%s/power-caps", wt_test_dir());
    snprintf(c->cap_record, sizeof c->cap_record, "%s", rec_path);
}

/* The record's lines as "GPU OWN SET REASON;..." in file order ("" when none or no file). */
static const char *rec_lines(void)
{
    static char out[2048];
    struct wt_cap_rec r[64];
    size_t n = 0;
    struct wt_err err = {{0}};
    out[0] = '\0';
    WT_EQ_INT(wt_cap_record_read(rec_path, r, 64, &n, &err), 0);
    for (size_t i = 0; i < n; i++) {
        char one[200];
        snprintf(one, sizeof one, "%s%d %g %g %s", i ? ";" : "", r[i].gpu, r[i].own_w, r[i].set_w,
                 r[i].reason);
        strcat(out, one);
    }
    return out;
}

/* What an earlier run killed with kill -9 left: GPU gpu at set_w in the driver, and its line. */
static void earlier_run_left(int gpu, double own_w, double set_w, const char *reason)
{
    struct wt_cap_rec r;
    struct wt_err err = {{0}};
    memset(&r, 0, sizeof r);
    snprintf(r.uuid, sizeof r.uuid, "GPU-fake-0000-%d", gpu);
    r.gpu = gpu;
    r.own_w = own_w;
    r.set_w = set_w;
    r.t_ns = wt_now_real_ns() - 60 * WT_NS_PER_S;
    snprintf(r.reason, sizeof r.reason, "%s", reason);
    WT_EQ_INT(wt_cap_record_write(rec_path, &r, 1, &err), 0);
    wt_nvml_set_limit_fn *set =
        (wt_nvml_set_limit_fn *)dlsym(lib(), "nvmlDeviceSetPowerManagementLimit");
    WT_EQ_INT(set(dev(gpu), (unsigned int)(set_w * 1000)), NVML_SUCCESS);
}

WT_TEST(every_change_is_recorded_first_and_cleared_on_restore)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 450);
    struct wt_cap *cap = open_cap(&c);
    WT_EQ_STR(rec_lines(), "");
    struct wt_alert a = alert("Hot", 2, WT_ALERT_FIRING, 450);
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "2 450");
    WT_EQ_STR(rec_lines(), "2 700 450 Hot");
    struct wt_cap_rec r[4];
    size_t n = 0;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_cap_record_read(rec_path, r, 4, &n, &err), 0);
    WT_EQ_STR(r[0].uuid, "GPU-fake-0000-2");
    WT_ASSERT(r[0].t_ns > wt_now_real_ns() - 10 * WT_NS_PER_S);
    a.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "2 450;2 700");
    WT_EQ_STR(rec_lines(), "");
    WT_ASSERT(access(rec_path, F_OK) != 0); /* no lines: no file */
    wt_cap_close(cap);
}

/* Runs one capping child that dies (as kill -9 would) at hook; returns its exit status. */
static int crash_child(const char *hook)
{
    pid_t pid = fork();
    WT_ASSERT(pid >= 0);
    if (pid == 0) {
        setenv("WATTAGE_TEST_CAP_EXIT", hook, 1);
        struct wt_alerts_config c;
        recorded_rule(&c, "Hot", 450);
        struct wt_cap *cap = NULL;
        struct wt_err err = {{0}};
        if (wt_cap_open(NULL, &c, &cap, &err) != 0)
            _exit(3);
        struct wt_alert a = alert("Hot", 2, WT_ALERT_FIRING, 450);
        wt_cap_apply(cap, &a);
        _exit(0); /* not reached: the hook exits first */
    }
    int st = 0;
    WT_EQ_INT(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

WT_TEST(killed_between_the_record_and_the_call_never_leaves_a_cap_without_a_record)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 450);
    /* right before the record: nothing written, nothing set */
    WT_EQ_INT(crash_child("before_record"), 86);
    WT_EQ_STR(rec_lines(), "");
    WT_EQ_STR(record(), "");
    /* right after it: the line is there and the GPU is not capped */
    WT_EQ_INT(crash_child("after_record"), 86);
    WT_EQ_STR(rec_lines(), "2 700 450 Hot");
    WT_EQ_STR(record(), "");
    WT_NEAR(enforced_w(2), 700, 1e-9);
    /* the next start, with nothing to cap, finds the line already right and drops it */
    struct wt_alerts_config none;
    memset(&none, 0, sizeof none);
    snprintf(none.cap_record, sizeof none.cap_record, "%s", rec_path);
    struct wt_cap *cap = (struct wt_cap *)1;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_cap_open(NULL, &none, &cap, &err), 0);
    WT_ASSERT(cap == NULL);
    WT_EQ_STR(rec_lines(), "");
    WT_EQ_STR(record(), "");
}

WT_TEST(an_earlier_runs_cap_is_restored_when_no_rule_holds_it)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 450);
    earlier_run_left(1, 700, 450, "GPUHot");
    WT_NEAR(enforced_w(1), 450, 1e-9);
    /* a configuration without any cap rule (and alerts off altogether) */
    struct wt_alerts_config none;
    memset(&none, 0, sizeof none);
    snprintf(none.cap_record, sizeof none.cap_record, "%s", rec_path);
    wt_cap_recover(NULL, &none);
    WT_NEAR(enforced_w(1), 700, 1e-9);
    WT_EQ_STR(record(), "1 450;1 700");
    WT_EQ_STR(rec_lines(), "");
    /* a rule of another name does not hold it either */
    earlier_run_left(1, 700, 450, "GPUHot");
    struct wt_cap *cap = open_cap(&c);
    WT_NEAR(enforced_w(1), 700, 1e-9);
    WT_EQ_STR(rec_lines(), "");
    WT_NEAR(fam_value(wt_cap_family_reasons, cap, "reason=\"earlier_run\",dry_run=\"false\"", NULL),
            1, 0);
    wt_cap_close(cap);
}

WT_TEST(an_earlier_runs_cap_a_rule_still_holds_keeps_the_own_limit_as_its_base)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 0);
    c.rules[0].cap_share = 0.5;
    earlier_run_left(3, 700, 350, "Hot");
    struct wt_cap *cap = open_cap(&c);
    WT_NEAR(enforced_w(3), 350, 1e-9); /* kept while the rule may fire again */
    WT_NEAR(fam_value(wt_cap_family_limits, cap, "gpu=\"3\"", NULL), 350, 1e-9);
    struct wt_alert a = alert("Hot", 3, WT_ALERT_FIRING, 0);
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "3 350"); /* half of the max: no change */
    WT_EQ_STR(rec_lines(), "3 700 350 Hot");
    a.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &a);
    /* back to the GPU's own 700 W, not to the 350 W it had at start */
    WT_NEAR(enforced_w(3), 700, 1e-9);
    WT_EQ_STR(rec_lines(), "");
    wt_cap_close(cap);
    /* kept, and the rule does not fire within its time: restored at a later tick */
    earlier_run_left(3, 700, 350, "Hot");
    cap = open_cap(&c);
    struct wt_batch b = {0};
    snapshot(&b, 600);
    wt_cap_budget(cap, &b, wt_now_real_ns());
    WT_NEAR(enforced_w(3), 350, 1e-9);
    wt_cap_budget(cap, &b, wt_now_real_ns() + 10 * WT_NS_PER_S);
    WT_NEAR(enforced_w(3), 700, 1e-9);
    WT_EQ_STR(rec_lines(), "");
    wt_cap_close(cap);
    wt_batch_free(&b);
}

WT_TEST(a_gpu_capped_by_someone_else_is_reported_and_its_limit_not_taken_as_its_own)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 250);
    wt_nvml_set_limit_fn *set =
        (wt_nvml_set_limit_fn *)dlsym(lib(), "nvmlDeviceSetPowerManagementLimit");
    WT_EQ_INT(set(dev(5), 300000), NVML_SUCCESS); /* nvidia-smi -pl 300, no record */
    char *txt = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&txt, &len);
    WT_EQ_INT(wt_cap_report(NULL, &c, f), 0);
    fclose(f);
    WT_CONTAINS(txt, "gpu 5 (GPU-fake-0000-5) limit 300.0 W is not its default 700.0 W");
    WT_CONTAINS(txt, "capped by someone else");
    WT_ASSERT(!strstr(txt, "gpu 4"));
    free(txt);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 5, WT_ALERT_FIRING, 250);
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "5 300;5 250");
    WT_EQ_STR(rec_lines(), "5 700 250 Hot"); /* own: the default, not the 300 W found */
    /* the report now names wattage's cap */
    f = open_memstream(&txt, &len);
    WT_EQ_INT(wt_cap_report(NULL, &c, f), 0);
    fclose(f);
    WT_CONTAINS(txt,
                "gpu 5 (GPU-fake-0000-5) limit 250.0 W set by wattage (own 700.0 W, reason Hot");
    free(txt);
    wt_cap_close(cap);
}

WT_TEST(cap_clear_puts_gpus_back_and_a_running_capper_leaves_them)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 400);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a2 = alert("Hot", 2, WT_ALERT_FIRING, 400);
    struct wt_alert a3 = alert("Hot", 3, WT_ALERT_FIRING, 400);
    wt_cap_apply(cap, &a2);
    wt_cap_apply(cap, &a3);
    WT_EQ_STR(rec_lines(), "2 700 400 Hot;3 700 400 Hot");
    char *txt = NULL;
    size_t len = 0;
    struct wt_err err = {{0}};
    FILE *f = open_memstream(&txt, &len);
    WT_EQ_INT(wt_cap_clear(NULL, &c, 2, f, &err), 0);
    fclose(f);
    WT_CONTAINS(txt, "gpu 2 (GPU-fake-0000-2): limit back to its own 700.0 W");
    free(txt);
    WT_NEAR(enforced_w(2), 700, 1e-9);
    WT_NEAR(enforced_w(3), 400, 1e-9);
    WT_EQ_STR(rec_lines(), "3 700 400 Hot");
    /* the capper's next ticks: the alert still fires, but GPU 2 is left alone, unrecorded */
    struct wt_batch b = {0};
    snapshot(&b, 600);
    for (int k = 0; k < 3; k++)
        wt_cap_budget(cap, &b, wt_now_real_ns());
    wt_cap_apply(cap, &a2); /* a re-post changes nothing either */
    WT_NEAR(enforced_w(2), 700, 1e-9);
    WT_EQ_STR(rec_lines(), "3 700 400 Hot");
    size_t n = 0;
    WT_ASSERT(isnan(fam_value(wt_cap_family_limits, cap, "gpu=\"2\"", &n)));
    WT_NEAR(
        fam_value(wt_cap_family_reasons, cap, "reason=\"cleared_by_hand\",dry_run=\"false\"", NULL),
        1, 0);
    /* once the alert resolves and fires again, GPU 2 is capped again */
    a2.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &a2);
    a2.state = WT_ALERT_FIRING;
    wt_cap_apply(cap, &a2);
    WT_NEAR(enforced_w(2), 400, 1e-9);
    /* --gpu N of a GPU with no line and its default limit: nothing to do; a bad index: -EINVAL */
    f = open_memstream(&txt, &len);
    WT_EQ_INT(wt_cap_clear(NULL, &c, 6, f, &err), 0);
    fclose(f);
    WT_CONTAINS(txt, "gpu 6 (GPU-fake-0000-6): not capped");
    free(txt);
    f = open_memstream(&txt, &len);
    WT_EQ_INT(wt_cap_clear(NULL, &c, 9, f, &err), -EINVAL);
    fclose(f);
    free(txt);
    WT_CONTAINS(err.msg, "--gpu 9: this node has 8 GPUs");
    /* all of them */
    f = open_memstream(&txt, &len);
    WT_EQ_INT(wt_cap_clear(NULL, &c, -1, f, &err), 0);
    fclose(f);
    free(txt);
    WT_EQ_STR(rec_lines(), "");
    WT_NEAR(enforced_w(2), 700, 1e-9);
    WT_NEAR(enforced_w(3), 700, 1e-9);
    char before[4096];
    snprintf(before, sizeof before, "%s", record());
    wt_cap_close(cap); /* nothing of its own is left to restore */
    WT_EQ_STR(record(), before);
    wt_batch_free(&b);
}

WT_TEST(a_cap_is_never_under_the_configured_floor)
{
    use_fake("600,0,0");
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 250);
    c.cap_floor_watts = 320;
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 0, WT_ALERT_FIRING, 250);
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "0 320");
    WT_NEAR(fam_value(wt_cap_family_reasons, cap, "reason=\"floor\",dry_run=\"false\"", NULL), 1,
            0);
    wt_cap_close(cap);
    /* and the budget shares over the floors */
    struct wt_alerts_config bc;
    memset(&bc, 0, sizeof bc);
    bc.power_budget_watts = 2000; /* 8 x 320 W floor = 2560 W */
    bc.cap_floor_watts = 320;
    cap = open_cap(&bc);
    struct wt_batch b = {0};
    snapshot(&b, 600);
    wt_cap_budget(cap, &b, wt_now_real_ns());
    for (int i = 0; i < 8; i++)
        WT_NEAR(enforced_w(i), 320, 1e-9);
    wt_cap_close(cap);
    wt_batch_free(&b);
}

/* The number of limit changes the fake has recorded. */
static int changes(void)
{
    const char *r = record();
    int n = *r ? 1 : 0;
    for (; *r; r++)
        n += *r == ';';
    return n;
}

/* A budget that flaps every second for 40 s: the node over it, then far under, and again. */
static int flap(int64_t min_interval_ns)
{
    struct wt_alerts_config c;
    memset(&c, 0, sizeof c);
    c.power_budget_watts = 4000;
    c.budget_clear_share = 0.9;
    c.cap_min_interval_ns = min_interval_ns;
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    int64_t t = wt_now_real_ns();
    for (int k = 0; k < 40; k++) {
        snapshot(&b, k % 2 ? 100 : 600);
        wt_cap_budget(cap, &b, t + k * WT_NS_PER_S);
    }
    wt_cap_close(cap);
    wt_batch_free(&b);
    return changes();
}

WT_TEST(a_flapping_budget_changes_each_limit_at_most_once_per_interval)
{
    use_fake("600,0,0");
    int n = flap(10 * WT_NS_PER_S);
    /* 40 s at one change per 10 s: at most 4 per GPU, and the restore at close */
    WT_ASSERT(n >= 8 * 2);
    if (n > 8 * 5)
        wt_test_fail(__FILE__, __LINE__,
                     "%d limit changes over 8 GPUs in 40 s with a 10 s interval: %s", n, record());
}

WT_TEST(without_an_interval_the_flapping_budget_would_change_limits_every_tick)
{
    /* the contrast: what the interval prevents */
    use_fake("600,0,0");
    WT_ASSERT(flap(0) >= 8 * 39);
}

/* A store with one running job tagged cap=never on gpus (a JSON array), via the jobs API. */
static void never_job(struct wt_config *cfg, const char *gpus)
{
    struct wt_store *st = NULL;
    struct wt_jobs *j = NULL;
    struct wt_err err = {{0}};
    wt_config_defaults(cfg);
    snprintf(cfg->store.path, sizeof cfg->store.path, "%s/w.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(cfg->store.path, NULL, &st, &err), 0);
    WT_EQ_INT(wt_jobs_open(cfg->store.path, NULL, &j, &err), 0);
    char body[256];
    snprintf(body, sizeof body,
             "{\"name\": \"train\", \"tags\": {\"cap\": \"never\"}, \"gpus\": %s}", gpus);
    unsigned status = 0;
    char *json = NULL;
    WT_EQ_INT(wt_api_jobs_handle(j, "POST", "/api/v1/jobs", body, strlen(body), 0, wt_now_real_ns(),
                                 &status, &json),
              0);
    WT_EQ_INT(status, 201);
    free(json);
    wt_jobs_close(j);
    wt_store_close(st);
}

WT_TEST(gpus_of_a_cap_never_job_are_never_capped_and_the_budget_spreads_over_the_others)
{
    use_fake("600,0,0"); /* 8 x 600 W = 4800 W */
    struct wt_config cfg;
    never_job(&cfg, "[1]");
    char names[4][WT_JOBS_GPU_LEN];
    size_t n = 0;
    bool all = true;
    WT_EQ_INT(wt_jobs_tagged_gpus(cfg.store.path, "cap", "never", names, 4, &n, &all), 0);
    WT_EQ_INT(n, 1);
    WT_EQ_STR(names[0], "1");
    WT_ASSERT(!all);
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 300);
    c.power_budget_watts = 4000;
    c.budget_clear_share = 0.9;
    struct wt_cap *cap = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_cap_open(&cfg, &c, &cap, &err), 0);
    struct wt_batch b = {0};
    snapshot(&b, 0);
    wt_cap_budget(cap, &b, wt_now_real_ns());
    WT_NEAR(enforced_w(1), 700, 1e-9);
    /* the others share 3800 W less GPU 1's 600 W */
    for (int i = 0; i < 8; i++)
        if (i != 1)
            WT_NEAR(enforced_w(i), 3200 / 7.0, 0.5);
    /* an alert's cap on it is not applied either */
    struct wt_alert a = alert("Hot", 1, WT_ALERT_FIRING, 300);
    wt_cap_apply(cap, &a);
    WT_NEAR(enforced_w(1), 700, 1e-9);
    WT_ASSERT(
        fam_value(wt_cap_family_reasons, cap, "reason=\"cap_never\",dry_run=\"false\"", NULL) >= 1);
    wt_cap_close(cap);
    /* a budget the others cannot meet at their minimums: every other GPU at 200 W, and said */
    c.power_budget_watts = 1500;
    WT_EQ_INT(wt_cap_open(&cfg, &c, &cap, &err), 0);
    char logp[700];
    snprintf(logp, sizeof logp, "%s/stderr", wt_test_dir());
    fflush(stderr);
    int saved = dup(2);
    WT_ASSERT(freopen(logp, "w", stderr) != NULL);
    snapshot(&b, 600);
    wt_cap_budget(cap, &b, wt_now_real_ns());
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *log = wt_test_read(logp, NULL);
    WT_CONTAINS(log, "power budget 1500 W cannot be met: 1 GPUs held by cap=never jobs draw 600 W "
                     "and the other GPUs' floors add up to 1400 W");
    free(log);
    WT_NEAR(enforced_w(1), 700, 1e-9);
    for (int i = 0; i < 8; i++)
        if (i != 1)
            WT_NEAR(enforced_w(i), 200, 1e-9);
    wt_cap_close(cap);
    wt_batch_free(&b);
}

WT_TEST(a_cap_never_job_on_capped_gpus_lifts_their_caps_at_the_next_tick)
{
    use_fake("600,0,0");
    struct wt_config cfg;
    wt_config_defaults(&cfg);
    snprintf(cfg.store.path, sizeof cfg.store.path, "%s/w.db", wt_test_dir());
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 300);
    c.cap_min_interval_ns = 60 * WT_NS_PER_S; /* a safety restore is not held back */
    struct wt_cap *cap = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_cap_open(&cfg, &c, &cap, &err), 0);
    struct wt_alert a = alert("Hot", 4, WT_ALERT_FIRING, 300);
    wt_cap_apply(cap, &a);
    WT_NEAR(enforced_w(4), 300, 1e-9);
    never_job(&cfg, "[]"); /* no GPUs named: it holds every GPU */
    struct wt_batch b = {0};
    snapshot(&b, 0);
    wt_cap_budget(cap, &b, wt_now_real_ns());
    WT_NEAR(enforced_w(4), 700, 1e-9);
    WT_EQ_STR(rec_lines(), "");
    wt_cap_close(cap);
    wt_batch_free(&b);
}

WT_TEST(a_record_line_that_is_not_one_is_an_error_naming_the_line)
{
    char path[700];
    snprintf(path, sizeof path, "%s/power-caps", wt_test_dir());
    wt_test_write(path, "# header\nGPU-x 1 700 450 123 Hot\nGPU-y two 700\n");
    struct wt_cap_rec r[4];
    size_t n = 0;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_cap_record_read(path, r, 4, &n, &err), -EINVAL);
    WT_CONTAINS(err.msg, "power-caps:3: expected UUID GPU OWN_W SET_W T_NS REASON");
}

/* Parses the `alerts` section of yaml ("c.yaml") into *out; the message in err. */
static int parse_alerts(const char *yaml, struct wt_alerts_config *out, struct wt_err *err)
{
    struct wt_ynode *root = NULL;
    int rc = wt_yaml_parse("c.yaml", yaml, strlen(yaml), &root, err);
    if (rc == 0)
        rc = wt_alerts_config_parse("c.yaml", wt_y_get(root, "alerts"), out, err);
    wt_ynode_free(root);
    return rc;
}

WT_TEST(guardrail_and_record_keys_are_read_and_checked)
{
    struct wt_alerts_config c;
    struct wt_err err = {{0}};
    WT_EQ_INT(parse_alerts("alerts: {}\n", &c, &err), 0);
    WT_NEAR(c.cap_floor_watts, 0, 0);
    WT_EQ_INT(c.cap_min_interval_ns, 10 * WT_NS_PER_S);
    WT_EQ_STR(c.cap_record, "");
    WT_EQ_INT(parse_alerts("alerts:\n  cap_floor_watts: 250\n  cap_min_interval: 30s\n"
                           "  cap_record: /run/wattage/caps\n",
                           &c, &err),
              0);
    WT_NEAR(c.cap_floor_watts, 250, 0);
    WT_EQ_INT(c.cap_min_interval_ns, 30 * WT_NS_PER_S);
    WT_EQ_STR(c.cap_record, "/run/wattage/caps");
    WT_EQ_INT(parse_alerts("alerts:\n  cap_min_interval: 0\n", &c, &err), 0);
    WT_EQ_INT(c.cap_min_interval_ns, 0);
    WT_EQ_INT(parse_alerts("alerts:\n  cap_floor_watts: -5\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "c.yaml:2: alerts.cap_floor_watts");
    WT_EQ_INT(parse_alerts("alerts:\n  cap_min_interval: soon\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "c.yaml:2: alerts.cap_min_interval");
    WT_EQ_INT(parse_alerts("alerts:\n  cap_min_interval: 10ms\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "c.yaml:2: alerts.cap_min_interval: expected a duration from 1s to 1h");
    /* the record beside the store by default */
    struct wt_config cfg;
    char path[WT_PATH_LEN];
    wt_config_defaults(&cfg);
    WT_EQ_INT(parse_alerts("alerts: {}\n", &c, &err), 0);
    WT_EQ_INT(wt_cap_record_path(&cfg, &c, path, sizeof path), 0);
    WT_EQ_STR(path, "/var/lib/wattage/power-caps");
    WT_EQ_INT(wt_cap_record_path(NULL, &c, path, sizeof path), -ENOENT);
    WT_EQ_STR(path, "");
}

/* ---- the order NVML sessions end in ---- */

/* GPU count through the fake without a session of the test's own: UNINITIALIZED after the last
 * session ended (the fake refuses every call then, as the library does). */
static nvmlReturn_t count_without_session(void)
{
    void *dl = dlopen(wt_test_build_path("tests/fakes/libnvidia-ml.so.1"), RTLD_NOW);
    WT_ASSERT(dl);
    wt_nvml_count_fn *count = (wt_nvml_count_fn *)dlsym(dl, "nvmlDeviceGetCount_v2");
    unsigned int n = 0;
    nvmlReturn_t r = count(&n);
    dlclose(dl);
    return r;
}

WT_TEST(caps_are_restored_before_any_nvml_session_ends_in_whatever_order_they_stop)
{
    use_fake("600,0,0");
    /* A library that ends every session at the first nvmlShutdown (it does not count pairs). */
    setenv("FAKE_NVML_SHUTDOWN_ALL", "1", 1);
    struct wt_err err = {{0}};
    void *col = NULL;
    WT_EQ_INT(wt_nvml_collector.open(NULL, &col, &err), 0);
    struct wt_alerts_config c;
    one_rule(&c, "Hot", 400, 0);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 0, WT_ALERT_FIRING, 400);
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "0 400");
    /* The daemon stops its collectors first, then the capper. */
    wt_nvml_collector.close(col);
    WT_EQ_INT(count_without_session(), NVML_SUCCESS); /* the capper's session still stands */
    WT_NEAR(fam_value(wt_cap_family_left_capped, cap, "", NULL), 0, 0);
    wt_cap_close(cap);
    WT_EQ_STR(record(), "0 400;0 700");                           /* restored */
    WT_EQ_INT(count_without_session(), NVML_ERROR_UNINITIALIZED); /* and only then shut down */
    /* The other order too. */
    WT_EQ_INT(wt_nvml_collector.open(NULL, &col, &err), 0);
    cap = open_cap(&c);
    wt_cap_apply(cap, &a);
    wt_cap_close(cap);
    WT_EQ_STR(record(), "0 400;0 700;0 400;0 700");
    WT_EQ_INT(count_without_session(), NVML_SUCCESS); /* the collector's goes on */
    wt_nvml_collector.close(col);
    WT_EQ_INT(count_without_session(), NVML_ERROR_UNINITIALIZED);
}

WT_TEST(a_gpu_left_capped_when_nvml_went_away_is_counted_and_kept_in_the_record)
{
    use_fake("600,0,0");
    setenv("FAKE_NVML_SHUTDOWN_ALL", "1", 1);
    struct wt_alerts_config c;
    recorded_rule(&c, "Hot", 400);
    struct wt_cap *cap = open_cap(&c);
    struct wt_alert a = alert("Hot", 3, WT_ALERT_FIRING, 400);
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "3 400");
    /* Something outside wattage's sessions ends NVML under the capper (init, then shutdown). */
    void *dl = dlopen(wt_test_build_path("tests/fakes/libnvidia-ml.so.1"), RTLD_NOW);
    wt_nvml_init_fn *init = (wt_nvml_init_fn *)dlsym(dl, "nvmlInit_v2");
    wt_nvml_shutdown_fn *shutdown = (wt_nvml_shutdown_fn *)dlsym(dl, "nvmlShutdown");
    WT_EQ_INT(init(), NVML_SUCCESS);
    WT_EQ_INT(shutdown(), NVML_SUCCESS);
    /* The alert resolves: restoring fails (twice), the GPU keeps 400 W, and says so. */
    a.state = WT_ALERT_RESOLVED;
    wt_cap_apply(cap, &a);
    WT_EQ_STR(record(), "3 400");
    WT_NEAR(fam_value(wt_cap_family_left_capped, cap, "", NULL), 1, 0);
    WT_NEAR(fam_value(wt_cap_family_limits, cap, "gpu=\"3\"", NULL), 400, 1e-9);
    wt_cap_close(cap);
    /* The record keeps the line for the next start or `wattage cap clear`. */
    WT_EQ_STR(rec_lines(), "3 700 400 Hot");
    dlclose(dl);
}

/* ---- alerts.idle_policy ---- */

WT_TEST(idle_policy_keys_are_read_and_checked)
{
    struct wt_alerts_config c;
    struct wt_err err = {{0}};
    WT_EQ_INT(parse_alerts("alerts: {}\n", &c, &err), 0);
    WT_EQ_INT(c.idle_policy.mode, WT_IDLE_OFF);
    WT_EQ_INT(c.idle_policy.idle_for_ns, 600 * WT_NS_PER_S);
    WT_NEAR(c.idle_policy.limit_watts, 0, 0);
    WT_EQ_INT(
        parse_alerts("alerts:\n  idle_policy: {mode: limit, idle_for: 2m, limit_watts: 250}\n", &c,
                     &err),
        0);
    WT_EQ_INT(c.idle_policy.mode, WT_IDLE_LIMIT);
    WT_EQ_INT(c.idle_policy.idle_for_ns, 120 * WT_NS_PER_S);
    WT_NEAR(c.idle_policy.limit_watts, 250, 0);
    WT_EQ_INT(parse_alerts("alerts:\n  idle_policy:\n    mode: dry_run\n", &c, &err), 0);
    WT_EQ_INT(c.idle_policy.mode, WT_IDLE_DRY_RUN);
    WT_EQ_INT(parse_alerts("alerts:\n  idle_policy:\n    mode: off\n", &c, &err), 0);
    WT_EQ_INT(c.idle_policy.mode, WT_IDLE_OFF);
    WT_EQ_INT(parse_alerts("alerts:\n  idle_policy:\n    mode: sleep\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "c.yaml:3: alerts.idle_policy.mode");
    WT_CONTAINS(err.msg, "off, dry_run, limit");
    WT_EQ_INT(
        parse_alerts("alerts:\n  idle_policy:\n    mode: limit\n    idle_for: -5m\n", &c, &err),
        -EINVAL);
    WT_CONTAINS(err.msg, "c.yaml:4: alerts.idle_policy.idle_for");
    WT_EQ_INT(parse_alerts("alerts:\n  idle_policy:\n    idle_for: 0\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "c.yaml:3: alerts.idle_policy.idle_for");
    WT_EQ_INT(parse_alerts("alerts:\n  idle_policy:\n    limit_watts: -1\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "c.yaml:3: alerts.idle_policy.limit_watts");
    WT_EQ_INT(parse_alerts("alerts:\n  idle_policy:\n    clocks: locked\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "c.yaml:3: alerts.idle_policy");
    WT_CONTAINS(err.msg, "clocks");
    WT_EQ_INT(parse_alerts("alerts:\n  idle_policy: limit\n", &c, &err), -EINVAL);
    WT_CONTAINS(err.msg, "c.yaml:2: alerts.idle_policy");
    /* an error leaves the defaults: the policy off */
    WT_EQ_INT(c.idle_policy.mode, WT_IDLE_OFF);
}

/* A snapshot of 8 GPUs at power_w: those in idle_mask idle (dark.h's gauge 1, utilization 0,
 * an idle level of level_w when > 0), the others busy (gauge 0, utilization 0.5). */
static void idle_snapshot(struct wt_batch *b, unsigned idle_mask, double power_w, double level_w)
{
    wt_batch_clear(b);
    int64_t t = wt_now_real_ns();
    for (int i = 0; i < 8; i++) {
        char labels[64], g[16];
        bool idle = idle_mask & (1u << i);
        snprintf(g, sizeof g, "%d", i);
        WT_ASSERT(wt_labels(labels, sizeof labels, "gpu", g, "uuid", "GPU-x", NULL) == 0);
        WT_EQ_INT(wt_batch_add(b, WT_M_GPU_POWER_W, labels, t, power_w), 0);
        WT_EQ_INT(wt_batch_add(b, WT_M_GPU_UTIL_RATIO, labels, t, idle ? 0 : 0.5), 0);
        WT_EQ_INT(wt_batch_add(b, WT_M_GPU_IDLE, labels, t, idle ? 1 : 0), 0);
        if (idle && level_w > 0)
            WT_EQ_INT(wt_batch_add(b, WT_M_GPU_IDLE_POWER_W, labels, t, level_w), 0);
    }
}

static void idle_config(struct wt_alerts_config *c, enum wt_idle_mode mode, double limit_w)
{
    memset(c, 0, sizeof *c);
    c->enabled = true;
    c->budget_clear_share = 0.95;
    c->cap_min_interval_ns = 10 * WT_NS_PER_S; /* the default: a lift is never held back */
    c->idle_policy.mode = mode;
    c->idle_policy.idle_for_ns = 2 * WT_NS_PER_S;
    c->idle_policy.limit_watts = limit_w;
    snprintf(rec_path, sizeof rec_path, "%s/power-caps", wt_test_dir());
    snprintf(c->cap_record, sizeof c->cap_record, "%s", rec_path);
}

WT_TEST(idle_policy_off_opens_nothing)
{
    use_fake("60,0,0");
    struct wt_alerts_config c;
    idle_config(&c, WT_IDLE_OFF, 0);
    struct wt_cap *cap = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_cap_open(NULL, &c, &cap, &err), 0);
    WT_ASSERT(cap == NULL);
    WT_EQ_STR(record(), "");
}

WT_TEST(idle_policy_dry_run_exports_what_it_would_do_and_sets_nothing)
{
    use_fake("300,0,0");
    struct wt_alerts_config c;
    idle_config(&c, WT_IDLE_DRY_RUN, 0);
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    int64_t t = wt_now_real_ns();
    idle_snapshot(&b, 0x1, 300, 300); /* GPU 0 idle at 300 W, the others busy */
    wt_cap_budget(cap, &b, t);
    wt_cap_budget(cap, &b, t + WT_NS_PER_S);
    WT_ASSERT(isnan(fam_value(wt_cap_family_idle_limits, cap, "gpu=\"0\",dry_run=\"true\"", NULL)));
    wt_cap_budget(cap, &b, t + 2 * WT_NS_PER_S); /* idle for idle_for */
    size_t n = 0;
    WT_NEAR(fam_value(wt_cap_family_idle_limits, cap, "gpu=\"0\",dry_run=\"true\"", &n), 200, 0);
    WT_EQ_INT(n, 1); /* the busy GPUs are not held */
    WT_NEAR(fam_value(wt_cap_family_idle_saving, cap, "gpu=\"0\",dry_run=\"true\"", NULL), 100,
            1e-9);
    /* nothing was done: no action counted */
    WT_NEAR(fam_value(wt_cap_family_actions, cap, "action=\"idle_cap\",dry_run=\"false\"", NULL), 0,
            0);
    WT_EQ_STR(record(), ""); /* no limit set */
    WT_EQ_STR(rec_lines(), "");
    WT_NEAR(enforced_w(0), 700, 0);
    /* busy again: the would-be cap goes */
    idle_snapshot(&b, 0, 300, 0);
    wt_cap_budget(cap, &b, t + 3 * WT_NS_PER_S);
    WT_ASSERT(isnan(fam_value(wt_cap_family_idle_limits, cap, "gpu=\"0\",dry_run=\"true\"", NULL)));
    wt_cap_close(cap);
    WT_EQ_STR(record(), "");
    wt_batch_free(&b);
}

WT_TEST(idle_policy_estimates_no_saving_for_a_gpu_idling_under_the_limit)
{
    use_fake("60,0,0");
    struct wt_alerts_config c;
    idle_config(&c, WT_IDLE_DRY_RUN, 0);
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    int64_t t = wt_now_real_ns();
    idle_snapshot(&b, 0x1, 60, 60); /* as a Hopper GPU idles: ~60-85 W, its minimum 200 W */
    wt_cap_budget(cap, &b, t);
    wt_cap_budget(cap, &b, t + 3 * WT_NS_PER_S);
    WT_NEAR(fam_value(wt_cap_family_idle_limits, cap, "gpu=\"0\",dry_run=\"true\"", NULL), 200, 0);
    WT_NEAR(fam_value(wt_cap_family_idle_saving, cap, "gpu=\"0\",dry_run=\"true\"", NULL), 0, 0);
    wt_cap_close(cap);
    wt_batch_free(&b);
}

WT_TEST(idle_policy_caps_after_idle_for_recorded_first_and_lifts_when_busy)
{
    use_fake("300,0,0");
    struct wt_alerts_config c;
    idle_config(&c, WT_IDLE_LIMIT, 250);
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    int64_t t = wt_now_real_ns();
    idle_snapshot(&b, 0x5, 300, 300); /* GPUs 0 and 2 idle */
    wt_cap_budget(cap, &b, t);
    wt_cap_budget(cap, &b, t + WT_NS_PER_S);
    WT_EQ_STR(record(), "");
    wt_cap_budget(cap, &b, t + 2 * WT_NS_PER_S);
    WT_NEAR(enforced_w(0), 250, 0);
    WT_NEAR(enforced_w(2), 250, 0);
    WT_NEAR(enforced_w(1), 700, 0);
    WT_EQ_STR(rec_lines(), "0 700 250 idle;2 700 250 idle");
    WT_NEAR(fam_value(wt_cap_family_idle_limits, cap, "gpu=\"0\",dry_run=\"false\"", NULL), 250, 0);
    WT_NEAR(fam_value(wt_cap_family_idle_saving, cap, "gpu=\"0\",dry_run=\"false\"", NULL), 50,
            1e-9);
    WT_NEAR(fam_value(wt_cap_family_actions, cap, "action=\"idle_cap\",dry_run=\"false\"", NULL), 2,
            0);
    WT_NEAR(fam_value(wt_cap_family_limits, cap, "gpu=\"0\"", NULL), 250, 0);
    /* GPU 0 busy at the next tick (well within cap_min_interval): lifted in that tick */
    idle_snapshot(&b, 0x4, 250, 250);
    wt_cap_budget(cap, &b, t + 3 * WT_NS_PER_S);
    WT_NEAR(enforced_w(0), 700, 0);
    WT_NEAR(enforced_w(2), 250, 0);
    WT_EQ_STR(rec_lines(), "2 700 250 idle");
    WT_NEAR(fam_value(wt_cap_family_reasons, cap, "reason=\"idle_ended\",dry_run=\"false\"", NULL),
            1, 0);
    WT_ASSERT(
        isnan(fam_value(wt_cap_family_idle_limits, cap, "gpu=\"0\",dry_run=\"false\"", NULL)));
    /* a limit under the GPU's minimum is held at it */
    wt_cap_close(cap);
    WT_NEAR(enforced_w(2), 700, 0);
    WT_EQ_STR(rec_lines(), "");
    idle_config(&c, WT_IDLE_LIMIT, 50);
    c.cap_floor_watts = 220;
    cap = open_cap(&c);
    idle_snapshot(&b, 0x1, 300, 300);
    wt_cap_budget(cap, &b, t);
    wt_cap_budget(cap, &b, t + 2 * WT_NS_PER_S);
    WT_NEAR(enforced_w(0), 220, 0); /* max(50 W, the 200 W minimum, the 220 W floor) */
    wt_cap_close(cap);
    wt_batch_free(&b);
}

WT_TEST(a_job_start_lifts_the_idle_caps_of_its_gpus_before_it_returns)
{
    use_fake("300,0,0");
    struct wt_alerts_config c;
    idle_config(&c, WT_IDLE_LIMIT, 0);
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    int64_t t = wt_now_real_ns();
    idle_snapshot(&b, 0x7, 300, 300);
    wt_cap_budget(cap, &b, t);
    wt_cap_budget(cap, &b, t + 2 * WT_NS_PER_S);
    for (int i = 0; i < 3; i++)
        WT_NEAR(enforced_w(i), 200, 0);
    const char gpus[1][WT_JOBS_GPU_LEN] = {"1"};
    wt_cap_jobs_started(cap, gpus, 1);
    WT_NEAR(enforced_w(1), 700, 0); /* before it returned */
    WT_NEAR(enforced_w(0), 200, 0);
    WT_NEAR(fam_value(wt_cap_family_reasons, cap, "reason=\"job_start\",dry_run=\"false\"", NULL),
            1, 0);
    /* still idle (no process yet): its idle time counts from the start, not capped again yet */
    wt_cap_budget(cap, &b, t + 3 * WT_NS_PER_S);
    WT_NEAR(enforced_w(1), 700, 0);
    /* a job naming no GPU may use any: every idle cap goes */
    wt_cap_jobs_started(cap, NULL, 0);
    WT_NEAR(enforced_w(0), 700, 0);
    WT_NEAR(enforced_w(2), 700, 0);
    WT_EQ_STR(rec_lines(), "");
    wt_cap_close(cap);
    wt_batch_free(&b);
}

WT_TEST(an_idle_cap_a_killed_run_left_is_restored_at_the_next_start_with_the_policy_off)
{
    use_fake("300,0,0");
    struct wt_alerts_config c;
    idle_config(&c, WT_IDLE_LIMIT, 0);
    pid_t pid = fork();
    WT_ASSERT(pid >= 0);
    if (pid == 0) {
        struct wt_cap *cap = NULL;
        struct wt_err err = {{0}};
        if (wt_cap_open(NULL, &c, &cap, &err) != 0 || !cap)
            _exit(1);
        struct wt_batch b = {0};
        int64_t t = wt_now_real_ns();
        idle_snapshot(&b, 0x1, 300, 300);
        wt_cap_budget(cap, &b, t);
        wt_cap_budget(cap, &b, t + 2 * WT_NS_PER_S);
        _exit(0); /* as kill -9 would: no close, no restore */
    }
    int st = 0;
    WT_EQ_INT(waitpid(pid, &st, 0), pid);
    WT_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    WT_NEAR(enforced_w(0), 200, 0);
    WT_EQ_STR(rec_lines(), "0 700 200 idle");
    c.idle_policy.mode = WT_IDLE_OFF;
    wt_cap_recover(NULL, &c);
    WT_NEAR(enforced_w(0), 700, 0);
    WT_EQ_STR(rec_lines(), "");
}

/* What the jobs module handed its start hook: the names joined by ',' and how many calls. */
static char hook_got[512];
static int hook_calls;

static void record_hook(void *ctx, const char (*gpus)[WT_JOBS_GPU_LEN], size_t n)
{
    (void)ctx;
    hook_calls++;
    hook_got[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i)
            strcat(hook_got, ",");
        strcat(hook_got, gpus[i]);
    }
}

static unsigned post(struct wt_jobs *j, const char *path, const char *body)
{
    unsigned status = 0;
    char *json = NULL;
    WT_EQ_INT(wt_api_jobs_handle(j, "POST", path, body, strlen(body), 0, wt_now_real_ns(), &status,
                                 &json),
              0);
    free(json);
    return status;
}

WT_TEST(the_jobs_start_hook_hears_each_start_and_each_job_given_its_gpus_before_the_answer)
{
    struct wt_config cfg;
    struct wt_store *st = NULL;
    struct wt_jobs *j = NULL;
    struct wt_err err = {{0}};
    wt_config_defaults(&cfg);
    snprintf(cfg.store.path, sizeof cfg.store.path, "%s/w.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(cfg.store.path, NULL, &st, &err), 0);
    WT_EQ_INT(wt_jobs_open(cfg.store.path, NULL, &j, &err), 0);
    wt_jobs_set_start_hook(j, record_hook, NULL);
    hook_calls = 0;
    WT_EQ_INT(post(j, "/api/v1/jobs", "{\"name\": \"a\", \"gpus\": [0, \"GPU-fake-0000-3\"]}"),
              201);
    WT_EQ_INT(hook_calls, 1);
    WT_EQ_STR(hook_got, "0,GPU-fake-0000-3");
    WT_EQ_INT(post(j, "/api/v1/jobs", "{\"name\": \"b\"}"), 201);
    WT_EQ_INT(hook_calls, 2);
    WT_EQ_STR(hook_got, ""); /* names none: may use any */
    WT_EQ_INT(post(j, "/api/v1/jobs/b/gpus", "{\"gpus\": [5]}"), 200);
    WT_EQ_INT(hook_calls, 3);
    WT_EQ_STR(hook_got, "5");
    /* refused requests start nothing */
    WT_EQ_INT(post(j, "/api/v1/jobs", "{\"name\": \"a\"}"), 409);
    WT_EQ_INT(post(j, "/api/v1/jobs/b/gpus", "{\"gpus\": [6]}"), 409);
    WT_EQ_INT(post(j, "/api/v1/jobs", "{\"gpus\": \"x\"}"), 400);
    WT_EQ_INT(hook_calls, 3);
    wt_jobs_close(j);
    wt_store_close(st);
}

WT_TEST(run_dry_run_turns_the_idle_policy_in_mode_limit_into_a_dry_run)
{
    use_fake("300,0,0");
    struct wt_alerts_config c;
    idle_config(&c, WT_IDLE_LIMIT, 0);
    wt_cap_force_dry_run(true);
    struct wt_cap *cap = open_cap(&c);
    wt_cap_force_dry_run(false);
    struct wt_batch b = {0};
    int64_t t = wt_now_real_ns();
    idle_snapshot(&b, 0x1, 300, 300);
    wt_cap_budget(cap, &b, t);
    wt_cap_budget(cap, &b, t + 2 * WT_NS_PER_S);
    WT_NEAR(fam_value(wt_cap_family_idle_limits, cap, "gpu=\"0\",dry_run=\"true\"", NULL), 200, 0);
    WT_NEAR(fam_value(wt_cap_family_actions, cap, "action=\"idle_cap\",dry_run=\"true\"", NULL), 1,
            0);
    WT_EQ_STR(record(), "");
    WT_EQ_STR(rec_lines(), "");
    const char gpus[1][WT_JOBS_GPU_LEN] = {"0"};
    wt_cap_jobs_started(cap, gpus, 1);
    WT_ASSERT(isnan(fam_value(wt_cap_family_idle_limits, cap, "gpu=\"0\",dry_run=\"true\"", NULL)));
    wt_cap_close(cap);
    WT_EQ_STR(record(), "");
    wt_batch_free(&b);
}

WT_TEST(an_idle_cap_the_driver_refuses_is_tried_again_a_minute_later_not_every_tick)
{
    use_fake("300,0,0");
    setenv("FAKE_NVML_NOT_SUPPORTED", "power_limit", 1); /* every limit call refused */
    struct wt_alerts_config c;
    idle_config(&c, WT_IDLE_LIMIT, 250);
    struct wt_cap *cap = open_cap(&c);
    struct wt_batch b = {0};
    int64_t t = wt_now_real_ns();
    idle_snapshot(&b, 0x1, 300, 300);
    for (int k = 0; k <= 12; k++)
        wt_cap_budget(cap, &b, t + k * WT_NS_PER_S);
    const char *err = "action=\"error\",dry_run=\"false\"";
    WT_NEAR(fam_value(wt_cap_family_actions, cap, err, NULL), 1, 0); /* not one per tick */
    wt_cap_budget(cap, &b, t + 70 * WT_NS_PER_S);
    WT_NEAR(fam_value(wt_cap_family_actions, cap, err, NULL), 2, 0);
    WT_EQ_STR(rec_lines(), ""); /* the record says what the GPU has: nothing */
    /* busy again: nothing to lift, nothing more tried */
    idle_snapshot(&b, 0, 300, 0);
    wt_cap_budget(cap, &b, t + 200 * WT_NS_PER_S);
    WT_NEAR(fam_value(wt_cap_family_actions, cap, err, NULL), 2, 0);
    wt_cap_close(cap);
    unsetenv("FAKE_NVML_NOT_SUPPORTED");
    wt_batch_free(&b);
}
