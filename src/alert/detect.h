/* SPDX-License-Identifier: MIT */
/*
 * The built-in detectors: each looks at every GPU (or collector) in the latest snapshot, keeps
 * the little history it needs, and reports per tick, per device, whether its condition holds.
 * The engine (engine.h) turns those findings into alert instances with pending/firing/resolved.
 *
 *   GPUThrottleForecast   least-squares slopes of the temperature over several windows (10 s,
 *                         30 s, 2 min) vs the GPU's own slowdown threshold: the shortest window
 *                         confident at the configured level decides whether the time left, at
 *                         the slope's lower bound, is under the lead (a short window's horizon
 *                         is a few of its spans); a rise levelling off under it does not warn
 *   GPUThrottling         a thermal, hardware-slowdown or power-brake throttle reason held
 *   GPUIdleBurn           utilization under a floor while power stays over a share of the limit
 *   GPUImpossibleReading  power over the max limit plus a margin, an energy counter going
 *                         backwards or negative, a temperature or utilization out of range
 *   GPUSensorStuck        the same power value for N samples while utilization moves
 *   GPUSiblingOutlier     much hotter than the median GPU of its model on the node at similar
 *                         power
 *   WattageDataGap        a collector, or one GPU, silent for more than N intervals
 *   WattageAlertDeliveryFailing  a delivery channel (label channel) whose attempts have failed
 *                         since its last success, for `for` (default 5 min)
 *   GPUXidError           a new XID on a GPU (label xid; the summary says what the code means):
 *                         fires at once, lasts `hold` (default 10 min) after the code's last event;
 *                         critical for hardware codes (48, 61, 62, 64, 74, 79, 95, 119, 120…),
 *                         warning for the ones an application causes (13, 31, 43, 45) and the
 *                         recorded, contained ones (63, 92, 94)
 *   GPUUncorrectableECC   uncorrected ECC errors since the driver loaded (volatile count over 0),
 *                         or the aggregate count rising (then for 10 min); critical
 *   GPURowRemapPending    a memory row remap waits for a GPU reset (warning), or remapping has
 *                         failed (critical: the memory cannot be repaired)
 *   GPUPCIeReplaysRising  the PCIe replay counter rose by `threshold` (default 10) within
 *                         `window` (default 5 min); clears when it has not moved for the window
 *   InletTemperatureOutsideEnvelope  an inlet sensor outside the ASHRAE class's envelope
 *                         (wattage_inlet_within_envelope 0, audit/ashrae.h) for `for`: warning
 *                         for the recommended envelope, critical for the allowable one
 *   RackDeltaTHigh        a rack's mean exhaust minus mean inlet temperature (the facility
 *                         sensors of the snapshot, grouped by their rack label, else node) over
 *                         max_k (default 20 K) for `for`; clears under max_k - 2 K
 *   RackInletImbalance    hot/cold-aisle imbalance: a rack's mean inlet over the median rack of
 *                         its zone (zone label; all racks without one; at least 3 racks) by
 *                         delta_k (default 3 K) for `for` (hot air recirculating into the cold
 *                         aisle, or a cold aisle starved); clears under 0.7 delta_k
 */
#ifndef WT_ALERT_DETECT_H
#define WT_ALERT_DETECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alert/alert.h"
#include "alert/engine.h"

enum wt_detector {
    WT_DET_THROTTLE_FORECAST,
    WT_DET_THROTTLING,
    WT_DET_IDLE_BURN,
    WT_DET_IMPOSSIBLE,
    WT_DET_STUCK,
    WT_DET_SIBLING,
    WT_DET_DATA_GAP,
    WT_DET_DELIVERY_FAILING,
    WT_DET_XID,
    WT_DET_ECC_UNCORRECTABLE,
    WT_DET_ROW_REMAP,
    WT_DET_PCIE_REPLAYS,
    WT_DET_INLET_ENVELOPE,
    WT_DET_RACK_DELTA_T,
    WT_DET_AISLE_IMBALANCE,
    WT_DET_COUNT
};

