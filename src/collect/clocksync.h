/* SPDX-License-Identifier: MIT */
/*
 * The clock's discipline, as series, so that every figure computed over a window can say
 * whether the clock could be trusted then (audit/clockcheck.h):
 *   ntp_adjtime (modes 0: read only, through core/clock.h's seam)
 *     -> wattage_clock_synchronized (0/1), wattage_clock_estimated_error_seconds,
 *        wattage_clock_maximum_error_seconds, wattage_clock_offset_seconds, wattage_clock_status
 *   <sysfs_root>/sys/class/ptp/ptpN/clock_name
 *     -> wattage_clock_ptp_info{device,clock} 1
 *   /dev/ptpN, opened read only, read back to back with CLOCK_REALTIME (real hosts only: not
 *   under a fake sysfs root) -> wattage_clock_ptp_offset_seconds{device}, the PHC minus the
 *   system clock at the midpoint of two system reads. A PHC that ptp4l keeps in TAI reads about
 *   +37 s; one nobody disciplines drifts freely: the figure is what it is, not an error.
 * A kernel that does not answer ntp_adjtime gives none of the kernel's series (never a 0 that
 * would claim an unsynchronised clock); a PHC that cannot be opened (permissions) gives its info
 * alone, said once in the log.
 */
#ifndef WT_CLOCKSYNC_H
#define WT_CLOCKSYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "core/clock.h"
#include "core/source.h"

extern const struct wt_collector_ops wt_clock_collector;

/* Most PTP hardware clocks followed. */
#define WT_CLOCKSYNC_MAX_PTP 16

/*
 * Appends the kernel's series of *cs at t_ns to out (none when !cs->known). Returns 0 or
 * -ENOMEM. For the collector and its tests.
 */
int wt_clocksync_append(const struct wt_clock_sync *cs, int64_t t_ns, struct wt_batch *out);

/*
 * The skew of a peer's clock (a BMC's, a PDU's, a meter's) from this host's, from the time
 * stamp the peer put on an answer in whole seconds (an HTTP Date header, a DCMI power reading's
 * stamp) and this host's CLOCK_REALTIME just before the request and just after the answer. The
 * peer's time then lies in [stamp, stamp + 1 s) and ours in [before, after], so the difference
 * lies in a range: *skew_s is its middle (positive: the peer is ahead) and *uncert_s its half
 * width, 0.5 s plus half the round trip. Exported as wattage_clock_peer_skew_seconds.
 */
void wt_peer_skew(int64_t stamp_s, int64_t before_ns, int64_t after_ns, double *skew_s,
                  double *uncert_s);

/* True when the skew is beyond bound_s whatever its uncertainty: |skew| - uncert > bound. */
bool wt_peer_skew_beyond(double skew_s, double uncert_s, double bound_s);

/*
 * Logs a warning when a peer's skew goes beyond bound_s (daemon.clock_max_error), and an info
 * line when it comes back: once per crossing, never at every poll. who names the peer
 * (a target's name). Zero-initialise the watch.
 */
struct wt_peer_skew_watch {
    bool beyond;
};
void wt_peer_skew_note(struct wt_peer_skew_watch *w, const char *module, const char *who,
                       double skew_s, double uncert_s, double bound_s);

#endif
