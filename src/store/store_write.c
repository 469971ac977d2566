/* SPDX-License-Identifier: MIT */
/*
 * The store's writer: writes of readings (rows, or packed ticks), the hub sink and its queue, the
 * writer thread (flushes, the in-memory buffer while writes fail, maintenance steps), and the
 * store's own health for /metrics.
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

/* The series the reading tagged tag had at its place last time, when it is still that one: its
 * metric and labels the same. 0 otherwise. Writer thread. */
static struct place *place_find(struct wt_store *s, uint32_t tag, const struct wt_reading *r)
{
    struct place_slot *ps = &s->place[(tag >> 16) - 1];
    size_t pos = tag & 0xffff;
    if (pos >= ps->cap)
        return NULL;
    struct place *p = &ps->p[pos];
    return p->id && p->metric == r->metric && strcmp(p->labels, r->labels) == 0 ? p : NULL;
}

/* Remembers series id at the place of tag; NULL when there is no memory for it. */
static struct place *place_keep(struct wt_store *s, uint32_t tag, const struct wt_reading *r,
                                int64_t id)
{
    struct place_slot *ps = &s->place[(tag >> 16) - 1];
    size_t pos = tag & 0xffff;
    if (pos >= ps->cap) {
        size_t nc = ps->cap ? ps->cap : 64;
        while (nc <= pos)
            nc *= 2;
        struct place *p = realloc(ps->p, nc * sizeof *p);
        if (!p)
            return NULL;
        for (size_t i = ps->cap; i < nc; i++)
            p[i].id = 0;
        ps->p = p;
        ps->cap = nc;
    }
    struct place *p = &ps->p[pos];
    p->id = id;
    p->ms_at = SIZE_MAX;
    p->metric = r->metric;
    memcpy(p->labels, r->labels, strnlen(r->labels, sizeof p->labels - 1) + 1);
    p->labels[sizeof p->labels - 1] = '\0';
    return p;
}

/* Forgets every place: the series of a rolled-back transaction are gone. */
static void place_forget(struct wt_store *s)
{
    for (int i = 0; i < PLACE_SLOTS; i++)
        for (size_t k = 0; k < s->place[i].cap; k++)
            s->place[i].p[k].id = 0;
}

/*
 * The series of each reading, interned (or, for a reading with a place (tags[i] != 0, node ""),
 * found at its place), into s->tk (*m of them: readings of no known metric are left out), their
 * bounds widened (row: written as rows of readings) and *last_t the newest time.
 */
static int intern_all(struct wt_store *s, const char *node, const struct wt_reading *r,
                      const uint32_t *tags, size_t n, bool row, int64_t *last_t, size_t *m)
{
    if (n > s->tk_cap) {
        struct wt_tick_reading *p = realloc(s->tk, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        s->tk = p;
        s->tk_cap = n;
    }
    if (node[0])
        tags = NULL; /* places are the local daemon's */
    *m = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].metric >= WT_M_COUNT)
            continue;
        uint32_t tag = tags ? tags[i] : 0;
        struct place *p = tag ? place_find(s, tag, &r[i]) : NULL;
        int64_t id = p ? p->id : 0;
        if (!id) {
            id = wt_store_intern(s, node, wt_metrics[r[i].metric].name, r[i].labels);
            if (id < 0)
                return (int)id;
            if (tag)
                p = place_keep(s, tag, &r[i], id);
        }
        s->tk[(*m)++] = (struct wt_tick_reading){.series = id, .t_ns = r[i].t_ns, .v = r[i].value};
        size_t at = SIZE_MAX;
        wt_store_ms_widen_at(s, p ? &p->ms_at : &at, id, r[i].t_ns, row);
        if (r[i].t_ns > *last_t)
            *last_t = r[i].t_ns;
    }
    return 0;
}

/* Inserts readings as rows inside an open transaction. */
static int insert(struct wt_store *s, const char *node, const struct wt_reading *r,
                  const uint32_t *tags, size_t n, int64_t *last_t)
{
    size_t m;
    int rc = intern_all(s, node, r, tags, n, true, last_t, &m);
    for (size_t i = 0; rc == 0 && i < m; i++) {
        sqlite3_bind_int64(s->ins_reading, 1, s->tk[i].series);
        sqlite3_bind_int64(s->ins_reading, 2, s->tk[i].t_ns);
        sqlite3_bind_double(s->ins_reading, 3, s->tk[i].v);
        int st = sqlite3_step(s->ins_reading);
        sqlite3_reset(s->ins_reading);
        if (st != SQLITE_DONE) {
            wt_store_db_fail(s, "insert failed: %s", sqlite3_errmsg(s->db));
            rc = -EIO;
        }
    }
    return rc;
}

