/* SPDX-License-Identifier: MIT */
/*
 * `wattage assess start|status|report`: the guided assessment (by default 72 hours, to see whole
 * diurnal and thermal cycles). Its record is assessment.json beside the store (audit/assess.h),
 * so it survives daemon restarts and reboots; the readings are the daemon's own, in the store.
 *
 *   start   asks the running daemon what it measures (GET /api/v1/status: GPUs with an energy
 *           counter, RAPL, the clock's discipline), reads the configuration (topology meters for
 *           the wall and the facility, the carbon zone and its sources) and the store (jobs,
 *           inlet sensors), prints a checklist that names, for each layer it lacks, what to set,
 *           and saves the record. A running assessment is replaced only with --force.
 *   status  elapsed and remaining time, the hours of day seen, and per layer whether it was
 *           measurable at the start and is now, its coverage of the time so far (the union of
 *           its series' spans, audit/assess.h) and its gaps.
 *   report  the audit report (audit/report.h) of [start, min(now, end)] with an assessment
 *           section before it: the checklist and coverage, and the baseline (the first 24 h, or
 *           the first third of a shorter assessment) against the rest, figure by figure with the
 *           noise of wt_report_compare. An unfinished assessment says so.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/ashrae.h"
#include "audit/assess.h"
#include "audit/carbon.h"
#include "audit/jobs.h"
#include "audit/report.h"
#include "audit/statement.h"
#include "audit/topology.h"
#include "cli/assess_section.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "store/query.h"
#include "store/store.h"

#define DEFAULT_DURATION "72h"
#define RECENT_NS (600 * WT_NS_PER_S)        /* "present now": a reading in the last 10 min */
#define JOBS_RECENT_NS (86400 * WT_NS_PER_S) /* jobs: one running or in the last 24 h */
#define MAX_DURATION_NS (366 * 86400 * WT_NS_PER_S)
#define PAD_NS (300 * WT_NS_PER_S) /* readings read before a window, for its start */

/* ---- the forms ---- */

static const struct wt_cli_opt db_opt[] = {
    {"db", WT_OPT_DB, "FILE",
     "the store's database (default store.path, else the running daemon's store); "
     "assessment.json is kept beside it"},
    {NULL}};

static const struct wt_cli_opt start_opts[] = {
    {"duration", 'd', "D", "how long it runs (default " DEFAULT_DURATION ")"},
    {"name", 'n', "NAME", "what to call it (default: assessment)"},
    {"force", 'f', NULL, "replace an assessment that is still running"},
    {NULL}};

static const struct wt_cli_opt status_opts[] = {
    {"json", WT_OPT_JSON, NULL, "print the status as JSON"}, {NULL}};

static const struct wt_cli_opt report_opts[] = {
    {"format", 'F', "html|json|md", "html (default: one self-contained file that opens offline)"},
    {"output", 'o', "FILE", "write there (default standard output)", WT_OPT_SHORT},
    {NULL}};

const struct wt_cli_form wt_cli_form_assess_start = {
    "assess start",
    "",
    "checks what the daemon can measure, says what is missing, and starts the assessment",
    __FILE__,
    false,
    {start_opts, db_opt, wt_cli_conn_opts}};
const struct wt_cli_form wt_cli_form_assess_status = {
    "assess status", "",    "the assessment's time, hours of day seen and coverage per layer",
    __FILE__,        false, {status_opts, db_opt, wt_cli_conn_opts}};
const struct wt_cli_form wt_cli_form_assess_report = {
    "assess report",
    "",
    "the assessment's report: checklist, coverage, baseline against the rest, then the audit "
    "report of its window",
    __FILE__,
    false,
    {report_opts, db_opt, wt_cli_conn_opts}};

/* ---- what an assessment reads ---- */

struct ctx {
    const char *cmd;
    struct wt_config cfg;
    struct wt_store *st;
    struct wt_topology *topo;
    char path[WT_PATH_LEN + 32]; /* assessment.json */
    cJSON *status;               /* the daemon's GET /api/v1/status; NULL: not reachable */
    char daemon_why[600];        /* why not, or where it is */
    char daemon_store[WT_PATH_LEN];
};

static void ctx_close(struct ctx *c)
{
    cJSON_Delete(c->status);
    free(c->topo);
    wt_store_close(c->st);
    wt_config_free(&c->cfg);
}

/* The configuration, the store, its topology and where the record is. 0, 1 or 2 (printed). */
static int ctx_open(struct ctx *c, const char *cmd, const struct wt_cli_common *co)
{
    struct wt_err err = {{0}};
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    int rc = wt_cli_store(cmd, co, false, &c->cfg, &c->st);
    if (rc)
        return rc;
    if (wt_assess_path(c->cfg.store.path, c->path, sizeof c->path) != 0) {
        fprintf(stderr, "wattage %s: %s: the path is too long for assessment.json beside it\n", cmd,
                c->cfg.store.path);
        return 2;
    }
    if (wt_topology_load(&c->cfg, &c->topo, &err) != 0) {
        fprintf(stderr, "wattage %s: %s\n", cmd, err.msg);
        return 2;
    }
    return 0;
}

