/* SPDX-License-Identifier: MIT */
/*
 * The SQLite store: schema, series interning, the batched writer thread behind the hub sink,
 * and maintenance (per-minute rollups, pruning in small steps). Queries live in query.c.
 *
 * Cost: the writer thread ("wt-store") prepares each statement once. Maintenance keeps what it
 * needs to know of every series in memory (struct mser), so a pass only visits series with a
 * complete minute to roll up or rows past their retention; with 1-s readings that is each series
 * about once a minute, not every 10 s.
 *
 * One connection per wt_store. While the writer thread runs it alone touches the connection;
 * readers (`wattage energy`) open their own connection: WAL lets them read while it writes.
 */
#include "store/store.h"

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
#include "core/health.h"
#include "core/hub.h"
#include "core/log.h"
#include "serve/expo.h"
#include "store/chunk.h"
#include "store/segment.h"
#include "store/ticks.h"

#define MOD "store"
#define SCHEMA_VERSION 4
#define SCHEMA_PRAGMA "PRAGMA user_version=4" /* SCHEMA_VERSION */
#define ROLL_MAX_MIN 60                       /* minutes rolled per series per step */
/* Chunks: the readings of a series in one aligned span become one blob once the span has been
 * closed for CLOSE_NS; a step compacts at most COMPACT_MAX readings of a series. */
#define SPAN_NS (15 * WT_MINUTE_NS)
#define CLOSE_NS (5 * WT_MINUTE_NS)
#define COMPACT_MAX 8192
/* Chunks whose summary columns maintenance fills in one pass (stores upgraded from schema 2, and
 * chunks whose summary a new run made stale) */
#define SUMMARY_MAX 256
/* Decoded chunks a query keeps (wt_store_cache) */
#define DCACHE_MAX 64

/* One interned series: node + metric + labels → id. */
struct entry {
    uint64_t hash;
    int64_t id; /* 0: empty slot */
    char node[64];
    char metric[96];
    char labels[WT_LABELS_LEN];
};

struct minute_acc {
    int64_t n;
    double min, max, sum, last;
    double energy, covered_ns;
};

/*
 * What maintenance knows of one series without asking the store, so that a pass visits only the
 * series that have work. Bounds, never guesses: lo <= the oldest raw reading's time, hi >= the
 * newest (hi < lo: no readings), roll_lo <= the oldest rollup's minute (INT64_MAX: none). Writes
 * through this connection widen them; a visit makes them exact. known is false until the first
 * visit after a (re)load; a load happens at the first pass, after a rollback and whenever another
 * connection committed (PRAGMA data_version), so what others wrote is always seen.
 */
struct mser {
    int64_t id;
    int64_t rolled_to;
    int64_t lo, hi, roll_lo;
    int64_t raw_lo; /* <= the oldest row of readings (INT64_MAX: none): compaction's work */
    enum wt_series_kind kind;
    bool known;
    char node[64];
};

/* Statements of the maintenance pass, prepared once (on first use) and reset after each use. */
enum {
    MQ_BEGIN,
    MQ_COMMIT,
    MQ_ROLLBACK,
    MQ_VERSION,
    MQ_SERIES,
    MQ_MIN_T,
    MQ_ROLL_MIN_T,
    MQ_INS_ROLLUP,
    MQ_SET_ROLLED,
    MQ_DEL_READINGS,
    MQ_DEL_ROLLUPS,
    MQ_DEL_CHUNKS,
    MQ_COMPACT_RAW,
    MQ_SPAN_CHUNKS,
    MQ_DEL_SPAN,
    MQ_INS_CHUNK,
    MQ_DEL_COMPACTED,
    MQ_UNSUMMED,
    MQ_SET_SUMMARY,
    MQ_TICKS_CLOSED,
    MQ_DEL_TICKS,
    MQ_COUNT
};

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

/*
 * Statements of the readers (wt_store_read and the other functions below it), prepared once on
 * first use and kept on the handle: the rollups of every series run several of them each
 * minute, and preparing them each time was most of the maintenance's cost. A statement is taken
 * with rq_take and given back with rq_give (reset, bindings cleared). One that is already taken
 * (a second thread on the same handle, or a nested read) is not shared: the taker prepares one of
 * its own, finalized when given back.
 */
enum {
    RQ_READ_BEGIN,
    RQ_READ_END,
    RQ_RANGE_CHUNKS,
    RQ_RANGE_RAW,
    RQ_BEFORE_CHUNK,
    RQ_BEFORE_RAW,
    RQ_AFTER_CHUNK,
    RQ_AFTER_RAW,
    RQ_RAW_MIN,
    RQ_RAW_MAX,
    RQ_CHUNK_FIRST,
    RQ_CHUNK_LAST,
    RQ_CA_CHUNKS,
    RQ_CA_SUM,
    RQ_CA_MIN_T0,
    RQ_CA_RAW_MIN,
    RQ_CA_COUNT,
    RQ_NEWEST_RAW,
    RQ_NEWEST_CHUNK,
    RQ_ROLLUPS,
    RQ_RUNS,
    RQ_WIN_BEFORE,
    RQ_WIN_CHUNKS,
    RQ_WIN_AFTER,
    RQ_CHUNK_DATA,
    RQ_TICKS_RANGE,
    RQ_TICKS_DESC,
    RQ_TICKS_ASC,
    RQ_TICKS_NEWEST,
    RQ_TICKS_OLDEST_END,
    RQ_COUNT
};

static const char *const rq_sql[RQ_COUNT] = {
    [RQ_READ_BEGIN] = "BEGIN",
    [RQ_READ_END] = "COMMIT",
    [RQ_RANGE_CHUNKS] = "SELECT data, t0 FROM chunks WHERE series=?1 AND t0>?2 AND t0<=?3 ORDER BY "
                        "t0",
    [RQ_RANGE_RAW] = "SELECT t, v FROM readings WHERE series=?1 AND t>=?2 AND t<=?3 ORDER BY t "
                     "LIMIT ?4",
    [RQ_BEFORE_CHUNK] = "SELECT data, t0 FROM chunks WHERE series=?1 AND t0<=?2 ORDER BY t0 DESC "
                        "LIMIT 1",
    [RQ_BEFORE_RAW] = "SELECT t, v FROM readings WHERE series=?1 AND t<=?2 ORDER BY t DESC LIMIT 1",
    [RQ_AFTER_CHUNK] = "SELECT data, t0 FROM chunks WHERE series=?1 AND t0>?2 AND t1>=?3 ORDER BY "
                       "t0 LIMIT 1",
    [RQ_AFTER_RAW] = "SELECT t, v FROM readings WHERE series=?1 AND t>=?2 ORDER BY t LIMIT 1",
    [RQ_RAW_MIN] = "SELECT min(t) FROM readings WHERE series=?1",
    [RQ_RAW_MAX] = "SELECT max(t) FROM readings WHERE series=?1",
    [RQ_CHUNK_FIRST] = "SELECT t0 FROM chunks WHERE series=?1 ORDER BY t0 LIMIT 1",
    /* chunks do not overlap: the last one ends last */
    [RQ_CHUNK_LAST] = "SELECT t1 FROM chunks WHERE series=?1 ORDER BY t0 DESC LIMIT 1",
    [RQ_CA_CHUNKS] = "SELECT data, t0 FROM chunks WHERE series=?1 AND t0>?2 AND t0<=?3",
    [RQ_CA_SUM] = "SELECT coalesce(sum(n), 0) FROM chunks WHERE series=?1 AND t0>?2",
    [RQ_CA_MIN_T0] = "SELECT min(t0) FROM chunks WHERE series=?1 AND t0>?2",
    [RQ_CA_RAW_MIN] = "SELECT min(t) FROM readings WHERE series=?1 AND t>?2",
    [RQ_CA_COUNT] = "SELECT count(*) FROM readings WHERE series=?1 AND t>?2",
    /* per series through the primary keys, not a scan of every reading */
    [RQ_NEWEST_RAW] = "SELECT max((SELECT max(t) FROM readings WHERE series = s.id)) FROM series s "
                      "WHERE ?1=?1",
    [RQ_NEWEST_CHUNK] = "SELECT max((SELECT t1 FROM chunks WHERE series = s.id ORDER BY t0 DESC "
                        "LIMIT 1)) FROM series s WHERE ?1=?1",
    [RQ_ROLLUPS] = "SELECT t, n, min, max, mean, last, energy, covered FROM rollups "
                   "WHERE series=?1 AND t>?2 AND t<?3 ORDER BY t",
    [RQ_RUNS] = "SELECT node, start_ns, interval_ns FROM runs ORDER BY node, start_ns",
    [RQ_WIN_BEFORE] = "SELECT t0 FROM chunks WHERE series=?1 AND t0<=?2 ORDER BY t0 DESC LIMIT 1",
    [RQ_WIN_CHUNKS] = "SELECT t0, t1, v0, v1, e, cov FROM chunks INDEXED BY chunks_summary WHERE "
                      "series=?1 AND t0>=?2 AND t0<=?3 ORDER BY t0",
    [RQ_WIN_AFTER] = "SELECT t0, t1, v0, v1, e, cov FROM chunks INDEXED BY chunks_summary WHERE "
                     "series=?1 AND t0>?2 ORDER BY t0 LIMIT 1",
    [RQ_CHUNK_DATA] = "SELECT data FROM chunks WHERE series=?1 AND t0=?2",
    /* packed ticks (?1, the series, is found inside the blobs): those that overlap [?2, ?3] in
     * the order written; by their newest reading down from those that start by ?2; by their
     * oldest up from those that end at or after ?2 */
    [RQ_TICKS_RANGE] = "SELECT seq, data FROM ticks WHERE t_max>=?2 AND t_min<=?3 AND ?1=?1 "
                       "ORDER BY seq",
    [RQ_TICKS_DESC] = "SELECT seq, data, t_max FROM ticks INDEXED BY ticks_t_max WHERE "
                      "t_min<=?2 AND ?1=?1 ORDER BY t_max DESC",
    [RQ_TICKS_ASC] = "SELECT seq, data, t_min FROM ticks INDEXED BY ticks_t_min WHERE "
                     "t_max>=?2 AND ?1=?1 ORDER BY t_min",
    [RQ_TICKS_NEWEST] = "SELECT max(t_max) FROM ticks WHERE ?1=?1",
    [RQ_TICKS_OLDEST_END] = "SELECT min(t_max) FROM ticks WHERE ?1=?1",
};

struct rq_slot {
    sqlite3_stmt *st;
    atomic_bool busy;
};

/* Ticks rows kept opened (a minute and a bit of 1-s flushes). */
#define TVIEW_MAX 64

/* A taken reader statement: q is the handle's own (cached) or one of the taker's. */
struct rq_use {
    sqlite3_stmt *q;
    int k;
    bool cached;
};

/* One decoded chunk of a query's cache (wt_store_cache). */
struct dchunk {
    int64_t id, t0;
    struct wt_point_buf pts;
};

struct wt_store {
    sqlite3 *db;
    struct wt_hub *hub; /* the hub whose sink this is (wt_store_attach), NULL otherwise */
    char path[256];
    struct wt_store_opts o;
    /* statements */
    sqlite3_stmt *ins_reading, *ins_series, *upd_run, *ins_run, *ins_ticks;
    struct wt_tick_reading *tk; /* a write's readings for its ticks row (o.ticks) */
    size_t tk_cap;
    /* Opened ticks rows, a slot by seq: a minute's rollups of every series, or their bounds,
     * open each row once, not once a series. Any thread, under tv_mu. */
    pthread_mutex_t tv_mu;
    struct tview {
        int64_t seq;
        struct wt_ticks_view v;
    } tv[TVIEW_MAX];
    /* interned series */
    struct entry *tab;
    size_t tab_cap, tab_len;
    /* writer queue: the sink fills cur, the writer swaps it with spare */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct wt_reading *cur, *spare;
    size_t cur_len;
    uint64_t dropped; /* queue full, or beyond the buffer while writes fail */
    /* While writes fail (a full disk): readings kept in memory, oldest first, written when a
     * write succeeds again. Writer thread only; pend_len is mirrored under mu for the stats. */
    struct wt_reading *pend;
    size_t pend_len, pend_cap, pend_max;
    /* Stats for /metrics and readiness, under mu. */
    uint64_t write_errors;
    size_t queued;
    int64_t last_flush_ns; /* CLOCK_REALTIME of the last successful write, 0: none */
    uint64_t db_bytes;
    bool failing;
    /* The last database error while the writer runs: logged by the writer, rate-limited. */
    char last_err[256];
    bool quiet;
    struct wt_store_fam {
        struct wt_store *s;
        int k;
    } fam[5];
    bool stop, started, mu_init;
    pthread_t thread;
    int64_t run_id;
    /* maintenance */
    int64_t maint_cursor;
    struct minute_acc acc[ROLL_MAX_MIN];
    sqlite3_stmt *mq[MQ_COUNT];
    struct rq_slot rq[RQ_COUNT]; /* the readers' statements */
    /* Summaries: 0 unknown, 1 some chunks lack theirs, 2 none do (maintenance's backfill) */
    int sum_state;
    /* The decoded chunks of one query (wt_store_cache), on its thread only */
    atomic_bool dc_on;
    pthread_t dc_owner;
    struct dchunk dc[DCACHE_MAX];
    size_t dc_len, dc_next;
    _Atomic uint64_t decoded; /* chunks decoded by readers (wt_store_chunks_decoded) */
    struct mser *ms;          /* every series, sorted by id */
    size_t ms_len, ms_cap;
    bool ms_loaded;       /* ms mirrors the series table */
    bool mq_failed;       /* a maintenance query failed: the pass is rolled back */
    int64_t data_version; /* PRAGMA data_version when ms was last checked */
    struct wt_point_buf seg, cold, span, merged; /* maintenance's reads, kept between passes */
};

