/* SPDX-License-Identifier: MIT */
/*
 * The embedded store: SQLite in WAL mode. Every reading the daemon takes is kept on the node, so
 * the energy of any past window can be answered without another service.
 *
 * Schema (user_version 3; store.c has the chunks table of schema 2 and its summaries, 3):
 *   series(id, node, metric, labels, kind, rolled_to)  one row per node + metric + labels
 *   readings(series, t, v)                             raw readings, t in ns, WITHOUT ROWID
 *   rollups(series, t, n, min, max, mean, last, energy, covered)  one row per series and minute
 *   runs(node, start_ns, interval_ns, source)          one row per daemon start or import
 * node is "" for the local daemon and the node name for imported logs.
 *
 * Writing: the hub sink (wt_store_sink) copies readings into a bounded double buffer and returns;
 * a writer thread flushes the buffer every flush interval in one transaction (prepared
 * statements, series interned once in an in-memory hash, no allocation per reading after
 * warm-up) and then runs one small step of rollups and pruning. With WAL and synchronous=NORMAL a
 * kill -9 loses at most what was still in the buffer: one flush interval.
 *
 * Energy rule (used by rollups and queries, see query.h): a decrease of a counter is a reset and
 * the span before it is a gap; a span that contains a daemon start is a gap unless the series is
 * the GPU's own hardware counter (NVML keeps counting while the daemon is down).
 */
#ifndef WT_STORE_H
#define WT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/reading.h"

struct wt_store;
struct sqlite3;

/* How a stored series counts energy. */
enum wt_series_kind {
    WT_SK_GAUGE = 0,     /* not an energy counter */
    WT_SK_COUNTER = 1,   /* energy counter that restarts with the daemon (RAPL unwrapped) */
    WT_SK_HWCOUNTER = 2, /* the GPU's hardware counter: spans daemon restarts */
    WT_SK_INTEGRATED =
        3, /* power integrated by wattage: wattage_gpu_energy_integrated_joules_total,
              or any energy series labelled method="integrated" */
};

/* The kind of a series from its metric name and labels (energy: name ends "_joules_total"). */
enum wt_series_kind wt_series_kind_of(const char *metric, const char *labels);

struct wt_store_opts {
    int64_t flush_ns;            /* writer flush interval; 0: 1 s */
    int64_t retention_raw_ns;    /* 0: 7 days */
    int64_t retention_rollup_ns; /* 0: 400 days */
    size_t queue_cap;            /* readings held between flushes; 0: 65536 */
    /* readings kept in memory while writes fail (a full disk), written when a write succeeds
     * again; beyond it they are dropped and counted. 0: WT_STORE_BUFFER_DEFAULT; < 0: none */
    int64_t buffer_readings;
    bool create; /* create the file (and its directory, 0750) when missing */
    /* wt_store_write writes its readings as one packed ticks row (store/ticks.h), not a row a
     * reading: store.packed_ticks */
    bool ticks;
};

/*
 * Opens (and with opts->create, creates) the store at path: WAL, synchronous=NORMAL, schema
 * checked or made; series of the GPU's integrated energy written before it had its own metric
 * (wattage_gpu_energy_joules_total{…,method="integrated"}) are renamed to
 * wattage_gpu_energy_integrated_joules_total{…} (when that fails, a warning: queries still
 * tell them by their kind). opts may be NULL (defaults, create). Returns 0,
 * -ENOENT when the file does not exist and create is off, or another negative errno; err says
 * what failed and where.
 */
int wt_store_open(const char *path, const struct wt_store_opts *opts, struct wt_store **out,
                  struct wt_err *err) WT_MUST_USE;
/* Stops the writer (flushing what is queued), finalizes statements, closes. Accepts NULL. */
void wt_store_close(struct wt_store *s);
/* The connection, for queries on the caller's thread (not while the writer thread runs). */
struct sqlite3 *wt_store_db(struct wt_store *s);

/* Bytes the maintenance's read buffers hold between passes (for the tests and benchmarks). */
size_t wt_store_maint_buffered(const struct wt_store *s);

