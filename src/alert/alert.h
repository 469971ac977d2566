/* SPDX-License-Identifier: MIT */
/*
 * The alert engine's shared types: an alert instance and its transitions, the `alerts` config
 * section as parsed, and the two consumers of transitions besides the log: delivery
 * (notify.c: Alertmanager v2, webhook, exec hook) and power capping (cap.c).
 *
 *   hub snapshot --(every tick)--> engine.c (rules.c + detect.c) --transitions--> log
 *                                                                        |--> wt_notify_post
 *                                                                        '--> wt_cap_apply
 */
#ifndef WT_ALERT_H
#define WT_ALERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "audit/jobs.h"
#include "core/err.h"
#include "core/reading.h"

enum wt_alert_state {
    WT_ALERT_INACTIVE,
    WT_ALERT_PENDING, /* condition true, `for` not yet reached */
    WT_ALERT_FIRING,
    WT_ALERT_RESOLVED /* was firing, condition cleared (hysteresis included) */
};

enum wt_severity { WT_SEV_INFO, WT_SEV_WARNING, WT_SEV_CRITICAL };

/* What a firing rule does besides notifying. */
enum wt_action { WT_ACTION_NONE, WT_ACTION_CAP };
/* alerts.idle_policy.mode */
enum wt_idle_mode { WT_IDLE_OFF, WT_IDLE_DRY_RUN, WT_IDLE_LIMIT };

/* One alert instance: a rule (or detector) applied to one series/device. */
struct wt_alert {
    char name[64];              /* alertname, e.g. "GPUThrottleForecast" or the rule's name */
    char labels[WT_LABELS_LEN]; /* canonical: the device's labels (gpu, uuid, ...) + the rule's */
    enum wt_severity severity;
    enum wt_alert_state state;
    char summary[256];       /* the rendered summary template */
    double value;            /* the value that made it fire (last evaluated) */
    int64_t active_since_ns; /* CLOCK_REALTIME: when the condition first held */
    int64_t fired_at_ns;     /* when it started firing, 0 if never */
    int64_t resolved_at_ns;  /* when it resolved, 0 while firing */
    uint64_t fingerprint;    /* stable hash of name + labels: one instance, one id */
    /* Power capping (action: cap): the GPU it applies to and the target limit in watts. */
    enum wt_action action;
    int gpu;          /* NVML index, -1 when not a GPU alert */
    double cap_watts; /* resolved target: absolute, or share x the GPU's max limit */
};

const char *wt_alert_state_name(enum wt_alert_state s); /* "inactive", "pending", ... */
const char *wt_severity_name(enum wt_severity s);       /* "info", "warning", "critical" */

/* ---- configuration (section `alerts`, parsed by rules.c) ------------------------------------- */

enum wt_cmp { WT_CMP_GT, WT_CMP_GE, WT_CMP_LT, WT_CMP_LE, WT_CMP_EQ, WT_CMP_NE };

#define WT_ALERT_MAX_RULES 128

struct wt_alert_rule {
    char name[64];
    int metric;                /* enum wt_metric_id */
    char match[WT_LABELS_LEN]; /* label matcher: every pair must equal ("" matches all) */
    enum wt_cmp cmp;
    double threshold; /* absolute, or a factor of `relative_to` when that is set */
    int relative_to;  /* metric id of the same device's series, or -1 */
    bool has_clear;
    double clear; /* clear_below/clear_above: hysteresis bound, same scale */
    int64_t for_ns;
    enum wt_severity severity;
    char summary[256];          /* template: {{value}}, {{threshold}}, {{labels.gpu}}... */
    char labels[WT_LABELS_LEN]; /* extra labels the rule adds */
    enum wt_action action;
    double cap_watts; /* action cap: absolute target in W, or 0 */
    double cap_share; /* action cap: share of the GPU's max limit (0..1), or 0 */
    int line;         /* where it is written, for messages */
};

