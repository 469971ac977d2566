/* SPDX-License-Identifier: MIT */
/*
 * Dark power: idle energy per GPU as the daemon polls it, published through the hub, and read
 * back per UTC day from the store; see dark.h.
 */
#include "audit/dark.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "collect/rocm.h"
#include "core/clock.h"
#include "core/log.h"
#include "store/query.h"

#define SLOT_NAME "dark"
#define MOD "dark"
#define MAX_GPUS 64
#define DAY_NS (86400 * WT_NS_PER_S)

struct gpu {
    char labels[WT_LABELS_LEN]; /* gpu, uuid, model of its power reading */
    char uuid[96];
    bool have_prev, idle_prev;
    int64_t t_prev;
    double p_prev, e_prev;
    bool has_e_prev;
    bool idle_now, known;  /* known: there was a process list for it */
    int64_t idle_since_ns; /* first poll of the current idle run */
    double idle_j, idle_s; /* since the daemon started */
    int64_t day;           /* UTC day number of day_j, day_s */
    double day_j, day_s;
};

struct wt_dark {
    struct wt_hub *hub;
    int slot;
    int64_t interval_ns, max_gap_ns;
    pthread_mutex_t mu;
    struct gpu g[MAX_GPUS];
    size_t n;
    bool present, said_noprocs, said_full;
    /* The sink's buffers, kept across ticks (a tick allocates nothing once they have grown):
     * the process lists read for a batch and the batch published. sink_mu: collectors publish
     * from their own threads. */
    pthread_mutex_t sink_mu;
    struct wt_gpu_procs *procs; /* MAX_GPUS */
    struct wt_batch out;
};

static int64_t day_of(int64_t t_ns)
{
    return t_ns >= 0 ? t_ns / DAY_NS : -((-t_ns + DAY_NS - 1) / DAY_NS);
}

/*
 * The GPU of a reading's labels. A GPU's readings mostly carry the labels it keeps (those of its
 * power reading), and equal labels name the same uuid: the GPUs' labels are compared first,
 * from *hint (the last one found, where the next GPU of a batch usually follows), and only
 * labels none has are parsed for their uuid.
 */
static struct gpu *find(struct wt_dark *d, const char *labels, size_t *hint)
{
    for (size_t j = 0; j < d->n; j++) {
        size_t i = (*hint + j) % d->n;
        if (strcmp(d->g[i].labels, labels) == 0) {
            *hint = i;
            return &d->g[i];
        }
    }
    char uuid[96];
    if (wt_labels_get(labels, "uuid", uuid, sizeof uuid) != 0)
        return NULL;
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->g[i].uuid, uuid) == 0) {
            *hint = i;
            return &d->g[i];
        }
    }
    if (d->n == MAX_GPUS) {
        if (!d->said_full)
            wt_warn(MOD, "more than %d GPUs: the rest have no dark power figures", MAX_GPUS);
        d->said_full = true;
        return NULL;
    }
    struct gpu *g = &d->g[d->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->labels, sizeof g->labels, "%s", labels);
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
    *hint = d->n - 1;
    return g;
}

/* One GPU's readings in a batch. */
struct sample {
    int64_t t;
    double p, e, util;
    bool has_p, has_e, has_util, up;
};

/* Credits e joules over dt_s seconds ending at t to the GPU, split at 00:00 UTC. */
static void credit(struct gpu *g, int64_t t0, int64_t t, double e)
{
    double dt_s = (double)(t - t0) / 1e9;
    int64_t day = day_of(t);
    g->idle_j += e;
    g->idle_s += dt_s;
    if (day != g->day) {
        /* The share after midnight goes to the new day; what came before was the old day's. */
        int64_t midnight = day * DAY_NS;
        double frac = t0 >= midnight || t <= t0 ? 1 : (double)(t - midnight) / (double)(t - t0);
        g->day = day;
        g->day_j = e * frac;
        g->day_s = dt_s * frac;
    } else {
        g->day_j += e;
        g->day_s += dt_s;
    }
}

static void step(struct wt_dark *d, struct gpu *g, const struct sample *s, int npids)
{
    /* npids < 0: no process list for this GPU; idle unknown, nothing counted */
    bool idle = s->up && s->has_util && s->util <= 0 && npids == 0;
    g->known = npids >= 0;
    if (!s->up || !s->has_p) {
        g->have_prev = false;
        g->idle_now = false;
        return;
    }
    if (idle && !g->idle_now)
        g->idle_since_ns = s->t;
    if (g->have_prev && g->idle_prev && idle && s->t > g->t_prev &&
        s->t - g->t_prev <= d->max_gap_ns) {
        double e;
        if (s->has_e && g->has_e_prev && s->e >= g->e_prev)
            e = s->e - g->e_prev;
        else
            e = (s->p + g->p_prev) / 2 * ((double)(s->t - g->t_prev) / 1e9);
        credit(g, g->t_prev, s->t, e);
    }
    if (g->day == 0 && g->day_s == 0)
        g->day = day_of(s->t);
    g->have_prev = true;
    g->idle_prev = idle;
    g->idle_now = idle;
    g->t_prev = s->t;
    g->p_prev = s->p;
    g->e_prev = s->e;
    g->has_e_prev = s->has_e;
}

