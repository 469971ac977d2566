/* SPDX-License-Identifier: MIT */
/*
 * The attribution ledger (see attrib.h): exact integer splits of each device's interval
 * energy, per-process counters keyed by pid and start time, owners read once from the cgroup,
 * and folding of finished processes into their owners after a grace period.
 */
#include "collect/attrib.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/procfs.h"
#include "core/clock.h"
#include "core/log.h"

#define MOD "attrib"
#define CONTAINER_SHORT 12 /* the container id in labels: its first 12 characters, as docker ps */
#define N_KINDS 5          /* none, slurm, kubernetes, systemd, unknown (cgroup unreadable) */

const char *wt_attrib_method_name(enum wt_attrib_method m)
{
    switch (m) {
    case WT_ATTRIB_UTILIZATION:
        return "utilization";
    case WT_ATTRIB_MEMORY:
        return "memory";
    case WT_ATTRIB_EQUAL:
        break;
    }
    return "equal";
}

/* ---- the split ---- */

struct rem {
    size_t i;
    uint64_t r; /* remainder of busy * w_i / W, in units of 1/W */
};

static int by_remainder(const void *a, const void *b)
{
    const struct rem *x = a, *y = b;
    if (x->r != y->r)
        return x->r < y->r ? 1 : -1;
    return x->i < y->i ? -1 : x->i > y->i; /* stable: the earlier share first */
}

void wt_attrib_starts_fill(struct wt_attrib_starts *c, struct wt_attrib_share *sh, size_t n)
{
    bool refresh = ++c->age >= WT_ATTRIB_STARTS_REFRESH;
    if (refresh)
        c->age = 0;
    for (size_t i = 0; i < n; i++) {
        bool cached = false;
        for (unsigned int k = 0; !refresh && k < c->n && !cached; k++) {
            /* the lists keep their order from one second to the next: look at i first */
            unsigned int j = (unsigned int)((i + k) % c->n);
            if (c->pid[j] == sh[i].pid && c->start[j]) {
                sh[i].start = c->start[j];
                cached = true;
            }
        }
        struct wt_pid_stat st;
        if (!cached)
            sh[i].start = wt_procfs_pid_stat((int)sh[i].pid, &st) == 0 ? st.start : 0;
    }
    c->n = n < WT_ATTRIB_STARTS_MAX ? (unsigned int)n : WT_ATTRIB_STARTS_MAX;
    for (unsigned int i = 0; i < c->n; i++) {
        c->pid[i] = sh[i].pid;
        c->start[i] = sh[i].start;
    }
}

void wt_attrib_split(uint64_t energy, double busy, const uint64_t *weights, size_t n,
                     uint64_t *parts, uint64_t *idle)
{
    uint64_t total_w = 0;
    for (size_t i = 0; i < n; i++) {
        parts[i] = 0;
        if (__builtin_add_overflow(total_w, weights[i], &total_w))
            total_w = UINT64_MAX;
    }
    if (!(busy > 0) || total_w == 0) {
        *idle = energy;
        return;
    }
    if (busy > 1)
        busy = 1;
    long double b = (long double)energy * busy;
    uint64_t used = b >= (long double)energy ? energy : (uint64_t)b;
    uint64_t given = 0;
    struct rem stack_rem[64];
    struct rem *rem = n <= 64 ? stack_rem : malloc(n * sizeof *rem);
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned __int128 x = (unsigned __int128)used * weights[i];
        parts[i] = (uint64_t)(x / total_w);
        given += parts[i];
        if (rem && weights[i])
            rem[nr++] = (struct rem){i, (uint64_t)(x % total_w)};
    }
    /* Fewer than n units are left: one more each to the largest remainders. */
    uint64_t left = used - given;
    if (rem) {
        qsort(rem, nr, sizeof *rem, by_remainder);
        for (size_t k = 0; k < nr && left; k++, left--)
            parts[rem[k].i]++;
    }
    if (rem != stack_rem)
        free(rem);
    /* Without memory for the remainders (only then) what is left is idle: still conserved. */
    *idle = energy - (used - left);
}

/* ---- the ledger ---- */

struct proc {
    unsigned int pid;
    uint64_t start;
    uint64_t raw;
    bool live;
    int64_t ended_ns; /* when it was first missing; 0 while live */
    bool owner_known;
    struct wt_proc_owner owner;
    char labels[WT_LABELS_LEN];
};

