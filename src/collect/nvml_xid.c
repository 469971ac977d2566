/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's XID events: what the common XIDs mean, the counts per GPU, and the
 * event thread that waits on one event set for every GPU (see struct xid_ctx in nvml_base.h).
 */
#include "collect/nvml_xid.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- XID events ---- */

/* What the common XIDs mean, from NVIDIA's XID catalog (Ampere and newer). */
static const struct {
    unsigned int xid;
    const char *meaning;
} xid_meanings[] = {
    {8, "GPU stopped processing"},
    {13, "Graphics Engine Exception"},
    {31, "GPU memory page fault"},
    {32, "Invalid or corrupted push buffer stream"},
    {43, "GPU stopped processing"},
    {45, "Preemptive cleanup, due to previous errors"},
    {48, "Double Bit ECC Error"},
    {61, "Internal micro-controller breakpoint/warning"},
    {62, "Internal micro-controller halt"},
    {63, "ECC page retirement or row remapping recording event"},
    {64, "ECC page retirement or row remapper recording failure"},
    {68, "NVDEC0 Exception"},
    {69, "Graphics Engine class error"},
    {74, "NVLINK Error"},
    {79, "GPU has fallen off the bus"},
    {92, "High single-bit ECC error rate"},
    {94, "Contained ECC error"},
    {95, "Uncontained ECC error"},
    {119, "GSP RPC Timeout"},
    {120, "GSP Error"},
};

const char *wt_nvml_xid_meaning(unsigned int xid)
{
    for (size_t i = 0; i < sizeof xid_meanings / sizeof xid_meanings[0]; i++)
        if (xid_meanings[i].xid == xid)
            return xid_meanings[i].meaning;
    return NULL;
}

/*
 * Counts one XID of GPU slot x. The first of each code on a GPU is logged with its meaning; the
 * same code again at most once a minute with how many came meanwhile, so that a storm of them
 * (a broken board can raise thousands a second) is a few lines, not a flood.
 */
static void xid_record(struct xid_ctx *s, struct xid_gpu *x, unsigned int xid)
{
    int64_t now = wt_now_mono_ns();
    bool first = false, say = false;
    uint64_t total = 0, since = 0;
    pthread_mutex_lock(&s->mu);
    struct xid_count *c = NULL;
    for (unsigned int i = 0; i < x->n && !c; i++)
        if (x->c[i].xid == xid)
            c = &x->c[i];
    if (!c && x->n < MAX_XIDS) {
        c = &x->c[x->n++];
        c->xid = xid;
        c->rl.interval_ns = LOG_EVERY_NS;
    }
    if (!c) {
        /* More distinct codes than slots: the rest share "other" (code 0). */
        for (unsigned int i = 0; i < x->n && !c; i++)
            if (x->c[i].xid == 0)
                c = &x->c[i];
        if (!c) {
            c = &x->c[x->n++];
            c->xid = 0;
            c->rl.interval_ns = LOG_EVERY_NS;
        }
    }
    c->n++;
    first = c->n == 1;
    if (wt_ratelimit_ok(&c->rl, now, NULL)) {
        say = true;
        since = c->n - c->logged;
        total = c->n;
        c->logged = c->n;
    }
    pthread_mutex_unlock(&s->mu);
    if (!say)
        return;
    const char *m = wt_nvml_xid_meaning(xid);
    if (first)
        wt_warn(MOD, "XID %u gpu=%u uuid=%s: %s", xid, x->index, x->uuid,
                m ? m : "see NVIDIA's XID catalog");
    else
        wt_warn(MOD, "XID %u again gpu=%u uuid=%s: %llu since the last line, %llu in all (%s)", xid,
                x->index, x->uuid, (unsigned long long)since, (unsigned long long)total,
                m ? m : "see NVIDIA's XID catalog");
}

