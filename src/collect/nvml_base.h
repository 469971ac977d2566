/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's own types and helpers, shared by its parts and by nothing else:
 * collect/nvml.c (the entry points, discovery, sampling and readings), collect/nvml_xid.c (XID
 * events) and collect/nvml_procs.c (running processes and the split of energy over them).
 * collect/nvml_base.c holds the helpers and the shared sessions (declared in collect/nvml.h).
 */
#ifndef WT_NVML_BASE_H
#define WT_NVML_BASE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collect/attrib.h"
#include "collect/cadence.h"
#include "collect/nvml.h"
#include "collect/nvml_api.h"
#include "collect/nvml_fields.h"
#include "collect/nvml_mig.h"
#include "core/clock.h"
#include "core/energy.h"
#include "core/log.h"

#define MOD "nvml"
#define LOG_EVERY_NS (60 * WT_NS_PER_S)

/* The resolved entry points; a NULL optional one means "not in this library". */
struct nvml_fns {
    wt_nvml_init_fn *init;
    wt_nvml_shutdown_fn *shutdown;
    wt_nvml_error_string_fn *error_string;
    wt_nvml_driver_version_fn *driver_version;
    wt_nvml_count_fn *count;
    wt_nvml_handle_fn *handle;
    wt_nvml_string_fn *name;
    wt_nvml_string_fn *uuid;
    wt_nvml_pci_fn *pci;
    wt_nvml_uint_fn *power;
    wt_nvml_ull_fn *energy;
    wt_nvml_temperature_fn *temperature;
    wt_nvml_threshold_fn *threshold;
    wt_nvml_utilization_fn *utilization;
    wt_nvml_memory_fn *memory;
    wt_nvml_clock_fn *clock;
    wt_nvml_ull_fn *throttle;
    wt_nvml_uint_fn *power_limit;
    wt_nvml_constraints_fn *constraints;
    wt_nvml_pstate_fn *pstate;
    wt_nvml_enable_state_fn *persistence;
    wt_nvml_procs_fn *compute_procs;
    wt_nvml_procs_v1_fn *compute_procs_v1;
    wt_nvml_procs_fn *graphics_procs;
    wt_nvml_procs_v1_fn *graphics_procs_v1;
    wt_nvml_proc_util_fn *proc_util;
    /* health */
    wt_nvml_string_fn *vbios;
    wt_nvml_cuda_version_fn *cuda_version;
    wt_nvml_event_set_create_fn *event_set_create;
    wt_nvml_event_set_free_fn *event_set_free;
    wt_nvml_register_events_fn *register_events;
    wt_nvml_ull_fn *supported_events;
    wt_nvml_event_wait_fn *event_wait;
    wt_nvml_ecc_fn *ecc;
    wt_nvml_remapped_rows_fn *remapped_rows;
    wt_nvml_uint_fn *pcie_replay;
    wt_nvml_field_values_fn *field_values;
    wt_nvml_uint_fn *num_fans;
    wt_nvml_fan_fn *fan_v2;
    wt_nvml_uint_fn *fan;
};

_Static_assert(sizeof(void *) == sizeof(wt_nvml_init_fn *), "dlsym results must fit");

/* Per-GPU features; a bit set in struct gpu.unsupported means "do not ask again". */
enum feature {
    F_POWER,
    F_ENERGY,
    F_TEMP,
    F_SLOWDOWN,
    F_SHUTDOWN,
    F_UTIL,
    F_MEMORY,
    F_SM_CLOCK,
    F_MEM_CLOCK,
    F_THROTTLE,
    F_LIMIT,
    F_CONSTRAINTS,
    F_PSTATE,
    F_PERSISTENCE,
    F_PCI,
    F_PROCS,
    F_VBIOS,
    F_ECC_VOLATILE,
    F_ECC_AGGREGATE,
    F_REMAP,
    F_PCIE_REPLAY,
    F_MEM_TEMP,
    F_FAN,
    F_XID,
    F_COUNT
};
/* The health features: NOT_SUPPORTED is said once per collector at info (many boards lack one). */
#define HEALTH_FEATURES                                                                            \
    (1u << F_VBIOS | 1u << F_ECC_VOLATILE | 1u << F_ECC_AGGREGATE | 1u << F_REMAP |                \
     1u << F_PCIE_REPLAY | 1u << F_MEM_TEMP | 1u << F_FAN | 1u << F_XID)