struct folded {
    struct wt_proc_owner owner; /* kind and id only */
    bool owner_known;
    bool kind_only; /* past WT_ATTRIB_MAX_FOLDED: every owner of its kind */
    uint64_t raw;
    char labels[WT_LABELS_LEN];
};

struct device {
    bool used;
    char labels[WT_LABELS_LEN];
    char idle_labels[WT_LABELS_LEN];
    char info_labels[WT_LABELS_LEN];
    enum wt_attrib_method method;
    uint64_t total, idle;
    int64_t t_ns;
    struct proc *procs; /* sorted by pid, then start */
    size_t nprocs, procs_cap;
    struct proc *spare; /* the merge's output, swapped with procs: kept, grown only */
    size_t spare_cap;
    struct folded *folded;
    size_t nfolded;
};

struct wt_attrib {
    pthread_mutex_t mu;
    char vendor[WT_ATTRIB_VENDOR_LEN];
    int metric, info_metric;
    double jpu;
    int64_t grace_ns;
    struct device dev[WT_ATTRIB_MAX_DEVICES];
    struct wt_ratelimit owner_rl;
};

int wt_attrib_open(int metric, int info_metric, double joules_per_unit, int64_t grace_ns,
                   struct wt_attrib **out)
{
    struct wt_attrib *a = calloc(1, sizeof *a);
    *out = NULL;
    if (!a)
        return -ENOMEM;
    pthread_mutex_init(&a->mu, NULL);
    a->metric = metric;
    a->info_metric = info_metric;
    if (metric == WT_M_PROC_GPU_ENERGY_J)
        snprintf(a->vendor, sizeof a->vendor, "nvidia");
    a->jpu = joules_per_unit;
    a->grace_ns = grace_ns > 0 ? grace_ns : 0;
    a->owner_rl.interval_ns = 60 * WT_NS_PER_S;
    *out = a;
    return 0;
}

void wt_attrib_set_vendor(struct wt_attrib *a, const char *vendor)
{
    pthread_mutex_lock(&a->mu);
    snprintf(a->vendor, sizeof a->vendor, "%s", vendor ? vendor : "");
    pthread_mutex_unlock(&a->mu);
}

static pthread_mutex_t pub_mu = PTHREAD_MUTEX_INITIALIZER;
static struct wt_attrib *published[2][WT_ATTRIB_MAX_PUBLISHED];

void wt_attrib_close(struct wt_attrib *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&pub_mu);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < WT_ATTRIB_MAX_PUBLISHED; k++)
            if (published[i][k] == a)
                published[i][k] = NULL;
    pthread_mutex_unlock(&pub_mu);
    for (size_t d = 0; d < WT_ATTRIB_MAX_DEVICES; d++) {
        free(a->dev[d].procs);
        free(a->dev[d].spare);
        free(a->dev[d].folded);
    }
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static void add_label(char *labels, size_t n, const char *key, const char *value)
{
    if (value[0])
        (void)wt_labels_add(labels, n, key, value);
}

void wt_attrib_owner_labels(char *labels, size_t n, const struct wt_proc_owner *o, bool folded)
{
    if (wt_labels_add(labels, n, "owner", wt_owner_kind_name(o->kind)) != 0)
        return;
    switch (o->kind) {
    case WT_OWNER_SLURM:
        add_label(labels, n, "slurm_job", o->slurm_job);
        if (!folded)
            add_label(labels, n, "slurm_step", o->slurm_step);
        break;
    case WT_OWNER_K8S:
        add_label(labels, n, "pod_uid", o->pod_uid);
        add_label(labels, n, "pod_namespace", o->pod_namespace);
        add_label(labels, n, "pod", o->pod_name);
        if (!folded) {
            char c[CONTAINER_SHORT + 1];
            size_t k = strnlen(o->container, CONTAINER_SHORT);
            memcpy(c, o->container, k);
            c[k] = '\0';
            add_label(labels, n, "container", c);
        }
        break;
    case WT_OWNER_SYSTEMD:
        add_label(labels, n, "unit", o->unit);
        break;
    case WT_OWNER_NONE:
        break;
    }
}

/* The owner labels of a process whose cgroup could not be read: owner="unknown". */
static void owner_labels(char *labels, size_t n, const struct proc *p, bool folded)
{
    if (p->owner_known)
        wt_attrib_owner_labels(labels, n, &p->owner, folded);
    else
        (void)wt_labels_add(labels, n, "owner", "unknown");
}

