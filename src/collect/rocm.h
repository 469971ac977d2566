/* SPDX-License-Identifier: MIT */
/*
 * The AMD collector: AMD Instinct GPUs through ROCm SMI (librocm_smi64), loaded with dlopen at
 * open() so the binary runs on hosts without ROCm. The library is $WATTAGE_ROCM_SMI_LIBRARY, else
 * collectors.amd.library, else the first of WT_ROCM_LIBRARIES that loads, and that only where
 * amdgpu's KFD topology (/sys/class/kfd/kfd/topology/nodes, under the sysfs root) exists: the
 * library is not loaded on hosts without an AMD GPU. Where no ROCm SMI loads, AMD SMI does the
 * same work behind ROCm SMI's calls (collect/amdsmi.h, $WATTAGE_AMD_SMI_LIBRARY; no power reading
 * through it). The collector never sets anything on a GPU;
 * the power capper (alert/cap.c) sets limits through a session of its own (wt_rocm_caps_open).
 * Config section collectors.amd; collector and log module "amd".
 *
 * The readings share the wattage_gpu_* families with NVIDIA's, labelled
 * gpu="<index>",uuid="AMD-<unique id, 16 hex digits>[-<n>]",model="<rsmi_dev_name_get>":
 *   wattage_gpu_info (1, + vendor="amd", pci_bus_id, package="<gpu index of its package>", and
 *   partition="<n>" where the library gives one), wattage_gpu_up, wattage_gpu_power_watts
 *   (rsmi_dev_current_socket_power_get where the library has it and the GPU answers, else
 *   rsmi_dev_power_ave_get), wattage_gpu_temperature_celsius{sensor="edge"|"junction"},
 *   wattage_gpu_memory_temperature_celsius, wattage_gpu_utilization_ratio (busy percent),
 *   wattage_gpu_power_limit_watts and its _min/_max,
 *   wattage_gpu_ecc_errors_total{type=corrected|uncorrected,counter="volatile"} (the blocks
 *   rsmi_dev_ecc_enabled_get names, summed; amdgpu's counters since the driver loaded), and energy:
 *     wattage_gpu_energy_joules_total            the package's accumulator (counter x
 *         resolution), only while it passes the checks below;
 *     wattage_gpu_energy_read_skew_seconds       with each of its readings: how long after the
 *         poll's stamp the accumulator's read returned (up to 10 µs more; store/uncert.h);
 *     wattage_gpu_energy_integrated_joules_total the package's power integrated by wattage;
 *     wattage_gpu_energy_gaps_total.
 *
 * Packages (issue 45 item 2): an MI250X reports the package's power on its first die and 0 on
 * the second; an MI300X in DPX/CPX mode on partition 0 only. Devices with the same unique id
 * (else the same PCI domain:bus:device) are one package; its primary is the member with the
 * lowest (partition, function, index). Power and energy are published once per package, on its
 * primary; the other members publish info (package="<primary>"), up, temperatures, busy and
 * caps, so sum(rate(energy)) over a node is the packages' power.
 *
 * Counter check: the accumulator is compared with power x time at every tick. A counter that
 * stops while the package draws power (WT_ROCM_FROZEN_TICKS ticks in a row and a second of the
 * library's time), goes backwards (driver reload, or a 32-bit accumulator's wrap), or disagrees
 * with power x time by more than 10x over WT_ROCM_CHECK_MIN_J is dropped for the life of the
 * collector and said once (warn); the package's energy is then the integrated series alone.
 *
 * Cadence (collect/cadence.h; the table is `cadence` in rocm.c): power, energy, temperatures,
 * busy and the process list are read at every tick; the power cap, its range, the ECC counts and
 * which blocks have ECC are read at start, every collectors.amd.slow_interval (default 60 s; 0:
 * every tick), when a device answers again after failing, and after wt_rocm_slow_refresh;
 * between reads their last value is published at every poll. The identity (name, unique id, PCI
 * id) is read when the devices are found.
 *
 * Attribution (collect/attrib.h, collectors.nvml.attribution and attribution_grace): once a
 * second, with the process list below, each package's published energy since the last split
 * (the counter, else the integrated series; whole µJ) is split over the processes listed on any
 * of its devices, by VRAM where each process's is its own, else equally, scaled by the mean
 * busy ratio of its devices, the rest idle: wattage_process_gpu_energy_joules_total and
 * wattage_gpu_attribution_info on the primary's gpu and uuid, in a ledger of vendor "amd"
 * published beside NVML's.
 */
#ifndef WT_ROCM_H
#define WT_ROCM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/source.h"

extern const struct wt_collector_ops wt_amd_collector;

struct wt_gpu_procs; /* collect/nvml.h */

/*
 * The processes the library lists on each AMD GPU (rsmi_compute_process_info_get and
 * rsmi_compute_process_gpus_get, the KFD's view: compute processes), as the AMD collector read
 * them at its latest poll (at most once a second), in NVML's shape: gpu the AMD index, uuid
 * AMD-..., pids, mem_b a process's VRAM where it uses that GPU alone (the library gives one
 * figure per process), instance WT_NVML_NO_INSTANCE. Fills out[0..cap), *n and *t_ns
 * (CLOCK_REALTIME of that read). Returns 0, or -ENODATA when there is no list (no AMD collector,
 * or a library without the calls).
 */
int wt_rocm_processes(struct wt_gpu_procs *out, size_t cap, size_t *n, int64_t *t_ns);

