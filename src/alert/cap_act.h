/* SPDX-License-Identifier: MIT */
/*
 * The power capper's own types and its actions, shared by its parts and by nothing else:
 * alert/cap.c (alerts, life cycle, by hand, /metrics), alert/cap_budget.c (the site budget
 * and the idle policy) and alert/cap_act.c (the record, NVML and ROCm SMI, and the actions on
 * one GPU: set, restore, reconcile). The public functions are in alert/alert.h.
 *
 * The GPUs are slots of wt_cap.g: NVML's GPUs first, at their NVML index (0..nnv), then the
 * AMD GPUs of ROCm SMI (nnv..ngpus), each with its library index (amd_ind: "amd:N") and its uuid
 * AMD-... as the AMD collector names it. The record is keyed by uuid, so both vendors share it.
 */
#ifndef WT_CAP_ACT_H
#define WT_CAP_ACT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alert/alert.h"
#include "collect/nvml_api.h"
#include "collect/rocm.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/err.h"
#include "core/log.h"

#define MOD "cap"
#define DEFAULT_LIBRARY "libnvidia-ml.so.1"
#define MAX_GPUS 64
#define MAX_ACTIVE 512
#define SETTLE_NS (3 * WT_NS_PER_S) /* between two budget adjustments */
#define LOG_EVERY_NS (60 * WT_NS_PER_S)
#define SAME_W 0.5   /* limits closer than this are the same limit */
#define OTHERS_W 1.0 /* a limit this far from what wattage set was set by someone else */
#define REC_FILE "power-caps"
#define REC_HEADER "# wattage power caps v1: UUID GPU OWN_W SET_W T_NS REASON\n"
#define NEVER_TAG "cap"
#define NEVER_VALUE "never"

struct cap_fns {
    wt_nvml_init_fn *init;
    wt_nvml_shutdown_fn *shutdown;
    wt_nvml_error_string_fn *error_string;
    wt_nvml_count_fn *count;
    wt_nvml_handle_fn *handle;
    wt_nvml_set_limit_fn *set_limit;
    wt_nvml_uint_fn *get_limit;
    wt_nvml_uint_fn *enforced;
    wt_nvml_constraints_fn *constraints;
    wt_nvml_uint_fn *default_limit;
    wt_nvml_string_fn *uuid;
};

enum act { A_CAP, A_BUDGET, A_RESTORE, A_ERROR, A_IDLE, A_COUNT };
static const char *const act_names[A_COUNT] = {"cap", "budget_cap", "restore", "error", "idle_cap"};

/* Why an action was taken (or held back): the reason label of wattage_power_cap_reasons_total,
 * a fixed set so that its cardinality is bounded. */
enum why {
    W_RULE,         /* a firing rule with action cap */
    W_BUDGET,       /* the site budget */
    W_RESOLVED,     /* what held it let go: restored */
    W_STOPPING,     /* the daemon stops: restored */
    W_CAP_NEVER,    /* a cap=never job holds the GPU: restored, or not capped */
    W_EARLIER_RUN,  /* a record an earlier run left: restored at start */
    W_KEPT,         /* a record an earlier run left, kept: a rule of this configuration holds it */
    W_BY_HAND,      /* `wattage cap clear` restored it: left alone */
    W_BY_OTHERS,    /* someone else changed the limit: left as they set it */
    W_MIN_INTERVAL, /* a change held back by alerts.cap_min_interval */
    W_FLOOR,        /* a target under the GPU's minimum or alerts.cap_floor_watts: raised */
    W_NO_RECORD,    /* the record could not be written: no change */
    W_IDLE,         /* alerts.idle_policy: the GPU has been idle for idle_for */
    W_IDLE_ENDED,   /* alerts.idle_policy: the GPU is busy again (a process, utilization) */
    W_JOB_START,    /* alerts.idle_policy: a job naming the GPU starts (POST /api/v1/jobs) */
    W_COUNT
};
static const char *const why_names[W_COUNT] = {
    "rule", "budget",          "resolved",          "stopping",     "cap_never", "earlier_run",
    "kept", "cleared_by_hand", "changed_by_others", "min_interval", "floor",     "no_record",
    "idle", "idle_ended",      "job_start"};

