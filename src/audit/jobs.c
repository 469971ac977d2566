/* SPDX-License-Identifier: MIT */
/*
 * Jobs, marks and their KPIs (see jobs.h): the tables, the bounded JSON parsing of the API
 * bodies, and the figures of a job and its phases, each from the store's exact-window energy
 * query over the job's GPUs at the time it is asked.
 */
#include "audit/jobs.h"

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
#include "core/log.h"
#include "serve/expo.h"
#include "store/query.h"
#include "store/store.h"

#define DEFAULT_LIST 50
#define MAX_LIST 1000
#define KIND_MAX 32
#define TAG_VALUE_MAX 256
#define MAX_PHASES 1000            /* the latest ones are shown; each is one energy query */
#define METRICS_TTL_NS WT_NS_PER_S /* the store's default flush interval */

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " node TEXT NOT NULL, tags TEXT NOT NULL, gpus TEXT NOT NULL, target TEXT NOT NULL,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER);"
    "CREATE INDEX IF NOT EXISTS jobs_name ON jobs(name, id);"
    "CREATE TABLE IF NOT EXISTS marks(id INTEGER PRIMARY KEY, job INTEGER NOT NULL,"
    " t_ns INTEGER NOT NULL, kind TEXT NOT NULL, idx INTEGER, begin INTEGER NOT NULL,"
    " counters TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS marks_job ON marks(job, id);";

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

__attribute__((format(printf, 4, 5))) static int bad(struct rep *r, unsigned status,
                                                     const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON_Delete(r->body);
    r->status = status;
    r->body = cJSON_CreateObject();
    if (!r->body)
        return -ENOMEM;
    cJSON_AddStringToObject(r->body, "error", msg);
    if (field)
        cJSON_AddStringToObject(r->body, "field", field);
    return 0;
}

int wt_jobs_tagged_gpus(const char *db_path, const char *key, const char *value,
                        char (*gpus)[WT_JOBS_GPU_LEN], size_t cap, size_t *n, bool *all)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char path[300];
    int rc = 0, prc;
    *n = 0;
    *all = false;
    if (!db_path || !*db_path || access(db_path, F_OK) != 0)
        return 0;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK)
        goto fail;
    sqlite3_busy_timeout(db, 200);
    snprintf(path, sizeof path, "$.%s", key);
    prc = sqlite3_prepare_v2(db,
                             "SELECT gpus FROM jobs WHERE end_ns IS NULL AND "
                             "json_extract(tags, ?1) = ?2",
                             -1, &st, NULL);
    if (prc != SQLITE_OK) {
        /* A store the daemon has not added the jobs table to yet holds no job. */
        if (strstr(sqlite3_errmsg(db), "no such table"))
            goto out;
        goto fail;
    }
    sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT);
    while ((prc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *txt = (const char *)sqlite3_column_text(st, 0);
        cJSON *arr = txt ? cJSON_Parse(txt) : NULL, *g;
        if (!arr || cJSON_GetArraySize(arr) == 0)
            *all = true;
        cJSON_ArrayForEach(g, arr)
        {
            if (cJSON_IsString(g) && *n < cap)
                snprintf(gpus[(*n)++], WT_JOBS_GPU_LEN, "%s", g->valuestring);
        }
        cJSON_Delete(arr);
    }
    if (prc != SQLITE_DONE)
        goto fail;
    goto out;
fail:
    wt_warn("jobs", "%s: cannot read the running jobs tagged %s=%s: %s", db_path, key, value,
            db ? sqlite3_errmsg(db) : "cannot open");
    rc = -EIO;
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

bool wt_jobs_key_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !(islower((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_'))
            return false;
    }
    return true;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s), digits = strspn(s, "0123456789");
    if (n == 0 || n > WT_JOBS_NAME_MAX || digits == n)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-')
            return false;
    }
    return true;
}

static bool is_gpu_index(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < 6 && strspn(s, "0123456789") == n;
}

/*
 * A job's GPU: an index ("0": of whichever vendor has it), a vendor's index ("nvidia:0",
 * "amd:0": a node with both vendors numbers each from 0), or a UUID or its prefix ("GPU-…" for
 * NVIDIA, "AMD-…" for AMD). *vendor "" when the index names none; the index in idx.
 */
static bool gpu_vendor_index(const char *s, const char **vendor, const char **idx)
{
    static const char *const vendors[] = {"nvidia", "amd"};
    for (size_t k = 0; k < 2; k++) {
        size_t n = strlen(vendors[k]);
        if (strncmp(s, vendors[k], n) == 0 && s[n] == ':' && is_gpu_index(s + n + 1)) {
            *vendor = vendors[k];
            *idx = s + n + 1;
            return true;
        }
    }
    *vendor = "";
    *idx = s;
    return is_gpu_index(s);
}

/* The vendor of a GPU series from its uuid: the AMD collector's are "AMD-…", NVML's "GPU-…". */
static const char *uuid_vendor(const char *uuid)
{
    return strncmp(uuid, "AMD-", 4) == 0 ? "amd" : "nvidia";
}

/* Whether GPU selector s is the GPU (index, uuid). */
static bool gpu_matches(const char *s, const char *index, const char *uuid)
{
    const char *vendor, *idx;
    if (gpu_vendor_index(s, &vendor, &idx))
        return strcmp(idx, index) == 0 && (!vendor[0] || strcmp(vendor, uuid_vendor(uuid)) == 0);
    return uuid[0] && strncmp(uuid, s, strlen(s)) == 0;
}

static void job_free(struct job *jb)
{
    cJSON_Delete(jb->tags);
    cJSON_Delete(jb->gpus);
    cJSON_Delete(jb->target);
    memset(jb, 0, sizeof *jb);
}

static void marks_free(struct mark *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cJSON_Delete(m[i].counters);
    free(m);
}

/* ---- the tables ---- */

static int db_exec(struct wt_jobs *j, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(j->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        wt_warn("jobs", "%s: %s", sql, msg ? msg : "?");
        sqlite3_free(msg);
        return -EIO;
    }
    return 0;
}

