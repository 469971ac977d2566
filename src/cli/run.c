/* SPDX-License-Identifier: MIT */
/*
 * `wattage run`: the daemon, in the foreground, logging to stderr. Collector threads publish to
 * the hub; this thread waits for signals (SIGTERM/SIGINT stop, SIGHUP reloads the configuration)
 * and logs a one-line summary every minute. Under systemd (Type=notify) it says READY, STATUS,
 * RELOADING and STOPPING, and pings the watchdog only while the poll loop ticks. At a stop the
 * store flushes for the last time, then remote write, Kafka and OTLP send what it holds within
 * daemon.stop_deadline (the rest at the next start). At exit it logs the energy each series
 * counted while it ran, so a run's total is on record even without the store.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alert/engine.h"
#include "audit/ashrae.h"
#include "audit/carbon_fetch.h"
#include "audit/dark.h"
#include "audit/jobs.h"
#include "audit/kpi.h"
#include "audit/power_avg.h"
#include "audit/review.h"
#include "audit/topology.h"
#include "cli/cli.h"
#include "collect/collector.h"
#include "collect/procattr.h"
#include "core/clock.h"
#include "core/health.h"
#include "core/hub.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/sdnotify.h"
#include "core/yamltree.h"
#include "core/yget.h"
#include "serve/api_alerts.h"
#include "serve/api_jobs.h"
#include "serve/api_series.h"
#include "serve/api_status.h"
#include "serve/http.h"
#include "serve/kafka.h"
#include "serve/otlp.h"
#include "serve/remote_write.h"
#include "serve/ui.h"
#include "store/store.h"

#define MAX_TRACKED 512

/*
 * Energy counted by every energy series since start. A series that goes backwards (a reloaded
 * collector's integrated series, a driver reload) restarted from zero: its new value is counted.
 */
struct tracked {
    int metric;
    char labels[WT_LABELS_LEN];
    double last, sum, sum_at_summary;
    int64_t first_t, last_t;
};

struct tracker {
    pthread_mutex_t mu;
    struct tracked s[MAX_TRACKED];
    int n;
};

static bool is_energy(int metric)
{
    return metric == WT_M_GPU_ENERGY_J || metric == WT_M_GPU_ENERGY_INTEGRATED_J ||
           metric == WT_M_CPU_ENERGY_J;
}

static void track_sink(void *ctx, const char *collector, const struct wt_batch *b)
{
    struct tracker *tr = ctx;
    (void)collector;
    pthread_mutex_lock(&tr->mu);
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        if (!is_energy(r->metric))
            continue;
        struct tracked *t = NULL;
        for (int j = 0; j < tr->n && !t; j++) {
            if (tr->s[j].metric == r->metric && strcmp(tr->s[j].labels, r->labels) == 0)
                t = &tr->s[j];
        }
        if (!t) {
            if (tr->n == MAX_TRACKED)
                continue;
            t = &tr->s[tr->n++];
            t->metric = r->metric;
            memcpy(t->labels, r->labels, sizeof t->labels);
            t->last = r->value;
            t->first_t = r->t_ns;
        }
        t->sum += r->value >= t->last ? r->value - t->last : r->value;
        t->last = r->value;
        t->last_t = r->t_ns;
    }
    pthread_mutex_unlock(&tr->mu);
}

/* Sums the readings of one metric in a snapshot, skipping series that carry `skip_label`. */
static double sum_metric(const struct wt_batch *b, int metric, const char *skip_label,
                         const char *only_key, const char *only_val, int *n)
{
    double s = 0;
    char v[64];
    *n = 0;
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        if (r->metric != metric)
            continue;
        if (skip_label && wt_labels_get(r->labels, skip_label, v, sizeof v) == 0)
            continue;
        if (only_key &&
            (wt_labels_get(r->labels, only_key, v, sizeof v) != 0 || strcmp(v, only_val) != 0))
            continue;
        s += r->value;
        (*n)++;
    }
    return s;
}

/* The summary's alert part: the transitions since the last summary, when there were any (the
 * pending and cleared ones are logged at debug only, one by one). */