/* Asks the daemon for its status (short limits: a reader must not hang); c->status or why. */
static void ask_daemon(struct ctx *c, const struct wt_cli_conn *conn)
{
    struct wt_cli_api api;
    long status = 0;
    char *reply = NULL;
    if (wt_cli_api_setup(conn, &api) != 0) {
        snprintf(c->daemon_why, sizeof c->daemon_why, "the daemon's address cannot be worked out");
        return;
    }
    api.connect_ms = 500;
    api.timeout_ms = 3000;
    if (wt_cli_api_call(&api, "GET", "/api/v1/status", NULL, &status, &reply, c->daemon_why,
                        sizeof c->daemon_why) != 0)
        return;
    if (status != 200) {
        snprintf(c->daemon_why, sizeof c->daemon_why,
                 "the daemon at %s answered HTTP %ld to GET /api/v1/status%s", api.url, status,
                 status == 401 ? " (its token: WATTAGE_TOKEN or client.token_file)" : "");
    } else if (!(c->status = cJSON_Parse(reply))) {
        snprintf(c->daemon_why, sizeof c->daemon_why,
                 "the daemon at %s answered GET /api/v1/status with no JSON", api.url);
    } else {
        const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(c->status, "store"), "path"));
        snprintf(c->daemon_store, sizeof c->daemon_store, "%s", p ? p : "");
        snprintf(c->daemon_why, sizeof c->daemon_why, "the daemon at %s", api.url);
    }
    free(reply);
}

/* The same file (both resolved), for the daemon's store against ours. */
static bool same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (realpath(a, ra) && realpath(b, rb))
        return strcmp(ra, rb) == 0;
    return strcmp(a, b) == 0;
}

/* Growable spans. */
struct spans {
    struct wt_assess_span *s;
    size_t n, cap;
};

static int spans_room(struct spans *sp, size_t more)
{
    if (sp->n + more <= sp->cap)
        return 0;
    size_t cap = sp->cap ? sp->cap : 64;
    while (cap < sp->n + more)
        cap *= 2;
    void *x = realloc(sp->s, cap * sizeof *sp->s);
    if (!x)
        return -ENOMEM;
    sp->s = x;
    sp->cap = cap;
    return 0;
}

/* Which series of a layer count (NULL: all of the metric's). */
typedef bool (*series_pred)(const struct ctx *c, const struct wt_series_info *si, int arg);

/* Adds the spans of every series of metric that pred accepts, over [a, b]; *nseries counts
 * them; *newest is the latest reading seen (may be NULL). 0 or a negative errno. */
static int metric_spans(const struct ctx *c, const char *metric, series_pred pred, int arg,
                        bool positive, int64_t a, int64_t b, struct spans *sp, size_t *nseries,
                        int64_t *newest)
{
    struct wt_series_info *si = NULL;
    size_t n = 0;
    struct wt_err err = {{0}};
    int rc = wt_store_series(c->st, metric, false, &si, &n, &err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (pred && !pred(c, &si[i], arg))
            continue;
        struct wt_point *p = NULL;
        size_t np = 0;
        if ((rc = wt_store_points(c->st, &si[i], a - PAD_NS, b, 0, &p, &np)) != 0)
            break;
        if (np && newest && p[np - 1].t_ns > *newest)
            *newest = p[np - 1].t_ns;
        if (np && (rc = spans_room(sp, np)) == 0) {
            sp->n += wt_assess_spans(p, np, a, b, positive, sp->s + sp->n);
            (*nseries)++;
        }
        free(p);
    }
    free(si);
    return rc;
}

static bool is_role(const struct ctx *c, const struct wt_series_info *si, int roles)
{
    for (size_t i = 0; i < c->topo->nmeters; i++)
        if ((roles & (1 << c->topo->meters[i].role)) &&
            wt_meter_matches(&c->topo->meters[i], si->labels))
            return true;
    return false;
}

static bool is_inlet(const struct ctx *c, const struct wt_series_info *si, int arg)
{
    (void)c;
    (void)arg;
    return wt_ashrae_is_inlet(si->labels);
}

#define WALL_ROLES ((1 << WT_ROLE_PDU_OUTLET) | (1 << WT_ROLE_BMC))
#define FACILITY_ROLES (1 << WT_ROLE_FACILITY_TOTAL)

static size_t count_meters(const struct ctx *c, int roles)
{
    size_t k = 0;
    for (size_t i = 0; i < c->topo->nmeters; i++)
        k += (roles & (1 << c->topo->meters[i].role)) != 0;
    return k;
}

/* The jobs overlapping [a, b] as spans (a running job up to b); *njobs, *running. */
static int job_spans(const struct ctx *c, int64_t a, int64_t b, struct spans *sp, size_t *njobs,
                     size_t *running)
{
    struct wt_jobs *j = NULL;
    struct wt_err err = {{0}};
    unsigned status = 0;
    char *body = NULL;
    int rc = wt_jobs_open(c->cfg.store.path, NULL, &j, &err);
    if (rc)
        return rc;
    if ((rc = wt_jobs_list_json(j, 1000, b, &status, &body)) == 0) {
        cJSON *list = cJSON_Parse(body);
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "jobs"))
        {
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, "start_s");
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(it, "end_s");
            if (!cJSON_IsNumber(s))
                continue;
            int64_t js = (int64_t)llround(s->valuedouble * 1e9);
            int64_t je = cJSON_IsNumber(e) ? (int64_t)llround(e->valuedouble * 1e9) : b;
            if (running && !cJSON_IsNumber(e))
                (*running)++;
            if (je <= a || js >= b)
                continue;
            (*njobs)++;
            if ((rc = spans_room(sp, 1)) != 0)
                break;
            sp->s[sp->n++] = (struct wt_assess_span){js < a ? a : js, je > b ? b : je};
        }
        cJSON_Delete(list);
    }
    free(body);
    wt_jobs_close(j);
    return rc;
}

