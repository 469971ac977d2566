/* SPDX-License-Identifier: MIT */
/* The store's ticks codec; see ticks.h. */
#include "store/ticks.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store/codec.h"

#define MAX_READINGS (1u << 24) /* a decoder's bound on a blob's claim */
/* a point takes at most 19 bytes of payload; a series' framing at most 30 */
#define MAX_BODY(n) (50 * (uint64_t)(n) + 32)
/* zstd folds a body of ticks 2-10 times; the decoder takes no claim beyond this of a frame of z
 * bytes, and the encoder writes none (a body that folds more is kept plain) */
#define MAX_FOLD(z) (64 * (uint64_t)(z) + 1024)

static bool before(const struct wt_tick_reading *a, const struct wt_tick_reading *b)
{
    return a->series < b->series || (a->series == b->series && a->t_ns < b->t_ns);
}

/* Merges the sorted runs r[a..m) and r[m..e) through tmp, the left first of equals. */
static void merge(struct wt_tick_reading *r, size_t a, size_t m, size_t e,
                  struct wt_tick_reading *tmp)
{
    size_t x = a, y = m, out = 0;
    while (x < m && y < e)
        tmp[out++] = before(&r[y], &r[x]) ? r[y++] : r[x++];
    while (x < m)
        tmp[out++] = r[x++];
    memcpy(r + a, tmp, out * sizeof *r);
}

/* Sorts r[0..n) by time, stably: bottom-up merges of sorted runs (one series' readings). */
static void sort_by_time(struct wt_tick_reading *r, size_t n, struct wt_tick_reading *tmp)
{
    for (size_t w = 1; w < n; w *= 2)
        for (size_t a = 0; a + w < n; a += 2 * w)
            merge(r, a, a + w, a + 2 * w < n ? a + 2 * w : n, tmp);
}

/*
 * Sorts r[0..n) by series, then time, stably (of equal keys the first given stays first). A
 * flush in order is left as it is. Else a byte of (series - the least) a pass, stably through
 * tmp; then each series' run by time, by insertion (a flush's run is a tick or a few, in time
 * order already) or merges when it is long. Returns 0 or -ENOMEM (r is then as it was).
 */
static int sort_readings(struct wt_tick_reading *r, size_t n)
{
    bool sorted = true;
    int64_t lo = r[0].series, hi = r[0].series;
    for (size_t i = 1; i < n; i++) {
        sorted = sorted && !before(&r[i], &r[i - 1]);
        lo = r[i].series < lo ? r[i].series : lo;
        hi = r[i].series > hi ? r[i].series : hi;
    }
    if (sorted)
        return 0;
    uint64_t range = (uint64_t)hi - (uint64_t)lo;
    struct wt_tick_reading *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return -ENOMEM;
    struct wt_tick_reading *a = r, *b = tmp;
    for (int shift = 0; shift < 64 && (range >> shift) != 0; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[(((uint64_t)a[i].series - (uint64_t)lo) >> shift & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++)
            b[count[((uint64_t)a[i].series - (uint64_t)lo) >> shift & 0xff]++] = a[i];
        struct wt_tick_reading *t = a;
        a = b;
        b = t;
    }
    if (a != r)
        memcpy(r, a, n * sizeof *r);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && r[j].series == r[i].series)
            j++;
        if (j - i > 32) {
            sort_by_time(r + i, j - i, tmp);
        } else {
            for (size_t k = i + 1; k < j; k++) {
                struct wt_tick_reading x = r[k];
                size_t m = k;
                for (; m > i && before(&x, &r[m - 1]); m--)
                    r[m] = r[m - 1];
                r[m] = x;
            }
        }
        i = j;
    }
    free(tmp);
    return 0;
}

/* Appends to w a varint length and then the payload of the m points at p, written in place (a
 * byte is kept for the length; a payload of 128 bytes or more is moved up for a longer one). */
