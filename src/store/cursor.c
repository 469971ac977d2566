/* SPDX-License-Identifier: MIT */
/*
 * Remote write cursors in the store (see cursor.h): the tables, the series an endpoint sends
 * with their cursors in memory, the read of the next batch and the acknowledgement.
 *
 * Cost: a batch reads at most `per` rows of each series through the readings primary key
 * (series, t), where per = max / series: one index seek per series, whatever the lag; a series
 * found once is never looked up again (refresh reads only ids above the largest seen).
 */
#include "store/cursor.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "store/store.h"

enum { Q_NEW_SERIES, Q_GET_CURSOR, Q_SET_CURSOR, Q_BEGIN, Q_COMMIT, Q_ROLLBACK, Q_COUNT };

static const char *const q_sql[Q_COUNT] = {
    [Q_NEW_SERIES] = "SELECT id, metric, labels FROM series WHERE node='' AND id>?1 ORDER BY id",
    [Q_GET_CURSOR] = "SELECT t FROM remote_write_cursors WHERE endpoint=?1 AND series=?2",
    [Q_SET_CURSOR] = ("INSERT OR REPLACE INTO remote_write_cursors(endpoint, series, t) "
                      "VALUES(?1,?2,?3)"),
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
};

static const char *const tables =
    "CREATE TABLE IF NOT EXISTS remote_write_endpoints(name TEXT PRIMARY KEY,"
    " since_ns INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS remote_write_cursors(endpoint TEXT NOT NULL,"
    " series INTEGER NOT NULL, t INTEGER NOT NULL, PRIMARY KEY(endpoint, series)) WITHOUT ROWID;";

struct wt_cursor {
    struct wt_store *st;
    sqlite3 *db;
    sqlite3_stmt *q[Q_COUNT];
    char endpoint[256];
    int64_t since_ns;
    int64_t max_id; /* the largest series id refresh has seen */
    struct wt_cursor_series *s;
    size_t n, cap;
    size_t turn; /* where a batch of one reading per series starts (more series than max) */
    /* one batch's reads, per series: where its rows start in the batch and how many */
    size_t *first, *count;
    struct wt_point_buf buf; /* one series' read */
    int64_t next_count;      /* CLOCK_MONOTONIC: when wt_cursor_pending_paced counts next */
};

static int fail_db(struct wt_cursor *c, struct wt_err *err, const char *what)
{
    wt_err_set(err, "remote write %s: %s: %s", c->endpoint, what, sqlite3_errmsg(c->db));
    return -EIO;
}

void wt_cursor_close(struct wt_cursor *c)
{
    if (!c)
        return;
    for (int k = 0; k < Q_COUNT; k++)
        sqlite3_finalize(c->q[k]);
    wt_store_close(c->st);
    free(c->s);
    free(c->first);
    free(c->count);
    free(c->buf.p);
    free(c);
}

