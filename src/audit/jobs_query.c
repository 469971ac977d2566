/* SPDX-License-Identifier: MIT */
/*
 * Energy over a window of a job, restricted to its GPUs, from the store's exact-window query,
 * its peak power, and the time-matched emissions of a window (audit/carbon.h).
 */
#include "audit/jobs.h"
#include "audit/jobs_int.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/carbon.h"
#include "audit/clockcheck.h"
#include "core/clock.h"
#include "core/family.h"
#include "core/log.h"
#include "store/query.h"
#include "store/store.h"

/* ---- energy over a window, restricted to the job's GPUs ---- */

static bool gpu_selected(const struct job *jb, const char *labels)
{
    char gpu[32], uuid[96];
    if (cJSON_GetArraySize(jb->gpus) == 0)
        return true;
    if (wt_labels_get(labels, "gpu", gpu, sizeof gpu) != 0)
        gpu[0] = '\0';
    if (wt_labels_get(labels, "uuid", uuid, sizeof uuid) != 0)
        uuid[0] = '\0';
    const cJSON *g;
    cJSON_ArrayForEach(g, jb->gpus)
    {
        const char *s = cJSON_GetStringValue(g);
        if (!s)
            continue;
        if (wt_jobs_gpu_matches(s, gpu, uuid))
            return true;
    }
    return false;
}

/* RAPL domains another series contains (core, uncore in package; psys holds all). */
static bool cpu_in_total(const char *labels)
{
    char d[32];
    if (wt_labels_get(labels, "domain", d, sizeof d) != 0)
        return true;
    return strcmp(d, "core") != 0 && strcmp(d, "uncore") != 0 && strcmp(d, "psys") != 0;
}

/* Energy of the job's GPUs (and the node's CPUs) over [a, b]; per_gpu (may be NULL) gets one
 * object per GPU. */
int wt_jobs_window_energy(struct wt_jobs *j, const struct job *jb, int64_t a, int64_t b,
                          struct span *sp, cJSON *per_gpu)
{
    struct wt_energy_row *rows = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    memset(sp, 0, sizeof *sp);
    if (b <= a)
        return 0;
    if (wt_store_energy(j->st, a, b, 0, &rows, &n, &err) != 0) {
        wt_warn("jobs", "energy query: %s", err.msg);
        return -EIO;
    }
    double cov = 1;
    for (size_t i = 0; i < n; i++) {
        const struct wt_energy_row *r = &rows[i];
        if (!r->chosen || r->s.node[0])
            continue;
        if (strcmp(r->s.metric, "wattage_cpu_energy_joules_total") == 0) {
            if (cpu_in_total(r->s.labels)) {
                sp->cpu_j += r->energy_j;
                sp->cpu_u += r->uncertainty_j;
            }
            continue;
        }
        if (!wt_metric_is_gpu_energy(r->s.metric) || !gpu_selected(jb, r->s.labels))
            continue;
        sp->gpu_j += r->energy_j;
        sp->gpu_u += r->uncertainty_j;
        sp->ngpu++;
        if (r->coverage < cov)
            cov = r->coverage;
        if (per_gpu) {
            char v[96];
            cJSON *o = cJSON_CreateObject();
            if (!o)
                break;
            if (wt_labels_get(r->s.labels, "gpu", v, sizeof v) == 0)
                cJSON_AddStringToObject(o, "gpu", v);
            if (wt_labels_get(r->s.labels, "uuid", v, sizeof v) == 0) {
                cJSON_AddStringToObject(o, "uuid", v);
                cJSON_AddStringToObject(o, "vendor", wt_gpu_uuid_vendor(v));
            }
            cJSON_AddNumberToObject(o, "energy_joules", r->energy_j);
            cJSON_AddNumberToObject(o, "uncertainty_joules", r->uncertainty_j);
            if (r->sensor_j > 0)
                cJSON_AddNumberToObject(o, "sensor_accuracy_joules", r->sensor_j);
            cJSON_AddStringToObject(o, "method", r->method);
            cJSON_AddNumberToObject(o, "coverage", r->coverage);
            if (r->counter_partial)
                cJSON_AddNumberToObject(o, "counter_coverage", r->counter_coverage);
            cJSON_AddItemToArray(per_gpu, o);
        }
    }
    sp->coverage = sp->ngpu ? cov : 0;
    free(rows);
    return 0;
}

/* Peak of the summed GPU power of the job, in 1 s means (coarser for long windows). */
double wt_jobs_peak_power(struct wt_jobs *j, const struct job *jb, int64_t a, int64_t b)
{
    struct wt_series_info *si = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    double peak = 0;
    if (b <= a || wt_store_series(j->st, "wattage_gpu_power_watts", false, &si, &n, &err) != 0)
        return 0;
    int64_t step = WT_NS_PER_S;
    if ((b - a) / step > 200000)
        step = (b - a) / 200000 + 1;
    size_t nb = (size_t)((b - a) / step + 2);
    double *sum = calloc(nb, sizeof *sum);
    for (size_t i = 0; i < n && sum; i++) {
        struct wt_point *p = NULL;
        size_t np = 0;
        if (si[i].node[0] || !gpu_selected(jb, si[i].labels))
            continue;
        if (wt_store_points(j->st, &si[i], a, b, step, &p, &np) != 0)
            continue;
        for (size_t k = 0; k < np; k++) {
            int64_t idx = (p[k].t_ns - a) / step;
            if (idx >= 0 && (size_t)idx < nb)
                sum[idx] += p[k].v;
        }
        free(p);
    }
    for (size_t k = 0; sum && k < nb; k++)
        peak = sum[k] > peak ? sum[k] : peak;
    free(sum);
    free(si);
    return peak;
}

/* ---- carbon: the time-matched emissions of a window of the job (audit/carbon.h) ---- */

struct carbon_ctx {
    struct wt_jobs *j;
    const struct job *jb;
};

/* The job's GPU energy of a piece: the same exact-window query as its energy figures. */
static int carbon_energy(void *ctx, int64_t a, int64_t b, double *joules)
{
    struct carbon_ctx *c = ctx;
    struct span sp;
    int rc = wt_jobs_window_energy(c->j, c->jb, a, b, &sp, NULL);
    *joules = sp.gpu_j;
    return rc;
}

/* Emissions of [a, b] of the job at pue (measured or not). */
int wt_jobs_carbon_window(struct wt_jobs *j, const struct job *jb, int64_t a, int64_t b, double pue,
                          bool measured, struct wt_carbon_result *res)
{
    struct carbon_ctx ctx = {j, jb};
    return wt_carbon_emissions(j->db, j->st, j->carbon, wt_carbon_zone_of(j->carbon, jb->node), a,
                               b, carbon_energy, &ctx, pue, measured, res);
}
