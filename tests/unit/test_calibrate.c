/* SPDX-License-Identifier: MIT */
/*
 * Calibration against the wall: the least-squares line and its 95 % intervals (checked against
 * figures worked by hand), a wall that follows the chips with a known offset and slope recovered
 * within 2 % through meter noise, a wall that does not follow reported as "wall does not track
 * chip" with the reason, the model file (round trip, one node replaced, bad files named), and
 * the reconciliation against a model (unaccounted watts, drift).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/calibrate.h"
#include "audit/reconcile.h"
#include "runner.h"

WT_TEST(calib_fit_matches_hand_worked_figures)
{
    double x[] = {1, 2, 3, 4}, y[] = {2.1, 3.9, 6.2, 7.8};
    struct wt_calib_fit f;
    WT_EQ_INT(wt_calib_fit(x, y, 4, &f), 0);
    WT_NEAR(f.a, 0.15, 1e-9);
    WT_NEAR(f.b, 1.94, 1e-9);
    WT_NEAR(f.resid_sd_w, 0.2024845673131658, 1e-9);
    WT_NEAR(f.b_ci, 0.3896532224940529, 1e-9);
    WT_NEAR(f.a_ci, 1.067109297822861, 1e-9);
    WT_NEAR(f.r2, 0.9956613756613757, 1e-9);
    WT_NEAR(wt_calib_t95(1), 12.706, 1e-9);
    WT_NEAR(wt_calib_t95(60), 2.000, 0.002);
    WT_NEAR(wt_calib_t95(120), 1.980, 0.002);
    WT_ASSERT(f.tracks);
    WT_EQ_INT(wt_calib_fit(x, y, 1, &f), -EINVAL);
    double bad[] = {1, NAN};
    WT_EQ_INT(wt_calib_fit(bad, y, 2, &f), -EINVAL);
}

WT_TEST(calib_recovers_offset_and_slope_through_noise)
{
    /* 8 GPUs stepped 100/75/50/25 % (5600, 4200, 2800, 1600 W: the last at the 200 W minimum),
     * a wall of 412 W + 1.07 x chips, each step's mean carrying up to +-6 W of meter noise */
    double chips[] = {5600, 4200, 2800, 1600}, wall[4];
    double noise[] = {4.1, -5.7, 6.0, -3.3};
    for (int i = 0; i < 4; i++)
        wall[i] = 412 + 1.07 * chips[i] + noise[i];
    struct wt_calib_fit f;
    WT_EQ_INT(wt_calib_fit(chips, wall, 4, &f), 0);
    WT_ASSERT(fabs(f.a - 412) / 412 < 0.02);
    WT_ASSERT(fabs(f.b - 1.07) / 1.07 < 0.02);
    WT_ASSERT(f.tracks);
    /* the intervals hold the truth and the residuals are the noise's size */
    WT_ASSERT(fabs(f.a - 412) <= f.a_ci && fabs(f.b - 1.07) <= f.b_ci);
    WT_ASSERT(f.max_resid_w < 8 && f.resid_sd_w > 1);
    WT_EQ_STR(f.why, "");
}

WT_TEST(calib_reports_a_wall_that_does_not_track)
{
    double chips[] = {5600, 4200, 2800, 1600};
    /* a wall stuck near 6 kW whatever the chips do (a meter on the wrong outlet) */
    double wall[] = {6010, 5985, 6020, 5990};
    struct wt_calib_fit f;
    WT_EQ_INT(wt_calib_fit(chips, wall, 4, &f), 0);
    WT_ASSERT(!f.tracks);
    WT_ASSERT(strncmp(f.why, "wall does not track chip: ", 26) == 0);
    /* a wall that moves against the load at random */
    double wall2[] = {6100, 5200, 6900, 5600};
    WT_EQ_INT(wt_calib_fit(chips, wall2, 4, &f), 0);
    WT_ASSERT(!f.tracks);
    WT_ASSERT(strstr(f.why, "wall does not track chip") != NULL);
    /* steps that did not move the chips (limits above what the load draws) */
    double flat[] = {3000, 3005, 2998, 3002}, w3[] = {3600, 3606, 3598, 3603};
    WT_EQ_INT(wt_calib_fit(flat, w3, 4, &f), 0);
    WT_ASSERT(!f.tracks);
    WT_ASSERT(strstr(f.why, "moved the chips' power by") != NULL);
    /* two steps: a line, but no interval */
    WT_EQ_INT(wt_calib_fit(chips, wall, 2, &f), 0);
    WT_ASSERT(!f.tracks && isnan(f.b_ci));
}

