/* SPDX-License-Identifier: MIT */
/*
 * The shared send path (see sender.h): destinations with their cursors and threads, the loop
 * every streaming output runs, the waits, the counters behind the self-metrics, and the HTTP
 * POST (libcurl) that remote write and OTLP share.
 */
#include "serve/sender.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alert/notify.h"
#include "audit/topology.h"
#include "core/clock.h"
#include "core/curl_lib.h"
#include "core/log.h"
#include "core/secret.h"
#include "core/yamltree.h"
#include "serve/http.h"
#include "serve/remote_write.h"

#define REPLY_MAX 512 /* what a receiver's answer may add to a log line */

struct wt_sender_dest {
    struct wt_sender *s;
    char name[256];
    char cursor_name[300];
    struct wt_sender_dest_config cf; /* name and cursor point into the arrays above */
    struct wt_cursor *cur;
    pthread_t thread;
    bool started;
    struct wt_sender_stats st; /* under s->mu */
    struct wt_cursor_batch part;
    /* the drain at stop, under s->mu: its drain ended (a failed attempt, or a round that
     * acknowledged nothing), its thread left the loop, the samples it acknowledged meanwhile */
    bool drain_over, done;
    uint64_t drain_acked;
    uint64_t acked; /* samples acknowledged since start, under s->mu */
    int failures;   /* failed attempts since the last delivery (its thread only) */
};

/* A family's registration: which family of which sender. */
struct fam_ref {
    struct wt_sender *s;
    size_t k;
};

struct wt_sender {
    char mod[32], thread[16];
    const char *noun; /* what messages call a destination */
    /* a stream's (wt_sender_stream_open): its table and its state per destination */
    const struct wt_sender_stream *st;
    char *dests;
    size_t ndests;
    const struct wt_sender_ops *ops;
    const struct wt_sender_family *fams;
    size_t nfams;
    struct fam_ref *refs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    /* the drain at stop (wt_sender_drain), under mu: asked for, begun (deadline > 0), the
     * deadline asked and when it began and ends (CLOCK_MONOTONIC) */
    bool drain_asked, drain;
    int64_t drain_deadline_ns, drain_t0, drain_until;
    struct wt_sender_dest *d;
    size_t n, max;
};

int wt_sender_grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 256;
    while (nc < n)
        nc *= 2;
    void *q = realloc(*p, nc * size);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = nc;
    return 0;
}

/* ---- life cycle --------------------------------------------------------------------------- */

int wt_sender_open(const char *mod, const char *thread, const struct wt_sender_ops *ops,
                   const struct wt_sender_family *fams, size_t nfams, size_t max,
                   struct wt_sender **out)
{
    struct wt_sender *s = calloc(1, sizeof *s);
    pthread_condattr_t ca;
    *out = NULL;
    if (!s)
        return -ENOMEM;
    s->d = calloc(max ? max : 1, sizeof *s->d);
    s->refs = calloc(nfams ? nfams : 1, sizeof *s->refs);
    if (!s->d || !s->refs) {
        free(s->d);
        free(s->refs);
        free(s);
        return -ENOMEM;
    }
    snprintf(s->mod, sizeof s->mod, "%s", mod);
    snprintf(s->thread, sizeof s->thread, "%s", thread);
    s->noun = "destination";
    s->ops = ops;
    s->fams = fams;
    s->nfams = nfams;
    s->max = max;
    for (size_t k = 0; k < nfams; k++)
        s->refs[k] = (struct fam_ref){s, k};
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    *out = s;
    return 0;
}

int wt_sender_add_dest(struct wt_sender *s, const char *store_path,
                       const struct wt_sender_dest_config *c, struct wt_sender_dest **out,
                       struct wt_err *err)
{
    if (s->n == s->max)
        return wt_err_set(err, "%s: at most %zu destinations", s->mod, s->max);
    struct wt_sender_dest *d = &s->d[s->n];
    memset(d, 0, sizeof *d);
    d->s = s;
    snprintf(d->name, sizeof d->name, "%s", c->name);
    snprintf(d->cursor_name, sizeof d->cursor_name, "%s", c->cursor);
    d->cf = *c;
    d->cf.name = d->name;
    d->cf.cursor = d->cursor_name;
    int rc =
        wt_cursor_open(store_path, d->cursor_name, wt_now_real_ns() - c->backfill_ns, &d->cur, err);
    if (rc)
        return rc;
    s->n++;
    if (out)
        *out = d;
    return 0;
}

size_t wt_sender_ndest(const struct wt_sender *s)
{
    return s ? s->n : 0;
}

void wt_sender_stop(struct wt_sender *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Under s->mu: every started thread has left its loop. */
static bool all_done(const struct wt_sender *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->d[i].started && !s->d[i].done)
            return false;
    return true;
}