struct capgpu {
    bool have_dev;
    nvmlDevice_t dev;
    bool amd;             /* an AMD GPU: set through ROCm SMI */
    unsigned int amd_ind; /* its ROCm SMI index */
    char uuid[96];        /* "" until read */
    /* From NVML, else from the latest snapshot; 0 when unknown. */
    double min_w, max_w, limit_w, default_w;
    double power_w;
    bool seen; /* in the latest snapshot */
    /* What wattage did. */
    bool touched;           /* the limit is wattage's (or would be, in dry run) */
    double saved_w;         /* the GPU's own limit, put back when nothing holds it */
    double set_w;           /* the limit wattage set */
    double budget_w;        /* this GPU's share of the site budget; 0: none */
    int64_t last_change_ns; /* CLOCK_REALTIME of the last change; 0: none */
    bool deferred;          /* a change waits for alerts.cap_min_interval */
    bool hands_off;         /* cleared by hand: not capped until nothing holds it */
    bool never;             /* held by a running cap=never job */
    bool foreign_said;      /* the foreign cap was logged */
    bool left_capped;       /* nothing holds it but restoring failed (twice): still wattage's */
    /* A cap an earlier run set that a rule of this configuration may still hold. */
    double hold_w;
    int64_t hold_until_ns;
    char hold_reason[64];
    struct wt_ratelimit err_rl;
    /* alerts.idle_policy. From the latest snapshot: dark.h's idle gauge, the idle power level
     * (today's mean idle power) and the utilization. */
    bool snap_idle, has_util;
    double snap_level_w, util;
    int64_t idle_from_ns;  /* CLOCK_REALTIME of the first tick the capper saw it idle; 0: busy */
    double idle_w;         /* the limit the policy holds it at (or would, in dry run); 0: none */
    double idle_level_w;   /* its idle power level when the policy engaged */
    bool lift_now;         /* a lift in progress: no min_interval, restored with lift_why */
    int64_t idle_retry_ns; /* an idle cap not set: not tried again before this */
    enum why lift_why;
};

struct active {
    uint64_t fp;
    int gpu;
    double watts;
    char name[64];
};

struct rule_cap {
    char name[64];
    double watts, share;
    int64_t for_ns;
};

struct wt_cap {
    pthread_mutex_t mu;
    void *dl;
    struct cap_fns fn;
    bool inited;
    char library[WT_PATH_LEN];
    unsigned int ngpus;       /* the slots in use: NVML's GPUs, then AMD's */
    unsigned int nnv;         /* NVML's count; 0 without NVML */
    struct wt_rocm_caps *amd; /* ROCm SMI; NULL without it */
    bool dry_run;
    double budget_w, clear_share;
    double floor_w;
    int64_t min_interval_ns, interval_ns;
    int meter_metric; /* -1: the GPUs' sum */
    char meter_match[WT_LABELS_LEN];
    char meter[256];
    bool engaged;
    int64_t last_budget_ns;
    int64_t now_ns;                /* CLOCK_REALTIME of the latest tick or transition */
    char record[WT_PATH_LEN + 16]; /* "" = none (no configuration to place it) */
    char db[WT_PATH_LEN];          /* the store, for the cap=never jobs; "" = none */
    int crash_hook;                /* WATTAGE_TEST_CAP_EXIT: 1 before the record, 2 after */
    struct capgpu g[MAX_GPUS];
    struct active active[MAX_ACTIVE];
    size_t nactive;
    struct rule_cap rules[WT_ALERT_MAX_RULES];
    size_t nrules;
    uint64_t actions[A_COUNT];
    uint64_t whys[W_COUNT];
    struct wt_ratelimit rl, rec_rl, never_rl;
    /* alerts.idle_policy */
    enum wt_idle_mode idle_mode;
    int64_t idle_for_ns;
    double idle_limit_w; /* 0: the GPU's minimum */
};

