/* SPDX-License-Identifier: MIT */
/*
 * The hub: latest readings per collector behind one mutex, and the list of sinks. Publishing
 * copies the batch (memory reused between ticks), so readers never wait for a poll.
 *
 * Sinks are called outside the lock, from a copy of the list taken under it. A sink's owner
 * may stop while other threads still publish (the audit publishers outlive the poll loop), so
 * wt_hub_remove_sink waits out the calls that may hold the old list: each publication counts
 * itself in the half (gen & 1) current when it took its copy; a removal flips the half and
 * waits for the old one to drain. New publications count in the new half and never see the
 * removed sink, so the wait ends however busy the publishers are.
 */
#include "core/hub.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

#define HUB_MAX_COLLECTORS WT_HUB_MAX_COLLECTORS
#define HUB_MAX_SINKS 8

struct slot {
    struct wt_hub_collector st;
    struct wt_batch latest;
};

struct sink {
    wt_hub_sink_fn fn;
    void *ctx;
    bool extra; /* takes wt_hub_publish_extra's batches */
};

struct wt_hub {
    pthread_mutex_t mu;
    struct slot slots[HUB_MAX_COLLECTORS];
    int nslots;
    struct sink sinks[HUB_MAX_SINKS];
    int nsinks;
    uint64_t gen;           /* bumped by each removal of a sink */
    unsigned calls[2];      /* publications calling sinks, by the parity of gen at their copy */
    bool removing;          /* a removal waits for calls[] to drain (one at a time) */
    pthread_cond_t idle;    /* calls[] reached 0, or a removal ended */
    wt_hub_edge_fn edge_fn; /* the poll loop's, while it runs */
    void *edge_ctx;
};

int wt_hub_open(struct wt_hub **out)
{
    struct wt_hub *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->idle, NULL);
    *out = h;
    return 0;
}

void wt_hub_close(struct wt_hub *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->nslots; i++)
        wt_batch_free(&h->slots[i].latest);
    pthread_cond_destroy(&h->idle);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

int wt_hub_add_collector(struct wt_hub *h, const char *name, int64_t interval_ns)
{
    pthread_mutex_lock(&h->mu);
    /* A restarted loop (SIGHUP) finds its collectors' slots again. */
    for (int i = 0; i < h->nslots; i++) {
        if (strcmp(h->slots[i].st.name, name) == 0) {
            h->slots[i].st.interval_ns = interval_ns;
            h->slots[i].st.retired = false;
            pthread_mutex_unlock(&h->mu);
            return i;
        }
    }
    int idx = h->nslots < HUB_MAX_COLLECTORS ? h->nslots++ : -ENOSPC;
    if (idx >= 0) {
        struct slot *s = &h->slots[idx];
        snprintf(s->st.name, sizeof s->st.name, "%s", name);
        s->st.interval_ns = interval_ns;
    }
    pthread_mutex_unlock(&h->mu);
    return idx;
}

