/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's interconnect and performance counters, and the S-class units' power
 * supplies: a part of the collector (collect/nvml.c opens, polls and closes it) with its own
 * optional entry points, resolved from the collector's library handle.
 *
 * Per GPU, labelled as the collector's other GPU series (gpu, uuid, model), each where the GPU
 * reports it:
 *   wattage_gpu_nvlink_{transmit,receive}_bytes_total  nvmlDeviceGetFieldValues
 *       NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX (138/139, KiB of payload, all links: scope
 *       UINT_MAX);
 *   wattage_gpu_pcie_{transmit,receive}_bytes_total    NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES
 *       (197/198, bytes; the counter wraps at its value type's width);
 *   wattage_gpu_sm_active_ratio, _sm_occupancy_ratio, _tensor_active_ratio,
 *   wattage_gpu_dram_bandwidth_utilization_ratio       GPM (Hopper and newer): the mean over the
 *       time between this poll's sample and the previous one (at least 100 ms apart), 0..1;
 *   wattage_gpu_power_source_info{source}              nvmlDeviceGetPowerSource.
 * Per S-class unit (unit="N"; only S-class units report a power supply):
 *   wattage_psu_power_watts, _voltage_volts, _current_amperes, wattage_psu_state_info{state},
 *   wattage_unit_fan_rpm{fan}, wattage_unit_fan_failed{fan}.
 *
 * Counters are followed in their raw units with wrap (a value type narrower than 64 bits wraps
 * at its width) and reset detection (a 64-bit counter going back is a driver reload: a new
 * baseline, never a negative step), and exported as the first raw reading plus every increase
 * since, so a counter that never wrapped reads as the hardware does.
 * Anything the GPU or library does not support (NOT_SUPPORTED, no entry point, GPM before
 * Hopper, no S-class unit) is absent, never zero, is not asked for again, and is said once per
 * collector at info; other failures skip that value for one poll (a warning at most once a
 * minute) and never stop the poll.
 */
#ifndef WT_NVML_FIELDS_H
#define WT_NVML_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/nvml_api.h"
#include "core/energy.h"
#include "core/err.h"
#include "core/reading.h"

struct wt_nvml_fields;

/* Every entry point this part resolves (all optional), for tests that check a library exports
 * them. */
extern const char *const wt_nvml_fields_symbols[];
extern const size_t wt_nvml_fields_symbol_count;

/*
 * Opens the part over the collector's library handle dl (NVML initialised; library is its path,
 * for messages) for ngpus GPUs; error_string is nvmlErrorString (may be NULL). Resolves the
 * entry points and counts the S-class units (said once at info when there is none). The
 * caller keeps dl open until wt_nvml_fields_close. Returns 0 and *out, or -ENOMEM.
 */
int wt_nvml_fields_open(void *dl, const char *library, unsigned int ngpus,
                        wt_nvml_error_string_fn *error_string,
                        struct wt_nvml_fields **out) WT_MUST_USE;

/*
 * Reads GPU index's counters, GPM metrics and power source into out, labelled labels, stamped
 * t_ns. dev is the handle the collector holds now; uuid tells another board at the index
 * (its counters and samples start afresh). The power source is a slow field (collect/cadence.h):
 * read when slow or when the last read failed, else its last value is published again. Called
 * only for a GPU that is up this poll; a NULL f does nothing. Returns 0 or -ENOMEM.
 */
int wt_nvml_fields_poll_gpu(struct wt_nvml_fields *f, unsigned int index, nvmlDevice_t dev,
                            const char *uuid, const char *labels, bool slow, int64_t t_ns,
                            struct wt_batch *out) WT_MUST_USE;

/* Reads the S-class units' power supplies and fans into out. NULL f: nothing. 0 or -ENOMEM. */
int wt_nvml_fields_poll_units(struct wt_nvml_fields *f, int64_t t_ns,
                              struct wt_batch *out) WT_MUST_USE;

/* Frees the GPM sample buffers (NVML must still be initialised) and f. Accepts NULL. */
void wt_nvml_fields_close(struct wt_nvml_fields *f);

/*
 * One field value as a raw counter reading: *raw and the counter's modulus (1 << 32 for an
 * unsigned int, 1 << 16 for a short, 0 for 64-bit types, whose decrease is a reset). False for
 * a value that is no counter (negative, NaN, unknown type).
 */
bool wt_nvml_field_counter(const nvmlFieldValue_t *fv, uint64_t *raw, uint64_t *modulus);

/* A field counter followed over polls. Zero-initialise. */
struct wt_nvml_counter {
    bool have;
    uint64_t first_raw; /* the first reading, raw units */
    struct wt_energy_counter c;
};

/*
 * Feeds one raw reading. Returns the kind of step (a wrap within the modulus, or a reset that
 * starts a new baseline). *total gets first_raw + every increase since, raw units.
 */
enum wt_delta_kind wt_nvml_counter_update(struct wt_nvml_counter *c, int64_t t_ns, uint64_t raw,
                                          uint64_t modulus, uint64_t *total);

#endif
