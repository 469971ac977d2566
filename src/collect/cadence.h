/* SPDX-License-Identifier: MIT */
/*
 * Each field at its own cadence. A collector declares, in one table, how often each of its
 * fields is read: every tick (power, energy, temperature, utilization, clocks, throttle
 * reasons), slowly (power limits and their range, ECC aggregates, remapped rows...: at start,
 * every slow interval, and again on the collector's events), or once when a device is found.
 * Between two slow reads the collector publishes the last value it read at every tick, so a
 * series stays continuous; a failed read is not published.
 *
 * The collectors that are open publish their tables here, for `status --json` and
 * GET /api/v1/status (serve/api_status.h): one entry per collector name, the latest one opened.
 */
#ifndef WT_CADENCE_H
#define WT_CADENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wt_cadence {
    WT_CADENCE_TICK,  /* every tick */
    WT_CADENCE_SLOW,  /* every slow interval, at start and on events */
    WT_CADENCE_START, /* when the device is found (start, reload, back after an outage) */
};

/* One field of a collector: a stable name (as status shows it) and its cadence. */
struct wt_field_cadence {
    const char *field;
    enum wt_cadence cadence;
};

/*
 * When the slow fields are read. Zero-initialise, set interval_ns (0: every tick), and ask
 * wt_slow_due at every tick.
 */
struct wt_slow_timer {
    int64_t interval_ns;
    int64_t due_ns; /* CLOCK_MONOTONIC of the next slow read; 0: at the next tick */
};

/*
 * True when this tick reads the slow fields: the interval is 0, it is the first tick, or the
 * next slow read is due within half a tick of now_ns (tick_ns: the collector's interval, so
 * that jitter does not push a read to the tick after). Then the next one is due an interval
 * after the one due (or after now, when ticks were missed). Pure.
 */
bool wt_slow_due(struct wt_slow_timer *t, int64_t now_ns, int64_t tick_ns);

/* Makes the next wt_slow_due true (an event: a new baseline of every slow field). */
void wt_slow_force(struct wt_slow_timer *t);

/*
 * Publishes collector's table (static storage: kept by pointer) and its slow interval, replacing
 * an entry of that name. Thread-safe. Returns 0 or -ENOSPC (more than 8 collectors).
 */
int wt_cadence_publish(const char *collector, int64_t slow_ns, const struct wt_field_cadence *t,
                       size_t n);
/* Removes collector's entry, if it is table t (a collector reopened meanwhile keeps its own). */
void wt_cadence_withdraw(const char *collector, const struct wt_field_cadence *t);

/*
 * The slow fields of collector: their names into out[0..max) (static strings), *n how many there
 * are, *slow_ns its interval. False when collector published nothing.
 */
bool wt_cadence_slow_fields(const char *collector, const char **out, size_t max, size_t *n,
                            int64_t *slow_ns);

#endif