static void alert_summary(struct wt_alerts *alerts, uint64_t last[WT_ALERT_TO_COUNT], char *out,
                          size_t n)
{
    uint64_t now[WT_ALERT_TO_COUNT], d[WT_ALERT_TO_COUNT], any = 0;
    wt_alerts_transition_totals(alerts, now);
    for (int t = 0; t < WT_ALERT_TO_COUNT; t++) {
        d[t] = now[t] - last[t];
        any |= d[t];
        last[t] = now[t];
    }
    if (any)
        snprintf(out, n,
                 " alert_transitions=pending:%" PRIu64 ",cleared:%" PRIu64 ",firing:%" PRIu64
                 ",resolved:%" PRIu64,
                 d[WT_ALERT_TO_PENDING], d[WT_ALERT_TO_CLEARED], d[WT_ALERT_TO_FIRING],
                 d[WT_ALERT_TO_RESOLVED]);
}

static void log_summary(struct wt_hub *hub, struct tracker *tr, struct wt_alerts *alerts,
                        uint64_t alerts_last[WT_ALERT_TO_COUNT], struct wt_batch *snap)
{
    if (wt_hub_snapshot(hub, snap) != 0)
        return;
    int ngpu, nup, npow, ncpu, nu, nm;
    (void)sum_metric(snap, WT_M_GPU_UP, NULL, NULL, NULL, &ngpu);
    double up = sum_metric(snap, WT_M_GPU_UP, NULL, NULL, NULL, &nup);
    double gpu_w = sum_metric(snap, WT_M_GPU_POWER_W, NULL, NULL, NULL, &npow);
    double cpu_w = sum_metric(snap, WT_M_CPU_POWER_W, NULL, "domain", "package", &ncpu);
    double util = sum_metric(snap, WT_M_CPU_UTIL_RATIO, NULL, "cpu", "all", &nu);
    double mem = sum_metric(snap, WT_M_MEM_USED_RATIO, NULL, NULL, NULL, &nm);
    double gpu_j = 0, gpu_int_j = 0, cpu_j = 0;
    pthread_mutex_lock(&tr->mu);
    for (int i = 0; i < tr->n; i++) {
        struct tracked *t = &tr->s[i];
        double d = t->sum - t->sum_at_summary;
        t->sum_at_summary = t->sum;
        /* Counters first; the integrated series is shown beside them for comparison. */
        if (t->metric == WT_M_GPU_ENERGY_INTEGRATED_J)
            gpu_int_j += d;
        else if (t->metric == WT_M_GPU_ENERGY_J)
            gpu_j += d;
        else
            cpu_j += d;
    }
    pthread_mutex_unlock(&tr->mu);
    char line[512];
    int n = snprintf(line, sizeof line, "summary gpus_up=%.0f/%d", up, ngpu);
    if (npow)
        n += snprintf(line + n, sizeof line - (size_t)n,
                      " gpu_power_w=%.1f gpu_energy_j=%.1f gpu_energy_integrated_j=%.1f", gpu_w,
                      gpu_j, gpu_int_j);
    if (ncpu)
        n += snprintf(line + n, sizeof line - (size_t)n, " cpu_power_w=%.1f cpu_energy_j=%.1f",
                      cpu_w, cpu_j);
    if (nu)
        n += snprintf(line + n, sizeof line - (size_t)n, " cpu_util=%.3f", util);
    if (nm)
        n += snprintf(line + n, sizeof line - (size_t)n, " mem_used=%.3f", mem);
    if ((size_t)n < sizeof line)
        alert_summary(alerts, alerts_last, line + n, sizeof line - (size_t)n);
    wt_info("run", "%s", line);
}

/* Sends state to systemd; a failure is said once (the daemon runs on without it). */
static void notify(const char *state)
{
    static bool warned;
    int rc = wt_sdnotify(state);
    if (rc < 0 && !warned) {
        warned = true;
        wt_warn("run", "cannot notify systemd (NOTIFY_SOCKET): %s", strerror(-rc));
    }
}

/*
 * READY=1 or another state, with STATUS= the one-line summary systemctl status shows: GPUs up,
 * GPU power, the store's state and readiness (src/core/health.h) with its first reason.
 */
