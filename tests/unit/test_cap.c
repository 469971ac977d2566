/* SPDX-License-Identifier: MIT */
/*
 * Power capping (src/alert/cap.c) on the fake NVML only: it records every limit set in
 * FAKE_NVML_LIMITS_FILE, reports it back as the enforced limit, clamps its power to it and
 * refuses values outside 200..700 W like the driver. Never a real GPU.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "alert/alert.h"
#include "collect/nvml_api.h"
#include "core/clock.h"
#include "runner.h"
#include "serve/expo.h"

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
