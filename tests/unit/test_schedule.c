/* SPDX-License-Identifier: MIT */
/*
 * The scheduler against a brute-force search over every start minute, on the real GB forecast
 * (../shared/data/carbon-intensity/, 48 h published 2023-03-14 03:31Z, and the week of
 * actuals): the same best cost, a start within [now, deadline - duration], and the figures of
 * starting now. The brute force integrates the steps itself, minute by minute.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audit/carbon.h"
#include "audit/schedule.h"
#include "core/clock.h"
#include "runner.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define MIN (60 * S)
#define HOUR (3600 * S)
#define UK "../shared/data/carbon-intensity/uk-national-nmpowell/"

static int64_t t_of(const char *s)
{
    int64_t t = 0;
    WT_EQ_INT(wt_time_parse(s, 0, &t), 0);
    return t;
}

static struct wt_store *load(const char *const *files, size_t nfiles)
{
    char path[512];
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    size_t stored;
    snprintf(path, sizeof path, "%s/w.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(path, NULL, &st, &err), 0);
    for (size_t i = 0; i < nfiles; i++)
        WT_EQ_INT(wt_carbon_load_file(wt_store_db(st), wt_test_src_path(files[i]), WT_CF_AUTO,
                                      WT_CS_INTENSITY, "GB", stderr, &stored, &err),
                  0);
    return st;
}

/* The rate at t, by a linear search of the steps (independent of the scheduler's integrals). */
static double rate_at(const struct wt_carbon_step *s, size_t n, int64_t t)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i].from_ns <= t && t < s[i].to_ns)
            return s[i].value;
    }
    WT_ASSERT(!"t outside the steps");
    return NAN;
}

/* gCO2e of a run at power_w (x pue) starting at start, integrated minute by minute: the steps
 * change only on whole minutes here, so this is exact. */
static double brute_cost(const struct wt_carbon_step *s, size_t n, int64_t start, int64_t dur,
                         const double *prof_w, double power_w, double pue)
{
    double g = 0;
    for (int64_t t = start; t < start + dur; t += MIN) {
        double w = prof_w ? prof_w[(t - start) / MIN] : power_w;
        g += w * pue * 60 / 3.6e6 * rate_at(s, n, t);
    }
    return g;
}

static void check_against_brute_force(const struct wt_carbon_step *s, size_t n, int64_t now,
                                      int64_t deadline, int64_t dur, const double *prof,
                                      double power_w)
{
    struct wt_sched_req r = {
        .now_ns = now, .deadline_ns = deadline, .duration_ns = dur, .power_w = power_w, .pue = 1.4};
    if (prof) {
        r.profile_w = prof;
        r.nprofile = (size_t)(dur / MIN);
        r.profile_step_ns = MIN;
    }
    struct wt_sched_result res;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_schedule_best(s, n, &r, &res, &err), 0);
    double best = INFINITY;
    int64_t best_t = 0;
    for (int64_t t = now; t + dur <= deadline; t += MIN) {
        double g = brute_cost(s, n, t, dur, prof, power_w, 1.4);
        if (g < best - 1e-9) {
            best = g;
            best_t = t;
        }
    }
    WT_NEAR(res.best.cost, best, 1e-6 * best);
    WT_ASSERT(res.best.start_ns >= now);
    WT_ASSERT(res.best.start_ns + dur <= deadline);
    /* The start it names costs what it says. */
    WT_NEAR(brute_cost(s, n, res.best.start_ns, dur, prof, power_w, 1.4), res.best.cost,
            1e-6 * best);
    WT_NEAR(res.now.cost, brute_cost(s, n, now, dur, prof, power_w, 1.4), 1e-6 * best);
    WT_NEAR(res.saving, res.now.cost - res.best.cost, 1e-9);
    if (res.now.cost > 0)
        WT_NEAR(res.saving_pct, 100 * res.saving / res.now.cost, 1e-9);
    (void)best_t;
}

WT_TEST(best_start_matches_brute_force_on_the_real_48h_forecast)
{
    static const char *const f[] = {UK "national_fw48h/2023-03-14T0331Z.csv"};
    struct wt_store *st = load(f, 1);
    int64_t now = t_of("2023-03-14T03:47:00Z"); /* not on a half-hour */
    struct wt_carbon_step *s = NULL;
    size_t n = 0;
    struct {
        int64_t dur, deadline;
    } cases[] = {
        {6 * HOUR, t_of("2023-03-16T03:30:00Z")},
        {90 * MIN, t_of("2023-03-15T12:00:00Z")},
        {6 * HOUR, now + 6 * HOUR + 17 * MIN}, /* a tight deadline: few starts */
        {23 * HOUR + 13 * MIN, t_of("2023-03-16T03:00:00Z")},
        {47 * MIN, t_of("2023-03-15T03:47:00Z")},
        {5 * HOUR + 13 * MIN, t_of("2023-03-15T20:00:00Z")},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        WT_EQ_INT(wt_carbon_steps_ex(wt_store_db(st), NULL, WT_CS_INTENSITY, "GB", true, now,
                                     cases[i].deadline, &s, &n),
                  0);
        WT_ASSERT(n > 1);
        for (size_t k = 0; k < n; k++)
            WT_EQ_INT(s[k].src, WT_CSRC_FORECAST);
        check_against_brute_force(s, n, now, cases[i].deadline, cases[i].dur, NULL, 5600);
        free(s);
    }
    wt_store_close(st);
}

