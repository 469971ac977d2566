/* SPDX-License-Identifier: MIT */
/*
 * Time is int64_t nanoseconds: CLOCK_REALTIME for stamps, CLOCK_MONOTONIC for deadlines.
 * Formatting and parsing of RFC 3339, unix seconds, relative times and durations lives here.
 */
#ifndef WT_CLOCK_H
#define WT_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WT_NS_PER_S 1000000000LL
#define WT_NS_PER_MS 1000000LL

int64_t wt_now_real_ns(void);
int64_t wt_now_mono_ns(void);
/* The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): what a call costs, not its waits. */
int64_t wt_thread_cpu_ns(void);
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

/* ---- the kernel's clock discipline (ntp_adjtime, read only) ---- */

struct timex;

/*
 * What the kernel says of CLOCK_REALTIME (ntp_adjtime with modes 0, which needs no privilege).
 * maxerror grows by 500 ppm while nothing disciplines the clock, and the kernel sets STA_UNSYNC
 * and answers TIME_ERROR once it reaches 16 s (NTP_PHASE_LIMIT); chrony and ntpd keep both
 * fields up to date while synchronised. [doc: adjtimex(2), ntp_adjtime(3)]
 */
struct wt_clock_sync {
    bool known;         /* the kernel answered; when false nothing below is claimed */
    bool synchronized;  /* neither STA_UNSYNC nor TIME_ERROR */
    int state;          /* TIME_OK, TIME_INS, ... TIME_ERROR (ntp_adjtime's return) */
    int status;         /* the STA_* status word */
    double offset_s;    /* the time offset the discipline is slewing away (signed) */
    double est_error_s; /* estimated error */
    double max_error_s; /* maximum error */
};

/*
 * Reads the kernel's clock state into *out. Never fails: a kernel that does not answer (a
 * seccomp filter, say) gives known = false. The real binary's tests stand in for the kernel
 * with WATTAGE_CLOCK_FILE, a file read on every call (so a test may change it while a daemon
 * runs) of "key value" lines: status (the word, 0x40 is STA_UNSYNC), state (default TIME_ERROR
 * with STA_UNSYNC, else TIME_OK), maxerror_us, esterror_us, offset_us; or with
 * WATTAGE_CLOCK_STATUS, the status word alone (0: synchronised, 0x40: STA_UNSYNC).
 */
void wt_clock_sync_read(struct wt_clock_sync *out);

/* The seam for unit tests: fn is called as ntp_adjtime would be; NULL restores the real one. */
typedef int (*wt_clock_adjtimex_fn)(struct timex *tx);
void wt_clock_set_adjtimex(wt_clock_adjtimex_fn fn);

/*
 * Parses the text of a WATTAGE_CLOCK_FILE into *out (known set). Returns 0, or -EINVAL naming
 * the bad line in msg. For the hook and its tests.
 */
int wt_clock_sync_parse(const char *text, struct wt_clock_sync *out, char *msg, size_t n);

#endif
