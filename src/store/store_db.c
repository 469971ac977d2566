/* SPDX-License-Identifier: MIT */
/*
 * The store connection's shared helpers, below every other part of the store: errors, the
 * maintenance statements, what maintenance knows of each series (struct mser), and the interned
 * series (node + metric + labels -> id).
 */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/family.h"
#include "core/health.h"
#include "core/hub.h"
#include "core/log.h"
#include "store/chunk.h"
#include "store/segment.h"
#include "store/ticks.h"

static const char *const mq_sql[MQ_COUNT] = {
    [MQ_BEGIN] = "BEGIN IMMEDIATE",
    [MQ_COMMIT] = "COMMIT",
    [MQ_ROLLBACK] = "ROLLBACK",
    [MQ_VERSION] = "PRAGMA data_version",
    [MQ_SERIES] = "SELECT id, node, kind, rolled_to FROM series ORDER BY id",
    [MQ_MIN_T] = "SELECT min(t) FROM readings WHERE series=?1",
    [MQ_ROLL_MIN_T] = "SELECT min(t) FROM rollups WHERE series=?1",
    [MQ_INS_ROLLUP] = "INSERT OR REPLACE INTO rollups(series, t, n, min, max, mean, last, "
                      "energy, covered) VALUES(?,?,?,?,?,?,?,?,?)",
    [MQ_SET_ROLLED] = "UPDATE series SET rolled_to=? WHERE id=?",
    [MQ_DEL_READINGS] = "DELETE FROM readings WHERE series=? AND t<?",
    [MQ_DEL_ROLLUPS] = "DELETE FROM rollups WHERE series=? AND t<?",
    [MQ_DEL_CHUNKS] = "DELETE FROM chunks WHERE series=?1 AND t0<?2 AND t1<?2",
    [MQ_COMPACT_RAW] = "SELECT t, v FROM readings WHERE series=?1 AND t<?2 ORDER BY t LIMIT ?3",
    [MQ_SPAN_CHUNKS] = "SELECT data FROM chunks WHERE series=?1 AND t0>=?2 AND t0<?3 ORDER BY t0",
    [MQ_DEL_SPAN] = "DELETE FROM chunks WHERE series=?1 AND t0>=?2 AND t0<?3",
    [MQ_INS_CHUNK] = "INSERT INTO chunks(series, t0, t1, n, data, v0, v1, e, cov) "
                     "VALUES(?,?,?,?,?,?,?,?,?)",
    [MQ_DEL_COMPACTED] = "DELETE FROM readings WHERE series=?1 AND t<=?2",
    [MQ_UNSUMMED] =
        "SELECT series, t0, data FROM chunks INDEXED BY chunks_unsummed WHERE e IS NULL "
        "ORDER BY series, t0 LIMIT ?1",
    [MQ_SET_SUMMARY] = "UPDATE chunks SET v0=?3, v1=?4, e=?5, cov=?6 WHERE series=?1 AND t0=?2",
    /* closed rows written before any open one: of a time in two rows the first written stays */
    [MQ_TICKS_CLOSED] = "SELECT seq, data FROM ticks WHERE t_max<?1 AND seq<(SELECT "
                        "coalesce(min(seq), 9223372036854775807) FROM ticks WHERE t_max>=?1) "
                        "ORDER BY seq LIMIT ?2",
    [MQ_DEL_TICKS] = "DELETE FROM ticks WHERE t_max<?1 AND seq<=?2",
};

int wt_store_db_error(struct wt_store *s, struct wt_err *err, const char *what)
{
    wt_err_set(err, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
    return -EIO;
}

int wt_store_exec(struct wt_store *s, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        wt_error(MOD, "%s: %s (%s)", s->path, msg ? msg : "error", sql);
        sqlite3_free(msg);
        return -EIO;
    }
    return 0;
}

/*
 * A database error: logged at once, or, while the writer thread runs, kept for the writer to log
 * (one line when writes start failing, a count while they go on, one at recovery): a full disk
 * fails every flush, and two lines a second say nothing the first did not.
 */
void wt_store_db_fail(struct wt_store *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->last_err, sizeof s->last_err, fmt, ap);
    va_end(ap);
    if (!s->quiet)
        wt_error(MOD, "%s: %s", s->path, s->last_err);
}

/* A maintenance statement, prepared on first use; NULL (logged) when it cannot be. */
sqlite3_stmt *wt_store_mq(struct wt_store *s, int k)
{
    if (!s->mq[k] && sqlite3_prepare_v3(s->db, mq_sql[k], -1, SQLITE_PREPARE_PERSISTENT, &s->mq[k],
                                        NULL) != SQLITE_OK) {
        wt_error(MOD, "%s: cannot prepare %s: %s", s->path, mq_sql[k], sqlite3_errmsg(s->db));
        s->mq[k] = NULL;
    }
    return s->mq[k];
}