int wt_jobs_open(const char *db_path, struct wt_hub *hub, struct wt_jobs **out, struct wt_err *err)
{
    struct wt_store_opts o = {.create = false};
    struct wt_jobs *j = calloc(1, sizeof *j);
    int rc;
    *out = NULL;
    if (!j)
        return -ENOMEM;
    pthread_mutex_init(&j->mu, NULL);
    j->hub = hub;
    j->clock_bound_s = 0.1;
    if (gethostname(j->node, sizeof j->node - 1) != 0)
        snprintf(j->node, sizeof j->node, "localhost");
    rc = wt_store_open(db_path, &o, &j->st, err);
    if (rc)
        goto fail;
    j->db = wt_store_db(j->st);
    if (db_exec(j, "BEGIN IMMEDIATE") || db_exec(j, schema) || db_exec(j, "COMMIT")) {
        (void)db_exec(j, "ROLLBACK");
        rc = -EIO;
        wt_err_set(err, "%s: cannot create the jobs tables: %s", db_path, sqlite3_errmsg(j->db));
        goto fail;
    }
    *out = j;
    return 0;
fail:
    wt_jobs_close(j);
    return rc;
}

void wt_jobs_close(struct wt_jobs *j)
{
    if (!j)
        return;
    if (j->exp_started) {
        pthread_mutex_lock(&j->mu);
        j->exp_stop = true;
        pthread_cond_broadcast(&j->exp_cv);
        pthread_mutex_unlock(&j->mu);
        pthread_join(j->exp_th, NULL);
        pthread_cond_destroy(&j->exp_cv);
        wt_hub_set_state(j->hub, j->slot, false, METRICS_TTL_NS);
    }
    wt_store_close(j->st);
    free(j->fam_s);
    free(j->co2_s);
    free(j->carbon);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

static cJSON *parse_or_empty(const unsigned char *txt, cJSON *(*make)(void))
{
    cJSON *v = txt ? cJSON_Parse((const char *)txt) : NULL;
    return v ? v : make();
}

static int load_row(sqlite3_stmt *s, struct job *jb)
{
    memset(jb, 0, sizeof *jb);
    jb->id = sqlite3_column_int64(s, 0);
    snprintf(jb->name, sizeof jb->name, "%s", (const char *)sqlite3_column_text(s, 1));
    snprintf(jb->node, sizeof jb->node, "%s", (const char *)sqlite3_column_text(s, 2));
    jb->tags = parse_or_empty(sqlite3_column_text(s, 3), cJSON_CreateObject);
    jb->gpus = parse_or_empty(sqlite3_column_text(s, 4), cJSON_CreateArray);
    jb->target = parse_or_empty(sqlite3_column_text(s, 5), cJSON_CreateObject);
    jb->start_ns = sqlite3_column_int64(s, 6);
    jb->end_ns = sqlite3_column_type(s, 7) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 7);
    if (!jb->tags || !jb->gpus || !jb->target) {
        job_free(jb);
        return -ENOMEM;
    }
    return 0;
}

#define JOB_COLS "id, name, node, tags, gpus, target, start_ns, end_ns"

