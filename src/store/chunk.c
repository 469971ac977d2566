/* SPDX-License-Identifier: MIT */
/* The store's chunk codec; see chunk.h. */
#include "store/chunk.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "store/codec.h"

#define ZSTD_LEVEL 3
#define MAX_POINTS (1u << 24) /* a decoder's bound on a blob's claim */

/*
 * One zstd context of each kind per thread, made on first use and freed when the thread ends:
 * making one costs more than coding a chunk.
 */
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
struct zctx {
    ZSTD_CCtx *c;
    ZSTD_DCtx *d;
};

static void ctx_free(void *p)
{
    struct zctx *z = p;
    ZSTD_freeCCtx(z->c);
    ZSTD_freeDCtx(z->d);
    free(z);
}

static void ctx_init(void)
{
    (void)pthread_key_create(&ctx_key, ctx_free);
}

static struct zctx *zctx(void)
{
    pthread_once(&ctx_once, ctx_init);
    struct zctx *z = pthread_getspecific(ctx_key);
    if (!z) {
        z = calloc(1, sizeof *z);
        if (!z)
            return NULL;
        if (pthread_setspecific(ctx_key, z) != 0) {
            free(z);
            return NULL;
        }
    }
    return z;
}

size_t wt_codec_compress(void *dst, size_t cap, const void *src, size_t n)
{
    struct zctx *zc = zctx();
    if (zc && !zc->c)
        zc->c = ZSTD_createCCtx();
    size_t z = zc && zc->c ? ZSTD_compressCCtx(zc->c, dst, cap, src, n, ZSTD_LEVEL)
                           : ZSTD_compress(dst, cap, src, n, ZSTD_LEVEL);
    return ZSTD_isError(z) ? 0 : z;
}

int wt_codec_decompress(void *dst, size_t plen, const void *src, size_t n)
{
    if (ZSTD_getFrameContentSize(src, n) != plen)
        return -EINVAL;
    struct zctx *zc = zctx();
    if (zc && !zc->d)
        zc->d = ZSTD_createDCtx();
    size_t got = zc && zc->d ? ZSTD_decompressDCtx(zc->d, dst, plen, src, n)
                             : ZSTD_decompress(dst, plen, src, n);
    return ZSTD_isError(got) || got != plen ? -EINVAL : 0;
}

static const double p10[WT_CHUNK_MAX_SCALE + 1] = {1, 10, 100, 1000, 1e4, 1e5, 1e6};

static uint64_t bits_of(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static double double_of(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* v is exactly i / 10^s for an integer |i| <= 2^53: *i. */
static bool at_scale(double v, int s, int64_t *i)
{
    if (!isfinite(v))
        return false;
    double x = v * p10[s];
    if (!(fabs(x) <= 9007199254740992.0))
        return false;
    int64_t k = llround(x);
    if (bits_of((double)k / p10[s]) != bits_of(v))
        return false;
    *i = k;
    return true;
}

/* The least scale at which every value is an integer, or -1. */
static int scale_of(const struct wt_point *p, size_t n)
{
    int s = 0;
    int64_t k;
    for (size_t i = 0; i < n; i++) {
        while (s <= WT_CHUNK_MAX_SCALE && !at_scale(p[i].v, s, &k))
            s++;
        if (s > WT_CHUNK_MAX_SCALE)
            return -1;
    }
    /* a value passing at a smaller scale need not pass at s: check them all at s */
    for (size_t i = 0; i < n; i++) {
        if (!at_scale(p[i].v, s, &k))
            return -1;
    }
    return s;
}

void wt_codec_put_points(struct wt_wbuf *w, const struct wt_point *p, size_t n)
{
    uint64_t prev_t = (uint64_t)p[0].t_ns, prev_d = 0;
    wt_put_sv(w, prev_t);
    for (size_t i = 1; i < n; i++) {
        uint64_t d = (uint64_t)p[i].t_ns - prev_t;
        wt_put_sv(w, i == 1 ? d : d - prev_d);
        prev_d = d;
        prev_t = (uint64_t)p[i].t_ns;
    }
    int s = scale_of(p, n);
    if (s >= 0) {
        wt_put_u8(w, (uint8_t)s);
        uint64_t prev = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t k = 0;
            (void)at_scale(p[i].v, s, &k);
            wt_put_sv(w, (uint64_t)k - prev);
            prev = (uint64_t)k;
        }
        return;
    }
    wt_put_u8(w, WT_CHUNK_XOR);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t b = bits_of(p[i].v), x = b ^ prev;
        prev = b;
        if (!x) {
            wt_put_u8(w, 0);
            continue;
        }
        int tz = __builtin_ctzll(x) / 8, lz = __builtin_clzll(x) / 8;
        int nb = 8 - tz - lz;
        wt_put_u8(w, (uint8_t)(tz << 4 | nb));
        x >>= tz * 8;
        for (int k = 0; k < nb; k++)
            wt_put_u8(w, (uint8_t)(x >> (8 * k)));
    }
}

