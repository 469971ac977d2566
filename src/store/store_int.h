/* SPDX-License-Identifier: MIT */
/*
 * The store's insides, shared by its parts: store.c (open, close, attach), store_db.c (the
 * shared helpers and the interned series), store_schema.c (schema and upgrades), store_write.c
 * (the writer thread and its stats), store_read.c (the readers) and store_maint.c (rollups,
 * compaction, pruning). Not for use outside src/store/.
 */
#ifndef WT_STORE_INT_H
#define WT_STORE_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"
#include "store/ticks.h"

#define MOD "store"
#define SCHEMA_VERSION 4
#define SCHEMA_PRAGMA "PRAGMA user_version=4" /* SCHEMA_VERSION */
#define ROLL_MAX_MIN 60                       /* minutes rolled per series per step */
/* Chunks: the readings of a series in one aligned span become one blob once the span has been
 * closed for CLOSE_NS; a step compacts at most COMPACT_MAX readings of a series. */
#define SPAN_NS (15 * WT_MINUTE_NS)
#define CLOSE_NS (5 * WT_MINUTE_NS)
/* Points a maintenance buffer keeps between passes (16 bytes each): larger ones are freed */
#define WT_STORE_MAINT_BUF_KEEP 4096
/* SQLite's page cache per connection, KiB (its default is 2000): a daemon holds several
 * connections (the writer, the API's reader, jobs, KPIs, carbon, senders' cursors) */
#define WT_STORE_CACHE_KIB 512
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

/*
 * The writer's series by place (wt_store_sink, issue 49): a collector's batch of one length keeps
 * its layout from tick to tick, so the reading at position i of it is the series it was the last
 * time when its metric and labels are still the same, compared in full (a cheap compare, not the
 * hash of the interned table). A stable layout interns nothing; a changed one (a GPU appears, a
 * label's value changes) misses and interns, never attaching a value to another series. A slot is
 * one (collector, batch length); the sink tags each queued reading with its slot and position.
 */
#define PLACE_SLOTS 64
#define PLACE_MAX 65536 /* positions of a slot; readings beyond are interned */
struct place {
    int64_t id;   /* 0: none */
    size_t ms_at; /* where the series was last in ms (checked by id before use) */
    uint16_t metric;
    char labels[WT_LABELS_LEN];
};
struct place_slot {
    /* what the slot is: the sink's, under mu */
    char collector[32];
    size_t len;
    uint64_t used;
    /* what it knows: the writer thread's */
    struct place *p;
    size_t cap;
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
    uint32_t *cur_tag,
        *spare_tag; /* a queued reading's place: (slot + 1) << 16 | position, 0 none */
    size_t cur_len;
    struct place_slot place[PLACE_SLOTS];
    int nplace;
    uint64_t place_clock;
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

/* store_db.c: the shared helpers */
int wt_store_db_error(struct wt_store *s, struct wt_err *err, const char *what);
int wt_store_exec(struct wt_store *s, const char *sql);
void wt_store_db_fail(struct wt_store *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
sqlite3_stmt *wt_store_mq(struct wt_store *s, int k);
int wt_store_mq_exec(struct wt_store *s, int k);
void wt_store_rollback(struct wt_store *s);
size_t wt_store_ms_lower(const struct wt_store *s, int64_t id);
void wt_store_ms_widen(struct wt_store *s, int64_t id, int64_t t, bool row);
/* wt_store_ms_widen, looking first at index *at (then set to where the series is, or would be). */
void wt_store_ms_widen_at(struct wt_store *s, size_t *at, int64_t id, int64_t t, bool row);
int wt_store_ms_check(struct wt_store *s);
int wt_store_tab_put(struct wt_store *s, int64_t id, const char *node, const char *metric,
                     const char *labels);
int wt_store_tab_load(struct wt_store *s);
int64_t wt_store_intern(struct wt_store *s, const char *node, const char *metric,
                        const char *labels);

/* store_schema.c */
int wt_store_schema(struct wt_store *s, const char *path, struct wt_err *err);

/* store_read.c: what maintenance reads with */
int wt_store_pb_push(struct wt_point_buf *b, int64_t t, double v);
int wt_store_merge_into(struct wt_point_buf *out, const struct wt_point_buf *x,
                        const struct wt_point_buf *y, size_t limit);
int wt_store_one_value(struct wt_store *s, int k, int64_t id, int64_t a, int64_t *v);
int wt_store_read_at_or_before(struct wt_store *s, int64_t id, int64_t t, struct wt_point *p,
                               bool *have);

#endif