static const char *const idle_mode_names[] = {"off", "dry_run", "limit"};

/* GPU i's line is gone from the record while wattage holds it: `wattage cap clear` put it back. */
void wt_cap_cleared_by_hand(struct wt_cap *c, int i);
void wt_cap_count_action(struct wt_cap *c, enum act a, enum why w);
const char *wt_cap_errstr(const struct wt_cap *c, nvmlReturn_t r);
int wt_cap_load_nvml(struct wt_cap *c, const struct wt_config *cfg, struct wt_err *err);
/* The GPU's own limit when wattage has not changed it: its limit, unless that differs from its
 * default limit (someone else capped it; a record would have said if it was wattage): then the
 * default. */
double wt_cap_own_limit(const struct capgpu *g);
int wt_cap_rec_find(const struct wt_cap_rec *r, size_t n, const char *uuid);
/* Takes the record's lock (a file beside it: the record itself is replaced by rename), shared
 * by every wattage process; returns the descriptor to close, or -1 without a record. */
int wt_cap_rec_lock(const char *path);
void wt_cap_rec_unlock(int fd);
/* Brings GPU i's limit to the lowest of what holds it down, or restores it. */
void wt_cap_reconcile(struct wt_cap *c, int i, const char *reason);
/* Reads the GPU's handle, UUID, constraints, default and current limit from NVML where it can. */
void wt_cap_refresh(struct wt_cap *c, int i);
void wt_cap_restore(struct wt_cap *c, int i, enum why why, const char *reason);
/* Sets GPU i's limit (or says it would), recorded first. Returns 0, -ECANCELED (cleared by hand
 * meanwhile) or -EIO (logged). */
int wt_cap_set_limit(struct wt_cap *c, int i, double w, enum act act, enum why why,
                     const char *reason);
/* Ends the NVML and ROCm SMI sessions. */
void wt_cap_unload(struct wt_cap *c);
/* Appends ROCm SMI's GPUs to the slots (quietly absent without the library or a GPU). With
 * collectors.amd.enabled false the library is not loaded, unless c->record has an AMD GPU's
 * line (a cap of an earlier run to put back). */
void wt_cap_load_amd(struct wt_cap *c, const struct wt_config *cfg);
/* Whether GPU i's limits can be set now: its library loaded, the GPU answering, a set call. */
bool wt_cap_dev_ok(const struct wt_cap *c, int i);
/* Whether GPU i's vendor library is loaded (its own values win over the snapshot's). */
bool wt_cap_has_lib(const struct wt_cap *c, int i);
/* Sets GPU i's limit through its vendor's library: 0, or that library's status (-1: no GPU or
 * no library). */
#define WT_CAP_NO_DEV (-1)
int wt_cap_dev_set(struct wt_cap *c, int i, double w);
const char *wt_cap_dev_errstr(const struct wt_cap *c, int i, int r);
/* The status says setting limits needs root. */
bool wt_cap_dev_denied(const struct wt_cap *c, int i, int r);
/* The set function's name, for messages. */
const char *wt_cap_dev_setter(const struct wt_cap *c, int i);
/* The slot of the GPU of these labels (uuid AMD-...: that AMD GPU; else gpu, NVML's index),
 * or -1 when this capper has no such GPU. */
int wt_cap_slot(const struct wt_cap *c, const char *labels, int gpu);
/* GPU i's index as its vendor numbers it (the record's and the metrics' gpu). */
int wt_cap_vendor_index(const struct wt_cap *c, int i);
/* GPU i as the commands and the log name it: NVIDIA's index, or amd:N. Returns buf. */
const char *wt_cap_gpu_name(const struct wt_cap *c, int i, char *buf, size_t n);
/* The same in a buffer of the enclosing full expression, for a log line. */
#define GN(c, i) wt_cap_gpu_name((c), (i), (char[24]){0}, 24)

#endif
