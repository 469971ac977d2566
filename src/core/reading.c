/* SPDX-License-Identifier: MIT */
/* Readings, the metric table and canonical label strings; see reading.h. */
#include "core/reading.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const struct wt_metric wt_metrics[WT_M_COUNT] = {
    [WT_M_GPU_INFO] = {"wattage_gpu_info", "GPU identity: index, UUID, model and PCI bus id.",
                       WT_GAUGE},
    [WT_M_GPU_UP] = {"wattage_gpu_up", "1 when the GPU answered the last poll, 0 when lost.",
                     WT_GAUGE},
    [WT_M_GPU_POWER_W] = {"wattage_gpu_power_watts",
                          "GPU board power in watts as NVML reports it (a 1 s average on Ampere "
                          "and newer).",
                          WT_GAUGE},
    [WT_M_GPU_ENERGY_J] = {"wattage_gpu_energy_joules_total",
                           "GPU energy in joules from the hardware energy counter (Volta and "
                           "newer).",
                           WT_COUNTER},
    [WT_M_GPU_ENERGY_INTEGRATED_J] = {"wattage_gpu_energy_integrated_joules_total",
                                      "GPU energy in joules estimated by integrating the power "
                                      "readings since the collector started.",
                                      WT_COUNTER},
    [WT_M_GPU_TEMP_C] = {"wattage_gpu_temperature_celsius", "GPU core temperature in celsius.",
                         WT_GAUGE},
    [WT_M_GPU_SLOWDOWN_TEMP_C] = {"wattage_gpu_slowdown_temperature_celsius",
                                  "Temperature at which the GPU slows down.", WT_GAUGE},
    [WT_M_GPU_SHUTDOWN_TEMP_C] = {"wattage_gpu_shutdown_temperature_celsius",
                                  "Temperature at which the GPU shuts down.", WT_GAUGE},
    [WT_M_GPU_UTIL_RATIO] = {"wattage_gpu_utilization_ratio",
                             "Share of time a kernel ran on the GPU (0..1).", WT_GAUGE},
    [WT_M_GPU_MEM_UTIL_RATIO] = {"wattage_gpu_memory_utilization_ratio",
                                 "Share of time device memory was read or written (0..1).",
                                 WT_GAUGE},
    [WT_M_GPU_MEM_USED_B] = {"wattage_gpu_memory_used_bytes", "GPU memory used in bytes.",
                             WT_GAUGE},
    [WT_M_GPU_MEM_TOTAL_B] = {"wattage_gpu_memory_total_bytes", "GPU memory in bytes.", WT_GAUGE},
    [WT_M_GPU_SM_CLOCK_HZ] = {"wattage_gpu_sm_clock_hertz", "SM clock in hertz.", WT_GAUGE},
    [WT_M_GPU_MEM_CLOCK_HZ] = {"wattage_gpu_memory_clock_hertz", "Memory clock in hertz.",
                               WT_GAUGE},
    [WT_M_GPU_POWER_LIMIT_W] = {"wattage_gpu_power_limit_watts", "Enforced power limit in watts.",
                                WT_GAUGE},
    [WT_M_GPU_POWER_LIMIT_MIN_W] = {"wattage_gpu_power_limit_min_watts",
                                    "Lowest power limit the GPU accepts, in watts.", WT_GAUGE},
    [WT_M_GPU_POWER_LIMIT_MAX_W] = {"wattage_gpu_power_limit_max_watts",
                                    "Highest power limit the GPU accepts, in watts.", WT_GAUGE},
    [WT_M_GPU_PSTATE] = {"wattage_gpu_performance_state",
                         "Performance state (0 fastest .. 15 slowest).", WT_GAUGE},
    [WT_M_GPU_THROTTLE_REASONS] = {"wattage_gpu_throttle_reasons",
                                   "Bitmask of NVML clocks event (throttle) reasons.", WT_GAUGE},
    [WT_M_GPU_THROTTLED] = {"wattage_gpu_throttled", "1 while the named throttle reason is active.",
                            WT_GAUGE},
    [WT_M_GPU_ECC_ERRORS] = {"wattage_gpu_ecc_errors_total",
                             "GPU memory ECC errors by type (corrected, uncorrected) and counter "
                             "(volatile: since the driver loaded; aggregate: the board's life).",
                             WT_COUNTER},
    [WT_M_GPU_REMAPPED_ROWS] = {"wattage_gpu_remapped_rows",
                                "GPU memory rows remapped for correctable or uncorrectable errors; "
                                "kind pending and failure are 1 while a remap waits for a reset "
                                "or one has failed.",
                                WT_GAUGE},
    [WT_M_GPU_PCIE_REPLAYS] = {"wattage_gpu_pcie_replays_total",
                               "PCIe replays of the GPU's link (retransmissions after errors).",
                               WT_COUNTER},
    [WT_M_GPU_MEM_TEMP_C] = {"wattage_gpu_memory_temperature_celsius",
                             "GPU memory (HBM) temperature in celsius.", WT_GAUGE},
    [WT_M_GPU_XID_ERRORS] = {"wattage_gpu_xid_errors_total",
                             "XID errors the driver reported for the GPU since wattage started, "
                             "per XID code.",
                             WT_COUNTER},
    [WT_M_GPU_FAN_RATIO] = {"wattage_gpu_fan_speed_ratio",
                            "Intended fan speed as a share of the fan's maximum (may exceed 1).",
                            WT_GAUGE},
    [WT_M_GPU_ENERGY_GAPS] = {"wattage_gpu_energy_gaps_total",
                              "Gaps in the power series too long to integrate across.", WT_COUNTER},
    [WT_M_CPU_ENERGY_J] = {"wattage_cpu_energy_joules_total",
                           "CPU energy from RAPL in joules, per package and domain, unwrapped.",
                           WT_COUNTER},
    [WT_M_CPU_POWER_W] = {"wattage_cpu_power_watts",
                          "CPU power from RAPL energy deltas in watts, per package and domain.",
                          WT_GAUGE},
    [WT_M_CPU_UTIL_RATIO] = {"wattage_cpu_utilization_ratio",
                             "Share of CPU time not idle (0..1), all CPUs or one.", WT_GAUGE},
    [WT_M_MEM_USED_RATIO] = {"wattage_memory_used_ratio",
                             "Share of host memory in use (total - available) (0..1).", WT_GAUGE},
    [WT_M_MEM_USED_B] = {"wattage_memory_used_bytes", "Host memory in use in bytes.", WT_GAUGE},
    [WT_M_MEM_TOTAL_B] = {"wattage_memory_total_bytes", "Host memory in bytes.", WT_GAUGE},
    [WT_M_COLLECTOR_ERRORS] = {"wattage_collector_errors_total",
                               "Failed polls per collector since start.", WT_COUNTER},
    [WT_M_COLLECTOR_DURATION_S] = {"wattage_collector_duration_seconds",
                                   "Duration of the collector's last poll in seconds.", WT_GAUGE},
    [WT_M_COLLECTOR_UP] = {"wattage_collector_up",
                           "1 when the collector's source is present and its last poll worked.",
                           WT_GAUGE},
    [WT_M_FAC_UP] = {"wattage_facility_up",
                     "1 when the facility target (PDU, BMC, meter) answered the last poll.",
                     WT_GAUGE},
    [WT_M_FAC_INFO] = {"wattage_facility_info",
                       "Facility target identity: model, vendor and the profile used.", WT_GAUGE},
    [WT_M_FAC_POWER_W] = {"wattage_facility_power_watts",
                          "Active power at a facility measuring point in watts.", WT_GAUGE},
    [WT_M_FAC_ENERGY_J] = {"wattage_facility_energy_joules_total",
                           "Energy counted by a facility meter in joules.", WT_COUNTER},
    [WT_M_FAC_APPARENT_VA] = {"wattage_facility_apparent_power_voltamperes",
                              "Apparent power at a facility measuring point in volt-amperes.",
                              WT_GAUGE},
    [WT_M_FAC_CURRENT_A] = {"wattage_facility_current_amperes",
                            "RMS current at a facility measuring point in amperes.", WT_GAUGE},
    [WT_M_FAC_VOLTAGE_V] = {"wattage_facility_voltage_volts",
                            "RMS voltage at a facility measuring point in volts.", WT_GAUGE},
    [WT_M_FAC_POWER_FACTOR] = {"wattage_facility_power_factor_ratio",
                               "Power factor at a facility measuring point (0..1).", WT_GAUGE},
    [WT_M_FAC_TEMP_C] = {"wattage_facility_temperature_celsius",
                         "Facility temperature (inlet, exhaust, coolant) in celsius.", WT_GAUGE},
    [WT_M_FAC_HUMIDITY_RATIO] = {"wattage_facility_humidity_ratio", "Relative humidity (0..1).",
                                 WT_GAUGE},
    [WT_M_FAC_FAN_RPM] = {"wattage_facility_fan_rpm", "Fan speed in revolutions per minute.",
                          WT_GAUGE},
    [WT_M_FAC_FLOW_M3S] = {"wattage_facility_liquid_flow_cubic_meters_per_second",
                           "Coolant or water flow in cubic metres per second.", WT_GAUGE},
    [WT_M_FAC_PRESSURE_PA] = {"wattage_facility_pressure_pascals", "Coolant pressure in pascals.",
                              WT_GAUGE},
    [WT_M_FAC_WATER_M3] = {"wattage_facility_water_cubic_meters_total",
                           "Water consumed, from a water meter, in cubic metres.", WT_COUNTER},
    [WT_M_FAC_HEAT_J] = {"wattage_facility_heat_joules_total",
                         "Heat delivered, from a heat meter, in joules.", WT_COUNTER},
    [WT_M_FAC_FUEL_M3] = {"wattage_facility_fuel_cubic_meters_total",
                          "Fuel burnt on site (diesel, natural gas, bioethanol), from a fuel "
                          "meter, in cubic metres.",
                          WT_COUNTER},
    [WT_M_FAC_FUEL_KG] = {"wattage_facility_fuel_kilograms_total",
                          "Fuel burnt on site (hydrogen), from a fuel meter, in kilograms.",
                          WT_COUNTER},
    [WT_M_KPI_PUE] = {"wattage_pue_ratio",
                      "Measured PUE (facility energy / IT energy) over the KPI window; per zone "
                      "with zone.",
                      WT_GAUGE},
    [WT_M_KPI_WUE] = {"wattage_wue_litres_per_kwh",
                      "Measured WUE (water litres per IT kWh) over the KPI window.", WT_GAUGE},
    [WT_M_KPI_ERF] = {"wattage_erf_ratio",
                      "Measured ERF (reused heat / facility energy) over the KPI window.",
                      WT_GAUGE},
    [WT_M_KPI_ACCEL_SHARE] = {"wattage_accelerator_energy_share_ratio",
                              "GPU energy / IT energy over the KPI window.", WT_GAUGE},
    [WT_M_RACK_DELTA_T] = {"wattage_rack_delta_t_kelvin",
                           "Mean exhaust minus mean inlet temperature of a rack over the KPI "
                           "window.",
                           WT_GAUGE},
    [WT_M_NODE_UNACCOUNTED_W] = {"wattage_node_unaccounted_power_watts",
                                 "Wall power of a node minus its GPUs, CPU packages and DRAM, "
                                 "mean over the KPI window.",
                                 WT_GAUGE},
    [WT_M_NODE_UNACCOUNTED_RATIO] = {"wattage_node_unaccounted_ratio",
                                     "Share of a node's wall energy its own sensors do not "
                                     "account for, over the KPI window.",
                                     WT_GAUGE},
    [WT_M_NODE_RECON_SUSPECT] = {"wattage_node_reconciliation_suspect",
                                 "1 when a node's chips exceed its wall power "
                                 "(reason=chips_exceed_wall) or its unaccounted share drifts "
                                 "(reason=share_drift).",
                                 WT_GAUGE},
    [WT_M_GRID_CARBON_INTENSITY] = {"wattage_grid_carbon_intensity_grams_per_kwh",
                                    "Carbon intensity of the grid zone now, gCO2e per kWh: the "
                                    "actual value, else the forecast, else the hole rule.",
                                    WT_GAUGE},
    [WT_M_JOB_INFO] = {"wattage_job_info",
                       "1 while a job runs (and for a minute after it ended); job is its name, "
                       "the key that joins one job over nodes; gpus its GPUs (empty: all).",
                       WT_GAUGE},
    [WT_M_JOB_START_S] = {"wattage_job_start_time_seconds", "A job's start, unix seconds.",
                          WT_GAUGE},
    [WT_M_JOB_END_S] = {"wattage_job_end_time_seconds", "An ended job's end, unix seconds.",
                        WT_GAUGE},
    [WT_M_JOB_MARK_S] = {"wattage_job_mark_time_seconds",
                         "Time of a job's mark (epoch, step...; the latest 64 per job), unix "
                         "seconds.",
                         WT_GAUGE},
    [WT_M_JOB_ENERGY_J] = {"wattage_job_energy_joules_total",
                           "Energy of a job's GPUs since its start, from the stored series over "
                           "the job's window (as GET /api/v1/jobs/{id}); lags the live counters "
                           "by up to one store flush interval. Kept a minute after the end.",
                           WT_COUNTER},
    [WT_M_NET_RX_BYTES] = {"wattage_network_receive_bytes_total",
                           "Bytes received by a network interface a device backs (sysfs).",
                           WT_COUNTER},
    [WT_M_NET_TX_BYTES] = {"wattage_network_transmit_bytes_total",
                           "Bytes sent by a network interface a device backs (sysfs).", WT_COUNTER},
    [WT_M_NET_RX_PACKETS] = {"wattage_network_receive_packets_total",
                             "Packets received by a network interface (sysfs).", WT_COUNTER},
    [WT_M_NET_TX_PACKETS] = {"wattage_network_transmit_packets_total",
                             "Packets sent by a network interface (sysfs).", WT_COUNTER},
    [WT_M_IB_RX_BYTES] = {"wattage_infiniband_receive_bytes_total",
                          "Data bytes received on an InfiniBand port (port_rcv_data, 4-byte "
                          "words, times 4).",
                          WT_COUNTER},
    [WT_M_IB_TX_BYTES] = {"wattage_infiniband_transmit_bytes_total",
                          "Data bytes sent on an InfiniBand port (port_xmit_data, 4-byte words, "
                          "times 4).",
                          WT_COUNTER},
    [WT_M_IB_RX_PACKETS] = {"wattage_infiniband_receive_packets_total",
                            "Packets received on an InfiniBand port.", WT_COUNTER},
    [WT_M_IB_TX_PACKETS] = {"wattage_infiniband_transmit_packets_total",
                            "Packets sent on an InfiniBand port.", WT_COUNTER},
    [WT_M_GPU_POWER_AVG_W] = {"wattage_gpu_power_average_watts",
                              "GPU power averaged over the last window (1m, 5m, 15m), from the "
                              "power readings; absent until half the window is covered.",
                              WT_GAUGE},
    [WT_M_NODE_POWER_AVG_W] = {"wattage_node_power_average_watts",
                               "The node's chips' power (GPUs, and CPU packages and DRAM where "
                               "RAPL reads them) averaged over the last window (1m, 5m, 15m).",
                               WT_GAUGE},
    [WT_M_PROC_GPU_ENERGY_J] = {"wattage_process_gpu_energy_joules_total",
                                "A GPU's energy counted for one process (pid) while it runs and "
                                "for a while after; then folded into its owner (Slurm job, pod, "
                                "unit: no pid). owner=\"idle\" is what no process used. Per "
                                "GPU the series sum to its energy since attribution started.",
                                WT_COUNTER},
    [WT_M_GPU_ATTRIB_INFO] = {"wattage_gpu_attribution_info",
                              "1, with how a GPU's energy is split over its processes: method "
                              "utilization (NVML per-process samples), memory (share of memory "
                              "used) or equal (an equal split).",
                              WT_GAUGE},
    [WT_M_PROC_CPU_ENERGY_J] = {"wattage_process_cpu_energy_joules_total",
                                "The CPU packages' energy (RAPL) counted for one process by its "
                                "share of CPU time, then folded into its owner like the GPU "
                                "series; owner=\"idle\" is the rest.",
                                WT_COUNTER},
    [WT_M_GPU_IDLE] = {"wattage_gpu_idle",
                       "1 while the GPU is idle: no process on it and utilization 0.", WT_GAUGE},
    [WT_M_GPU_IDLE_ENERGY_J] = {"wattage_gpu_idle_energy_joules_total",
                                "Energy the GPU spent idle (no process, utilization 0) since the "
                                "daemon started (part of its energy, not added to it).",
                                WT_COUNTER},
    [WT_M_GPU_IDLE_SECONDS] = {"wattage_gpu_idle_seconds_total",
                               "Time the GPU spent idle (no process, utilization 0) since the "
                               "daemon started.",
                               WT_COUNTER},
    [WT_M_GPU_IDLE_ENERGY_TODAY_J] = {"wattage_gpu_idle_energy_today_joules",
                                      "Energy the GPU spent idle since 00:00 UTC, as this daemon "
                                      "saw it.",
                                      WT_GAUGE},
    [WT_M_GPU_IDLE_POWER_W] = {"wattage_gpu_idle_power_watts",
                               "The GPU's idle power level: its mean power while idle today "
                               "(UTC).",
                               WT_GAUGE},
    [WT_M_CLOCK_SYNCED] = {"wattage_clock_synchronized",
                           "1 when the kernel says the system clock is synchronised (no "
                           "STA_UNSYNC, not TIME_ERROR), 0 when not.",
                           WT_GAUGE},
    [WT_M_CLOCK_EST_ERROR_S] = {"wattage_clock_estimated_error_seconds",
                                "The kernel's estimated error of the system clock (ntp_adjtime).",
                                WT_GAUGE},
    [WT_M_CLOCK_MAX_ERROR_S] = {"wattage_clock_maximum_error_seconds",
                                "The kernel's maximum error of the system clock (ntp_adjtime); "
                                "it grows by 500 ppm while nothing disciplines the clock.",
                                WT_GAUGE},
    [WT_M_CLOCK_OFFSET_S] = {"wattage_clock_offset_seconds",
                             "The offset the kernel's clock discipline is slewing away.", WT_GAUGE},
    [WT_M_CLOCK_STATUS] = {"wattage_clock_status",
                           "The kernel's clock status word (STA_* bits of ntp_adjtime).", WT_GAUGE},
    [WT_M_CLOCK_PTP_INFO] = {"wattage_clock_ptp_info",
                             "1 per PTP hardware clock (/sys/class/ptp), labels device and "
                             "clock (its clock_name).",
                             WT_GAUGE},
    [WT_M_CLOCK_PTP_OFFSET_S] = {"wattage_clock_ptp_offset_seconds",
                                 "A PTP hardware clock minus the system clock, read back to "
                                 "back (a PHC kept in TAI reads about +37 s).",
                                 WT_GAUGE},
    [WT_M_INLET_OUTSIDE_S] = {"wattage_inlet_outside_envelope_seconds_total",
                              "Time an inlet air temperature was outside the configured ASHRAE "
                              "class's envelope (envelope=recommended or allowable).",
                              WT_COUNTER},
    [WT_M_INLET_COMPLIANT] = {"wattage_inlet_within_envelope",
                              "1 when an inlet air temperature's last reading is within the "
                              "ASHRAE class's envelope (envelope=recommended or allowable).",
                              WT_GAUGE},
    [WT_M_FAC_POWER_STAT_W] = {"wattage_facility_power_statistic_watts",
                               "A BMC's own power statistic (statistic=minimum, maximum or "
                               "average) over its statistics period (IPMI DCMI).",
                               WT_GAUGE},
    [WT_M_FAC_POWER_PERIOD_S] = {"wattage_facility_power_statistics_period_seconds",
                                 "The period a BMC's power statistics cover (IPMI DCMI).",
                                 WT_GAUGE},
    [WT_M_CLOCK_PEER_SKEW_S] = {"wattage_clock_peer_skew_seconds",
                                "A facility device's clock minus this host's, from the time "
                                "stamps on its answers (whole seconds: +/- 0.5 s and half the "
                                "round trip).",
                                WT_GAUGE},
    [WT_M_SITE_POWER_AVG_W] = {"wattage_site_power_average_watts",
                               "Rolling mean of the site's power over window (1m, 5m, 15m): the "
                               "sum of the topology's facility_total meters.",
                               WT_GAUGE},
    [WT_M_GPU_NVLINK_TX_BYTES] = {"wattage_gpu_nvlink_transmit_bytes_total",
                                  "NVLink payload bytes the GPU sent, all links.", WT_COUNTER},
    [WT_M_GPU_NVLINK_RX_BYTES] = {"wattage_gpu_nvlink_receive_bytes_total",
                                  "NVLink payload bytes the GPU received, all links.", WT_COUNTER},
    [WT_M_GPU_PCIE_TX_BYTES] = {"wattage_gpu_pcie_transmit_bytes_total",
                                "PCIe bytes the GPU sent (its wrapping counter, unwrapped).",
                                WT_COUNTER},
    [WT_M_GPU_PCIE_RX_BYTES] = {"wattage_gpu_pcie_receive_bytes_total",
                                "PCIe bytes the GPU received (its wrapping counter, unwrapped).",
                                WT_COUNTER},
    [WT_M_GPU_SM_ACTIVE_RATIO] = {"wattage_gpu_sm_active_ratio",
                                  "Share of the GPU's SMs busy, mean over the last interval "
                                  "(GPM, Hopper and newer; 0..1).",
                                  WT_GAUGE},
    [WT_M_GPU_SM_OCCUPANCY_RATIO] = {"wattage_gpu_sm_occupancy_ratio",
                                     "Warps resident on the SMs against the maximum, mean over the "
                                     "last interval (GPM; 0..1).",
                                     WT_GAUGE},
    [WT_M_GPU_TENSOR_ACTIVE_RATIO] = {"wattage_gpu_tensor_active_ratio",
                                      "Share of time any tensor pipe was active, mean over the "
                                      "last interval (GPM; 0..1).",
                                      WT_GAUGE},
    [WT_M_GPU_DRAM_BW_RATIO] = {"wattage_gpu_dram_bandwidth_utilization_ratio",
                                "DRAM bandwidth used against the GPU's maximum, mean over the "
                                "last interval (GPM; 0..1).",
                                WT_GAUGE},
    [WT_M_GPU_POWER_SOURCE_INFO] = {"wattage_gpu_power_source_info",
                                    "1, with the GPU's power source (ac, battery, or undersized: "
                                    "a supply too small for the board).",
                                    WT_GAUGE},
    [WT_M_PSU_POWER_W] = {"wattage_psu_power_watts",
                          "Power drawn from an S-class unit's power supply in watts.", WT_GAUGE},
    [WT_M_PSU_VOLTAGE_V] = {"wattage_psu_voltage_volts",
                            "Voltage of an S-class unit's power supply in volts.", WT_GAUGE},
    [WT_M_PSU_CURRENT_A] = {"wattage_psu_current_amperes",
                            "Current of an S-class unit's power supply in amperes.", WT_GAUGE},
    [WT_M_PSU_STATE_INFO] = {"wattage_psu_state_info",
                             "1, with the state an S-class unit's power supply reports (Normal, "
                             "or Abnormal and its causes).",
                             WT_GAUGE},
    [WT_M_UNIT_FAN_RPM] = {"wattage_unit_fan_rpm", "Speed of an S-class unit's fan in RPM.",
                           WT_GAUGE},
    [WT_M_UNIT_FAN_FAILED] = {"wattage_unit_fan_failed",
                              "1 when an S-class unit reports its fan failed.", WT_GAUGE},
    [WT_M_NODE_MODEL_PREDICTED_W] = {"wattage_node_model_predicted_wall_watts",
                                     "The wall power a node's calibration model (wattage "
                                     "calibrate) predicts from its chips, mean over the KPI "
                                     "window.",
                                     WT_GAUGE},
    [WT_M_NODE_MODEL_DEPARTURE_W] = {"wattage_node_model_departure_watts",
                                     "A node's wall power minus what its calibration model "
                                     "predicts, mean over the KPI window.",
                                     WT_GAUGE},
    [WT_M_NODE_MODEL_BOUND_W] = {"wattage_node_model_bound_watts",
                                 "The departure from its calibration model a node's wall may "
                                 "show: 3 residual standard deviations of the fit, at least 2 % "
                                 "of the prediction.",
                                 WT_GAUGE},
    [WT_M_NODE_MODEL_DRIFT] = {"wattage_node_model_drift",
                               "1 while a node's wall has departed from its calibration model "
                               "beyond the bound for a whole KPI window or more.",
                               WT_GAUGE},
    [WT_M_MIG_ENERGY_J] = {"wattage_mig_energy_joules_total",
                           "A MIG GPU's energy counted for one of its instances (gpu_instance, "
                           "compute_instance, mig_uuid), split by its processes' memory, else "
                           "equally among the instances with processes; gpu_instance=\"idle\" "
                           "is the rest. Per GPU the series sum to its energy since the split "
                           "started: the board's energy is counted once.",
                           WT_COUNTER},
    [WT_M_MIG_MEM_USED_B] = {"wattage_mig_memory_used_bytes",
                             "Memory used in a MIG instance (nvmlDeviceGetMemoryInfo on its "
                             "handle).",
                             WT_GAUGE},
    [WT_M_MIG_MEM_TOTAL_B] = {"wattage_mig_memory_total_bytes", "Memory of a MIG instance.",
                              WT_GAUGE},
    [WT_M_MIG_PROCESSES] = {"wattage_mig_processes", "Compute processes in a MIG instance.",
                            WT_GAUGE},
    [WT_M_MIG_ATTRIB_INFO] = {"wattage_mig_attribution_info",
                              "1, with how a MIG GPU's last interval was split over its "
                              "instances: method memory (their processes' memory), equal (a "
                              "process's memory unknown) or idle (no instance had a process).",
                              WT_GAUGE},
    [WT_M_MIG_SM_ACTIVE_RATIO] = {"wattage_mig_sm_active_ratio",
                                  "GPM (Hopper and newer): the share of a MIG GPU instance's SMs "
                                  "busy, mean over the last interval, 0..1; its compute "
                                  "instances show the same figure.",
                                  WT_GAUGE},
    [WT_M_INF_UP] = {"wattage_inference_up",
                     "1 when the inference server's last scrape was read whole, else 0.", WT_GAUGE},
    [WT_M_INF_INFO] = {"wattage_inference_info",
                       "1 per inference target and model: the engine, the GPUs it serves and "
                       "its tags.",
                       WT_GAUGE},
    [WT_M_INF_TOKENS] = {"wattage_inference_tokens_total",
                         "Tokens an inference server counted, as scraped (a restart resets it): "
                         "kind prompt, generated, prompt_cached or prompt_computed.",
                         WT_COUNTER},
    [WT_M_INF_REQUESTS] = {"wattage_inference_requests_total",
                           "Requests an inference server finished, as scraped.", WT_COUNTER},
    [WT_M_INF_LAT_BUCKET] = {"wattage_inference_latency_seconds_bucket",
                             "An inference server's latency histogram, cumulative, as scraped: "
                             "kind e2e, ttft (time to first token) or itl (inter-token).",
                             WT_COUNTER, "wattage_inference_latency_seconds"},
    [WT_M_INF_LAT_SUM] = {"wattage_inference_latency_seconds_sum",
                          "The sum of an inference server's latency observations, seconds.",
                          WT_COUNTER, "wattage_inference_latency_seconds"},
    [WT_M_INF_LAT_COUNT] = {"wattage_inference_latency_seconds_count",
                            "The count of an inference server's latency observations.", WT_COUNTER,
                            "wattage_inference_latency_seconds"},
    [WT_M_INF_RUNNING] = {"wattage_inference_requests_running",
                          "Requests an inference server is running now.", WT_GAUGE},
    [WT_M_INF_WAITING] = {"wattage_inference_requests_waiting",
                          "Requests waiting in an inference server's queue now.", WT_GAUGE},
    [WT_M_INF_PROCESS] = {"wattage_inference_process_info",
                          "1 per process of an inference server's serving tree (the process "
                          "listening on its port, up to the top of its tree, and all below), "
                          "found when its GPUs are not configured: join on pid with "
                          "wattage_process_gpu_energy_joules_total.",
                          WT_GAUGE},
    [WT_M_HWMON_POWER_W] = {"wattage_hwmon_power_watts",
                            "A hwmon power sensor (ACPI power meter, Grace, PMBus PSU, GPU); role "
                            "says what it measures (wall, cpu, module, gpu, psu_in, psu_out...).",
                            WT_GAUGE},
    [WT_M_HWMON_ENERGY_J] = {"wattage_hwmon_energy_joules_total",
                             "A hwmon sensor's energy: its energyN_input counter unwrapped "
                             "(method=\"counter\") or its power integrated by wattage "
                             "(method=\"integrated\").",
                             WT_COUNTER},
    [WT_M_HWMON_INTERVAL_S] = {"wattage_hwmon_average_interval_seconds",
                               "The window a hwmon power sensor averages over "
                               "(powerN_average_interval).",
                               WT_GAUGE},
    [WT_M_INF_ENERGY_J] = {"wattage_inference_energy_joules_total",
                           "The energy of an inference target's GPUs (configured, else those "
                           "NVML lists its processes on; counter energy) since the daemon "
                           "started, shared between its models by generated tokens: J/token "
                           "is the ratio of its rate to wattage_inference_tokens_total's.",
                           WT_COUNTER},
    [WT_M_GPU_ENERGY_READ_SKEW_S] = {"wattage_gpu_energy_read_skew_seconds",
                                     "How long after its poll's stamp the GPU's energy counter "
                                     "read returned, in seconds (rounded up to 10 us).",
                                     WT_GAUGE},
    [WT_M_CONFIG_INFO] = {"wattage_config_info",
                          "1 while the daemon runs the configuration whose file has this digest "
                          "(FNV-1a 64, hex); a reload with another file starts a new series.",
                          WT_GAUGE},
    [WT_M_REVIEW_FINDINGS] = {"wattage_review_findings",
                              "The findings of the latest weekly review (wattage review) the "
                              "daemon wrote, per ISO week.",
                              WT_GAUGE},
    [WT_M_HWMON_AGE_S] = {"wattage_hwmon_reading_age_seconds",
                          "How long before this poll a hwmon power sensor read at its chip's "
                          "own cadence (collectors.hwmon.max_hold) was last read: 0 on the "
                          "ticks that read it; its power and energy are that read's.",
                          WT_GAUGE},
};

