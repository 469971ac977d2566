/* SPDX-License-Identifier: MIT */
/*
 * The alert engine (see engine.h): the daemon's part around the evaluator (alert/eval.c, which
 * turns rules and detector findings into alert instances with Prometheus' states): an evaluation
 * thread woken by the hub, the log, delivery, capping, /metrics and GET /api/v1/alerts.
 */
#include "alert/engine.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/detect.h"
#include "alert/eval.h"
#include "alert/notify.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/family.h"
#include "core/log.h"

#define MOD "alert"

/* ---- the daemon's engine ---- */

struct wt_alerts {
    /* The wake-up: the hub's sink only ever takes wake_mu, never waits for an evaluation. */
    pthread_mutex_t wake_mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    bool stop, ready;  /* ready: the tick's batches are in (gather) */
    int64_t wake_ns;   /* the daemon's interval */
    int64_t last_eval; /* CLOCK_MONOTONIC ns of the last evaluation's start */
    uint64_t evaluations;
    struct wt_alerts_gather gather;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu; /* guards everything below */
    struct wt_hub *hub;
    struct wt_alerts_config *cfg;
    const struct wt_config *wcfg; /* for reopening capping; valid while run.c's lives */
    struct wt_alert_eval *e;
    struct wt_notify *notify;
    struct wt_cap *cap;
    int64_t interval_ns;
    struct wt_batch snap;
    struct wt_hub_collector cols[64];
    /* transitions of the tick in progress, handed on after the evaluation */
    struct wt_alert *pend;
    size_t npend, pend_cap;
    /* for GET /api/v1/alerts (wt_alerts_list_json) */
    struct wt_alert *list;
    size_t list_cap;
    /* delivery's health, read each evaluation (WattageAlertDeliveryFailing) */
    struct wt_notify_health health[4];
    /* the delivery families' providers: which family each is */
    struct delivery_family {
        struct wt_alerts *x;
        enum wt_notify_family which;
    } dfam[WT_NOTIFY_FAM_COUNT];
};

void wt_alert_log_transition(const struct wt_alert *a, enum wt_alert_state from)
{
    static const enum wt_log_level level[WT_ALERT_TO_COUNT] = {
        [WT_ALERT_TO_PENDING] = WT_LOG_DEBUG,
        [WT_ALERT_TO_CLEARED] = WT_LOG_DEBUG,
        [WT_ALERT_TO_FIRING] = WT_LOG_WARN,
        [WT_ALERT_TO_RESOLVED] = WT_LOG_INFO,
    };
    enum wt_alert_to t = wt_alert_transition_to(a, from);
    if (level[t] < wt_log_get_level())
        return; /* not even the value formatted: pending comes and goes every few seconds */
    char v[32];
    snprintf(v, sizeof v, "%.6g", a->value);
    wt_log(level[t], MOD, "%s alertname=%s severity=%s labels={%s} value=%s summary=\"%s\"",
           t == WT_ALERT_TO_CLEARED ? "cleared before firing" : wt_alert_to_name(t), a->name,
           wt_severity_name(a->severity), a->labels, v, a->summary);
}

static void on_transition(void *ctx, const struct wt_alert *a, enum wt_alert_state from)
{
    struct wt_alerts *x = ctx;
    wt_alert_log_transition(a, from);
    if (a->state != WT_ALERT_FIRING && a->state != WT_ALERT_RESOLVED)
        return;
    if (x->npend == x->pend_cap) {
        size_t nc = x->pend_cap ? 2 * x->pend_cap : 16;
        struct wt_alert *p = realloc(x->pend, nc * sizeof *p);
        if (!p) {
            wt_error(MOD, "out of memory: transition of %s not delivered", a->name);
            return;
        }
        x->pend = p;
        x->pend_cap = nc;
    }
    x->pend[x->npend++] = *a;
}

/* Hands the tick's transitions to delivery and capping (x->mu held: they never block long). */
static void hand_on(struct wt_alerts *x)
{
    for (size_t i = 0; i < x->npend; i++) {
        wt_notify_post(x->notify, &x->pend[i]);
        if (x->pend[i].action == WT_ACTION_CAP)
            wt_cap_apply(x->cap, &x->pend[i]);
    }
    x->npend = 0;
}

