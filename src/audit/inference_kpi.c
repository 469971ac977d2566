/* SPDX-License-Identifier: MIT */
/*
 * Serving KPIs from window increases: PromQL's counter increase (resets taken as restarts),
 * bucket increases summed by le, histogram_quantile on them, and energy ratios.
 */
#include "audit/inference_kpi.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

const double wt_ikpi_quantiles[3] = {0.50, 0.95, 0.99};

double wt_ikpi_increase(const double *v, size_t n)
{
    if (n < 2)
        return NAN;
    /* promql/functions.go extrapolatedRate: a sample below the one before it is a reset, and the
     * counter is taken to have counted from 0 to that sample */
    double inc = 0;
    for (size_t i = 1; i < n; i++)
        inc += v[i] < v[i - 1] ? v[i] : v[i] - v[i - 1];
    return inc;
}

int wt_ikpi_hist_add(struct wt_ikpi_hist *h, double le, double inc)
{
    for (size_t i = 0; i < h->n; i++) {
        if (h->b[i].le == le || (isnan(le) && isnan(h->b[i].le))) {
            h->b[i].count += inc;
            return 0;
        }
    }
    if (h->n >= WT_IKPI_MAX_BUCKETS)
        return -E2BIG;
    h->b[h->n].le = le;
    h->b[h->n].count = inc;
    h->n++;
    return 0;
}

double wt_ikpi_hist_quantile(const struct wt_ikpi_hist *h, double q)
{
    struct wt_hist_bucket b[WT_IKPI_MAX_BUCKETS];
    memcpy(b, h->b, h->n * sizeof b[0]);
    return wt_hist_quantile(q, b, h->n);
}

static const char *const lat_names[WT_IKPI_NLAT] = {"e2e", "ttft", "itl"};

const char *wt_ikpi_lat_name(int k)
{
    return k >= 0 && k < WT_IKPI_NLAT ? lat_names[k] : "?";
}

int wt_ikpi_lat_kind(const char *name)
{
    for (int k = 0; k < WT_IKPI_NLAT; k++)
        if (strcmp(name, lat_names[k]) == 0)
            return k;
    return -1;
}

void wt_ikpi_sums_init(struct wt_ikpi_sums *s)
{
    memset(s, 0, sizeof *s);
    s->energy_j = s->energy_u_j = NAN;
    s->idle_j = s->idle_s = NAN;
    s->generated = s->prompt = s->prompt_cached = s->prompt_computed = NAN;
    s->requests = NAN;
    s->gco2e = NAN;
    s->node_j = NAN;
    for (int k = 0; k < WT_IKPI_NLAT; k++)
        s->lat_sum_s[k] = NAN;
}

static void add1(double *a, double b)
{
    if (isnan(b))
        return;
    *a = isnan(*a) ? b : *a + b;
}

int wt_ikpi_sums_add(struct wt_ikpi_sums *a, const struct wt_ikpi_sums *b)
{
    add1(&a->energy_j, b->energy_j);
    add1(&a->energy_u_j, b->energy_u_j);
    add1(&a->idle_j, b->idle_j);
    add1(&a->idle_s, b->idle_s);
    add1(&a->generated, b->generated);
    add1(&a->prompt, b->prompt);
    add1(&a->prompt_cached, b->prompt_cached);
    add1(&a->prompt_computed, b->prompt_computed);
    add1(&a->requests, b->requests);
    add1(&a->gco2e, b->gco2e);
    add1(&a->node_j, b->node_j);
    for (int k = 0; k < WT_IKPI_NLAT; k++)
        add1(&a->lat_sum_s[k], b->lat_sum_s[k]);
    for (int k = 0; k < WT_IKPI_NLAT; k++)
        for (size_t i = 0; i < b->lat[k].n; i++)
            if (wt_ikpi_hist_add(&a->lat[k], b->lat[k].b[i].le, b->lat[k].b[i].count) != 0)
                return -E2BIG;
    return 0;
}

/* a / b, NaN when b is 0 or either is missing */
static double ratio(double a, double b)
{
    if (isnan(a) || isnan(b) || b == 0)
        return NAN;
    return a / b;
}

