/* SPDX-License-Identifier: MIT */
/*
 * The alert evaluator (declared in alert/engine.h): rules and detector findings turned into alert
 * instances with Prometheus' states, the transitions' counts, and the alerts as JSON. The
 * daemon's part around it (thread, log, delivery, capping, /metrics) is alert/engine.c.
 *
 * Per tick the snapshot is indexed by metric once; a rule then visits only its metric's
 * readings. Instances live in an array with a hash index on (source, series labels); a rule's
 * instance is created only when its condition first holds, so the quiet majority of series
 * costs a comparison each.
 */
#include "alert/eval.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/detect.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"

#define MOD "alert"

/* ---- instances ---- */

static uint64_t mix(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL;
}

/*
 * The hash of a label string for the instances' index: eight bytes a step (issue 49: a detector's
 * finding hashed its labels a byte at a time, ~450 instructions each, a hundred a tick). In
 * memory only; never stored or shown.
 */
static uint64_t labels_hash(const char *s)
{
    size_t n = strlen(s);
    uint64_t h = 0x243f6a8885a308d3ULL ^ n, w;
    for (; n >= 8; n -= 8, s += 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ h >> 29;
}

/* A rule's instance: its rule's id and the series' labels; a detector's: its number and the
 * labels it gives. */
static uint64_t combine(uint64_t source, uint64_t lh)
{
    uint64_t h = (source ^ 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;
    h ^= lh + 0x94d049bb133111ebULL + (h << 6) + (h >> 2);
    return h * 0x94d049bb133111ebULL;
}

static uint64_t inst_key(uint64_t source, const char *labels)
{
    return combine(source, labels_hash(labels));
}

static uint64_t rule_id(const struct wt_alert_rule *r)
{
    char m[16];
    snprintf(m, sizeof m, "%d/%d", r->metric, (int)r->severity);
    return mix(mix(mix(mix(1469598103934665603ULL, r->name), m), r->match), r->labels) | 1ULL << 63;
}

static int index_rebuild(struct wt_alert_eval *e)
{
    size_t want = 64;
    while (want < 2 * e->n + 2)
        want *= 2;
    if (want != e->idx_cap) {
        int32_t *x = realloc(e->idx, want * sizeof *x);
        if (!x)
            return -ENOMEM;
        e->idx = x;
        e->idx_cap = want;
    }
    for (size_t i = 0; i < e->idx_cap; i++)
        e->idx[i] = -1;
    for (size_t i = 0; i < e->n; i++) {
        size_t h = (size_t)e->in[i].key & (e->idx_cap - 1);
        while (e->idx[h] >= 0)
            h = (h + 1) & (e->idx_cap - 1);
        e->idx[h] = (int32_t)i;
    }
    return 0;
}

static struct inst *find(struct wt_alert_eval *e, uint64_t key)
{
    if (!e->idx_cap)
        return NULL;
    for (size_t h = (size_t)key & (e->idx_cap - 1); e->idx[h] >= 0; h = (h + 1) & (e->idx_cap - 1))
        if (e->in[e->idx[h]].key == key)
            return &e->in[e->idx[h]];
    return NULL;
}

static struct inst *add(struct wt_alert_eval *e, uint64_t key)
{
    if (e->n == MAX_INSTANCES) {
        if (!e->full_warned)
            wt_warn(MOD, "more than %d alert instances: new ones are dropped", MAX_INSTANCES);
        e->full_warned = true;
        return NULL;
    }
    if (e->n == e->cap) {
        size_t nc = e->cap ? 2 * e->cap : 64;
        struct inst *x = realloc(e->in, nc * sizeof *x);
        if (!x)
            return NULL;
        e->in = x;
        e->cap = nc;
    }
    struct inst *it = &e->in[e->n++];
    memset(it, 0, sizeof *it);
    it->key = key;
    it->rule = it->det = -1;
    if (2 * e->n + 2 > e->idx_cap) {
        if (index_rebuild(e) != 0) {
            e->n--;
            return NULL;
        }
    } else {
        size_t h = (size_t)key & (e->idx_cap - 1);
        while (e->idx[h] >= 0)
            h = (h + 1) & (e->idx_cap - 1);
        e->idx[h] = (int32_t)(e->n - 1);
    }
    return it;
}

static void compact(struct wt_alert_eval *e)
{
    size_t o = 0;
    for (size_t i = 0; i < e->n; i++)
        if (!e->in[i].dead)
            e->in[o++] = e->in[i];
    e->n = o;
    e->any_dead = false;
    (void)index_rebuild(e); /* shrinking: the old index is large enough if this fails */
}

/* ---- the state machine ---- */

/* A rule's summary with the instance's latest value: rendered when someone reads it (a
 * transition, the API), not every tick. */
static void render(const struct wt_alert_eval *e, const struct inst *it, struct wt_alert *a)
{
    if (it->rule < 0 || (size_t)it->rule >= e->cfg.nrules)
        return;
    const struct wt_alert_rule *r = &e->cfg.rules[it->rule];
    wt_alert_render(r->summary, r->name, it->a.labels, it->a.value, it->threshold, a->summary,
                    sizeof a->summary);
}

enum wt_alert_to wt_alert_transition_to(const struct wt_alert *a, enum wt_alert_state from)
{
    switch (a->state) {
    case WT_ALERT_PENDING:
        return WT_ALERT_TO_PENDING;
    case WT_ALERT_FIRING:
        return WT_ALERT_TO_FIRING;
    case WT_ALERT_RESOLVED:
        return WT_ALERT_TO_RESOLVED;
    default:
        /* Only a pending instance goes back to inactive: step() resolves a firing one. */
        (void)from;
        return WT_ALERT_TO_CLEARED;
    }
}

const char *wt_alert_to_name(enum wt_alert_to t)
{
    static const char *const names[WT_ALERT_TO_COUNT] = {"pending", "cleared", "firing",
                                                         "resolved"};
    return (unsigned)t < WT_ALERT_TO_COUNT ? names[t] : "unknown";
}

/* The alert names are the rules' and the detectors' (a few hundred at most): a linear search
 * per transition, and transitions are rare next to evaluations. */
static void count(struct wt_alert_eval *e, const struct wt_alert *a, enum wt_alert_state from)
{
    size_t i = 0;
    while (i < e->ntc && strcmp(e->tc[i].name, a->name) != 0)
        i++;
    if (i == e->ntc) {
        if (e->ntc == e->tc_cap) {
            size_t nc = e->tc_cap ? 2 * e->tc_cap : 16;
            struct wt_alert_tcount *p = realloc(e->tc, nc * sizeof *p);
            if (!p) {
                if (!e->tc_warned)
                    wt_error(MOD, "out of memory: transitions of %s not counted", a->name);
                e->tc_warned = true;
                return;
            }
            e->tc = p;
            e->tc_cap = nc;
        }
        memset(&e->tc[i], 0, sizeof e->tc[i]);
        snprintf(e->tc[i].name, sizeof e->tc[i].name, "%s", a->name);
        e->ntc++;
    }
    e->tc[i].n[wt_alert_transition_to(a, from)]++;
}

size_t wt_alert_eval_transitions(const struct wt_alert_eval *e, struct wt_alert_tcount *out,
                                 size_t n)
{
    for (size_t i = 0; i < e->ntc && i < n; i++)
        out[i] = e->tc[i];
    return e->ntc;
}

static void emit(struct wt_alert_eval *e, struct inst *it, enum wt_alert_state from)
{
    /* A resolved alert keeps the summary it fired with (as Prometheus keeps its annotations). */
    if (it->a.state != WT_ALERT_RESOLVED)
        render(e, it, &it->a);
    count(e, &it->a, from);
    if (e->fn)
        e->fn(e->ctx, &it->a, from);
}

static void remember(struct wt_alert_eval *e, const struct wt_alert *a)
{
    size_t at = (e->recent_head + e->recent_n) % RECENT;
    if (e->recent_n == RECENT)
        e->recent_head = (e->recent_head + 1) % RECENT;
    else
        e->recent_n++;
    e->recent[at] = *a;
}

/* Feeds one evaluation of an instance's condition. */
static void step(struct wt_alert_eval *e, struct inst *it, enum wt_cond c, int64_t now)
{
    enum wt_alert_state from = it->a.state;
    switch (from) {
    case WT_ALERT_INACTIVE:
    case WT_ALERT_RESOLVED:
        if (c != WT_COND_TRUE) {
            it->dead = true;
            e->any_dead = true;
            return;
        }
        it->dead = false; /* cleared and true again within one tick */
        it->a.active_since_ns = now;
        it->a.fired_at_ns = it->a.resolved_at_ns = 0;
        if (it->for_ns <= 0) {
            it->a.state = WT_ALERT_FIRING;
            it->a.fired_at_ns = now;
        } else {
            it->a.state = WT_ALERT_PENDING;
        }
        emit(e, it, WT_ALERT_INACTIVE);
        return;
    case WT_ALERT_PENDING:
        if (c == WT_COND_FALSE) {
            it->a.state = WT_ALERT_INACTIVE;
            emit(e, it, from);
            it->dead = true;
            e->any_dead = true;
        } else if (now - it->a.active_since_ns >= it->for_ns) {
            it->a.state = WT_ALERT_FIRING;
            it->a.fired_at_ns = now;
            emit(e, it, from);
        }
        return;
    case WT_ALERT_FIRING:
        if (c == WT_COND_FALSE) {
            it->a.state = WT_ALERT_RESOLVED;
            it->a.resolved_at_ns = now;
            emit(e, it, from);
            remember(e, &it->a);
            it->dead = true;
            e->any_dead = true;
        }
        return;
    }
}

/* ---- rules ---- */

static void compile(struct wt_alert_eval *e)
{
    for (size_t i = 0; i < e->cfg.nrules; i++) {
        struct crule *c = &e->cr[i];
        size_t pos = 0;
        c->id = rule_id(&e->cfg.rules[i]);
        char k[64], v[WT_LABELS_LEN];
        c->npairs = 0;
        while (c->npairs < MAX_MATCH &&
               wt_labels_next(e->cfg.rules[i].match, &pos, k, sizeof k, v, sizeof v) == 1) {
            if (wt_labels(c->pair[c->npairs], sizeof c->pair[0], k, v, NULL) != 0)
                continue;
            c->len[c->npairs] = strlen(c->pair[c->npairs]);
            c->npairs++;
        }
    }
}

/* True when the canonical labels hold the pair (key="value", escaped) as a whole pair. */
static bool has_pair(const char *labels, const char *pair, size_t len)
{
    for (const char *p = labels; (p = strstr(p, pair)); p += len)
        if ((p == labels || p[-1] == ',') && (p[len] == ',' || p[len] == '\0'))
            return true;
    return false;
}

static bool matches(const struct crule *c, const char *labels)
{
    for (int i = 0; i < c->npairs; i++)
        if (!has_pair(labels, c->pair[i], c->len[i]))
            return false;
    return true;
}

static bool cmp(enum wt_cmp op, double v, double t)
{
    switch (op) {
    case WT_CMP_GT:
        return v > t;
    case WT_CMP_GE:
        return v >= t;
    case WT_CMP_LT:
        return v < t;
    case WT_CMP_LE:
        return v <= t;
    case WT_CMP_EQ:
        return v == t;
    default:
        return v != t;
    }
}

/* The device a reading belongs to: its uuid (GPUs), else its whole label string. */
static uint64_t device_of(struct wt_alert_eval *e, const struct wt_batch *b, size_t i)
{
    if (e->dev[i])
        return e->dev[i];
    size_t n;
    const char *uuid = wt_detect_label(b->r[i].labels, "uuid", &n);
    uint64_t h = 1469598103934665603ULL;
    if (uuid && n) {
        for (size_t k = 0; k < n; k++)
            h = (h ^ (unsigned char)uuid[k]) * 1099511628211ULL;
    } else {
        h = mix(mix(h, "="), b->r[i].labels);
    }
    e->dev[i] = h | 1;
    return e->dev[i];
}

/* The same device's reading of metric m, or NULL. */
static const struct wt_reading *relative(struct wt_alert_eval *e, const struct wt_batch *b,
                                         size_t i, int m)
{
    uint64_t d = device_of(e, b, i);
    for (uint32_t k = e->start[m]; k < e->start[m + 1]; k++) {
        size_t j = e->by_metric[k];
        if (device_of(e, b, j) == d)
            return &b->r[j];
    }
    return NULL;
}

/* The GPU's max power limit (for cap_share), or 0. */
static double max_limit(struct wt_alert_eval *e, const struct wt_batch *b, size_t i)
{
    const struct wt_reading *r = relative(e, b, i, WT_M_GPU_POWER_LIMIT_MAX_W);
    return r ? r->value : 0;
}

/* Name and labels, with the severity among them (two rules may share a name and differ in it). */
static uint64_t fingerprint(const char *name, enum wt_severity sev, const char *labels)
{
    char l[WT_LABELS_LEN];
    snprintf(l, sizeof l, "%s", labels);
    (void)wt_labels_add(l, sizeof l, "severity", wt_severity_name(sev));
    return wt_alert_fingerprint(name, l);
}

static int gpu_of(const char *labels)
{
    char v[16];
    char *end;
    if (wt_labels_get(labels, "gpu", v, sizeof v) != 0)
        return -1;
    long g = strtol(v, &end, 10);
    return *end || end == v || g < 0 || g > 1000000 ? -1 : (int)g;
}

static void eval_rule(struct wt_alert_eval *e, size_t ri, const struct wt_batch *b, int64_t now)
{
    const struct wt_alert_rule *r = &e->cfg.rules[ri];
    const struct crule *c = &e->cr[ri];
    for (uint32_t k = e->start[r->metric]; k < e->start[r->metric + 1]; k++) {
        size_t i = e->by_metric[k];
        const struct wt_reading *rd = &b->r[i];
        if (c->npairs && !matches(c, rd->labels))
            continue;
        double thr = r->threshold, clr = r->clear;
        if (r->relative_to >= 0) {
            const struct wt_reading *base = relative(e, b, i, r->relative_to);
            if (!base)
                continue; /* nothing to compare with: as if the series were absent */
            thr *= base->value;
            clr *= base->value;
        }
        enum wt_cond cond;
        if (cmp(r->cmp, rd->value, thr))
            cond = WT_COND_TRUE;
        else if (!r->has_clear)
            cond = WT_COND_FALSE;
        else if (r->cmp == WT_CMP_GT || r->cmp == WT_CMP_GE)
            cond = rd->value < clr ? WT_COND_FALSE : WT_COND_HOLD;
        else
            cond = rd->value > clr ? WT_COND_FALSE : WT_COND_HOLD;
        if (!e->lh[i])
            e->lh[i] = labels_hash(rd->labels) | 1;
        uint64_t key = combine(c->id, e->lh[i]);
        struct inst *it = find(e, key);
        if (!it) {
            if (cond != WT_COND_TRUE)
                continue;
            if (!(it = add(e, key)))
                continue;
            it->rule = (int)ri;
            snprintf(it->a.name, sizeof it->a.name, "%s", r->name);
            memcpy(it->a.labels, rd->labels, sizeof it->a.labels);
            size_t pos = 0;
            char lk[64], lv[WT_LABELS_LEN];
            while (wt_labels_next(r->labels, &pos, lk, sizeof lk, lv, sizeof lv) == 1) {
                char tmp[8];
                int has = wt_labels_get(it->a.labels, lk, tmp, sizeof tmp);
                if (has == -ENOENT)
                    (void)wt_labels_add(it->a.labels, sizeof it->a.labels, lk, lv);
            }
            it->a.severity = r->severity;
            it->a.fingerprint = fingerprint(it->a.name, r->severity, it->a.labels);
            it->a.action = r->action;
            it->a.gpu = gpu_of(rd->labels);
            it->for_ns = r->for_ns;
        }
        it->tick = e->tick;
        it->seen_ns = now;
        it->a.value = rd->value;
        it->threshold = thr;
        if (r->action == WT_ACTION_CAP && it->a.state != WT_ALERT_FIRING)
            it->a.cap_watts = r->cap_watts > 0 ? r->cap_watts : r->cap_share * max_limit(e, b, i);
        step(e, it, cond, now);
    }
}

/* ---- detectors ---- */

static void on_finding(void *ctx, const struct wt_finding *f)
{
    struct wt_alert_eval *e = ctx;
    uint64_t key = inst_key((uint64_t)f->det + 1, f->labels);
    struct inst *it = find(e, key);
    if (!it) {
        if (f->cond != WT_COND_TRUE || !(it = add(e, key)))
            return;
        it->det = (int)f->det;
        snprintf(it->a.name, sizeof it->a.name, "%s", wt_detector_alertname(f->det));
        snprintf(it->a.labels, sizeof it->a.labels, "%s", f->labels);
        it->a.fingerprint = fingerprint(it->a.name, f->severity, it->a.labels);
        it->a.gpu = f->gpu;
        it->a.action = WT_ACTION_NONE;
    }
    it->a.severity = f->severity;
    it->for_ns = f->for_ns;
    it->tick = e->tick;
    it->seen_ns = e->now_ns;
    it->a.value = f->value;
    if (f->summary)
        snprintf(it->a.summary, sizeof it->a.summary, "%s", f->summary);
    step(e, it, f->cond, e->now_ns);
}

/* ---- the evaluator ---- */

int wt_alert_eval_new(const struct wt_alerts_config *cfg, int64_t interval_ns,
                      struct wt_alert_eval **out)
{
    struct wt_alert_eval *e = calloc(1, sizeof *e);
    *out = NULL;
    if (!e)
        return -ENOMEM;
    if (wt_detect_new(&e->det) != 0 || index_rebuild(e) != 0) {
        wt_alert_eval_free(e);
        return -ENOMEM;
    }
    e->cfg = *cfg;
    e->interval_ns = interval_ns > 0 ? interval_ns : WT_NS_PER_S;
    compile(e);
    *out = e;
    return 0;
}

void wt_alert_eval_free(struct wt_alert_eval *e)
{
    if (!e)
        return;
    wt_detect_free(e->det);
    free(e->in);
    free(e->idx);
    free(e->by_metric);
    free(e->dev);
    free(e->lh);
    free(e->tc);
    free(e);
}

/* Whether instance it still has a source in cfg: its rule's name, or its detector enabled. */
static int new_source(const struct inst *it, const struct wt_alert_eval *old,
                      const struct wt_alerts_config *cfg)
{
    if (it->rule >= 0) {
        uint64_t id = old->cr[it->rule].id;
        for (size_t i = 0; i < cfg->nrules; i++)
            if (rule_id(&cfg->rules[i]) == id)
                return (int)i;
        return -1;
    }
    static const size_t off[WT_DET_COUNT] = {
        offsetof(struct wt_alerts_config, throttle_forecast.enabled),
        offsetof(struct wt_alerts_config, throttling.enabled),
        offsetof(struct wt_alerts_config, idle_burn.enabled),
        offsetof(struct wt_alerts_config, impossible.enabled),
        offsetof(struct wt_alerts_config, stuck.enabled),
        offsetof(struct wt_alerts_config, sibling.enabled),
        offsetof(struct wt_alerts_config, data_gap.enabled),
        offsetof(struct wt_alerts_config, delivery_failing.enabled),
        offsetof(struct wt_alerts_config, xid.enabled),
        offsetof(struct wt_alerts_config, ecc_uncorrectable.enabled),
        offsetof(struct wt_alerts_config, row_remap.enabled),
        offsetof(struct wt_alerts_config, pcie_replays.enabled),
        offsetof(struct wt_alerts_config, inlet_envelope.enabled),
        offsetof(struct wt_alerts_config, rack_delta_t.enabled),
        offsetof(struct wt_alerts_config, aisle_imbalance.enabled),
    };
    bool on = *(const bool *)((const char *)cfg + off[it->det]);
    return on && cfg->enabled ? 0 : -1;
}

int wt_alert_eval_reconfigure(struct wt_alert_eval *e, const struct wt_alerts_config *cfg,
                              int64_t interval_ns, int64_t now_ns, wt_alert_transition_fn fn,
                              void *ctx)
{
    e->fn = fn;
    e->ctx = ctx;
    for (size_t i = 0; i < e->n; i++) {
        struct inst *it = &e->in[i];
        int src = new_source(it, e, cfg);
        if (src < 0) {
            /* Its rule is gone: what was firing resolves, what was pending is forgotten. */
            if (it->a.state == WT_ALERT_FIRING) {
                it->a.state = WT_ALERT_RESOLVED;
                it->a.resolved_at_ns = now_ns;
                emit(e, it, WT_ALERT_FIRING);
                remember(e, &it->a);
            }
            it->dead = true;
            continue;
        }
        if (it->rule >= 0) {
            /* Same id, same key; the rule may have moved and changed its threshold or `for`. */
            it->rule = src;
            it->for_ns = cfg->rules[src].for_ns;
        }
    }
    e->fn = NULL;
    e->cfg = *cfg;
    e->interval_ns = interval_ns > 0 ? interval_ns : WT_NS_PER_S;
    compile(e);
    compact(e);
    return 0;
}

static int index_snapshot(struct wt_alert_eval *e, const struct wt_batch *b)
{
    if (b->len > e->by_cap) {
        size_t nc = b->len + 256;
        uint32_t *x = realloc(e->by_metric, nc * sizeof *x);
        uint64_t *y = realloc(e->dev, nc * sizeof *y);
        uint64_t *z = realloc(e->lh, nc * sizeof *z);
        if (x)
            e->by_metric = x;
        if (y)
            e->dev = y;
        if (z)
            e->lh = z;
        if (!x || !y || !z)
            return -ENOMEM;
        e->by_cap = nc;
    }
    uint32_t count[WT_M_COUNT + 1] = {0};
    for (size_t i = 0; i < b->len; i++)
        if (b->r[i].metric < WT_M_COUNT)
            count[b->r[i].metric]++;
    e->start[0] = 0;
    for (int m = 0; m < WT_M_COUNT; m++)
        e->start[m + 1] = e->start[m] + count[m];
    uint32_t at[WT_M_COUNT];
    memcpy(at, e->start, sizeof at);
    for (size_t i = 0; i < b->len; i++)
        if (b->r[i].metric < WT_M_COUNT)
            e->by_metric[at[b->r[i].metric]++] = (uint32_t)i;
    if (b->len) { /* an evaluator that never saw a reading has no arrays yet */
        memset(e->dev, 0, b->len * sizeof *e->dev);
        memset(e->lh, 0, b->len * sizeof *e->lh);
    }
    return 0;
}

void wt_alert_eval_tick(struct wt_alert_eval *e, const struct wt_alert_input *in,
                        wt_alert_transition_fn fn, void *ctx)
{
    static const struct wt_batch empty = {0};
    const struct wt_batch *b = in->snap ? in->snap : &empty;
    e->tick++;
    e->fn = fn;
    e->ctx = ctx;
    e->now_ns = in->now_ns;
    if (e->cfg.enabled && index_snapshot(e, b) == 0) {
        for (size_t ri = 0; ri < e->cfg.nrules; ri++)
            eval_rule(e, ri, b, in->now_ns);
        struct wt_alert_input din = *in;
        din.snap = b;
        wt_detect_tick(e->det, &e->cfg, &din, e->interval_ns, on_finding, e);
    }
    /* Series that were not there: they keep their state for a while, then count as false. */
    int64_t stale = STALE_INTERVALS * e->interval_ns;
    for (size_t i = 0; i < e->n; i++) {
        struct inst *it = &e->in[i];
        if (it->tick == e->tick || it->dead)
            continue;
        if (!e->cfg.enabled || in->now_ns - it->seen_ns > stale)
            step(e, it, WT_COND_FALSE, in->now_ns);
    }
    if (e->any_dead)
        compact(e);
    e->fn = NULL;
    e->ctx = NULL;
}

size_t wt_alert_eval_list(const struct wt_alert_eval *e, struct wt_alert *out, size_t n)
{
    size_t k = 0;
    static const enum wt_alert_state order[] = {WT_ALERT_FIRING, WT_ALERT_PENDING};
    for (int o = 0; o < 2; o++)
        for (size_t i = 0; i < e->n; i++)
            if (e->in[i].a.state == order[o] && !e->in[i].dead) {
                if (k < n) {
                    out[k] = e->in[i].a;
                    render(e, &e->in[i], &out[k]);
                }
                k++;
            }
    for (size_t i = 0; i < e->recent_n; i++) {
        if (k < n)
            out[k] = e->recent[(e->recent_head + e->recent_n - 1 - i) % RECENT];
        k++;
    }
    return k;
}

void wt_alert_eval_counts(const struct wt_alert_eval *e, size_t counts[4])
{
    memset(counts, 0, 4 * sizeof counts[0]);
    for (size_t i = 0; i < e->n; i++)
        if (!e->in[i].dead && e->in[i].a.state <= WT_ALERT_RESOLVED)
            counts[e->in[i].a.state]++;
    counts[WT_ALERT_RESOLVED] = e->recent_n;
}

/* ---- JSON ---- */

static void add_time(cJSON *o, const char *key, int64_t t)
{
    char buf[40];
    if (!t)
        return;
    wt_time_format(t, 1, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
}

char *wt_alert_json(const struct wt_alert *a, size_t n)
{
    cJSON *root = cJSON_CreateObject(), *list;
    size_t firing = 0, pending = 0;
    char *out = NULL;
    if (!root || !(list = cJSON_AddArrayToObject(root, "alerts")))
        goto out;
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject(), *labels;
        char k[64], v[WT_LABELS_LEN], fp[24];
        size_t pos = 0;
        if (!o || !cJSON_AddItemToArray(list, o))
            goto out;
        firing += a[i].state == WT_ALERT_FIRING;
        pending += a[i].state == WT_ALERT_PENDING;
        cJSON_AddStringToObject(o, "alertname", a[i].name);
        cJSON_AddStringToObject(o, "state", wt_alert_state_name(a[i].state));
        cJSON_AddStringToObject(o, "severity", wt_severity_name(a[i].severity));
        if (!(labels = cJSON_AddObjectToObject(o, "labels")))
            goto out;
        while (wt_labels_next(a[i].labels, &pos, k, sizeof k, v, sizeof v) == 1)
            cJSON_AddStringToObject(labels, k, v);
        cJSON_AddStringToObject(o, "summary", a[i].summary);
        if (isfinite(a[i].value))
            cJSON_AddNumberToObject(o, "value", a[i].value);
        add_time(o, "active_since", a[i].active_since_ns);
        add_time(o, "fired_at", a[i].fired_at_ns);
        add_time(o, "resolved_at", a[i].resolved_at_ns);
        snprintf(fp, sizeof fp, "%016" PRIx64, a[i].fingerprint);
        cJSON_AddStringToObject(o, "fingerprint", fp);
        if (a[i].gpu >= 0)
            cJSON_AddNumberToObject(o, "gpu", a[i].gpu);
        if (a[i].action == WT_ACTION_CAP) {
            cJSON_AddStringToObject(o, "action", "cap");
            cJSON_AddNumberToObject(o, "cap_watts", a[i].cap_watts);
        }
    }
    cJSON_AddNumberToObject(root, "firing", (double)firing);
    cJSON_AddNumberToObject(root, "pending", (double)pending);
    out = cJSON_PrintUnformatted(root);
out:
    cJSON_Delete(root);
    return out;
}
