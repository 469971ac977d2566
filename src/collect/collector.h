/* SPDX-License-Identifier: MIT */
/*
 * The registry of collectors and the roots their file reads go through. Each collector
 * implements the source interface of core/source.h; adding a source adds one file and one line in
 * registry.c.
 */
#ifndef WT_COLLECTOR_H
#define WT_COLLECTOR_H

#include "core/source.h"

/* The registry: every collector, in a fixed order, NULL-terminated. */
extern const struct wt_collector_ops *const wt_collectors[];

/* Roots for sysfs and procfs reads: WATTAGE_SYSFS_ROOT / WATTAGE_PROCFS_ROOT, else "". */
const char *wt_sysfs_root(void);
const char *wt_procfs_root(void);

#endif
