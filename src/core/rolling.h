/* SPDX-License-Identifier: MIT */
/*
 * Rolling mean of a power series over the last W seconds, for several W at once (1, 5, 15 min),
 * in O(1) amortised per sample and bounded memory whatever the sample rate.
 *
 * Each sample extends a running trapezoid integral of power (joules) and of covered time
 * (seconds); a gap longer than max_gap_ns is not integrated across, so a lost GPU's silence
 * neither counts as zero watts nor stretches its last reading. The running pair is kept in a
 * ring every WT_ROLLING_STEP_NS at most; the mean over W is
 *   (E(now) - E(now - W)) / (C(now) - C(now - W))
 * with both values at now - W interpolated between the ring entries around it: exact when the
 * window starts on an entry or power is steady across the step there, and otherwise off by at
 * most the step's share of the window times the power's swing within it (1/60 of the swing for
 * a 1-min mean). Covered time under half of W gives no mean (NAN): a series that just appeared
 * has no 15-min average yet.
 */
#ifndef WT_ROLLING_H
#define WT_ROLLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WT_ROLLING_STEP_NS 1000000000LL /* ring resolution: one entry a second at most */
#define WT_ROLLING_SPAN_S 900           /* the longest window it answers: 15 min */
#define WT_ROLLING_CAP (WT_ROLLING_SPAN_S + 2)

struct wt_rolling_point {
    int64_t t_ns;
    double energy_j;  /* integral of power up to t */
    double covered_s; /* time integrated up to t */
};

struct wt_rolling {
    int64_t max_gap_ns;
    bool have_last;
    int64_t last_t_ns;
    double last_w;
    struct wt_rolling_point head; /* the running pair at the newest sample */
    struct wt_rolling_point ring[WT_ROLLING_CAP];
    size_t start, len; /* ring[start .. start+len) oldest first */
};

/* Resets r; gaps longer than max_gap_ns are not integrated across. */
void wt_rolling_init(struct wt_rolling *r, int64_t max_gap_ns);
/* Adds a sample; samples not after the newest are ignored. */
void wt_rolling_add(struct wt_rolling *r, int64_t t_ns, double watts);
/*
 * Mean power over (now_ns - window_ns, now_ns], from samples up to now_ns. NAN when less than
 * half the window is covered, or the window is longer than WT_ROLLING_SPAN_S.
 */
double wt_rolling_mean(const struct wt_rolling *r, int64_t now_ns, int64_t window_ns);

#endif
