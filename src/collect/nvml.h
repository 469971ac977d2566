/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector: NVIDIA GPUs through libnvidia-ml, loaded with dlopen at open() so the
 * binary runs on hosts without NVIDIA. The library is $WATTAGE_NVML_LIBRARY, else
 * collectors.nvml.library (default "libnvidia-ml.so.1"). One NVML session lasts from open to
 * close; nothing is ever set on a GPU.
 *
 * Readings per GPU and poll, labelled gpu="<index>",uuid="<uuid>",model="<name>":
 *   wattage_gpu_info (1, plus pci_bus_id), wattage_gpu_up (0/1), power, temperature and its
 *   slowdown/shutdown thresholds, utilization ratios, memory used/total, SM and memory clocks,
 *   enforced power limit and its min/max, performance state, the clocks event (throttle) bitmask
 *   and wattage_gpu_throttled{reason="…"} per reason, and energy:
 *     wattage_gpu_energy_joules_total{…}            the hardware counter (mJ → J), made
 *         monotone across driver reloads (a decrease starts a new baseline); only the counter;
 *     wattage_gpu_energy_integrated_joules_total{…} power integrated since the collector
 *         started (trapezoids, never across a gap over 3 intervals);
 *     wattage_gpu_energy_gaps_total{…}              gaps in the integrated series;
 *     wattage_gpu_energy_read_skew_seconds{…}       with each counter reading, at a tick or a
 *         sub-poll: how long after the poll's stamp its read returned (up to 10 µs more;
 *         store/uncert.h).
 * Health, each where the GPU reports it:
 *     wattage_gpu_ecc_errors_total{…,type=corrected|uncorrected,counter=volatile|aggregate},
 *     wattage_gpu_remapped_rows{…,kind=correctable|uncorrectable|pending|failure},
 *     wattage_gpu_pcie_replays_total, wattage_gpu_memory_temperature_celsius (field value
 *     NVML_FI_DEV_MEMORY_TEMP), wattage_gpu_fan_speed_ratio{…,fan="N"}, and
 *     wattage_gpu_xid_errors_total{…,xid="N"}: XID events, counted by a thread of the collector
 *     that waits on one NVML event set (never polled); a series appears with its code's first
 *     event. wattage_gpu_info also carries driver_version, vbios_version and cuda_driver_version.
 * The slow fields (the enforced power limit and its min/max, the aggregate ECC counts, remapped
 * rows, the power source) are read at start, every collectors.nvml.slow_interval, when a GPU
 * comes (back), after its XID events and after wt_nvml_slow_refresh; between reads their last
 * value is published at every poll (collect/cadence.h; the table is `cadence` in nvml.c).
 * A metric the GPU does not support (NOT_SUPPORTED) is absent, never zero, and is not asked for
 * again; for the health metrics that is said once per collector at info. A GPU that is lost or
 * stops answering reports only info and gpu_up 0 until it answers.
 */
#ifndef WT_NVML_H
#define WT_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/nvml_api.h"
#include "core/source.h"

extern const struct wt_collector_ops wt_nvml_collector;

/*
 * Energy sub-polls (collectors.nvml.energy_interval): between ticks the collector reads only
 * each GPU's energy counter (nvmlDeviceGetTotalEnergyConsumption), so that a window with edges
 * anywhere interpolates the counter between readings this far apart; the readings go to the
 * store alone (core/hub.h's wt_hub_publish_extra), /metrics, attribution, MIG and alerts see one
 * reading a tick. GPUs without a counter (or down) get none. A duration sets the interval (none
 * when it is not shorter than the tick's); 0/off: none; auto (the default): the energy reads of
 * the first AUTO ticks are timed in CPU time (CLOCK_THREAD_CPUTIME_ID), then
 * wt_nvml_auto_energy_interval decides.
 */
#define WT_NVML_AUTO_ENERGY_NS (200 * 1000000LL)
/*
 * auto's rule, pure: WT_NVML_AUTO_ENERGY_NS when the sub-polls between ticks of interval_ns,
 * each costing cpu_ns_per_tick (every GPU's counter read once), take at most 1 % of a core and
 * the ticks are at least twice as far apart; else 0.
 */
