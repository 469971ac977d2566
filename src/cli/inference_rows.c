/* SPDX-License-Identifier: MIT */
/*
 * `wattage inference`'s rows: the inference families and info series read from the store per
 * target and model, the GPUs' energy over each target's span, its idle stretches, its node's
 * wall energy and its emissions attributed, and the grouping under --by (see cli/inference.c).
 */
#include "cli/inference_rows.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/carbon.h"
#include "audit/meters.h"
#include "audit/reconcile.h"
#include "audit/report.h"
#include "audit/topology.h"
#include "core/clock.h"
#include "core/gpuname.h"
#include "store/query.h"

struct row *wt_cli_inference_row_of(struct rows *rs, const char *target, const char *model)
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

/*
 * The window increase of one stored counter series; widens the row's span to its samples, and
 * gives the series' own first and last sample times in span[0], span[1].
 */
static int series_increase(struct wt_store *st, const struct wt_series_info *si, int64_t from,
                           int64_t to, struct row *r, double *inc, int64_t span[2])
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
        span[0] = pb.p[0].t_ns;
        span[1] = pb.p[pb.n - 1].t_ns;
        if (!r->a || pb.p[0].t_ns < r->a)
            r->a = pb.p[0].t_ns;
        if (pb.p[pb.n - 1].t_ns > r->b)
            r->b = pb.p[pb.n - 1].t_ns;
        r->has_data = true;
    }
    free(pb.p);
    return 0;
}

/*
 * A bucket bound's series spans span: when the bounds of one histogram do not all span the same
 * samples (1 ms apart at most: one scrape stamps them all), its bounds changed in the window.
 */
static void bound_span(struct row *r, int k, const int64_t span[2])
{
    int64_t *f = r->lat_first[k], *l = r->lat_last[k];
    if (!f[0] && !f[1]) {
        f[0] = f[1] = span[0];
        l[0] = l[1] = span[1];
    }
    f[0] = span[0] < f[0] ? span[0] : f[0];
    f[1] = span[0] > f[1] ? span[0] : f[1];
    l[0] = span[1] < l[0] ? span[1] : l[0];
    l[1] = span[1] > l[1] ? span[1] : l[1];
    if (f[1] - f[0] > 1000000 || l[1] - l[0] > 1000000)
        r->bounds_changed = true;
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
        struct row *r = wt_cli_inference_row_of(rs, target, model);
        double inc;
        int64_t span[2];
        if (!r) {
            rc = -ENOMEM;
            break;
        }
        if ((rc = series_increase(st, &si[i], from, to, r, &inc, span)) != 0 || isnan(inc))
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
            if (k >= 0 && le[0])
                bound_span(r, k, span);
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

/*
 * Whether the GPU of labels (gpu, uuid) is one of gpus: "amd:1" AMD's (uuid AMD-…), "nvidia:1"
 * NVIDIA's, "1" NVIDIA's GPU 1, or AMD's where NVIDIA has no GPU 1 (nv: NVIDIA's indices, as
 * the daemon names a target's GPUs).
 */
static bool gpu_listed(const char *gpus, const char *labels, const char *nv)
{
    char gpu[32], uuid[80] = "", item[128];
    if (wt_labels_get(labels, "gpu", gpu, sizeof gpu) != 0)
        return false;
    (void)wt_labels_get(labels, "uuid", uuid, sizeof uuid);
    const char *mine = wt_gpu_uuid_vendor(uuid), *vendor, *idx;
    for (const char *p = gpus; wt_list_next(&p, item, sizeof item);) {
        /* anything else than an index (a fleet's "NODE/0") is a whole name, no vendor's */
        (void)wt_gpu_vendor_index(item, &vendor, &idx);
        if (strcmp(idx, gpu) != 0)
            continue;
        if (vendor[0] ? strcmp(vendor, mine) == 0
                      : strcmp(mine, "nvidia") == 0 || !wt_list_has(nv, gpu))
            return true;
    }
    return false;
}

/* NVIDIA's GPU indices among the energy rows er, comma-separated. */
static void nvidia_indices(const struct wt_energy_row *er, size_t n, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char gpu[32], uuid[80] = "";
        if (!wt_metric_is_gpu_energy(er[i].s.metric) || er[i].s.node[0] ||
            wt_labels_get(er[i].s.labels, "gpu", gpu, sizeof gpu) != 0)
            continue;
        (void)wt_labels_get(er[i].s.labels, "uuid", uuid, sizeof uuid);
        if (strcmp(wt_gpu_uuid_vendor(uuid), "amd") == 0 || wt_list_has(out, gpu))
            continue;
        int w = snprintf(out + len, size - len, "%s%s", len ? "," : "", gpu);
        if (w < 0 || (size_t)w >= size - len) {
            out[len] = '\0';
            return;
        }
        len += (size_t)w;
    }
}

