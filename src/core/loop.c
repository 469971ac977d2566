/* SPDX-License-Identifier: MIT */
/*
 * The poll loop; see loop.h. Each collector thread sleeps on a condition variable bound to
 * CLOCK_MONOTONIC with an absolute deadline, so ticks do not drift and a stop wakes it at once.
 * The cheap file sources that share an interval run on one thread (struct group), each with
 * its own slot, open retries and backoff, as a thread of its own would give it.
 */
#include "core/loop.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"

struct worker {
    struct wt_loop *loop;
    const struct wt_collector_ops *ops;
    char name[32]; /* the collector's, or "<collector>:<target>": logs and the hub slot */
    long target;   /* index for open_target, -1 for a single-source collector */
    int64_t base_ns;
    int slot;
    pthread_t thread;
    bool started;
    bool edges;         /* polls again at edge requests (ops->edge_samples) */
    bool subs;          /* takes sub-polls between ticks (ops->sub_poll) */
    uint64_t edge_seen; /* the loop's edge_gen at its latest poll */
    /* A member of a file-source group (below): no thread of its own; the group's thread keeps
     * its source and its schedule here. */
    bool grouped;
    void *state; /* NULL while not open */
    int fails;   /* consecutive failed polls */
    uint64_t failed_ticks;
    int64_t interval; /* now: the base, or longer under backoff */
    int64_t skip;     /* group ticks to let pass before its next poll (backoff) */
    int64_t retry_at; /* monotonic: its next open while not open */
    int64_t retry_delay;
    int last_rc; /* of its latest failed open */
    struct wt_ratelimit rl;
    struct wt_batch held; /* ops->held's readings after a poll (reused) */
};

/*
 * The cheap file sources (ops->file_source) at one interval, polled one after the other on one
 * thread at each tick, so that they wake once a tick together rather than once each.
 */
struct group {
    struct worker w; /* the thread's own schedule: base_ns, edges, edge_seen, name */
    struct worker **m;
    size_t n;
    pthread_t thread;
    bool started;
};

struct wt_loop {
    const struct wt_config *cfg;
    struct wt_hub *hub;
    int64_t retry_ns;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    struct worker *workers;
    size_t nworkers;
    struct group *groups;
    size_t ngroups;
    uint64_t edge_gen; /* bumped by every edge request (core/hub.h), under mu */
    /* Test hook, WATTAGE_TEST_HANG_FILE: while this file exists no collector polls (a loop stuck
     * in a driver call), so the tests see the systemd watchdog pings stop. NULL normally. */
    const char *hang_file;
};

int64_t wt_loop_next_interval(int64_t base_ns, int fails)
{
    if (fails < WT_BACKOFF_AFTER)
        return base_ns;
    int64_t cap = base_ns * WT_BACKOFF_MAX_FACTOR;
    if (cap > WT_BACKOFF_MAX_NS)
        cap = WT_BACKOFF_MAX_NS;
    if (cap < base_ns)
        cap = base_ns;
    int64_t v = base_ns;
    for (int i = WT_BACKOFF_AFTER - 1; i < fails && v < cap; i++)
        v *= 2;
    return v < cap ? v : cap;
}

int64_t wt_loop_next_deadline(int64_t deadline, int64_t interval, int64_t now)
{
    deadline += interval;
    if (deadline <= now) {
        /* Missed ticks are skipped, keeping the phase of the schedule. */
        int64_t behind = now - deadline;
        deadline += (behind / interval + 1) * interval;
    }
    return deadline;
}

/* The first multiple of grid at or after t (grid > 0; t may be negative). */
static int64_t ceil_grid(int64_t t, int64_t grid)
{
    int64_t q = t / grid, r = t % grid;
    if (r > 0)
        q++;
    return q * grid;
}

int64_t wt_loop_next_aligned(int64_t prev_due, int64_t interval, int64_t grid, int64_t now)
{
    if (grid <= 0)
        return now + (interval > 0 ? interval : 0);
    if (interval < grid)
        interval = grid;
    if (prev_due == 0)
        return ceil_grid(now + grid / 2, grid);
    int64_t due = ceil_grid(prev_due + interval, grid);
    int64_t soonest = ceil_grid(now, grid);
    if (due < soonest)
        due = soonest; /* late: the points missed are skipped, the grid kept */
    if (due - now > interval + grid)
        due = soonest; /* the clock went back: start over from now */
    return due;
}