/* The throttle forecast's regression windows, at most. */
#define WT_FORECAST_MAX_WINDOWS 4

struct wt_alerts_config {
    bool enabled; /* alerts.enabled, default true */
    struct wt_alert_rule rules[WT_ALERT_MAX_RULES];
    size_t nrules;
    /* Built-in detectors: each on by default; see detect.c for the meaning of each knob. */
    struct {
        bool enabled;
        /* Regression windows, strictly increasing (default 10 s, 30 s, 2 min); window_ns is the
         * longest. The shortest window that is statistically confident decides. */
        int64_t windows_ns[WT_FORECAST_MAX_WINDOWS];
        int nwindows;
        int64_t window_ns;
        double confidence; /* one-sided, of the slope's bounds, default 0.95 */
        int64_t lead_ns;   /* fire when time-to-slowdown < lead, default 60 s */
    } throttle_forecast;
    struct {
        bool enabled;
        int64_t for_ns; /* default 5 s */
    } throttling;
    struct {
        bool enabled;
        double util_below;  /* default 0.05 */
        double power_share; /* of the power limit, default 0.40 */
        int64_t for_ns;     /* default 300 s */
    } idle_burn;
    struct {
        bool enabled;
        double power_margin;           /* share over the max power limit, default 0.10 */
        double temp_min_c, temp_max_c; /* physical range, default -20 and 150 */
    } impossible;
    struct {
        bool enabled;
        int ticks; /* same power value for N ticks while util changes, default 30 */
    } stuck;
    struct {
        bool enabled;
        double delta_c;    /* hotter than the model's median by, default 10 C */
        double power_band; /* at power within this share of the median, default 0.15 */
        int64_t for_ns;    /* default 60 s */
    } sibling;
    struct {
        bool enabled;
        int intervals; /* silent for more than N intervals, default 3 */
    } data_gap;
    struct {
        bool enabled;
        int64_t for_ns; /* a channel failing this long fires, default 300 s */
    } delivery_failing;
    /* GPU health (detect.c), each on by default. */
    struct {
        bool enabled;
        int64_t hold_ns; /* an XID's alert lasts this long after its last event, default 10 min */
    } xid;
    struct {
        bool enabled;
    } ecc_uncorrectable;
    struct {
        bool enabled;
    } row_remap;
    struct {
        bool enabled;
        double threshold;  /* replays within the window that fire, default 10 */
        int64_t window_ns; /* default 5 min */
    } pcie_replays;
    /* Facility air (detect.c, audit/ashrae.h), each on by default. */
    struct {
        bool enabled;
        int64_t for_ns; /* an inlet outside its envelope this long fires, default 5 min */
    } inlet_envelope;
    struct {
        bool enabled;
        double max_k;   /* a rack's exhaust - inlet above this fires, default 20 K */
        int64_t for_ns; /* default 5 min */
    } rack_delta_t;
    struct {
        bool enabled;
        double delta_k; /* a rack's inlet this much over its zone's median rack, default 3 K */
        int64_t for_ns; /* default 5 min */
    } aisle_imbalance;
    /* Delivery (notify.c). Empty strings: channel off. */
    struct {
        char url[256];      /* alerts.alertmanager.url, e.g. http://127.0.0.1:9093 */
        int64_t resend_ns;  /* re-send while firing, default 60 s */
        int64_t timeout_ns; /* per request, default 5 s */
        /* alerts.alertmanager.generator_url: the link each alert carries (e.g. this daemon's
         * http://node7:9747/api/v1/alerts); "" leaves generatorURL out. */
        char generator_url[256];
    } alertmanager;
    struct {
        char url[256]; /* alerts.webhook.url: JSON POST of each transition */
        int64_t timeout_ns;
    } webhook;
    struct {
        char command[256]; /* alerts.exec.command: run with the alert in env and stdin */
        int64_t timeout_ns;
    } exec;
    struct {
        /* alerts.delivery.queue_limit: transitions waiting per webhook/exec channel; when it is
         * full the oldest is dropped and counted. 0: WT_NOTIFY_QUEUE. */
        int queue_limit;
    } delivery;
    /* Power capping (cap.c); off unless a rule has action: cap, a budget is set or
     * idle_policy.mode is not off. */
    double power_budget_watts; /* alerts.power_budget_watts: site-wide, 0 = off */
    /* alerts.power_budget_meter: a series whose value is the power held to the budget instead
     * of the GPUs' sum, e.g. wattage_facility_power_watts{target="pdu-r12",point="inlet1"}
     * (matching series are summed; check with wt_cap_meter_parse); "" = the GPUs' sum. */
    char power_budget_meter[256];
    double budget_clear_share; /* hysteresis: uncap below budget x this, default 0.95 */
    bool dry_run;              /* alerts.dry_run (or `run --dry-run`): log, do not act */
    /* Guardrails. alerts.cap_floor_watts: no cap under this (nor under the GPU's minimum),
     * default 0 = the GPU's minimum. alerts.cap_min_interval: at most one change per GPU per
     * interval (a flapping budget or alert does not make limits oscillate), default 10 s; 0 in a
     * zeroed struct = none. Restores for safety (stopping, a cap=never job, a hand clear) are
     * never held back. */
    double cap_floor_watts;
    int64_t cap_min_interval_ns;
    /* alerts.cap_record: the record of every limit change (written before the change, cleared
     * when the limit is restored; see wt_cap_record_path). "" = power-caps beside the store. */
    char cap_record[256];
    /* alerts.idle_policy (cap.c): lowers the power limit of a GPU idle (audit/dark.h: no
     * process, utilization 0) for idle_for, to limit_watts (0: the GPU's minimum; never under
     * it nor cap_floor_watts); lifted within one tick of the GPU being busy again and before
     * POST /api/v1/jobs answers for a job naming it (wt_cap_jobs_started). mode off (default),
     * dry_run (logs and exports what it would do, sets nothing) or limit. idle_for: 10 min
     * unless set. */
    struct {
        enum wt_idle_mode mode;
        int64_t idle_for_ns;
        double limit_watts;
    } idle_policy;
};