/* Appends readings as one packed ticks row inside an open transaction. */
static int insert_ticks(struct wt_store *s, const char *node, const struct wt_reading *r,
                        const uint32_t *tags, size_t n, int64_t *last_t)
{
    size_t m;
    int rc = intern_all(s, node, r, tags, n, false, last_t, &m);
    if (rc)
        return rc;
    if (m == 0)
        return 0;
    uint8_t *blob;
    size_t len;
    int64_t lo, hi;
    rc = wt_ticks_encode(s->tk, m, &blob, &len, &lo, &hi);
    if (rc) {
        wt_store_db_fail(s, "cannot pack %zu readings: %s", m, strerror(-rc));
        return rc;
    }
    sqlite3_bind_int64(s->ins_ticks, 1, lo);
    sqlite3_bind_int64(s->ins_ticks, 2, hi);
    sqlite3_bind_int64(s->ins_ticks, 3, wt_ticks_count(blob, len));
    sqlite3_bind_blob(s->ins_ticks, 4, blob, (int)len, SQLITE_STATIC);
    rc = sqlite3_step(s->ins_ticks);
    sqlite3_reset(s->ins_ticks);
    sqlite3_clear_bindings(s->ins_ticks);
    free(blob);
    if (rc != SQLITE_DONE) {
        wt_store_db_fail(s, "insert failed: %s", sqlite3_errmsg(s->db));
        return -EIO;
    }
    return 0;
}

/* wt_store_write, with the places of the readings when they have them (tags: NULL or n). */
static int write_tagged(struct wt_store *s, const char *node, const struct wt_reading *r,
                        const uint32_t *tags, size_t n)
{
    int64_t last_t = 0;
    if (n == 0)
        return 0;
    if (wt_store_mq_exec(s, MQ_BEGIN))
        return -EIO;
    int rc = s->o.ticks ? insert_ticks(s, node, r, tags, n, &last_t)
                        : insert(s, node, r, tags, n, &last_t);
    if (rc == 0 && s->run_id && !node[0]) {
        sqlite3_bind_int64(s->upd_run, 1, last_t);
        sqlite3_bind_int64(s->upd_run, 2, s->run_id);
        if (sqlite3_step(s->upd_run) != SQLITE_DONE)
            rc = -EIO;
        sqlite3_reset(s->upd_run);
    }
    if (rc == 0 && wt_store_mq_exec(s, MQ_COMMIT) == 0)
        return 0;
    wt_store_rollback(s);
    (void)wt_store_tab_load(s); /* series added in the rolled-back transaction are gone */
    place_forget(s);
    s->ms_loaded = false;
    return rc ? rc : -EIO;
}

int wt_store_write(struct wt_store *s, const char *node, const struct wt_reading *r, size_t n)
{
    return write_tagged(s, node, r, NULL, n);
}

/* Under s->mu: the place slot of a batch of collector of len readings, made (or taken from the
 * least recently used) when new; -1 when there is none (no name). */
static int place_slot(struct wt_store *s, const char *collector, size_t len)
{
    if (!collector || !collector[0])
        return -1;
    int k = -1;
    for (int i = 0; i < s->nplace && k < 0; i++)
        if (s->place[i].len == len && strcmp(s->place[i].collector, collector) == 0)
            k = i;
    if (k < 0) {
        if (s->nplace < PLACE_SLOTS) {
            k = s->nplace++;
        } else {
            k = 0;
            for (int i = 1; i < PLACE_SLOTS; i++)
                if (s->place[i].used < s->place[k].used)
                    k = i;
        }
        /* the writer's entries of a taken slot stay: each is checked in full before use */
        snprintf(s->place[k].collector, sizeof s->place[k].collector, "%s", collector);
        s->place[k].len = len;
    }
    s->place[k].used = ++s->place_clock;
    return k;
}

void wt_store_sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    struct wt_store *s = ctx;
    pthread_mutex_lock(&s->mu);
    size_t room = s->o.queue_cap - s->cur_len;
    size_t n = b->len < room ? b->len : room;
    int k = n ? place_slot(s, collector, b->len) : -1;
    uint32_t base = (uint32_t)(k + 1) << 16;
    wt_readings_copy(s->cur + s->cur_len, b->r, n);
    for (size_t i = 0; i < n; i++)
        s->cur_tag[s->cur_len + i] = k >= 0 && i < PLACE_MAX ? base | (uint32_t)i : 0;
    s->cur_len += n;
    s->dropped += b->len - n;
    pthread_mutex_unlock(&s->mu);
}

