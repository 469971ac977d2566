/* SPDX-License-Identifier: MIT */
/*
 * The weekly review (review.h): the KPI set per window, daily noise bands, the week's change
 * points from the info series, and the findings that tie a shift beyond the noise to a change.
 * Everything is read from the store at the time of the review; nothing is kept here. The
 * daemon's side (its config, the weekly files, the thread) is in review_daemon.c.
 */
#include "audit/review.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/carbon.h"
#include "audit/inference_kpi.h"
#include "audit/jobs.h"
#include "audit/kpi.h"
#include "audit/topology.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/durable.h"
#include "core/gpuname.h"
#include "core/hub.h"
#include "core/log.h"
#include "core/yget.h"
#include "store/query.h"
#include "store/store.h"

#define DAY_NS (86400LL * WT_NS_PER_S)
#define WEEK_NS (7 * DAY_NS)
/* an old label's last reading this close to the new one's first: replaced, not running beside */
#define REPLACED_SLACK_NS (600LL * WT_NS_PER_S)

enum { K_JTOK, K_JSAMPLE, K_JTARGET, K_UTIL, K_PUE, K_PUE_PL, K_WUE, K_CUE };

static const struct {
    const char *key, *label, *unit;
    bool lower_better, per_node;
} kdef[WT_REVIEW_KPIS] = {
    {"joules_per_generated_token", "J/token", "J/token", true, true},
    {"job_joules_per_sample", "J/sample (jobs)", "J/sample", true, true},
    {"job_energy_to_target_joules", "J to target (jobs)", "J", true, true},
    {"gpu_utilization", "GPU utilisation", "ratio", false, true},
    {"pue", "PUE", "ratio", true, false},
    {"pue_part_load", "part-load PUE", "ratio", true, false},
    {"wue", "WUE", "L/kWh", true, false},
    {"cue", "CUE", "kgCO2e/kWh", true, false},
};

const char *wt_review_verdict_name(enum wt_review_verdict v)
{
    switch (v) {
    case WT_RV_NO_BASE:
        return "no baseline";
    case WT_RV_WITHIN:
        return "within noise";
    case WT_RV_BETTER:
        return "better";
    case WT_RV_WORSE:
        return "worse";
    default:
        return "not available";
    }
}

void wt_review_band(const double *v, size_t n, struct wt_review_band *b)
{
    double s = 0, ss = 0;
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(v[i]))
            continue;
        s += v[i];
        k++;
    }
    b->days = k;
    b->mean = k ? s / k : NAN;
    for (size_t i = 0; i < n; i++)
        if (!isnan(v[i]))
            ss += (v[i] - b->mean) * (v[i] - b->mean);
    b->sd = k > 1 ? sqrt(ss / (k - 1)) : NAN;
    b->half = NAN;
    if (k >= WT_REVIEW_MIN_DAYS) {
        double floor = WT_REVIEW_BAND_FLOOR * fabs(b->mean);
        double sig = WT_REVIEW_BAND_SIGMAS * b->sd;
        b->half = sig > floor ? sig : floor;
    }
}

enum wt_review_verdict wt_review_judge(double value, const struct wt_review_band *b,
                                       bool lower_better)
{
    if (isnan(value))
        return WT_RV_NA;
    if (b->days < WT_REVIEW_MIN_DAYS || isnan(b->half))
        return WT_RV_NO_BASE;
    if (fabs(value - b->mean) <= b->half)
        return WT_RV_WITHIN;
    bool higher = value > b->mean;
    return higher == lower_better ? WT_RV_WORSE : WT_RV_BETTER;
}

