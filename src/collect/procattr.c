/* SPDX-License-Identifier: MIT */
/* CPU attribution: RAPL package energy split by process CPU time; see procattr.h. */
#include "collect/procattr.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/attrib.h"
#include "collect/collector.h"
#include "collect/procfs.h"
#include "core/clock.h"
#include "core/log.h"

#define MOD "cpu_attrib"
#define SLOT_NAME "cpu_attrib"
#define SLOT_INTERVAL_NS (300 * WT_NS_PER_S)

/* One process's CPU time at a scan. */
struct pcpu {
    unsigned int pid;
    uint64_t start;
    uint64_t ticks; /* utime + stime, USER_HZ */
};

struct wt_cpu_attrib {
    pthread_mutex_t mu;
    struct wt_hub *hub;
    int slot;
    struct wt_attrib *ledger;
    bool started;        /* prev_* hold a baseline */
    uint64_t prev_uj;    /* packages' energy, µJ */
    size_t prev_domains; /* how many package zones it summed */
    uint64_t prev_total; /* all CPUs' ticks (/proc/stat) */
    struct pcpu *prev;   /* sorted by pid, start */
    size_t nprev, capprev;
    struct pcpu *cur;
    size_t ncur, capcur;
    struct wt_cpu_times *cpus;
    size_t cap_cpus;
    struct wt_ratelimit rl;
    struct wt_batch out;
    bool present;
};

static int by_key(const void *a, const void *b)
{
    const struct pcpu *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void one_pid(void *ctx, int pid)
{
    struct wt_cpu_attrib *c = ctx;
    struct wt_pid_stat st;
    /* Gone between the listing and the read, or unreadable: not counted this interval. */
    if (wt_procfs_pid_stat(pid, &st) != 0)
        return;
    if (c->ncur == c->capcur) {
        size_t cap = c->capcur ? c->capcur * 2 : 256;
        struct pcpu *n = realloc(c->cur, cap * sizeof *n);
        if (!n)
            return;
        c->cur = n;
        c->capcur = cap;
    }
    c->cur[c->ncur++] = (struct pcpu){(unsigned int)pid, st.start, st.utime + st.stime};
}

/* The aggregate ticks of /proc/stat; false when it cannot be read. */
static bool total_ticks(struct wt_cpu_attrib *c, uint64_t *total, int64_t t_ns)
{
    char path[PATH_MAX];
    size_t n = 0;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/proc/stat", wt_procfs_root());
    int rc = wt_procfs_read_stat(path, &c->cpus, &c->cap_cpus, &n, &err);
    if (rc == 0) {
        for (size_t i = 0; i < n; i++) {
            if (c->cpus[i].cpu == -1) {
                *total = c->cpus[i].total;
                return true;
            }
        }
        wt_err_set(&err, "%s: no aggregate cpu line", path);
    }
    uint64_t suppressed = 0;
    if (wt_ratelimit_ok(&c->rl, t_ns, &suppressed))
        wt_warn(MOD, "no CPU attribution this interval: %s", err.msg[0] ? err.msg : path);
    return false;
}

int wt_cpu_attrib_feed(struct wt_cpu_attrib *c, const char *collector, const struct wt_batch *b,
                       struct wt_batch *out)
{
    if (strcmp(collector, "rapl") != 0)
        return 0;
    double sum_j = 0;
    size_t domains = 0;
    int64_t t_ns = 0;
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        char dom[32];
        if (r->metric != WT_M_CPU_ENERGY_J ||
            wt_labels_get(r->labels, "domain", dom, sizeof dom) != 0 || strcmp(dom, "package"))
            continue;
        sum_j += r->value;
        domains++;
        if (r->t_ns > t_ns)
            t_ns = r->t_ns;
    }
    if (domains == 0)
        return -ENODATA;
    uint64_t uj = (uint64_t)(sum_j * 1e6); /* the unwrapped counters: monotone */
    uint64_t total = 0;
    int rc = 0;
    pthread_mutex_lock(&c->mu);
    if (!total_ticks(c, &total, t_ns))
        goto out;
    c->ncur = 0;
    if (wt_procfs_each_pid(one_pid, c) != 0)
        goto out;
    qsort(c->cur, c->ncur, sizeof *c->cur, by_key);
    bool split =
        c->started && domains == c->prev_domains && uj >= c->prev_uj && total >= c->prev_total;
    if (split) {
        uint64_t energy = uj - c->prev_uj, all = total - c->prev_total, used = 0;
        struct wt_attrib_share *sh = calloc(c->ncur ? c->ncur : 1, sizeof *sh);
        size_t n = 0;
        if (!sh) {
            rc = -ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < c->ncur; i++) {
            const struct pcpu *p = &c->cur[i];
            struct pcpu *q = bsearch(p, c->prev, c->nprev, sizeof *p, by_key);
            /* A process new since the last scan used all of its time in this interval. */
            uint64_t d = q ? (p->ticks >= q->ticks ? p->ticks - q->ticks : 0) : p->ticks;
            if (d == 0)
                continue;
            if (d > all)
                d = all;
            sh[n++] = (struct wt_attrib_share){p->pid, p->start, d, -1};
            used += d;
        }
        double busy = all ? (double)used / (double)all : 0;
        rc = wt_attrib_account(c->ledger, 0, "", t_ns, energy, busy, WT_ATTRIB_UTILIZATION, sh, n);
        free(sh);
        if (rc == 0)
            rc = wt_attrib_emit(c->ledger, t_ns, out);
    }
    if (rc == 0) {
        /* The scan becomes the baseline: swap the arrays. */
        struct pcpu *t = c->prev;
        size_t cap_prev = c->capprev;
        c->prev = c->cur;
        c->nprev = c->ncur;
        c->capprev = c->capcur;
        c->cur = t;
        c->capcur = cap_prev;
        c->ncur = 0;
        c->prev_uj = uj;
        c->prev_total = total;
        c->prev_domains = domains;
        c->started = true;
        rc = split ? 1 : 0;
    }
out:
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static void sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    struct wt_cpu_attrib *c = ctx;
    if (strcmp(collector, SLOT_NAME) == 0)
        return;
    wt_batch_clear(&c->out);
    int64_t m0 = wt_now_mono_ns();
    int rc = wt_cpu_attrib_feed(c, collector, b, &c->out);
    if (rc == -ENODATA && c->present) {
        /* RAPL down or gone: no slot to look stale in the health check */
        wt_hub_set_state(c->hub, c->slot, false, SLOT_INTERVAL_NS);
        c->present = false;
    }
    if (rc == 0 || rc == -ENODATA)
        return;
    int64_t m1 = wt_now_mono_ns();
    /* Only the rapl thread calls this with rapl's batches: the out batch is its own. */
    if (!c->present) {
        /* Derived from RAPL, which may back off up to 5 min: never stale before it. */
        wt_hub_set_state(c->hub, c->slot, true, SLOT_INTERVAL_NS);
        c->present = true;
    }
    wt_hub_publish(c->hub, c->slot, &c->out, rc > 0, (double)(m1 - m0) / 1e9, m1);
}

