/* SPDX-License-Identifier: MIT */
/*
 * `wattage schedule --duration 6h (--energy 120kWh | --power 5.6kW | --like JOB) --deadline T
 *  [--zone Z] [--minimize carbon|cost] [--json | --format slurm] [--now T] [--db FILE]
 *  [--source URL]`: the start time before the deadline that minimizes the run's forecast emissions
 * (or its cost with a price series), from the series in the store (audit/schedule.h). --format
 * slurm prints
 * --begin=YYYY-MM-DDTHH:MM:SS in local time, as sbatch reads it. With --source, --like JOB takes
 * the job's power profile summed over every node that ran it, from the engine (store/promsrc.h).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "audit/carbon.h"
#include "audit/jobs.h"
#include "audit/schedule.h"
#include "cli/cli.h"
#include "core/clock.h"
#include "store/promsrc.h"
#include "store/store.h"

#define CMD "wattage schedule"

/* "120kWh", "5.6kW", "900 J": a number and one of units[] (scale[] to the base unit). */
static int parse_quantity(const char *s, const char *const *units, const double *scale, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v <= 0)
        return -EINVAL;
    while (*end == ' ')
        end++;
    for (size_t i = 0; units[i]; i++) {
        if (strcasecmp(end, units[i]) == 0) {
            *out = v * scale[i];
            return 0;
        }
    }
    return -EINVAL;
}

static void fmt_time(int64_t t, char *buf, size_t n)
{
    wt_time_format(t, 0, buf, n);
}

static void fmt_in(int64_t d, char *buf, size_t n)
{
    int64_t m = d / (60 * WT_NS_PER_S);
    if (m < 60)
        snprintf(buf, n, "%lldm", (long long)m);
    else
        snprintf(buf, n, "%lldh%02lldm", (long long)(m / 60), (long long)(m % 60));
}

struct sched_opts {
    struct wt_cli_common co; /* -c, --db, --json, --source */
    const char *zone, *like, *energy, *power;
    int64_t duration_ns, deadline_ns, now_ns;
    bool json, slurm, cost;
};

static const struct wt_cli_opt sched_opts_table[] = {
    {"duration", 'D', "D", "how long the run takes, a duration such as 6h or 90m", WT_OPT_REQUIRED},
    {"energy", 'e', "E", "the run's energy, such as 120kWh (or --power, or --like)"},
    {"power", 'p', "P", "the run's mean power, such as 5.6kW (or --energy, or --like)"},
    {"like", 'l', "JOB", "the run draws power like past job JOB (its profile)"},
    {"deadline", 't', "T", "the run must end by T (RFC 3339, unix seconds or +12h)",
     WT_OPT_REQUIRED},
    {"zone", 'z', "Z", "the grid zone (default carbon.zone)"},
    {"minimize", 'm', "carbon|cost",
     "what to minimize (default carbon; cost needs a price series)"},
    {"format", 'f', "text|json|slurm", "the output: text (default), JSON, or sbatch's --begin"},
    {"json", WT_OPT_JSON, NULL, "the same as --format json"},
    {"now", 'n', "T", "take T as the current time"},
    {"source", WT_OPT_SOURCE, "URL", WT_CLI_SOURCE_HELP},
    {NULL}};

const struct wt_cli_form wt_cli_form_schedule = {
    "schedule",
    "",
    "the start time before the deadline with the least forecast emissions (or cost)",
    __FILE__,
    false,
    {sched_opts_table, wt_cli_store_opts}};

