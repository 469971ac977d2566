/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's running processes: each GPU's compute and graphics processes, their
 * utilization, the split of the GPU's energy over them, and the latest list for
 * wt_nvml_processes.
 */
#include "collect/nvml_procs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The latest process list of the collector that read one last (see wt_nvml_processes). */
static pthread_mutex_t procs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct wt_gpu_procs *procs_list;
static size_t procs_n;
static int64_t procs_t;
static const void *procs_owner;

/* ---- running processes, and the split of each GPU's energy over them ---- */

static void add_pid(struct wt_gpu_procs *p, unsigned int pid, unsigned long long mem_b,
                    unsigned int instance)
{
    for (unsigned int i = 0; i < p->npids; i++) {
        if (p->pids[i] == pid) {
            if (mem_b != WT_NVML_NO_MEMORY &&
                (p->mem_b[i] == WT_NVML_NO_MEMORY || mem_b > p->mem_b[i]))
                p->mem_b[i] = mem_b;
            return;
        }
    }
    if (p->npids < WT_NVML_MAX_PROCS) {
        p->mem_b[p->npids] = mem_b;
        p->instance[p->npids] = instance;
        p->pids[p->npids++] = pid;
    }
}

/* One of the two lists (compute or graphics) of a GPU into p. Returns the NVML answer. */
static nvmlReturn_t read_procs(wt_nvml_procs_fn *f, wt_nvml_procs_v1_fn *f1, nvmlDevice_t d,
                               struct wt_gpu_procs *p)
{
    unsigned int count = PROCS_BUF;
    nvmlReturn_t r;
    if (f) {
        nvmlProcessInfo_t buf[PROCS_BUF];
        r = f(d, &count, buf);
        for (unsigned int i = 0; r == NVML_SUCCESS && i < count && i < PROCS_BUF; i++)
            add_pid(p, buf[i].pid, buf[i].usedGpuMemory, buf[i].gpuInstanceId);
    } else if (f1) {
        nvmlProcessInfo_v1_t buf[PROCS_BUF];
        r = f1(d, &count, buf);
        for (unsigned int i = 0; r == NVML_SUCCESS && i < count && i < PROCS_BUF; i++)
            add_pid(p, buf[i].pid, buf[i].usedGpuMemory, WT_NVML_NO_INSTANCE);
    } else {
        r = NVML_ERROR_NOT_SUPPORTED;
    }
    return r;
}

/*
 * The per-process samples newer than the last taken: *n of them in s->util_buf. Returns false
 * when the GPU cannot say this time (then the split falls back), and marks it for good when it
 * answers NOT_SUPPORTED. NOT_FOUND is an answer: no process ran a kernel since.
 */
static bool read_util(struct nvml_state *s, struct gpu *g, unsigned int *n)
{
    *n = 0;
    if (!s->fn.proc_util || g->proc_util_unsupported)
        return false;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!s->util_buf) {
            s->util_buf = calloc(s->util_cap, sizeof *s->util_buf);
            if (!s->util_buf)
                return false;
        }
        unsigned int count = s->util_cap;
        nvmlReturn_t r = s->fn.proc_util(g->dev, s->util_buf, &count, g->util_seen_us);
        if (r == NVML_SUCCESS) {
            *n = count < s->util_cap ? count : s->util_cap;
            for (unsigned int i = 0; i < *n; i++)
                if (s->util_buf[i].timeStamp > g->util_seen_us)
                    g->util_seen_us = s->util_buf[i].timeStamp;
            return true;
        }
        if (r == NVML_ERROR_NOT_FOUND)
            return true;
        if (r == NVML_ERROR_INSUFFICIENT_SIZE && count > s->util_cap && count < (1u << 16)) {
            free(s->util_buf);
            s->util_buf = NULL;
            s->util_cap = count + 64;
            continue;
        }
        if (r == NVML_ERROR_NOT_SUPPORTED) {
            g->proc_util_unsupported = true;
            if (s->said_proc_util)
                return false;
            s->said_proc_util = true; /* once: a board without it has eight GPUs without it */
            wt_info(MOD,
                    "per-process utilization: %s gpu=%u uuid=%s: its energy is split by memory "
                    "used, else equally (wattage_gpu_attribution_info says which)",
                    wt_nvml_errstr(s, r), g->index, g->uuid);
        }
        return false;
    }
    return false;
}

