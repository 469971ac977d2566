/* SPDX-License-Identifier: MIT */
/*
 * The weekly review (`wattage review`): a small, stable set of KPIs per ISO week (Monday 00:00
 * UTC to the next Monday), each against the weeks before it with a noise band, and the change
 * points of the week with the KPI shift that followed each.
 *
 * The KPIs, each over an exact window from the stored series:
 *   joules_per_generated_token  the serving GPUs' energy (the GPUs each inference target's info
 *                               series lists, counter first as `wattage energy`) over the
 *                               generated tokens (the counters' increase, a drop is a restart)
 *   job_joules_per_sample       the GPU energy of the jobs that ended in the window over their
 *                               samples (their "samples" counter, summed over their phases)
 *   job_energy_to_target_joules the mean energy to the target of the jobs that ended in the
 *                               window and reached it (audit/jobs.h's energy_to_target)
 *   gpu_utilization             the mean of wattage_gpu_utilization_ratio (hourly means)
 *   pue, pue_part_load          audit/kpi.h over the window; the part-load PUE is the band that
 *                               held most of the reviewed week's time, the same band every day
 *   wue, cue                    audit/kpi.h and audit/carbon.h (CUE weighs each hour's grid
 *                               intensity by that hour's IT energy)
 * A KPI that cannot be computed is not available and says why (no inference series, no
 * facility meter...), never 0.
 *
 * Noise band: the KPI of each whole UTC day of the weeks before (days without a value left out);
 * band = their mean +- max(3 x their standard deviation, 2% of the mean), at least 3 days. The
 * week's value (over the whole week) is "within noise" inside the band, else "better" or
 * "worse" by the KPI's direction. A daily band is wider than a weekly value's own noise: the
 * verdict errs on the side of saying nothing.
 *
 * Change points in the week, from the stored series (a changed label starts a new series):
 *   driver, vbios  wattage_gpu_info's driver_version / vbios_version of a GPU (node + uuid);
 *                  GPUs and nodes with the same before -> after are one change
 *   model, tags    wattage_inference_info's model, or its other labels (a precision tag), of a
 *                  target
 *   config         wattage_config_info's digest of the daemon's configuration (a reload or a
 *                  restart with another file)
 * For each change the KPIs its nodes have (the per-node KPIs for a node's change, all for a
 * configuration's) are computed over [the change, the week's end] on those nodes and against a
 * band made as above from the whole days before the change (the weeks before and the week up to
 * it). After is worse beyond that band, over a day or more: a finding ("J/token +10.0% since
 * driver 570.86 -> 580.65 on node-a"). A KPI worse beyond the noise for the week with no change
 * to explain it is a finding too, said to be unexplained.
 */
#ifndef WT_REVIEW_H
#define WT_REVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "core/yamltree.h"

struct wt_store;
struct wt_config;
struct wt_topology;
struct cJSON;

#define WT_REVIEW_MAX_WEEKS 12
#define WT_REVIEW_KPIS 8
#define WT_REVIEW_MAX_CHANGES 32
#define WT_REVIEW_MAX_NODES 64
#define WT_REVIEW_MIN_DAYS 3
#define WT_REVIEW_BAND_SIGMAS 3.0
#define WT_REVIEW_BAND_FLOOR 0.02 /* of the mean */

enum wt_review_verdict {
    WT_RV_NA,      /* no value this week */
    WT_RV_NO_BASE, /* a value, too few days before it for a band */
    WT_RV_WITHIN,
    WT_RV_BETTER,
    WT_RV_WORSE,
};
/* "not available", "no baseline", "within noise", "better", "worse" */
const char *wt_review_verdict_name(enum wt_review_verdict v);

/* A noise band from n daily values (NaN ones skipped): mean, half-width, days used. */
struct wt_review_band {
    int days;
    double mean, sd, half;
};
/* Fills *b from v[0..n) as the header says; b->days < WT_REVIEW_MIN_DAYS: no band. */
void wt_review_band(const double *v, size_t n, struct wt_review_band *b);
/* The verdict of value against b: lower_better tells the direction. */
enum wt_review_verdict wt_review_judge(double value, const struct wt_review_band *b,
                                       bool lower_better);

struct wt_review_kpi {
    char key[32], label[48], unit[24];
    bool lower_better;
    bool per_node; /* computed from nodes' series (a node's change can move it) */
    double value;  /* the week's; NaN: not available (why says) */
    char why[160];
    double weeks[WT_REVIEW_MAX_WEEKS]; /* the weeks before, oldest first; NaN: none */
    struct wt_review_band band;
    double change; /* value / band mean - 1 */
    enum wt_review_verdict verdict;
};

struct wt_review_change {
    int64_t t_ns;     /* the first reading of the new label (the latest, for several nodes) */
    int64_t first_ns; /* the earliest of them */
    char kind[16];    /* "driver", "vbios", "model", "tags", "config" */
    char before[128], after[128];
    char nodes[WT_REVIEW_MAX_NODES][64]; /* "" is this node (the store's own) */
    size_t nnodes;
    char where[160]; /* GPUs or target, for a person */
};

