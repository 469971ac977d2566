/* SPDX-License-Identifier: MIT */
/*
 * The figures of a job and its phases: KPIs, the job as JSON, the summable counters of its
 * marks, the /metrics families, and its power profile.
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

/* ---- KPIs ---- */

void wt_jobs_add_time(cJSON *o, const char *key, int64_t t_ns)
{
    char buf[40], k[40];
    wt_time_format(t_ns, 1, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
    snprintf(k, sizeof k, "%s_s", key);
    cJSON_AddNumberToObject(o, k, (double)t_ns / 1e9);
}

static double counter(const cJSON *counters, const char *name, bool *has)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(counters, name);
    *has = cJSON_IsNumber(v);
    return *has ? v->valuedouble : 0;
}

/* Duration, energy, mean power and what the counters allow. */
static void add_kpis(cJSON *o, double dur_s, const struct span *sp, const cJSON *counters)
{
    double e = sp->gpu_j, kwh = e / 3.6e6, x;
    bool has;
    cJSON_AddNumberToObject(o, "duration_s", dur_s);
    cJSON_AddNumberToObject(o, "energy_joules", e);
    cJSON_AddNumberToObject(o, "uncertainty_joules", sp->gpu_u);
    cJSON_AddNumberToObject(o, "energy_kwh", kwh);
    cJSON_AddNumberToObject(o, "mean_power_w", dur_s > 0 ? e / dur_s : 0);
    cJSON_AddNumberToObject(o, "coverage", sp->coverage);
    cJSON_AddNumberToObject(o, "cpu_energy_joules", sp->cpu_j);
    cJSON_AddNumberToObject(o, "cpu_uncertainty_joules", sp->cpu_u);
    if (!counters || e <= 0)
        return;
    x = counter(counters, "tokens", &has);
    if (has) {
        cJSON_AddNumberToObject(o, "tokens_per_kwh", x / kwh);
        if (x > 0)
            cJSON_AddNumberToObject(o, "joules_per_token", e / x);
    }
    x = counter(counters, "samples", &has);
    if (has && dur_s > 0)
        cJSON_AddNumberToObject(o, "samples_per_s_per_w", (x / dur_s) / (e / dur_s));
    x = counter(counters, "requests", &has);
    if (has && x > 0) {
        cJSON_AddNumberToObject(o, "joules_per_request", e / x);
        double p99 = counter(counters, "latency_p99_s", &has);
        if (has)
            cJSON_AddNumberToObject(o, "latency_p99_s", p99);
    }
}

/* Metrics where less is better: the target is reached at or below it. */
static bool lower_is_better(const char *metric)
{
    return strstr(metric, "loss") || strstr(metric, "perplexity") || strstr(metric, "error") ||
           strstr(metric, "wer") || strstr(metric, "latency");
}

/* The counters that add up over phases; each has a running-total form X_total (api_mark). */
static const char *const summable[] = {"tokens", "samples", "requests"};
#define NSUMMABLE (sizeof summable / sizeof summable[0])

