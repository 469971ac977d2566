/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's MIG instances: a part of the collector (collect/nvml.c opens, polls and
 * closes it) with its own optional entry points, resolved from the collector's library handle.
 *
 * On a GPU in MIG mode, every poll enumerates its MIG devices again (instances are created and
 * destroyed at run time): nvmlDeviceGetMigDeviceHandleByIndex over 0 .. the maximum count, and
 * per handle its GPU and compute instance ids, MIG UUID, memory and compute processes. A MIG
 * instance has no power, energy or utilization of its own (FIELD-NOTES: a split is a model,
 * and repeating the board's energy on every instance double counts), so the parent GPU's
 * energy is split over its instances, counted once:
 *
 *   wattage_mig_energy_joules_total{gpu,uuid,model,gpu_instance,compute_instance,mig_uuid}
 *       a counter per instance ever seen; with
 *   wattage_mig_energy_joules_total{gpu,uuid,model,gpu_instance="idle"}
 *       the rest, per GPU the series sum to the parent's energy since the split started
 *       (exactly, in mJ, over every window: see wt_mig_ledger_account);
 *   wattage_mig_memory_used_bytes, wattage_mig_memory_total_bytes, wattage_mig_processes
 *       gauges per instance present this poll (labels as its energy);
 *   wattage_mig_attribution_info{gpu,uuid,model,method} 1  how this poll's energy was split:
 *       memory, equal or idle (see enum wt_mig_method);
 *   wattage_mig_sm_active_ratio  GPM (Hopper and newer, where the library has
 *       nvmlGpmMigSampleGet): the GPU instance's SM activity, mean over the time since its
 *       previous sample (at least 100 ms), 0..1; the same on each of its compute instances.
 *
 * That is the only utilization per instance: nvmlDeviceGetUtilizationRates answers
 * NOT_SUPPORTED on MIG handles (and on a MIG-enabled parent), and none is made up. GPM's
 * figure is reported, not used for the split (the split is the per-process rule under MIG).
 *
 * A GPU that answers NOT_SUPPORTED to nvmlDeviceGetMigMode (before Ampere) is not asked again; a
 * library without the MIG entry points turns the part off, said once at open. A GPU not in MIG
 * mode has no MIG series. A handle that answers NOT_FOUND or INVALID_ARGUMENT between the calls
 * of one poll is an instance destroyed meanwhile: left out of this poll. Without GPM (before
 * Hopper, or no entry points) there is no SM activity, said once. An instance no longer
 * enumerated is said once at info; its counter stays (frozen), so sums stay continuous.
 */
#ifndef WT_NVML_MIG_H
#define WT_NVML_MIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/nvml_api.h"
#include "core/err.h"
#include "core/reading.h"

/* ---- the split (pure; for tests) ---- */

#define WT_MIG_MAX_SLOTS 64 /* instances ever seen per GPU; more are counted as idle */
#define WT_MIG_UUID_LEN 96

/* How one interval's energy went to the instances. */
enum wt_mig_method {
    WT_MIG_MEMORY, /* busy instances by the memory their processes use */
    WT_MIG_EQUAL,  /* busy instances equally: some process's memory was not known */
    WT_MIG_IDLE,   /* no instance had a process (or the interval was a gap): all idle */
};

/* "memory", "equal", "idle". */
const char *wt_mig_method_name(enum wt_mig_method m);

/* One instance as read this poll. */
struct wt_mig_instance {
    unsigned int gi, ci; /* GPU and compute instance ids */
    char mig_uuid[WT_MIG_UUID_LEN];
    unsigned int nprocs;  /* compute processes in it */
    bool procs_mem_known; /* every process said its memory */
    uint64_t procs_mem_b; /* their memory, bytes */
    bool have_mem;        /* nvmlDeviceGetMemoryInfo answered */
    uint64_t mem_used_b, mem_total_b;
};

/* An instance's energy counter. */
struct wt_mig_slot {
    unsigned int gi, ci;
    char mig_uuid[WT_MIG_UUID_LEN];
    uint64_t energy_mj; /* counted to it since the split started */
    bool present;       /* enumerated at the last account */
    bool gone;          /* set by the account that found it gone; the caller clears it */
};

/* One GPU's split. Zero-initialise. */
struct wt_mig_ledger {
    bool started;
    uint64_t last_mj; /* the parent's energy at the last account */
    int64_t last_t_ns;
    uint64_t idle_mj;
    bool full_said; /* more instances than slots (said once) */
    unsigned int n;
    struct wt_mig_slot slot[WT_MIG_MAX_SLOTS];
};

/*
 * Accounts the parent's energy since the last call over the n instances present now. parent_mj
 * is the parent's energy counter in mJ (monotone; a decrease starts a new baseline and counts
 * nothing). The first call is the baseline. busy is the parent's utilization, 0..1, or < 0 when
 * unknown (then 1): that share goes to the instances with processes, by their processes' memory
 * when every one of them said it (WT_MIG_MEMORY), else equally (WT_MIG_EQUAL); the rest, and all
 * of it when no instance has a process or t_ns - the last call exceeds gap_ns (WT_MIG_IDLE), to
 * idle. Instances are matched to slots by (gi, ci, mig_uuid); a slot not matched is marked
 * absent (gone set when it was present). Every part is an integer in mJ, so
 * idle + sum(slots) == parent_mj - baseline exactly. *method: this interval's method. Returns
 * the number of slots that went away this call.
 */
unsigned int wt_mig_ledger_account(struct wt_mig_ledger *l, uint64_t parent_mj, int64_t t_ns,
                                   int64_t gap_ns, double busy, const struct wt_mig_instance *in,
                                   size_t n, enum wt_mig_method *method);

/* ---- the collector part ---- */

struct wt_nvml_mig;

/* Every entry point this part resolves, for tests that check a library exports them. */
extern const char *const wt_nvml_mig_symbols[];
extern const size_t wt_nvml_mig_symbol_count;

/*
 * Opens the part over the collector's library handle dl (NVML initialised; library is its path,
 * for messages) for ngpus GPUs; gap_ns: the longest span between two polls that is not a gap.
 * Without the MIG entry points the part is off (said once at info) and polls do nothing.
 * Returns 0 and *out, or -ENOMEM.
 */
int wt_nvml_mig_open(void *dl, const char *library, unsigned int ngpus, int64_t gap_ns,
                     wt_nvml_error_string_fn *error_string, struct wt_nvml_mig **out) WT_MUST_USE;

/*
 * Enumerates GPU index's MIG instances, splits its energy over them and adds their readings to
 * out, labelled labels (the GPU's gpu,uuid,model) plus the instance's, stamped t_ns. dev is the
 * collector's handle; uuid tells another board at the index (its ledger starts afresh);
 * have_energy / energy_mj: the parent's energy this tick (mJ, monotone); busy: its utilization
 * (0..1, < 0 unknown). The MIG mode is a slow field (collect/cadence.h; it changes only with a
 * GPU reset): asked when slow, or when the last ask failed, else the last answer holds; the
 * instances are enumerated at every poll. Called only for a GPU that is up this poll; a NULL m
 * does nothing. Returns 0 or -ENOMEM.
 */
int wt_nvml_mig_poll_gpu(struct wt_nvml_mig *m, unsigned int index, nvmlDevice_t dev,
                         const char *uuid, const char *labels, bool slow, bool have_energy,
                         uint64_t energy_mj, double busy, int64_t t_ns,
                         struct wt_batch *out) WT_MUST_USE;

/* Frees m. Accepts NULL. */
void wt_nvml_mig_close(struct wt_nvml_mig *m);

#endif