static void read_owner(struct wt_attrib *a, struct proc *p, int64_t t_ns)
{
    struct wt_err err = {{0}};
    memset(&p->owner, 0, sizeof p->owner);
    int rc = wt_cgroup_owner((pid_t)p->pid, &p->owner, &err);
    p->owner_known = rc == 0;
    if (rc == 0 && p->owner.kind == WT_OWNER_K8S)
        (void)wt_pod_lookup(p->owner.pod_uid, p->owner.pod_namespace, sizeof p->owner.pod_namespace,
                            p->owner.pod_name,
                            sizeof p->owner.pod_name); /* no directory: uid only */
    if (rc == 0 || rc == -ENOENT || rc == -ESRCH)
        return; /* gone since the list: its energy is still its own, owner unknown */
    memset(&p->owner, 0, sizeof p->owner);
    uint64_t suppressed = 0;
    if (wt_ratelimit_ok(&a->owner_rl, t_ns, &suppressed))
        wt_warn(MOD, "cannot read a process's owner: %s: counted as owner=\"unknown\" pid=%u%s",
                err.msg, p->pid, suppressed ? " (and more since)" : "");
}

static void proc_init(struct wt_attrib *a, struct device *d, struct proc *p, unsigned int pid,
                      uint64_t start, int instance, int64_t t_ns)
{
    char num[24];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->start = start;
    p->live = true;
    read_owner(a, p, t_ns);
    memcpy(p->labels, d->labels, sizeof p->labels);
    snprintf(num, sizeof num, "%u", pid);
    (void)wt_labels_add(p->labels, sizeof p->labels, "pid", num);
    if (instance >= 0) {
        snprintf(num, sizeof num, "%d", instance);
        (void)wt_labels_add(p->labels, sizeof p->labels, "gpu_instance", num);
    }
    owner_labels(p->labels, sizeof p->labels, p, false);
}

static bool same_owner(const struct folded *f, const struct proc *p, bool kind_only)
{
    if (f->kind_only != kind_only || f->owner_known != p->owner_known ||
        f->owner.kind != p->owner.kind)
        return false;
    if (kind_only || !p->owner_known)
        return true;
    switch (p->owner.kind) {
    case WT_OWNER_SLURM:
        return strcmp(f->owner.slurm_job, p->owner.slurm_job) == 0;
    case WT_OWNER_K8S:
        return strcmp(f->owner.pod_uid, p->owner.pod_uid) == 0;
    case WT_OWNER_SYSTEMD:
        return strcmp(f->owner.unit, p->owner.unit) == 0;
    case WT_OWNER_NONE:
        break;
    }
    return true;
}

/* The folded series of p's owner, made when new; NULL only without memory. */
static struct folded *folded_for(struct device *d, const struct proc *p)
{
    /* Past the cap, an owner's processes go to the one series of its kind. */
    bool kind_only = false;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < d->nfolded; i++)
            if (same_owner(&d->folded[i], p, kind_only))
                return &d->folded[i];
        if (d->nfolded < WT_ATTRIB_MAX_FOLDED || kind_only)
            break;
        kind_only = true;
    }
    if (!d->folded) {
        d->folded = calloc(WT_ATTRIB_MAX_FOLDED + N_KINDS, sizeof *d->folded);
        if (!d->folded)
            return NULL;
    }
    if (d->nfolded >= WT_ATTRIB_MAX_FOLDED + N_KINDS)
        return NULL;
    struct folded *f = &d->folded[d->nfolded++];
    memset(f, 0, sizeof *f);
    f->owner_known = p->owner_known;
    f->kind_only = kind_only;
    f->owner.kind = p->owner.kind;
    if (!kind_only && p->owner_known) {
        memcpy(f->owner.slurm_job, p->owner.slurm_job, sizeof f->owner.slurm_job);
        memcpy(f->owner.pod_uid, p->owner.pod_uid, sizeof f->owner.pod_uid);
        memcpy(f->owner.pod_namespace, p->owner.pod_namespace, sizeof f->owner.pod_namespace);
        memcpy(f->owner.pod_name, p->owner.pod_name, sizeof f->owner.pod_name);
        memcpy(f->owner.unit, p->owner.unit, sizeof f->owner.unit);
        if (p->owner.kind != WT_OWNER_SYSTEMD)
            f->owner.unit[0] = '\0'; /* Slurm and pods are keyed by job and pod only */
    }
    memcpy(f->labels, d->labels, sizeof f->labels);
    if (f->owner_known)
        wt_attrib_owner_labels(f->labels, sizeof f->labels, &f->owner, true);
    else
        (void)wt_labels_add(f->labels, sizeof f->labels, "owner", "unknown");
    return f;
}