int wt_jobs_job_json(struct wt_jobs *j, const struct job *jb, int64_t now_ns, bool detail,
                     cJSON **out)
{
    struct mark *m = NULL;
    size_t nm = 0;
    struct span sp;
    int rc;
    int64_t end = jb->end_ns ? jb->end_ns : now_ns;
    cJSON *o = cJSON_CreateObject(), *per_gpu = NULL, *totals = NULL;
    *out = NULL;
    if (!o)
        return -ENOMEM;
    cJSON_AddNumberToObject(o, "id", (double)jb->id);
    cJSON_AddStringToObject(o, "name", jb->name);
    cJSON_AddStringToObject(o, "node", jb->node);
    cJSON_AddStringToObject(o, "state", jb->end_ns ? "ended" : "running");
    cJSON_AddItemToObject(o, "tags", cJSON_Duplicate(jb->tags, 1));
    cJSON_AddItemToObject(o, "gpus", cJSON_Duplicate(jb->gpus, 1));
    if (cJSON_GetArraySize(jb->target))
        cJSON_AddItemToObject(o, "target", cJSON_Duplicate(jb->target, 1));
    wt_jobs_add_time(o, "start", jb->start_ns);
    if (jb->end_ns)
        wt_jobs_add_time(o, "end", jb->end_ns);
    else
        cJSON_AddNullToObject(o, "end");

    if ((rc = wt_jobs_load_marks(j, jb->id, &m, &nm)) != 0)
        goto fail;
    /* Job-wide counters: the summable ones over the phases of one kind (epoch when there are
     * epochs, else the first kind marked), so steps and epochs are not counted twice. */
    const char *main_kind = NULL;
    for (size_t i = 0; i < nm; i++) {
        if (!m[i].begin && (!main_kind || strcmp(m[i].kind, "epoch") == 0))
            main_kind = m[i].kind;
    }
    totals = cJSON_CreateObject();
    if (!totals) {
        rc = -ENOMEM;
        goto fail;
    }
    double p99_max = -1;
    for (size_t i = 0; main_kind && i < nm; i++) {
        if (m[i].begin || strcmp(m[i].kind, main_kind) != 0)
            continue;
        for (size_t k = 0; k < NSUMMABLE; k++) {
            bool has;
            double x = counter(m[i].counters, summable[k], &has);
            if (!has)
                continue;
            cJSON *t = cJSON_GetObjectItemCaseSensitive(totals, summable[k]);
            if (t)
                cJSON_SetNumberValue(t, t->valuedouble + x);
            else
                cJSON_AddNumberToObject(totals, summable[k], x);
        }
        bool has;
        double p = counter(m[i].counters, "latency_p99_s", &has);
        if (has && p > p99_max)
            p99_max = p;
    }
    if (detail && !(per_gpu = cJSON_CreateArray())) {
        rc = -ENOMEM;
        goto fail;
    }
    if ((rc = wt_jobs_window_energy(j, jb, jb->start_ns, end, &sp, per_gpu)) != 0)
        goto fail;
    cJSON *kpi = cJSON_AddObjectToObject(o, "kpi");
    add_kpis(kpi, (double)(end - jb->start_ns) / 1e9, &sp, totals);
    double pue = 0;
    bool pue_measured = false;
    if (j->carbon) {
        struct wt_carbon_result cr;
        wt_carbon_pue(j->st, j->carbon, jb->start_ns, end, &pue, &pue_measured);
        if ((rc = wt_jobs_carbon_window(j, jb, jb->start_ns, end, pue, pue_measured, &cr)) != 0)
            goto fail;
        cJSON *c = wt_carbon_result_json(&cr);
        if (!c) {
            rc = -ENOMEM;
            goto fail;
        }
        cJSON_AddItemToObject(o, "carbon", c);
        if (cr.known)
            cJSON_AddNumberToObject(kpi, "gco2e", cr.g);
        else
            cJSON_AddNullToObject(kpi, "gco2e");
    }
    if (p99_max >= 0)
        cJSON_AddNumberToObject(kpi, "latency_p99_s_max", p99_max);
    cJSON_AddItemToObject(o, "counters", totals);
    totals = NULL;
    {
        /* the clock's trust over the job's window: warnings, never a failure */
        struct wt_clock_warnings *cw = malloc(sizeof *cw);
        if (cw && wt_clockcheck_window(j->st, jb->start_ns, end, j->clock_bound_s, cw) == 0)
            rc = wt_clockcheck_json(o, cw);
        free(cw);
        if (rc)
            goto fail;
    }
    if (!detail) {
        wt_jobs_marks_free(m, nm);
        *out = o;
        return 0;
    }
    cJSON_AddNumberToObject(kpi, "peak_power_w", wt_jobs_peak_power(j, jb, jb->start_ns, end));
    cJSON_AddItemToObject(o, "gpu_energy", per_gpu);
    per_gpu = NULL;

    /* Energy to the target: from the start to the first mark that reached it. */
    const cJSON *tg;
    cJSON_ArrayForEach(tg, jb->target)
    {
        cJSON *e = cJSON_AddObjectToObject(o, "energy_to_target");
        bool low = lower_is_better(tg->string);
        cJSON_AddStringToObject(e, "metric", tg->string);
        cJSON_AddNumberToObject(e, "target", tg->valuedouble);
        cJSON_AddStringToObject(e, "reached_when", low ? "<=" : ">=");
        size_t i;
        for (i = 0; i < nm; i++) {
            bool has;
            double x = counter(m[i].counters, tg->string, &has);
            if (has && (low ? x <= tg->valuedouble : x >= tg->valuedouble))
                break;
        }
        cJSON_AddBoolToObject(e, "reached", i < nm);
        if (i < nm) {
            struct span ts;
            if ((rc = wt_jobs_window_energy(j, jb, jb->start_ns, m[i].t_ns, &ts, NULL)) != 0)
                goto fail;
            wt_jobs_add_time(e, "at", m[i].t_ns);
            cJSON_AddNumberToObject(e, "energy_joules", ts.gpu_j);
            cJSON_AddNumberToObject(e, "uncertainty_joules", ts.gpu_u);
            cJSON_AddNumberToObject(e, "energy_kwh", ts.gpu_j / 3.6e6);
            cJSON_AddNumberToObject(e, "coverage", ts.coverage);
        }
        break; /* one target */
    }

    size_t nphases = 0, skip = 0;
    for (size_t i = 0; i < nm; i++)
        nphases += !m[i].begin;
    if (nphases > MAX_PHASES) {
        skip = nphases - MAX_PHASES;
        cJSON_AddNumberToObject(o, "phases_omitted", (double)skip);
    }
    cJSON *phases = cJSON_AddArrayToObject(o, "phases");
    for (size_t i = 0; i < nm; i++) {
        if (m[i].begin)
            continue;
        if (skip) {
            skip--;
            continue;
        }
        int64_t from = jb->start_ns;
        for (size_t k = i; k-- > 0;) {
            if (strcmp(m[k].kind, m[i].kind) == 0) {
                from = m[k].t_ns;
                break;
            }
        }
        struct span ps;
        if ((rc = wt_jobs_window_energy(j, jb, from, m[i].t_ns, &ps, NULL)) != 0)
            goto fail;
        cJSON *p = cJSON_CreateObject();
        if (!p) {
            rc = -ENOMEM;
            goto fail;
        }
        cJSON_AddItemToArray(phases, p);
        cJSON_AddStringToObject(p, "kind", m[i].kind);
        if (m[i].has_index)
            cJSON_AddNumberToObject(p, "index", (double)m[i].index);
        else
            cJSON_AddNullToObject(p, "index");
        wt_jobs_add_time(p, "from", from);
        wt_jobs_add_time(p, "to", m[i].t_ns);
        cJSON_AddItemToObject(p, "counters", cJSON_Duplicate(m[i].counters, 1));
        cJSON *pk = cJSON_AddObjectToObject(p, "kpi");
        add_kpis(pk, (double)(m[i].t_ns - from) / 1e9, &ps, m[i].counters);
        if (j->carbon) {
            struct wt_carbon_result cr;
            if ((rc = wt_jobs_carbon_window(j, jb, from, m[i].t_ns, pue, pue_measured, &cr)) != 0)
                goto fail;
            if (cr.known)
                cJSON_AddNumberToObject(pk, "gco2e", cr.g);
            else
                cJSON_AddNullToObject(pk, "gco2e");
        }
    }
    wt_jobs_marks_free(m, nm);
    *out = o;
    return 0;
fail:
    wt_jobs_marks_free(m, nm);
    cJSON_Delete(per_gpu);
    cJSON_Delete(totals);
    cJSON_Delete(o);
    return rc;
}

