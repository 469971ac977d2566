/* SPDX-License-Identifier: MIT */
/*
 * The root directories every sysfs and procfs read goes through. Tests and the integration
 * scripts point them at captured or generated trees with WATTAGE_SYSFS_ROOT and
 * WATTAGE_PROCFS_ROOT; unset means the real /sys and /proc (root ""). Read on each call, so a
 * test may set the variable before opening a collector.
 */
#include <stdlib.h>

#include "collect/collector.h"

static const char *root_from(const char *var)
{
    const char *v = getenv(var);
    return v ? v : "";
}

const char *wt_sysfs_root(void)
{
    return root_from("WATTAGE_SYSFS_ROOT");
}

const char *wt_procfs_root(void)
{
    return root_from("WATTAGE_PROCFS_ROOT");
}