int wt_metric_find(const char *name)
{
    for (int i = 0; i < WT_M_COUNT; i++) {
        if (wt_metrics[i].name && strcmp(wt_metrics[i].name, name) == 0)
            return i;
    }
    return -ENOENT;
}

bool wt_metric_is_gpu_energy(const char *name)
{
    return strcmp(name, wt_metrics[WT_M_GPU_ENERGY_J].name) == 0 ||
           strcmp(name, wt_metrics[WT_M_GPU_ENERGY_INTEGRATED_J].name) == 0;
}

int wt_batch_add(struct wt_batch *b, int metric, const char *labels, int64_t t_ns, double value)
{
    size_t ll = labels ? strlen(labels) : 0;
    if (ll >= WT_LABELS_LEN)
        return -E2BIG;
    if (b->len == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        struct wt_reading *r = realloc(b->r, cap * sizeof *r);
        if (!r)
            return -ENOMEM;
        b->r = r;
        b->cap = cap;
    }
    struct wt_reading *x = &b->r[b->len++];
    x->t_ns = t_ns;
    x->value = value;
    x->metric = (uint16_t)metric;
    memcpy(x->labels, labels ? labels : "", ll + 1);
    return 0;
}

void wt_readings_copy(struct wt_reading *dst, const struct wt_reading *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t l = strnlen(src[i].labels, WT_LABELS_LEN - 1);
        dst[i].t_ns = src[i].t_ns;
        dst[i].value = src[i].value;
        dst[i].metric = src[i].metric;
        memcpy(dst[i].labels, src[i].labels, l);
        dst[i].labels[l] = '\0';
    }
}

