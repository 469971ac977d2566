/* SPDX-License-Identifier: MIT */
/*
 * The part of NVIDIA's Management Library API that wattage uses, declared from the public NVML
 * API reference (no Debian package ships nvml.h). Only what we call is here: return codes,
 * the opaque device handle, the few structs and enums passed by pointer, and one function type
 * per entry point. The library is loaded with dlopen (src/collect/nvml.c); the test fake
 * (tests/fakes/fake_nvml.c) declares its exports with the same function types, so a signature
 * mismatch is a compile error on both sides.
 *
 * Every function returns nvmlReturn_t; units are NVML's own (mW, mJ, MHz, percent, bytes, °C).
 */
#ifndef WT_NVML_API_H
#define WT_NVML_API_H

/* nvmlReturn_t: the error codes we tell apart (the rest are reported by number and string). */
typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

/* An opaque handle; valid from nvmlInit to nvmlShutdown. */
typedef struct nvmlDevice_st *nvmlDevice_t;

/* Buffer sizes the reference recommends (the _V2 sizes cover newer, longer strings). */
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

/*
 * PCI information. nvmlDeviceGetPciInfo_v2/_v3 fill busId ("00000000:19:00.0"); the original
 * nvmlDeviceGetPciInfo filled only the first 16 bytes (busIdLegacy, "0000:19:00.0").
 */
