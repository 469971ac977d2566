/* SPDX-License-Identifier: MIT */
/*
 * `wattage job start|mark|end|show`, `wattage jobs [--json]`, `wattage jobs compare A B`: the
 * jobs API of the local daemon (see audit/jobs.h), through the client of src/cli/client.c.
 * Exit status: 0 ok, 1 the daemon is unreachable or failed, 2 bad usage or input (a 4xx).
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/clock.h"
#include "store/promsrc.h"

/* A job reference for a path: names and ids are [A-Za-z0-9._-]; anything else is refused here. */
static int check_ref(const char *cmd, const char *ref)
{
    size_t n = strlen(ref);
    if (n == 0 || n > 64 ||
        strspn(ref, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n) {
        fprintf(stderr, "wattage %s: '%s' is not a job name or id\n", cmd, ref);
        return 2;
    }
    return 0;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* A number that may be missing (an older daemon): 0. */
static double num0(const cJSON *o, const char *k)
{
    double v = num(o, k);
    return isnan(v) ? 0 : v;
}

/* The error bar of an energy figure (store/uncert.h), 0 from a daemon that sends none. */
static double bar(const cJSON *o)
{
    return num0(o, "uncertainty_joules");
}

static const char *str(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return s ? s : "";
}

static void print_json(const cJSON *v)
{
    char *t = cJSON_Print(v);
    if (t)
        printf("%s\n", t);
    cJSON_free(t);
}

static void tags_line(const cJSON *tags, char *buf, size_t n)
{
    size_t off = 0;
    const cJSON *t;
    buf[0] = '\0';
    cJSON_ArrayForEach(t, tags)
    {
        if (off < n)
            off += (size_t)snprintf(buf + off, n - off, "%s%s=%s", off ? " " : "", t->string,
                                    cJSON_GetStringValue(t) ? t->valuestring : "?");
    }
}

static void gpus_line(const cJSON *gpus, char *buf, size_t n)
{
    size_t off = 0;
    const cJSON *g;
    snprintf(buf, n, "all");
    cJSON_ArrayForEach(g, gpus)
    {
        if (off < n)
            off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? "," : "",
                                    cJSON_GetStringValue(g) ? g->valuestring : "?");
    }
}

/* "12.3" (f: 'f' or 'g' with prec digits), or "-" for a figure the counters do not allow. */
static const char *fmtv(double v, char f, int prec, char *buf, size_t n)
{
    if (isnan(v))
        return "-";
    snprintf(buf, n, f == 'g' ? "%.*g" : "%.*f", prec, v);
    return buf;
}

/* The job's time-matched emissions ("carbon" of the API, audit/carbon.h), with its flags. */
static void print_carbon(FILE *out, const cJSON *c)
{
    char m[96] = "";
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "known"))) {
        fprintf(out,
                "  carbon    unknown: no intensity series for zone \"%s\" and no "
                "carbon.static_gco2_per_kwh\n",
                str(c, "zone"));
        return;
    }
    if (!isnan(num(c, "gco2e_market")))
        snprintf(m, sizeof m, "; market-based %.1f gCO2e", num(c, "gco2e_market"));
    fprintf(out,
            "  carbon    %.1f gCO2e (zone %s, mean %.1f gCO2e/kWh, intensity %s), "
            "PUE %.2f %s%s\n",
            num(c, "gco2e"), str(c, "zone")[0] ? str(c, "zone") : "-",
            num(c, "intensity_mean_g_per_kwh"), str(c, "intensity_source"), num(c, "pue"),
            str(c, "pue_source"), m);
}