static void notify_status(const char *state, struct wt_hub *hub, struct wt_batch *snap)
{
    char msg[600];
    int ngpu = 0, nup, npow = 0;
    double up = 0, gpu_w = 0;
    struct wt_health_reason r[WT_HEALTH_MAX_REASONS];
    size_t nr = 0;
    if (wt_hub_snapshot(hub, snap) == 0) {
        (void)sum_metric(snap, WT_M_GPU_UP, NULL, NULL, NULL, &ngpu);
        up = sum_metric(snap, WT_M_GPU_UP, NULL, NULL, NULL, &nup);
        gpu_w = sum_metric(snap, WT_M_GPU_POWER_W, NULL, NULL, NULL, &npow);
        nr = wt_health_collect(snap, r, WT_HEALTH_MAX_REASONS);
    }
    const char *store = "ok";
    for (size_t i = 0; i < nr && i < WT_HEALTH_MAX_REASONS; i++)
        if (strcmp(r[i].component, "store") == 0)
            store = "failing";
    int n = snprintf(msg, sizeof msg, "%s%sSTATUS=gpus_up=%.0f/%d", state ? state : "",
                     state ? "\n" : "", up, ngpu);
    if (npow)
        n += snprintf(msg + n, sizeof msg - (size_t)n, " gpu_power_w=%.1f", gpu_w);
    if (nr == 0)
        snprintf(msg + n, sizeof msg - (size_t)n, " store=%s ready", store);
    else
        snprintf(msg + n, sizeof msg - (size_t)n, " store=%s degraded (%zu): %s%s%s: %s", store, nr,
                 r[0].component, r[0].key[0] ? " " : "", r[0].key, r[0].message);
    notify(msg);
}

/*
 * Whether the poll loop ticks: every collector found on this host polled within 3 of its
 * intervals (plus a second), counting from loop_start for one that has not polled yet. A collector
 * stuck in a call fails this, and the watchdog pings stop so systemd restarts the daemon. Unlike
 * wt_hub_healthy, a host with no source present is alive: its threads are looking for them.
 */
static bool loop_alive(struct wt_hub *hub, int64_t now, int64_t loop_start, char *why, size_t n)
{
    struct wt_hub_collector c[WT_HUB_MAX_COLLECTORS];
    size_t nc = wt_hub_collectors(hub, c, WT_HUB_MAX_COLLECTORS);
    for (size_t i = 0; i < nc && i < WT_HUB_MAX_COLLECTORS; i++) {
        if (!c[i].present || c[i].retired)
            continue;
        int64_t last = c[i].last_tick_mono > loop_start ? c[i].last_tick_mono : loop_start;
        if (now - last > 3 * c[i].interval_ns + WT_NS_PER_S) {
            snprintf(why, n, "%s: no poll for %.1f s", c[i].name,
                     (double)(now - last) / WT_NS_PER_S);
            return false;
        }
    }
    return true;
}

/*
 * Test hook, WATTAGE_TEST_STOP_PAUSE=SECONDS: at shutdown, a pause after each close of a hub
 * sink's owner while the audit publishers (power averages, ASHRAE) still publish, so that a
 * sink left in the hub is called on freed memory at once rather than in a rare interleaving.
 * Unset normally.
 */
