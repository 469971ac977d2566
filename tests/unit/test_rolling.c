/* SPDX-License-Identifier: MIT */
/*
 * Rolling power means: steady power, a ramp (exact), a square wave against the exact trapezoid
 * integral, gaps not integrated across, half-covered windows refused, bounded memory at 100
 * samples a second, and samples out of order ignored.
 */
#include <math.h>

#include "core/clock.h"
#include "core/rolling.h"
#include "runner.h"

#define S WT_NS_PER_S
#define MS 1000000LL

static struct wt_rolling r; /* large: not on the stack */

WT_TEST(rolling_steady_power_is_its_own_mean)
{
    wt_rolling_init(&r, 3 * S);
    for (int i = 0; i <= 1200; i++)
        wt_rolling_add(&r, i * S, 300);
    WT_NEAR(wt_rolling_mean(&r, 1200 * S, 60 * S), 300, 1e-9);
    WT_NEAR(wt_rolling_mean(&r, 1200 * S, 300 * S), 300, 1e-9);
    WT_NEAR(wt_rolling_mean(&r, 1200 * S, 900 * S), 300, 1e-9);
    WT_ASSERT(isnan(wt_rolling_mean(&r, 1200 * S, 901 * S))); /* longer than it keeps */
}

WT_TEST(rolling_ramp_mean_is_the_midpoint)
{
    /* p(t) = 100 + t W sampled every 250 ms: the mean over the last W is p(now - W/2) */
    wt_rolling_init(&r, 3 * S);
    for (int i = 0; i <= 4 * 1000; i++)
        wt_rolling_add(&r, i * 250 * MS, 100 + i * 0.25);
    int64_t now = 1000 * S;
    WT_NEAR(wt_rolling_mean(&r, now, 60 * S), 100 + 1000 - 30, 0.02);
    WT_NEAR(wt_rolling_mean(&r, now, 300 * S), 100 + 1000 - 150, 0.02);
    WT_NEAR(wt_rolling_mean(&r, now, 900 * S), 100 + 1000 - 450, 0.02);
    /* a window that ends between samples */
    WT_NEAR(wt_rolling_mean(&r, now - 125 * MS, 60 * S), 100 + 999.875 - 30, 0.02);
}

WT_TEST(rolling_square_wave_against_the_exact_integral)
{
    /* 200/400 W, period 7.3 s, sampled every 100 ms for 16 min */
    wt_rolling_init(&r, 3 * S);
    int n = 16 * 60 * 10;
    static double w[16 * 60 * 10 + 1];
    for (int i = 0; i <= n; i++) {
        w[i] = fmod(i * 0.1, 7.3) < 3.65 ? 200 : 400;
        wt_rolling_add(&r, i * 100 * MS, w[i]);
    }
    int64_t windows[] = {60, 300, 900};
    for (int k = 0; k < 3; k++) {
        int m = (int)windows[k] * 10;
        double e = 0;
        for (int i = n - m; i < n; i++)
            e += (w[i] + w[i + 1]) / 2 * 0.1;
        double exact = e / (double)windows[k];
        double got = wt_rolling_mean(&r, (int64_t)n * 100 * MS, windows[k] * S);
        /* off by at most the ring step's share of the window times the swing */
        WT_NEAR(got, exact, 200.0 / (double)windows[k] + 1e-9);
    }
}

WT_TEST(rolling_gaps_are_not_integrated_and_half_cover_is_required)
{
    wt_rolling_init(&r, 3 * S);
    for (int t = 0; t <= 400; t++)
        wt_rolling_add(&r, t * S, 500);
    for (int t = 500; t <= 600; t++) /* 100 s silent, then 100 W */
        wt_rolling_add(&r, t * S, 100);
    WT_NEAR(wt_rolling_mean(&r, 600 * S, 60 * S), 100, 1e-9);
    /* 15 min: 400 s at 500 W and 100 s at 100 W, the gap neither zero nor stretched */
    WT_NEAR(wt_rolling_mean(&r, 600 * S, 900 * S), (500.0 * 400 + 100.0 * 100) / 500, 1e-9);
    /* 5 min: 100 s of each */
    WT_NEAR(wt_rolling_mean(&r, 600 * S, 300 * S), 300, 1e-9);
    /* 1 min ending 25 s after the gap: under half covered, no mean; at 30 s, half: a mean */
    WT_ASSERT(isnan(wt_rolling_mean(&r, 525 * S, 60 * S)));
    WT_NEAR(wt_rolling_mean(&r, 530 * S, 60 * S), 100, 1e-9);
    /* a series just begun has no 15-min mean */
    wt_rolling_init(&r, 3 * S);
    for (int t = 0; t <= 120; t++)
        wt_rolling_add(&r, t * S, 50);
    WT_NEAR(wt_rolling_mean(&r, 120 * S, 60 * S), 50, 1e-9);
    WT_ASSERT(isnan(wt_rolling_mean(&r, 120 * S, 900 * S)));
    wt_rolling_init(&r, 3 * S);
    WT_ASSERT(isnan(wt_rolling_mean(&r, 0, 60 * S)));
}

WT_TEST(rolling_memory_is_bounded_at_high_rates_and_order_is_kept)
{
    wt_rolling_init(&r, 3 * S);
    for (int i = 0; i <= 20 * 60 * 100; i++) /* 100 Hz for 20 min */
        wt_rolling_add(&r, i * 10 * MS, 250);
    WT_ASSERT(r.len <= WT_ROLLING_CAP);
    WT_NEAR(wt_rolling_mean(&r, 1200 * S, 60 * S), 250, 1e-9);
    WT_NEAR(wt_rolling_mean(&r, 1200 * S, 900 * S), 250, 1e-9);
    wt_rolling_add(&r, 1100 * S, 1e6); /* late: ignored */
    wt_rolling_add(&r, 1200 * S, 1e6); /* same time: ignored */
    wt_rolling_add(&r, 1201 * S, NAN); /* not a number: ignored */
    WT_NEAR(wt_rolling_mean(&r, 1200 * S, 60 * S), 250, 1e-9);
}