void wt_cli_print_job(FILE *out, const cJSON *j)
{
    char a[512], b[64], c[64];
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "kpi");
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(j, "nodes"), *nd;
    if (nodes)
        fprintf(out, "job %s (%s) on %d nodes, from %s\n", str(j, "name"), str(j, "state"),
                cJSON_GetArraySize(nodes), str(j, "source"));
    else
        fprintf(out, "job %.0f %s (%s) on %s\n", num(j, "id"), str(j, "name"), str(j, "state"),
                str(j, "node"));
    cJSON_ArrayForEach(nd, nodes)
    {
        const cJSON *nk = cJSON_GetObjectItemCaseSensitive(nd, "kpi");
        fprintf(out, "  node      %-20s job %.0f  %.6f kWh (%.1f \u00b1 %.3g J)  coverage %.1f%%\n",
                str(nd, "node"), num(nd, "id"), num(nk, "energy_kwh"), num(nk, "energy_joules"),
                bar(nk), 100 * num(nk, "coverage"));
    }
    tags_line(cJSON_GetObjectItemCaseSensitive(j, "tags"), a, sizeof a);
    if (a[0])
        fprintf(out, "  tags      %s\n", a);
    gpus_line(cJSON_GetObjectItemCaseSensitive(j, "gpus"), a, sizeof a);
    fprintf(out, "  gpus      %s\n", a);
    fprintf(out, "  window    %s .. %s (%.1f s)\n", str(j, "start"),
            str(j, "end")[0] ? str(j, "end") : "now", num(k, "duration_s"));
    fprintf(out,
            "  energy    %.6f kWh (%.1f \u00b1 %.3g J), mean %.1f W, peak %s W, coverage %.1f%%\n",
            num(k, "energy_kwh"), num(k, "energy_joules"), bar(k), num(k, "mean_power_w"),
            fmtv(num(k, "peak_power_w"), 'f', 1, b, sizeof b), 100 * num(k, "coverage"));
    const cJSON *carbon = cJSON_GetObjectItemCaseSensitive(j, "carbon");
    if (carbon)
        print_carbon(out, carbon);
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(j, "gpu_energy"))
    {
        fprintf(out, "    gpu %-3s %-28s %12.1f \u00b1 %-8.3g J  %s\n", str(g, "gpu"),
                str(g, "uuid"), num(g, "energy_joules"), bar(g), str(g, "method"));
    }
    fprintf(out, "  cpu       %.1f \u00b1 %.3g J (the node's CPUs, not in the job's energy)\n",
            num(k, "cpu_energy_joules"), num0(k, "cpu_uncertainty_joules"));
    if (!isnan(num(k, "tokens_per_kwh")))
        fprintf(out, "  tokens    %.0f: %.4g tokens/kWh, %.4g J/token\n",
                num(cJSON_GetObjectItemCaseSensitive(j, "counters"), "tokens"),
                num(k, "tokens_per_kwh"), num(k, "joules_per_token"));
    if (!isnan(num(k, "samples_per_s_per_w")))
        fprintf(out, "  samples   %.4g samples/s/W\n", num(k, "samples_per_s_per_w"));
    if (!isnan(num(k, "joules_per_request")))
        fprintf(out, "  requests  %.4g J/request (p99 latency up to %s s)\n",
                num(k, "joules_per_request"),
                fmtv(num(k, "latency_p99_s_max"), 'g', 4, b, sizeof b));
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "energy_to_target");
    if (t) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "reached")))
            fprintf(out, "  target    %s %s %g reached at %s after %.6f kWh (%.1f \u00b1 %.3g J)\n",
                    str(t, "metric"), str(t, "reached_when"), num(t, "target"), str(t, "at"),
                    num(t, "energy_kwh"), num(t, "energy_joules"), bar(t));
        else
            fprintf(out, "  target    %s %s %g not reached\n", str(t, "metric"),
                    str(t, "reached_when"), num(t, "target"));
    }
    const cJSON *w;
    cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(j, "warnings"))
    {
        if (cJSON_IsString(w))
            fprintf(out, "  warning: %s\n", w->valuestring);
    }
    const cJSON *phases = cJSON_GetObjectItemCaseSensitive(j, "phases");
    if (cJSON_GetArraySize(phases) == 0)
        return;
    fprintf(out, "  %-8s %5s %9s %12s %8s %10s %8s %11s %10s %10s %10s %8s %6s%s\n", "phase",
            "index", "seconds", "joules", "\u00b1 J", "kWh", "mean W", "tokens/kWh", "J/token",
            "samp/s/W", "J/request", "p99 s", "cov%", carbon ? "      gCO2e" : "");
    const cJSON *p;
    cJSON_ArrayForEach(p, phases)
    {
        const cJSON *pk = cJSON_GetObjectItemCaseSensitive(p, "kpi");
        char s1[32], s2[32], s3[32], s4[32], s5[32];
        char s6[40], s7[32];
        if (carbon)
            snprintf(s6, sizeof s6, " %10s", fmtv(num(pk, "gco2e"), 'f', 1, s7, sizeof s7));
        else
            s6[0] = '\0';
        fprintf(
            out, "  %-8.8s %5s %9.2f %12.1f %8.3g %10.6f %8.1f %11s %10s %10s %10s %8s %6.1f%s\n",
            str(p, "kind"), fmtv(num(p, "index"), 'f', 0, c, sizeof c), num(pk, "duration_s"),
            num(pk, "energy_joules"), bar(pk), num(pk, "energy_kwh"), num(pk, "mean_power_w"),
            fmtv(num(pk, "tokens_per_kwh"), 'g', 4, s1, sizeof s1),
            fmtv(num(pk, "joules_per_token"), 'g', 4, s2, sizeof s2),
            fmtv(num(pk, "samples_per_s_per_w"), 'g', 4, s3, sizeof s3),
            fmtv(num(pk, "joules_per_request"), 'g', 4, s4, sizeof s4),
            fmtv(num(pk, "latency_p99_s"), 'g', 4, s5, sizeof s5), 100 * num(pk, "coverage"), s6);
    }
}

