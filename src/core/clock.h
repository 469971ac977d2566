/* SPDX-License-Identifier: MIT */
/*
 * Time is int64_t nanoseconds: CLOCK_REALTIME for stamps, CLOCK_MONOTONIC for deadlines.
 * Formatting and parsing of RFC 3339, unix seconds, relative times and durations lives here.
 */
#ifndef WT_CLOCK_H
#define WT_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#define WT_NS_PER_S 1000000000LL
#define WT_NS_PER_MS 1000000LL

int64_t wt_now_real_ns(void);
int64_t wt_now_mono_ns(void);
/* Sleeps until the absolute CLOCK_MONOTONIC deadline; returns early (-EINTR) on a signal. */
int wt_sleep_until_mono(int64_t deadline_ns);

/* Writes "2026-11-29T18:00:00Z" (ms appended when frac_ms is set: "…00.123Z"). */
void wt_time_format(int64_t t_ns, int frac_ms, char *buf, size_t n);
/*
 * Parses a point in time: RFC 3339 ("2026-11-29T18:00:00Z", "+01:00" offsets, fractions),
 * unix seconds ("1764439200" or with a fraction), relative to now_ns ("-2h", "-30m", "now").
 * Returns 0 or -EINVAL.
 */
int wt_time_parse(const char *s, int64_t now_ns, int64_t *out_ns);
/* Parses a duration: "1s", "500ms", "2.5m", "7d", "1h30m", or plain seconds ("0.5"). > 0 only. */
int wt_duration_parse(const char *s, int64_t *out_ns);

#endif