/* ---- ISO weeks ---- */

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
static int64_t days_of(int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The Monday (days since epoch) of ISO week 1 of year y: the week that holds 4 January. */
static int64_t week1_monday(int y)
{
    int64_t jan4 = days_of(y, 1, 4);
    int64_t wd = ((jan4 + 3) % 7 + 7) % 7; /* 0 = Monday; 1970-01-01 was a Thursday */
    return jan4 - wd;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

void wt_review_week_of(int64_t t_ns, int *year, int *week, int64_t *start_ns)
{
    int64_t day = floor_div(t_ns, DAY_NS);
    int64_t wd = ((day + 3) % 7 + 7) % 7;
    int64_t monday = day - wd;
    /* the ISO year is the year of the week's Thursday */
    time_t th = (time_t)((monday + 3) * 86400);
    struct tm tm;
    gmtime_r(&th, &tm);
    int y = tm.tm_year + 1900;
    *year = y;
    *week = (int)((monday - week1_monday(y)) / 7 + 1);
    *start_ns = monday * DAY_NS;
}

int wt_review_week_parse(const char *s, int64_t *start_ns, struct wt_err *err)
{
    int y = 0, w = 0, used = 0;
    if ((sscanf(s, "%4d-W%2d%n", &y, &w, &used) != 2 &&
         sscanf(s, "%4dW%2d%n", &y, &w, &used) != 2) ||
        s[used] != '\0' || y < 1970 || y > 9999)
        return wt_err_set(err, "--week: expected an ISO week like 2026-W49, got \"%s\"", s);
    int64_t mon = week1_monday(y);
    int weeks = (int)((week1_monday(y + 1) - mon) / 7);
    if (w < 1 || w > weeks)
        return wt_err_set(err, "--week: %d has weeks 1 to %d, got \"%s\"", y, weeks, s);
    *start_ns = (mon + (int64_t)(w - 1) * 7) * DAY_NS;
    return 0;
}

/* ---- the KPIs of one window ---- */

struct nodeset {
    const char (*n)[64];
    size_t len; /* 0 with n NULL: every node */
};

static bool in_set(const struct nodeset *ns, const char *node)
{
    if (!ns || !ns->n)
        return true;
    for (size_t i = 0; i < ns->len; i++)
        if (strcmp(ns->n[i], node) == 0)
            return true;
    return false;
}

struct ctx {
    struct wt_store *st;
    const struct wt_config *cfg;
    const struct wt_topology *t;
    struct wt_jobs *jobs; /* NULL: the store has no jobs table we could open */
    cJSON *job_list;      /* the jobs, read once */
    char host[256];       /* jobs of this host are the store's own node "" */
    int band;             /* the part-load band of the week (-1: none) */
    struct wt_err *err;
};

static int first_in(struct wt_store *st, const struct wt_series_info *si, int64_t a, int64_t b,
                    int64_t *t);

/* Whether series id has a reading in [a, b] (per-minute rollups count, for pruned weeks). */
static int has_points(struct wt_store *st, const struct wt_series_info *si, int64_t a, int64_t b,
                      bool *yes)
{
    int64_t t = 0;
    int rc = first_in(st, si, a, b, &t);
    *yes = rc == 0 && t != 0;
    return rc;
}

/* J/token over [a, b] on the nodes of ns: the listed GPUs' energy over the generated tokens. */
static int jtok(struct ctx *c, int64_t a, int64_t b, const struct nodeset *ns, double *v, char *why,
                size_t wn)
{
    struct wt_series_info *si = NULL;
    size_t n = 0;
    struct wt_energy_row *er = NULL;
    size_t ne = 0;
    struct {
        char node[64], gpus[256];
    } *tg = NULL;
    size_t ntg = 0;
    double tokens = 0, joules = 0;
    int gpus_found = 0, rc;
    *v = NAN;
    if ((rc = wt_store_series(c->st, "wattage_inference_info", false, &si, &n, c->err)) != 0)
        return rc;
    tg = calloc(n ? n : 1, sizeof *tg);
    if (!tg) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        bool yes;
        if (!in_set(ns, si[i].node))
            continue;
        if ((rc = has_points(c->st, &si[i], a, b, &yes)) != 0)
            goto out;
        if (!yes)
            continue;
        snprintf(tg[ntg].node, sizeof tg[ntg].node, "%s", si[i].node);
        (void)wt_labels_get(si[i].labels, "gpus", tg[ntg].gpus, sizeof tg[ntg].gpus);
        ntg++;
    }
    free(si);
    si = NULL;
    if (ntg == 0) {
        snprintf(why, wn, "no inference target in the store over the window");
        goto out;
    }
    if ((rc = wt_store_series(c->st, "wattage_inference_tokens_total{kind=\"generated\"}", false,
                              &si, &n, c->err)) != 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        struct wt_point *p = NULL;
        size_t np = 0;
        if (!in_set(ns, si[i].node))
            continue;
        /* the last value of each minute: the increase survives the raw readings' pruning */
        if ((rc = wt_store_points(c->st, &si[i], a, b, 60 * WT_NS_PER_S, &p, &np)) != 0) {
            free(p);
            goto out;
        }
        double *x = malloc((np ? np : 1) * sizeof *x);
        if (!x) {
            free(p);
            rc = -ENOMEM;
            goto out;
        }
        for (size_t k = 0; k < np; k++)
            x[k] = p[k].v;
        double inc = wt_ikpi_increase(x, np);
        if (!isnan(inc))
            tokens += inc;
        free(x);
        free(p);
    }
    if ((rc = wt_store_energy(c->st, a, b, 0, &er, &ne, c->err)) != 0)
        goto out;
    for (size_t i = 0; i < ne; i++) {
        char gpu[32];
        if (!er[i].chosen || !wt_metric_is_gpu_energy(er[i].s.metric) ||
            wt_labels_get(er[i].s.labels, "gpu", gpu, sizeof gpu) != 0)
            continue;
        for (size_t k = 0; k < ntg; k++) {
            if (strcmp(tg[k].node, er[i].s.node) == 0 && wt_list_has(tg[k].gpus, gpu)) {
                joules += er[i].energy_j;
                gpus_found++;
                break;
            }
        }
    }
    if (gpus_found == 0)
        snprintf(why, wn, "no energy series of the GPUs the inference targets list");
    else if (!(tokens > 0))
        snprintf(why, wn, "no generated tokens counted over the window");
    else
        *v = joules / tokens;
out:
    free(si);
    free(er);
    free(tg);
    return rc;
}

/*
 * Of the jobs that ended in [a, b) on the nodes of ns: target false, their GPU energy over their
 * samples (J/sample); target true, the mean of their energy to their target (the jobs that
 * reached it).
 */
static void jobs_kpi(struct ctx *c, int64_t a, int64_t b, const struct nodeset *ns, bool target,
                     double *v, char *why, size_t wn)
{
    *v = NAN;
    if (!c->job_list) {
        snprintf(why, wn, "no jobs table in the store");
        return;
    }
    double joules = 0, samples = 0;
    int jobs = 0;
    const cJSON *jb;
    cJSON_ArrayForEach(jb, cJSON_GetObjectItemCaseSensitive(c->job_list, "jobs"))
    {
        const cJSON *end = cJSON_GetObjectItemCaseSensitive(jb, "end_s");
        const cJSON *node = cJSON_GetObjectItemCaseSensitive(jb, "node");
        const cJSON *kpi = cJSON_GetObjectItemCaseSensitive(jb, "kpi");
        const cJSON *e = target ? cJSON_GetObjectItemCaseSensitive(jb, "review_energy_to_target")
                                : cJSON_GetObjectItemCaseSensitive(kpi, "energy_joules");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(jb, "counters"), "samples");
        if (!cJSON_IsNumber(end) || !cJSON_IsNumber(e) || (!target && !cJSON_IsNumber(s)))
            continue;
        int64_t t = (int64_t)(end->valuedouble * 1e9);
        const char *jn = cJSON_IsString(node) ? node->valuestring : "";
        if (strcmp(jn, c->host) == 0)
            jn = ""; /* a job's node is its host's name; its GPUs' series are the store's own */
        if (t < a || t >= b || !in_set(ns, jn))
            continue;
        joules += e->valuedouble;
        samples += target ? 1 : s->valuedouble;
        jobs++;
    }
    if (jobs == 0)
        snprintf(why, wn,
                 target ? "no job that reached its target ended in the window"
                        : "no job with a samples counter ended in the window");
    else if (!(samples > 0))
        snprintf(why, wn, "the jobs that ended counted no samples");
    else
        *v = joules / samples;
}

