/* SPDX-License-Identifier: MIT */
/*
 * The store's readers: ranges and edges of a series from raw rows, chunks and packed ticks merged,
 * windows from chunk summaries, bounds, counts, rollups and runs. Their statements are prepared
 * once and kept on the handle (rq_sql).
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

/* ---- reading: raw rows and chunks, merged ---- */

int wt_store_pb_push(struct wt_point_buf *b, int64_t t, double v)
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
        if (wt_store_pb_push(out, sqlite3_column_int64(q, 0), sqlite3_column_double(q, 1)) != 0) {
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
                    d = wt_store_pb_push(out, p->p[i].t_ns, p->p[i].v);
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
int wt_store_merge_into(struct wt_point_buf *out, const struct wt_point_buf *x,
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
        if (wt_store_pb_push(out, p.t_ns, p.v) != 0)
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
        rc = wt_store_pb_push(out, p.t_ns, p.v);
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
        rc = wt_store_merge_into(out, &r, &k, limit);
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
        rc = wt_store_merge_into(out, &c, &r, limit);
    free(c.p);
    free(r.p);
    return rc;
}

/* The last reading at or before t (*have false: none). */
int wt_store_read_at_or_before(struct wt_store *s, int64_t id, int64_t t, struct wt_point *p,
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
        rc = wt_store_read_at_or_before(s, id, a, &p, &have);
        if (rc == 0 && have && (!out->n || p.t_ns > out->p[out->n - 1].t_ns))
            rc = wt_store_pb_push(out, p.t_ns, p.v);
        if (rc == 0 && a < INT64_MAX && b > INT64_MIN)
            rc = read_range(s, id, a + 1, b - 1, limit, out);
        int64_t from = b > a ? b : (a < INT64_MAX ? a + 1 : a);
        if (rc == 0)
            rc = read_at_or_after(s, id, from, &p, &have);
        if (rc == 0 && have && (!out->n || p.t_ns > out->p[out->n - 1].t_ns))
            rc = wt_store_pb_push(out, p.t_ns, p.v);
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
        int h = wt_store_one_value(s, RQ_WIN_BEFORE, id, a, &t0b);
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
int wt_store_one_value(struct wt_store *s, int k, int64_t id, int64_t a, int64_t *v)
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
    int h = wt_store_one_value(s, newest ? RQ_RAW_MAX : RQ_RAW_MIN, id, 0, &r);
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
    int hc = hr < 0 ? hr : wt_store_one_value(s, RQ_CHUNK_FIRST, id, 0, &c0);
    if (hr > 0 && raw_bound(s, id, true, &r1) < 0)
        hr = -EIO;
    if (hc > 0 && wt_store_one_value(s, RQ_CHUNK_LAST, id, 0, &c1) < 0)
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
            rc = wt_store_merge_into(&r, &c, &both_r, 0);
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
    if (rc == 0 && wt_store_one_value(s, RQ_CA_SUM, id, after, &cn) < 0)
        rc = -EIO;
    int64_t c0 = 0;
    int hc = rc ? 0 : wt_store_one_value(s, RQ_CA_MIN_T0, id, after, &c0);
    int hr = rc ? 0 : wt_store_one_value(s, RQ_CA_RAW_MIN, id, after, &rmin);
    if (rc == 0 && (hc < 0 || hr < 0 || wt_store_one_value(s, RQ_CA_COUNT, id, after, &k) < 0))
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
    int hr = wt_store_one_value(s, RQ_NEWEST_RAW, 0, 0, &r);
    int hc = hr < 0 ? 0 : wt_store_one_value(s, RQ_NEWEST_CHUNK, 0, 0, &c);
    int hk = hr < 0 || hc < 0 ? 0 : wt_store_one_value(s, RQ_TICKS_NEWEST, 0, 0, &k);
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