void wt_alerts_config_defaults(struct wt_alerts_config *c);
/*
 * Parses the `alerts` section (node may be NULL: defaults). file is for messages. Returns 0 or
 * -EINVAL with err naming file:line and the key (unknown metric, bad duration...).
 */
struct wt_ynode;
int wt_alerts_config_parse(const char *file, const struct wt_ynode *node,
                           struct wt_alerts_config *out, struct wt_err *err) WT_MUST_USE;
/* The check registered in src/cli/sections.c. */
int wt_alerts_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err);

/* ---- delivery (notify.c) --------------------------------------------------------------------- */

struct wt_notify;
/*
 * Starts the delivery threads when any channel is configured; *out NULL when none is. A new
 * delivery knows no alert: after reopening it (reload), post every instance still firing again,
 * or Alertmanager resolves them once their endsAt (4 x resend interval) passes.
 */
int wt_notify_open(const struct wt_alerts_config *cfg, struct wt_notify **out,
                   struct wt_err *err) WT_MUST_USE;
/* Queues one transition (firing or resolved) for every channel; never blocks the caller. */
void wt_notify_post(struct wt_notify *n, const struct wt_alert *a);
/* Flushes what it can within a short bound, then stops. Accepts NULL. */
void wt_notify_close(struct wt_notify *n);

/* ---- power capping (cap.c) ------------------------------------------------------------------- */

