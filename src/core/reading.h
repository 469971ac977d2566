/* SPDX-License-Identifier: MIT */
/*
 * Readings and series. One reading is (series, timestamp, value); a series is a metric from the
 * table below plus a canonical label string in Prometheus syntax, values escaped:
 *   gpu="0",uuid="GPU-5f3c…",model="NVIDIA H200"
 * Collectors append readings to a struct wt_batch; nothing downstream knows who made them.
 */
#ifndef WT_READING_H
#define WT_READING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

enum wt_metric_type { WT_GAUGE, WT_COUNTER };

/* Every metric wattage knows. Names are the exposition names (prefix wattage_, base units). */
enum wt_metric_id {
    WT_M_GPU_INFO,                /* 1, labels carry gpu,uuid,model,pci_bus_id */
    WT_M_GPU_UP,                  /* 0/1 */
    WT_M_GPU_POWER_W,             /* nvmlDeviceGetPowerUsage: 1 s average on Ampere+ */
    WT_M_GPU_ENERGY_J,            /* counter: NVML's hardware energy counter, nothing else */
    WT_M_GPU_ENERGY_INTEGRATED_J, /* counter: NVML power integrated by wattage (trapezoids) */
    WT_M_GPU_TEMP_C,
    WT_M_GPU_SLOWDOWN_TEMP_C,
    WT_M_GPU_SHUTDOWN_TEMP_C,
    WT_M_GPU_UTIL_RATIO,
    WT_M_GPU_MEM_UTIL_RATIO,
    WT_M_GPU_MEM_USED_B,
    WT_M_GPU_MEM_TOTAL_B,
    WT_M_GPU_SM_CLOCK_HZ,
    WT_M_GPU_MEM_CLOCK_HZ,
    WT_M_GPU_POWER_LIMIT_W,
    WT_M_GPU_POWER_LIMIT_MIN_W,
    WT_M_GPU_POWER_LIMIT_MAX_W,
    WT_M_GPU_PSTATE,
    WT_M_GPU_THROTTLE_REASONS, /* bitmask, NVML clocks event reasons */
    WT_M_GPU_THROTTLED,        /* 0/1 per reason="…" */
    /* GPU health (NVML): before ENERGY_GAPS, which closes the per-GPU range */
    WT_M_GPU_ECC_ERRORS,    /* counter: type=corrected|uncorrected, counter=volatile|aggregate */
    WT_M_GPU_REMAPPED_ROWS, /* kind=correctable|uncorrectable (rows), pending|failure (0/1) */
    WT_M_GPU_PCIE_REPLAYS,  /* counter: PCIe replays */
    WT_M_GPU_MEM_TEMP_C,    /* memory (HBM) temperature */
    WT_M_GPU_XID_ERRORS,    /* counter: XID events seen by this daemon, per xid="…" */
    WT_M_GPU_FAN_RATIO,     /* fan="…": intended speed, share of the fan's maximum */
    WT_M_GPU_ENERGY_GAPS,   /* counter: gaps not integrated across */
    WT_M_CPU_ENERGY_J,      /* counter: RAPL, unwrapped, labels package,domain[,die|zone] */
    WT_M_CPU_POWER_W,       /* RAPL energy delta / time delta */
    WT_M_CPU_UTIL_RATIO,    /* procfs, cpu="all" or cpu="N" */
    WT_M_MEM_USED_RATIO,
    WT_M_MEM_USED_B,
    WT_M_MEM_TOTAL_B,
    WT_M_COLLECTOR_ERRORS,     /* counter per collector */
    WT_M_COLLECTOR_DURATION_S, /* gauge per collector: last poll's duration */
    WT_M_COLLECTOR_UP,         /* 0/1 per collector: last poll succeeded */
    /*
     * Facility meters (SNMP PDUs and UPSes, Redfish BMCs/PDUs/CDUs, Modbus meters). Labels:
     * source (snmp|redfish|modbus), target (its config name), point (the measuring point within
     * the target: "inlet1", "outlet3", "phase2", "psu1", "chassis", a register's name), kind
     * (inlet|outlet|phase|psu|chassis|meter|ups_input|ups_output|sensor|cooling...), optional
     * name (the label the device gives it), and node/rack/zone when the config places it.
     */
    WT_M_FAC_UP,       /* 0/1 per target: answered the last poll */
    WT_M_FAC_INFO,     /* 1, labels carry model/profile/vendor of a target */
    WT_M_FAC_POWER_W,  /* active power */
    WT_M_FAC_ENERGY_J, /* counter: the device's energy counter, unwrapped */
    WT_M_FAC_APPARENT_VA,
    WT_M_FAC_CURRENT_A,
    WT_M_FAC_VOLTAGE_V,
    WT_M_FAC_POWER_FACTOR,   /* 0..1 */
    WT_M_FAC_TEMP_C,         /* inlet, exhaust, coolant supply/return... (point says) */
    WT_M_FAC_HUMIDITY_RATIO, /* 0..1 */
    WT_M_FAC_FAN_RPM,
    WT_M_FAC_FLOW_M3S, /* liquid flow, cubic metres per second */
    WT_M_FAC_PRESSURE_PA,
    WT_M_FAC_WATER_M3, /* counter: water consumed, cubic metres (WUE) */
    WT_M_FAC_HEAT_J,   /* counter: heat delivered (heat meters; ERF) */
    WT_M_FAC_FUEL_M3,  /* counter: fuel burnt, cubic metres (diesel, gas, bioethanol) */
    WT_M_FAC_FUEL_KG,  /* counter: fuel burnt, kilograms (hydrogen) */
    /* Facility KPIs and chip-vs-wall reconciliation over a rolling window (audit/kpi.h). */
    WT_M_KPI_PUE, /* [zone] measured PUE */
    WT_M_KPI_WUE, /* litres per IT kWh */
    WT_M_KPI_ERF,
    WT_M_KPI_ACCEL_SHARE,        /* GPU energy / IT energy */
    WT_M_RACK_DELTA_T,           /* rack: mean exhaust - mean inlet */
    WT_M_NODE_UNACCOUNTED_W,     /* node: wall - (GPUs + CPU packages + DRAM) */
    WT_M_NODE_UNACCOUNTED_RATIO, /* node: unaccounted / wall */
    WT_M_NODE_RECON_SUSPECT,     /* node, reason: 0/1 */
    WT_M_GRID_CARBON_INTENSITY,  /* zone: gCO2e/kWh now (audit/carbon.h) */
    /*
     * Jobs as series (audit/jobs.h), so an engine that receives several nodes' series can join
     * one job over its nodes: labels id (this node's id), job (the name: the key across nodes),
     * and gpus / kind, index where said.
     */
    WT_M_JOB_INFO,     /* 1 while the job runs (and briefly after), labels id, job, gpus */
    WT_M_JOB_START_S,  /* the job's start, unix seconds */
    WT_M_JOB_END_S,    /* the job's end, unix seconds (once it ended) */
    WT_M_JOB_MARK_S,   /* a mark's time, unix seconds; labels id, job, kind, index */
    WT_M_JOB_ENERGY_J, /* counter: the job's GPU energy since its start */
    /* Traffic (collect/netdev.h): counters as sysfs keeps them, labels device[,port]. */
    WT_M_NET_RX_BYTES,
    WT_M_NET_TX_BYTES,
    WT_M_NET_RX_PACKETS,
    WT_M_NET_TX_PACKETS,
    WT_M_IB_RX_BYTES, /* port_rcv_data × 4 */
    WT_M_IB_TX_BYTES,
    WT_M_IB_RX_PACKETS,
    WT_M_IB_TX_PACKETS,
    /* Rolling power means (audit/power_avg.h), label window="1m"|"5m"|"15m". */
    WT_M_GPU_POWER_AVG_W,  /* GPU labels + window */
    WT_M_NODE_POWER_AVG_W, /* GPUs + CPU packages + DRAM */
    /* Attribution (collect/attrib.h): a GPU's or the CPUs' energy split over processes. */
    WT_M_PROC_GPU_ENERGY_J, /* counter: gpu,uuid,pid|owner…; owner="idle" the unused rest */
    WT_M_GPU_ATTRIB_INFO,   /* 1: gpu,uuid,method="utilization"|"memory"|"equal" */
    WT_M_PROC_CPU_ENERGY_J, /* counter: pid|owner…; owner="idle" the rest of the packages' */
    /* Dark power (audit/dark.h): a GPU idle (no process, utilization 0), GPU labels. */
    WT_M_GPU_IDLE,                /* 0/1: idle now */
    WT_M_GPU_IDLE_ENERGY_J,       /* counter: energy spent idle since the daemon started */
    WT_M_GPU_IDLE_SECONDS,        /* counter: time spent idle since the daemon started */
    WT_M_GPU_IDLE_ENERGY_TODAY_J, /* energy spent idle since 00:00 UTC (this daemon's share) */
    WT_M_GPU_IDLE_POWER_W,        /* mean power while idle today: the idle power level */
    /* The clock's discipline (collect/clocksync.h): the kernel's, and PTP hardware clocks. */
    WT_M_CLOCK_SYNCED,       /* 0/1: the kernel says CLOCK_REALTIME is synchronised */
    WT_M_CLOCK_EST_ERROR_S,  /* the kernel's estimated error */
    WT_M_CLOCK_MAX_ERROR_S,  /* the kernel's maximum error */
    WT_M_CLOCK_OFFSET_S,     /* the offset the discipline is slewing away */
    WT_M_CLOCK_STATUS,       /* the STA_* status word */
    WT_M_CLOCK_PTP_INFO,     /* 1, labels device (ptp0), clock (its clock_name) */
    WT_M_CLOCK_PTP_OFFSET_S, /* device: the PHC minus CLOCK_REALTIME */
    /* Inlet air against ASHRAE's envelopes (audit/ashrae.h), sensor labels + envelope. */
    WT_M_INLET_OUTSIDE_S, /* counter: seconds outside envelope="recommended"|"allowable" */
    WT_M_INLET_COMPLIANT, /* 0/1: within the envelope at the last reading */
    /* A BMC's DCMI power statistics (collect/ipmi.h), facility labels [+ statistic]. */
    WT_M_FAC_POWER_STAT_W,   /* statistic="minimum"|"maximum"|"average" over the period */
    WT_M_FAC_POWER_PERIOD_S, /* the BMC's statistics reporting period */
    /* A peer's clock (a BMC's Date header or reading stamp) minus ours: source, target. */
    WT_M_CLOCK_PEER_SKEW_S,
    /* The site's rolling power mean (audit/power_avg.h): its facility_total meters, window. */
    WT_M_SITE_POWER_AVG_W,
    /* Interconnect counters, GPM and S-class units (collect/nvml_fields.h); GPU labels. */
    WT_M_GPU_NVLINK_TX_BYTES,     /* counter: NVLink payload sent, all links */
    WT_M_GPU_NVLINK_RX_BYTES,     /* counter: NVLink payload received */
    WT_M_GPU_PCIE_TX_BYTES,       /* counter: PCIe bytes sent, unwrapped */
    WT_M_GPU_PCIE_RX_BYTES,       /* counter: PCIe bytes received, unwrapped */
    WT_M_GPU_SM_ACTIVE_RATIO,     /* GPM, mean over the last interval, 0..1 */
    WT_M_GPU_SM_OCCUPANCY_RATIO,  /* GPM */
    WT_M_GPU_TENSOR_ACTIVE_RATIO, /* GPM */
    WT_M_GPU_DRAM_BW_RATIO,       /* GPM: DRAM bandwidth used against the maximum */
    WT_M_GPU_POWER_SOURCE_INFO,   /* 1, + source="ac"|"battery"|"undersized" */
    WT_M_PSU_POWER_W,             /* unit="N": an S-class unit's power supply */
    WT_M_PSU_VOLTAGE_V,
    WT_M_PSU_CURRENT_A,
    WT_M_PSU_STATE_INFO,  /* 1, + state="Normal" or "Abnormal ..." */
    WT_M_UNIT_FAN_RPM,    /* unit, fan */
    WT_M_UNIT_FAN_FAILED, /* unit, fan: 0/1 */

