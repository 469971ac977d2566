/* SPDX-License-Identifier: MIT */
/*
 * The SQLite store: opening (schema in store_schema.c), closing, and attaching it to the hub.
 * Its parts: store_db.c (shared helpers, series interning), store_write.c (the batched writer
 * thread behind the hub sink), store_read.c (readers), store_maint.c (maintenance: per-minute
 * rollups, pruning in small steps); store_int.h holds what they share. Queries live in query.c.
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
        rc = wt_store_db_error(s, err, "cannot open");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, 10000);
    char cache[48];
    snprintf(cache, sizeof cache, "PRAGMA cache_size=-%d", WT_STORE_CACHE_KIB);
    if (wt_store_exec(s, "PRAGMA journal_mode=WAL") ||
        wt_store_exec(s, "PRAGMA synchronous=NORMAL") || wt_store_exec(s, cache)) {
        rc = wt_store_db_error(s, err, "cannot set WAL mode or the cache size");
        goto fail;
    }
    rc = wt_store_schema(s, path, err);
    if (rc)
        goto fail;
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
        rc = wt_store_db_error(s, err, "cannot prepare statements");
        goto fail;
    }
    rc = wt_store_tab_put(s, 0, "", "",
                          ""); /* allocate the table; id 0 is "empty", nothing stored */
    s->tab_len = 0;
    if (rc || wt_store_tab_load(s) != 0) {
        rc = wt_store_db_error(s, err, "cannot load series");
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
    free(s->cur_tag);
    free(s->spare_tag);
    for (int i = 0; i < PLACE_SLOTS; i++)
        free(s->place[i].p);
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