struct wt_cap;
struct wt_config;
/*
 * Loads NVML (the same library as the collector) for setting limits, and puts right what an
 * earlier run left in the record (see below): each GPU it lists gets its own limit back, or
 * keeps its cap (with the recorded own limit as its base) while the rule or budget of this
 * configuration that set it may hold it, logged at warning level. *out NULL when no rule caps
 * and no budget is set (the earlier run's caps are still put right).
 * With cfg NULL (tests) there is no record unless acfg->cap_record names one.
 * Test hook: WATTAGE_TEST_CAP_EXIT=before_record|after_record makes the process _exit(86) right
 * before or after it writes a change's record line (as kill -9 would, mid-change).
 */
int wt_cap_open(const struct wt_config *cfg, const struct wt_alerts_config *acfg,
                struct wt_cap **out, struct wt_err *err) WT_MUST_USE;
/* With alerts off (acfg->enabled false): only puts right what an earlier run left, every GPU
 * back to its own limit. */
void wt_cap_recover(const struct wt_config *cfg, const struct wt_alerts_config *acfg);
/* A transition of an alert with action cap: firing lowers the GPU's limit, resolved restores. */
void wt_cap_apply(struct wt_cap *c, const struct wt_alert *a);
/* The site budget, every tick, from the latest snapshot (GPU power and limits). */
void wt_cap_budget(struct wt_cap *c, const struct wt_batch *snapshot, int64_t now_ns);
/* Restores every limit it changed, then unloads. Accepts NULL. */
void wt_cap_close(struct wt_cap *c);
/*
 * A job naming gpus[0..n) (as wt_jobs_start_fn gives them; n 0: every GPU) starts: the idle
 * policy's caps on those GPUs are lifted now, before this returns (each GPU's limit back to
 * what else holds it, or its own; never held back by cap_min_interval), and their idle time
 * counts from now. Nothing without alerts.idle_policy. Accepts NULL.
 */
void wt_cap_jobs_started(struct wt_cap *c, const char (*gpus)[WT_JOBS_GPU_LEN], size_t n);

/*
 * The record of power limit changes: one line per GPU whose limit wattage changed, written
 * before the change (to a temporary file, fsync'd, renamed over the old one, the directory
 * fsync'd: it survives kill -9 and power loss) and taken out once the limit is restored. Every
 * process changes it under one lock (PATH.lock, flock), so the daemon and `wattage cap clear`
 * never undo each other's line.
 */
struct wt_cap_rec {
    char uuid[96];   /* the GPU's UUID: indices change when GPUs come and go */
    int gpu;         /* its index when written, for people */
    double own_w;    /* its own limit, to put back */
    double set_w;    /* the limit wattage set */
    int64_t t_ns;    /* CLOCK_REALTIME of the change */
    char reason[64]; /* the rule's name, or power_budget */
};
/* The record's path: acfg->cap_record, else power-caps in the store's directory. Fills out
 * ("" when neither is known) and returns 0 or -ENOENT. */
int wt_cap_record_path(const struct wt_config *cfg, const struct wt_alerts_config *acfg, char *out,
                       size_t n);
/* Reads at most cap lines into r (no file: *n = 0). Returns 0, or -EINVAL / -errno with err
 * naming path:line. */
int wt_cap_record_read(const char *path, struct wt_cap_rec *r, size_t cap, size_t *n,
                       struct wt_err *err) WT_MUST_USE;
/* Replaces the record with r[0..n) durably (n 0 removes the file). 0 or -errno (err says). */
int wt_cap_record_write(const char *path, const struct wt_cap_rec *r, size_t n,
                        struct wt_err *err) WT_MUST_USE;
/*
 * `wattage cap clear [--gpu N]`: under the record's lock, puts every GPU of the record (or only
 * GPU N) back to its own limit and takes its line out; with --gpu N and no line, a GPU whose
 * limit is not its default (someone else capped it) gets its default back. Lines for GPUs this
 * node no longer has are dropped. A running daemon sees its lines gone at its next tick and
 * leaves those GPUs alone until what held them lets go. Says what it did on out. Returns 0,
 * -EINVAL (no such GPU) or -EIO (NVML, the record), with err filled.
 */