    /* node: against its calibration model (audit/reconcile.h, wt_recon_export_models) */
    WT_M_NODE_MODEL_PREDICTED_W, /* the wall the model predicts from the chips */
    WT_M_NODE_MODEL_DEPARTURE_W, /* wall - predicted */
    WT_M_NODE_MODEL_BOUND_W,     /* the departure the model allows */
    WT_M_NODE_MODEL_DRIFT,       /* 0/1, beyond the bound for a whole KPI window */
    /* MIG instances (collect/nvml_mig.h): GPU labels + gpu_instance, compute_instance, mig_uuid */
    WT_M_MIG_ENERGY_J,        /* counter: the parent's energy split to an instance (or "idle") */
    WT_M_MIG_MEM_USED_B,      /* bytes */
    WT_M_MIG_MEM_TOTAL_B,     /* bytes */
    WT_M_MIG_PROCESSES,       /* compute processes in the instance */
    WT_M_MIG_ATTRIB_INFO,     /* 1, + method="memory"|"equal"|"idle" */
    WT_M_MIG_SM_ACTIVE_RATIO, /* GPM per GPU instance, mean over the last interval, 0..1 */
    /* Inference servers (collect/inference.h): target[, model[, kind[, le]]] */
    WT_M_INF_UP,         /* 0/1: the last scrape parsed */
    WT_M_INF_INFO,       /* 1, + engine, model, gpus, tags */
    WT_M_INF_TOKENS,     /* counter as scraped: kind="prompt"|"generated"|"prompt_cached"|... */
    WT_M_INF_REQUESTS,   /* counter as scraped: finished requests */
    WT_M_INF_LAT_BUCKET, /* counter as scraped: kind="e2e"|"ttft"|"itl", le */
    WT_M_INF_LAT_SUM,    /* counter as scraped: seconds */
    WT_M_INF_LAT_COUNT,  /* counter as scraped: observations */
    WT_M_INF_RUNNING,    /* requests running now */
    WT_M_INF_WAITING,    /* requests waiting now */
    WT_M_INF_PROCESS,    /* 1 per process of the serving tree: target, pid */
    /* hwmon sensors (collect/hwmon.h): chip, sensor, label, role[, hwmon] */
    WT_M_HWMON_POWER_W,    /* powerN_average|input, or an energy counter's delta / time */
    WT_M_HWMON_ENERGY_J,   /* counter, + method="counter" (energyN_input) | "integrated" */
    WT_M_HWMON_INTERVAL_S, /* powerN_average_interval: the window a power reading averages */
    /* Inference serving energy (collect/inference.h): target, model */
    WT_M_INF_ENERGY_J, /* counter: the serving GPUs' energy attributed to the target's model */
    /* how long after the poll's stamp a GPU's energy counter read returned (collect/nvml.c) */
    WT_M_GPU_ENERGY_READ_SKEW_S,
    /* The weekly review (audit/review.h) */
    WT_M_CONFIG_INFO,     /* 1, + digest: the configuration file the daemon runs */
    WT_M_REVIEW_FINDINGS, /* week: the findings of the latest weekly review */
    /* hwmon: how old a sensor read at its own cadence is (latest readings only, never stored) */
    WT_M_HWMON_AGE_S,
    WT_M_COUNT
};