int64_t wt_nvml_auto_energy_interval(int64_t interval_ns, int64_t cpu_ns_per_tick);

/* One entry point the collector resolves: names[0] first, then the older fallbacks. */
#define WT_NVML_MAX_NAMES 3
struct wt_nvml_symbol {
    const char *names[WT_NVML_MAX_NAMES]; /* unused slots NULL */
    bool required;                        /* open fails without it */
    size_t offset;                        /* where the pointer lands (private) */
};

/* Every symbol the collector resolves, for tests that check a library exports them. */
extern const struct wt_nvml_symbol wt_nvml_symbols[];
extern const size_t wt_nvml_symbol_count;

/* What `status` may want to print about the library itself. */
struct wt_nvml_info {
    char library[256];       /* the path that was opened */
    char driver_version[80]; /* "" when the library does not say */
    unsigned int gpu_count;
};

/* ---- the GPUs' processes, for finding the GPUs of a job ---- */

#define WT_NVML_MAX_PROCS 64 /* per GPU; more are left out */

struct wt_gpu_procs {
    unsigned int gpu;
    char uuid[96];
    unsigned int npids;
    unsigned int pids[WT_NVML_MAX_PROCS]; /* compute and graphics, each pid once */
    /* usedGpuMemory of pids[i] (the larger of its compute and graphics entries), bytes;
     * WT_NVML_NO_MEMORY when the driver cannot say */
    unsigned long long mem_b[WT_NVML_MAX_PROCS];
    /* the MIG GPU instance of pids[i] (nvmlProcessInfo_t.gpuInstanceId), WT_NVML_NO_INSTANCE
     * outside MIG or from the original calls, which do not say */
    unsigned int instance[WT_NVML_MAX_PROCS];
};
#define WT_NVML_NO_INSTANCE 0xFFFFFFFFu
#define WT_NVML_NO_MEMORY (~0ULL)

/*
 * The processes NVML lists on each GPU (nvmlDevice{Compute,Graphics}RunningProcesses), as the
 * NVML collector read them at its latest poll (at most once a second; one collector per process:
 * the latest one opened). Nothing of it is stored. Fills out[0..cap), *n (the GPUs that
 * answered) and *t_ns (CLOCK_REALTIME of that read). Returns 0, or -ENODATA when there is no
 * list (no NVML collector, or a library or GPUs without the process calls).
 */
int wt_nvml_processes(struct wt_gpu_procs *out, size_t cap, size_t *n, int64_t *t_ns);

/*
 * The daemon's NVML sessions, shared: every part of wattage that uses NVML (the collector, the
 * power capper) starts its session with wt_nvml_session_acquire(init) and ends it with
 * wt_nvml_session_release(init, shutdown), never with nvmlInit/nvmlShutdown itself. The library
 * (told apart by its init function) is initialised by the first user and shut down when the last
 * lets go, so no part's session ends under another's: a driver or wrapper that does not count
 * nvmlInit/nvmlShutdown pairs, or a change of the order the parts stop in, cannot leave the
 * capper without NVML while it still has limits to restore. acquire returns nvmlInit's answer
 * (nothing is held unless NVML_SUCCESS); release with a NULL init does nothing.
 */
nvmlReturn_t wt_nvml_session_acquire(wt_nvml_init_fn *init);
void wt_nvml_session_release(wt_nvml_init_fn *init, wt_nvml_shutdown_fn *shutdown);

/*
 * Asks every NVML collector of this process to read its slow fields (collect/cadence.h: power
 * limits and their range, aggregate ECC counts, remapped rows, the power source) at its next
 * tick, instead of at the next slow interval: the power capper calls it after it sets or
 * restores a limit, so that the limit it set is seen at once. Thread-safe, never blocks.
 */
void wt_nvml_slow_refresh(void);

/* What an XID code means (NVIDIA's XID catalog) for the common ones, else NULL. */
const char *wt_nvml_xid_meaning(unsigned int xid);

/* Fills info from an open collector's state (the void * its open() returned). Returns 0 or -EINVAL.
 */
int wt_nvml_get_info(const void *state, struct wt_nvml_info *info);

#endif