static int db_error(struct wt_store *s, struct wt_err *err, const char *what)
{
    wt_err_set(err, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
    return -EIO;
}

static int exec(struct wt_store *s, const char *sql)
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
static void db_fail(struct wt_store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void db_fail(struct wt_store *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->last_err, sizeof s->last_err, fmt, ap);
    va_end(ap);
    if (!s->quiet)
        wt_error(MOD, "%s: %s", s->path, s->last_err);
}

/* A maintenance statement, prepared on first use; NULL (logged) when it cannot be. */
static sqlite3_stmt *mq(struct wt_store *s, int k)
{
    if (!s->mq[k] && sqlite3_prepare_v3(s->db, mq_sql[k], -1, SQLITE_PREPARE_PERSISTENT, &s->mq[k],
                                        NULL) != SQLITE_OK) {
        wt_error(MOD, "%s: cannot prepare %s: %s", s->path, mq_sql[k], sqlite3_errmsg(s->db));
        s->mq[k] = NULL;
    }
    return s->mq[k];
}

/* Runs a cached statement that returns no rows (BEGIN IMMEDIATE, COMMIT, ROLLBACK). */
static int mq_exec(struct wt_store *s, int k)
{
    sqlite3_stmt *st = mq(s, k);
    if (!st)
        return -EIO;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        db_fail(s, "%s: %s", mq_sql[k], sqlite3_errmsg(s->db));
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

/*
 * Rolls back the open transaction, if there is one: SQLite has already rolled back after some
 * errors (SQLITE_FULL at COMMIT among them), and a ROLLBACK then only adds "cannot rollback - no
 * transaction is active" to the log.
 */
static void rollback(struct wt_store *s)
{
    if (!sqlite3_get_autocommit(s->db))
        (void)mq_exec(s, MQ_ROLLBACK);
}

/* Index of the first series with an id >= id (ms_len when none). */
static size_t ms_lower(const struct wt_store *s, int64_t id)
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
    size_t i = ms_lower(s, id);
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
static void ms_widen(struct wt_store *s, int64_t id, int64_t t, bool row)
{
    if (!s->ms_loaded)
        return;
    size_t i = ms_lower(s, id);
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
    sqlite3_stmt *st = mq(s, MQ_SERIES);
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
static int ms_check(struct wt_store *s)
{
    sqlite3_stmt *st = mq(s, MQ_VERSION);
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

/* Creates dir and its parents (0750). Returns 0 or -errno. */
static int make_dirs(const char *dir)
{
    char buf[256];
    struct stat st;
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return -ENAMETOOLONG;
    if (stat(buf, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0750) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, 0750) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

static const char *const schema =
    "CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, node TEXT NOT NULL DEFAULT '',"
    " metric TEXT NOT NULL, labels TEXT NOT NULL, kind INTEGER NOT NULL,"
    " rolled_to INTEGER NOT NULL DEFAULT 0, UNIQUE(node, metric, labels));"
    "CREATE TABLE IF NOT EXISTS readings(series INTEGER NOT NULL, t INTEGER NOT NULL,"
    " v REAL NOT NULL, PRIMARY KEY(series, t)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rollups(series INTEGER NOT NULL, t INTEGER NOT NULL,"
    " n INTEGER NOT NULL, min REAL, max REAL, mean REAL, last REAL, energy REAL NOT NULL,"
    " covered INTEGER NOT NULL, PRIMARY KEY(series, t)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, node TEXT NOT NULL,"
    " start_ns INTEGER NOT NULL, last_ns INTEGER NOT NULL, interval_ns INTEGER NOT NULL,"
    " source TEXT NOT NULL, UNIQUE(node, start_ns));"
    /* schema 2: closed spans of readings, one compressed blob (store/chunk.h) per series and
     * span; t0, t1: its first and last reading, n: how many. Schema 3: its summary (see
     * summary_sql) */
    /* the summary before the blob: a window reads it without the blob's overflow pages (a
     * schema 2 table gets it after, by ALTER TABLE: still no decoding, but those pages read) */
    "CREATE TABLE IF NOT EXISTS chunks(series INTEGER NOT NULL, t0 INTEGER NOT NULL,"
    " t1 INTEGER NOT NULL, n INTEGER NOT NULL, v0 REAL, v1 REAL, e REAL, cov INTEGER,"
    " data BLOB NOT NULL, PRIMARY KEY(series, t0)) WITHOUT ROWID;"
    /* schema 4: packed ticks (store/ticks.h), a row per write of every series' readings; seq
     * orders the writes (of one series at one time the first written is kept), t_min and t_max
     * bound the row's readings. Readers merge them with the readings table's rows. */
    "CREATE TABLE IF NOT EXISTS ticks(seq INTEGER PRIMARY KEY, t_min INTEGER NOT NULL,"
    " t_max INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS ticks_t_min ON ticks(t_min);"
    "CREATE INDEX IF NOT EXISTS ticks_t_max ON ticks(t_max);";

/* Schema 2 -> 3: the summary columns on a chunks table that lacks them. */
static const char *const summary_columns = "ALTER TABLE chunks ADD COLUMN v0 REAL;"
                                           "ALTER TABLE chunks ADD COLUMN v1 REAL;"
                                           "ALTER TABLE chunks ADD COLUMN e REAL;"
                                           "ALTER TABLE chunks ADD COLUMN cov INTEGER;";

/*
 * Schema 3: each chunk's summary, so that an exact window applies a whole chunk inside it without
 * decoding it (wt_store_window): v0, v1 its first and last value; e, cov the energy (J) and the
 * covered time (ns) of the segments between its readings by the series' segment rule
 * (wt_segment_sum). NULL: not known (a chunk of schema 2, or one whose rule changed), read by
 * decoding; maintenance fills them (chunks_unsummed finds those). The rule depends on the
 * series' kind and its node's runs: a run that starts (or changes) at t makes e and cov of that
 * node's chunks that end at or after t stale, and the triggers clear them in the same transaction
 * (900000000000: SPAN_NS, a chunk lies inside one span).
 */
static const char *const summary_sql =
    "CREATE INDEX IF NOT EXISTS chunks_unsummed ON chunks(series, t0) WHERE e IS NULL;"
    /* the summaries alone, dense: what a window reads (the chunks' rows hold their blobs) */
    "CREATE INDEX IF NOT EXISTS chunks_summary ON chunks(series, t0, t1, v0, v1, e, cov);"
    "CREATE TRIGGER IF NOT EXISTS runs_insert_summaries AFTER INSERT ON runs BEGIN"
    " UPDATE chunks SET e=NULL, cov=NULL WHERE e IS NOT NULL AND"
    " series IN (SELECT id FROM series WHERE node=new.node) AND"
    " t0>new.start_ns-900000000000 AND t1>=new.start_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS runs_update_summaries AFTER UPDATE OF node, start_ns,"
    " interval_ns ON runs WHEN old.node!=new.node OR old.start_ns!=new.start_ns OR"
    " old.interval_ns!=new.interval_ns BEGIN"
    " UPDATE chunks SET e=NULL, cov=NULL WHERE e IS NOT NULL AND"
    " series IN (SELECT id FROM series WHERE node IN (old.node, new.node)) AND"
    " t0>min(old.start_ns, new.start_ns)-900000000000 AND t1>=min(old.start_ns, new.start_ns);"
    " END;"
    "CREATE TRIGGER IF NOT EXISTS runs_delete_summaries AFTER DELETE ON runs BEGIN"
    " UPDATE chunks SET e=NULL, cov=NULL WHERE e IS NOT NULL AND"
    " series IN (SELECT id FROM series WHERE node=old.node) AND"
    " t0>old.start_ns-900000000000 AND t1>=old.start_ns; END;"
    "CREATE TRIGGER IF NOT EXISTS series_kind_summaries AFTER UPDATE OF kind ON series"
    " WHEN old.kind!=new.kind BEGIN UPDATE chunks SET e=NULL, cov=NULL WHERE series=new.id; END;";

/* Whether the chunks table already has the summary columns (a store made as schema 3). */
static bool has_summary_columns(struct wt_store *s)
{
    sqlite3_stmt *st = NULL;
    bool found = false;
    if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM pragma_table_info('chunks') WHERE name='cov'", -1,
                           &st, NULL) == SQLITE_OK)
        found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/*
 * The GPU's integrated energy used to be stored as wattage_gpu_energy_joules_total with
 * method="integrated" last in its labels (kind 3). It has its own metric now; a store written
 * before is renamed in place when opened, so one GPU has one integrated series across the
 * change. A row whose new name already exists (an older wattage wrote to the store after a newer
 * one) is left as it is: its kind still says integrated, and queries pair it as such.
 */
static const char *const legacy_integrated_where =
    " WHERE metric='wattage_gpu_energy_joules_total' AND kind=3 AND"
    " (labels LIKE '%,method=\"integrated\"' OR labels='method=\"integrated\"')";

static int rename_legacy_integrated(struct wt_store *s)
{
    char sql[512];
    sqlite3_stmt *st = NULL;
    bool found = false;
    snprintf(sql, sizeof sql, "SELECT 1 FROM series%s LIMIT 1", legacy_integrated_where);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (!found)
        return 0; /* the usual case: no write transaction for a reader's open */
    /* 20 = strlen(",method=\"integrated\"") */
    snprintf(sql, sizeof sql,
             "UPDATE OR IGNORE series SET metric='wattage_gpu_energy_integrated_joules_total',"
             " labels=CASE WHEN labels='method=\"integrated\"' THEN ''"
             " ELSE substr(labels, 1, length(labels) - 20) END%s",
             legacy_integrated_where);
    if (exec(s, sql))
        return -EIO;
    wt_info(MOD,
            "%s: %d integrated GPU energy series renamed to "
            "wattage_gpu_energy_integrated_joules_total",
            s->path, sqlite3_changes(s->db));
    return 0;
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

static int tab_put(struct wt_store *s, int64_t id, const char *node, const char *metric,
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

static int tab_load(struct wt_store *s)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    memset(s->tab, 0, s->tab_cap * sizeof *s->tab);
    s->tab_len = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT id, node, metric, labels FROM series", -1, &st, NULL))
        return -EIO;
    while (sqlite3_step(st) == SQLITE_ROW && rc == 0) {
        rc = tab_put(s, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
                     (const char *)sqlite3_column_text(st, 2),
                     (const char *)sqlite3_column_text(st, 3));
    }
    sqlite3_finalize(st);
    return rc;
}

/* The id of a series, inserting it when new. Inside the caller's transaction. */
static int64_t intern(struct wt_store *s, const char *node, const char *metric, const char *labels)
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
        db_fail(s, "cannot add series %s{%s}: %s", metric, labels, sqlite3_errmsg(s->db));
        return -EIO;
    }
    if (tab_put(s, id, node, metric, labels) != 0)
        return -ENOMEM;
    ms_note(s, id, node, wt_series_kind_of(metric, labels));
    return id;
}

int wt_store_open(const char *path, const struct wt_store_opts *opts, struct wt_store **out,
                  struct wt_err *err)
{
    struct wt_store_opts o = {.create = true};
    struct wt_store *s;
    struct stat stt;
    int rc;

    *out = NULL;
    if (opts)
        o = *opts;
    if (!o.flush_ns)
        o.flush_ns = WT_NS_PER_S;
    if (!o.retention_raw_ns)
        o.retention_raw_ns = 7 * 86400 * WT_NS_PER_S;
    if (!o.retention_rollup_ns)
        o.retention_rollup_ns = 400 * 86400 * WT_NS_PER_S;
    if (!o.queue_cap)
        o.queue_cap = 65536;
    if (!o.buffer_readings)
        o.buffer_readings = WT_STORE_BUFFER_DEFAULT;
    if (!path || !*path)
        return wt_err_set(err, "store: no path given");
    if (strlen(path) >= 256)
        return wt_err_set(err, "store: path too long: %s", path);

    if (stat(path, &stt) != 0) {
        if (!o.create) {
            wt_err_set(err, "no store at %s (run the daemon with --db %s, or pass --db)", path,
                       path);
            return -ENOENT;
        }
        char dir[256];
        snprintf(dir, sizeof dir, "%s", path);
        rc = make_dirs(dirname(dir));
        if (rc) {
            snprintf(dir, sizeof dir, "%s", path);
            wt_err_set(err, "%s: cannot create the store's directory %s: %s", path, dirname(dir),
                       strerror(-rc));
            return rc;
        }
    }

    s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    pthread_mutex_init(&s->tv_mu, NULL);
    s->o = o;
    snprintf(s->path, sizeof s->path, "%s", path);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | (o.create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        rc = db_error(s, err, "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 10000);
    if (exec(s, "PRAGMA journal_mode=WAL") || exec(s, "PRAGMA synchronous=NORMAL")) {
        rc = db_error(s, err, "cannot set WAL mode");
        goto fail;
    }
    {
        sqlite3_stmt *st = NULL;
        int ver = -1;
        if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            ver = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        if (ver < 0) {
            rc = db_error(s, err, "not a wattage store (cannot read it)");
            goto fail;
        }
        if (ver > SCHEMA_VERSION) {
            rc = -EINVAL;
            wt_err_set(err, "%s: store schema %d is newer than this wattage (%d)", path, ver,
                       SCHEMA_VERSION);
            goto fail;
        }
        if (ver < SCHEMA_VERSION) {
            /* one transaction: a store is at one schema or the next, never between */
            if (exec(s, "BEGIN IMMEDIATE") || exec(s, schema) ||
                (!has_summary_columns(s) && exec(s, summary_columns)) || exec(s, summary_sql) ||
                exec(s, SCHEMA_PRAGMA) || exec(s, "COMMIT")) {
                rc = db_error(s, err, "cannot create the schema");
                if (!sqlite3_get_autocommit(s->db))
                    (void)exec(s, "ROLLBACK");
                goto fail;
            }
            if (ver >= 1)
                wt_info(
                    MOD, "%s: store schema %d upgraded to %d (%s%spacked ticks)", path, ver,
                    SCHEMA_VERSION,
                    ver == 1 ? "the writer compacts closed spans of readings into chunks; " : "",
                    ver <= 2 ? "chunk summaries: the writer fills them in the background; " : "");
        }
    }
    /* Not fatal (a store on a read-only medium): the old rows keep their kind, and queries
     * pair them with the counter as before. */
    if (rename_legacy_integrated(s) != 0)
        wt_warn(MOD, "%s: cannot rename the integrated GPU energy series: %s", path,
                sqlite3_errmsg(s->db));
    if (sqlite3_prepare_v3(s->db, "INSERT OR IGNORE INTO readings(series, t, v) VALUES(?,?,?)", -1,
                           SQLITE_PREPARE_PERSISTENT, &s->ins_reading, NULL) ||
        sqlite3_prepare_v3(s->db, "INSERT INTO ticks(t_min, t_max, n, data) VALUES(?,?,?,?)", -1,
                           SQLITE_PREPARE_PERSISTENT, &s->ins_ticks, NULL) ||
        sqlite3_prepare_v3(s->db,
                           "INSERT INTO series(node, metric, labels, kind) VALUES(?,?,?,?) "
                           "ON CONFLICT(node, metric, labels) DO UPDATE SET kind=excluded.kind "
                           "RETURNING id",
                           -1, SQLITE_PREPARE_PERSISTENT, &s->ins_series, NULL) ||
        sqlite3_prepare_v3(s->db, "UPDATE runs SET last_ns=max(last_ns, ?) WHERE id=?", -1,
                           SQLITE_PREPARE_PERSISTENT, &s->upd_run, NULL) ||
        sqlite3_prepare_v3(s->db,
                           "INSERT INTO runs(node, start_ns, last_ns, interval_ns, source) "
                           "VALUES(?,?,?,?,?) ON CONFLICT(node, start_ns) DO UPDATE SET "
                           "interval_ns=excluded.interval_ns RETURNING id",
                           -1, SQLITE_PREPARE_PERSISTENT, &s->ins_run, NULL)) {
        rc = db_error(s, err, "cannot prepare statements");
        goto fail;
    }
    rc = tab_put(s, 0, "", "", ""); /* allocate the table; id 0 is "empty", nothing stored */
    s->tab_len = 0;
    if (rc || tab_load(s) != 0) {
        rc = db_error(s, err, "cannot load series");
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->mu_init = true;
    *out = s;
    return 0;
fail:
    wt_store_close(s);
    return rc;
}

struct sqlite3 *wt_store_db(struct wt_store *s)
{
    return s->db;
}

int wt_store_begin_run(struct wt_store *s, const char *node, int64_t start_ns, int64_t interval_ns,
                       const char *source)
{
    sqlite3_stmt *st = s->ins_run;
    sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, start_ns);
    sqlite3_bind_int64(st, 3, start_ns);
    sqlite3_bind_int64(st, 4, interval_ns);
    sqlite3_bind_text(st, 5, source ? source : "", -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && !node[0])
        s->run_id = sqlite3_column_int64(st, 0);
    s->sum_state = 0; /* the run may have made summaries stale (summary_sql) */
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_ROW) {
        wt_error(MOD, "%s: cannot record the run: %s", s->path, sqlite3_errmsg(s->db));
        return -EIO;
    }
    return 0;
}

/*
 * The series of each reading, interned, into s->tk (*m of them: readings of no known metric are
 * left out), their bounds widened (row: written as rows of readings) and *last_t the newest time.
 */
static int intern_all(struct wt_store *s, const char *node, const struct wt_reading *r, size_t n,
                      bool row, int64_t *last_t, size_t *m)
{
    if (n > s->tk_cap) {
        struct wt_tick_reading *p = realloc(s->tk, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        s->tk = p;
        s->tk_cap = n;
    }
    *m = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].metric >= WT_M_COUNT)
            continue;
        int64_t id = intern(s, node, wt_metrics[r[i].metric].name, r[i].labels);
        if (id < 0)
            return (int)id;
        s->tk[(*m)++] = (struct wt_tick_reading){.series = id, .t_ns = r[i].t_ns, .v = r[i].value};
        ms_widen(s, id, r[i].t_ns, row);
        if (r[i].t_ns > *last_t)
            *last_t = r[i].t_ns;
    }
    return 0;
}

/* Inserts readings as rows inside an open transaction. */
static int insert(struct wt_store *s, const char *node, const struct wt_reading *r, size_t n,
                  int64_t *last_t)
{
    size_t m;
    int rc = intern_all(s, node, r, n, true, last_t, &m);
    for (size_t i = 0; rc == 0 && i < m; i++) {
        sqlite3_bind_int64(s->ins_reading, 1, s->tk[i].series);
        sqlite3_bind_int64(s->ins_reading, 2, s->tk[i].t_ns);
        sqlite3_bind_double(s->ins_reading, 3, s->tk[i].v);
        int st = sqlite3_step(s->ins_reading);
        sqlite3_reset(s->ins_reading);
        if (st != SQLITE_DONE) {
            db_fail(s, "insert failed: %s", sqlite3_errmsg(s->db));
            rc = -EIO;
        }
    }
    return rc;
}

/* Appends readings as one packed ticks row inside an open transaction. */
static int insert_ticks(struct wt_store *s, const char *node, const struct wt_reading *r, size_t n,
                        int64_t *last_t)
{
    size_t m;
    int rc = intern_all(s, node, r, n, false, last_t, &m);
    if (rc)
        return rc;
    if (m == 0)
        return 0;
    uint8_t *blob;
    size_t len;
    int64_t lo, hi;
    rc = wt_ticks_encode(s->tk, m, &blob, &len, &lo, &hi);
    if (rc) {
        db_fail(s, "cannot pack %zu readings: %s", m, strerror(-rc));
        return rc;
    }
    sqlite3_bind_int64(s->ins_ticks, 1, lo);
    sqlite3_bind_int64(s->ins_ticks, 2, hi);
    sqlite3_bind_int64(s->ins_ticks, 3, wt_ticks_count(blob, len));
    sqlite3_bind_blob(s->ins_ticks, 4, blob, (int)len, SQLITE_STATIC);
    rc = sqlite3_step(s->ins_ticks);
    sqlite3_reset(s->ins_ticks);
    sqlite3_clear_bindings(s->ins_ticks);
    free(blob);
    if (rc != SQLITE_DONE) {
        db_fail(s, "insert failed: %s", sqlite3_errmsg(s->db));
        return -EIO;
    }
    return 0;
}

int wt_store_write(struct wt_store *s, const char *node, const struct wt_reading *r, size_t n)
{
    int64_t last_t = 0;
    if (n == 0)
        return 0;
    if (mq_exec(s, MQ_BEGIN))
        return -EIO;
    int rc = s->o.ticks ? insert_ticks(s, node, r, n, &last_t) : insert(s, node, r, n, &last_t);
    if (rc == 0 && s->run_id && !node[0]) {
        sqlite3_bind_int64(s->upd_run, 1, last_t);
        sqlite3_bind_int64(s->upd_run, 2, s->run_id);
        if (sqlite3_step(s->upd_run) != SQLITE_DONE)
            rc = -EIO;
        sqlite3_reset(s->upd_run);
    }
    if (rc == 0 && mq_exec(s, MQ_COMMIT) == 0)
        return 0;
    rollback(s);
    (void)tab_load(s); /* series added in the rolled-back transaction are gone */
    s->ms_loaded = false;
    return rc ? rc : -EIO;
}

void wt_store_sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    struct wt_store *s = ctx;
    (void)collector;
    pthread_mutex_lock(&s->mu);
    size_t room = s->o.queue_cap - s->cur_len;
    size_t n = b->len < room ? b->len : room;
    memcpy(s->cur + s->cur_len, b->r, n * sizeof *b->r);
    s->cur_len += n;
    s->dropped += b->len - n;
    pthread_mutex_unlock(&s->mu);
}

uint64_t wt_store_dropped(struct wt_store *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t d = s->dropped;
    pthread_mutex_unlock(&s->mu);
    return d;
}

/* What the writer knows of a run of failed writes, for its three kinds of log line. */
struct failrun {
    struct wt_ratelimit rl;    /* "still failing" lines */
    int64_t retry_at, backoff; /* CLOCK_MONOTONIC; the next write of the buffer */
    uint64_t failed;           /* writes failed in this run */
    uint64_t dropped_at_start;
    int64_t since_real;
};

#define MAX_BACKOFF_NS (30 * WT_NS_PER_S)

/* Appends readings to the buffer of unwritten ones, up to its bound; returns how many did not
 * fit (the newest: those kept stay in time order with what is already stored). */
static size_t keep(struct wt_store *s, const struct wt_reading *r, size_t n)
{
    size_t room = s->pend_max - s->pend_len;
    size_t take = n < room ? n : room;
    if (s->pend_len + take > s->pend_cap) {
        size_t nc = s->pend_cap ? s->pend_cap : 4096;
        while (nc < s->pend_len + take)
            nc *= 2;
        if (nc > s->pend_max)
            nc = s->pend_max;
        struct wt_reading *p = realloc(s->pend, nc * sizeof *p);
        if (p) {
            s->pend = p;
            s->pend_cap = nc;
        } else if (s->pend_cap - s->pend_len < take) {
            take = s->pend_cap - s->pend_len;
        }
    }
    memcpy(s->pend + s->pend_len, r, take * sizeof *r);
    s->pend_len += take;
    return n - take;
}

/* The file and its WAL: what the store takes on the disk. */
static uint64_t db_bytes(const struct wt_store *s)
{
    char wal[sizeof s->path + 8];
    struct stat st;
    uint64_t n = 0;
    if (stat(s->path, &st) == 0)
        n += (uint64_t)st.st_size;
    snprintf(wal, sizeof wal, "%s-wal", s->path);
    if (stat(wal, &st) == 0)
        n += (uint64_t)st.st_size;
    return n;
}

/*
 * Writes what the sink queued. While writes fail, readings are kept in memory (up to
 * store.buffer_readings) and the whole buffer is written again after a doubling delay (from the
 * flush interval up to 30 s); one line says writes started failing, one a minute that they still
 * fail, one that they recovered. force: at stop, try the buffer now. Writer thread only.
 */
static void flush_queue(struct wt_store *s, struct failrun *fr, bool force)
{
    pthread_mutex_lock(&s->mu);
    struct wt_reading *batch = s->cur;
    size_t n = s->cur_len;
    s->cur = s->spare;
    s->spare = batch;
    s->cur_len = 0;
    bool failing = s->failing;
    pthread_mutex_unlock(&s->mu);

    int64_t now = wt_now_mono_ns();
    size_t lost = 0, written = 0;
    int rc = 0;
    bool tried = false;
    if (failing) {
        lost = keep(s, batch, n);
        if (force || now >= fr->retry_at) {
            tried = true;
            rc = wt_store_write(s, "", s->pend, s->pend_len);
            written = rc == 0 ? s->pend_len : 0;
        }
    } else if (n) {
        tried = true;
        rc = wt_store_write(s, "", batch, n);
        written = rc == 0 ? n : 0;
        if (rc)
            lost = keep(s, batch, n);
    }
    uint64_t bytes = db_bytes(s);
    if (tried && rc == 0 && failing)
        s->pend_len = 0; /* all written */
    bool now_failing = tried ? rc != 0 : failing;
    pthread_mutex_lock(&s->mu);
    uint64_t dropped = s->dropped + lost;
    pthread_mutex_unlock(&s->mu);

    if (tried && rc == 0 && failing) {
        int64_t took = wt_now_real_ns() - fr->since_real;
        wt_info(MOD,
                "%s: writes recovered after %.0f s: wrote %zu buffered readings "
                "failed_writes=%" PRIu64 " dropped=%" PRIu64,
                s->path, (double)took / WT_NS_PER_S, written, fr->failed,
                dropped - fr->dropped_at_start);
    } else if (tried && rc != 0) {
        uint64_t sup;
        if (!failing) {
            memset(fr, 0, sizeof *fr);
            fr->rl.interval_ns = 60 * WT_NS_PER_S;
            fr->backoff = s->o.flush_ns;
            fr->since_real = wt_now_real_ns();
            fr->dropped_at_start = dropped - lost;
            (void)wt_ratelimit_ok(&fr->rl, now, &sup); /* the first line counts as the last */
            wt_error(MOD,
                     "%s: writes failing: %s; keeping up to %zu readings in memory and retrying "
                     "(more are dropped and counted in wattage_store_readings_dropped_total)",
                     s->path, s->last_err, s->pend_max);
        } else if (wt_ratelimit_ok(&fr->rl, now, &sup)) {
            wt_error(MOD,
                     "%s: writes still failing: %s failed_writes=%" PRIu64 " buffered=%zu "
                     "dropped=%" PRIu64,
                     s->path, s->last_err, fr->failed + 1, s->pend_len,
                     dropped - fr->dropped_at_start);
        }
        fr->failed++;
        fr->retry_at = now + fr->backoff;
        fr->backoff = fr->backoff * 2 > MAX_BACKOFF_NS ? MAX_BACKOFF_NS : fr->backoff * 2;
    }
    /* Readiness first, then the stats: whoever sees the stats change sees the reason too. */
    if (now_failing)
        wt_health_report("store", NULL, false,
                         "writes failing: %s; %zu readings buffered in memory, %" PRIu64 " dropped",
                         s->last_err, s->pend_len, dropped - fr->dropped_at_start);
    else if (failing)
        wt_health_report("store", NULL, true, " ");

    /* One consistent view for the stats: failing and the queue change together. */
    pthread_mutex_lock(&s->mu);
    s->dropped += lost;
    s->db_bytes = bytes;
    s->queued = s->pend_len;
    if (tried && rc == 0)
        s->last_flush_ns = wt_now_real_ns();
    if (tried && rc != 0)
        s->write_errors++;
    s->failing = now_failing;
    pthread_mutex_unlock(&s->mu);
}

static void *writer_main(void *arg)
{
    struct wt_store *s = arg;
    pthread_setname_np(pthread_self(), "wt-store");
    struct failrun fr = {.rl = {.interval_ns = 60 * WT_NS_PER_S}};
    struct wt_ratelimit drop_rl = {.interval_ns = 60 * WT_NS_PER_S};
    uint64_t reported_drops = 0;
    struct wt_ratelimit maint_rl = {.interval_ns = 60 * WT_NS_PER_S};
    int64_t next = wt_now_mono_ns() + s->o.flush_ns;
    int64_t next_maint = wt_now_mono_ns();
    bool more = false;

    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t now = ts.tv_sec * WT_NS_PER_S + ts.tv_nsec;
        if (now < next) {
            int64_t w = next - now;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t until = ts.tv_sec * WT_NS_PER_S + ts.tv_nsec + w;
            ts.tv_sec = until / WT_NS_PER_S;
            ts.tv_nsec = until % WT_NS_PER_S;
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
            continue;
        }
        next += s->o.flush_ns;
        if (next < now)
            next = now + s->o.flush_ns;
        pthread_mutex_unlock(&s->mu);

        flush_queue(s, &fr, false);
        pthread_mutex_lock(&s->mu);
        uint64_t drops = s->dropped;
        bool failing = s->failing;
        pthread_mutex_unlock(&s->mu);
        /* While writes fail, the failing lines carry the drops. */
        uint64_t sup;
        if (failing)
            reported_drops = drops; /* the failing lines count these */
        else if (drops != reported_drops && wt_ratelimit_ok(&drop_rl, wt_now_mono_ns(), &sup)) {
            wt_warn(MOD, "queue full: dropped readings total=%" PRIu64, drops);
            reported_drops = drops;
        }
        if (!failing && (more || wt_now_mono_ns() >= next_maint)) {
            if (wt_store_maintain(s, wt_now_real_ns(), 20000, &more) != 0) {
                more = false;
                if (wt_ratelimit_ok(&maint_rl, wt_now_mono_ns(), &sup))
                    wt_error(MOD, "%s: maintenance failed: %s (suppressed=%" PRIu64 ")", s->path,
                             s->last_err, sup);
            }
            next_maint = wt_now_mono_ns() + 10 * WT_NS_PER_S;
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    flush_queue(s, &fr, true);
    if (s->pend_len && s->failing)
        wt_error(MOD, "%s: stopping with %zu readings not written: %s", s->path, s->pend_len,
                 s->last_err);
    return NULL;
}

int wt_store_writer_start(struct wt_store *s)
{
    s->cur = calloc(s->o.queue_cap, sizeof *s->cur);
    s->spare = calloc(s->o.queue_cap, sizeof *s->spare);
    if (!s->cur || !s->spare)
        return -ENOMEM;
    s->pend_max = s->o.buffer_readings < 0 ? 0 : (size_t)s->o.buffer_readings;
    s->quiet = true; /* the writer logs database errors itself, rate-limited */
    int rc = pthread_create(&s->thread, NULL, writer_main, s);
    if (rc) {
        s->quiet = false;
        return -rc;
    }
    s->started = true;
    return 0;
}

void wt_store_stats(struct wt_store *s, struct wt_store_stats *out)
{
    pthread_mutex_lock(&s->mu);
    out->dropped = s->dropped;
    out->write_errors = s->write_errors;
    out->queued = s->queued + s->cur_len;
    out->last_flush_ns = s->last_flush_ns;
    out->db_bytes = s->db_bytes;
    out->failing = s->failing;
    pthread_mutex_unlock(&s->mu);
}

/* ---- /metrics: the store's own health ---- */

enum { FAM_DROPPED, FAM_ERRORS, FAM_QUEUE, FAM_FLUSH, FAM_BYTES, NFAM };
_Static_assert(NFAM == WT_STORE_FAMILIES, "store.h says how many families there are");
static const struct {
    const char *name, *help;
    enum wt_metric_type type;
} fams[NFAM] = {
    [FAM_DROPPED] = {"wattage_store_readings_dropped_total",
                     "Readings never stored: the queue was full (the disk did not keep up), or "
                     "writes failed and the in-memory buffer (store.buffer_readings) was full.",
                     WT_COUNTER},
    [FAM_ERRORS] = {"wattage_store_write_errors_total",
                    "Writes of the store (one transaction each) that failed: a full disk, an I/O "
                    "error. The readings are kept in memory and written again.",
                    WT_COUNTER},
    [FAM_QUEUE] = {"wattage_store_queue_readings",
                   "Readings waiting to be written: queued since the last flush plus those kept "
                   "in memory while writes fail.",
                   WT_GAUGE},
    [FAM_FLUSH] = {"wattage_store_last_flush_timestamp_seconds",
                   "Unix time of the last successful write of the store.", WT_GAUGE},
    [FAM_BYTES] = {"wattage_store_database_bytes",
                   "Size of the store on disk: the database file and its write-ahead log.",
                   WT_GAUGE},
};

static int family(struct wt_store_fam *f, struct wt_expo_family *fam)
{
    struct wt_store_stats st;
    wt_store_stats(f->s, &st);
    memset(fam, 0, sizeof *fam);
    fam->name = fams[f->k].name;
    fam->help = fams[f->k].help;
    fam->type = fams[f->k].type;
    if (f->k == FAM_FLUSH && !st.last_flush_ns)
        return 0; /* never written: absent, not 1970 */
    if (!(fam->s = calloc(1, sizeof *fam->s)))
        return -ENOMEM;
    fam->n = 1;
    switch (f->k) {
    case FAM_DROPPED:
        fam->s[0].value = (double)st.dropped;
        break;
    case FAM_ERRORS:
        fam->s[0].value = (double)st.write_errors;
        break;
    case FAM_QUEUE:
        fam->s[0].value = (double)st.queued;
        break;
    case FAM_FLUSH:
        fam->s[0].value = (double)st.last_flush_ns / WT_NS_PER_S;
        break;
    case FAM_BYTES:
        fam->s[0].value = (double)st.db_bytes;
        break;
    }
    return 0;
}

int wt_store_family_fn(void *ctx, struct wt_expo_family *fam)
{
    return family(ctx, fam);
}

void *wt_store_family_ctx(struct wt_store *s, int k)
{
    if (k < 0 || k >= NFAM)
        return NULL;
    s->fam[k].s = s;
    s->fam[k].k = k;
    return &s->fam[k];
}

int wt_store_family(struct wt_store *s, int k, struct wt_expo_family *fam)
{
    void *ctx = wt_store_family_ctx(s, k);
    return ctx ? family(ctx, fam) : -EINVAL;
}

int wt_store_attach(const struct wt_config *cfg, struct wt_hub *hub, struct wt_store **out,
                    struct wt_err *err)
{
    struct wt_store_opts o = {.flush_ns = cfg->store.flush_ns,
                              .retention_raw_ns = cfg->store.retention_raw_ns,
                              .retention_rollup_ns = cfg->store.retention_rollup_ns,
                              .buffer_readings =
                                  cfg->store.buffer_readings ? cfg->store.buffer_readings : -1,
                              .create = true,
                              .ticks = cfg->store.ticks};
    struct wt_store *s = NULL;
    int rc = wt_store_open(cfg->store.path, &o, &s, err);
    if (rc)
        return rc;
    /* the GPU collector's interval: integrated energy is not trusted across 3 of them */
    int64_t iv = wt_config_interval(cfg, &cfg->collectors.nvml);
    rc = wt_store_begin_run(s, "", wt_now_real_ns(), iv, "daemon");
    if (rc == 0)
        rc = wt_store_writer_start(s);
    if (rc == 0)
        rc = wt_hub_add_sink(hub, wt_store_sink, s);
    if (rc == 0)
        s->hub = hub;
    if (rc) {
        wt_err_set(err, "%s: cannot start the store writer (%s)", cfg->store.path, strerror(-rc));
        wt_store_close(s);
        return rc;
    }
    wt_info(MOD, "store open path=%s flush_s=%.3g", cfg->store.path,
            (double)o.flush_ns / WT_NS_PER_S);
    *out = s;
    return 0;
}

void wt_store_close(struct wt_store *s)
{
    if (!s)
        return;
    /* First: a publisher still running (an audit thread) must not reach a store being freed;
     * what it published until now is in the queue, for the writer's last flush. */
    wt_hub_remove_sink(s->hub, wt_store_sink, s);
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    sqlite3_finalize(s->ins_reading);
    sqlite3_finalize(s->ins_ticks);
    free(s->tk);
    sqlite3_finalize(s->ins_series);
    sqlite3_finalize(s->upd_run);
    sqlite3_finalize(s->ins_run);
    for (int k = 0; k < MQ_COUNT; k++)
        sqlite3_finalize(s->mq[k]);
    for (int k = 0; k < RQ_COUNT; k++)
        sqlite3_finalize(s->rq[k].st);
    if (s->db)
        sqlite3_close(s->db);
    if (s->mu_init) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
    }
    free(s->cur);
    free(s->spare);
    free(s->pend);
    free(s->tab);
    free(s->ms);
    free(s->seg.p);
    free(s->cold.p);
    free(s->span.p);
    free(s->merged.p);
    for (size_t i = 0; i < DCACHE_MAX; i++)
        free(s->dc[i].pts.p);
    for (size_t i = 0; i < TVIEW_MAX; i++)
        wt_ticks_view_free(&s->tv[i].v);
    pthread_mutex_destroy(&s->tv_mu);
    free(s);
}

/* ---- reading: raw rows and chunks, merged ---- */

static int pb_push(struct wt_point_buf *b, int64_t t, double v)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        struct wt_point *p = realloc(b->p, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        b->p = p;
        b->cap = nc;
    }
    b->p[b->n].t_ns = t;
    b->p[b->n].v = v;
    b->n++;
    return 0;
}