void wt_cli_print_ended(FILE *out, cJSON *j, bool json, bool final)
{
    if (json) {
        cJSON_DeleteItemFromObjectCaseSensitive(j, "provisional");
        cJSON_AddBoolToObject(j, "provisional", !final);
        char *t = cJSON_PrintUnformatted(j);
        if (t)
            fprintf(out, "%s\n", t);
        cJSON_free(t);
        return;
    }
    wt_cli_print_job(out, j);
    if (!final)
        fprintf(out,
                "  provisional: the store covers %.1f%% of the window so far; `wattage job show "
                "%.0f` gives the final figures\n",
                100 * num(cJSON_GetObjectItemCaseSensitive(j, "kpi"), "coverage"), num(j, "id"));
}

/* Adds "k=v" to obj (a tag or target); returns 0 or 2 with a message. */
static int add_kv(const char *cmd, const char *opt, const char *kv, cJSON *obj, bool number)
{
    const char *eq = strchr(kv, '=');
    char key[64];
    if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof key) {
        fprintf(stderr, "wattage %s: %s: expected KEY=VALUE (got \"%s\")\n", cmd, opt, kv);
        return 2;
    }
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = '\0';
    if (number) {
        char *end;
        double x = strtod(eq + 1, &end);
        if (end == eq + 1 || *end) {
            fprintf(stderr, "wattage %s: %s: %s: expected a number (got \"%s\")\n", cmd, opt, key,
                    eq + 1);
            return 2;
        }
        cJSON_AddNumberToObject(obj, key, x);
    } else {
        cJSON_AddStringToObject(obj, key, eq + 1);
    }
    return 0;
}

int wt_cli_job_body(const char *cmd, const char *name, char **tags, int ntags, const char *gpus,
                    char **targets, int ntargets, char **out)
{
    cJSON *b = cJSON_CreateObject();
    int rc = 0;
    *out = NULL;
    if (!b)
        return 1;
    cJSON_AddStringToObject(b, "name", name);
    cJSON *t = cJSON_AddObjectToObject(b, "tags");
    for (int i = 0; i < ntags && !rc; i++)
        rc = add_kv(cmd, "--tag", tags[i], t, false);
    if (gpus && *gpus && !rc) {
        cJSON *g = cJSON_AddArrayToObject(b, "gpus");
        char *dup = strdup(gpus), *save = NULL;
        for (char *s = dup ? strtok_r(dup, ",", &save) : NULL; s; s = strtok_r(NULL, ",", &save)) {
            while (isspace((unsigned char)*s))
                s++;
            if (*s)
                cJSON_AddItemToArray(g, cJSON_CreateString(s));
        }
        free(dup);
    }
    if (ntargets && !rc) {
        cJSON *x = cJSON_AddObjectToObject(b, "target");
        for (int i = 0; i < ntargets && !rc; i++)
            rc = add_kv(cmd, "--target", targets[i], x, true);
    }
    if (!rc && !(*out = cJSON_PrintUnformatted(b)))
        rc = 1;
    cJSON_Delete(b);
    return rc;
}

#define MAX_KV 64