/* The carbon steps of the node's zone with a known (actual or forecast) intensity. */
static int carbon_spans(const struct ctx *c, int64_t a, int64_t b, struct spans *sp, size_t *nsteps)
{
    struct wt_carbon_conf cf;
    struct wt_err err = {{0}};
    struct wt_carbon_step *steps = NULL;
    size_t n = 0;
    if (wt_carbon_conf_from(&c->cfg, &cf, &err) != 0)
        return 0;
    const char *zone = wt_carbon_zone_of(&cf, NULL);
    if (!zone || !zone[0])
        return 0;
    /* no carbon table yet (nothing imported or fetched): no steps */
    if (wt_carbon_steps(wt_store_db(c->st), NULL, WT_CS_INTENSITY, zone, a, b, &steps, &n) != 0)
        return 0;
    int rc = spans_room(sp, n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (steps[i].src != WT_CSRC_ACTUAL && steps[i].src != WT_CSRC_FORECAST)
            continue;
        sp->s[sp->n++] = (struct wt_assess_span){steps[i].from_ns, steps[i].to_ns};
        (*nsteps)++;
    }
    free(steps);
    return rc;
}

/* Coverage of layer bit i over [a, b]; *newest the latest reading of its series (0: none). */
static int layer_cover(const struct ctx *c, unsigned i, int64_t a, int64_t b,
                       struct wt_assess_cover *cv, int64_t *newest)
{
    struct spans sp = {0};
    size_t n = 0;
    int64_t nw = 0;
    int rc = 0;
    switch (1u << i) {
    case WT_ASSESS_CHIP:
        rc = metric_spans(c, "wattage_gpu_power_watts", NULL, 0, false, a, b, &sp, &n, &nw);
        break;
    case WT_ASSESS_NODE:
        rc = metric_spans(c, "wattage_cpu_energy_joules_total", NULL, 0, false, a, b, &sp, &n, &nw);
        break;
    case WT_ASSESS_WALL:
    case WT_ASSESS_FACILITY: {
        int roles = (1u << i) == WT_ASSESS_WALL ? WALL_ROLES : FACILITY_ROLES;
        size_t n2 = 0;
        rc = metric_spans(c, "wattage_facility_power_watts", is_role, roles, false, a, b, &sp, &n,
                          &nw);
        if (rc == 0)
            rc = metric_spans(c, "wattage_facility_energy_joules_total", is_role, roles, false, a,
                              b, &sp, &n2, &nw);
        n = n > n2 ? n : n2; /* a meter's power and energy are one source */
        break;
    }
    case WT_ASSESS_CARBON:
        rc = carbon_spans(c, a, b, &sp, &n);
        break;
    case WT_ASSESS_CLOCK:
        rc = metric_spans(c, "wattage_clock_synchronized", NULL, 0, true, a, b, &sp, &n, &nw);
        break;
    case WT_ASSESS_JOBS:
        rc = job_spans(c, a, b, &sp, &n, NULL);
        break;
    case WT_ASSESS_INLET:
        rc = metric_spans(c, "wattage_facility_temperature_celsius", is_inlet, 0, false, a, b, &sp,
                          &n, &nw);
        break;
    }
    memset(cv, 0, sizeof *cv);
    cv->nseries = n;
    wt_assess_cover_of(sp.s, sp.n, a, b, cv);
    free(sp.s);
    if (newest)
        *newest = nw;
    return rc;
}

/*
 * What is measurable now: the layer bits, and for each layer a line saying what was found (or,
 * for one that is missing, why). The daemon's status gives the GPUs, RAPL and the clock; the
 * configuration the meters and the carbon zone; the store the jobs and the inlet sensors.
 */
