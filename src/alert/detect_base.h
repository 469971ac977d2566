/* SPDX-License-Identifier: MIT */
/*
 * The built-in detectors' own state and helpers, shared by their parts and by nothing else:
 * alert/detect.c (the state per GPU, the snapshot's gathering, the tick), alert/detect_base.c
 * (the pure pieces of detect.h and the reporting helpers), alert/detect_gpu.c (the detectors
 * per GPU and GPU health) and alert/detect_site.c (data gaps, delivery, facility air).
 */
#ifndef WT_DETECT_BASE_H
#define WT_DETECT_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alert/detect.h"
#include "core/reading.h"

#define MAX_GPUS 64
#define MAX_COLS 64
#define MAX_REASONS 9
#define MAX_XIDS 33    /* XID series per GPU in a snapshot (the collector's 32 and "other") */
#define REPLAY_CKPT 40 /* PCIe replay checkpoints kept per GPU, window / 32 apart */
#define RING 4096 /* temperature samples kept per GPU: 120 s at 30 ms, or a long window at 1 s */

/* One GPU's values in the current snapshot. */
struct now {
    bool seen, have_up, have_power, have_temp, have_slow, have_util, have_limit, have_max;
    bool have_energy;
    double up, power, temp, slow, util, limit, max, energy;
    int64_t t_power, t_temp, t_util, t_energy;
    /* throttle reasons in the snapshot: index into the batch */
    size_t reason[MAX_REASONS];
    int nreason;
    /* health */
    bool have_unc_vol, have_unc_agg, have_pending, have_failure, have_replays;
    double unc_vol, unc_agg, pending, failure, unc_rows, replays;
    int64_t t_replays;
    struct {
        unsigned int code; /* 0: "other" */
        double n;
    } xid[MAX_XIDS];
    int nxid;
};

/* What the XID detector remembers of one code on one GPU. */
struct xid_seen {
    unsigned int code;
    double n;
    int64_t last_rise;
};

/* One regression window's running sums over samples [tail, count) of the ring. */
struct fwin {
    uint64_t tail;
    double sx, sy, sxx, sxy, syy;
};

struct gpu {
    char uuid[96];
    char labels[WT_LABELS_LEN]; /* gpu,uuid,model (whatever the base series carry) */
    size_t labels_len;
    /* The labels of the reading that made it, up to its uuid pair (key_len bytes; 0: no uuid):
     * a reading whose labels begin with them, then end or go on, is this GPU. */
    char key[WT_LABELS_LEN];
    size_t key_len;
    char model[96];
    int index;
    struct now v;
    /* last new samples */
    int64_t last_power_t, last_temp_t, last_energy_t, last_ok_t;
    int64_t first_t; /* when it was first seen, for a GPU that never answered */
    double last_power, last_energy;
    bool have_last_energy;
    /* temperature ring: sample k (counted from the first) is at k % RING; [head, count) kept */
    int64_t rt[RING];
    double rv[RING];
    uint64_t rhead, rcount;
    int64_t rorigin; /* x = (t - rorigin) s in the windows' sums */
    struct fwin fw[WT_FORECAST_MAX_WINDOWS];
    int64_t fw_ns[WT_FORECAST_MAX_WINDOWS]; /* the windows the sums are for */
    int nfw;
    /* the shortest window's residual variance, averaged over its last 300 samples */
    double noise_s2;
    int noise_n;
    /* idle burn */
    bool idle_on;
    int64_t idle_since;
    double idle_j;
    int64_t idle_low_since; /* on, and power under the band since then (0: not) */
    int64_t idle_off_at;    /* when it last cleared */
    /* stuck */
    int same;
    double util_min, util_max;
    /* impossible: when each kind was last seen, and what */
    int64_t bad_at[4];
    double bad_val[4];
    double energy_back_j;
    /* health */
    struct xid_seen xid[MAX_XIDS];
    int nxid;
    bool have_first_agg;
    double first_agg, last_agg;
    int64_t agg_rise_at;
    struct {
        int64_t t;
        double v;
    } rp[REPLAY_CKPT];
    int rp_head, rp_n;
    double rp_last;
};

struct col {
    char name[32];
    int64_t base_ns; /* the smallest interval seen: the configured one (backoff doubles it) */
    int64_t first_mono;
};

struct wt_detect {
    struct gpu *g[MAX_GPUS];
    int ng;
    struct col c[MAX_COLS];
    int nc;
    /* scratch */
    double xs[RING], ys[RING];
    /* Per place in the last snapshot, the index + 1 in g of its reading's GPU (0: none): a
     * snapshot's layout stays from tick to tick, so gather checks that GPU first. Grown only. */
    unsigned char *at;
    size_t at_cap;
};

struct emit {
    wt_finding_fn fn;
    void *ctx;
};

/* A summary: truncated at the size of struct wt_alert's, on purpose. */
__attribute__((format(printf, 3, 4))) void wt_detect_say(char *s, size_t n, const char *fmt, ...);
void wt_detect_report(const struct emit *em, enum wt_detector det, const char *labels,
                      enum wt_cond cond, enum wt_severity sev, int64_t for_ns, double value,
                      const char *summary, int gpu);
void wt_detect_fmt_duration(int64_t ns, char *buf, size_t n);
void wt_detect_forecast(struct wt_detect *d, struct gpu *g, const struct wt_alerts_config *cfg,
                        const struct wt_alert_input *in, const struct emit *em);
void wt_detect_throttling(struct gpu *g, const struct wt_alerts_config *cfg,
                          const struct wt_batch *b, const struct emit *em);
void wt_detect_idle_burn(struct gpu *g, const struct wt_alerts_config *cfg,
                         const struct wt_alert_input *in, int64_t interval, const struct emit *em);
void wt_detect_impossible(struct gpu *g, const struct wt_alerts_config *cfg,
                          const struct wt_alert_input *in, const struct emit *em);
void wt_detect_stuck(struct gpu *g, const struct wt_alerts_config *cfg, const struct emit *em);
void wt_detect_sibling(struct wt_detect *d, const struct wt_alerts_config *cfg,
                       const struct emit *em);
void wt_detect_xid_alerts(struct gpu *g, const struct wt_alerts_config *cfg,
                          const struct wt_alert_input *in, const struct emit *em);
void wt_detect_ecc_alert(struct gpu *g, const struct wt_alert_input *in, const struct emit *em);
void wt_detect_remap_alert(struct gpu *g, const struct emit *em);
/*
 * PCIe replays over the window: checkpoints of the counter every window / 32; the rise is now
 * minus the newest checkpoint at least a window old (or the oldest kept, while the window fills).
 */
void wt_detect_replay_alert(struct gpu *g, const struct wt_alerts_config *cfg,
                            const struct emit *em);
void wt_detect_data_gaps(struct wt_detect *d, const struct wt_alerts_config *cfg,
                         const struct wt_alert_input *in, int64_t default_interval,
                         const struct emit *em);
/*
 * A channel fails from its first failed attempt after a success until the next success; the
 * engine's `for` makes that an alert after delivery_failing.for. The alert goes to every channel,
 * the failing one included (it gets it, in order, once it recovers); the log, wattage_alerts and
 * GET /api/v1/alerts show it meanwhile.
 */
void wt_detect_delivery_failing(const struct wt_alerts_config *cfg, const struct wt_alert_input *in,
                                const struct emit *em);
void wt_detect_inlet_envelope(const struct wt_alerts_config *cfg, const struct wt_batch *snap,
                              const struct emit *em);
void wt_detect_rack_air(const struct wt_alerts_config *cfg, const struct wt_batch *snap,
                        const struct emit *em);

#endif