static void put_group(struct wt_wbuf *w, const struct wt_point *p, size_t m)
{
    wt_wb_room(w, 1);
    if (w->oom)
        return;
    size_t at = w->n++;
    wt_codec_put_points(w, p, m);
    if (w->oom)
        return;
    size_t len = w->n - at - 1;
    uint8_t v[10];
    size_t k = 0;
    for (uint64_t x = len; k == 0 || x; x >>= 7)
        v[k++] = (uint8_t)(x >= 0x80 ? (x & 0x7f) | 0x80 : x);
    if (k > 1) {
        wt_wb_room(w, k - 1);
        if (w->oom)
            return;
        memmove(w->p + at + k, w->p + at + 1, len);
        w->n += k - 1;
    }
    memcpy(w->p + at, v, k);
}

/* The plain body of sorted readings s[0..n): base, series, and each series' points. */
static int put_body(struct wt_wbuf *w, const struct wt_tick_reading *s, size_t n, int64_t base,
                    size_t *kept)
{
    /* a flush of one tick has a point a series: no copy needed beyond a few */
    struct wt_point few[16], *pts = few;
    size_t groups = 0, longest = 0;
    for (size_t i = 0, run = 0; i < n; i++) {
        bool first = i == 0 || s[i].series != s[i - 1].series;
        groups += first;
        run = first ? 1 : run + 1;
        longest = run > longest ? run : longest;
    }
    if (longest > sizeof few / sizeof few[0] && !(pts = malloc(longest * sizeof *pts)))
        return -ENOMEM;
    wt_wb_room(w, 20 + 12 * n);
    wt_put_sv(w, (uint64_t)base);
    wt_put_uv(w, groups);
    *kept = 0;
    int64_t prev_id = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, m = 0;
        for (; j < n && s[j].series == s[i].series; j++) {
            if (m && s[j].t_ns == s[j - 1].t_ns)
                continue; /* the same series and time again: the first stays */
            pts[m].t_ns = (int64_t)((uint64_t)s[j].t_ns - (uint64_t)base);
            pts[m].v = s[j].v;
            m++;
        }
        wt_put_uv(w, (uint64_t)(s[i].series - prev_id));
        wt_put_uv(w, m);
        put_group(w, pts, m);
        prev_id = s[i].series;
        *kept += m;
        i = j;
    }
    if (pts != few)
        free(pts);
    return w->oom ? -ENOMEM : 0;
}

int wt_ticks_encode(struct wt_tick_reading *r, size_t n, uint8_t **out, size_t *len, int64_t *t_min,
                    int64_t *t_max)
{
    *out = NULL;
    *len = 0;
    if (n == 0 || n > MAX_READINGS)
        return -EINVAL;
    int64_t lo = r[0].t_ns, hi = r[0].t_ns, span;
    for (size_t i = 0; i < n; i++) {
        if (r[i].series < 1)
            return -EINVAL;
        lo = r[i].t_ns < lo ? r[i].t_ns : lo;
        hi = r[i].t_ns > hi ? r[i].t_ns : hi;
    }
    if (__builtin_sub_overflow(hi, lo, &span))
        return -EINVAL;
    if (sort_readings(r, n) != 0)
        return -ENOMEM;

    struct wt_wbuf body = {0}, blob = {0};
    size_t kept = 0;
    int rc = put_body(&body, r, n, lo, &kept);
    if (rc == 0) {
        wt_wb_room(&blob, 1 + 10 + 10 + body.n + body.n / 8 + 64);
        wt_put_u8(&blob, WT_TICKS_ZSTD);
        wt_put_uv(&blob, kept);
        wt_put_uv(&blob, body.n);
        size_t z = blob.oom || body.n < WT_TICKS_ZSTD_MIN
                       ? 0
                       : wt_codec_compress(blob.p + blob.n, blob.cap - blob.n, body.p, body.n);
        if (z && blob.n + z < 1 + 10 + body.n && body.n <= MAX_FOLD(z)) {
            blob.n += z;
        } else {
            blob.n = 0;
            wt_put_u8(&blob, WT_TICKS_PLAIN);
            wt_put_uv(&blob, kept);
            wt_wb_room(&blob, body.n);
            if (!blob.oom) {
                memcpy(blob.p + blob.n, body.p, body.n);
                blob.n += body.n;
            }
        }
        if (blob.oom)
            rc = -ENOMEM;
    }
    free(body.p);
    if (rc) {
        free(blob.p);
        return rc;
    }
    *out = blob.p;
    *len = blob.n;
    *t_min = lo;
    *t_max = hi;
    return 0;
}

