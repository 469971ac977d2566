/* SPDX-License-Identifier: MIT */
/* CPU attribution: RAPL package energy split by process CPU time; see procattr.h. */
#include "collect/procattr.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "collect/attrib.h"
#include "collect/collector.h"
#include "collect/procfs.h"
#include "core/clock.h"
#include "core/log.h"

#define MOD "cpu_attrib"
#define SLOT_NAME "cpu_attrib"
#define SLOT_INTERVAL_NS (300 * WT_NS_PER_S)

/*
 * Kept /proc/PID/stat descriptors: below this many descriptors of the process when its soft
 * limit leaves no room above FD_FLOOR, else as many as fit above FD_FLOOR less a margin, at most
 * KEPT_MAX. Above FD_FLOOR so that select(2) users (net-snmp's session) keep the low numbers.
 */
#define FD_FLOOR 1024
#define KEPT_LOW 256
#define KEPT_MAX 32768
#define KEPT_MARGIN 64
#define STAT_MAX 4096 /* a stat line is ~300 bytes; the command is at most 64 */

/* One process's CPU time at a scan, and its stat file kept open from one scan to the next. */
struct pcpu {
    unsigned int pid;
    int fd; /* its <root>/proc/PID/stat read with pread, or -1 */
    uint64_t start;
    uint64_t ticks; /* utime + stime, USER_HZ */
    dev_t dev;      /* off procfs: the file fd reads, to see it replaced */
    ino_t ino;
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
    size_t kept, kept_max; /* descriptors kept in prev/cur, and how many may be */
    int kept_floor;        /* lowest number a kept one gets (0: any) */
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

static int by_pid(const void *a, const void *b)
{
    const struct pcpu *x = a, *y = b;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void drop_fd(struct wt_cpu_attrib *c, struct pcpu *p)
{
    if (p->fd < 0)
        return;
    close(p->fd);
    p->fd = -1;
    c->kept--;
}

/* How many stat descriptors may stay open, from the soft limit on descriptors. */
static void kept_budget(struct wt_cpu_attrib *c)
{
    struct rlimit rl;
    c->kept_max = KEPT_LOW;
    c->kept_floor = 0;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur < FD_FLOOR + KEPT_LOW + KEPT_MARGIN)
        return;
    c->kept_floor = FD_FLOOR;
    c->kept_max = (size_t)(rl.rlim_cur - FD_FLOOR - KEPT_MARGIN);
    if (c->kept_max > KEPT_MAX)
        c->kept_max = KEPT_MAX;
}

/* Opens PID/stat under the /proc directory dir into p->fd; *once: not to be kept. */
static int open_stat(struct wt_cpu_attrib *c, int dir, bool procfs, struct pcpu *p, bool *once)
{
    char name[32];
    snprintf(name, sizeof name, "%u/stat", p->pid);
    int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    *once = c->kept >= c->kept_max;
    if (!*once && c->kept_floor > 0) {
        int high = fcntl(fd, F_DUPFD_CLOEXEC, c->kept_floor);
        if (high >= 0) {
            close(fd);
            fd = high;
        } else {
            *once = true; /* no room above the floor: read once below it */
        }
    }
    struct stat st;
    if (!procfs && fstat(fd, &st) == 0)
        p->dev = st.st_dev, p->ino = st.st_ino;
    p->fd = fd;
    c->kept++;
    return 0;
}

/*
 * Reads p's stat through its kept descriptor (reopened by the path when its process is gone:
 * the pid may be another process's now) or a new one. 0, or -errno when the process is gone or
 * its file unreadable; p->fd is then closed.
 */
static int read_stat(struct wt_cpu_attrib *c, int dir, bool procfs, struct pcpu *p)
{
    char buf[STAT_MAX];
    for (int attempt = 0; attempt < 2; attempt++) {
        bool fresh = p->fd < 0, once = false;
        if (!fresh && !procfs) {
            /* a captured or fake tree: a file replaced leaves the old descriptor no error */
            char name[32];
            struct stat st;
            snprintf(name, sizeof name, "%u/stat", p->pid);
            if (fstatat(dir, name, &st, 0) != 0 || st.st_dev != p->dev || st.st_ino != p->ino) {
                drop_fd(c, p);
                fresh = true;
            }
        }
        if (fresh) {
            int rc = open_stat(c, dir, procfs, p, &once);
            if (rc)
                return rc;
        }
        ssize_t n;
        do
            n = pread(p->fd, buf, sizeof buf - 1, 0);
        while (n < 0 && errno == EINTR);
        int e = n < 0 ? errno : 0;
        if (n >= 0) {
            buf[n] = '\0';
            struct wt_pid_stat ps;
            if (wt_procfs_parse_pid_stat(buf, &ps) != 0) {
                drop_fd(c, p);
                return -EINVAL;
            }
            p->start = ps.start;
            p->ticks = ps.utime + ps.stime;
            if (once)
                drop_fd(c, p);
            return 0;
        }
        /* ESRCH: the process of a kept descriptor ended; its pid may be in use again */
        drop_fd(c, p);
        if (fresh)
            return -e;
    }
    return -ESRCH;
}

/*
 * Lists <root>/proc into c->cur (sorted by pid), hands each pid still there its kept
 * descriptor from the last scan, closes the others', and reads every stat file. Processes gone
 * between the listing and the read are left out. 0, or -errno when /proc cannot be listed.
 */
static int scan(struct wt_cpu_attrib *c)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc", wt_procfs_root());
    DIR *d = opendir(path);
    if (!d)
        return -errno;
    struct statfs sf;
    int dir = dirfd(d);
    bool procfs = fstatfs(dir, &sf) == 0 && (unsigned long)sf.f_type == PROC_SUPER_MAGIC;
    struct dirent *e;
    c->ncur = 0;
    while ((e = readdir(d))) {
        char *end;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        unsigned long pid = strtoul(e->d_name, &end, 10);
        if (*end || pid > INT_MAX)
            continue;
        if (c->ncur == c->capcur) {
            size_t cap = c->capcur ? c->capcur * 2 : 256;
            struct pcpu *n = realloc(c->cur, cap * sizeof *n);
            if (!n)
                break; /* the rest are not counted this interval */
            c->cur = n;
            c->capcur = cap;
        }
        c->cur[c->ncur++] = (struct pcpu){.pid = (unsigned int)pid, .fd = -1};
    }
    qsort(c->cur, c->ncur, sizeof *c->cur, by_pid); /* /proc lists in order: cheap */
    /* prev is sorted by pid too: one walk over both */
    size_t j = 0;
    for (size_t i = 0; i < c->ncur; i++) {
        struct pcpu *p = &c->cur[i];
        for (; j < c->nprev && c->prev[j].pid < p->pid; j++)
            drop_fd(c, &c->prev[j]);
        if (j < c->nprev && c->prev[j].pid == p->pid) {
            p->fd = c->prev[j].fd, p->dev = c->prev[j].dev, p->ino = c->prev[j].ino;
            c->prev[j++].fd = -1;
        }
    }
    for (; j < c->nprev; j++)
        drop_fd(c, &c->prev[j]);
    size_t k = 0;
    for (size_t i = 0; i < c->ncur; i++)
        if (read_stat(c, dir, procfs, &c->cur[i]) == 0)
            c->cur[k++] = c->cur[i];
    c->ncur = k;
    closedir(d);
    return 0;
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
    if (scan(c) != 0)
        goto out;
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
    if (rc != 0) /* the scan is not the baseline: its descriptors go */
        for (size_t i = 0; i < c->ncur; i++)
            drop_fd(c, &c->cur[i]);
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
    kept_budget(c);
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
    for (size_t i = 0; i < c->nprev; i++)
        drop_fd(c, &c->prev[i]);
    for (size_t i = 0; i < c->ncur; i++)
        drop_fd(c, &c->cur[i]);
    free(c->prev);
    free(c->cur);
    free(c->cpus);
    wt_batch_free(&c->out);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
