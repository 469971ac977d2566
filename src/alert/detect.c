/* SPDX-License-Identifier: MIT */
/*
 * The built-in detectors (see detect.h). Each GPU is followed by its uuid (its labels without
 * the per-series extras: pci_bus_id, method, reason); a new sample is one whose timestamp moved,
 * so several evaluations between two polls count once. Times are the readings' own
 * (CLOCK_REALTIME), so a slope is in degrees per second of the GPU's clock, not of ours.
 */
#include "alert/detect.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/detect_base.h"
#include "alert/notify.h"
#include "audit/ashrae.h"
#include "collect/nvml.h"
#include "core/clock.h"

static const char *const names[WT_DET_COUNT] = {
    "GPUThrottleForecast",
    "GPUThrottling",
    "GPUIdleBurn",
    "GPUImpossibleReading",
    "GPUSensorStuck",
    "GPUSiblingOutlier",
    "WattageDataGap",
    "WattageAlertDeliveryFailing",
    "GPUXidError",
    "GPUUncorrectableECC",
    "GPURowRemapPending",
    "GPUPCIeReplaysRising",
    "InletTemperatureOutsideEnvelope",
    "RackDeltaTHigh",
    "RackInletImbalance",
};

const char *wt_detector_alertname(enum wt_detector d)
{
    return d < WT_DET_COUNT ? names[d] : "unknown";
}

/* ---- state ---- */
int wt_detect_new(struct wt_detect **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

void wt_detect_free(struct wt_detect *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->ng; i++)
        free(d->g[i]);
    free(d->at);
    free(d);
}

static bool is_gpu_metric(int m)
{
    return m >= WT_M_GPU_INFO && m <= WT_M_GPU_ENERGY_GAPS;
}

/* The labels of r without the per-series extras. */
static void base_labels(const char *labels, char *out, size_t n)
{
    char k[64], v[WT_LABELS_LEN];
    size_t pos = 0;
    out[0] = '\0';
    while (wt_labels_next(labels, &pos, k, sizeof k, v, sizeof v) == 1) {
        static const char *const extras[] = {"pci_bus_id",
                                             "method",
                                             "reason",
                                             "driver_version",
                                             "vbios_version",
                                             "cuda_driver_version",
                                             "type",
                                             "counter",
                                             "kind",
                                             "xid",
                                             "fan"};
        bool extra = false;
        for (size_t i = 0; i < sizeof extras / sizeof extras[0] && !extra; i++)
            extra = strcmp(k, extras[i]) == 0;
        if (extra)
            continue;
        if (wt_labels_add(out, n, k, v) != 0)
            break;
    }
}

static struct gpu *find_gpu(struct wt_detect *d, const char *labels)
{
    char uuid[96], idx[16];
    bool by_uuid = wt_labels_get(labels, "uuid", uuid, sizeof uuid) == 0 && uuid[0];
    if (!by_uuid) {
        /* No uuid (a GPU lost before the collector could read it): the index names it, and it
         * is the GPU known at that index, if any. */
        if (wt_labels_get(labels, "gpu", idx, sizeof idx) != 0)
            return NULL;
        for (int i = 0; i < d->ng; i++)
            if (d->g[i]->index == atoi(idx))
                return d->g[i];
        snprintf(uuid, sizeof uuid, "gpu:%s", idx);
    }
    for (int i = 0; i < d->ng; i++)
        if (strcmp(d->g[i]->uuid, uuid) == 0)
            return d->g[i];
    if (d->ng == MAX_GPUS)
        return NULL;
    struct gpu *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
    size_t pos = 0;
    char k[64], v[WT_LABELS_LEN];
    while (by_uuid && wt_labels_next(labels, &pos, k, sizeof k, v, sizeof v) == 1) {
        if (strcmp(k, "uuid") == 0) {
            memcpy(g->key, labels, pos);
            g->key[pos] = '\0';
            g->key_len = pos;
            break;
        }
    }
    base_labels(labels, g->labels, sizeof g->labels);
    g->labels_len = strlen(g->labels);
    if (wt_labels_get(labels, "model", g->model, sizeof g->model) != 0)
        g->model[0] = '\0';
    g->index = wt_labels_get(labels, "gpu", idx, sizeof idx) == 0 ? atoi(idx) : -1;
    g->util_min = INFINITY;
    g->util_max = -INFINITY;
    d->g[d->ng++] = g;
    return g;
}

