/* SPDX-License-Identifier: MIT */
/*
 * The store's maintenance (wt_store_maintain): per-minute rollups, compaction of closed spans and
 * packed ticks into chunks, chunk summaries, pruning past retention, in small steps.
 */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <malloc.h>
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

/* ---- maintenance: rollups, compaction and pruning ---- */

/* The integer a one-value maintenance query returns; *null when NULL or on error (which fails
 * the pass: bounds read from a failed query would be wrong). */
static int64_t one_int(struct wt_store *s, int q, int64_t a, int64_t b, bool *null)
{
    sqlite3_stmt *st = wt_store_mq(s, q);
    int64_t v = 0;
    *null = true;
    if (!st) {
        s->mq_failed = true;
        return 0;
    }
    sqlite3_bind_int64(st, 1, a);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int64(st, 2, b);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        v = sqlite3_column_int64(st, 0);
        *null = false;
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        s->mq_failed = true;
    }
    sqlite3_reset(st);
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

/* Reads the exact bounds of a series not known yet. */
static void ms_query(struct wt_store *s, struct mser *m)
{
    bool null;
    int64_t lo, hi;
    m->lo = INT64_MAX;
    m->hi = INT64_MIN;
    int hb = wt_store_bounds(s, m->id, &lo, &hi);
    if (hb < 0)
        s->mq_failed = true;
    if (hb > 0) {
        m->lo = lo;
        m->hi = hi;
    }
    int64_t v = one_int(s, MQ_MIN_T, m->id, 0, &null);
    m->raw_lo = null ? INT64_MAX : v;
    v = one_int(s, MQ_ROLL_MIN_T, m->id, 0, &null);
    m->roll_lo = null ? INT64_MAX : v;
    m->known = true;
}

/*
 * Whether a pass has work on a known series; each is a necessary condition of the work that
 * roll_series, prune_raw and prune_rollups would do, so skipping the others changes nothing.
 */
static bool roll_due(const struct mser *m)
{
    if (m->hi < m->lo)
        return false;
    int64_t r0 = m->rolled_to ? m->rolled_to : wt_minute_floor(m->lo);
    return wt_minute_floor(m->hi) > r0;
}

static bool raw_prune_due(const struct mser *m, int64_t raw_cut)
{
    return m->rolled_to && m->hi >= m->lo && m->lo < raw_cut && m->lo < m->rolled_to;
}

/* Rolls up to ROLL_MAX_MIN complete minutes of one series. Returns rows read, or -EIO. */
static int roll_series(struct wt_store *s, const struct wt_run_list *runs, struct mser *m)
{
    int64_t id = m->id;
    int64_t first, last;
    int hb = wt_store_bounds(s, id, &first, &last);
    if (hb < 0)
        return -EIO;
    if (hb == 0) {
        m->lo = INT64_MAX;
        m->hi = INT64_MIN;
        return 0;
    }
    m->hi = last;
    m->lo = first;
    int64_t target = wt_minute_floor(last);
    int64_t r0 = m->rolled_to;
    if (!r0)
        r0 = wt_minute_floor(first);
    if (target <= r0)
        return 0;
    int nmin = (int)((target - r0) / WT_MINUTE_NS);
    if (nmin > ROLL_MAX_MIN)
        nmin = ROLL_MAX_MIN;
    int64_t end = r0 + nmin * WT_MINUTE_NS;
    memset(s->acc, 0, sizeof s->acc);

    struct wt_segment_rule rule = wt_segment_rule_for(runs, m->node, m->kind);
    /* the reading at or before r0, those inside, and the first at or after end */
    s->seg.n = 0;
    int src = wt_store_read(s, id, r0, end, WT_RD_EDGES, 0, &s->seg);
    if (src != 0)
        return src;
    int rows = 0;
    bool have = false;
    int64_t pt = 0;
    double pv = 0;
    for (size_t i = 0; i < s->seg.n; i++) {
        int64_t t = s->seg.p[i].t_ns;
        double v = s->seg.p[i].v;
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
        if (have && m->kind != WT_SK_GAUGE && t > pt) {
            double d;
            bool cov;
            wt_segment(&rule, pt, pv, t, v, &d, &cov);
            acc_add_energy(s, r0, nmin, pt, t, d, cov);
        }
        have = true;
        pt = t;
        pv = v;
    }

    sqlite3_stmt *st = wt_store_mq(s, MQ_INS_ROLLUP);
    if (!st)
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
        if (r0 + k * WT_MINUTE_NS < m->roll_lo)
            m->roll_lo = r0 + k * WT_MINUTE_NS;
    }
    if (rc)
        return rc;
    st = wt_store_mq(s, MQ_SET_ROLLED);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, end);
    sqlite3_bind_int64(st, 2, id);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_reset(st);
    if (rc)
        return rc;
    m->rolled_to = end;
    return rows + nmin;
}

