/* SPDX-License-Identifier: MIT */
/*
 * The report's data: the chart series read from the store and downsampled on the way in, the
 * figures of the modules that own them (report.h lists which), the few figures only the report
 * has (idle burn, capped and throttle time, gaps), and the findings ranked by energy.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/ashrae.h"
#include "audit/calibrate.h"
#include "audit/carbon.h"
#include "audit/dark.h"
#include "audit/jobs.h"
#include "audit/meters.h"
#include "audit/report.h"
#include "audit/schedule.h"
#include "audit/topology.h"
#include "core/clock.h"
#include "core/config.h"

#define NS 1000000000LL
/* NVML clocks event reasons that mean the GPU was slowed by heat or the power brake. */
#define THROTTLE_BITS (0x8ULL | 0x20ULL | 0x40ULL | 0x80ULL)
#define CAP_BIT 0x4ULL
#define MAX_STEPS 2000

void wt_report_downsample(const struct wt_point *in, size_t n, int64_t from, int64_t to,
                          size_t cols, struct wt_point *out, size_t *nout)
{
    size_t k = 0, i = 0;
    *nout = 0;
    if (cols == 0 || to <= from)
        return;
    double span = (double)(to - from);
    while (i < n && in[i].t_ns < from)
        i++;
    while (i < n && in[i].t_ns <= to) {
        size_t col = (size_t)((double)(in[i].t_ns - from) / span * (double)cols);
        if (col >= cols)
            col = cols - 1;
        size_t lo = i, hi = i;
        for (i++; i < n && in[i].t_ns <= to; i++) {
            size_t c = (size_t)((double)(in[i].t_ns - from) / span * (double)cols);
            if ((c >= cols ? cols - 1 : c) != col)
                break;
            if (in[i].v < in[lo].v)
                lo = i;
            if (in[i].v > in[hi].v)
                hi = i;
        }
        if (lo == hi) {
            out[k++] = in[lo];
        } else {
            out[k++] = in[lo < hi ? lo : hi];
            out[k++] = in[lo < hi ? hi : lo];
        }
    }
    *nout = k;
}

static int add_missing(struct wt_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int add_missing(struct wt_report *r, const char *fmt, ...)
{
    if (r->nmissing >= WT_REPORT_MAX_MISSING)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->missing[r->nmissing++], sizeof r->missing[0], fmt, ap);
    va_end(ap);
    return 0;
}

static struct wt_report_finding *add_finding(struct wt_report *r, const char *kind, double j)
{
    if (r->nfindings >= WT_REPORT_MAX_FINDINGS)
        return NULL;
    struct wt_report_finding *f = &r->findings[r->nfindings++];
    memset(f, 0, sizeof *f);
    snprintf(f->kind, sizeof f->kind, "%s", kind);
    f->energy_j = j;
    return f;
}

static int cmp_finding(const void *a, const void *b)
{
    double x = ((const struct wt_report_finding *)a)->energy_j;
    double y = ((const struct wt_report_finding *)b)->energy_j;
    return x < y ? 1 : x > y ? -1 : 0;
}

void wt_report_rank(struct wt_report *r)
{
    qsort(r->findings, r->nfindings, sizeof r->findings[0], cmp_finding);
}

/*
 * The GPUs' series, indexed once per metric: a report of a fleet looks up each GPU's series of a
 * dozen metrics, and a selector query per lookup reads every GPU's series of the metric (the cost
 * grew with the square of the fleet). A GPU is (node, gpu label, uuid label); a series matches
 * when its node and gpu label are the GPU's and its uuid label (or "" when it has none) is the
 * GPU's; the first such series in the store's order (node, labels) is the GPU's.
 */
struct gpu_key {
    const char *node;
    char gpu[16], uuid[96];
    size_t ord; /* the position in the store's (or the energy rows') order */
};

struct metric_ix {
    bool loaded;
    struct wt_series_info *si; /* the metric's series, malloc'd */
    struct gpu_key *keys;      /* those with a gpu label, sorted by cmp_key; malloc'd */
    size_t nkeys;
};

struct gpu_ix {
    struct wt_store *st;
    struct metric_ix m[WT_M_COUNT];
};

static int cmp_key(const void *x, const void *y)
{
    const struct gpu_key *a = x, *b = y;
    int c = strcmp(a->node, b->node);
    if (!c)
        c = strcmp(a->gpu, b->gpu);
    if (!c)
        c = strcmp(a->uuid, b->uuid);
    return c ? c : a->ord < b->ord ? -1 : a->ord > b->ord;
}

/* The first key of keys (sorted by cmp_key) that is the GPU's, or NULL; with last, the last. */
static const struct gpu_key *key_find(const struct gpu_key *keys, size_t n,
                                      const struct wt_report_gpu *g, bool last)
{
    struct gpu_key want = {.node = g->node, .ord = last ? SIZE_MAX : 0};
    snprintf(want.gpu, sizeof want.gpu, "%s", g->gpu);
    snprintf(want.uuid, sizeof want.uuid, "%s", g->uuid);
    size_t lo = 0, hi = n; /* the first key at or after want */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_key(&keys[mid], &want) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const struct gpu_key *k = last ? (lo ? &keys[lo - 1] : NULL) : (lo < n ? &keys[lo] : NULL);
    return k && strcmp(k->node, g->node) == 0 && strcmp(k->gpu, g->gpu) == 0 &&
                   strcmp(k->uuid, g->uuid) == 0
               ? k
               : NULL;
}

static int ix_load(struct gpu_ix *ix, int metric)
{
    struct metric_ix *m = &ix->m[metric];
    size_t n = 0;
    struct wt_err err;
    if (m->loaded)
        return 0;
    int rc = wt_store_series(ix->st, wt_metrics[metric].name, false, &m->si, &n, &err);
    if (rc)
        return rc;
    if (n && !(m->keys = malloc(n * sizeof *m->keys))) {
        free(m->si);
        m->si = NULL;
        return -ENOMEM;
    }
    m->loaded = true;
    for (size_t i = 0; i < n; i++) {
        struct gpu_key *k = &m->keys[m->nkeys];
        k->node = m->si[i].node;
        k->ord = i;
        k->uuid[0] = '\0';
        if (wt_labels_get(m->si[i].labels, "gpu", k->gpu, sizeof k->gpu) != 0)
            continue; /* no gpu label: no GPU's series */
        (void)wt_labels_get(m->si[i].labels, "uuid", k->uuid, sizeof k->uuid);
        m->nkeys++;
    }
    qsort(m->keys, m->nkeys, sizeof *m->keys, cmp_key);
    return 0;
}