/* True when labels are g's base labels, or them followed by more pairs. */
static bool same_gpu(const struct gpu *g, const char *labels)
{
    return strncmp(labels, g->labels, g->labels_len) == 0 &&
           (labels[g->labels_len] == '\0' || labels[g->labels_len] == ',');
}

static bool has_label(const char *labels, const char *key)
{
    size_t n;
    return wt_detect_label(labels, key, &n) != NULL;
}

/* True when the value p (n bytes; NULL: no such label) is exactly val. */
static bool value_is(const char *p, size_t n, const char *val)
{
    return p && n == strlen(val) && memcmp(p, val, n) == 0;
}

/* Each label is looked up once and its value compared with each candidate (issue 49: a lookup
 * per candidate searched the labels up to three times). */
static void gather_ecc(struct now *v, const struct wt_reading *r)
{
    size_t n = 0;
    const char *p = wt_detect_label(r->labels, "type", &n);
    if (!value_is(p, n, "uncorrected"))
        return;
    p = wt_detect_label(r->labels, "counter", &n);
    if (value_is(p, n, "volatile"))
        v->have_unc_vol = true, v->unc_vol = r->value;
    else if (value_is(p, n, "aggregate"))
        v->have_unc_agg = true, v->unc_agg = r->value;
}

static void gather_remap(struct now *v, const struct wt_reading *r)
{
    size_t n = 0;
    const char *p = wt_detect_label(r->labels, "kind", &n);
    if (value_is(p, n, "pending"))
        v->have_pending = true, v->pending = r->value;
    else if (value_is(p, n, "failure"))
        v->have_failure = true, v->failure = r->value;
    else if (value_is(p, n, "uncorrectable"))
        v->unc_rows = r->value;
}

static void gather_xid(struct now *v, const struct wt_reading *r)
{
    size_t n;
    const char *p = wt_detect_label(r->labels, "xid", &n);
    if (!p || v->nxid == MAX_XIDS)
        return;
    char code[16];
    if (n >= sizeof code)
        return;
    memcpy(code, p, n);
    code[n] = '\0';
    v->xid[v->nxid].code = (unsigned int)strtoul(code, NULL, 10); /* "other" is 0 */
    v->xid[v->nxid].n = r->value;
    v->nxid++;
}

/* True when labels begin with the pairs up to g's uuid, as the reading that made g: its uuid. */
static bool same_key(const struct gpu *g, const char *labels)
{
    return g->key_len && strncmp(labels, g->key, g->key_len) == 0 &&
           (labels[g->key_len] == '\0' || labels[g->key_len] == ',');
}

/* The known GPU a reading's labels name, found without parsing them (issue 49: find_gpu parsed
 * every reading's labels for its uuid); NULL: ask find_gpu. */
static struct gpu *known_gpu(struct wt_detect *d, const char *labels)
{
    for (int i = 0; i < d->ng; i++)
        if (same_key(d->g[i], labels) || same_gpu(d->g[i], labels))
            return d->g[i];
    return NULL;
}

/* The index + 1 of g in d->g, 0 when none. */
static unsigned char place_of(const struct wt_detect *d, const struct gpu *g)
{
    for (int i = 0; g && i < d->ng; i++)
        if (d->g[i] == g)
            return (unsigned char)(i + 1);
    return 0;
}

