/* SPDX-License-Identifier: MIT */
/*
 * The alert engine: every tick it evaluates the rules of `alerts.rules` and the built-in
 * detectors (detect.h) on the hub's latest snapshot, moves each alert instance through
 * inactive -> pending -> firing -> resolved, logs and counts every transition, hands it to delivery
 * (wt_notify_post) and to power capping (wt_cap_apply), and tells what is active:
 * wattage_alerts{alertname,severity,...} 1 (wt_alerts_families) and wt_alerts_list_json, which
 * the API layer serves on /metrics and GET /api/v1/alerts (serve/api_alerts.h).
 *
 * Two layers: struct wt_alert_eval is the pure evaluator (no threads, no clock of its own: the
 * caller passes the snapshot, the collectors' states and the time), which the tests and the
 * benchmark drive directly; struct wt_alerts is the daemon's part around it (a thread woken by
 * the hub after each published batch, the /metrics families, delivery and capping).
 *
 * The condition of an instance is a Schmitt trigger: it becomes true when the value passes the
 * threshold and false only when it passes back beyond the clear bound (clear_below /
 * clear_above; the threshold itself without one). `for` counts while it is true. A series that
 * disappears keeps its instance's state for 3 intervals, then counts as false.
 */
#ifndef WT_ALERT_ENGINE_H
#define WT_ALERT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alert/alert.h"
#include "core/hub.h"

/* ---- summary templates ----------------------------------------------------------------------- */

/*
 * Checks a summary template: placeholders are {{value}}, {{threshold}}, {{alertname}},
 * {{labels.NAME}} (also written Prometheus' way, {{ $value }}, {{ $labels.gpu }}). Returns 0, or
 * -EINVAL with why filled ("unknown placeholder {{valu}}", "unclosed {{").
 */
int wt_alert_template_check(const char *tmpl, char *why, size_t n) WT_MUST_USE;
/*
 * Renders tmpl into out (bounded, always terminated): values as %.4g, a label that the alert
 * does not have as "". A template that fails the check is copied as it is.
 */
void wt_alert_render(const char *tmpl, const char *alertname, const char *labels, double value,
                     double threshold, char *out, size_t n);

/* FNV-1a 64 of name, a NUL, then labels: the alert's fingerprint. */
uint64_t wt_alert_fingerprint(const char *name, const char *labels);

/* ---- the evaluator --------------------------------------------------------------------------- */

struct wt_notify_health;

/* What one evaluation sees. */
struct wt_alert_input {
    const struct wt_batch *snap;         /* the hub's latest readings */
    const struct wt_hub_collector *cols; /* the collectors' states (data gaps); may be NULL */
    size_t ncols;
    int64_t now_ns;   /* CLOCK_REALTIME, the time base of readings */
    int64_t now_mono; /* CLOCK_MONOTONIC, the time base of the collectors' states */
    /* The delivery channels' health (notify.h), for WattageAlertDeliveryFailing; may be NULL. */
    const struct wt_notify_health *delivery;
    size_t ndelivery;
};

/*
 * What a transition is, for the log and wattage_alert_transitions_total's `to` label: PENDING
 * (the condition holds, `for` runs), CLEARED (pending, then false before `for`: it never fired),
 * FIRING, RESOLVED.
 */
enum wt_alert_to {
    WT_ALERT_TO_PENDING,
    WT_ALERT_TO_CLEARED,
    WT_ALERT_TO_FIRING,
    WT_ALERT_TO_RESOLVED
};
#define WT_ALERT_TO_COUNT 4
/* The transition of a (its state after it) from state from. */
enum wt_alert_to wt_alert_transition_to(const struct wt_alert *a, enum wt_alert_state from);
const char *wt_alert_to_name(enum wt_alert_to t); /* "pending", "cleared", "firing", "resolved" */

/*
 * Logs one transition as "alert: firing alertname=... severity=... labels={...} value=...
 * summary=...": firing at warn, resolved at info, pending and "cleared before firing" at debug
 * (a load that swings around a threshold makes thousands a day and none of them fires; they are
 * counted in wattage_alert_transitions_total instead).
 */
void wt_alert_log_transition(const struct wt_alert *a, enum wt_alert_state from);

/* Called for each transition, with the instance as it is after it (state PENDING, FIRING, or
 * RESOLVED; a pending instance that clears before `for` goes back to INACTIVE). */