uint64_t wt_store_dropped(struct wt_store *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t d = s->dropped;
    pthread_mutex_unlock(&s->mu);
    return d;
}

/* What the writer knows of a run of failed writes, for its three kinds of log line. */
struct failrun {
    struct wt_ratelimit rl;    /* "still failing" lines */
    int64_t retry_at, backoff; /* CLOCK_MONOTONIC; the next write of the buffer */
    uint64_t failed;           /* writes failed in this run */
    uint64_t dropped_at_start;
    int64_t since_real;
};

#define MAX_BACKOFF_NS (30 * WT_NS_PER_S)

/* Appends readings to the buffer of unwritten ones, up to its bound; returns how many did not
 * fit (the newest: those kept stay in time order with what is already stored). */
static size_t keep(struct wt_store *s, const struct wt_reading *r, size_t n)
{
    size_t room = s->pend_max - s->pend_len;
    size_t take = n < room ? n : room;
    if (s->pend_len + take > s->pend_cap) {
        size_t nc = s->pend_cap ? s->pend_cap : 4096;
        while (nc < s->pend_len + take)
            nc *= 2;
        if (nc > s->pend_max)
            nc = s->pend_max;
        struct wt_reading *p = realloc(s->pend, nc * sizeof *p);
        if (p) {
            s->pend = p;
            s->pend_cap = nc;
        } else if (s->pend_cap - s->pend_len < take) {
            take = s->pend_cap - s->pend_len;
        }
    }
    wt_readings_copy(s->pend + s->pend_len, r, take);
    s->pend_len += take;
    return n - take;
}

/* The file and its WAL: what the store takes on the disk. */
static uint64_t db_bytes(const struct wt_store *s)
{
    char wal[sizeof s->path + 8];
    struct stat st;
    uint64_t n = 0;
    if (stat(s->path, &st) == 0)
        n += (uint64_t)st.st_size;
    snprintf(wal, sizeof wal, "%s-wal", s->path);
    if (stat(wal, &st) == 0)
        n += (uint64_t)st.st_size;
    return n;
}

/*
 * Writes what the sink queued. While writes fail, readings are kept in memory (up to
 * store.buffer_readings) and the whole buffer is written again after a doubling delay (from the
 * flush interval up to 30 s); one line says writes started failing, one a minute that they still
 * fail, one that they recovered. force: at stop, try the buffer now. Writer thread only.
 */