static void gather(struct wt_detect *d, const struct wt_batch *b)
{
    struct gpu *cur = NULL;
    for (int i = 0; i < d->ng; i++)
        memset(&d->g[i]->v, 0, sizeof d->g[i]->v);
    if (b->len > d->at_cap) {
        unsigned char *at = realloc(d->at, b->len);
        if (at) {
            memset(at + d->at_cap, 0, b->len - d->at_cap);
            d->at = at;
            d->at_cap = b->len;
        }
    }
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        if (!is_gpu_metric(r->metric))
            continue;
        /* The GPU at this place last tick, when the labels still name it; then as before. */
        unsigned char *at = i < d->at_cap ? &d->at[i] : NULL;
        struct gpu *hint = at && *at && *at <= d->ng ? d->g[*at - 1] : NULL;
        if (hint && (same_key(hint, r->labels) || same_gpu(hint, r->labels)))
            cur = hint;
        else if (!cur || !same_gpu(cur, r->labels))
            cur = known_gpu(d, r->labels);
        if (!cur)
            cur = find_gpu(d, r->labels);
        if (at && cur != hint)
            *at = place_of(d, cur);
        if (!cur)
            continue;
        if (!cur->first_t)
            cur->first_t = r->t_ns;
        struct now *v = &cur->v;
        v->seen = true;
        switch (r->metric) {
        case WT_M_GPU_UP:
            v->have_up = true, v->up = r->value;
            break;
        case WT_M_GPU_POWER_W:
            v->have_power = true, v->power = r->value, v->t_power = r->t_ns;
            break;
        case WT_M_GPU_TEMP_C:
            v->have_temp = true, v->temp = r->value, v->t_temp = r->t_ns;
            break;
        case WT_M_GPU_SLOWDOWN_TEMP_C:
            v->have_slow = true, v->slow = r->value;
            break;
        case WT_M_GPU_UTIL_RATIO:
            v->have_util = true, v->util = r->value, v->t_util = r->t_ns;
            break;
        case WT_M_GPU_POWER_LIMIT_W:
            v->have_limit = true, v->limit = r->value;
            break;
        case WT_M_GPU_POWER_LIMIT_MAX_W:
            v->have_max = true, v->max = r->value;
            break;
        case WT_M_GPU_ENERGY_J:
            if (!has_label(r->labels, "method"))
                v->have_energy = true, v->energy = r->value, v->t_energy = r->t_ns;
            break;
        case WT_M_GPU_THROTTLED:
            if (v->nreason < MAX_REASONS)
                v->reason[v->nreason++] = i;
            break;
        case WT_M_GPU_ECC_ERRORS:
            gather_ecc(v, r);
            break;
        case WT_M_GPU_REMAPPED_ROWS:
            gather_remap(v, r);
            break;
        case WT_M_GPU_PCIE_REPLAYS:
            v->have_replays = true, v->replays = r->value, v->t_replays = r->t_ns;
            break;
        case WT_M_GPU_XID_ERRORS:
            gather_xid(v, r);
            break;
        default:
            break;
        }
    }
}

void wt_detect_tick(struct wt_detect *d, const struct wt_alerts_config *cfg,
                    const struct wt_alert_input *in, int64_t default_interval_ns, wt_finding_fn fn,
                    void *ctx)
{
    struct emit em = {fn, ctx};
    gather(d, in->snap);
    int64_t interval = default_interval_ns > 0 ? default_interval_ns : WT_NS_PER_S;
    for (int i = 0; i < d->ng; i++) {
        struct gpu *g = d->g[i];
        if (!g->v.seen)
            continue;
        if (cfg->throttle_forecast.enabled)
            wt_detect_forecast(d, g, cfg, in, &em);
        if (cfg->throttling.enabled)
            wt_detect_throttling(g, cfg, in->snap, &em);
        if (cfg->idle_burn.enabled)
            wt_detect_idle_burn(g, cfg, in, interval, &em);
        if (cfg->impossible.enabled)
            wt_detect_impossible(g, cfg, in, &em);
        if (cfg->stuck.enabled)
            wt_detect_stuck(g, cfg, &em);
        if (cfg->xid.enabled)
            wt_detect_xid_alerts(g, cfg, in, &em);
        if (cfg->ecc_uncorrectable.enabled)
            wt_detect_ecc_alert(g, in, &em);
        if (cfg->row_remap.enabled)
            wt_detect_remap_alert(g, &em);
        if (cfg->pcie_replays.enabled)
            wt_detect_replay_alert(g, cfg, &em);
    }
    if (cfg->sibling.enabled)
        wt_detect_sibling(d, cfg, &em);
    if (cfg->data_gap.enabled)
        wt_detect_data_gaps(d, cfg, in, interval, &em);
    if (cfg->delivery_failing.enabled)
        wt_detect_delivery_failing(cfg, in, &em);
    if (cfg->inlet_envelope.enabled)
        wt_detect_inlet_envelope(cfg, in->snap, &em);
    if (cfg->rack_delta_t.enabled || cfg->aisle_imbalance.enabled)
        wt_detect_rack_air(cfg, in->snap, &em);
    /* What the next tick compares with. */
    for (int i = 0; i < d->ng; i++) {
        struct gpu *g = d->g[i];
        if (g->v.have_power && g->v.t_power > g->last_power_t) {
            g->last_power = g->v.power;
            g->last_power_t = g->v.t_power;
        }
    }
}