typedef void (*wt_alert_transition_fn)(void *ctx, const struct wt_alert *a,
                                       enum wt_alert_state from);

struct wt_alert_eval;

/*
 * A new evaluator for cfg (copied). interval_ns is the daemon's tick, for staleness (3 of them).
 * Returns 0 or -ENOMEM.
 */
int wt_alert_eval_new(const struct wt_alerts_config *cfg, int64_t interval_ns,
                      struct wt_alert_eval **out) WT_MUST_USE;
void wt_alert_eval_free(struct wt_alert_eval *e);

/*
 * Replaces the configuration (SIGHUP). Instances of rules that keep their name and of detectors
 * still enabled keep their state; the others are resolved (fn is called for those that were
 * firing) and dropped. Returns 0 or -ENOMEM (the old configuration stays).
 */
int wt_alert_eval_reconfigure(struct wt_alert_eval *e, const struct wt_alerts_config *cfg,
                              int64_t interval_ns, int64_t now_ns, wt_alert_transition_fn fn,
                              void *ctx) WT_MUST_USE;

/* Evaluates every rule and detector once; fn (may be NULL) gets each transition. */
void wt_alert_eval_tick(struct wt_alert_eval *e, const struct wt_alert_input *in,
                        wt_alert_transition_fn fn, void *ctx);

/*
 * Copies the instances into out[0..n): firing first, then pending, then the recently resolved
 * (the latest 64, newest first). Returns how many there are in all (may exceed n).
 */
size_t wt_alert_eval_list(const struct wt_alert_eval *e, struct wt_alert *out, size_t n);

/* Counts of instances by state (index enum wt_alert_state; RESOLVED: the recent ones kept). */
void wt_alert_eval_counts(const struct wt_alert_eval *e, size_t counts[4]);

/* The transitions of one alert name since the evaluator was made (reloads keep them). */
struct wt_alert_tcount {
    char name[64];
    uint64_t n[WT_ALERT_TO_COUNT]; /* index enum wt_alert_to */
};
/*
 * Copies the transition counts into out[0..n), in the order the names first moved. Returns how
 * many names there are (may exceed n). Every transition that wt_alert_eval_tick and
 * wt_alert_eval_reconfigure hand to fn is counted, whether fn is NULL or not.
 */
size_t wt_alert_eval_transitions(const struct wt_alert_eval *e, struct wt_alert_tcount *out,
                                 size_t n);

/*
 * The body of GET /api/v1/alerts for a[0..n) (as wt_alert_eval_list gives them):
 *   {"firing": N, "pending": N, "alerts": [{"alertname", "state", "severity", "labels": {...},
 *    "summary", "value", "active_since", "fired_at", "resolved_at", "fingerprint", "gpu",
 *    "action", "cap_watts"}]}
 * Times are RFC 3339 (absent when 0). Returns a malloc'd string or NULL.
 */
char *wt_alert_json(const struct wt_alert *a, size_t n);

/* ---- the daemon's engine --------------------------------------------------------------------- */

/*
 * When the evaluation thread evaluates: once per tick, when every regular collector's batch of
 * this tick has come (one wake-up a tick, not one per collector). A collector is regular when
 * its last two batches came at most 1.5 intervals apart and the last one at most 1.5 intervals
 * ago: one backed off, polling at its own slower interval, or stopped is not waited for (the
 * thread's own timer evaluates a tick that never completes). A batch belongs to the tick when
 * it came since the last evaluation and within half an interval of the one that completes it.
 * Collectors beyond WT_ALERTS_GATHER_MAX are not tracked: each of their batches starts an
 * evaluation. Pure (no lock, no clock): the engine calls it under its wake-up lock.
 */
#define WT_ALERTS_GATHER_MAX 32
struct wt_alerts_gather {
    struct {
        char name[32];
        int64_t last_ns;     /* CLOCK_MONOTONIC of its last batch, 0: none yet */
        bool regular, fresh; /* fresh: a batch since the last evaluation */
    } src[WT_ALERTS_GATHER_MAX];
    size_t n;
};
/* A batch of collector arrived at now_ns: true when the evaluation should start now. */
bool wt_alerts_gather_batch(struct wt_alerts_gather *g, const char *collector, int64_t now_ns,
                            int64_t interval_ns);
/* An evaluation starts: every batch so far is in it. */
void wt_alerts_gather_evaluated(struct wt_alerts_gather *g);

struct wt_alerts;

