/* SPDX-License-Identifier: MIT */
/*
 * The built-in detectors beyond one GPU: data gaps, failing alert delivery, and facility air
 * (inlet envelopes, rack Delta-T, aisle imbalance). alert/detect.c calls each from its tick.
 */
#include "alert/detect_base.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/notify.h"
#include "audit/ashrae.h"
#include "collect/nvml.h"
#include "core/clock.h"

/* ---- data gaps ---- */

static struct col *find_col(struct wt_detect *d, const char *name, int64_t mono)
{
    for (int i = 0; i < d->nc; i++)
        if (strcmp(d->c[i].name, name) == 0)
            return &d->c[i];
    if (d->nc == MAX_COLS)
        return NULL;
    struct col *c = &d->c[d->nc++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->first_mono = mono;
    return c;
}

void wt_detect_data_gaps(struct wt_detect *d, const struct wt_alerts_config *cfg,
                         const struct wt_alert_input *in, int64_t default_interval,
                         const struct emit *em)
{
    int64_t gpu_interval = default_interval;
    bool nvml_present = in->cols == NULL;
    for (size_t i = 0; i < in->ncols; i++) {
        const struct wt_hub_collector *hc = &in->cols[i];
        struct col *c = find_col(d, hc->name, in->now_mono);
        if (!c)
            continue;
        if (hc->interval_ns > 0 && (!c->base_ns || hc->interval_ns < c->base_ns))
            c->base_ns = hc->interval_ns;
        int64_t interval = c->base_ns ? c->base_ns : default_interval;
        if (strcmp(hc->name, "nvml") == 0 || strncmp(hc->name, "nvml:", 5) == 0) {
            nvml_present |= hc->present;
            gpu_interval = interval;
        }
        char labels[WT_LABELS_LEN], s[256];
        if (wt_labels(labels, sizeof labels, "collector", hc->name, NULL) != 0)
            continue;
        enum wt_cond cond = WT_COND_FALSE;
        int64_t since = hc->last_ok_mono ? hc->last_ok_mono : c->first_mono;
        int64_t silent = in->now_mono - since;
        if (hc->present && cfg->data_gap.enabled && silent > cfg->data_gap.intervals * interval)
            cond = WT_COND_TRUE;
        if (cond != WT_COND_FALSE)
            wt_detect_say(
                s, sizeof s,
                "collector %s has not delivered readings for %.1f s (interval %.3g s, %" PRIu64
                " failed polls)",
                hc->name, (double)silent / WT_NS_PER_S, (double)interval / WT_NS_PER_S, hc->errors);
        wt_detect_report(em, WT_DET_DATA_GAP, labels, cond, WT_SEV_WARNING, 0,
                         (double)silent / WT_NS_PER_S, s, -1);
    }
    for (int i = 0; i < d->ng; i++) {
        struct gpu *g = d->g[i];
        const struct now *v = &g->v;
        if (v->have_power || v->have_temp || v->have_util) {
            int64_t t = v->t_power > v->t_temp ? v->t_power : v->t_temp;
            if (v->t_util > t)
                t = v->t_util;
            if (!(v->have_up && v->up < 0.5) && t > g->last_ok_t)
                g->last_ok_t = t;
        }
        int64_t since = g->last_ok_t ? g->last_ok_t : g->first_t;
        if (!since)
            continue;
        int64_t silent = in->now_ns - since;
        enum wt_cond cond = nvml_present && silent > cfg->data_gap.intervals * gpu_interval
                                ? WT_COND_TRUE
                                : WT_COND_FALSE;
        char s[256];
        if (cond != WT_COND_FALSE)
            wt_detect_say(s, sizeof s, "GPU %d (%s, %s) silent for %.1f s (interval %.3g s)%s",
                          g->index, g->model, g->uuid, (double)silent / WT_NS_PER_S,
                          (double)gpu_interval / WT_NS_PER_S,
                          v->have_up && v->up < 0.5 ? ": the GPU is down (lost or not answering)"
                          : v->seen                 ? ""
                                                    : ": its series are gone");
        wt_detect_report(em, WT_DET_DATA_GAP, g->labels, cond, WT_SEV_CRITICAL, 0,
                         (double)silent / WT_NS_PER_S, s, g->index);
    }
}

/* ---- delivery ---- */

/*
 * A channel fails from its first failed attempt after a success until the next success; the
 * engine's `for` makes that an alert after delivery_failing.for. The alert goes to every channel,
 * the failing one included (it gets it, in order, once it recovers); the log, wattage_alerts and
 * GET /api/v1/alerts show it meanwhile.
 */
void wt_detect_delivery_failing(const struct wt_alerts_config *cfg, const struct wt_alert_input *in,
                                const struct emit *em)
{
    for (size_t i = 0; i < in->ndelivery; i++) {
        const struct wt_notify_health *h = &in->delivery[i];
        char labels[WT_LABELS_LEN], s[256], age[32];
        if (wt_labels(labels, sizeof labels, "channel", h->channel, NULL) != 0)
            continue;
        int64_t failing = h->failing_since_mono ? in->now_mono - h->failing_since_mono : 0;
        enum wt_cond cond = h->failing_since_mono ? WT_COND_TRUE : WT_COND_FALSE;
        wt_detect_fmt_duration(failing, age, sizeof age);
        if (cond != WT_COND_FALSE)
            wt_detect_say(s, sizeof s,
                          "alert delivery to %s failing for %s: %s (%zu waiting, %" PRIu64
                          " dropped)",
                          h->channel, age, h->error, h->queued, h->dropped);
        wt_detect_report(em, WT_DET_DELIVERY_FAILING, labels, cond, WT_SEV_CRITICAL,
                         cfg->delivery_failing.for_ns, (double)failing / WT_NS_PER_S, s, -1);
    }
}

/* ---- facility air: inlet envelopes, rack Delta-T, aisle imbalance ---- */

void wt_detect_inlet_envelope(const struct wt_alerts_config *cfg, const struct wt_batch *snap,
                              const struct emit *em)
{
    for (size_t i = 0; snap && i < snap->len; i++) {
        const struct wt_reading *r = &snap->r[i];
        char env[16], s[256];
        if (r->metric != WT_M_INLET_COMPLIANT ||
            wt_labels_get(r->labels, "envelope", env, sizeof env) != 0)
            continue;
        bool allow = strcmp(env, "allowable") == 0;
        enum wt_cond c = r->value < 0.5 ? WT_COND_TRUE : WT_COND_FALSE;
        if (c == WT_COND_TRUE)
            wt_detect_say(s, sizeof s, "inlet air outside ASHRAE's %s envelope (%s)", env,
                          r->labels);
        wt_detect_report(em, WT_DET_INLET_ENVELOPE, r->labels, c,
                         allow ? WT_SEV_CRITICAL : WT_SEV_WARNING, cfg->inlet_envelope.for_ns,
                         r->value, s, -1);
    }
}

#define AIR_RACKS 64
struct air_rack {
    char rack[64], zone[64], labels[WT_LABELS_LEN];
    double sum[2];
    int n[2]; /* inlet, exhaust */
};

/* Which side of a rack a facility temperature measures: 0 inlet, 1 exhaust, -1 neither. */
static int air_side(const char *labels)
{
    char kind[32] = "", point[96] = "";
    (void)wt_labels_get(labels, "kind", kind, sizeof kind);
    (void)wt_labels_get(labels, "point", point, sizeof point);
    if (wt_ashrae_is_inlet(labels))
        return 0;
    if (strcmp(kind, "exhaust") == 0 || strcmp(kind, "outlet") == 0 ||
        strcasestr(point, "exhaust") || strcasestr(point, "outlet"))
        return 1;
    return -1;
}

static size_t air_racks(const struct wt_batch *snap, struct air_rack *out)
{
    size_t n = 0;
    for (size_t i = 0; snap && i < snap->len; i++) {
        const struct wt_reading *r = &snap->r[i];
        char rack[64], zone[64] = "";
        int side;
        if (r->metric != WT_M_FAC_TEMP_C || (side = air_side(r->labels)) < 0 ||
            (wt_labels_get(r->labels, "rack", rack, sizeof rack) != 0 &&
             wt_labels_get(r->labels, "node", rack, sizeof rack) != 0))
            continue;
        (void)wt_labels_get(r->labels, "zone", zone, sizeof zone);
        size_t k = 0;
        while (k < n && strcmp(out[k].rack, rack) != 0)
            k++;
        if (k == n) {
            if (n == AIR_RACKS)
                continue;
            memset(&out[n], 0, sizeof out[n]);
            snprintf(out[n].rack, sizeof out[n].rack, "%s", rack);
            snprintf(out[n].zone, sizeof out[n].zone, "%s", zone);
            if (wt_labels(out[n].labels, sizeof out[n].labels, "rack", rack, NULL) != 0)
                continue;
            n++;
        }
        out[k].sum[side] += r->value;
        out[k].n[side]++;
    }
    return n;
}

void wt_detect_rack_air(const struct wt_alerts_config *cfg, const struct wt_batch *snap,
                        const struct emit *em)
{
    struct air_rack *rk = malloc(AIR_RACKS * sizeof *rk);
    if (!rk)
        return;
    size_t n = air_racks(snap, rk);
    for (size_t i = 0; i < n && cfg->rack_delta_t.enabled; i++) {
        if (!rk[i].n[0] || !rk[i].n[1])
            continue;
        double dt = rk[i].sum[1] / rk[i].n[1] - rk[i].sum[0] / rk[i].n[0];
        char s[256];
        enum wt_cond c = dt > cfg->rack_delta_t.max_k         ? WT_COND_TRUE
                         : dt > cfg->rack_delta_t.max_k - 2.0 ? WT_COND_HOLD
                                                              : WT_COND_FALSE;
        if (c != WT_COND_FALSE)
            wt_detect_say(s, sizeof s, "rack %s: exhaust %.1f K over inlet (bound %.1f K)",
                          rk[i].rack, dt, cfg->rack_delta_t.max_k);
        wt_detect_report(em, WT_DET_RACK_DELTA_T, rk[i].labels, c, WT_SEV_WARNING,
                         cfg->rack_delta_t.for_ns, dt, s, -1);
    }
    for (size_t i = 0; i < n && cfg->aisle_imbalance.enabled; i++) {
        if (!rk[i].n[0])
            continue;
        double v[AIR_RACKS];
        size_t m = 0;
        for (size_t k = 0; k < n; k++)
            if (rk[k].n[0] && strcmp(rk[k].zone, rk[i].zone) == 0)
                v[m++] = rk[k].sum[0] / rk[k].n[0];
        if (m < 3)
            continue; /* a median of two is no reference */
        double mine = rk[i].sum[0] / rk[i].n[0], over = mine - wt_detect_median(v, m);
        double k = cfg->aisle_imbalance.delta_k;
        char s[256];
        enum wt_cond c = over >= k ? WT_COND_TRUE : over >= 0.7 * k ? WT_COND_HOLD : WT_COND_FALSE;
        if (c != WT_COND_FALSE)
            wt_detect_say(s, sizeof s,
                          "rack %s: inlet %.1f C, %.1f K over the median rack of its zone",
                          rk[i].rack, mine, over);
        wt_detect_report(em, WT_DET_AISLE_IMBALANCE, rk[i].labels, c, WT_SEV_WARNING,
                         cfg->aisle_imbalance.for_ns, over, s, -1);
    }
    free(rk);
}
