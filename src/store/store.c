/* SPDX-License-Identifier: MIT */
/*
 * The SQLite store: schema, series interning, the batched writer thread behind the hub sink,
 * and maintenance (per-minute rollups, pruning in small steps). Queries live in query.c.
 *
 * One connection per wt_store. While the writer thread runs it alone touches the connection;
 * readers (`wattage energy`) open their own connection: WAL lets them read while it writes.
 */
#include "store/store.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/hub.h"
#include "core/log.h"
#include "store/query.h"

#define MOD "store"
#define SCHEMA_VERSION 1
#define ROLL_MAX_MIN 60 /* minutes rolled per series per step */

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

struct wt_store {
    sqlite3 *db;
    char path[256];
    struct wt_store_opts o;
    /* statements */
    sqlite3_stmt *ins_reading, *ins_series, *upd_run, *ins_run;
    /* interned series */
    struct entry *tab;
    size_t tab_cap, tab_len;
    /* writer queue: the sink fills cur, the writer swaps it with spare */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct wt_reading *cur, *spare;
    size_t cur_len;
    uint64_t dropped;
    bool stop, started, mu_init;
    pthread_t thread;
    int64_t run_id;
    /* maintenance */
    int64_t maint_cursor;
    struct minute_acc acc[ROLL_MAX_MIN];
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

enum wt_series_kind wt_series_kind_of(const char *metric, const char *labels)
{
    size_t n = strlen(metric);
    static const char suffix[] = "_joules_total";
    char m[32];
    if (n < sizeof suffix - 1 || strcmp(metric + n - (sizeof suffix - 1), suffix) != 0)
        return WT_SK_GAUGE;
    if (wt_labels_get(labels, "method", m, sizeof m) == 0 && strcmp(m, "integrated") == 0)
        return WT_SK_INTEGRATED;
    if (strcmp(metric, "wattage_gpu_energy_joules_total") == 0)
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
    " source TEXT NOT NULL, UNIQUE(node, start_ns));";

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
        wt_error(MOD, "%s: cannot add series %s{%s}: %s", s->path, metric, labels,
                 sqlite3_errmsg(s->db));
        return -EIO;
    }
    if (tab_put(s, id, node, metric, labels) != 0)
        return -ENOMEM;
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
            if (exec(s, "BEGIN IMMEDIATE") || exec(s, schema) || exec(s, "PRAGMA user_version=1") ||
                exec(s, "COMMIT")) {
                rc = db_error(s, err, "cannot create the schema");
                goto fail;
            }
        }
    }
    if (sqlite3_prepare_v3(s->db, "INSERT OR IGNORE INTO readings(series, t, v) VALUES(?,?,?)", -1,
                           SQLITE_PREPARE_PERSISTENT, &s->ins_reading, NULL) ||
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
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_ROW) {
        wt_error(MOD, "%s: cannot record the run: %s", s->path, sqlite3_errmsg(s->db));
        return -EIO;
    }
    return 0;
}

/* Inserts readings inside an open transaction. */
static int insert(struct wt_store *s, const char *node, const struct wt_reading *r, size_t n,
                  int64_t *last_t)
{
    for (size_t i = 0; i < n; i++) {
        if (r[i].metric >= WT_M_COUNT)
            continue;
        int64_t id = intern(s, node, wt_metrics[r[i].metric].name, r[i].labels);
        if (id < 0)
            return (int)id;
        sqlite3_bind_int64(s->ins_reading, 1, id);
        sqlite3_bind_int64(s->ins_reading, 2, r[i].t_ns);
        sqlite3_bind_double(s->ins_reading, 3, r[i].value);
        int rc = sqlite3_step(s->ins_reading);
        sqlite3_reset(s->ins_reading);
        if (rc != SQLITE_DONE) {
            wt_error(MOD, "%s: insert failed: %s", s->path, sqlite3_errmsg(s->db));
            return -EIO;
        }
        if (r[i].t_ns > *last_t)
            *last_t = r[i].t_ns;
    }
    return 0;
}

