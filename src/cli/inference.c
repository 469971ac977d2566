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
 * share its energy by their generated tokens (energy_split "generated_tokens").
 *
 * JSON: {"from", "to", "from_s", "to_s", "by", "prefill_decode_split": "estimated",
 *   "prefill_decode_split_method", "rows": [
 *   {"target", "model", "engine", "gpus", "tags": {...}, "from_s", "to_s", "energy_joules",
 *    "energy_uncertainty_joules", "energy_method", "energy_share", "energy_split",
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
#include "core/clock.h"
#include "store/query.h"
#include "store/store.h"

#define MAX_GPUS 64

#define SPLIT_METHOD                                                                               \
    "the midpoint of sum(ttft)/sum(e2e) and computed prompt tokens/(computed prompt + generated "  \
    "tokens), which bracket it; its bound is half their distance"

/* One target and model, then one row of the output (a group of them under --by). */
struct row {
    char target[128], model[256], engine[64], gpus[256];
    char tags[WT_LABELS_LEN]; /* the target's tags from its info series, as labels */
    int64_t a, b;             /* the span its samples cover in the window (0: none) */
    bool has_data;
    bool split; /* its target's energy shared between models */
    double share;
    const char *method;
    double pue; /* of its emissions (NaN: no carbon figure) */
    bool pue_measured;
    const char *intensity;  /* measured, forecast, ... (wt_carbon_result_json's words) */
    double wall_j, chips_j; /* the whole node's over the target's span (NaN: no wall known) */
    const char *wall_from;  /* "pdu_outlet" or "bmc" */
    struct wt_ikpi_sums s;
};

struct rows {
    struct row *r;
    size_t n, cap;
};

static struct row *row_of(struct rows *rs, const char *target, const char *model)
{
    for (size_t i = 0; i < rs->n; i++)
        if (strcmp(rs->r[i].target, target) == 0 && strcmp(rs->r[i].model, model) == 0)
            return &rs->r[i];
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 8;
        struct row *r = realloc(rs->r, cap * sizeof *r);
        if (!r)
            return NULL;
        rs->r = r;
        rs->cap = cap;
    }
    struct row *r = &rs->r[rs->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->target, sizeof r->target, "%s", target);
    snprintf(r->model, sizeof r->model, "%s", model);
    r->share = NAN;
    r->pue = NAN;
    r->wall_j = r->chips_j = NAN;
    wt_ikpi_sums_init(&r->s);
    return r;
}

/* The window increase of one stored counter series; widens the row's span to its samples. */
static int series_increase(struct wt_store *st, const struct wt_series_info *si, int64_t from,
                           int64_t to, struct row *r, double *inc)
{
    struct wt_point_buf pb = {0};
    int rc = wt_store_read(st, si->id, from, to, 0, 0, &pb);
    if (rc != 0) {
        free(pb.p);
        return rc;
    }
    *inc = NAN;
    if (pb.n >= 2) {
        double *v = malloc(pb.n * sizeof *v);
        if (!v) {
            free(pb.p);
            return -ENOMEM;
        }
        for (size_t i = 0; i < pb.n; i++)
            v[i] = pb.p[i].v;
        *inc = wt_ikpi_increase(v, pb.n);
        free(v);
        if (!r->a || pb.p[0].t_ns < r->a)
            r->a = pb.p[0].t_ns;
        if (pb.p[pb.n - 1].t_ns > r->b)
            r->b = pb.p[pb.n - 1].t_ns;
        r->has_data = true;
    }
    free(pb.p);
    return 0;
}

static int read_family(struct wt_store *st, const char *metric, int64_t from, int64_t to,
                       struct rows *rs, struct wt_err *err)
{
    struct wt_series_info *si = NULL;
    size_t n = 0;
    int rc = wt_store_series(st, metric, false, &si, &n, err);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char target[128], model[256], kind[32] = "", le[64] = "";
        if (si[i].node[0] || wt_labels_get(si[i].labels, "target", target, sizeof target) != 0 ||
            wt_labels_get(si[i].labels, "model", model, sizeof model) != 0)
            continue;
        (void)wt_labels_get(si[i].labels, "kind", kind, sizeof kind);
        (void)wt_labels_get(si[i].labels, "le", le, sizeof le);
        struct row *r = row_of(rs, target, model);
        double inc;
        if (!r) {
            rc = -ENOMEM;
            break;
        }
        if ((rc = series_increase(st, &si[i], from, to, r, &inc)) != 0 || isnan(inc))
            continue;
        if (strcmp(metric, "wattage_inference_requests_total") == 0) {
            r->s.requests = inc;
        } else if (strcmp(metric, "wattage_inference_tokens_total") == 0) {
            if (strcmp(kind, "generated") == 0)
                r->s.generated = inc;
            else if (strcmp(kind, "prompt") == 0)
                r->s.prompt = inc;
            else if (strcmp(kind, "prompt_cached") == 0)
                r->s.prompt_cached = inc;
            else if (strcmp(kind, "prompt_computed") == 0)
                r->s.prompt_computed = inc;
        } else if (strcmp(metric, "wattage_inference_latency_seconds_sum") == 0) {
            int k = wt_ikpi_lat_kind(kind);
            if (k >= 0)
                r->s.lat_sum_s[k] = inc;
        } else {
            int k = wt_ikpi_lat_kind(kind);
            double bound = strcmp(le, "+Inf") == 0 ? INFINITY : strtod(le, NULL);
            if (k >= 0 && le[0] && wt_ikpi_hist_add(&r->s.lat[k], bound, inc) != 0)
                snprintf(err->msg, sizeof err->msg, "%s: more than %d bucket bounds", metric,
                         WT_IKPI_MAX_BUCKETS);
        }
    }
    if (rc != 0 && !err->msg[0])
        snprintf(err->msg, sizeof err->msg, "cannot read %s from the store", metric);
    free(si);
    return rc;
}

/* The engine and GPUs of each row from its info series (the newest in the window). */
static int read_info(struct wt_store *st, int64_t from, int64_t to, struct rows *rs,
                     struct wt_err *err)
{
    struct wt_series_info *si = NULL;
    size_t n = 0;
    int rc = wt_store_series(st, "wattage_inference_info", false, &si, &n, err);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        char target[128], model[256];
        if (si[i].node[0] || wt_labels_get(si[i].labels, "target", target, sizeof target) != 0 ||
            wt_labels_get(si[i].labels, "model", model, sizeof model) != 0)
            continue;
        struct row *r = NULL;
        for (size_t k = 0; k < rs->n && !r; k++)
            if (strcmp(rs->r[k].target, target) == 0 && strcmp(rs->r[k].model, model) == 0)
                r = &rs->r[k];
        struct wt_point_buf pb = {0};
        if (!r || wt_store_read(st, si[i].id, from, to, 0, 0, &pb) != 0 || pb.n == 0) {
            free(pb.p);
            continue;
        }
        free(pb.p);
        (void)wt_labels_get(si[i].labels, "engine", r->engine, sizeof r->engine);
        (void)wt_labels_get(si[i].labels, "gpus", r->gpus, sizeof r->gpus);
        size_t pos = 0;
        char k[64], v[256];
        r->tags[0] = '\0';
        while (wt_labels_next(si[i].labels, &pos, k, sizeof k, v, sizeof v) == 1) {
            if (strcmp(k, "target") != 0 && strcmp(k, "engine") != 0 && strcmp(k, "model") != 0 &&
                strcmp(k, "gpus") != 0)
                (void)wt_labels_add(r->tags, sizeof r->tags, k, v);
        }
    }
    free(si);
    return 0;
}

