/* SPDX-License-Identifier: MIT */
/*
 * The serving KPIs' arithmetic (audit/inference_kpi.h): PromQL's increase() over counter samples
 * with restarts, bucket increases summed by le and their quantiles as histogram_quantile gives
 * them (worked out by hand), and the energy ratios with their missing cases.
 */
#include <errno.h>
#include <math.h>

#include "audit/inference_kpi.h"
#include "runner.h"

WT_TEST(increase_without_reset)
{
    const double v[] = {100, 150, 150, 400};
    WT_NEAR(wt_ikpi_increase(v, 4), 300, 0);
    WT_ASSERT(isnan(wt_ikpi_increase(v, 1)));
    WT_ASSERT(isnan(wt_ikpi_increase(v, 0)));
}

WT_TEST(increase_counts_the_value_after_a_reset)
{
    /* 100 -> 250 (+150), restart to 30 (+30: counted from 0), 30 -> 90 (+60) */
    const double v[] = {100, 250, 30, 90};
    WT_NEAR(wt_ikpi_increase(v, 4), 240, 0);
    /* two restarts, one to 0 */
    const double w[] = {10, 20, 0, 5, 2, 7};
    WT_NEAR(wt_ikpi_increase(w, 6), 10 + 0 + 5 + 2 + 5, 0);
}

WT_TEST(hist_add_sums_by_le)
{
    struct wt_ikpi_hist h = {0};
    WT_EQ_INT(wt_ikpi_hist_add(&h, 1, 3), 0);
    WT_EQ_INT(wt_ikpi_hist_add(&h, INFINITY, 4), 0);
    WT_EQ_INT(wt_ikpi_hist_add(&h, 1, 2), 0);
    WT_EQ_INT(wt_ikpi_hist_add(&h, INFINITY, 1), 0);
    WT_EQ_INT((int)h.n, 2);
    WT_NEAR(h.b[0].count, 5, 0);
    WT_NEAR(h.b[1].count, 5, 0);
    for (int i = 0; i < WT_IKPI_MAX_BUCKETS - 2; i++)
        WT_EQ_INT(wt_ikpi_hist_add(&h, 10 + i, 1), 0);
    WT_EQ_INT(wt_ikpi_hist_add(&h, 1000, 1), -E2BIG);
}

WT_TEST(quantile_of_increases_as_promql)
{
    /* increases: le 0.5 -> 10, le 1 -> 60, le 2 -> 90, +Inf -> 100.
     * q 0.5: rank 50 in (0.5, 1]: 0.5 + 0.5 * (50 - 10) / 50 = 0.9
     * q 0.99: rank 99 in (2, +Inf]: the highest finite bound, 2
     * q 0.95: rank 95 in (2, +Inf] too: 2
     * q 0.05: rank 5 in [0, 0.5]: 0.5 * 5 / 10 = 0.25 */
    struct wt_ikpi_hist h = {0};
    WT_EQ_INT(wt_ikpi_hist_add(&h, INFINITY, 100), 0);
    WT_EQ_INT(wt_ikpi_hist_add(&h, 1, 60), 0);
    WT_EQ_INT(wt_ikpi_hist_add(&h, 0.5, 10), 0);
    WT_EQ_INT(wt_ikpi_hist_add(&h, 2, 90), 0);
    WT_NEAR(wt_ikpi_hist_quantile(&h, 0.5), 0.9, 1e-12);
    WT_NEAR(wt_ikpi_hist_quantile(&h, 0.99), 2, 0);
    WT_NEAR(wt_ikpi_hist_quantile(&h, 0.95), 2, 0);
    WT_NEAR(wt_ikpi_hist_quantile(&h, 0.05), 0.25, 1e-12);
    /* h is left as it was (the quantile works on a copy) */
    WT_ASSERT(isinf(h.b[0].le));
    struct wt_ikpi_hist empty = {0};
    WT_ASSERT(isnan(wt_ikpi_hist_quantile(&empty, 0.5)));
}