/* Takes reader statement k (see rq_sql), or prepares one of the caller's own when it is taken. */
static struct rq_use rq_take(struct wt_store *s, int k)
{
    struct rq_use u = {.k = k};
    struct rq_slot *r = &s->rq[k];
    if (!atomic_exchange(&r->busy, true)) {
        if (!r->st && sqlite3_prepare_v3(s->db, rq_sql[k], -1, SQLITE_PREPARE_PERSISTENT, &r->st,
                                         NULL) != SQLITE_OK) {
            r->st = NULL;
            atomic_store(&r->busy, false);
            return u;
        }
        u.q = r->st;
        u.cached = true;
        return u;
    }
    if (sqlite3_prepare_v2(s->db, rq_sql[k], -1, &u.q, NULL) != SQLITE_OK) {
        sqlite3_finalize(u.q);
        u.q = NULL;
    }
    return u;
}

/* Gives back what rq_take gave: reset and cleared (the cached one), or finalized. */
static void rq_give(struct wt_store *s, struct rq_use *u)
{
    if (!u->q)
        return;
    if (u->cached) {
        sqlite3_reset(u->q);
        sqlite3_clear_bindings(u->q);
        atomic_store(&s->rq[u->k].busy, false);
    } else {
        sqlite3_finalize(u->q);
    }
    u->q = NULL;
}

