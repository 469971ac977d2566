/* SPDX-License-Identifier: MIT */
/*
 * One line per event to stderr:
 *   2026-11-29T18:00:00.123Z info  nvml: GPU lost gpu=3 uuid=GPU-…
 * The level is set at run time. Under systemd with stderr connected to the journal each line
 * starts with its syslog priority, "<6>2026-11-29T18:00:00.123Z info  nvml: ...". Repeated failures
 * go through struct wt_ratelimit.
 */
#ifndef WT_LOG_H
#define WT_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum wt_log_level { WT_LOG_DEBUG, WT_LOG_INFO, WT_LOG_WARN, WT_LOG_ERROR };

void wt_log_set_level(enum wt_log_level level);
enum wt_log_level wt_log_get_level(void);
/* Parses "debug", "info", "warn", "error". Returns 0 or -EINVAL. */
int wt_log_parse_level(const char *s, enum wt_log_level *out);
/*
 * Looks again at whether stderr is the journal (JOURNAL_STREAM matches stderr's device and inode)
 * and returns it; lines then carry syslog priority prefixes. The first line logged looks by
 * itself; call this after redirecting stderr (tests).
 */
bool wt_log_detect_journal(void);
void wt_log(enum wt_log_level level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define wt_debug(mod, ...) wt_log(WT_LOG_DEBUG, mod, __VA_ARGS__)
#define wt_info(mod, ...) wt_log(WT_LOG_INFO, mod, __VA_ARGS__)
#define wt_warn(mod, ...) wt_log(WT_LOG_WARN, mod, __VA_ARGS__)
#define wt_error(mod, ...) wt_log(WT_LOG_ERROR, mod, __VA_ARGS__)

/*
 * Rate limit for a repeated complaint: the first one is logged, then at most one per
 * interval_ns, each saying how many were suppressed. Zero-initialise; set interval_ns.
 */
struct wt_ratelimit {
    int64_t interval_ns;
    int64_t last_ns;
    uint64_t suppressed;
};
/* True when this event should be logged now; *suppressed gets the count held back since. */
bool wt_ratelimit_ok(struct wt_ratelimit *rl, int64_t now_ns, uint64_t *suppressed);

#endif