/* Waits until the monotonic deadline or a stop. Returns true when asked to stop. */
static bool wait_until(struct wt_loop *l, int64_t deadline)
{
    struct timespec ts = {.tv_sec = deadline / WT_NS_PER_S, .tv_nsec = deadline % WT_NS_PER_S};
    pthread_mutex_lock(&l->mu);
    while (!l->stop) {
        int rc = pthread_cond_timedwait(&l->cv, &l->mu, &ts);
        if (rc == ETIMEDOUT)
            break;
    }
    bool stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

enum wake { WAKE_TICK, WAKE_STOP, WAKE_EDGE };

/*
 * Waits for the monotonic deadline, a stop, or (for a worker that takes them) an edge request
 * made since its latest poll. tick: the deadline is a tick's (not a sub-poll's), whose poll
 * answers the edge requests made until then.
 */
static enum wake wait_tick(struct wt_loop *l, struct worker *w, int64_t deadline, bool tick)
{
    struct timespec ts = {.tv_sec = deadline / WT_NS_PER_S, .tv_nsec = deadline % WT_NS_PER_S};
    enum wake why = WAKE_TICK;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        if (l->stop) {
            why = WAKE_STOP;
            break;
        }
        if (w->edges && w->edge_seen != l->edge_gen) {
            w->edge_seen = l->edge_gen;
            why = WAKE_EDGE;
            break;
        }
        if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT)
            break;
    }
    if (why == WAKE_TICK && tick)
        w->edge_seen = l->edge_gen; /* the tick's poll is as good as an edge's */
    pthread_mutex_unlock(&l->mu);
    return why;
}