/* Reader statement k with ?1..?4 bound to id, a, b, c (as many as it has). */
static struct rq_use prep(struct wt_store *s, int k, int64_t id, int64_t a, int64_t b, int64_t c)
{
    struct rq_use u = rq_take(s, k);
    if (!u.q)
        return u;
    int np = sqlite3_bind_parameter_count(u.q);
    sqlite3_bind_int64(u.q, 1, id);
    if (np >= 2)
        sqlite3_bind_int64(u.q, 2, a);
    if (np >= 3)
        sqlite3_bind_int64(u.q, 3, b);
    if (np >= 4)
        sqlite3_bind_int64(u.q, 4, c);
    return u;
}

/* Appends the (t, v) rows of a query on readings. */
static int raw_rows(struct wt_store *s, int k, int64_t id, int64_t a, int64_t b, int64_t c,
                    struct wt_point_buf *out)
{
    struct rq_use u = prep(s, k, id, a, b, c);
    sqlite3_stmt *q = u.q;
    int rc;
    if (!q)
        return -EIO;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (pb_push(out, sqlite3_column_int64(q, 0), sqlite3_column_double(q, 1)) != 0) {
            rq_give(s, &u);
            return -ENOMEM;
        }
    }
    rq_give(s, &u);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

/* Whether this thread's query keeps decoded chunks (wt_store_cache). */
static bool dc_active(struct wt_store *s)
{
    return atomic_load(&s->dc_on) && pthread_equal(s->dc_owner, pthread_self());
}

void wt_store_cache(struct wt_store *s, bool on)
{
    if (on) {
        s->dc_owner = pthread_self();
        s->dc_len = 0;
        s->dc_next = 0;
        atomic_store(&s->dc_on, true);
        return;
    }
    if (!dc_active(s))
        return;
    atomic_store(&s->dc_on, false);
    for (size_t i = 0; i < DCACHE_MAX; i++) {
        free(s->dc[i].pts.p);
        memset(&s->dc[i], 0, sizeof s->dc[i]);
    }
    s->dc_len = 0;
}

uint64_t wt_store_chunks_decoded(struct wt_store *s)
{
    return atomic_load(&s->decoded);
}

/*
 * The points of chunk (id, t0) whose blob is b: from the query's cache when it holds them, else
 * decoded, into the cache while one is on (wt_store_cache) or into tmp. *pts is valid until the
 * next call. Returns 0, -EINVAL (the blob does not decode: logged) or -ENOMEM.
 */
/* The cached points of chunk (id, t0), or NULL. */
static const struct wt_point_buf *dc_find(struct wt_store *s, int64_t id, int64_t t0)
{
    if (!dc_active(s))
        return NULL;
    for (size_t i = 0; i < s->dc_len; i++) {
        if (s->dc[i].id == id && s->dc[i].t0 == t0)
            return &s->dc[i].pts;
    }
    return NULL;
}

