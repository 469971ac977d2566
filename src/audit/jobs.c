/* SPDX-License-Identifier: MIT */
/*
 * Jobs, marks and their KPIs (see jobs.h): the tables, the bounded JSON parsing of the API
 * bodies, and the verbs (start, mark, end, gpus, list). The figures of a job and its phases, each
 * from the store's exact-window energy query over the job's GPUs at the time it is asked, are in
 * jobs_kpi.c and jobs_query.c; the rows in jobs_model.c; jobs as series in jobs_export.c.
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

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
    " node TEXT NOT NULL, tags TEXT NOT NULL, gpus TEXT NOT NULL, target TEXT NOT NULL,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER);"
    "CREATE INDEX IF NOT EXISTS jobs_name ON jobs(name, id);"
    "CREATE TABLE IF NOT EXISTS marks(id INTEGER PRIMARY KEY, job INTEGER NOT NULL,"
    " t_ns INTEGER NOT NULL, kind TEXT NOT NULL, idx INTEGER, begin INTEGER NOT NULL,"
    " counters TEXT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS marks_job ON marks(job, id);";

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
        return wt_jobs_bad(r, 400, "body", "body: expected a JSON object");
    }
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (!v) {
        size_t at = end && end >= body ? (size_t)(end - body) : 0;
        return wt_jobs_bad(r, 400, "body", "body: malformed JSON near byte %zu", at);
    }
    while (end && (size_t)(end - body) < len && isspace((unsigned char)*end))
        end++;
    if (end && (size_t)(end - body) < len && *end) {
        cJSON_Delete(v);
        return wt_jobs_bad(r, 400, "body", "body: trailing characters after the JSON value");
    }
    if (!cJSON_IsObject(v)) {
        cJSON_Delete(v);
        return wt_jobs_bad(r, 400, "body", "body: expected a JSON object");
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
        return wt_jobs_bad(r, 400, "gpus", "gpus: expected an array of GPU indices or UUIDs");
    if (cJSON_GetArraySize(f) > WT_JOBS_MAX_GPUS)
        return wt_jobs_bad(r, 400, "gpus", "gpus: at most %d", WT_JOBS_MAX_GPUS);
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
                 (wt_gpu_vendor_index(g->valuestring, &vd, &ix) ||
                  ((strncmp(g->valuestring, "GPU-", 4) == 0 ||
                    strncmp(g->valuestring, "AMD-", 4) == 0) &&
                   strlen(g->valuestring) > 4)))
            snprintf(v, sizeof v, "%s", g->valuestring);
        else
            return wt_jobs_bad(
                r, 400, field,
                "%s: expected a GPU index (0, 1, ...), a vendor's index (nvidia:0, amd:0) "
                "or a UUID (GPU-…, AMD-…)",
                field);
        if (nk) {
            size_t hits = 0, first = 0;
            unsigned vendors = 0; /* 1 NVIDIA, 2 AMD: of the GPUs it names */
            for (size_t k = 0; k < nk; k++)
                if (wt_jobs_gpu_matches(v, known[k].index, known[k].uuid)) {
                    vendors |= strcmp(wt_gpu_uuid_vendor(known[k].uuid), "amd") == 0 ? 2u : 1u;
                    if (!hits++)
                        first = k;
                }
            const char *vendor, *idx;
            bool is_index = wt_gpu_vendor_index(v, &vendor, &idx);
            if (!hits)
                return wt_jobs_bad(r, 400, field, "%s: no GPU %s on this node", field, v);
            if (is_index && vendors == 3)
                return wt_jobs_bad(r, 400, field,
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
            return wt_jobs_bad(r, 400, f->string,
                               "%.64s: unknown field (expected name, tags, gpus, target)",
                               f->string);
    }
    f = cJSON_GetObjectItemCaseSensitive(b, "name");
    if (!f)
        return wt_jobs_bad(r, 400, "name", "name: required");
    if (!cJSON_IsString(f) || !wt_jobs_name_ok(f->valuestring))
        return wt_jobs_bad(r, 400, "name",
                           "name: expected 1..%d characters of A-Z a-z 0-9 . _ - (not all digits)",
                           WT_JOBS_NAME_MAX);
    *name = f->valuestring;

    f = cJSON_GetObjectItemCaseSensitive(b, "tags");
    if (f && !cJSON_IsNull(f)) {
        if (!cJSON_IsObject(f))
            return wt_jobs_bad(r, 400, "tags", "tags: expected an object of key: \"value\"");
        if (cJSON_GetArraySize(f) > WT_JOBS_MAX_TAGS)
            return wt_jobs_bad(r, 400, "tags", "tags: at most %d", WT_JOBS_MAX_TAGS);
        const cJSON *t;
        cJSON_ArrayForEach(t, f)
        {
            snprintf(field, sizeof field, "tags.%.64s", t->string);
            if (strlen(t->string) == 0 || strlen(t->string) > 63 ||
                strspn(t->string, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                  "_.-") != strlen(t->string))
                return wt_jobs_bad(r, 400, field,
                                   "%s: a tag key is 1..63 characters of A-Z a-z 0-9 _ . -", field);
            char num[64];
            const char *v = cJSON_GetStringValue(t);
            if (!v && cJSON_IsNumber(t)) {
                snprintf(num, sizeof num, "%.17g", t->valuedouble);
                v = num;
            }
            if (!v || strlen(v) > TAG_VALUE_MAX)
                return wt_jobs_bad(r, 400, field, "%s: expected a string of at most %d bytes",
                                   field, TAG_VALUE_MAX);
            for (const char *c = v; *c; c++) {
                if ((unsigned char)*c < 0x20)
                    return wt_jobs_bad(r, 400, field, "%s: control characters are not allowed",
                                       field);
            }
            if (cJSON_GetObjectItemCaseSensitive(tags, t->string))
                return wt_jobs_bad(r, 400, field, "%s: given twice", field);
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
            return wt_jobs_bad(r, 400, "target",
                               "target: expected one {\"metric\": value}, e.g. "
                               "{\"accuracy\": 0.9}");
        const cJSON *t = f->child;
        snprintf(field, sizeof field, "target.%.64s", t->string);
        if (!wt_jobs_key_ok(t->string))
            return wt_jobs_bad(r, 400, field, "%s: a metric name is lower_snake_case", field);
        if (!cJSON_IsNumber(t) || !isfinite(t->valuedouble))
            return wt_jobs_bad(r, 400, field, "%s: expected a number", field);
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
void wt_jobs_fix_edges(struct wt_jobs *j, int64_t now)
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
    int64_t running =
        wt_jobs_count_rows(j, "SELECT id FROM jobs WHERE name=? AND end_ns IS NULL", 0, name);
    if (running > 0) {
        rc = wt_jobs_bad(r, 409, "name", "name: a job named %s is already running (id %lld)", name,
                         (long long)running);
        goto out;
    }
    if (wt_jobs_count_rows(j, "SELECT count(*) FROM jobs WHERE end_ns IS NULL", -1, NULL) >=
        WT_JOBS_MAX_RUNNING) {
        rc = wt_jobs_bad(r, 409, "name", "name: %d jobs are running already; end some first",
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
    rc = wt_jobs_job_json(j, &jb, now, false, &r->body);
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
                rc = wt_jobs_bad(r, 400, "kind",
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
                rc = wt_jobs_bad(r, 400, "index", "index: expected an integer >= 0");
                goto out;
            }
            has_index = true;
            index = (int64_t)f->valuedouble;
        } else if (strcmp(k, "begin") == 0) {
            if (!cJSON_IsBool(f)) {
                rc = wt_jobs_bad(r, 400, "begin", "begin: expected true or false");
                goto out;
            }
            begin = cJSON_IsTrue(f);
        } else {
            if (!wt_jobs_key_ok(k)) {
                rc = wt_jobs_bad(r, 400, k,
                                 "%.64s: a counter name is lower_snake_case (tokens, samples, "
                                 "requests, accuracy, latency_p99_s, ...)",
                                 k);
                goto out;
            }
            if (!cJSON_IsNumber(f) || !isfinite(f->valuedouble) || f->valuedouble < 0) {
                rc = wt_jobs_bad(r, 400, k, "%s: expected a number >= 0", k);
                goto out;
            }
            if (++n > WT_JOBS_MAX_COUNTERS) {
                rc = wt_jobs_bad(r, 400, k, "%s: at most %d counters per mark", k,
                                 WT_JOBS_MAX_COUNTERS);
                goto out;
            }
            if (cJSON_GetObjectItemCaseSensitive(counters, k)) {
                rc = wt_jobs_bad(r, 400, k, "%s: given twice", k);
                goto out;
            }
            cJSON_AddNumberToObject(counters, k, f->valuedouble);
        }
    }
    if (jb->end_ns) {
        rc = wt_jobs_bad(r, 409, "job", "job %lld (%s) has ended; start a new one",
                         (long long)jb->id, jb->name);
        goto out;
    }
    if (wt_jobs_count_rows(j, "SELECT count(*) FROM marks WHERE job=?", jb->id, NULL) >=
        WT_JOBS_MAX_MARKS) {
        rc = wt_jobs_bad(r, 409, "job", "job %lld has %d marks already", (long long)jb->id,
                         WT_JOBS_MAX_MARKS);
        goto out;
    }
    if (!(warnings = cJSON_CreateArray())) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = wt_jobs_summable_counters(j, r, jb, kind, begin, counters, warnings)) != 0 ||
        r->status)
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
    wt_jobs_add_time(r->body, "time", now);
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
        rc = wt_jobs_bad(r, 400, b->child->string, "%.64s: unknown field (end takes no fields)",
                         b->child->string);
        goto out;
    }
    if (jb->end_ns) {
        rc = wt_jobs_bad(r, 409, "job", "job %lld (%s) has ended already", (long long)jb->id,
                         jb->name);
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
    rc = wt_jobs_job_json(j, jb, now, true, &r->body);
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
            rc = wt_jobs_bad(r, 400, f->string, "%.64s: unknown field (expected gpus)", f->string);
            goto out;
        }
    }
    f = cJSON_GetObjectItemCaseSensitive(b, "gpus");
    if (!f || !cJSON_IsArray(f) || cJSON_GetArraySize(f) == 0) {
        rc =
            wt_jobs_bad(r, 400, "gpus", "gpus: expected a non-empty array of GPU indices or UUIDs");
        goto out;
    }
    if ((rc = check_gpus(j, r, f, gpus)) != 0 || r->status)
        goto out;
    if (jb->end_ns) {
        rc = wt_jobs_bad(r, 409, "job", "job %lld (%s) has ended", (long long)jb->id, jb->name);
        goto out;
    }
    if (cJSON_GetArraySize(jb->gpus)) {
        rc = wt_jobs_bad(r, 409, "gpus", "gpus: job %lld has its GPUs already", (long long)jb->id);
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
    rc = wt_jobs_job_json(j, jb, now, false, &r->body);
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
        if ((rc = wt_jobs_load_row(s, &jb)) != 0)
            break;
        rc = wt_jobs_job_json(j, &jb, now, false, &o);
        wt_jobs_job_free(&jb);
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
    return wt_jobs_bad(r, 404, "job", "job: no job %s", clean);
}

static int act(struct wt_jobs *j, struct rep *r, const char *ref, enum wt_jobs_verb verb,
               const char *body, size_t len, int64_t now)
{
    struct job jb;
    int rc = wt_jobs_find_job(j, ref, &jb);
    if (rc == -ENOENT)
        return no_job(r, ref);
    if (rc)
        return rc;
    switch (verb) {
    case WT_JOBS_SHOW:
        rc = wt_jobs_job_json(j, &jb, now, true, &r->body);
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
    wt_jobs_job_free(&jb);
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
    wt_jobs_fix_edges(j, now_ns);
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
    wt_jobs_fix_edges(j, now_ns);
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
    wt_jobs_fix_edges(j, now_ns);
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