static void flush_queue(struct wt_store *s, struct failrun *fr, bool force)
{
    pthread_mutex_lock(&s->mu);
    struct wt_reading *batch = s->cur;
    uint32_t *tags = s->cur_tag;
    size_t n = s->cur_len;
    s->cur = s->spare;
    s->spare = batch;
    s->cur_tag = s->spare_tag;
    s->spare_tag = tags;
    s->cur_len = 0;
    bool failing = s->failing;
    pthread_mutex_unlock(&s->mu);

    int64_t now = wt_now_mono_ns();
    size_t lost = 0, written = 0;
    int rc = 0;
    bool tried = false;
    if (failing) {
        lost = keep(s, batch, n);
        if (force || now >= fr->retry_at) {
            tried = true;
            rc = wt_store_write(s, "", s->pend, s->pend_len);
            written = rc == 0 ? s->pend_len : 0;
        }
    } else if (n) {
        tried = true;
        rc = write_tagged(s, "", batch, tags, n);
        written = rc == 0 ? n : 0;
        if (rc)
            lost = keep(s, batch, n);
    }
    uint64_t bytes = db_bytes(s);
    if (tried && rc == 0 && failing)
        s->pend_len = 0; /* all written */
    bool now_failing = tried ? rc != 0 : failing;
    pthread_mutex_lock(&s->mu);
    uint64_t dropped = s->dropped + lost;
    pthread_mutex_unlock(&s->mu);

    if (tried && rc == 0 && failing) {
        int64_t took = wt_now_real_ns() - fr->since_real;
        wt_info(MOD,
                "%s: writes recovered after %.0f s: wrote %zu buffered readings "
                "failed_writes=%" PRIu64 " dropped=%" PRIu64,
                s->path, (double)took / WT_NS_PER_S, written, fr->failed,
                dropped - fr->dropped_at_start);
    } else if (tried && rc != 0) {
        uint64_t sup;
        if (!failing) {
            memset(fr, 0, sizeof *fr);
            fr->rl.interval_ns = 60 * WT_NS_PER_S;
            fr->backoff = s->o.flush_ns;
            fr->since_real = wt_now_real_ns();
            fr->dropped_at_start = dropped - lost;
            (void)wt_ratelimit_ok(&fr->rl, now, &sup); /* the first line counts as the last */
            wt_error(MOD,
                     "%s: writes failing: %s; keeping up to %zu readings in memory and retrying "
                     "(more are dropped and counted in wattage_store_readings_dropped_total)",
                     s->path, s->last_err, s->pend_max);
        } else if (wt_ratelimit_ok(&fr->rl, now, &sup)) {
            wt_error(MOD,
                     "%s: writes still failing: %s failed_writes=%" PRIu64 " buffered=%zu "
                     "dropped=%" PRIu64,
                     s->path, s->last_err, fr->failed + 1, s->pend_len,
                     dropped - fr->dropped_at_start);
        }
        fr->failed++;
        fr->retry_at = now + fr->backoff;
        fr->backoff = fr->backoff * 2 > MAX_BACKOFF_NS ? MAX_BACKOFF_NS : fr->backoff * 2;
    }
    /* Readiness first, then the stats: whoever sees the stats change sees the reason too. */
    if (now_failing)
        wt_health_report("store", NULL, false,
                         "writes failing: %s; %zu readings buffered in memory, %" PRIu64 " dropped",
                         s->last_err, s->pend_len, dropped - fr->dropped_at_start);
    else if (failing)
        wt_health_report("store", NULL, true, " ");

    /* One consistent view for the stats: failing and the queue change together. */
    pthread_mutex_lock(&s->mu);
    s->dropped += lost;
    s->db_bytes = bytes;
    s->queued = s->pend_len;
    if (tried && rc == 0)
        s->last_flush_ns = wt_now_real_ns();
    if (tried && rc != 0)
        s->write_errors++;
    s->failing = now_failing;
    pthread_mutex_unlock(&s->mu);
}