static int parse(int argc, char **argv, struct sched_opts *o)
{
    const char *deadline = NULL, *now = NULL;
    int c;
    memset(o, 0, sizeof *o);
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_schedule, argc, argv, &o->co)) != -1) {
        switch (c) {
        case 'D':
            if (wt_duration_parse(optarg, &o->duration_ns) != 0) {
                fprintf(stderr,
                        CMD ": --duration: expected a duration such as 6h or 90m (got "
                            "\"%s\")\n",
                        optarg);
                return 2;
            }
            break;
        case 'e':
            o->energy = optarg;
            break;
        case 'p':
            o->power = optarg;
            break;
        case 'l':
            o->like = optarg;
            break;
        case 't':
            deadline = optarg;
            break;
        case 'z':
            o->zone = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "slurm") == 0)
                o->slurm = true;
            else if (strcmp(optarg, "json") == 0)
                o->json = true;
            else if (strcmp(optarg, "text") != 0) {
                fprintf(stderr, CMD ": --format: expected text, json or slurm (got \"%s\")\n",
                        optarg);
                return 2;
            }
            break;
        case 'm':
            if (strcmp(optarg, "cost") == 0)
                o->cost = true;
            else if (strcmp(optarg, "carbon") != 0) {
                fprintf(stderr, CMD ": --minimize: expected carbon or cost (got \"%s\")\n", optarg);
                return 2;
            }
            break;
        case 'n':
            now = optarg;
            break;
        case WT_CLI_HELP:
            return WT_CLI_HELP;
        default:
            return 2;
        }
    }
    if (wt_cli_no_operands(&wt_cli_form_schedule, argc, argv))
        return 2;
    o->json = o->json || o->co.json;
    o->now_ns = wt_now_real_ns();
    if (now && wt_cli_parse_time("schedule", "--now", now, o->now_ns, &o->now_ns) != 0)
        return 2;
    if (!deadline) {
        fprintf(stderr, CMD ": --deadline T is required (RFC 3339, unix seconds or +12h)\n");
        return 2;
    }
    if (wt_cli_parse_time("schedule", "--deadline", deadline, o->now_ns, &o->deadline_ns) != 0)
        return 2;
    if ((!!o->energy + !!o->power + !!o->like) != 1) {
        fprintf(stderr, CMD ": give exactly one of --energy E, --power P or --like JOB\n");
        return 2;
    }
    if (!o->duration_ns && !o->like) {
        fprintf(stderr, CMD ": --duration D is required (unless --like JOB gives it)\n");
        return 2;
    }
    if (o->co.source && !o->like) {
        fprintf(stderr, CMD ": --source is for --like JOB (the job's profile over its nodes)\n");
        return 2;
    }
    if (o->json && o->slurm) {
        fprintf(stderr, CMD ": --json and --format slurm exclude each other\n");
        return 2;
    }
    return 0;
}

/* The run's IT power: constant (w), or a job's profile. 0, 1 or 2 (printed). */
static int run_power(struct sched_opts *o, const char *db_path, struct wt_sched_req *r,
                     double **profile)
{
    static const char *const eu[] = {"J", "Wh", "kWh", "MWh", NULL};
    static const double es[] = {1, 3600, 3.6e6, 3.6e9};
    static const char *const pu[] = {"W", "kW", "MW", NULL};
    static const double ps[] = {1, 1e3, 1e6};
    double x;
    if (o->energy) {
        if (parse_quantity(o->energy, eu, es, &x) != 0) {
            fprintf(stderr,
                    CMD ": --energy: expected an energy such as 120kWh, 800Wh or 5MWh "
                        "(got \"%s\")\n",
                    o->energy);
            return 2;
        }
        r->power_w = x / ((double)o->duration_ns / 1e9);
        return 0;
    }
    if (o->power) {
        if (parse_quantity(o->power, pu, ps, &x) != 0) {
            fprintf(stderr,
                    CMD ": --power: expected a power such as 5.6kW or 700W (got "
                        "\"%s\")\n",
                    o->power);
            return 2;
        }
        r->power_w = x;
        return 0;
    }
    struct wt_jobs *j = NULL;
    struct wt_promsrc *src = NULL;
    struct wt_err err = {{0}};
    int64_t dur = 0;
    size_t n = 0;
    int rc;
    if (o->co.source) {
        if (wt_cli_open_source(o->co.source, &src) != 0)
            return 2;
        rc = wt_promsrc_profile(src, o->like, wt_now_real_ns(), 60 * WT_NS_PER_S, profile, &n, &dur,
                                &err);
        wt_promsrc_close(src);
    } else {
        if (wt_jobs_open(db_path, NULL, &j, &err) != 0) {
            fprintf(stderr, CMD ": %s\n", err.msg);
            return 1;
        }
        rc = wt_jobs_profile(j, o->like, wt_now_real_ns(), 60 * WT_NS_PER_S, profile, &n, &dur,
                             &err);
        wt_jobs_close(j);
    }
    if (rc) {
        fprintf(stderr, CMD ": --like %s: %s\n", o->like, err.msg);
        return rc == -ENOENT || rc == -EINVAL ? 2 : 1;
    }
    if (!o->duration_ns)
        o->duration_ns = dur;
    /* A longer run than the job continues at the job's mean power. */
    size_t need = (size_t)((o->duration_ns + 60 * WT_NS_PER_S - 1) / (60 * WT_NS_PER_S));
    if (need > n) {
        double mean = 0;
        for (size_t i = 0; i < n; i++)
            mean += (*profile)[i] / (double)n;
        double *p = realloc(*profile, need * sizeof *p);
        if (!p)
            return 1;
        for (size_t i = n; i < need; i++)
            p[i] = mean;
        *profile = p;
    }
    r->profile_w = *profile;
    r->nprofile = need;
    r->profile_step_ns = 60 * WT_NS_PER_S;
    return 0;
}