/*
 * The summable counters of a mark (tokens, samples, requests): X is the phase's own count (a
 * delta since the previous mark of the same kind), X_total a running total since the job's
 * start. A mark gives one or the other; X_total is stored with X, its difference from the sum
 * of the kind's earlier counts, so every figure reads X alone. A running total given as X would
 * count every earlier phase again, so a warning (into *warnings) says so when the kind's X has
 * risen at every mark since its first (three marks at least) and the latest is at least twice
 * the first: deltas of a steady job stay about level, running totals climb. Returns 0 (with
 * r->status set on a bad mark) or a negative errno.
 */
struct sum_state {
    double sum, first, prev;
    int n;
    bool rising, any_total;
};

int wt_jobs_summable_counters(struct wt_jobs *j, struct rep *r, const struct job *jb,
                              const char *kind, bool begin, cJSON *counters, cJSON *warnings)
{
    struct sum_state ss[NSUMMABLE];
    char tk[NSUMMABLE][40];
    bool any = false;
    memset(ss, 0, sizeof ss);
    for (size_t k = 0; k < NSUMMABLE; k++) {
        snprintf(tk[k], sizeof tk[k], "%s_total", summable[k]);
        bool d = cJSON_GetObjectItemCaseSensitive(counters, summable[k]) != NULL;
        bool t = cJSON_GetObjectItemCaseSensitive(counters, tk[k]) != NULL;
        if (d && t)
            return wt_jobs_bad(r, 400, tk[k],
                               "%s and %s: give one of them (%s: the count of the phase this mark "
                               "closes; %s: the running total since the job's start)",
                               summable[k], tk[k], summable[k], tk[k]);
        if (t && begin)
            return wt_jobs_bad(r, 400, tk[k],
                               "%s: a begin mark closes no phase, so it has no count", tk[k]);
        any |= d || t;
        ss[k].rising = true;
    }
    if (!any || begin)
        return 0;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(j->db,
                           "SELECT json_extract(counters, '$.tokens'), "
                           "json_extract(counters, '$.tokens_total'), "
                           "json_extract(counters, '$.samples'), "
                           "json_extract(counters, '$.samples_total'), "
                           "json_extract(counters, '$.requests'), "
                           "json_extract(counters, '$.requests_total') "
                           "FROM marks WHERE job=? AND kind=? AND begin=0 ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, jb->id);
    sqlite3_bind_text(s, 2, kind, -1, SQLITE_STATIC);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        for (size_t k = 0; k < NSUMMABLE; k++) {
            struct sum_state *x = &ss[k];
            x->any_total |= sqlite3_column_type(s, (int)(2 * k + 1)) != SQLITE_NULL;
            if (sqlite3_column_type(s, (int)(2 * k)) == SQLITE_NULL)
                continue;
            double v = sqlite3_column_double(s, (int)(2 * k));
            x->sum += v;
            if (x->n == 0)
                x->first = v;
            else if (v <= x->prev)
                x->rising = false;
            x->prev = v;
            x->n++;
        }
    }
    sqlite3_finalize(s);
    if (step != SQLITE_DONE)
        return -EIO;
    for (size_t k = 0; k < NSUMMABLE; k++) {
        struct sum_state *x = &ss[k];
        cJSON *t = cJSON_GetObjectItemCaseSensitive(counters, tk[k]);
        cJSON *d = cJSON_GetObjectItemCaseSensitive(counters, summable[k]);
        if (t) {
            double delta = t->valuedouble - x->sum;
            /* Sums of fractional counts may lose the last bit; anything more is a mistake. */
            if (delta < 0 && delta >= -1e-9 * x->sum)
                delta = 0;
            if (delta < 0)
                return wt_jobs_bad(r, 400, tk[k],
                                   "%s: %.17g is below the running total of the earlier %s marks "
                                   "(%.17g); a running total never goes down",
                                   tk[k], t->valuedouble, kind, x->sum);
            if (!cJSON_AddNumberToObject(counters, summable[k], delta))
                return -ENOMEM;
        } else if (d && !x->any_total && x->n >= 2 && x->rising && d->valuedouble > x->prev &&
                   d->valuedouble >= 2 * x->first) {
            char w[400];
            snprintf(w, sizeof w,
                     "%s: %.17g has risen at every %s mark (from %.17g over %d marks), like a "
                     "running total; %s is the count of the phase this mark closes, so a "
                     "running total counts every earlier phase again: send it as %s",
                     summable[k], d->valuedouble, kind, x->first, x->n + 1, summable[k], tk[k]);
            if (!cJSON_AddItemToArray(warnings, cJSON_CreateString(w)))
                return -ENOMEM;
        }
    }
    return 0;
}