int wt_store_write(struct wt_store *s, const char *node, const struct wt_reading *r, size_t n)
{
    int64_t last_t = 0;
    if (n == 0)
        return 0;
    if (exec(s, "BEGIN IMMEDIATE"))
        return -EIO;
    int rc = insert(s, node, r, n, &last_t);
    if (rc == 0 && s->run_id && !node[0]) {
        sqlite3_bind_int64(s->upd_run, 1, last_t);
        sqlite3_bind_int64(s->upd_run, 2, s->run_id);
        if (sqlite3_step(s->upd_run) != SQLITE_DONE)
            rc = -EIO;
        sqlite3_reset(s->upd_run);
    }
    if (rc == 0 && exec(s, "COMMIT") == 0)
        return 0;
    (void)exec(s, "ROLLBACK");
    (void)tab_load(s); /* series added in the rolled-back transaction are gone */
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

/* Writes what the sink queued. Writer thread only. */
static void flush_queue(struct wt_store *s, struct wt_ratelimit *rl)
{
    pthread_mutex_lock(&s->mu);
    struct wt_reading *batch = s->cur;
    size_t n = s->cur_len;
    s->cur = s->spare;
    s->spare = batch;
    s->cur_len = 0;
    pthread_mutex_unlock(&s->mu);
    if (n && wt_store_write(s, "", batch, n) != 0) {
        uint64_t sup;
        if (wt_ratelimit_ok(rl, wt_now_mono_ns(), &sup))
            wt_error(MOD, "%s: lost %zu readings: the write failed (suppressed=%" PRIu64 ")",
                     s->path, n, sup);
    }
}

static void *writer_main(void *arg)
{
    struct wt_store *s = arg;
    struct wt_ratelimit rl = {.interval_ns = 60 * WT_NS_PER_S};
    uint64_t reported_drops = 0;
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
        uint64_t drops = s->dropped;
        pthread_mutex_unlock(&s->mu);

        flush_queue(s, &rl);
        if (drops != reported_drops) {
            wt_warn(MOD, "queue full: dropped readings total=%" PRIu64, drops);
            reported_drops = drops;
        }
        if (more || wt_now_mono_ns() >= next_maint) {
            if (wt_store_maintain(s, wt_now_real_ns(), 20000, &more) != 0)
                more = false;
            next_maint = wt_now_mono_ns() + 10 * WT_NS_PER_S;
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    flush_queue(s, &rl);
    return NULL;
}

int wt_store_writer_start(struct wt_store *s)
{
    s->cur = calloc(s->o.queue_cap, sizeof *s->cur);
    s->spare = calloc(s->o.queue_cap, sizeof *s->spare);
    if (!s->cur || !s->spare)
        return -ENOMEM;
    int rc = pthread_create(&s->thread, NULL, writer_main, s);
    if (rc)
        return -rc;
    s->started = true;
    return 0;
}

int wt_store_attach(const struct wt_config *cfg, struct wt_hub *hub, struct wt_store **out,
                    struct wt_err *err)
{
    struct wt_store_opts o = {.flush_ns = cfg->store.flush_ns,
                              .retention_raw_ns = cfg->store.retention_raw_ns,
                              .retention_rollup_ns = cfg->store.retention_rollup_ns,
                              .create = true};
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
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
    }
    sqlite3_finalize(s->ins_reading);
    sqlite3_finalize(s->ins_series);
    sqlite3_finalize(s->upd_run);
    sqlite3_finalize(s->ins_run);
    if (s->db)
        sqlite3_close(s->db);
    if (s->mu_init) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
    }
    free(s->cur);
    free(s->spare);
    free(s->tab);
    free(s);
}

/* ---- maintenance: rollups and pruning ---- */

static int64_t one_int(struct wt_store *s, const char *sql, int64_t a, int64_t b, bool *null)
{
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    *null = true;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        v = sqlite3_column_int64(st, 0);
        *null = false;
    }
    sqlite3_finalize(st);
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

/* Rolls up to ROLL_MAX_MIN complete minutes of one series. Returns rows read, or -EIO. */
static int roll_series(struct wt_store *s, const struct wt_run_list *runs, int64_t id,
                       const char *node, enum wt_series_kind kind, int64_t rolled_to)
{
    bool null;
    int64_t last = one_int(s, "SELECT max(t) FROM readings WHERE series=?1", id, 0, &null);
    if (null)
        return 0;
    int64_t target = wt_minute_floor(last);
    int64_t r0 = rolled_to;
    if (!r0) {
        int64_t first = one_int(s, "SELECT min(t) FROM readings WHERE series=?1", id, 0, &null);
        r0 = wt_minute_floor(first);
    }
    if (target <= r0)
        return 0;
    int nmin = (int)((target - r0) / WT_MINUTE_NS);
    if (nmin > ROLL_MAX_MIN)
        nmin = ROLL_MAX_MIN;
    int64_t end = r0 + nmin * WT_MINUTE_NS;
    memset(s->acc, 0, sizeof s->acc);

    struct wt_segment_rule rule = wt_segment_rule_for(runs, node, kind);
    sqlite3_stmt *st = NULL;
    /* the reading at or before r0, those inside, and the first at or after end */
    const char *sql = "SELECT t, v FROM (SELECT t, v FROM readings WHERE series=?1 AND t<=?2 "
                      "ORDER BY t DESC LIMIT 1) UNION ALL SELECT t, v FROM readings WHERE "
                      "series=?1 AND t>?2 AND t<?3 UNION ALL SELECT t, v FROM (SELECT t, v FROM "
                      "readings WHERE series=?1 AND t>=?3 ORDER BY t LIMIT 1)";
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, r0);
    sqlite3_bind_int64(st, 3, end);
    int rows = 0;
    bool have = false;
    int64_t pt = 0;
    double pv = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t t = sqlite3_column_int64(st, 0);
        double v = sqlite3_column_double(st, 1);
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
        if (have && kind != WT_SK_GAUGE && t > pt) {
            double d;
            bool cov;
            wt_segment(&rule, pt, pv, t, v, &d, &cov);
            acc_add_energy(s, r0, nmin, pt, t, d, cov);
        }
        have = true;
        pt = t;
        pv = v;
    }
    sqlite3_finalize(st);

    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO rollups(series, t, n, min, max, mean, last, "
                           "energy, covered) VALUES(?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
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
    }
    sqlite3_finalize(st);
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(s->db, "UPDATE series SET rolled_to=? WHERE id=?", -1, &st, NULL))
        return -EIO;
    sqlite3_bind_int64(st, 1, end);
    sqlite3_bind_int64(st, 2, id);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc ? rc : rows + nmin;
}