static int chunk_points(struct wt_store *s, int64_t id, int64_t t0, const void *b, int len,
                        struct wt_point_buf *tmp, const struct wt_point_buf **pts)
{
    bool on = dc_active(s);
    struct dchunk *slot = NULL;
    struct wt_point_buf *dst = tmp;
    if (on) {
        const struct wt_point_buf *hit = dc_find(s, id, t0);
        if (hit) {
            *pts = hit;
            return 0;
        }
        slot = &s->dc[s->dc_next];
        s->dc_next = (s->dc_next + 1) % DCACHE_MAX;
        if (s->dc_len < DCACHE_MAX)
            s->dc_len++;
        slot->id = 0; /* no series has id 0: empty until decoded */
        dst = &slot->pts;
    }
    dst->n = 0;
    atomic_fetch_add(&s->decoded, 1);
    int d = wt_chunk_decode(b, (size_t)(len > 0 ? len : 0), dst);
    if (d) {
        if (d == -EINVAL)
            wt_error(MOD, "%s: series %" PRId64 ": a chunk does not decode", s->path, id);
        return d;
    }
    if (slot) {
        slot->id = id;
        slot->t0 = t0;
    }
    *pts = dst;
    return 0;
}

/* Decodes the blobs (column 0; column 1 its t0) of a query on chunks, in order, appending the
 * points in [lo, hi] until more than `limit` (0: all) are held. A blob that does not decode fails
 * the read. */
static int chunk_rows(struct wt_store *s, int k, int64_t id, int64_t a, int64_t b, int64_t lo,
                      int64_t hi, size_t limit, struct wt_point_buf *out)
{
    struct rq_use u = prep(s, k, id, a, b, 0);
    sqlite3_stmt *q = u.q;
    bool cached = dc_active(s);
    int rc;
    if (!q)
        return -EIO;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        size_t n0 = out->n, w = n0;
        if (cached) {
            const struct wt_point_buf *p;
            int d = chunk_points(s, id, sqlite3_column_int64(q, 1), sqlite3_column_blob(q, 0),
                                 sqlite3_column_bytes(q, 0), NULL, &p);
            for (size_t i = 0; d == 0 && i < p->n; i++) {
                if (p->p[i].t_ns >= lo && p->p[i].t_ns <= hi)
                    d = pb_push(out, p->p[i].t_ns, p->p[i].v);
            }
            if (d != 0) {
                rq_give(s, &u);
                return d == -ENOMEM ? -ENOMEM : -EIO;
            }
        } else {
            atomic_fetch_add(&s->decoded, 1);
            int d =
                wt_chunk_decode(sqlite3_column_blob(q, 0), (size_t)sqlite3_column_bytes(q, 0), out);
            if (d != 0) {
                if (d == -EINVAL)
                    wt_error(MOD, "%s: series %" PRId64 ": a chunk does not decode", s->path, id);
                rq_give(s, &u);
                return d == -ENOMEM ? -ENOMEM : -EIO;
            }
            for (size_t i = n0; i < out->n; i++) {
                if (out->p[i].t_ns >= lo && out->p[i].t_ns <= hi)
                    out->p[w++] = out->p[i];
            }
            out->n = w;
        }
        if (limit && out->n > limit)
            break;
    }
    rq_give(s, &u);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

/* Appends x then y (each in time order) to out in time order, only later than out's last; a
 * time in both is x's (chunks are x: what was stored first stays). */
static int merge_into(struct wt_point_buf *out, const struct wt_point_buf *x,
                      const struct wt_point_buf *y, size_t limit)
{
    size_t i = 0, j = 0, taken = 0;
    while ((i < x->n || j < y->n) && (!limit || taken < limit)) {
        struct wt_point p;
        if (j == y->n || (i < x->n && x->p[i].t_ns <= y->p[j].t_ns)) {
            p = x->p[i++];
            if (j < y->n && y->p[j].t_ns == p.t_ns)
                j++;
        } else {
            p = y->p[j++];
        }
        if (out->n && p.t_ns <= out->p[out->n - 1].t_ns)
            continue;
        if (pb_push(out, p.t_ns, p.v) != 0)
            return -ENOMEM;
        taken++;
    }
    return 0;
}

/* ---- packed ticks: merged with the readings table's rows ---- */

/*
 * wt_ticks_series through the opened rows: the row's slot is opened again only when it holds
 * another row (or the same seq with other bytes: a seq reused after a delete).
 */
static int ticks_series(struct wt_store *s, int64_t seq, const void *b, int len, int64_t id,
                        int64_t lo, int64_t hi, struct wt_point_buf *out)
{
    if (!b || len <= 0)
        return -EINVAL;
    pthread_mutex_lock(&s->tv_mu);
    struct tview *e = &s->tv[(uint64_t)seq % TVIEW_MAX];
    int rc = 0;
    if (e->seq != seq || !wt_ticks_view_is(&e->v, b, (size_t)len)) {
        wt_ticks_view_free(&e->v);
        e->seq = 0;
        rc = wt_ticks_view_open(b, (size_t)len, &e->v);
        if (rc == 0)
            e->seq = seq;
    }
    if (rc == 0)
        rc = wt_ticks_view_series(&e->v, id, lo, hi, out);
    pthread_mutex_unlock(&s->tv_mu);
    return rc;
}

/* A ticks blob that does not decode fails the read, named. */
static int ticks_bad(struct wt_store *s, int64_t id, int64_t seq, int d)
{
    if (d == -EINVAL)
        wt_error(MOD, "%s: series %" PRId64 ": ticks row %" PRId64 " does not decode", s->path, id,
                 seq);
    return d == -ENOMEM ? -ENOMEM : -EIO;
}

struct tpoint {
    int64_t t;
    double v;
    size_t k; /* the order read: rows by seq, points in time order */
};

static int tpoint_cmp(const void *a, const void *b)
{
    const struct tpoint *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* Puts the points of rows that overlap in time order, of a time held twice the first read. */
static int ticks_sort(struct wt_point_buf *b)
{
    struct tpoint *t = malloc(b->n * sizeof *t);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < b->n; i++)
        t[i] = (struct tpoint){b->p[i].t_ns, b->p[i].v, i};
    qsort(t, b->n, sizeof *t, tpoint_cmp);
    size_t w = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (w && t[i].t == b->p[w - 1].t_ns)
            continue;
        b->p[w].t_ns = t[i].t;
        b->p[w].v = t[i].v;
        w++;
    }
    b->n = w;
    free(t);
    return 0;
}

/* Series id's readings in the ticks with lo <= t <= hi into out (emptied first), in time order;
 * of a time written twice the first written. */
static int ticks_range(struct wt_store *s, int64_t id, int64_t lo, int64_t hi,
                       struct wt_point_buf *out)
{
    out->n = 0;
    if (hi < lo)
        return 0;
    struct rq_use u = prep(s, RQ_TICKS_RANGE, id, lo, hi, 0);
    bool sorted = true;
    int rc, d = 0;
    if (!u.q)
        return -EIO;
    while ((rc = sqlite3_step(u.q)) == SQLITE_ROW) {
        size_t n0 = out->n;
        int64_t seq = sqlite3_column_int64(u.q, 0);
        const void *blob = sqlite3_column_blob(u.q, 1);
        d = ticks_series(s, seq, blob, sqlite3_column_bytes(u.q, 1), id, lo, hi, out);
        if (d) {
            d = ticks_bad(s, id, seq, d);
            break;
        }
        if (n0 && out->n > n0 && out->p[n0].t_ns <= out->p[n0 - 1].t_ns)
            sorted = false;
    }
    rq_give(s, &u);
    if (d)
        return d;
    if (rc != SQLITE_DONE)
        return -EIO;
    return sorted ? 0 : ticks_sort(out);
}

/*
 * Series id's last reading in the ticks at or before t (before) or its first at or after t.
 * Rows come by their newest reading down (oldest up), so the walk stops at the first row that
 * cannot hold a nearer one; of a time in two rows the first written. *have false: none.
 */