/* ---- the /metrics family ---- */

static const char fam_name[] = "wattage_job_energy_joules_total";
static const char fam_help[] =
    "Energy of a running job's GPUs since its start, from the stored series over the job's "
    "window (as GET /api/v1/jobs/{id}); lags the live counters by up to one store flush "
    "interval. Ended jobs leave.";

/* Recomputes the samples of the running jobs (j->mu held). */
static int compute_family(struct wt_jobs *j)
{
    sqlite3_stmt *s = NULL;
    struct wt_expo_sample *smp = calloc(WT_JOBS_MAX_RUNNING, sizeof *smp);
    struct wt_expo_sample *co2 = j->carbon ? calloc(WT_JOBS_MAX_RUNNING, sizeof *co2) : NULL;
    size_t n = 0, nco2 = 0;
    int rc = 0, step;
    int64_t now = wt_now_real_ns(), began = wt_now_mono_ns();
    if (!smp || (j->carbon && !co2)) {
        free(smp);
        free(co2);
        return -ENOMEM;
    }
    if (sqlite3_prepare_v2(j->db,
                           "SELECT " JOB_COLS " FROM jobs WHERE end_ns IS NULL ORDER BY id LIMIT ?",
                           -1, &s, NULL) != SQLITE_OK) {
        free(smp);
        free(co2);
        return -EIO;
    }
    sqlite3_bind_int(s, 1, WT_JOBS_MAX_RUNNING);
    while (n < WT_JOBS_MAX_RUNNING && (step = sqlite3_step(s)) == SQLITE_ROW) {
        struct job jb;
        struct span sp;
        char id[24];
        if ((rc = wt_jobs_load_row(s, &jb)) != 0)
            break;
        rc = wt_jobs_window_energy(j, &jb, jb.start_ns, now, &sp, NULL);
        snprintf(id, sizeof id, "%lld", (long long)jb.id);
        if (rc == 0 &&
            wt_labels(smp[n].labels, sizeof smp[n].labels, "id", id, "job", jb.name, NULL) == 0) {
            smp[n].value = sp.gpu_j;
            n++;
        }
        if (rc == 0 && co2) {
            struct wt_carbon_result cr;
            double pue;
            bool measured;
            wt_carbon_pue(j->st, j->carbon, jb.start_ns, now, &pue, &measured);
            rc = wt_jobs_carbon_window(j, &jb, jb.start_ns, now, pue, measured, &cr);
            if (rc == 0 && cr.known) {
                memcpy(co2[nco2].labels, smp[n - 1].labels, sizeof co2[0].labels);
                co2[nco2++].value = cr.g;
            }
        }
        wt_jobs_job_free(&jb);
        if (rc)
            break;
    }
    sqlite3_finalize(s);
    if (rc) {
        free(smp);
        free(co2);
        return rc;
    }
    free(j->fam_s);
    j->fam_s = smp;
    j->fam_n = n;
    free(j->co2_s);
    j->co2_s = co2;
    j->co2_n = nco2;
    int64_t done = wt_now_mono_ns();
    j->fam_ttl = 10 * (done - began) > METRICS_TTL_NS ? 10 * (done - began) : METRICS_TTL_NS;
    j->fam_at = done;
    return 0;
}