/* The mean GPU utilisation over [a, b] on the nodes of ns (hourly means, every GPU). */
static int util(struct ctx *c, int64_t a, int64_t b, const struct nodeset *ns, double *v, char *why,
                size_t wn)
{
    struct wt_series_info *si = NULL;
    size_t n = 0;
    double s = 0;
    size_t k = 0;
    int rc = wt_store_series(c->st, "wattage_gpu_utilization_ratio", false, &si, &n, c->err);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct wt_point *p = NULL;
        size_t np = 0;
        if (!in_set(ns, si[i].node))
            continue;
        rc = wt_store_points(c->st, &si[i], a, b, 3600 * WT_NS_PER_S, &p, &np);
        for (size_t j = 0; rc == 0 && j < np; j++) {
            s += p[j].v;
            k++;
        }
        free(p);
    }
    free(si);
    *v = k ? s / (double)k : NAN;
    if (!k)
        snprintf(why, wn, "no wattage_gpu_utilization_ratio readings in the window");
    return rc;
}

/* PUE, part-load PUE, WUE and CUE over [a, b] (the site's). */
static int facility(struct ctx *c, int64_t a, int64_t b, double v[WT_REVIEW_KPIS], char why[][160])
{
    struct wt_kpi_report r;
    struct wt_err e = {{0}};
    double kwh_per[WT_FUEL_COUNT];
    int rc = c->cfg ? wt_kpi_fuel_factors(c->cfg, kwh_per, &e) : 0;
    if (rc == 0)
        rc = wt_kpi_compute_with(c->st, c->t, c->cfg ? kwh_per : NULL, a, b, NULL, &r, &e);
    if (rc != 0) {
        snprintf(c->err->msg, sizeof c->err->msg, "%s", e.msg);
        return rc;
    }
    if (wt_carbon_kpi_row(c->st, c->cfg, &r) == -EIO) {
        wt_kpi_report_free(&r);
        snprintf(c->err->msg, sizeof c->err->msg, "cannot read the carbon series from the store");
        return -EIO;
    }
    static const struct {
        int k;
        const char *row;
    } map[] = {{K_PUE, "pue"}, {K_WUE, "wue"}, {K_CUE, "cue"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        const struct wt_kpi_row *row = wt_kpi_row(&r, map[i].row);
        int k = map[i].k;
        if (!row) {
            snprintf(why[k], 160, "not computed");
        } else if (!row->available) {
            snprintf(why[k], 160, "%s", row->why);
        } else if (!row->measured) {
            /* an assumed constant has no noise and no regression to find */
            snprintf(why[k], 160, "assumed, not measured (%.130s)",
                     row->nin ? row->in[0].detail : "configured constant");
        } else {
            v[k] = row->value;
        }
    }
    if (!r.part_load_available) {
        snprintf(why[K_PUE_PL], 160, "%s", r.part_load_why[0] ? r.part_load_why : "no bands");
    } else if (c->band < 0) {
        /* the reviewed week chooses the band: the one that held most of its time */
        double most = 0;
        for (size_t i = 0; i < r.nbands; i++)
            if (r.bands[i].available && r.bands[i].seconds > most) {
                most = r.bands[i].seconds;
                c->band = (int)i;
            }
        if (c->band < 0)
            snprintf(why[K_PUE_PL], 160, "no part-load band with a PUE in the week");
    }
    if (r.part_load_available && c->band >= 0) {
        if ((size_t)c->band < r.nbands && r.bands[c->band].available)
            v[K_PUE_PL] = r.bands[c->band].pue;
        else
            snprintf(why[K_PUE_PL], 160, "no load in the band %.0f-%.0f%%", r.bands[c->band].lo_pct,
                     r.bands[c->band].hi_pct);
    }
    wt_kpi_report_free(&r);
    return 0;
}

/* Every KPI of the mask over [a, b] on ns (per-node KPIs only on ns; the site's otherwise). */
static int window(struct ctx *c, int64_t a, int64_t b, const struct nodeset *ns, unsigned mask,
                  double v[WT_REVIEW_KPIS], char why[][160])
{
    int rc = 0;
    for (int k = 0; k < WT_REVIEW_KPIS; k++) {
        v[k] = NAN;
        why[k][0] = '\0';
    }
    if ((mask & 1u << K_JTOK) && (rc = jtok(c, a, b, ns, &v[K_JTOK], why[K_JTOK], 160)) != 0)
        return rc;
    if (mask & 1u << K_JSAMPLE)
        jobs_kpi(c, a, b, ns, false, &v[K_JSAMPLE], why[K_JSAMPLE], 160);
    if (mask & 1u << K_JTARGET)
        jobs_kpi(c, a, b, ns, true, &v[K_JTARGET], why[K_JTARGET], 160);
    if ((mask & 1u << K_UTIL) && (rc = util(c, a, b, ns, &v[K_UTIL], why[K_UTIL], 160)) != 0)
        return rc;
    if (mask & (1u << K_PUE | 1u << K_PUE_PL | 1u << K_WUE | 1u << K_CUE))
        rc = facility(c, a, b, v, why);
    return rc;
}

/* ---- change points ---- */

struct info {
    struct wt_series_info s;
    int64_t first; /* its first reading in the lookback and the week (0: none) */
    char key[192]; /* node + uuid, or node + target */
};

/*
 * The time of the first reading of si in [a, b] (0: none): raw readings and chunks first, then
 * the per-minute rollups (a minute's start), which outlive the raw readings' retention.
 */
static int first_in(struct wt_store *st, const struct wt_series_info *si, int64_t a, int64_t b,
                    int64_t *t)
{
    struct wt_point_buf pb = {0};
    struct wt_rollup *ru = NULL;
    size_t nru = 0;
    *t = 0;
    int rc = wt_store_read(st, si->id, a, b, 0, 1, &pb);
    if (rc == 0 && pb.n)
        *t = pb.p[0].t_ns;
    free(pb.p);
    /* a rollup can only be earlier than the first raw reading where raw ones were pruned */
    if (rc == 0 && (!*t || *t > a + 60 * WT_NS_PER_S))
        rc = wt_store_rollups(st, si->id, a, *t ? *t : b, &ru, &nru);
    for (size_t i = 0; rc == 0 && i < nru; i++) {
        if (ru[i].n > 0) {
            int64_t m = ru[i].t_ns > a ? ru[i].t_ns : a;
            if (!*t || m < *t)
                *t = m;
            break;
        }
    }
    free(ru);
    return rc;
}

static int load_infos(struct ctx *c, const char *metric, int64_t a, int64_t b, struct info **out,
                      size_t *nout)
{
    struct wt_series_info *si = NULL;
    size_t n = 0;
    int rc = wt_store_series(c->st, metric, false, &si, &n, c->err);
    *out = NULL;
    *nout = 0;
    if (rc != 0)
        return rc;
    struct info *in = calloc(n ? n : 1, sizeof *in);
    if (!in) {
        free(si);
        return -ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t f;
        if ((rc = first_in(c->st, &si[i], a, b, &f)) != 0) {
            free(si);
            free(in);
            return rc;
        }
        if (f == 0)
            continue;
        char id[128] = "";
        if (strcmp(metric, "wattage_gpu_info") == 0) {
            if (wt_labels_get(si[i].labels, "uuid", id, sizeof id) != 0)
                (void)wt_labels_get(si[i].labels, "gpu", id, sizeof id);
        } else if (strcmp(metric, "wattage_inference_info") == 0) {
            (void)wt_labels_get(si[i].labels, "target", id, sizeof id);
        }
        in[m].s = si[i];
        in[m].first = f;
        snprintf(in[m].key, sizeof in[m].key, "%s\x1f%s", si[i].node, id);
        m++;
    }
    free(si);
    *out = in;
    *nout = m;
    return 0;
}

/*
 * The series of the same key that the new one y replaced: the latest to start before it that has
 * no reading from shortly after y's first to `to` (one still read beside it is another model on
 * the target, not a change). *x NULL when none.
 */
static int predecessor(struct ctx *c, const struct info *in, size_t n, const struct info *y,
                       int64_t to, const struct info **x)
{
    *x = NULL;
    for (size_t i = 0; i < n; i++) {
        if (&in[i] == y || strcmp(in[i].key, y->key) != 0 || in[i].first >= y->first)
            continue;
        if (!*x || in[i].first > (*x)->first)
            *x = &in[i];
    }
    int64_t later = 0;
    int rc = 0;
    if (*x && y->first + REPLACED_SLACK_NS < to &&
        (rc = first_in(c->st, &(*x)->s, y->first + REPLACED_SLACK_NS, to, &later)) == 0 && later)
        *x = NULL;
    return rc;
}

/* The labels of an inference target other than its identity and model: its tags. */
static void tags_of(const char *labels, char *out, size_t n)
{
    size_t pos = 0;
    char k[64], v[256];
    out[0] = '\0';
    while (wt_labels_next(labels, &pos, k, sizeof k, v, sizeof v) == 1) {
        if (strcmp(k, "target") != 0 && strcmp(k, "model") != 0 && strcmp(k, "gpus") != 0)
            (void)wt_labels_add(out, n, k, v);
    }
}

static void add_change(struct wt_review *r, const char *kind, const char *before, const char *after,
                       const char *node, const char *where, int64_t t)
{
    struct wt_review_change *ch = NULL;
    for (size_t i = 0; i < r->nchanges && !ch; i++) {
        struct wt_review_change *o = &r->changes[i];
        if (strcmp(o->kind, kind) == 0 && strcmp(o->before, before) == 0 &&
            strcmp(o->after, after) == 0)
            ch = o;
    }
    if (!ch) {
        if (r->nchanges == WT_REVIEW_MAX_CHANGES) {
            r->changes_truncated = true;
            return;
        }
        ch = &r->changes[r->nchanges++];
        memset(ch, 0, sizeof *ch);
        snprintf(ch->kind, sizeof ch->kind, "%s", kind);
        snprintf(ch->before, sizeof ch->before, "%s", before);
        snprintf(ch->after, sizeof ch->after, "%s", after);
        ch->t_ns = ch->first_ns = t;
    }
    if (t > ch->t_ns)
        ch->t_ns = t;
    if (t < ch->first_ns)
        ch->first_ns = t;
    bool known = false;
    for (size_t i = 0; i < ch->nnodes && !known; i++)
        known = strcmp(ch->nodes[i], node) == 0;
    if (!known && ch->nnodes < WT_REVIEW_MAX_NODES)
        snprintf(ch->nodes[ch->nnodes++], sizeof ch->nodes[0], "%s", node);
    if (where && where[0] && !strstr(ch->where, where)) {
        size_t l = strlen(ch->where);
        snprintf(ch->where + l, sizeof ch->where - l, "%s%s", l ? "," : "", where);
    }
}

static int find_changes(struct ctx *c, struct wt_review *r)
{
    static const char *const metrics[] = {"wattage_gpu_info", "wattage_inference_info",
                                          "wattage_config_info"};
    int rc = 0;
    for (size_t m = 0; m < 3 && rc == 0; m++) {
        struct info *in = NULL;
        size_t n = 0;
        /* a week back for what the week's new labels replaced */
        if ((rc = load_infos(c, metrics[m], r->from_ns - WEEK_NS, r->to_ns, &in, &n)) != 0)
            break;
        for (size_t i = 0; i < n && rc == 0; i++) {
            const struct info *y = &in[i], *x = NULL;
            if (y->first < r->from_ns || y->first >= r->to_ns)
                continue;
            if ((rc = predecessor(c, in, n, y, r->to_ns, &x)) != 0 || !x)
                continue;
            char a[128], b[128], where[64] = "";
            if (m == 0) {
                (void)wt_labels_get(y->s.labels, "gpu", where, sizeof where);
                static const char *const lk[] = {"driver_version", "vbios_version"};
                static const char *const kind[] = {"driver", "vbios"};
                for (size_t k = 0; k < 2; k++) {
                    if (wt_labels_get(x->s.labels, lk[k], a, sizeof a) == 0 &&
                        wt_labels_get(y->s.labels, lk[k], b, sizeof b) == 0 && strcmp(a, b) != 0)
                        add_change(r, kind[k], a, b, y->s.node, where, y->first);
                }
            } else if (m == 1) {
                char ta[WT_LABELS_LEN], tb[WT_LABELS_LEN];
                (void)wt_labels_get(y->s.labels, "target", where, sizeof where);
                if (wt_labels_get(x->s.labels, "model", a, sizeof a) == 0 &&
                    wt_labels_get(y->s.labels, "model", b, sizeof b) == 0 && strcmp(a, b) != 0) {
                    add_change(r, "model", a, b, y->s.node, where, y->first);
                    continue;
                }
                tags_of(x->s.labels, ta, sizeof ta);
                tags_of(y->s.labels, tb, sizeof tb);
                if (strcmp(ta, tb) != 0) {
                    snprintf(a, sizeof a, "{%.120s}", ta);
                    snprintf(b, sizeof b, "{%.120s}", tb);
                    add_change(r, "tags", a, b, y->s.node, where, y->first);
                }
            } else {
                if (wt_labels_get(x->s.labels, "digest", a, sizeof a) == 0 &&
                    wt_labels_get(y->s.labels, "digest", b, sizeof b) == 0 && strcmp(a, b) != 0)
                    add_change(r, "config", a, b, y->s.node, NULL, y->first);
            }
        }
        free(in);
    }
    return rc;
}

/* ---- findings ---- */

static const char *node_name(const struct wt_review *r, const char *node)
{
    return node[0] ? node : r->local_node[0] ? r->local_node : "this node";
}

/* A name's trailing number: where its digits start (its length: none) and their value. */
static size_t num_at(const char *s, unsigned long long *v)
{
    size_t l = strlen(s), at = l;
    while (at > 0 && s[at - 1] >= '0' && s[at - 1] <= '9')
        at--;
    *v = l - at > 0 && l - at < 19 ? strtoull(s + at, NULL, 10) : 0;
    return l - at > 0 && l - at < 19 ? at : l;
}

/* By name: within a prefix and digit width that is by the number too. */
static int node_cmp(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* Whether b follows a in a run: same prefix and width, its number one more. */
static bool next_of(const char *a, const char *b)
{
    unsigned long long va, vb;
    size_t ia = num_at(a, &va), ib = num_at(b, &vb);
    return ia == ib && ia < strlen(a) && strlen(a) == strlen(b) && strncmp(a, b, ia) == 0 &&
           vb == va + 1;
}

void wt_review_node_ranges(const char *const *names, size_t n, char *buf, size_t len)
{
    const char **v = n ? malloc(n * sizeof *v) : NULL;
    size_t l = 0;
    if (len)
        buf[0] = '\0';
    if (!v || !len) {
        free(v);
        return;
    }
    memcpy(v, names, n * sizeof *v);
    qsort(v, n, sizeof *v, node_cmp);
    for (size_t i = 0; i < n && l < len;) {
        size_t j = i;
        while (j + 1 < n && next_of(v[j], v[j + 1]))
            j++;
        if (j - i >= 2) {
            snprintf(buf + l, len - l, "%s%s..%s", i ? ", " : "", v[i], v[j]);
            i = j + 1;
        } else {
            snprintf(buf + l, len - l, "%s%s", i ? ", " : "", v[i]);
            i++;
        }
        l += strlen(buf + l);
    }
    free(v);
}

static void change_nodes(const struct wt_review *r, const struct wt_review_change *ch, char *buf,
                         size_t n)
{
    const char *names[WT_REVIEW_MAX_NODES];
    for (size_t i = 0; i < ch->nnodes; i++)
        names[i] = node_name(r, ch->nodes[i]);
    wt_review_node_ranges(names, ch->nnodes, buf, n);
}

static void add_finding(struct wt_review *r, int k, int change, double before, double after,
                        const struct wt_review_band *b, const char *text)
{
    if (r->nfindings == sizeof r->findings / sizeof r->findings[0])
        return;
    struct wt_review_finding *f = &r->findings[r->nfindings++];
    snprintf(f->kpi, sizeof f->kpi, "%s", kdef[k].key);
    f->change = change;
    f->before = before;
    f->after = after;
    f->band_half = b->half;
    f->days = b->days;
    snprintf(f->text, sizeof f->text, "%s", text);
}

/* The KPIs after change ci against the whole days before it, on its nodes. */
static int attribute(struct ctx *c, struct wt_review *r, size_t ci, int64_t base_from)
{
    const struct wt_review_change *ch = &r->changes[ci];
    bool site = strcmp(ch->kind, "config") == 0;
    struct nodeset ns = {ch->nodes, ch->nnodes};
    unsigned mask = 0;
    for (int k = 0; k < WT_REVIEW_KPIS; k++)
        if ((site || kdef[k].per_node) && !isnan(r->kpis[k].value))
            mask |= 1u << k;
    for (int k = 0; k < WT_REVIEW_KPIS; k++)
        r->after[ci][k] = r->before[ci][k] = NAN;
    if (!mask || r->to_ns - ch->t_ns < DAY_NS)
        return 0; /* nothing to move, or less than a day after it: too little to tell */
    double v[WT_REVIEW_KPIS];
    char why[WT_REVIEW_KPIS][160];
    int rc = window(c, ch->t_ns, r->to_ns, site ? NULL : &ns, mask, v, why);
    if (rc != 0)
        return rc;
    size_t ndays = (size_t)((ch->first_ns - base_from) / DAY_NS);
    double(*days)[WT_REVIEW_KPIS] = calloc(ndays ? ndays : 1, sizeof *days);
    if (!days)
        return -ENOMEM;
    for (size_t d = 0; d < ndays; d++) {
        int64_t a = base_from + (int64_t)d * DAY_NS;
        if ((rc = window(c, a, a + DAY_NS, site ? NULL : &ns, mask, days[d], why)) != 0)
            goto out;
    }
    char nodes[512];
    change_nodes(r, ch, nodes, sizeof nodes);
    for (int k = 0; k < WT_REVIEW_KPIS; k++) {
        if (!(mask & 1u << k))
            continue;
        double *col = malloc((ndays ? ndays : 1) * sizeof *col);
        if (!col) {
            rc = -ENOMEM;
            goto out;
        }
        for (size_t d = 0; d < ndays; d++)
            col[d] = days[d][k];
        struct wt_review_band b;
        wt_review_band(col, ndays, &b);
        free(col);
        r->after[ci][k] = v[k];
        r->before[ci][k] = b.mean;
        if (wt_review_judge(v[k], &b, kdef[k].lower_better) != WT_RV_WORSE)
            continue;
        char text[384], when[40];
        wt_time_format(ch->first_ns, 0, when, sizeof when);
        snprintf(text, sizeof text,
                 "%s %+.1f%% since %s %.48s -> %.48s on %.160s (%s): %.4g before (+-%.1f%%, "
                 "%d days), %.4g after",
                 kdef[k].label, (v[k] / b.mean - 1) * 100, ch->kind, ch->before, ch->after, nodes,
                 when, b.mean, b.half / fabs(b.mean) * 100, b.days, v[k]);
        add_finding(r, k, (int)ci, b.mean, v[k], &b, text);
    }
out:
    free(days);
    return rc;
}

static int open_jobs(struct ctx *c)
{
    const char *path = sqlite3_db_filename(wt_store_db(c->st), "main");
    struct wt_err e = {{0}};
    char *json = NULL;
    unsigned status = 0;
    if (!path || !path[0] || wt_jobs_open(path, NULL, &c->jobs, &e) != 0) {
        c->jobs = NULL;
        return 0; /* J/sample says: no jobs table */
    }
    int64_t now = wt_now_real_ns();
    int rc = wt_jobs_list_json(c->jobs, 1000, now, &status, &json);
    if (rc == 0 && status == 200)
        c->job_list = cJSON_Parse(json);
    free(json);
    /* the energy to the target is in a job's own figures (its marks): asked once per ended job
     * that has a target */
    cJSON *jb;
    cJSON_ArrayForEach(jb, cJSON_GetObjectItemCaseSensitive(c->job_list, "jobs"))
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(jb, "id");
        char ref[32];
        if (rc != 0 || !cJSON_IsNumber(id) ||
            !cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(jb, "target")) ||
            !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(jb, "end_s")))
            continue;
        snprintf(ref, sizeof ref, "%.0f", id->valuedouble);
        json = NULL;
        rc = wt_jobs_act_json(c->jobs, ref, WT_JOBS_SHOW, NULL, 0, now, &status, &json);
        cJSON *one = rc == 0 && status == 200 ? cJSON_Parse(json) : NULL;
        const cJSON *et = cJSON_GetObjectItemCaseSensitive(one, "energy_to_target");
        const cJSON *ej = cJSON_GetObjectItemCaseSensitive(et, "energy_joules");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(et, "reached")) && cJSON_IsNumber(ej))
            cJSON_AddNumberToObject(jb, "review_energy_to_target", ej->valuedouble);
        cJSON_Delete(one);
        free(json);
    }
    return rc == -ENOMEM ? rc : 0;
}

