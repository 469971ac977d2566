/* SPDX-License-Identifier: MIT */
/*
 * The source interface the poll loop drives: a source is one table of functions (open, poll,
 * close, optionally targets). The collectors in collect/ implement it; core knows nothing of any
 * one of them, and the loop is handed the table of tables (collect/collector.h's registry).
 * open() returning -ENOENT means "not present on this host": not an error, the poll loop looks
 * again later with backoff.
 */
#ifndef WT_SOURCE_H
#define WT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "core/reading.h"

/* One target of a multi-target collector. */
#define WT_TARGET_NAME_LEN 23 /* with "redfish:" it fits a hub slot name */
struct wt_target {
    char name[WT_TARGET_NAME_LEN + 1]; /* unique within the collector: [A-Za-z0-9_.-] */
    int64_t interval_ns;               /* 0: the collector's interval */
};

#define WT_MAX_TARGETS 64

struct wt_collector_ops {
    const char *name;
    /* Its block of the config (enabled, interval). */
    const struct wt_collector_config *(*config)(const struct wt_config *cfg);
    /*
     * Prepares the source; *state is owned by the collector until close. Returns 0, -ENOENT when
     * the source is absent (err says what was looked for), or another negative errno with err.
     * NULL for a multi-target collector (targets below), which is opened per target.
     */
    int (*open)(const struct wt_config *cfg, void **state, struct wt_err *err);
    /*
     * Appends this tick's readings, stamped t_ns (CLOCK_REALTIME), to out. Returns 0, or a
     * negative errno with err filled when the whole source failed this tick (a single lost GPU is
     * not a failure: it is reported as gpu_up 0).
     */
    int (*poll)(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err);
    /* Releases everything; accepts NULL. */
    void (*close)(void *state);

    /*
     * Optional, for sources with several targets (PDUs, BMCs, meters). targets() fills up to max
     * entries from the config and returns how many it names; each target gets its own thread,
     * hub slot "<name>:<target>", schedule and backoff, so a dead PDU delays nothing else. Then
     * open_target opens target i instead of open (poll and close are shared).
     */
    size_t (*targets)(const struct wt_config *cfg, struct wt_target *out, size_t max);
    int (*open_target)(const struct wt_config *cfg, size_t i, void **state, struct wt_err *err);
    /*
     * Optional: after a failed poll, the readings that say so (wattage_facility_up 0 with the
     * target's labels), which replace the target's latest readings and are stored; without it a
     * failed poll leaves the source with no readings at all.
     */
    int (*down)(void *state, int64_t t_ns, struct wt_batch *out);
    /*
     * Optional: after a successful poll stamped t_ns, the readings of the fields that poll did
     * not read again because they are read at their own, slower cadence (hwmon's max_hold), each
     * with the stamp of the read that made it, and anything that says how old they are. They
     * stay in the latest readings (the snapshot, /metrics, status: wt_hub_publish_held) and go
     * to no sink, which saw them when they were read. Returns 0 or a negative errno (then none).
     */
    int (*held)(void *state, int64_t t_ns, struct wt_batch *out);
    /*
     * It reads energy counters (NVML, RAPL): polled again at once when a job starts, is marked
     * or ends (core/hub.h's edge samples), so a job's edges fall on readings.
     */
    bool edge_samples;
    /*
     * Optional, with edge_samples: sub-polls, cheap readings between ticks (NVML: each GPU's
     * energy counter alone). sub_interval says how often now (0: none; it may change after the
     * first polls, as NVML's auto decides on what they cost); the loop asks after every tick.
     * sub_poll appends readings stamped t_ns to out: they go to the sinks that take extra
     * readings (the store; core/hub.h's wt_hub_publish_extra), never to the latest readings or
     * to the per-tick sinks. It runs on the collector's thread between polls, never delaying a
     * tick. Returns 0 or a negative errno (the readings are then dropped; no failure is counted:
     * the next tick says what is wrong).
     */
    int64_t (*sub_interval)(void *state);
    int (*sub_poll)(void *state, int64_t t_ns, struct wt_batch *out);
    /*
     * A cheap file source (sysfs, procfs, a system call): open and poll never block for long.
     * Those at one interval are polled one after another on one thread (core/loop.h), so they
     * wake once a tick together; each keeps its slot, open retries and backoff.
     */
    bool file_source;
};

#endif