typedef struct nvmlPciInfo_st {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

/* Percent of the last sample period in which a kernel ran / device memory was read or written. */
typedef struct nvmlUtilization_st {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

/* Device memory in bytes (nvmlDeviceGetMemoryInfo, version 1 layout). */
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef enum nvmlEnableState_enum {
    NVML_FEATURE_DISABLED = 0,
    NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;

typedef enum nvmlTemperatureThresholds_enum {
    NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
    NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
    NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3
} nvmlTemperatureThresholds_t;

typedef enum nvmlClockType_enum {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3
} nvmlClockType_t;

/* Performance state: P0 (most performance) .. P15 (least); 32 when unknown. */
typedef enum nvmlPStates_enum {
    NVML_PSTATE_0 = 0,
    NVML_PSTATE_15 = 15,
    NVML_PSTATE_UNKNOWN = 32
} nvmlPstates_t;

/*
 * Clocks event reasons (called throttle reasons before driver 535): a 64-bit mask, one bit per
 * reason the clocks are below their maximum.
 */
#define nvmlClocksEventReasonGpuIdle 0x0000000000000001ULL
#define nvmlClocksEventReasonApplicationsClocksSetting 0x0000000000000002ULL
#define nvmlClocksEventReasonSwPowerCap 0x0000000000000004ULL
#define nvmlClocksThrottleReasonHwSlowdown 0x0000000000000008ULL
#define nvmlClocksEventReasonSyncBoost 0x0000000000000010ULL
#define nvmlClocksEventReasonSwThermalSlowdown 0x0000000000000020ULL
#define nvmlClocksThrottleReasonHwThermalSlowdown 0x0000000000000040ULL
#define nvmlClocksThrottleReasonHwPowerBrakeSlowdown 0x0000000000000080ULL
#define nvmlClocksEventReasonDisplayClockSetting 0x0000000000000100ULL

/*
 * A process with a context on a GPU. nvmlDeviceGet{Compute,Graphics}RunningProcesses (the
 * original entry points) fill the v1 layout; their _v2 and _v3 fill nvmlProcessInfo_t, which
 * adds the MIG instance ids (0xFFFFFFFF when not in a MIG instance). usedGpuMemory is bytes, or
 * NVML_VALUE_NOT_AVAILABLE (~0ULL) where the driver cannot say (e.g. under Windows WDDM).
 */
typedef struct nvmlProcessInfo_v1_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/*
 * One per-process utilization sample (nvmlDeviceGetProcessUtilization, Maxwell and newer): the
 * percent of the sample period in which the process ran kernels (smUtil) or used memory,
 * encoder, decoder. timeStamp is µs since 1970 (CPU clock).
 */
typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

/* ---- health: XID events, ECC, remapped rows, field values ---- */

#define NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE 32

/* An opaque handle to a set of events (nvmlEventSetCreate .. nvmlEventSetFree). */
typedef struct nvmlEventSet_st *nvmlEventSet_t;

/* Event type bits (nvmlDeviceRegisterEvents, nvmlDeviceGetSupportedEventTypes). */
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL

/*
 * One event from nvmlEventSetWait_v2. The original nvmlEventSetWait fills only the first three
 * members (it predates the MIG instance ids): zero the struct before each wait. For
 * nvmlEventTypeXidCriticalError, eventData is the XID.
 */
typedef struct nvmlEventData_st {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

/* Corrected: single-bit for ECC; uncorrected: double-bit. */
typedef enum nvmlMemoryErrorType_enum {
    NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
} nvmlMemoryErrorType_t;

/* Volatile counts reset when the driver loads; aggregate counts last the device's life. */
typedef enum nvmlEccCounterType_enum {
    NVML_VOLATILE_ECC = 0,
    NVML_AGGREGATE_ECC = 1
} nvmlEccCounterType_t;

/* Field values (nvmlDeviceGetFieldValues): the ids we ask for. */
#define NVML_FI_DEV_MEMORY_TEMP 82 /* memory (HBM) temperature, °C */

typedef enum nvmlValueType_enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
    NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
} nvmlValueType_t;

typedef union nvmlValue_st {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;

/* fieldId (and scopeId) in; the rest out. value is valid only when nvmlReturn is SUCCESS. */
typedef struct nvmlFieldValue_st {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;   /* µs since 1970 */
    long long latencyUsec; /* how long the value took to update */
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

/*
 * Function types (not pointer types), one per entry point, so that the fake can declare its
 * exports with them and the collector can hold pointers to them.
 */
typedef nvmlReturn_t wt_nvml_init_fn(void);                  /* nvmlInit_v2, nvmlInit */
typedef nvmlReturn_t wt_nvml_shutdown_fn(void);              /* nvmlShutdown */
typedef const char *wt_nvml_error_string_fn(nvmlReturn_t r); /* nvmlErrorString */
typedef nvmlReturn_t wt_nvml_driver_version_fn(char *version, unsigned int length);
typedef nvmlReturn_t wt_nvml_count_fn(unsigned int *count); /* nvmlDeviceGetCount_v2, … */
typedef nvmlReturn_t wt_nvml_handle_fn(unsigned int index, nvmlDevice_t *device);
typedef nvmlReturn_t wt_nvml_string_fn(nvmlDevice_t device, char *buf, unsigned int length);
typedef nvmlReturn_t wt_nvml_pci_fn(nvmlDevice_t device, nvmlPciInfo_t *pci);
typedef nvmlReturn_t wt_nvml_uint_fn(nvmlDevice_t device, unsigned int *value);
typedef nvmlReturn_t wt_nvml_ull_fn(nvmlDevice_t device, unsigned long long *value);
typedef nvmlReturn_t wt_nvml_temperature_fn(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                            unsigned int *temp);
typedef nvmlReturn_t wt_nvml_threshold_fn(nvmlDevice_t device,
                                          nvmlTemperatureThresholds_t threshold,
                                          unsigned int *temp);
typedef nvmlReturn_t wt_nvml_utilization_fn(nvmlDevice_t device, nvmlUtilization_t *util);
typedef nvmlReturn_t wt_nvml_memory_fn(nvmlDevice_t device, nvmlMemory_t *memory);
typedef nvmlReturn_t wt_nvml_clock_fn(nvmlDevice_t device, nvmlClockType_t type,
                                      unsigned int *clock_mhz);
typedef nvmlReturn_t wt_nvml_constraints_fn(nvmlDevice_t device, unsigned int *min_mw,
                                            unsigned int *max_mw);
typedef nvmlReturn_t wt_nvml_pstate_fn(nvmlDevice_t device, nvmlPstates_t *pstate);
typedef nvmlReturn_t wt_nvml_enable_state_fn(nvmlDevice_t device, nvmlEnableState_t *mode);
/* *count: the capacity of infos in, the processes out; INSUFFICIENT_SIZE (count set to what is
 * needed) when they do not fit. */
typedef nvmlReturn_t wt_nvml_procs_fn(nvmlDevice_t device, unsigned int *count,
                                      nvmlProcessInfo_t *infos);
typedef nvmlReturn_t wt_nvml_procs_v1_fn(nvmlDevice_t device, unsigned int *count,
                                         nvmlProcessInfo_v1_t *infos);
/* Samples newer than last_seen_us (0: all it keeps) into samples; *count: capacity in, samples
 * out. INSUFFICIENT_SIZE (count set to what is needed) when they do not fit; NOT_FOUND when there
 * is no sample newer than last_seen_us. */
typedef nvmlReturn_t wt_nvml_proc_util_fn(nvmlDevice_t device,
                                          nvmlProcessUtilizationSample_t *samples,
                                          unsigned int *count, unsigned long long last_seen_us);
/* Sets the power limit (mW); root only (NO_PERMISSION otherwise), INVALID_ARGUMENT outside
 * nvmlDeviceGetPowerManagementLimitConstraints. Lasts until changed or the driver reloads. */
typedef nvmlReturn_t wt_nvml_set_limit_fn(nvmlDevice_t device, unsigned int limit_mw);

typedef nvmlReturn_t wt_nvml_cuda_version_fn(int *version); /* 12040 is CUDA 12.4 */
typedef nvmlReturn_t wt_nvml_event_set_create_fn(nvmlEventSet_t *set);
typedef nvmlReturn_t wt_nvml_event_set_free_fn(nvmlEventSet_t set);
typedef nvmlReturn_t wt_nvml_register_events_fn(nvmlDevice_t device, unsigned long long types,
                                                nvmlEventSet_t set);
/* Waits up to timeout_ms for one event; NVML_ERROR_TIMEOUT when none came. */
typedef nvmlReturn_t wt_nvml_event_wait_fn(nvmlEventSet_t set, nvmlEventData_t *data,
                                           unsigned int timeout_ms);
typedef nvmlReturn_t wt_nvml_ecc_fn(nvmlDevice_t device, nvmlMemoryErrorType_t type,
                                    nvmlEccCounterType_t counter, unsigned long long *count);
/* Rows remapped for correctable / uncorrectable errors, and the pending and failure flags
 * (0/1). Ampere and newer. */
typedef nvmlReturn_t wt_nvml_remapped_rows_fn(nvmlDevice_t device, unsigned int *corrected,
                                              unsigned int *uncorrected, unsigned int *pending,
                                              unsigned int *failure);
typedef nvmlReturn_t wt_nvml_field_values_fn(nvmlDevice_t device, int count,
                                             nvmlFieldValue_t *values);
/* Fan speed in percent of the fan's maximum (may read over 100). */
typedef nvmlReturn_t wt_nvml_fan_fn(nvmlDevice_t device, unsigned int fan, unsigned int *pct);

/*
 * Which entry point has which type (for the fake's declarations):
 *   wt_nvml_string_fn       nvmlDeviceGetName, nvmlDeviceGetUUID
 *   wt_nvml_pci_fn          nvmlDeviceGetPciInfo_v3, nvmlDeviceGetPciInfo_v2, nvmlDeviceGetPciInfo
 *   wt_nvml_uint_fn         nvmlDeviceGetPowerUsage (mW), nvmlDeviceGetEnforcedPowerLimit (mW),
 *                           nvmlDeviceGetPowerManagementLimit (mW, the limit set),
 *                           nvmlDeviceGetPowerManagementDefaultLimit (mW)
 *   wt_nvml_set_limit_fn    nvmlDeviceSetPowerManagementLimit (mW; src/alert/cap.c only)
 *   wt_nvml_ull_fn          nvmlDeviceGetTotalEnergyConsumption (mJ since driver load),
 *                           nvmlDeviceGetCurrentClocksEventReasons,
 *                           nvmlDeviceGetCurrentClocksThrottleReasons (bitmask)
 *   wt_nvml_temperature_fn  nvmlDeviceGetTemperature (°C)
 *   wt_nvml_threshold_fn    nvmlDeviceGetTemperatureThreshold (°C)
 *   wt_nvml_utilization_fn  nvmlDeviceGetUtilizationRates (percent)
 *   wt_nvml_memory_fn       nvmlDeviceGetMemoryInfo (bytes)
 *   wt_nvml_clock_fn        nvmlDeviceGetClockInfo (MHz)
 *   wt_nvml_constraints_fn  nvmlDeviceGetPowerManagementLimitConstraints (mW)
 *   wt_nvml_pstate_fn       nvmlDeviceGetPerformanceState
 *   wt_nvml_enable_state_fn nvmlDeviceGetPersistenceMode
 *   wt_nvml_driver_version_fn nvmlSystemGetDriverVersion
 *   wt_nvml_procs_fn        nvmlDeviceGetComputeRunningProcesses_v3 and _v2,
 *                           nvmlDeviceGetGraphicsRunningProcesses_v3 and _v2
 *   wt_nvml_procs_v1_fn     nvmlDeviceGetComputeRunningProcesses,
 *                           nvmlDeviceGetGraphicsRunningProcesses
 *   wt_nvml_proc_util_fn    nvmlDeviceGetProcessUtilization
 *   wt_nvml_string_fn       nvmlDeviceGetVbiosVersion
 *   wt_nvml_cuda_version_fn nvmlSystemGetCudaDriverVersion_v2, nvmlSystemGetCudaDriverVersion
 *   wt_nvml_event_set_create_fn nvmlEventSetCreate; wt_nvml_event_set_free_fn nvmlEventSetFree
 *   wt_nvml_register_events_fn  nvmlDeviceRegisterEvents
 *   wt_nvml_ull_fn          nvmlDeviceGetSupportedEventTypes (bitmask)
 *   wt_nvml_event_wait_fn   nvmlEventSetWait_v2, nvmlEventSetWait
 *   wt_nvml_ecc_fn          nvmlDeviceGetTotalEccErrors
 *   wt_nvml_remapped_rows_fn nvmlDeviceGetRemappedRows
 *   wt_nvml_uint_fn         nvmlDeviceGetPcieReplayCounter, nvmlDeviceGetNumFans,
 *                           nvmlDeviceGetFanSpeed (percent, fan 0)
 *   wt_nvml_fan_fn          nvmlDeviceGetFanSpeed_v2
 *   wt_nvml_field_values_fn nvmlDeviceGetFieldValues
 */

/* ---- interconnect counters, GPM, S-class units (collect/nvml_fields.c) ---- */

/*
 * Field ids of nvmlDeviceGetFieldValues (nvml.h). The NVLink throughput counters count KiB since
 * the driver loaded; scopeId is the link, or UINT_MAX for the sum over all links. The PCIe
 * counters count bytes ("Value can be wrapped": the width is the value type's).
 */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138 /* KiB of payload sent */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139 /* KiB of payload received */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX 140  /* KiB, payload + protocol overhead */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX 141
#define NVML_FI_DEV_PCIE_COUNT_TX_BYTES 197
#define NVML_FI_DEV_PCIE_COUNT_RX_BYTES 198
#define NVML_FI_SCOPE_ALL_LINKS 0xFFFFFFFFu

/* nvmlDeviceGetPowerSource; nvmlPowerSource_t is an unsigned int. */
#define NVML_POWER_SOURCE_AC 0u
#define NVML_POWER_SOURCE_BATTERY 1u
#define NVML_POWER_SOURCE_UNDERSIZED 2u

/*
 * GPM (GPU performance monitoring, Hopper and newer): two samples taken apart are turned into
 * metrics over the time between them. The metric ids we ask for; each value is a percent,
 * 0.0 - 100.0.
 */
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

#define NVML_GPM_METRIC_SM_UTIL 2         /* share of SMs busy */
#define NVML_GPM_METRIC_SM_OCCUPANCY 3    /* warps resident against the maximum */
#define NVML_GPM_METRIC_ANY_TENSOR_UTIL 5 /* any tensor pipe active */
#define NVML_GPM_METRIC_DRAM_BW_UTIL 10   /* DRAM bandwidth used against the maximum */
/* The metrics[] length of the version-1 struct; NVML reads and writes numMetrics of them. */
#define NVML_GPM_METRIC_MAX 98
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1

typedef struct {
    unsigned int metricId;   /* in */
    nvmlReturn_t nvmlReturn; /* out: value is valid only when SUCCESS */
    double value;            /* out */
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo; /* out; may be NULL */
} nvmlGpmMetric_t;

typedef struct {
    unsigned int version;    /* in: NVML_GPM_METRICS_GET_VERSION */
    unsigned int numMetrics; /* in */
    nvmlGpmSample_t sample1; /* in: the older sample */
    nvmlGpmSample_t sample2; /* in: the newer one */
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct {
    unsigned int version;           /* in: NVML_GPM_SUPPORT_VERSION */
    unsigned int isSupportedDevice; /* out: 0 on GPUs before Hopper */
} nvmlGpmSupport_t;

/* An S-class unit (a rack enclosure of GPUs with its own power supply and fans). */
typedef struct nvmlUnit_st *nvmlUnit_t;

/* "Normal", or "Abnormal" followed by the causes (high voltage, fan failure, ...). */
typedef struct nvmlPSUInfo_st {
    char state[256];
    unsigned int current; /* A */
    unsigned int voltage; /* V */
    unsigned int power;   /* W */
} nvmlPSUInfo_t;

typedef enum nvmlFanState_enum { NVML_FAN_NORMAL = 0, NVML_FAN_FAILED = 1 } nvmlFanState_t;

typedef struct nvmlUnitFanInfo_st {
    unsigned int speed; /* RPM */
    nvmlFanState_t state;
} nvmlUnitFanInfo_t;

typedef struct nvmlUnitFanSpeeds_st {
    nvmlUnitFanInfo_t fans[24];
    unsigned int count;
} nvmlUnitFanSpeeds_t;

typedef nvmlReturn_t wt_nvml_gpm_support_fn(nvmlDevice_t device, nvmlGpmSupport_t *support);
typedef nvmlReturn_t wt_nvml_gpm_alloc_fn(nvmlGpmSample_t *sample);
typedef nvmlReturn_t wt_nvml_gpm_free_fn(nvmlGpmSample_t sample);
typedef nvmlReturn_t wt_nvml_gpm_sample_fn(nvmlDevice_t device, nvmlGpmSample_t sample);
typedef nvmlReturn_t wt_nvml_gpm_metrics_fn(nvmlGpmMetricsGet_t *metrics);
typedef nvmlReturn_t wt_nvml_unit_handle_fn(unsigned int index, nvmlUnit_t *unit);
typedef nvmlReturn_t wt_nvml_unit_psu_fn(nvmlUnit_t unit, nvmlPSUInfo_t *psu);
typedef nvmlReturn_t wt_nvml_unit_fans_fn(nvmlUnit_t unit, nvmlUnitFanSpeeds_t *fans);

/*
 * Which entry point has which type (for the fake's declarations):
 *   wt_nvml_field_values_fn nvmlDeviceGetFieldValues (the counters above)
 *   wt_nvml_uint_fn         nvmlDeviceGetPowerSource (nvmlPowerSource_t)
 *   wt_nvml_gpm_support_fn  nvmlGpmQueryDeviceSupport
 *   wt_nvml_gpm_alloc_fn    nvmlGpmSampleAlloc; wt_nvml_gpm_free_fn nvmlGpmSampleFree
 *   wt_nvml_gpm_sample_fn   nvmlGpmSampleGet
 *   wt_nvml_gpm_metrics_fn  nvmlGpmMetricsGet
 *   wt_nvml_count_fn        nvmlUnitGetCount
 *   wt_nvml_unit_handle_fn  nvmlUnitGetHandleByIndex
 *   wt_nvml_unit_psu_fn     nvmlUnitGetPsuInfo; wt_nvml_unit_fans_fn nvmlUnitGetFanSpeedInfo
 */

/* ---- MIG instances (collect/nvml_mig.c) ---- */

/*
 * nvmlDeviceGetMigMode: the current and pending mode of a parent GPU (Ampere and newer; other
 * GPUs answer NOT_SUPPORTED). A MIG device handle (nvmlDeviceGetMigDeviceHandleByIndex) stands
 * for one compute instance: it answers nvmlDeviceGetMemoryInfo, nvmlDeviceGetUUID ("MIG-...")
 * and nvmlDeviceGetComputeRunningProcesses_v3 for that instance only, and has no power, energy
 * or utilization of its own (nvmlDeviceGetUtilizationRates answers NOT_SUPPORTED). A handle
 * stays valid until its compute instance is destroyed; then it answers NOT_FOUND or
 * INVALID_ARGUMENT and must be asked for again. Index i of a parent may hold no instance
 * (NOT_FOUND): enumerate 0 .. nvmlDeviceGetMaxMigDeviceCount - 1.
 */
#define NVML_DEVICE_MIG_DISABLE 0u
#define NVML_DEVICE_MIG_ENABLE 1u

typedef nvmlReturn_t wt_nvml_mig_mode_fn(nvmlDevice_t device, unsigned int *current,
                                         unsigned int *pending);
typedef nvmlReturn_t wt_nvml_mig_handle_fn(nvmlDevice_t device, unsigned int index,
                                           nvmlDevice_t *mig_device);
/* A GPM sample of one GPU instance of a parent in MIG mode (Hopper and newer); the metrics over
 * two of them (nvmlGpmMetricsGet) are that instance's. */
typedef nvmlReturn_t wt_nvml_gpm_mig_sample_fn(nvmlDevice_t device, unsigned int gpu_instance_id,
                                               nvmlGpmSample_t sample);

/*
 * Which entry point has which type (for the fake's declarations):
 *   wt_nvml_mig_mode_fn     nvmlDeviceGetMigMode
 *   wt_nvml_uint_fn         nvmlDeviceGetMaxMigDeviceCount (parent), nvmlDeviceGetGpuInstanceId,
 *                           nvmlDeviceGetComputeInstanceId (MIG handle)
 *   wt_nvml_mig_handle_fn   nvmlDeviceGetMigDeviceHandleByIndex
 *   wt_nvml_gpm_mig_sample_fn nvmlGpmMigSampleGet
 *   wt_nvml_memory_fn, wt_nvml_string_fn, wt_nvml_procs_fn on a MIG handle: as above
 */

#endif