static bool gpu_listed(const char *gpus, const char *gpu)
{
    size_t len = strlen(gpu);
    for (const char *p = gpus; *p;) {
        size_t l = strcspn(p, ",");
        if (l == len && strncmp(p, gpu, l) == 0)
            return true;
        p += l;
        if (*p == ',')
            p++;
    }
    return false;
}

/*
 * The energy of a target's GPUs over [a, b] and its bar; method is "counter" when every GPU's
 * chosen series is its hardware counter. *found: GPUs with a series.
 */
static int gpus_energy(struct wt_store *st, const char *gpus, int64_t a, int64_t b, double *j,
                       double *u, const char **method, int *found, struct wt_err *err)
{
    struct wt_energy_row *er = NULL;
    size_t n = 0;
    int rc = wt_store_energy(st, a, b, 0, &er, &n, err);
    if (rc != 0)
        return rc;
    *j = *u = 0;
    *found = 0;
    *method = "counter";
    for (size_t i = 0; i < n; i++) {
        char gpu[32];
        if (!er[i].chosen || er[i].s.node[0] || !wt_metric_is_gpu_energy(er[i].s.metric) ||
            wt_labels_get(er[i].s.labels, "gpu", gpu, sizeof gpu) != 0 || !gpu_listed(gpus, gpu))
            continue;
        *j += er[i].energy_j;
        *u += er[i].uncertainty_j;
        (*found)++;
        if (strcmp(er[i].method, "counter") != 0)
            *method = "integrated";
    }
    free(er);
    return 0;
}

