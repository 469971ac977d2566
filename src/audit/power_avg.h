/* SPDX-License-Identifier: MIT */
/*
 * Rolling means of power over the last 1, 5 and 15 minutes, as `uptime` gives load, computed
 * incrementally from the readings the hub passes (core/rolling.h) and published every
 * daemon.interval on the hub's slot "power_avg":
 *   wattage_gpu_power_average_watts{gpu,uuid,model,window="1m"|"5m"|"15m"}
 *   wattage_node_power_average_watts{window}   (GPUs + CPU packages + DRAM, as RAPL reads them)
 *   wattage_site_power_average_watts{window}   (the topology's facility_total meters: the sum of
 *     the power series they match, each integrated across 3 of its collector's intervals; only
 *     once every such meter has a mean for the window. The topology is read at start.)
 * so /metrics, /api/v1/status, the store and remote write all have them. A window under half
 * covered (a daemon just started, a GPU lost for long) has no series until it is.
 */
#ifndef WT_POWER_AVG_H
#define WT_POWER_AVG_H

#include "core/config.h"
#include "core/err.h"
#include "core/hub.h"

struct wt_power_avg;

/*
 * Registers the sink and the slot (before collectors publish) and starts the publishing thread;
 * with hub NULL (the tests) there is neither: feed and batch by hand. Close it after every
 * publisher has stopped (the hub keeps calling its sink until then).
 */
int wt_power_avg_open(const struct wt_config *cfg, struct wt_hub *hub, struct wt_power_avg **out,
                      struct wt_err *err);
/* Stops the thread; its series leave the hub's snapshot. Accepts NULL. */
void wt_power_avg_close(struct wt_power_avg *p);

/*
 * For tests: feeds one batch as the sink does, and builds the batch the thread would publish at
 * now_ns. Returns 0 or -ENOMEM.
 */
void wt_power_avg_feed(struct wt_power_avg *p, const char *collector, const struct wt_batch *b);
int wt_power_avg_batch(struct wt_power_avg *p, int64_t now_ns, struct wt_batch *out);

#endif