static unsigned detect(const struct ctx *c, int64_t now, char found[][FOUND_LEN])
{
    unsigned layers = 0;
    const cJSON *st = c->status, *it;
    for (unsigned i = 0; i < WT_ASSESS_NLAYERS; i++)
        found[i][0] = '\0';
    /* chip */
    if (st) {
        int n = 0, counter = 0;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(st, "gpus"))
        {
            n++;
            counter += cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(it, "energy_joules"));
        }
        if (counter)
            layers |= WT_ASSESS_CHIP;
        if (n)
            snprintf(found[0], FOUND_LEN, "%d of %d GPUs with an energy counter%s", counter, n,
                     counter ? "" : " (their power is integrated)");
        else
            snprintf(found[0], FOUND_LEN, "no GPU (NVML)");
        /* node */
        n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "cpu"));
        if (n > 0)
            layers |= WT_ASSESS_NODE;
        snprintf(found[1], FOUND_LEN, n ? "%d RAPL domains" : "no RAPL domain", n);
        /* clock */
        const char *unsynced = NULL;
        bool clock_up = false;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(
                                   cJSON_GetObjectItemCaseSensitive(st, "health"), "reasons"))
        {
            const char *comp =
                cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "component"));
            if (comp && strcmp(comp, "clock") == 0)
                unsynced = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "message"));
        }
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(st, "collectors"))
        {
            const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "name"));
            if (name && strcmp(name, "clock") == 0)
                clock_up = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "up"));
        }
        if (clock_up && !unsynced)
            layers |= WT_ASSESS_CLOCK;
        snprintf(found[5], FOUND_LEN, "%s",
                 unsynced   ? unsynced
                 : clock_up ? "the kernel clock is synchronised"
                            : "the clock collector is not running");
    } else {
        static const unsigned asked[] = {0, 1, 5};
        for (size_t k = 0; k < sizeof asked / sizeof asked[0]; k++)
            snprintf(found[asked[k]], FOUND_LEN, "unknown: %s", c->daemon_why);
    }
    /* wall, facility: the topology's meters */
    size_t nw = count_meters(c, WALL_ROLES), nf = count_meters(c, FACILITY_ROLES);
    /* E_IT's meters: every IT role (ups_output, pdu_output, it_input, it_total), by role */
    char itr[200] = "";
    size_t nit = 0;
    unsigned itroles = 0;
    int cat = wt_stmt_category(c->topo, &itroles);
    for (int r = 0; r < WT_ROLE_COUNT; r++) {
        size_t k = (itroles & (1u << r)) ? count_meters(c, 1 << r) : 0, at = strlen(itr);
        if (k)
            snprintf(itr + at, sizeof itr - at, "%s%zu %s", at ? ", " : " (", k, wt_role_name(r));
        nit += k;
    }
    if (nw)
        layers |= WT_ASSESS_WALL;
    snprintf(found[2], FOUND_LEN, "%zu wall meters (pdu_outlet, bmc) in the topology", nw);
    if (nf)
        layers |= WT_ASSESS_FACILITY;
    char cs[16] = "not stated";
    if (cat)
        snprintf(cs, sizeof cs, "%d", cat);
    snprintf(found[3], FOUND_LEN, "%zu facility_total and %zu IT meters%s%s%s%s in the topology",
             nf, nit, itr, nit ? "; PUE category " : "", nit ? cs : "", nit ? ")" : "");
    /* carbon: a zone, and a source, a static value or intensities stored */
    struct wt_carbon_conf cf;
    struct wt_err err = {{0}};
    if (wt_carbon_conf_from(&c->cfg, &cf, &err) == 0) {
        const char *zone = wt_carbon_zone_of(&cf, NULL);
        struct wt_assess_cover cv;
        int64_t nwst = 0;
        size_t stored = 0;
        if (zone && zone[0] &&
            layer_cover(c, 4, now - JOBS_RECENT_NS, now + 3600 * WT_NS_PER_S, &cv, &nwst) == 0)
            stored = cv.nseries;
        if (zone && zone[0] && (cf.nsrc || cf.has_static || stored))
            layers |= WT_ASSESS_CARBON;
        if (!zone || !zone[0])
            snprintf(found[4], FOUND_LEN, "no carbon.zone");
        else
            snprintf(found[4], FOUND_LEN,
                     "zone %s: %zu sources, %s static value, %zu intensity steps stored around "
                     "now",
                     zone, cf.nsrc, cf.has_static ? "a" : "no", stored);
    } else {
        snprintf(found[4], FOUND_LEN, "%s", err.msg);
    }
    /* jobs: one running, or one in the last 24 h */
    struct spans sp = {0};
    size_t njobs = 0, running = 0;
    if (job_spans(c, now - JOBS_RECENT_NS, now, &sp, &njobs, &running) == 0 && njobs)
        layers |= WT_ASSESS_JOBS;
    free(sp.s);
    snprintf(found[6], FOUND_LEN, "%zu jobs in the last 24 h, %zu running", njobs, running);
    /* inlet: an inlet sensor with a reading in the last 10 min */
    struct wt_assess_cover cv;
    int64_t newest = 0;
    size_t ninlet = 0;
    if (layer_cover(c, 7, now - RECENT_NS, now, &cv, &newest) == 0 && newest > now - RECENT_NS)
        ninlet = cv.nseries;
    if (ninlet)
        layers |= WT_ASSESS_INLET;
    snprintf(found[7], FOUND_LEN, "%zu inlet temperature sensors read in the last 10 min", ninlet);
    return layers;
}

/* Prints the checklist: each layer, found or missing, and what to set for one missing. */
static void print_checklist(FILE *o, unsigned layers, char found[][FOUND_LEN])
{
    for (unsigned i = 0; i < WT_ASSESS_NLAYERS; i++) {
        bool ok = layers & (1u << i);
        fprintf(o, "  [%c] %-8s %s\n", ok ? 'x' : ' ', wt_assess_layer_name(i), found[i]);
        if (!ok)
            fprintf(o, "               to add it: %s\n", wt_assess_how_to[i]);
    }
}

/* Loads the record; prints the error naming the file (1 when none or unreadable). */
static int load(const struct ctx *c, struct wt_assess *a)
{
    struct wt_err err = {{0}};
    if (wt_assess_load(c->path, a, &err) == 0)
        return 0;
    fprintf(stderr, "wattage %s: %s\n", c->cmd, err.msg);
    return 1;
}

static void fmt_time(int64_t t, char *buf, size_t n)
{
    wt_time_format(t, 0, buf, n);
}

/* ---- start ---- */