WT_TEST(bucket_increases_through_a_reset)
{
    /* one bucket series (le 1) and +Inf, a restart between the 2nd and 3rd scrape: each
     * series' increase as increase() takes it, then the quantile */
    const double le1[] = {40, 50, 5, 15};    /* +10, +5, +10 = 25 */
    const double inf[] = {100, 120, 10, 30}; /* +20, +10, +20 = 50 */
    struct wt_ikpi_hist h = {0};
    WT_EQ_INT(wt_ikpi_hist_add(&h, 1, wt_ikpi_increase(le1, 4)), 0);
    WT_EQ_INT(wt_ikpi_hist_add(&h, INFINITY, wt_ikpi_increase(inf, 4)), 0);
    /* q 0.25: rank 12.5 in [0, 1]: 12.5 / 25 = 0.5 */
    WT_NEAR(wt_ikpi_hist_quantile(&h, 0.25), 0.5, 1e-12);
}

WT_TEST(ratios)
{
    struct wt_ikpi_sums s;
    struct wt_ikpi k;
    wt_ikpi_sums_init(&s);
    s.energy_j = 7200;
    s.energy_u_j = 36;
    s.generated = 3600;
    s.prompt = 14400;
    s.prompt_cached = 4800;
    s.requests = 12;
    wt_ikpi_compute(&s, &k);
    WT_NEAR(k.joules_per_generated_token, 2, 1e-12);
    WT_NEAR(k.joules_per_generated_token_u, 0.01, 1e-12);
    WT_NEAR(k.generated_tokens_per_kwh, 3600 / (7200 / 3.6e6), 1e-6);
    WT_NEAR(k.joules_per_prompt_token, 0.5, 1e-12);
    WT_NEAR(k.joules_per_computed_prompt_token, 0.75, 1e-12); /* 9600 computed */
    WT_NEAR(k.joules_per_request, 600, 1e-12);
    WT_ASSERT(isnan(k.lat_s[WT_IKPI_E2E][2]));
    /* no tokens, no energy: nothing divided by 0 */
    s.generated = 0;
    s.energy_j = NAN;
    wt_ikpi_compute(&s, &k);
    WT_ASSERT(isnan(k.joules_per_generated_token));
    WT_ASSERT(isnan(k.generated_tokens_per_kwh));
    WT_ASSERT(isnan(k.joules_per_request));
}

WT_TEST(sums_add_and_share)
{
    struct wt_ikpi_sums a, b;
    wt_ikpi_sums_init(&a);
    wt_ikpi_sums_init(&b);
    a.generated = 300;
    b.generated = 100;
    b.requests = 4;
    WT_EQ_INT(wt_ikpi_hist_add(&b.lat[WT_IKPI_TTFT], 1, 2), 0);
    WT_EQ_INT(wt_ikpi_sums_add(&a, &b), 0);
    WT_NEAR(a.generated, 400, 0);
    WT_NEAR(a.requests, 4, 0);
    WT_ASSERT(isnan(a.prompt));
    WT_EQ_INT((int)a.lat[WT_IKPI_TTFT].n, 1);
    WT_NEAR(wt_ikpi_share(100, 400), 0.25, 0);
    WT_ASSERT(isnan(wt_ikpi_share(1, 0)));
    WT_EQ_STR(wt_ikpi_lat_name(WT_IKPI_ITL), "itl");
    WT_EQ_INT(wt_ikpi_lat_kind("ttft"), WT_IKPI_TTFT);
    WT_EQ_INT(wt_ikpi_lat_kind("tpot"), -1);
}

WT_TEST(idle_spans)
{
    /* busy:        2  0  0  0  1  0  0  (gap)  0  0 */
    const int64_t t[] = {0, 10, 20, 30, 40, 50, 60, 200, 210};
    const double busy[] = {2, 0, 0, 0, 1, 0, 0, 0, 0};
    struct wt_ikpi_span sp[4];
    size_t n = wt_ikpi_idle_spans(t, busy, 9, 15, sp, 4);
    WT_EQ_INT((int)n, 3);
    WT_EQ_INT((int)sp[0].a_ns, 10);
    WT_EQ_INT((int)sp[0].b_ns, 30); /* 10..20 and 20..30 merged */
    WT_EQ_INT((int)sp[1].a_ns, 50);
    WT_EQ_INT((int)sp[1].b_ns, 60); /* 60..200 is a gap, not idle */
    WT_EQ_INT((int)sp[2].a_ns, 200);
    WT_EQ_INT((int)sp[2].b_ns, 210);
    /* too short an array: the count says so, what fits is right */
    struct wt_ikpi_span one[1];
    WT_EQ_INT((int)wt_ikpi_idle_spans(t, busy, 9, 15, one, 1), 3);
    WT_EQ_INT((int)one[0].b_ns, 30);
    /* never idle, or one sample: none */
    const double always[] = {1, 1, 1};
    WT_EQ_INT((int)wt_ikpi_idle_spans(t, always, 3, 15, sp, 4), 0);
    WT_EQ_INT((int)wt_ikpi_idle_spans(t, busy + 1, 1, 15, sp, 4), 0);
}