/*
 * The part of the energy of the GPU of labels (gpu, uuid) that goes to target: its generated
 * tokens over those of every target serving on that GPU (the same part of each when none generated
 * any). 1 when the target has the GPU to itself.
 */
static double gpu_part(const struct rows *rs, const char *target, const char *labels,
                       const char *nv)
{
    double mine = 0, all = 0;
    size_t targets = 0, me = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const struct row *r = &rs->r[i];
        if (!r->has_data || !gpu_listed(r->gpus, labels, nv))
            continue;
        bool first = true; /* the target's first row: count it once */
        for (size_t k = 0; k < i && first; k++)
            first = !rs->r[k].has_data || strcmp(rs->r[k].target, r->target) != 0 ||
                    !gpu_listed(rs->r[k].gpus, labels, nv);
        double g = isnan(r->s.generated) ? 0 : r->s.generated;
        all += g;
        targets += first;
        if (strcmp(r->target, target) == 0) {
            mine += g;
            me = 1;
        }
    }
    if (targets <= 1)
        return 1.0;
    return all > 0 ? mine / all : (double)me / (double)targets;
}

/*
 * The energy of a target's GPUs over [a, b] and its bar; method is "counter" when every GPU's
 * chosen series is its hardware counter. *found: GPUs with a series. With rs, a GPU that other
 * targets of rs serve on too counts for its gpu_part only; *whole (may be NULL) is then the
 * energy of the GPUs whole.
 */
static int gpus_energy_of(struct wt_store *st, const struct rows *rs, const char *target,
                          const char *gpus, int64_t a, int64_t b, double *j, double *u,
                          double *whole, const char **method, int *found, struct wt_err *err)
{
    struct wt_energy_row *er = NULL;
    size_t n = 0;
    int rc = wt_store_energy(st, a, b, 0, &er, &n, err);
    if (rc != 0)
        return rc;
    double all = 0;
    char nv[256];
    nvidia_indices(er, n, nv, sizeof nv);
    *j = *u = 0;
    *found = 0;
    *method = "counter";
    for (size_t i = 0; i < n; i++) {
        if (!er[i].chosen || er[i].s.node[0] || !wt_metric_is_gpu_energy(er[i].s.metric) ||
            !gpu_listed(gpus, er[i].s.labels, nv))
            continue;
        double part = rs ? gpu_part(rs, target, er[i].s.labels, nv) : 1.0;
        all += er[i].energy_j;
        *j += er[i].energy_j * part;
        *u += er[i].uncertainty_j * part;
        (*found)++;
        if (strcmp(er[i].method, "counter") != 0)
            *method = "integrated";
    }
    free(er);
    if (whole)
        *whole = all;
    return 0;
}

static int gpus_energy(struct wt_store *st, const char *gpus, int64_t a, int64_t b, double *j,
                       double *u, const char **method, int *found, struct wt_err *err)
{
    return gpus_energy_of(st, NULL, NULL, gpus, a, b, j, u, NULL, method, found, err);
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
        double j, u, whole;
        const char *method;
        int found;
        int rc =
            gpus_energy_of(st, rs, r->target, r->gpus, a, b, &j, &u, &whole, &method, &found, err);
        if (rc != 0)
            return rc;
        if (found == 0)
            continue;
        /* GPUs other targets serve on too: their idle energy and emissions shared as the energy */
        double gpus_part = whole > 0 ? j / whole : 1.0;
        bool gpus_shared = j < whole;
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
            double model =
                models > 1 ? wt_ikpi_share(isnan(o->s.generated) ? 0 : o->s.generated, all) : 1.0;
            o->share = model * gpus_part;
            o->split = models > 1;
            o->gpus_shared = gpus_shared;
            o->s.energy_j = j * model;
            o->s.energy_u_j = u * model;
            o->s.idle_j = idle_j * o->share;
            o->s.idle_s = idle_s;
            o->s.gco2e = g * o->share;
            o->pue = isnan(g) ? NAN : cr.pue;
            o->pue_measured = cr.pue_measured;
            o->intensity = isnan(g) ? NULL : intensity_source(&cr);
            /* the node's overhead (fans, PSU losses, ...) shared in proportion to chip energy */
            o->s.node_j = j * model * wall_j / chips_j;
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
    struct row *g = wt_cli_inference_row_of(out, "\x01", ""); /* a new row: no target is named so */
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
int wt_cli_inference_group(const struct rows *in, const char *by, struct rows *out)
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
            g = wt_cli_inference_row_of(out, by_model ? "" : r->target, by_model ? r->model : "");
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
        g->bounds_changed |= r->bounds_changed;
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

/* The rows of every target and model over [from, to], their energy and emissions attributed. */
int wt_cli_inference_gather(struct wt_store *st, const struct wt_carbon_conf *cf, int64_t from,
                            int64_t to, struct rows *rs, struct wt_err *err)
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