static void *writer_main(void *arg)
{
    struct wt_store *s = arg;
    pthread_setname_np(pthread_self(), "wt-store");
    struct failrun fr = {.rl = {.interval_ns = 60 * WT_NS_PER_S}};
    struct wt_ratelimit drop_rl = {.interval_ns = 60 * WT_NS_PER_S};
    uint64_t reported_drops = 0;
    struct wt_ratelimit maint_rl = {.interval_ns = 60 * WT_NS_PER_S};
    int64_t next = wt_now_mono_ns() + s->o.flush_ns;
    int64_t next_maint = wt_now_mono_ns();
    bool more = false;

    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t now = ts.tv_sec * WT_NS_PER_S + ts.tv_nsec;
        if (now < next) {
            int64_t w = next - now;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t until = ts.tv_sec * WT_NS_PER_S + ts.tv_nsec + w;
            ts.tv_sec = until / WT_NS_PER_S;
            ts.tv_nsec = until % WT_NS_PER_S;
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
            continue;
        }
        next += s->o.flush_ns;
        if (next < now)
            next = now + s->o.flush_ns;
        pthread_mutex_unlock(&s->mu);

        flush_queue(s, &fr, false);
        pthread_mutex_lock(&s->mu);
        uint64_t drops = s->dropped;
        bool failing = s->failing;
        pthread_mutex_unlock(&s->mu);
        /* While writes fail, the failing lines carry the drops. */
        uint64_t sup;
        if (failing)
            reported_drops = drops; /* the failing lines count these */
        else if (drops != reported_drops && wt_ratelimit_ok(&drop_rl, wt_now_mono_ns(), &sup)) {
            wt_warn(MOD, "queue full: dropped readings total=%" PRIu64, drops);
            reported_drops = drops;
        }
        if (!failing && (more || wt_now_mono_ns() >= next_maint)) {
            if (wt_store_maintain(s, wt_now_real_ns(), 20000, &more) != 0) {
                more = false;
                if (wt_ratelimit_ok(&maint_rl, wt_now_mono_ns(), &sup))
                    wt_error(MOD, "%s: maintenance failed: %s (suppressed=%" PRIu64 ")", s->path,
                             s->last_err, sup);
            }
            next_maint = wt_now_mono_ns() + 10 * WT_NS_PER_S;
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    flush_queue(s, &fr, true);
    if (s->pend_len && s->failing)
        wt_error(MOD, "%s: stopping with %zu readings not written: %s", s->path, s->pend_len,
                 s->last_err);
    return NULL;
}

int wt_store_writer_start(struct wt_store *s)
{
    s->cur = calloc(s->o.queue_cap, sizeof *s->cur);
    s->spare = calloc(s->o.queue_cap, sizeof *s->spare);
    s->cur_tag = calloc(s->o.queue_cap, sizeof *s->cur_tag);
    s->spare_tag = calloc(s->o.queue_cap, sizeof *s->spare_tag);
    if (!s->cur || !s->spare || !s->cur_tag || !s->spare_tag)
        return -ENOMEM;
    s->pend_max = s->o.buffer_readings < 0 ? 0 : (size_t)s->o.buffer_readings;
    s->quiet = true; /* the writer logs database errors itself, rate-limited */
    int rc = pthread_create(&s->thread, NULL, writer_main, s);
    if (rc) {
        s->quiet = false;
        return -rc;
    }
    s->started = true;
    return 0;
}

void wt_store_stats(struct wt_store *s, struct wt_store_stats *out)
{
    pthread_mutex_lock(&s->mu);
    out->dropped = s->dropped;
    out->write_errors = s->write_errors;
    out->queued = s->queued + s->cur_len;
    out->last_flush_ns = s->last_flush_ns;
    out->db_bytes = s->db_bytes;
    out->failing = s->failing;
    pthread_mutex_unlock(&s->mu);
}

/* ---- /metrics: the store's own health ---- */

enum { FAM_DROPPED, FAM_ERRORS, FAM_QUEUE, FAM_FLUSH, FAM_BYTES, NFAM };
_Static_assert(NFAM == WT_STORE_FAMILIES, "store.h says how many families there are");
static const struct {
    const char *name, *help;
    enum wt_metric_type type;
} fams[NFAM] = {
    [FAM_DROPPED] = {"wattage_store_readings_dropped_total",
                     "Readings never stored: the queue was full (the disk did not keep up), or "
                     "writes failed and the in-memory buffer (store.buffer_readings) was full.",
                     WT_COUNTER},
    [FAM_ERRORS] = {"wattage_store_write_errors_total",
                    "Writes of the store (one transaction each) that failed: a full disk, an I/O "
                    "error. The readings are kept in memory and written again.",
                    WT_COUNTER},
    [FAM_QUEUE] = {"wattage_store_queue_readings",
                   "Readings waiting to be written: queued since the last flush plus those kept "
                   "in memory while writes fail.",
                   WT_GAUGE},
    [FAM_FLUSH] = {"wattage_store_last_flush_timestamp_seconds",
                   "Unix time of the last successful write of the store.", WT_GAUGE},
    [FAM_BYTES] = {"wattage_store_database_bytes",
                   "Size of the store on disk: the database file and its write-ahead log.",
                   WT_GAUGE},
};

static int family(struct wt_store_fam *f, struct wt_expo_family *fam)
{
    struct wt_store_stats st;
    wt_store_stats(f->s, &st);
    memset(fam, 0, sizeof *fam);
    fam->name = fams[f->k].name;
    fam->help = fams[f->k].help;
    fam->type = fams[f->k].type;
    if (f->k == FAM_FLUSH && !st.last_flush_ns)
        return 0; /* never written: absent, not 1970 */
    if (!(fam->s = calloc(1, sizeof *fam->s)))
        return -ENOMEM;
    fam->n = 1;
    switch (f->k) {
    case FAM_DROPPED:
        fam->s[0].value = (double)st.dropped;
        break;
    case FAM_ERRORS:
        fam->s[0].value = (double)st.write_errors;
        break;
    case FAM_QUEUE:
        fam->s[0].value = (double)st.queued;
        break;
    case FAM_FLUSH:
        fam->s[0].value = (double)st.last_flush_ns / WT_NS_PER_S;
        break;
    case FAM_BYTES:
        fam->s[0].value = (double)st.db_bytes;
        break;
    }
    return 0;
}

int wt_store_family_fn(void *ctx, struct wt_expo_family *fam)
{
    return family(ctx, fam);
}

void *wt_store_family_ctx(struct wt_store *s, int k)
{
    if (k < 0 || k >= NFAM)
        return NULL;
    s->fam[k].s = s;
    s->fam[k].k = k;
    return &s->fam[k];
}

int wt_store_family(struct wt_store *s, int k, struct wt_expo_family *fam)
{
    void *ctx = wt_store_family_ctx(s, k);
    return ctx ? family(ctx, fam) : -EINVAL;
}