static const struct wt_cli_opt json_opt[] = {{"json", WT_OPT_JSON, NULL, "JSON instead of text"},
                                             {NULL}};

static const struct wt_cli_opt start_opts[] = {
    {"tag", 't', "K=V", "a tag of the job (model=llama3-8b...)", WT_OPT_REPEAT},
    {"gpus", 'g', "LIST", "its GPUs: indices or GPU- UUIDs, comma-separated (default every GPU)"},
    {"target", 'x', "M=X", "energy to a target: the first mark with counter M reaching X",
     WT_OPT_REPEAT},
    {"json", WT_OPT_JSON, NULL, "print the job as JSON (default its id)"},
    {NULL}};

const struct wt_cli_form wt_cli_form_job_start = {
    "job start", "NAME", "starts a job on the daemon and prints its id",
    __FILE__,    false,  {start_opts, wt_cli_conn_opts}};

/* job mark: the counters listed here, and any other --COUNTER X (ids from MARK_COUNTER up). */
#define MARK_COUNTER 0x100
static const struct wt_cli_opt mark_opts[] = {
    {"kind", 'k', "K", "the mark's kind: epoch (default), step, eval, any lower_snake_case word"},
    {"index", 'i', "N", "its index (an integer >= 0)"},
    {"begin", 'b', NULL, "only open the next phase of this kind (closes none)"},
    {"tokens", MARK_COUNTER, "N", "the tokens of the phase this mark closes (a delta)"},
    {"tokens-total", MARK_COUNTER + 1, "N", "the running total of tokens since the job's start"},
    {"samples", MARK_COUNTER + 2, "N", "the samples of the phase (a delta)"},
    {"samples-total", MARK_COUNTER + 3, "N", "the running total of samples"},
    {"requests", MARK_COUNTER + 4, "N", "the requests of the phase (a delta)"},
    {"requests-total", MARK_COUNTER + 5, "N", "the running total of requests"},
    {"accuracy", MARK_COUNTER + 6, "X", "a value at the mark (also for --target)"},
    {"latency-p99-s", MARK_COUNTER + 7, "S", "the phase's p99 latency in seconds"},
    {"json", WT_OPT_JSON, NULL, "print the stored mark as JSON"},
    {NULL}};

const struct wt_cli_form wt_cli_form_job_mark = {
    "job mark",
    "NAME [--COUNTER X]...",
    "adds a mark to a running job; any other --COUNTER X (lower_snake_case or with dashes) is "
    "a counter too",
    __FILE__,
    false,
    {mark_opts, wt_cli_conn_opts}};

static const struct wt_cli_opt end_opts[] = {
    {"wait", 'w', "S", "wait at most S seconds for the store to cover the window (default 5)"},
    {"json", WT_OPT_JSON, NULL, "print the job as JSON, with \"provisional\""},
    {NULL}};

const struct wt_cli_form wt_cli_form_job_end = {
    "job end", "NAME", "ends a job and prints its figures, final or labelled provisional",
    __FILE__,  false,  {end_opts, wt_cli_conn_opts}};

static const struct wt_cli_opt show_opts[] = {
    {"json", WT_OPT_JSON, NULL, "JSON instead of text"},
    {"source", WT_OPT_SOURCE, "URL",
     "the job over every node that ran it (the same NAME), from an engine that receives their "
     "remote write: prometheus://HOST:PORT, victoriametrics://HOST:PORT or http(s)://URL"},
    {NULL}};

const struct wt_cli_form wt_cli_form_job_show = {
    "job show", "NAME", "a job: its energy, carbon, KPIs and a table of phases",
    __FILE__,   false,  {show_opts, wt_cli_conn_opts}};

static const struct wt_cli_opt jobs_opts[] = {
    {"limit", 'n', "N", "the latest N jobs (default the daemon's, 50)"},
    {"json", WT_OPT_JSON, NULL, "JSON instead of a table"},
    {NULL}};

const struct wt_cli_form wt_cli_form_jobs = {"jobs",   "",    "the latest jobs with their energy",
                                             __FILE__, false, {jobs_opts, wt_cli_conn_opts}};

const struct wt_cli_form wt_cli_form_jobs_compare = {
    "jobs compare", "A B", "two jobs' KPIs side by side, and the tags that differ",
    __FILE__,       false, {json_opt, wt_cli_conn_opts}};