WT_TEST(idle_adds_up)
{
    struct wt_ikpi_sums a, b;
    wt_ikpi_sums_init(&a);
    wt_ikpi_sums_init(&b);
    WT_ASSERT(isnan(a.idle_j) && isnan(a.idle_s));
    b.idle_j = 50;
    b.idle_s = 2;
    WT_EQ_INT(wt_ikpi_sums_add(&a, &b), 0);
    WT_EQ_INT(wt_ikpi_sums_add(&a, &b), 0);
    WT_NEAR(a.idle_j, 100, 0);
    WT_NEAR(a.idle_s, 4, 0);
}

WT_TEST(prefill_share_brackets)
{
    double t, k, f, h;
    /* 10 s of ttft in 80 s of e2e: time share 0.125; 3000 computed prompt and 1000 generated
     * tokens: token share 0.75; midpoint 0.4375, bound 0.3125 */
    wt_ikpi_prefill_share(10, 80, 3000, 1000, &t, &k, &f, &h);
    WT_NEAR(t, 0.125, 1e-15);
    WT_NEAR(k, 0.75, 1e-15);
    WT_NEAR(f, 0.4375, 1e-15);
    WT_NEAR(h, 0.3125, 1e-15);
    /* ttft longer than e2e (requests cut by the window's edges): the time share stops at 1 */
    wt_ikpi_prefill_share(9, 6, 1, 1, &t, &k, &f, &h);
    WT_NEAR(t, 1, 0);
    /* no ttft (TGI): no estimate, the token share alone */
    wt_ikpi_prefill_share(NAN, 80, 3000, 1000, &t, &k, &f, &h);
    WT_ASSERT(isnan(t) && isnan(f) && isnan(h));
    WT_NEAR(k, 0.75, 1e-15);
    wt_ikpi_prefill_share(10, 0, 3000, 1000, &t, &k, &f, &h);
    WT_ASSERT(isnan(f));
}

WT_TEST(split_energy_and_per_token)
{
    struct wt_ikpi_sums s;
    struct wt_ikpi k;
    wt_ikpi_sums_init(&s);
    s.energy_j = 8000;
    s.energy_u_j = 80;
    s.generated = 1000;
    s.prompt = 5000;
    s.prompt_cached = 2000; /* 3000 computed */
    s.lat_sum_s[WT_IKPI_TTFT] = 10;
    s.lat_sum_s[WT_IKPI_E2E] = 80;
    wt_ikpi_compute(&s, &k);
    /* share 0.4375 +- 0.3125 as above */
    WT_NEAR(k.prefill_energy_j, 3500, 1e-9);
    WT_NEAR(k.decode_energy_j, 4500, 1e-9);
    WT_NEAR(k.prefill_energy_bound_j, 8000 * 0.3125 + 80 * 0.4375, 1e-9);
    WT_NEAR(k.decode_energy_bound_j, 8000 * 0.3125 + 80 * 0.5625, 1e-9);
    WT_NEAR(k.prefill_joules_per_computed_prompt_token, 3500.0 / 3000, 1e-12);
    WT_NEAR(k.prefill_joules_per_computed_prompt_token_u, 2535.0 / 3000, 1e-12);
    WT_NEAR(k.decode_joules_per_generated_token, 4.5, 1e-12);
    WT_NEAR(k.decode_joules_per_generated_token_u, 2545.0 / 1000, 1e-12);
    WT_NEAR(k.prompt_tokens_per_kwh, 5000 / (8000 / 3.6e6), 1e-6);
    WT_NEAR(k.computed_prompt_tokens_per_kwh, 3000 / (8000 / 3.6e6), 1e-6);
    /* sums add by kind */
    struct wt_ikpi_sums a;
    wt_ikpi_sums_init(&a);
    WT_EQ_INT(wt_ikpi_sums_add(&a, &s), 0);
    WT_EQ_INT(wt_ikpi_sums_add(&a, &s), 0);
    WT_NEAR(a.lat_sum_s[WT_IKPI_TTFT], 20, 0);
    WT_ASSERT(isnan(a.lat_sum_s[WT_IKPI_ITL]));
}
