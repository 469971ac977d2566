/* SPDX-License-Identifier: MIT */
/*
 * Readiness: whether the daemon's figures can be trusted right now, with the reasons when not.
 * Liveness (/healthz: the poll loop runs) is the hub's; this is what /readyz, /api/v1/health and
 * the health section of `wattage status` answer.
 *
 * Two kinds of reasons:
 *  - reported: a module that knows it is failing says so with one call, wt_health_report
 *    ("store", "", false, "writes failing: database or disk is full"), and clears it with the same
 *    call and ok = true. The store and alert delivery report this way.
 *  - derived: read from a snapshot when asked (wt_health_collect): a GPU whose wattage_gpu_up is
 *    0 (it was seen, then stopped answering), a facility target whose wattage_facility_up is 0,
 *    and the kernel's clock discipline (STA_UNSYNC from ntp_adjtime, through a seam).
 *
 * The reported table is process-wide and thread-safe: modules need no handle to report into.
 */
#ifndef WT_HEALTH_H
#define WT_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/err.h"
#include "core/reading.h"

struct timex;

#define WT_HEALTH_MAX_REASONS 64

/* One reason the daemon is degraded. */
struct wt_health_reason {
    char component[24]; /* "gpu", "facility", "store", "alerts", "clock" */
    char key[64];       /* which one: a GPU index, a target, a channel; "" when one of a kind */
    char message[200];
};

/*
 * Sets (ok = false) or clears (ok = true) the reason of component/key; key may be NULL for "".
 * Cheap: call it on every change or every tick. The message is formatted printf-style (ignored
 * when ok). At most WT_HEALTH_MAX_REASONS are kept; past that a new one replaces nothing and is
 * lost (logged once).
 */
void wt_health_report(const char *component, const char *key, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * A probe: asked at every wt_health_collect whether its component is failing (true, with why
 * filled). For state a module already keeps and can answer cheaply, such as alert delivery
 * (wt_alerts_delivery_failing). Probes are called one at a time, under a lock of their own, so
 * wt_health_remove_probe returns only once no call is in progress: remove before freeing ctx.
 * Returns 0 or -ENOSPC (WT_HEALTH_MAX_PROBES).
 */
typedef bool (*wt_health_probe_fn)(void *ctx, char *why, size_t n);
#define WT_HEALTH_MAX_PROBES 8
int wt_health_add_probe(const char *component, wt_health_probe_fn fn, void *ctx) WT_MUST_USE;
void wt_health_remove_probe(wt_health_probe_fn fn, void *ctx);

/* Removes every reported reason (tests; and a reload that closes the modules reporting). */
void wt_health_reset(void);

/*
 * The reasons now: those reported, then the probes', then those derived from snapshot b (may
 * be NULL), then the clock's. Fills at most n into out and returns how many there are in all.
 */
size_t wt_health_collect(const struct wt_batch *b, struct wt_health_reason *out, size_t n);

/* The reasons derived from snapshot b alone: lost GPUs and facility targets down. */
size_t wt_health_from_snapshot(const struct wt_batch *b, struct wt_health_reason *out, size_t n);

/*
 * The clock seam: fn is called as ntp_adjtime (modes 0, read only) to learn whether the kernel
 * clock is synchronised; NULL restores the real one. For tests. The real binary's tests set
 * WATTAGE_CLOCK_STATUS to the status word instead (0: synchronised, 0x40: STA_UNSYNC).
 */
typedef int (*wt_health_adjtimex_fn)(struct timex *tx);
void wt_health_set_adjtimex(wt_health_adjtimex_fn fn);

/* False with why filled when the kernel says the clock is unsynchronised (STA_UNSYNC). */
bool wt_health_clock_synced(char *why, size_t n);

/*
 * The JSON of a list of reasons: {"status": "ok"|"degraded", "reasons": [{"component": ...,
 * "key": ..., "message": ...}]}; key left out when "". Returns a malloc'd string (caller frees)
 * or NULL when out of memory.
 */
char *wt_health_json(const struct wt_health_reason *r, size_t n);

/*
 * Adds the same object as member "health" to the JSON object text json (a status document) and
 * returns the new text (indented when pretty; malloc'd, caller frees), or NULL when json is not an
 * object or out of memory. json is not freed.
 */
char *wt_health_json_into(const char *json, const struct wt_health_reason *r, size_t n,
                          bool pretty);

/* Prints the health section of `wattage status`: "health: ok", or "health: degraded" and one
 * line per reason. */
void wt_health_print(FILE *f, const struct wt_health_reason *r, size_t n);

#endif