int wt_review_compute(struct wt_store *st, const struct wt_config *cfg, const struct wt_topology *t,
                      int64_t week_start_ns, int nweeks, struct wt_review *r, struct wt_err *err)
{
    if (nweeks < 1 || nweeks > WT_REVIEW_MAX_WEEKS)
        return wt_err_set(err, "--weeks: expected 1 to %d, got %d", WT_REVIEW_MAX_WEEKS, nweeks);
    memset(r, 0, sizeof *r);
    int64_t s0;
    wt_review_week_of(week_start_ns, &r->year, &r->week, &s0);
    r->from_ns = s0;
    r->to_ns = s0 + WEEK_NS;
    r->nweeks = nweeks;
    if (t)
        snprintf(r->local_node, sizeof r->local_node, "%s", t->node);
    struct ctx c = {.st = st, .cfg = cfg, .t = t, .band = -1, .err = err};
    if (gethostname(c.host, sizeof c.host - 1) != 0)
        c.host[0] = '\0';
    int rc = open_jobs(&c);
    double v[WT_REVIEW_KPIS];
    char why[WT_REVIEW_KPIS][160];
    size_t ndays = (size_t)nweeks * 7;
    int64_t base_from = r->from_ns - (int64_t)nweeks * WEEK_NS;
    double(*days)[WT_REVIEW_KPIS] = NULL;
    if (rc != 0)
        goto out;
    for (int k = 0; k < WT_REVIEW_KPIS; k++) {
        struct wt_review_kpi *kp = &r->kpis[k];
        snprintf(kp->key, sizeof kp->key, "%s", kdef[k].key);
        snprintf(kp->label, sizeof kp->label, "%s", kdef[k].label);
        snprintf(kp->unit, sizeof kp->unit, "%s", kdef[k].unit);
        kp->lower_better = kdef[k].lower_better;
        kp->per_node = kdef[k].per_node;
    }
    /* the week itself first: it picks the part-load band */
    if ((rc = window(&c, r->from_ns, r->to_ns, NULL, ~0u, v, why)) != 0)
        goto out;
    for (int k = 0; k < WT_REVIEW_KPIS; k++) {
        r->kpis[k].value = v[k];
        snprintf(r->kpis[k].why, sizeof r->kpis[k].why, "%.159s", why[k]);
    }
    if (c.band >= 0 && t && (size_t)c.band + 1 < t->nbands)
        snprintf(r->part_load_band, sizeof r->part_load_band, "%.0f-%.0f%%", t->bands[c.band],
                 t->bands[c.band + 1]);
    {
        struct wt_series_info *all = NULL;
        size_t n = 0;
        if ((rc = wt_store_series(st, NULL, true, &all, &n, err)) != 0)
            goto out;
        for (size_t i = 0; i < n && !r->has_data && rc == 0; i++)
            rc = has_points(st, &all[i], r->from_ns, r->to_ns, &r->has_data);
        free(all);
        if (rc != 0)
            goto out;
    }
    for (int w = 0; w < nweeks; w++) {
        int64_t a = r->from_ns - (int64_t)(nweeks - w) * WEEK_NS;
        if ((rc = window(&c, a, a + WEEK_NS, NULL, ~0u, v, why)) != 0)
            goto out;
        for (int k = 0; k < WT_REVIEW_KPIS; k++)
            r->kpis[k].weeks[w] = v[k];
    }
    days = calloc(ndays, sizeof *days);
    if (!days) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t d = 0; d < ndays; d++) {
        int64_t a = base_from + (int64_t)d * DAY_NS;
        if ((rc = window(&c, a, a + DAY_NS, NULL, ~0u, days[d], why)) != 0)
            goto out;
    }
    for (int k = 0; k < WT_REVIEW_KPIS; k++) {
        struct wt_review_kpi *kp = &r->kpis[k];
        double col[WT_REVIEW_MAX_WEEKS * 7];
        for (size_t d = 0; d < ndays; d++)
            col[d] = days[d][k];
        wt_review_band(col, ndays, &kp->band);
        kp->verdict = wt_review_judge(kp->value, &kp->band, kp->lower_better);
        kp->change = kp->value / kp->band.mean - 1;
        if (kp->verdict == WT_RV_NO_BASE)
            snprintf(kp->why, sizeof kp->why,
                     "%d days with a value in the %d weeks before, %d "
                     "needed for a noise band",
                     kp->band.days, nweeks, WT_REVIEW_MIN_DAYS);
    }
    if ((rc = find_changes(&c, r)) != 0)
        goto out;
    for (size_t i = 0; i < r->nchanges; i++)
        if ((rc = attribute(&c, r, i, base_from)) != 0)
            goto out;
    /* a KPI worse beyond the noise that no change explains */
    for (int k = 0; k < WT_REVIEW_KPIS; k++) {
        const struct wt_review_kpi *kp = &r->kpis[k];
        bool told = false;
        for (size_t i = 0; i < r->nfindings && !told; i++)
            told = strcmp(r->findings[i].kpi, kp->key) == 0;
        if (told || kp->verdict != WT_RV_WORSE)
            continue;
        char text[384];
        snprintf(text, sizeof text,
                 "%s %+.1f%% against the %d weeks before (%.4g, +-%.1f%%, %d "
                 "days): no change point in the week explains it",
                 kp->label, kp->change * 100, nweeks, kp->band.mean,
                 kp->band.half / fabs(kp->band.mean) * 100, kp->band.days);
        add_finding(r, k, -1, kp->band.mean, kp->value, &kp->band, text);
    }