int wt_jobs_family(struct wt_jobs *j, struct wt_expo_family *fam)
{
    int rc = 0;
    memset(fam, 0, sizeof *fam);
    fam->name = fam_name;
    fam->help = fam_help;
    fam->type = WT_COUNTER;
    pthread_mutex_lock(&j->mu);
    if (!j->fam_at || wt_now_mono_ns() - j->fam_at >= j->fam_ttl)
        rc = compute_family(j);
    if (rc == 0 && j->fam_n) {
        fam->s = calloc(j->fam_n, sizeof *fam->s);
        if (fam->s) {
            memcpy(fam->s, j->fam_s, j->fam_n * sizeof *fam->s);
            fam->n = j->fam_n;
        } else {
            rc = -ENOMEM;
        }
    }
    pthread_mutex_unlock(&j->mu);
    return rc;
}

static const char co2_name[] = "wattage_job_emissions_grams_total";
static const char co2_help[] =
    "Time-matched emissions of a running job since its start, gCO2e: its GPU energy per "
    "interval of the grid's carbon intensity x that intensity x PUE (as \"carbon\" in "
    "GET /api/v1/jobs/{id}). Ended jobs leave.";

int wt_jobs_family_co2(struct wt_jobs *j, struct wt_expo_family *fam)
{
    int rc = 0;
    memset(fam, 0, sizeof *fam);
    fam->name = co2_name;
    fam->help = co2_help;
    fam->type = WT_COUNTER;
    pthread_mutex_lock(&j->mu);
    if (!j->fam_at || wt_now_mono_ns() - j->fam_at >= j->fam_ttl)
        rc = compute_family(j);
    if (rc == 0 && j->co2_n) {
        fam->s = calloc(j->co2_n, sizeof *fam->s);
        if (fam->s) {
            memcpy(fam->s, j->co2_s, j->co2_n * sizeof *fam->s);
            fam->n = j->co2_n;
        } else {
            rc = -ENOMEM;
        }
    }
    pthread_mutex_unlock(&j->mu);
    return rc;
}