static int ticks_edge(struct wt_store *s, int64_t id, int64_t t, bool before, struct wt_point *p,
                      bool *have)
{
    struct rq_use u = prep(s, before ? RQ_TICKS_DESC : RQ_TICKS_ASC, id, t, 0, 0);
    struct wt_point_buf tmp = {0};
    int64_t best_seq = 0;
    int rc, d = 0;
    *have = false;
    if (!u.q)
        return -EIO;
    while ((rc = sqlite3_step(u.q)) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(u.q, 0), bound = sqlite3_column_int64(u.q, 2);
        if (*have && (before ? bound < p->t_ns : bound > p->t_ns))
            break;
        int64_t lo = before ? (*have ? p->t_ns : INT64_MIN) : t;
        int64_t hi = before ? t : (*have ? p->t_ns : INT64_MAX);
        tmp.n = 0;
        const void *blob = sqlite3_column_blob(u.q, 1);
        d = ticks_series(s, seq, blob, sqlite3_column_bytes(u.q, 1), id, lo, hi, &tmp);
        if (d) {
            d = ticks_bad(s, id, seq, d);
            break;
        }
        if (!tmp.n)
            continue;
        struct wt_point q = before ? tmp.p[tmp.n - 1] : tmp.p[0];
        if (!*have || (before ? q.t_ns > p->t_ns : q.t_ns < p->t_ns) ||
            (q.t_ns == p->t_ns && seq < best_seq)) {
            *p = q;
            best_seq = seq;
            *have = true;
        }
    }
    rq_give(s, &u);
    free(tmp.p);
    if (d)
        return d;
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

/* The reading at or before t (before) or at or after t of the readings table and the ticks,
 * appended to out when later than its last: a time in both is the table's (written first). */
static int raw_edge(struct wt_store *s, int64_t id, int64_t t, bool before,
                    struct wt_point_buf *out)
{
    struct wt_point_buf r = {0};
    struct wt_point p = {0};
    bool have = false;
    int rc = raw_rows(s, before ? RQ_BEFORE_RAW : RQ_AFTER_RAW, id, t, 0, 0, &r);
    if (rc == 0)
        rc = ticks_edge(s, id, t, before, &p, &have);
    if (rc == 0 && r.n && (!have || (before ? r.p[0].t_ns >= p.t_ns : r.p[0].t_ns <= p.t_ns))) {
        p = r.p[0];
        have = true;
    }
    if (rc == 0 && have && (!out->n || p.t_ns > out->p[out->n - 1].t_ns))
        rc = pb_push(out, p.t_ns, p.v);
    free(r.p);
    return rc;
}

/* The readings in [lo, hi] of the readings table and the ticks, merged as raw_edge does, at most
 * limit (0: all), appended to out after its last. */
static int raw_range(struct wt_store *s, int64_t id, int64_t lo, int64_t hi, size_t limit,
                     struct wt_point_buf *out)
{
    struct wt_point_buf r = {0}, k = {0};
    int rc = raw_rows(s, RQ_RANGE_RAW, id, lo, hi, limit ? (int64_t)limit : -1, &r);
    if (rc == 0)
        rc = ticks_range(s, id, lo, hi, &k);
    if (rc == 0)
        rc = merge_into(out, &r, &k, limit);
    free(r.p);
    free(k.p);
    return rc;
}

/* Readings in [lo, hi], at most limit (0: all), merged. */
static int read_range(struct wt_store *s, int64_t id, int64_t lo, int64_t hi, size_t limit,
                      struct wt_point_buf *out)
{
    struct wt_point_buf c = {0}, r = {0};
    if (hi < lo)
        return 0;
    /* a chunk lies inside one span: one that reaches lo starts after lo - SPAN_NS */
    int64_t from = lo > INT64_MIN + SPAN_NS ? lo - SPAN_NS : INT64_MIN;
    int rc = chunk_rows(s, RQ_RANGE_CHUNKS, id, from, hi, lo, hi, limit, &c);
    if (rc == 0)
        rc = raw_range(s, id, lo, hi, limit, &r);
    if (rc == 0)
        rc = merge_into(out, &c, &r, limit);
    free(c.p);
    free(r.p);
    return rc;
}

/* The last reading at or before t (*have false: none). */
static int read_at_or_before(struct wt_store *s, int64_t id, int64_t t, struct wt_point *p,
                             bool *have)
{
    struct wt_point_buf c = {0}, r = {0};
    *have = false;
    int rc = chunk_rows(s, RQ_BEFORE_CHUNK, id, t, 0, INT64_MIN, t, 0, &c);
    if (rc == 0)
        rc = raw_edge(s, id, t, true, &r);
    if (rc == 0 && (c.n || r.n)) {
        *have = true;
        if (c.n && (!r.n || c.p[c.n - 1].t_ns >= r.p[0].t_ns))
            *p = c.p[c.n - 1];
        else
            *p = r.p[0];
    }
    free(c.p);
    free(r.p);
    return rc;
}

/* The first reading at or after t (*have false: none). */
static int read_at_or_after(struct wt_store *s, int64_t id, int64_t t, struct wt_point *p,
                            bool *have)
{
    struct wt_point_buf c = {0}, r = {0};
    *have = false;
    int64_t from = t > INT64_MIN + SPAN_NS ? t - SPAN_NS : INT64_MIN;
    int rc = chunk_rows(s, RQ_AFTER_CHUNK, id, from, t, t, INT64_MAX, 0, &c);
    if (rc == 0)
        rc = raw_edge(s, id, t, false, &r);
    if (rc == 0 && (c.n || r.n)) {
        *have = true;
        if (c.n && (!r.n || c.p[0].t_ns <= r.p[0].t_ns))
            *p = c.p[0];
        else
            *p = r.p[0];
    }
    free(c.p);
    free(r.p);
    return rc;
}

/* A read transaction around several statements, unless the caller holds one: compaction moves
 * readings from one table to the other, and a read must see either side, once. */
static bool snap_run(struct wt_store *s, int k)
{
    struct rq_use u = rq_take(s, k);
    bool ok = u.q && sqlite3_step(u.q) == SQLITE_DONE;
    rq_give(s, &u);
    return ok;
}

static bool snap_begin(struct wt_store *s)
{
    return sqlite3_get_autocommit(s->db) && snap_run(s, RQ_READ_BEGIN);
}

static void snap_end(struct wt_store *s, bool began)
{
    if (began)
        (void)snap_run(s, RQ_READ_END);
}

int wt_store_read(struct wt_store *s, int64_t id, int64_t a, int64_t b, int flags, size_t limit,
                  struct wt_point_buf *out)
{
    int rc = 0;
    bool began = snap_begin(s);
    if (flags & WT_RD_EDGES) {
        /* the reading at or before a, those inside, and the first at or after b */
        struct wt_point p;
        bool have;
        rc = read_at_or_before(s, id, a, &p, &have);
        if (rc == 0 && have && (!out->n || p.t_ns > out->p[out->n - 1].t_ns))
            rc = pb_push(out, p.t_ns, p.v);
        if (rc == 0 && a < INT64_MAX && b > INT64_MIN)
            rc = read_range(s, id, a + 1, b - 1, limit, out);
        int64_t from = b > a ? b : (a < INT64_MAX ? a + 1 : a);
        if (rc == 0)
            rc = read_at_or_after(s, id, from, &p, &have);
        if (rc == 0 && have && (!out->n || p.t_ns > out->p[out->n - 1].t_ns))
            rc = pb_push(out, p.t_ns, p.v);
        snap_end(s, began);
        return rc;
    }
    if (flags & WT_RD_AFTER) {
        if (a == INT64_MAX) {
            snap_end(s, began);
            return 0;
        }
        a++;
    }
    rc = read_range(s, id, a, b, limit, out);
    snap_end(s, began);
    return rc;
}

/*
 * One chunk of a window (a row of RQ_WIN_CHUNKS or RQ_WIN_AFTER: t0, t1, v0, v1, e, cov):
 * the raw rows r before it first, then the chunk. With summaries, a chunk no raw row falls in is
 * not decoded when it lies before a (its last point), after b (its first) or inside [a, b]
 * (wt_window_add_sum) and its summary is known; else its points are merged with the raw rows
 * inside it (a time in both is the chunk's, as in merge_into).
 */
static int win_chunk(struct wt_store *s, int64_t id, sqlite3_stmt *q, bool summaries,
                     const struct wt_point_buf *r, size_t *j, struct wt_point_buf *tmp,
                     struct wt_window *w)
{
    int64_t t0 = sqlite3_column_int64(q, 0), t1 = sqlite3_column_int64(q, 1);
    while (*j < r->n && r->p[*j].t_ns < t0) {
        wt_window_add(w, r->p[*j].t_ns, r->p[*j].v);
        (*j)++;
    }
    bool clash = *j < r->n && r->p[*j].t_ns <= t1;
    if (summaries && !clash && sqlite3_column_type(q, 2) != SQLITE_NULL &&
        sqlite3_column_type(q, 3) != SQLITE_NULL) {
        double v0 = sqlite3_column_double(q, 2), v1 = sqlite3_column_double(q, 3);
        if (t1 <= w->a) {
            wt_window_add(w, t1, v1);
            return 0;
        }
        if (t0 >= w->b) {
            wt_window_add(w, t0, v0);
            return 0;
        }
        if (t0 >= w->a && t1 <= w->b && sqlite3_column_type(q, 4) != SQLITE_NULL &&
            sqlite3_column_type(q, 5) != SQLITE_NULL) {
            wt_window_add_sum(w, t0, v0, t1, v1, sqlite3_column_double(q, 4),
                              sqlite3_column_int64(q, 5));
            return 0;
        }
    }
    const struct wt_point_buf *p = dc_find(s, id, t0);
    if (!p) {
        /* the blob, by its key: the summaries' index does not hold it */
        struct rq_use u = prep(s, RQ_CHUNK_DATA, id, t0, 0, 0);
        int d = -EIO;
        if (u.q && sqlite3_step(u.q) == SQLITE_ROW)
            d = chunk_points(s, id, t0, sqlite3_column_blob(u.q, 0), sqlite3_column_bytes(u.q, 0),
                             tmp, &p);
        rq_give(s, &u);
        if (d)
            return d == -ENOMEM ? -ENOMEM : -EIO;
    }
    for (size_t i = 0; i < p->n; i++) {
        int64_t t = p->p[i].t_ns;
        while (*j < r->n && r->p[*j].t_ns < t) {
            wt_window_add(w, r->p[*j].t_ns, r->p[*j].v);
            (*j)++;
        }
        if (*j < r->n && r->p[*j].t_ns == t)
            (*j)++;
        wt_window_add(w, t, p->p[i].v);
    }
    return 0;
}

static int one_value(struct wt_store *s, int k, int64_t id, int64_t a, int64_t *v);

int wt_store_window(struct wt_store *s, int64_t id, bool summaries, struct wt_window *w)
{
    int64_t a = w->a, b = w->b, lo = a, t0b = 0;
    struct wt_point_buf r = {0}, tmp = {0};
    size_t j = 0;
    bool after = true;
    int rc, st = SQLITE_DONE;
    if (b <= a)
        return 0;
    bool began = snap_begin(s);
    /* the raw rows: the last one at or before a, those inside, the first at or after b */
    rc = raw_edge(s, id, a, true, &r);
    if (rc == 0 && b - a > 1)
        rc = raw_range(s, id, a + 1, b - 1, 0, &r);
    if (rc == 0)
        rc = raw_edge(s, id, b, false, &r);
    /* the chunks from the one that holds or precedes a to the last one that starts by b */
    if (rc == 0) {
        int h = one_value(s, RQ_WIN_BEFORE, id, a, &t0b);
        if (h < 0)
            rc = -EIO;
        else if (h > 0)
            lo = t0b;
    }
    if (rc == 0) {
        struct rq_use u = prep(s, RQ_WIN_CHUNKS, id, lo, b, 0);
        if (!u.q)
            rc = -EIO;
        while (rc == 0 && (st = sqlite3_step(u.q)) == SQLITE_ROW) {
            if (sqlite3_column_int64(u.q, 1) >= b)
                after = false;
            rc = win_chunk(s, id, u.q, summaries, &r, &j, &tmp, w);
        }
        if (rc == 0 && st != SQLITE_DONE)
            rc = -EIO;
        rq_give(s, &u);
    }
    /* no chunk reaches b: the first one after it */
    if (rc == 0 && after) {
        struct rq_use u = prep(s, RQ_WIN_AFTER, id, b, 0, 0);
        if (!u.q)
            rc = -EIO;
        else if ((st = sqlite3_step(u.q)) == SQLITE_ROW)
            rc = win_chunk(s, id, u.q, summaries, &r, &j, &tmp, w);
        else if (st != SQLITE_DONE)
            rc = -EIO;
        rq_give(s, &u);
    }
    for (; rc == 0 && j < r.n; j++)
        wt_window_add(w, r.p[j].t_ns, r.p[j].v);
    snap_end(s, began);
    free(r.p);
    free(tmp.p);
    return rc;
}

static int raw_bound(struct wt_store *s, int64_t id, bool newest, int64_t *v);

int wt_store_rows_oldest(struct wt_store *s, int64_t id, int64_t *t)
{
    return raw_bound(s, id, false, t);
}

/* One int64 of a query: 1 (not NULL), 0 (NULL or no row) or -EIO. */
static int one_value(struct wt_store *s, int k, int64_t id, int64_t a, int64_t *v)
{
    struct rq_use u = prep(s, k, id, a, 0, 0);
    sqlite3_stmt *q = u.q;
    int rc = -EIO;
    if (!q)
        return -EIO;
    int st = sqlite3_step(q);
    if (st == SQLITE_ROW) {
        rc = sqlite3_column_type(q, 0) != SQLITE_NULL;
        *v = sqlite3_column_int64(q, 0);
    } else if (st == SQLITE_DONE) {
        rc = 0;
    }
    rq_give(s, &u);
    return rc;
}

/* The time of series id's oldest (newest) reading outside the chunks: in the readings table or
 * the ticks. 1, 0 (none) or -EIO. */
static int raw_bound(struct wt_store *s, int64_t id, bool newest, int64_t *v)
{
    int64_t r = 0;
    struct wt_point p = {0};
    bool have = false;
    int h = one_value(s, newest ? RQ_RAW_MAX : RQ_RAW_MIN, id, 0, &r);
    if (h < 0 || ticks_edge(s, id, newest ? INT64_MAX : INT64_MIN, newest, &p, &have) != 0)
        return -EIO;
    if (have && (!h || (newest ? p.t_ns > r : p.t_ns < r))) {
        r = p.t_ns;
        h = 1;
    }
    *v = r;
    return h;
}

int wt_store_bounds(struct wt_store *s, int64_t id, int64_t *first, int64_t *last)
{
    int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    bool began = snap_begin(s);
    int hr = raw_bound(s, id, false, &r0);
    int hc = hr < 0 ? hr : one_value(s, RQ_CHUNK_FIRST, id, 0, &c0);
    if (hr > 0 && raw_bound(s, id, true, &r1) < 0)
        hr = -EIO;
    if (hc > 0 && one_value(s, RQ_CHUNK_LAST, id, 0, &c1) < 0)
        hc = -EIO;
    snap_end(s, began);
    if (hr < 0 || hc < 0)
        return -EIO;
    if (!hr && !hc)
        return 0;
    *first = !hc || (hr && r0 < c0) ? r0 : c0;
    *last = !hc || (hr && r1 > c1) ? r1 : c1;
    return 1;
}

/* Series id's readings in the ticks after `after` that neither the readings table nor a chunk
 * also holds (*n), and the time of the oldest (*oldest, when *n). 0, -EIO or -ENOMEM. */
static int ticks_count_after(struct wt_store *s, int64_t id, int64_t after, int64_t *n,
                             int64_t *oldest)
{
    struct wt_point_buf k = {0}, r = {0}, c = {0}, both_r = {0};
    *n = 0;
    if (after == INT64_MAX)
        return 0;
    int rc = ticks_range(s, id, after + 1, INT64_MAX, &k);
    if (rc == 0 && k.n) {
        int64_t lo = k.p[0].t_ns, hi = k.p[k.n - 1].t_ns;
        int64_t from = lo > INT64_MIN + SPAN_NS ? lo - SPAN_NS : INT64_MIN;
        rc = raw_rows(s, RQ_RANGE_RAW, id, lo, hi, -1, &both_r);
        if (rc == 0)
            rc = chunk_rows(s, RQ_RANGE_CHUNKS, id, from, hi, lo, hi, 0, &c);
        if (rc == 0)
            rc = merge_into(&r, &c, &both_r, 0);
    }
    if (rc == 0 && k.n) {
        size_t both = 0;
        for (size_t i = 0, j = 0; i < k.n; i++) {
            while (j < r.n && r.p[j].t_ns < k.p[i].t_ns)
                j++;
            both += j < r.n && r.p[j].t_ns == k.p[i].t_ns;
        }
        *n = (int64_t)(k.n - both);
        *oldest = k.p[0].t_ns;
    }
    free(k.p);
    free(r.p);
    free(c.p);
    free(both_r.p);
    return rc;
}

int wt_store_count_after(struct wt_store *s, int64_t id, int64_t after, uint64_t *n,
                         int64_t *oldest)
{
    struct wt_point_buf c = {0};
    int64_t k = 0, rmin = 0, cn = 0;
    int rc = 0;
    *n = 0;
    *oldest = 0;
    bool began = snap_begin(s);
    /* whole chunks by their count; the one that holds `after` (if any) decoded */
    int64_t from = after > INT64_MIN + SPAN_NS ? after - SPAN_NS : INT64_MIN;
    rc = chunk_rows(s, RQ_CA_CHUNKS, id, from, after, after == INT64_MAX ? after : after + 1,
                    INT64_MAX, 0, &c);
    if (rc == 0 && one_value(s, RQ_CA_SUM, id, after, &cn) < 0)
        rc = -EIO;
    int64_t c0 = 0;
    int hc = rc ? 0 : one_value(s, RQ_CA_MIN_T0, id, after, &c0);
    int hr = rc ? 0 : one_value(s, RQ_CA_RAW_MIN, id, after, &rmin);
    if (rc == 0 && (hc < 0 || hr < 0 || one_value(s, RQ_CA_COUNT, id, after, &k) < 0))
        rc = -EIO;
    int64_t kt = 0, tmin = 0;
    if (rc == 0)
        rc = ticks_count_after(s, id, after, &kt, &tmin);
    if (rc == 0 && kt && (!hr || tmin < rmin)) {
        rmin = tmin;
        hr = 1;
    }
    snap_end(s, began);
    if (rc == 0) {
        *n = (uint64_t)(k + kt + cn) + c.n;
        int64_t o = INT64_MAX;
        if (c.n)
            o = c.p[0].t_ns;
        if (hc > 0 && c0 < o)
            o = c0;
        if (hr > 0 && rmin < o)
            o = rmin;
        *oldest = o == INT64_MAX ? 0 : o;
    }
    free(c.p);
    return rc;
}

int wt_store_newest(struct wt_store *s, int64_t *t)
{
    int64_t r = 0, c = 0;
    bool began = snap_begin(s);
    int64_t k = 0;
    int hr = one_value(s, RQ_NEWEST_RAW, 0, 0, &r);
    int hc = hr < 0 ? 0 : one_value(s, RQ_NEWEST_CHUNK, 0, 0, &c);
    int hk = hr < 0 || hc < 0 ? 0 : one_value(s, RQ_TICKS_NEWEST, 0, 0, &k);
    snap_end(s, began);
    if (hr < 0 || hc < 0 || hk < 0)
        return -EIO;
    if (hk > 0 && (!hr || k > r)) {
        r = k;
        hr = 1;
    }
    if (!hr && !hc)
        return 0;
    *t = !hc || (hr && r > c) ? r : c;
    return 1;
}
int wt_store_rollups(struct wt_store *s, int64_t id, int64_t a, int64_t b, struct wt_rollup **rows,
                     size_t *n)
{
    size_t cap = 0;
    int rc;
    *rows = NULL;
    *n = 0;
    if (b <= a)
        return 0;
    struct rq_use u = prep(s, RQ_ROLLUPS, id, a - WT_MINUTE_NS, b, 0);
    sqlite3_stmt *q = u.q;
    if (!q)
        return -EIO;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct wt_rollup *p = realloc(*rows, nc * sizeof *p);
            if (!p) {
                rc = SQLITE_NOMEM;
                break;
            }
            *rows = p;
            cap = nc;
        }
        struct wt_rollup *r = &(*rows)[(*n)++];
        r->t_ns = sqlite3_column_int64(q, 0);
        r->n = sqlite3_column_int64(q, 1);
        for (int c = 0; c < 4; c++) {
            double v = sqlite3_column_type(q, 2 + c) == SQLITE_NULL
                           ? NAN
                           : sqlite3_column_double(q, 2 + c);
            if (c == 0)
                r->min = v;
            else if (c == 1)
                r->max = v;
            else if (c == 2)
                r->mean = v;
            else
                r->last = v;
        }
        r->energy = sqlite3_column_double(q, 6);
        r->covered_ns = sqlite3_column_int64(q, 7);
    }
    rq_give(s, &u);
    if (rc != SQLITE_DONE) {
        free(*rows);
        *rows = NULL;
        *n = 0;
        return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
    }
    return 0;
}

