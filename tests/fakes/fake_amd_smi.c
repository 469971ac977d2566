/* SPDX-License-Identifier: MIT */
/*
 * A fake libamd_smi.so for tests: a real shared object the AMD collector finds through the same
 * dlopen path as AMD's (WATTAGE_AMD_SMI_LIBRARY), exporting only AMD SMI entry points, declared
 * with src/collect/amdsmi_api.h's types. It is linked with tests/fakes/fake_rocm_smi.c, whose
 * symbols are hidden (-fvisibility=hidden), as the real libamd_smi carries its own copy of ROCm
 * SMI: the same physics and the same FAKE_RSMI_* knobs (an MI250X pair whose second die reads 0,
 * the accumulator, temperatures, caps), seen through AMD SMI's calls and units:
 *
 *   amdsmi_init                  rsmi_init (reads the knobs); AMDSMI_STATUS_INIT_ERROR where
 *                                FAKE_RSMI_INIT_FAIL is set
 *   amdsmi_get_socket_handles    two sockets (one where there is one device): the first holds
 *                                devices [0, ceil(n/2)), the second the rest
 *   amdsmi_get_processor_handles that socket's devices in order; FAKE_AMDSMI_BAD_SOCKET=K: socket
 *                                K's answer AMDSMI_STATUS_NOT_SUPPORTED
 *   amdsmi_get_gpu_device_uuid   the uuid amdsmi_uuid_gen makes of the unique id, PCI device id
 *                                0x740c and index 0xff (see wt_amdsmi_uuid_uid)
 *   amdsmi_get_gpu_asic_info     market_name: the model (6.x layout, 256 bytes)
 *   amdsmi_get_gpu_bdf_id, amdsmi_get_energy_count   as ROCm SMI's
 *   amdsmi_get_temp_metric       °C (the real one divides ROCm SMI's millidegrees by 1000)
 *   amdsmi_get_gpu_activity      gfx_activity: ROCm SMI's busy percent
 *   amdsmi_get_power_cap_info    µW, the cap, default, range
 *   amdsmi_set_power_cap         µW (FAKE_RSMI_CAP_LOG, FAKE_RSMI_CAP_DENIED)
 *   amdsmi_get_gpu_ecc_enabled, amdsmi_get_gpu_ecc_count   as ROCm SMI's (FAKE_RSMI_ECC)
 *   amdsmi_status_code_to_string "AMDSMI_STATUS_..." names
 * and no amdsmi_get_power_info (the collector does not use it: its struct changed).
 *
 * -DFAKE_AMDSMI_NO_HANDLES: without amdsmi_get_processor_handles (a library wattage cannot use;
 * build/tests/fakes/nohandles/libamd_smi.so).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/amdsmi_api.h"
#include "collect/rocm_api.h"

#define EXPORT __attribute__((visibility("default")))
#define SOCKET_BASE 0x5000u
#define DEV_BASE 0x6000u

/* fake_rocm_smi.c's (hidden here) */
wt_rsmi_init_fn rsmi_init;
wt_rsmi_num_devices_fn rsmi_num_monitor_devices;
wt_rsmi_name_fn rsmi_dev_name_get;
wt_rsmi_u64_fn rsmi_dev_unique_id_get, rsmi_dev_pci_id_get;
wt_rsmi_energy_fn rsmi_dev_energy_count_get;
wt_rsmi_temp_fn rsmi_dev_temp_metric_get;
wt_rsmi_u32_fn rsmi_dev_busy_percent_get;
wt_rsmi_sensor_u64_fn rsmi_dev_power_cap_get;
wt_rsmi_cap_range_fn rsmi_dev_power_cap_range_get;
wt_rsmi_u64_fn rsmi_dev_power_cap_default_get;
wt_rsmi_cap_set_fn rsmi_dev_power_cap_set;
wt_rsmi_u64_fn rsmi_dev_ecc_enabled_get;
wt_rsmi_ecc_count_fn rsmi_dev_ecc_count_get;