/*
 * Records the start of a daemon run (node "") or an import (node name) at start_ns with its poll
 * interval: queries use it to tell a restart from a continuous series. Returns 0 or -EIO.
 */
int wt_store_begin_run(struct wt_store *s, const char *node, int64_t start_ns, int64_t interval_ns,
                       const char *source) WT_MUST_USE;

/*
 * Writes n readings of node synchronously, in one transaction. A reading already stored (same
 * series and time) is left as it is. Not while the writer thread runs. Returns 0 or -EIO.
 */
int wt_store_write(struct wt_store *s, const char *node, const struct wt_reading *r,
                   size_t n) WT_MUST_USE;

/* Starts the writer thread; readings then go through wt_store_sink. Returns 0 or -errno. */
int wt_store_writer_start(struct wt_store *s) WT_MUST_USE;
/* Hub sink (ctx: the store): copies the batch into the queue, never blocks on the disk. */
void wt_store_sink(void *ctx, const char *collector, const struct wt_batch *b);
/* Readings dropped: the queue was full (the disk did not keep up), or the buffer was while
 * writes failed. */
uint64_t wt_store_dropped(struct wt_store *s);

#define WT_STORE_BUFFER_DEFAULT 131072 /* readings (~250 bytes each): ~32 MiB at most */

/* The writer's health, for /metrics, readiness and tests. */
struct wt_store_stats {
    uint64_t dropped;      /* as wt_store_dropped */
    uint64_t write_errors; /* failed writes (transactions) */
    size_t queued;         /* readings waiting: queued plus buffered while writes fail */
    int64_t last_flush_ns; /* CLOCK_REALTIME of the last successful write; 0: none yet */
    uint64_t db_bytes;     /* the database file and its WAL, as of the last flush */
    bool failing;          /* the last write failed (reported to core/health as "store") */
};
void wt_store_stats(struct wt_store *s, struct wt_store_stats *out);

/*
 * The store's families on /metrics, WT_STORE_FAMILIES of them:
 * wattage_store_readings_dropped_total, wattage_store_write_errors_total,
 * wattage_store_queue_readings, wattage_store_last_flush_timestamp_seconds (absent before the first
 * write) and wattage_store_database_bytes. The server registers wt_store_family_fn with
 * wt_store_family_ctx(s, k) for each k (serve/api_status.h's wt_api_store_families_add).
 */
#define WT_STORE_FAMILIES 5
struct wt_expo_family;
void *wt_store_family_ctx(struct wt_store *s, int k);
int wt_store_family_fn(void *ctx, struct wt_expo_family *fam);
/* Family k (0..4, in the order above) as the server would get it; for the tests. */
int wt_store_family(struct wt_store *s, int k, struct wt_expo_family *fam) WT_MUST_USE;

/*
 * One step of maintenance at now_ns: per-minute rollups of complete minutes, then pruning of
 * raw readings older than the raw retention (only those a rollup already covers) and of rollups
 * older than the rollup retention. Does at most about `budget` rows of work; *more is set when
 * work is left. Only series with such work are visited: the store tracks in memory what this
 * connection wrote, and re-reads every series after another connection commits. The writer
 * thread calls it every 10 s, and after each flush while *more. Returns 0 or -EIO.
 */
int wt_store_maintain(struct wt_store *s, int64_t now_ns, int budget, bool *more) WT_MUST_USE;

/* ---- reading the stored readings (the only readers of the readings and rollups tables) ---- */

/* One stored reading. */
struct wt_point {
    int64_t t_ns;
    double v;
};

/* A growing array of points: wt_store_read appends to it; free p when done. */
struct wt_point_buf {
    struct wt_point *p;
    size_t n, cap;
};

enum {
    /* the last reading at or before a, those in (a, b), the first at or after b (and after a):
     * what an exact window over [a, b] needs */
    WT_RD_EDGES = 1,
    WT_RD_AFTER = 2, /* t > a instead of t >= a */
};