/* Finds a job by id (all digits) or name (the latest of that name). 0, -ENOENT or -EIO. */
static int find_job(struct wt_jobs *j, const char *ref, struct job *jb)
{
    sqlite3_stmt *s = NULL;
    bool by_id = strlen(ref) > 0 && strlen(ref) < 19 && strspn(ref, "0123456789") == strlen(ref);
    const char *sql = by_id ? "SELECT " JOB_COLS " FROM jobs WHERE id=?"
                            : "SELECT " JOB_COLS " FROM jobs WHERE name=? ORDER BY id DESC LIMIT 1";
    int rc;
    if (sqlite3_prepare_v2(j->db, sql, -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    if (by_id)
        sqlite3_bind_int64(s, 1, strtoll(ref, NULL, 10));
    else
        sqlite3_bind_text(s, 1, ref, -1, SQLITE_STATIC);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW)
        rc = load_row(s, jb);
    else
        rc = step == SQLITE_DONE ? -ENOENT : -EIO;
    sqlite3_finalize(s);
    return rc;
}

static int load_marks(struct wt_jobs *j, int64_t id, struct mark **out, size_t *n)
{
    sqlite3_stmt *s = NULL;
    struct mark *m = NULL;
    size_t cap = 0, len = 0;
    int rc = 0, step;
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(j->db,
                           "SELECT t_ns, kind, idx, begin, counters FROM marks WHERE job=? "
                           "ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(s, 1, id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        if (len == cap) {
            size_t nc = cap ? 2 * cap : 16;
            struct mark *nm = realloc(m, nc * sizeof *m);
            if (!nm) {
                rc = -ENOMEM;
                break;
            }
            m = nm;
            cap = nc;
        }
        struct mark *k = &m[len];
        memset(k, 0, sizeof *k);
        k->t_ns = sqlite3_column_int64(s, 0);
        snprintf(k->kind, sizeof k->kind, "%s", (const char *)sqlite3_column_text(s, 1));
        k->has_index = sqlite3_column_type(s, 2) != SQLITE_NULL;
        k->index = sqlite3_column_int64(s, 2);
        k->begin = sqlite3_column_int(s, 3) != 0;
        k->counters = parse_or_empty(sqlite3_column_text(s, 4), cJSON_CreateObject);
        if (!k->counters) {
            rc = -ENOMEM;
            break;
        }
        len++;
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(s);
    if (rc) {
        marks_free(m, len);
        return rc;
    }
    *out = m;
    *n = len;
    return 0;
}

static int64_t count_rows(struct wt_jobs *j, const char *sql, int64_t arg, const char *text)
{
    sqlite3_stmt *s = NULL;
    int64_t n = -1;
    if (sqlite3_prepare_v2(j->db, sql, -1, &s, NULL) != SQLITE_OK)
        return -1;
    if (text)
        sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC);
    else if (arg >= 0)
        sqlite3_bind_int64(s, 1, arg);
    if (sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
}

/* ---- energy over a window, restricted to the job's GPUs ---- */

struct span {
    double gpu_j, cpu_j, coverage;
    double gpu_u, cpu_u; /* error bars (store/uncert.h), summed over the series */
    int ngpu;
};

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
        if (gpu_matches(s, gpu, uuid))
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
static int window_energy(struct wt_jobs *j, const struct job *jb, int64_t a, int64_t b,
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
                cJSON_AddStringToObject(o, "vendor", uuid_vendor(v));
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
static double peak_power(struct wt_jobs *j, const struct job *jb, int64_t a, int64_t b)
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

/* ---- KPIs ---- */

static void add_time(cJSON *o, const char *key, int64_t t_ns)
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
    int rc = window_energy(c->j, c->jb, a, b, &sp, NULL);
    *joules = sp.gpu_j;
    return rc;
}

/* Emissions of [a, b] of the job at pue (measured or not). */
static int carbon_window(struct wt_jobs *j, const struct job *jb, int64_t a, int64_t b, double pue,
                         bool measured, struct wt_carbon_result *res)
{
    struct carbon_ctx ctx = {j, jb};
    return wt_carbon_emissions(j->db, j->st, j->carbon, wt_carbon_zone_of(j->carbon, jb->node), a,
                               b, carbon_energy, &ctx, pue, measured, res);
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

static int job_json(struct wt_jobs *j, const struct job *jb, int64_t now_ns, bool detail,
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
    add_time(o, "start", jb->start_ns);
    if (jb->end_ns)
        add_time(o, "end", jb->end_ns);
    else
        cJSON_AddNullToObject(o, "end");

    if ((rc = load_marks(j, jb->id, &m, &nm)) != 0)
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
    if ((rc = window_energy(j, jb, jb->start_ns, end, &sp, per_gpu)) != 0)
        goto fail;
    cJSON *kpi = cJSON_AddObjectToObject(o, "kpi");
    add_kpis(kpi, (double)(end - jb->start_ns) / 1e9, &sp, totals);
    double pue = 0;
    bool pue_measured = false;
    if (j->carbon) {
        struct wt_carbon_result cr;
        wt_carbon_pue(j->st, j->carbon, jb->start_ns, end, &pue, &pue_measured);
        if ((rc = carbon_window(j, jb, jb->start_ns, end, pue, pue_measured, &cr)) != 0)
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
        marks_free(m, nm);
        *out = o;
        return 0;
    }
    cJSON_AddNumberToObject(kpi, "peak_power_w", peak_power(j, jb, jb->start_ns, end));
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
            if ((rc = window_energy(j, jb, jb->start_ns, m[i].t_ns, &ts, NULL)) != 0)
                goto fail;
            add_time(e, "at", m[i].t_ns);
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
        if ((rc = window_energy(j, jb, from, m[i].t_ns, &ps, NULL)) != 0)
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
        add_time(p, "from", from);
        add_time(p, "to", m[i].t_ns);
        cJSON_AddItemToObject(p, "counters", cJSON_Duplicate(m[i].counters, 1));
        cJSON *pk = cJSON_AddObjectToObject(p, "kpi");
        add_kpis(pk, (double)(m[i].t_ns - from) / 1e9, &ps, m[i].counters);
        if (j->carbon) {
            struct wt_carbon_result cr;
            if ((rc = carbon_window(j, jb, from, m[i].t_ns, pue, pue_measured, &cr)) != 0)
                goto fail;
            if (cr.known)
                cJSON_AddNumberToObject(pk, "gco2e", cr.g);
            else
                cJSON_AddNullToObject(pk, "gco2e");
        }
    }
    marks_free(m, nm);
    *out = o;
    return 0;
fail:
    marks_free(m, nm);
    cJSON_Delete(per_gpu);
    cJSON_Delete(totals);
    cJSON_Delete(o);
    return rc;
}

/* ---- request bodies ---- */

/* Parses a body that must be a JSON object (an empty body is {} when allow_empty). */
static int parse_body(struct rep *r, const char *body, size_t len, bool allow_empty, cJSON **out)
{
    *out = NULL;
    size_t sp = 0;
    while (body && sp < len && isspace((unsigned char)body[sp]))
        sp++;
    if (!body || sp == len) {
        if (allow_empty) {
            *out = cJSON_CreateObject();
            return *out ? 0 : -ENOMEM;
        }
        return bad(r, 400, "body", "body: expected a JSON object");
    }
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (!v) {
        size_t at = end && end >= body ? (size_t)(end - body) : 0;
        return bad(r, 400, "body", "body: malformed JSON near byte %zu", at);
    }
    while (end && (size_t)(end - body) < len && isspace((unsigned char)*end))
        end++;
    if (end && (size_t)(end - body) < len && *end) {
        cJSON_Delete(v);
        return bad(r, 400, "body", "body: trailing characters after the JSON value");
    }
    if (!cJSON_IsObject(v)) {
        cJSON_Delete(v);
        return bad(r, 400, "body", "body: expected a JSON object");
    }
    *out = v;
    return 0;
}

/* The GPUs the daemon sees (index and uuid pairs), from the hub; n 0 when unknown. */
struct gpu_id {
    char index[16], uuid[96];
};

static size_t known_gpus(struct wt_jobs *j, struct gpu_id *g, size_t cap)
{
    struct wt_batch b = {0};
    size_t n = 0;
    if (!j->hub || wt_hub_snapshot(j->hub, &b) != 0)
        return 0;
    for (size_t i = 0; i < b.len && n < cap; i++) {
        if (b.r[i].metric != WT_M_GPU_UP)
            continue;
        if (wt_labels_get(b.r[i].labels, "gpu", g[n].index, sizeof g[n].index) != 0)
            continue;
        if (wt_labels_get(b.r[i].labels, "uuid", g[n].uuid, sizeof g[n].uuid) != 0)
            g[n].uuid[0] = '\0';
        n++;
    }
    wt_batch_free(&b);
    return n;
}

/* Checks a "gpus" array against the node's GPUs; fills gpus normalized. 0 (r->status set on a
 * bad element) or -ENOMEM. */
static int check_gpus(struct wt_jobs *j, struct rep *r, const cJSON *f, cJSON *gpus)
{
    char field[96];
    struct gpu_id known[WT_JOBS_MAX_GPUS];
    size_t nk = known_gpus(j, known, WT_JOBS_MAX_GPUS);
    if (!cJSON_IsArray(f))
        return bad(r, 400, "gpus", "gpus: expected an array of GPU indices or UUIDs");
    if (cJSON_GetArraySize(f) > WT_JOBS_MAX_GPUS)
        return bad(r, 400, "gpus", "gpus: at most %d", WT_JOBS_MAX_GPUS);
    int i = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, f)
    {
        char v[96];
        const char *vd, *ix;
        snprintf(field, sizeof field, "gpus[%d]", i++);
        if (cJSON_IsNumber(g) && g->valuedouble >= 0 && g->valuedouble < 65536 &&
            g->valuedouble == floor(g->valuedouble))
            snprintf(v, sizeof v, "%d", (int)g->valuedouble);
        else if (cJSON_IsString(g) && strlen(g->valuestring) < sizeof v &&
                 (gpu_vendor_index(g->valuestring, &vd, &ix) ||
                  ((strncmp(g->valuestring, "GPU-", 4) == 0 ||
                    strncmp(g->valuestring, "AMD-", 4) == 0) &&
                   strlen(g->valuestring) > 4)))
            snprintf(v, sizeof v, "%s", g->valuestring);
        else
            return bad(r, 400, field,
                       "%s: expected a GPU index (0, 1, ...), a vendor's index (nvidia:0, amd:0) "
                       "or a UUID (GPU-…, AMD-…)",
                       field);
        if (nk) {
            size_t hits = 0, first = 0;
            unsigned vendors = 0; /* 1 NVIDIA, 2 AMD: of the GPUs it names */
            for (size_t k = 0; k < nk; k++)
                if (gpu_matches(v, known[k].index, known[k].uuid)) {
                    vendors |= strcmp(uuid_vendor(known[k].uuid), "amd") == 0 ? 2u : 1u;
                    if (!hits++)
                        first = k;
                }
            const char *vendor, *idx;
            bool is_index = gpu_vendor_index(v, &vendor, &idx);
            if (!hits)
                return bad(r, 400, field, "%s: no GPU %s on this node", field, v);
            if (is_index && vendors == 3)
                return bad(r, 400, field,
                           "%s: GPU %s is both an NVIDIA and an AMD GPU on this node: say "
                           "nvidia:%s or amd:%s, or give its UUID",
                           field, v, idx, idx);
            /* a vendor's index that only one GPU has is that index: "nvidia:0" is "0" */
            if (is_index && vendor[0]) {
                bool alone = true;
                for (size_t k = 0; k < nk; k++)
                    alone = alone && (k == first || strcmp(known[k].index, idx) != 0);
                if (alone)
                    memmove(v, idx, strlen(idx) + 1);
            }
        }
        if (!cJSON_AddItemToArray(gpus, cJSON_CreateString(v)))
            return -ENOMEM;
    }
    return 0;
}

