/* SPDX-License-Identifier: MIT */
/* Rolling 1/5/15-min power means published through the hub; see power_avg.h. */
#include "audit/power_avg.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/topology.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/rolling.h"

#define SLOT_NAME "power_avg"
#define MAX_SERIES 128 /* GPUs and RAPL zones followed; more are left out, said once */

static const struct {
    const char *label;
    int64_t ns;
} windows[] = {{"1m", 60 * WT_NS_PER_S}, {"5m", 300 * WT_NS_PER_S}, {"15m", 900 * WT_NS_PER_S}};
#define NWINDOWS (sizeof windows / sizeof windows[0])

struct series {
    int metric; /* WT_M_GPU_POWER_W, WT_M_CPU_POWER_W or WT_M_FAC_POWER_W */
    int meter;  /* a facility series: the facility_total meter it is read for; else -1 */
    char labels[WT_LABELS_LEN];
    struct wt_rolling r;
};

struct wt_power_avg {
    struct wt_hub *hub;
    int slot;
    int64_t interval_ns, max_gap_ns;
    pthread_mutex_t mu; /* guards the series */
    struct series *s[MAX_SERIES];
    size_t n;
    bool said_full;
    /* The site: the topology's facility_total meters (read at start), their sources' gaps. */
    struct wt_meter *meters;
    size_t nmeters;
    int64_t fac_gap_ns[4]; /* snmp, redfish, modbus, ipmi: 3 of the collector's intervals */
    pthread_t th;
    bool started, stop, present;
    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv;
};

/*
 * Whether a reading feeds the node's sum (GPU power, RAPL package and DRAM power) or the site's
 * (the power of a facility_total meter's series: *meter its index, else -1).
 */
static bool wanted(const struct wt_power_avg *p, const struct wt_reading *r, int *meter)
{
    *meter = -1;
    if (r->metric == WT_M_FAC_POWER_W) {
        for (size_t i = 0; i < p->nmeters; i++)
            if (wt_meter_matches(&p->meters[i], r->labels)) {
                *meter = (int)i;
                return true;
            }
        return false;
    }
    if (r->metric == WT_M_GPU_POWER_W)
        return true;
    if (r->metric != WT_M_CPU_POWER_W)
        return false;
    char domain[16];
    if (wt_labels_get(r->labels, "domain", domain, sizeof domain) != 0)
        return false;
    return strcmp(domain, "package") == 0 || strcmp(domain, "dram") == 0;
}

/* A facility series is integrated across the gaps its collector's polls leave, not the GPUs'. */
static int64_t gap_for(const struct wt_power_avg *p, const struct wt_reading *r)
{
    static const char *const sources[] = {"snmp", "redfish", "modbus", "ipmi"};
    char src[16];
    if (r->metric != WT_M_FAC_POWER_W || wt_labels_get(r->labels, "source", src, sizeof src))
        return p->max_gap_ns;
    for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++)
        if (strcmp(src, sources[i]) == 0 && p->fac_gap_ns[i] > p->max_gap_ns)
            return p->fac_gap_ns[i];
    return p->max_gap_ns;
}

static struct series *find(struct wt_power_avg *p, const struct wt_reading *r, int meter)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->s[i]->metric == r->metric && strcmp(p->s[i]->labels, r->labels) == 0)
            return p->s[i];
    if (p->n == MAX_SERIES) {
        if (!p->said_full)
            wt_warn("power_avg", "more than %d power series: the rest have no rolling means",
                    MAX_SERIES);
        p->said_full = true;
        return NULL;
    }
    struct series *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    s->metric = r->metric;
    s->meter = meter;
    memcpy(s->labels, r->labels, sizeof s->labels);
    wt_rolling_init(&s->r, gap_for(p, r));
    p->s[p->n++] = s;
    return s;
}

void wt_power_avg_feed(struct wt_power_avg *p, const char *collector, const struct wt_batch *b)
{
    if (strcmp(collector, SLOT_NAME) == 0)
        return;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        struct series *s;
        int meter;
        if (wanted(p, r, &meter) && (s = find(p, r, meter)))
            wt_rolling_add(&s->r, r->t_ns, r->value);
    }
    pthread_mutex_unlock(&p->mu);
}

static void sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    wt_power_avg_feed(ctx, collector, b);
}

int wt_power_avg_batch(struct wt_power_avg *p, int64_t now_ns, struct wt_batch *out)
{
    double node[NWINDOWS] = {0}, site[NWINDOWS] = {0};
    bool have[NWINDOWS] = {false};
    /* meters with a mean per window: the site's sum is published only when every meter has
     * one (a meter not read yet would make it a part of the site, not the site) */
    size_t covered[NWINDOWS] = {0};
    bool *seen = p->nmeters ? calloc(p->nmeters * NWINDOWS, sizeof *seen) : NULL;
    int rc = p->nmeters && !seen ? -ENOMEM : 0;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->n && rc == 0; i++) {
        const struct series *s = p->s[i];
        for (size_t k = 0; k < NWINDOWS && rc == 0; k++) {
            double m = wt_rolling_mean(&s->r, now_ns, windows[k].ns);
            if (isnan(m))
                continue;
            if (s->meter >= 0) {
                site[k] += m;
                if (!seen[(size_t)s->meter * NWINDOWS + k]) {
                    seen[(size_t)s->meter * NWINDOWS + k] = true;
                    covered[k]++;
                }
                continue;
            }
            node[k] += m;
            have[k] = true;
            if (s->metric != WT_M_GPU_POWER_W)
                continue;
            char lb[WT_LABELS_LEN];
            memcpy(lb, s->labels, sizeof lb);
            if (wt_labels_add(lb, sizeof lb, "window", windows[k].label) == 0)
                rc = wt_batch_add(out, WT_M_GPU_POWER_AVG_W, lb, now_ns, m);
        }
    }
    pthread_mutex_unlock(&p->mu);
    for (size_t k = 0; k < NWINDOWS && rc == 0; k++) {
        char lb[WT_LABELS_LEN];
        if (have[k] && wt_labels(lb, sizeof lb, "window", windows[k].label, NULL) == 0)
            rc = wt_batch_add(out, WT_M_NODE_POWER_AVG_W, lb, now_ns, node[k]);
        if (rc == 0 && p->nmeters && covered[k] == p->nmeters &&
            wt_labels(lb, sizeof lb, "window", windows[k].label, NULL) == 0)
            rc = wt_batch_add(out, WT_M_SITE_POWER_AVG_W, lb, now_ns, site[k]);
    }
    free(seen);
    return rc;
}