/*
 * A PDU polled every 30 s serves one reading to every request of a 4-s step: only readings taken
 * inside the step's settled window count, each once; the hold it needs is 4 x its period.
 */
WT_TEST(calib_fresh_counts_each_reading_once_inside_the_window)
{
    const int64_t s = 1000000000LL, t0 = 1764439200LL * s;
    struct wt_calib_fresh f = {.from_ns = t0 + 2 * s, .to_ns = t0 + 4 * s};
    WT_ASSERT(!wt_calib_fresh_add(&f, t0 - 25 * s, 1000)); /* taken before the step: stale */
    WT_ASSERT(!wt_calib_fresh_add(&f, t0 - 25 * s, 1000)); /* and served again */
    WT_ASSERT(!wt_calib_fresh_add(&f, t0 + 1 * s, 1100));  /* the first, unsettled half */
    WT_EQ_INT(f.n, 0);
    WT_ASSERT(f.last_ns == t0 + 1 * s);
    WT_ASSERT(wt_calib_fresh_add(&f, t0 + 2 * s, 1200));  /* the window's first instant */
    WT_ASSERT(!wt_calib_fresh_add(&f, t0 + 2 * s, 1200)); /* served again: counted once */
    WT_ASSERT(!wt_calib_fresh_add(&f, t0 + 2 * s, 1200));
    WT_ASSERT(wt_calib_fresh_add(&f, t0 + 4 * s, 1300));  /* its last instant */
    WT_ASSERT(!wt_calib_fresh_add(&f, t0 + 3 * s, 1250)); /* older than one counted */
    WT_ASSERT(!wt_calib_fresh_add(&f, t0 + 5 * s, 900));  /* after the step */
    WT_ASSERT(!wt_calib_fresh_add(&f, t0 + 3500 * s / 1000, NAN));
    WT_EQ_INT(f.n, 2);
    WT_NEAR(f.sum_w / f.n, 1250, 1e-9);
    WT_ASSERT(f.last_ns == t0 + 5 * s);

    WT_NEAR(wt_calib_min_hold_s(30, 0.02), 120, 1e-9); /* two readings in a 60-s half */
    WT_NEAR(wt_calib_min_hold_s(1, 3.2), 13, 1e-9);    /* a poll of 3.2 s delays the next */
    WT_NEAR(wt_calib_min_hold_s(0.5, 0), 2, 1e-9);
    WT_NEAR(wt_calib_min_hold_s(0, 0), 0, 1e-9);
}