/* Checks a start body; fills the normalized tags, gpus and target. 0 (r->status set on a bad
 * field) or -ENOMEM. */
static int check_start(struct wt_jobs *j, struct rep *r, const cJSON *b, const char **name,
                       cJSON *tags, cJSON *gpus, cJSON *target)
{
    const cJSON *f;
    char field[96];
    *name = NULL;
    cJSON_ArrayForEach(f, b)
    {
        if (strcmp(f->string, "name") && strcmp(f->string, "tags") && strcmp(f->string, "gpus") &&
            strcmp(f->string, "target"))
            return bad(r, 400, f->string,
                       "%.64s: unknown field (expected name, tags, gpus, target)", f->string);
    }
    f = cJSON_GetObjectItemCaseSensitive(b, "name");
    if (!f)
        return bad(r, 400, "name", "name: required");
    if (!cJSON_IsString(f) || !name_ok(f->valuestring))
        return bad(r, 400, "name",
                   "name: expected 1..%d characters of A-Z a-z 0-9 . _ - (not all digits)",
                   WT_JOBS_NAME_MAX);
    *name = f->valuestring;

    f = cJSON_GetObjectItemCaseSensitive(b, "tags");
    if (f && !cJSON_IsNull(f)) {
        if (!cJSON_IsObject(f))
            return bad(r, 400, "tags", "tags: expected an object of key: \"value\"");
        if (cJSON_GetArraySize(f) > WT_JOBS_MAX_TAGS)
            return bad(r, 400, "tags", "tags: at most %d", WT_JOBS_MAX_TAGS);
        const cJSON *t;
        cJSON_ArrayForEach(t, f)
        {
            snprintf(field, sizeof field, "tags.%.64s", t->string);
            if (strlen(t->string) == 0 || strlen(t->string) > 63 ||
                strspn(t->string, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                  "_.-") != strlen(t->string))
                return bad(r, 400, field, "%s: a tag key is 1..63 characters of A-Z a-z 0-9 _ . -",
                           field);
            char num[64];
            const char *v = cJSON_GetStringValue(t);
            if (!v && cJSON_IsNumber(t)) {
                snprintf(num, sizeof num, "%.17g", t->valuedouble);
                v = num;
            }
            if (!v || strlen(v) > TAG_VALUE_MAX)
                return bad(r, 400, field, "%s: expected a string of at most %d bytes", field,
                           TAG_VALUE_MAX);
            for (const char *c = v; *c; c++) {
                if ((unsigned char)*c < 0x20)
                    return bad(r, 400, field, "%s: control characters are not allowed", field);
            }
            if (cJSON_GetObjectItemCaseSensitive(tags, t->string))
                return bad(r, 400, field, "%s: given twice", field);
            if (!cJSON_AddStringToObject(tags, t->string, v))
                return -ENOMEM;
        }
    }

    f = cJSON_GetObjectItemCaseSensitive(b, "gpus");
    if (f && !cJSON_IsNull(f)) {
        int rc = check_gpus(j, r, f, gpus);
        if (rc || r->status)
            return rc;
    }

    f = cJSON_GetObjectItemCaseSensitive(b, "target");
    if (f && !cJSON_IsNull(f)) {
        if (!cJSON_IsObject(f) || cJSON_GetArraySize(f) != 1)
            return bad(r, 400, "target",
                       "target: expected one {\"metric\": value}, e.g. "
                       "{\"accuracy\": 0.9}");
        const cJSON *t = f->child;
        snprintf(field, sizeof field, "target.%.64s", t->string);
        if (!wt_jobs_key_ok(t->string))
            return bad(r, 400, field, "%s: a metric name is lower_snake_case", field);
        if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble))
            return bad(r, 400, field, "%s: expected a number", field);
        if (!cJSON_AddNumberToObject(target, t->string, t->valuedouble))
            return -ENOMEM;
    }
    /* The target may come as a tag too: target_accuracy=0.9. */
    if (!cJSON_GetArraySize(target)) {
        const cJSON *t;
        cJSON_ArrayForEach(t, tags)
        {
            char *end = NULL;
            if (strncmp(t->string, "target_", 7) != 0 || !wt_jobs_key_ok(t->string + 7))
                continue;
            double x = strtod(t->valuestring, &end);
            if (end != t->valuestring && !*end && isfinite(x)) {
                cJSON_AddNumberToObject(target, t->string + 7, x);
                break;
            }
        }
    }
    return 0;
}

