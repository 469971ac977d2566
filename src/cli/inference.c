/* SPDX-License-Identifier: MIT */
/*
 * `wattage inference [--from T] [--to T] [--by model|target|tag|tag:KEY] [--compare A B] [--json]
 * [--db FILE | --source URL] [-c FILE]` (--source: src/cli/inference_source.c):
 * the serving KPIs of every inference target and model (collect/inference.h's series) over a
 * window, from the store: the serving GPUs' energy (the info series' gpus label: the target's
 * configured gpus, else those found from its processes; counter first, with store/uncert.h's bar,
 * as `wattage energy`),
 * tokens by kind, finished requests, their ratios, and e2e/ttft/itl p50/p95/p99 from the
 * window's bucket increases (audit/inference_kpi.h).
 *
 * The window of a target is snapped to its own samples: from the first scrape stored at or
 * after --from to the last at or before --to (from_s, to_s), and the GPUs' energy is taken over
 * exactly that span, so tokens and joules count the same seconds. Several models on one target
 * share its energy by their generated tokens (energy_split "generated_tokens"), and so do
 * targets serving on the same GPU (its energy shared by their generated tokens, "gpus_shared"),
 * so that rows added up under --by count every GPU once.
 *
 * JSON: {"from", "to", "from_s", "to_s", "by", "prefill_decode_split": "estimated",
 *   "prefill_decode_split_method", "rows": [
 *   {"target", "model", "engine", "gpus", "tags": {...}, "from_s", "to_s", "energy_joules",
 *    "energy_uncertainty_joules", "energy_method", "energy_share", "energy_split",
 *    "gpus_shared", "latency_bounds_changed",
 *    "generated_tokens", "prompt_tokens", "prompt_cached_tokens", "prompt_computed_tokens",
 *    "requests", "generated_tokens_per_kwh", "joules_per_generated_token",
 *    "joules_per_generated_token_uncertainty", "joules_per_prompt_token",
 *    "joules_per_computed_prompt_token", "joules_per_request", "e2e_latency_p50_seconds" ...
 *    "itl_latency_p99_seconds", "idle_energy_joules", "idle_seconds", "prompt_tokens_per_kwh",
 *    "computed_prompt_tokens_per_kwh", "prefill_energy_share_{time,tokens,estimated,bound}",
 *    "{prefill,decode}_energy_joules_estimated", "{prefill,decode}_energy_bound_joules",
 *    "prefill_joules_per_computed_prompt_token_{estimated,bound}",
 *    "decode_joules_per_generated_token_{estimated,bound}", "gco2e",
 *    "gco2e_per_1k_generated_tokens", "carbon_pue", "node_boundary_energy_joules",
 *    "node_joules_per_generated_token", "node_generated_tokens_per_kwh",
 *    "node_wall_energy_joules", "node_chips_energy_joules", "node_wall_from"}]}
 *
 * The node's boundary: where this node's wall is metered (topology.meters: pdu_outlet, else
 * bmc; audit/reconcile.h) and the wall and its chips both cover the target's span, the GPUs'
 * energy times wall / chips, i.e. the node's overhead (fans, PSU losses) shared in proportion to
 * chip energy.
 * Missing figures are null. No inference series in the window: exit 1.
 *
 * Idle energy: the GPUs' energy over the stretches between two consecutive scrapes of the
 * target that both say nothing runs or waits (all its models together), each an exact window;
 * shared between models as the rest. Work that starts and ends between two scrapes is not seen.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/carbon.h"
#include "audit/inference_kpi.h"
#include "audit/meters.h"
#include "audit/reconcile.h"
#include "audit/report.h"
#include "audit/topology.h"
#include "cli/cli.h"
#include "cli/inference_rows.h"
#include "core/clock.h"
#include "store/query.h"
#include "store/store.h"

#define MAX_GPUS 64

#define SPLIT_METHOD                                                                               \
    "the midpoint of sum(ttft)/sum(e2e) and computed prompt tokens/(computed prompt + generated "  \
    "tokens), which bracket it; its bound is half their distance"

static void num(cJSON *o, const char *k, double v)
{
    if (isnan(v) || isinf(v))
        cJSON_AddNullToObject(o, k);
    else
        cJSON_AddNumberToObject(o, k, v);
}

static void json_row(cJSON *arr, const struct row *r, const struct wt_ikpi *k)
{
    cJSON *o = cJSON_CreateObject();
    if (r->target[0])
        cJSON_AddStringToObject(o, "target", r->target);
    if (r->model[0])
        cJSON_AddStringToObject(o, "model", r->model);
    if (r->engine[0])
        cJSON_AddStringToObject(o, "engine", r->engine);
    if (r->gpus[0] || (r->target[0] && r->model[0]))
        cJSON_AddStringToObject(o, "gpus", r->gpus);
    if ((r->target[0] && r->model[0]) || (!r->target[0] && !r->model[0])) {
        cJSON *t = cJSON_AddObjectToObject(o, "tags");
        size_t pos = 0;
        char key[64], val[256];
        while (t && wt_labels_next(r->tags, &pos, key, sizeof key, val, sizeof val) == 1)
            cJSON_AddStringToObject(t, key, val);
    }
    num(o, "from_s", (double)r->a / 1e9);
    num(o, "to_s", (double)r->b / 1e9);
    num(o, "energy_joules", r->s.energy_j);
    num(o, "energy_uncertainty_joules", r->s.energy_u_j);
    if (r->method)
        cJSON_AddStringToObject(o, "energy_method", r->method);
    if (r->target[0] && r->model[0]) {
        num(o, "energy_share", r->share);
        cJSON_AddStringToObject(o, "energy_split",
                                r->split || r->gpus_shared ? "generated_tokens" : "none");
        cJSON_AddBoolToObject(o, "gpus_shared", r->gpus_shared);
    }
    num(o, "generated_tokens", r->s.generated);
    num(o, "prompt_tokens", r->s.prompt);
    num(o, "prompt_cached_tokens", r->s.prompt_cached);
    num(o, "prompt_computed_tokens", r->s.prompt_computed);
    num(o, "requests", r->s.requests);
    num(o, "generated_tokens_per_kwh", k->generated_tokens_per_kwh);
    num(o, "joules_per_generated_token", k->joules_per_generated_token);
    num(o, "joules_per_generated_token_uncertainty", k->joules_per_generated_token_u);
    num(o, "joules_per_prompt_token", k->joules_per_prompt_token);
    num(o, "joules_per_computed_prompt_token", k->joules_per_computed_prompt_token);
    num(o, "joules_per_request", k->joules_per_request);
    num(o, "prompt_tokens_per_kwh", k->prompt_tokens_per_kwh);
    num(o, "computed_prompt_tokens_per_kwh", k->computed_prompt_tokens_per_kwh);
    num(o, "prefill_energy_share_time", k->prefill_share_time);
    num(o, "prefill_energy_share_tokens", k->prefill_share_tokens);
    num(o, "prefill_energy_share_estimated", k->prefill_share);
    num(o, "prefill_energy_share_bound", k->prefill_share_bound);
    num(o, "prefill_energy_joules_estimated", k->prefill_energy_j);
    num(o, "prefill_energy_bound_joules", k->prefill_energy_bound_j);
    num(o, "decode_energy_joules_estimated", k->decode_energy_j);
    num(o, "decode_energy_bound_joules", k->decode_energy_bound_j);
    num(o, "prefill_joules_per_computed_prompt_token_estimated",
        k->prefill_joules_per_computed_prompt_token);
    num(o, "prefill_joules_per_computed_prompt_token_bound",
        k->prefill_joules_per_computed_prompt_token_u);
    num(o, "decode_joules_per_generated_token_estimated", k->decode_joules_per_generated_token);
    num(o, "decode_joules_per_generated_token_bound", k->decode_joules_per_generated_token_u);
    for (int l = 0; l < WT_IKPI_NLAT; l++) {
        for (int q = 0; q < 3; q++) {
            char key[64];
            snprintf(key, sizeof key, "%s_latency_p%.0f_seconds", wt_ikpi_lat_name(l),
                     100 * wt_ikpi_quantiles[q]);
            num(o, key, k->lat_s[l][q]);
        }
    }
    cJSON_AddBoolToObject(o, "latency_bounds_changed", r->bounds_changed);
    num(o, "idle_energy_joules", r->s.idle_j);
    num(o, "idle_seconds", r->s.idle_s);
    num(o, "gco2e", r->s.gco2e);
    num(o, "gco2e_per_1k_generated_tokens", k->gco2e_per_1k_generated_tokens);
    num(o, "carbon_pue", r->pue);
    if (!isnan(r->pue))
        cJSON_AddStringToObject(o, "carbon_pue_source", r->pue_measured ? "measured" : "assumed");
    if (r->intensity)
        cJSON_AddStringToObject(o, "carbon_intensity_source", r->intensity);
    num(o, "node_boundary_energy_joules", r->s.node_j);
    num(o, "node_joules_per_generated_token", k->node_joules_per_generated_token);
    num(o, "node_generated_tokens_per_kwh", k->node_generated_tokens_per_kwh);
    if (r->target[0] && r->model[0]) {
        num(o, "node_wall_energy_joules", r->wall_j);
        num(o, "node_chips_energy_joules", r->chips_j);
        if (r->wall_from)
            cJSON_AddStringToObject(o, "node_wall_from", r->wall_from);
    }
    cJSON_AddItemToArray(arr, o);
}

/* A figure for a person: "-" when missing. */
static const char *fig(double v, const char *fmt, char *buf, size_t n)
{
    /* fmt is "%.Nf" or "%.Ng": its precision and kind, so that the format stays a literal */
    int prec = fmt[2] - '0';
    if (isnan(v) || isinf(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, fmt[3] == 'g' ? "%.*g" : "%.*f", prec, v);
    return buf;
}

static void text_row(const struct row *r, const struct wt_ikpi *k)
{
    char a[48], b[48], c[48], d[48];
    if (r->target[0] && r->model[0])
        printf("\n%s  %s%s%s%s%s\n", r->target, r->model, r->engine[0] ? "  engine " : "",
               r->engine, r->tags[0] ? "  " : "", r->tags);
    else if (!r->target[0] && !r->model[0])
        printf("\n%s\n", r->tags[0] ? r->tags : "(no tags)");
    else
        printf("\n%s\n", r->target[0] ? r->target : r->model);
    printf("  window       %.3f s", (double)(r->b - r->a) / 1e9);
    if (r->gpus[0])
        printf("  on GPUs %s", r->gpus);
    printf("\n");
    if (isnan(r->s.energy_j)) {
        printf("  energy       - (no energy stored for %s)\n",
               r->gpus[0] || !(r->target[0] && r->model[0])
                   ? "its GPUs"
                   : "it: no GPUs known, set inference.targets[].gpus");
    } else {
        printf("  energy       %s kWh  (%s J \u00b1 %s J, %s)%s\n",
               fig(r->s.energy_j / 3.6e6, "%.6f", a, sizeof a),
               fig(r->s.energy_j, "%.1f", b, sizeof b), fig(r->s.energy_u_j, "%.3g", c, sizeof c),
               r->method ? r->method : "?",
               r->split && r->gpus_shared
                   ? "  shared by generated tokens with the target's other models and the "
                     "other targets on its GPUs"
               : r->split       ? "  shared by generated tokens with the target's other models"
               : r->gpus_shared ? "  shared by generated tokens with the other targets on its GPUs"
                                : "");
    }
    printf("  tokens       generated %s  prompt %s  cached %s  computed %s\n",
           fig(r->s.generated, "%.0f", a, sizeof a), fig(r->s.prompt, "%.0f", b, sizeof b),
           fig(r->s.prompt_cached, "%.0f", c, sizeof c),
           fig(r->s.prompt_computed, "%.0f", d, sizeof d));
    printf("  requests     %s finished\n", fig(r->s.requests, "%.0f", a, sizeof a));
    printf("  idle         %s kWh over %s s with nothing running or waiting\n",
           fig(r->s.idle_j / 3.6e6, "%.6f", a, sizeof a), fig(r->s.idle_s, "%.1f", b, sizeof b));
    printf("  per kWh      %s generated tokens, %s prompt, %s computed prompt\n",
           fig(k->generated_tokens_per_kwh, "%.0f", a, sizeof a),
           fig(k->prompt_tokens_per_kwh, "%.0f", b, sizeof b),
           fig(k->computed_prompt_tokens_per_kwh, "%.0f", c, sizeof c));
    printf("  per token    %s J \u00b1 %s generated, %s J prompt, %s J computed prompt\n",
           fig(k->joules_per_generated_token, "%.4f", a, sizeof a),
           fig(k->joules_per_generated_token_u, "%.2g", b, sizeof b),
           fig(k->joules_per_prompt_token, "%.4f", c, sizeof c),
           fig(k->joules_per_computed_prompt_token, "%.4f", d, sizeof d));
    printf("  per request  %s J\n", fig(k->joules_per_request, "%.1f", a, sizeof a));
    if (isnan(k->prefill_share)) {
        printf("  prefill      - (the split needs ttft and e2e histograms and token counts)\n");
    } else {
        printf("  prefill      %s %% \u00b1 %s of the energy (estimated: time share %s %%, token "
               "share %s %%)\n",
               fig(100 * k->prefill_share, "%.1f", a, sizeof a),
               fig(100 * k->prefill_share_bound, "%.1f", b, sizeof b),
               fig(100 * k->prefill_share_time, "%.1f", c, sizeof c),
               fig(100 * k->prefill_share_tokens, "%.1f", d, sizeof d));
        printf("  estimated    %s J \u00b1 %s per computed prompt token (prefill), %s J \u00b1 %s "
               "per generated token (decode)\n",
               fig(k->prefill_joules_per_computed_prompt_token, "%.4f", a, sizeof a),
               fig(k->prefill_joules_per_computed_prompt_token_u, "%.2g", b, sizeof b),
               fig(k->decode_joules_per_generated_token, "%.4f", c, sizeof c),
               fig(k->decode_joules_per_generated_token_u, "%.2g", d, sizeof d));
    }
    if (!isnan(r->s.node_j))
        printf("  node         %s J at the node's boundary (%s J per generated token): the GPUs' "
               "energy times the node's wall over its chips%s%s\n",
               fig(r->s.node_j, "%.1f", a, sizeof a),
               fig(k->node_joules_per_generated_token, "%.4f", b, sizeof b),
               r->wall_from ? ", wall from " : "", r->wall_from ? r->wall_from : "");
    if (!isnan(r->s.gco2e))
        printf("  carbon       %s gCO2e, %s g per 1k generated tokens (time-matched, PUE %s %s, "
               "intensity %s)\n",
               fig(r->s.gco2e, "%.4g", a, sizeof a),
               fig(k->gco2e_per_1k_generated_tokens, "%.4g", b, sizeof b),
               fig(r->pue, "%.3f", c, sizeof c), r->pue_measured ? "measured" : "assumed",
               r->intensity ? r->intensity : "?");
    for (int l = 0; l < WT_IKPI_NLAT; l++)
        printf("  %-4s latency p50 %s s  p95 %s s  p99 %s s\n", wt_ikpi_lat_name(l),
               fig(k->lat_s[l][0], "%.4g", a, sizeof a), fig(k->lat_s[l][1], "%.4g", b, sizeof b),
               fig(k->lat_s[l][2], "%.4g", c, sizeof c));
    if (r->bounds_changed)
        printf("  (the latency bucket bounds changed in the window: its quantiles add up the old "
               "bounds and the new ones as PromQL's sum by (le) does, an approximation; ask for "
               "each side)\n");
}

struct side {
    const char *text;
    char key[64], value[256]; /* key "" : every row */
    int64_t a, b;
};

static int parse_side(const char *s, int64_t now, int64_t from, int64_t to, struct side *sd)
{
    char sel[384] = "";
    const char *win = NULL, *at = strchr(s, '@');
    memset(sd, 0, sizeof *sd);
    sd->text = s;
    sd->a = from;
    sd->b = to;
    if (at) {
        snprintf(sel, sizeof sel, "%.*s", (int)(at - s), s);
        win = at + 1;
    } else if (strstr(s, "..") && !strchr(s, '=')) {
        win = s;
    } else {
        snprintf(sel, sizeof sel, "%s", s);
    }
    if (sel[0]) {
        const char *eq = strchr(sel, '=');
        if (!eq || eq == sel || !eq[1] || (size_t)(eq - sel) >= sizeof sd->key) {
            fprintf(stderr,
                    "wattage inference: --compare: '%s': expected model=NAME, target=NAME, "
                    "TAG=VALUE or FROM..TO, each optionally SELECTOR@FROM..TO\n",
                    s);
            return 2;
        }
        snprintf(sd->key, sizeof sd->key, "%.*s", (int)(eq - sel), sel);
        snprintf(sd->value, sizeof sd->value, "%s", eq + 1);
    }
    if (win) {
        const char *dots = strstr(win, "..");
        char left[128];
        int rc;
        if (!dots || (size_t)(dots - win) >= sizeof left) {
            fprintf(stderr, "wattage inference: --compare: '%s': expected FROM..TO after @\n", s);
            return 2;
        }
        snprintf(left, sizeof left, "%.*s", (int)(dots - win), win);
        if ((rc = wt_cli_parse_time("inference", "--compare", left, now, &sd->a)) ||
            (rc = wt_cli_parse_time("inference", "--compare", dots + 2, now, &sd->b)))
            return rc;
        if (sd->b <= sd->a) {
            fprintf(stderr, "wattage inference: --compare: the window of '%s' is empty\n", s);
            return 2;
        }
    }
    return 0;
}

static bool side_matches(const struct row *r, const struct side *sd)
{
    char v[256];
    if (!sd->key[0])
        return true;
    if (strcmp(sd->key, "model") == 0)
        return strcmp(r->model, sd->value) == 0;
    if (strcmp(sd->key, "target") == 0)
        return strcmp(r->target, sd->value) == 0;
    return wt_labels_get(r->tags, sd->key, v, sizeof v) == 0 && strcmp(v, sd->value) == 0;
}

/* The rows of a side over [a, b] added up into *out (has_data false when none matched). */
static int side_row(struct wt_store *st, const struct wt_carbon_conf *cf, const struct side *sd,
                    int64_t a, int64_t b, struct row *out, struct wt_err *err)
{
    struct rows rs = {0}, sel = {0}, g = {0};
    int rc = wt_cli_inference_gather(st, cf, a, b, &rs, err);
    memset(out, 0, sizeof *out);
    out->share = out->pue = NAN;
    wt_ikpi_sums_init(&out->s);
    for (size_t i = 0; rc == 0 && i < rs.n; i++) {
        if (!rs.r[i].has_data || !side_matches(&rs.r[i], sd))
            continue;
        struct row *r = wt_cli_inference_row_of(&sel, rs.r[i].target, rs.r[i].model);
        if (!r) {
            rc = -ENOMEM;
            break;
        }
        *r = rs.r[i];
    }
    if (rc == 0 && sel.n && (rc = wt_cli_inference_group(&sel, "all", &g)) == 0 && g.n)
        *out = g.r[0];
    free(rs.r);
    free(sel.r);
    free(g.r);
    return rc;
}

/* The figures --compare sets side by side: per unit of work, so windows of any length compare. */
#define NFIG 9
static const struct {
    const char *key, *unit;
} figs[NFIG] = {
    {"joules_per_generated_token", "J"},
    {"generated_tokens_per_kwh", "tokens/kWh"},
    {"joules_per_computed_prompt_token", "J"},
    {"joules_per_request", "J"},
    {"e2e_latency_p99_seconds", "s"},
    {"ttft_latency_p99_seconds", "s"},
    {"itl_latency_p99_seconds", "s"},
    {"gco2e_per_1k_generated_tokens", "gCO2e"},
    {"idle_energy_share", "1"},
};

static double fig_of(const struct row *r, size_t i)
{
    struct wt_ikpi k;
    if (!r->has_data)
        return NAN;
    wt_ikpi_compute(&r->s, &k);
    switch (i) {
    case 0:
        return k.joules_per_generated_token;
    case 1:
        return k.generated_tokens_per_kwh;
    case 2:
        return k.joules_per_computed_prompt_token;
    case 3:
        return k.joules_per_request;
    case 4:
        return k.lat_s[WT_IKPI_E2E][2];
    case 5:
        return k.lat_s[WT_IKPI_TTFT][2];
    case 6:
        return k.lat_s[WT_IKPI_ITL][2];
    case 7:
        return k.gco2e_per_1k_generated_tokens;
    default:
        return r->s.energy_j > 0 ? r->s.idle_j / r->s.energy_j : NAN;
    }
}

/*
 * `--compare A B`: each side's figures over its window, and the noise of their difference as
 * `report --compare` takes it (audit/report.h): each window cut into WT_REPORT_PIECES equal
 * pieces, each piece's figure from its own rows, noise = 2 sqrt(se_A^2 + se_B^2).
 */
static int run_compare(struct wt_store *st, const struct wt_carbon_conf *cf, const char *sa,
                       const char *sb, int64_t now, int64_t from, int64_t to, bool json)
{
    struct side sd[2];
    struct row whole[2];
    double p[2][NFIG][WT_REPORT_PIECES];
    struct wt_err err = {{0}};
    int rc;
    if ((rc = parse_side(sa, now, from, to, &sd[0])) ||
        (rc = parse_side(sb, now, from, to, &sd[1])))
        return rc;
    for (int s = 0; s < 2; s++) {
        if ((rc = side_row(st, cf, &sd[s], sd[s].a, sd[s].b, &whole[s], &err)) != 0) {
            fprintf(stderr, "wattage inference: %s\n",
                    err.msg[0] ? err.msg : "cannot read the store");
            return 1;
        }
        if (!whole[s].has_data) {
            fprintf(stderr,
                    "wattage inference: --compare: no inference series match '%s' in its window "
                    "(two scrapes of a target are needed)\n",
                    sd[s].text);
            return 1;
        }
        for (size_t k = 0; k < WT_REPORT_PIECES; k++) {
            int64_t x = sd[s].a + (sd[s].b - sd[s].a) * (int64_t)k / WT_REPORT_PIECES;
            int64_t y = sd[s].a + (sd[s].b - sd[s].a) * (int64_t)(k + 1) / WT_REPORT_PIECES;
            struct row pr;
            if ((rc = side_row(st, cf, &sd[s], x, y, &pr, &err)) != 0) {
                fprintf(stderr, "wattage inference: %s\n",
                        err.msg[0] ? err.msg : "cannot read the store");
                return 1;
            }
            for (size_t i = 0; i < NFIG; i++)
                p[s][i][k] = fig_of(&pr, i);
        }
    }
    struct wt_report_cmp_row cr[NFIG];
    for (size_t i = 0; i < NFIG; i++) {
        memset(&cr[i], 0, sizeof cr[i]);
        wt_report_cmp_judge(&cr[i], fig_of(&whole[0], i), fig_of(&whole[1], i), p[0][i],
                            WT_REPORT_PIECES, p[1][i], WT_REPORT_PIECES);
    }
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddNumberToObject(root, "pieces", WT_REPORT_PIECES);
        cJSON_AddStringToObject(root, "noise_method",
                                "2 sqrt(se_a^2 + se_b^2), se: the standard error of the figure "
                                "over the window's equal pieces");
        for (int s = 0; s < 2; s++) {
            cJSON *arr = cJSON_CreateArray();
            struct wt_ikpi k;
            wt_ikpi_compute(&whole[s].s, &k);
            json_row(arr, &whole[s], &k);
            cJSON *o = cJSON_DetachItemFromArray(arr, 0);
            cJSON_Delete(arr);
            cJSON_AddStringToObject(o, "select", sd[s].text);
            cJSON_AddItemToObject(root, s ? "b" : "a", o);
        }
        cJSON *fa = cJSON_AddArrayToObject(root, "figures");
        for (size_t i = 0; i < NFIG; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "key", figs[i].key);
            cJSON_AddStringToObject(o, "unit", figs[i].unit);
            num(o, "a", cr[i].a);
            num(o, "b", cr[i].b);
            num(o, "difference", cr[i].have_a && cr[i].have_b ? cr[i].diff : NAN);
            num(o, "noise", cr[i].noise);
            if (cr[i].have_noise)
                cJSON_AddBoolToObject(o, "exceeds_noise", cr[i].exceeds);
            else
                cJSON_AddNullToObject(o, "exceeds_noise");
            for (int s = 0; s < 2; s++) {
                cJSON *pa = cJSON_AddArrayToObject(o, s ? "pieces_b" : "pieces_a");
                for (size_t k = 0; k < WT_REPORT_PIECES; k++) {
                    double v = p[s][i][k];
                    cJSON_AddItemToArray(pa, isnan(v) || isinf(v) ? cJSON_CreateNull()
                                                                  : cJSON_CreateNumber(v));
                }
            }
            cJSON_AddItemToArray(fa, o);
        }
        char *txt = cJSON_PrintUnformatted(root);
        if (txt)
            printf("%s\n", txt);
        cJSON_free(txt);
        cJSON_Delete(root);
        return 0;
    }
    char a[48], b[48], c[48], d[48];
    for (int s = 0; s < 2; s++) {
        wt_time_format(sd[s].a, 0, a, sizeof a);
        wt_time_format(sd[s].b, 0, b, sizeof b);
        printf("%s  %s  from %s to %s\n", s ? "B" : "A", sd[s].text, a, b);
    }
    printf("\n%-34s %12s %12s %12s %12s  %s\n", "figure", "A", "B", "B - A", "noise", "");
    for (size_t i = 0; i < NFIG; i++)
        printf("%-34s %12s %12s %12s %12s  %s\n", figs[i].key, fig(cr[i].a, "%.5g", a, sizeof a),
               fig(cr[i].b, "%.5g", b, sizeof b),
               fig(cr[i].have_a && cr[i].have_b ? cr[i].diff : NAN, "%.4g", c, sizeof c),
               fig(cr[i].noise, "%.3g", d, sizeof d),
               !cr[i].have_noise ? "noise unknown"
               : cr[i].exceeds   ? "exceeds the noise"
                                 : "within the noise");
    printf("\nnoise = 2 sqrt(se_A^2 + se_B^2), se from %d equal pieces of each window\n",
           WT_REPORT_PIECES);
    return 0;
}