/* The header: format and count; the body in *r (decompressed into *plain, the caller's to
 * free, for zstd). */
static int open_blob(const uint8_t *b, size_t len, struct wt_rbuf *r, uint8_t **plain,
                     uint64_t *count)
{
    struct wt_rbuf h = {.p = b, .n = len};
    uint8_t fmt = wt_get_u8(&h);
    uint64_t n = wt_get_uv(&h);
    *plain = NULL;
    if (h.bad || (fmt != WT_TICKS_PLAIN && fmt != WT_TICKS_ZSTD) || n == 0 || n > MAX_READINGS)
        return -EINVAL;
    *count = n;
    if (fmt == WT_TICKS_PLAIN) {
        *r = (struct wt_rbuf){.p = b + h.pos, .n = len - h.pos};
        return 0;
    }
    uint64_t plen = wt_get_uv(&h);
    if (h.bad || plen == 0 || plen > MAX_BODY(n) || plen > MAX_FOLD(len - h.pos))
        return -EINVAL;
    *plain = malloc(plen);
    if (!*plain)
        return -ENOMEM;
    if (wt_codec_decompress(*plain, plen, b + h.pos, len - h.pos) != 0) {
        free(*plain);
        *plain = NULL;
        return -EINVAL;
    }
    *r = (struct wt_rbuf){.p = *plain, .n = plen};
    return 0;
}

/* The next group's framing, stepping r over its payload. */
static bool next_group(struct wt_rbuf *r, int64_t prev_id, uint64_t left, struct wt_ticks_group *g)
{
    uint64_t d = wt_get_uv(r), n = wt_get_uv(r), bytes = wt_get_uv(r);
    /* a point takes at least a byte of time and one of value */
    if (r->bad || d == 0 || d > (uint64_t)(INT64_MAX - prev_id) || n == 0 || n > left ||
        bytes > r->n - r->pos || n > bytes)
        return false;
    *g = (struct wt_ticks_group){prev_id + (int64_t)d, n, r->pos, (size_t)bytes};
    r->pos += bytes;
    return true;
}

/* The points of group g (times made absolute) into o[0 .. g->n). */
static int group_points(const struct wt_rbuf *r, const struct wt_ticks_group *g, uint64_t base,
                        struct wt_point *o)
{
    struct wt_rbuf pr = {.p = r->p + g->at, .n = g->bytes};
    if (wt_codec_get_points(&pr, g->n, o) != 0 || o[0].t_ns < 0)
        return -EINVAL;
    for (size_t i = 0; i < g->n; i++)
        o[i].t_ns = (int64_t)(base + (uint64_t)o[i].t_ns);
    return 0;
}

/* Walks the framing of every group of the body in r; calls each(g) for those; checks the counts
 * add up and nothing is left over. */
static int walk(struct wt_rbuf *r, uint64_t count, uint64_t *base,
                int (*each)(void *, struct wt_ticks_group *), void *ctx)
{
    *base = wt_get_sv(r);
    uint64_t groups = wt_get_uv(r), left = count;
    if (r->bad || groups == 0 || groups > count)
        return -EINVAL;
    int64_t id = 0;
    for (uint64_t i = 0; i < groups; i++) {
        struct wt_ticks_group g;
        if (!next_group(r, id, left, &g))
            return -EINVAL;
        id = g.id;
        left -= g.n;
        if (each) {
            int rc = each(ctx, &g);
            if (rc)
                return rc;
        }
    }
    return left || r->pos != r->n ? -EINVAL : 0;
}

struct find {
    int64_t id;
    struct wt_ticks_group g;
    bool found;
};