out:
    free(days);
    cJSON_Delete(c.job_list);
    wt_jobs_close(c.jobs);
    if (rc != 0 && !err->msg[0])
        wt_err_set(err, "the review failed: %s", strerror(-rc));
    return rc;
}

/* ---- output ---- */

static void num(cJSON *o, const char *k, double v)
{
    if (isnan(v) || isinf(v))
        cJSON_AddNullToObject(o, k);
    else
        cJSON_AddNumberToObject(o, k, v);
}

static void when(cJSON *o, const char *k, int64_t t)
{
    char b[40];
    wt_time_format(t, 0, b, sizeof b);
    cJSON_AddStringToObject(o, k, b);
}

cJSON *wt_review_json(const struct wt_review *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    char wk[16];
    snprintf(wk, sizeof wk, "%04d-W%02d", r->year, r->week);
    cJSON_AddStringToObject(o, "week", wk);
    when(o, "from", r->from_ns);
    when(o, "to", r->to_ns);
    cJSON_AddNumberToObject(o, "weeks_before", r->nweeks);
    cJSON_AddBoolToObject(o, "has_data", r->has_data);
    cJSON_AddStringToObject(o, "noise_band",
                            "the weeks before, per whole UTC day: mean +- max(3 sd, 2% of the "
                            "mean), at least 3 days");
    if (r->part_load_band[0])
        cJSON_AddStringToObject(o, "part_load_band", r->part_load_band);
    cJSON *ks = cJSON_AddArrayToObject(o, "kpis");
    for (int k = 0; ks && k < WT_REVIEW_KPIS; k++) {
        const struct wt_review_kpi *kp = &r->kpis[k];
        cJSON *x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddStringToObject(x, "name", kp->key);
        cJSON_AddStringToObject(x, "unit", kp->unit);
        cJSON_AddBoolToObject(x, "available", !isnan(kp->value));
        num(x, "value", kp->value);
        cJSON_AddStringToObject(x, "verdict", wt_review_verdict_name(kp->verdict));
        if (kp->why[0])
            cJSON_AddStringToObject(x, "why", kp->why);
        cJSON *b = cJSON_AddObjectToObject(x, "band");
        num(b, "mean", kp->band.mean);
        num(b, "half_width", kp->band.half);
        num(b, "sd", kp->band.sd);
        cJSON_AddNumberToObject(b, "days", kp->band.days);
        num(x, "change_ratio", kp->change);
        cJSON *w = cJSON_AddArrayToObject(x, "weeks_before");
        for (int i = 0; w && i < r->nweeks; i++) {
            cJSON *e = isnan(kp->weeks[i]) ? cJSON_CreateNull() : cJSON_CreateNumber(kp->weeks[i]);
            cJSON_AddItemToArray(w, e);
        }
        cJSON_AddItemToArray(ks, x);
    }
    cJSON *cs = cJSON_AddArrayToObject(o, "changes");
    for (size_t i = 0; cs && i < r->nchanges; i++) {
        const struct wt_review_change *ch = &r->changes[i];
        cJSON *x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddStringToObject(x, "kind", ch->kind);
        cJSON_AddStringToObject(x, "before", ch->before);
        cJSON_AddStringToObject(x, "after", ch->after);
        when(x, "first", ch->first_ns);
        when(x, "last", ch->t_ns);
        cJSON *nodes = cJSON_AddArrayToObject(x, "nodes");
        for (size_t n = 0; nodes && n < ch->nnodes; n++)
            cJSON_AddItemToArray(nodes, cJSON_CreateString(ch->nodes[n]));
        cJSON_AddStringToObject(x, "where", ch->where);
        cJSON *sh = cJSON_AddObjectToObject(x, "kpis");
        for (int k = 0; sh && k < WT_REVIEW_KPIS; k++) {
            if (isnan(r->after[i][k]))
                continue;
            cJSON *e = cJSON_AddObjectToObject(sh, kdef[k].key);
            num(e, "before", r->before[i][k]);
            num(e, "after", r->after[i][k]);
        }
        cJSON_AddItemToArray(cs, x);
    }
    cJSON_AddBoolToObject(o, "changes_truncated", r->changes_truncated);
    cJSON *fs = cJSON_AddArrayToObject(o, "findings");
    for (size_t i = 0; fs && i < r->nfindings; i++) {
        const struct wt_review_finding *f = &r->findings[i];
        cJSON *x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddStringToObject(x, "kpi", f->kpi);
        num(x, "before", f->before);
        num(x, "after", f->after);
        num(x, "change_ratio", f->after / f->before - 1);
        num(x, "band_half_width", f->band_half);
        cJSON_AddNumberToObject(x, "band_days", f->days);
        if (f->change >= 0)
            cJSON_AddNumberToObject(x, "change", f->change);
        else
            cJSON_AddNullToObject(x, "change");
        cJSON_AddStringToObject(x, "text", f->text);
        cJSON_AddItemToArray(fs, x);
    }
    return o;
}