cJSON *wt_cli_inference_rows_json(struct wt_store *st, const struct wt_config *cfg, int64_t from,
                                  int64_t to)
{
    struct wt_err err = {{0}};
    struct wt_carbon_conf cf;
    struct rows rs = {0};
    cJSON *arr = NULL;
    if (wt_carbon_conf_from(cfg, &cf, &err) == 0 &&
        wt_cli_inference_gather(st, &cf, from, to, &rs, &err) == 0) {
        for (size_t i = 0; i < rs.n; i++) {
            struct wt_ikpi k;
            if (!rs.r[i].has_data)
                continue;
            if (!arr && !(arr = cJSON_CreateArray()))
                break;
            wt_ikpi_compute(&rs.r[i].s, &k);
            json_row(arr, &rs.r[i], &k);
        }
    }
    free(rs.r);
    return arr;
}

void wt_cli_inference_status(const struct wt_config *cfg, double window_s, FILE *out)
{
    struct wt_store_opts so = {.create = false};
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_carbon_conf cf;
    struct rows rs = {0}, g = {0};
    int64_t now = wt_now_real_ns();
    if (!cfg->store.path[0] || access(cfg->store.path, R_OK) != 0 ||
        wt_carbon_conf_from(cfg, &cf, &err) != 0 ||
        wt_store_open(cfg->store.path, &so, &st, &err) != 0)
        return;
    if (wt_cli_inference_gather(st, &cf, now - (int64_t)(window_s * 1e9), now, &rs, &err) == 0 &&
        wt_cli_inference_group(&rs, "target", &g) == 0 && g.n) {
        fprintf(out, "\nserving, last %.0f s (from %s):\n", window_s, cfg->store.path);
        for (size_t i = 0; i < g.n; i++) {
            const struct row *r = &g.r[i];
            struct wt_ikpi k;
            char a[48], b[48], c[48], d[48], e[48];
            if (!r->has_data)
                continue;
            wt_ikpi_compute(&r->s, &k);
            fprintf(out,
                    "%s (%s, GPUs %s): %s J \u00b1 %s per generated token, %s tokens/kWh, e2e p99 "
                    "%s s, idle %s %% of the energy\n",
                    r->target, r->engine[0] ? r->engine : "?", r->gpus[0] ? r->gpus : "?",
                    fig(k.joules_per_generated_token, "%.4f", a, sizeof a),
                    fig(k.joules_per_generated_token_u, "%.2g", b, sizeof b),
                    fig(k.generated_tokens_per_kwh, "%.0f", c, sizeof c),
                    fig(k.lat_s[WT_IKPI_E2E][2], "%.4g", d, sizeof d),
                    fig(r->s.energy_j > 0 ? 100 * r->s.idle_j / r->s.energy_j : NAN, "%.1f", e,
                        sizeof e));
        }
    }
    free(rs.r);
    free(g.r);
    wt_store_close(st);
}

