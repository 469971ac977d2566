/* SPDX-License-Identifier: MIT */
/* Every collector, in a fixed order. Adding a source adds one line here. */
#include "collect/collector.h"

extern const struct wt_collector_ops wt_nvml_collector;
extern const struct wt_collector_ops wt_rapl_collector;
extern const struct wt_collector_ops wt_procfs_collector;
extern const struct wt_collector_ops wt_netdev_collector;
extern const struct wt_collector_ops wt_modbus_collector;
extern const struct wt_collector_ops wt_redfish_collector;
extern const struct wt_collector_ops wt_snmp_collector;
extern const struct wt_collector_ops wt_clock_collector;
extern const struct wt_collector_ops wt_ipmi_collector;
extern const struct wt_collector_ops wt_amd_collector;
extern const struct wt_collector_ops wt_inference_collector;
extern const struct wt_collector_ops wt_hwmon_collector;

/* One line per source. */
/* clang-format off */
const struct wt_collector_ops *const wt_collectors[] = {
    &wt_nvml_collector,
    &wt_rapl_collector,
    &wt_procfs_collector,
    &wt_netdev_collector,
    &wt_modbus_collector,
    &wt_redfish_collector,
    &wt_snmp_collector,
    &wt_clock_collector,
    &wt_ipmi_collector,
    &wt_amd_collector,
    &wt_inference_collector,
    &wt_hwmon_collector,
    NULL,
};
/* clang-format on */