/* Deletes series id's rows older than cut from a table. Returns rows deleted or -EIO. */
static int delete_before(struct wt_store *s, int q, int64_t id, int64_t cut)
{
    sqlite3_stmt *st = wt_store_mq(s, q);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, cut);
    int rc = sqlite3_step(st);
    int changed = sqlite3_changes(s->db);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? changed : -EIO;
}

/* Deletes raw readings older than raw_cut that rollups cover, at most an hour's worth. */
static int prune_raw(struct wt_store *s, struct mser *m, int64_t raw_cut)
{
    /* keep the last reading at or before rolled_to: the segment across it needs it */
    struct wt_point kp = {0};
    bool have;
    int64_t first, last;
    if (wt_store_read_at_or_before(s, m->id, m->rolled_to, &kp, &have) != 0)
        return -EIO;
    int hb = wt_store_bounds(s, m->id, &first, &last);
    if (hb < 0)
        return -EIO;
    if (hb == 0) {
        m->lo = INT64_MAX;
        m->hi = INT64_MIN;
        return 0;
    }
    m->lo = first;
    int64_t keep = have ? kp.t_ns : first;
    int64_t cut = raw_cut < keep ? raw_cut : keep;
    if (cut > first + 3600 * WT_NS_PER_S)
        cut = first + 3600 * WT_NS_PER_S;
    if (cut <= first)
        return 0;
    int n = delete_before(s, MQ_DEL_READINGS, m->id, cut);
    /* whole chunks only: one that holds cut stays until all of it is older */
    int c = n < 0 ? n : delete_before(s, MQ_DEL_CHUNKS, m->id, cut);
    if (n < 0 || c < 0)
        return -EIO;
    hb = wt_store_bounds(s, m->id, &first, &last);
    if (hb < 0)
        return -EIO;
    m->lo = hb ? first : INT64_MAX;
    if (!hb)
        m->hi = INT64_MIN;
    return n + c;
}

/* Deletes rollups older than roll_cut, at most a day's worth. */
static int prune_rollups(struct wt_store *s, struct mser *m, int64_t roll_cut)
{
    bool null;
    int64_t first = one_int(s, MQ_ROLL_MIN_T, m->id, 0, &null);
    m->roll_lo = null ? INT64_MAX : first;
    if (null || first >= roll_cut)
        return 0;
    int64_t cut = roll_cut;
    if (cut > first + 86400 * WT_NS_PER_S)
        cut = first + 86400 * WT_NS_PER_S;
    int n = delete_before(s, MQ_DEL_ROLLUPS, m->id, cut);
    if (n >= 0)
        m->roll_lo = cut;
    return n;
}

/* Floors t to its span. */
static int64_t span_floor(int64_t t)
{
    int64_t q = t / SPAN_NS;
    if (t % SPAN_NS < 0)
        q--;
    return q * SPAN_NS;
}

static bool compact_due(const struct mser *m, int64_t cut)
{
    return m->raw_lo < cut;
}

/* Writes the points of one span (merged with the chunk already there) as its chunk, with its
 * summary by rule. */