static void ix_free(struct gpu_ix *ix)
{
    for (size_t i = 0; i < WT_M_COUNT; i++) {
        free(ix->m[i].si);
        free(ix->m[i].keys);
    }
}

/* Reads a series' raw readings of the window into *pts (NULL, 0 when not stored). */
static int read_points(struct gpu_ix *ix, int metric, const struct wt_report_gpu *g, int64_t a,
                       int64_t b, struct wt_point **pts, size_t *n)
{
    *pts = NULL;
    *n = 0;
    int rc = ix_load(ix, metric);
    if (rc)
        return rc == -ENOMEM ? rc : 0; /* a series the store cannot list: not stored */
    const struct metric_ix *m = &ix->m[metric];
    const struct gpu_key *k = key_find(m->keys, m->nkeys, g, false);
    return k ? wt_store_points(ix->st, &m->si[k->ord], a, b, 0, pts, n) : 0;
}

static int make_line(const struct wt_point *p, size_t n, int64_t a, int64_t b,
                     struct wt_report_line *l)
{
    l->raw = n;
    l->pts = malloc(2 * WT_REPORT_COLS * sizeof *l->pts);
    l->mean = malloc(WT_REPORT_COLS * sizeof *l->mean);
    double *cnt = calloc(WT_REPORT_COLS, sizeof *cnt);
    if (!l->pts || !l->mean || !cnt) {
        free(cnt);
        return -ENOMEM;
    }
    wt_report_downsample(p, n, a, b, WT_REPORT_COLS, l->pts, &l->n);
    for (size_t c = 0; c < WT_REPORT_COLS; c++)
        l->mean[c] = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i].t_ns < a || p[i].t_ns > b)
            continue;
        size_t c = (size_t)((double)(p[i].t_ns - a) / (double)(b - a) * WT_REPORT_COLS);
        if (c >= WT_REPORT_COLS)
            c = WT_REPORT_COLS - 1;
        l->mean[c] += p[i].v;
        cnt[c]++;
    }
    for (size_t c = 0; c < WT_REPORT_COLS; c++)
        l->mean[c] = cnt[c] > 0 ? l->mean[c] / cnt[c] : NAN;
    free(cnt);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The value of a step series (sorted) at t: the last reading at or before t, else NAN. */
static double at(const struct wt_point *p, size_t n, size_t *k, int64_t t)
{
    while (*k + 1 < n && p[*k + 1].t_ns <= t)
        (*k)++;
    return n && p[*k].t_ns <= t ? p[*k].v : NAN;
}

static double last_value(struct gpu_ix *ix, int metric, const struct wt_report_gpu *g, int64_t a,
                         int64_t b)
{
    struct wt_point *p;
    size_t n;
    double v = NAN;
    if (read_points(ix, metric, g, a, b, &p, &n) == 0 && n)
        v = p[n - 1].v;
    free(p);
    return v;
}

/* The mean of a gauge's readings in [a, b] (NAN: none). */
static double mean_value(struct gpu_ix *ix, int metric, const struct wt_report_gpu *g, int64_t a,
                         int64_t b)
{
    struct wt_point *p;
    size_t n, k = 0;
    double sum = 0;
    if (read_points(ix, metric, g, a, b, &p, &n) == 0)
        for (size_t i = 0; i < n; i++)
            if (p[i].t_ns >= a && p[i].t_ns <= b && !isnan(p[i].v))
                sum += p[i].v, k++;
    free(p);
    return k ? sum / (double)k : NAN;
}

/* A byte counter's rate over its readings in [a, b]: the rises summed (a reset restarts from 0
 * and is not a negative rate) over the time between the first and last reading (NAN: fewer
 * than two). */
static double counter_rate(struct gpu_ix *ix, int metric, const struct wt_report_gpu *g, int64_t a,
                           int64_t b)
{
    struct wt_point *p;
    size_t n;
    double up = 0, v = NAN;
    int64_t t0 = 0, t1 = 0;
    bool first = true;
    if (read_points(ix, metric, g, a, b, &p, &n) == 0)
        for (size_t i = 0; i < n; i++) {
            if (p[i].t_ns < a || p[i].t_ns > b || isnan(p[i].v))
                continue;
            if (first)
                t0 = p[i].t_ns, first = false;
            else if (p[i].v >= v)
                up += p[i].v - v;
            else
                up += p[i].v;
            v = p[i].v;
            t1 = p[i].t_ns;
        }
    free(p);
    return t1 > t0 ? up / ((double)(t1 - t0) / 1e9) : NAN;
}

static void gather_activity(struct gpu_ix *ix, int64_t a, int64_t b, struct wt_report_gpu *g)
{
    g->util_mean = mean_value(ix, WT_M_GPU_UTIL_RATIO, g, a, b);
    g->sm_active = mean_value(ix, WT_M_GPU_SM_ACTIVE_RATIO, g, a, b);
    g->sm_occupancy = mean_value(ix, WT_M_GPU_SM_OCCUPANCY_RATIO, g, a, b);
    g->tensor_active = mean_value(ix, WT_M_GPU_TENSOR_ACTIVE_RATIO, g, a, b);
    g->dram_bw = mean_value(ix, WT_M_GPU_DRAM_BW_RATIO, g, a, b);
    g->nvlink_tx_bps = counter_rate(ix, WT_M_GPU_NVLINK_TX_BYTES, g, a, b);
    g->nvlink_rx_bps = counter_rate(ix, WT_M_GPU_NVLINK_RX_BYTES, g, a, b);
    g->pcie_tx_bps = counter_rate(ix, WT_M_GPU_PCIE_TX_BYTES, g, a, b);
    g->pcie_rx_bps = counter_rate(ix, WT_M_GPU_PCIE_RX_BYTES, g, a, b);
}

