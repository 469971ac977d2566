/* SPDX-License-Identifier: MIT */
/* Counter deltas (wrap, reset), counter accumulation and power integration (gaps). */
#include "core/clock.h"
#include "core/energy.h"
#include "runner.h"

#define S WT_NS_PER_S

WT_TEST(delta_plain)
{
    uint64_t d = 99;
    WT_EQ_INT(wt_counter_delta(100, 250, 0, 0, &d), WT_DELTA_OK);
    WT_EQ_U64(d, 150);
    WT_EQ_INT(wt_counter_delta(7, 7, 1000, 0, &d), WT_DELTA_OK);
    WT_EQ_U64(d, 0);
}

WT_TEST(delta_wrap_at_modulus)
{
    uint64_t d = 0;
    /* RAPL: 262143328850 µJ range, counter passes the top and restarts from 0 */
    const uint64_t range = 262143328850ULL;
    WT_EQ_INT(wt_counter_delta(range - 1000, 500, range, 0, &d), WT_DELTA_WRAP);
    WT_EQ_U64(d, 1500);
}

WT_TEST(delta_decrease_without_modulus_is_reset)
{
    uint64_t d = 42;
    WT_EQ_INT(wt_counter_delta(5000, 10, 0, 0, &d), WT_DELTA_RESET);
    WT_EQ_U64(d, 0);
}

WT_TEST(delta_implausible_wrap_is_reset)
{
    uint64_t d = 42;
    /* from 100 to 50 on a 1e6 range would be a 999950 wrap; more than the 1000 allowed */
    WT_EQ_INT(wt_counter_delta(100, 50, 1000000, 1000, &d), WT_DELTA_RESET);
    WT_EQ_U64(d, 0);
    /* a previous value above the stated range cannot be a wrap */
    WT_EQ_INT(wt_counter_delta(2000000, 50, 1000000, 0, &d), WT_DELTA_RESET);
}

WT_TEST(counter_first_sample_is_baseline)
{
    struct wt_energy_counter c = {0};
    WT_EQ_INT(wt_energy_counter_update(&c, 1 * S, 123456, 0, 0), WT_DELTA_FIRST);
    WT_EQ_U64(c.total_raw, 0);
    WT_EQ_INT(wt_energy_counter_update(&c, 2 * S, 123956, 0, 0), WT_DELTA_OK);
    WT_EQ_U64(c.total_raw, 500);
}

WT_TEST(counter_wrap_accumulates_past_range)
{
    struct wt_energy_counter c = {0};
    const uint64_t range = 65532610987ULL; /* an AMD EPYC max_energy_range_uj */
    uint64_t raw = range - 3000000, total = 0;
    wt_energy_counter_update(&c, 0, raw, range, 0);
    for (int i = 1; i <= 10; i++) {
        uint64_t step = 1000000;
        raw = (raw + step) % range;
        total += step;
        wt_energy_counter_update(&c, i * S, raw, range, 0);
    }
    WT_EQ_U64(c.wraps, 1);
    WT_EQ_U64(c.total_raw, total);
}

WT_TEST(counter_reset_never_negative_nor_jump)
{
    struct wt_energy_counter c = {0};
    wt_energy_counter_update(&c, 0, 5000000, 0, 0);
    wt_energy_counter_update(&c, 1 * S, 5000700, 0, 0);
    /* driver reload: counter restarts from 0 and has counted 300 mJ since */
    WT_EQ_INT(wt_energy_counter_update(&c, 2 * S, 300, 0, 10000), WT_DELTA_RESET);
    WT_EQ_U64(c.total_raw, 1000);
    WT_EQ_U64(c.resets, 1);
    wt_energy_counter_update(&c, 3 * S, 1000, 0, 10000);
    WT_EQ_U64(c.total_raw, 1700);
    /* an implausible value after a reset is not counted */
    wt_energy_counter_update(&c, 4 * S, 10, 0, 0);
    wt_energy_counter_update(&c, 5 * S, 5, 0, 4);
    WT_EQ_U64(c.total_raw, 1710);
}

WT_TEST(integral_trapezoid_exact_for_linear_power)
{
    struct wt_energy_integral g = {0};
    /* P(t) = 100 + 10 t over 10 s: exact energy 1000 + 500 = 1500 J */
    for (int i = 0; i <= 10; i++)
        WT_EQ_INT(wt_energy_integral_update(&g, i * S, 100.0 + 10.0 * i, 3 * S), 0);
    WT_NEAR(g.total_j, 1500.0, 1e-9);
    WT_NEAR(g.covered_s, 10.0, 1e-9);
    WT_EQ_U64(g.gaps, 0);
}

WT_TEST(integral_gap_recorded_not_filled)
{
    struct wt_energy_integral g = {0};
    wt_energy_integral_update(&g, 0, 200, 3 * S);
    wt_energy_integral_update(&g, 1 * S, 200, 3 * S);
    WT_EQ_INT(wt_energy_integral_update(&g, 10 * S, 200, 3 * S), 1);
    wt_energy_integral_update(&g, 11 * S, 200, 3 * S);
    WT_NEAR(g.total_j, 400.0, 1e-9);
    WT_NEAR(g.gap_s, 9.0, 1e-9);
    WT_EQ_U64(g.gaps, 1);
}

WT_TEST(integral_break_makes_gap_and_ignores_old_samples)
{
    struct wt_energy_integral g = {0};
    wt_energy_integral_update(&g, 0, 100, 3 * S);
    wt_energy_integral_update(&g, 1 * S, 100, 3 * S);
    wt_energy_integral_break(&g);
    WT_EQ_INT(wt_energy_integral_update(&g, 2 * S, 100, 3 * S), 1);
    WT_EQ_INT(wt_energy_integral_update(&g, 2 * S, 500, 3 * S), 0); /* same stamp: ignored */
    wt_energy_integral_update(&g, 3 * S, 100, 3 * S);
    WT_NEAR(g.total_j, 200.0, 1e-9);
    WT_EQ_U64(g.gaps, 1);
}