struct tv {
    int64_t t;
    double v;
};

static int cmp_tv(const void *x, const void *y)
{
    const struct tv *a = x, *b = y;
    return (a->t > b->t) - (a->t < b->t);
}

#define MAX_IDLE_SPANS 512

/*
 * The energy of a target's GPUs while nothing ran or waited on it (audit/inference_kpi.h's
 * stretches, from the running and waiting gauges of all its models) over [a, b]: one exact
 * window per stretch. *idle_j NaN when the target has no such gauges or too many stretches.
 */
static int target_idle(struct wt_store *st, const char *target, const char *gpus, int64_t a,
                       int64_t b, double *idle_j, double *idle_s, struct wt_err *err)
{
    static const char *const gauges[] = {"wattage_inference_requests_running",
                                         "wattage_inference_requests_waiting"};
    struct wt_point_buf pb = {0};
    struct tv *all = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    *idle_j = *idle_s = NAN;
    for (size_t g = 0; g < 2 && rc == 0; g++) {
        struct wt_series_info *si = NULL;
        size_t ns = 0;
        if ((rc = wt_store_series(st, gauges[g], false, &si, &ns, err)) != 0)
            break;
        for (size_t i = 0; i < ns && rc == 0; i++) {
            char t[128];
            if (si[i].node[0] || wt_labels_get(si[i].labels, "target", t, sizeof t) != 0 ||
                strcmp(t, target) != 0)
                continue;
            pb.n = 0;
            if ((rc = wt_store_read(st, si[i].id, a, b, 0, 0, &pb)) != 0)
                break;
            if (n + pb.n > cap) {
                size_t nc = (n + pb.n) * 2;
                struct tv *m = realloc(all, nc * sizeof *m);
                if (!m) {
                    rc = -ENOMEM;
                    break;
                }
                all = m;
                cap = nc;
            }
            for (size_t k = 0; k < pb.n; k++)
                all[n++] = (struct tv){pb.p[k].t_ns, pb.p[k].v};
        }
        free(si);
    }
    free(pb.p);
    if (rc != 0 || n < 2) {
        free(all);
        return rc;
    }
    /* running + waiting of every model, per scrape */
    qsort(all, n, sizeof *all, cmp_tv);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && all[m - 1].t == all[i].t)
            all[m - 1].v += all[i].v;
        else
            all[m++] = all[i];
    }
    int64_t *t = malloc(m * sizeof *t);
    double *busy = malloc(m * sizeof *busy);
    struct wt_ikpi_span *sp = malloc(MAX_IDLE_SPANS * sizeof *sp);
    size_t nsp = 0;
    if (!t || !busy || !sp) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < m; i++) {
        t[i] = all[i].t;
        busy[i] = all[i].v;
    }
    /* a gap of three mean scrape intervals is a server not read, not known to be idle */
    int64_t gap = m > 1 ? 3 * ((t[m - 1] - t[0]) / (int64_t)(m - 1)) : 0;
    nsp = wt_ikpi_idle_spans(t, busy, m, gap, sp, MAX_IDLE_SPANS);
    if (nsp > MAX_IDLE_SPANS)
        goto out; /* too fragmented to ask the store stretch by stretch: left unknown */
    *idle_j = *idle_s = 0;
    for (size_t i = 0; i < nsp; i++) {
        double j, u;
        const char *method;
        int found;
        if ((rc = gpus_energy(st, gpus, sp[i].a_ns, sp[i].b_ns, &j, &u, &method, &found, err)) != 0)
            break;
        *idle_j += j;
        *idle_s += (double)(sp[i].b_ns - sp[i].a_ns) / 1e9;
    }
out:
    free(t);
    free(busy);
    free(sp);
    free(all);
    return rc;
}