/* Power, utilization and temperature of one GPU: lines, idle burn, capped and throttle time. */
static int gather_gpu(struct gpu_ix *ix, int64_t a, int64_t b, struct wt_report_gpu *g)
{
    struct wt_point *pw = NULL, *ut = NULL, *tc = NULL, *tr = NULL;
    size_t npw = 0, nut = 0, ntc = 0, ntr = 0;
    int64_t *steps = NULL;
    int rc;
    if ((rc = read_points(ix, WT_M_GPU_POWER_W, g, a, b, &pw, &npw)) ||
        (rc = read_points(ix, WT_M_GPU_UTIL_RATIO, g, a, b, &ut, &nut)) ||
        (rc = read_points(ix, WT_M_GPU_TEMP_C, g, a, b, &tc, &ntc)) ||
        (rc = read_points(ix, WT_M_GPU_THROTTLE_REASONS, g, a, b, &tr, &ntr)))
        goto fail;
    if ((rc = make_line(pw, npw, a, b, &g->power)) || (rc = make_line(ut, nut, a, b, &g->util)) ||
        (rc = make_line(tc, ntc, a, b, &g->temp)))
        goto fail;
    g->slowdown_c = last_value(ix, WT_M_GPU_SLOWDOWN_TEMP_C, g, a, b);
    g->power_limit_w = last_value(ix, WT_M_GPU_POWER_LIMIT_W, g, a, b);
    g->throttle_from = ntr ? "throttle_reasons" : "temperature";
    if (npw < 2)
        goto done;
    /* The median step between power readings: longer than GAP_FACTOR of it is a gap. */
    steps = malloc((npw - 1) * sizeof *steps);
    if (!steps) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 1; i < npw; i++)
        steps[i - 1] = pw[i].t_ns - pw[i - 1].t_ns;
    qsort(steps, npw - 1, sizeof *steps, cmp_i64);
    int64_t gap = (int64_t)(WT_REPORT_GAP_FACTOR * (double)steps[(npw - 1) / 2]);
    size_t ku = 0, kt = 0, kr = 0, capg = 0;
    for (size_t i = 1; i < npw; i++) {
        int64_t t0 = pw[i - 1].t_ns, dt = pw[i].t_ns - t0;
        if (dt > gap) {
            if (g->ngaps % 16 == 0) {
                void *x = realloc(g->gaps, (g->ngaps + 16) * sizeof *g->gaps);
                if (!x) {
                    rc = -ENOMEM;
                    goto fail;
                }
                g->gaps = x;
            }
            g->gaps[g->ngaps++] = (struct wt_report_gap){t0, pw[i].t_ns};
            continue;
        }
        double s = (double)dt / 1e9, e = (pw[i - 1].v + pw[i].v) / 2 * s;
        double u = at(ut, nut, &ku, t0), temp = at(tc, ntc, &kt, t0);
        double reasons = at(tr, ntr, &kr, t0);
        if (!isnan(u) && u <= WT_REPORT_IDLE_UTIL && pw[i - 1].v > WT_REPORT_IDLE_MIN_W) {
            g->idle_j += e;
            g->idle_s += s;
        }
        bool capped =
            !isnan(g->power_limit_w) && pw[i - 1].v >= WT_REPORT_CAP_SHARE * g->power_limit_w;
        if (!isnan(reasons))
            capped |= ((unsigned long long)reasons & CAP_BIT) != 0;
        if (capped)
            g->capped_s += s, capg++;
        bool thr = ntr ? !isnan(reasons) && ((unsigned long long)reasons & THROTTLE_BITS)
                       : !isnan(temp) && !isnan(g->slowdown_c) && temp >= g->slowdown_c;
        if (thr) {
            g->throttle_s += s;
            g->throttle_j += e;
        }
    }
done:
    rc = 0;
fail:
    free(steps);
    free(pw);
    free(ut);
    free(tc);
    free(tr);
    return rc;
}

static int gather_gpus(struct wt_store *st, struct wt_report *r, struct wt_err *err)
{
    struct wt_series_info *si = NULL;
    struct wt_energy_row *rows = NULL;
    struct gpu_key *ek = NULL; /* the chosen GPU energy rows, sorted by cmp_key */
    struct gpu_ix ix = {.st = st};
    size_t n = 0, nrows = 0, nek = 0;
    int rc = wt_store_series(st, wt_metrics[WT_M_GPU_POWER_W].name, false, &si, &n, err);
    if (rc)
        return rc;
    if (n == 0) {
        add_missing(r, "no GPU power series in the store: no GPU charts");
        free(si);
        return 0;
    }
    if ((rc = wt_store_energy(st, r->from_ns, r->to_ns, 0, &rows, &nrows, err)) != 0)
        goto out;
    r->gpus = calloc(n, sizeof *r->gpus);
    if (!r->gpus || (nrows && !(ek = malloc(nrows * sizeof *ek)))) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t k = 0; k < nrows; k++) {
        if (!rows[k].chosen || !wt_metric_is_gpu_energy(rows[k].s.metric))
            continue;
        struct gpu_key *e = &ek[nek++];
        e->node = rows[k].s.node;
        e->ord = k;
        e->gpu[0] = e->uuid[0] = '\0';
        (void)wt_labels_get(rows[k].s.labels, "gpu", e->gpu, sizeof e->gpu);
        (void)wt_labels_get(rows[k].s.labels, "uuid", e->uuid, sizeof e->uuid);
    }
    qsort(ek, nek, sizeof *ek, cmp_key);
    bool own = false;
    for (size_t i = 0; i < n; i++) {
        struct wt_report_gpu *g = &r->gpus[r->ngpus++];
        snprintf(g->node, sizeof g->node, "%s", si[i].node);
        (void)wt_labels_get(si[i].labels, "gpu", g->gpu, sizeof g->gpu);
        (void)wt_labels_get(si[i].labels, "uuid", g->uuid, sizeof g->uuid);
        (void)wt_labels_get(si[i].labels, "model", g->model, sizeof g->model);
        own |= si[i].node[0] == '\0' || strcmp(si[i].node, r->node) == 0;
        /* the GPU's chosen energy row (the last, should there be two) */
        const struct gpu_key *e = key_find(ek, nek, g, true);
        if (e) {
            g->energy_j = rows[e->ord].energy_j;
            g->uncertainty_j = rows[e->ord].uncertainty_j;
            g->coverage = rows[e->ord].coverage;
            g->method = rows[e->ord].method;
        }
        if ((rc = gather_gpu(&ix, r->from_ns, r->to_ns, g)) != 0)
            goto out;
        gather_activity(&ix, r->from_ns, r->to_ns, g);
    }
    if (!own && !r->source[0])
        add_missing(r,
                    "the store holds no series of this node (%s): it is another node's store; "
                    "the report shows the nodes it holds (%s%s)",
                    r->node[0] ? r->node : "unnamed", r->gpus[0].node,
                    r->ngpus > 1 && strcmp(r->gpus[0].node, r->gpus[r->ngpus - 1].node) ? ", ..."
                                                                                        : "");
    size_t with = 0;
    for (size_t i = 0; i < r->ngpus; i++)
        with += r->gpus[i].power.raw > 0;
    if (with == 0)
        add_missing(r, "no GPU power readings in the window: the store's readings are elsewhere "
                       "in time");