static int find_one(void *ctx, struct wt_ticks_group *g)
{
    struct find *f = ctx;
    if (g->id == f->id) {
        f->g = *g;
        f->found = true;
    }
    return 0;
}

int wt_ticks_series(const uint8_t *b, size_t len, int64_t id, int64_t lo, int64_t hi,
                    struct wt_point_buf *out)
{
    struct wt_rbuf r;
    uint8_t *plain;
    uint64_t count, base;
    struct find f = {.id = id};
    int rc = open_blob(b, len, &r, &plain, &count);
    if (rc)
        return rc;
    rc = walk(&r, count, &base, find_one, &f);
    if (rc == 0 && f.found)
        rc = wt_codec_reserve(out, f.g.n);
    if (rc == 0 && f.found) {
        struct wt_point *o = out->p + out->n;
        rc = group_points(&r, &f.g, base, o);
        size_t w = 0;
        for (size_t i = 0; rc == 0 && i < f.g.n; i++) {
            if (o[i].t_ns >= lo && o[i].t_ns <= hi)
                o[w++] = o[i];
        }
        if (rc == 0)
            out->n += w;
    }
    free(plain);
    return rc;
}

struct all {
    const struct wt_rbuf *r;
    uint64_t base;
    struct wt_point *pts;
    size_t n;
    struct wt_ticks_group *groups;
    size_t ng;
};

static int collect(void *ctx, struct wt_ticks_group *g)
{
    struct all *a = ctx;
    a->groups[a->ng++] = *g;
    return 0;
}

int wt_ticks_each(const uint8_t *b, size_t len, wt_ticks_fn fn, void *ctx)
{
    struct wt_rbuf r;
    uint8_t *plain;
    uint64_t count;
    int rc = open_blob(b, len, &r, &plain, &count);
    if (rc)
        return rc;
    struct all a = {.r = &r};
    struct wt_rbuf again = r;
    uint64_t base;
    /* the framing first: what it claims is then bounded by the blob's own bytes */
    rc = walk(&again, count, &base, NULL, NULL);
    if (rc) {
        free(plain);
        return rc;
    }
    a.pts = malloc(count * sizeof *a.pts);
    a.groups = malloc(count * sizeof *a.groups);
    if (!a.pts || !a.groups)
        rc = -ENOMEM;
    if (rc == 0)
        rc = walk(&r, count, &a.base, collect, &a);
    /* decode them all before the first call: a blob is whole or refused */
    for (size_t i = 0, at = 0; rc == 0 && i < a.ng; at += a.groups[i].n, i++)
        rc = group_points(&r, &a.groups[i], a.base, a.pts + at);
    for (size_t i = 0, at = 0; rc == 0 && i < a.ng; at += a.groups[i].n, i++)
        rc = fn(ctx, a.groups[i].id, a.pts + at, a.groups[i].n);
    free(a.pts);
    free(a.groups);
    free(plain);
    return rc;
}

int64_t wt_ticks_count(const uint8_t *b, size_t len)
{
    struct wt_rbuf h = {.p = b, .n = len};
    uint8_t fmt = wt_get_u8(&h);
    uint64_t n = wt_get_uv(&h);
    if (h.bad || (fmt != WT_TICKS_PLAIN && fmt != WT_TICKS_ZSTD) || n == 0 || n > MAX_READINGS)
        return -EINVAL;
    return (int64_t)n;
}

static int keep_group(void *ctx, struct wt_ticks_group *g)
{
    struct wt_ticks_view *v = ctx;
    v->g[v->ng++] = *g;
    return 0;
}

void wt_ticks_view_free(struct wt_ticks_view *v)
{
    free(v->blob);
    free(v->plain);
    free(v->g);
    memset(v, 0, sizeof *v);
}

/* open_blob, then one walk over a copy of the reader that bounds what the framing claims; on
 * failure nothing is left allocated. */
static int open_checked(const uint8_t *b, size_t len, struct wt_rbuf *r, uint8_t **plain,
                        uint64_t *count)
{
    int rc = open_blob(b, len, r, plain, count);
    if (rc)
        return rc;
    struct wt_rbuf again = *r;
    uint64_t base;
    rc = walk(&again, *count, &base, NULL, NULL);
    if (rc) {
        free(*plain);
        *plain = NULL;
    }
    return rc;
}