/* The number in label key of labels, -1 when none (or not one under MAX_GPUS). */
static int label_index(const char *labels, const char *key)
{
    char v[16];
    char *end;
    if (wt_labels_get(labels, key, v, sizeof v) != 0)
        return -1;
    long x = strtol(v, &end, 10);
    return end != v && !*end && x >= 0 && x < MAX_GPUS ? (int)x : -1;
}

static bool gpu_collector(const char *collector)
{
    return strcmp(collector, "nvml") == 0 || strcmp(collector, "amd") == 0;
}

/*
 * An AMD package (collect/rocm.h: an MI250X's two dies, an MI300X's partitions) draws its
 * power through its primary alone: the package is idle when no member lists a process and none
 * is busy. Folds the members' processes and utilization into the primary's, for sample self
 * of s[0..ns) (GPU indices in sidx); false for a member that is not its package's primary
 * (nothing of its own to count).
 */
static bool amd_package(const int *pkg_of, struct sample *s, size_t self, const int *sidx,
                        size_t ns, const struct wt_gpu_procs *procs, size_t nprocs, int *npids)
{
    int idx = sidx[self];
    if (idx < 0 || pkg_of[idx] < 0)
        return true;
    if (pkg_of[idx] != idx)
        return false;
    for (int m = 0; m < MAX_GPUS; m++) {
        if (m == idx || pkg_of[m] != idx)
            continue;
        int listed = -1;
        for (size_t j = 0; j < nprocs; j++)
            if ((int)procs[j].gpu == m)
                listed = (int)procs[j].npids;
        *npids = listed < 0 || *npids < 0 ? -1 : *npids + listed;
        for (size_t k = 0; k < ns; k++)
            if (sidx[k] == m && s[k].has_util && s[k].util > s[self].util)
                s[self].util = s[k].util;
    }
    return true;
}

void wt_dark_feed(struct wt_dark *d, const char *collector, const struct wt_batch *b,
                  const struct wt_gpu_procs *procs, size_t nprocs, bool have_procs)
{
    if (!gpu_collector(collector))
        return;
    bool amd = strcmp(collector, "amd") == 0;
    int pkg_of[MAX_GPUS]; /* AMD: each GPU index's package primary (wattage_gpu_info) */
    for (int i = 0; i < MAX_GPUS; i++)
        pkg_of[i] = -1;
    if (!have_procs && !d->said_noprocs) {
        wt_info(MOD, "no GPU process list (driver without the process calls?): idle energy is "
                     "not measured");
        d->said_noprocs = true;
    }
    struct sample s[MAX_GPUS];
    struct gpu *gs[MAX_GPUS];
    size_t ns = 0, hint = 0;
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        if (amd && r->metric == WT_M_GPU_INFO) {
            int gi = label_index(r->labels, "gpu"), pk = label_index(r->labels, "package");
            if (gi >= 0 && pk >= 0)
                pkg_of[gi] = pk;
            continue;
        }
        if (r->metric != WT_M_GPU_POWER_W && r->metric != WT_M_GPU_ENERGY_J &&
            r->metric != WT_M_GPU_UTIL_RATIO && r->metric != WT_M_GPU_UP)
            continue;
        struct gpu *g = find(d, r->labels, &hint);
        if (!g)
            continue;
        size_t k = 0;
        while (k < ns && gs[k] != g)
            k++;
        if (k == ns) {
            if (ns == MAX_GPUS)
                continue;
            gs[ns] = g;
            memset(&s[ns], 0, sizeof s[ns]);
            s[ns].up = true; /* a GPU without gpu_up in the batch is taken as up */
            ns++;
        }
        switch (r->metric) {
        case WT_M_GPU_POWER_W:
            s[k].p = r->value;
            s[k].has_p = true;
            s[k].t = r->t_ns;
            if (r->labels[0] && strcmp(g->labels, r->labels) != 0)
                snprintf(g->labels, sizeof g->labels, "%s", r->labels);
            break;
        case WT_M_GPU_ENERGY_J:
            s[k].e = r->value;
            s[k].has_e = true;
            if (!s[k].t)
                s[k].t = r->t_ns;
            break;
        case WT_M_GPU_UTIL_RATIO:
            s[k].util = r->value;
            s[k].has_util = true;
            break;
        default: /* WT_M_GPU_UP */
            s[k].up = r->value != 0;
            break;
        }
    }
    int sidx[MAX_GPUS];
    for (size_t k = 0; k < ns; k++)
        sidx[k] = amd ? label_index(gs[k]->labels, "gpu") : -1;
    for (size_t k = 0; k < ns; k++) {
        int npids = -1;
        for (size_t j = 0; have_procs && j < nprocs; j++)
            if (strcmp(procs[j].uuid, gs[k]->uuid) == 0)
                npids = (int)procs[j].npids;
        if (amd && !amd_package(pkg_of, s, k, sidx, ns, have_procs ? procs : NULL,
                                have_procs ? nprocs : 0, &npids))
            continue;
        step(d, gs[k], &s[k], npids);
    }
    pthread_mutex_unlock(&d->mu);
}