static cJSON *option_json(const struct wt_sched_option *op, bool cost, int64_t now)
{
    cJSON *o = cJSON_CreateObject();
    char t[40];
    fmt_time(op->start_ns, t, sizeof t);
    cJSON_AddStringToObject(o, "start", t);
    cJSON_AddNumberToObject(o, "start_s", (double)op->start_ns / 1e9);
    cJSON_AddNumberToObject(o, "in_s", (double)(op->start_ns - now) / 1e9);
    if (cost) {
        cJSON_AddNumberToObject(o, "cost", op->cost);
    } else {
        cJSON_AddNumberToObject(o, "gco2e", op->cost);
        cJSON_AddNumberToObject(o, "kgco2e", op->cost / 1000);
        cJSON_AddNumberToObject(o, "intensity_mean_g_per_kwh",
                                op->energy_kwh > 0 ? op->cost / op->energy_kwh : 0);
    }
    cJSON_AddNumberToObject(o, "facility_energy_kwh", op->energy_kwh);
    cJSON_AddNumberToObject(o, "filled_energy_kwh", op->filled_kwh);
    return o;
}

int wt_cmd_schedule(int argc, char **argv)
{
    struct sched_opts o;
    struct wt_config cfg;
    struct wt_carbon_conf cf;
    struct wt_err err = {{0}};
    struct wt_store *st = NULL;
    struct wt_carbon_step *steps = NULL;
    double *profile = NULL;
    size_t n = 0;
    int ret = 1;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == WT_CLI_HELP ? 0 : rc;
    if ((rc = wt_cli_load_config(o.co.config, &cfg)) != 0)
        return rc;
    if (wt_carbon_conf_from(&cfg, &cf, &err) != 0) {
        fprintf(stderr, CMD ": %s\n", err.msg);
        wt_config_free(&cfg);
        return 2;
    }
    const char *zone = o.zone ? o.zone : cf.zone;
    if (!zone[0]) {
        fprintf(stderr, CMD ": no zone: give --zone or set carbon.zone\n");
        ret = 2;
        goto out;
    }
    if ((rc = wt_cli_open_store("schedule", &o.co, false, &cfg, &st)) != 0) {
        ret = rc;
        goto out;
    }
    struct wt_sched_req r = {.now_ns = o.now_ns, .deadline_ns = o.deadline_ns};
    if ((rc = run_power(&o, cfg.store.path, &r, &profile)) != 0) {
        ret = rc;
        goto out;
    }
    r.duration_ns = o.duration_ns;
    bool pue_measured;
    wt_carbon_pue(st, &cf, o.now_ns - 7 * 24 * 3600 * WT_NS_PER_S, o.now_ns, &r.pue, &pue_measured);
    enum wt_carbon_series series = o.cost ? WT_CS_PRICE : WT_CS_INTENSITY;
    if (o.deadline_ns <= o.now_ns) {
        fprintf(stderr, CMD ": the deadline is not in the future\n");
        ret = 2;
        goto out;
    }
    if (wt_carbon_steps_ex(wt_store_db(st), o.cost ? NULL : &cf, series, zone, true, o.now_ns,
                           o.deadline_ns, &steps, &n) != 0) {
        fprintf(stderr, CMD ": cannot read the %s series from the store\n",
                wt_carbon_series_name(series));
        goto out;
    }
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        any |= steps[i].src == WT_CSRC_ACTUAL || steps[i].src == WT_CSRC_FORECAST;
        if (steps[i].src == WT_CSRC_NONE)
            any = false, i = n;
    }
    if (!any) {
        fprintf(stderr,
                CMD ": no %s series for zone %s between now and the deadline: load one with "
                    "`wattage import carbon FILE --zone %s%s` or a carbon.sources entry\n",
                o.cost ? "price" : "carbon-intensity", zone, zone, o.cost ? " --series price" : "");
        goto out;
    }
    struct wt_sched_result res;
    if (wt_schedule_best(steps, n, &r, &res, &err) != 0) {
        fprintf(stderr, CMD ": %s\n", err.msg);
        ret = 2;
        goto out;
    }
    char best[40], now[40], dl[40], in[32];
    fmt_time(res.best.start_ns, best, sizeof best);
    fmt_time(res.now.start_ns, now, sizeof now);
    fmt_time(o.deadline_ns, dl, sizeof dl);
    fmt_in(res.best.start_ns - o.now_ns, in, sizeof in);
    if (o.slurm) {
        time_t t = (time_t)(res.best.start_ns / WT_NS_PER_S);
        struct tm tm;
        char b[40];
        localtime_r(&t, &tm);
        strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S", &tm);
        printf("--begin=%s\n", b);
    } else if (o.json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "zone", zone);
        cJSON_AddStringToObject(j, "minimize", o.cost ? "cost" : "carbon");
        cJSON_AddStringToObject(j, "now", now);
        cJSON_AddStringToObject(j, "deadline", dl);
        cJSON_AddNumberToObject(j, "duration_s", (double)o.duration_ns / 1e9);
        cJSON_AddNumberToObject(j, "it_energy_kwh", res.now.energy_kwh / r.pue);
        cJSON_AddStringToObject(j, "power_from", o.like ? "job" : o.energy ? "energy" : "power");
        cJSON_AddNumberToObject(j, "pue", r.pue);
        cJSON_AddStringToObject(j, "pue_source", pue_measured ? "measured" : "assumed");
        cJSON_AddItemToObject(j, "start_now", option_json(&res.now, o.cost, o.now_ns));
        cJSON_AddItemToObject(j, "best", option_json(&res.best, o.cost, o.now_ns));
        if (o.cost) {
            cJSON_AddNumberToObject(j, "saving", res.saving);
        } else {
            cJSON_AddNumberToObject(j, "saving_g", res.saving);
            cJSON_AddNumberToObject(j, "saving_kg", res.saving / 1000);
        }
        cJSON_AddNumberToObject(j, "saving_pct", res.saving_pct);
        cJSON_AddNumberToObject(j, "candidates", (double)res.candidates);
        cJSON_AddNumberToObject(j, "steps", (double)n);
        char *txt = cJSON_Print(j);
        if (txt)
            printf("%s\n", txt);
        cJSON_free(txt);
        cJSON_Delete(j);
    } else {
        printf("zone %s: a %.2f h run, %.3f kWh IT x PUE %.2f (%s), deadline %s\n", zone,
               (double)o.duration_ns / 3.6e12, res.now.energy_kwh / r.pue, r.pue,
               pue_measured ? "measured" : "assumed", dl);
        if (o.cost) {
            printf("start now    %s  cost %.4f\n", now, res.now.cost);
            printf("best start   %s  cost %.4f  (in %s)\n", best, res.best.cost, in);
            printf("saving       %.4f (%.1f%%)\n", res.saving, res.saving_pct);
        } else {
            printf("start now    %s  %.3f kgCO2e  (mean %.1f gCO2e/kWh)\n", now,
                   res.now.cost / 1000,
                   res.now.energy_kwh > 0 ? res.now.cost / res.now.energy_kwh : 0);
            printf("best start   %s  %.3f kgCO2e  (mean %.1f gCO2e/kWh, in %s)\n", best,
                   res.best.cost / 1000,
                   res.best.energy_kwh > 0 ? res.best.cost / res.best.energy_kwh : 0, in);
            printf("saving       %.3f kgCO2e (%.1f%%)\n", res.saving / 1000, res.saving_pct);
        }
        if (res.best.filled_kwh > 0 || res.now.filled_kwh > 0)
            printf("note         the series has holes in the window: %.1f%% of the best run's "
                   "energy is charged at filled or assumed values\n",
                   res.best.energy_kwh > 0 ? 100 * res.best.filled_kwh / res.best.energy_kwh : 0);
    }
    ret = 0;
out:
    free(steps);
    free(profile);
    wt_store_close(st);
    wt_config_free(&cfg);
    return ret;
}
