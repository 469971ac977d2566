/* SPDX-License-Identifier: MIT */
/*
 * The hub holds the latest readings of every collector (the snapshot the HTTP server serves,
 * never waiting for a poll) and hands each published batch to the sinks (the store writer, the
 * alert engine). Thread-safe: collectors publish from their own threads.
 */
#ifndef WT_HUB_H
#define WT_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/reading.h"

struct wt_hub;

/* Collector slots: a few built-in sources and every facility target (PDUs, BMCs, meters). */
#define WT_HUB_MAX_COLLECTORS 160

/* What the hub knows of one collector. */
struct wt_hub_collector {
    char name[32];
    int64_t interval_ns;    /* current effective interval (doubles under backoff) */
    int64_t last_tick_mono; /* CLOCK_MONOTONIC ns of the last poll, 0 if none */
    int64_t last_ok_mono;   /* of the last successful poll, 0 if none */
    double duration_s;      /* of the last poll */
    uint64_t errors;        /* failed polls since start */
    bool up;                /* last poll succeeded */
    bool present;           /* the source was found on this host */
    bool retired;           /* removed from the configuration (wt_hub_retire) */
};

/*
 * Called with every published batch, on the publishing collector's thread, outside the hub's
 * lock. Must not block: copy and return.
 */
typedef void (*wt_hub_sink_fn)(void *ctx, const char *collector, const struct wt_batch *b);

int wt_hub_open(struct wt_hub **out) WT_MUST_USE;
void wt_hub_close(struct wt_hub *h);

/* Registers a collector slot, or finds the one of that name. Returns its index (>= 0) or -ENOSPC.
 */
int wt_hub_add_collector(struct wt_hub *h, const char *name, int64_t interval_ns);
/*
 * Registers a sink. Returns 0 or -ENOSPC. A sink of wt_hub_add_sink gets every batch, the extra
 * ones (wt_hub_publish_extra) too: the store, which keeps every reading. A sink of
 * wt_hub_add_tick_sink gets only the polls' batches, one reading per series a tick: what
 * attributes, averages or alerts per tick. Its owner removes it (wt_hub_remove_sink) before
 * freeing ctx.
 */
int wt_hub_add_sink(struct wt_hub *h, wt_hub_sink_fn fn, void *ctx);
int wt_hub_add_tick_sink(struct wt_hub *h, wt_hub_sink_fn fn, void *ctx);
/*
 * Removes the sink (fn, ctx); h may be NULL, a sink not there is no error. Returns once no call
 * of it is left running on any thread: its owner frees ctx after this, while other threads may
 * still publish (the audit publishers outlive the poll loop). Waits for those calls, so the
 * caller holds no lock a sink takes, and a sink never calls it.
 */
void wt_hub_remove_sink(struct wt_hub *h, wt_hub_sink_fn fn, void *ctx);

/*
 * Records one poll of collector idx: b replaces its latest readings (copied) and goes to the
 * sinks. When not ok the poll counts as an error and b should hold only readings that say the
 * source is down (or nothing): the earlier readings are stale and go.
 */
void wt_hub_publish(struct wt_hub *h, int idx, const struct wt_batch *b, bool ok, double duration_s,
                    int64_t mono_ns);
/*
 * As wt_hub_publish, with held: readings of the collector's that this poll did not make again
 * (a sensor read at its own cadence, wt_collector_ops.held), each with the stamp of the read
 * that made it. They join b in the latest readings (the snapshot, /metrics, status) and go to
 * no sink: a sink sees each reading once, so nothing integrates or stores a held value twice.
 * held may be NULL.
 */
void wt_hub_publish_held(struct wt_hub *h, int idx, const struct wt_batch *b,
                         const struct wt_batch *held, bool ok, double duration_s, int64_t mono_ns);
/*
 * Extra readings of collector idx between its polls (a collector's sub-polls, core/source.h):
 * b goes to the sinks of wt_hub_add_sink only. The latest readings (the snapshot, /metrics), the
 * collector's state and the tick sinks do not see it.
 */
void wt_hub_publish_extra(struct wt_hub *h, int idx, const struct wt_batch *b);
/*
 * Retires slot idx: a target removed from the configuration. Its readings go and it leaves the
 * self-metrics, the health check and wt_hub_collectors until a collector of that name is added
 * again.
 */
void wt_hub_retire(struct wt_hub *h, int idx);
/* Marks collector idx present or absent and sets its effective interval. */
void wt_hub_set_state(struct wt_hub *h, int idx, bool present, int64_t interval_ns);

/*
 * Edge samples: the poll loop registers fn (wt_loop_start; NULL at wt_loop_stop), which makes
 * the collectors that keep energy counters (wt_collector_ops.edge_samples) poll at once, on
 * their own threads; wt_hub_request_edge (a job's start, mark or end) calls it and returns at
 * once. The extra poll keeps the collector's tick grid.
 */
typedef void (*wt_hub_edge_fn)(void *ctx);
void wt_hub_set_edge(struct wt_hub *h, wt_hub_edge_fn fn, void *ctx);
void wt_hub_request_edge(struct wt_hub *h);

/*
 * Copies every collector's latest readings, then the self-metrics (wattage_collector_*), into
 * out (cleared first). Returns 0 or -ENOMEM.
 */
int wt_hub_snapshot(struct wt_hub *h, struct wt_batch *out) WT_MUST_USE;
/* Copies up to n collector states into out; returns how many collectors there are. */
size_t wt_hub_collectors(struct wt_hub *h, struct wt_hub_collector *out, size_t n);
/*
 * Health: true when every present collector polled within 3 of its intervals of now_mono.
 * Otherwise false with why filled ("nvml: no poll for 5.2 s (interval 1 s)").
 */
bool wt_hub_healthy(struct wt_hub *h, int64_t now_mono, char *why, size_t n);

#endif