static void evaluate(struct wt_alerts *x)
{
    if (wt_hub_snapshot(x->hub, &x->snap) != 0)
        return;
    size_t nc = wt_hub_collectors(x->hub, x->cols, sizeof x->cols / sizeof x->cols[0]);
    if (nc > sizeof x->cols / sizeof x->cols[0])
        nc = sizeof x->cols / sizeof x->cols[0];
    struct wt_alert_input in = {.snap = &x->snap,
                                .cols = x->cols,
                                .ncols = nc,
                                .now_ns = wt_now_real_ns(),
                                .now_mono = wt_now_mono_ns()};
    pthread_mutex_lock(&x->mu);
    in.delivery = x->health;
    in.ndelivery = wt_notify_health(x->notify, x->health, sizeof x->health / sizeof x->health[0]);
    if (in.ndelivery > sizeof x->health / sizeof x->health[0])
        in.ndelivery = sizeof x->health / sizeof x->health[0];
    wt_alert_eval_tick(x->e, &in, on_transition, x);
    hand_on(x);
    if (x->cap && x->cfg->enabled)
        wt_cap_budget(x->cap, &x->snap, in.now_ns);
    pthread_mutex_unlock(&x->mu);
}

bool wt_alerts_gather_batch(struct wt_alerts_gather *g, const char *collector, int64_t now_ns,
                            int64_t interval_ns)
{
    size_t i = 0;
    while (i < g->n && strcmp(g->src[i].name, collector) != 0)
        i++;
    if (i == g->n) {
        if (g->n == WT_ALERTS_GATHER_MAX)
            return true;
        memset(&g->src[i], 0, sizeof g->src[i]);
        snprintf(g->src[i].name, sizeof g->src[i].name, "%s", collector);
        g->n++;
    }
    g->src[i].regular = g->src[i].last_ns && now_ns - g->src[i].last_ns <= interval_ns * 3 / 2;
    g->src[i].last_ns = now_ns;
    g->src[i].fresh = true;
    for (size_t k = 0; k < g->n; k++) {
        int64_t age = now_ns - g->src[k].last_ns;
        /* Waited for: regular, and not a tick late already (it would have missed this one). */
        if (!g->src[k].regular || age > interval_ns * 3 / 2)
            continue;
        /* In: a batch since the last evaluation, and of this tick (within half an interval),
         * not one left from the tick before. */
        if (!g->src[k].fresh || age >= interval_ns / 2)
            return false;
    }
    return true;
}

void wt_alerts_gather_evaluated(struct wt_alerts_gather *g)
{
    for (size_t k = 0; k < g->n; k++)
        g->src[k].fresh = false;
}

/*
 * One evaluation per tick, woken by the batch that completes it (wt_alerts_gather). With a
 * collector late, or no batch at all (data gaps show as the absence of batches), it evaluates
 * anyway a quarter interval after the tick it expected.
 */
static void *run(void *arg)
{
    struct wt_alerts *x = arg;
    pthread_setname_np(pthread_self(), "wt-alerts");
    pthread_mutex_lock(&x->wake_mu);
    x->last_eval = wt_now_mono_ns();
    while (!x->stop) {
        int64_t due = x->last_eval + x->wake_ns + x->wake_ns / 4;
        if (!x->ready) {
            struct timespec ts = {.tv_sec = due / WT_NS_PER_S, .tv_nsec = due % WT_NS_PER_S};
            pthread_cond_timedwait(&x->cv, &x->wake_mu, &ts);
        }
        if (x->stop)
            break;
        int64_t now = wt_now_mono_ns();
        if (!x->ready && now < due)
            continue; /* a spurious wake-up */
        x->ready = false;
        x->last_eval = now;
        x->evaluations++;
        wt_alerts_gather_evaluated(&x->gather);
        pthread_mutex_unlock(&x->wake_mu);
        evaluate(x);
        pthread_mutex_lock(&x->wake_mu);
    }
    pthread_mutex_unlock(&x->wake_mu);
    return NULL;
}

static void sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    struct wt_alerts *x = ctx;
    (void)b;
    pthread_mutex_lock(&x->wake_mu);
    /* Once ready, the thread is woken already (a signal per batch would wake it again). */
    if (wt_alerts_gather_batch(&x->gather, collector, wt_now_mono_ns(), x->wake_ns) && !x->ready) {
        x->ready = true;
        pthread_cond_signal(&x->cv);
    }
    pthread_mutex_unlock(&x->wake_mu);
}