static const struct wt_cli_opt inference_opts[] = {
    {"by", 'b', "model|target|tag|tag:KEY",
     "one row per model (over every target), per target (its models together), per set of "
     "target tags, or per value of one tag; default one per target and model"},
    {"compare", 'C', NULL,
     "A/B of two operands, each model=NAME, target=NAME, TAG=VALUE or FROM..TO (or "
     "SELECTOR@FROM..TO): per-unit figures side by side with the noise of their difference"},
    {"json", WT_OPT_JSON, NULL, "JSON instead of text"},
    {"source", WT_OPT_SOURCE, "URL",
     WT_CLI_SOURCE_HELP " (or that scrapes them with a node label), instead of the local store; "
                        "a node's targets and GPUs read NODE/TARGET and NODE/INDEX"},
    {NULL}};

const struct wt_cli_form wt_cli_form_inference = {
    "inference",
    "[A B]",
    "serving KPIs of the inference targets over a window: tokens per kWh, joules per token and "
    "per request, latency p50/p95/p99",
    __FILE__,
    false,
    {wt_cli_window_opts, inference_opts, wt_cli_store_opts}};

int wt_cmd_inference(int argc, char **argv)
{
    const char *by = NULL;
    bool compare = false;
    struct wt_cli_common co = {.from = "-1h", .to = "now"};
    int c, rc;
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_config cfg;
    struct rows rs = {0}, grouped = {0};

    wt_config_defaults(&cfg);
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_inference, argc, argv, &co)) != -1) {
        switch (c) {
        case 'b':
            by = optarg;
            break;
        case 'C':
            compare = true;
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (compare && argc - optind != 2) {
        fprintf(stderr, "wattage inference: --compare needs two operands, A and B (e.g. "
                        "model=X model=Y, precision=fp8 precision=bf16, or two FROM..TO)\n");
        return 2;
    }
    if (compare && by) {
        fprintf(stderr, "wattage inference: --compare and --by do not go together\n");
        return 2;
    }
    if (!compare && wt_cli_no_operands(&wt_cli_form_inference, argc, argv))
        return 2;
    if (by && strcmp(by, "model") != 0 && strcmp(by, "target") != 0 && strcmp(by, "tag") != 0 &&
        !(strncmp(by, "tag:", 4) == 0 && by[4])) {
        fprintf(stderr,
                "wattage inference: --by: expected model, target, tag or tag:KEY (got \"%s\")\n",
                by);
        return 2;
    }
    int64_t from, to;
    if ((rc = wt_cli_window("inference", &co, wt_now_real_ns(), &from, &to)) != 0)
        return rc;
    char work[128] = "";
    if (co.source && co.db) {
        fprintf(stderr, "wattage inference: --source and --db: name one place to read\n");
        wt_config_free(&cfg);
        return 2;
    }
    rc = co.source ? wt_cli_inference_source(co.source, from, to, work, sizeof work, &st)
                   : wt_cli_store("inference", &co, false, &cfg, &st);
    if (rc) {
        wt_config_free(&cfg);
        return rc;
    }
    struct wt_carbon_conf cf;
    if (wt_carbon_conf_from(&cfg, &cf, &err) != 0) {
        fprintf(stderr, "wattage inference: %s\n", err.msg);
        rc = 2;
        goto fail;
    }

    if (compare) {
        rc = run_compare(st, &cf, argv[optind], argv[optind + 1], wt_now_real_ns(), from, to,
                         co.json);
        goto fail;
    }
    rc = wt_cli_inference_gather(st, &cf, from, to, &rs, &err);
    if (rc != 0) {
        fprintf(stderr, "wattage inference: %s\n", err.msg[0] ? err.msg : "cannot read the store");
        goto fail;
    }
    size_t with_data = 0;
    for (size_t i = 0; i < rs.n; i++)
        with_data += rs.r[i].has_data;
    if (with_data == 0) {
        fprintf(stderr,
                "wattage inference: no inference series in the store from %s to %s (two scrapes "
                "of a target in the window are needed; see inference.targets)\n",
                co.from, co.to);
        rc = 1;
        goto fail;
    }
    const struct rows *out = &rs;
    if (by) {
        if (wt_cli_inference_group(&rs, by, &grouped) != 0) {
            fprintf(stderr, "wattage inference: out of memory\n");
            rc = 1;
            goto fail;
        }
        out = &grouped;
    }

    char fs[40], ts[40];
    wt_time_format(from, from % WT_NS_PER_S ? 1 : 0, fs, sizeof fs);
    wt_time_format(to, to % WT_NS_PER_S ? 1 : 0, ts, sizeof ts);
    if (co.json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "from", fs);
        cJSON_AddStringToObject(root, "to", ts);
        cJSON_AddNumberToObject(root, "from_s", (double)from / 1e9);
        cJSON_AddNumberToObject(root, "to_s", (double)to / 1e9);
        cJSON_AddStringToObject(root, "by", by ? by : "target,model");
        cJSON_AddStringToObject(root, "prefill_decode_split", "estimated");
        cJSON_AddStringToObject(root, "prefill_decode_split_method", SPLIT_METHOD);
        cJSON *arr = cJSON_AddArrayToObject(root, "rows");
        for (size_t i = 0; i < out->n; i++) {
            struct wt_ikpi k;
            if (!out->r[i].has_data)
                continue;
            wt_ikpi_compute(&out->r[i].s, &k);
            json_row(arr, &out->r[i], &k);
        }
        char *txt = cJSON_PrintUnformatted(root);
        if (txt)
            printf("%s\n", txt);
        cJSON_free(txt);
        cJSON_Delete(root);
    } else {
        printf("serving from %s to %s (%.0f s)\n", fs, ts, (double)(to - from) / 1e9);
        for (size_t i = 0; i < out->n; i++) {
            struct wt_ikpi k;
            if (!out->r[i].has_data)
                continue;
            wt_ikpi_compute(&out->r[i].s, &k);
            text_row(&out->r[i], &k);
        }
        printf(
            "\nEach ratio is all-in: the whole energy of the serving GPUs over the tokens of one "
            "kind. No engine measures prefill and decode energy apart: the split is estimated "
            "(%s).\n",
            SPLIT_METHOD);
    }
    rc = 0;
fail:
    free(rs.r);
    free(grouped.r);
    wt_cli_inference_source_done(st, work);
    wt_config_free(&cfg);
    return rc;
}
