/* SPDX-License-Identifier: MIT */
/*
 * A job as the tables hold it: its row and marks, and the checks of names, tags and GPUs.
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

__attribute__((format(printf, 4, 5))) int wt_jobs_bad(struct rep *r, unsigned status,
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

bool wt_jobs_name_ok(const char *s)
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

/* Whether GPU selector s is the GPU (index, uuid). */
bool wt_jobs_gpu_matches(const char *s, const char *index, const char *uuid)
{
    const char *vendor, *idx;
    if (wt_gpu_vendor_index(s, &vendor, &idx))
        return strcmp(idx, index) == 0 &&
               (!vendor[0] || strcmp(vendor, wt_gpu_uuid_vendor(uuid)) == 0);
    return uuid[0] && strncmp(uuid, s, strlen(s)) == 0;
}

void wt_jobs_job_free(struct job *jb)
{
    cJSON_Delete(jb->tags);
    cJSON_Delete(jb->gpus);
    cJSON_Delete(jb->target);
    memset(jb, 0, sizeof *jb);
}

void wt_jobs_marks_free(struct mark *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cJSON_Delete(m[i].counters);
    free(m);
}

static cJSON *parse_or_empty(const unsigned char *txt, cJSON *(*make)(void))
{
    cJSON *v = txt ? cJSON_Parse((const char *)txt) : NULL;
    return v ? v : make();
}

int wt_jobs_load_row(sqlite3_stmt *s, struct job *jb)
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
        wt_jobs_job_free(jb);
        return -ENOMEM;
    }
    return 0;
}

/* Finds a job by id (all digits) or name (the latest of that name). 0, -ENOENT or -EIO. */
int wt_jobs_find_job(struct wt_jobs *j, const char *ref, struct job *jb)
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
        rc = wt_jobs_load_row(s, jb);
    else
        rc = step == SQLITE_DONE ? -ENOENT : -EIO;
    sqlite3_finalize(s);
    return rc;
}

int wt_jobs_load_marks(struct wt_jobs *j, int64_t id, struct mark **out, size_t *n)
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
        wt_jobs_marks_free(m, len);
        return rc;
    }
    *out = m;
    *n = len;
    return 0;
}

int64_t wt_jobs_count_rows(struct wt_jobs *j, const char *sql, int64_t arg, const char *text)
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