/* The alertname of a detector. */
const char *wt_detector_alertname(enum wt_detector d);

/* A Schmitt trigger's input: past the threshold, within the band (no change), or cleared. */
enum wt_cond { WT_COND_FALSE, WT_COND_HOLD, WT_COND_TRUE };

/* One detector's verdict on one device in one tick. */
struct wt_finding {
    enum wt_detector det;
    const char *labels; /* the instance's labels (canonical) */
    enum wt_cond cond;
    enum wt_severity severity;
    int64_t for_ns;
    double value;
    const char *summary; /* set when cond is not FALSE */
    int gpu;             /* NVML index, -1 for a collector */
};

typedef void (*wt_finding_fn)(void *ctx, const struct wt_finding *f);

/* An impossible reading stays active this long after it was last seen (single-sample glitches
 * must not make a storm of firing/resolved). */
#define WT_DETECT_IMPOSSIBLE_HOLD_NS (60 * 1000000000LL)
/* A rise of the aggregate (lifetime) uncorrected ECC count keeps its alert this long. */
#define WT_DETECT_ECC_HOLD_NS (600 * 1000000000LL)

struct wt_detect;

int wt_detect_new(struct wt_detect **out) WT_MUST_USE;
void wt_detect_free(struct wt_detect *d);

/*
 * Looks at one snapshot with the detectors cfg enables; fn gets a finding per device and
 * detector (FALSE ones too, so that the engine can clear what it holds). default_interval_ns
 * is used for data gaps when the collectors' states do not say.
 */
void wt_detect_tick(struct wt_detect *d, const struct wt_alerts_config *cfg,
                    const struct wt_alert_input *in, int64_t default_interval_ns, wt_finding_fn fn,
                    void *ctx);

/* ---- pure pieces, for the tests ---- */

/*
 * The value of key in a canonical label string as written (escaped, without the quotes), found
 * without unescaping anything: the evaluation's hot path. Returns a pointer into labels with
 * *len set, or NULL when key is absent.
 */
const char *wt_detect_label(const char *labels, const char *key, size_t *len);

/*
 * Least-squares line through (x[i], y[i]), i < n: y = intercept + slope * (x - x[0]). Returns 0,
 * or -EINVAL when n < 2 or every x is the same.
 */
int wt_detect_lsq(const double *x, const double *y, size_t n, double *slope,
                  double *intercept) WT_MUST_USE;

/*
 * Seconds until a value now at `now`, rising by slope per second, reaches limit: 0 when it is
 * there already, INFINITY when it is not rising.
 */
double wt_detect_time_to(double now, double slope, double limit);

/*
 * The one-sided quantile p (0 < p < 1) of Student's t with df degrees of freedom (the normal's
 * when df is not positive or infinite), within 1% from df = 3: the slope's bounds at a
 * confidence.
 */
double wt_detect_t_quantile(double p, double df);

/*
 * Where a rising value that slows down is heading: the means of the first, middle and last third
 * of the span of x, their steps scaled to a third of the span from each third's mean x (so that
 * readings missing from a third do not bend a straight line), y1 < y2 < y3 by d1 then
 * d2 < 0.8 d1, slowing by more than three standard errors of whole-degree readings, read as a
 * geometric approach, whose level is y3 + d2 r / (1 - r), r = d2 / d1 (an exponential approach
 * sampled at equal steps). Returns 0 with *level set, or -ERANGE when the value is not clearly
 * rising and slowing (linear, accelerating, falling, flat, or too few readings to tell: then a
 * straight line is the honest forecast), -EINVAL for too few points.
 */
int wt_detect_plateau(const double *x, const double *y, size_t n, double *level) WT_MUST_USE;

/* The severity of an XID's alert: critical for the hardware codes and unknown ones, warning for
 * the codes an application causes and the contained or recorded ones. */
enum wt_severity wt_detect_xid_severity(unsigned int xid);

/* The median of v[0..n) (reorders v). n > 0. */
double wt_detect_median(double *v, size_t n);

#endif
