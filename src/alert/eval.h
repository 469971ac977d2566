/* SPDX-License-Identifier: MIT */
/*
 * The alert evaluator's state (alert/eval.c), shared with the daemon's engine (alert/engine.c)
 * and nothing else. The evaluator's functions are declared in alert/engine.h.
 */
#ifndef WT_ALERT_EVAL_H
#define WT_ALERT_EVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alert/engine.h"
#include "core/config.h"

#define MAX_INSTANCES 4096
#define RECENT 64
#define MAX_MATCH 8
#define STALE_INTERVALS 3

/* A rule ready to evaluate: its matcher split into pairs. */
struct crule {
    uint64_t id; /* name, metric, matcher, severity and labels: what a reload recognises */
    int npairs;
    char pair[MAX_MATCH][WT_LABELS_LEN]; /* key="escaped value", as a canonical string has it */
    size_t len[MAX_MATCH];
};

struct inst {
    struct wt_alert a;
    uint64_t key;
    int rule; /* index into cfg.rules, or -1 */
    int det;  /* enum wt_detector, or -1 */
    int64_t for_ns;
    int64_t seen_ns;  /* the last tick its series was evaluated */
    double threshold; /* effective, for the summary */
    uint64_t tick;    /* the last tick that touched it */
    bool dead;        /* back to inactive: removed at the end of the tick */
};

struct wt_alert_eval {
    struct wt_alerts_config cfg;
    struct crule cr[WT_ALERT_MAX_RULES];
    int64_t interval_ns;
    struct wt_detect *det;
    /* instances and their index (open addressing over keys, rebuilt when instances go) */
    struct inst *in;
    size_t n, cap;
    int32_t *idx;
    size_t idx_cap;
    uint64_t tick;
    bool any_dead;
    /* the recently resolved, a ring */
    struct wt_alert recent[RECENT];
    size_t recent_head, recent_n;
    /* per tick: readings indexed by metric */
    uint32_t *by_metric;
    size_t by_cap;
    uint32_t start[WT_M_COUNT + 1];
    /* per tick: the device key and the labels' hash of each reading, computed on demand */
    uint64_t *dev, *lh;
    /* the transition callback of the current tick */
    wt_alert_transition_fn fn;
    void *ctx;
    int64_t now_ns;
    bool full_warned;
    /* transitions per alert name (wattage_alert_transitions_total), in first-moved order */
    struct wt_alert_tcount *tc;
    size_t ntc, tc_cap;
    bool tc_warned;
};

#endif