/* The hub's edge function (core/hub.h): wakes the workers that take edge samples. */
static void request_edge(void *ctx)
{
    struct wt_loop *l = ctx;
    pthread_mutex_lock(&l->mu);
    l->edge_gen++;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/*
 * One attempt at opening the source. On failure says so once per kind of failure (*last_rc
 * holds the latest), marks the slot down and returns NULL; delay is when it is tried again.
 */
static void *try_open(struct worker *w, int64_t delay, int *last_rc)
{
    struct wt_loop *l = w->loop;
    void *state = NULL;
    struct wt_err err = {{0}};
    int rc = w->target >= 0 ? w->ops->open_target(l->cfg, (size_t)w->target, &state, &err)
                            : w->ops->open(l->cfg, &state, &err);
    if (rc == 0) {
        wt_info(w->name, "collecting every %.3g s", (double)w->base_ns / WT_NS_PER_S);
        wt_hub_set_state(l->hub, w->slot, true, w->base_ns);
        return state;
    }
    w->ops->close(state);
    if (rc != *last_rc) {
        /* Said once per kind of failure, not at every retry. */
        if (rc == -ENOENT)
            wt_info(w->name, "not available: %s; looking again in %.3g s and later", err.msg,
                    (double)delay / WT_NS_PER_S);
        else
            wt_warn(w->name, "cannot start: %s; retrying in %.3g s and later", err.msg,
                    (double)delay / WT_NS_PER_S);
        *last_rc = rc;
    } else {
        wt_debug(w->name, "still not available: %s", err.msg);
    }
    wt_hub_set_state(l->hub, w->slot, false, w->base_ns);
    return NULL;
}

/* The delay before the next open after delay: doubled, up to the backoff cap. */
static int64_t next_open_delay(int64_t delay)
{
    if (delay < WT_BACKOFF_MAX_NS)
        delay *= 2;
    return delay > WT_BACKOFF_MAX_NS ? WT_BACKOFF_MAX_NS : delay;
}

/* Opens the source, looking again with growing delays while it is absent. NULL on stop. */
static void *open_source(struct worker *w, bool *stopped)
{
    struct wt_loop *l = w->loop;
    int64_t delay = l->retry_ns ? l->retry_ns : 30 * WT_NS_PER_S;
    int last_rc = 0;
    for (;;) {
        void *state = try_open(w, delay, &last_rc);
        if (state)
            return state;
        if (wait_until(l, wt_now_mono_ns() + delay)) {
            *stopped = true;
            return NULL;
        }
        delay = next_open_delay(delay);
    }
}

/*
 * One poll of an open source, published to its hub slot; logs a failure (rate-limited) and a
 * recovery, and counts both in *fails (consecutive) and *failed_ticks. Returns the poll's rc.
 */
static int poll_publish(struct worker *w, void *state, struct wt_batch *batch,
                        struct wt_ratelimit *rl, int *fails, uint64_t *failed_ticks)
{
    struct wt_loop *l = w->loop;
    struct wt_err err = {{0}};
    int64_t t_real = wt_now_real_ns();
    int64_t t0 = wt_now_mono_ns();
    wt_batch_clear(batch);
    int rc = w->ops->poll(state, t_real, batch, &err);
    int64_t t1 = wt_now_mono_ns();
    double dur = (double)(t1 - t0) / WT_NS_PER_S;
    if (rc != 0) {
        /* What a failed poll gathered is not published; only what says it is down. */
        wt_batch_clear(batch);
        if (w->ops->down && w->ops->down(state, t_real, batch) != 0)
            wt_batch_clear(batch);
    }
    /* Fields read at their own cadence and not this tick stay in the latest readings. */
    wt_batch_clear(&w->held);
    if (rc == 0 && w->ops->held && w->ops->held(state, t_real, &w->held) != 0)
        wt_batch_clear(&w->held);
    wt_hub_publish_held(l->hub, w->slot, batch, &w->held, rc == 0, dur, t1);
    if (rc == 0) {
        if (*fails > 0)
            wt_info(w->name, "recovered after %" PRIu64 " failed polls", *failed_ticks);
        *fails = 0;
        *failed_ticks = 0;
        wt_debug(w->name, "tick readings=%zu duration_ms=%.3f", batch->len, dur * 1e3);
    } else {
        uint64_t held = 0;
        (*fails)++;
        (*failed_ticks)++;
        if (wt_ratelimit_ok(rl, t1, &held))
            wt_warn(w->name, "poll failed: %s consecutive=%d suppressed=%" PRIu64, err.msg, *fails,
                    held);
    }
    return rc;
}

/* The interval after a tick's poll, from the consecutive failures; says a change. */
static void update_interval(struct worker *w, int fails, int64_t *interval)
{
    int64_t next = wt_loop_next_interval(w->base_ns, fails);
    if (next == *interval)
        return;
    if (next > *interval)
        wt_warn(w->name, "backing off: polling every %.3g s", (double)next / WT_NS_PER_S);
    *interval = next;
    wt_hub_set_state(w->loop->hub, w->slot, true, next);
}

/* The monotonic deadline of the tick after the one due at *due (aligned) or at deadline. */
static int64_t next_tick(const struct worker *w, int64_t interval, int64_t *due, int64_t deadline)
{
    if (w->loop->cfg->daemon.align_ticks) {
        int64_t real = wt_now_real_ns(), mono = wt_now_mono_ns();
        *due = wt_loop_next_aligned(*due, interval, w->base_ns, real);
        return mono + (*due - real);
    }
    return wt_loop_next_deadline(deadline, interval, wt_now_mono_ns());
}

/* The first point of the sub-poll grid anchor + k * sub (k >= 1) after now. */
static int64_t next_sub(int64_t anchor, int64_t sub, int64_t now)
{
    int64_t k = now > anchor ? (now - anchor) / sub + 1 : 1;
    return anchor + k * sub;
}

/* One sub-poll (core/source.h), its readings to the hub's extra sinks; returns its duration. */
static int64_t sub_poll(struct worker *w, void *state, struct wt_batch *batch)
{
    int64_t t_real = wt_now_real_ns(), t0 = wt_now_mono_ns();
    wt_batch_clear(batch);
    if (w->ops->sub_poll(state, t_real, batch) == 0)
        wt_hub_publish_extra(w->loop->hub, w->slot, batch);
    wt_batch_clear(batch);
    return wt_now_mono_ns() - t0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct wt_loop *l = w->loop;
    struct wt_batch batch = {0};
    struct wt_ratelimit rl = {.interval_ns = 60 * WT_NS_PER_S};
    bool stopped = false;
    char tname[16];
    /* For top -H and the benchmarks; the kernel keeps 15 characters. */
    snprintf(tname, sizeof tname, "wt-%.12s", w->name);
    pthread_setname_np(pthread_self(), tname);
    void *state = open_source(w, &stopped);
    if (stopped)
        goto out;

    int fails = 0;
    uint64_t failed_ticks = 0;
    int64_t interval = w->base_ns;
    int64_t deadline = wt_now_mono_ns();
    /* Aligned: when the next tick is due in CLOCK_REALTIME (0: none yet). The monotonic deadline
     * is taken from it at every tick, so a clock slewed or stepped by NTP moves the ticks with
     * the wall clock they are aligned to. */
    int64_t due = 0;
    bool edge = false;         /* this poll is an edge sample */
    int64_t anchor = deadline; /* when the latest tick was due: the sub-polls' grid */
    int64_t sub_dur = 0;       /* how long the latest sub-poll took */
    for (;;) {
        while (l->hang_file && access(l->hang_file, F_OK) == 0)
            if (wait_until(l, wt_now_mono_ns() + WT_NS_PER_S / 20))
                goto out;
        poll_publish(w, state, &batch, &rl, &fails, &failed_ticks);
        if (edge) {
            /* An edge sample: the tick grid, the interval and the deadline stay as they were. */
            edge = false;
        } else {
            anchor = deadline;
            update_interval(w, fails, &interval);
            deadline = next_tick(w, interval, &due, deadline);
        }
        /* A failing source takes no sub-polls, as it takes no edge samples: its backoff holds.
         * The source may decide on them after its first polls, so it is asked at every one. */
        int64_t sub = w->subs && fails == 0 ? w->ops->sub_interval(state) : 0;
        enum wake why;
        for (;;) {
            int64_t at = deadline, sub_at = sub > 0 ? next_sub(anchor, sub, wt_now_mono_ns()) : 0;
            /* Never in the way of the tick: none within half a step of it, none that may not
             * end (twice the latest one's duration) well before it. */
            bool is_sub = sub > 0 && sub_at + sub / 2 < deadline && sub_at + 2 * sub_dur < deadline;
            if (is_sub)
                at = sub_at;
            why = wait_tick(l, w, at, !is_sub);
            if (why == WAKE_EDGE && fails > 0)
                continue; /* a failing source takes no edge samples: its backoff holds */
            if (why != WAKE_TICK || !is_sub)
                break;
            if (l->hang_file && access(l->hang_file, F_OK) == 0)
                continue;
            sub_dur = sub_poll(w, state, &batch);
        }
        if (why == WAKE_STOP)
            break;
        edge = why == WAKE_EDGE;
    }
out:
    w->ops->close(state);
    wt_batch_free(&batch);
    return NULL;
}

/*
 * One tick of a group member: opens it when its next open is due, else polls it unless its
 * backoff lets this tick pass. edge: an edge sample, taken only by a member that takes them and
 * is not failing (its backoff holds), as worker_main does.
 */
static void member_tick(struct worker *m, struct wt_batch *batch, bool edge)
{
    if (!m->state) {
        if (edge || wt_now_mono_ns() < m->retry_at)
            return;
        m->state = try_open(m, m->retry_delay, &m->last_rc);
        if (!m->state) {
            m->retry_at = wt_now_mono_ns() + m->retry_delay;
            m->retry_delay = next_open_delay(m->retry_delay);
            return;
        }
    }
    if (edge) {
        if (m->edges && m->fails == 0)
            poll_publish(m, m->state, batch, &m->rl, &m->fails, &m->failed_ticks);
        return;
    }
    if (m->skip > 0) {
        m->skip--;
        return;
    }
    poll_publish(m, m->state, batch, &m->rl, &m->fails, &m->failed_ticks);
    update_interval(m, m->fails, &m->interval);
    m->skip = m->interval / m->base_ns - 1;
}

/* A file-source group's thread: every member at each tick of their common interval. */
static void *group_main(void *arg)
{
    struct group *g = arg;
    struct worker *w = &g->w;
    struct wt_loop *l = w->loop;
    struct wt_batch batch = {0};
    pthread_setname_np(pthread_self(), "wt-files");
    int64_t deadline = wt_now_mono_ns(), due = 0;
    bool edge = false;
    for (;;) {
        while (l->hang_file && access(l->hang_file, F_OK) == 0)
            if (wait_until(l, wt_now_mono_ns() + WT_NS_PER_S / 20))
                goto out;
        for (size_t i = 0; i < g->n; i++)
            member_tick(g->m[i], &batch, edge);
        if (!edge) {
            deadline = next_tick(w, w->base_ns, &due, deadline);
            /* None open (all absent): no tick until the first is due to be looked for again. */
            int64_t first = INT64_MAX;
            for (size_t i = 0; i < g->n && first > 0; i++)
                first = g->m[i]->state ? 0 : first < g->m[i]->retry_at ? first : g->m[i]->retry_at;
            if (first != INT64_MAX && first > deadline)
                deadline = first;
        }
        enum wake why = wait_tick(l, w, deadline, true);
        if (why == WAKE_STOP)
            break;
        edge = why == WAKE_EDGE;
    }
out:
    for (size_t i = 0; i < g->n; i++) {
        g->m[i]->ops->close(g->m[i]->state);
        g->m[i]->state = NULL;
    }
    wt_batch_free(&batch);
    return NULL;
}

/* Whether w may join a file-source group: a single-source cheap file reader without sub-polls. */
static bool groupable(const struct worker *w)
{
    return w->ops->file_source && w->target < 0 && !w->subs && !w->grouped;
}

/*
 * Puts the file sources that share an interval (two or more) in one group each: one thread
 * polls them all at each tick. A file source alone at its interval keeps a thread of its own.
 * Returns 0 or -ENOMEM.
 */
static int form_groups(struct wt_loop *l)
{
    l->groups = calloc(l->nworkers ? l->nworkers : 1, sizeof *l->groups);
    if (!l->groups)
        return -ENOMEM;
    for (size_t i = 0; i < l->nworkers; i++) {
        struct worker *w = &l->workers[i];
        size_t n = 0;
        for (size_t k = i; groupable(w) && k < l->nworkers; k++)
            n += groupable(&l->workers[k]) && l->workers[k].base_ns == w->base_ns;
        if (n < 2)
            continue;
        struct group *g = &l->groups[l->ngroups];
        g->m = calloc(n, sizeof *g->m);
        if (!g->m)
            return -ENOMEM;
        l->ngroups++;
        g->w.loop = l;
        g->w.base_ns = w->base_ns;
        g->w.slot = -1;
        snprintf(g->w.name, sizeof g->w.name, "files");
        for (size_t k = i; k < l->nworkers; k++) {
            struct worker *m = &l->workers[k];
            if (!groupable(m) || m->base_ns != w->base_ns)
                continue;
            m->grouped = true;
            m->interval = m->base_ns;
            m->retry_delay = l->retry_ns ? l->retry_ns : 30 * WT_NS_PER_S;
            m->rl.interval_ns = 60 * WT_NS_PER_S;
            g->w.edges |= m->edges;
            g->m[g->n++] = m;
        }
    }
    return 0;
}

/* Registers one worker and its hub slot; its thread starts in spawn_workers. Returns 0 or a
 * negative errno with err set. */
static int add_worker(struct wt_loop *l, const struct wt_collector_ops *ops, long target,
                      const char *name, int64_t interval_ns, struct wt_err *err)
{
    struct worker *w = &l->workers[l->nworkers];
    w->loop = l;
    w->ops = ops;
    w->target = target;
    w->edges = ops->edge_samples && target < 0;
    w->subs = w->edges && ops->sub_poll && ops->sub_interval;
    snprintf(w->name, sizeof w->name, "%s", name);
    w->base_ns = interval_ns;
    w->slot = wt_hub_add_collector(l->hub, w->name, w->base_ns);
    if (w->slot < 0)
        return wt_err_set(err, "too many collectors (at %s)", name);
    l->nworkers++;
    return 0;
}

/* Starts the registered workers' threads. Returns 0 or a negative errno with err set. */
static int spawn_workers(struct wt_loop *l, struct wt_err *err)
{
    for (size_t i = 0; i < l->nworkers; i++) {
        struct worker *w = &l->workers[i];
        if (w->grouped)
            continue;
        int rc = pthread_create(&w->thread, NULL, worker_main, w);
        if (rc != 0) {
            wt_err_set(err, "cannot start a thread for %s: %s", w->name, strerror(rc));
            return -rc;
        }
        w->started = true;
    }
    for (size_t i = 0; i < l->ngroups; i++) {
        struct group *g = &l->groups[i];
        int rc = pthread_create(&g->thread, NULL, group_main, g);
        if (rc != 0) {
            wt_err_set(err, "cannot start a thread for the file sources: %s", strerror(rc));
            return -rc;
        }
        g->started = true;
    }
    return 0;
}

/* Retires the slots in before that l does not use. */
static void retire_dropped(struct wt_hub *hub, const int *before, size_t nbefore,
                           const struct wt_loop *l)
{
    for (size_t i = 0; i < nbefore; i++) {
        bool kept = false;
        for (size_t k = 0; k < l->nworkers && !kept; k++)
            kept = l->workers[k].slot == before[i];
        if (!kept)
            wt_hub_retire(hub, before[i]);
    }
}

int wt_loop_start(const struct wt_config *cfg, const struct wt_collector_ops *const *ops,
                  struct wt_hub *hub, int64_t retry_ns, struct wt_loop **out, struct wt_err *err)
{
    return wt_loop_restart(cfg, ops, hub, retry_ns, NULL, 0, out, err);
}

int wt_loop_restart(const struct wt_config *cfg, const struct wt_collector_ops *const *ops,
                    struct wt_hub *hub, int64_t retry_ns, const int *before, size_t nbefore,
                    struct wt_loop **out, struct wt_err *err)
{
    struct wt_loop *l = calloc(1, sizeof *l);
    size_t n = 0;
    if (!l)
        return -ENOMEM;
    while (ops[n])
        n++;
    l->workers = calloc(n * WT_MAX_TARGETS + 1, sizeof *l->workers);
    if (!l->workers) {
        free(l);
        return -ENOMEM;
    }
    l->cfg = cfg;
    l->hub = hub;
    l->retry_ns = retry_ns;
    l->hang_file = getenv("WATTAGE_TEST_HANG_FILE");
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);

    for (size_t i = 0; i < n; i++) {
        const struct wt_collector_config *cc = ops[i]->config(cfg);
        if (!cc->enabled) {
            wt_info(ops[i]->name, "disabled in the configuration");
            continue;
        }
        int64_t interval = wt_config_interval(cfg, cc);
        int rc = 0;
        if (!ops[i]->targets) {
            rc = add_worker(l, ops[i], -1, ops[i]->name, interval, err);
        } else {
            struct wt_target t[WT_MAX_TARGETS];
            size_t nt = ops[i]->targets(cfg, t, WT_MAX_TARGETS);
            for (size_t k = 0; k < nt && k < WT_MAX_TARGETS && rc == 0; k++) {
                char name[32];
                snprintf(name, sizeof name, "%.7s:%.23s", ops[i]->name, t[k].name);
                rc = add_worker(l, ops[i], (long)k, name,
                                t[k].interval_ns > 0 ? t[k].interval_ns : interval, err);
            }
        }
        if (rc != 0) {
            wt_loop_stop(l);
            return rc;
        }
    }
    /* Targets no longer configured leave the hub before a new one publishes: no scrape sees
     * the new target beside the dropped one. */
    retire_dropped(hub, before, nbefore, l);
    int rc = form_groups(l);
    if (rc < 0)
        wt_err_set(err, "out of memory");
    else
        rc = spawn_workers(l, err);
    if (rc != 0) {
        wt_loop_stop(l);
        return rc;
    }
    wt_hub_set_edge(hub, request_edge, l);
    *out = l;
    return 0;
}

size_t wt_loop_slots(const struct wt_loop *l, int *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; l && i < l->nworkers; i++)
        if (k < n)
            out[k++] = l->workers[i].slot;
    return l ? l->nworkers : 0;
}

void wt_loop_stop(struct wt_loop *l)
{
    if (!l)
        return;
    wt_hub_set_edge(l->hub, NULL, NULL); /* no edge request reaches l from now on */
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    for (size_t i = 0; i < l->nworkers; i++) {
        if (l->workers[i].started)
            pthread_join(l->workers[i].thread, NULL);
    }
    for (size_t i = 0; i < l->ngroups; i++) {
        if (l->groups[i].started)
            pthread_join(l->groups[i].thread, NULL);
        free(l->groups[i].m);
    }
    free(l->groups);
    for (size_t i = 0; i < l->nworkers; i++)
        wt_batch_free(&l->workers[i].held);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l->workers);
    free(l);
}
