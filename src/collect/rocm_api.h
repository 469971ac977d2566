/* SPDX-License-Identifier: MIT */
/*
 * The part of AMD's ROCm SMI library (librocm_smi64) that wattage uses, declared from Debian 12's
 * rocm_smi/rocm_smi.h (librocm-smi-dev 5.2.3) and checked against it; wattage never includes
 * that header nor links the library. Only what we call is here: the status codes, the two enum
 * values passed by value, and one function type per entry point. The library is loaded with
 * dlopen (src/collect/rocm.c); the test fake (tests/fakes/fake_rocm_smi.c) declares its exports
 * with the same function types, so a signature mismatch is a compile error on both sides.
 *
 * No whole-table struct (rsmi_gpu_metrics_t, rsmi_frequencies_t) is declared: they are caller
 * allocated and grew between releases, so a caller built for one release is written past by
 * another. Only scalar getters cross the boundary.
 *
 * Units are the library's own: µW, µJ per count, ns, millidegrees Celsius, percent.
 */
#ifndef WT_ROCM_API_H
#define WT_ROCM_API_H

#include <stddef.h>
#include <stdint.h>

/* rsmi_status_t (5.2.3 numbering, unchanged since); a 32-bit enum either way. */
typedef enum {
    RSMI_STATUS_SUCCESS = 0,
    RSMI_STATUS_INVALID_ARGS = 1,
    RSMI_STATUS_NOT_SUPPORTED = 2,
    RSMI_STATUS_FILE_ERROR = 3,
    RSMI_STATUS_PERMISSION = 4,
    RSMI_STATUS_OUT_OF_RESOURCES = 5,
    RSMI_STATUS_INTERNAL_EXCEPTION = 6,
    RSMI_STATUS_INPUT_OUT_OF_BOUNDS = 7,
    RSMI_STATUS_INIT_ERROR = 8,
    RSMI_STATUS_NOT_YET_IMPLEMENTED = 9,
    RSMI_STATUS_NOT_FOUND = 10,
    RSMI_STATUS_INSUFFICIENT_SIZE = 11,
    RSMI_STATUS_INTERRUPT = 12,
    RSMI_STATUS_UNEXPECTED_SIZE = 13,
    RSMI_STATUS_NO_DATA = 14,
    RSMI_STATUS_UNEXPECTED_DATA = 15,
    RSMI_STATUS_BUSY = 16,
    RSMI_STATUS_REFCOUNT_OVERFLOW = 17
    /* RSMI_STATUS_UNKNOWN_ERROR is 0xFFFFFFFF: reported by number like any other */
} rsmi_status_t;

/* rsmi_temperature_type_t, passed as uint32_t sensor_type. */
#define RSMI_TEMP_TYPE_EDGE 0u
#define RSMI_TEMP_TYPE_JUNCTION 1u
#define RSMI_TEMP_TYPE_MEMORY 2u

/* rsmi_temperature_metric_t (an enum passed by value). */
typedef enum { RSMI_TEMP_CURRENT = 0 } rsmi_temperature_metric_t;

/*
 * rsmi_dev_pci_id_get's bdfid: domain [63:32], bus [15:8], device [7:3], function [2:0]; ROCm
 * 6.2 and later put the compute partition id in [31:28] (reserved, zero, in 5.2.3).
 */
#define WT_RSMI_BDF_DOMAIN(b) ((unsigned int)((b) >> 32))
#define WT_RSMI_BDF_BUS(b) ((unsigned int)(((b) >> 8) & 0xffu))
#define WT_RSMI_BDF_DEV(b) ((unsigned int)(((b) >> 3) & 0x1fu))
#define WT_RSMI_BDF_FUNC(b) ((unsigned int)((b)&0x7u))
#define WT_RSMI_BDF_PARTITION(b) ((unsigned int)(((b) >> 28) & 0xfu))

/*
 * rsmi_error_count_t as 5.2.3 has it: two counters. Later releases may append fields, so the
 * caller passes wt_rsmi_error_count_buf (room to spare, zeroed) and reads the first two.
 */