out:
    ix_free(&ix);
    free(ek);
    free(si);
    free(rows);
    return rc;
}

static int gather_inlets(struct wt_store *st, struct wt_report *r, struct wt_ashrae_envelope env)
{
    struct wt_series_info *si = NULL;
    size_t n = 0;
    struct wt_err err;
    int rc = wt_store_series(st, wt_metrics[WT_M_FAC_TEMP_C].name, false, &si, &n, &err);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        char kind[32] = "", point[96] = "";
        (void)wt_labels_get(si[i].labels, "kind", kind, sizeof kind);
        (void)wt_labels_get(si[i].labels, "point", point, sizeof point);
        if (!wt_ashrae_is_inlet(si[i].labels)) /* kind inlet, or an Inlet/Intake point */
            continue;
        struct wt_point *p = NULL;
        size_t np = 0;
        if ((rc = wt_store_points(st, &si[i], r->from_ns, r->to_ns, 0, &p, &np)) != 0)
            break;
        if (np == 0) {
            free(p);
            continue;
        }
        void *x = realloc(r->inlets, (r->ninlets + 1) * sizeof *r->inlets);
        if (!x) {
            free(p);
            rc = -ENOMEM;
            break;
        }
        r->inlets = x;
        struct wt_report_inlet *in = &r->inlets[r->ninlets++];
        memset(in, 0, sizeof *in);
        char target[64] = "";
        (void)wt_labels_get(si[i].labels, "target", target, sizeof target);
        snprintf(in->name, sizeof in->name, "%s%s%s%s%s", si[i].node, si[i].node[0] ? " " : "",
                 target, target[0] ? " " : "", point[0] ? point : si[i].labels);
        in->min_c = INFINITY;
        in->max_c = -INFINITY;
        for (size_t k = 0; k < np; k++) {
            in->min_c = fmin(in->min_c, p[k].v);
            in->max_c = fmax(in->max_c, p[k].v);
            if (k + 1 >= np)
                continue;
            const int64_t t2[2] = {p[k].t_ns, p[k + 1].t_ns};
            const double v2[2] = {p[k].v, p[k + 1].v};
            in->outside_s += wt_ashrae_outside_s(t2, v2, 2, env.rec_lo_c, env.rec_hi_c, INT64_MAX);
            in->outside_allow_s +=
                wt_ashrae_outside_s(t2, v2, 2, env.allow_lo_c, env.allow_hi_c, INT64_MAX);
        }
        rc = make_line(p, np, r->from_ns, r->to_ns, &in->t);
        free(p);
        if (rc)
            break;
    }
    free(si);
    return rc;
}

/* Jobs that overlap the window, each as the jobs API shows it (audit/jobs.h). */
static int gather_jobs(const char *db_path, struct wt_report *r, struct wt_err *err)
{
    struct wt_jobs *j = NULL;
    unsigned status;
    char *body = NULL;
    cJSON *list = NULL;
    int rc = wt_jobs_open(db_path, NULL, &j, err);
    if (rc)
        return rc;
    if ((rc = wt_jobs_list_json(j, 1000, r->to_ns, &status, &body)))
        goto out;
    list = cJSON_Parse(body);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(list, "jobs"), *it;
    cJSON_ArrayForEach(it, arr)
    {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, "start_s");
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(it, "end_s");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        if (!cJSON_IsNumber(s) || !cJSON_IsNumber(id))
            continue;
        int64_t a = (int64_t)llround(s->valuedouble * 1e9);
        int64_t b = cJSON_IsNumber(e) ? (int64_t)llround(e->valuedouble * 1e9) : r->to_ns;
        if (b <= r->from_ns || a >= r->to_ns)
            continue;
        char ref[32], *jb = NULL;
        snprintf(ref, sizeof ref, "%.0f", id->valuedouble);
        if ((rc = wt_jobs_act_json(j, ref, WT_JOBS_SHOW, NULL, 0, r->to_ns, &status, &jb)))
            goto out;
        cJSON *one = status == 200 ? cJSON_Parse(jb) : NULL;
        free(jb);
        if (!one)
            continue;
        void *x = realloc(r->jobs, (r->njobs + 1) * sizeof *r->jobs);
        if (!x) {
            cJSON_Delete(one);
            rc = -ENOMEM;
            goto out;
        }
        r->jobs = x;
        struct wt_report_job *w = &r->jobs[r->njobs++];
        memset(w, 0, sizeof *w);
        w->json = one;
        w->start_ns = a;
        w->end_ns = b;
        const cJSON *kpi = cJSON_GetObjectItemCaseSensitive(one, "kpi");
        const cJSON *ej = cJSON_GetObjectItemCaseSensitive(kpi, "energy_joules");
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(kpi, "tokens_per_kwh");
        w->energy_j = cJSON_IsNumber(ej) ? ej->valuedouble : 0;
        w->out_per_kwh = cJSON_IsNumber(tk) ? tk->valuedouble : NAN;
    }
    if (r->njobs == 0)
        add_missing(r, "no jobs in the window: no job or epoch shading, no per-epoch energy");
out:
    cJSON_Delete(list);
    free(body);
    wt_jobs_close(j);
    return rc;
}

