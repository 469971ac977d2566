/* SPDX-License-Identifier: MIT */
/*
 * The weekly review's daemon side (review.h): its configuration, the weekly files, and the
 * thread that writes the week just ended. The review itself is computed in review.c.
 */
#include "audit/review.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/carbon.h"
#include "audit/inference_kpi.h"
#include "audit/jobs.h"
#include "audit/kpi.h"
#include "audit/topology.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/durable.h"
#include "core/hub.h"
#include "core/log.h"
#include "core/yget.h"
#include "store/query.h"
#include "store/store.h"

#define DAY_NS (86400LL * WT_NS_PER_S)
#define WEEK_NS (7 * DAY_NS)

int wt_review_conf_parse(const char *file, const struct wt_ynode *node, struct wt_review_conf *c,
                         struct wt_err *err)
{
    static const char *const keys[] = {"weekly_dir", "weeks", "check_interval", NULL};
    struct wt_yget g = {file, err};
    int64_t weeks = 4;
    c->weekly_dir[0] = '\0';
    c->weeks = 4;
    c->check_interval_ns = 3600 * WT_NS_PER_S;
    if (!node)
        return 0;
    int rc = wt_y_map(&g, node, "review", keys);
    if (rc == 0)
        rc = wt_y_keys(&g, node, "review", keys);
    if (rc == 0)
        rc = wt_y_string(&g, node, "review", "weekly_dir", false, c->weekly_dir,
                         sizeof c->weekly_dir);
    if (rc == 0)
        rc = wt_y_int(&g, node, "review", "weeks", 1, WT_REVIEW_MAX_WEEKS, &weeks);
    if (rc == 0)
        rc = wt_y_duration_in(&g, node, "review", "check_interval", false, WT_NS_PER_S, DAY_NS,
                              "the daemon looks for a week to review at this pace; more than a "
                              "day late is no weekly review",
                              &c->check_interval_ns);
    c->weeks = (int)weeks;
    return rc;
}

int wt_review_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_review_conf c;
    return wt_review_conf_parse(file, node, &c, err);
}

void wt_review_digest(const void *data, size_t n, char out[17])
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int wt_review_write_week(struct wt_store *st, const struct wt_config *cfg,
                         const struct wt_topology *t, const char *dir, int64_t week_start_ns,
                         int nweeks, size_t *findings, struct wt_err *err)
{
    struct wt_review *r = malloc(sizeof *r);
    char path[512], *s = NULL;
    cJSON *j = NULL;
    int rc;
    if (!r)
        return -ENOMEM;
    if ((rc = wt_review_compute(st, cfg, t, week_start_ns, nweeks, r, err)) != 0)
        goto out;
    *findings = r->nfindings;
    snprintf(path, sizeof path, "%s/review-%04d-W%02d.json", dir, r->year, r->week);
    if (!(j = wt_review_json(r)) || !(s = cJSON_Print(j))) {
        rc = -ENOMEM;
        goto out;
    }
    rc = wt_durable_replace(path, s, strlen(s), "the weekly review", err);
out:
    free(s);
    cJSON_Delete(j);
    free(r);
    return rc;
}