/* Lets go of one reference; the last frees the set, ends the session, closes the library. */
void wt_nvml_xid_ctx_unref(struct xid_ctx *x)
{
    if (!x || atomic_fetch_sub(&x->refs, 1) != 1)
        return;
    if (x->set && x->set_free)
        x->set_free(x->set);
    if (x->session)
        wt_nvml_session_release(x->init, x->shutdown);
    if (x->dl)
        dlclose(x->dl);
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

/*
 * The signal that ends a wait early: a real-time signal with a handler that does nothing,
 * installed without SA_RESTART, sent only to the event thread (pthread_kill). It is not used
 * when something else already handles that signal.
 */
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static int wake_sig; /* 0: no signal, close waits XID_JOIN_NS and then lets the thread go */

static void wake_handler(int sig)
{
    (void)sig;
}

static void wake_install(void)
{
    struct sigaction sa, old;
    int sig = SIGRTMIN + 5;
    if (sig > SIGRTMAX || sigaction(sig, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO))
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = wake_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocked wait returns with EINTR */
    if (sigaction(sig, &sa, NULL) == 0)
        wake_sig = sig;
}

/* The event thread: waits on the set (never polls the GPUs), counts what comes. */
static void *xid_main(void *arg)
{
    struct xid_ctx *s = arg;
    struct wt_ratelimit rl = {.interval_ns = LOG_EVERY_NS};
    if (wake_sig) {
        /* The daemon's threads block its stop signals; this one takes its wake-up. */
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, wake_sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    }
    while (!atomic_load(&s->stop)) {
        nvmlEventData_t ev;
        memset(&ev, 0, sizeof ev);
        nvmlReturn_t r = s->wait(s->set, &ev, XID_WAIT_MS);
        if (atomic_load(&s->stop))
            break;
        if (r == NVML_ERROR_TIMEOUT)
            continue;
        if (r != NVML_SUCCESS) {
            uint64_t suppressed = 0;
            const char *m = s->error_string ? s->error_string(r) : NULL;
            if (wt_ratelimit_ok(&rl, wt_now_mono_ns(), &suppressed))
                wt_warn(MOD, "nvmlEventSetWait failed error=\"%s\" (%d) suppressed=%llu",
                        m ? m : "unknown error", (int)r, (unsigned long long)suppressed);
            /* A lost GPU answers at once: do not spin on it (a stop cuts the pause short). */
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (!(ev.eventType & nvmlEventTypeXidCriticalError))
            continue;
        for (unsigned int i = 0; i < s->n; i++) {
            if (s->g[i].registered && s->g[i].dev == ev.device) {
                xid_record(s, &s->g[i], (unsigned int)ev.eventData);
                break;
            }
        }
    }
    pthread_mutex_lock(&s->mu);
    s->exited = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    wt_nvml_xid_ctx_unref(s);
    return NULL;
}

static struct xid_ctx *xid_ctx_new(struct nvml_state *s)
{
    struct xid_ctx *x = calloc(1, sizeof *x + s->n * sizeof x->g[0]);
    if (!x)
        return NULL;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&x->mu, NULL);
    atomic_store(&x->refs, 1);
    x->n = s->n;
    x->init = s->fn.init;
    x->shutdown = s->fn.shutdown;
    x->error_string = s->fn.error_string;
    x->wait = s->fn.event_wait;
    x->set_free = s->fn.event_set_free;
    return x;
}

/*
 * Registers every GPU that supports XID events in one event set and starts the thread that
 * waits on it. A library or GPU without events has no XID series (said once); nothing fails.
 */
void wt_nvml_xid_start(struct nvml_state *s)
{
    if (!s->fn.event_set_create || !s->fn.register_events || !s->fn.event_wait) {
        wt_info(MOD, "%s has no event calls: XID events are not counted", s->library);
        return;
    }
    struct xid_ctx *x = s->xid = xid_ctx_new(s);
    if (!x)
        return;
    nvmlReturn_t r = s->fn.event_set_create(&x->set);
    if (r != NVML_SUCCESS) {
        wt_warn(MOD, "nvmlEventSetCreate failed error=\"%s\" (%d): XID events are not counted",
                wt_nvml_errstr(s, r), (int)r);
        x->set = NULL;
        return;
    }
    unsigned int nreg = 0;
    bool warned = false;
    for (unsigned int i = 0; i < s->n; i++) {
        struct gpu *g = &s->gpus[i];
        struct xid_gpu *xg = &x->g[i];
        xg->index = i;
        if (!g->known)
            continue;
        unsigned long long types = nvmlEventTypeXidCriticalError;
        if (s->fn.supported_events && s->fn.supported_events(g->dev, &types) != NVML_SUCCESS)
            types = nvmlEventTypeXidCriticalError; /* let the registration say */
        r = (types & nvmlEventTypeXidCriticalError)
                ? s->fn.register_events(g->dev, nvmlEventTypeXidCriticalError, x->set)
                : NVML_ERROR_NOT_SUPPORTED;
        if (r != NVML_SUCCESS) {
            struct tick tk = {0};
            /* NOT_SUPPORTED is said once (check); anything else once too, as a warning (the
             * same answer on every GPU is one cause). */
            if (!wt_nvml_check(s, g, &tk, F_XID, r, "nvmlDeviceRegisterEvents") &&
                r != NVML_ERROR_NOT_SUPPORTED && !warned) {
                wt_warn(MOD, "XID events not registered gpu=%u uuid=%s error=\"%s\" (%d)%s", i,
                        g->uuid, wt_nvml_errstr(s, r), (int)r,
                        r == NVML_ERROR_NO_PERMISSION ? " (run as root to count XIDs)" : "");
                warned = true;
            }
            continue;
        }
        xg->dev = g->dev;
        wt_nvml_copy_str(xg->uuid, sizeof xg->uuid, g->uuid, sizeof g->uuid);
        xg->registered = true;
        nreg++;
    }
    if (!nreg)
        return;
    /* The thread's own references: the library stays mapped and NVML up while it waits. */
    x->dl = dlopen(s->library, RTLD_NOW | RTLD_LOCAL);
    x->session = x->dl && wt_nvml_session_acquire(s->fn.init) == NVML_SUCCESS;
    pthread_once(&wake_once, wake_install);
    atomic_store(&x->stop, false);
    atomic_store(&x->refs, 2);
    if (!x->session || pthread_create(&s->xid_thread, NULL, xid_main, x) != 0) {
        atomic_store(&x->refs, 1);
        wt_warn(MOD, "cannot start the XID event thread: XID events are not counted");
        for (unsigned int i = 0; i < s->n; i++)
            x->g[i].registered = false;
        return;
    }
    s->xid_running = true;
}

/*
 * Stops the event thread; before the collector's nvmlShutdown. The stop flag is set and the
 * thread signalled (again every 20 ms, in case the signal came just before it entered the
 * wait) for up to XID_JOIN_NS; a thread back by then is joined. One still blocked (a library
 * whose wait does not return on a signal) is let go: it ends when its wait does, at most
 * XID_WAIT_MS later, and then frees the set and releases its own session.
 */
void wt_nvml_xid_stop(struct nvml_state *s)
{
    struct xid_ctx *x = s->xid;
    if (s->xid_running) {
        int64_t deadline = wt_now_mono_ns() + XID_JOIN_NS;
        atomic_store(&x->stop, true);
        pthread_mutex_lock(&x->mu);
        while (!x->exited) {
            int64_t now = wt_now_mono_ns();
            if (now >= deadline)
                break;
            if (wake_sig)
                pthread_kill(s->xid_thread, wake_sig);
            int64_t until = now + 20 * WT_NS_PER_MS < deadline ? now + 20 * WT_NS_PER_MS : deadline;
            struct timespec ts = {(time_t)(until / WT_NS_PER_S), (long)(until % WT_NS_PER_S)};
            pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        }
        bool exited = x->exited;
        pthread_mutex_unlock(&x->mu);
        if (exited) {
            pthread_join(s->xid_thread, NULL);
        } else {
            pthread_detach(s->xid_thread);
            wt_info(MOD,
                    "the XID event thread is still in nvmlEventSetWait: it ends by itself within "
                    "%d s (then its event set is freed and its NVML session ends)",
                    XID_WAIT_MS / 1000);
        }
        s->xid_running = false;
    }
    wt_nvml_xid_ctx_unref(x);
    s->xid = NULL;
}