static int job_start(int argc, char **argv)
{
    const struct wt_cli_form *f = &wt_cli_form_job_start;
    struct wt_cli_common co = {0};
    char *tags[MAX_KV], *targets[4];
    int ntags = 0, ntargets = 0, c;
    const char *gpus = NULL;
    optind = 1;
    while ((c = wt_cli_next(f, argc, argv, &co)) != -1) {
        if (c == 't' && ntags < MAX_KV)
            tags[ntags++] = optarg;
        else if (c == 'g')
            gpus = optarg;
        else if (c == 'x' && ntargets < 4)
            targets[ntargets++] = optarg;
        else
            return c == WT_CLI_HELP ? 0 : 2;
    }
    if (optind != argc - 1) {
        wt_cli_help(stderr, f);
        return 2;
    }
    struct wt_cli_api api;
    char *body = NULL;
    cJSON *rep = NULL;
    int rc = wt_cli_api_setup(&co.conn, &api);
    if (rc || (rc = wt_cli_job_body("job start", argv[optind], tags, ntags, gpus, targets, ntargets,
                                    &body)))
        return rc;
    rc = wt_cli_api_json(&api, "job start", "POST", "/api/v1/jobs", body, &rep);
    cJSON_free(body);
    if (rc)
        return rc;
    if (co.json)
        print_json(rep);
    else
        printf("%.0f\n", num(rep, "id"));
    cJSON_Delete(rep);
    return 0;
}

/*
 * `job mark NAME [--kind K] [--index N] [--begin] [--COUNTER X | --COUNTER=X]...`: getopt cannot
 * take options it does not know, so this reads argv itself: what wt_cli_form_job_mark lists is
 * what it is, any other --word X is a counter.
 */
static int job_mark(int argc, char **argv)
{
    const struct wt_cli_form *f = &wt_cli_form_job_mark;
    struct wt_cli_common co = {0};
    const char *name = NULL;
    cJSON *b = cJSON_CreateObject();
    int rc = 2;
    if (!b)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL, *eq = NULL;
        const struct wt_cli_opt *o = NULL;
        char key[80];
        if (a[0] != '-') {
            if (name) {
                fprintf(stderr, "wattage job mark: unexpected argument '%s'\n", a);
                goto out;
            }
            name = a;
            continue;
        }
        if (a[1] != '-') { /* -c FILE, -h */
            if (strcmp(a, "-h") == 0)
                o = wt_cli_find_opt(f, "help");
            for (size_t t = 0; !o && a[1] && !a[2] && t < 3 && f->opts[t]; t++)
                for (const struct wt_cli_opt *x = f->opts[t]; x->name && !o; x++)
                    if ((x->flags & WT_OPT_SHORT) && x->id == a[1])
                        o = x;
            if (!o) {
                fprintf(stderr,
                        "wattage job mark: unknown option '%s'\nsee: wattage job mark --help\n", a);
                goto out;
            }
        } else {
            eq = strchr(a, '=');
            size_t kl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            if (kl == 0 || kl >= sizeof key) {
                fprintf(stderr, "wattage job mark: bad option '%s'\n", a);
                goto out;
            }
            memcpy(key, a + 2, kl);
            key[kl] = '\0';
            o = wt_cli_find_opt(f, key);
        }
        if (o && o->id == WT_CLI_HELP) {
            wt_cli_help(stdout, f);
            rc = 0;
            goto out;
        }
        if (o && !o->arg) {
            if (eq) {
                fprintf(stderr, "wattage job mark: --%s takes no value\n", o->name);
                goto out;
            }
            if (o->id == 'b')
                cJSON_AddTrueToObject(b, "begin");
            else
                wt_cli_shared_opt(o->id, NULL, &co);
            continue;
        }
        if (eq) {
            val = eq + 1;
        } else {
            if (++i == argc) {
                fprintf(stderr, "wattage job mark: %s needs a value\n", a);
                goto out;
            }
            val = argv[i];
        }
        if (o && wt_cli_shared_opt(o->id, val, &co))
            continue;
        if (o && o->id == 'k') {
            cJSON_AddStringToObject(b, "kind", val);
            continue;
        }
        /* --index, the counters listed and any other: a number, else the string as it is (the
         * daemon names the bad field). */
        if (o)
            snprintf(key, sizeof key, "%s", o->name);
        for (char *p = key; *p; p++)
            *p = *p == '-' ? '_' : *p;
        char *end;
        double x = strtod(val, &end);
        if (end != val && !*end)
            cJSON_AddNumberToObject(b, key, x);
        else
            cJSON_AddStringToObject(b, key, val);
    }
    if (!name) {
        wt_cli_help(stderr, f);
        goto out;
    }
    if ((rc = check_ref("job mark", name)) != 0)
        goto out;
    struct wt_cli_api api;
    if ((rc = wt_cli_api_setup(&co.conn, &api)) != 0)
        goto out;
    char path[128], *body = cJSON_PrintUnformatted(b);
    cJSON *rep = NULL;
    snprintf(path, sizeof path, "/api/v1/jobs/%s/marks", name);
    rc = body ? wt_cli_api_json(&api, "job mark", "POST", path, body, &rep) : 1;
    cJSON_free(body);
    const cJSON *w;
    cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(rep, "warnings"))
    {
        if (cJSON_IsString(w))
            fprintf(stderr, "wattage job mark: warning: %s\n", w->valuestring);
    }
    if (rc == 0 && co.json)
        print_json(rep);
    cJSON_Delete(rep);
