/* SPDX-License-Identifier: MIT */
/*
 * Interval meter data into the store (see meter_import.h): the CSV is read whole and checked
 * line by line, the good rows sorted per meter and time, then each meter's register or interval
 * energy turned into one counter from 0, rollovers unwrapped and resets counted from 0.
 */
#include "audit/meter_import.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/csv.h"
#include "core/reading.h"
#include "store/store.h"

#define NAME_LEN 64
#define WRITE_CHUNK 4096

enum wt_register_step wt_register_delta(double prev, double cur, double modulus, double *delta)
{
    if (cur >= prev) {
        *delta = cur - prev;
        return WT_REG_UP;
    }
    double m = modulus;
    if (m <= 0 && prev > 0) {
        /* the register's digits: the power of ten above the previous reading */
        m = pow(10, floor(log10(prev)) + 1);
        if (prev < 0.9 * m || cur >= 0.1 * m)
            m = 0;
    }
    if (m > prev) {
        *delta = m - prev + cur;
        return WT_REG_ROLLOVER;
    }
    *delta = cur;
    return WT_REG_RESET;
}

static const struct {
    const char *name;
    double scale;
    char kind;
} units[] = {
    {"Wh", 3600.0, 'e'},    {"kWh", 3.6e6, 'e'},    {"MWh", 3.6e9, 'e'},   {"J", 1.0, 'e'},
    {"kJ", 1e3, 'e'},       {"MJ", 1e6, 'e'},       {"GJ", 1e9, 'e'},      {"Wh_th", 3600.0, 'h'},
    {"kWh_th", 3.6e6, 'h'}, {"MWh_th", 3.6e9, 'h'}, {"GJ_th", 1e9, 'h'},   {"MJ_th", 1e6, 'h'},
    {"m3", 1.0, 'w'},       {"L", 1e-3, 'w'},       {"m3_fuel", 1.0, 'f'}, {"L_fuel", 1e-3, 'f'},
    {"kg_fuel", 1.0, 'k'},
};

static const char *kind_name(char kind)
{
    return kind == 'w'   ? "water"
           : kind == 'h' ? "heat"
           : kind == 'f' ? "fuel by volume"
           : kind == 'k' ? "fuel by mass"
                         : "electricity";
}

int wt_meter_unit(const char *unit, double *scale, char *kind)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].name) == 0) {
            *scale = units[i].scale;
            *kind = units[i].kind;
            return 0;
        }
    }
    return -EINVAL;
}

struct meter {
    char name[NAME_LEN];
    char kind;     /* 'e', 'h', 'w', 'f' (fuel, m3), 'k' (fuel, kg) */
    bool interval; /* interval energy, not a register */
};

struct row {
    size_t meter;
    int64_t t; /* registers: the reading's time; interval energy: the interval's end */
    double v;  /* file units */
    double scale;
    size_t line;
};

static int cmp_row(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->meter != y->meter)
        return x->meter < y->meter ? -1 : 1;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int col_of(const char *h)
{
    static const char *const names[][4] = {{"time", "timestamp", NULL},
                                           {"meter", "meter_id", NULL},
                                           {"register", "cumulative", "reading", NULL},
                                           {"energy", "interval_energy", "consumption", NULL},
                                           {"unit", "units", NULL}};
    for (int c = 0; c < 5; c++) {
        for (int k = 0; names[c][k]; k++) {
            if (strcasecmp(h, names[c][k]) == 0)
                return c;
        }
    }
    return -1;
}

enum { C_TIME, C_METER, C_REG, C_ENERGY, C_UNIT, C_N };

/* A time from the file: RFC 3339 or unix seconds, nothing relative. */
static int parse_time(const char *s, int64_t *t)
{
    if (!isdigit((unsigned char)s[0]))
        return -EINVAL;
    return wt_time_parse(s, 0, t);
}

static int parse_value(const char *s, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(x) || x < 0)
        return -EINVAL;
    *v = x;
    return 0;
}

