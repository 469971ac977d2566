/* SPDX-License-Identifier: MIT */
/*
 * AMD SMI (libamd_smi) as a backend of the AMD collector (collect/rocm.c): where no ROCm SMI
 * library loads and AMD SMI does, the collector runs on wrappers that have ROCm SMI's signatures
 * (collect/rocm_api.h) and call AMD SMI, so packages, counter checks, caps and labels are the
 * same code. A device index is the position of its processor handle in the order
 * amdsmi_get_socket_handles then amdsmi_get_processor_handles list them at the first session's
 * init. The library, its handles and its init are shared by the collector's and the capper's
 * sessions (counted: the last wt_amdsmi_unload closes it).
 *
 * What AMD SMI gives through them (collect/amdsmi_api.h says which structs and why):
 *   rsmi_init / rsmi_shut_down     amdsmi_init(AMD GPUs) and the handles / amdsmi_shut_down
 *   rsmi_num_monitor_devices       the handles listed
 *   rsmi_status_string             amdsmi_status_code_to_string of the call's own status
 *   rsmi_dev_name_get              amdsmi_get_gpu_asic_info's market_name
 *   rsmi_dev_unique_id_get         the unique id inside amdsmi_get_gpu_device_uuid's uuid
 *   rsmi_dev_pci_id_get            amdsmi_get_gpu_bdf_id
 *   rsmi_dev_energy_count_get      amdsmi_get_energy_count
 *   rsmi_dev_temp_metric_get       amdsmi_get_temp_metric, °C to millidegrees
 *   rsmi_dev_busy_percent_get      amdsmi_get_gpu_activity's gfx_activity
 *   rsmi_dev_power_cap_get, _range_get, _default_get   amdsmi_get_power_cap_info (µW)
 *   rsmi_dev_power_cap_set         amdsmi_set_power_cap (µW)
 *   rsmi_dev_ecc_enabled_get, rsmi_dev_ecc_count_get   amdsmi_get_gpu_ecc_enabled, _ecc_count
 * and no power reading (amdsmi_power_info_t changed between releases) nor process list: those
 * series are absent under AMD SMI.
 */
#ifndef WT_AMDSMI_H
#define WT_AMDSMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wt_err;

/* Tried in order when $WATTAGE_AMD_SMI_LIBRARY does not name one: ROCm 6.0 to 7.x install
 * libamd_smi.so beside its versioned names (.so.23 for 6.0, .so.24 for 6.1-6.3, then 25, 26). */
#define WT_AMDSMI_LIBRARIES                                                                        \
    "libamd_smi.so", "libamd_smi.so.26", "libamd_smi.so.25", "libamd_smi.so.24",                   \
        "libamd_smi.so.23", "/opt/rocm/lib/libamd_smi.so"

/*
 * Loads AMD SMI (path, else WT_AMDSMI_LIBRARIES in order) and resolves the calls; another
 * session's library is shared (path is then not looked at). Writes the file loaded into
 * library. Returns 0; -ENOENT when none loads; -ENOSYS when the library lacks amdsmi_init,
 * amdsmi_shut_down, amdsmi_get_socket_handles or amdsmi_get_processor_handles (err names it).
 */
int wt_amdsmi_load(const char *path, char *library, size_t len, struct wt_err *err);
/* The wrapper standing for ROCm SMI entry point rsmi_name, or NULL where AMD SMI has no call
 * behind it. Only between wt_amdsmi_load and wt_amdsmi_unload. */
void *wt_amdsmi_sym(const char *rsmi_name);
void wt_amdsmi_unload(void);
/* Whether a session holds AMD SMI now (the AMD collector runs on it). */
bool wt_amdsmi_loaded(void);

/*
 * The unique id inside an AMD SMI uuid: amdsmi_uuid_gen writes the 64-bit unique id (ROCm SMI's
 * rsmi_dev_unique_id_get) as "TTTTTTTT-MMMM-HHHH-CCSS-AAAABBBBBBBB" where TTTTTTTT's top byte is
 * its bits 63..56, SS bits 55..48, AAAA bits 47..32 and BBBBBBBB bits 31..0 (TTTTTTTT's other
 * bytes are the PCI device id and a function or partition index, left out so that the dies and
 * partitions of one package share it). 0 on success, -1 for a string not of that form.
 */
int wt_amdsmi_uuid_uid(const char *uuid, uint64_t *uid);

#endif