out:
    cJSON_Delete(b);
    return rc;
}

/* `job show NAME --source URL`: the job over every node that ran it, from the engine. */
static int job_show_fleet(const char *source, const char *ref, cJSON **rep)
{
    struct wt_promsrc *ps = NULL;
    struct wt_err err = {{0}};
    if (wt_cli_open_source(source, &ps) != 0)
        return 2;
    int rc = wt_promsrc_job(ps, ref, wt_now_real_ns(), rep, &err);
    wt_promsrc_close(ps);
    if (rc) {
        fprintf(stderr, "wattage job show: %s\n", err.msg[0] ? err.msg : strerror(-rc));
        return rc == -ENOENT ? 2 : 1;
    }
    return 0;
}

/*
 * `job end NAME [--wait S]` and `job show NAME`. The end waits, like exec, until the store
 * covers the job's window (at most --wait, default 5 s), else labels the figures provisional.
 */
static int job_one(int argc, char **argv, bool end)
{
    const struct wt_cli_form *f = end ? &wt_cli_form_job_end : &wt_cli_form_job_show;
    const char *cmd = f->name;
    struct wt_cli_common co = {0};
    double wait_s = 5;
    int c;
    optind = 1;
    while ((c = wt_cli_next(f, argc, argv, &co)) != -1) {
        if (c != 'w')
            return c == WT_CLI_HELP ? 0 : 2;
        char *e;
        wait_s = strtod(optarg, &e);
        if (e == optarg || *e || !(wait_s >= 0 && wait_s <= 3600)) {
            fprintf(stderr,
                    "wattage job end: --wait: expected seconds from 0 to 3600 (got \"%s\")\n",
                    optarg);
            return 2;
        }
    }
    if (optind != argc - 1) {
        wt_cli_help(stderr, f);
        return 2;
    }
    struct wt_cli_api api;
    char path[128];
    cJSON *rep = NULL;
    int rc = check_ref(cmd, argv[optind]);
    if (rc)
        return rc;
    if (co.source) {
        rc = job_show_fleet(co.source, argv[optind], &rep);
    } else if ((rc = wt_cli_api_setup(&co.conn, &api)) == 0) {
        snprintf(path, sizeof path, "/api/v1/jobs/%s%s", argv[optind], end ? "/end" : "");
        rc = wt_cli_api_json(&api, cmd, end ? "POST" : "GET", path, end ? "{}" : NULL, &rep);
    }
    if (rc)
        return rc;
    if (end) {
        char id[32];
        bool final = false;
        snprintf(id, sizeof id, "%.0f", num(rep, "id"));
        rep = wt_cli_final_job(&api, id, rep, wait_s, &final);
        wt_cli_print_ended(stdout, rep, co.json, final);
    } else if (co.json) {
        print_json(rep);
    } else {
        wt_cli_print_job(stdout, rep);
    }
    cJSON_Delete(rep);
    return 0;
}

