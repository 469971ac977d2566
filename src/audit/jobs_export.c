/* SPDX-License-Identifier: MIT */
/*
 * Jobs as series: the exporter thread publishes running jobs (and their latest marks) to the
 * hub.
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

/* ---- jobs as series ---- */

#define EXPORT_AFTER_END_NS (60 * WT_NS_PER_S) /* an ended job's series stay this long */
#define EXPORT_MARKS 64                        /* the latest marks of a job, as series */

static int add_job_marks(struct wt_jobs *j, const struct job *jb, const char *id, int64_t now,
                         struct wt_batch *b)
{
    sqlite3_stmt *s = NULL;
    int rc = 0, step;
    if (sqlite3_prepare_v2(j->db,
                           "SELECT t_ns, kind, idx FROM marks WHERE job=? AND begin=0 "
                           "ORDER BY id DESC LIMIT ?",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, jb->id);
    sqlite3_bind_int(s, 2, EXPORT_MARKS);
    while (rc == 0 && (step = sqlite3_step(s)) == SQLITE_ROW) {
        char lb[WT_LABELS_LEN], idx[24] = "";
        if (sqlite3_column_type(s, 2) != SQLITE_NULL)
            snprintf(idx, sizeof idx, "%lld", (long long)sqlite3_column_int64(s, 2));
        if (wt_labels(lb, sizeof lb, "id", id, "job", jb->name, "kind",
                      (const char *)sqlite3_column_text(s, 1), "index", idx, NULL) != 0)
            continue;
        rc = wt_batch_add(b, WT_M_JOB_MARK_S, lb, now, (double)sqlite3_column_int64(s, 0) / 1e9);
    }
    sqlite3_finalize(s);
    return rc;
}

/* The gpus label: the job's GPUs as given (indices or UUIDs), comma-separated; "" for all. */
static void gpus_label(const struct job *jb, char *out, size_t n)
{
    size_t len = 0;
    const cJSON *g;
    out[0] = '\0';
    cJSON_ArrayForEach(g, jb->gpus)
    {
        const char *v = cJSON_GetStringValue(g);
        if (v && len + strlen(v) + 2 < n)
            len += (size_t)snprintf(out + len, n - len, "%s%s", len ? "," : "", v);
    }
}

/*
 * Owner labels on wattage_job_info where the job's tags name its owner (slurm_job, pod_uid,
 * unit: the names of wattage_process_*_energy_joules_total's owner labels), so that a job's
 * series join its processes' by owner. A tag that does not fit is left out.
 */
static void owner_labels(const struct job *jb, char *labels, size_t n)
{
    static const char *const keys[] = {"slurm_job", "pod_uid", "unit"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(jb->tags, keys[i]);
        if (cJSON_IsString(t) && t->valuestring[0])
            (void)wt_labels_add(labels, n, keys[i], t->valuestring);
    }
}

int wt_jobs_export_batch(struct wt_jobs *j, int64_t now, struct wt_batch *b)
{
    sqlite3_stmt *s = NULL;
    int rc = 0, step;
    pthread_mutex_lock(&j->mu);
    if (sqlite3_prepare_v2(j->db,
                           "SELECT " JOB_COLS " FROM jobs WHERE end_ns IS NULL OR end_ns>=? "
                           "ORDER BY id LIMIT ?",
                           -1, &s, NULL) != SQLITE_OK) {
        pthread_mutex_unlock(&j->mu);
        return -EIO;
    }
    sqlite3_bind_int64(s, 1, now - EXPORT_AFTER_END_NS);
    sqlite3_bind_int(s, 2, WT_JOBS_MAX_RUNNING);
    while (rc == 0 && (step = sqlite3_step(s)) == SQLITE_ROW) {
        struct job jb;
        struct span sp;
        char id[24], gpus[WT_LABELS_LEN / 2], lb[WT_LABELS_LEN], li[WT_LABELS_LEN];
        if ((rc = wt_jobs_load_row(s, &jb)) != 0)
            break;
        snprintf(id, sizeof id, "%lld", (long long)jb.id);
        gpus_label(&jb, gpus, sizeof gpus);
        if (wt_labels(lb, sizeof lb, "id", id, "job", jb.name, NULL) != 0 ||
            wt_labels(li, sizeof li, "id", id, "job", jb.name, "gpus", gpus, NULL) != 0) {
            wt_jobs_job_free(&jb);
            continue; /* a name too long for the labels: the API still has it */
        }
        owner_labels(&jb, li, sizeof li);
        rc = wt_jobs_window_energy(j, &jb, jb.start_ns, jb.end_ns ? jb.end_ns : now, &sp, NULL);
        if (rc == 0)
            rc = wt_batch_add(b, WT_M_JOB_INFO, li, now, 1);
        if (rc == 0)
            rc = wt_batch_add(b, WT_M_JOB_START_S, lb, now, (double)jb.start_ns / 1e9);
        if (rc == 0 && jb.end_ns)
            rc = wt_batch_add(b, WT_M_JOB_END_S, lb, now, (double)jb.end_ns / 1e9);
        if (rc == 0)
            rc = wt_batch_add(b, WT_M_JOB_ENERGY_J, lb, now, sp.gpu_j);
        if (rc == 0)
            rc = add_job_marks(j, &jb, id, now, b);
        wt_jobs_job_free(&jb);
    }
    sqlite3_finalize(s);
    pthread_mutex_unlock(&j->mu);
    return rc;
}

static void *exporter_main(void *arg)
{
    struct wt_jobs *j = arg;
    struct wt_batch b = {0};
    int fails = 0;
    pthread_setname_np(pthread_self(), "wt-jobs");
    pthread_mutex_lock(&j->mu);
    while (!j->exp_stop) {
        j->exp_poke = false;
        wt_jobs_fix_edges(j, wt_now_real_ns()); /* the edges' times, also when no request comes */
        pthread_mutex_unlock(&j->mu);
        int64_t m0 = wt_now_mono_ns();
        wt_batch_clear(&b);
        int rc = wt_jobs_export_batch(j, wt_now_real_ns(), &b);
        int64_t m1 = wt_now_mono_ns();
        if (rc != 0 && fails++ % 20 == 0)
            wt_warn("jobs", "computing the job series failed: %s (failures=%d)", strerror(-rc),
                    fails);
        if (rc == 0 && fails) {
            wt_info("jobs", "job series computed again after %d failures", fails);
            fails = 0;
        }
        /* Once a second, or ten times what computing took (many long jobs). */
        int64_t every = 10 * (m1 - m0) > METRICS_TTL_NS ? 10 * (m1 - m0) : METRICS_TTL_NS;
        /* Present only while there are jobs to show: the exporter is no collector, so it does
         * not make a daemon that collects nothing healthy. Its interval is what it waits, so a
         * slow computation is not taken for a stalled collector. */
        if (rc == 0 && b.len == 0) {
            wt_hub_set_state(j->hub, j->slot, false, every);
        } else {
            wt_hub_set_state(j->hub, j->slot, true, every);
            wt_hub_publish(j->hub, j->slot, &b, rc == 0, (double)(m1 - m0) / 1e9, m1);
        }
        int64_t until = m0 + every;
        struct timespec ts = {.tv_sec = until / WT_NS_PER_S, .tv_nsec = until % WT_NS_PER_S};
        pthread_mutex_lock(&j->mu);
        if (rc == 0 && b.len == 0 && j->nfix == 0) {
            /* Nothing to show and no edge to move: no timer until a job comes (poke_exporter). */
            while (!j->exp_stop && !j->exp_poke)
                pthread_cond_wait(&j->exp_cv, &j->mu);
            continue;
        }
        while (!j->exp_stop && !j->exp_poke && wt_now_mono_ns() < until)
            pthread_cond_timedwait(&j->exp_cv, &j->mu, &ts);
    }
    pthread_mutex_unlock(&j->mu);
    wt_batch_free(&b);
    return NULL;
}

int wt_jobs_export_start(struct wt_jobs *j)
{
    int rc;
    if (!j->hub)
        return -ENODEV;
    if (j->exp_started)
        return 0;
    j->slot = wt_hub_add_collector(j->hub, "jobs", METRICS_TTL_NS);
    if (j->slot < 0)
        return j->slot;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->exp_cv, &ca);
    pthread_condattr_destroy(&ca);
    if ((rc = pthread_create(&j->exp_th, NULL, exporter_main, j)) != 0) {
        pthread_cond_destroy(&j->exp_cv);
        return -rc;
    }
    j->exp_started = true;
    return 0;
}

bool wt_jobs_carbon_on(struct wt_jobs *j)
{
    pthread_mutex_lock(&j->mu);
    bool on = j->carbon != NULL;
    pthread_mutex_unlock(&j->mu);
    return on;
}