uint64_t wt_alerts_evaluations(struct wt_alerts *x)
{
    pthread_mutex_lock(&x->wake_mu);
    uint64_t n = x->evaluations;
    pthread_mutex_unlock(&x->wake_mu);
    return n;
}

int wt_alerts_list_json(struct wt_alerts *x, char **json)
{
    pthread_mutex_lock(&x->mu);
    size_t n = wt_alert_eval_list(x->e, NULL, 0);
    if (n > x->list_cap) {
        struct wt_alert *l = realloc(x->list, n * sizeof *l);
        if (!l) {
            pthread_mutex_unlock(&x->mu);
            return -ENOMEM;
        }
        x->list = l;
        x->list_cap = n;
    }
    n = wt_alert_eval_list(x->e, x->list, n);
    *json = wt_alert_json(x->list, n);
    pthread_mutex_unlock(&x->mu);
    return *json ? 0 : -ENOMEM;
}

static const char fam_name[] = "wattage_alerts";
static const char fam_help[] =
    "1 for each firing alert (rules of alerts.rules and the built-in detectors), labelled with "
    "alertname, severity and the alert's labels";

static int family(void *ctx, struct wt_expo_family *fam)
{
    struct wt_alerts *x = ctx;
    size_t counts[4];
    int rc = 0;
    memset(fam, 0, sizeof *fam);
    fam->name = fam_name;
    fam->help = fam_help;
    fam->type = WT_GAUGE;
    pthread_mutex_lock(&x->mu);
    wt_alert_eval_counts(x->e, counts);
    size_t n = counts[WT_ALERT_FIRING];
    if (n) {
        fam->s = calloc(n, sizeof *fam->s);
        if (!fam->s)
            rc = -ENOMEM;
    }
    for (size_t i = 0, k = 0; fam->s && i < x->e->n && k < n; i++) {
        const struct wt_alert *a = &x->e->in[i].a;
        if (a->state != WT_ALERT_FIRING)
            continue;
        char *l = fam->s[k].labels;
        size_t ln = sizeof fam->s[k].labels;
        size_t pos = 0;
        char key[64], val[WT_LABELS_LEN];
        if (wt_labels(l, ln, "alertname", a->name, "severity", wt_severity_name(a->severity),
                      NULL) != 0)
            continue;
        while (wt_labels_next(a->labels, &pos, key, sizeof key, val, sizeof val) == 1)
            if (wt_labels_add(l, ln, key, val) != 0)
                break;
        fam->s[k++].value = 1;
        fam->n = k;
    }
    pthread_mutex_unlock(&x->mu);
    return rc;
}

static int family_transitions(void *ctx, struct wt_expo_family *fam)
{
    struct wt_alerts *x = ctx;
    int rc = 0;
    memset(fam, 0, sizeof *fam);
    fam->name = "wattage_alert_transitions_total";
    fam->help = "Alert state transitions since the daemon started, per alertname, by to: pending, "
                "cleared (pending, then false before its for: never fired), firing, resolved";
    fam->type = WT_COUNTER;
    pthread_mutex_lock(&x->mu);
    size_t n = wt_alert_eval_transitions(x->e, NULL, 0);
    struct wt_alert_tcount *tc = n ? calloc(n, sizeof *tc) : NULL;
    if (n && tc)
        fam->s = calloc(n * WT_ALERT_TO_COUNT, sizeof *fam->s);
    if (n && !fam->s) {
        rc = -ENOMEM;
    } else {
        n = wt_alert_eval_transitions(x->e, tc, n);
        for (size_t i = 0; i < n; i++)
            for (int t = 0; t < WT_ALERT_TO_COUNT; t++)
                if (wt_labels(fam->s[fam->n].labels, sizeof fam->s[fam->n].labels, "alertname",
                              tc[i].name, "to", wt_alert_to_name((enum wt_alert_to)t), NULL) == 0)
                    fam->s[fam->n++].value = (double)tc[i].n[t];
    }
    pthread_mutex_unlock(&x->mu);
    free(tc);
    return rc;
}