int wt_cmd_job(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        FILE *out = argc < 2 ? stderr : stdout;
        wt_cli_help(out, &wt_cli_form_job_start);
        wt_cli_help(out, &wt_cli_form_job_mark);
        wt_cli_help(out, &wt_cli_form_job_end);
        wt_cli_help(out, &wt_cli_form_job_show);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "start") == 0)
        return job_start(argc - 1, argv + 1);
    if (strcmp(argv[1], "mark") == 0)
        return job_mark(argc - 1, argv + 1);
    if (strcmp(argv[1], "end") == 0)
        return job_one(argc - 1, argv + 1, true);
    if (strcmp(argv[1], "show") == 0)
        return job_one(argc - 1, argv + 1, false);
    fprintf(stderr, "wattage job: unknown subcommand '%s' (start, mark, end, show)\n", argv[1]);
    return 2;
}

/* ---- jobs, jobs compare ---- */

static void compare_row(const char *label, const cJSON *ka, const cJSON *kb, const char *key,
                        char f, int prec)
{
    double a = num(ka, key), b = num(kb, key);
    char sa[48], sb[48], d[48] = "";
    if (isnan(a) && isnan(b))
        return;
    if (!isnan(a) && !isnan(b) && a != 0)
        snprintf(d, sizeof d, "%+.1f%%", 100 * (b - a) / fabs(a));
    printf("  %-22s %16s %16s %9s\n", label, fmtv(a, f, prec, sa, sizeof sa),
           fmtv(b, f, prec, sb, sizeof sb), d);
}

static int jobs_compare(const struct wt_cli_api *api, const struct wt_cli_common *co,
                        const char *ra, const char *rb)
{
    cJSON *a = NULL, *b = NULL;
    char path[128];
    int rc = check_ref("jobs compare", ra);
    if (rc || (rc = check_ref("jobs compare", rb)))
        return rc;
    snprintf(path, sizeof path, "/api/v1/jobs/%s", ra);
    if ((rc = wt_cli_api_json(api, "jobs compare", "GET", path, NULL, &a)) != 0)
        return rc;
    snprintf(path, sizeof path, "/api/v1/jobs/%s", rb);
    if ((rc = wt_cli_api_json(api, "jobs compare", "GET", path, NULL, &b)) != 0) {
        cJSON_Delete(a);
        return rc;
    }
    /* Tags that differ: in one only, or with other values. */
    cJSON *diff = cJSON_CreateObject();
    const cJSON *ta = cJSON_GetObjectItemCaseSensitive(a, "tags"),
                *tb = cJSON_GetObjectItemCaseSensitive(b, "tags"), *t;
    for (int pass = 0; pass < 2; pass++) {
        const cJSON *side = pass ? tb : ta;
        cJSON_ArrayForEach(t, side)
        {
            const cJSON *o = cJSON_GetObjectItemCaseSensitive(pass ? ta : tb, t->string);
            if (cJSON_GetObjectItemCaseSensitive(diff, t->string))
                continue;
            if (o && cJSON_Compare(o, t, true))
                continue;
            cJSON *pair = cJSON_CreateArray();
            const cJSON *va = pass ? o : t, *vb = pass ? t : o;
            cJSON_AddItemToArray(pair, va ? cJSON_Duplicate(va, 0) : cJSON_CreateNull());
            cJSON_AddItemToArray(pair, vb ? cJSON_Duplicate(vb, 0) : cJSON_CreateNull());
            cJSON_AddItemToObject(diff, t->string, pair);
        }
    }
    if (co->json) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToObject(r, "a", a);
        cJSON_AddItemToObject(r, "b", b);
        cJSON_AddItemToObject(r, "tags_differ", diff);
        print_json(r);
        cJSON_Delete(r);
        return 0;
    }
    const cJSON *ka = cJSON_GetObjectItemCaseSensitive(a, "kpi"),
                *kb = cJSON_GetObjectItemCaseSensitive(b, "kpi");
    char la[80], lb[80];
    snprintf(la, sizeof la, "%.0f %s", num(a, "id"), str(a, "name"));
    snprintf(lb, sizeof lb, "%.0f %s", num(b, "id"), str(b, "name"));
    printf("  %-22s %16.16s %16.16s %9s\n", "", la, lb, "B vs A");
    compare_row("duration s", ka, kb, "duration_s", 'f', 1);
    compare_row("energy kWh", ka, kb, "energy_kwh", 'f', 6);
    compare_row("energy J", ka, kb, "energy_joules", 'f', 1);
    compare_row("gCO2e", ka, kb, "gco2e", 'f', 1);
    compare_row("mean power W", ka, kb, "mean_power_w", 'f', 1);
    compare_row("peak power W", ka, kb, "peak_power_w", 'f', 1);
    compare_row("tokens/kWh", ka, kb, "tokens_per_kwh", 'g', 4);
    compare_row("J/token", ka, kb, "joules_per_token", 'g', 4);
    compare_row("samples/s/W", ka, kb, "samples_per_s_per_w", 'g', 4);
    compare_row("J/request", ka, kb, "joules_per_request", 'g', 4);
    compare_row("p99 latency s (max)", ka, kb, "latency_p99_s_max", 'g', 4);
    const cJSON *ea = cJSON_GetObjectItemCaseSensitive(a, "energy_to_target"),
                *eb = cJSON_GetObjectItemCaseSensitive(b, "energy_to_target");
    if (ea || eb)
        compare_row("energy to target J", ea, eb, "energy_joules", 'f', 1);
    if (!diff->child)
        printf("  tags: the same\n");
    cJSON_ArrayForEach(t, diff)
    {
        const char *va = cJSON_GetStringValue(cJSON_GetArrayItem(t, 0)),
                   *vb = cJSON_GetStringValue(cJSON_GetArrayItem(t, 1));
        printf("  tag %-18s %16s %16s\n", t->string, va ? va : "(none)", vb ? vb : "(none)");
    }
    cJSON_Delete(diff);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return 0;
}