struct carbon_ctx {
    struct wt_store *st;
    const char *gpus;
    struct wt_err *err;
};

/* audit/carbon.h's energy of a piece: the target's GPUs over it */
static int carbon_energy(void *ctx, int64_t a, int64_t b, double *joules)
{
    struct carbon_ctx *c = ctx;
    double u;
    const char *method;
    int found;
    return gpus_energy(c->st, c->gpus, a, b, joules, &u, &method, &found, c->err);
}

/* What the intensity of r's emissions was, as wt_carbon_result_json says it. */
static const char *intensity_source(const struct wt_carbon_result *r)
{
    double tot = r->it_j, act = r->by_src_j[WT_CSRC_ACTUAL];
    if (tot <= 0)
        return "none";
    if (act >= tot * (1 - 1e-9))
        return "measured";
    if (r->by_src_j[WT_CSRC_STATIC] >= tot * (1 - 1e-9))
        return "assumed";
    return act > 0 ? "mixed" : r->by_src_j[WT_CSRC_FORECAST] > 0 ? "forecast" : "filled";
}

/*
 * The time-matched emissions of a target's GPUs over [a, b] (audit/carbon.h, the same function
 * jobs use): NaN g when no zone or no intensity is known.
 */
static int target_carbon(struct wt_store *st, const struct wt_carbon_conf *cf, const char *gpus,
                         int64_t a, int64_t b, struct wt_carbon_result *cr, double *g,
                         struct wt_err *err)
{
    *g = NAN;
    const char *zone = wt_carbon_zone_of(cf, NULL);
    if (!cf || ((!zone || !*zone) && !cf->has_static))
        return 0;
    double pue;
    bool measured;
    wt_carbon_pue(st, cf, a, b, &pue, &measured);
    struct carbon_ctx ctx = {st, gpus, err};
    int rc = wt_carbon_emissions(wt_store_db(st), st, cf, zone, a, b, carbon_energy, &ctx, pue,
                                 measured, cr);
    if (rc != 0) {
        if (!err->msg[0])
            snprintf(err->msg, sizeof err->msg, "cannot work out the emissions of GPUs %s", gpus);
        return rc;
    }
    if (cr->known)
        *g = cr->g;
    return 0;
}

/*
 * This node's wall (audit/reconcile.h: its pdu_outlet meters, else its bmc) and its chips (GPUs,
 * CPU packages, DRAM) over [a, b]. *wall_j NaN when the node has no wall meter, the wall and the
 * chips do not both cover the window (wt_recon_complete), or the chips exceed the wall.
 */
static int node_wall(struct wt_store *st, const struct wt_config *cfg, int64_t a, int64_t b,
                     double *wall_j, double *chips_j, const char **from, struct wt_err *err)
{
    struct wt_topology *t = NULL;
    struct wt_meter_set *ms = NULL;
    struct wt_recon_node *rn = NULL;
    size_t n = 0;
    *wall_j = *chips_j = NAN;
    *from = NULL;
    if (!cfg)
        return 0;
    int rc = wt_topology_load(cfg, &t, err);
    if (rc != 0)
        return rc;
    if ((rc = wt_meters_open(st, t, &ms, err)) == 0 &&
        (rc = wt_recon_compute(ms, t, a, b, &rn, &n)) == 0) {
        for (size_t i = 0; i < n; i++) {
            /* chips above the wall: sensors or mapping wrong (the reconciliation says so) */
            if (strcmp(rn[i].node, t->node) != 0 || !wt_recon_complete(&rn[i]) ||
                !(rn[i].chips_j > 0) || rn[i].wall_j < rn[i].chips_j)
                continue;
            *wall_j = rn[i].wall_j;
            *chips_j = rn[i].chips_j;
            *from = rn[i].wall_from;
        }
    }
    if (rc != 0 && !err->msg[0])
        snprintf(err->msg, sizeof err->msg, "cannot read the node's wall meters");
    free(rn);
    wt_meters_close(ms);
    free(t);
    return rc;
}

/*
 * Per target: the energy over its span, shared by generated tokens between its models, and its
 * emissions (cf NULL: none) shared the same way.
 */