WT_TEST(calib_model_file_round_trip)
{
    char dir[] = "/tmp/wt-calib-XXXXXX";
    WT_ASSERT(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/calibration.json", dir);
    struct wt_err err = {{0}};
    struct wt_calib_model m[2] = {0}, got[4];
    size_t n = 9;
    WT_EQ_INT(wt_calib_load(path, got, 4, &n, &err), 0); /* no file: no models */
    WT_EQ_INT(n, 0);
    double x[] = {1000, 2000, 3000}, y[] = {1500, 2600, 3700};
    snprintf(m[0].node, sizeof m[0].node, "gpu-a1");
    snprintf(m[0].wall, sizeof m[0].wall, "bmc");
    snprintf(m[0].chip, sizeof m[0].chip, "gpu");
    m[0].t_ns = 1764000000LL * 1000000000LL;
    WT_EQ_INT(wt_calib_fit(x, y, 3, &m[0].fit), 0);
    m[1] = m[0];
    snprintf(m[1].node, sizeof m[1].node, "gpu-a2");
    WT_EQ_INT(wt_calib_save(path, m, 2, &err), 0);
    /* a new model of gpu-a1 replaces it, gpu-a2's stays */
    m[0].fit.a = 123;
    m[0].t_ns += 1000000000LL;
    WT_EQ_INT(wt_calib_save(path, m, 1, &err), 0);
    WT_EQ_INT(wt_calib_load(path, got, 4, &n, &err), 0);
    WT_EQ_INT(n, 2);
    WT_EQ_STR(got[0].node, "gpu-a1");
    WT_NEAR(got[0].fit.a, 123, 1e-9);
    WT_EQ_INT(got[0].t_ns, m[0].t_ns);
    WT_EQ_STR(got[1].node, "gpu-a2");
    WT_NEAR(got[1].fit.b, m[1].fit.b, 1e-9);
    WT_NEAR(got[1].fit.b_ci, m[1].fit.b_ci, 1e-9);
    WT_ASSERT(got[1].fit.tracks);
    WT_EQ_STR(got[1].wall, "bmc");
    /* a file that is not a model file is named with the field */
    FILE *f = fopen(path, "w");
    fputs("{\"models\": [{\"node\": \"x\", \"wall\": \"bmc\"}]}", f);
    fclose(f);
    WT_EQ_INT(wt_calib_load(path, got, 4, &n, &err), -EINVAL);
    WT_ASSERT(strstr(err.msg, "models[0].chip") != NULL);
    f = fopen(path, "w");
    fputs("not json", f);
    fclose(f);
    WT_EQ_INT(wt_calib_load(path, got, 4, &n, &err), -EINVAL);
    WT_ASSERT(strstr(err.msg, path) != NULL);
    unlink(path);
    rmdir(dir);
}

WT_TEST(calib_reconciliation_against_the_model)
{
    struct wt_calib_fit fit = {0};
    fit.a = 400;
    fit.b = 1.05;
    fit.resid_sd_w = 10;
    fit.tracks = true;
    struct wt_recon_model_check c;
    /* 4000 W of chips: the model expects 4600 W at the wall, 600 W beside the chips */
    wt_recon_against_model(&fit, 4000, 4620, &c);
    WT_NEAR(c.predicted_w, 4600, 1e-9);
    WT_NEAR(c.unaccounted_w, 600, 1e-9);
    WT_NEAR(c.departure_w, 20, 1e-9);
    WT_NEAR(c.bound_w, 92, 1e-9); /* 2 % of 4600 is more than 3 x 10 W */
    WT_ASSERT(!c.drift);
    wt_recon_against_model(&fit, 4000, 4750, &c); /* a fan failed open, a PSU degraded */
    WT_ASSERT(c.drift);

    /* per node, from the window's energies; a model that does not track is not used */
    struct wt_recon_node nodes[2] = {0};
    snprintf(nodes[0].node, sizeof nodes[0].node, "n1");
    snprintf(nodes[1].node, sizeof nodes[1].node, "n2");
    for (int i = 0; i < 2; i++) {
        nodes[i].wall_j = 4900 * 100.0;
        nodes[i].gpu_j = 4000 * 100.0;
        nodes[i].chips_j = 4300 * 100.0;
        nodes[i].wall_coverage = nodes[i].chips_coverage = 1;
    }
    struct wt_calib_model m[2] = {0};
    snprintf(m[0].node, sizeof m[0].node, "n1");
    snprintf(m[0].chip, sizeof m[0].chip, "gpu");
    m[0].fit = fit;
    m[1] = m[0];
    snprintf(m[1].node, sizeof m[1].node, "n2");
    m[1].fit.tracks = false;
    wt_recon_apply_models(nodes, 2, m, 2, 100);
    WT_ASSERT(nodes[0].has_model);
    WT_NEAR(nodes[0].model_predicted_w, 4600, 1e-9);
    WT_NEAR(nodes[0].model_departure_w, 300, 1e-9);
    WT_ASSERT(nodes[0].model_drift);
    WT_ASSERT(!nodes[1].has_model);
}

/* The drift detector: beyond the bound for sustain_ns on end fires once; one comparison back
 * within ends it once; a run broken by one comparison within starts again. */
WT_TEST(calib_drift_fires_after_sustain_and_clears_once)
{
    static struct wt_recon_drift d;
    memset(&d, 0, sizeof d);
    d.sustain_ns = 10;
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", false, 100), 0);
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", true, 101), 0);
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", true, 105), 0);
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", false, 107), 0); /* broken: starts again */
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", true, 108), 0);
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", true, 117), 0);
    WT_ASSERT(!wt_recon_drift_firing(&d, "n1"));
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", true, 118), 1);
    WT_ASSERT(wt_recon_drift_firing(&d, "n1"));
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", true, 130), 0); /* said once */
    WT_EQ_INT(wt_recon_drift_step(&d, "n2", true, 130), 0); /* nodes apart */
    WT_ASSERT(!wt_recon_drift_firing(&d, "n2"));
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", false, 131), -1);
    WT_EQ_INT(wt_recon_drift_step(&d, "n1", false, 132), 0);
    WT_ASSERT(!wt_recon_drift_firing(&d, "n1"));
    /* a full table follows no further node, and says nothing of it */
    for (int i = 0; i < WT_RECON_DRIFT_NODES; i++) {
        char n[16];
        snprintf(n, sizeof n, "x%d", i);
        (void)wt_recon_drift_step(&d, n, true, 0);
    }
    WT_EQ_INT(wt_recon_drift_step(&d, "late", true, 0), 0);
    WT_EQ_INT(wt_recon_drift_step(&d, "late", true, 1000), 0);
    WT_ASSERT(!wt_recon_drift_firing(&d, "late"));
}
