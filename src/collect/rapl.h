/* SPDX-License-Identifier: MIT */
/*
 * RAPL through the powercap sysfs class (<sysfs_root>/sys/class/powercap/intel-rapl:N[:M]; AMD
 * names its zones the same). Each zone's energy_uj is a µJ counter that wraps at
 * max_energy_range_uj; the collector unwraps it in 64 bits and emits
 *   wattage_cpu_energy_joules_total{package="N",domain="package|core|uncore|dram|psys"}
 *   wattage_cpu_power_watts{…}   (energy delta / time delta, from the second poll on)
 *
 * Since CVE-2020-8694 (Platypus) energy_uj is readable by root only; open() and poll() return
 * -EACCES with a message that says so and what to do, logged once per process.
 */
#ifndef WT_RAPL_H
#define WT_RAPL_H

#include <stddef.h>
#include <stdint.h>

#include "core/source.h"

extern const struct wt_collector_ops wt_rapl_collector;

/*
 * How every sysfs file is read: into buf (size n, NUL-terminated, trailing whitespace removed).
 * Returns the length, or a negative errno (-EACCES, -ENOENT, -E2BIG when it does not fit). This
 * is a seam: tests point wt_rapl_read_file at their own function to produce errors that root
 * cannot provoke with chmod, and restore wt_rapl_read_file_default.
 */
typedef int (*wt_rapl_read_fn)(const char *path, char *buf, size_t n);
extern wt_rapl_read_fn wt_rapl_read_file;
int wt_rapl_read_file_default(const char *path, char *buf, size_t n);

/*
 * Plausibility limit for one zone between two readings: this many watts. A decrease whose wrap
 * delta would mean more than this is a reset (new baseline), not a wrap.
 */
#define WT_RAPL_MAX_PLAUSIBLE_W 2000

/*
 * Parses a zone's name file ("package-0", "package-1-die-0", "core", "uncore", "dram", "psys")
 * into its domain ("package", "core", …; an unknown name is kept as is) and, for package zones,
 * the package number in *package and the die in *die (-1 when absent; both -1 for sub-domains).
 * Returns 0, or -EINVAL for an empty name or one that does not fit domain (size n).
 */
int wt_rapl_parse_name(const char *name, char *domain, size_t n, int *package,
                       int *die) WT_MUST_USE;

/*
 * Parses a powercap directory entry: "intel-rapl:N" (*sub = -1), "intel-rapl:N:M", and the same
 * with the "intel-rapl-mmio" prefix (*mmio = 1). Returns 0, or -EINVAL for anything else
 * (including the "intel-rapl" control directory itself).
 */
int wt_rapl_parse_zone_dir(const char *dirname, int *zone, int *sub, int *mmio) WT_MUST_USE;

/*
 * The text logged once and put in err when energy_uj is not readable: names the file, root,
 * CVE-2020-8694 and the udev/tmpfiles.d remedy.
 */
void wt_rapl_permission_message(const char *path, char *buf, size_t n);

#endif