void wt_ikpi_compute(const struct wt_ikpi_sums *s, struct wt_ikpi *out)
{
    double computed = s->prompt_computed;
    /* vLLM counts the prompt and its cached part: what was computed is the difference */
    if (isnan(computed) && !isnan(s->prompt) && !isnan(s->prompt_cached))
        computed = s->prompt - s->prompt_cached;
    out->generated_tokens_per_kwh = ratio(s->generated, s->energy_j / 3.6e6);
    out->joules_per_generated_token = ratio(s->energy_j, s->generated);
    out->joules_per_generated_token_u = ratio(s->energy_u_j, s->generated);
    out->joules_per_prompt_token = ratio(s->energy_j, s->prompt);
    out->joules_per_computed_prompt_token = ratio(s->energy_j, computed);
    out->joules_per_request = ratio(s->energy_j, s->requests);
    for (int k = 0; k < WT_IKPI_NLAT; k++)
        for (int i = 0; i < 3; i++)
            out->lat_s[k][i] = wt_ikpi_hist_quantile(&s->lat[k], wt_ikpi_quantiles[i]);
    out->prompt_tokens_per_kwh = ratio(s->prompt, s->energy_j / 3.6e6);
    out->computed_prompt_tokens_per_kwh = ratio(computed, s->energy_j / 3.6e6);
    out->gco2e_per_1k_generated_tokens = ratio(1000 * s->gco2e, s->generated);
    out->node_joules_per_generated_token = ratio(s->node_j, s->generated);
    out->node_generated_tokens_per_kwh = ratio(s->generated, s->node_j / 3.6e6);

    /* no computed count (TGI, Triton): every prompt token is taken as computed */
    double comp = isnan(computed) ? s->prompt : computed;
    double f, half;
    wt_ikpi_prefill_share(s->lat_sum_s[WT_IKPI_TTFT], s->lat_sum_s[WT_IKPI_E2E], comp, s->generated,
                          &out->prefill_share_time, &out->prefill_share_tokens, &f, &half);
    out->prefill_share = f;
    out->prefill_share_bound = half;
    /* the split's bound and the energy's bar, each taken whole (they add, not in quadrature) */
    double e = s->energy_j, u = isnan(s->energy_u_j) ? 0 : s->energy_u_j;
    out->prefill_energy_j = e * f;
    out->prefill_energy_bound_j = e * half + u * f;
    out->decode_energy_j = e * (1 - f);
    out->decode_energy_bound_j = e * half + u * (1 - f);
    out->prefill_joules_per_computed_prompt_token = ratio(out->prefill_energy_j, comp);
    out->prefill_joules_per_computed_prompt_token_u = ratio(out->prefill_energy_bound_j, comp);
    out->decode_joules_per_generated_token = ratio(out->decode_energy_j, s->generated);
    out->decode_joules_per_generated_token_u = ratio(out->decode_energy_bound_j, s->generated);
}

void wt_ikpi_prefill_share(double ttft_sum_s, double e2e_sum_s, double computed_prompt,
                           double generated, double *time, double *tokens, double *est,
                           double *bound)
{
    *time = ratio(ttft_sum_s, e2e_sum_s);
    /* a ttft sum above the e2e sum only comes from requests cut by the window's edges */
    if (!isnan(*time) && *time > 1)
        *time = 1;
    *tokens = ratio(computed_prompt, computed_prompt + generated);
    if (isnan(*time) || isnan(*tokens)) {
        *est = *bound = NAN;
        return;
    }
    *est = (*time + *tokens) / 2;
    *bound = fabs(*tokens - *time) / 2;
}

double wt_ikpi_share(double part_tokens, double all_tokens)
{
    return ratio(part_tokens, all_tokens);
}

size_t wt_ikpi_idle_spans(const int64_t *t_ns, const double *busy, size_t n, int64_t max_gap_ns,
                          struct wt_ikpi_span *out, size_t max)
{
    size_t k = 0;
    bool open = false; /* the last stretch written ends at sample i */
    for (size_t i = 0; i + 1 < n; i++) {
        if (busy[i] != 0 || busy[i + 1] != 0 || t_ns[i + 1] - t_ns[i] > max_gap_ns) {
            open = false;
            continue;
        }
        if (open) {
            if (k <= max)
                out[k - 1].b_ns = t_ns[i + 1];
            continue;
        }
        if (k < max) {
            out[k].a_ns = t_ns[i];
            out[k].b_ns = t_ns[i + 1];
        }
        k++;
        open = true;
    }
    return k;
}
