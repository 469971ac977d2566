/* SPDX-License-Identifier: MIT */
/*
 * Carbon-aware (or price-aware) start times: the start within [now, deadline - duration] that
 * minimizes the cost of the whole run, where cost = sum over the run's window of energy x rate
 * (rate: the forecast intensity in gCO2e/kWh, or a price per kWh), the rate being a step
 * function (carbon.h's steps, actual > forecast > hole rule).
 *
 * Constant power P (from --power, or --energy / --duration): cost(s) = P * (F(s + D) - F(s))
 * with F the running integral of the rate. cost is linear between the points where s or s + D
 * crosses a step boundary, so its minimum is at one of those (or at now or deadline - D): the
 * candidates are visited in time order with two pointers that only move forward, O(n) in the
 * number of steps (a sliding window over the forecast).
 * A power profile (--like JOB: a past job's power in slots of `profile_step`): the starts are
 * now and the step boundaries; each is evaluated over the profile's m slots, O(n x m).
 * Ties go to the earliest start.
 */
#ifndef WT_SCHEDULE_H
#define WT_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "audit/carbon.h"
#include "core/err.h"

struct wt_sched_req {
    int64_t now_ns, deadline_ns, duration_ns;
    double power_w;          /* constant IT power (used when nprofile is 0) */
    const double *profile_w; /* power per slot of profile_step_ns over the run */
    size_t nprofile;
    int64_t profile_step_ns;
    double pue; /* facility energy = IT energy x pue (1 when 0) */
};

struct wt_sched_option {
    int64_t start_ns;
    double cost;       /* grams (carbon) or currency units (price) */
    double energy_kwh; /* facility energy of the run */
    double filled_kwh; /* of it, charged at filled, static or missing rates */
};

struct wt_sched_result {
    struct wt_sched_option now, best;
    double saving, saving_pct; /* now.cost - best.cost, and that in % of now.cost */
    size_t candidates;
};

/*
 * The best start over steps s[0..n) (consecutive, covering [now, deadline]). Returns 0, or
 * -EINVAL with err when the run does not fit before the deadline or the steps do not cover it.
 */
int wt_schedule_best(const struct wt_carbon_step *s, size_t n, const struct wt_sched_req *r,
                     struct wt_sched_result *out, struct wt_err *err) WT_MUST_USE;

/* The cost of starting at start (the same arithmetic, for one start; for brute-force tests). */
double wt_schedule_cost(const struct wt_carbon_step *s, size_t n, const struct wt_sched_req *r,
                        int64_t start, double *energy_kwh, double *filled_kwh);

#endif