static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= NAME_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == '"' || ch == '\\')
            return false;
    }
    return true;
}

static int metric_of(char kind)
{
    return kind == 'w'   ? WT_M_FAC_WATER_M3
           : kind == 'h' ? WT_M_FAC_HEAT_J
           : kind == 'f' ? WT_M_FAC_FUEL_M3
           : kind == 'k' ? WT_M_FAC_FUEL_KG
                         : WT_M_FAC_ENERGY_J;
}

struct out {
    struct wt_store *st;
    struct wt_reading *rd;
    size_t n;
    char node[NAME_LEN + 8];
    size_t *written;
};

static int emit(struct out *o, int metric, const char *labels, int64_t t, double v)
{
    struct wt_reading *r = &o->rd[o->n++];
    r->t_ns = t;
    r->value = v;
    r->metric = (uint16_t)metric;
    snprintf(r->labels, sizeof r->labels, "%s", labels);
    if (o->n < WRITE_CHUNK)
        return 0;
    int rc = wt_store_write(o->st, o->node, o->rd, o->n);
    *o->written += o->n;
    o->n = 0;
    return rc ? -EIO : 0;
}

static int flush(struct out *o)
{
    if (!o->n)
        return 0;
    int rc = wt_store_write(o->st, o->node, o->rd, o->n);
    *o->written += o->n;
    o->n = 0;
    return rc ? -EIO : 0;
}

/* Writes meter m's rows r[0..n) (sorted by time, no repeated time). */
static int store_meter(struct wt_store *st, const char *name, const struct meter *m,
                       const struct row *r, size_t n, const struct wt_meter_import_opts *o,
                       int64_t iv, FILE *report, struct wt_meter_import_stats *stats,
                       struct wt_reading *buf)
{
    struct out w = {.st = st, .rd = buf, .written = &stats->readings};
    snprintf(w.node, sizeof w.node, "meter:%s", m->name);
    char labels[WT_LABELS_LEN];
    if (wt_labels(labels, sizeof labels, "point", "import", "source", "import", "target", m->name,
                  NULL) != 0)
        return -EINVAL;
    int metric = metric_of(m->kind);
    char src[300];
    snprintf(src, sizeof src, "import meters %s", name);

    int64_t step = iv;
    if (!m->interval && n > 1) {
        int64_t *d = malloc((n - 1) * sizeof *d);
        if (!d)
            return -ENOMEM;
        for (size_t i = 1; i < n; i++)
            d[i - 1] = r[i].t - r[i - 1].t;
        qsort(d, n - 1, sizeof *d, cmp_i64);
        step = d[(n - 1) / 2];
        free(d);
    }
    int64_t first = m->interval ? r[0].t - iv : r[0].t;
    if (wt_store_begin_run(st, w.node, first, step, src) != 0)
        return -EIO;

    double c = 0; /* the counter, SI */
    int rc = 0;
    if (!m->interval) {
        if ((rc = emit(&w, metric, labels, r[0].t, 0)) != 0)
            return rc;
        for (size_t i = 1; i < n; i++) {
            double d;
            enum wt_register_step s = wt_register_delta(r[i - 1].v, r[i].v, o->modulus, &d);
            if (s == WT_REG_ROLLOVER) {
                stats->rollovers++;
            } else if (s == WT_REG_RESET) {
                stats->resets++;
                if (report)
                    fprintf(report,
                            "%s:%zu: meter %s: register reset (%g before, %g now): %g counted "
                            "since the reset\n",
                            name, r[i].line, m->name, r[i - 1].v, r[i].v, r[i].v);
            }
            if (r[i].t - r[i - 1].t > step + step / 2)
                stats->gaps++;
            c += d * r[i].scale;
            if ((rc = emit(&w, metric, labels, r[i].t, c)) != 0)
                return rc;
        }
        return flush(&w);
    }
    int64_t prev_end = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t start = r[i].t - iv;
        if (i == 0 || start > prev_end) {
            if (i > 0) {
                /* a hole: recorded as a gap (a run start inside it), counting nothing */
                stats->gaps++;
                if ((rc = flush(&w)) != 0)
                    return rc;
                if (wt_store_begin_run(st, w.node, start, iv, src) != 0)
                    return -EIO;
            }
            if ((rc = emit(&w, metric, labels, start, c)) != 0)
                return rc;
        }
        c += r[i].v * r[i].scale;
        if ((rc = emit(&w, metric, labels, r[i].t, c)) != 0)
            return rc;
        prev_end = r[i].t;
    }
    return flush(&w);
}

