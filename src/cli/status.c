/* SPDX-License-Identifier: MIT */
/*
 * `wattage status [--json]`: one snapshot of every source, read directly (no daemon). Sources
 * whose figures are deltas (CPU utilization, RAPL power) are polled twice, a short time apart.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alert/alert.h"
#include "audit/dark.h"
#include "cli/cli.h"
#include "collect/collector.h"
#include "collect/rocm.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/hub.h"
#include "core/snapshot.h"
#include "serve/api_status.h"
#include "store/store.h"

#define MAX_SOURCES WT_HUB_MAX_COLLECTORS

struct source {
    const struct wt_collector_ops *ops;
    char name[32];
    int slot;
    void *state;
};
#define DELTA_WAIT_NS (250 * WT_NS_PER_MS)

/* The GPUs whose power limit is capped, by wattage (its record says) or by someone else. */
static void print_caps(const struct wt_config *cfg)
{
    struct wt_alerts_config *a = malloc(sizeof *a);
    struct wt_err err = {{0}};
    if (a &&
        wt_alerts_config_parse(wt_config_file(cfg), wt_config_section(cfg, "alerts"), a, &err) == 0)
        (void)wt_cap_report(cfg, a, stdout);
    free(a);
}

/* Dark power today (audit/dark.h), from the daemon's store when there is one; quiet otherwise. */
static void print_dark_today(const struct wt_config *cfg)
{
    struct wt_store_opts so = {.create = false};
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_dark_day *d = NULL;
    size_t n = 0;
    int64_t now = wt_now_real_ns(), day = 86400 * WT_NS_PER_S;
    if (!cfg->store.path[0] || access(cfg->store.path, R_OK) != 0 ||
        wt_store_open(cfg->store.path, &so, &st, &err) != 0)
        return;
    if (wt_dark_days(st, now - now % day, now, &d, &n) == 0 && n) {
        printf("\ndark power today (UTC, from %s):\n", cfg->store.path);
        for (size_t i = 0; i < n; i++)
            printf("GPU %s%s%s: %.3f kWh idle over %.1f h, idle power level %.1f W\n", d[i].gpu,
                   d[i].node[0] ? " on " : "", d[i].node, d[i].energy_j / 3.6e6, d[i].idle_s / 3600,
                   d[i].idle_s > 0 ? d[i].energy_j / d[i].idle_s : 0);
    }
    free(d);
    wt_store_close(st);
}

/*
 * Dark power as one snapshot sees it: idle now from the process list of this poll, for a GPU
 * collector's batch (collector "nvml" or "amd"); others are not fed.
 */
static void feed_dark(struct wt_dark *d, const char *collector, const struct wt_batch *b)
{
    bool amd = strcmp(collector, "amd") == 0;
    if (!amd && strcmp(collector, "nvml") != 0)
        return;
    struct wt_gpu_procs *procs = calloc(64, sizeof *procs);
    size_t np = 0;
    int64_t t = 0;
    bool have = procs && (amd ? wt_rocm_processes : wt_nvml_processes)(procs, 64, &np, &t) == 0;
    wt_dark_feed(d, collector, b, procs, have ? np : 0, have);
    free(procs);
}

/*
 * The same series as the daemon's (so status --json has the keys of /api/v1/status): idle now
 * from this snapshot, today's idle energy and level from the store when it has them (else what
 * this snapshot saw: nothing).
 */
static void publish_dark(const struct wt_config *cfg, struct wt_hub *hub, struct wt_dark *d)
{
    struct wt_batch b = {0};
    int64_t now = wt_now_real_ns(), day = 86400 * WT_NS_PER_S;
    if (wt_dark_batch(d, now, &b) != 0 || b.len == 0) {
        wt_batch_free(&b);
        return;
    }
    struct wt_store_opts so = {.create = false};
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_dark_day *dd = NULL;
    size_t n = 0;
    if (cfg->store.path[0] && access(cfg->store.path, R_OK) == 0 &&
        wt_store_open(cfg->store.path, &so, &st, &err) == 0 &&
        wt_dark_days(st, now - now % day, now, &dd, &n) == 0) {
        for (size_t i = 0; i < b.len; i++) {
            struct wt_reading *r = &b.r[i];
            char uuid[96];
            if ((r->metric != WT_M_GPU_IDLE_ENERGY_TODAY_J && r->metric != WT_M_GPU_IDLE_POWER_W) ||
                wt_labels_get(r->labels, "uuid", uuid, sizeof uuid) != 0)
                continue;
            for (size_t k = 0; k < n; k++)
                if (!dd[k].node[0] && strcmp(dd[k].uuid, uuid) == 0 && dd[k].idle_s > 0)
                    r->value = r->metric == WT_M_GPU_IDLE_ENERGY_TODAY_J
                                   ? dd[k].energy_j
                                   : dd[k].energy_j / dd[k].idle_s;
        }
    }
    free(dd);
    wt_store_close(st);
    int slot = wt_hub_add_collector(hub, "dark", cfg->daemon.interval_ns);
    if (slot >= 0) {
        wt_hub_set_state(hub, slot, true, cfg->daemon.interval_ns);
        wt_hub_publish(hub, slot, &b, true, 0, wt_now_mono_ns());
    }
    wt_batch_free(&b);
}

static const struct wt_cli_opt status_opts[] = {
    {"config", WT_OPT_CONFIG, "FILE", "the configuration (default " WT_DEFAULT_CONFIG ")",
     WT_OPT_SHORT},
    {"json", WT_OPT_JSON, NULL, "JSON instead of a table"},
    {NULL}};

const struct wt_cli_form wt_cli_form_status = {
    "status", "",    "one snapshot of every source, read directly (no daemon needed)",
    __FILE__, false, {status_opts}};

