/* SPDX-License-Identifier: MIT */
/*
 * The store's ticks codec: every reading of one writer flush (all series, a tick or a few) in
 * one blob, the unit of the packed-ticks table that store v2 appends instead of a row per reading
 * (issue 17). Pure: no SQL, no state.
 *
 * Layout: a format byte (WT_TICKS_PLAIN or WT_TICKS_ZSTD), the reading count (varint) and, for
 * zstd, the plain body's length (varint) before the zstd frame. The plain body:
 *   - the base time (zigzag varint, ns): the earliest reading's;
 *   - the number of series (varint), then each series in ascending id: its id as the difference
 *     from the previous one (varint, >= 1; the first from 0), its point count (varint) and the
 *     byte length of its points (varint), then its points as a chunk's payload (chunk.h) with
 *     times relative to the base. Readings of one tick share a time: a reading costs its value
 *     (a decimal integer at the series' scale, or XOR), a byte of time and about three bytes of
 *     framing for a series read once a flush.
 * A reader of one series steps over the others by their lengths without decoding them. zstd is
 * used when the body is at least WT_TICKS_ZSTD_MIN bytes and it makes the blob smaller.
 */
#ifndef WT_STORE_TICKS_H
#define WT_STORE_TICKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

enum { WT_TICKS_PLAIN = 1, WT_TICKS_ZSTD = 2 };

/*
 * Bodies shorter than this are kept plain: a ticks row lives only until maintenance moves its
 * readings into their series' chunks (zstd at rest, chunk.h). The 1-s flush of an 8-GPU node
 * (2-5 kB) would save a few kB a row for those minutes at ~150k instructions a write, and a
 * decompression at every read of the row; a flush of many ticks (a longer flush interval, an
 * import), which zstd folds about 5 times, is compressed (issue 49).
 */
#define WT_TICKS_ZSTD_MIN 8192

/* One reading of a flush: its series' id (>= 1), time (ns) and value. */
struct wt_tick_reading {
    int64_t series;
    int64_t t_ns;
    double v;
};

/*
 * Encodes n >= 1 readings in any order into *out (malloc'd, *len bytes); *t_min and *t_max get
 * the earliest and latest time. r is sorted in place by series, then time; of two readings of
 * one series at one time the first given is kept (as the readings table's INSERT OR IGNORE
 * kept the first written). Returns 0, -EINVAL (n == 0, a series id < 1, times more than 2^63 ns
 * apart) or -ENOMEM.
 */
int wt_ticks_encode(struct wt_tick_reading *r, size_t n, uint8_t **out, size_t *len, int64_t *t_min,
                    int64_t *t_max) WT_MUST_USE;

/*
 * Appends the points of series id with lo <= t <= hi to out, in time order (none: nothing).
 * Returns 0, -EINVAL (the blob's framing or that series' points are not well formed: out is then
 * left as it was; the other series' points are stepped over, not decoded) or -ENOMEM.
 */
int wt_ticks_series(const uint8_t *b, size_t len, int64_t id, int64_t lo, int64_t hi,
                    struct wt_point_buf *out) WT_MUST_USE;

/*
 * Calls fn for each series of a blob in ascending id with its points (time order; valid during
 * the call). A nonzero return of fn stops the walk and is returned. Else 0, -EINVAL (not a
 * well-formed blob: checked whole before the first call) or -ENOMEM.
 */
typedef int (*wt_ticks_fn)(void *ctx, int64_t id, const struct wt_point *p, size_t n);
int wt_ticks_each(const uint8_t *b, size_t len, wt_ticks_fn fn, void *ctx) WT_MUST_USE;

/*
 * A blob opened once for the reads of many series (the store keeps a few, one a ticks row): a
 * copy of its bytes, its body (decompressed) and the framing of each series, found by binary
 * search. Its points are decoded on each read.
 */
struct wt_ticks_group {
    int64_t id;
    uint64_t n;
    size_t at, bytes; /* its payload: body[at .. at + bytes) */
};
struct wt_ticks_view {
    uint8_t *blob, *plain; /* the copy; the decompressed body (zstd) or NULL */
    size_t len;
    const uint8_t *body;
    size_t body_len;
    uint64_t base;
    struct wt_ticks_group *g; /* ascending id */
    size_t ng;
};

/* Opens b (its framing checked whole) into *v. Returns 0, -EINVAL or -ENOMEM (*v then empty). */
int wt_ticks_view_open(const uint8_t *b, size_t len, struct wt_ticks_view *v) WT_MUST_USE;
/* Whether v was opened from these very bytes. */
bool wt_ticks_view_is(const struct wt_ticks_view *v, const uint8_t *b, size_t len);
/* wt_ticks_series on an opened blob. */
int wt_ticks_view_series(const struct wt_ticks_view *v, int64_t id, int64_t lo, int64_t hi,
                         struct wt_point_buf *out) WT_MUST_USE;
/* Frees what v holds and empties it; an empty view is fine. */
void wt_ticks_view_free(struct wt_ticks_view *v);

/*
 * A walk over the series of one blob in ascending id, one series at a time, decoding only the
 * points asked for: maintenance moves many rows' readings series by series, merging the rows'
 * walks, without holding every point at once. The blob's bytes must stay alive and unchanged
 * while the walk is used.
 */
struct wt_ticks_walk {
    uint8_t *plain; /* the decompressed body (zstd) or NULL */
    const uint8_t *body;
    size_t body_len, pos; /* pos: after the current series' payload */
    uint64_t base, groups_left, left;
    bool have;               /* a current series: g */
    struct wt_ticks_group g; /* the current series' framing */
};

/* Opens b (its framing checked whole) at its first series. Returns 0, -EINVAL or -ENOMEM (*w
 * then empty). */
int wt_ticks_walk_open(const uint8_t *b, size_t len, struct wt_ticks_walk *w) WT_MUST_USE;
/* Appends the current series' points to out, in time order. Returns 0, -EINVAL (its points are
 * not well formed: out is then left as it was) or -ENOMEM. */
int wt_ticks_walk_points(const struct wt_ticks_walk *w, struct wt_point_buf *out) WT_MUST_USE;
/* Steps to the next series; w->have false after the last. */
void wt_ticks_walk_next(struct wt_ticks_walk *w);
/* Frees what w holds and empties it; an empty walk is fine. */
void wt_ticks_walk_free(struct wt_ticks_walk *w);

/* The readings a blob holds, without decoding their points: >= 0, or -EINVAL. */
int64_t wt_ticks_count(const uint8_t *b, size_t len);

#endif