typedef struct {
    uint64_t correctable_err;
    uint64_t uncorrectable_err;
} wt_rsmi_error_count_t;
typedef union {
    wt_rsmi_error_count_t ec;
    uint64_t spare[16];
} wt_rsmi_error_count_buf;

/* rsmi_gpu_block_t: one bit per block, UMC (0x1) to FUSE (0x2000); a 64-bit enum (its RESERVED
 * member is 0x8000000000000000), so passed as uint64_t. */
#define WT_RSMI_GPU_BLOCKS 0x3fffull

/*
 * rsmi_process_info_t as 5.2.3 declares it (the KFD's view of a process using a GPU). The
 * library writes an array of them at its own stride: a caller passes room for more than it
 * asks (rocm.c allocates WT_RSMI_PROC_SLACK times the entries it declares), so a release whose
 * struct grew writes garbage, not past the buffer.
 */
typedef struct {
    uint32_t process_id;
    uint32_t pasid;
    uint64_t vram_usage;   /* bytes */
    uint64_t sdma_usage;   /* µs */
    uint32_t cu_occupancy; /* percent */
} wt_rsmi_process_info_t;
#define WT_RSMI_PROC_SLACK 4

/* One type per entry point; the fake defines its exports with these. */
typedef rsmi_status_t wt_rsmi_init_fn(uint64_t init_flags);
typedef rsmi_status_t wt_rsmi_shut_down_fn(void);
typedef rsmi_status_t wt_rsmi_status_string_fn(rsmi_status_t status, const char **status_string);
typedef rsmi_status_t wt_rsmi_num_devices_fn(uint32_t *num_devices);
typedef rsmi_status_t wt_rsmi_name_fn(uint32_t dv_ind, char *name, size_t len);
/* (rsmi_dev_power_cap_default_get among them: µW) */
typedef rsmi_status_t wt_rsmi_u64_fn(uint32_t dv_ind, uint64_t *value);
typedef rsmi_status_t wt_rsmi_u32_fn(uint32_t dv_ind, uint32_t *value);
/* rsmi_dev_energy_count_get: *power is the raw accumulator (the name is the library's),
 * *counter_resolution µJ per count, *timestamp ns (the driver's CLOCK_BOOTTIME). */
typedef rsmi_status_t wt_rsmi_energy_fn(uint32_t dv_ind, uint64_t *power, float *counter_resolution,
                                        uint64_t *timestamp);
/* rsmi_dev_power_ave_get, rsmi_dev_power_cap_get: µW */
typedef rsmi_status_t wt_rsmi_sensor_u64_fn(uint32_t dv_ind, uint32_t sensor_ind, uint64_t *value);
/* rsmi_dev_power_cap_set: µW, within the range; RSMI_STATUS_PERMISSION unless root */
typedef rsmi_status_t wt_rsmi_cap_set_fn(uint32_t dv_ind, uint32_t sensor_ind, uint64_t cap);
/* rsmi_dev_power_cap_range_get: µW, maximum first */
typedef rsmi_status_t wt_rsmi_cap_range_fn(uint32_t dv_ind, uint32_t sensor_ind, uint64_t *max,
                                           uint64_t *min);
/* rsmi_dev_ecc_count_get: counts of one block since the driver loaded (amdgpu's RAS counters) */
typedef rsmi_status_t wt_rsmi_ecc_count_fn(uint32_t dv_ind, uint64_t block,
                                           wt_rsmi_error_count_t *ec);
/* rsmi_dev_temp_metric_get: millidegrees Celsius */
typedef rsmi_status_t wt_rsmi_temp_fn(uint32_t dv_ind, uint32_t sensor_type,
                                      rsmi_temperature_metric_t metric, int64_t *temperature);

/* rsmi_compute_process_info_get: every process on any GPU; procs NULL asks the count */
typedef rsmi_status_t wt_rsmi_proc_info_fn(wt_rsmi_process_info_t *procs, uint32_t *num_items);
/* rsmi_compute_process_gpus_get: the device indices process pid uses; dv_indices NULL asks the
 * count */
typedef rsmi_status_t wt_rsmi_proc_gpus_fn(uint32_t pid, uint32_t *dv_indices,
                                           uint32_t *num_devices);

#endif