static int add_sink(struct wt_hub *h, wt_hub_sink_fn fn, void *ctx, bool extra)
{
    int rc = 0;
    pthread_mutex_lock(&h->mu);
    if (h->nsinks >= HUB_MAX_SINKS) {
        rc = -ENOSPC;
    } else {
        h->sinks[h->nsinks] = (struct sink){.fn = fn, .ctx = ctx, .extra = extra};
        h->nsinks++;
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

int wt_hub_add_sink(struct wt_hub *h, wt_hub_sink_fn fn, void *ctx)
{
    return add_sink(h, fn, ctx, true);
}

int wt_hub_add_tick_sink(struct wt_hub *h, wt_hub_sink_fn fn, void *ctx)
{
    return add_sink(h, fn, ctx, false);
}

void wt_hub_remove_sink(struct wt_hub *h, wt_hub_sink_fn fn, void *ctx)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    while (h->removing)
        pthread_cond_wait(&h->idle, &h->mu);
    int k = 0;
    for (int i = 0; i < h->nsinks; i++)
        if (h->sinks[i].fn != fn || h->sinks[i].ctx != ctx)
            h->sinks[k++] = h->sinks[i];
    h->nsinks = k;
    /* The publications counted in the old half may hold a copy with the sink: wait them out. */
    unsigned old = h->gen & 1;
    h->gen++;
    h->removing = true;
    while (h->calls[old])
        pthread_cond_wait(&h->idle, &h->mu);
    h->removing = false;
    pthread_cond_broadcast(&h->idle);
    pthread_mutex_unlock(&h->mu);
}

/* Under h->mu: copies the sinks that take this kind of batch and counts the call in. */
static int sinks_enter(struct wt_hub *h, bool extra, struct sink *out, unsigned *half)
{
    int n = 0;
    for (int i = 0; i < h->nsinks; i++)
        if (!extra || h->sinks[i].extra)
            out[n++] = h->sinks[i];
    *half = h->gen & 1;
    h->calls[*half]++;
    return n;
}

/* Calls the copied sinks outside the lock, then counts the call out. */
static void sinks_call(struct wt_hub *h, const struct sink *s, int n, unsigned half,
                       const char *name, const struct wt_batch *b)
{
    for (int i = 0; i < n; i++)
        s[i].fn(s[i].ctx, name, b);
    pthread_mutex_lock(&h->mu);
    if (--h->calls[half] == 0)
        pthread_cond_broadcast(&h->idle);
    pthread_mutex_unlock(&h->mu);
}

void wt_hub_publish_extra(struct wt_hub *h, int idx, const struct wt_batch *b)
{
    if (!b->len)
        return;
    struct sink sinks[HUB_MAX_SINKS];
    unsigned half;
    pthread_mutex_lock(&h->mu);
    char name[sizeof h->slots[0].st.name];
    memcpy(name, h->slots[idx].st.name, sizeof name);
    int n = sinks_enter(h, true, sinks, &half);
    pthread_mutex_unlock(&h->mu);
    sinks_call(h, sinks, n, half, name, b);
}

void wt_hub_publish(struct wt_hub *h, int idx, const struct wt_batch *b, bool ok, double duration_s,
                    int64_t mono_ns)
{
    wt_hub_publish_held(h, idx, b, NULL, ok, duration_s, mono_ns);
}

void wt_hub_publish_held(struct wt_hub *h, int idx, const struct wt_batch *b,
                         const struct wt_batch *held, bool ok, double duration_s, int64_t mono_ns)
{
    pthread_mutex_lock(&h->mu);
    struct slot *s = &h->slots[idx];
    s->st.last_tick_mono = mono_ns;
    s->st.duration_s = duration_s;
    s->st.up = ok;
    wt_batch_clear(&s->latest);
    if (ok)
        s->st.last_ok_mono = mono_ns;
    else
        s->st.errors++;
    if (wt_batch_append(&s->latest, b) != 0 ||
        (ok && held && wt_batch_append(&s->latest, held) != 0))
        wt_batch_clear(&s->latest);
    char name[sizeof s->st.name];
    memcpy(name, s->st.name, sizeof name);
    if (!b->len) {
        pthread_mutex_unlock(&h->mu);
        return;
    }
    struct sink sinks[HUB_MAX_SINKS];
    unsigned half;
    int n = sinks_enter(h, false, sinks, &half);
    pthread_mutex_unlock(&h->mu);
    sinks_call(h, sinks, n, half, name, b);
}

void wt_hub_retire(struct wt_hub *h, int idx)
{
    pthread_mutex_lock(&h->mu);
    if (idx >= 0 && idx < h->nslots) {
        struct slot *s = &h->slots[idx];
        s->st.retired = true;
        s->st.present = s->st.up = false;
        wt_batch_clear(&s->latest);
    }
    pthread_mutex_unlock(&h->mu);
}

void wt_hub_set_state(struct wt_hub *h, int idx, bool present, int64_t interval_ns)
{
    pthread_mutex_lock(&h->mu);
    h->slots[idx].st.present = present;
    h->slots[idx].st.interval_ns = interval_ns;
    if (!present) {
        h->slots[idx].st.up = false;
        wt_batch_clear(&h->slots[idx].latest);
    }
    pthread_mutex_unlock(&h->mu);
}

int wt_hub_snapshot(struct wt_hub *h, struct wt_batch *out)
{
    int rc = 0;
    char lb[WT_LABELS_LEN];
    int64_t now = wt_now_real_ns();
    wt_batch_clear(out);
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < h->nslots && rc == 0; i++)
        rc = wt_batch_append(out, &h->slots[i].latest);
    for (int i = 0; i < h->nslots && rc == 0; i++) {
        const struct wt_hub_collector *c = &h->slots[i].st;
        if (c->retired || wt_labels(lb, sizeof lb, "collector", c->name, NULL) != 0)
            continue;
        rc = wt_batch_add(out, WT_M_COLLECTOR_UP, lb, now, c->present && c->up ? 1 : 0);
        if (!rc)
            rc = wt_batch_add(out, WT_M_COLLECTOR_ERRORS, lb, now, (double)c->errors);
        if (!rc && c->last_tick_mono)
            rc = wt_batch_add(out, WT_M_COLLECTOR_DURATION_S, lb, now, c->duration_s);
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

size_t wt_hub_collectors(struct wt_hub *h, struct wt_hub_collector *out, size_t n)
{
    size_t total = 0;
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < h->nslots; i++) {
        if (h->slots[i].st.retired)
            continue;
        if (total < n)
            out[total] = h->slots[i].st;
        total++;
    }
    pthread_mutex_unlock(&h->mu);
    return total;
}

bool wt_hub_healthy(struct wt_hub *h, int64_t now_mono, char *why, size_t n)
{
    bool ok = true;
    int present = 0;
    if (why && n)
        why[0] = '\0';
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < h->nslots && ok; i++) {
        const struct wt_hub_collector *c = &h->slots[i].st;
        if (!c->present)
            continue;
        present++;
        int64_t since = now_mono - c->last_tick_mono;
        if (c->last_tick_mono == 0 || since > 3 * c->interval_ns + WT_NS_PER_S) {
            ok = false;
            if (why)
                snprintf(why, n, "%s: no poll for %.1f s (interval %.3g s)", c->name,
                         c->last_tick_mono ? (double)since / WT_NS_PER_S : -1.0,
                         (double)c->interval_ns / WT_NS_PER_S);
        }
    }
    pthread_mutex_unlock(&h->mu);
    if (ok && present == 0) {
        ok = false;
        if (why)
            snprintf(why, n, "no collector is running");
    }
    return ok;
}

void wt_hub_set_edge(struct wt_hub *h, wt_hub_edge_fn fn, void *ctx)
{
    pthread_mutex_lock(&h->mu);
    h->edge_fn = fn;
    h->edge_ctx = ctx;
    pthread_mutex_unlock(&h->mu);
}

void wt_hub_request_edge(struct wt_hub *h)
{
    if (!h)
        return;
    /* Under the lock, so that once wt_hub_set_edge(NULL) returns no call is left running. */
    pthread_mutex_lock(&h->mu);
    if (h->edge_fn)
        h->edge_fn(h->edge_ctx);
    pthread_mutex_unlock(&h->mu);
}