static int cmd_start(int argc, char **argv)
{
    const struct wt_cli_form *f = &wt_cli_form_assess_start;
    struct wt_cli_common co = {0};
    const char *dur = DEFAULT_DURATION, *name = "assessment";
    bool force = false;
    int c, rc;
    optind = 1;
    while ((c = wt_cli_next(f, argc, argv, &co)) != -1) {
        if (c == 'd')
            dur = optarg;
        else if (c == 'n')
            name = optarg;
        else if (c == 'f')
            force = true;
        else
            return c == WT_CLI_HELP ? 0 : 2;
    }
    if ((rc = wt_cli_no_operands(f, argc, argv)) != 0)
        return rc;
    int64_t dur_ns = 0;
    if (wt_duration_parse(dur, &dur_ns) != 0 || dur_ns < WT_NS_PER_S || dur_ns > MAX_DURATION_NS) {
        fprintf(stderr,
                "wattage assess start: --duration: expected a duration from 1 s to 366 days like "
                "72h, 90m or 20s (got \"%s\")\n",
                dur);
        return 2;
    }
    struct wt_assess a = {0};
    if (!name[0] || strlen(name) >= sizeof a.name) {
        fprintf(stderr, "wattage assess start: --name: expected 1 to %zu characters (got \"%s\")\n",
                sizeof a.name - 1, name);
        return 2;
    }
    struct ctx x;
    if ((rc = ctx_open(&x, "assess start", &co)) != 0)
        goto out;
    int64_t now = wt_now_real_ns();
    struct wt_assess old;
    struct wt_err err = {{0}};
    int lr = wt_assess_load(x.path, &old, &err);
    if (lr == 0 && now < old.end_ns && !force) {
        char s[40], e[40];
        fmt_time(old.start_ns, s, sizeof s);
        fmt_time(old.end_ns, e, sizeof e);
        fprintf(stderr,
                "wattage assess start: %s: the assessment \"%s\" is running (started %s, ends %s): "
                "see `wattage assess status`, or replace it with --force\n",
                x.path, old.name, s, e);
        rc = 1;
        goto out;
    }
    if (lr != 0 && lr != -ENOENT && !force) {
        fprintf(stderr, "wattage assess start: %s; replace it with --force\n", err.msg);
        rc = 1;
        goto out;
    }
    ask_daemon(&x, &co.conn);
    if (!x.status) {
        fprintf(stderr,
                "wattage assess start: no daemon answers (%s): the assessment measures what the "
                "running daemon records; start it (wattage run) with the store %s, or point to it "
                "with --url or -c\n",
                x.daemon_why, x.cfg.store.path);
        rc = 1;
        goto out;
    }
    if (x.daemon_store[0] && !same_file(x.daemon_store, x.cfg.store.path)) {
        fprintf(stderr,
                "wattage assess start: %s writes the store %s, not %s: name the daemon's store "
                "with --db, or its address with --url\n",
                x.daemon_why, x.daemon_store, x.cfg.store.path);
        rc = 1;
        goto out;
    }
    char found[WT_ASSESS_NLAYERS][FOUND_LEN];
    snprintf(a.name, sizeof a.name, "%s", name);
    a.start_ns = now - now % WT_NS_PER_S; /* whole seconds: the ticks fall on them */
    a.end_ns = a.start_ns + dur_ns;
    a.layers = detect(&x, now, found);
    if ((rc = wt_assess_save(x.path, &a, &err)) != 0) {
        fprintf(stderr, "wattage assess start: %s\n", err.msg);
        rc = 1;
        goto out;
    }
    if (lr == 0)
        printf("replaced the assessment \"%s\"%s\n", old.name,
               now < old.end_ns ? " (it was still running: --force)" : " (finished)");
    char s[40], e[40];
    fmt_time(a.start_ns, s, sizeof s);
    fmt_time(a.end_ns, e, sizeof e);
    int have = __builtin_popcount(a.layers);
    printf("assessment \"%s\" started %s, ends %s (%s); record %s\n", a.name, s, e,
           wt_assess_fmt_dur(dur_ns).s, x.path);
    printf("measurable: %d of %d layers\n", have, WT_ASSESS_NLAYERS);
    print_checklist(stdout, a.layers, found);
    rc = 0;
out:
    ctx_close(&x);
    return rc;
}

/* ---- status ---- */

/* Coverage of every layer over [start, to], and the layers now when the daemon answers. */
static int gather(struct ctx *x, const struct wt_cli_conn *conn, const struct wt_assess *a,
                  struct wt_assess_figures *g)
{
    g->now = wt_now_real_ns();
    g->to = g->now < a->end_ns ? g->now : a->end_ns;
    ask_daemon(x, conn);
    g->have_now =
        x->status && (!x->daemon_store[0] || same_file(x->daemon_store, x->cfg.store.path));
    if (g->have_now)
        g->now_layers = detect(x, g->now, g->found);
    for (unsigned i = 0; i < WT_ASSESS_NLAYERS; i++) {
        if (g->to > a->start_ns) {
            int rc = layer_cover(x, i, a->start_ns, g->to, &g->cv[i], NULL);
            if (rc) {
                fprintf(stderr, "wattage %s: cannot read the %s layer's readings: %s\n", x->cmd,
                        wt_assess_layer_name(i), strerror(-rc));
                return 1;
            }
        } else {
            memset(&g->cv[i], 0, sizeof g->cv[i]);
        }
    }
    return 0;
}