/* The structs as a 6.x header lays them out (the collector reads only their heads). */
typedef struct {
    uint64_t power_cap, default_power_cap, dpm_cap, min_power_cap, max_power_cap;
    uint64_t reserved[3];
} fake_power_cap_info_t;
typedef struct {
    char market_name[256];
    uint32_t vendor_id;
    char vendor_name[64];
    uint32_t subvendor_id;
    uint64_t device_id;
    uint32_t rev_id;
    char asic_serial[32];
    uint32_t oam_id;
    uint32_t reserved[18];
} fake_asic_info_t;
typedef struct {
    uint64_t correctable_count, uncorrectable_count, deferred_count;
    uint64_t reserved[5];
} fake_error_count_t;
typedef struct {
    uint32_t gfx_activity, umc_activity, mm_activity;
    uint32_t reserved[13];
} fake_engine_usage_t;

static uint32_t n_devs;

/* ROCm SMI's status as AMD SMI's. */
static wt_amdsmi_status_t st(rsmi_status_t r)
{
    switch (r) {
    case RSMI_STATUS_SUCCESS:
        return AMDSMI_STATUS_SUCCESS;
    case RSMI_STATUS_INVALID_ARGS:
        return AMDSMI_STATUS_INVAL;
    case RSMI_STATUS_NOT_SUPPORTED:
        return AMDSMI_STATUS_NOT_SUPPORTED;
    case RSMI_STATUS_FILE_ERROR:
        return AMDSMI_STATUS_FILE_ERROR;
    case RSMI_STATUS_PERMISSION:
        return AMDSMI_STATUS_NO_PERM;
    case RSMI_STATUS_INIT_ERROR:
        return AMDSMI_STATUS_INIT_ERROR;
    default:
        return AMDSMI_STATUS_INTERNAL_EXCEPTION;
    }
}

/* The device index behind a processor handle, n_devs for none. */
static uint32_t dev(wt_amdsmi_handle h)
{
    uintptr_t v = (uintptr_t)h;
    return v >= DEV_BASE && v < DEV_BASE + n_devs ? (uint32_t)(v - DEV_BASE) : n_devs;
}

static uint32_t n_sockets(void)
{
    return n_devs > 1 ? 2 : n_devs;
}

EXPORT wt_amdsmi_init_fn amdsmi_init;
wt_amdsmi_status_t amdsmi_init(uint64_t init_flags)
{
    if (!(init_flags & WT_AMDSMI_INIT_AMD_GPUS))
        return AMDSMI_STATUS_INVAL;
    wt_amdsmi_status_t r = st(rsmi_init(0));
    if (r == AMDSMI_STATUS_SUCCESS)
        rsmi_num_monitor_devices(&n_devs);
    return r;
}

