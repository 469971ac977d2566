/* SPDX-License-Identifier: MIT */
/*
 * The jobs module's insides, shared by its parts: jobs.c (the API: open, close, the verbs),
 * jobs_model.c (rows, names, GPUs), jobs_query.c (energy over a window of a job),
 * jobs_kpi.c (KPIs, a job as JSON, the /metrics families, the profile) and jobs_export.c (jobs
 * as series). Not for use outside src/audit/jobs*.c.
 */
#ifndef WT_JOBS_INT_H
#define WT_JOBS_INT_H

#include <cjson/cJSON.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "audit/carbon.h"
#include "audit/jobs.h"
#include "core/gpuname.h"

#define DEFAULT_LIST 50
#define MAX_LIST 1000
#define KIND_MAX 32
#define TAG_VALUE_MAX 256
#define MAX_PHASES 1000 /* the latest ones are shown; each is one energy query */
#define JOB_COLS "id, name, node, tags, gpus, target, start_ns, end_ns"
#define METRICS_TTL_NS WT_NS_PER_S /* the store's default flush interval */

struct wt_jobs {
    pthread_mutex_t mu;
    struct wt_store *st;
    sqlite3 *db;
    struct wt_hub *hub;
    char node[64];
    /* The /metrics family of the running jobs, computed at most once per fam_ttl: a second,
     * or ten times what the last computation took (many long jobs), so scrapes stay cheap. */
    struct wt_expo_sample *fam_s;
    size_t fam_n;
    int64_t fam_at; /* CLOCK_MONOTONIC of the computation; 0: stale */
    int64_t fam_ttl;
    /* Carbon (wt_jobs_set_carbon; NULL: no carbon figures), and the running jobs' emissions
     * computed with the energy family. */
    struct wt_carbon_conf *carbon;
    struct wt_expo_sample *co2_s;
    size_t co2_n;
    /* The exporter thread (wt_jobs_export_start): jobs as series through the hub, so
     * the store keeps them and remote write sends them. */
    int slot;
    pthread_t exp_th;
    bool exp_started, exp_stop;
    bool exp_poke; /* a job started, was marked or ended: the exporter looks again */
    pthread_cond_t exp_cv;
    /* Edges waiting for their edge sample (core/hub.h): a start, end or mark stored at the
     * request's time, moved to the time of the first counter reading after it once the store
     * has it (fix_edges), so the phase's edges fall on readings. */
    struct edge_fix {
        int what; /* FIX_START, FIX_END, FIX_MARK */
        int64_t row, req_ns;
    } fix[64];
    size_t nfix;
    double clock_bound_s;      /* wt_jobs_set_clock_bound */
    wt_jobs_start_fn start_fn; /* wt_jobs_set_start_hook */
    void *start_ctx;
};

enum { FIX_START, FIX_END, FIX_MARK };
#define EDGE_LAG_MAX_NS (500 * 1000000LL) /* a later reading is no edge sample */
#define EDGE_GIVE_UP_NS (10 * WT_NS_PER_S)
#define WT_JOBS_START_GPUS 64 /* the GPUs of a starting job handed to the start hook */

struct job {
    int64_t id;
    char name[WT_JOBS_NAME_MAX + 1];
    char node[64];
    cJSON *tags, *gpus, *target;
    int64_t start_ns, end_ns; /* end 0: running */
};

struct mark {
    int64_t t_ns;
    char kind[KIND_MAX + 1];
    bool has_index, begin;
    int64_t index;
    cJSON *counters;
};

/* A reply in the making: status and body. */
struct rep {
    unsigned status;
    cJSON *body;
};

struct span {
    double gpu_j, cpu_j, coverage;
    double gpu_u, cpu_u; /* error bars (store/uncert.h), summed over the series */
    int ngpu;
};

/* jobs.c: the API */
void wt_jobs_fix_edges(struct wt_jobs *j, int64_t now);

/* jobs_model.c: rows, names, GPUs */
__attribute__((format(printf, 4, 5))) int wt_jobs_bad(struct rep *r, unsigned status,
                                                      const char *field, const char *fmt, ...);
int64_t wt_jobs_count_rows(struct wt_jobs *j, const char *sql, int64_t arg, const char *text);
int wt_jobs_find_job(struct wt_jobs *j, const char *ref, struct job *jb);
bool wt_jobs_gpu_matches(const char *s, const char *index, const char *uuid);
void wt_jobs_job_free(struct job *jb);
int wt_jobs_load_row(sqlite3_stmt *s, struct job *jb);
bool wt_jobs_name_ok(const char *s);
int wt_jobs_load_marks(struct wt_jobs *j, int64_t id, struct mark **out, size_t *n);
void wt_jobs_marks_free(struct mark *m, size_t n);

/* jobs_query.c: energy over a window */
int wt_jobs_carbon_window(struct wt_jobs *j, const struct job *jb, int64_t a, int64_t b, double pue,
                          bool measured, struct wt_carbon_result *res);
double wt_jobs_peak_power(struct wt_jobs *j, const struct job *jb, int64_t a, int64_t b);
int wt_jobs_window_energy(struct wt_jobs *j, const struct job *jb, int64_t a, int64_t b,
                          struct span *sp, cJSON *per_gpu);

/* jobs_kpi.c: KPIs and JSON */
void wt_jobs_add_time(cJSON *o, const char *key, int64_t t_ns);
int wt_jobs_job_json(struct wt_jobs *j, const struct job *jb, int64_t now_ns, bool detail,
                     cJSON **out);
int wt_jobs_summable_counters(struct wt_jobs *j, struct rep *r, const struct job *jb,
                              const char *kind, bool begin, cJSON *counters, cJSON *warnings);

#endif