/* The intensity steps with the IT energy of each, and each job's best start (schedule.h). */
static int gather_carbon(struct wt_store *st, const struct wt_config *cfg, struct wt_report *r,
                         struct wt_err *err)
{
    struct wt_carbon_conf cf;
    int rc = wt_carbon_conf_from(cfg, &cf, err);
    if (rc)
        return rc;
    const char *zone = wt_carbon_zone_of(&cf, NULL);
    snprintf(r->carbon_zone, sizeof r->carbon_zone, "%s", zone ? zone : "");
    if (!r->carbon_zone[0]) {
        add_missing(r, "no carbon zone (carbon.zone): no carbon chart, no schedule saving");
        return 0;
    }
    struct wt_carbon_step *s = NULL;
    size_t n = 0;
    if ((rc = wt_carbon_steps(wt_store_db(st), &cf, WT_CS_INTENSITY, r->carbon_zone, r->from_ns,
                              r->to_ns, &s, &n)) != 0)
        return rc;
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any |= s[i].src == WT_CSRC_ACTUAL || s[i].src == WT_CSRC_FORECAST;
    if (!any || n > MAX_STEPS) {
        add_missing(r, "%s",
                    any ? "more than 2000 carbon intensity steps in the window"
                        : "no carbon intensity series for the zone in the window");
        free(s);
        return 0;
    }
    r->steps = calloc(n, sizeof *r->steps);
    if (!r->steps) {
        free(s);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        struct wt_report_step *x = &r->steps[r->nsteps++];
        x->from_ns = s[i].from_ns;
        x->to_ns = s[i].to_ns;
        x->g_per_kwh = s[i].value;
        x->src = wt_carbon_src_name(s[i].src);
        if ((rc = wt_carbon_site_energy(st, x->from_ns, x->to_ns, &x->it_j)) != 0)
            break;
    }
    free(s);
    double pue;
    bool pue_m;
    wt_carbon_pue(st, &cf, r->from_ns, r->to_ns, &pue, &pue_m);
    for (size_t k = 0; rc == 0 && k < r->njobs; k++) {
        struct wt_report_job *jb = &r->jobs[k];
        int64_t dur = jb->end_ns - jb->start_ns;
        if (dur <= 0 || jb->energy_j <= 0 || jb->start_ns + dur >= r->to_ns)
            continue;
        struct wt_carbon_step *fs = NULL;
        size_t nf = 0;
        if (wt_carbon_steps_ex(wt_store_db(st), &cf, WT_CS_INTENSITY, r->carbon_zone, true,
                               jb->start_ns, r->to_ns, &fs, &nf) != 0)
            continue;
        struct wt_sched_req q = {.now_ns = jb->start_ns,
                                 .deadline_ns = r->to_ns,
                                 .duration_ns = dur,
                                 .power_w = jb->energy_j / ((double)dur / 1e9),
                                 .pue = pue};
        struct wt_sched_result res;
        struct wt_err e2;
        if (wt_schedule_best(fs, nf, &q, &res, &e2) == 0) {
            jb->sched_known = true;
            jb->best_start_ns = res.best.start_ns;
            jb->g_now = res.now.cost;
            jb->g_best = res.best.cost;
        }
        free(fs);
    }
    return rc;
}