EXPORT wt_amdsmi_shut_down_fn amdsmi_shut_down;
wt_amdsmi_status_t amdsmi_shut_down(void)
{
    n_devs = 0;
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT wt_amdsmi_status_string_fn amdsmi_status_code_to_string;
wt_amdsmi_status_t amdsmi_status_code_to_string(wt_amdsmi_status_t s, const char **out)
{
    switch (s) {
    case AMDSMI_STATUS_SUCCESS:
        *out = "AMDSMI_STATUS_SUCCESS";
        break;
    case AMDSMI_STATUS_NOT_SUPPORTED:
        *out = "AMDSMI_STATUS_NOT_SUPPORTED";
        break;
    case AMDSMI_STATUS_FILE_ERROR:
        *out = "AMDSMI_STATUS_FILE_ERROR";
        break;
    case AMDSMI_STATUS_NO_PERM:
        *out = "AMDSMI_STATUS_NO_PERM";
        break;
    case AMDSMI_STATUS_INIT_ERROR:
        *out = "AMDSMI_STATUS_INIT_ERROR";
        break;
    default:
        *out = "AMDSMI_STATUS_UNKNOWN_ERROR";
    }
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT wt_amdsmi_sockets_fn amdsmi_get_socket_handles;
wt_amdsmi_status_t amdsmi_get_socket_handles(uint32_t *count, wt_amdsmi_handle *handles)
{
    if (!count)
        return AMDSMI_STATUS_INVAL;
    if (!handles) {
        *count = n_sockets();
        return AMDSMI_STATUS_SUCCESS;
    }
    uint32_t n = *count < n_sockets() ? *count : n_sockets();
    for (uint32_t k = 0; k < n; k++)
        handles[k] = (wt_amdsmi_handle)(uintptr_t)(SOCKET_BASE + k);
    *count = n;
    return AMDSMI_STATUS_SUCCESS;
}

#ifndef FAKE_AMDSMI_NO_HANDLES
EXPORT wt_amdsmi_processors_fn amdsmi_get_processor_handles;
wt_amdsmi_status_t amdsmi_get_processor_handles(wt_amdsmi_handle socket, uint32_t *count,
                                                wt_amdsmi_handle *handles)
{
    uintptr_t k = (uintptr_t)socket - SOCKET_BASE;
    if (!count || (uintptr_t)socket < SOCKET_BASE || k >= n_sockets())
        return AMDSMI_STATUS_INVAL;
    const char *bad = getenv("FAKE_AMDSMI_BAD_SOCKET");
    if (bad && *bad && strtoul(bad, NULL, 10) == k)
        return AMDSMI_STATUS_NOT_SUPPORTED;
    uint32_t half = (n_devs + 1) / 2, from = k ? half : 0, to = k ? n_devs : half;
    if (!handles) {
        *count = to - from;
        return AMDSMI_STATUS_SUCCESS;
    }
    uint32_t n = 0;
    for (uint32_t i = from; i < to && n < *count; i++)
        handles[n++] = (wt_amdsmi_handle)(uintptr_t)(DEV_BASE + i);
    *count = n;
    return AMDSMI_STATUS_SUCCESS;
}
#endif

EXPORT wt_amdsmi_uuid_fn amdsmi_get_gpu_device_uuid;
wt_amdsmi_status_t amdsmi_get_gpu_device_uuid(wt_amdsmi_handle h, unsigned int *len, char *uuid)
{
    if (!len || !uuid || *len < WT_AMDSMI_UUID_SIZE)
        return AMDSMI_STATUS_INVAL;
    uint64_t u = 0;
    wt_amdsmi_status_t r = st(rsmi_dev_unique_id_get(dev(h), &u));
    if (r != AMDSMI_STATUS_SUCCESS)
        return r;
    /* amdsmi_uuid_gen's layout: the unique id's top byte over function index and device id,
     * version 1, variant 2 over its byte 6, then its bytes 5..4 and 3..0 */
    uint32_t time_low = (uint32_t)(u >> 56) << 24 | 0xffu << 16 | 0x740cu;
    snprintf(uuid, *len, "%08x-%04x-%04x-%02x%02x-%04x%08x", time_low, 0u, 0x1000u, 0x80u,
             (unsigned int)(u >> 48) & 0xffu, (unsigned int)(u >> 32) & 0xffffu, (unsigned int)u);
    *len = (unsigned int)strlen(uuid);
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT wt_amdsmi_struct_fn amdsmi_get_gpu_asic_info;
wt_amdsmi_status_t amdsmi_get_gpu_asic_info(wt_amdsmi_handle h, void *info)
{
    fake_asic_info_t a;
    memset(&a, 0, sizeof a);
    wt_amdsmi_status_t r = st(rsmi_dev_name_get(dev(h), a.market_name, sizeof a.market_name));
    if (r != AMDSMI_STATUS_SUCCESS || !info)
        return info ? r : AMDSMI_STATUS_INVAL;
    a.vendor_id = 0x1002;
    a.device_id = 0x740c;
    memcpy(info, &a, sizeof a);
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT wt_amdsmi_u64_fn amdsmi_get_gpu_bdf_id;
wt_amdsmi_status_t amdsmi_get_gpu_bdf_id(wt_amdsmi_handle h, uint64_t *bdf)
{
    return st(rsmi_dev_pci_id_get(dev(h), bdf));
}

EXPORT wt_amdsmi_energy_fn amdsmi_get_energy_count;
wt_amdsmi_status_t amdsmi_get_energy_count(wt_amdsmi_handle h, uint64_t *acc, float *res,
                                           uint64_t *ts)
{
    return st(rsmi_dev_energy_count_get(dev(h), acc, res, ts));
}

EXPORT wt_amdsmi_temp_fn amdsmi_get_temp_metric;
wt_amdsmi_status_t amdsmi_get_temp_metric(wt_amdsmi_handle h, uint32_t sensor, uint32_t metric,
                                          int64_t *temperature)
{
    if (metric != WT_AMDSMI_TEMP_CURRENT || !temperature)
        return AMDSMI_STATUS_INVAL;
    wt_amdsmi_status_t r =
        st(rsmi_dev_temp_metric_get(dev(h), sensor, RSMI_TEMP_CURRENT, temperature));
    *temperature /= 1000;
    return r;
}

EXPORT wt_amdsmi_struct_fn amdsmi_get_gpu_activity;
wt_amdsmi_status_t amdsmi_get_gpu_activity(wt_amdsmi_handle h, void *info)
{
    fake_engine_usage_t e;
    memset(&e, 0, sizeof e);
    wt_amdsmi_status_t r = st(rsmi_dev_busy_percent_get(dev(h), &e.gfx_activity));
    if (r == AMDSMI_STATUS_SUCCESS && info)
        memcpy(info, &e, sizeof e);
    return info ? r : AMDSMI_STATUS_INVAL;
}

EXPORT wt_amdsmi_cap_info_fn amdsmi_get_power_cap_info;
wt_amdsmi_status_t amdsmi_get_power_cap_info(wt_amdsmi_handle h, uint32_t sensor, void *info)
{
    fake_power_cap_info_t c;
    memset(&c, 0, sizeof c);
    uint32_t d = dev(h);
    wt_amdsmi_status_t r = st(rsmi_dev_power_cap_get(d, sensor, &c.power_cap));
    if (r != AMDSMI_STATUS_SUCCESS || !info)
        return info ? r : AMDSMI_STATUS_INVAL;
    rsmi_dev_power_cap_default_get(d, &c.default_power_cap);
    rsmi_dev_power_cap_range_get(d, sensor, &c.max_power_cap, &c.min_power_cap);
    c.dpm_cap = 1700;
    memcpy(info, &c, sizeof c);
    return AMDSMI_STATUS_SUCCESS;
}

EXPORT wt_amdsmi_cap_set_fn amdsmi_set_power_cap;
wt_amdsmi_status_t amdsmi_set_power_cap(wt_amdsmi_handle h, uint32_t sensor, uint64_t cap)
{
    return st(rsmi_dev_power_cap_set(dev(h), sensor, cap));
}

EXPORT wt_amdsmi_u64_fn amdsmi_get_gpu_ecc_enabled;
wt_amdsmi_status_t amdsmi_get_gpu_ecc_enabled(wt_amdsmi_handle h, uint64_t *blocks)
{
    return st(rsmi_dev_ecc_enabled_get(dev(h), blocks));
}

EXPORT wt_amdsmi_ecc_count_fn amdsmi_get_gpu_ecc_count;
wt_amdsmi_status_t amdsmi_get_gpu_ecc_count(wt_amdsmi_handle h, uint64_t block, void *ec)
{
    wt_rsmi_error_count_t e = {0};
    wt_amdsmi_status_t r = st(rsmi_dev_ecc_count_get(dev(h), block, &e));
    if (r != AMDSMI_STATUS_SUCCESS || !ec)
        return ec ? r : AMDSMI_STATUS_INVAL;
    fake_error_count_t c;
    memset(&c, 0, sizeof c);
    c.correctable_count = e.correctable_err;
    c.uncorrectable_count = e.uncorrectable_err;
    memcpy(ec, &c, sizeof c);
    return AMDSMI_STATUS_SUCCESS;
}