int wt_dark_batch(struct wt_dark *d, int64_t now_ns, struct wt_batch *out)
{
    int rc = 0;
    int64_t today = day_of(now_ns);
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < d->n && rc == 0; i++) {
        const struct gpu *g = &d->g[i];
        if (!g->known)
            continue;
        double dj = g->day == today ? g->day_j : 0, ds = g->day == today ? g->day_s : 0;
        rc = wt_batch_add(out, WT_M_GPU_IDLE, g->labels, now_ns, g->idle_now ? 1 : 0);
        if (!rc)
            rc = wt_batch_add(out, WT_M_GPU_IDLE_ENERGY_J, g->labels, now_ns, g->idle_j);
        if (!rc)
            rc = wt_batch_add(out, WT_M_GPU_IDLE_SECONDS, g->labels, now_ns, g->idle_s);
        if (!rc)
            rc = wt_batch_add(out, WT_M_GPU_IDLE_ENERGY_TODAY_J, g->labels, now_ns, dj);
        /* The level needs some idle time behind it: under a second it is one noisy reading. */
        if (!rc && ds >= 1)
            rc = wt_batch_add(out, WT_M_GPU_IDLE_POWER_W, g->labels, now_ns, dj / ds);
    }
    pthread_mutex_unlock(&d->mu);
    return rc;
}

bool wt_dark_idle_since(struct wt_dark *d, const char *uuid, int64_t *since_ns)
{
    bool idle = false;
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->g[i].uuid, uuid) == 0 && d->g[i].idle_now) {
            idle = true;
            *since_ns = d->g[i].idle_since_ns;
        }
    }
    pthread_mutex_unlock(&d->mu);
    return idle;
}

static void sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    struct wt_dark *d = ctx;
    if (!gpu_collector(collector))
        return; /* before the lock: the publish below comes back here as "dark" */
    pthread_mutex_lock(&d->sink_mu);
    size_t np = 0;
    int64_t t_procs = 0;
    bool have = (strcmp(collector, "amd") == 0 ? wt_rocm_processes : wt_nvml_processes)(
                    d->procs, MAX_GPUS, &np, &t_procs) == 0;
    int64_t m0 = wt_now_mono_ns();
    wt_dark_feed(d, collector, b, d->procs, have ? np : 0, have);
    struct wt_batch *out = &d->out;
    wt_batch_clear(out);
    int rc = wt_dark_batch(d, wt_now_real_ns(), out);
    int64_t m1 = wt_now_mono_ns();
    /* Present only once there is something to publish: a derived slot is no source of its own. */
    bool present = out->len > 0;
    if (present != d->present) {
        wt_hub_set_state(d->hub, d->slot, present, d->interval_ns);
        d->present = present;
    }
    if (present)
        wt_hub_publish(d->hub, d->slot, out, rc == 0, (double)(m1 - m0) / 1e9, m1);
    pthread_mutex_unlock(&d->sink_mu);
}

int wt_dark_open(const struct wt_config *cfg, struct wt_hub *hub, struct wt_dark **out,
                 struct wt_err *err)
{
    *out = NULL;
    struct wt_dark *d = calloc(1, sizeof *d);
    struct wt_gpu_procs *procs = d ? malloc(MAX_GPUS * sizeof *procs) : NULL;
    if (!procs) {
        free(d);
        return wt_err_set(err, "dark: out of memory"), -ENOMEM;
    }
    d->procs = procs;
    d->hub = hub;
    d->interval_ns = cfg->daemon.interval_ns > 0 ? cfg->daemon.interval_ns : WT_NS_PER_S;
    d->max_gap_ns = 3 * d->interval_ns;
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->sink_mu, NULL);
    if (hub) {
        d->slot = wt_hub_add_collector(hub, SLOT_NAME, d->interval_ns);
        if (d->slot < 0 || wt_hub_add_tick_sink(hub, sink, d) != 0) {
            wt_dark_close(d);
            return wt_err_set(err, "dark: no hub slot or sink left"), -ENOSPC;
        }
    }
    *out = d;
    return 0;
}

