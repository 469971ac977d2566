/* SPDX-License-Identifier: MIT */
/*
 * The part of AMD SMI (libamd_smi, amd_smi/amdsmi.h) that wattage uses, declared from the
 * library's public header; wattage never includes that header nor links the library. The library
 * is loaded with dlopen (src/collect/amdsmi.c); the test fake (tests/fakes/fake_amd_smi.c)
 * defines its exports with these function types, so a signature mismatch is a compile error on
 * both sides.
 *
 * Checked against copies of amdsmi.h of several releases: the 23.1 header of the ROCm/amdsmi
 * repository (ROCm 5.6/5.7 era, amdsmi_get_processor_handles and amdsmi_power_measure_t), a 6.x
 * header (market_name of 256 bytes, amdsmi_power_info_t without current_socket_power) and recent
 * 7.x-era headers (amdsmi_power_info_t starting with a 64-bit socket_power). Only calls whose
 * arguments are scalars, or structs whose fields read here sit at the same offsets with the same
 * types in every one of them, are used:
 *   amdsmi_power_cap_info_t  five uint64_t first (power_cap, default_power_cap, dpm_cap,
 *                            min_power_cap, max_power_cap), µW on bare metal Linux: identical;
 *   amdsmi_engine_usage_t    gfx_activity the first uint32_t (mm_activity went from an array of
 *                            8 to one value after it);
 *   amdsmi_asic_info_t       market_name the first member, a NUL-terminated char array of 64 or
 *                            256 bytes;
 *   amdsmi_error_count_t     two uint64_t first (correctable, uncorrectable; named *_err in
 *                            5.5, *_count after), deferred_count and reserved after them.
 * Each is passed inside a zeroed buffer far larger than any release's struct. amdsmi_power_info_t
 * is not used: its first fields changed twice (5.7: average_socket_power; 6.x:
 * current_socket_power inserted before it; 7.x: a uint64_t socket_power first), so a caller
 * built for one release misreads another. Nor are amdsmi_get_gpu_metrics_info (a growing
 * whole-table struct) and amdsmi_get_gpu_process_list (amdsmi_proc_info_t changed).
 *
 * Units are the library's: µJ per count and ns (the energy counter, a wrapper of ROCm SMI's),
 * degrees Celsius (amdsmi_get_temp_metric divides ROCm SMI's millidegrees by 1000 although its
 * header says millidegrees), percent, µW (caps).
 */
#ifndef WT_AMDSMI_API_H
#define WT_AMDSMI_API_H

#include <stdint.h>

/* amdsmi_status_t: the same numbers in every header checked; a 32-bit enum either way. */
typedef uint32_t wt_amdsmi_status_t;
#define AMDSMI_STATUS_SUCCESS 0u
#define AMDSMI_STATUS_INVAL 1u
#define AMDSMI_STATUS_NOT_SUPPORTED 2u
#define AMDSMI_STATUS_NOT_YET_IMPLEMENTED 3u
#define AMDSMI_STATUS_FAIL_LOAD_MODULE 4u
#define AMDSMI_STATUS_DRM_ERROR 6u
#define AMDSMI_STATUS_NO_PERM 10u
#define AMDSMI_STATUS_INTERRUPT 11u
#define AMDSMI_STATUS_IO 12u
#define AMDSMI_STATUS_FILE_ERROR 14u
#define AMDSMI_STATUS_OUT_OF_RESOURCES 15u
#define AMDSMI_STATUS_INTERNAL_EXCEPTION 16u
#define AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS 17u
#define AMDSMI_STATUS_INIT_ERROR 18u
#define AMDSMI_STATUS_REFCOUNT_OVERFLOW 19u
#define AMDSMI_STATUS_BUSY 30u
#define AMDSMI_STATUS_NOT_FOUND 31u
#define AMDSMI_STATUS_NOT_INIT 32u
#define AMDSMI_STATUS_NO_DATA 40u
#define AMDSMI_STATUS_INSUFFICIENT_SIZE 41u
#define AMDSMI_STATUS_UNEXPECTED_SIZE 42u
#define AMDSMI_STATUS_UNEXPECTED_DATA 43u

/* amdsmi_init's flags: AMD GPUs only. */
#define WT_AMDSMI_INIT_AMD_GPUS (1ull << 1)

/* amdsmi_temperature_type_t (values unchanged since 5.7; the names gained AMDSMI_ in 6.0) and
 * amdsmi_temperature_metric_t's CURRENT, both passed by value. */