/* Runs a cached statement that returns no rows (BEGIN IMMEDIATE, COMMIT, ROLLBACK). */
int wt_store_mq_exec(struct wt_store *s, int k)
{
    sqlite3_stmt *st = wt_store_mq(s, k);
    if (!st)
        return -EIO;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        wt_store_db_fail(s, "%s: %s", mq_sql[k], sqlite3_errmsg(s->db));
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

/*
 * Rolls back the open transaction, if there is one: SQLite has already rolled back after some
 * errors (SQLITE_FULL at COMMIT among them), and a ROLLBACK then only adds "cannot rollback - no
 * transaction is active" to the log.
 */
void wt_store_rollback(struct wt_store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        (void)wt_store_mq_exec(s, MQ_ROLLBACK);
}

/* Index of the first series with an id >= id (ms_len when none). */
size_t wt_store_ms_lower(const struct wt_store *s, int64_t id)
{
    size_t lo = 0, hi = s->ms_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->ms[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A series this connection interned: its first visit reads its bounds from the store. */
static void ms_note(struct wt_store *s, int64_t id, const char *node, enum wt_series_kind kind)
{
    if (!s->ms_loaded)
        return; /* the next load reads it */
    size_t i = wt_store_ms_lower(s, id);
    if (i == s->ms_len || s->ms[i].id != id) {
        if (s->ms_len == s->ms_cap) {
            size_t nc = s->ms_cap ? s->ms_cap * 2 : 256;
            struct mser *p = realloc(s->ms, nc * sizeof *p);
            if (!p) {
                s->ms_loaded = false;
                return;
            }
            s->ms = p;
            s->ms_cap = nc;
        }
        memmove(&s->ms[i + 1], &s->ms[i], (s->ms_len - i) * sizeof *s->ms);
        s->ms_len++;
        memset(&s->ms[i], 0, sizeof s->ms[i]);
        s->ms[i].id = id;
    }
    s->ms[i].kind = kind;
    s->ms[i].known = false;
    s->sum_state = 0; /* a series whose kind changed has its summaries cleared (summary_sql) */
    snprintf(s->ms[i].node, sizeof s->ms[i].node, "%s", node);
}

/* Widens the bounds of series id by a reading at t written through this connection (a row of
 * readings, or in a ticks row: raw_lo bounds the rows only). */
void wt_store_ms_widen(struct wt_store *s, int64_t id, int64_t t, bool row)
{
    size_t at = SIZE_MAX;
    wt_store_ms_widen_at(s, &at, id, t, row);
}

void wt_store_ms_widen_at(struct wt_store *s, size_t *at, int64_t id, int64_t t, bool row)
{
    if (!s->ms_loaded)
        return;
    size_t i = *at < s->ms_len && s->ms[*at].id == id ? *at : wt_store_ms_lower(s, id);
    *at = i;
    if (i == s->ms_len || s->ms[i].id != id || !s->ms[i].known)
        return;
    if (t < s->ms[i].lo)
        s->ms[i].lo = t;
    if (t > s->ms[i].hi)
        s->ms[i].hi = t;
    if (row && t < s->ms[i].raw_lo)
        s->ms[i].raw_lo = t;
}

/* Reads every series from the store, bounds unknown. */
static int ms_load(struct wt_store *s)
{
    sqlite3_stmt *st = wt_store_mq(s, MQ_SERIES);
    int rc;
    s->ms_loaded = false;
    s->sum_state = 0; /* another connection may have made summaries stale (a run in the past) */
    s->ms_len = 0;
    if (!st)
        return -EIO;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (s->ms_len == s->ms_cap) {
            size_t nc = s->ms_cap ? s->ms_cap * 2 : 256;
            struct mser *p = realloc(s->ms, nc * sizeof *p);
            if (!p) {
                sqlite3_reset(st);
                return -ENOMEM;
            }
            s->ms = p;
            s->ms_cap = nc;
        }
        struct mser *m = &s->ms[s->ms_len++];
        memset(m, 0, sizeof *m);
        m->id = sqlite3_column_int64(st, 0);
        snprintf(m->node, sizeof m->node, "%s", (const char *)sqlite3_column_text(st, 1));
        m->kind = (enum wt_series_kind)sqlite3_column_int(st, 2);
        m->rolled_to = sqlite3_column_int64(st, 3);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -EIO;
    s->ms_loaded = true;
    return 0;
}

/* Reloads the series when another connection committed since the last check (or never loaded). */
int wt_store_ms_check(struct wt_store *s)
{
    sqlite3_stmt *st = wt_store_mq(s, MQ_VERSION);
    int64_t v = -1;
    if (!st)
        return -EIO;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (v != s->data_version || v < 0) {
        s->data_version = v;
        s->ms_loaded = false;
    }
    return s->ms_loaded ? 0 : ms_load(s);
}

enum wt_series_kind wt_series_kind_of(const char *metric, const char *labels)
{
    size_t n = strlen(metric);
    static const char suffix[] = "_joules_total";
    char m[32];
    if (n < sizeof suffix - 1 || strcmp(metric + n - (sizeof suffix - 1), suffix) != 0)
        return WT_SK_GAUGE;
    if (strcmp(metric, wt_metrics[WT_M_GPU_ENERGY_INTEGRATED_J].name) == 0)
        return WT_SK_INTEGRATED;
    /* A job's energy is derived from the GPU series: stored for remote write, never summed. */
    if (strncmp(metric, "wattage_job_", 12) == 0)
        return WT_SK_GAUGE;
    /* A process's or owner's share of a GPU's or the CPUs' energy (collect/attrib.h,
     * procattr.h) is part of that energy: stored and exported, never summed beside it. */
    if (strncmp(metric, "wattage_process_", 16) == 0)
        return WT_SK_GAUGE;
    /* A GPU's idle energy is part of its energy (audit/dark.h): never summed beside it. */
    if (strncmp(metric, "wattage_gpu_idle_", 17) == 0)
        return WT_SK_GAUGE;
    if (wt_labels_get(labels, "method", m, sizeof m) == 0 && strcmp(m, "integrated") == 0)
        return WT_SK_INTEGRATED;
    if (strcmp(metric, wt_metrics[WT_M_GPU_ENERGY_J].name) == 0)
        return WT_SK_HWCOUNTER;
    return WT_SK_COUNTER;
}

static uint64_t hash_key(const char *node, const char *metric, const char *labels)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    const char *parts[3] = {node, metric, labels};
    for (int i = 0; i < 3; i++) {
        for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
            h = (h ^ *p) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    return h ? h : 1;
}

static struct entry *tab_find(struct wt_store *s, uint64_t h, const char *node, const char *metric,
                              const char *labels)
{
    size_t mask = s->tab_cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        struct entry *e = &s->tab[i];
        if (!e->id)
            return e;
        if (e->hash == h && strcmp(e->metric, metric) == 0 && strcmp(e->labels, labels) == 0 &&
            strcmp(e->node, node) == 0)
            return e;
    }
}

int wt_store_tab_put(struct wt_store *s, int64_t id, const char *node, const char *metric,
                     const char *labels)
{
    if ((s->tab_len + 1) * 2 > s->tab_cap) {
        size_t ncap = s->tab_cap ? s->tab_cap * 2 : 256;
        struct entry *old = s->tab;
        size_t ocap = s->tab_cap;
        s->tab = calloc(ncap, sizeof *s->tab);
        if (!s->tab) {
            s->tab = old;
            return -ENOMEM;
        }
        s->tab_cap = ncap;
        for (size_t i = 0; i < ocap; i++) {
            if (old[i].id)
                *tab_find(s, old[i].hash, old[i].node, old[i].metric, old[i].labels) = old[i];
        }
        free(old);
    }
    uint64_t h = hash_key(node, metric, labels);
    struct entry *e = tab_find(s, h, node, metric, labels);
    if (!e->id)
        s->tab_len++;
    e->hash = h;
    e->id = id;
    snprintf(e->node, sizeof e->node, "%s", node);
    snprintf(e->metric, sizeof e->metric, "%s", metric);
    snprintf(e->labels, sizeof e->labels, "%s", labels);
    return 0;
}

int wt_store_tab_load(struct wt_store *s)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    memset(s->tab, 0, s->tab_cap * sizeof *s->tab);
    s->tab_len = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT id, node, metric, labels FROM series", -1, &st, NULL))
        return -EIO;
    while (sqlite3_step(st) == SQLITE_ROW && rc == 0) {
        rc = wt_store_tab_put(
            s, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
            (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3));
    }
    sqlite3_finalize(st);
    return rc;
}

/* The id of a series, inserting it when new. Inside the caller's transaction. */
int64_t wt_store_intern(struct wt_store *s, const char *node, const char *metric,
                        const char *labels)
{
    if (s->tab_cap) {
        struct entry *e = tab_find(s, hash_key(node, metric, labels), node, metric, labels);
        if (e->id)
            return e->id;
    }
    sqlite3_stmt *st = s->ins_series;
    sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, metric, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, labels, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, wt_series_kind_of(metric, labels));
    int rc = sqlite3_step(st);
    int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (!id) {
        wt_store_db_fail(s, "cannot add series %s{%s}: %s", metric, labels, sqlite3_errmsg(s->db));
        return -EIO;
    }
    if (wt_store_tab_put(s, id, node, metric, labels) != 0)
        return -ENOMEM;
    ms_note(s, id, node, wt_series_kind_of(metric, labels));
    return id;
}

struct sqlite3 *wt_store_db(struct wt_store *s)
{
    return s->db;
}
