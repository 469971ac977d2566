/* SPDX-License-Identifier: MIT */
/*
 * CPU attribution (the Kepler/Scaphandre approach): the CPU packages' energy (RAPL, every
 * wattage_cpu_energy_joules_total{domain="package"} of a rapl batch, summed) over each interval
 * between two rapl polls, split over the processes by the CPU time each used in it (utime +
 * stime deltas of <procfs_root>/proc/PID/stat) against all the CPU time there was (the
 * aggregate line of <procfs_root>/proc/stat, idle included); the rest is owner="idle". Kept in
 * a ledger of collect/attrib.h (µJ), so parts sum exactly to the packages' energy:
 *   wattage_process_cpu_energy_joules_total{pid,owner…} and {owner="idle"}.
 * A process is counted in an interval only when it used CPU time in it; one that stops (or
 * sleeps) past the grace period is folded into its owner.
 *
 * In the daemon it is a hub sink (rapl batches in) with a slot of its own ("cpu_attrib")
 * that it publishes to from the rapl collector's thread.
 */
#ifndef WT_PROCATTR_H
#define WT_PROCATTR_H

#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "core/hub.h"
#include "core/reading.h"

struct wt_cpu_attrib;

/*
 * Opens the CPU ledger; with a hub, registers its sink and slot (before collectors start).
 * grace_ns as collectors.nvml.attribution_grace. Returns 0, or -ENOMEM / -ENOSPC with err.
 */
int wt_cpu_attrib_open(struct wt_hub *hub, int64_t grace_ns, struct wt_cpu_attrib **out,
                       struct wt_err *err) WT_MUST_USE;
/* Closes it (NULL is fine): after every publisher, as the hub calls its sink until then. */
void wt_cpu_attrib_close(struct wt_cpu_attrib *c);

/*
 * One batch of a collector: when it is the rapl collector's and holds package energy, splits
 * the energy since the previous such batch and appends every series to out. Returns 1 when it
 * appended; 0 when the batch was not one to split (another collector's, the first: a baseline,
 * /proc unreadable); -ENODATA for a rapl batch without package energy; -ENOMEM.
 */
int wt_cpu_attrib_feed(struct wt_cpu_attrib *c, const char *collector, const struct wt_batch *b,
                       struct wt_batch *out) WT_MUST_USE;

#endif