static void *publisher(void *arg)
{
    struct wt_power_avg *p = arg;
    struct wt_batch b = {0};
    pthread_mutex_lock(&p->stop_mu);
    while (!p->stop) {
        pthread_mutex_unlock(&p->stop_mu);
        int64_t m0 = wt_now_mono_ns();
        wt_batch_clear(&b);
        int rc = wt_power_avg_batch(p, wt_now_real_ns(), &b);
        int64_t m1 = wt_now_mono_ns();
        /* Present only once there is power to average: a derived slot is no source of its own,
         * so a daemon that collects nothing is still unhealthy (/healthz 503). */
        pthread_mutex_lock(&p->mu);
        bool present = p->n > 0;
        pthread_mutex_unlock(&p->mu);
        if (present != p->present) {
            wt_hub_set_state(p->hub, p->slot, present, p->interval_ns);
            p->present = present;
        }
        if (present)
            wt_hub_publish(p->hub, p->slot, &b, rc == 0, (double)(m1 - m0) / 1e9, m1);
        int64_t until = m0 + p->interval_ns;
        struct timespec ts = {.tv_sec = until / WT_NS_PER_S, .tv_nsec = until % WT_NS_PER_S};
        pthread_mutex_lock(&p->stop_mu);
        while (!p->stop && wt_now_mono_ns() < until)
            pthread_cond_timedwait(&p->stop_cv, &p->stop_mu, &ts);
    }
    pthread_mutex_unlock(&p->stop_mu);
    wt_batch_free(&b);
    return NULL;
}

static struct wt_power_avg *alloc(const struct wt_config *cfg, struct wt_hub *hub)
{
    struct wt_power_avg *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->hub = hub;
    p->interval_ns = cfg->daemon.interval_ns > 0 ? cfg->daemon.interval_ns : WT_NS_PER_S;
    p->max_gap_ns = 3 * p->interval_ns; /* the gap rule of the energy integration */
    struct wt_topology *t = NULL;
    struct wt_err err = {{0}};
    if (wt_topology_load(cfg, &t, &err) == 0) {
        for (int i = 0; i < 4; i++)
            p->fac_gap_ns[i] = t->power_gap_ns[i];
        for (size_t i = 0; i < t->nmeters; i++)
            if (t->meters[i].role == WT_ROLE_FACILITY_TOTAL)
                p->nmeters++;
        p->meters = p->nmeters ? calloc(p->nmeters, sizeof *p->meters) : NULL;
        if (p->nmeters && !p->meters)
            p->nmeters = 0;
        for (size_t i = 0, j = 0; i < t->nmeters && j < p->nmeters; i++)
            if (t->meters[i].role == WT_ROLE_FACILITY_TOTAL)
                p->meters[j++] = t->meters[i];
    } else {
        /* check-config and the daemon's start refuse such a file first: only an odd reload */
        wt_warn("power_avg", "no site average: %s", err.msg);
    }
    free(t);
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->stop_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->stop_cv, &ca);
    pthread_condattr_destroy(&ca);
    return p;
}

int wt_power_avg_open(const struct wt_config *cfg, struct wt_hub *hub, struct wt_power_avg **out,
                      struct wt_err *err)
{
    *out = NULL;
    struct wt_power_avg *p = alloc(cfg, hub);
    if (!p)
        return wt_err_set(err, "power_avg: out of memory"), -ENOMEM;
    int rc;
    if (!hub) { /* the tests' use: feed and batch by hand */
        *out = p;
        return 0;
    }
    p->slot = wt_hub_add_collector(hub, SLOT_NAME, p->interval_ns);
    if (p->slot < 0 || wt_hub_add_tick_sink(hub, sink, p) != 0) {
        rc = wt_err_set(err, "power_avg: no hub slot or sink left");
        goto fail;
    }
    if ((rc = pthread_create(&p->th, NULL, publisher, p)) != 0) {
        rc = -rc;
        wt_err_set(err, "power_avg: cannot start its thread: %s", strerror(-rc));
        goto fail;
    }
    p->started = true;
    *out = p;
    return 0;
fail:
    wt_power_avg_close(p);
    return rc;
}

void wt_power_avg_close(struct wt_power_avg *p)
{
    if (!p)
        return;
    /* The other audit publishers may still run: no batch of theirs reaches p from here on. */
    wt_hub_remove_sink(p->hub, sink, p);
    if (p->started) {
        pthread_mutex_lock(&p->stop_mu);
        p->stop = true;
        pthread_cond_broadcast(&p->stop_cv);
        pthread_mutex_unlock(&p->stop_mu);
        pthread_join(p->th, NULL);
        wt_hub_set_state(p->hub, p->slot, false, p->interval_ns);
    }
    for (size_t i = 0; i < p->n; i++)
        free(p->s[i]);
    free(p->meters);
    pthread_cond_destroy(&p->stop_cv);
    pthread_mutex_destroy(&p->stop_mu);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
