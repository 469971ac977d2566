/* SPDX-License-Identifier: MIT */
/*
 * Delivery's pure pieces, declared for the tests (the interface the engine uses is in alert.h):
 * the JSON bodies sent to Alertmanager, the webhook and the exec hook, the splitting of the exec
 * command into argv (no shell is ever involved), the exec hook's environment, and the backoff.
 */
#ifndef WT_NOTIFY_H
#define WT_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "alert/alert.h"

#define WT_NOTIFY_QUEUE 1024   /* transitions waiting per webhook/exec channel */
#define WT_NOTIFY_AM_MAX 4096  /* alerts Alertmanager's channel keeps (firing + unsent) */
#define WT_NOTIFY_AM_BATCH 256 /* alerts per POST to Alertmanager */
#define WT_NOTIFY_MAX_ARGS 32  /* words of alerts.exec.command */
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

/* Counters since open, for tests and logs. */
struct wt_notify_stats {
    uint64_t am_posts, am_failures, am_sent; /* requests, failed requests, alerts delivered */
    uint64_t webhook_sent, webhook_failures, webhook_dropped;
    uint64_t exec_runs, exec_failures, exec_timeouts, exec_dropped;
};
void wt_notify_stats(struct wt_notify *n, struct wt_notify_stats *out);

#endif