struct wt_review_daemon {
    const struct wt_config *cfg;
    struct wt_review_conf conf;
    struct wt_topology *t;
    struct wt_store *st; /* NULL until a weekly file is due */
    struct wt_hub *hub;
    int slot;
    char digest[17];
    char week[16]; /* the latest week reviewed, for wattage_review_findings */
    double findings;
    pthread_t th;
    bool started, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static bool file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Reviews the last whole week when its file is missing and the week ended an hour ago. */
static void weekly(struct wt_review_daemon *d, int64_t now)
{
    int y, w;
    int64_t this_week;
    wt_review_week_of(now - 3600 * WT_NS_PER_S, &y, &w, &this_week);
    int64_t last = this_week - WEEK_NS;
    wt_review_week_of(last, &y, &w, &last);
    char path[512], week[16];
    snprintf(week, sizeof week, "%04d-W%02d", y, w);
    snprintf(path, sizeof path, "%s/review-%s.json", d->conf.weekly_dir, week);
    if (file_exists(path) || strcmp(d->week, week) == 0)
        return;
    struct wt_err err = {{0}};
    if (mkdir(d->conf.weekly_dir, 0750) != 0 && errno != EEXIST)
        wt_warn("review", "review.weekly_dir %s: cannot create it: %s", d->conf.weekly_dir,
                strerror(errno)); /* the write below says it again, once a week */
    struct wt_store_opts o = {.create = false};
    if (!d->st && wt_store_open(d->cfg->store.path, &o, &d->st, &err) != 0) {
        wt_warn("review", "no weekly review: %s", err.msg);
        return;
    }
    size_t n = 0;
    if (wt_review_write_week(d->st, d->cfg, d->t, d->conf.weekly_dir, last, d->conf.weeks, &n,
                             &err) != 0) {
        wt_warn("review", "the weekly review of %s failed: %s", week, err.msg);
        snprintf(d->week, sizeof d->week, "%s", week); /* said once a week, not every check */
        d->findings = NAN;
        return;
    }
    snprintf(d->week, sizeof d->week, "%s", week);
    d->findings = (double)n;
    wt_info("review", "weekly review written: %s findings=%zu", path, n);
}

static void *daemon_main(void *arg)
{
    struct wt_review_daemon *d = arg;
    struct wt_batch b = {0};
    char lb[WT_LABELS_LEN];
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        pthread_mutex_unlock(&d->mu);
        int64_t m0 = wt_now_mono_ns(), now = wt_now_real_ns();
        if (d->conf.weekly_dir[0])
            weekly(d, now);
        wt_batch_clear(&b);
        bool ok = wt_labels(lb, sizeof lb, "digest", d->digest, NULL) == 0 &&
                  wt_batch_add(&b, WT_M_CONFIG_INFO, lb, now, 1) == 0;
        if (ok && d->week[0] && !isnan(d->findings))
            ok = wt_labels(lb, sizeof lb, "week", d->week, NULL) == 0 &&
                 wt_batch_add(&b, WT_M_REVIEW_FINDINGS, lb, now, d->findings) == 0;
        int64_t m1 = wt_now_mono_ns();
        wt_hub_publish(d->hub, d->slot, &b, ok, (double)(m1 - m0) / 1e9, m1);
        int64_t until = m0 + d->conf.check_interval_ns;
        struct timespec ts = {.tv_sec = until / WT_NS_PER_S, .tv_nsec = until % WT_NS_PER_S};
        pthread_mutex_lock(&d->mu);
        while (!d->stop && wt_now_mono_ns() < until)
            pthread_cond_timedwait(&d->cv, &d->mu, &ts);
    }
    pthread_mutex_unlock(&d->mu);
    wt_batch_free(&b);
    return NULL;
}

/* The digest of the configuration file (its bytes), or of nothing for the built-in defaults. */
static void config_digest(const struct wt_config *cfg, char out[17])
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = cfg->source[0] ? fopen(cfg->source, "rb") : NULL;
    if (f) {
        FILE *m = open_memstream(&buf, &len);
        char chunk[4096];
        size_t k;
        while (m && (k = fread(chunk, 1, sizeof chunk, f)) > 0)
            fwrite(chunk, 1, k, m);
        if (m)
            fclose(m);
        fclose(f);
    }
    wt_review_digest(buf ? buf : "", buf ? len : 0, out);
    free(buf);
}

int wt_review_daemon_open(const struct wt_config *cfg, struct wt_hub *hub,
                          struct wt_review_daemon **out, struct wt_err *err)
{
    struct wt_review_daemon *d = calloc(1, sizeof *d);
    int rc;
    *out = NULL;
    if (!d)
        return -ENOMEM;
    pthread_mutex_init(&d->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->cv, &ca);
    pthread_condattr_destroy(&ca);
    d->cfg = cfg;
    d->hub = hub;
    d->findings = NAN;
    if ((rc = wt_review_conf_parse(wt_config_file(cfg), wt_config_section(cfg, "review"), &d->conf,
                                   err)) != 0 ||
        (rc = wt_topology_load(cfg, &d->t, err)) != 0)
        goto fail;
    config_digest(cfg, d->digest);
    d->slot = wt_hub_add_collector(hub, "review", d->conf.check_interval_ns);
    if (d->slot < 0) {
        rc = wt_err_set(err, "review: no hub slot left");
        goto fail;
    }
    /* Not a collector: retired at once, so /healthz does not count it (a daemon that collects
     * nothing stays unhealthy) and no wattage_collector_up{collector="review"} says it is down;
     * what it publishes still reaches the snapshot (/metrics, the alert engine) and the store. */
    wt_hub_retire(hub, d->slot);
    if ((rc = pthread_create(&d->th, NULL, daemon_main, d)) != 0) {
        wt_err_set(err, "review: cannot start its thread: %s", strerror(rc));
        rc = -rc;
        goto fail;
    }
    d->started = true;
    *out = d;
    return 0;
fail:
    wt_review_daemon_close(d);
    return rc;
}

void wt_review_daemon_close(struct wt_review_daemon *d)
{
    if (!d)
        return;
    if (d->started) {
        pthread_mutex_lock(&d->mu);
        d->stop = true;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->th, NULL);
        wt_hub_retire(d->hub, d->slot); /* its gauges leave /metrics */
    }
    wt_store_close(d->st);
    free(d->t);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d);
}