static int attribute_energy(struct wt_store *st, const struct wt_config *cfg,
                            const struct wt_carbon_conf *cf, struct rows *rs, struct wt_err *err)
{
    for (size_t i = 0; i < rs->n; i++) {
        struct row *r = &rs->r[i];
        if (!r->has_data || !isnan(r->s.energy_j) || !r->gpus[0])
            continue;
        /* the target's span and tokens: all its models together */
        int64_t a = r->a, b = r->b;
        double all = 0;
        size_t models = 0;
        for (size_t k = i; k < rs->n; k++) {
            struct row *o = &rs->r[k];
            if (!o->has_data || strcmp(o->target, r->target) != 0)
                continue;
            a = o->a < a ? o->a : a;
            b = o->b > b ? o->b : b;
            if (!isnan(o->s.generated))
                all += o->s.generated;
            models++;
        }
        if (b <= a)
            continue;
        double j, u;
        const char *method;
        int found;
        int rc = gpus_energy(st, r->gpus, a, b, &j, &u, &method, &found, err);
        if (rc != 0)
            return rc;
        if (found == 0)
            continue;
        double idle_j, idle_s;
        if ((rc = target_idle(st, r->target, r->gpus, a, b, &idle_j, &idle_s, err)) != 0)
            return rc;
        struct wt_carbon_result cr;
        double g;
        memset(&cr, 0, sizeof cr);
        if ((rc = target_carbon(st, cf, r->gpus, a, b, &cr, &g, err)) != 0)
            return rc;
        double wall_j, chips_j;
        const char *wall_from;
        if ((rc = node_wall(st, cfg, a, b, &wall_j, &chips_j, &wall_from, err)) != 0)
            return rc;
        for (size_t k = i; k < rs->n; k++) {
            struct row *o = &rs->r[k];
            if (!o->has_data || strcmp(o->target, r->target) != 0)
                continue;
            o->share =
                models > 1 ? wt_ikpi_share(isnan(o->s.generated) ? 0 : o->s.generated, all) : 1.0;
            o->split = models > 1;
            o->s.energy_j = j * o->share;
            o->s.energy_u_j = u * o->share;
            o->s.idle_j = idle_j * o->share;
            o->s.idle_s = idle_s;
            o->s.gco2e = g * o->share;
            o->pue = isnan(g) ? NAN : cr.pue;
            o->pue_measured = cr.pue_measured;
            o->intensity = isnan(g) ? NULL : intensity_source(&cr);
            /* the node's overhead (fans, PSU losses, ...) shared in proportion to chip energy */
            o->s.node_j = j * o->share * wall_j / chips_j;
            o->wall_j = wall_j;
            o->chips_j = chips_j;
            o->wall_from = wall_from;
            o->method = method;
            o->a = a;
            o->b = b;
        }
    }
    return 0;
}

/*
 * The tags a row is grouped under with --by tag (all its tags) or --by tag:KEY (that one, ""
 * when the target has no such tag), as labels.
 */
static void tag_key(const struct row *r, const char *by, char *out, size_t n)
{
    char v[256];
    out[0] = '\0';
    if (strcmp(by, "all") == 0) /* one group of every row (--compare's sides) */
        return;
    if (strcmp(by, "tag") == 0) {
        snprintf(out, n, "%s", r->tags);
        return;
    }
    const char *key = by + 4; /* "tag:KEY" */
    if (wt_labels_get(r->tags, key, v, sizeof v) != 0)
        v[0] = '\0';
    (void)wt_labels_add(out, n, key, v);
}

static struct row *group_of_tags(struct rows *out, const char *tags)
{
    for (size_t i = 0; i < out->n; i++)
        if (strcmp(out->r[i].tags, tags) == 0)
            return &out->r[i];
    struct row *g = row_of(out, "\x01", ""); /* a new row: no target is named so */
    if (g) {
        g->target[0] = '\0';
        snprintf(g->tags, sizeof g->tags, "%s", tags);
    }
    return g;
}

/*
 * Rows grouped by model, target or tags: energy, tokens, requests and buckets are added up and
 * the ratios computed again on the sums (never an average of ratios). A target's idle seconds
 * are counted once per group however many of its models are in it.
 */