void wt_jobs_set_clock_bound(struct wt_jobs *j, double bound_s)
{
    j->clock_bound_s = bound_s;
}

int wt_jobs_set_carbon(struct wt_jobs *j, const struct wt_carbon_conf *cf)
{
    struct wt_carbon_conf *c = NULL;
    if (cf && !(c = malloc(sizeof *c)))
        return -ENOMEM;
    if (c)
        *c = *cf;
    pthread_mutex_lock(&j->mu);
    free(j->carbon);
    j->carbon = c;
    j->fam_at = 0;
    pthread_mutex_unlock(&j->mu);
    return 0;
}

int wt_jobs_profile(struct wt_jobs *j, const char *ref, int64_t now_ns, int64_t step_ns,
                    double **watts, size_t *n, int64_t *duration_ns, struct wt_err *err)
{
    struct job jb;
    int rc;
    *watts = NULL;
    *n = 0;
    *duration_ns = 0;
    if (step_ns <= 0)
        return wt_err_set(err, "the profile's step must be > 0");
    pthread_mutex_lock(&j->mu);
    rc = wt_jobs_find_job(j, ref, &jb);
    if (rc) {
        pthread_mutex_unlock(&j->mu);
        if (rc == -ENOENT)
            wt_err_set(err, "no job %s", ref);
        else
            wt_err_set(err, "cannot read the jobs table");
        return rc;
    }
    int64_t end = jb.end_ns ? jb.end_ns : now_ns;
    size_t k = end > jb.start_ns ? (size_t)((end - jb.start_ns + step_ns - 1) / step_ns) : 0;
    double *w = k ? calloc(k, sizeof *w) : NULL;
    if (!k) {
        rc = wt_err_set(err, "job %s has no duration", ref);
    } else if (!w) {
        rc = -ENOMEM;
    } else {
        for (size_t i = 0; i < k && rc == 0; i++) {
            int64_t a = jb.start_ns + (int64_t)i * step_ns;
            int64_t b = a + step_ns < end ? a + step_ns : end;
            struct span sp;
            rc = wt_jobs_window_energy(j, &jb, a, b, &sp, NULL);
            w[i] = sp.gpu_j / ((double)(b - a) / 1e9);
        }
        if (rc)
            wt_err_set(err, "cannot read the job's energy from the store");
    }
    int64_t dur = end - jb.start_ns;
    wt_jobs_job_free(&jb);
    pthread_mutex_unlock(&j->mu);
    if (rc) {
        free(w);
        return rc;
    }
    *watts = w;
    *n = k;
    *duration_ns = dur;
    return 0;
}