void wt_alerts_transition_totals(struct wt_alerts *x, uint64_t out[WT_ALERT_TO_COUNT])
{
    memset(out, 0, WT_ALERT_TO_COUNT * sizeof out[0]);
    if (!x)
        return;
    pthread_mutex_lock(&x->mu);
    for (size_t i = 0; i < x->e->ntc; i++)
        for (int t = 0; t < WT_ALERT_TO_COUNT; t++)
            out[t] += x->e->tc[i].n[t];
    pthread_mutex_unlock(&x->mu);
}

/* The capper's families, through the engine: the capper is reopened on reload. */
static int family_cap_limits(void *ctx, struct wt_expo_family *fam)
{
    struct wt_alerts *x = ctx;
    pthread_mutex_lock(&x->mu);
    int rc = wt_cap_family_limits(x->cap, fam);
    pthread_mutex_unlock(&x->mu);
    return rc;
}

static int family_cap_actions(void *ctx, struct wt_expo_family *fam)
{
    struct wt_alerts *x = ctx;
    pthread_mutex_lock(&x->mu);
    int rc = wt_cap_family_actions(x->cap, fam);
    pthread_mutex_unlock(&x->mu);
    return rc;
}

static int family_idle_limits(void *ctx, struct wt_expo_family *fam)
{
    struct wt_alerts *x = ctx;
    pthread_mutex_lock(&x->mu);
    int rc = wt_cap_family_idle_limits(x->cap, fam);
    pthread_mutex_unlock(&x->mu);
    return rc;
}

static int family_idle_saving(void *ctx, struct wt_expo_family *fam)
{
    struct wt_alerts *x = ctx;
    pthread_mutex_lock(&x->mu);
    int rc = wt_cap_family_idle_saving(x->cap, fam);
    pthread_mutex_unlock(&x->mu);
    return rc;
}

void wt_alerts_jobs_started(void *ctx, const char (*gpus)[WT_JOBS_GPU_LEN], size_t n)
{
    struct wt_alerts *x = ctx;
    if (!x)
        return;
    pthread_mutex_lock(&x->mu);
    wt_cap_jobs_started(x->cap, gpus, n);
    pthread_mutex_unlock(&x->mu);
}

/* Delivery's families (notify.h), through the engine: delivery is reopened on reload. */
static int family_delivery(void *ctx, struct wt_expo_family *fam)
{
    struct delivery_family *f = ctx;
    pthread_mutex_lock(&f->x->mu);
    int rc = wt_notify_family(f->x->notify, f->which, wt_now_mono_ns(), fam);
    pthread_mutex_unlock(&f->x->mu);
    return rc;
}

bool wt_alerts_delivery_failing(struct wt_alerts *x, char *why, size_t n)
{
    int64_t since;
    if (!x)
        return false;
    pthread_mutex_lock(&x->mu);
    bool failing = wt_notify_failing(x->notify, wt_now_mono_ns(), &since, why, n);
    pthread_mutex_unlock(&x->mu);
    return failing;
}

static int family_cap_reasons(void *ctx, struct wt_expo_family *fam)
{
    struct wt_alerts *x = ctx;
    pthread_mutex_lock(&x->mu);
    int rc = wt_cap_family_reasons(x->cap, fam);
    pthread_mutex_unlock(&x->mu);
    return rc;
}

static int family_cap_left(void *ctx, struct wt_expo_family *fam)
{
    struct wt_alerts *x = ctx;
    pthread_mutex_lock(&x->mu);
    int rc = wt_cap_family_left_capped(x->cap, fam);
    pthread_mutex_unlock(&x->mu);
    return rc;
}

/* One provider into out when there is room. */
static size_t put(struct wt_alerts_family *out, size_t cap, size_t k, wt_alerts_family_fn fn,
                  void *ctx)
{
    if (k < cap) {
        out[k].fn = fn;
        out[k].ctx = ctx;
    }
    return k + 1;
}