int wt_meter_import(struct wt_store *st, FILE *f, const char *name,
                    const struct wt_meter_import_opts *o, FILE *report,
                    struct wt_meter_import_stats *stats, struct wt_err *err)
{
    static const struct wt_meter_import_opts dflt = {0};
    if (!o)
        o = &dflt;
    int64_t iv = o->interval_ns > 0 ? o->interval_ns : 15 * 60 * WT_NS_PER_S;
    memset(stats, 0, sizeof *stats);
    struct wt_csv csv;
    wt_csv_init_file(&csv, f);
    csv.comment = '#';
    struct meter *ms = NULL;
    size_t nm = 0, mcap = 0;
    struct row *rows = NULL;
    size_t nrows = 0, rcap = 0;
    struct wt_reading *buf = NULL;
    char first_bad[WT_ERR_LEN] = "";
    int col[C_N];
    int rc;

    rc = wt_csv_next(&csv);
    if (rc != 1) {
        rc = rc == -ENOMEM ? -ENOMEM
                           : wt_err_set(err,
                                        "%s:%zu: expected a header (time,meter,register|"
                                        "energy,unit)",
                                        name, csv.line ? csv.line : (size_t)1);
        goto out;
    }
    for (int c = 0; c < C_N; c++)
        col[c] = -1;
    for (size_t i = 0; i < csv.n; i++) {
        int c = col_of(csv.field[i]);
        if (c >= 0 && col[c] < 0)
            col[c] = (int)i;
    }
    if (col[C_TIME] < 0 || col[C_METER] < 0 || col[C_UNIT] < 0 ||
        (col[C_REG] < 0 && col[C_ENERGY] < 0)) {
        rc = wt_err_set(err,
                        "%s:%zu: header: expected the columns time, meter, unit and register "
                        "or energy",
                        name, csv.line);
        goto out;
    }