#define WT_AMDSMI_TEMP_EDGE 0u
#define WT_AMDSMI_TEMP_HOTSPOT 1u
#define WT_AMDSMI_TEMP_VRAM 2u
#define WT_AMDSMI_TEMP_CURRENT 0u

/* amdsmi_get_gpu_device_uuid's buffer: AMDSMI_GPU_UUID_SIZE is 38. */
#define WT_AMDSMI_UUID_SIZE 38u

/* The leading fields of amdsmi_power_cap_info_t (see above): µW, dpm_cap MHz. */
typedef struct {
    uint64_t power_cap;
    uint64_t default_power_cap;
    uint64_t dpm_cap;
    uint64_t min_power_cap;
    uint64_t max_power_cap;
} wt_amdsmi_power_cap_head_t;

/* The leading fields of amdsmi_error_count_t (see above). */
typedef struct {
    uint64_t correctable_count;
    uint64_t uncorrectable_count;
} wt_amdsmi_error_count_head_t;

/* Room for any release's struct of those read by their head: zeroed by the caller. */
typedef union {
    wt_amdsmi_power_cap_head_t cap;
    wt_amdsmi_error_count_head_t ecc;
    uint32_t gfx_activity; /* amdsmi_engine_usage_t's first field, percent */
    char market_name[256]; /* amdsmi_asic_info_t's first field */
    uint64_t spare[512];
} wt_amdsmi_buf;

typedef void *wt_amdsmi_handle; /* amdsmi_socket_handle, amdsmi_processor_handle */

/* One type per entry point; the fake defines its exports with these. */
typedef wt_amdsmi_status_t wt_amdsmi_init_fn(uint64_t init_flags);
typedef wt_amdsmi_status_t wt_amdsmi_shut_down_fn(void);
typedef wt_amdsmi_status_t wt_amdsmi_status_string_fn(wt_amdsmi_status_t status,
                                                      const char **status_string);
/* amdsmi_get_socket_handles: handles NULL asks the count */
typedef wt_amdsmi_status_t wt_amdsmi_sockets_fn(uint32_t *socket_count,
                                                wt_amdsmi_handle *socket_handles);
/* amdsmi_get_processor_handles (5.7 and later; amdsmi_get_device_handles in 5.5/5.6) */
typedef wt_amdsmi_status_t wt_amdsmi_processors_fn(wt_amdsmi_handle socket,
                                                   uint32_t *processor_count,
                                                   wt_amdsmi_handle *processor_handles);
/* amdsmi_get_energy_count: the accumulator (the parameter is named power up to 6.2), µJ per
 * count, ns */
typedef wt_amdsmi_status_t wt_amdsmi_energy_fn(wt_amdsmi_handle h, uint64_t *energy_accumulator,
                                               float *counter_resolution, uint64_t *timestamp);
/* amdsmi_get_gpu_bdf_id: ROCm SMI's PCI id encoding (rocm_api.h); amdsmi_get_gpu_ecc_enabled:
 * the blocks' bits */
typedef wt_amdsmi_status_t wt_amdsmi_u64_fn(wt_amdsmi_handle h, uint64_t *value);
/* amdsmi_get_gpu_device_uuid: *len is the buffer's size in, the string's length out */
typedef wt_amdsmi_status_t wt_amdsmi_uuid_fn(wt_amdsmi_handle h, unsigned int *uuid_length,
                                             char *uuid);
/* amdsmi_get_temp_metric: °C (see above) */
typedef wt_amdsmi_status_t wt_amdsmi_temp_fn(wt_amdsmi_handle h, uint32_t sensor_type,
                                             uint32_t metric, int64_t *temperature);
/* amdsmi_get_gpu_activity, amdsmi_get_gpu_asic_info: a struct read by its head (see above) */
typedef wt_amdsmi_status_t wt_amdsmi_struct_fn(wt_amdsmi_handle h, void *info);
/* amdsmi_get_power_cap_info */
typedef wt_amdsmi_status_t wt_amdsmi_cap_info_fn(wt_amdsmi_handle h, uint32_t sensor_ind,
                                                 void *info);
/* amdsmi_get_gpu_ecc_count: one block of amdsmi_gpu_block_t, a 64-bit enum with ROCm SMI's
 * rsmi_gpu_block_t values (UMC 0x1 ...), passed as uint64_t */
typedef wt_amdsmi_status_t wt_amdsmi_ecc_count_fn(wt_amdsmi_handle h, uint64_t block, void *ec);
/* amdsmi_set_power_cap: µW */
typedef wt_amdsmi_status_t wt_amdsmi_cap_set_fn(wt_amdsmi_handle h, uint32_t sensor_ind,
                                                uint64_t cap);

#endif