static void findings(struct wt_report *r)
{
    struct wt_report_finding *f;
    for (size_t i = 0; i < r->ngpus; i++) {
        const struct wt_report_gpu *g = &r->gpus[i];
        if (g->idle_j > 0 && (f = add_finding(r, "idle_burn", g->idle_j))) {
            snprintf(f->title, sizeof f->title, "GPU %s%s%s burned %.3f kWh idle", g->gpu,
                     g->node[0] ? " on " : "", g->node, g->idle_j / 3.6e6);
            snprintf(f->evidence, sizeof f->evidence,
                     "%.1f min at utilization <= %.0f%% drawing %.0f W on average "
                     "(power readings integrated; sensor +-5 W)",
                     g->idle_s / 60, 100 * WT_REPORT_IDLE_UTIL, g->idle_j / g->idle_s);
        }
        if (g->throttle_s > 0 && (f = add_finding(r, "throttle", g->throttle_j))) {
            snprintf(f->title, sizeof f->title, "GPU %s%s%s throttled for %.1f min", g->gpu,
                     g->node[0] ? " on " : "", g->node, g->throttle_s / 60);
            snprintf(f->evidence, sizeof f->evidence, "%.4f kWh drawn while slowed (from %s%s)",
                     g->throttle_j / 3.6e6, g->throttle_from,
                     strcmp(g->throttle_from, "temperature")
                         ? " bits: hw, thermal or power-brake slowdown"
                         : " at or above the slowdown threshold");
            if (!isnan(g->slowdown_c)) {
                size_t l = strlen(f->evidence);
                snprintf(f->evidence + l, sizeof f->evidence - l, "; slowdown threshold %.0f C",
                         g->slowdown_c);
            }
        }
        if (!isnan(g->util_mean) && !isnan(g->sm_active) &&
            g->util_mean >= WT_REPORT_UNDERFILL_UTIL &&
            g->sm_active <= WT_REPORT_UNDERFILL_SHARE * g->util_mean &&
            (f = add_finding(r, "underfilled", 0))) {
            snprintf(f->title, sizeof f->title,
                     "GPU %s%s%s is busy %.0f%% of the time but its SMs only %.0f%% active", g->gpu,
                     g->node[0] ? " on " : "", g->node, 100 * g->util_mean, 100 * g->sm_active);
            size_t l = (size_t)snprintf(
                f->evidence, sizeof f->evidence,
                "NVML's utilization counts time with any kernel running; GPM's SM activity counts "
                "the SMs doing it (means of the readings)");
            if (!isnan(g->dram_bw) && l < sizeof f->evidence)
                l += (size_t)snprintf(f->evidence + l, sizeof f->evidence - l,
                                      "; DRAM bandwidth %.0f%% of its maximum", 100 * g->dram_bw);
            if (!isnan(g->tensor_active) && l < sizeof f->evidence)
                l += (size_t)snprintf(f->evidence + l, sizeof f->evidence - l,
                                      "; tensor pipes %.0f%% active", 100 * g->tensor_active);
            if (l < sizeof f->evidence)
                snprintf(f->evidence + l, sizeof f->evidence - l, "; %.4f kWh in the window",
                         g->energy_j / 3.6e6);
        }
        for (size_t k = 0; k < g->ngaps && k < 4; k++) {
            if ((f = add_finding(r, "gap", 0))) {
                snprintf(f->title, sizeof f->title, "no readings of GPU %s%s%s for %.0f s", g->gpu,
                         g->node[0] ? " on " : "", g->node,
                         (double)(g->gaps[k].to_ns - g->gaps[k].from_ns) / 1e9);
                snprintf(f->evidence, sizeof f->evidence,
                         "power readings stop and resume; the charts leave the gap empty and "
                         "the energy figures count it as not covered (coverage %.1f%%)",
                         100 * g->coverage);
            }
        }
    }
    for (size_t i = 0; r->have_kpi && i < r->kpi.nnodes; i++) {
        const struct wt_recon_node *x = &r->kpi.nodes[i];
        if (x->unaccounted_j > 0 && (f = add_finding(r, "unaccounted", x->unaccounted_j))) {
            snprintf(f->title, sizeof f->title, "node %s: %.0f W unaccounted (%.1f%% of the wall)",
                     x->node, x->unaccounted_w, 100 * x->share);
            snprintf(f->evidence, sizeof f->evidence,
                     "wall (%s) %.3f kWh, chips %.3f kWh (GPU %.3f, CPU %.3f, DRAM %.3f)%s",
                     x->wall_from ? x->wall_from : "none", x->wall_j / 3.6e6, x->chips_j / 3.6e6,
                     x->gpu_j / 3.6e6, x->cpu_j / 3.6e6, x->dram_j / 3.6e6,
                     x->chips_exceed_wall ? "; SUSPECT: chips exceed wall"
                     : x->share_drift     ? "; SUSPECT: share drifts"
                                          : "");
        }
    }
    /* Against the nodes' calibration models (wattage calibrate; wt_calib_apply in build). */
    for (size_t i = 0; r->have_kpi && i < r->kpi.nnodes; i++) {
        const struct wt_recon_node *x = &r->kpi.nodes[i];
        char day[40];
        if (!x->has_model)
            continue;
        wt_time_format(x->model_t_ns, 0, day, sizeof day);
        if (x->model_drift &&
            (f = add_finding(r, "model_drift",
                             fabs(x->model_departure_w) * (double)(r->to_ns - r->from_ns) / 1e9))) {
            snprintf(f->title, sizeof f->title,
                     "node %s: the wall departs from its calibration model by %+.0f W", x->node,
                     x->model_departure_w);
            snprintf(f->evidence, sizeof f->evidence,
                     "wall %.1f W, the model of %s predicts %.1f W from the chips (bound %.1f W): "
                     "a meter or a sensor drifts, or the node changed (calibrate it again)",
                     x->model_predicted_w + x->model_departure_w, day, x->model_predicted_w,
                     x->model_bound_w);
            continue;
        }
        size_t nl = strlen(x->node);
        for (size_t k = 0; k < r->nfindings; k++) {
            struct wt_report_finding *u = &r->findings[k];
            size_t l = strlen(u->evidence);
            if (strcmp(u->kind, "unaccounted") == 0 && strncmp(u->title, "node ", 5) == 0 &&
                strncmp(u->title + 5, x->node, nl) == 0 && u->title[5 + nl] == ':')
                snprintf(u->evidence + l, sizeof u->evidence - l,
                         "; the calibration model of %s expects %.0f W beside the chips: the "
                         "wall is %+.0f W from it, within its bound of %.0f W",
                         day, x->model_unaccounted_w, x->model_departure_w, x->model_bound_w);
        }
    }
    /* The jobs with the least output per kWh: the lower half of those that count tokens. */
    double best = 0;
    for (size_t k = 0; k < r->njobs; k++)
        if (!isnan(r->jobs[k].out_per_kwh))
            best = fmax(best, r->jobs[k].out_per_kwh);
    for (size_t k = 0; k < r->njobs; k++) {
        const struct wt_report_job *jb = &r->jobs[k];
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(jb->json, "name");
        const char *name = cJSON_IsString(nm) ? nm->valuestring : "?";
        if (!isnan(jb->out_per_kwh) && jb->out_per_kwh < best / 2 &&
            (f = add_finding(r, "low_output", jb->energy_j))) {
            snprintf(f->title, sizeof f->title, "job %s: %.3g tokens/kWh, %.0f%% of the best job",
                     name, jb->out_per_kwh, 100 * jb->out_per_kwh / best);
            snprintf(f->evidence, sizeof f->evidence,
                     "%.3f kWh of GPU energy; the best job in the window made %.3g tokens/kWh",
                     jb->energy_j / 3.6e6, best);
        }
        if (jb->sched_known && jb->g_now - jb->g_best > 0 &&
            (f = add_finding(r, "carbon_shift", jb->energy_j))) {
            char t[40];
            wt_time_format(jb->best_start_ns, 0, t, sizeof t);
            snprintf(f->title, sizeof f->title, "job %s: starting at %s would have saved %.0f g",
                     name, t, jb->g_now - jb->g_best);
            snprintf(f->evidence, sizeof f->evidence,
                     "%.0f gCO2e as run vs %.0f gCO2e at the best start before the window's end "
                     "(forecast-first intensity of zone %s, same power profile)",
                     jb->g_now, jb->g_best, r->carbon_zone);
        }
    }
    wt_report_rank(r);
}

/*
 * Dark power (audit/dark.h): one finding per GPU with idle energy in the window, measured by the
 * daemon with the process list (no process, utilization 0), with its worst day and idle level.
 */
static int dark_findings(struct wt_store *st, struct wt_report *r)
{
    struct wt_dark_day *d = NULL;
    size_t n = 0;
    int rc = wt_dark_days(st, r->from_ns, r->to_ns, &d, &n);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(d[k].node, d[i].node) == 0 && strcmp(d[k].uuid, d[i].uuid) == 0;
        if (seen)
            continue;
        double j = 0, s = 0, worst = 0;
        int64_t worst_day = d[i].day_ns;
        size_t days = 0;
        for (size_t k = i; k < n; k++) {
            if (strcmp(d[k].node, d[i].node) != 0 || strcmp(d[k].uuid, d[i].uuid) != 0)
                continue;
            j += d[k].energy_j;
            s += d[k].idle_s;
            days++;
            if (d[k].energy_j > worst) {
                worst = d[k].energy_j;
                worst_day = d[k].day_ns;
            }
        }
        struct wt_report_finding *f;
        if (j <= 0 || !(f = add_finding(r, "dark_power", j)))
            continue;
        char day[40];
        wt_time_format(worst_day, 0, day, sizeof day);
        day[10] = '\0'; /* the date of the RFC 3339 stamp */
        snprintf(f->title, sizeof f->title, "GPU %s%s%s spent %.3f kWh idle with nothing on it",
                 d[i].gpu, d[i].node[0] ? " on " : "", d[i].node, j / 3.6e6);
        snprintf(f->evidence, sizeof f->evidence,
                 "%.1f h with no process and utilization 0 over %zu day%s (most on %s: %.3f kWh); "
                 "idle power level %.1f W (sensor +-5 W)",
                 s / 3600, days, days == 1 ? "" : "s", day, worst / 3.6e6, s > 0 ? j / s : 0);
    }
    free(d);
    return 0;
}

