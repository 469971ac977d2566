/* SPDX-License-Identifier: MIT */
/*
 * Inlet air against ASHRAE's thermal envelopes. The envelopes of the air entering IT equipment
 * are those of ASHRAE TC 9.9, "Thermal Guidelines for Data Processing Environments" (5th edition,
 * 2021; the same dry-bulb figures since the 2011 whitepaper "2011 Thermal Guidelines for Data
 * Processing Environments – Expanded Data Center Classes and Usage Guidance"):
 *   recommended, every class A1..A4: 18..27 C
 *   allowable: A1 15..32 C, A2 10..35 C, A3 5..40 C, A4 5..45 C
 * (humidity and dew-point limits are not judged here). The class is facility.ashrae_class
 * (default A1, the strictest).
 *
 * An inlet sensor is a wattage_facility_temperature_celsius series whose kind is "inlet" or
 * whose point names an inlet or intake ("Inlet Temp", "intake"), as for the rack Delta-T of
 * audit/kpi.h. Time outside an envelope is counted from one reading to the next when the first
 * was outside (a step, as the sensor is read), never across a gap longer than max_gap.
 *
 * In the daemon the readings are followed as the hub passes them and published every
 * daemon.interval on the hub's slot "ashrae":
 *   wattage_inlet_outside_envelope_seconds_total{<the sensor's labels>,envelope}
 *   wattage_inlet_within_envelope{<the sensor's labels>,envelope}   (0/1, the last reading)
 * with envelope "recommended" or "allowable".
 */
#ifndef WT_AUDIT_ASHRAE_H
#define WT_AUDIT_ASHRAE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "core/hub.h"
#include "core/reading.h"

enum wt_ashrae_class { WT_ASHRAE_A1, WT_ASHRAE_A2, WT_ASHRAE_A3, WT_ASHRAE_A4 };

struct wt_ashrae_envelope {
    double rec_lo_c, rec_hi_c;     /* recommended */
    double allow_lo_c, allow_hi_c; /* allowable */
};

/* The envelopes of class c. */
struct wt_ashrae_envelope wt_ashrae_envelope(enum wt_ashrae_class c);
/* "A1".."A4" (any case) into *out. Returns 0 or -EINVAL. */
int wt_ashrae_class_parse(const char *s, enum wt_ashrae_class *out) WT_MUST_USE;
const char *wt_ashrae_class_name(enum wt_ashrae_class c);

/* Whether a facility temperature series (its labels) measures inlet air. */
bool wt_ashrae_is_inlet(const char *labels);

/*
 * Seconds of the readings (t_ns[i], v[i]) (i < n, in time order) outside [lo, hi]: each span
 * from a reading to the next counts when the first is outside, unless longer than max_gap_ns.
 */
double wt_ashrae_outside_s(const int64_t *t_ns, const double *v, size_t n, double lo, double hi,
                           int64_t max_gap_ns);

struct wt_ashrae;

/*
 * Follows the inlet sensors of the hub's readings with the envelopes of class cls and publishes
 * the series above (see power_avg.h for the pattern). With hub NULL (tests) feed and batch by
 * hand. Close after every publisher has stopped.
 */
int wt_ashrae_open(const struct wt_config *cfg, enum wt_ashrae_class cls, struct wt_hub *hub,
                   struct wt_ashrae **out, struct wt_err *err) WT_MUST_USE;
void wt_ashrae_close(struct wt_ashrae *a);
void wt_ashrae_feed(struct wt_ashrae *a, const char *collector, const struct wt_batch *b);
int wt_ashrae_batch(struct wt_ashrae *a, int64_t now_ns, struct wt_batch *out) WT_MUST_USE;

#endif