static int group(const struct rows *in, const char *by, struct rows *out)
{
    bool by_model = strcmp(by, "model") == 0;
    bool by_tag = strncmp(by, "tag", 3) == 0 || strcmp(by, "all") == 0;
    for (size_t i = 0; i < in->n; i++) {
        const struct row *r = &in->r[i];
        if (!r->has_data)
            continue;
        char tags[WT_LABELS_LEN] = "";
        struct row *g;
        if (by_tag) {
            tag_key(r, by, tags, sizeof tags);
            g = group_of_tags(out, tags);
        } else {
            g = row_of(out, by_model ? "" : r->target, by_model ? r->model : "");
        }
        if (!g)
            return -ENOMEM;
        if (!g->has_data) {
            g->has_data = true;
            g->a = r->a;
            g->b = r->b;
            g->method = r->method;
            g->pue = r->pue;
            g->pue_measured = r->pue_measured;
            g->intensity = r->intensity;
            if (!by_model && !by_tag) {
                snprintf(g->engine, sizeof g->engine, "%s", r->engine);
                snprintf(g->gpus, sizeof g->gpus, "%s", r->gpus);
            }
        }
        g->a = r->a < g->a ? r->a : g->a;
        g->b = r->b > g->b ? r->b : g->b;
        if (r->method && g->method && strcmp(r->method, g->method) != 0)
            g->method = "integrated";
        if (!(r->pue == g->pue)) /* several PUEs (or none for some): no one figure */
            g->pue = NAN;
        if (r->intensity != g->intensity &&
            (!r->intensity || !g->intensity || strcmp(r->intensity, g->intensity) != 0))
            g->intensity = "mixed";
        /* another model of this target already in the group: its idle time is the same time */
        bool seen = false;
        for (size_t k = 0; k < i && !seen && !by_model; k++) {
            const struct row *o = &in->r[k];
            char ot[WT_LABELS_LEN] = "";
            if (!o->has_data || strcmp(o->target, r->target) != 0)
                continue;
            if (by_tag)
                tag_key(o, by, ot, sizeof ot);
            seen = strcmp(ot, tags) == 0;
        }
        double idle_s = g->s.idle_s;
        if (wt_ikpi_sums_add(&g->s, &r->s) != 0)
            return -E2BIG;
        if (seen)
            g->s.idle_s = idle_s;
    }
    return 0;
}

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
        cJSON_AddStringToObject(o, "energy_split", r->split ? "generated_tokens" : "none");
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
               r->split ? "  shared by generated tokens with the target's other models" : "");
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
}

/* The rows of every target and model over [from, to], their energy and emissions attributed. */
static int gather(struct wt_store *st, const struct wt_carbon_conf *cf, int64_t from, int64_t to,
                  struct rows *rs, struct wt_err *err)
{
    static const char *const families[] = {
        "wattage_inference_tokens_total", "wattage_inference_requests_total",
        "wattage_inference_latency_seconds_bucket", "wattage_inference_latency_seconds_sum"};
    int rc = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0] && rc == 0; f++)
        rc = read_family(st, families[f], from, to, rs, err);
    if (rc == 0)
        rc = read_info(st, from, to, rs, err);
    if (rc == 0)
        rc = attribute_energy(st, cf->cfg, cf, rs, err);
    return rc;
}

/*
 * One side of --compare: SELECTOR, FROM..TO or SELECTOR@FROM..TO, where SELECTOR is
 * model=NAME, target=NAME or TAG=VALUE (a target tag); no selector: every row; no window: the
 * --from/--to one.
 */
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
    int rc = gather(st, cf, a, b, &rs, err);
    memset(out, 0, sizeof *out);
    out->share = out->pue = NAN;
    wt_ikpi_sums_init(&out->s);
    for (size_t i = 0; rc == 0 && i < rs.n; i++) {
        if (!rs.r[i].has_data || !side_matches(&rs.r[i], sd))
            continue;
        struct row *r = row_of(&sel, rs.r[i].target, rs.r[i].model);
        if (!r) {
            rc = -ENOMEM;
            break;
        }
        *r = rs.r[i];
    }
    if (rc == 0 && sel.n && (rc = group(&sel, "all", &g)) == 0 && g.n)
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
    if (wt_carbon_conf_from(cfg, &cf, &err) == 0 && gather(st, &cf, from, to, &rs, &err) == 0) {
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
    if (gather(st, &cf, now - (int64_t)(window_s * 1e9), now, &rs, &err) == 0 &&
        group(&rs, "target", &g) == 0 && g.n) {
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
    rc = gather(st, &cf, from, to, &rs, &err);
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
        if (group(&rs, by, &grouped) != 0) {
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