void wt_dark_close(struct wt_dark *d)
{
    if (!d)
        return;
    /* Publishers that outlive the poll loop (the audit threads) no longer reach d. */
    wt_hub_remove_sink(d->hub, sink, d);
    if (d->hub && d->present)
        wt_hub_set_state(d->hub, d->slot, false, d->interval_ns);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->sink_mu);
    wt_batch_free(&d->out);
    free(d->procs);
    free(d);
}

/* ---- per day, from the store ---- */

double wt_dark_increase(const double *v, size_t n)
{
    double inc = 0;
    for (size_t i = 1; i < n; i++)
        inc += v[i] >= v[i - 1] ? v[i] - v[i - 1] : v[i];
    return inc;
}

/* The increase of series si over [a, b]. */
static int series_increase(struct wt_store *st, const struct wt_series_info *si, int64_t a,
                           int64_t b, double *inc)
{
    struct wt_point *pts = NULL;
    size_t n = 0;
    *inc = 0;
    int rc = wt_store_points(st, si, a, b, 0, &pts, &n);
    if (rc != 0)
        return rc;
    double *v = n ? malloc(n * sizeof *v) : NULL;
    if (n && !v) {
        free(pts);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = pts[i].v;
    *inc = wt_dark_increase(v, n);
    free(v);
    free(pts);
    return 0;
}

int wt_dark_days(struct wt_store *st, int64_t from_ns, int64_t to_ns, struct wt_dark_day **out,
                 size_t *n)
{
    struct wt_series_info *es = NULL, *ss = NULL;
    size_t ne = 0, nss = 0, cap = 0;
    struct wt_err err = {{0}};
    *out = NULL;
    *n = 0;
    int rc = wt_store_series(st, wt_metrics[WT_M_GPU_IDLE_ENERGY_J].name, false, &es, &ne, &err);
    if (rc == 0)
        rc = wt_store_series(st, wt_metrics[WT_M_GPU_IDLE_SECONDS].name, false, &ss, &nss, &err);
    if (rc != 0)
        goto done;
    for (size_t i = 0; i < ne && rc == 0; i++) {
        const struct wt_series_info *ts = NULL;
        for (size_t k = 0; k < nss; k++)
            if (strcmp(ss[k].node, es[i].node) == 0 && strcmp(ss[k].labels, es[i].labels) == 0)
                ts = &ss[k];
        for (int64_t day = day_of(from_ns); day * DAY_NS < to_ns && rc == 0; day++) {
            /* Each day's span clipped to the window; the one poll interval that straddles
             * midnight (or the window's edge) is left out of both days. */
            int64_t a = day * DAY_NS > from_ns ? day * DAY_NS : from_ns;
            int64_t b = (day + 1) * DAY_NS <= to_ns ? (day + 1) * DAY_NS - 1 : to_ns;
            double ej = 0, es_ = 0;
            if ((rc = series_increase(st, &es[i], a, b, &ej)) != 0)
                break;
            if (ts && (rc = series_increase(st, ts, a, b, &es_)) != 0)
                break;
            if (ej <= 0 && es_ <= 0)
                continue;
            if (*n == cap) {
                size_t nc = cap ? 2 * cap : 16;
                struct wt_dark_day *p = realloc(*out, nc * sizeof *p);
                if (!p) {
                    rc = -ENOMEM;
                    break;
                }
                *out = p;
                cap = nc;
            }
            struct wt_dark_day *dd = &(*out)[(*n)++];
            memset(dd, 0, sizeof *dd);
            snprintf(dd->node, sizeof dd->node, "%s", es[i].node);
            (void)wt_labels_get(es[i].labels, "gpu", dd->gpu, sizeof dd->gpu);
            (void)wt_labels_get(es[i].labels, "uuid", dd->uuid, sizeof dd->uuid);
            (void)wt_labels_get(es[i].labels, "model", dd->model, sizeof dd->model);
            dd->day_ns = day * DAY_NS;
            dd->energy_j = ej;
            dd->idle_s = es_;
        }
    }
done:
    free(es);
    free(ss);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc == -EINVAL ? -EIO : rc;
}