static int compact_span(struct wt_store *s, int64_t id, const struct wt_segment_rule *rule,
                        int64_t span0, const struct wt_point *p, size_t n)
{
    sqlite3_stmt *st = wt_store_mq(s, MQ_SPAN_CHUNKS);
    int rc;
    if (!st)
        return -EIO;
    s->span.n = 0;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, span0);
    sqlite3_bind_int64(st, 3, span0 + SPAN_NS);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int d = wt_chunk_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                                &s->span);
        if (d != 0) {
            sqlite3_reset(st);
            wt_store_db_fail(s, "series %" PRId64 ": a chunk does not decode", id);
            return -EIO;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -EIO;
    struct wt_point_buf fresh = {.p = (struct wt_point *)p, .n = n, .cap = n};
    s->merged.n = 0;
    if (wt_store_merge_into(&s->merged, &s->span, &fresh, 0) != 0)
        return -ENOMEM;
    uint8_t *blob = NULL;
    size_t len = 0;
    if ((rc = wt_chunk_encode(s->merged.p, s->merged.n, &blob, &len)) != 0)
        return rc;
    if (s->span.n) {
        st = wt_store_mq(s, MQ_DEL_SPAN);
        rc = -EIO;
        if (st) {
            sqlite3_bind_int64(st, 1, id);
            sqlite3_bind_int64(st, 2, span0);
            sqlite3_bind_int64(st, 3, span0 + SPAN_NS);
            rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
            sqlite3_reset(st);
        }
        if (rc) {
            free(blob);
            return rc;
        }
    }
    st = wt_store_mq(s, MQ_INS_CHUNK);
    if (!st) {
        free(blob);
        return -EIO;
    }
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, s->merged.p[0].t_ns);
    sqlite3_bind_int64(st, 3, s->merged.p[s->merged.n - 1].t_ns);
    sqlite3_bind_int64(st, 4, (int64_t)s->merged.n);
    sqlite3_bind_blob(st, 5, blob, (int)len, SQLITE_STATIC);
    double e;
    int64_t cov;
    wt_segment_sum(rule, s->merged.p, s->merged.n, &e, &cov);
    sqlite3_bind_double(st, 6, s->merged.p[0].v);
    sqlite3_bind_double(st, 7, s->merged.p[s->merged.n - 1].v);
    sqlite3_bind_double(st, 8, e);
    sqlite3_bind_int64(st, 9, cov);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    if (rc)
        wt_store_db_fail(s, "cannot write a chunk: %s", sqlite3_errmsg(s->db));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    free(blob);
    return rc;
}

/*
 * Moves up to COMPACT_MAX raw readings of a series older than cut (a span boundary) into the
 * chunks of their spans, in the pass's transaction: the rows are deleted in the same one, so a
 * kill at any point leaves each reading in exactly one of the tables. Returns readings moved.
 */