int wt_chunk_encode(const struct wt_point *p, size_t n, uint8_t **out, size_t *len)
{
    struct wt_wbuf pay = {0}, blob = {0};
    *out = NULL;
    *len = 0;
    if (n == 0 || n > MAX_POINTS)
        return -EINVAL;
    for (size_t i = 1; i < n; i++) {
        if (p[i].t_ns <= p[i - 1].t_ns)
            return -EINVAL;
    }
    wt_codec_put_points(&pay, p, n);
    if (pay.oom) {
        free(pay.p);
        return -ENOMEM;
    }
    size_t bound = ZSTD_compressBound(pay.n);
    wt_wb_room(&blob, 1 + 10 + 10 + bound);
    if (blob.oom) {
        free(pay.p);
        return -ENOMEM;
    }
    wt_put_u8(&blob, WT_CHUNK_ZSTD);
    wt_put_uv(&blob, n);
    wt_put_uv(&blob, pay.n);
    size_t z = wt_codec_compress(blob.p + blob.n, blob.cap - blob.n, pay.p, pay.n);
    if (z && blob.n + z < 1 + 10 + pay.n) {
        blob.n += z;
    } else {
        /* zstd does not pay: the plain payload */
        blob.n = 0;
        wt_put_u8(&blob, WT_CHUNK_PLAIN);
        wt_put_uv(&blob, n);
        wt_wb_room(&blob, pay.n);
        if (!blob.oom) {
            memcpy(blob.p + blob.n, pay.p, pay.n);
            blob.n += pay.n;
        }
    }
    free(pay.p);
    if (blob.oom) {
        free(blob.p);
        return -ENOMEM;
    }
    *out = blob.p;
    *len = blob.n;
    return 0;
}

int wt_codec_get_points(struct wt_rbuf *r, size_t n, struct wt_point *o)
{
    uint64_t t = wt_get_sv(r), d = 0;
    o[0].t_ns = (int64_t)t;
    for (size_t i = 1; i < n && !r->bad; i++) {
        uint64_t x = wt_get_sv(r);
        d = i == 1 ? x : d + x;
        t += d;
        o[i].t_ns = (int64_t)t;
        if (o[i].t_ns <= o[i - 1].t_ns)
            return -EINVAL; /* times increase in every chunk written */
    }
    uint8_t mode = wt_get_u8(r);
    if (r->bad)
        return -EINVAL;
    if (mode <= WT_CHUNK_MAX_SCALE) {
        uint64_t k = 0;
        for (size_t i = 0; i < n && !r->bad; i++) {
            k += wt_get_sv(r);
            o[i].v = (double)(int64_t)k / p10[mode];
        }
    } else if (mode == WT_CHUNK_XOR) {
        uint64_t prev = 0;
        for (size_t i = 0; i < n && !r->bad; i++) {
            uint8_t c = wt_get_u8(r);
            int tz = c >> 4, nb = c & 0x0f;
            if (c && (nb == 0 || tz + nb > 8)) {
                r->bad = true;
                break;
            }
            uint64_t x = 0;
            for (int k = 0; k < nb; k++)
                x |= (uint64_t)wt_get_u8(r) << (8 * k);
            prev ^= x << (tz * 8);
            o[i].v = double_of(prev);
        }
    } else {
        return -EINVAL;
    }
    return r->bad || r->pos != r->n ? -EINVAL : 0;
}

int wt_codec_reserve(struct wt_point_buf *b, size_t more)
{
    if (b->n + more <= b->cap)
        return 0;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->n + more)
        nc *= 2;
    struct wt_point *p = realloc(b->p, nc * sizeof *p);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = nc;
    return 0;
}

int64_t wt_chunk_count(const uint8_t *b, size_t len)
{
    struct wt_rbuf r = {.p = b, .n = len};
    uint8_t fmt = wt_get_u8(&r);
    uint64_t n = wt_get_uv(&r);
    if (r.bad || (fmt != WT_CHUNK_PLAIN && fmt != WT_CHUNK_ZSTD) || n == 0 || n > MAX_POINTS)
        return -EINVAL;
    return (int64_t)n;
}

int wt_chunk_decode(const uint8_t *b, size_t len, struct wt_point_buf *out)
{
    struct wt_rbuf r = {.p = b, .n = len};
    uint8_t fmt = wt_get_u8(&r);
    uint64_t n = wt_get_uv(&r);
    uint8_t *plain = NULL;
    int rc;
    if (r.bad || (fmt != WT_CHUNK_PLAIN && fmt != WT_CHUNK_ZSTD) || n == 0 || n > MAX_POINTS)
        return -EINVAL;
    if (fmt == WT_CHUNK_ZSTD) {
        uint64_t plen = wt_get_uv(&r);
        /* a point takes at least 2 bytes and at most 19 in the payload */
        if (r.bad || plen < n || plen > 20 * n + 16)
            return -EINVAL;
        plain = malloc(plen ? plen : 1);
        if (!plain)
            return -ENOMEM;
        if (wt_codec_decompress(plain, plen, b + r.pos, len - r.pos) != 0) {
            free(plain);
            return -EINVAL;
        }
        r = (struct wt_rbuf){.p = plain, .n = plen};
    }
    if (wt_codec_reserve(out, n) != 0) {
        free(plain);
        return -ENOMEM;
    }
    rc = wt_codec_get_points(&r, n, out->p + out->n);
    free(plain);
    if (rc == 0)
        out->n += n;
    return rc;
}