/* ---- maintenance: rollups, compaction and pruning ---- */

/* The integer a one-value maintenance query returns; *null when NULL or on error (which fails
 * the pass: bounds read from a failed query would be wrong). */
static int64_t one_int(struct wt_store *s, int q, int64_t a, int64_t b, bool *null)
{
    sqlite3_stmt *st = mq(s, q);
    int64_t v = 0;
    *null = true;
    if (!st) {
        s->mq_failed = true;
        return 0;
    }
    sqlite3_bind_int64(st, 1, a);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int64(st, 2, b);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        v = sqlite3_column_int64(st, 0);
        *null = false;
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        s->mq_failed = true;
    }
    sqlite3_reset(st);
    return v;
}

static void acc_add_energy(struct wt_store *s, int64_t r0, int nmin, int64_t t0, int64_t t1,
                           double delta, bool covered)
{
    /* spread the segment [t0, t1] over the minutes of [r0, r0 + nmin min) it overlaps */
    int64_t lo = t0 > r0 ? t0 : r0;
    int64_t end = r0 + nmin * WT_MINUTE_NS;
    int64_t hi = t1 < end ? t1 : end;
    double span = (double)(t1 - t0);
    while (lo < hi) {
        int k = (int)((lo - r0) / WT_MINUTE_NS);
        int64_t mend = r0 + (k + 1) * WT_MINUTE_NS;
        int64_t e = hi < mend ? hi : mend;
        s->acc[k].energy += delta * (double)(e - lo) / span;
        if (covered)
            s->acc[k].covered_ns += (double)(e - lo);
        lo = e;
    }
}

/* Reads the exact bounds of a series not known yet. */
static void ms_query(struct wt_store *s, struct mser *m)
{
    bool null;
    int64_t lo, hi;
    m->lo = INT64_MAX;
    m->hi = INT64_MIN;
    int hb = wt_store_bounds(s, m->id, &lo, &hi);
    if (hb < 0)
        s->mq_failed = true;
    if (hb > 0) {
        m->lo = lo;
        m->hi = hi;
    }
    int64_t v = one_int(s, MQ_MIN_T, m->id, 0, &null);
    m->raw_lo = null ? INT64_MAX : v;
    v = one_int(s, MQ_ROLL_MIN_T, m->id, 0, &null);
    m->roll_lo = null ? INT64_MAX : v;
    m->known = true;
}

/*
 * Whether a pass has work on a known series; each is a necessary condition of the work that
 * roll_series, prune_raw and prune_rollups would do, so skipping the others changes nothing.
 */
static bool roll_due(const struct mser *m)
{
    if (m->hi < m->lo)
        return false;
    int64_t r0 = m->rolled_to ? m->rolled_to : wt_minute_floor(m->lo);
    return wt_minute_floor(m->hi) > r0;
}

static bool raw_prune_due(const struct mser *m, int64_t raw_cut)
{
    return m->rolled_to && m->hi >= m->lo && m->lo < raw_cut && m->lo < m->rolled_to;
}

/* Rolls up to ROLL_MAX_MIN complete minutes of one series. Returns rows read, or -EIO. */
static int roll_series(struct wt_store *s, const struct wt_run_list *runs, struct mser *m)
{
    int64_t id = m->id;
    int64_t first, last;
    int hb = wt_store_bounds(s, id, &first, &last);
    if (hb < 0)
        return -EIO;
    if (hb == 0) {
        m->lo = INT64_MAX;
        m->hi = INT64_MIN;
        return 0;
    }
    m->hi = last;
    m->lo = first;
    int64_t target = wt_minute_floor(last);
    int64_t r0 = m->rolled_to;
    if (!r0)
        r0 = wt_minute_floor(first);
    if (target <= r0)
        return 0;
    int nmin = (int)((target - r0) / WT_MINUTE_NS);
    if (nmin > ROLL_MAX_MIN)
        nmin = ROLL_MAX_MIN;
    int64_t end = r0 + nmin * WT_MINUTE_NS;
    memset(s->acc, 0, sizeof s->acc);

    struct wt_segment_rule rule = wt_segment_rule_for(runs, m->node, m->kind);
    /* the reading at or before r0, those inside, and the first at or after end */
    s->seg.n = 0;
    int src = wt_store_read(s, id, r0, end, WT_RD_EDGES, 0, &s->seg);
    if (src != 0)
        return src;
    int rows = 0;
    bool have = false;
    int64_t pt = 0;
    double pv = 0;
    for (size_t i = 0; i < s->seg.n; i++) {
        int64_t t = s->seg.p[i].t_ns;
        double v = s->seg.p[i].v;
        rows++;
        if (t >= r0 && t < end) {
            struct minute_acc *a = &s->acc[(t - r0) / WT_MINUTE_NS];
            if (!a->n || v < a->min)
                a->min = v;
            if (!a->n || v > a->max)
                a->max = v;
            a->sum += v;
            a->last = v;
            a->n++;
        }
        if (have && m->kind != WT_SK_GAUGE && t > pt) {
            double d;
            bool cov;
            wt_segment(&rule, pt, pv, t, v, &d, &cov);
            acc_add_energy(s, r0, nmin, pt, t, d, cov);
        }
        have = true;
        pt = t;
        pv = v;
    }

    sqlite3_stmt *st = mq(s, MQ_INS_ROLLUP);
    if (!st)
        return -EIO;
    int rc = 0;
    for (int k = 0; k < nmin && rc == 0; k++) {
        struct minute_acc *a = &s->acc[k];
        if (!a->n && a->covered_ns == 0 && a->energy == 0)
            continue;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, r0 + k * WT_MINUTE_NS);
        sqlite3_bind_int64(st, 3, a->n);
        if (a->n) {
            sqlite3_bind_double(st, 4, a->min);
            sqlite3_bind_double(st, 5, a->max);
            sqlite3_bind_double(st, 6, a->sum / (double)a->n);
            sqlite3_bind_double(st, 7, a->last);
        } else {
            for (int c = 4; c <= 7; c++)
                sqlite3_bind_null(st, c);
        }
        sqlite3_bind_double(st, 8, a->energy);
        sqlite3_bind_int64(st, 9, (int64_t)(a->covered_ns + 0.5));
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = -EIO;
        sqlite3_reset(st);
        if (r0 + k * WT_MINUTE_NS < m->roll_lo)
            m->roll_lo = r0 + k * WT_MINUTE_NS;
    }
    if (rc)
        return rc;
    st = mq(s, MQ_SET_ROLLED);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, end);
    sqlite3_bind_int64(st, 2, id);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_reset(st);
    if (rc)
        return rc;
    m->rolled_to = end;
    return rows + nmin;
}

/* Deletes series id's rows older than cut from a table. Returns rows deleted or -EIO. */
static int delete_before(struct wt_store *s, int q, int64_t id, int64_t cut)
{
    sqlite3_stmt *st = mq(s, q);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, cut);
    int rc = sqlite3_step(st);
    int changed = sqlite3_changes(s->db);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? changed : -EIO;
}

/* Deletes raw readings older than raw_cut that rollups cover, at most an hour's worth. */
static int prune_raw(struct wt_store *s, struct mser *m, int64_t raw_cut)
{
    /* keep the last reading at or before rolled_to: the segment across it needs it */
    struct wt_point kp = {0};
    bool have;
    int64_t first, last;
    if (read_at_or_before(s, m->id, m->rolled_to, &kp, &have) != 0)
        return -EIO;
    int hb = wt_store_bounds(s, m->id, &first, &last);
    if (hb < 0)
        return -EIO;
    if (hb == 0) {
        m->lo = INT64_MAX;
        m->hi = INT64_MIN;
        return 0;
    }
    m->lo = first;
    int64_t keep = have ? kp.t_ns : first;
    int64_t cut = raw_cut < keep ? raw_cut : keep;
    if (cut > first + 3600 * WT_NS_PER_S)
        cut = first + 3600 * WT_NS_PER_S;
    if (cut <= first)
        return 0;
    int n = delete_before(s, MQ_DEL_READINGS, m->id, cut);
    /* whole chunks only: one that holds cut stays until all of it is older */
    int c = n < 0 ? n : delete_before(s, MQ_DEL_CHUNKS, m->id, cut);
    if (n < 0 || c < 0)
        return -EIO;
    hb = wt_store_bounds(s, m->id, &first, &last);
    if (hb < 0)
        return -EIO;
    m->lo = hb ? first : INT64_MAX;
    if (!hb)
        m->hi = INT64_MIN;
    return n + c;
}

/* Deletes rollups older than roll_cut, at most a day's worth. */
static int prune_rollups(struct wt_store *s, struct mser *m, int64_t roll_cut)
{
    bool null;
    int64_t first = one_int(s, MQ_ROLL_MIN_T, m->id, 0, &null);
    m->roll_lo = null ? INT64_MAX : first;
    if (null || first >= roll_cut)
        return 0;
    int64_t cut = roll_cut;
    if (cut > first + 86400 * WT_NS_PER_S)
        cut = first + 86400 * WT_NS_PER_S;
    int n = delete_before(s, MQ_DEL_ROLLUPS, m->id, cut);
    if (n >= 0)
        m->roll_lo = cut;
    return n;
}

/* Floors t to its span. */
static int64_t span_floor(int64_t t)
{
    int64_t q = t / SPAN_NS;
    if (t % SPAN_NS < 0)
        q--;
    return q * SPAN_NS;
}

static bool compact_due(const struct mser *m, int64_t cut)
{
    return m->raw_lo < cut;
}

/* Writes the points of one span (merged with the chunk already there) as its chunk, with its
 * summary by rule. */
static int compact_span(struct wt_store *s, int64_t id, const struct wt_segment_rule *rule,
                        int64_t span0, const struct wt_point *p, size_t n)
{
    sqlite3_stmt *st = mq(s, MQ_SPAN_CHUNKS);
    int rc;
    if (!st)
        return -EIO;
    s->span.n = 0;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, span0);
    sqlite3_bind_int64(st, 3, span0 + SPAN_NS);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int d = wt_chunk_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                                &s->span);
        if (d != 0) {
            sqlite3_reset(st);
            db_fail(s, "series %" PRId64 ": a chunk does not decode", id);
            return -EIO;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -EIO;
    struct wt_point_buf fresh = {.p = (struct wt_point *)p, .n = n, .cap = n};
    s->merged.n = 0;
    if (merge_into(&s->merged, &s->span, &fresh, 0) != 0)
        return -ENOMEM;
    uint8_t *blob = NULL;
    size_t len = 0;
    if ((rc = wt_chunk_encode(s->merged.p, s->merged.n, &blob, &len)) != 0)
        return rc;
    if (s->span.n) {
        st = mq(s, MQ_DEL_SPAN);
        rc = -EIO;
        if (st) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_int64(st, 2, span0);
            sqlite3_bind_int64(st, 3, span0 + SPAN_NS);
            rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
            sqlite3_reset(st);
        }
        if (rc) {
            free(blob);
            return rc;
        }
    }
    st = mq(s, MQ_INS_CHUNK);
    if (!st) {
        free(blob);
        return -EIO;
    }
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, s->merged.p[0].t_ns);
    sqlite3_bind_int64(st, 3, s->merged.p[s->merged.n - 1].t_ns);
    sqlite3_bind_int64(st, 4, (int64_t)s->merged.n);
    sqlite3_bind_blob(st, 5, blob, (int)len, SQLITE_STATIC);
    double e;
    int64_t cov;
    wt_segment_sum(rule, s->merged.p, s->merged.n, &e, &cov);
    sqlite3_bind_double(st, 6, s->merged.p[0].v);
    sqlite3_bind_double(st, 7, s->merged.p[s->merged.n - 1].v);
    sqlite3_bind_double(st, 8, e);
    sqlite3_bind_int64(st, 9, cov);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    if (rc)
        db_fail(s, "cannot write a chunk: %s", sqlite3_errmsg(s->db));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    free(blob);
    return rc;
}

/*
 * Moves up to COMPACT_MAX raw readings of a series older than cut (a span boundary) into the
 * chunks of their spans, in the pass's transaction: the rows are deleted in the same one, so a
 * kill at any point leaves each reading in exactly one of the tables. Returns readings moved.
 */
