/* SPDX-License-Identifier: MIT */
/*
 * Dark power: the energy a GPU spends idle. A GPU is idle when NVML (wt_nvml_processes) or ROCm
 * SMI (wt_rocm_processes) lists no process on it and its utilization reads 0 (an AMD package,
 * collect/rocm.h, counts on its primary, where its power is: idle when no member lists a
 * process and none is busy); a span between two polls counts as idle when
 * the GPU was idle at both ends and the span is no longer than 3 daemon intervals (the gap rule of
 * the energy integration). Its energy is the hardware counter's delta (the power readings
 * integrated, trapezoids, where there is no counter or it went backwards). Without a process list
 * (no NVML, or a driver without the process calls) nothing is counted: the series are absent,
 * never zero.
 *
 * The daemon feeds every NVML and AMD batch through a hub sink and publishes, on the hub's
 * slot "dark", per GPU (labels gpu, uuid, model):
 *   wattage_gpu_idle                         0/1, idle at the latest poll
 *   wattage_gpu_idle_energy_joules_total     idle energy since the daemon started
 *   wattage_gpu_idle_seconds_total           idle time since the daemon started
 *   wattage_gpu_idle_energy_today_joules     idle energy since 00:00 UTC (as this daemon saw it)
 *   wattage_gpu_idle_power_watts             mean power while idle today: the idle power level
 * so /metrics, /api/v1/status, the store and remote write have them. The store keeps them as
 * gauges (part of the GPU's energy, never summed beside it); wt_dark_days reads them back per
 * day for the report and `wattage status`.
 */
#ifndef WT_DARK_H
#define WT_DARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/nvml.h"
#include "core/config.h"
#include "core/err.h"
#include "core/hub.h"
#include "store/store.h"

struct wt_dark;

/*
 * Registers the sink and the slot "dark" (before collectors publish); with hub NULL (the tests)
 * there is neither: feed and batch by hand. Close it after every publisher has stopped.
 */
int wt_dark_open(const struct wt_config *cfg, struct wt_hub *hub, struct wt_dark **out,
                 struct wt_err *err) WT_MUST_USE;
/* Its series leave the hub's snapshot. Accepts NULL. */
void wt_dark_close(struct wt_dark *d);

/*
 * Feeds one NVML or AMD batch (collector "nvml" or "amd") with the process list of that poll
 * (procs[0..nprocs), a GPU absent from it has no list: not idle, not counted); have_procs false
 * means no list at all. Batches of other collectors are ignored. For the tests; the sink calls
 * it with wt_nvml_processes or wt_rocm_processes.
 */
void wt_dark_feed(struct wt_dark *d, const char *collector, const struct wt_batch *b,
                  const struct wt_gpu_procs *procs, size_t nprocs, bool have_procs);
/* Appends the series above as of now_ns. Returns 0 or -ENOMEM. */
int wt_dark_batch(struct wt_dark *d, int64_t now_ns, struct wt_batch *out) WT_MUST_USE;

/*
 * Whether GPU uuid is idle now and since when (CLOCK_REALTIME ns of the first poll of this idle
 * run). false when it is not, or unknown.
 */
bool wt_dark_idle_since(struct wt_dark *d, const char *uuid, int64_t *since_ns);

/* ---- reading it back: idle energy per GPU and UTC day, from the store ---- */

struct wt_dark_day {
    char node[64];
    char gpu[16], uuid[96], model[96];
    int64_t day_ns;  /* 00:00 UTC of the day */
    double energy_j; /* idle energy within the window's share of that day */
    double idle_s;   /* idle time within it */
};

/*
 * Idle energy and time of every GPU per UTC day over [from_ns, to_ns], from the stored
 * wattage_gpu_idle_energy_joules_total and wattage_gpu_idle_seconds_total (a decrease is a
 * daemon restart: counted from its new start). Days without idle data are left out. *out is
 * malloc'd (free it; NULL when none). Returns 0, -EIO or -ENOMEM.
 */
int wt_dark_days(struct wt_store *st, int64_t from_ns, int64_t to_ns, struct wt_dark_day **out,
                 size_t *n) WT_MUST_USE;

/*
 * The increase of a counter over points pts[0..n) (time order) that restarts from 0 when the
 * daemon does: a decrease counts the new value from 0. Pure; for wt_dark_days and the tests.
 */
double wt_dark_increase(const double *v, size_t n);

#endif