/* The report of a store (db_path: its jobs) or, with source, of readings copied from it. */
static int build(struct wt_store *st, const char *db_path, const char *source,
                 const struct wt_config *cfg, int64_t from_ns, int64_t to_ns, struct wt_report *r,
                 struct wt_err *err)
{
    struct wt_topology *t = NULL;
    double fuel_kwh[WT_FUEL_COUNT];
    int rc;
    memset(r, 0, sizeof *r);
    r->from_ns = from_ns;
    r->to_ns = to_ns;
    snprintf(r->source, sizeof r->source, "%s", source ? source : "");
    if (to_ns <= from_ns)
        return wt_err_set(err, "the window is empty: --to must be after --from"), -EINVAL;
    if ((rc = wt_topology_load(cfg, &t, err)) != 0)
        return rc;
    snprintf(r->node, sizeof r->node, "%s", t->node);
    r->ashrae_class = (int)t->ashrae_class;
    if ((rc = gather_gpus(st, r, err)) ||
        (rc = gather_inlets(st, r, wt_ashrae_envelope(t->ashrae_class))) ||
        (!source && (rc = gather_jobs(db_path, r, err))))
        goto fail;
    if (source)
        add_missing(r,
                    "jobs: not read from %s (the report reads jobs from a node's store; `wattage "
                    "job show NAME --source` has a job's fleet figures): no job shading, no "
                    "per-epoch energy",
                    source);
    bool hw_wall = false;
    if (t->nmeters == 0 && wt_meters_has_hwmon_wall(st, &hw_wall) != 0)
        hw_wall = false;
    if (t->nmeters == 0 && !hw_wall) {
        add_missing(r, "no facility meters in the topology: no PUE, part-load or reconciliation");
    } else if (wt_kpi_fuel_factors(cfg, fuel_kwh, err) == 0 &&
               wt_kpi_compute_with(st, t, fuel_kwh, from_ns, to_ns, NULL, &r->kpi, err) == 0) {
        r->have_kpi = true;
        size_t nmod = 0;
        struct wt_err merr = {{0}};
        if (wt_calib_apply(cfg, r->kpi.nodes, r->kpi.nnodes, (double)(to_ns - from_ns) / 1e9, &nmod,
                           &merr) != 0)
            add_missing(r, "calibration models: %s", merr.msg);
        if (wt_carbon_kpi_row(st, cfg, &r->kpi) == -EIO) {
            rc = -EIO;
            goto fail;
        }
        if (!r->kpi.facility.measured)
            add_missing(r, "no facility energy in the window (facility_total meters cover %.0f%%)",
                        100 * r->kpi.facility.coverage);
    } else {
        add_missing(r, "facility KPIs: %s", err->msg);
    }
    if (r->ninlets == 0)
        add_missing(r, "no inlet temperature sensors: no ASHRAE envelope chart");
    if ((rc = wt_clockcheck_window(st, from_ns, to_ns, (double)cfg->daemon.clock_max_error_ns / 1e9,
                                   &r->clock)) ||
        (rc = wt_clockcheck_peers(st, from_ns, to_ns, (double)cfg->daemon.clock_max_error_ns / 1e9,
                                  &r->clock)))
        goto fail;
    if ((rc = gather_carbon(st, cfg, r, err)) != 0)
        goto fail;
    if ((rc = dark_findings(st, r)) != 0) {
        wt_err_set(err, "dark power: cannot read the idle series (%s)", strerror(-rc));
        goto fail;
    }
    findings(r);
    free(t);
    return 0;
fail:
    free(t);
    wt_report_free(r);
    return rc;
}

int wt_report_build(struct wt_store *st, const char *db_path, const struct wt_config *cfg,
                    int64_t from_ns, int64_t to_ns, struct wt_report *r, struct wt_err *err)
{
    return build(st, db_path, NULL, cfg, from_ns, to_ns, r, err);
}

int wt_report_build_source(struct wt_store *st, const char *source, const struct wt_config *cfg,
                           int64_t from_ns, int64_t to_ns, struct wt_report *r, struct wt_err *err)
{
    return build(st, NULL, source, cfg, from_ns, to_ns, r, err);
}

static void line_free(struct wt_report_line *l)
{
    free(l->pts);
    free(l->mean);
}

void wt_report_free(struct wt_report *r)
{
    for (size_t i = 0; i < r->ngpus; i++) {
        line_free(&r->gpus[i].power);
        line_free(&r->gpus[i].util);
        line_free(&r->gpus[i].temp);
        free(r->gpus[i].gaps);
    }
    free(r->gpus);
    for (size_t i = 0; i < r->ninlets; i++)
        line_free(&r->inlets[i].t);
    free(r->inlets);
    for (size_t i = 0; i < r->njobs; i++)
        cJSON_Delete(r->jobs[i].json);
    free(r->jobs);
    if (r->have_kpi)
        wt_kpi_report_free(&r->kpi);
    free(r->steps);
    cJSON_Delete(r->serving);
    memset(r, 0, sizeof *r);
}

/* ---- two windows ---- */

static double sum_gpu(const struct wt_report *r, size_t off)
{
    double x = 0;
    for (size_t i = 0; i < r->ngpus; i++)
        x += *(const double *)((const char *)&r->gpus[i] + off);
    return x;
}

static double kpi_value(const struct wt_report *r, const char *key)
{
    const struct wt_kpi_row *row = r->have_kpi ? wt_kpi_row(&r->kpi, key) : NULL;
    return row && row->available ? row->value : NAN;
}