/*
 * Reads the `alerts` section of cfg (errors name file:line), registers a hub sink (call before
 * the collectors start), opens delivery and capping, and starts the evaluation thread
 * (`run --dry-run` is wt_cap_force_dry_run, before this). With alerts.enabled false it still
 * lists (nothing active). cfg must outlive the engine (or the next reload). Returns 0 or a
 * negative errno with err filled.
 */
int wt_alerts_open(const struct wt_config *cfg, struct wt_hub *hub, struct wt_alerts **out,
                   struct wt_err *err) WT_MUST_USE;

/*
 * The engine's /metrics families, for the server to register (serve/api_alerts.h): providers
 * with the signature of serve/http.h's wt_http_family_fn, each answering under the engine's lock
 * from what it holds then (delivery and capping are reopened on reload). By group:
 *   WT_ALERTS_FAMS_ALERTS       wattage_alerts{alertname, severity, ...} 1 per firing alert,
 *                               wattage_alert_transitions_total{alertname, to} (to: pending,
 *                               cleared, firing, resolved; per alert name that has moved)
 *   WT_ALERTS_FAMS_DELIVERY     delivery's families (notify.h), whatever is configured now,
 *                               since a reload may add a channel
 *   WT_ALERTS_FAMS_CAP          wattage_gpu_power_cap_watts, wattage_power_cap_actions_total,
 *                               wattage_gpu_idle_policy_cap_watts,
 *                               wattage_gpu_idle_policy_saving_estimate_watts
 *   WT_ALERTS_FAMS_CAP_REASONS  wattage_power_cap_reasons_total, wattage_power_cap_left_capped
 * (the capping groups are empty while capping is off). Fills out[0..cap) and returns how many
 * the group has. The contexts live as long as x.
 */
struct wt_expo_family;
typedef int (*wt_alerts_family_fn)(void *ctx, struct wt_expo_family *fam);
struct wt_alerts_family {
    wt_alerts_family_fn fn;
    void *ctx;
};
enum wt_alerts_fam_group {
    WT_ALERTS_FAMS_ALERTS,
    WT_ALERTS_FAMS_DELIVERY,
    WT_ALERTS_FAMS_CAP,
    WT_ALERTS_FAMS_CAP_REASONS
};
#define WT_ALERTS_FAMS_MAX 8 /* the most in one group */
size_t wt_alerts_families(struct wt_alerts *x, enum wt_alerts_fam_group g,
                          struct wt_alerts_family *out, size_t cap);

/*
 * The body of GET /api/v1/alerts (wt_alert_json of the instances as wt_alert_eval_list gives
 * them), malloc'd into *json. Returns 0 or -ENOMEM.
 */
int wt_alerts_list_json(struct wt_alerts *x, char **json) WT_MUST_USE;

/*
 * The transitions of every alert name together since the engine opened (index enum
 * wt_alert_to), for the daemon's summary line. out is zeroed for NULL.
 */
void wt_alerts_transition_totals(struct wt_alerts *x, uint64_t out[WT_ALERT_TO_COUNT]);

/*
 * Re-reads the rules and detectors from cfg (SIGHUP). Delivery and capping are reopened with the
 * new settings. Returns 0, or -EINVAL with err filled (the running rules stay).
 */
int wt_alerts_reload(struct wt_alerts *a, const struct wt_config *cfg,
                     struct wt_err *err) WT_MUST_USE;

/*
 * Whether alert delivery is failing: some channel's attempts have failed since its last success
 * (the condition of WattageAlertDeliveryFailing, before its `for`). why gets the channels and
 * their last errors ("webhook: HTTP 503 {} (since 42 s, 7 queued)"). False for NULL, or when
 * no channel is configured.
 */
bool wt_alerts_delivery_failing(struct wt_alerts *a, char *why, size_t n);

/*
 * The jobs module's start hook (audit/jobs.h's wt_jobs_start_fn, ctx the engine): lifts the idle
 * policy's caps on the starting job's GPUs before the job start is answered (wt_cap_jobs_started).
 */
void wt_alerts_jobs_started(void *ctx, const char (*gpus)[WT_JOBS_GPU_LEN], size_t n);

/* How many evaluations the thread has made (for tests and benchmarks). */
uint64_t wt_alerts_evaluations(struct wt_alerts *a);

/* Stops the thread, closes capping (restoring limits) and delivery. Accepts NULL. */
void wt_alerts_close(struct wt_alerts *a);

#endif
