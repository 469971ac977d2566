/* SPDX-License-Identifier: MIT */
/*
 * hwmon power and energy sensors through the sysfs class (<sysfs_root>/sys/class/hwmon/hwmonN):
 * every powerN_average / powerN_input (µW) and energyN_input (µJ) of every chip, as the kernel's
 * Documentation/hwmon/sysfs-interface defines them. The ACPI power meter (acpi_power_meter.c)
 * registers its attributes on the ACPI device, so each hwmonN is read in its own directory and
 * then in hwmonN/device.
 *
 *   wattage_hwmon_power_watts{chip,sensor,label,role[,socket][,hwmon]}
 *   wattage_hwmon_energy_joules_total{chip,sensor,label,role[,socket][,hwmon],method}
 *   wattage_hwmon_average_interval_seconds{chip,sensor,label,role[,socket][,hwmon]}
 * socket="N" on Grace's meters ("Module / Grace / CPU / SysIO Power Socket N").
 *
 * method="counter": an energyN_input counter, reset-safe in integer µJ (a decrease is a reset,
 * an increase of more than WT_HWMON_MAX_POWER_UW over the span is refused: new baseline);
 * method="integrated": the power integrated by wattage (the store treats it as integrated power,
 * with gaps). A power sensor read as an average is placed at the middle of its averaging window
 * (powerN_average_interval, ms) as core/energy.h does for NVML. hwmon="hwmonN" is added only
 * when two sensors would otherwise share their labels (two PSUs of one driver).
 *
 * The family is hwmon's own, not wattage_gpu_* or wattage_cpu_*: amdgpu's and xe's hwmon power
 * is the same power the AMD and NVML collectors publish, and Grace's rails are not additive, so
 * role says what a sensor is and nothing sums them by default.
 *
 * Each sensor at its own cadence (collectors.hwmon.max_hold; auto, the default: two of the
 * collector's ticks, so that the store's segment rule never reads a hold as a gap): a power
 * sensor is read no more often than its chip's update_interval and, when averaged, its
 * powerN_average_interval (the larger), and at least every max_hold; a hold of a tick or less is
 * every tick. The readings polled are those the hardware made, stamped when read, and the
 * integration spans the hold (a trapezoid between two real readings, not a staircase of
 * republished values; an average is placed at the middle of its window as ever). Between its
 * reads the collector's held op gives the sensor's last readings with their read's stamp, which
 * stay in the hub's latest readings and go to no sink, and wattage_hwmon_reading_age_seconds
 * (0 on the ticks that read it). Energy counters (energyN_input) are read every tick. The held
 * sensors are the collector's slow_fields in the status document, max_hold its slow interval.
 */
#ifndef WT_HWMON_H
#define WT_HWMON_H

#include <stddef.h>
#include <stdint.h>

#include "core/source.h"

extern const struct wt_collector_ops wt_hwmon_collector;

/*
 * Largest power a single sensor may report: 100 kW (a PSU shelf, a whole server's wall). Beyond
 * it the reading is refused: firmware errors show as 0xFFFFFFFF mW, 4294967295000 µW.
 */
#define WT_HWMON_MAX_POWER_UW 100000000000ULL

/* The kinds of attribute file the collector reads. */
enum wt_hwmon_attr {
    WT_HWMON_POWER_AVERAGE, /* powerN_average, µW */
    WT_HWMON_POWER_INPUT,   /* powerN_input, µW */
    WT_HWMON_ENERGY_INPUT,  /* energyN_input, µJ, cumulative */
};

/*
 * Parses an attribute file name: "power2_average", "power1_input", "energy1_input". Fills *attr
 * and *index (N >= 1). Returns 0, or -EINVAL for any other name (labels, caps, intervals...).
 */
int wt_hwmon_parse_attr(const char *fname, enum wt_hwmon_attr *attr, int *index) WT_MUST_USE;

/*
 * The role of a sensor from its chip name ("power_meter", "amdgpu", "xe", "pmbus"...) and its label
 * (powerN_label, or an ACPI meter's power1_oem_info):
 *   "module"   Grace "Module Power Socket N" (the whole Grace Hopper module, GPU included)
 *   "cpu"      Grace "Grace Power Socket N" (the Grace socket total)
 *   "cpu_rail" Grace "CPU Power Socket N", "sysio_rail" Grace "SysIO Power Socket N": parts of
 *              "cpu", never added to it
 *   "wall"     any other ACPI power meter (the server's wall power)
 *   "psu_in"   a PMBus "pin"/"pinN", "psu_out" a "pout"/"poutN"
 *   "gpu"      amdgpu, xe, i915 (card level); "gpu_rail" an xe "pkg" sensor or an i915_gtN chip
 *              (parts of the card)
 *   "other"    anything else
 * Writes the role into out (size n). Returns 0 or -E2BIG.
 */
int wt_hwmon_role(const char *chip, const char *label, char *out, size_t n) WT_MUST_USE;

/*
 * Parses one sysfs value: a decimal unsigned integer with nothing after it but whitespace.
 * Returns 0 or -EINVAL (empty, a sign, letters, overflow).
 */
int wt_hwmon_parse_u64(const char *s, uint64_t *out) WT_MUST_USE;

/*
 * How many value files (powerN_*, energyN_input) the collector state of wt_hwmon_collector has
 * read since it was opened: what a tick costs in reads (tests, bench/hwmon_walk).
 */
uint64_t wt_hwmon_value_reads(const void *state);

#endif