int wt_cmd_jobs(int argc, char **argv)
{
    /* `jobs compare A B` has its own options; `jobs --json compare A B` is read as jobs. */
    bool compare = argc > 1 && strcmp(argv[1], "compare") == 0;
    const struct wt_cli_form *f = compare ? &wt_cli_form_jobs_compare : &wt_cli_form_jobs;
    struct wt_cli_common co = {0};
    int c, limit = 0;
    if (compare) {
        argc--;
        argv++;
    }
    optind = 1;
    while ((c = wt_cli_next(f, argc, argv, &co)) != -1) {
        if (c != 'n')
            return c == WT_CLI_HELP ? 0 : 2;
        limit = atoi(optarg);
        if (limit <= 0) {
            fprintf(stderr, "wattage jobs: --limit: expected a number > 0\n");
            return 2;
        }
    }
    if (!compare && optind < argc && strcmp(argv[optind], "compare") == 0) {
        compare = true;
        optind++;
    }
    if (compare ? argc - optind != 2 : optind != argc) {
        wt_cli_help(stderr, f);
        return 2;
    }
    struct wt_cli_api api;
    int rc = wt_cli_api_setup(&co.conn, &api);
    if (rc)
        return rc;
    if (compare)
        return jobs_compare(&api, &co, argv[optind], argv[optind + 1]);
    char path[64];
    cJSON *rep = NULL;
    snprintf(path, sizeof path, "/api/v1/jobs%s%d", limit ? "?limit=" : "", limit);
    if (!limit)
        snprintf(path, sizeof path, "/api/v1/jobs");
    if ((rc = wt_cli_api_json(&api, "jobs", "GET", path, NULL, &rep)) != 0)
        return rc;
    if (co.json) {
        print_json(rep);
    } else {
        const cJSON *j;
        printf("%5s  %-24s %-8s %-24s %10s %12s %9s %10s  %s\n", "id", "name", "state", "start",
               "seconds", "kWh", "mean W", "gCO2e", "tags");
        cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(rep, "jobs"))
        {
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(j, "kpi");
            char tags[256], g[32];
            tags_line(cJSON_GetObjectItemCaseSensitive(j, "tags"), tags, sizeof tags);
            printf("%5.0f  %-24.24s %-8s %-24s %10.1f %12.6f %9.1f %10s  %s\n", num(j, "id"),
                   str(j, "name"), str(j, "state"), str(j, "start"), num(k, "duration_s"),
                   num(k, "energy_kwh"), num(k, "mean_power_w"),
                   fmtv(num(k, "gco2e"), 'f', 1, g, sizeof g), tags);
        }
    }
    cJSON_Delete(rep);
    return 0;
}
