/* SPDX-License-Identifier: MIT */
/*
 * Whether the clock could be trusted over a window: every figure computed from the store over
 * [from, to] (wattage energy, kpi, report, a job's energy) asks this and carries the answer as
 * warnings. Read from the clock collector's series (collect/clocksync.h), per node of the
 * store: a reading of wattage_clock_synchronized 0 in the window (or the last one before it), or
 * a wattage_clock_maximum_error_seconds above the bound (daemon.clock_max_error), is a warning.
 * Where raw readings were pruned, the per-minute rollups answer (the share of unsynchronised
 * readings from their means, the largest error from their maxima). A store without clock series
 * (an older daemon, the collector off, imported logs) claims nothing either way.
 */
#ifndef WT_AUDIT_CLOCKCHECK_H
#define WT_AUDIT_CLOCKCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"

struct wt_store;
struct cJSON;

#define WT_CLOCKCHECK_MAX_NODES 16

/* What one node's clock series say of a window. */
struct wt_clock_window {
    char node[64];      /* the store's node name; "" for the store's own */
    bool sync_known;    /* some wattage_clock_synchronized reading bears on the window */
    double unsynced_s;  /* about how long it was unsynchronised (share of readings x window) */
    bool error_known;   /* some wattage_clock_maximum_error_seconds reading bears on it */
    double max_error_s; /* the largest maximum error */
};

struct wt_clock_warnings {
    struct wt_clock_window node[WT_CLOCKCHECK_MAX_NODES];
    size_t nnodes;
    char msg[2 * WT_CLOCKCHECK_MAX_NODES][240]; /* one line each, no newline */
    size_t n;
};

/*
 * Reads the clock series of every node over [from, to] and fills *w with what they say and the
 * warnings: unsynchronised at any point, or a maximum error above bound_s. Returns 0 or -EIO.
 */
int wt_clockcheck_window(struct wt_store *st, int64_t from, int64_t to, double bound_s,
                         struct wt_clock_warnings *w) WT_MUST_USE;

/*
 * Appends to *w (after wt_clockcheck_window) a warning per facility device whose clock
 * (wattage_clock_peer_skew_seconds: a BMC's Date header or power reading stamp) was off from
 * this host's by more than bound_s plus the stamps' 0.5 s in the window, for figures that put
 * facility and chip readings side by side (kpi, report). Returns 0 or -EIO.
 */
int wt_clockcheck_peers(struct wt_store *st, int64_t from, int64_t to, double bound_s,
                        struct wt_clock_warnings *w) WT_MUST_USE;

/* Adds w's warnings to the JSON object o as "warnings": [...] (appending to one already there);
 * nothing when there are none. Returns 0 or -ENOMEM. */
int wt_clockcheck_json(struct cJSON *o, const struct wt_clock_warnings *w) WT_MUST_USE;

/* Prints one "warning: ..." line per warning. */
void wt_clockcheck_print(FILE *f, const struct wt_clock_warnings *w);

#endif
