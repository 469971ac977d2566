/* SPDX-License-Identifier: MIT */
/*
 * The store as the write-ahead log of remote write: for one endpoint, which stored readings of
 * the daemon's own series (node "") it has acknowledged, and the next readings to send, oldest
 * first. The cursor is the time of the last acknowledged reading of each series, kept in the
 * store itself (tables remote_write_endpoints and remote_write_cursors), so sending resumes
 * from it after a restart, an outage of the receiver or a network cut; nothing is queued in
 * memory that the store does not hold.
 *
 * A series' readings are committed in time order (the writer thread flushes ticks in order), so
 * "every reading after the cursor" is exactly what the endpoint has not acknowledged. An
 * endpoint seen for the first time starts at since_ns (now minus its backfill): older readings
 * are not sent. Readings pruned by retention before they were sent are not sent either.
 *
 * One struct wt_cursor per endpoint, on its own connection to the store (WAL: it reads while the
 * writer thread writes; its own writes are one small transaction per acknowledged batch). Not
 * thread-safe: one thread (the endpoint's sender) uses it.
 */
#ifndef WT_STORE_CURSOR_H
#define WT_STORE_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/reading.h"

struct wt_cursor;

/* One series the endpoint sends: the store's id, its metric and labels, its cursor. */
struct wt_cursor_series {
    int64_t id;
    char metric[96];
    char labels[WT_LABELS_LEN];
    int64_t acked_ns; /* readings at or before this time are acknowledged */
};

/* One reading to send: the index of its series (wt_cursor_series), time and value. */
struct wt_cursor_sample {
    uint32_t series;
    int64_t t_ns;
    double v;
};

/* A batch: samples grouped by series (ascending index), each series' in ascending time. */
struct wt_cursor_batch {
    struct wt_cursor_sample *s;
    size_t n, cap;
};

/* Chooses the series an endpoint sends (its `match` setting). */
typedef bool (*wt_cursor_keep_fn)(void *ctx, const char *metric, const char *labels);

/*
 * Opens the store at path (which must exist) on a new connection, creates the cursor tables when
 * missing, and loads endpoint's start: the since_ns recorded when it was first seen, else
 * since_ns (recorded now). Series are loaded by wt_cursor_refresh. Returns 0, -ENOENT (no store),
 * -EIO or -ENOMEM; err says what failed.
 */
int wt_cursor_open(const char *path, const char *endpoint, int64_t since_ns, struct wt_cursor **out,
                   struct wt_err *err) WT_MUST_USE;
/* Closes the connection and frees c; accepts NULL. */
void wt_cursor_close(struct wt_cursor *c);

/*
 * Adds the series created in the store since the last call (all of them the first time) that
 * keep accepts (NULL: all), with their stored cursors (since_ns when none). Returns the number
 * of new series (>= 0), -EIO or -ENOMEM.
 */
int wt_cursor_refresh(struct wt_cursor *c, wt_cursor_keep_fn keep, void *ctx) WT_MUST_USE;

/* The series sent so far, in the order they were added; valid until the next refresh. */
size_t wt_cursor_nseries(const struct wt_cursor *c);
const struct wt_cursor_series *wt_cursor_series_at(const struct wt_cursor *c, size_t i);

/*
 * Fills b (cleared first) with at most max readings after the cursors, oldest first over all
 * series: it holds every unacknowledged reading up to some time H and none after it, except
 * where more than max series are pending (then one reading each of max series, taken in turn).
 * An empty batch means nothing is pending. *more (may be NULL) is set when readings after the
 * batch may be pending already (the next call need not wait). Returns 0, -EIO or -ENOMEM.
 */
int wt_cursor_next(struct wt_cursor *c, size_t max, struct wt_cursor_batch *b,
                   bool *more) WT_MUST_USE;

/*
 * Acknowledges b (a batch of wt_cursor_next, since sent or dropped): each series' cursor moves to
 * its last reading in b, in memory and in the store (one transaction). Returns 0, or -EIO when
 * the store could not be written (the cursors in memory have still moved: the next restart
 * resends what this write lost, which receivers take as duplicates of equal value).
 */
int wt_cursor_ack(struct wt_cursor *c, const struct wt_cursor_batch *b) WT_MUST_USE;

/*
 * Counts the readings not yet acknowledged (*n) and the time of the oldest of them (*oldest_ns,
 * 0 when none). Reads every pending row: call it now and then, not per batch. Returns 0 or -EIO.
 */
int wt_cursor_pending(struct wt_cursor *c, uint64_t *n, int64_t *oldest_ns) WT_MUST_USE;
/*
 * wt_cursor_pending paced for a sender's self-metrics (pending, lag): counts when force is set
 * (caught up: the count is small) or when due, then waits 20 times as long as the count took,
 * at least 2 s, so that after a long outage (millions of pending rows) a sender spends at most
 * 5 % of its time counting. Returns 1 with *n and *lag_s (age of the oldest pending reading in
 * seconds, 0 when none) filled, 0 when not due, or -EIO.
 */
int wt_cursor_pending_paced(struct wt_cursor *c, bool force, uint64_t *n, double *lag_s);

void wt_cursor_batch_free(struct wt_cursor_batch *b);

#endif