struct wt_metric {
    const char *name;
    const char *help;
    enum wt_metric_type type;
    /* The histogram family this metric's samples belong to (its _bucket, _sum or _count, in
     * that order among the metrics), exposed under one "# TYPE NAME histogram"; NULL: none. */
    const char *histogram;
};

extern const struct wt_metric wt_metrics[WT_M_COUNT];

/* Looks a metric up by its exposition name. Returns its id or -ENOENT. */
int wt_metric_find(const char *name);
/*
 * True for the two names of a GPU's energy: its hardware counter (wattage_gpu_energy_joules_total)
 * and the power integrated by wattage (wattage_gpu_energy_integrated_joules_total). The store
 * tells them apart by kind; queries pair them per GPU, counter first.
 */
bool wt_metric_is_gpu_energy(const char *name);

#define WT_LABELS_LEN 224

struct wt_reading {
    int64_t t_ns;               /* CLOCK_REALTIME */
    double value;               /* base SI unit */
    uint16_t metric;            /* enum wt_metric_id */
    char labels[WT_LABELS_LEN]; /* canonical, escaped; "" for none */
};

/* A growable array of readings; zero-initialise. Reused between ticks: wt_batch_clear keeps memory.
 */
struct wt_batch {
    struct wt_reading *r;
    size_t len, cap;
};