static char *print(const cJSON *v)
{
    return cJSON_PrintUnformatted(v);
}

/* Remembers an edge to move to its edge sample's time (j->mu held; only with a hub). */
static void push_fix(struct wt_jobs *j, int what, int64_t row, int64_t req_ns)
{
    if (!j->hub)
        return;
    if (j->nfix == sizeof j->fix / sizeof j->fix[0]) {
        memmove(j->fix, j->fix + 1,
                (j->nfix - 1) * sizeof j->fix[0]); /* the oldest keeps its time */
        j->nfix--;
    }
    j->fix[j->nfix++] = (struct edge_fix){what, row, req_ns};
}

/* The time of the first reading of this node's GPU energy counter in [t, t + EDGE_LAG_MAX_NS]:
 * 1 found, 0 not (yet), or a negative errno. */
static int edge_sample_at(struct wt_jobs *j, int64_t t, int64_t *at)
{
    struct wt_series_info *si = NULL;
    struct wt_point *p = NULL;
    size_t n = 0, np = 0;
    struct wt_err err = {{0}};
    int rc = wt_store_series(j->st, "wattage_gpu_energy_joules_total", false, &si, &n, &err);
    if (rc)
        return rc;
    rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (si[i].node[0] || si[i].kind != WT_SK_HWCOUNTER)
            continue;
        if (wt_store_points(j->st, &si[i], t, t + EDGE_LAG_MAX_NS, 0, &p, &np) != 0) {
            rc = -EIO;
            break;
        }
        if (np > 0 && (rc == 0 || p[0].t_ns < *at)) {
            *at = p[0].t_ns;
            rc = 1;
        }
        free(p);
        p = NULL;
        break; /* one poll stamps every GPU alike: the first GPU says it */
    }
    free(si);
    return rc;
}

/*
 * Moves every pending edge whose edge sample is stored to that sample's time (j->mu held), so
 * counter-mode energy over a phase is exact to the counter's resolution; an edge whose sample
 * never came (no counter, a failing GPU) keeps the request's time after EDGE_GIVE_UP_NS.
 */
static void fix_edges(struct wt_jobs *j, int64_t now)
{
    static const char *const sql[] = {"UPDATE jobs SET start_ns=? WHERE id=?",
                                      "UPDATE jobs SET end_ns=? WHERE id=?",
                                      "UPDATE marks SET t_ns=? WHERE id=?"};
    size_t k = 0;
    for (size_t i = 0; i < j->nfix; i++) {
        struct edge_fix f = j->fix[i];
        int64_t at = 0;
        int rc = edge_sample_at(j, f.req_ns, &at);
        if (rc == 1) {
            sqlite3_stmt *s = NULL;
            if (sqlite3_prepare_v2(j->db, sql[f.what], -1, &s, NULL) == SQLITE_OK) {
                sqlite3_bind_int64(s, 1, at);
                sqlite3_bind_int64(s, 2, f.row);
                if (sqlite3_step(s) != SQLITE_DONE)
                    wt_warn("jobs", "edge time: %s", sqlite3_errmsg(j->db));
            }
            sqlite3_finalize(s);
            j->fam_at = 0;
            continue;
        }
        if (rc == 0 && now - f.req_ns < EDGE_GIVE_UP_NS)
            j->fix[k++] = f; /* not stored yet: later */
    }
    j->nfix = k;
}

/* The GPUs a job names, as strings, into names[0..cap) (*n of them). */
static void gpu_names(const cJSON *gpus, char (*names)[WT_JOBS_GPU_LEN], size_t cap, size_t *n)
{
    const cJSON *g;
    *n = 0;
    cJSON_ArrayForEach(g, gpus)
    {
        if (*n == cap)
            break;
        if (cJSON_IsString(g))
            snprintf(names[(*n)++], WT_JOBS_GPU_LEN, "%s", g->valuestring);
        else if (cJSON_IsNumber(g))
            snprintf(names[(*n)++], WT_JOBS_GPU_LEN, "%d", g->valueint);
    }
}