/*
 * Asks every AMD collector of this process to read its slow fields (the power cap, its range,
 * ECC) at its next tick instead of at the next slow interval: the power capper calls it after it
 * sets or restores a cap, so that the cap it set is seen at once. Thread-safe, never blocks.
 */
void wt_rocm_slow_refresh(void);

/* Tried in order when neither the environment nor the config names a library: Debian 12's
 * (librocm-smi64-1 5.2.3), then the names ROCm releases install. */
#define WT_ROCM_LIBRARIES                                                                          \
    "librocm_smi64.so.1", "librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5",        \
        "librocm_smi64.so", "/opt/rocm/lib/librocm_smi64.so"

/*
 * µJ per count of the accumulator. The library returns a constant 15.3 (kEnergyCounterResolution),
 * a rounding of the hardware's 2^-16 J = 15.2587890625 µJ (the kernel's "15.259uJ (2^-16)
 * units"): taken at its word it reads 0.27 % high. A resolution within float rounding of 15.3 is
 * taken for 2^-16 J; any other value (a library that reports the true one) is used as given.
 * Returns 0 for a resolution that is not finite and positive.
 */
double wt_rocm_uj_per_count(float resolution);

/* What grouping needs to know of one device. */
struct wt_rocm_ident {
    bool have_uid, have_bdf;
    uint64_t uid; /* rsmi_dev_unique_id_get */
    uint64_t bdf; /* rsmi_dev_pci_id_get */
};

/*
 * Groups n devices into physical packages: same unique id (when both have one), else the same
 * PCI domain:bus:device (when both have one); a device with neither is its own package. Writes
 * primary[i] = the index of i's package primary: the member with the lowest (partition, PCI
 * function, index).
 */
void wt_rocm_group(const struct wt_rocm_ident *ids, size_t n, unsigned int *primary);

/* The counter check of one package. Zero-initialise. */
#define WT_ROCM_FROZEN_TICKS 3
#define WT_ROCM_FROZEN_NS 1000000000LL /* and this long in the library's stamps */
/*
 * Power x time before a ratio is judged: an average power lags a step by up to its window (about
 * a second), 700 J at worst on an MI300X; over 2000 J that cannot move the ratio past 10x.
 */
#define WT_ROCM_CHECK_MIN_J 2000.0
enum wt_rocm_verdict {
    WT_ROCM_OK,          /* counting (or too early to say) */
    WT_ROCM_WRAPPED,     /* counting: a 32-bit accumulator wrapped (modulus 2^32) */
    WT_ROCM_FROZEN,      /* unchanged for WT_ROCM_FROZEN_TICKS ticks that drew power */
    WT_ROCM_BACKWARDS,   /* smaller than the last reading */
    WT_ROCM_IMPLAUSIBLE, /* counter / (power x time) outside [0.1, 10] */
};
struct wt_rocm_check {
    bool have;
    uint64_t last_raw, last_ts;
    uint64_t moved_ts;  /* the library's stamp when the counter last moved */
    unsigned int still; /* ticks in a row without a change while drawing power */
    bool hold; /* the latest fresh tick did not move while drawing power or with power unknown */
    double counter_j, power_j; /* since the last judged window */
};
/*
 * Feeds one tick: raw is the accumulator and ts_ns the library's stamp of it (0: none),
 * uj_per_count its resolution, power_j the energy power x time gives since the previous tick
 * (the trapezoid of the power readings; < 0 when unknown). A tick whose stamp did not move
 * (the driver served its cached table again) is not counted as frozen. Returns the verdict;
 * once it is neither OK nor WRAPPED the caller stops using the counter.
 */
enum wt_rocm_verdict wt_rocm_check_step(struct wt_rocm_check *c, uint64_t raw, uint64_t ts_ns,
                                        double uj_per_count, double power_j);

/*
 * The power capper's session of ROCm SMI: the same library as the collector's (found the same
 * way), its own rsmi_init, the devices named as the collector names them (uuid AMD-...), so that
 * the capper's record of changes is keyed as the collector's series are. Indices are the
 * library's device indices (the "amd:N" of the other commands). Watts here; the library's µW.
 */
struct wt_config;
struct wt_err;
struct wt_rocm_caps;
struct wt_rocm_cap {
    double limit_w, min_w, max_w, default_w; /* 0: unknown */
};
/* 0, or -errno with err set (no library, no device, no rsmi_dev_power_cap_set). */
int wt_rocm_caps_open(const struct wt_config *cfg, struct wt_rocm_caps **out, struct wt_err *err);
void wt_rocm_caps_close(struct wt_rocm_caps *c);
unsigned int wt_rocm_caps_count(const struct wt_rocm_caps *c);
const char *wt_rocm_caps_uuid(const struct wt_rocm_caps *c, unsigned int i);
/* rsmi_dev_power_cap_get (its status is returned: 0 success), _range_get and _default_get. */
int wt_rocm_caps_read(struct wt_rocm_caps *c, unsigned int i, struct wt_rocm_cap *out);
/* rsmi_dev_power_cap_set; returns the library's status (0 success). */
int wt_rocm_caps_set(struct wt_rocm_caps *c, unsigned int i, double watts);
const char *wt_rocm_caps_errstr(const struct wt_rocm_caps *c, int status);
/* The status says setting limits needs root. */
bool wt_rocm_caps_denied(int status);

#endif