/* Moves p's energy into its owner's folded series. False only without memory (then the
 * process keeps its own series: nothing is lost). */
static bool fold(struct device *d, const struct proc *p)
{
    struct folded *f = folded_for(d, p);
    if (!f)
        return false;
    f->raw += p->raw;
    return true;
}

#define ATTRIB_STACK_SHARES 64

struct pair {
    unsigned int pid;
    uint64_t start;
    uint64_t part;
    int instance;
};

static int by_key(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_key(const struct proc *p, const struct pair *s)
{
    if (p->pid != s->pid)
        return p->pid < s->pid ? -1 : 1;
    return p->start < s->start ? -1 : p->start > s->start;
}

/* The processes of one interval merged into d's list (both sorted by key). */
static int merge(struct wt_attrib *a, struct device *d, struct pair *s, size_t n, int64_t t_ns)
{
    size_t need = d->nprocs + n ? d->nprocs + n : 1;
    if (d->spare_cap < need) {
        struct proc *p = malloc(need * sizeof *p);
        if (!p)
            return -ENOMEM;
        free(d->spare);
        d->spare = p;
        d->spare_cap = need;
    }
    struct proc *out = d->spare;
    size_t i = 0, k = 0, m = 0;
    while (i < d->nprocs || k < n) {
        int c = i >= d->nprocs ? 1 : k >= n ? -1 : cmp_key(&d->procs[i], &s[k]);
        if (c == 0 && k + 1 < n && by_key(&s[k], &s[k + 1]) == 0) {
            /* the same process twice in one interval: add it up first */
            s[k + 1].part += s[k].part;
            k++;
            continue;
        }
        if (c < 0) {
            struct proc *p = &out[m++];
            *p = d->procs[i++];
            if (p->live) {
                p->live = false;
                p->ended_ns = t_ns;
            }
            if (t_ns - p->ended_ns >= a->grace_ns && fold(d, p))
                m--;
        } else if (c == 0) {
            struct proc *p = &out[m++];
            *p = d->procs[i++];
            p->raw += s[k++].part;
            p->live = true;
            p->ended_ns = 0;
        } else {
            if (k + 1 < n && by_key(&s[k], &s[k + 1]) == 0) {
                s[k + 1].part += s[k].part;
                k++;
                continue;
            }
            struct proc *p = &out[m++];
            proc_init(a, d, p, s[k].pid, s[k].start, s[k].instance, t_ns);
            p->raw = s[k++].part;
            /* Past the cap (the CPU ledger on a busy host), straight to the owner. */
            if (m > WT_ATTRIB_MAX_PROCS && fold(d, p))
                m--;
        }
    }
    /* A reused pid: the earlier process of that pid folds at once (two series would carry
     * the same labels). Only one of a pid's processes can be listed in an interval. */
    size_t w = 0;
    for (size_t r = 0; r < m; r++) {
        bool shadowed = !out[r].live && ((r + 1 < m && out[r + 1].pid == out[r].pid) ||
                                         (w > 0 && out[w - 1].pid == out[r].pid));
        if (shadowed && fold(d, &out[r]))
            continue;
        out[w++] = out[r];
    }
    d->spare = d->procs;
    d->procs = out;
    size_t cap = d->procs_cap;
    d->procs_cap = d->spare_cap;
    d->spare_cap = cap;
    d->nprocs = w;
    return 0;
}

int wt_attrib_account(struct wt_attrib *a, unsigned int dev, const char *dev_labels, int64_t t_ns,
                      uint64_t energy, double busy, enum wt_attrib_method method,
                      const struct wt_attrib_share *shares, size_t n)
{
    if (dev >= WT_ATTRIB_MAX_DEVICES)
        return -EINVAL;
    /* A device's few processes fit the stack; a busy host's CPU ledger allocates. */
    uint64_t w_st[ATTRIB_STACK_SHARES] = {0}, parts_st[ATTRIB_STACK_SHARES];
    struct pair s_st[ATTRIB_STACK_SHARES];
    bool heap = n > ATTRIB_STACK_SHARES;
    uint64_t *w = heap ? calloc(n, sizeof *w) : w_st;
    uint64_t *parts = heap ? calloc(n, sizeof *parts) : parts_st;
    struct pair *s = heap ? malloc(n * sizeof *s) : s_st;
    int rc = -ENOMEM;
    if (!w || !parts || !s)
        goto out;
    for (size_t i = 0; i < n; i++)
        w[i] = shares[i].weight;
    uint64_t idle = 0;
    wt_attrib_split(energy, busy, w, n, parts, &idle);
    for (size_t i = 0; i < n; i++)
        s[i] = (struct pair){shares[i].pid, shares[i].start, parts[i], shares[i].instance};
    qsort(s, n, sizeof *s, by_key);

    pthread_mutex_lock(&a->mu);
    struct device *d = &a->dev[dev];
    if (!d->used) {
        d->used = true;
        snprintf(d->labels, sizeof d->labels, "%s", dev_labels);
        memcpy(d->idle_labels, d->labels, sizeof d->labels);
        (void)wt_labels_add(d->idle_labels, sizeof d->idle_labels, "owner", "idle");
    }
    rc = merge(a, d, s, n, t_ns);
    if (rc == 0) {
        d->idle += idle;
        d->total += energy;
        d->method = method;
        d->t_ns = t_ns;
        memcpy(d->info_labels, d->labels, sizeof d->labels);
        (void)wt_labels_add(d->info_labels, sizeof d->info_labels, "method",
                            wt_attrib_method_name(method));
    } else {
        /* Without memory for the merge the interval is idle: still conserved. */
        d->idle += energy;
        d->total += energy;
        rc = 0;
    }
    pthread_mutex_unlock(&a->mu);
out:
    if (heap) {
        free(w);
        free(parts);
        free(s);
    }
    return rc;
}

int wt_attrib_emit(struct wt_attrib *a, int64_t t_ns, struct wt_batch *out)
{
    int rc = 0;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < WT_ATTRIB_MAX_DEVICES; i++) {
        const struct device *d = &a->dev[i];
        if (!d->used)
            continue;
        for (size_t k = 0; k < d->nprocs; k++)
            rc |= wt_batch_add(out, a->metric, d->procs[k].labels, t_ns,
                               (double)d->procs[k].raw * a->jpu);
        for (size_t k = 0; k < d->nfolded; k++)
            rc |= wt_batch_add(out, a->metric, d->folded[k].labels, t_ns,
                               (double)d->folded[k].raw * a->jpu);
        rc |= wt_batch_add(out, a->metric, d->idle_labels, t_ns, (double)d->idle * a->jpu);
        if (a->info_metric >= 0)
            rc |= wt_batch_add(out, a->info_metric, d->info_labels, t_ns, 1);
    }
    pthread_mutex_unlock(&a->mu);
    return rc ? -ENOMEM : 0;
}