static int api_start(struct wt_jobs *j, struct rep *r, const char *body, size_t len, int64_t now,
                     char (*names)[WT_JOBS_GPU_LEN], size_t cap, size_t *nnames)
{
    cJSON *b = NULL, *tags = cJSON_CreateObject(), *gpus = cJSON_CreateArray(),
          *target = cJSON_CreateObject();
    const char *name;
    char *ts = NULL, *gs = NULL, *xs = NULL;
    sqlite3_stmt *s = NULL;
    int rc = -ENOMEM;
    if (!tags || !gpus || !target)
        goto out;
    if ((rc = parse_body(r, body, len, false, &b)) != 0 || r->status)
        goto out;
    if ((rc = check_start(j, r, b, &name, tags, gpus, target)) != 0 || r->status)
        goto out;
    int64_t running = count_rows(j, "SELECT id FROM jobs WHERE name=? AND end_ns IS NULL", 0, name);
    if (running > 0) {
        rc = bad(r, 409, "name", "name: a job named %s is already running (id %lld)", name,
                 (long long)running);
        goto out;
    }
    if (count_rows(j, "SELECT count(*) FROM jobs WHERE end_ns IS NULL", -1, NULL) >=
        WT_JOBS_MAX_RUNNING) {
        rc = bad(r, 409, "name", "name: %d jobs are running already; end some first",
                 WT_JOBS_MAX_RUNNING);
        goto out;
    }
    wt_hub_request_edge(j->hub); /* the counters read at the start, off this thread */
    rc = -ENOMEM;
    if (!(ts = print(tags)) || !(gs = print(gpus)) || !(xs = print(target)))
        goto out;
    rc = -EIO;
    if (sqlite3_prepare_v2(j->db,
                           "INSERT INTO jobs(name, node, tags, gpus, target, start_ns) "
                           "VALUES(?,?,?,?,?,?)",
                           -1, &s, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, j->node, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, ts, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, gs, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, xs, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 6, now);
    if (sqlite3_step(s) != SQLITE_DONE)
        goto out;
    push_fix(j, FIX_START, sqlite3_last_insert_rowid(j->db), now);
    struct job jb = {.id = sqlite3_last_insert_rowid(j->db),
                     .tags = tags,
                     .gpus = gpus,
                     .target = target,
                     .start_ns = now};
    snprintf(jb.name, sizeof jb.name, "%s", name);
    snprintf(jb.node, sizeof jb.node, "%s", j->node);
    wt_info("jobs", "job %lld started name=%s", (long long)jb.id, name);
    j->fam_at = 0;
    rc = job_json(j, &jb, now, false, &r->body);
    r->status = 201;
    gpu_names(gpus, names, cap, nnames);
out:
    if (s)
        sqlite3_finalize(s);
    cJSON_free(ts);
    cJSON_free(gs);
    cJSON_free(xs);
    cJSON_Delete(b);
    cJSON_Delete(tags);
    cJSON_Delete(gpus);
    cJSON_Delete(target);
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

static int summable_counters(struct wt_jobs *j, struct rep *r, const struct job *jb,
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
            return bad(r, 400, tk[k],
                       "%s and %s: give one of them (%s: the count of the phase this mark "
                       "closes; %s: the running total since the job's start)",
                       summable[k], tk[k], summable[k], tk[k]);
        if (t && begin)
            return bad(r, 400, tk[k], "%s: a begin mark closes no phase, so it has no count",
                       tk[k]);
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
                return bad(r, 400, tk[k],
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

static int api_mark(struct wt_jobs *j, struct rep *r, const struct job *jb, const char *body,
                    size_t len, int64_t now)
{
    cJSON *b = NULL, *counters = cJSON_CreateObject(), *warnings = NULL;
    const cJSON *f;
    const char *kind = "epoch";
    bool has_index = false, begin = false;
    int64_t index = 0;
    char *cs = NULL;
    sqlite3_stmt *s = NULL;
    int rc = -ENOMEM, n = 0;
    if (!counters)
        goto out;
    if ((rc = parse_body(r, body, len, false, &b)) != 0 || r->status)
        goto out;
    cJSON_ArrayForEach(f, b)
    {
        const char *k = f->string;
        if (strcmp(k, "kind") == 0) {
            if (!cJSON_IsString(f) || !wt_jobs_key_ok(f->valuestring) ||
                strlen(f->valuestring) > KIND_MAX) {
                rc = bad(r, 400, "kind",
                         "kind: expected a lower_snake_case word of 1..%d "
                         "characters (epoch, step, eval, ...)",
                         KIND_MAX);
                goto out;
            }
            kind = f->valuestring;
        } else if (strcmp(k, "index") == 0) {
            if (cJSON_IsNull(f))
                continue;
            if (!cJSON_IsNumber(f) || f->valuedouble < 0 || f->valuedouble > 9007199254740992.0 ||
                f->valuedouble != floor(f->valuedouble)) {
                rc = bad(r, 400, "index", "index: expected an integer >= 0");
                goto out;
            }
            has_index = true;
            index = (int64_t)f->valuedouble;
        } else if (strcmp(k, "begin") == 0) {
            if (!cJSON_IsBool(f)) {
                rc = bad(r, 400, "begin", "begin: expected true or false");
                goto out;
            }
            begin = cJSON_IsTrue(f);
        } else {
            if (!wt_jobs_key_ok(k)) {
                rc = bad(r, 400, k,
                         "%.64s: a counter name is lower_snake_case (tokens, samples, "
                         "requests, accuracy, latency_p99_s, ...)",
                         k);
                goto out;
            }
            if (!cJSON_IsNumber(f) || !isfinite(f->valuedouble) || f->valuedouble < 0) {
                rc = bad(r, 400, k, "%s: expected a number >= 0", k);
                goto out;
            }
            if (++n > WT_JOBS_MAX_COUNTERS) {
                rc = bad(r, 400, k, "%s: at most %d counters per mark", k, WT_JOBS_MAX_COUNTERS);
                goto out;
            }
            if (cJSON_GetObjectItemCaseSensitive(counters, k)) {
                rc = bad(r, 400, k, "%s: given twice", k);
                goto out;
            }
            cJSON_AddNumberToObject(counters, k, f->valuedouble);
        }
    }
    if (jb->end_ns) {
        rc = bad(r, 409, "job", "job %lld (%s) has ended; start a new one", (long long)jb->id,
                 jb->name);
        goto out;
    }
    if (count_rows(j, "SELECT count(*) FROM marks WHERE job=?", jb->id, NULL) >=
        WT_JOBS_MAX_MARKS) {
        rc = bad(r, 409, "job", "job %lld has %d marks already", (long long)jb->id,
                 WT_JOBS_MAX_MARKS);
        goto out;
    }
    if (!(warnings = cJSON_CreateArray())) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = summable_counters(j, r, jb, kind, begin, counters, warnings)) != 0 || r->status)
        goto out;
    wt_hub_request_edge(j->hub); /* the counters read at the mark */
    rc = -ENOMEM;
    if (!(cs = print(counters)))
        goto out;
    rc = -EIO;
    if (sqlite3_prepare_v2(j->db,
                           "INSERT INTO marks(job, t_ns, kind, idx, begin, counters) "
                           "VALUES(?,?,?,?,?,?)",
                           -1, &s, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(s, 1, jb->id);
    sqlite3_bind_int64(s, 2, now);
    sqlite3_bind_text(s, 3, kind, -1, SQLITE_STATIC);
    if (has_index)
        sqlite3_bind_int64(s, 4, index);
    else
        sqlite3_bind_null(s, 4);
    sqlite3_bind_int(s, 5, begin);
    sqlite3_bind_text(s, 6, cs, -1, SQLITE_STATIC);
    if (sqlite3_step(s) != SQLITE_DONE)
        goto out;
    push_fix(j, FIX_MARK, sqlite3_last_insert_rowid(j->db), now);
    rc = -ENOMEM;
    r->status = 201;
    r->body = cJSON_CreateObject();
    if (!r->body)
        goto out;
    cJSON_AddNumberToObject(r->body, "job", (double)jb->id);
    cJSON_AddStringToObject(r->body, "kind", kind);
    if (has_index)
        cJSON_AddNumberToObject(r->body, "index", (double)index);
    if (begin)
        cJSON_AddTrueToObject(r->body, "begin");
    add_time(r->body, "time", now);
    cJSON_AddItemToObject(r->body, "counters", counters);
    counters = NULL;
    if (cJSON_GetArraySize(warnings) > 0) {
        cJSON_AddItemToObject(r->body, "warnings", warnings);
        warnings = NULL;
    }
    rc = 0;
out:
    if (s)
        sqlite3_finalize(s);
    cJSON_free(cs);
    cJSON_Delete(b);
    cJSON_Delete(counters);
    cJSON_Delete(warnings);
    return rc;
}

static int api_end(struct wt_jobs *j, struct rep *r, struct job *jb, const char *body, size_t len,
                   int64_t now)
{
    cJSON *b = NULL;
    sqlite3_stmt *s = NULL;
    int rc;
    if ((rc = parse_body(r, body, len, true, &b)) != 0 || r->status)
        goto out;
    if (b->child) {
        rc = bad(r, 400, b->child->string, "%.64s: unknown field (end takes no fields)",
                 b->child->string);
        goto out;
    }
    if (jb->end_ns) {
        rc = bad(r, 409, "job", "job %lld (%s) has ended already", (long long)jb->id, jb->name);
        goto out;
    }
    wt_hub_request_edge(j->hub); /* the counters read at the end */
    rc = -EIO;
    if (sqlite3_prepare_v2(j->db, "UPDATE jobs SET end_ns=? WHERE id=? AND end_ns IS NULL", -1, &s,
                           NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(s, 1, now);
    sqlite3_bind_int64(s, 2, jb->id);
    if (sqlite3_step(s) != SQLITE_DONE)
        goto out;
    jb->end_ns = now;
    push_fix(j, FIX_END, jb->id, now);
    j->fam_at = 0;
    wt_info("jobs", "job %lld ended name=%s", (long long)jb->id, jb->name);
    rc = job_json(j, jb, now, true, &r->body);
    r->status = 200;
out:
    if (s)
        sqlite3_finalize(s);
    cJSON_Delete(b);
    return rc;
}

/* Sets the GPUs of a running job started without any (wattage exec found them from NVML's
 * process list). Refused once the job has GPUs: its figures must not change meaning twice. */
static int api_gpus(struct wt_jobs *j, struct rep *r, struct job *jb, const char *body, size_t len,
                    int64_t now)
{
    cJSON *b = NULL, *gpus = cJSON_CreateArray();
    char *gs = NULL;
    sqlite3_stmt *s = NULL;
    const cJSON *f;
    int rc = -ENOMEM;
    if (!gpus)
        goto out;
    if ((rc = parse_body(r, body, len, false, &b)) != 0 || r->status)
        goto out;
    cJSON_ArrayForEach(f, b)
    {
        if (strcmp(f->string, "gpus") != 0) {
            rc = bad(r, 400, f->string, "%.64s: unknown field (expected gpus)", f->string);
            goto out;
        }
    }
    f = cJSON_GetObjectItemCaseSensitive(b, "gpus");
    if (!f || !cJSON_IsArray(f) || cJSON_GetArraySize(f) == 0) {
        rc = bad(r, 400, "gpus", "gpus: expected a non-empty array of GPU indices or UUIDs");
        goto out;
    }
    if ((rc = check_gpus(j, r, f, gpus)) != 0 || r->status)
        goto out;
    if (jb->end_ns) {
        rc = bad(r, 409, "job", "job %lld (%s) has ended", (long long)jb->id, jb->name);
        goto out;
    }
    if (cJSON_GetArraySize(jb->gpus)) {
        rc = bad(r, 409, "gpus", "gpus: job %lld has its GPUs already", (long long)jb->id);
        goto out;
    }
    rc = -ENOMEM;
    if (!(gs = print(gpus)))
        goto out;
    rc = -EIO;
    if (sqlite3_prepare_v2(j->db,
                           "UPDATE jobs SET gpus=? WHERE id=? AND end_ns IS NULL AND gpus='[]'", -1,
                           &s, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(s, 1, gs, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, jb->id);
    if (sqlite3_step(s) != SQLITE_DONE)
        goto out;
    cJSON_Delete(jb->gpus);
    jb->gpus = gpus;
    gpus = NULL;
    j->fam_at = 0;
    wt_info("jobs", "job %lld gpus=%s", (long long)jb->id, gs);
    rc = job_json(j, jb, now, false, &r->body);
    r->status = 200;
out:
    if (s)
        sqlite3_finalize(s);
    cJSON_free(gs);
    cJSON_Delete(b);
    cJSON_Delete(gpus);
    return rc;
}

static int api_list(struct wt_jobs *j, struct rep *r, int limit, int64_t now)
{
    sqlite3_stmt *s = NULL;
    int rc = 0, step;
    if (limit <= 0)
        limit = DEFAULT_LIST;
    if (limit > MAX_LIST)
        limit = MAX_LIST;
    r->body = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(r->body, "jobs");
    if (!arr)
        return -ENOMEM;
    if (sqlite3_prepare_v2(j->db,
                           "SELECT * FROM (SELECT " JOB_COLS " FROM jobs ORDER BY id DESC LIMIT ?)"
                           " ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int(s, 1, limit);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        struct job jb;
        cJSON *o = NULL;
        if ((rc = load_row(s, &jb)) != 0)
            break;
        rc = job_json(j, &jb, now, false, &o);
        job_free(&jb);
        if (rc)
            break;
        cJSON_AddItemToArray(arr, o);
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = -EIO;
    sqlite3_finalize(s);
    r->status = 200;
    return rc;
}

/* A 404 naming ref, its unprintable characters and quotes replaced. */
static int no_job(struct rep *r, const char *ref)
{
    char clean[72];
    size_t k;
    for (k = 0; ref[k] && k < sizeof clean - 1; k++)
        clean[k] = isprint((unsigned char)ref[k]) && ref[k] != '"' ? ref[k] : '?';
    clean[k] = '\0';
    return bad(r, 404, "job", "job: no job %s", clean);
}

static int act(struct wt_jobs *j, struct rep *r, const char *ref, enum wt_jobs_verb verb,
               const char *body, size_t len, int64_t now)
{
    struct job jb;
    int rc = find_job(j, ref, &jb);
    if (rc == -ENOENT)
        return no_job(r, ref);
    if (rc)
        return rc;
    switch (verb) {
    case WT_JOBS_SHOW:
        rc = job_json(j, &jb, now, true, &r->body);
        r->status = 200;
        break;
    case WT_JOBS_MARK:
        rc = api_mark(j, r, &jb, body, len, now);
        break;
    case WT_JOBS_GPUS:
        rc = api_gpus(j, r, &jb, body, len, now);
        break;
    case WT_JOBS_END:
        rc = api_end(j, r, &jb, body, len, now);
        break;
    }
    job_free(&jb);
    return rc;
}

/* Prints the reply into *json (cJSON's allocation) and frees its tree. */
static int finish(struct rep *r, int rc, unsigned *status, char **json)
{
    if (rc == 0 && !r->body)
        rc = -ENOMEM;
    if (rc == 0) {
        *json = cJSON_PrintUnformatted(r->body);
        if (!*json)
            rc = -ENOMEM;
    }
    cJSON_Delete(r->body);
    if (rc == 0)
        *status = r->status ? r->status : 200;
    return rc;
}

int wt_jobs_list_json(struct wt_jobs *j, int limit, int64_t now_ns, unsigned *status, char **json)
{
    struct rep r = {0};
    *json = NULL;
    *status = 500;
    pthread_mutex_lock(&j->mu);
    fix_edges(j, now_ns);
    int rc = api_list(j, &r, limit, now_ns);
    pthread_mutex_unlock(&j->mu);
    return finish(&r, rc, status, json);
}

/* Wakes the exporter, which sleeps without a timer while there is no job to show (j->mu held). */
static void poke_exporter(struct wt_jobs *j)
{
    j->exp_poke = true;
    if (j->exp_started)
        pthread_cond_broadcast(&j->exp_cv);
}

int wt_jobs_start_json(struct wt_jobs *j, const char *body, size_t len, int64_t now_ns,
                       unsigned *status, char **json)
{
    struct rep r = {0};
    *json = NULL;
    *status = 500;
    char(*names)[WT_JOBS_GPU_LEN] = calloc(WT_JOBS_START_GPUS, WT_JOBS_GPU_LEN);
    size_t n = 0;
    if (!names)
        return -ENOMEM;
    pthread_mutex_lock(&j->mu);
    fix_edges(j, now_ns);
    int rc = api_start(j, &r, body, len, now_ns, names, WT_JOBS_START_GPUS, &n);
    poke_exporter(j);
    wt_jobs_start_fn fn = j->start_fn;
    void *ctx = j->start_ctx;
    pthread_mutex_unlock(&j->mu);
    /* Outside the lock: the hook may take its own (the capper's) and call NVML. */
    if (rc == 0 && r.status == 201 && fn)
        fn(ctx, (const char(*)[WT_JOBS_GPU_LEN])names, n);
    free(names);
    return finish(&r, rc, status, json);
}

void wt_jobs_set_start_hook(struct wt_jobs *j, wt_jobs_start_fn fn, void *ctx)
{
    pthread_mutex_lock(&j->mu);
    j->start_fn = fn;
    j->start_ctx = ctx;
    pthread_mutex_unlock(&j->mu);
}

int wt_jobs_act_json(struct wt_jobs *j, const char *ref, enum wt_jobs_verb verb, const char *body,
                     size_t len, int64_t now_ns, unsigned *status, char **json)
{
    struct rep r = {0};
    *json = NULL;
    *status = 500;
    pthread_mutex_lock(&j->mu);
    fix_edges(j, now_ns);
    int rc = act(j, &r, ref, verb, body, len, now_ns);
    if (verb != WT_JOBS_SHOW)
        poke_exporter(j);
    wt_jobs_start_fn fn = j->start_fn;
    void *ctx = j->start_ctx;
    pthread_mutex_unlock(&j->mu);
    /* A running job given its GPUs starts on them now: the start hook hears of them too (the
     * body was checked by api_gpus). */
    if (rc == 0 && verb == WT_JOBS_GPUS && r.status == 200 && fn && body) {
        cJSON *b = cJSON_ParseWithLength(body, len);
        char(*names)[WT_JOBS_GPU_LEN] = calloc(WT_JOBS_START_GPUS, WT_JOBS_GPU_LEN);
        size_t n = 0;
        if (b && names) {
            gpu_names(cJSON_GetObjectItemCaseSensitive(b, "gpus"), names, WT_JOBS_START_GPUS, &n);
            if (n)
                fn(ctx, (const char(*)[WT_JOBS_GPU_LEN])names, n);
        }
        free(names);
        cJSON_Delete(b);
    }
    return finish(&r, rc, status, json);
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
        if ((rc = load_row(s, &jb)) != 0)
            break;
        rc = window_energy(j, &jb, jb.start_ns, now, &sp, NULL);
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
            rc = carbon_window(j, &jb, jb.start_ns, now, pue, measured, &cr);
            if (rc == 0 && cr.known) {
                memcpy(co2[nco2].labels, smp[n - 1].labels, sizeof co2[0].labels);
                co2[nco2++].value = cr.g;
            }
        }
        job_free(&jb);
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
    rc = find_job(j, ref, &jb);
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
            rc = window_energy(j, &jb, a, b, &sp, NULL);
            w[i] = sp.gpu_j / ((double)(b - a) / 1e9);
        }
        if (rc)
            wt_err_set(err, "cannot read the job's energy from the store");
    }
    int64_t dur = end - jb.start_ns;
    job_free(&jb);
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
        if ((rc = load_row(s, &jb)) != 0)
            break;
        snprintf(id, sizeof id, "%lld", (long long)jb.id);
        gpus_label(&jb, gpus, sizeof gpus);
        if (wt_labels(lb, sizeof lb, "id", id, "job", jb.name, NULL) != 0 ||
            wt_labels(li, sizeof li, "id", id, "job", jb.name, "gpus", gpus, NULL) != 0) {
            job_free(&jb);
            continue; /* a name too long for the labels: the API still has it */
        }
        owner_labels(&jb, li, sizeof li);
        rc = window_energy(j, &jb, jb.start_ns, jb.end_ns ? jb.end_ns : now, &sp, NULL);
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
        job_free(&jb);
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
        fix_edges(j, wt_now_real_ns()); /* the edges' times, also when no request comes */
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