/* Runs one statement that returns no rows; keeps it prepared. */
static int step_done(struct wt_cursor *c, int k)
{
    int rc = sqlite3_step(c->q[k]);
    sqlite3_reset(c->q[k]);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

int wt_cursor_open(const char *path, const char *endpoint, int64_t since_ns, struct wt_cursor **out,
                   struct wt_err *err)
{
    struct wt_store_opts o = {.create = false};
    struct wt_cursor *c = calloc(1, sizeof *c);
    sqlite3_stmt *st = NULL;
    int rc;
    *out = NULL;
    if (!c)
        return -ENOMEM;
    snprintf(c->endpoint, sizeof c->endpoint, "%s", endpoint);
    rc = wt_store_open(path, &o, &c->st, err);
    if (rc)
        goto fail;
    c->db = wt_store_db(c->st);
    if (sqlite3_exec(c->db, tables, NULL, NULL, NULL) != SQLITE_OK) {
        rc = fail_db(c, err, "cannot create the cursor tables");
        goto fail;
    }
    for (int k = 0; k < Q_COUNT; k++) {
        if (sqlite3_prepare_v3(c->db, q_sql[k], -1, SQLITE_PREPARE_PERSISTENT, &c->q[k], NULL) !=
            SQLITE_OK) {
            rc = fail_db(c, err, "cannot prepare a cursor query");
            goto fail;
        }
    }
    /* The start of an endpoint is recorded once: a restart must not skip what it never sent. */
    if (sqlite3_prepare_v2(c->db,
                           "INSERT OR IGNORE INTO remote_write_endpoints(name, since_ns) "
                           "VALUES(?1, ?2)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = fail_db(c, err, "cannot record the endpoint");
        goto fail;
    }
    sqlite3_bind_text(st, 1, endpoint, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, since_ns);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = fail_db(c, err, "cannot record the endpoint");
        goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(c->db, "SELECT since_ns FROM remote_write_endpoints WHERE name=?1", -1,
                           &st, NULL) != SQLITE_OK) {
        rc = fail_db(c, err, "cannot read the endpoint");
        goto fail;
    }
    sqlite3_bind_text(st, 1, endpoint, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = fail_db(c, err, "cannot read the endpoint");
        goto fail;
    }
    c->since_ns = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    *out = c;
    return 0;
fail:
    sqlite3_finalize(st);
    wt_cursor_close(c);
    return rc;
}

static int grow(struct wt_cursor *c)
{
    size_t nc = c->cap ? c->cap * 2 : 64;
    struct wt_cursor_series *s = realloc(c->s, nc * sizeof *s);
    if (!s)
        return -ENOMEM;
    c->s = s;
    size_t *f = realloc(c->first, nc * sizeof *f);
    if (!f)
        return -ENOMEM;
    c->first = f;
    size_t *k = realloc(c->count, nc * sizeof *k);
    if (!k)
        return -ENOMEM;
    c->count = k;
    c->cap = nc;
    return 0;
}

/* The stored cursor of series id, else the endpoint's start. */
static int64_t stored_cursor(struct wt_cursor *c, int64_t id)
{
    sqlite3_stmt *st = c->q[Q_GET_CURSOR];
    int64_t t = c->since_ns;
    sqlite3_bind_text(st, 1, c->endpoint, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        t = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return t;
}

int wt_cursor_refresh(struct wt_cursor *c, wt_cursor_keep_fn keep, void *ctx)
{
    sqlite3_stmt *st = c->q[Q_NEW_SERIES];
    int rc, added = 0;
    int64_t max_id = c->max_id;
    sqlite3_bind_int64(st, 1, c->max_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        const char *metric = (const char *)sqlite3_column_text(st, 1);
        const char *labels = (const char *)sqlite3_column_text(st, 2);
        max_id = id;
        if (!metric || !labels || (keep && !keep(ctx, metric, labels)))
            continue;
        if (c->n == c->cap && grow(c) != 0) {
            sqlite3_reset(st);
            return -ENOMEM;
        }
        struct wt_cursor_series *s = &c->s[c->n];
        memset(s, 0, sizeof *s);
        s->id = id;
        snprintf(s->metric, sizeof s->metric, "%s", metric);
        snprintf(s->labels, sizeof s->labels, "%s", labels);
        c->n++;
        added++;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -EIO;
    /* cursors after the scan: the series statement is not stepped while another runs */
    for (size_t i = c->n - (size_t)added; i < c->n; i++)
        c->s[i].acked_ns = stored_cursor(c, c->s[i].id);
    c->max_id = max_id;
    return added;
}

size_t wt_cursor_nseries(const struct wt_cursor *c)
{
    return c->n;
}

const struct wt_cursor_series *wt_cursor_series_at(const struct wt_cursor *c, size_t i)
{
    return i < c->n ? &c->s[i] : NULL;
}

static int batch_room(struct wt_cursor_batch *b, size_t need)
{
    if (b->n + need <= b->cap)
        return 0;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->n + need)
        nc *= 2;
    struct wt_cursor_sample *p = realloc(b->s, nc * sizeof *p);
    if (!p)
        return -ENOMEM;
    b->s = p;
    b->cap = nc;
    return 0;
}

/* The first window a series' next readings are looked for in (then 4, 16... times as long). */
#define WINDOW_NS (10 * WT_NS_PER_S)

/*
 * Appends up to limit readings of series i after its cursor; sets first/count. They are looked
 * for in a window after the cursor that grows until it holds limit readings or reaches now: a
 * read costs the packed ticks rows its window overlaps (each holds every series), so after an
 * outage a narrow window, about the same for every series of a batch, opens a few rows once for
 * all of them (the store keeps them opened) instead of every row since the cursor, series after
 * series. What it returns is what one read up to the end would: the first limit readings.
 */
static int read_series(struct wt_cursor *c, size_t i, size_t limit, struct wt_cursor_batch *b)
{
    int rc = batch_room(b, limit);
    if (rc)
        return rc;
    c->first[i] = b->n;
    int64_t lo = c->s[i].acked_ns, now = wt_now_real_ns(), w = WINDOW_NS;
    for (;;) {
        /* the window's end, or the end of time once it reaches now */
        int64_t hi = lo < now && w < now - lo ? lo + w : INT64_MAX;
        c->buf.n = 0;
        rc = wt_store_read(c->st, c->s[i].id, lo, hi, WT_RD_AFTER, limit, &c->buf);
        if (rc || c->buf.n >= limit || hi == INT64_MAX)
            break;
        w = w < INT64_MAX / 4 ? w * 4 : INT64_MAX;
    }
    for (size_t k = 0; rc == 0 && k < c->buf.n && k < limit; k++) {
        struct wt_cursor_sample *x = &b->s[b->n++];
        x->series = (uint32_t)i;
        x->t_ns = c->buf.p[k].t_ns;
        x->v = c->buf.p[k].v;
    }
    c->count[i] = b->n - c->first[i];
    return rc;
}

int wt_cursor_next(struct wt_cursor *c, size_t max, struct wt_cursor_batch *b, bool *more)
{
    bool more_ = false;
    if (!more)
        more = &more_;
    *more = false;
    b->n = 0;
    if (!c->n || !max)
        return 0;
    int rc;
    if (c->n > max) {
        /* More series than a batch holds: one reading each of max series, in turn. */
        for (size_t k = 0; k < c->n && b->n < max; k++) {
            size_t i = (c->turn + k) % c->n;
            if ((rc = read_series(c, i, 1, b)) != 0)
                return rc;
        }
        c->turn = (c->turn + max) % c->n;
        *more = b->n == max;
        /* grouped by ascending series index, as the batch promises */
        for (size_t x = 1; x < b->n; x++) {
            struct wt_cursor_sample v = b->s[x];
            size_t y = x;
            for (; y > 0 && b->s[y - 1].series > v.series; y--)
                b->s[y] = b->s[y - 1];
            b->s[y] = v;
        }
        return 0;
    }
    size_t per = max / c->n;
    /* H: the earliest last-read time of a series that had more than it could give */
    int64_t horizon = INT64_MAX;
    for (size_t i = 0; i < c->n; i++) {
        if ((rc = read_series(c, i, per, b)) != 0)
            return rc;
        if (c->count[i] == per && b->s[b->n - 1].t_ns < horizon)
            horizon = b->s[b->n - 1].t_ns;
    }
    if (horizon == INT64_MAX)
        return 0;
    *more = true; /* a series had more than it gave */
    /* Drop what lies after H: all of every series up to H is in the batch, nothing later. */
    size_t w = 0;
    for (size_t r = 0; r < b->n; r++) {
        if (b->s[r].t_ns <= horizon)
            b->s[w++] = b->s[r];
    }
    b->n = w;
    return 0;
}

int wt_cursor_ack(struct wt_cursor *c, const struct wt_cursor_batch *b)
{
    int rc = 0;
    if (!b->n)
        return 0;
    if (step_done(c, Q_BEGIN) != 0)
        rc = -EIO;
    sqlite3_stmt *st = c->q[Q_SET_CURSOR];
    for (size_t k = 0; k < b->n; k++) {
        const struct wt_cursor_sample *x = &b->s[k];
        if (k + 1 < b->n && b->s[k + 1].series == x->series)
            continue; /* the last of its series */
        if (x->series >= c->n)
            continue;
        struct wt_cursor_series *s = &c->s[x->series];
        if (x->t_ns > s->acked_ns)
            s->acked_ns = x->t_ns;
        if (rc)
            continue;
        sqlite3_bind_text(st, 1, c->endpoint, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, s->id);
        sqlite3_bind_int64(st, 3, s->acked_ns);
        if (step_done(c, Q_SET_CURSOR) != 0)
            rc = -EIO;
    }
    if (rc == 0 && step_done(c, Q_COMMIT) != 0)
        rc = -EIO;
    if (rc && !sqlite3_get_autocommit(c->db))
        (void)step_done(c, Q_ROLLBACK);
    return rc;
}

int wt_cursor_pending(struct wt_cursor *c, uint64_t *n, int64_t *oldest_ns)
{
    int rc = 0;
    *n = 0;
    *oldest_ns = 0;
    for (size_t i = 0; i < c->n && rc == 0; i++) {
        uint64_t k;
        int64_t t;
        rc = wt_store_count_after(c->st, c->s[i].id, c->s[i].acked_ns, &k, &t);
        *n += k;
        if (rc == 0 && k && (!*oldest_ns || t < *oldest_ns))
            *oldest_ns = t;
    }
    return rc;
}

void wt_cursor_batch_free(struct wt_cursor_batch *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

#define PENDING_EVERY_NS (2 * WT_NS_PER_S) /* the longest a paced count waits, unless slow */

int wt_cursor_pending_paced(struct wt_cursor *c, bool force, uint64_t *n, double *lag_s)
{
    int64_t oldest, t0 = wt_now_mono_ns();
    if (!force && t0 < c->next_count)
        return 0;
    int rc = wt_cursor_pending(c, n, &oldest);
    int64_t t1 = wt_now_mono_ns(), took = 20 * (t1 - t0);
    c->next_count = t1 + (took > PENDING_EVERY_NS ? took : PENDING_EVERY_NS);
    if (rc != 0)
        return rc;
    double lag = oldest ? (double)(wt_now_real_ns() - oldest) / WT_NS_PER_S : 0;
    *lag_s = lag > 0 ? lag : 0;
    return 1;
}