    for (;;) {
        rc = wt_csv_next(&csv);
        if (rc == 0)
            break;
        if (rc == -ENOMEM || rc == -EIO) {
            rc = rc == -EIO ? wt_err_set(err, "%s: read error", name), -EIO : -ENOMEM;
            goto out;
        }
        char why[200] = "";
        int64_t t = 0;
        double v = 0, scale = 0;
        char kind = 0;
        bool interval = false;
        const char *mname = NULL;
        if (rc < 0) {
            snprintf(why, sizeof why, "%s", csv.why);
        } else {
            const char *fl[C_N];
            for (int c = 0; c < C_N; c++)
                fl[c] = col[c] >= 0 && (size_t)col[c] < csv.n ? csv.field[col[c]] : "";
            mname = fl[C_METER];
            if (parse_time(fl[C_TIME], &t) != 0)
                snprintf(why, sizeof why, "time: expected RFC 3339 or unix seconds (got \"%.40s\")",
                         fl[C_TIME]);
            else if (!name_ok(mname))
                snprintf(why, sizeof why, "meter: expected a name of 1 to %d characters",
                         NAME_LEN - 1);
            else if (wt_meter_unit(fl[C_UNIT], &scale, &kind) != 0)
                snprintf(why, sizeof why,
                         "unit: expected Wh, kWh, MWh, J, kJ, MJ, GJ (\"_th\" for heat), m3 or "
                         "L (water), m3_fuel, L_fuel or kg_fuel (got \"%.20s\")",
                         fl[C_UNIT]);
            else if (fl[C_REG][0] && parse_value(fl[C_REG], &v) != 0)
                snprintf(why, sizeof why, "register: expected a number >= 0 (got \"%.30s\")",
                         fl[C_REG]);
            else if (!fl[C_REG][0] && !fl[C_ENERGY][0])
                snprintf(why, sizeof why, "register or energy: expected a value, both are empty");
            else if (!fl[C_REG][0] && parse_value(fl[C_ENERGY], &v) != 0)
                snprintf(why, sizeof why, "energy: expected a number >= 0 (got \"%.30s\")",
                         fl[C_ENERGY]);
            interval = !fl[C_REG][0];
        }
        size_t mi = nm;
        if (!why[0]) {
            for (mi = 0; mi < nm && strcmp(ms[mi].name, mname) != 0; mi++)
                ;
            if (mi < nm && ms[mi].kind != kind)
                snprintf(why, sizeof why, "unit: meter %s was %s before, this line says %s", mname,
                         kind_name(ms[mi].kind), kind_name(kind));
            else if (mi < nm && ms[mi].interval != interval)
                snprintf(why, sizeof why, "meter %s was a %s before, this line gives %s", mname,
                         ms[mi].interval ? "meter of interval energy" : "register",
                         interval ? "interval energy" : "a register reading");
        }
        if (why[0]) {
            stats->skipped++;
            if (report)
                fprintf(report, "%s:%zu: %s\n", name, csv.line, why);
            if (!first_bad[0])
                snprintf(first_bad, sizeof first_bad, "%s:%zu: %s", name, csv.line, why);
            continue;
        }
        if (mi == nm) {
            if (nm == mcap) {
                size_t nc = mcap ? 2 * mcap : 8;
                struct meter *p = realloc(ms, nc * sizeof *p);
                if (!p) {
                    rc = -ENOMEM;
                    goto out;
                }
                ms = p;
                mcap = nc;
            }
            snprintf(ms[nm].name, sizeof ms[nm].name, "%s", mname);
            ms[nm].kind = kind;
            ms[nm].interval = interval;
            nm++;
        }
        if (nrows == rcap) {
            size_t nc = rcap ? 2 * rcap : 1024;
            struct row *p = realloc(rows, nc * sizeof *p);
            if (!p) {
                rc = -ENOMEM;
                goto out;
            }
            rows = p;
            rcap = nc;
        }
        rows[nrows++] = (struct row){.meter = mi,
                                     .t = interval && o->time_is_start ? t + iv : t,
                                     .v = v,
                                     .scale = scale,
                                     .line = csv.line};
    }
    if (!nrows) {
        rc = first_bad[0] ? wt_err_set(err, "%s (no line stored)", first_bad)
                          : wt_err_set(err, "%s: no data lines", name);
        goto out;
    }
    qsort(rows, nrows, sizeof *rows, cmp_row);
    /* a repeated time of one meter: the first line wins */
    size_t k = 0;
    for (size_t i = 0; i < nrows; i++) {
        if (k > 0 && rows[k - 1].meter == rows[i].meter && rows[k - 1].t == rows[i].t) {
            stats->skipped++;
            if (report)
                fprintf(report, "%s:%zu: meter %s: time repeated (line %zu stands)\n", name,
                        rows[i].line, ms[rows[i].meter].name, rows[k - 1].line);
            continue;
        }
        rows[k++] = rows[i];
    }
    nrows = k;
    stats->rows = nrows;
    stats->meters = nm;
    buf = calloc(WRITE_CHUNK, sizeof *buf);
    if (!buf) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nrows;) {
        size_t j = i;
        while (j < nrows && rows[j].meter == rows[i].meter)
            j++;
        rc = store_meter(st, name, &ms[rows[i].meter], rows + i, j - i, o, iv, report, stats, buf);
        if (rc) {
            if (rc == -EIO)
                wt_err_set(err, "%s: writing to the store failed", name);
            goto out;
        }
        i = j;
    }
    rc = 0;
out:
    wt_csv_free(&csv);
    free(ms);
    free(rows);
    free(buf);
    return rc;
}
