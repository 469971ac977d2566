/* SPDX-License-Identifier: MIT */
/*
 * What the store's codecs share (chunk.c, ticks.c): a growing output buffer and a bounded input
 * cursor, LEB128 varints and zigzag signed varints, the points payload of a chunk (chunk.h) and
 * zstd with one context of each kind per thread. Internal to src/store/.
 */
#ifndef WT_STORE_CODEC_H
#define WT_STORE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "store/store.h"

/* Output: grows by doubling; a failed growth sets oom and every later put is a no-op. */
struct wt_wbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
};

/* Input: a read past n sets bad and gives 0. */
struct wt_rbuf {
    const uint8_t *p;
    size_t n, pos;
    bool bad;
};

static inline void wt_wb_room(struct wt_wbuf *w, size_t need)
{
    if (w->oom || w->n + need <= w->cap)
        return;
    size_t nc = w->cap ? w->cap * 2 : 256;
    while (nc < w->n + need)
        nc *= 2;
    uint8_t *p = realloc(w->p, nc);
    if (!p) {
        w->oom = true;
        return;
    }
    w->p = p;
    w->cap = nc;
}

static inline void wt_put_u8(struct wt_wbuf *w, uint8_t b)
{
    wt_wb_room(w, 1);
    if (!w->oom)
        w->p[w->n++] = b;
}

static inline void wt_put_uv(struct wt_wbuf *w, uint64_t v)
{
    wt_wb_room(w, 10);
    if (w->oom)
        return;
    while (v >= 0x80) {
        w->p[w->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    w->p[w->n++] = (uint8_t)v;
}

/* zigzag of a two's complement difference (wrapping arithmetic: any int64 pair round-trips) */
static inline void wt_put_sv(struct wt_wbuf *w, uint64_t d)
{
    wt_put_uv(w, (d << 1) ^ (uint64_t) - (int64_t)(d >> 63));
}

static inline uint8_t wt_get_u8(struct wt_rbuf *r)
{
    if (r->pos >= r->n) {
        r->bad = true;
        return 0;
    }
    return r->p[r->pos++];
}

static inline uint64_t wt_get_uv(struct wt_rbuf *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->pos >= r->n) {
            r->bad = true;
            return 0;
        }
        uint8_t b = r->p[r->pos++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

static inline uint64_t wt_get_sv(struct wt_rbuf *r)
{
    uint64_t z = wt_get_uv(r);
    return (z >> 1) ^ (uint64_t) - (int64_t)(z & 1);
}

/*
 * A chunk's plain payload (chunk.h's layout) of n >= 1 points, times strictly increasing,
 * appended to w; and read back from r, which must hold exactly one payload: n points into o.
 * The reader returns 0 or -EINVAL (malformed, times not increasing, bytes left over).
 */
void wt_codec_put_points(struct wt_wbuf *w, const struct wt_point *p, size_t n);
int wt_codec_get_points(struct wt_rbuf *r, size_t n, struct wt_point *o);

/* Room in b for more points (doubling from 256): 0 or -ENOMEM, b unchanged. */
int wt_codec_reserve(struct wt_point_buf *b, size_t more);

/* zstd at the codecs' level into dst (cap bytes): the frame's size, or 0 when it does not fit
 * or fails. */
size_t wt_codec_compress(void *dst, size_t cap, const void *src, size_t n);
/* The whole frame src (n bytes) into dst, which must take exactly plen bytes: 0, or -EINVAL
 * when the frame does not say plen or does not decode to it. */
int wt_codec_decompress(void *dst, size_t plen, const void *src, size_t n);

#endif