int wt_attrib_copy(struct wt_attrib *a, struct wt_attrib_device **devs, size_t *ndev,
                   struct wt_attrib_entry **ents, size_t *nent)
{
    int rc = -ENOMEM;
    *devs = NULL;
    *ents = NULL;
    *ndev = *nent = 0;
    pthread_mutex_lock(&a->mu);
    size_t nd = 0, ne = 0;
    for (size_t i = 0; i < WT_ATTRIB_MAX_DEVICES; i++) {
        if (a->dev[i].used) {
            nd++;
            ne += a->dev[i].nprocs + a->dev[i].nfolded;
        }
    }
    struct wt_attrib_device *dv = calloc(nd ? nd : 1, sizeof *dv);
    struct wt_attrib_entry *ev = calloc(ne ? ne : 1, sizeof *ev);
    if (!dv || !ev) {
        free(dv);
        free(ev);
        goto out;
    }
    nd = ne = 0;
    for (size_t i = 0; i < WT_ATTRIB_MAX_DEVICES; i++) {
        const struct device *d = &a->dev[i];
        if (!d->used)
            continue;
        struct wt_attrib_device *x = &dv[nd++];
        x->dev = (unsigned int)i;
        memcpy(x->vendor, a->vendor, sizeof x->vendor);
        memcpy(x->labels, d->labels, sizeof x->labels);
        x->method = d->method;
        x->energy_j = (double)d->total * a->jpu;
        x->idle_j = (double)d->idle * a->jpu;
        x->t_ns = d->t_ns;
        for (size_t k = 0; k < d->nprocs; k++) {
            const struct proc *p = &d->procs[k];
            struct wt_attrib_entry *e = &ev[ne++];
            *e = (struct wt_attrib_entry){.dev = (unsigned int)i,
                                          .pid = p->pid,
                                          .start = p->start,
                                          .live = p->live,
                                          .owner_known = p->owner_known,
                                          .owner = p->owner,
                                          .energy_j = (double)p->raw * a->jpu};
            memcpy(e->vendor, a->vendor, sizeof e->vendor);
        }
        for (size_t k = 0; k < d->nfolded; k++) {
            const struct folded *f = &d->folded[k];
            struct wt_attrib_entry *e = &ev[ne++];
            *e = (struct wt_attrib_entry){.dev = (unsigned int)i,
                                          .owner_known = f->owner_known,
                                          .owner = f->owner,
                                          .energy_j = (double)f->raw * a->jpu};
            memcpy(e->vendor, a->vendor, sizeof e->vendor);
        }
    }
    *devs = dv;
    *ents = ev;
    *ndev = nd;
    *nent = ne;
    rc = 0;
out:
    pthread_mutex_unlock(&a->mu);
    return rc;
}