void wt_review_text(const struct wt_review *r, FILE *f)
{
    char a[40], b[40];
    wt_time_format(r->from_ns, 0, a, sizeof a);
    wt_time_format(r->to_ns, 0, b, sizeof b);
    fprintf(f, "week %04d-W%02d (%s to %s) against the %d weeks before\n", r->year, r->week, a, b,
            r->nweeks);
    if (!r->has_data)
        fprintf(f, "no readings stored in this week: nothing to review\n");
    fprintf(f, "noise band: the daily values of the weeks before, mean +- max(3 sd, 2%%)\n\n");
    fprintf(f, "%-18s %12s %-11s %12s %9s %8s  %s\n", "KPI", "value", "unit", "band mean",
            "band +-", "change", "verdict");
    for (int k = 0; k < WT_REVIEW_KPIS; k++) {
        const struct wt_review_kpi *kp = &r->kpis[k];
        char v[24] = "-", m[24] = "-", h[24] = "-", c[24] = "-";
        if (!isnan(kp->value))
            snprintf(v, sizeof v, "%.4g", kp->value);
        if (!isnan(kp->band.mean))
            snprintf(m, sizeof m, "%.4g", kp->band.mean);
        if (!isnan(kp->band.half) && kp->band.mean != 0)
            snprintf(h, sizeof h, "%.1f%%", kp->band.half / fabs(kp->band.mean) * 100);
        if (!isnan(kp->change) && !isinf(kp->change))
            snprintf(c, sizeof c, "%+.1f%%", kp->change * 100);
        fprintf(f, "%-18s %12s %-11s %12s %9s %8s  %s", kp->label, v, kp->unit, m, h, c,
                wt_review_verdict_name(kp->verdict));
        if (kp->why[0])
            fprintf(f, " (%s)", kp->why);
        if (k == K_PUE_PL && r->part_load_band[0])
            fprintf(f, " [band %s]", r->part_load_band);
        fputc('\n', f);
    }
    fprintf(f, "\nchange points: %zu%s\n", r->nchanges,
            r->changes_truncated ? " (more not shown)" : "");
    for (size_t i = 0; i < r->nchanges; i++) {
        const struct wt_review_change *ch = &r->changes[i];
        char t[40];
        wt_time_format(ch->first_ns, 0, t, sizeof t);
        char nodes[512];
        bool gpu = strcmp(ch->kind, "driver") == 0 || strcmp(ch->kind, "vbios") == 0;
        change_nodes(r, ch, nodes, sizeof nodes);
        fprintf(f, "  %s %s %s -> %s on %s", t, ch->kind, ch->before, ch->after, nodes);
        if (ch->where[0])
            fprintf(f, " (%s %s)", gpu ? "GPU" : "target", ch->where);
        for (int k = 0; k < WT_REVIEW_KPIS; k++)
            if (!isnan(r->after[i][k]) && !isnan(r->before[i][k]) && r->before[i][k] != 0)
                fprintf(f, "; %s %+.1f%% after", kdef[k].label,
                        (r->after[i][k] / r->before[i][k] - 1) * 100);
        fputc('\n', f);
    }
    fprintf(f, "\nfindings: %zu\n", r->nfindings);
    for (size_t i = 0; i < r->nfindings; i++)
        fprintf(f, "  %s\n", r->findings[i].text);
}
