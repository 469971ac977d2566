/* SPDX-License-Identifier: MIT */
/*
 * Delivery's pure pieces, declared for the tests (the interface the engine uses is in alert.h):
 * the JSON bodies sent to Alertmanager, the webhook and the exec hook, the splitting of the exec
 * command into argv (no shell is ever involved), the exec hook's environment, and the backoff.
 * Also each channel's health (counters, queue, failing since when), which the engine exports on
 * /metrics and turns into the built-in alert WattageAlertDeliveryFailing.
 */
#ifndef WT_NOTIFY_H
#define WT_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alert/alert.h"

#define WT_NOTIFY_QUEUE 1024      /* transitions waiting per webhook/exec channel, default */
#define WT_NOTIFY_QUEUE_MIN 16    /* alerts.delivery.queue_limit's bounds */
#define WT_NOTIFY_QUEUE_MAX 65536 /* (each waiting transition holds about 600 bytes) */
#define WT_NOTIFY_AM_MAX 4096     /* alerts Alertmanager's channel keeps (firing + unsent) */
#define WT_NOTIFY_AM_BATCH 256    /* alerts per POST to Alertmanager */
#define WT_NOTIFY_MAX_ARGS 32     /* words of alerts.exec.command */
#define WT_NOTIFY_CLOSE_NS (2 * 1000000000LL) /* what close spends flushing, at most */

/*
 * The Alertmanager v2 body for alerts a[0..n): a JSON array of
 *   {labels: {alertname, severity, <the alert's labels>, node}, annotations: {summary, value},
 *    startsAt, endsAt, generatorURL}
 * node (this host's name) is added unless the alert has one. A firing alert's endsAt is
 * now + valid_ns (Alertmanager resolves it by itself if wattage stops re-sending); a resolved
 * one's is its resolved time. generator_url may be "" (left out). Returns a malloc'd string or
 * NULL when out of memory.
 */
char *wt_notify_am_json(const struct wt_alert *a, size_t n, int64_t now_ns, int64_t valid_ns,
                        const char *node, const char *generator_url);

/*
 * One transition as the webhook receives it and the exec hook reads it on stdin:
 *   {"alertname", "state", "severity", "labels": {...}, "summary", "value", "startsAt",
 *    "endsAt" (resolved only), "fingerprint": "<16 hex digits>", "node"}
 * Returns a malloc'd string or NULL.
 */
char *wt_notify_event_json(const struct wt_alert *a, const char *node);

/*
 * Splits an exec command into words: blanks separate, '...' and "..." quote (a backslash escapes
 * the next character inside double quotes and outside quotes); nothing is expanded. buf receives
 * the words (NUL-separated), argv[0..*argc) points into it, argv[*argc] = NULL. Returns 0,
 * -EINVAL (empty, unterminated quote) or -E2BIG (too many words or too long).
 */
int wt_notify_split(const char *command, char *buf, size_t bufn, char **argv, size_t maxargs,
                    int *argc) WT_MUST_USE;

/*
 * The exec hook's environment: the daemon's own (env, NULL-terminated) minus any WATTAGE_ALERT_*,
 * plus WATTAGE_ALERT_NAME, _STATE, _SEVERITY, _LABELS (canonical label string), _SUMMARY,
 * _VALUE, _FINGERPRINT, _GPU (when the alert has one). Returns a malloc'd NULL-terminated array
 * whose strings are freed with wt_notify_env_free, or NULL when out of memory.
 */
char **wt_notify_env(char *const *env, const struct wt_alert *a);
void wt_notify_env_free(char **envp);

/* The wait before retry number `failures` (1, 2, ...): 0.5 s doubling, at most max_ns. */
int64_t wt_notify_backoff(int failures, int64_t max_ns);

/* Transitions posted but not yet delivered (or given up), over every channel; for tests. */
size_t wt_notify_pending(struct wt_notify *n);

/* Counters since open, for tests and logs (the per-channel ones as wt_notify_health has them). */
struct wt_notify_stats {
    uint64_t am_posts, am_failures, am_sent; /* requests, failed requests, alerts delivered */
    uint64_t webhook_sent, webhook_failures, webhook_dropped;
    uint64_t exec_runs, exec_failures, exec_timeouts, exec_dropped;
};
void wt_notify_stats(struct wt_notify *n, struct wt_notify_stats *out);

/*
 * One channel's delivery health. Every transition posted to a channel ends up counted once in
 * sent or dropped, or is still queued; failed counts attempts (requests, hook runs).
 */
struct wt_notify_health {
    const char *channel; /* "alertmanager", "webhook", "exec" (static) */
    uint64_t sent;       /* transitions delivered (Alertmanager: alert states, re-sends included) */
    uint64_t failed;     /* attempts that failed: no answer, 5xx, refused, a hook that failed */
    uint64_t dropped;    /* given up: queue full (the oldest), refused by the receiver (4xx), a
                            hook that failed, still waiting at stop */
    size_t queued;       /* waiting or in the thread's hands */
    int64_t oldest_mono; /* CLOCK_MONOTONIC: when the oldest undelivered one was posted; 0: none */
    /* CLOCK_MONOTONIC of the first failed attempt since the last one that succeeded; 0 while
     * the last attempt succeeded (or none was made) */
    int64_t failing_since_mono;
    char error[160]; /* the last failure ("HTTP 503 ...", "exited with status 2") */
};

/* Fills out[0..max) with the configured channels' health; returns how many there are (0 when
 * n is NULL). */
size_t wt_notify_health(struct wt_notify *n, struct wt_notify_health *out, size_t max);

/*
 * Whether any channel is failing (see failing_since_mono): true with *since_mono the earliest
 * such time and why (may be NULL) naming the channel and its last error, e.g.
 * "webhook: HTTP 503 {} (since 42 s, 7 queued)". now_mono is for the age. False for NULL.
 */
bool wt_notify_failing(struct wt_notify *n, int64_t now_mono, int64_t *since_mono, char *why,
                       size_t whyn);

/*
 * The delivery families for /metrics, in the shape of wt_http_family_fn (serve/http.h), each
 * with one sample per configured channel (label channel); n may be NULL (no family):
 *   WT_NOTIFY_FAM_SENT     wattage_alert_notifications_sent_total        counter
 *   WT_NOTIFY_FAM_FAILED   wattage_alert_notifications_failed_total      counter
 *   WT_NOTIFY_FAM_DROPPED  wattage_alert_notifications_dropped_total     counter
 *   WT_NOTIFY_FAM_QUEUED   wattage_alert_notifications_queued            gauge
 *   WT_NOTIFY_FAM_OLDEST   wattage_alert_notification_oldest_pending_seconds  gauge, 0: none
 * Returns 0, -EINVAL for an unknown family, or -ENOMEM.
 */
enum wt_notify_family {
    WT_NOTIFY_FAM_SENT,
    WT_NOTIFY_FAM_FAILED,
    WT_NOTIFY_FAM_DROPPED,
    WT_NOTIFY_FAM_QUEUED,
    WT_NOTIFY_FAM_OLDEST,
    WT_NOTIFY_FAM_COUNT
};
struct wt_expo_family;
int wt_notify_family(struct wt_notify *n, enum wt_notify_family which, int64_t now_mono,
                     struct wt_expo_family *fam);

#endif
