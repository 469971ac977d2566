/* SPDX-License-Identifier: MIT */
/*
 * What the NVML collector's parts share (collect/nvml.c, nvml_xid.c, nvml_procs.c): the shared
 * NVML sessions (one per library, counted), and the filing of one call's outcome per feature.
 */
#include "collect/nvml_base.h"

#include <pthread.h>
#include <string.h>

static const char *const feature_names[F_COUNT] = {
    "power",
    "energy",
    "temperature",
    "slowdown threshold",
    "shutdown threshold",
    "utilization",
    "memory",
    "SM clock",
    "memory clock",
    "clocks event reasons",
    "power limit",
    "power limit constraints",
    "performance state",
    "persistence mode",
    "PCI info",
    "running processes",
    "VBIOS version",
    "volatile ECC counts",
    "aggregate ECC counts",
    "remapped rows",
    "PCIe replay counter",
    "memory temperature",
    "fan speed",
    "XID events",
};

const char *wt_nvml_errstr(const struct nvml_state *s, nvmlReturn_t r)
{
    const char *m = s->fn.error_string ? s->fn.error_string(r) : NULL;
    return m ? m : "unknown error";
}

/* Files the outcome of one call. Returns true on success. */
bool wt_nvml_check(struct nvml_state *s, struct gpu *g, struct tick *tk, enum feature f,
                   nvmlReturn_t r, const char *what)
{
    if (r == NVML_SUCCESS) {
        tk->ok++;
        return true;
    }
    if (r == NVML_ERROR_NOT_SUPPORTED && f < F_COUNT) {
        /* Absent on this GPU for good: never zero, and not asked again every tick. */
        g->unsupported |= 1u << f;
        if (f == F_ENERGY)
            /* The counter is the figure to trust: its absence changes every energy figure of
             * this GPU, so it is said once where people look, not at debug level. */
            wt_info(MOD,
                    "no energy counter gpu=%u uuid=%s (%s): its energy is integrated from power "
                    "readings (wattage_gpu_energy_integrated_joules_total)",
                    g->index, g->uuid, wt_nvml_errstr(s, r));
        else if ((HEALTH_FEATURES & (1u << f)) && !(s->said_unsupported & (1u << f))) {
            /* Once per collector, not per GPU: a board without it has eight GPUs without it. */
            s->said_unsupported |= 1u << f;
            wt_info(MOD, "%s: %s gpu=%u uuid=%s (%s): its metric is absent", feature_names[f],
                    wt_nvml_errstr(s, r), g->index, g->uuid, what);
        } else
            wt_debug(MOD, "%s: %s gpu=%u uuid=%s", feature_names[f], wt_nvml_errstr(s, r), g->index,
                     g->uuid);
        return false;
    }
    if (r == NVML_ERROR_GPU_IS_LOST)
        tk->lost = true;
    if (tk->hard == NVML_SUCCESS) {
        tk->hard = r;
        tk->hard_what = what;
    }
    return false;
}

void wt_nvml_copy_str(char *dst, size_t n, const char *src, size_t src_n)
{
    size_t len = strnlen(src, src_n);
    if (len >= n)
        len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* ---- shared sessions ---- */

#define MAX_LIBS 4
static pthread_mutex_t sessions_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    wt_nvml_init_fn *init;
    unsigned int users;
} sessions[MAX_LIBS];

nvmlReturn_t wt_nvml_session_acquire(wt_nvml_init_fn *init)
{
    nvmlReturn_t r = NVML_SUCCESS;
    int free_slot = -1;
    pthread_mutex_lock(&sessions_mu);
    for (int i = 0; i < MAX_LIBS; i++) {
        if (sessions[i].users && sessions[i].init == init) {
            sessions[i].users++;
            goto out;
        }
        if (!sessions[i].users && free_slot < 0)
            free_slot = i;
    }
    /* The first user (or more libraries than slots: then each user has its own session). */
    r = init();
    if (r == NVML_SUCCESS && free_slot >= 0) {
        sessions[free_slot].init = init;
        sessions[free_slot].users = 1;
    }
out:
    pthread_mutex_unlock(&sessions_mu);
    return r;
}

void wt_nvml_session_release(wt_nvml_init_fn *init, wt_nvml_shutdown_fn *shutdown)
{
    if (!init)
        return;
    bool last = true;
    pthread_mutex_lock(&sessions_mu);
    for (int i = 0; i < MAX_LIBS; i++) {
        if (sessions[i].users && sessions[i].init == init) {
            last = --sessions[i].users == 0;
            break;
        }
    }
    if (last && shutdown)
        shutdown();
    pthread_mutex_unlock(&sessions_mu);
}