int wt_cmd_status(int argc, char **argv)
{
    struct wt_cli_common co = {0};
    int c;
    while ((c = wt_cli_next(&wt_cli_form_status, argc, argv, &co)) != -1)
        return c == WT_CLI_HELP ? 0 : 2;
    if (optind != argc) {
        fprintf(stderr, "usage: wattage status [-c FILE] [--json]\n");
        return 2;
    }
    struct wt_config cfg;
    int rc = wt_cli_load_config(co.config, &cfg);
    if (rc)
        return rc;

    struct wt_hub *hub = NULL;
    struct wt_dark *dark = NULL;
    struct wt_batch batch = {0}, snap = {0}, held = {0};
    struct source *src = calloc(MAX_SOURCES, sizeof *src);
    size_t n = 0;
    int ret = 1;
    if (!src || wt_hub_open(&hub) != 0)
        goto out;
    struct wt_err derr = {{0}};
    if (wt_dark_open(&cfg, NULL, &dark, &derr) != 0)
        goto out;
    /* Every source: each single-source collector, and each target of the multi-target ones. */
    for (size_t i = 0; wt_collectors[i]; i++) {
        const struct wt_collector_ops *ops = wt_collectors[i];
        const struct wt_collector_config *cc = ops->config(&cfg);
        if (!cc->enabled)
            continue;
        struct wt_target t[WT_MAX_TARGETS];
        size_t nt = ops->targets ? ops->targets(&cfg, t, WT_MAX_TARGETS) : 1;
        for (size_t k = 0; k < nt && k < WT_MAX_TARGETS && n < MAX_SOURCES; k++) {
            struct source *s = &src[n++];
            struct wt_err err = {{0}};
            int64_t iv = wt_config_interval(&cfg, cc);
            s->ops = ops;
            if (ops->targets)
                snprintf(s->name, sizeof s->name, "%.7s:%.23s", ops->name, t[k].name);
            else
                snprintf(s->name, sizeof s->name, "%s", ops->name);
            s->slot = wt_hub_add_collector(hub, s->name, iv);
            int orc = ops->targets ? ops->open_target(&cfg, k, &s->state, &err)
                                   : ops->open(&cfg, &s->state, &err);
            if (orc != 0) {
                if (!co.json)
                    fprintf(stderr, "%s: %s\n", s->name, err.msg);
                ops->close(s->state);
                s->state = NULL;
            }
            wt_hub_set_state(hub, s->slot, s->state != NULL, iv);
        }
    }
    for (int round = 0; round < 2; round++) {
        if (round)
            wt_sleep_until_mono(wt_now_mono_ns() + DELTA_WAIT_NS);
        for (size_t i = 0; i < n; i++) {
            if (!src[i].state)
                continue;
            struct wt_err err = {{0}};
            wt_batch_clear(&batch);
            int64_t t0 = wt_now_mono_ns();
            int64_t t_real = wt_now_real_ns();
            int prc = src[i].ops->poll(src[i].state, t_real, &batch, &err);
            int64_t t1 = wt_now_mono_ns();
            if (prc != 0) {
                wt_batch_clear(&batch);
                if (src[i].ops->down && src[i].ops->down(src[i].state, t_real, &batch) != 0)
                    wt_batch_clear(&batch);
            }
            if (prc != 0 && round == 1 && !co.json)
                fprintf(stderr, "%s: %s\n", src[i].name, err.msg);
            /* Fields read at their own cadence: the second round keeps the first's reading. */
            wt_batch_clear(&held);
            if (prc == 0 && src[i].ops->held && src[i].ops->held(src[i].state, t_real, &held) != 0)
                wt_batch_clear(&held);
            wt_hub_publish_held(hub, src[i].slot, &batch, &held, prc == 0, (double)(t1 - t0) / 1e9,
                                t1);
            if (prc == 0)
                feed_dark(dark, src[i].name, &batch);
        }
    }
    publish_dark(&cfg, hub, dark);
    if (wt_hub_snapshot(hub, &snap) != 0)
        goto out;
    struct wt_hub_collector *cs = calloc(MAX_SOURCES, sizeof *cs);
    if (!cs)
        goto out;
    size_t ncs = wt_hub_collectors(hub, cs, MAX_SOURCES);
    /* Health as the daemon's /readyz would see this snapshot: lost GPUs, targets down, the
     * clock (the store and delivery are the daemon's own and are not read here). */
    struct wt_health_reason why[WT_HEALTH_MAX_REASONS];
    size_t nh = wt_health_collect(&snap, why, WT_HEALTH_MAX_REASONS);
    if (nh > WT_HEALTH_MAX_REASONS)
        nh = WT_HEALTH_MAX_REASONS;
    if (co.json) {
        char *doc = wt_api_status_cadence(wt_snapshot_json(&snap, cs, ncs, wt_now_real_ns(), 1));
        char *s = doc ? wt_health_json_into(doc, why, nh, true) : NULL;
        free(doc);
        if (!s) {
            free(cs);
            goto out;
        }
        printf("%s\n", s);
        free(s);
    } else {
        wt_snapshot_print(stdout, &snap, cs, ncs, wt_now_real_ns());
        print_caps(&cfg);
        print_dark_today(&cfg);
        wt_cli_inference_status(&cfg, 300, stdout);
        wt_health_print(stdout, why, nh);
    }
    free(cs);
    ret = 0;
out:
    for (size_t i = 0; i < n; i++) {
        if (src[i].state)
            src[i].ops->close(src[i].state);
    }
    wt_dark_close(dark);
    free(src);
    wt_config_free(&cfg);
    wt_batch_free(&batch);
    wt_batch_free(&held);
    wt_batch_free(&snap);
    wt_hub_close(hub);
    return ret;
}