static int compact_series(struct wt_store *s, const struct wt_run_list *runs, struct mser *m,
                          int64_t cut)
{
    struct wt_segment_rule rule = wt_segment_rule_for(runs, m->node, m->kind);
    sqlite3_stmt *st = wt_store_mq(s, MQ_COMPACT_RAW);
    int rc;
    if (!st)
        return -EIO;
    s->cold.n = 0;
    sqlite3_bind_int64(st, 1, m->id);
    sqlite3_bind_int64(st, 2, cut);
    sqlite3_bind_int64(st, 3, COMPACT_MAX);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (wt_store_pb_push(&s->cold, sqlite3_column_int64(st, 0), sqlite3_column_double(st, 1)) !=
            0) {
            sqlite3_reset(st);
            return -ENOMEM;
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -EIO;
    size_t n = s->cold.n;
    for (size_t i = 0; i < n;) {
        int64_t span0 = span_floor(s->cold.p[i].t_ns);
        size_t j = i;
        while (j < n && span_floor(s->cold.p[j].t_ns) == span0)
            j++;
        if ((rc = compact_span(s, m->id, &rule, span0, s->cold.p + i, j - i)) != 0)
            return rc;
        i = j;
    }
    if (n) {
        st = wt_store_mq(s, MQ_DEL_COMPACTED);
        if (!st)
            return -EIO;
        sqlite3_bind_int64(st, 1, m->id);
        sqlite3_bind_int64(st, 2, s->cold.p[n - 1].t_ns);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
        sqlite3_reset(st);
        if (rc)
            return rc;
    }
    int64_t v = 0;
    int h = wt_store_one_value(s, RQ_RAW_MIN, m->id, 0, &v);
    if (h < 0)
        return -EIO;
    m->raw_lo = h ? v : INT64_MAX;
    return (int)n;
}

/* ---- packed ticks into chunks ---- */

/* Whether a ticks row lies whole before cut: 1, 0 or -EIO (one indexed probe). */
static int ticks_due(struct wt_store *s, int64_t cut)
{
    int64_t v = 0;
    int h = wt_store_one_value(s, RQ_TICKS_OLDEST_END, 0, 0, &v);
    return h < 0 ? -EIO : h > 0 && v < cut;
}

/* Ticks rows compacted per pass: about 4 minutes of 1-s flushes */
#define TICKS_ROWS_MAX 256

/* A ticks row being moved: a copy of its blob and a walk over its series. */
struct tick_row {
    int64_t seq;
    uint8_t *blob;
    struct wt_ticks_walk w;
};

static void tick_rows_free(struct tick_row *r, int n)
{
    for (int i = 0; i < n; i++) {
        wt_ticks_walk_free(&r[i].w);
        free(r[i].blob);
    }
}

/* A point of one series and the order read, for a stable sort by time. */
struct tick_pt {
    int64_t t;
    double v;
    size_t k;
};

static int tick_pt_cmp(const void *x, const void *y)
{
    const struct tick_pt *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

/* Sorts b's points by time, of equal times the first read first (a row written out of time
 * order). Returns 0 or -ENOMEM. */
static int sort_read_order(struct wt_point_buf *b)
{
    struct tick_pt *q = malloc(b->n * sizeof *q);
    if (!q)
        return -ENOMEM;
    for (size_t i = 0; i < b->n; i++)
        q[i] = (struct tick_pt){b->p[i].t_ns, b->p[i].v, i};
    qsort(q, b->n, sizeof *q, tick_pt_cmp);
    for (size_t i = 0; i < b->n; i++)
        b->p[i] = (struct wt_point){q[i].t, q[i].v};
    free(q);
    return 0;
}

/*
 * Moves the points of series id from the rows whose walk is at it (stepping those walks on) into
 * the chunks of its spans: in time order, of a time in two rows the first written kept. *read
 * counts the readings read. Returns 0, -EIO or -ENOMEM.
 */
static int compact_tick_series(struct wt_store *s, const struct wt_run_list *runs,
                               struct tick_row *rows, int nrows, int64_t id, size_t *read)
{
    size_t m = wt_store_ms_lower(s, id);
    struct mser none = {.kind = WT_SK_GAUGE};
    const struct mser *ms = m < s->ms_len && s->ms[m].id == id ? &s->ms[m] : &none;
    struct wt_segment_rule rule = wt_segment_rule_for(runs, ms->node, ms->kind);
    bool sorted = true;
    int rc = 0;
    s->cold.n = 0;
    for (int r = 0; rc == 0 && r < nrows; r++) {
        if (!rows[r].w.have || rows[r].w.g.id != id)
            continue;
        size_t n0 = s->cold.n;
        rc = wt_ticks_walk_points(&rows[r].w, &s->cold);
        if (rc == -EINVAL)
            wt_store_db_fail(s, "ticks row %" PRId64 " does not decode", rows[r].seq);
        if (rc == 0 && n0 && s->cold.p[n0].t_ns < s->cold.p[n0 - 1].t_ns)
            sorted = false;
        *read += s->cold.n - n0;
        wt_ticks_walk_next(&rows[r].w);
    }
    if (rc == 0 && !sorted)
        rc = sort_read_order(&s->cold);
    if (rc)
        return rc == -ENOMEM ? -ENOMEM : -EIO;
    size_t w = 0;
    for (size_t i = 0; i < s->cold.n; i++) {
        if (w && s->cold.p[w - 1].t_ns == s->cold.p[i].t_ns)
            continue;
        s->cold.p[w++] = s->cold.p[i];
    }
    s->cold.n = w;
    for (size_t j = 0; rc == 0 && j < s->cold.n;) {
        int64_t span0 = span_floor(s->cold.p[j].t_ns);
        size_t e = j;
        while (e < s->cold.n && span_floor(s->cold.p[e].t_ns) == span0)
            e++;
        rc = compact_span(s, id, &rule, span0, s->cold.p + j, e - j);
        j = e;
    }
    return rc;
}

/*
 * Moves the ticks rows whose readings all lie before cut (a span boundary) and that were written
 * before any row that does not (so that of a time in two rows the first written is the one
 * kept), up to TICKS_ROWS_MAX in the order written, into the chunks of their series and spans, in
 * the pass's transaction: the rows are deleted in the same one, so a kill leaves each reading in
 * one place. Of a time in two rows the first written is kept, and a chunk's reading stays
 * (merge_into), as the readers answer. The rows' series are merged in ascending id (each row
 * holds its series in that order): what is held at once is the rows' blobs and one series'
 * points, not every reading of the rows. Returns readings moved (> TICKS_ROWS_MAX rows' worth:
 * more to do is told by *more), or -EIO / -ENOMEM.
 */
static int compact_ticks(struct wt_store *s, const struct wt_run_list *runs, int64_t cut,
                         bool *more)
{
    sqlite3_stmt *st = wt_store_mq(s, MQ_TICKS_CLOSED);
    struct tick_row *rows;
    int64_t last_seq = 0;
    int nrows = 0, rc, d = 0;
    if (!st)
        return -EIO;
    rows = calloc(TICKS_ROWS_MAX, sizeof *rows);
    if (!rows)
        return -ENOMEM;
    sqlite3_bind_int64(st, 1, cut);
    sqlite3_bind_int(st, 2, TICKS_ROWS_MAX);
    while (nrows < TICKS_ROWS_MAX && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct tick_row *r = &rows[nrows];
        const void *b = sqlite3_column_blob(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        last_seq = r->seq = sqlite3_column_int64(st, 0);
        r->blob = malloc(len ? len : 1);
        if (!r->blob) {
            d = -ENOMEM;
            break;
        }
        if (len)
            memcpy(r->blob, b, len);
        nrows++;
        d = wt_ticks_walk_open(r->blob, len, &r->w);
        if (d) {
            if (d == -EINVAL)
                wt_store_db_fail(s, "ticks row %" PRId64 " does not decode", last_seq);
            break;
        }
    }
    if (nrows == TICKS_ROWS_MAX)
        rc = SQLITE_DONE; /* the query's LIMIT: it has no more */
    sqlite3_reset(st);
    if (d || rc != SQLITE_DONE) {
        tick_rows_free(rows, nrows);
        free(rows);
        return d == -ENOMEM ? -ENOMEM : -EIO;
    }
    size_t moved = 0;
    rc = 0;
    while (rc == 0) {
        int64_t id = INT64_MAX;
        for (int r = 0; r < nrows; r++) {
            if (rows[r].w.have && rows[r].w.g.id < id)
                id = rows[r].w.g.id;
        }
        if (id == INT64_MAX)
            break;
        rc = compact_tick_series(s, runs, rows, nrows, id, &moved);
    }
    tick_rows_free(rows, nrows);
    free(rows);
    if (rc)
        return rc;
    if (!nrows)
        return 0;
    st = wt_store_mq(s, MQ_DEL_TICKS);
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, cut);
    sqlite3_bind_int64(st, 2, last_seq);
    rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_reset(st);
    if (rc)
        return rc;
    if (nrows >= TICKS_ROWS_MAX)
        *more = true;
    return moved > INT32_MAX ? INT32_MAX : (int)moved;
}

/* A chunk's summary, computed by fill_summaries before it writes them. */
struct sum_row {
    int64_t id, t0, cov;
    double v0, v1, e;
};

/*
 * Fills the summary columns of chunks that lack them (a store upgraded from schema 2, or chunks
 * a new run made stale: see summary_sql), at most SUMMARY_MAX and about budget of work, in the
 * pass's transaction. Sets sum_state to 2 when none are left. Returns the work done, or -EIO.
 */
static int fill_summaries(struct wt_store *s, struct wt_run_list *runs, bool *have_runs,
                          bool *in_txn, int budget)
{
    struct sum_row local[SUMMARY_MAX];
    int lim = budget / 64, n = 0, seen = 0, work = 0, rc;
    if (lim < 1)
        lim = 1;
    if (lim > SUMMARY_MAX)
        lim = SUMMARY_MAX;
    if (!*in_txn) {
        if (wt_store_mq_exec(s, MQ_BEGIN) != 0)
            return -EIO;
        *in_txn = true;
    }
    if (!*have_runs) {
        if (wt_runs_load(s, runs) != 0)
            return -EIO;
        *have_runs = true;
    }
    sqlite3_stmt *st = wt_store_mq(s, MQ_UNSUMMED);
    if (!st)
        return -EIO;
    sqlite3_bind_int(st, 1, lim);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        seen++;
        s->span.n = 0;
        if (wt_chunk_decode(sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2),
                            &s->span) != 0 ||
            s->span.n == 0) {
            wt_warn(MOD, "%s: series %" PRId64 ": a chunk does not decode (left without summary)",
                    s->path, id);
            continue;
        }
        size_t i = wt_store_ms_lower(s, id);
        struct mser none = {.kind = WT_SK_GAUGE};
        const struct mser *m = i < s->ms_len && s->ms[i].id == id ? &s->ms[i] : &none;
        struct wt_segment_rule rule = wt_segment_rule_for(runs, m->node, m->kind);
        struct sum_row *r = &local[n++];
        r->id = id;
        r->t0 = sqlite3_column_int64(st, 1);
        r->v0 = s->span.p[0].v;
        r->v1 = s->span.p[s->span.n - 1].v;
        wt_segment_sum(&rule, s->span.p, s->span.n, &r->e, &r->cov);
        work += (int)(s->span.n / 16) + 1;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -EIO;
    st = wt_store_mq(s, MQ_SET_SUMMARY);
    if (!st)
        return -EIO;
    for (int k = 0; k < n; k++) {
        sqlite3_bind_int64(st, 1, local[k].id);
        sqlite3_bind_int64(st, 2, local[k].t0);
        sqlite3_bind_double(st, 3, local[k].v0);
        sqlite3_bind_double(st, 4, local[k].v1);
        sqlite3_bind_double(st, 5, local[k].e);
        sqlite3_bind_int64(st, 6, local[k].cov);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            wt_store_db_fail(s, "cannot write a chunk summary: %s", sqlite3_errmsg(s->db));
            return -EIO;
        }
    }
    /* none left, or none that decode: nothing more to do until something changes */
    s->sum_state = seen < lim || n == 0 ? 2 : 1;
    return work;
}