static int compact_series(struct wt_store *s, const struct wt_run_list *runs, struct mser *m,
                          int64_t cut)
{
    struct wt_segment_rule rule = wt_segment_rule_for(runs, m->node, m->kind);
    sqlite3_stmt *st = mq(s, MQ_COMPACT_RAW);
    int rc;
    if (!st)
        return -EIO;
    s->cold.n = 0;
    sqlite3_bind_int64(st, 1, m->id);
    sqlite3_bind_int64(st, 2, cut);
    sqlite3_bind_int64(st, 3, COMPACT_MAX);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (pb_push(&s->cold, sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1)) != 0) {
            sqlite3_reset(st);
            return -ENOMEM;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -EIO;
    size_t n = s->cold.n;
    for (size_t i = 0; i < n;) {
        int64_t span0 = span_floor(s->cold.p[i].t_ns);
        size_t j = i;
        while (j < n && span_floor(s->cold.p[j].t_ns) == span0)
            j++;
        if ((rc = compact_span(s, m->id, &rule, span0, s->cold.p + i, j - i)) != 0)
            return rc;
        i = j;
    }
    if (n) {
        st = mq(s, MQ_DEL_COMPACTED);
        if (!st)
            return -EIO;
        sqlite3_bind_int64(st, 1, m->id);
        sqlite3_bind_int64(st, 2, s->cold.p[n - 1].t_ns);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
        sqlite3_reset(st);
        if (rc)
            return rc;
    }
    int64_t v = 0;
    int h = one_value(s, RQ_RAW_MIN, m->id, 0, &v);
    if (h < 0)
        return -EIO;
    m->raw_lo = h ? v : INT64_MAX;
    return (int)n;
}

/* ---- packed ticks into chunks ---- */

/* Whether a ticks row lies whole before cut: 1, 0 or -EIO (one indexed probe). */
static int ticks_due(struct wt_store *s, int64_t cut)
{
    int64_t v = 0;
    int h = one_value(s, RQ_TICKS_OLDEST_END, 0, 0, &v);
    return h < 0 ? -EIO : h > 0 && v < cut;
}

/* Ticks rows compacted per pass: about 4 minutes of 1-s flushes */
#define TICKS_ROWS_MAX 256

struct tick_pt {
    int64_t id, t;
    double v;
    size_t k; /* the order read: rows by seq */
};

struct tick_acc {
    struct tick_pt *p;
    size_t n, cap;
};

static int tick_collect(void *ctx, int64_t id, const struct wt_point *p, size_t n)
{
    struct tick_acc *a = ctx;
    if (a->n + n > a->cap) {
        size_t nc = a->cap ? a->cap : 4096;
        while (nc < a->n + n)
            nc *= 2;
        struct tick_pt *q = realloc(a->p, nc * sizeof *q);
        if (!q)
            return -ENOMEM;
        a->p = q;
        a->cap = nc;
    }
    for (size_t i = 0; i < n; i++, a->n++)
        a->p[a->n] = (struct tick_pt){id, p[i].t_ns, p[i].v, a->n};
    return 0;
}

static int tick_pt_cmp(const void *x, const void *y)
{
    const struct tick_pt *a = x, *b = y;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

/*
 * Moves the ticks rows whose readings all lie before cut (a span boundary) and that were written
 * before any row that does not (so that of a time in two rows the first written is the one
 * kept), up to TICKS_ROWS_MAX in the order written, into the chunks of their series and spans, in
 * the pass's
 * transaction: the rows are deleted in the same one, so a kill leaves each reading in one place.
 * Of a time in two rows the first written is kept, and a chunk's reading stays (merge_into), as
 * the readers answer. Returns readings moved (> TICKS_ROWS_MAX rows' worth: more to do is told by
 * *more), or -EIO / -ENOMEM.
 */
static int compact_ticks(struct wt_store *s, const struct wt_run_list *runs, int64_t cut,
                         bool *more)
{
    sqlite3_stmt *st = mq(s, MQ_TICKS_CLOSED);
    struct tick_acc a = {0};
    int64_t last_seq = 0;
    int rows = 0, rc, d = 0;
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, cut);
    sqlite3_bind_int(st, 2, TICKS_ROWS_MAX);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        last_seq = sqlite3_column_int64(st, 0);
        rows++;
        d = wt_ticks_each(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1),
                          tick_collect, &a);
        if (d) {
            if (d == -EINVAL)
                db_fail(s, "ticks row %" PRId64 " does not decode", last_seq);
            break;
        }
    }
    sqlite3_reset(st);
    if (d || rc != SQLITE_DONE) {
        free(a.p);
        return d == -ENOMEM ? -ENOMEM : -EIO;
    }
    if (!rows)
        return 0;
    qsort(a.p, a.n, sizeof *a.p, tick_pt_cmp);
    s->cold.n = 0;
    rc = 0;
    for (size_t i = 0; rc == 0 && i < a.n;) {
        int64_t id = a.p[i].id;
        size_t m = ms_lower(s, id);
        struct mser none = {.kind = WT_SK_GAUGE};
        const struct mser *ms = m < s->ms_len && s->ms[m].id == id ? &s->ms[m] : &none;
        struct wt_segment_rule rule = wt_segment_rule_for(runs, ms->node, ms->kind);
        s->cold.n = 0;
        for (; rc == 0 && i < a.n && a.p[i].id == id; i++) {
            if (s->cold.n && s->cold.p[s->cold.n - 1].t_ns == a.p[i].t)
                continue;
            rc = pb_push(&s->cold, a.p[i].t, a.p[i].v);
        }
        for (size_t j = 0; rc == 0 && j < s->cold.n;) {
            int64_t span0 = span_floor(s->cold.p[j].t_ns);
            size_t e = j;
            while (e < s->cold.n && span_floor(s->cold.p[e].t_ns) == span0)
                e++;
            rc = compact_span(s, id, &rule, span0, s->cold.p + j, e - j);
            j = e;
        }
    }
    size_t moved = a.n;
    free(a.p);
    if (rc)
        return rc;
    st = mq(s, MQ_DEL_TICKS);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, cut);
    sqlite3_bind_int64(st, 2, last_seq);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_reset(st);
    if (rc)
        return rc;
    if (rows >= TICKS_ROWS_MAX)
        *more = true;
    return moved > INT32_MAX ? INT32_MAX : (int)moved;
}

/* A chunk's summary, computed by fill_summaries before it writes them. */
struct sum_row {
    int64_t id, t0, cov;
    double v0, v1, e;
};

/*
 * Fills the summary columns of chunks that lack them (a store upgraded from schema 2, or chunks
 * a new run made stale: see summary_sql), at most SUMMARY_MAX and about budget of work, in the
 * pass's transaction. Sets sum_state to 2 when none are left. Returns the work done, or -EIO.
 */
static int fill_summaries(struct wt_store *s, struct wt_run_list *runs, bool *have_runs,
                          bool *in_txn, int budget)
{
    struct sum_row local[SUMMARY_MAX];
    int lim = budget / 64, n = 0, seen = 0, work = 0, rc;
    if (lim < 1)
        lim = 1;
    if (lim > SUMMARY_MAX)
        lim = SUMMARY_MAX;
    if (!*in_txn) {
        if (mq_exec(s, MQ_BEGIN) != 0)
            return -EIO;
        *in_txn = true;
    }
    if (!*have_runs) {
        if (wt_runs_load(s, runs) != 0)
            return -EIO;
        *have_runs = true;
    }
    sqlite3_stmt *st = mq(s, MQ_UNSUMMED);
    if (!st)
        return -EIO;
    sqlite3_bind_int(st, 1, lim);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        seen++;
        s->span.n = 0;
        if (wt_chunk_decode(sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
                            &s->span) != 0 ||
            s->span.n == 0) {
            wt_warn(MOD, "%s: series %" PRId64 ": a chunk does not decode (left without summary)",
                    s->path, id);
            continue;
        }
        size_t i = ms_lower(s, id);
        struct mser none = {.kind = WT_SK_GAUGE};
        const struct mser *m = i < s->ms_len && s->ms[i].id == id ? &s->ms[i] : &none;
        struct wt_segment_rule rule = wt_segment_rule_for(runs, m->node, m->kind);
        struct sum_row *r = &local[n++];
        r->id = id;
        r->t0 = sqlite3_column_int64(st, 1);
        r->v0 = s->span.p[0].v;
        r->v1 = s->span.p[s->span.n - 1].v;
        wt_segment_sum(&rule, s->span.p, s->span.n, &r->e, &r->cov);
        work += (int)(s->span.n / 16) + 1;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -EIO;
    st = mq(s, MQ_SET_SUMMARY);
    if (!st)
        return -EIO;
    for (int k = 0; k < n; k++) {
        sqlite3_bind_int64(st, 1, local[k].id);
        sqlite3_bind_int64(st, 2, local[k].t0);
        sqlite3_bind_double(st, 3, local[k].v0);
        sqlite3_bind_double(st, 4, local[k].v1);
        sqlite3_bind_double(st, 5, local[k].e);
        sqlite3_bind_int64(st, 6, local[k].cov);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            db_fail(s, "cannot write a chunk summary: %s", sqlite3_errmsg(s->db));
            return -EIO;
        }
    }
    /* none left, or none that decode: nothing more to do until something changes */
    s->sum_state = seen < lim || n == 0 ? 2 : 1;
    return work;
}

/*
 * Visits, from the one after the cursor round to it, only the series that have work: the bounds
 * in s->ms say which (see struct mser), so a pass over idle or already rolled series reads
 * nothing but PRAGMA data_version and opens no transaction.
 */
int wt_store_maintain(struct wt_store *s, int64_t now_ns, int budget, bool *more)
{
    struct wt_run_list runs = {0};
    bool have_runs = false, in_txn = false;
    int rc = 0, work = 0;
    int64_t raw_cut = now_ns - s->o.retention_raw_ns;
    int64_t roll_cut = now_ns - s->o.retention_rollup_ns;
    int64_t compact_cut = span_floor(now_ns - CLOSE_NS);

    *more = false;
    s->mq_failed = false;
    if (ms_check(s) != 0)
        return -EIO;
    size_t n = s->ms_len;
    size_t i0 = s->maint_cursor < INT64_MAX ? ms_lower(s, s->maint_cursor + 1) : 0;
    for (size_t k = 0; k < n && work < budget; k++) {
        struct mser *m = &s->ms[(i0 + k) % n];
        if (m->known && !roll_due(m) && !raw_prune_due(m, raw_cut) && m->roll_lo >= roll_cut &&
            !compact_due(m, compact_cut))
            continue;
        if (!in_txn) {
            if (mq_exec(s, MQ_BEGIN) != 0) {
                rc = -EIO;
                break;
            }
            in_txn = true;
        }
        if (!m->known)
            ms_query(s, m);
        s->maint_cursor = m->id;
        work++;
        if (!have_runs && (roll_due(m) || compact_due(m, compact_cut))) {
            if (wt_runs_load(s, &runs) != 0) {
                rc = -EIO;
                break;
            }
            have_runs = true;
        }
        if (roll_due(m)) {
            int r = roll_series(s, &runs, m);
            if (r < 0) {
                rc = r;
                break;
            }
            if (r > 0)
                *more = true; /* maybe more minutes to roll */
            work += r;
        }
        if (compact_due(m, compact_cut)) {
            int c = compact_series(s, &runs, m, compact_cut);
            if (c < 0) {
                rc = c;
                break;
            }
            if (c >= COMPACT_MAX)
                *more = true;
            work += c / 16; /* a reading compacted costs far less than a row rolled */
        }
        int p = 0;
        if (raw_prune_due(m, raw_cut))
            p = prune_raw(s, m, raw_cut);
        if (p >= 0 && m->roll_lo < roll_cut) {
            int q = prune_rollups(s, m, roll_cut);
            p = q < 0 ? q : p + q;
        }
        if (p < 0) {
            rc = p;
            break;
        }
        if (p > 0)
            *more = true;
        work += p;
    }
    /* after the rows of the series: a raw row's reading then stays before a tick's, as read */
    if (rc == 0 && work < budget) {
        int t = ticks_due(s, compact_cut);
        if (t < 0)
            rc = -EIO;
        if (t > 0 && !in_txn) {
            if (mq_exec(s, MQ_BEGIN) != 0)
                rc = -EIO;
            else
                in_txn = true;
        }
        if (t > 0 && rc == 0 && !have_runs) {
            if (wt_runs_load(s, &runs) != 0)
                rc = -EIO;
            else
                have_runs = true;
        }
        if (t > 0 && rc == 0) {
            int c = compact_ticks(s, &runs, compact_cut, more);
            if (c < 0)
                rc = c;
            else
                work += c / 16 + 1;
        }
    }
    if (rc == 0 && work < budget && s->sum_state != 2) {
        int f = fill_summaries(s, &runs, &have_runs, &in_txn, budget - work);
        if (f < 0)
            rc = f;
        else
            work += f;
        if (s->sum_state == 1)
            *more = true;
    }
    if (work >= budget)
        *more = true;
    if (rc == 0 && s->mq_failed)
        rc = -EIO;
    if (in_txn) {
        if (rc == 0 && mq_exec(s, MQ_COMMIT) != 0)
            rc = -EIO;
        if (rc) {
            rollback(s);
            s->ms_loaded = false; /* the bounds may hold what was rolled back */
        }
    }
    if (have_runs)
        wt_runs_free(&runs);
    return rc;
}

/* The runs table (one row per daemon start), for the segment rule (store/segment.h). */
int wt_runs_load(struct wt_store *st, struct wt_run_list *out)
{
    size_t cap = 0;
    out->r = NULL;
    out->n = 0;
    struct rq_use u = rq_take(st, RQ_RUNS);
    sqlite3_stmt *q = u.q;
    if (!q)
        return -EIO;
    while (sqlite3_step(q) == SQLITE_ROW) {
        if (out->n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            struct wt_run *r = realloc(out->r, nc * sizeof *r);
            if (!r) {
                rq_give(st, &u);
                wt_runs_free(out);
                return -ENOMEM;
            }
            out->r = r;
            cap = nc;
        }
        struct wt_run *r = &out->r[out->n++];
        snprintf(r->node, sizeof r->node, "%s", (const char *)sqlite3_column_text(q, 0));
        r->start_ns = sqlite3_column_int64(q, 1);
        r->interval_ns = sqlite3_column_int64(q, 2);
    }
    rq_give(st, &u);
    return 0;
}
