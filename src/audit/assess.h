/* SPDX-License-Identifier: MIT */
/* The guided assessment's durable record (`wattage assess`): what was measurable when it
 * started, its window, kept in assessment.json beside the store so that it survives daemon
 * restarts and reboots. */
#ifndef WT_AUDIT_ASSESS_H
#define WT_AUDIT_ASSESS_H
#include "core/err.h"
#include "store/store.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The layers an assessment checks, as bits of wt_assess.layers. */
enum {
    WT_ASSESS_CHIP = 1 << 0,     /* GPUs with energy counters */
    WT_ASSESS_NODE = 1 << 1,     /* RAPL */
    WT_ASSESS_WALL = 1 << 2,     /* PDU / BMC wall meters */
    WT_ASSESS_FACILITY = 1 << 3, /* facility meters (PUE) */
    WT_ASSESS_CARBON = 1 << 4,   /* a carbon-intensity source */
    WT_ASSESS_CLOCK = 1 << 5,    /* the clock is synchronised */
    WT_ASSESS_JOBS = 1 << 6,     /* jobs tagged with output counters */
    WT_ASSESS_INLET = 1 << 7,    /* inlet sensors (ASHRAE) */
};
#define WT_ASSESS_NLAYERS 8

struct wt_assess {
    char name[64];
    int64_t start_ns, end_ns; /* CLOCK_REALTIME; end is the planned end */
    unsigned layers;          /* WT_ASSESS_* measurable at start */
};

/* The name of layer bit i (0..WT_ASSESS_NLAYERS-1): "chip", "node", ...; NULL past the end. */
const char *wt_assess_layer_name(unsigned i);

/* "<store's folder>/assessment.json" into out. 0 or -ENAMETOOLONG. */
int wt_assess_path(const char *store_path, char *out, size_t n) WT_MUST_USE;

/* Writes a whole: a temporary file, fsync, rename, fsync of the folder. 0 or -errno with err. */
int wt_assess_save(const char *path, const struct wt_assess *a, struct wt_err *err) WT_MUST_USE;

/* Reads path into *a. 0; -ENOENT (no assessment, err says so); -EINVAL (err names the field). */
int wt_assess_load(const char *path, struct wt_assess *a, struct wt_err *err) WT_MUST_USE;

/* The end of the baseline (pure): the first 24 h, or the first third when shorter than 72 h. */
int64_t wt_assess_baseline_end(const struct wt_assess *a);

/* Bit h set for every UTC hour of day (0..23) that [from_ns, to_ns) touches (pure). */
uint32_t wt_assess_hours_seen(int64_t from_ns, int64_t to_ns);
/*
 * ---- coverage: which of a window a layer's readings cover (pure) ----
 * A series covers the time between two consecutive readings no further apart than its gap
 * bound (WT_ASSESS_GAP_FACTOR times its median step); the layer covers the union of its series'
 * spans, and every piece of the window outside that union is a gap.
 */
#define WT_ASSESS_GAP_FACTOR 3.0

struct wt_assess_span {
    int64_t from_ns, to_ns;
};

/* The gap bound of readings p[0..n) (sorted by time): WT_ASSESS_GAP_FACTOR times the median
 * step; 0 when there are fewer than two readings. */
int64_t wt_assess_gap_bound(const struct wt_point *p, size_t n);

/*
 * Appends to out (room for n spans) the spans of [from_ns, to_ns] that readings p[0..n) cover,
 * clipped to the window; with positive_only, only the steps that start at a reading > 0.5 (a
 * flag such as wattage_clock_synchronized). A last reading within the gap bound of to_ns
 * covers up to it (the next one is not stored yet). Returns the number of spans written.
 */
size_t wt_assess_spans(const struct wt_point *p, size_t n, int64_t from_ns, int64_t to_ns,
                       bool positive_only, struct wt_assess_span *out);

/* What a layer's spans come to over a window. */
struct wt_assess_cover {
    double window_s, covered_s; /* coverage: covered_s / window_s */
    size_t ngaps;               /* pieces of the window not covered */
    double longest_gap_s;
    int64_t longest_gap_from_ns; /* where the longest gap starts (0: no gap) */
    size_t nseries;              /* the series (or jobs, carbon steps) looked at */
};

/* Sorts and merges spans s[0..n) in place (their union) and fills *c for [from_ns, to_ns].
 * Returns the number of merged spans. */
size_t wt_assess_cover_of(struct wt_assess_span *s, size_t n, int64_t from_ns, int64_t to_ns,
                          struct wt_assess_cover *c);
#endif