static cJSON *status_json(const struct ctx *x, const struct wt_assess *a,
                          const struct wt_assess_figures *g)
{
    cJSON *o = cJSON_CreateObject();
    char s[40];
    cJSON_AddStringToObject(o, "name", a->name);
    fmt_time(a->start_ns, s, sizeof s);
    cJSON_AddStringToObject(o, "start", s);
    fmt_time(a->end_ns, s, sizeof s);
    cJSON_AddStringToObject(o, "end", s);
    cJSON_AddNumberToObject(o, "start_s", (double)a->start_ns / 1e9);
    cJSON_AddNumberToObject(o, "end_s", (double)a->end_ns / 1e9);
    cJSON_AddNumberToObject(o, "now_s", (double)g->now / 1e9);
    double el = (double)(g->to - a->start_ns) / 1e9;
    cJSON_AddNumberToObject(o, "elapsed_seconds", el > 0 ? el : 0);
    double rem = (double)(a->end_ns - g->now) / 1e9;
    cJSON_AddNumberToObject(o, "remaining_seconds", rem > 0 ? rem : 0);
    cJSON_AddBoolToObject(o, "finished", g->now >= a->end_ns);
    cJSON_AddNumberToObject(o, "baseline_end_s", (double)wt_assess_baseline_end(a) / 1e9);
    uint32_t hm = wt_assess_hours_seen(a->start_ns, g->to);
    cJSON *h = cJSON_AddArrayToObject(o, "hours_seen");
    for (int i = 0; i < 24; i++)
        if (hm & (1u << i))
            cJSON_AddItemToArray(h, cJSON_CreateNumber(i));
    cJSON_AddNumberToObject(o, "hours_seen_count", wt_assess_hours_count(hm));
    cJSON_AddStringToObject(o, "record", x->path);
    cJSON_AddStringToObject(o, "store", x->cfg.store.path);
    cJSON_AddBoolToObject(o, "daemon", g->have_now);
    cJSON *ls = cJSON_AddArrayToObject(o, "layers");
    for (unsigned i = 0; i < WT_ASSESS_NLAYERS; i++) {
        const struct wt_assess_cover *cv = &g->cv[i];
        cJSON *l = cJSON_CreateObject();
        cJSON_AddStringToObject(l, "layer", wt_assess_layer_name(i));
        cJSON_AddBoolToObject(l, "at_start", (a->layers & (1u << i)) != 0);
        if (g->have_now) {
            cJSON_AddBoolToObject(l, "now", (g->now_layers & (1u << i)) != 0);
            cJSON_AddStringToObject(l, "found", g->found[i]);
        } else {
            cJSON_AddNullToObject(l, "now");
        }
        if (!((g->have_now ? g->now_layers : a->layers) & (1u << i)))
            cJSON_AddStringToObject(l, "to_add", wt_assess_how_to[i]);
        cJSON_AddNumberToObject(l, "coverage", cv->window_s > 0 ? cv->covered_s / cv->window_s : 0);
        cJSON_AddNumberToObject(l, "covered_seconds", cv->covered_s);
        cJSON_AddNumberToObject(l, "window_seconds", cv->window_s);
        cJSON_AddNumberToObject(l, "series", (double)cv->nseries);
        cJSON_AddNumberToObject(l, "gaps", (double)cv->ngaps);
        cJSON_AddNumberToObject(l, "longest_gap_seconds", cv->longest_gap_s);
        if (cv->ngaps)
            cJSON_AddNumberToObject(l, "longest_gap_from_s", (double)cv->longest_gap_from_ns / 1e9);
        else
            cJSON_AddNullToObject(l, "longest_gap_from_s");
        cJSON_AddItemToArray(ls, l);
    }
    return o;
}

static void print_status(FILE *o, const struct wt_assess *a, const struct wt_assess_figures *g)
{
    char s[40], e[40], b[40];
    fmt_time(a->start_ns, s, sizeof s);
    fmt_time(a->end_ns, e, sizeof e);
    fmt_time(wt_assess_baseline_end(a), b, sizeof b);
    struct wt_assess_dur tot = wt_assess_fmt_dur(a->end_ns - a->start_ns);
    fprintf(o, "assessment \"%s\": %s to %s (%s)\n", a->name, s, e, tot.s);
    if (g->now >= a->end_ns)
        fprintf(o, "finished: %s elapsed\n", tot.s);
    else
        fprintf(o, "running: %s elapsed, %s remaining\n", wt_assess_fmt_dur(g->to - a->start_ns).s,
                wt_assess_fmt_dur(a->end_ns - g->now).s);
    fprintf(o, "baseline: until %s\n", b);
    uint32_t hm = wt_assess_hours_seen(a->start_ns, g->to);
    fprintf(o, "hours of day seen (UTC): %d of 24", wt_assess_hours_count(hm));
    for (int i = 0, first = 1; i < 24; i++)
        if (hm & (1u << i)) {
            fprintf(o, "%s%02d", first ? ": " : " ", i);
            first = 0;
        }
    fprintf(o, "\n%s\n", g->have_now ? "" : "layers now: unknown (the daemon does not answer)");
    fprintf(o, "%-9s %-8s %-4s %9s %6s %5s  %s\n", "layer", "at start", "now", "coverage", "series",
            "gaps", "longest gap");
    for (unsigned i = 0; i < WT_ASSESS_NLAYERS; i++) {
        const struct wt_assess_cover *cv = &g->cv[i];
        char lg[80] = "-";
        if (cv->ngaps) {
            char t[40];
            fmt_time(cv->longest_gap_from_ns, t, sizeof t);
            snprintf(lg, sizeof lg, "%s from %s",
                     wt_assess_fmt_dur((int64_t)(cv->longest_gap_s * 1e9)).s, t);
        }
        fprintf(o, "%-9s %-8s %-4s %8.1f%% %6zu %5zu  %s\n", wt_assess_layer_name(i),
                a->layers & (1u << i) ? "yes" : "no",
                !g->have_now                ? "?"
                : g->now_layers & (1u << i) ? "yes"
                                            : "no",
                cv->window_s > 0 ? 100 * cv->covered_s / cv->window_s : 0.0, cv->nseries, cv->ngaps,
                lg);
    }
    unsigned lack = g->have_now ? g->now_layers : a->layers;
    for (unsigned i = 0; i < WT_ASSESS_NLAYERS; i++)
        if (!(lack & (1u << i)))
            fprintf(o, "to add %s: %s\n", wt_assess_layer_name(i), wt_assess_how_to[i]);
}