WT_TEST(best_start_matches_brute_force_on_the_week_of_actuals)
{
    static const char *const f[] = {
        UK "national_pt24h/2023-03-14T0331Z.csv", UK "national_pt24h/2023-03-15T0331Z.csv",
        UK "national_pt24h/2023-03-16T0331Z.csv", UK "national_pt24h/2023-03-17T0331Z.csv",
        UK "national_pt24h/2023-03-18T0331Z.csv", UK "national_pt24h/2023-03-19T0331Z.csv"};
    struct wt_store *st = load(f, 6);
    int64_t now = t_of("2023-03-13T05:00:00Z"), deadline = t_of("2023-03-19T03:00:00Z");
    struct wt_carbon_step *s = NULL;
    size_t n = 0;
    WT_EQ_INT(wt_carbon_steps(wt_store_db(st), NULL, WT_CS_INTENSITY, "GB", now, deadline, &s, &n),
              0);
    check_against_brute_force(s, n, now, deadline, 8 * HOUR, NULL, 10200);
    /* A varying profile: full power for 2 h, then a third of it. */
    double prof[8 * 60];
    for (size_t i = 0; i < 8 * 60; i++)
        prof[i] = i < 120 ? 10200 : 3400;
    /* With a profile the starts are now and the step boundaries: the brute force over the
     * same starts (every minute here; the optimum of a profile may lie between boundaries,
     * so compare with the best boundary start). */
    struct wt_sched_req r = {.now_ns = now,
                             .deadline_ns = deadline,
                             .duration_ns = 8 * HOUR,
                             .profile_w = prof,
                             .nprofile = 480,
                             .profile_step_ns = MIN,
                             .pue = 1.4};
    struct wt_sched_result res;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_schedule_best(s, n, &r, &res, &err), 0);
    double best = INFINITY;
    for (int64_t t = now; t + 8 * HOUR <= deadline; t += 30 * MIN)
        best = fmin(best, brute_cost(s, n, t, 8 * HOUR, prof, 0, 1.4));
    WT_NEAR(res.best.cost, best, 1e-6 * best);
    WT_NEAR(brute_cost(s, n, res.best.start_ns, 8 * HOUR, prof, 0, 1.4), res.best.cost,
            1e-6 * best);
    WT_ASSERT(res.best.start_ns + 8 * HOUR <= deadline);
    free(s);
    wt_store_close(st);
}

WT_TEST(deadline_respected_and_refused_when_the_run_does_not_fit)
{
    struct wt_carbon_step s[] = {{0, HOUR, 300, WT_CSRC_FORECAST},
                                 {HOUR, 2 * HOUR, 50, WT_CSRC_FORECAST},
                                 {2 * HOUR, 10 * HOUR, 10, WT_CSRC_FORECAST}};
    struct wt_sched_req r = {
        .now_ns = 0, .deadline_ns = 2 * HOUR, .duration_ns = HOUR, .power_w = 1000, .pue = 1};
    struct wt_sched_result res;
    struct wt_err err = {{0}};
    /* The cheapest hour (10 g) lies after the deadline: the best is 1..2 h. */
    WT_EQ_INT(wt_schedule_best(s, 3, &r, &res, &err), 0);
    WT_EQ_INT(res.best.start_ns, HOUR);
    WT_NEAR(res.best.cost, 50, 1e-9);
    WT_NEAR(res.now.cost, 300, 1e-9);
    WT_NEAR(res.saving_pct, 100.0 * 250 / 300, 1e-9);
    r.deadline_ns = HOUR / 2;
    WT_EQ_INT(wt_schedule_best(s, 3, &r, &res, &err), -EINVAL);
    WT_CONTAINS(err.msg, "does not fit");
    /* The best window can end on a step boundary rather than start on one: 50 g until 60 min,
     * 10 g for 10 min, then 200 g: a 30 min run is best from 40 min (ending at 70). */
    struct wt_carbon_step e[] = {{0, 60 * MIN, 50, WT_CSRC_FORECAST},
                                 {60 * MIN, 70 * MIN, 10, WT_CSRC_FORECAST},
                                 {70 * MIN, 200 * MIN, 200, WT_CSRC_FORECAST}};
    struct wt_sched_req q = {
        .now_ns = 0, .deadline_ns = 200 * MIN, .duration_ns = 30 * MIN, .power_w = 6000, .pue = 1};
    WT_EQ_INT(wt_schedule_best(e, 3, &q, &res, &err), 0);
    WT_EQ_INT(res.best.start_ns, 40 * MIN);
    WT_NEAR(res.best.cost, 0.1 * (20 * 50 + 10 * 10), 1e-9);
    /* Flat: the earliest start wins the tie. */
    struct wt_carbon_step flat[] = {{0, 10 * HOUR, 100, WT_CSRC_FORECAST}};
    r.deadline_ns = 10 * HOUR;
    WT_EQ_INT(wt_schedule_best(flat, 1, &r, &res, &err), 0);
    WT_EQ_INT(res.best.start_ns, 0);
    WT_NEAR(res.saving, 0, 1e-9);
}