int wt_ticks_view_open(const uint8_t *b, size_t len, struct wt_ticks_view *v)
{
    struct wt_rbuf r;
    uint64_t count;
    memset(v, 0, sizeof *v);
    int rc = open_checked(b, len, &r, &v->plain, &count);
    if (rc)
        return rc;
    v->blob = malloc(len);
    v->g = malloc((size_t)count * sizeof *v->g); /* a group holds a point at least */
    if (!v->blob || !v->g)
        rc = -ENOMEM;
    if (rc == 0) {
        memcpy(v->blob, b, len);
        v->len = len;
        /* a plain body lies in the blob: point into the copy */
        v->body = v->plain ? v->plain : v->blob + (r.p - b);
        v->body_len = r.n;
        rc = walk(&r, count, &v->base, keep_group, v);
    }
    if (rc)
        wt_ticks_view_free(v);
    return rc;
}

bool wt_ticks_view_is(const struct wt_ticks_view *v, const uint8_t *b, size_t len)
{
    return v->blob && v->len == len && memcmp(v->blob, b, len) == 0;
}

int wt_ticks_view_series(const struct wt_ticks_view *v, int64_t id, int64_t lo, int64_t hi,
                         struct wt_point_buf *out)
{
    size_t a = 0, z = v->ng; /* groups are in ascending id */
    while (a < z) {
        size_t m = a + (z - a) / 2;
        if (v->g[m].id < id)
            a = m + 1;
        else
            z = m;
    }
    if (a == v->ng || v->g[a].id != id)
        return 0;
    const struct wt_ticks_group *g = &v->g[a];
    int rc = wt_codec_reserve(out, g->n);
    if (rc)
        return rc;
    struct wt_rbuf r = {.p = v->body, .n = v->body_len};
    struct wt_point *o = out->p + out->n;
    rc = group_points(&r, g, v->base, o);
    size_t w = 0;
    for (size_t i = 0; rc == 0 && i < g->n; i++) {
        if (o[i].t_ns >= lo && o[i].t_ns <= hi)
            o[w++] = o[i];
    }
    if (rc == 0)
        out->n += w;
    return rc;
}

void wt_ticks_walk_free(struct wt_ticks_walk *w)
{
    free(w->plain);
    memset(w, 0, sizeof *w);
}

void wt_ticks_walk_next(struct wt_ticks_walk *w)
{
    w->have = false;
    if (!w->groups_left)
        return;
    struct wt_rbuf r = {.p = w->body, .n = w->body_len, .pos = w->pos};
    /* the framing was checked whole when opened: this only fails on a blob changed since */
    if (!next_group(&r, w->g.id, w->left, &w->g)) {
        w->groups_left = 0;
        return;
    }
    w->groups_left--;
    w->left -= w->g.n;
    w->pos = r.pos;
    w->have = true;
}

int wt_ticks_walk_open(const uint8_t *b, size_t len, struct wt_ticks_walk *w)
{
    struct wt_rbuf r;
    uint64_t count;
    memset(w, 0, sizeof *w);
    int rc = open_checked(b, len, &r, &w->plain, &count);
    if (rc)
        return rc;
    w->body = r.p;
    w->body_len = r.n;
    w->base = wt_get_sv(&r);
    w->groups_left = wt_get_uv(&r);
    w->left = count;
    w->pos = r.pos;
    wt_ticks_walk_next(w);
    return 0;
}

int wt_ticks_walk_points(const struct wt_ticks_walk *w, struct wt_point_buf *out)
{
    if (!w->have)
        return 0;
    int rc = wt_codec_reserve(out, w->g.n);
    if (rc)
        return rc;
    struct wt_rbuf r = {.p = w->body, .n = w->body_len};
    rc = group_points(&r, &w->g, w->base, out->p + out->n);
    if (rc == 0)
        out->n += w->g.n;
    return rc;
}