struct wt_review_finding {
    char kpi[32];
    int change;       /* index in changes, -1: no change explains it */
    double before;    /* the band's mean */
    double after;     /* after the change (the week's value when unexplained) */
    double band_half; /* the band's half-width */
    int days;         /* days in the band */
    char text[384];
};

struct wt_review {
    int year, week; /* ISO */
    int64_t from_ns, to_ns;
    int nweeks;
    bool has_data;       /* any reading in the week */
    char local_node[64]; /* the name of the store's own node "" (topology.node), for people */
    char part_load_band[32];
    struct wt_review_kpi kpis[WT_REVIEW_KPIS];
    struct wt_review_change changes[WT_REVIEW_MAX_CHANGES];
    size_t nchanges;
    bool changes_truncated;
    struct wt_review_finding findings[WT_REVIEW_KPIS * 4];
    size_t nfindings;
    /* per change and KPI: the value after the change and its band (NaN when not computed) */
    double after[WT_REVIEW_MAX_CHANGES][WT_REVIEW_KPIS];
    double before[WT_REVIEW_MAX_CHANGES][WT_REVIEW_KPIS];
};

/*
 * The ISO week of t_ns (UTC): *year, *week and its Monday 00:00 in *start_ns.
 */
/*
 * Node names for a person, into buf[0..len): sorted, and runs of three or more names that differ
 * only in a trailing number of the same width, each one more than the last, as a range
 * ("node-003..node-017"); the rest listed, ", " between. Truncated at len. Pure.
 */
void wt_review_node_ranges(const char *const *names, size_t n, char *buf, size_t len);

void wt_review_week_of(int64_t t_ns, int *year, int *week, int64_t *start_ns);
/*
 * Parses "2026-W49" (also "2026W49"; week 1..52, or 53 in a year that has it) into its Monday
 * 00:00 UTC. Returns 0 or -EINVAL with err naming the text.
 */
int wt_review_week_parse(const char *s, int64_t *start_ns, struct wt_err *err) WT_MUST_USE;

/*
 * The review of the ISO week starting at week_start_ns against the nweeks (1..
 * WT_REVIEW_MAX_WEEKS) before it, into *r. st: an open store; cfg: the configuration (its carbon
 * section); t: its topology (facility meters, part-load bands). Returns 0, -EINVAL (err) or
 * -EIO / -ENOMEM (err).
 */
int wt_review_compute(struct wt_store *st, const struct wt_config *cfg, const struct wt_topology *t,
                      int64_t week_start_ns, int nweeks, struct wt_review *r,
                      struct wt_err *err) WT_MUST_USE;

/* The review as JSON (SI units; NaN as null), owned by the caller; NULL when out of memory. */
struct cJSON *wt_review_json(const struct wt_review *r);
/* The review as text for a person on f. */
void wt_review_text(const struct wt_review *r, FILE *f);

/* ---- the daemon's side (`wattage run`) ---- */

/*
 * The review section of the configuration:
 *   review:
 *     weekly_dir: /var/lib/wattage/review   # "" (default): no weekly file
 *     weeks: 4                              # the weeks before that make the bands (1..12)
 *     check_interval: 1h                    # how often the daemon looks (1s..1d)
 */
struct wt_review_conf {
    char weekly_dir[256];
    int weeks;
    int64_t check_interval_ns;
};
/* Parses the section (node may be NULL: the defaults). Returns 0 or -EINVAL with err naming
 * file:line and key. */
int wt_review_conf_parse(const char *file, const struct wt_ynode *node, struct wt_review_conf *c,
                         struct wt_err *err) WT_MUST_USE;
/* For src/cli/sections.c. */
int wt_review_config_check(const char *file, const struct wt_ynode *node,
                           struct wt_err *err) WT_MUST_USE;

/* FNV-1a 64 of data[0..n), as 16 hex digits in out (17 bytes). */
void wt_review_digest(const void *data, size_t n, char out[17]);

/*
 * Reviews the week starting at week_start_ns and writes its JSON to dir/review-YYYY-Www.json
 * (replaced whole: core/durable.h). *findings: how many it has. Returns 0 or -errno with err.
 */
int wt_review_write_week(struct wt_store *st, const struct wt_config *cfg,
                         const struct wt_topology *t, const char *dir, int64_t week_start_ns,
                         int nweeks, size_t *findings, struct wt_err *err) WT_MUST_USE;

/*
 * The daemon's thread (hub slot "review"): every review.check_interval it publishes
 * wattage_config_info{digest} (the digest of the configuration file it was opened with: a
 * reload opens it again, so a changed file is a change point of the review) and, when
 * review.weekly_dir is set, reviews the last whole ISO week once its file is missing (an hour
 * after the week's end, so the store holds its last readings), writes the file and publishes
 * wattage_review_findings{week} (an alert rule on it routes a finding: alerts.rules), and logs
 * each finding as a warning. Its own store connection. Returns 0 or -errno with err.
 */
struct wt_review_daemon;
struct wt_hub;
int wt_review_daemon_open(const struct wt_config *cfg, struct wt_hub *hub,
                          struct wt_review_daemon **out, struct wt_err *err) WT_MUST_USE;
/* Stops the thread and frees; accepts NULL. */
void wt_review_daemon_close(struct wt_review_daemon *d);

#endif