double wt_report_figure(const struct wt_report *r, size_t i, const char **key, const char **label,
                        const char **unit)
{
    static const struct {
        const char *key, *label, *unit;
    } f[WT_REPORT_FIGURES] = {
        {"gpu_power", "GPU mean power", "W"},
        {"it_power", "IT mean power", "W"},
        {"idle_share", "idle burn share of GPU energy", "ratio"},
        {"throttle_per_hour", "throttle minutes per hour", "min/h"},
        {"pue", "PUE", "ratio"},
        {"accelerator_share", "accelerator share of IT energy", "ratio"},
        {"unaccounted_share", "unaccounted share of the wall", "ratio"},
        {"cue", "CUE", "kgCO2e/kWh"},
        {"tokens_per_kwh", "tokens per GPU kWh", "tokens/kWh"},
    };
    if (i >= WT_REPORT_FIGURES)
        return NAN;
    if (key)
        *key = f[i].key;
    if (label)
        *label = f[i].label;
    if (unit)
        *unit = f[i].unit;
    double sec = (double)(r->to_ns - r->from_ns) / 1e9,
           e = sum_gpu(r, offsetof(struct wt_report_gpu, energy_j));
    double wall = 0, un = 0, tok = 0, kwh = 0;
    switch (i) {
    case 0:
        return r->ngpus && e > 0 ? e / sec : NAN;
    case 1:
        return r->have_kpi && strcmp(r->kpi.it.from, "none") != 0 ? r->kpi.it.j / sec : NAN;
    case 2:
        return e > 0 ? sum_gpu(r, offsetof(struct wt_report_gpu, idle_j)) / e : NAN;
    case 3:
        return e > 0 ? sum_gpu(r, offsetof(struct wt_report_gpu, throttle_s)) / 60 / (sec / 3600)
                     : NAN;
    case 4:
        return kpi_value(r, "pue");
    case 5:
        return kpi_value(r, "accelerator_share");
    case 6:
        for (size_t k = 0; r->have_kpi && k < r->kpi.nnodes; k++) {
            wall += r->kpi.nodes[k].wall_j;
            un += r->kpi.nodes[k].unaccounted_j;
        }
        return wall > 0 ? un / wall : NAN;
    case 7:
        return kpi_value(r, "cue");
    default:
        for (size_t k = 0; k < r->njobs; k++) {
            if (isnan(r->jobs[k].out_per_kwh))
                continue;
            tok += r->jobs[k].out_per_kwh * r->jobs[k].energy_j / 3.6e6;
            kwh += r->jobs[k].energy_j / 3.6e6;
        }
        return kwh > 0 ? tok / kwh : NAN;
    }
}

/* Standard error of the mean of the values that are numbers; false with fewer than 2. */
static bool std_err(const double *p, size_t n, double *se)
{
    double m = 0, v = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(p[i]))
            m += p[i], k++;
    if (k < 2)
        return false;
    m /= (double)k;
    for (size_t i = 0; i < n; i++)
        if (!isnan(p[i]))
            v += (p[i] - m) * (p[i] - m);
    *se = sqrt(v / (double)(k - 1)) / sqrt((double)k);
    return true;
}

void wt_report_cmp_judge(struct wt_report_cmp_row *row, double a, double b, const double *pa,
                         size_t na, const double *pb, size_t nb)
{
    double sa, sb;
    row->have_a = !isnan(a);
    row->have_b = !isnan(b);
    row->a = a;
    row->b = b;
    row->diff = b - a;
    row->have_noise = row->have_a && row->have_b && std_err(pa, na, &sa) && std_err(pb, nb, &sb);
    row->noise = row->have_noise ? 2 * sqrt(sa * sa + sb * sb) : NAN;
    row->exceeds = row->have_noise && fabs(row->diff) > row->noise;
}

/* The figures of WT_REPORT_PIECES equal pieces of [a, b]: out[figure][piece]. */
static int pieces(struct wt_store *st, const char *db, const struct wt_config *cfg, int64_t a,
                  int64_t b, double out[WT_REPORT_FIGURES][WT_REPORT_PIECES], struct wt_err *err)
{
    for (size_t k = 0; k < WT_REPORT_PIECES; k++) {
        struct wt_report *r = malloc(sizeof *r);
        int64_t x = a + (b - a) * (int64_t)k / WT_REPORT_PIECES;
        int64_t y = a + (b - a) * (int64_t)(k + 1) / WT_REPORT_PIECES;
        int rc = r ? wt_report_build(st, db, cfg, x, y, r, err) : -ENOMEM;
        if (rc) {
            free(r);
            return rc;
        }
        for (size_t i = 0; i < WT_REPORT_FIGURES; i++)
            out[i][k] = wt_report_figure(r, i, NULL, NULL, NULL);
        wt_report_free(r);
        free(r);
    }
    return 0;
}

int wt_report_compare(struct wt_store *st, const char *db_path, const struct wt_config *cfg,
                      int64_t a_from, int64_t a_to, int64_t b_from, int64_t b_to,
                      struct wt_report_cmp *c, struct wt_err *err)
{
    double pa[WT_REPORT_FIGURES][WT_REPORT_PIECES], pb[WT_REPORT_FIGURES][WT_REPORT_PIECES];
    int rc;
    memset(c, 0, sizeof *c);
    if ((rc = wt_report_build(st, db_path, cfg, a_from, a_to, &c->a, err)) != 0)
        return rc;
    if ((rc = wt_report_build(st, db_path, cfg, b_from, b_to, &c->b, err)) != 0 ||
        (rc = pieces(st, db_path, cfg, a_from, a_to, pa, err)) != 0 ||
        (rc = pieces(st, db_path, cfg, b_from, b_to, pb, err)) != 0) {
        wt_report_cmp_free(c);
        return rc;
    }
    for (size_t i = 0; i < WT_REPORT_FIGURES; i++) {
        struct wt_report_cmp_row *row = &c->rows[i];
        double a = wt_report_figure(&c->a, i, &row->key, &row->label, &row->unit);
        wt_report_cmp_judge(row, a, wt_report_figure(&c->b, i, NULL, NULL, NULL), pa[i],
                            WT_REPORT_PIECES, pb[i], WT_REPORT_PIECES);
    }
    return 0;
}

void wt_report_cmp_free(struct wt_report_cmp *c)
{
    wt_report_free(&c->a);
    wt_report_free(&c->b);
}