size_t wt_alerts_families(struct wt_alerts *x, enum wt_alerts_fam_group g,
                          struct wt_alerts_family *out, size_t cap)
{
    size_t k = 0;
    switch (g) {
    case WT_ALERTS_FAMS_ALERTS:
        k = put(out, cap, k, family, x);
        k = put(out, cap, k, family_transitions, x);
        break;
    case WT_ALERTS_FAMS_DELIVERY:
        for (int i = 0; i < WT_NOTIFY_FAM_COUNT; i++) {
            x->dfam[i].x = x;
            x->dfam[i].which = (enum wt_notify_family)i;
            k = put(out, cap, k, family_delivery, &x->dfam[i]);
        }
        break;
    case WT_ALERTS_FAMS_CAP:
        if (x->cap) {
            k = put(out, cap, k, family_cap_limits, x);
            k = put(out, cap, k, family_cap_actions, x);
            k = put(out, cap, k, family_idle_limits, x);
            k = put(out, cap, k, family_idle_saving, x);
        }
        break;
    case WT_ALERTS_FAMS_CAP_REASONS:
        if (x->cap) {
            k = put(out, cap, k, family_cap_reasons, x);
            k = put(out, cap, k, family_cap_left, x);
        }
        break;
    }
    return k;
}

static int load(const struct wt_config *cfg, struct wt_alerts_config *out, struct wt_err *err)
{
    return wt_alerts_config_parse(wt_config_file(cfg), wt_config_section(cfg, "alerts"), out, err);
}

static void log_config(const struct wt_alerts_config *c)
{
    if (!c->enabled) {
        wt_info(MOD, "alerts off (alerts.enabled: false)");
        return;
    }
    wt_info(MOD,
            "alerts on: rules=%zu throttle_forecast=%d throttling=%d idle_burn=%d impossible=%d "
            "stuck=%d sibling=%d data_gap=%d delivery_failing=%d alertmanager=%s webhook=%s "
            "exec=%s",
            c->nrules, c->throttle_forecast.enabled, c->throttling.enabled, c->idle_burn.enabled,
            c->impossible.enabled, c->stuck.enabled, c->sibling.enabled, c->data_gap.enabled,
            c->delivery_failing.enabled, c->alertmanager.url[0] ? c->alertmanager.url : "-",
            c->webhook.url[0] ? c->webhook.url : "-", c->exec.command[0] ? "set" : "-");
}

void wt_alerts_close(struct wt_alerts *x)
{
    if (!x)
        return;
    /* No batch reaches x from here on, whoever still publishes (core/hub.h). */
    wt_hub_remove_sink(x->hub, sink, x);
    if (x->started) {
        pthread_mutex_lock(&x->wake_mu);
        x->stop = true;
        pthread_cond_signal(&x->cv);
        pthread_mutex_unlock(&x->wake_mu);
        pthread_join(x->thread, NULL);
    }
    wt_cap_close(x->cap); /* restores every limit it changed */
    wt_notify_close(x->notify);
    wt_alert_eval_free(x->e);
    wt_batch_free(&x->snap);
    free(x->cfg);
    free(x->pend);
    free(x->list);
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->wake_mu);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

int wt_alerts_open(const struct wt_config *cfg, struct wt_hub *hub, struct wt_alerts **out,
                   struct wt_err *err)
{
    struct wt_alerts *x = calloc(1, sizeof *x);
    int rc = -ENOMEM;
    *out = NULL;
    if (!x)
        return wt_err_set(err, "alerts: out of memory"), -ENOMEM;
    pthread_mutex_init(&x->mu, NULL);
    pthread_mutex_init(&x->wake_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->cv, &ca);
    pthread_condattr_destroy(&ca);
    x->hub = hub;
    x->wcfg = cfg;
    x->interval_ns = cfg->daemon.interval_ns > 0 ? cfg->daemon.interval_ns : WT_NS_PER_S;
    x->wake_ns = x->interval_ns;
    if (!(x->cfg = malloc(sizeof *x->cfg))) {
        wt_err_set(err, "alerts: out of memory");
        goto fail;
    }
    if ((rc = load(cfg, x->cfg, err)) != 0)
        goto fail;
    if ((rc = wt_alert_eval_new(x->cfg, x->interval_ns, &x->e)) != 0) {
        wt_err_set(err, "alerts: out of memory");
        goto fail;
    }
    if (x->cfg->enabled && (rc = wt_notify_open(x->cfg, &x->notify, err)) != 0)
        goto fail;
    if (x->cfg->enabled && (rc = wt_cap_open(cfg, x->cfg, &x->cap, err)) != 0)
        goto fail;
    if (!x->cfg->enabled)
        wt_cap_recover(cfg, x->cfg); /* the caps an earlier run left are put right all the same */
    if ((rc = wt_hub_add_tick_sink(hub, sink, x)) != 0) {
        wt_err_set(err, "alerts: cannot register with the hub (%s)", strerror(-rc));
        goto fail;
    }
    if ((rc = -pthread_create(&x->thread, NULL, run, x)) != 0) {
        wt_err_set(err, "alerts: cannot start the evaluation thread (%s)", strerror(-rc));
        goto fail;
    }
    x->started = true;
    log_config(x->cfg);
    *out = x;
    return 0;
fail:
    wt_alerts_close(x);
    return rc ? rc : -EINVAL;
}