static int cmd_status(int argc, char **argv)
{
    const struct wt_cli_form *f = &wt_cli_form_assess_status;
    struct wt_cli_common co = {0};
    int c, rc;
    optind = 1;
    while ((c = wt_cli_next(f, argc, argv, &co)) != -1)
        return c == WT_CLI_HELP ? 0 : 2;
    if ((rc = wt_cli_no_operands(f, argc, argv)) != 0)
        return rc;
    struct ctx x;
    struct wt_assess a;
    struct wt_assess_figures *g = calloc(1, sizeof *g);
    if (!g)
        return 1;
    if ((rc = ctx_open(&x, "assess status", &co)) == 0 && (rc = load(&x, &a)) == 0 &&
        (rc = gather(&x, &co.conn, &a, g)) == 0) {
        if (co.json) {
            cJSON *o = status_json(&x, &a, g);
            char *s = cJSON_Print(o);
            printf("%s\n", s ? s : "{}");
            cJSON_free(s);
            cJSON_Delete(o);
        } else {
            print_status(stdout, &a, g);
        }
    }
    free(g);
    ctx_close(&x);
    return rc;
}

/* ---- report ---- */

static void add_num_or_null(cJSON *o, const char *k, bool have, double v)
{
    if (have && isfinite(v))
        cJSON_AddNumberToObject(o, k, v);
    else
        cJSON_AddNullToObject(o, k);
}