int wt_batch_append(struct wt_batch *b, const struct wt_batch *src)
{
    if (b->len + src->len > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + src->len)
            cap *= 2;
        struct wt_reading *r = realloc(b->r, cap * sizeof *r);
        if (!r)
            return -ENOMEM;
        b->r = r;
        b->cap = cap;
    }
    wt_readings_copy(b->r + b->len, src->r, src->len);
    b->len += src->len;
    return 0;
}

void wt_batch_clear(struct wt_batch *b)
{
    b->len = 0;
}

void wt_batch_free(struct wt_batch *b)
{
    free(b->r);
    b->r = NULL;
    b->len = b->cap = 0;
}

int wt_labels_add(char *buf, size_t n, const char *key, const char *value)
{
    size_t len = strlen(buf);
    size_t need = len + (len ? 1 : 0) + strlen(key) + 3; /* , key =" " */
    if (need >= n)
        return -E2BIG;
    char *p = buf + len;
    if (len)
        *p++ = ',';
    p = stpcpy(p, key);
    *p++ = '=';
    *p++ = '"';
    for (const char *v = value; *v; v++) {
        const char *esc = NULL;
        if (*v == '\\')
            esc = "\\\\";
        else if (*v == '"')
            esc = "\\\"";
        else if (*v == '\n')
            esc = "\\n";
        size_t l = esc ? 2 : 1;
        if ((size_t)(p - buf) + l + 2 > n) {
            buf[len] = '\0';
            return -E2BIG;
        }
        if (esc) {
            memcpy(p, esc, 2);
            p += 2;
        } else {
            *p++ = *v;
        }
    }
    *p++ = '"';
    *p = '\0';
    return 0;
}

