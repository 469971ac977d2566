/* SPDX-License-Identifier: MIT */
/*
 * The poll loop: one thread per collector, each on absolute CLOCK_MONOTONIC deadlines at its own
 * interval, so a slow source never delays another (the GPU collector above all). Readings are
 * stamped in CLOCK_REALTIME and published to the hub. With daemon.align_ticks (the default) the
 * ticks fall on wall-clock multiples of the collector's interval (every whole second at 1 s, at
 * .00/.25/.50/.75 at 0.25 s), so the nodes of a fleet sample at the same instants and a window in
 * whole seconds has samples at its edges; the first poll is at once, the grid from the next. After
 * 3 consecutive failed polls a collector's interval doubles per failure up to a cap; the first
 * success restores it. A source absent from the host (no NVIDIA driver) is reported once and looked
 * for again later. A collector with sub-polls (core/source.h: NVML's energy counters) takes them
 * between its ticks on the grid of the latest tick, never within half a sub-poll step or twice
 * the latest sub-poll's duration of the next tick, and none while it is failing. The cheap file
 * sources (core/source.h's file_source: procfs, netdev, clock, RAPL, hwmon) that share an
 * interval run on one thread, "wt-files", one after the other at each tick: one wake-up a tick
 * for all of them; each keeps its hub slot, its open retries and its backoff (a backed-off
 * source lets the group's ticks pass).
 */
#ifndef WT_LOOP_H
#define WT_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/hub.h"
#include "core/source.h"

#define WT_BACKOFF_AFTER 3
/* Interval cap under backoff: 32 intervals, at most 5 minutes (never below the interval). */
#define WT_BACKOFF_MAX_FACTOR 32
#define WT_BACKOFF_MAX_NS (300LL * 1000000000LL)

struct wt_loop;

/*
 * Starts a thread for every enabled collector in ops (NULL-terminated; pass wt_collectors for
 * the registry). cfg must outlive the loop. Retry delay for absent sources: retry_ns (0: 30 s,
 * doubling to 5 min). Returns 0 or a negative errno with err filled.
 */
int wt_loop_start(const struct wt_config *cfg, const struct wt_collector_ops *const *ops,
                  struct wt_hub *hub, int64_t retry_ns, struct wt_loop **out,
                  struct wt_err *err) WT_MUST_USE;
/*
 * For a reload: wt_loop_start, and the slots in before (the old loop's) that the new loop does
 * not use are retired before any new thread starts, so a target removed from the configuration
 * has left /metrics, the status and the health check when a new one is first read.
 */
int wt_loop_restart(const struct wt_config *cfg, const struct wt_collector_ops *const *ops,
                    struct wt_hub *hub, int64_t retry_ns, const int *before, size_t nbefore,
                    struct wt_loop **out, struct wt_err *err) WT_MUST_USE;
/* Stops every thread promptly, closes the collectors and frees the loop; accepts NULL. */
void wt_loop_stop(struct wt_loop *l);

/* The hub slots of the loop's threads (up to n into out); returns how many there are. */
size_t wt_loop_slots(const struct wt_loop *l, int *out, size_t n);

/* The next interval after a poll: pure, for tests. fails = consecutive failures so far. */
int64_t wt_loop_next_interval(int64_t base_ns, int fails);

/*
 * The next absolute deadline after `deadline`: one interval on, or, when `now` is already past
 * that, the first point of the same grid after now (missed ticks are skipped, the phase kept, so
 * ticks never drift). Pure, for tests.
 */
int64_t wt_loop_next_deadline(int64_t deadline, int64_t interval, int64_t now);

/*
 * The aligned schedule (daemon.align_ticks), in CLOCK_REALTIME ns: the time the next tick is due.
 * grid is the collector's base interval: every tick falls on a multiple of it. prev_due is when
 * the last tick was due (a grid point; 0 before the first aligned one, which then comes at the
 * first grid point at least half a grid step after now, not right after the first poll at start).
 * interval is the current one (the base, or longer under backoff). The tick due is the first grid
 * point at or after prev_due + interval and at or after now: a late tick skips the points it
 * missed without moving the later ones, and backoff keeps the grid. When the clock was set back
 * (prev_due + interval lies more than interval + grid ahead of now) the schedule restarts from
 * now. Pure, for tests.
 */
int64_t wt_loop_next_aligned(int64_t prev_due, int64_t interval, int64_t grid, int64_t now);

#endif