/* Deletes raw readings older than the cutoff that rollups cover, at most an hour's worth. */
static int prune_series(struct wt_store *s, int64_t id, int64_t rolled_to, int64_t raw_cut,
                        int64_t roll_cut)
{
    bool null;
    int changed = 0;
    if (rolled_to) {
        /* keep the last reading at or before rolled_to: the segment across it needs it */
        int64_t keep = one_int(s, "SELECT max(t) FROM readings WHERE series=?1 AND t<=?2", id,
                               rolled_to, &null);
        int64_t first = one_int(s, "SELECT min(t) FROM readings WHERE series=?1", id, 0, &null);
        if (!null) {
            int64_t cut = raw_cut < keep ? raw_cut : keep;
            if (cut > first + 3600 * WT_NS_PER_S)
                cut = first + 3600 * WT_NS_PER_S;
            if (cut > first) {
                sqlite3_stmt *st = NULL;
                if (sqlite3_prepare_v2(s->db, "DELETE FROM readings WHERE series=? AND t<?", -1,
                                       &st, NULL) != SQLITE_OK)
                    return -EIO;
                sqlite3_bind_int64(st, 1, id);
                sqlite3_bind_int64(st, 2, cut);
                int rc = sqlite3_step(st);
                sqlite3_finalize(st);
                if (rc != SQLITE_DONE)
                    return -EIO;
                changed += sqlite3_changes(s->db);
            }
        }
    }
    int64_t first = one_int(s, "SELECT min(t) FROM rollups WHERE series=?1", id, 0, &null);
    if (!null && first < roll_cut) {
        int64_t cut = roll_cut;
        if (cut > first + 86400 * WT_NS_PER_S)
            cut = first + 86400 * WT_NS_PER_S;
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(s->db, "DELETE FROM rollups WHERE series=? AND t<?", -1, &st,
                               NULL) != SQLITE_OK)
            return -EIO;
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, cut);
        int rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return -EIO;
        changed += sqlite3_changes(s->db);
    }
    return changed;
}

int wt_store_maintain(struct wt_store *s, int64_t now_ns, int budget, bool *more)
{
    struct wt_run_list runs = {0};
    sqlite3_stmt *st = NULL;
    int rc = 0, work = 0;
    bool wrapped = false;

    *more = false;
    if (wt_runs_load(s, &runs) != 0)
        return -EIO;
    if (exec(s, "BEGIN IMMEDIATE")) {
        wt_runs_free(&runs);
        return -EIO;
    }
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id, node, kind, rolled_to FROM series WHERE id > ? "
                           "ORDER BY id LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = -EIO;
        goto out;
    }
    int64_t start = s->maint_cursor;
    while (work < budget) {
        sqlite3_bind_int64(st, 1, s->maint_cursor);
        if (sqlite3_step(st) != SQLITE_ROW) {
            sqlite3_reset(st);
            if (wrapped || start == 0)
                break; /* every series visited */
            wrapped = true;
            s->maint_cursor = 0;
            continue;
        }
        int64_t id = sqlite3_column_int64(st, 0);
        char node[64];
        snprintf(node, sizeof node, "%s", (const char *)sqlite3_column_text(st, 1));
        enum wt_series_kind kind = (enum wt_series_kind)sqlite3_column_int(st, 2);
        int64_t rolled = sqlite3_column_int64(st, 3);
        sqlite3_reset(st);
        if (wrapped && id > start)
            break;
        s->maint_cursor = id;

        int n = roll_series(s, &runs, id, node, kind, rolled);
        if (n < 0) {
            rc = n;
            break;
        }
        work += n + 1;
        if (n > 0) {
            *more = true; /* maybe more minutes to roll */
            bool null;
            rolled = one_int(s, "SELECT rolled_to FROM series WHERE id=?1", id, 0, &null);
        }
        int p = prune_series(s, id, rolled, now_ns - s->o.retention_raw_ns,
                             now_ns - s->o.retention_rollup_ns);
        if (p < 0) {
            rc = p;
            break;
        }
        if (p > 0)
            *more = true;
        work += p;
    }
    if (work >= budget)
        *more = true;
out:
    sqlite3_finalize(st);
    if (rc == 0 && exec(s, "COMMIT") == 0) {
        wt_runs_free(&runs);
        return 0;
    }
    (void)exec(s, "ROLLBACK");
    wt_runs_free(&runs);
    return rc ? rc : -EIO;
}