int wt_labels(char *buf, size_t n, ...)
{
    va_list ap;
    int rc = 0;
    if (n == 0)
        return -E2BIG;
    buf[0] = '\0';
    va_start(ap, n);
    for (;;) {
        const char *k = va_arg(ap, const char *);
        if (!k)
            break;
        const char *v = va_arg(ap, const char *);
        rc = wt_labels_add(buf, n, k, v ? v : "");
        if (rc)
            break;
    }
    va_end(ap);
    return rc;
}

int wt_labels_next(const char *labels, size_t *pos, char *key, size_t kn, char *val, size_t vn)
{
    const char *p = labels + *pos;
    if (*p == ',')
        p++;
    if (!*p)
        return 0;
    const char *eq = strchr(p, '=');
    if (!eq || eq[1] != '"' || (size_t)(eq - p) >= kn)
        return -EINVAL;
    memcpy(key, p, (size_t)(eq - p));
    key[eq - p] = '\0';
    p = eq + 2;
    size_t o = 0;
    while (*p && *p != '"') {
        char c = *p++;
        if (c == '\\') {
            c = *p++;
            if (c == 'n')
                c = '\n';
            else if (c == '\0')
                return -EINVAL;
        }
        if (o + 1 >= vn)
            return -E2BIG;
        val[o++] = c;
    }
    if (*p != '"')
        return -EINVAL;
    val[o] = '\0';
    *pos = (size_t)(p + 1 - labels);
    return 1;
}

int wt_labels_get(const char *labels, const char *key, char *out, size_t n)
{
    size_t pos = 0;
    char k[64], v[WT_LABELS_LEN];
    int rc;
    while ((rc = wt_labels_next(labels, &pos, k, sizeof k, v, sizeof v)) == 1) {
        if (strcmp(k, key) == 0) {
            if (strlen(v) >= n)
                return -E2BIG;
            strcpy(out, v);
            return 0;
        }
    }
    return rc < 0 ? rc : -ENOENT;
}