/*
 * Splits GPU g's energy since its last split over the processes of p (collect/attrib.h): by
 * each process's mean SM utilization over the interval where NVML samples it (the GPU's idle
 * share to idle), else by memory used, else equally (both scaled by the GPU's utilization when
 * known). Energy across a gap (no split for 3 s, or 3 intervals when they are longer: the GPU
 * was down) is idle: nobody is known to have used it.
 */
static void attribute(struct nvml_state *s, struct gpu *g, const struct wt_gpu_procs *p,
                      int64_t t_ns)
{
    unsigned int nsamp = 0;
    bool have_util = read_util(s, g, &nsamp);
    if (!g->attrib_started || g->energy_mj < g->attrib_mj) {
        /* the first interval (or the integrated series started again): a baseline */
        g->attrib_started = true;
        g->attrib_mj = g->energy_mj;
        g->attrib_at = t_ns;
        return;
    }
    uint64_t energy = g->energy_mj - g->attrib_mj;
    bool gap = t_ns - g->attrib_at > s->attrib_gap_ns;
    struct wt_attrib_share sh[WT_NVML_MAX_PROCS];
    double util[WT_NVML_MAX_PROCS] = {0};
    unsigned int cnt[WT_NVML_MAX_PROCS] = {0}, k_max = 0;
    bool mem_ok = p->npids > 0;
    for (unsigned int i = 0; i < p->npids; i++) {
        sh[i].pid = p->pids[i];
        /* Under MIG a process's series says its GPU instance: each process is counted once,
         * so the instances' series and idle sum to the parent's energy. */
        sh[i].instance = p->instance[i] == WT_NVML_NO_INSTANCE ? -1 : (int)p->instance[i];
        if (p->mem_b[i] == WT_NVML_NO_MEMORY)
            mem_ok = false;
    }
    wt_attrib_starts_fill(&g->starts, sh, p->npids);
    for (unsigned int k = 0; have_util && k < nsamp; k++) {
        for (unsigned int i = 0; i < p->npids; i++) {
            if (s->util_buf[k].pid == p->pids[i]) {
                util[i] += s->util_buf[k].smUtil;
                if (++cnt[i] > k_max)
                    k_max = cnt[i];
                break;
            }
        }
    }
    enum wt_attrib_method m;
    double busy = g->busy >= 0 ? g->busy : 1;
    uint64_t mem_total = 0;
    for (unsigned int i = 0; mem_ok && i < p->npids; i++)
        mem_total += p->mem_b[i];
    if (have_util) {
        /* The mean over the interval's sample periods (a process absent from one ran nothing). */
        double sum = 0;
        m = WT_ATTRIB_UTILIZATION;
        for (unsigned int i = 0; i < p->npids; i++) {
            double u = k_max ? util[i] / k_max : 0;
            sh[i].weight = (uint64_t)(u * 1000 + 0.5);
            sum += u;
        }
        busy = sum / 100;
    } else if (mem_ok && mem_total > 0) {
        m = WT_ATTRIB_MEMORY;
        for (unsigned int i = 0; i < p->npids; i++)
            sh[i].weight = p->mem_b[i];
    } else {
        m = WT_ATTRIB_EQUAL;
        for (unsigned int i = 0; i < p->npids; i++)
            sh[i].weight = 1;
    }
    if (gap)
        busy = 0;
    char idx[16], labels[WT_LABELS_LEN];
    snprintf(idx, sizeof idx, "%u", g->index);
    if (wt_labels(labels, sizeof labels, "gpu", idx, "uuid", g->uuid, NULL) != 0)
        (void)wt_labels(labels, sizeof labels, "gpu", idx, NULL);
    if (wt_attrib_account(s->attrib, g->index, labels, t_ns, energy, busy, m, sh, p->npids) != 0)
        return; /* not accounted: the next interval takes this one's energy too */
    g->attrib_mj = g->energy_mj;
    g->attrib_at = t_ns;
}