/* Appends one reading. Returns 0 or -ENOMEM (and -E2BIG when labels do not fit). */
int wt_batch_add(struct wt_batch *b, int metric, const char *labels, int64_t t_ns,
                 double value) WT_MUST_USE;
/*
 * Copies n readings: each one's time, value, metric and labels up to their end; the bytes of
 * labels after it are left as they were (a reading's labels are a fraction of their array).
 */
void wt_readings_copy(struct wt_reading *dst, const struct wt_reading *src, size_t n);
/* Appends all of src. Returns 0 or -ENOMEM. */
int wt_batch_append(struct wt_batch *b, const struct wt_batch *src) WT_MUST_USE;
void wt_batch_clear(struct wt_batch *b);
void wt_batch_free(struct wt_batch *b);

/*
 * Builds a canonical label string from NULL-terminated key/value pairs:
 *   wt_labels(buf, sizeof buf, "gpu", "0", "model", "NVIDIA H200", NULL)
 * Values are escaped (\\, \", \n). Returns 0 or -E2BIG when it does not fit.
 */
int wt_labels(char *buf, size_t n, ...) __attribute__((sentinel));
/* Appends one more pair to an existing label string. Returns 0 or -E2BIG. */
int wt_labels_add(char *buf, size_t n, const char *key, const char *value);
/* Copies the unescaped value of key into out. Returns 0, -ENOENT, or -E2BIG. */
int wt_labels_get(const char *labels, const char *key, char *out, size_t n);
/*
 * Iterates pairs: pass *pos = 0 first; returns 1 with key and unescaped value filled, 0 at the
 * end, -EINVAL on a malformed string.
 */
int wt_labels_next(const char *labels, size_t *pos, char *key, size_t kn, char *val, size_t vn);

#endif