bool wt_attrib_on(const struct wt_attrib_entry *e, const struct wt_attrib_device *d)
{
    return e->dev == d->dev && strcmp(e->vendor, d->vendor) == 0;
}

const struct wt_attrib_device *wt_attrib_find(const struct wt_attrib_device *devs, size_t n,
                                              const char *vendor, unsigned int dev)
{
    const struct wt_attrib_device *any = NULL;
    for (size_t i = 0; i < n; i++) {
        if (devs[i].dev != dev)
            continue;
        if (vendor && vendor[0]) {
            if (strcmp(devs[i].vendor, vendor) == 0)
                return &devs[i];
        } else if (!any || strcmp(devs[i].vendor, "nvidia") == 0) {
            any = &devs[i];
        }
    }
    return any;
}

void wt_attrib_publish(int which, struct wt_attrib *a)
{
    if (which < 0 || which > 1)
        return;
    pthread_mutex_lock(&pub_mu);
    struct wt_attrib **p = published[which];
    bool done = false;
    for (int k = 0; a && k < WT_ATTRIB_MAX_PUBLISHED && !done; k++)
        done = p[k] == a;
    for (int k = 0; k < WT_ATTRIB_MAX_PUBLISHED && !done; k++) {
        if (!a) {
            p[k] = NULL;
        } else if (!p[k]) {
            p[k] = a;
            done = true;
        }
    }
    pthread_mutex_unlock(&pub_mu);
}

/* Appends src's arrays to *dst's (both caller-owned). 0 or -ENOMEM (then *dst is as it was). */
static int append(void **dst, size_t *n, void *src, size_t m, size_t size)
{
    if (!m)
        return 0;
    char *x = realloc(*dst, (*n + m) * size);
    if (!x)
        return -ENOMEM;
    memcpy(x + *n * size, src, m * size);
    *dst = x;
    *n += m;
    return 0;
}

int wt_attrib_copy_published(int which, struct wt_attrib_device **devs, size_t *ndev,
                             struct wt_attrib_entry **ents, size_t *nent)
{
    int rc = -ENODATA;
    *devs = NULL;
    *ents = NULL;
    *ndev = *nent = 0;
    if (which < 0 || which > 1)
        return rc;
    /* Held while copying, so that a ledger is not closed under the copy. */
    pthread_mutex_lock(&pub_mu);
    for (int k = 0; k < WT_ATTRIB_MAX_PUBLISHED && rc != -ENOMEM; k++) {
        struct wt_attrib_device *dv;
        struct wt_attrib_entry *ev;
        size_t nd, ne;
        if (!published[which][k] || wt_attrib_copy(published[which][k], &dv, &nd, &ev, &ne) != 0) {
            rc = published[which][k] ? -ENOMEM : rc;
            continue;
        }
        void *d = *devs, *e = *ents;
        rc = append(&d, ndev, dv, nd, sizeof *dv);
        *devs = d;
        if (rc == 0) {
            rc = append(&e, nent, ev, ne, sizeof *ev);
            *ents = e;
        }
        free(dv);
        free(ev);
    }
    pthread_mutex_unlock(&pub_mu);
    if (rc == 0 && !*devs && !*ents) {
        /* published but without a device yet: empty arrays the caller can free, as a copy */
        *devs = calloc(1, sizeof **devs);
        *ents = calloc(1, sizeof **ents);
        if (!*devs || !*ents)
            rc = -ENOMEM;
    }
    if (rc != 0) {
        free(*devs);
        free(*ents);
        *devs = NULL;
        *ents = NULL;
        *ndev = *nent = 0;
    }
    return rc;
}
