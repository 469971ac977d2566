/* SPDX-License-Identifier: MIT */
/* Inlet air against ASHRAE's envelopes, from the hub's readings; see ashrae.h. */
#include "audit/ashrae.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"

#define SLOT_NAME "ashrae"
#define MAX_SENSORS 256

/* ASHRAE TC 9.9, Thermal Guidelines for Data Processing Environments (see ashrae.h). */
static const struct wt_ashrae_envelope envelopes[] = {
    [WT_ASHRAE_A1] = {18, 27, 15, 32},
    [WT_ASHRAE_A2] = {18, 27, 10, 35},
    [WT_ASHRAE_A3] = {18, 27, 5, 40},
    [WT_ASHRAE_A4] = {18, 27, 5, 45},
};
static const char *const class_names[] = {"A1", "A2", "A3", "A4"};

struct wt_ashrae_envelope wt_ashrae_envelope(enum wt_ashrae_class c)
{
    return envelopes[c <= WT_ASHRAE_A4 ? c : WT_ASHRAE_A1];
}

const char *wt_ashrae_class_name(enum wt_ashrae_class c)
{
    return class_names[c <= WT_ASHRAE_A4 ? c : WT_ASHRAE_A1];
}

int wt_ashrae_class_parse(const char *s, enum wt_ashrae_class *out)
{
    for (int i = 0; s && i <= WT_ASHRAE_A4; i++)
        if (strcasecmp(s, class_names[i]) == 0) {
            *out = (enum wt_ashrae_class)i;
            return 0;
        }
    return -EINVAL;
}

/* word appears in s as a word of its own (letters on neither side), any case. */
static bool has_word(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = s; *p; p++) {
        if (strncasecmp(p, word, n) != 0)
            continue;
        bool left = p == s || !((p[-1] | 32) >= 'a' && (p[-1] | 32) <= 'z');
        char r = p[n];
        if (left && !((r | 32) >= 'a' && (r | 32) <= 'z'))
            return true;
    }
    return false;
}

bool wt_ashrae_is_inlet(const char *labels)
{
    char kind[32] = "", point[WT_LABELS_LEN] = "";
    (void)wt_labels_get(labels, "kind", kind, sizeof kind);
    if (strcmp(kind, "inlet") == 0)
        return true;
    if (strcmp(kind, "exhaust") == 0 || strcmp(kind, "outlet") == 0)
        return false;
    (void)wt_labels_get(labels, "point", point, sizeof point);
    return has_word(point, "inlet") || has_word(point, "intake");
}

double wt_ashrae_outside_s(const int64_t *t_ns, const double *v, size_t n, double lo, double hi,
                           int64_t max_gap_ns)
{
    double s = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        int64_t d = t_ns[i + 1] - t_ns[i];
        if ((v[i] < lo || v[i] > hi) && d > 0 && d <= max_gap_ns)
            s += (double)d / 1e9;
    }
    return s;
}

struct sensor {
    char labels[WT_LABELS_LEN];
    bool seen;
    int64_t t_ns; /* the last reading */
    double v;
    double outside_s[2]; /* recommended, allowable */
};

struct wt_ashrae {
    struct wt_hub *hub;
    struct wt_ashrae_envelope env;
    int slot;
    int64_t interval_ns, max_gap_ns;
    pthread_mutex_t mu; /* guards the sensors */
    struct sensor *s[MAX_SENSORS];
    size_t n;
    bool said_full;
    pthread_t th;
    bool started, stop, present;
    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv;
};

static struct sensor *find(struct wt_ashrae *a, const char *labels)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->s[i]->labels, labels) == 0)
            return a->s[i];
    if (a->n == MAX_SENSORS) {
        if (!a->said_full)
            wt_warn("ashrae", "more than %d inlet sensors: the rest are not judged", MAX_SENSORS);
        a->said_full = true;
        return NULL;
    }
    struct sensor *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    snprintf(s->labels, sizeof s->labels, "%s", labels);
    a->s[a->n++] = s;
    return s;
}

void wt_ashrae_feed(struct wt_ashrae *a, const char *collector, const struct wt_batch *b)
{
    if (strcmp(collector, SLOT_NAME) == 0)
        return;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        struct sensor *s;
        if (r->metric != WT_M_FAC_TEMP_C || !wt_ashrae_is_inlet(r->labels) ||
            !(s = find(a, r->labels)))
            continue;
        if (s->seen && r->t_ns > s->t_ns) {
            const int64_t t[2] = {s->t_ns, r->t_ns};
            const double v[2] = {s->v, r->value};
            s->outside_s[0] +=
                wt_ashrae_outside_s(t, v, 2, a->env.rec_lo_c, a->env.rec_hi_c, a->max_gap_ns);
            s->outside_s[1] +=
                wt_ashrae_outside_s(t, v, 2, a->env.allow_lo_c, a->env.allow_hi_c, a->max_gap_ns);
        }
        if (!s->seen || r->t_ns >= s->t_ns) {
            s->seen = true;
            s->t_ns = r->t_ns;
            s->v = r->value;
        }
    }
    pthread_mutex_unlock(&a->mu);
}

static void sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    wt_ashrae_feed(ctx, collector, b);
}

