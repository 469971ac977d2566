/* SPDX-License-Identifier: MIT */
/*
 * A collector is one table of functions. Adding a source adds one file and one line in
 * registry.c. open() returning -ENOENT means "not present on this host": not an error, the poll
 * loop looks again later with backoff.
 */
#ifndef WT_COLLECTOR_H
#define WT_COLLECTOR_H

#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "core/reading.h"

struct wt_collector_ops {
    const char *name;
    /* Its block of the config (enabled, interval). */
    const struct wt_collector_config *(*config)(const struct wt_config *cfg);
    /*
     * Prepares the source; *state is owned by the collector until close. Returns 0, -ENOENT when
     * the source is absent (err says what was looked for), or another negative errno with err.
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
};

/* The registry: every collector, in a fixed order, NULL-terminated. */
extern const struct wt_collector_ops *const wt_collectors[];

/* Roots for sysfs and procfs reads: WATTAGE_SYSFS_ROOT / WATTAGE_PROCFS_ROOT, else "". */
const char *wt_sysfs_root(void);
const char *wt_procfs_root(void);

#endif