int wt_cap_clear(const struct wt_config *cfg, const struct wt_alerts_config *acfg, int gpu,
                 FILE *out, struct wt_err *err) WT_MUST_USE;
/*
 * `wattage calibrate`: under the record's lock, sets every GPU's limit to share of its max
 * limit (never under its minimum nor alerts.cap_floor_watts), each GPU's line written first
 * (reason, its own limit: the record's, else its default). Put them back with wt_cap_clear.
 * The limits set go to set_w[0..cap), *n of them. Returns 0, or -EIO with err (NVML, a GPU not
 * answering, the record).
 */
int wt_cap_set_share(const struct wt_config *cfg, const struct wt_alerts_config *acfg, double share,
                     const char *reason, double *set_w, size_t cap, size_t *n,
                     struct wt_err *err) WT_MUST_USE;
/* For `wattage status`: one line per GPU capped by wattage (from the record) or by someone else
 * (its limit is not its default, and no line explains it); nothing when none is, or without
 * NVML. Returns 0. */
int wt_cap_report(const struct wt_config *cfg, const struct wt_alerts_config *acfg, FILE *out);

/*
 * `wattage run --dry-run` (run.c calls it before the engine opens): every wt_cap_open that
 * follows acts as if alerts.dry_run were set.
 */
void wt_cap_force_dry_run(bool on);

/*
 * Parses a power_budget_meter selector: a metric name from the table, optionally followed by
 * {label="value",...}. Fills *metric and match (canonical labels, every pair must equal).
 * Returns 0, or -EINVAL with why filled ("unknown metric ...", "expected label=\"value\"").
 */
int wt_cap_meter_parse(const char *sel, int *metric, char *match, size_t n, char *why,
                       size_t whyn) WT_MUST_USE;

/*
 * The capper's /metrics families, each in the shape of wt_http_family_fn (serve/http.h): whoever
 * holds the wt_cap and the server registers them with wt_http_add_family(h, wt_cap_family_*, cap)
 * before wt_http_start. cap may be NULL (no family).
 *   wattage_gpu_power_cap_watts{gpu}              gauge: the limit wattage holds a GPU at (in
 *                                                 dry run, the one it would); absent when uncapped
 *   wattage_power_cap_actions_total{action,dry_run} counter: action = cap (rule), budget_cap,
 *                                                 restore, error
 *   wattage_power_cap_reasons_total{reason,dry_run} counter: why it acted or held back, one of
 *                                                 rule, budget, resolved, stopping, cap_never,
 *                                                 earlier_run, kept, cleared_by_hand,
 *                                                 changed_by_others, min_interval, floor,
 *                                                 no_record (a fixed set)
 */
struct wt_expo_family;
int wt_cap_family_limits(void *cap, struct wt_expo_family *fam);
int wt_cap_family_actions(void *cap, struct wt_expo_family *fam);
int wt_cap_family_reasons(void *cap, struct wt_expo_family *fam);
/* wattage_power_cap_left_capped: how many GPUs keep wattage's limit after restoring it failed. */
int wt_cap_family_left_capped(void *cap, struct wt_expo_family *fam);
/* alerts.idle_policy, per GPU it holds (mode limit, dry_run="false") or would hold (mode
 * dry_run or alerts.dry_run, dry_run="true"); absent otherwise:
 *   wattage_gpu_idle_policy_cap_watts{gpu,dry_run}              the limit it sets (would set)
 *   wattage_gpu_idle_policy_saving_estimate_watts{gpu,dry_run}  an estimate: the GPU's idle
 *       power level when the policy engaged minus that limit, 0 when it idles under it (a limit
 *       above the draw lowers nothing) */
int wt_cap_family_idle_limits(void *cap, struct wt_expo_family *fam);
int wt_cap_family_idle_saving(void *cap, struct wt_expo_family *fam);

#endif