/*
 * Appends the readings of series id with a <= t <= b (flags: see above) to out, in time order
 * (only those later than what out ends with), at most limit of them (0: no limit; the oldest are
 * kept; with WT_RD_EDGES the limit is on those inside).
 * Returns 0, -EIO or -ENOMEM.
 */
int wt_store_read(struct wt_store *s, int64_t id, int64_t a, int64_t b, int flags, size_t limit,
                  struct wt_point_buf *out) WT_MUST_USE;
/* The times of the oldest and newest readings of series id: 1, 0 (none) or -EIO. */
int wt_store_bounds(struct wt_store *s, int64_t id, int64_t *first, int64_t *last) WT_MUST_USE;
/* How many readings of series id are after `after`, and the time of the oldest of them (0:
 * none). Returns 0 or -EIO. */
int wt_store_count_after(struct wt_store *s, int64_t id, int64_t after, uint64_t *n,
                         int64_t *oldest) WT_MUST_USE;
/* The time of the newest reading of any series: 1, 0 (no readings) or -EIO. */
int wt_store_newest(struct wt_store *s, int64_t *t) WT_MUST_USE;
/* The time of the oldest reading of series id not yet compacted into a chunk: 1, 0 (none) or
 * -EIO. */
int wt_store_rows_oldest(struct wt_store *s, int64_t id, int64_t *t) WT_MUST_USE;

struct wt_window;
/*
 * Adds the readings of series id to the exact window w (store/segment.h; begun with its rule,
 * a and b): what wt_window_add of each reading wt_store_read(WT_RD_EDGES) gives would add. With
 * summaries, a chunk that lies whole inside [a, b] is applied from its summary (schema 3: the
 * energy and covered time of its segments by the rule, kept per chunk) without decoding it; a
 * chunk without one, or with raw readings among its own, is decoded. Returns 0, -EIO or -ENOMEM.
 */
int wt_store_window(struct wt_store *s, int64_t id, bool summaries,
                    struct wt_window *w) WT_MUST_USE;

/*
 * Keeps (on) or drops (off) the chunks that reads on this thread decode, so that the reads of
 * one query (its energy, then its error bars) decode each chunk once: on at the start of a read
 * transaction, off before it ends (a chunk is known by series and start, which another
 * transaction may change).
 */
void wt_store_cache(struct wt_store *s, bool on);
/* How many chunks the readers of this handle decoded (for tests and benchmarks). */
uint64_t wt_store_chunks_decoded(struct wt_store *s);

/* One per-minute rollup of a series. */
struct wt_rollup {
    int64_t t_ns; /* the minute's start */
    int64_t n;    /* readings in the minute; min, max, mean and last are NaN when 0 */
    double min, max, mean, last;
    double energy;      /* the minute's share of the counter's energy (J) */
    int64_t covered_ns; /* covered time of the minute */
};

/* The rollups of series id for the minutes that overlap [a, b), in time order; *rows is
 * malloc'd. Returns 0, -EIO or -ENOMEM. */
int wt_store_rollups(struct wt_store *s, int64_t id, int64_t a, int64_t b, struct wt_rollup **rows,
                     size_t *n) WT_MUST_USE;

struct wt_config;
struct wt_hub;
/*
 * For `wattage run`: opens cfg's store (creating it and its directory), records the daemon's
 * start, starts the writer and registers its sink with hub (before collectors start). Returns 0
 * or a negative errno with err saying what failed; close with wt_store_close after the loop.
 */
int wt_store_attach(const struct wt_config *cfg, struct wt_hub *hub, struct wt_store **out,
                    struct wt_err *err) WT_MUST_USE;

/* Floors t_ns to its minute. */
static inline int64_t wt_minute_floor(int64_t t_ns)
{
    const int64_t m = 60LL * 1000000000LL;
    int64_t q = t_ns / m;
    if (t_ns % m < 0)
        q--;
    return q * m;
}

#define WT_MINUTE_NS (60LL * 1000000000LL)

#endif