int wt_alerts_reload(struct wt_alerts *x, const struct wt_config *cfg, struct wt_err *err)
{
    struct wt_alerts_config *next = malloc(sizeof *next);
    int rc;
    if (!next)
        return wt_err_set(err, "alerts: out of memory"), -ENOMEM;
    if ((rc = load(cfg, next, err)) != 0) {
        free(next);
        return rc;
    }
    int64_t interval = cfg->daemon.interval_ns > 0 ? cfg->daemon.interval_ns : WT_NS_PER_S;
    pthread_mutex_lock(&x->mu);
    struct wt_alerts_config *old = x->cfg;
    /* Delivery and capping follow their settings: reopened when those changed. */
    bool notify_changed =
        memcmp(&old->alertmanager, &next->alertmanager, sizeof old->alertmanager) != 0 ||
        memcmp(&old->webhook, &next->webhook, sizeof old->webhook) != 0 ||
        memcmp(&old->exec, &next->exec, sizeof old->exec) != 0 ||
        memcmp(&old->delivery, &next->delivery, sizeof old->delivery) != 0 ||
        old->enabled != next->enabled;
    bool cap_changed = old->power_budget_watts != next->power_budget_watts ||
                       strcmp(old->power_budget_meter, next->power_budget_meter) != 0 ||
                       old->budget_clear_share != next->budget_clear_share ||
                       old->dry_run != next->dry_run || old->enabled != next->enabled ||
                       old->nrules != next->nrules ||
                       memcmp(&old->idle_policy, &next->idle_policy, sizeof old->idle_policy) != 0;
    for (size_t i = 0; !cap_changed && i < next->nrules; i++)
        cap_changed = old->rules[i].action != next->rules[i].action ||
                      old->rules[i].cap_watts != next->rules[i].cap_watts ||
                      old->rules[i].cap_share != next->rules[i].cap_share ||
                      strcmp(old->rules[i].name, next->rules[i].name) != 0;
    rc = wt_alert_eval_reconfigure(x->e, next, interval, wt_now_real_ns(), on_transition, x);
    if (rc) {
        pthread_mutex_unlock(&x->mu);
        free(next);
        return wt_err_set(err, "alerts: out of memory"), rc;
    }
    hand_on(x); /* the resolutions of removed rules, to the old channels */
    x->cfg = next;
    x->interval_ns = interval;
    if (notify_changed) {
        wt_notify_close(x->notify);
        x->notify = NULL;
        if (next->enabled && wt_notify_open(next, &x->notify, err) != 0)
            wt_error(MOD, "%s", err->msg);
        /* A new delivery knows no alert: what still fires is posted again. */
        for (size_t i = 0; x->notify && i < x->e->n; i++)
            if (x->e->in[i].a.state == WT_ALERT_FIRING)
                wt_notify_post(x->notify, &x->e->in[i].a);
    }
    if (cap_changed) {
        wt_cap_close(x->cap);
        x->cap = NULL;
        if (next->enabled && wt_cap_open(cfg, next, &x->cap, err) != 0)
            wt_error(MOD, "%s", err->msg);
        /* The cap alerts still firing hold their GPUs again. */
        for (size_t i = 0; x->cap && i < x->e->n; i++)
            if (x->e->in[i].a.state == WT_ALERT_FIRING && x->e->in[i].a.action == WT_ACTION_CAP)
                wt_cap_apply(x->cap, &x->e->in[i].a);
    }
    x->wcfg = cfg;
    pthread_mutex_unlock(&x->mu);
    pthread_mutex_lock(&x->wake_mu);
    x->wake_ns = interval;
    pthread_mutex_unlock(&x->wake_mu);
    free(old);
    log_config(next);
    return 0;
}