static cJSON *section_json(const struct ctx *x, const struct wt_assess_section *sc)
{
    cJSON *o = status_json(x, sc->a, sc->g);
    char st[200];
    wt_assess_state_line(sc, st, sizeof st);
    cJSON_AddStringToObject(o, "state", st);
    cJSON_AddNumberToObject(o, "from_s", (double)sc->a->start_ns / 1e9);
    cJSON_AddNumberToObject(o, "to_s", (double)sc->g->to / 1e9);
    if (!sc->cmp) {
        cJSON_AddNullToObject(o, "baseline_vs_rest");
        return o;
    }
    cJSON *bv = cJSON_AddObjectToObject(o, "baseline_vs_rest");
    cJSON_AddNumberToObject(bv, "baseline_from_s", (double)sc->a->start_ns / 1e9);
    cJSON_AddNumberToObject(bv, "baseline_to_s", (double)sc->bend / 1e9);
    cJSON_AddNumberToObject(bv, "rest_from_s", (double)sc->bend / 1e9);
    cJSON_AddNumberToObject(bv, "rest_to_s", (double)sc->g->to / 1e9);
    cJSON *fs = cJSON_AddArrayToObject(bv, "figures");
    for (size_t i = 0; i < WT_REPORT_FIGURES; i++) {
        const struct wt_report_cmp_row *r = &sc->cmp->rows[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", r->key);
        if (r->unit)
            cJSON_AddStringToObject(e, "unit", r->unit);
        add_num_or_null(e, "baseline", r->have_a, r->a);
        add_num_or_null(e, "rest", r->have_b, r->b);
        add_num_or_null(e, "difference", r->have_a && r->have_b, r->diff);
        add_num_or_null(e, "noise", r->have_noise, r->noise);
        if (r->have_noise)
            cJSON_AddBoolToObject(e, "exceeds_noise", r->exceeds);
        else
            cJSON_AddNullToObject(e, "exceeds_noise");
        cJSON_AddItemToArray(fs, e);
    }
    return o;
}

/*
 * Writes the assessment: the section, then the report. HTML: the report's document with the
 * section right after its <body> (its styles apply); JSON: the report's object with
 * "assessment" added; Markdown: the section, then the report's text. 0 or -EIO.
 */
static int write_all(const struct ctx *x, const struct wt_assess_section *sc,
                     const struct wt_report *r, const char *format, FILE *out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return -ENOMEM;
    int rc = strcmp(format, "html") == 0 ? wt_report_write_html(r, m)
             : strcmp(format, "md") == 0 ? wt_report_write_md(r, m)
                                         : wt_report_write_json(r, m);
    if (fclose(m) != 0 && rc == 0)
        rc = -EIO;
    if (rc)
        goto out;
    if (strcmp(format, "html") == 0) {
        const char *body = strstr(buf, "<body>");
        size_t at = body ? (size_t)(body - buf) + 6 : 0;
        if (body && buf[at] == '\n')
            at++;
        fwrite(buf, 1, at, out);
        wt_assess_section_html(out, sc);
        fputs(buf + at, out);
    } else if (strcmp(format, "md") == 0) {
        wt_assess_section_md(out, sc);
        fputs(buf, out);
    } else {
        cJSON *doc = cJSON_Parse(buf);
        if (!doc) {
            rc = -EIO;
            goto out;
        }
        cJSON_AddItemToObject(doc, "assessment", section_json(x, sc));
        char *s = cJSON_Print(doc);
        cJSON_Delete(doc);
        if (!s) {
            rc = -ENOMEM;
            goto out;
        }
        fprintf(out, "%s\n", s);
        cJSON_free(s);
    }
    rc = ferror(out) ? -EIO : 0;
out:
    free(buf);
    return rc;
}

static int cmd_report(int argc, char **argv)
{
    const struct wt_cli_form *f = &wt_cli_form_assess_report;
    struct wt_cli_common co = {0};
    const char *out = NULL, *format = "html";
    int c, rc;
    optind = 1;
    while ((c = wt_cli_next(f, argc, argv, &co)) != -1) {
        if (c == 'o')
            out = optarg;
        else if (c == 'F')
            format = optarg;
        else
            return c == WT_CLI_HELP ? 0 : 2;
    }
    if ((rc = wt_cli_no_operands(f, argc, argv)) != 0)
        return rc;
    if (strcmp(format, "html") && strcmp(format, "json") && strcmp(format, "md")) {
        fprintf(stderr, "wattage assess report: --format: expected html, json or md, not '%s'\n",
                format);
        return 2;
    }
    struct ctx x = {0};
    struct wt_assess a;
    struct wt_assess_figures *g = calloc(1, sizeof *g);
    struct wt_report_cmp *cmp = calloc(1, sizeof *cmp);
    struct wt_report r;
    bool have_r = false, have_cmp = false;
    struct wt_err err = {{0}};
    FILE *fo = stdout;
    if (!g || !cmp) {
        rc = 1;
        goto out;
    }
    if ((rc = ctx_open(&x, "assess report", &co)) || (rc = load(&x, &a)) ||
        (rc = gather(&x, &co.conn, &a, g)))
        goto out;
    if (g->to < a.start_ns + WT_NS_PER_S) {
        char s[40];
        fmt_time(a.start_ns, s, sizeof s);
        fprintf(stderr,
                "wattage assess report: the assessment \"%s\" starts at %s: nothing to "
                "report yet\n",
                a.name, s);
        rc = 1;
        goto out;
    }
    if ((rc = wt_report_build(x.st, x.cfg.store.path, &x.cfg, a.start_ns, g->to, &r, &err))) {
        fprintf(stderr, "wattage assess report: %s\n", err.msg[0] ? err.msg : strerror(-rc));
        rc = rc == -EINVAL ? 2 : 1;
        goto out;
    }
    have_r = true;
    int64_t bend = wt_assess_baseline_end(&a);
    if (g->to >= bend + WT_NS_PER_S) {
        if ((rc = wt_report_compare(x.st, x.cfg.store.path, &x.cfg, a.start_ns, bend, bend, g->to,
                                    cmp, &err))) {
            fprintf(stderr, "wattage assess report: baseline against the rest: %s\n",
                    err.msg[0] ? err.msg : strerror(-rc));
            rc = 1;
            goto out;
        }
        have_cmp = true;
    }
    for (size_t i = 0; i < r.nmissing; i++)
        fprintf(stderr, "wattage assess report: missing: %s\n", r.missing[i]);
    if (g->now < a.end_ns)
        fprintf(stderr, "wattage assess report: unfinished: %s of %s so far\n",
                wt_assess_fmt_dur(g->to - a.start_ns).s,
                wt_assess_fmt_dur(a.end_ns - a.start_ns).s);
    if (out && !(fo = fopen(out, "w"))) {
        fprintf(stderr, "wattage assess report: -o %s: %s\n", out, strerror(errno));
        rc = 1;
        goto out;
    }
    struct wt_assess_section sc = {&a, g, have_cmp ? cmp : NULL, bend};
    rc = write_all(&x, &sc, &r, format, fo);
    if (fo != stdout && fclose(fo) != 0 && rc == 0)
        rc = -EIO;
    if (rc) {
        fprintf(stderr, "wattage assess report: %s: cannot write the report\n",
                out ? out : "stdout");
        rc = 1;
    }
out:
    if (have_r)
        wt_report_free(&r);
    if (have_cmp)
        wt_report_cmp_free(cmp);
    free(cmp);
    free(g);
    ctx_close(&x);
    return rc;
}

int wt_cmd_assess(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        FILE *out = argc < 2 ? stderr : stdout;
        wt_cli_help(out, &wt_cli_form_assess_start);
        wt_cli_help(out, &wt_cli_form_assess_status);
        wt_cli_help(out, &wt_cli_form_assess_report);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "start") == 0)
        return cmd_start(argc - 1, argv + 1);
    if (strcmp(argv[1], "status") == 0)
        return cmd_status(argc - 1, argv + 1);
    if (strcmp(argv[1], "report") == 0)
        return cmd_report(argc - 1, argv + 1);
    fprintf(stderr, "wattage assess: unknown subcommand '%s' (start, status, report)\n", argv[1]);
    return 2;
}