void wt_sender_drain(struct wt_sender *s, int64_t deadline_ns)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->drain_asked = true;
    s->drain_deadline_ns = deadline_ns > 0 ? deadline_ns : 0;
    s->drain_t0 = wt_now_mono_ns();
    if (deadline_ns > 0 && !s->stop) {
        s->drain = true;
        s->drain_until = s->drain_t0 + deadline_ns;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* After the threads ended: the one line a stop logs, with what the drain sent and left. */
static void log_drain(struct wt_sender *s)
{
    char per[1024] = "";
    size_t used = 0;
    uint64_t sent = 0, left = 0;
    bool unknown = false;
    for (size_t i = 0; i < s->n; i++) {
        struct wt_sender_dest *d = &s->d[i];
        uint64_t n = 0;
        int64_t oldest;
        /* series the last flush created are pending too: the cursor learns them first */
        bool ok = wt_cursor_refresh(d->cur, d->cf.keep, d->cf.ctx) >= 0 &&
                  wt_cursor_pending(d->cur, &n, &oldest) == 0;
        unknown |= !ok;
        sent += d->drain_acked;
        left += n;
        if (s->n > 1 && used < sizeof per) {
            int w =
                ok ? snprintf(per + used, sizeof per - used,
                              "%s%s: sent %" PRIu64 ", left %" PRIu64, used ? "; " : " (", d->name,
                              d->drain_acked, n)
                   : snprintf(per + used, sizeof per - used, "%s%s: sent %" PRIu64 ", left unknown",
                              used ? "; " : " (", d->name, d->drain_acked);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (used && used < sizeof per - 1)
        snprintf(per + used, sizeof per - used, ")");
    double took = (double)(wt_now_mono_ns() - s->drain_t0) / WT_NS_PER_S;
    if (!s->drain)
        wt_info(s->mod,
                "at stop: nothing sent (daemon.stop_deadline 0), %" PRIu64
                " samples%s left for the next start%s",
                left, unknown ? " (at least)" : "", per);
    else
        wt_info(s->mod,
                "at stop: sent %" PRIu64 " samples in %.2f s, %" PRIu64
                " left for the next start%s%s (daemon.stop_deadline %.3g s)",
                sent, took, left, unknown ? " (at least)" : "", per,
                (double)s->drain_deadline_ns / WT_NS_PER_S);
}

void wt_sender_close(struct wt_sender *s)
{
    if (!s)
        return;
    /* A drain: the threads end by themselves, all sent, or at its deadline at the latest (a
     * request in progress is abandoned then); the stop below wakes what remains. */
    pthread_mutex_lock(&s->mu);
    while (s->drain && !all_done(s) && wt_now_mono_ns() < s->drain_until) {
        struct timespec ts = {.tv_sec = s->drain_until / WT_NS_PER_S,
                              .tv_nsec = s->drain_until % WT_NS_PER_S};
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    bool asked = s->drain_asked;
    pthread_mutex_unlock(&s->mu);
    wt_sender_stop(s);
    for (size_t i = 0; i < s->n; i++) {
        struct wt_sender_dest *d = &s->d[i];
        if (d->started)
            pthread_join(d->thread, NULL);
    }
    if (asked && s->n)
        log_drain(s);
    for (size_t i = 0; i < s->n; i++) {
        struct wt_sender_dest *d = &s->d[i];
        wt_cursor_close(d->cur);
        wt_cursor_batch_free(&d->part);
    }
    for (size_t i = 0; i < s->ndests; i++)
        s->st->close_dest(s->dests + i * s->st->dest_size);
    free(s->dests);
    free(s->d);
    free(s->refs);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

/* ---- for the transports ------------------------------------------------------------------- */

const char *wt_sender_dest_name(const struct wt_sender_dest *d)
{
    return d->name;
}

struct wt_cursor *wt_sender_dest_cursor(struct wt_sender_dest *d)
{
    return d->cur;
}

int64_t wt_sender_dest_max_backoff(const struct wt_sender_dest *d)
{
    return d->cf.max_backoff_ns;
}

/* Under s->mu: the stop, this destination's drain over, or the drain's deadline passed. */
static bool stopping_locked(const struct wt_sender_dest *d)
{
    const struct wt_sender *s = d->s;
    return s->stop || d->drain_over || (s->drain && wt_now_mono_ns() >= s->drain_until);
}

bool wt_sender_stopping(struct wt_sender_dest *d)
{
    pthread_mutex_lock(&d->s->mu);
    bool stop = stopping_locked(d);
    pthread_mutex_unlock(&d->s->mu);
    return stop;
}

bool wt_sender_draining(struct wt_sender_dest *d)
{
    pthread_mutex_lock(&d->s->mu);
    bool drain = d->s->drain;
    pthread_mutex_unlock(&d->s->mu);
    return drain;
}

int64_t wt_sender_drain_left(struct wt_sender_dest *d)
{
    pthread_mutex_lock(&d->s->mu);
    int64_t left = d->s->drain ? d->s->drain_until - wt_now_mono_ns() : INT64_MAX;
    pthread_mutex_unlock(&d->s->mu);
    return left > 0 ? left : 0;
}

/*
 * Under s->mu: waits until `until`, the stop, or a drain beginning; a drain's deadline ends it
 * too. True when stopping.
 */
static bool wait_locked(struct wt_sender_dest *d, int64_t until)
{
    struct wt_sender *s = d->s;
    bool drain = s->drain;
    while (!stopping_locked(d) && s->drain == drain) {
        int64_t t = s->drain && s->drain_until < until ? s->drain_until : until;
        if (wt_now_mono_ns() >= t)
            break;
        struct timespec ts = {.tv_sec = t / WT_NS_PER_S, .tv_nsec = t % WT_NS_PER_S};
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    return stopping_locked(d);
}

bool wt_sender_wait(struct wt_sender_dest *d, int64_t ns)
{
    struct wt_sender *s = d->s;
    int64_t until = wt_now_mono_ns() + ns;
    pthread_mutex_lock(&s->mu);
    /* A wait asked for while draining follows a failure: what is left waits for the next start,
     * not for a backoff. A drain beginning during the wait cuts it short: one more attempt. */
    if (s->drain)
        d->drain_over = true;
    bool stop = wait_locked(d, until);
    pthread_mutex_unlock(&s->mu);
    return stop;
}

/* The wait between rounds: a drain beginning ends it (the loop reads the store at once). */
static bool idle(struct wt_sender_dest *d, int64_t ns)
{
    struct wt_sender *s = d->s;
    int64_t until = wt_now_mono_ns() + ns;
    pthread_mutex_lock(&s->mu);
    bool stop = s->drain ? stopping_locked(d) : wait_locked(d, until);
    pthread_mutex_unlock(&s->mu);
    return stop;
}

int64_t wt_sender_backoff(const struct wt_sender_dest *d, int failures)
{
    return wt_notify_backoff(failures, d->cf.max_backoff_ns);
}

int64_t wt_sender_failed(struct wt_sender_dest *d)
{
    return wt_sender_backoff(d, ++d->failures);
}

void wt_sender_delivered(struct wt_sender_dest *d, bool say)
{
    if (d->failures && say)
        wt_info(d->s->mod, "%s %s: delivering again after %d failed attempts", d->s->noun, d->name,
                d->failures);
    d->failures = 0;
}

void wt_sender_count(struct wt_sender_dest *d, int k, uint64_t n)
{
    if (k < 0 || k >= WT_SENDER_MAX_COUNTERS)
        return;
    pthread_mutex_lock(&d->s->mu);
    d->st.c[k] += n;
    pthread_mutex_unlock(&d->s->mu);
}

void wt_sender_count_pending(struct wt_sender_dest *d, bool force)
{
    uint64_t n;
    double lag;
    if (wt_cursor_pending_paced(d->cur, force, &n, &lag) != 1)
        return;
    pthread_mutex_lock(&d->s->mu);
    d->st.pending = n;
    d->st.lag_s = lag;
    pthread_mutex_unlock(&d->s->mu);
}

/* What was acknowledged, and what a drain did, for its line at stop. */
static void count_drained(struct wt_sender_dest *d, size_t n)
{
    pthread_mutex_lock(&d->s->mu);
    d->acked += n;
    if (d->s->drain)
        d->drain_acked += n;
    pthread_mutex_unlock(&d->s->mu);
}

int wt_sender_ack(struct wt_sender_dest *d, const struct wt_cursor_batch *b)
{
    int rc = wt_cursor_ack(d->cur, b);
    count_drained(d, b->n);
    if (rc)
        wt_error(d->s->mod,
                 "destination %s: cannot store the cursor (the next start sends %zu samples "
                 "again)",
                 d->name, b->n);
    return rc;
}

int wt_sender_ack_through(struct wt_sender_dest *d, const struct wt_cursor_batch *b, int64_t t_ns)
{
    struct wt_cursor_batch *part = &d->part;
    if (wt_sender_grow((void **)&part->s, &part->cap, b->n ? b->n : 1, sizeof *part->s))
        return -ENOMEM;
    part->n = 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->s[i].t_ns <= t_ns)
            part->s[part->n++] = b->s[i];
    count_drained(d, part->n);
    return wt_cursor_ack(d->cur, part);
}

int wt_sender_stats(struct wt_sender *s, size_t i, struct wt_sender_stats *out)
{
    if (!s || i >= s->n)
        return -ENOENT;
    pthread_mutex_lock(&s->mu);
    *out = s->d[i].st;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* ---- the loop ----------------------------------------------------------------------------- */

/* Series the store gained since the last round: the transport's encoder takes them. */
static int refresh(struct wt_sender_dest *d)
{
    int added = wt_cursor_refresh(d->cur, d->cf.keep, d->cf.ctx);
    if (added < 0)
        return added;
    size_t n = wt_cursor_nseries(d->cur);
    for (size_t i = n - (size_t)added; i < n; i++) {
        int rc = d->s->ops->add(d, d->cf.ctx, wt_cursor_series_at(d->cur, i), i);
        if (rc)
            return rc;
    }
    return 0;
}

static void *dest_main(void *arg)
{
    struct wt_sender_dest *d = arg;
    const struct wt_sender_ops *ops = d->s->ops;
    struct wt_cursor_batch b = {0};
    struct wt_ratelimit rl_store = {.interval_ns = 60 * WT_NS_PER_S};
    uint64_t sup;
    pthread_setname_np(pthread_self(), d->s->thread);
    while (!wt_sender_stopping(d)) {
        bool more = false;
        /* before the read: a drain begins after the store's last flush, so a read that starts
         * once it has begun sees everything the store will hold */
        bool draining = wt_sender_draining(d);
        if (ops->prepare && ops->prepare(d, d->cf.ctx) != 0) {
            if (wt_sender_wait(d, d->cf.max_backoff_ns))
                break;
            continue;
        }
        int rc = refresh(d);
        if (rc == 0)
            rc = wt_cursor_next(d->cur, d->cf.batch_size, &b, &more);
        if (!draining)
            wt_sender_count_pending(d, false);
        if (rc) {
            if (wt_ratelimit_ok(&rl_store, wt_now_mono_ns(), &sup))
                wt_error(d->s->mod, "destination %s: cannot read the store (%s); trying again",
                         d->name, strerror(-rc));
            if (wt_sender_wait(d, d->cf.deadline_ns))
                break;
            continue;
        }
        if (draining && !b.n)
            break; /* everything stored at the stop is acknowledged */
        pthread_mutex_lock(&d->s->mu);
        uint64_t acked = d->acked;
        pthread_mutex_unlock(&d->s->mu);
        enum wt_send_next next = b.n ? ops->send(d, d->cf.ctx, &b) : WT_SEND_DONE;
        /* a round that moved nothing while draining (its attempt at stop failed) would move
         * nothing again: the rest is for the next start */
        pthread_mutex_lock(&d->s->mu);
        if (d->s->drain && d->acked == acked)
            d->drain_over = true;
        pthread_mutex_unlock(&d->s->mu);
        if (next == WT_SEND_AGAIN)
            continue;
        /* more is waiting: at once; else let the store gather some */
        if ((!more || next == WT_SEND_PAUSE) && !wt_sender_draining(d)) {
            wt_sender_count_pending(d, true);
            if (idle(d, d->cf.deadline_ns))
                break;
        }
    }
    wt_cursor_batch_free(&b);
    pthread_mutex_lock(&d->s->mu);
    d->done = true;
    pthread_cond_broadcast(&d->s->cv);
    pthread_mutex_unlock(&d->s->mu);
    return NULL;
}

int wt_sender_start(struct wt_sender *s, struct wt_err *err)
{
    for (size_t i = 0; i < s->n; i++) {
        struct wt_sender_dest *d = &s->d[i];
        int rc = -pthread_create(&d->thread, NULL, dest_main, d);
        if (rc)
            return wt_err_set(err, "%s: cannot start a sender thread (%s)", s->mod, strerror(-rc));
        d->started = true;
    }
    return 0;
}

/* ---- streams ------------------------------------------------------------------------------ */

/* Sets up destination i of st from confs in its state at dest; err says which on failure. */
static int stream_dest(struct wt_sender *s, const struct wt_config *cfg, const char *node,
                       const void *confs, size_t i, struct wt_err *err)
{
    const struct wt_sender_stream *st = s->st;
    char what[80], msg[WT_ERR_LEN];
    if (st->indexed || wt_config_section(cfg, st->section)->kind == WT_YNODE_SEQ)
        snprintf(what, sizeof what, "%s[%zu]", st->section, i);
    else
        snprintf(what, sizeof what, "%s", st->section);
    struct wt_sender_setup su = {.s = s, .cfg = cfg, .node = node, .what = what, .i = i};
    s->ndests++; /* closed whatever happens */
    int rc = st->open_dest(&su, confs, s->dests + i * st->dest_size, err);
    if (rc) {
        snprintf(msg, sizeof msg, "%s", err->msg[0] ? err->msg : strerror(-rc));
        wt_err_set(err, "%s (%s): %s", what, st->dest_name(confs, i), msg);
    }
    return rc;
}

int wt_sender_stream_open(const struct wt_sender_stream *st, const struct wt_config *cfg,
                          struct wt_http *http, struct wt_sender **out, struct wt_err *err)
{
    struct wt_topology *topo = NULL;
    struct wt_sender *s = NULL;
    void *confs = malloc(st->conf_size);
    size_t n = 0;
    *out = NULL;
    if (!confs)
        return -ENOMEM;
    int rc = st->parse(wt_config_file(cfg), wt_config_section(cfg, st->section), confs, err);
    if (rc <= 0)
        goto done;
    n = (size_t)rc;
    rc = wt_topology_load(cfg, &topo, err);
    if (!rc)
        rc = wt_sender_open(st->section, st->thread, st->ops, st->fams, st->nfams, n, &s);
    if (rc)
        goto done;
    s->st = st;
    s->noun = st->noun;
    s->dests = calloc(n, st->dest_size);
    rc = s->dests ? 0 : -ENOMEM;
    for (size_t i = 0; !rc && i < n; i++)
        rc = stream_dest(s, cfg, topo->node, confs, i, err);
    if (rc)
        goto done;
    wt_sender_register(s, http);
    rc = wt_sender_start(s, err);
    for (size_t i = 0; !rc && st->describe && i < n; i++)
        st->describe(s->dests + i * st->dest_size, topo->node);
done:
    free(confs);
    free(topo);
    if (rc) {
        wt_sender_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* ---- /metrics ----------------------------------------------------------------------------- */

static int family(void *ctx, struct wt_expo_family *fam)
{
    const struct fam_ref *r = ctx;
    struct wt_sender *s = r->s;
    const struct wt_sender_family *f = &s->fams[r->k];
    memset(fam, 0, sizeof *fam);
    fam->name = f->name;
    fam->help = f->help;
    fam->type = f->type;
    fam->s = calloc(s->n ? s->n : 1, sizeof *fam->s);
    if (!fam->s)
        return -ENOMEM;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++) {
        const struct wt_sender_stats *st = &s->d[i].st;
        double v = f->counter == WT_SENDER_PENDING ? (double)st->pending
                   : f->counter == WT_SENDER_LAG   ? st->lag_s
                                                   : (double)st->c[f->counter];
        if (wt_labels(fam->s[fam->n].labels, sizeof fam->s[fam->n].labels, "endpoint", s->d[i].name,
                      NULL) != 0)
            continue;
        fam->s[fam->n++].value = v;
    }
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void wt_sender_register(struct wt_sender *s, struct wt_http *http)
{
    if (!http)
        return;
    for (size_t k = 0; k < s->nfams; k++) {
        if (wt_http_add_family(http, family, &s->refs[k]) != 0) {
            wt_warn(s->mod, "no room on /metrics for the %s family and those after it",
                    s->fams[k].name);
            return;
        }
    }
}

/* ---- secrets and HTTP --------------------------------------------------------------------- */

int wt_sender_read_secret(const char *what, const char *path, char *out, size_t n,
                          struct wt_err *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        wt_err_set(err, "%s %s: %s", what, path, strerror(e));
        return -e;
    }
    int rc = wt_check_secret_mode(what, path, sb.st_mode, err);
    if (rc)
        return rc;
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        wt_err_set(err, "%s %s: %s", what, path, strerror(e));
        return -e;
    }
    size_t len = fread(out, 1, n - 1, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    out[len] = '\0';
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
        out[--len] = '\0';
    if (more || !len || strpbrk(out, "\r\n"))
        return wt_err_set(err, "%s %s: expected one line of 1..%zu characters", what, path, n - 2);
    return 0;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    return wt_sender_stopping(arg) ? 1 : 0; /* a stop abandons a hanging request */
}

struct reply {
    char buf[REPLY_MAX];
    size_t n;
    char *raw; /* the caller's copy of the bytes, may be NULL */
    size_t rawn, *rawlen;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *arg)
{
    struct reply *r = arg;
    size_t len = size * nmemb;
    size_t take = len < sizeof r->buf - 1 - r->n ? len : sizeof r->buf - 1 - r->n;
    memcpy(r->buf + r->n, p, take);
    r->n += take;
    r->buf[r->n] = '\0';
    if (r->raw && *r->rawlen < r->rawn) {
        size_t room = r->rawn - *r->rawlen, t = len < room ? len : room;
        memcpy(r->raw + *r->rawlen, p, t);
        *r->rawlen += t;
    }
    return len;
}

long wt_sender_post(struct wt_sender_dest *d, void *curl, const struct wt_sender_http *c,
                    const char *const *headers, const char *body, size_t len, char *why,
                    size_t whyn, char *raw, size_t rawn, size_t *rawlen)
{
    char cerr[CURL_ERROR_SIZE] = "", secret[512] = "", auth[600] = "";
    struct wt_err err = {{0}};
    struct reply rep = {{0}, 0, raw, rawn, rawlen};
    struct curl_slist *h = NULL;
    long status = 0;
    CURL *cu = curl;
    bool oom = false;

    why[0] = '\0';
    if (rawlen)
        *rawlen = 0;
    else
        rep.raw = NULL;
    curl_easy_reset(cu);
    for (size_t i = 0; headers && headers[i]; i++) {
        struct curl_slist *nh = curl_slist_append(h, headers[i]);
        oom |= !nh;
        h = nh ? nh : h;
    }
    /* Secrets are read for every request, so a rotated token is used without a restart. */
    if (c->bearer_token_file && c->bearer_token_file[0]) {
        if (wt_sender_read_secret("bearer_token_file", c->bearer_token_file, secret, sizeof secret,
                                  &err)) {
            snprintf(why, whyn, "%s", err.msg);
            goto out;
        }
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", secret);
        struct curl_slist *nh = curl_slist_append(h, auth);
        oom |= !nh;
        h = nh ? nh : h;
    }
    if (c->username && c->username[0]) {
        if (wt_sender_read_secret("basic_auth.password_file", c->password_file, secret,
                                  sizeof secret, &err)) {
            snprintf(why, whyn, "%s", err.msg);
            goto out;
        }
        curl_easy_setopt(cu, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(cu, CURLOPT_USERNAME, c->username);
        curl_easy_setopt(cu, CURLOPT_PASSWORD, secret);
    }
    if (!h || oom) {
        snprintf(why, whyn, "out of memory");
        goto out;
    }
    /* a drain at stop ends at its deadline: no request outlives it */
    int64_t tmo = c->timeout_ns, left = wt_sender_drain_left(d);
    if (left < tmo)
        tmo = left > WT_NS_PER_MS ? left : WT_NS_PER_MS;
    long ms = (long)(tmo / 1000000);
    curl_easy_setopt(cu, CURLOPT_URL, c->url);
    curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(cu, CURLOPT_POST, 1L);
    curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(cu, CURLOPT_POSTFIELDSIZE, (long)len);
    curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(cu, CURLOPT_WRITEDATA, &rep);
    curl_easy_setopt(cu, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(cu, CURLOPT_USERAGENT, "wattage/" WT_VERSION);
    curl_easy_setopt(cu, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(cu, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(cu, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(cu, CURLOPT_XFERINFODATA, d);
    if (c->tls_ca && c->tls_ca[0])
        curl_easy_setopt(cu, CURLOPT_CAINFO, c->tls_ca);
    if (c->tls_cert && c->tls_cert[0]) {
        curl_easy_setopt(cu, CURLOPT_SSLCERT, c->tls_cert);
        curl_easy_setopt(cu, CURLOPT_SSLKEY, c->tls_key);
    }
    curl_easy_setopt(cu, CURLOPT_SSL_VERIFYPEER, c->insecure_skip_verify ? 0L : 1L);
    curl_easy_setopt(cu, CURLOPT_SSL_VERIFYHOST, c->insecure_skip_verify ? 0L : 2L);
    CURLcode rc = curl_easy_perform(cu);
    if (rc != CURLE_OK) {
        snprintf(why, whyn, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
        goto out;
    }
    curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &status);
    /* the receiver's own words, on one line */
    for (char *q = rep.buf; *q; q++)
        if (*q == '\n' || *q == '\r' || *q == '\t')
            *q = ' ';
    snprintf(why, whyn, "%s", rep.buf);
out:
    explicit_bzero(secret, sizeof secret);
    explicit_bzero(auth, sizeof auth);
    curl_slist_free_all(h);
    return status;
}

/* ---- HTTP delivery ------------------------------------------------------------------------ */

enum wt_sender_verdict wt_sender_verdict(long status)
{
    if (status >= 200 && status < 300)
        return WT_SENDER_SENT;
    if (status >= 500 || status == 429 || status <= 0)
        return WT_SENDER_RETRY;
    if (status == 401 || status == 403)
        return WT_SENDER_AUTH;
    return WT_SENDER_DROP;
}

static void add_stat(struct wt_sender_dest *d, int k, uint64_t n)
{
    pthread_mutex_lock(&d->s->mu);
    d->st.c[k] += n;
    d->st.c[WT_SENDER_C_REQUESTS]++;
    pthread_mutex_unlock(&d->s->mu);
}

/* The credentials the endpoint sends, for messages. */
static void credentials(const struct wt_sender_http *c, char *out, size_t n)
{
    if (c->bearer_token_file && c->bearer_token_file[0])
        snprintf(out, n, "bearer_token_file %s", c->bearer_token_file);
    else if (c->username && c->username[0])
        snprintf(out, n, "basic_auth.password_file %s", c->password_file);
    else
        snprintf(out, n, "no credentials configured");
}

/*
 * A 401 or 403: counted, logged when the endpoint begins refusing (not at every retry). The batch
 * stays pending; the secret file is read again for the next attempt, so fixing it recovers.
 */
static void refused(struct wt_sender_dest *d, struct wt_sender_http_state *st,
                    const struct wt_sender_http *h, const struct wt_cursor_batch *b, long status,
                    const char *why)
{
    char cred[WT_PATH_LEN + 32];
    add_stat(d, WT_SENDER_C_AUTH, 1);
    st->refusals++;
    if (st->refused)
        return;
    st->refused = true;
    credentials(h, cred, sizeof cred);
    wt_error(d->s->mod,
             "endpoint %s: the receiver refuses the credentials with HTTP %ld: %s url=%s (%s); "
             "%zu samples and what follows stay pending, retried with backoff up to %.1f s, the "
             "secret read again at each attempt",
             d->name, status, why[0] ? why : "(no reason given)", h->url, cred, b->n,
             (double)d->cf.max_backoff_ns / WT_NS_PER_S);
}

/* The first answer other than 401/403 after a refusal: logged once. */
static void accepted_again(struct wt_sender_dest *d, struct wt_sender_http_state *st,
                           enum wt_sender_verdict v, long status)
{
    if (v == WT_SENDER_SENT)
        wt_info(d->s->mod,
                "endpoint %s: the receiver accepts the credentials again after %" PRIu64
                " refused attempts; delivering",
                d->name, st->refusals);
    else
        wt_info(
            d->s->mod,
            "endpoint %s: the receiver no longer refuses the credentials (HTTP %ld after %" PRIu64
            " refused attempts)",
            d->name, status, st->refusals);
    st->refused = false;
    st->refusals = 0;
}

void wt_sender_http_deliver(struct wt_sender_dest *d, struct wt_sender_http_state *st, void *curl,
                            const struct wt_sender_http *h, const char *const *headers,
                            const struct wt_cursor_batch *b, const char *body, size_t len)
{
    const char *mod = d->s->mod;
    char why[600], raw[REPLY_MAX * 8];
    size_t rawlen = 0;
    uint64_t sup;
    if (!st->rl_fail.interval_ns)
        st->rl_fail.interval_ns = 30 * WT_NS_PER_S;
    if (!st->rl_drop.interval_ns)
        st->rl_drop.interval_ns = 30 * WT_NS_PER_S;
    for (;;) {
        long status = wt_sender_post(d, curl, h, headers, body, len, why, sizeof why, raw,
                                     sizeof raw, &rawlen);
        enum wt_sender_verdict v = wt_sender_verdict(status);
        if (v == WT_SENDER_AUTH) {
            refused(d, st, h, b, status, why);
            int64_t wait = wt_sender_failed(d);
            wt_sender_count_pending(d, false);
            if (wt_sender_wait(d, wait))
                return;
            continue;
        }
        bool was_refused = status && st->refused;
        if (was_refused)
            accepted_again(d, st, v, status);
        if (v == WT_SENDER_SENT) {
            /* accepted, but the receiver may say it rejected some (OTLP's partial success) */
            char msg[256] = "";
            size_t rej = h->rejected ? h->rejected(raw, rawlen, msg, sizeof msg) : 0;
            if (rej > b->n)
                rej = b->n;
            add_stat(d, WT_SENDER_C_SENT, b->n - rej);
            if (rej) {
                pthread_mutex_lock(&d->s->mu);
                d->st.c[WT_SENDER_C_DROPPED] += rej;
                pthread_mutex_unlock(&d->s->mu);
                if (wt_ratelimit_ok(&st->rl_drop, wt_now_mono_ns(), &sup))
                    wt_error(mod,
                             "endpoint %s: the receiver accepted the request but rejected %zu of "
                             "its %zu samples (not retried): %s url=%s suppressed=%" PRIu64,
                             d->name, rej, b->n, msg[0] ? msg : "(no reason given)", h->url, sup);
            }
            wt_sender_delivered(d, !was_refused);
            break;
        }
        if (v == WT_SENDER_DROP) {
            add_stat(d, WT_SENDER_C_DROPPED, b->n);
            wt_sender_delivered(d, false); /* done with: the next batch starts afresh */
            if (wt_ratelimit_ok(&st->rl_drop, wt_now_mono_ns(), &sup))
                wt_error(mod,
                         "endpoint %s: the receiver refused %zu samples with HTTP %ld, dropped "
                         "(not retried): %s url=%s suppressed=%" PRIu64,
                         d->name, b->n, status, why[0] ? why : "(no reason given)", h->url, sup);
            break;
        }
        add_stat(d, WT_SENDER_C_FAILED, b->n);
        int64_t wait = wt_sender_failed(d);
        if (wt_sender_stopping(d))
            return;
        if (wt_sender_draining(d)) {
            /* at stop no backoff: the batch stays pending (the loop sees nothing acknowledged) */
            if (status)
                wt_warn(mod,
                        "endpoint %s: at stop, HTTP %ld for %zu samples: %s; left for the next "
                        "start url=%s",
                        d->name, status, b->n, why, h->url);
            else
                wt_warn(mod,
                        "endpoint %s: at stop, cannot send %zu samples: %s; left for the next "
                        "start url=%s",
                        d->name, b->n, why, h->url);
            return;
        }
        if (wt_ratelimit_ok(&st->rl_fail, wt_now_mono_ns(), &sup)) {
            if (status)
                wt_warn(mod,
                        "endpoint %s: HTTP %ld for %zu samples, retrying in %.1f s: %s url=%s "
                        "suppressed=%" PRIu64,
                        d->name, status, b->n, (double)wait / WT_NS_PER_S, why, h->url, sup);
            else
                wt_warn(mod,
                        "endpoint %s: cannot send %zu samples, retrying in %.1f s: %s url=%s "
                        "suppressed=%" PRIu64,
                        d->name, b->n, (double)wait / WT_NS_PER_S, why, h->url, sup);
        }
        wt_sender_count_pending(d, false);
        if (wt_sender_wait(d, wait))
            return;
    }
    /* sent or dropped: either way this batch is done */
    (void)wt_sender_ack(d, b);
}

/* ---- HTTP streams ------------------------------------------------------------------------- */

static bool http_keep(void *ctx, const char *metric, const char *labels)
{
    const struct wt_sender_http_ep *ep = ctx;
    return ep->codec->keep(ep->sel, ep->nsel, metric, labels);
}

/* A series the store gained: its label set goes into the encoder. */
static int http_add(struct wt_sender_dest *d, void *ctx, const struct wt_cursor_series *s, size_t i)
{
    struct wt_sender_http_ep *ep = ctx;
    int k = ep->codec->add(ep->owner, s->metric, s->labels);
    if (k != (int)i) {
        /* cannot happen with labels the store wrote; keep indices aligned anyway */
        wt_error(d->s->mod, "endpoint %s: cannot encode series %s{%s}", ep->name, s->metric,
                 s->labels);
        return k < 0 ? k : -EINVAL;
    }
    return 0;
}

static enum wt_send_next http_send(struct wt_sender_dest *d, void *ctx,
                                   const struct wt_cursor_batch *b)
{
    struct wt_sender_http_ep *ep = ctx;
    const char *body;
    size_t len;
    int rc = ep->codec->encode(ep->owner, b, &body, &len);
    if (rc)
        wt_error(d->s->mod, "endpoint %s: cannot encode %zu samples (%s)", ep->name, b->n,
                 strerror(-rc));
    else
        wt_sender_http_deliver(d, &ep->hs, ep->curl, &ep->http, ep->headers, b, body, len);
    return WT_SEND_DONE;
}

const struct wt_sender_ops wt_sender_http_ops = {.add = http_add, .send = http_send};

int wt_sender_http_dest(struct wt_sender *s, const char *store_path,
                        const struct wt_rw_endpoint_config *c, const char *cursor,
                        struct wt_sender_http_ep *ep, struct wt_err *err)
{
    char secret[512];
    int rc = 0;
    struct wt_sender_http *h = &ep->http;
    ep->name = c->name;
    ep->sel = c->sel;
    ep->nsel = c->nsel;
    h->url = c->url;
    h->bearer_token_file = c->bearer_token_file;
    h->username = c->username;
    h->password_file = c->password_file;
    h->tls_ca = c->tls_ca;
    h->tls_cert = c->tls_cert;
    h->tls_key = c->tls_key;
    h->insecure_skip_verify = c->insecure_skip_verify;
    h->timeout_ns = c->timeout_ns;
    /* a secret that cannot be read is a setup error, named at start */
    if (c->bearer_token_file[0])
        rc = wt_sender_read_secret("bearer_token_file", c->bearer_token_file, secret, sizeof secret,
                                   err);
    if (!rc && c->username[0])
        rc = wt_sender_read_secret("basic_auth.password_file", c->password_file, secret,
                                   sizeof secret, err);
    explicit_bzero(secret, sizeof secret);
    struct wt_sender_dest_config dc = {.name = c->name,
                                       .cursor = cursor,
                                       .batch_size = (size_t)c->batch_size,
                                       .deadline_ns = c->deadline_ns,
                                       .max_backoff_ns = c->max_backoff_ns,
                                       .backfill_ns = c->backfill_ns,
                                       .keep = http_keep,
                                       .ctx = ep};
    if (!rc)
        rc = wt_sender_add_dest(s, store_path, &dc, NULL, err);
    if (!rc)
        rc = wt_curl_load(c->name, err);
    if (!rc && !(ep->curl = curl_easy_init()))
        rc = -ENOMEM;
    return rc;
}

void wt_sender_http_ep_close(struct wt_sender_http_ep *ep)
{
    if (ep->curl)
        curl_easy_cleanup(ep->curl);
    ep->curl = NULL;
}

int wt_sender_http_stats(struct wt_sender *s, size_t i, struct wt_rw_stats *out)
{
    struct wt_sender_stats st;
    if (!s || wt_sender_stats(s, i, &st) != 0)
        return -ENOENT;
    *out = (struct wt_rw_stats){.sent = st.c[WT_SENDER_C_SENT],
                                .failed = st.c[WT_SENDER_C_FAILED],
                                .dropped = st.c[WT_SENDER_C_DROPPED],
                                .pending = st.pending,
                                .requests = st.c[WT_SENDER_C_REQUESTS],
                                .auth_failures = st.c[WT_SENDER_C_AUTH],
                                .lag_s = st.lag_s};
    return 0;
}