int wt_ashrae_batch(struct wt_ashrae *a, int64_t now_ns, struct wt_batch *out)
{
    static const char *const env_names[2] = {"recommended", "allowable"};
    int rc = 0;
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < a->n && rc == 0; i++) {
        const struct sensor *s = a->s[i];
        double lo[2] = {a->env.rec_lo_c, a->env.allow_lo_c};
        double hi[2] = {a->env.rec_hi_c, a->env.allow_hi_c};
        for (int k = 0; k < 2 && rc == 0; k++) {
            char lb[WT_LABELS_LEN];
            memcpy(lb, s->labels, sizeof lb);
            if (wt_labels_add(lb, sizeof lb, "envelope", env_names[k]) != 0)
                continue;
            bool within = s->v >= lo[k] && s->v <= hi[k];
            if ((rc = wt_batch_add(out, WT_M_INLET_OUTSIDE_S, lb, now_ns, s->outside_s[k])) == 0)
                rc = wt_batch_add(out, WT_M_INLET_COMPLIANT, lb, now_ns, within ? 1 : 0);
        }
    }
    pthread_mutex_unlock(&a->mu);
    return rc < 0 ? rc : 0;
}

static void *publisher(void *arg)
{
    struct wt_ashrae *a = arg;
    struct wt_batch b = {0};
    pthread_mutex_lock(&a->stop_mu);
    while (!a->stop) {
        pthread_mutex_unlock(&a->stop_mu);
        int64_t m0 = wt_now_mono_ns();
        wt_batch_clear(&b);
        int rc = wt_ashrae_batch(a, wt_now_real_ns(), &b);
        int64_t m1 = wt_now_mono_ns();
        /* present once there is an inlet sensor: a derived slot is no source of its own */
        pthread_mutex_lock(&a->mu);
        bool present = a->n > 0;
        pthread_mutex_unlock(&a->mu);
        if (present != a->present) {
            wt_hub_set_state(a->hub, a->slot, present, a->interval_ns);
            a->present = present;
        }
        if (present)
            wt_hub_publish(a->hub, a->slot, &b, rc == 0, (double)(m1 - m0) / 1e9, m1);
        int64_t until = m0 + a->interval_ns;
        struct timespec ts = {.tv_sec = until / WT_NS_PER_S, .tv_nsec = until % WT_NS_PER_S};
        pthread_mutex_lock(&a->stop_mu);
        while (!a->stop && wt_now_mono_ns() < until)
            pthread_cond_timedwait(&a->stop_cv, &a->stop_mu, &ts);
    }
    pthread_mutex_unlock(&a->stop_mu);
    wt_batch_free(&b);
    return NULL;
}

int wt_ashrae_open(const struct wt_config *cfg, enum wt_ashrae_class cls, struct wt_hub *hub,
                   struct wt_ashrae **out, struct wt_err *err)
{
    *out = NULL;
    struct wt_ashrae *a = calloc(1, sizeof *a);
    if (!a)
        return wt_err_set(err, "ashrae: out of memory"), -ENOMEM;
    a->hub = hub;
    a->env = wt_ashrae_envelope(cls);
    a->interval_ns = cfg->daemon.interval_ns > 0 ? cfg->daemon.interval_ns : WT_NS_PER_S;
    /* facility sensors are read every 5-10 s by default: a gap is more than 3 of their polls */
    int64_t slowest = cfg->collectors.redfish.interval_ns;
    if (cfg->collectors.snmp.interval_ns > slowest)
        slowest = cfg->collectors.snmp.interval_ns;
    if (cfg->collectors.modbus.interval_ns > slowest)
        slowest = cfg->collectors.modbus.interval_ns;
    a->max_gap_ns = 3 * (slowest > a->interval_ns ? slowest : a->interval_ns);
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->stop_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a->stop_cv, &ca);
    pthread_condattr_destroy(&ca);
    int rc;
    if (!hub) {
        *out = a;
        return 0;
    }
    a->slot = wt_hub_add_collector(hub, SLOT_NAME, a->interval_ns);
    if (a->slot < 0 || wt_hub_add_tick_sink(hub, sink, a) != 0) {
        rc = wt_err_set(err, "ashrae: no hub slot or sink left");
        goto fail;
    }
    if ((rc = pthread_create(&a->th, NULL, publisher, a)) != 0) {
        rc = -rc;
        wt_err_set(err, "ashrae: cannot start its thread: %s", strerror(-rc));
        goto fail;
    }
    a->started = true;
    *out = a;
    return 0;
fail:
    wt_ashrae_close(a);
    return rc;
}

void wt_ashrae_close(struct wt_ashrae *a)
{
    if (!a)
        return;
    /* Publishers that outlive the poll loop (the audit threads) no longer reach a. */
    wt_hub_remove_sink(a->hub, sink, a);
    if (a->started) {
        pthread_mutex_lock(&a->stop_mu);
        a->stop = true;
        pthread_cond_broadcast(&a->stop_cv);
        pthread_mutex_unlock(&a->stop_mu);
        pthread_join(a->th, NULL);
        wt_hub_set_state(a->hub, a->slot, false, a->interval_ns);
    }
    for (size_t i = 0; i < a->n; i++)
        free(a->s[i]);
    pthread_cond_destroy(&a->stop_cv);
    pthread_mutex_destroy(&a->stop_mu);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