/* Series labels derived from a GPU's: 9 throttle reasons, 4 ECC counters, 4 remap kinds. */
#define WT_NVML_KIN 17

struct gpu {
    unsigned int index;
    nvmlDevice_t dev;
    bool known; /* static info read since it last came up */
    bool up;
    bool persistence_warned;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char pci[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
    char vbios[NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE];
    char labels[WT_LABELS_LEN];      /* gpu,uuid,model */
    char info_labels[WT_LABELS_LEN]; /* + pci_bus_id, driver/VBIOS/CUDA versions */
    /* the labels of the per-reason, per-ECC-counter and per-remap-kind series, made from labels
     * once rather than each tick (issue 49); kin_from is the labels they were made from */
    char kin_from[WT_LABELS_LEN];
    char kin[WT_NVML_KIN][WT_LABELS_LEN];
    signed char kin_ok[WT_NVML_KIN]; /* 0 not made yet, 1 made, -1 too long */
    unsigned int nfans;
    uint32_t unsupported; /* 1 << enum feature */
    /* read at discovery (thresholds), and with the slow fields (the limit's range) */
    bool have_slowdown, have_shutdown, have_constraints;
    unsigned int slowdown_c, shutdown_c, limit_min_mw, limit_max_mw;
    /* energy */
    struct wt_energy_counter counter;
    uint64_t first_raw_mj;
    struct wt_energy_integral integral;
    /* this tick's counter, read ahead of the other calls (read_counters) */
    bool pre_read;
    nvmlReturn_t pre_r;
    unsigned long long pre_mj;
    int64_t read_end_ns; /* CLOCK_REALTIME when the last counter read returned */
    /* health */
    uint64_t failed_ticks;
    struct wt_ratelimit down_rl, err_rl;
    /* attribution (see poll_procs): the energy of this tick, and where the last split ended */
    bool have_energy_mj;
    uint64_t energy_mj;  /* counter (or integrated power) in mJ, monotone */
    bool attrib_started; /* attrib_mj and attrib_at hold the last split's end */
    uint64_t attrib_mj;
    int64_t attrib_at; /* CLOCK_REALTIME */
    double busy;       /* this tick's utilization, 0..1; -1 unknown */
    bool proc_util_unsupported;
    unsigned long long util_seen_us; /* newest per-process sample taken */
    /* slow fields (collect/cadence.h): read at this GPU's next tick (found again, an XID, a
     * failed slow read); their last values, published between reads */
    bool slow_pending;
    uint64_t xid_seen; /* XID events counted so far */
    bool have_limit, have_ecc_agg, have_remap;
    unsigned int limit_mw;
    unsigned long long ecc_agg[2];
    unsigned int remap[4];
    /* the start times of the last split's processes: a pid listed again is not read again */
    struct wt_attrib_starts starts;
};

/* XIDs of one GPU, counted by the event thread (under xid_ctx.mu). */
#define MAX_XIDS 32 /* distinct codes per GPU; more count under xid="other" (code 0) */
/* The event thread blocks in nvmlEventSetWait this long with nothing to do (a wake-up every
 * 10 s); a stop interrupts the wait with a signal (see xid_stop). */
#define XID_WAIT_MS 10000
#define XID_JOIN_NS (300 * WT_NS_PER_MS) /* how long close waits for the thread to end */
struct xid_count {
    unsigned int xid;
    uint64_t n, logged; /* events, and how many of them a log line has said */
    struct wt_ratelimit rl;
};
struct xid_gpu {
    nvmlDevice_t dev; /* as registered at open; never changes after */
    unsigned int index;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    bool registered;
    struct xid_count c[MAX_XIDS + 1];
    unsigned int n;
};

/*
 * What the event thread uses, shared by the collector and the thread and freed by whichever
 * lets go last: the thread holds its own reference to the library and its own NVML session, so
 * a thread still blocked in nvmlEventSetWait when the collector closes (a library that does not
 * return from the wait on a signal) finishes on its own, after which the set is freed and the
 * session released. Nothing of the collector's state is touched by the thread.
 */
struct xid_ctx {
    atomic_int refs;
    void *dl;
    bool session;
    wt_nvml_init_fn *init;
    wt_nvml_shutdown_fn *shutdown;
    wt_nvml_error_string_fn *error_string;
    wt_nvml_event_wait_fn *wait;
    wt_nvml_event_set_free_fn *set_free;
    nvmlEventSet_t set;
    atomic_bool stop;
    bool exited;        /* under mu; cv says when it is set */
    pthread_mutex_t mu; /* the counts, and exited */
    pthread_cond_t cv;
    unsigned int n;
    struct xid_gpu g[]; /* per GPU index */
};

struct nvml_state {
    void *dl;
    struct nvml_fns fn;
    bool inited;
    char library[256];
    char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    char cuda_version[16];     /* "12.4", "" when the library does not say */
    uint32_t said_unsupported; /* health features whose absence was logged */
    /* XID events: one set for every GPU, waited on by its own thread */
    struct xid_ctx *xid;
    pthread_t xid_thread;
    bool xid_running;
    int64_t max_gap_ns;
    int64_t attrib_gap_ns;    /* the longest span between two splits that is not a gap */
    int64_t procs_at;         /* CLOCK_MONOTONIC of the last process list */
    int64_t split_t_ns;       /* the tick of the last split (0: none yet) */
    struct wt_attrib *attrib; /* per-process energy (collect/attrib.h); NULL without memory */
    nvmlProcessUtilizationSample_t *util_buf;
    bool said_proc_util;
    unsigned int util_cap;
    unsigned int n;
    struct gpu *gpus;
    struct wt_nvml_fields *fields; /* interconnect counters, GPM, units (nvml_fields.h) */
    struct wt_nvml_mig *mig;       /* MIG instances and their energy (nvml_mig.h) */
    /* Energy sub-polls (wt_nvml_auto_energy_interval): collectors.nvml.energy_interval, the
     * interval in force (0: none, or not decided yet under auto), and while auto decides, the
     * CPU and wall time of the first ticks' energy reads. */
    int64_t interval_ns, energy_cfg_ns, sub_ns;
    bool sub_decided;
    unsigned int auto_ticks;
    int64_t auto_cpu_ns, auto_wall_ns;
    uint64_t auto_calls;
    /* The slow fields (collectors.nvml.slow_interval): when they are read next, and the
     * generation of wt_nvml_slow_refresh last seen. */
    struct wt_slow_timer slow;
    unsigned int refresh_seen;
};

#define AUTO_TICKS 5 /* ticks whose energy reads auto measures before it decides */

#define PROCS_EVERY_NS WT_NS_PER_S
#define PROCS_BUF 256

/* Outcome of one GPU's calls in one tick. */
struct tick {
    bool lost;         /* some call answered GPU_IS_LOST */
    unsigned int ok;   /* calls that succeeded */
    nvmlReturn_t hard; /* first failure other than NOT_SUPPORTED */
    const char *hard_what;
};

#define MAX_FANS 8

/* One GPU's values in one tick; have_* says which exist. */
struct sample {
    bool have_power, have_energy, have_temp, have_util, have_mem, have_sm, have_memclk;
    bool have_throttle, have_limit, have_pstate;
    bool have_ecc_vol, have_ecc_agg, have_remap, have_replay, have_mem_temp;
    unsigned long long ecc_vol[2], ecc_agg[2]; /* [nvmlMemoryErrorType_t] */
    unsigned int remap[4];                     /* corrected, uncorrected, pending, failure */
    unsigned int replay;
    double mem_temp_c;
    unsigned int nfans;
    double fan_pct[MAX_FANS];
    unsigned int power_mw, temp_c, sm_mhz, mem_mhz, limit_mw;
    unsigned long long energy_mj, throttle;
    nvmlUtilization_t util;
    nvmlMemory_t mem;
    nvmlPstates_t pstate;
};

/* NVML's message for r (the library's nvmlErrorString). */
const char *wt_nvml_errstr(const struct nvml_state *s, nvmlReturn_t r);
/* Counts r in tk; on failure says it (once per feature where NOT_SUPPORTED) and returns false. */
bool wt_nvml_check(struct nvml_state *s, struct gpu *g, struct tick *tk, enum feature f,
                   nvmlReturn_t r, const char *what);
/* Copies NVML's fixed-size string src (src_n bytes, maybe unterminated) into dst. */
void wt_nvml_copy_str(char *dst, size_t n, const char *src, size_t src_n);

#endif