static void stop_pause(void)
{
    const char *v = getenv("WATTAGE_TEST_STOP_PAUSE");
    double s = v ? strtod(v, NULL) : 0;
    if (!(s > 0 && s <= 10))
        return;
    int64_t ns = (int64_t)(s * WT_NS_PER_S);
    struct timespec ts = {.tv_sec = ns / WT_NS_PER_S, .tv_nsec = ns % WT_NS_PER_S};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void log_energy_totals(struct tracker *tr)
{
    char from[40], to[40];
    pthread_mutex_lock(&tr->mu);
    for (int i = 0; i < tr->n; i++) {
        const struct tracked *t = &tr->s[i];
        wt_time_format(t->first_t, 1, from, sizeof from);
        wt_time_format(t->last_t, 1, to, sizeof to);
        wt_info("run", "energy %s{%s} joules=%.3f from=%s to=%s from_ns=%" PRId64 " to_ns=%" PRId64,
                wt_metrics[t->metric].name, t->labels, t->sum, from, to, t->first_t, t->last_t);
    }
    pthread_mutex_unlock(&tr->mu);
}

struct run_opts {
    const char *config, *listen, *db;
    int64_t interval_ns, duration_ns, summary_ns;
    int log_level; /* -1: from config */
};

static int apply_flags(const struct run_opts *o, struct wt_config *cfg)
{
    if (o->listen)
        snprintf(cfg->daemon.listen, sizeof cfg->daemon.listen, "%s", o->listen);
    if (o->db)
        snprintf(cfg->store.path, sizeof cfg->store.path, "%s", o->db);
    if (o->interval_ns)
        cfg->daemon.interval_ns = o->interval_ns;
    if (o->log_level >= 0)
        cfg->daemon.log_level = (enum wt_log_level)o->log_level;
    wt_log_set_level(cfg->daemon.log_level);
    return 0;
}

static const struct wt_cli_opt run_opts_table[] = {
    {"config", WT_OPT_CONFIG, "FILE", "the configuration (default " WT_DEFAULT_CONFIG ")",
     WT_OPT_SHORT},
    {"listen", 'l', "ADDR:PORT", "where /metrics and the API listen (default daemon.listen)"},
    {"db", WT_OPT_DB, "FILE", "the store's database (default store.path)"},
    {"interval", 'i', "S", "the poll interval, seconds or a duration (default daemon.interval)"},
    {"log-level", 'L', "LEVEL", "debug, info, warn or error (default daemon.log_level)"},
    {"dry-run", 'n', NULL, "power capping only logs what it would do (alerts.dry_run)"},
    {"duration", 'D', "D", "stop after D, a duration such as 30s (for tests and benchmarks)"},
    {"summary-interval", 'S', "D", "how often the summary line is logged (default 1m)"},
    {NULL}};

const struct wt_cli_form wt_cli_form_run = {
    "run",
    "",
    "the daemon, in the foreground, logging to stderr; SIGTERM/SIGINT stop it, SIGHUP reloads "
    "the configuration",
    __FILE__,
    false,
    {run_opts_table}};

static int parse_opts(int argc, char **argv, struct run_opts *o)
{
    int c;
    enum wt_log_level lv;
    memset(o, 0, sizeof *o);
    o->log_level = -1;
    o->summary_ns = 60 * WT_NS_PER_S;
    struct wt_cli_common co = {0};
    while ((c = wt_cli_next(&wt_cli_form_run, argc, argv, &co)) != -1) {
        switch (c) {
        case 'l': {
            char host[128];
            int port;
            if (wt_config_parse_listen(optarg, host, sizeof host, &port) != 0) {
                fprintf(stderr,
                        "wattage run: --listen: expected HOST:PORT or [IPv6]:PORT with a "
                        "port in 1..65535 (got \"%s\")\n",
                        optarg);
                return 2;
            }
            o->listen = optarg;
            break;
        }
        case 'i': {
            /* The same range as daemon.interval: --interval 1ns is the same typo. */
            char msg[400], shown[80];
            if (wt_duration_parse(optarg, &o->interval_ns) != 0)
                o->interval_ns = -1;
            wt_y_show(optarg, shown, sizeof shown);
            if (wt_config_check_duration("daemon.interval", o->interval_ns, shown, msg,
                                         sizeof msg) != 0) {
                fprintf(stderr, "wattage run: --interval: %s\n", msg);
                return 2;
            }
            break;
        }
        case 'D':
            if (wt_duration_parse(optarg, &o->duration_ns) != 0) {
                fprintf(stderr, "wattage run: --duration: expected a duration (got \"%s\")\n",
                        optarg);
                return 2;
            }
            break;
        case 'S':
            /* A summary line per tick of a 1ns interval would be the log; at least 1 s. */
            if (wt_duration_parse(optarg, &o->summary_ns) != 0 || o->summary_ns < WT_NS_PER_S) {
                fprintf(stderr,
                        "wattage run: --summary-interval: expected a duration of at least 1s "
                        "such as 60s or 5m (got \"%s\"): the summary is a log line, not a "
                        "sample\n",
                        optarg);
                return 2;
            }
            break;
        case 'n':
            /* Power capping logs what it would do and changes no GPU (alerts.dry_run). */
            wt_cap_force_dry_run(true);
            break;
        case 'L':
            if (wt_log_parse_level(optarg, &lv) != 0) {
                fprintf(stderr, "wattage run: --log-level: expected debug, info, warn or error\n");
                return 2;
            }
            o->log_level = (int)lv;
            break;
        case WT_CLI_HELP:
            return WT_CLI_HELP;
        default:
            return 2;
        }
    }
    if (wt_cli_no_operands(&wt_cli_form_run, argc, argv))
        return 2;
    o->config = co.config;
    o->db = co.db;
    return 0;
}

/*
 * Loads the configuration again for SIGHUP. Unlike at start, a bad file is one log line with the
 * daemon's prefix (time, level, module) that names file:line, not a bare line on stderr.
 */
static int reload_config(const char *path, struct wt_config *next)
{
    struct wt_err err = {{0}};
    wt_config_defaults(next);
    if (!path) {
        if (access(WT_DEFAULT_CONFIG, F_OK) != 0)
            return 0;
        path = WT_DEFAULT_CONFIG;
    }
    if (wt_config_load(path, next, &err) != 0) {
        wt_error("run", "reload failed: %s; keeping the running configuration", err.msg);
        return -EINVAL;
    }
    return 0;
}

/* Readiness: alert delivery failing (a channel whose attempts failed since its last success). */
static bool delivery_probe(void *ctx, char *why, size_t n)
{
    char w[180];
    if (!wt_alerts_delivery_failing(ctx, w, sizeof w))
        return false;
    snprintf(why, n, "alert delivery failing: %s", w);
    return true;
}

/* True when b differs from a in a setting that is only read at start. */
static bool needs_restart(const struct wt_config *a, const struct wt_config *b)
{
    return strcmp(a->daemon.listen, b->daemon.listen) ||
           strcmp(a->daemon.tls.cert, b->daemon.tls.cert) ||
           strcmp(a->daemon.tls.key, b->daemon.tls.key) ||
           strcmp(a->daemon.tls.client_ca, b->daemon.tls.client_ca) ||
           strcmp(a->daemon.auth.token_file, b->daemon.auth.token_file) ||
           a->daemon.auth.protect_reads != b->daemon.auth.protect_reads ||
           strcmp(a->store.path, b->store.path) || a->store.flush_ns != b->store.flush_ns ||
           a->store.buffer_readings != b->store.buffer_readings ||
           a->store.ticks != b->store.ticks ||
           a->store.retention_raw_ns != b->store.retention_raw_ns ||
           a->store.retention_rollup_ns != b->store.retention_rollup_ns;
}

int wt_cmd_run(int argc, char **argv)
{
    struct run_opts o;
    struct wt_config cfg;
    struct wt_err err = {{0}};
    struct wt_hub *hub = NULL;
    struct wt_loop *loop = NULL;
    struct wt_http *http = NULL;
    struct wt_batch snap = {0};
    struct tracker *tr = NULL;
    struct wt_store *store = NULL;
    struct wt_jobs *jobs = NULL;
    struct wt_carbon *carbon = NULL;
    struct wt_kpi_exporter *kpi = NULL;
    struct wt_review_daemon *review = NULL;
    struct wt_alerts *alerts = NULL;
    struct wt_remote_write *rw = NULL;
    struct wt_kafka *kafka = NULL;
    struct wt_otlp *otlp = NULL;
    struct wt_power_avg *pavg = NULL;
    struct wt_api_series *series = NULL;
    struct wt_cpu_attrib *cpu_attrib = NULL;
    struct wt_dark *dark = NULL;
    struct wt_ashrae *ashrae = NULL;
    int ret = 1;

    /* Signals are taken synchronously by this thread; every thread started below inherits the
     * blocked mask. Blocked first of all, so that a stop asked for during a slow start (a store
     * to recover, a loaded machine) is a clean stop once the daemon is up, not a kill. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc == WT_CLI_HELP ? 0 : rc;
    rc = wt_cli_load_config(o.config, &cfg);
    if (rc)
        return rc;
    apply_flags(&o, &cfg);
    /* The secret files, as check-config checks them: a refused one stops the start here. */
    if (wt_cli_check_secrets(&cfg, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }

    tr = calloc(1, sizeof *tr);
    if (!tr || wt_hub_open(&hub) != 0)
        goto out;
    pthread_mutex_init(&tr->mu, NULL);
    if (wt_hub_add_sink(hub, track_sink, tr) != 0)
        goto out;
    if (wt_store_attach(&cfg, hub, &store, &err) != 0) {
        char why[512];
        wt_cli_store_origin(o.db, &cfg, why, sizeof why);
        wt_error("run", "%s (%s)", err.msg, why);
        goto out;
    }

    wt_info("run", "wattage %s starting interval_s=%.3g config=%s", WT_VERSION,
            (double)cfg.daemon.interval_ns / WT_NS_PER_S,
            cfg.source[0] ? cfg.source : "(defaults)");
    /* The server reads its keys and binds before collection starts, so a bad key or a taken
     * port stops the daemon at once; it serves the hub's snapshot from its own threads. */
    if (wt_http_open(&cfg, hub, &http, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    if (wt_api_status_add(http, hub, cfg.store.path) != 0) {
        wt_error("run", "no room for the status routes (MAX_ROUTES)");
        goto out;
    }
    /* The live page (GET /) and the series API its charts read, on a store connection of its
     * own. */
    if (wt_api_series_open(cfg.store.path, &series, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    if (wt_api_series_add(http, series) != 0 || wt_ui_add(http) != 0) {
        wt_error("run", "no room for the live page's routes (MAX_ROUTES)");
        goto out;
    }
    /* The store's health on /metrics (drops, write errors, queue, last flush, size). */
    if (wt_api_store_families_add(http, store) != 0)
        wt_warn("run", "no room for the store's families on /metrics (WT_HTTP_MAX_FAMILIES)");
    /* Alert rules and detectors: a hub sink, GET /api/v1/alerts and wattage_alerts. */
    if (wt_alerts_open(&cfg, hub, &alerts, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    if ((rc = wt_api_alerts_add(http, alerts)) != 0) {
        wt_error("run", "alerts: cannot add GET /api/v1/alerts and wattage_alerts (%s)",
                 strerror(-rc));
        goto out;
    }
    /* Rolling 1/5/15-min power means: a hub sink and a slot of their own. */
    if (wt_power_avg_open(&cfg, hub, &pavg, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    /* CPU energy per process (collect/procattr.h): a hub sink of rapl batches, a slot. */
    if (cfg.collectors.rapl_attribution &&
        wt_cpu_attrib_open(hub, cfg.collectors.nvml_attrib_grace_ns, &cpu_attrib, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    /* Dark power: idle energy per GPU, a hub sink and a slot of its own. */
    if (wt_dark_open(&cfg, hub, &dark, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    /* Inlet air against the ASHRAE class of facility.ashrae_class (read at start). */
    {
        struct wt_topology *topo = NULL;
        int arc = wt_topology_load(&cfg, &topo, &err);
        if (arc == 0)
            arc = wt_ashrae_open(&cfg, topo->ashrae_class, hub, &ashrae, &err);
        free(topo);
        if (arc != 0) {
            wt_error("run", "%s", err.msg);
            goto out;
        }
    }
    if (wt_health_add_probe("alerts", delivery_probe, alerts) != 0)
        wt_warn("run", "no room for the alert delivery probe: readiness does not see it");
    /* Remote write: one sender per endpoint, reading the store on its own connection (never
     * the poll path), its families on /metrics (registered before the server starts). */
    if (wt_remote_write_open(&cfg, http, &rw, &err) != 0 ||
        wt_kafka_open(&cfg, http, &kafka, &err) != 0 ||
        wt_otlp_open(&cfg, http, &otlp, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    /* The jobs API, on its own connection to the same store. */
    wt_api_attribution_store(cfg.store.path);
    if (wt_jobs_open(cfg.store.path, hub, &jobs, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    /* A job start lifts the idle policy's caps on its GPUs before it is answered. */
    wt_jobs_set_start_hook(jobs, wt_alerts_jobs_started, alerts);
    if (wt_carbon_attach(&cfg, hub, &carbon, &err) != 0 ||
        (wt_jobs_set_carbon(jobs, wt_carbon_config(carbon)) != 0 &&
         wt_err_set(&err, "carbon: out of memory")) ||
        wt_api_jobs_add(http, jobs) != 0 || wt_http_start(http, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    wt_jobs_set_clock_bound(jobs, (double)cfg.daemon.clock_max_error_ns / 1e9);
    if (wt_loop_start(&cfg, wt_collectors, hub, 0, &loop, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    /* Facility KPI gauges (none without topology.meters), on their own store connection. */
    if (wt_kpi_exporter_open(&cfg, hub, &kpi, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }
    /* The configuration's digest and the weekly review file (review.weekly_dir). */
    if (wt_review_daemon_open(&cfg, hub, &review, &err) != 0) {
        wt_error("run", "%s", err.msg);
        goto out;
    }

    /* The listener is bound and serving, the collectors started: systemd may start dependents. */
    notify_status("READY=1", hub, &snap);
    int64_t start = wt_now_mono_ns();
    int64_t next_summary = start + o.summary_ns;
    uint64_t alerts_last[WT_ALERT_TO_COUNT] = {0};
    int64_t loop_start = start;
    int64_t watchdog_ns = wt_sdnotify_watchdog_ns();
    int64_t next_ping = start;
    bool pinging = true;
    for (;;) {
        int64_t now = wt_now_mono_ns();
        int64_t until = next_summary;
        if (o.duration_ns && start + o.duration_ns < until)
            until = start + o.duration_ns;
        if (watchdog_ns && next_ping <= now) {
            char why[160];
            bool alive = loop_alive(hub, now, loop_start, why, sizeof why);
            if (alive && !pinging)
                wt_info("run", "the poll loop ticks again: watchdog pings resume");
            if (alive)
                notify("WATCHDOG=1");
            else if (pinging)
                wt_error("run",
                         "the poll loop is stuck (%s): no watchdog pings, systemd will "
                         "restart the daemon",
                         why);
            pinging = alive;
            next_ping = wt_loop_next_deadline(next_ping, watchdog_ns, now);
        }
        if (watchdog_ns && next_ping < until)
            until = next_ping;
        if (until <= now) {
            if (o.duration_ns && now >= start + o.duration_ns)
                break;
            log_summary(hub, tr, alerts, alerts_last, &snap);
            notify_status(NULL, hub, &snap);
            next_summary += o.summary_ns;
            continue;
        }
        int64_t wait = until - now;
        struct timespec ts = {.tv_sec = wait / WT_NS_PER_S, .tv_nsec = wait % WT_NS_PER_S};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            wt_info("run", "stopping on %s", sig == SIGINT ? "SIGINT" : "SIGTERM");
            break;
        }
        if (sig == SIGHUP) {
            struct wt_config next;
            char reloading[64];
            wt_info("run", "SIGHUP: reloading the configuration");
            snprintf(reloading, sizeof reloading, "RELOADING=1\nMONOTONIC_USEC=%lld",
                     (long long)(wt_now_mono_ns() / 1000));
            notify(reloading);
            if (reload_config(o.config, &next) != 0) {
                wt_log_set_level(cfg.daemon.log_level);
                wt_config_free(&next);
                notify_status("READY=1", hub, &snap);
                continue;
            }
            apply_flags(&o, &next);
            /* The listener, TLS, auth and store were opened at start (keys are read before any
             * privilege could be dropped): their settings take a restart. */
            if (needs_restart(&cfg, &next))
                wt_warn("run", "daemon.listen, daemon.tls, daemon.auth and store.* changes take "
                               "effect at the next restart; the rest is applied now");
            if (!wt_ynode_equal(wt_config_section(&cfg, "carbon"),
                                wt_config_section(&next, "carbon")))
                wt_warn("run", "carbon changes take effect at the next restart");
            if (!wt_ynode_equal(wt_config_section(&cfg, "remote_write"),
                                wt_config_section(&next, "remote_write")))
                wt_warn("run", "remote_write changes take effect at the next restart");
            if (!wt_ynode_equal(wt_config_section(&cfg, "kafka"),
                                wt_config_section(&next, "kafka")))
                wt_warn("run", "kafka changes take effect at the next restart");
            if (!wt_ynode_equal(wt_config_section(&cfg, "otlp"), wt_config_section(&next, "otlp")))
                wt_warn("run", "otlp changes take effect at the next restart");
            int before[WT_HUB_MAX_COLLECTORS];
            size_t nbefore = wt_loop_slots(loop, before, WT_HUB_MAX_COLLECTORS);
            if (nbefore > WT_HUB_MAX_COLLECTORS)
                nbefore = WT_HUB_MAX_COLLECTORS;
            wt_loop_stop(loop);
            loop = NULL;
            wt_review_daemon_close(review); /* it reads cfg: closed before cfg changes */
            review = NULL;
            cfg.daemon.interval_ns = next.daemon.interval_ns;
            cfg.daemon.log_level = next.daemon.log_level;
            cfg.daemon.stop_deadline_ns = next.daemon.stop_deadline_ns;
            cfg.collectors = next.collectors;
            cfg.inference = next.inference;
            wt_config_move_doc(&cfg, &next); /* the module sections: targets, rules... */
            if (wt_alerts_reload(alerts, &cfg, &err) != 0)
                wt_error("run", "%s; keeping the running alert rules", err.msg);
            wt_kpi_exporter_close(kpi); /* the topology and facility sections may differ */
            kpi = NULL;
            if (wt_kpi_exporter_open(&cfg, hub, &kpi, &err) != 0)
                wt_error("run", "%s; no KPI gauges until the next reload", err.msg);
            if (wt_review_daemon_open(&cfg, hub, &review, &err) != 0)
                wt_error("run", "%s; no weekly review until the next reload", err.msg);
            /* Targets no longer configured leave /metrics, the status and the health check. */
            if (wt_loop_restart(&cfg, wt_collectors, hub, 0, before, nbefore, &loop, &err) != 0) {
                wt_error("run", "%s", err.msg);
                goto out;
            }
            loop_start = wt_now_mono_ns();
            notify_status("READY=1", hub, &snap);
        }
    }
    ret = 0;
out:
    notify("STOPPING=1");
    wt_http_close(http);
    wt_api_series_close(series); /* after the server: no request in progress uses it */
    wt_api_attribution_close();
    wt_jobs_close(jobs); /* after the server: no request in progress uses it */
    wt_carbon_close(carbon);
    wt_kpi_exporter_close(kpi);
    wt_review_daemon_close(review);
    wt_loop_stop(loop);
    wt_health_remove_probe(delivery_probe, alerts);
    /* Each close below takes its sink out of the hub first (wt_hub_remove_sink), waiting out a
     * call in flight: the audit publishers (power averages, ASHRAE) publish until their own
     * close, and the hub calls every sink still in it. */
    wt_alerts_close(alerts); /* after the collectors and the server; restores caps */
    stop_pause();
    wt_store_close(store); /* after the collectors: flushes what they published */
    stop_pause();
    /* The streams send what the last flush stored, together, within daemon.stop_deadline;
     * what is left goes out at the next start. Closed after the server: scrapes read their
     * families. */
    if (ret == 0) {
        wt_remote_write_drain(rw, cfg.daemon.stop_deadline_ns);
        wt_kafka_drain(kafka, cfg.daemon.stop_deadline_ns);
        wt_otlp_drain(otlp, cfg.daemon.stop_deadline_ns);
    }
    wt_remote_write_close(rw);
    wt_kafka_close(kafka);
    wt_otlp_close(otlp);
    wt_power_avg_close(pavg);
    stop_pause();
    wt_cpu_attrib_close(cpu_attrib);
    wt_dark_close(dark);
    stop_pause();
    wt_ashrae_close(ashrae);
    if (tr) {
        log_energy_totals(tr);
        pthread_mutex_destroy(&tr->mu);
    }
    wt_hub_close(hub);
    wt_batch_free(&snap);
    free(tr);
    wt_config_free(&cfg);
    wt_info("run", "stopped");
    return ret;
}