int wt_cpu_attrib_open(struct wt_hub *hub, int64_t grace_ns, struct wt_cpu_attrib **out,
                       struct wt_err *err)
{
    *out = NULL;
    struct wt_cpu_attrib *c = calloc(1, sizeof *c);
    if (!c)
        return wt_err_set(err, "cpu attribution: out of memory"), -ENOMEM;
    pthread_mutex_init(&c->mu, NULL);
    c->rl.interval_ns = 60 * WT_NS_PER_S;
    c->hub = hub;
    int rc = wt_attrib_open(WT_M_PROC_CPU_ENERGY_J, -1, 1e-6, grace_ns, &c->ledger);
    if (rc) {
        wt_err_set(err, "cpu attribution: out of memory");
        goto fail;
    }
    if (hub) {
        c->slot = wt_hub_add_collector(hub, SLOT_NAME, SLOT_INTERVAL_NS);
        if (c->slot < 0 || wt_hub_add_tick_sink(hub, sink, c) != 0) {
            wt_err_set(err, "cpu attribution: no hub slot or sink left");
            rc = -ENOSPC;
            goto fail;
        }
    }
    wt_attrib_publish(1, c->ledger);
    *out = c;
    return 0;
fail:
    wt_cpu_attrib_close(c);
    return rc;
}

void wt_cpu_attrib_close(struct wt_cpu_attrib *c)
{
    if (!c)
        return;
    /* Publishers that outlive the poll loop (the audit threads) no longer reach c. */
    wt_hub_remove_sink(c->hub, sink, c);
    wt_attrib_close(c->ledger);
    free(c->prev);
    free(c->cur);
    free(c->cpus);
    wt_batch_free(&c->out);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