/*
 * Reads every up GPU's processes, at most once a second, splits each GPU's energy over them,
 * and publishes the list. A GPU that answers NOT_SUPPORTED to both calls is not asked again;
 * other failures leave that GPU out of this list (and its energy for the next split) and never
 * mark it down (the process list is not a health signal).
 */
void wt_nvml_poll_procs(struct nvml_state *s, int64_t t_ns, struct wt_batch *out, int *rc_out)
{
    int64_t now = wt_now_mono_ns();
    /* A tick may come a little early on the grid: 0.9 s counts as the second. */
    if (s->procs_at && now - s->procs_at < PROCS_EVERY_NS / 10 * 9) {
        /* Between splits (an interval under a second) the last split's series again, stamped
         * with its time: /metrics keeps them on every page, the store has them already. */
        if (s->attrib && s->split_t_ns && wt_attrib_emit(s->attrib, s->split_t_ns, out) != 0)
            *rc_out |= -ENOMEM;
        return;
    }
    s->procs_at = now;
    struct wt_gpu_procs *list = calloc(s->n ? s->n : 1, sizeof *list);
    size_t n = 0;
    bool split = false;
    if (!list)
        return;
    for (unsigned int i = 0; i < s->n; i++) {
        struct gpu *g = &s->gpus[i];
        if (!g->up || !g->known || (g->unsupported & (1u << F_PROCS)))
            continue;
        struct wt_gpu_procs *p = &list[n];
        p->gpu = g->index;
        snprintf(p->uuid, sizeof p->uuid, "%s", g->uuid);
        nvmlReturn_t rc = read_procs(s->fn.compute_procs, s->fn.compute_procs_v1, g->dev, p);
        nvmlReturn_t rg = read_procs(s->fn.graphics_procs, s->fn.graphics_procs_v1, g->dev, p);
        if (rc == NVML_ERROR_NOT_SUPPORTED && rg == NVML_ERROR_NOT_SUPPORTED) {
            g->unsupported |= 1u << F_PROCS;
            wt_debug(MOD, "running processes: not supported gpu=%u uuid=%s", g->index, g->uuid);
            continue;
        }
        if (rc == NVML_SUCCESS || rg == NVML_SUCCESS) {
            if (s->attrib && g->have_energy_mj && g->index < WT_ATTRIB_MAX_DEVICES) {
                attribute(s, g, p, t_ns);
                split = true;
            }
            n++;
        } else {
            memset(p, 0, sizeof *p);
        }
    }
    if (split)
        s->split_t_ns = t_ns;
    if (split && wt_attrib_emit(s->attrib, t_ns, out) != 0)
        *rc_out |= -ENOMEM;
    pthread_mutex_lock(&procs_mu);
    struct wt_gpu_procs *old = procs_list;
    procs_list = n ? list : NULL;
    procs_n = n;
    procs_t = t_ns;
    procs_owner = s;
    pthread_mutex_unlock(&procs_mu);
    free(old);
    if (!n)
        free(list);
}

int wt_nvml_processes(struct wt_gpu_procs *out, size_t cap, size_t *n, int64_t *t_ns)
{
    int rc = -ENODATA;
    *n = 0;
    *t_ns = 0;
    pthread_mutex_lock(&procs_mu);
    if (procs_list && procs_n) {
        *n = procs_n < cap ? procs_n : cap;
        memcpy(out, procs_list, *n * sizeof *out);
        *t_ns = procs_t;
        rc = 0;
    }
    pthread_mutex_unlock(&procs_mu);
    return rc;
}

void wt_nvml_procs_forget(const struct nvml_state *s)
{
    pthread_mutex_lock(&procs_mu);
    if (procs_owner == s) {
        free(procs_list);
        procs_list = NULL;
        procs_n = 0;
        procs_owner = NULL;
    }
    pthread_mutex_unlock(&procs_mu);
}