/*
 * Visits, from the one after the cursor round to it, only the series that have work: the bounds
 * in s->ms say which (see struct mser), so a pass over idle or already rolled series reads
 * nothing but PRAGMA data_version and opens no transaction.
 */
/*
 * Between passes with nothing left to do, the reads' buffers go back when large (a busy
 * series' closed span, 256 ticks rows): a compaction's peak does not stay resident until the
 * next one, which is a span (15 min) later.
 */
static void trim_bufs(struct wt_store *s)
{
    struct wt_point_buf *b[] = {&s->seg, &s->cold, &s->span, &s->merged};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        if (b[i]->cap > WT_STORE_MAINT_BUF_KEEP) {
            free(b[i]->p);
            *b[i] = (struct wt_point_buf){0};
        }
    }
}

size_t wt_store_maint_buffered(const struct wt_store *s)
{
    return (s->seg.cap + s->cold.cap + s->span.cap + s->merged.cap) * sizeof(struct wt_point);
}

int wt_store_maintain(struct wt_store *s, int64_t now_ns, int budget, bool *more)
{
    struct wt_run_list runs = {0};
    bool have_runs = false, in_txn = false;
    int rc = 0, work = 0;
    int64_t raw_cut = now_ns - s->o.retention_raw_ns;
    int64_t roll_cut = now_ns - s->o.retention_rollup_ns;
    int64_t compact_cut = span_floor(now_ns - CLOSE_NS);

    *more = false;
    s->mq_failed = false;
    if (wt_store_ms_check(s) != 0)
        return -EIO;
    size_t n = s->ms_len;
    size_t i0 = s->maint_cursor < INT64_MAX ? wt_store_ms_lower(s, s->maint_cursor + 1) : 0;
    for (size_t k = 0; k < n && work < budget; k++) {
        struct mser *m = &s->ms[(i0 + k) % n];
        if (m->known && !roll_due(m) && !raw_prune_due(m, raw_cut) && m->roll_lo >= roll_cut &&
            !compact_due(m, compact_cut))
            continue;
        if (!in_txn) {
            if (wt_store_mq_exec(s, MQ_BEGIN) != 0) {
                rc = -EIO;
                break;
            }
            in_txn = true;
        }
        if (!m->known)
            ms_query(s, m);
        s->maint_cursor = m->id;
        work++;
        if (!have_runs && (roll_due(m) || compact_due(m, compact_cut))) {
            if (wt_runs_load(s, &runs) != 0) {
                rc = -EIO;
                break;
            }
            have_runs = true;
        }
        if (roll_due(m)) {
            int r = roll_series(s, &runs, m);
            if (r < 0) {
                rc = r;
                break;
            }
            if (r > 0)
                *more = true; /* maybe more minutes to roll */
            work += r;
        }
        if (compact_due(m, compact_cut)) {
            int c = compact_series(s, &runs, m, compact_cut);
            if (c < 0) {
                rc = c;
                break;
            }
            if (c >= COMPACT_MAX)
                *more = true;
            work += c / 16; /* a reading compacted costs far less than a row rolled */
        }
        int p = 0;
        if (raw_prune_due(m, raw_cut))
            p = prune_raw(s, m, raw_cut);
        if (p >= 0 && m->roll_lo < roll_cut) {
            int q = prune_rollups(s, m, roll_cut);
            p = q < 0 ? q : p + q;
        }
        if (p < 0) {
            rc = p;
            break;
        }
        if (p > 0)
            *more = true;
        work += p;
    }
    /* after the rows of the series: a raw row's reading then stays before a tick's, as read */
    if (rc == 0 && work < budget) {
        int t = ticks_due(s, compact_cut);
        if (t < 0)
            rc = -EIO;
        if (t > 0 && !in_txn) {
            if (wt_store_mq_exec(s, MQ_BEGIN) != 0)
                rc = -EIO;
            else
                in_txn = true;
        }
        if (t > 0 && rc == 0 && !have_runs) {
            if (wt_runs_load(s, &runs) != 0)
                rc = -EIO;
            else
                have_runs = true;
        }
        if (t > 0 && rc == 0) {
            int c = compact_ticks(s, &runs, compact_cut, more);
            if (c < 0)
                rc = c;
            else
                work += c / 16 + 1;
        }
    }
    if (rc == 0 && work < budget && s->sum_state != 2) {
        int f = fill_summaries(s, &runs, &have_runs, &in_txn, budget - work);
        if (f < 0)
            rc = f;
        else
            work += f;
        if (s->sum_state == 1)
            *more = true;
    }
    if (work >= budget)
        *more = true;
    if (rc == 0 && s->mq_failed)
        rc = -EIO;
    if (in_txn) {
        if (rc == 0 && wt_store_mq_exec(s, MQ_COMMIT) != 0)
            rc = -EIO;
        if (rc) {
            wt_store_rollback(s);
            s->ms_loaded = false; /* the bounds may hold what was rolled back */
        }
    }
    if (have_runs)
        wt_runs_free(&runs);
    if (!*more) {
        trim_bufs(s);
        /* A compaction's buffers were freed, but the allocator keeps the pages of a thread's
         * arena: give them back. */
        if (work > 0)
            malloc_trim(0);
    }
    return rc;
}
