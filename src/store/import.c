/* SPDX-License-Identifier: MIT */
/*
 * nvidia-smi CSV import (see import.h): header → column map with unit conversion, one pass over
 * the data lines keeping the good ones in memory, then per GPU the trapezoid-integrated energy,
 * and one transaction into the store under the file's node name.
 */
#include "store/import.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/csv.h"
#include "core/reading.h"

#define MAX_COLS 64

enum col_kind { C_IGNORE, C_TIME, C_INDEX, C_UUID, C_NAME, C_VALUE, C_PSTATE };

struct col {
    enum col_kind kind;
    int metric;   /* C_VALUE, C_PSTATE */
    double scale; /* from the header unit */
    char unit[16];
};

/* Known value columns: nvidia-smi property → metric and the unit nvidia-smi writes. */
static const struct {
    const char *name;
    int metric;
} value_cols[] = {
    {"power.draw", WT_M_GPU_POWER_W},
    {"power.draw.average", WT_M_GPU_POWER_W},
    {"power.draw.instant", WT_M_GPU_POWER_W},
    {"temperature.gpu", WT_M_GPU_TEMP_C},
    {"utilization.gpu", WT_M_GPU_UTIL_RATIO},
    {"utilization.memory", WT_M_GPU_MEM_UTIL_RATIO},
    {"memory.used", WT_M_GPU_MEM_USED_B},
    {"memory.total", WT_M_GPU_MEM_TOTAL_B},
    {"clocks.sm", WT_M_GPU_SM_CLOCK_HZ},
    {"clocks.current.sm", WT_M_GPU_SM_CLOCK_HZ},
    {"clocks.mem", WT_M_GPU_MEM_CLOCK_HZ},
    {"clocks.current.memory", WT_M_GPU_MEM_CLOCK_HZ},
    {"power.limit", WT_M_GPU_POWER_LIMIT_W},
    {"enforced.power.limit", WT_M_GPU_POWER_LIMIT_W},
    {"power.min_limit", WT_M_GPU_POWER_LIMIT_MIN_W},
    {"power.max_limit", WT_M_GPU_POWER_LIMIT_MAX_W},
};

/* The factor from a header unit to the metric's base unit; NAN when not understood. */
static double unit_scale(const char *unit, int metric)
{
    if (!unit[0]) /* no unit: assume what nvidia-smi writes */
        unit = metric == WT_M_GPU_POWER_W || metric == WT_M_GPU_POWER_LIMIT_W ||
                       metric == WT_M_GPU_POWER_LIMIT_MIN_W || metric == WT_M_GPU_POWER_LIMIT_MAX_W
                   ? "W"
               : metric == WT_M_GPU_UTIL_RATIO || metric == WT_M_GPU_MEM_UTIL_RATIO ? "%"
               : metric == WT_M_GPU_MEM_USED_B || metric == WT_M_GPU_MEM_TOTAL_B    ? "MiB"
               : metric == WT_M_GPU_SM_CLOCK_HZ || metric == WT_M_GPU_MEM_CLOCK_HZ  ? "MHz"
                                                                                    : "C";
    static const struct {
        const char *u;
        double f;
    } units[] = {{"W", 1},           {"mW", 1e-3},    {"kW", 1e3},           {"%", 0.01},
                 {"MiB", 1048576.0}, {"KiB", 1024.0}, {"GiB", 1073741824.0}, {"B", 1},
                 {"MHz", 1e6},       {"GHz", 1e9},    {"kHz", 1e3},          {"C", 1}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].u) == 0)
            return units[i].f;
    }
    return NAN;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/*
 * nvidia-smi's "2024/01/15 10:23:45.123" in local time, or RFC 3339 / unix seconds. A time
 * before 1970 is refused: no telemetry has one, and two in range can be subtracted without
 * overflow (a fuzzed year 1688 beside 2024 overflowed the interval).
 */
static int parse_time(const char *s, int64_t *t_ns)
{
    struct tm tm = {0};
    int ms_digits = 0;
    char *end = strptime(s, "%Y/%m/%d %H:%M:%S", &tm);
    if (!end)
        return wt_time_parse(s, 0, t_ns) == 0 && !strchr(s, 'h') && *t_ns >= 0 ? 0 : -EINVAL;
    int64_t frac = 0;
    if (*end == '.') {
        end++;
        while (isdigit((unsigned char)*end) && ms_digits < 9) {
            frac = frac * 10 + (*end++ - '0');
            ms_digits++;
        }
        while (isdigit((unsigned char)*end))
            end++;
        for (int i = ms_digits; i < 9; i++)
            frac *= 10;
    }
    if (*end)
        return -EINVAL;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    /* -1 is also 1969-12-31 23:59:59; a year outside 1677..2262 does not fit in nanoseconds. */
    if (t == (time_t)-1 || __builtin_mul_overflow((int64_t)t, WT_NS_PER_S, t_ns) ||
        __builtin_add_overflow(*t_ns, frac, t_ns) || *t_ns < 0)
        return -EINVAL;
    return 0;
}

static bool is_absent(const char *s)
{
    return !*s || s[0] == '[' || strcmp(s, "N/A") == 0;
}

struct row {
    int gpu; /* index into gpus */
    int64_t t;
    size_t off;    /* its ncols values in vals[] */
    uint64_t have; /* bit per column */
};

#define CHUNK 8192 /* readings per transaction */

struct gpu {
    char key[128];
    char labels[WT_LABELS_LEN];
};

static int find_gpu(struct gpu **g, size_t *n, size_t *cap, const char *idx, const char *uuid,
                    const char *model)
{
    char key[128];
    snprintf(key, sizeof key, "%s|%s", idx, uuid);
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*g)[i].key, key) == 0)
            return (int)i;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct gpu *p = realloc(*g, nc * sizeof *p);
        if (!p)
            return -ENOMEM;
        *g = p;
        *cap = nc;
    }
    struct gpu *e = &(*g)[*n];
    memset(e, 0, sizeof *e);
    snprintf(e->key, sizeof e->key, "%s", key);
    if (idx[0])
        (void)wt_labels_add(e->labels, sizeof e->labels, "gpu", idx);
    if (uuid[0])
        (void)wt_labels_add(e->labels, sizeof e->labels, "uuid", uuid);
    if (model[0])
        (void)wt_labels_add(e->labels, sizeof e->labels, "model", model);
    return (int)(*n)++;
}

static int cmp_row(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    if (a->gpu != b->gpu)
        return a->gpu < b->gpu ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

void wt_import_node_name(const char *file, const char *node, char *out, size_t n)
{
    if (node && *node) {
        snprintf(out, n, "%s", node);
        return;
    }
    const char *b = strrchr(file, '/');
    b = b ? b + 1 : file;
    size_t len = strcspn(b, ".");
    if (len == 0)
        len = strlen(b);
    snprintf(out, n, "%.*s", (int)len, b);
}

/* The header's fields back to back with their NULs (malloc'd), to spot a repeated header. */
static char *join_fields(const struct wt_csv *c, size_t *len)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        n += strlen(c->field[i]) + 1;
    char *j = malloc(n + 1);
    if (!j)
        return NULL;
    *len = 0;
    for (size_t i = 0; i < c->n; i++) {
        size_t l = strlen(c->field[i]) + 1;
        memcpy(j + *len, c->field[i], l);
        *len += l;
    }
    return j;
}

static bool same_fields(const struct wt_csv *c, const char *j, size_t jlen)
{
    size_t o = 0;
    for (size_t i = 0; i < c->n; i++) {
        size_t l = strlen(c->field[i]) + 1;
        if (o + l > jlen || memcmp(j + o, c->field[i], l) != 0)
            return false;
        o += l;
    }
    return o == jlen;
}

/* Parses the header's fields (line hl) into cols. Returns the column count or -EINVAL. */
static int parse_header(char **f, size_t nf, size_t hl, struct col *cols, int *power_col,
                        const char *name, FILE *report, struct wt_err *err)
{
    int n = (int)nf;
    bool have_time = false, have_gpu = false;
    if (nf > MAX_COLS)
        return wt_err_set(err, "%s:%zu: more than %d columns", name, hl, MAX_COLS);
    *power_col = -1;
    for (int i = 0; i < n; i++) {
        struct col *c = &cols[i];
        char prop[96] = "";
        memset(c, 0, sizeof *c);
        char *br = strchr(f[i], '[');
        if (br) {
            char *close = strchr(br, ']');
            if (!close)
                return wt_err_set(err, "%s:%zu: column %d: unterminated unit in \"%s\"", name, hl,
                                  i + 1, f[i]);
            snprintf(c->unit, sizeof c->unit, "%.*s", (int)(close - br - 1), br + 1);
            *br = '\0';
        }
        snprintf(prop, sizeof prop, "%s", trim(f[i]));
        if (strcmp(prop, "timestamp") == 0) {
            c->kind = C_TIME;
            have_time = true;
        } else if (strcmp(prop, "index") == 0) {
            c->kind = C_INDEX;
            have_gpu = true;
        } else if (strcmp(prop, "uuid") == 0 || strcmp(prop, "gpu_uuid") == 0) {
            c->kind = C_UUID;
            have_gpu = true;
        } else if (strcmp(prop, "name") == 0 || strcmp(prop, "gpu_name") == 0) {
            c->kind = C_NAME;
        } else if (strcmp(prop, "pstate") == 0) {
            c->kind = C_PSTATE;
            c->metric = WT_M_GPU_PSTATE;
        } else {
            for (size_t k = 0; k < sizeof value_cols / sizeof value_cols[0]; k++) {
                if (strcmp(prop, value_cols[k].name) == 0) {
                    c->kind = C_VALUE;
                    c->metric = value_cols[k].metric;
                }
            }
            if (c->kind == C_VALUE) {
                c->scale = unit_scale(c->unit, c->metric);
                if (isnan(c->scale)) {
                    if (report)
                        fprintf(report, "%s:%zu: column %s: unknown unit [%s]: ignored\n", name, hl,
                                prop, c->unit);
                    c->kind = C_IGNORE;
                }
            } else if (report) {
                fprintf(report, "%s:%zu: column %s: not imported\n", name, hl, prop);
            }
            if (c->kind == C_VALUE && c->metric == WT_M_GPU_POWER_W && *power_col < 0)
                *power_col = i;
        }
    }
    if (!have_time)
        return wt_err_set(err, "%s:%zu: no timestamp column (log with --query-gpu=timestamp,...)",
                          name, hl);
    if (!have_gpu)
        return wt_err_set(err, "%s:%zu: no index or uuid column to tell the GPUs apart", name, hl);
    return n;
}

/* Parses one number cell: "250.31", "250.31 W" (the unit must match the header's, if any). */
static int parse_number(const char *s, const struct col *c, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v))
        return -EINVAL;
    while (*end == ' ')
        end++;
    if (*end && (c->unit[0] ? strcmp(end, c->unit) != 0 : isnan(unit_scale(end, c->metric))))
        return -EINVAL;
    double scale = c->scale;
    if (*end && !c->unit[0])
        scale = unit_scale(end, c->metric);
    *out = v * scale;
    return 0;
}

int wt_import_nvidia_smi(struct wt_store *st, FILE *f, const char *name, const char *node,
                         FILE *report, struct wt_import_stats *stats, struct wt_err *err)
{
    struct col cols[MAX_COLS];
    struct wt_csv csv;
    char *hdr_copy = NULL;
    size_t hdr_len = 0;
    int ncols = -1, power_col = -1, rc = 0, got;
    struct row *rows = NULL;
    size_t nrows = 0, rcap = 0;
    struct gpu *gpus = NULL;
    size_t ngpus = 0, gcap = 0;
    struct wt_reading *rd = NULL;
    int64_t *dts = NULL;
    double *vals = NULL, v[MAX_COLS];
    size_t nvals = 0, vcap = 0;
    char first_bad[200] = ""; /* the first skipped line, for a file that has nothing else */

    memset(stats, 0, sizeof *stats);
    wt_csv_init_file(&csv, f);
    while ((got = wt_csv_next(&csv)) != 0) {
        if (got == -EINVAL && ncols >= 0) {
            if (report)
                fprintf(report, "%s:%zu: %s: line skipped\n", name, csv.line, csv.why);
            if (!stats->skipped++)
                snprintf(first_bad, sizeof first_bad, "%zu: %s", csv.line, csv.why);
            continue;
        }
        if (got == -EINVAL) {
            rc = wt_err_set(err, "%s:%zu: %s", name, csv.line, csv.why);
            goto out;
        }
        if (got < 0) {
            rc = got == -EIO ? wt_err_set(err, "%s: read error", name), -EIO : got;
            goto out;
        }
        if (ncols < 0) {
            hdr_copy = join_fields(&csv, &hdr_len);
            if (!hdr_copy) {
                rc = -ENOMEM;
                goto out;
            }
            ncols = parse_header(csv.field, csv.n, csv.line, cols, &power_col, name, report, err);
            if (ncols < 0) {
                rc = ncols;
                goto out;
            }
            continue;
        }
        if (same_fields(&csv, hdr_copy, hdr_len))
            continue; /* a repeated header */
        char **fl = csv.field;
        int nf = (int)csv.n;
        const char *why = NULL;
        char whybuf[160];
        struct row r = {0};
        const char *idx = "", *uuid = "", *model = "";
        if (nf != ncols) {
            snprintf(whybuf, sizeof whybuf, "expected %d fields, got %d", ncols, nf);
            why = whybuf;
        }
        for (int i = 0; i < ncols && !why; i++) {
            const struct col *c = &cols[i];
            switch (c->kind) {
            case C_TIME:
                if (parse_time(fl[i], &r.t) != 0) {
                    snprintf(whybuf, sizeof whybuf, "bad timestamp \"%.60s\"", fl[i]);
                    why = whybuf;
                }
                break;
            case C_INDEX: {
                char *end;
                long gi = strtol(fl[i], &end, 10);
                if (end == fl[i] || *end || gi < 0 || gi > 4096) {
                    snprintf(whybuf, sizeof whybuf, "bad GPU index \"%.40s\"", fl[i]);
                    why = whybuf;
                }
                idx = fl[i];
                break;
            }
            case C_UUID:
                uuid = is_absent(fl[i]) ? "" : fl[i];
                break;
            case C_NAME:
                model = is_absent(fl[i]) ? "" : fl[i];
                break;
            case C_PSTATE:
                if (!is_absent(fl[i])) {
                    if (fl[i][0] != 'P' || !isdigit((unsigned char)fl[i][1])) {
                        snprintf(whybuf, sizeof whybuf, "bad pstate \"%.40s\"", fl[i]);
                        why = whybuf;
                    } else {
                        v[i] = atoi(fl[i] + 1);
                        r.have |= 1ULL << i;
                    }
                }
                break;
            case C_VALUE:
                if (!is_absent(fl[i])) {
                    if (parse_number(fl[i], c, &v[i]) != 0) {
                        snprintf(whybuf, sizeof whybuf, "column %d: bad number \"%.40s\"", i + 1,
                                 fl[i]);
                        why = whybuf;
                    } else {
                        r.have |= 1ULL << i;
                    }
                }
                break;
            case C_IGNORE:
                break;
            }
        }
        if (!why && !idx[0] && !uuid[0])
            why = "no GPU index or uuid";
        if (why) {
            if (report)
                fprintf(report, "%s:%zu: %s: line skipped\n", name, csv.line, why);
            if (!stats->skipped++)
                snprintf(first_bad, sizeof first_bad, "%zu: %s", csv.line, why);
            continue;
        }
        int g = find_gpu(&gpus, &ngpus, &gcap, idx, uuid, model);
        if (g < 0) {
            rc = -ENOMEM;
            goto out;
        }
        r.gpu = g;
        if (nvals + (size_t)ncols > vcap) {
            size_t nc = vcap ? vcap * 2 : 16384;
            double *q = realloc(vals, nc * sizeof *q);
            if (!q) {
                rc = -ENOMEM;
                goto out;
            }
            vals = q;
            vcap = nc;
        }
        r.off = nvals;
        memcpy(vals + nvals, v, (size_t)ncols * sizeof *v);
        nvals += (size_t)ncols;
        if (nrows == rcap) {
            size_t nc = rcap ? rcap * 2 : 1024;
            struct row *q = realloc(rows, nc * sizeof *q);
            if (!q) {
                rc = -ENOMEM;
                goto out;
            }
            rows = q;
            rcap = nc;
        }
        rows[nrows++] = r;
    }
    if (ncols < 0) {
        rc = wt_err_set(err, "%s: empty file: expected an nvidia-smi CSV header", name);
        goto out;
    }
    stats->rows = nrows;
    stats->gpus = ngpus;
    /* A file that stores nothing is an error, not "0 readings": the operator asked for data. */
    if (nrows == 0 && stats->skipped) {
        rc = wt_err_set(err, "%s:%s; no line could be read (%zu skipped), nothing stored", name,
                        first_bad, stats->skipped);
        goto out;
    }
    if (nrows == 0) {
        rc = wt_err_set(err, "%s: no data lines after the header, nothing stored", name);
        goto out;
    }
    bool any_value = false;
    for (size_t i = 0; i < nrows && !any_value; i++)
        any_value = rows[i].have != 0;
    if (!any_value) {
        rc = wt_err_set(err,
                        "%s: %zu lines, none with a value (all N/A or not imported), "
                        "nothing stored",
                        name, nrows);
        goto out;
    }
    qsort(rows, nrows, sizeof *rows, cmp_row);

    /* the median sampling interval, for the gap rule and the run record */
    dts = calloc(nrows, sizeof *dts);
    rd = calloc(CHUNK + MAX_COLS + 1, sizeof *rd);
    if (!dts || !rd) {
        rc = -ENOMEM;
        goto out;
    }
    size_t ndt = 0;
    for (size_t i = 1; i < nrows; i++) {
        if (rows[i].gpu == rows[i - 1].gpu && rows[i].t > rows[i - 1].t)
            dts[ndt++] = rows[i].t - rows[i - 1].t;
    }
    int64_t median = WT_NS_PER_S;
    if (ndt) {
        qsort(dts, ndt, sizeof *dts, cmp_i64);
        median = dts[ndt / 2];
    }

    char src[300];
    snprintf(src, sizeof src, "import nvidia-smi %s", name);
    int64_t first_t = rows[0].t;
    for (size_t i = 1; i < nrows; i++)
        first_t = rows[i].t < first_t ? rows[i].t : first_t;
    if (wt_store_begin_run(st, node, first_t, median, src) != 0) {
        rc = wt_err_set(err, "%s: writing to the store failed", name);
        rc = -EIO;
        goto out;
    }
    size_t nr = 0;
    double energy = 0;
    bool have_prev = false;
    for (size_t i = 0; i < nrows; i++) {
        const struct row *r = &rows[i];
        const struct gpu *g = &gpus[r->gpu];
        if (i > 0 && rows[i - 1].gpu != r->gpu) {
            energy = 0;
            have_prev = false;
        }
        if (i > 0 && rows[i - 1].gpu == r->gpu && rows[i - 1].t == r->t)
            continue; /* a duplicate time stamp: the first line wins */
        const double *rv = vals + r->off;
        for (int c = 0; c < ncols; c++) {
            if (!(r->have & (1ULL << c)))
                continue;
            struct wt_reading *o = &rd[nr++];
            o->t_ns = r->t;
            o->value = rv[c];
            o->metric = (uint16_t)cols[c].metric;
            memcpy(o->labels, g->labels, sizeof o->labels);
        }
        if (power_col >= 0 && (r->have & (1ULL << power_col))) {
            /* the previous row of this GPU with a power value */
            if (have_prev) {
                size_t j = i - 1;
                while (!(rows[j].have & (1ULL << power_col)))
                    j--;
                int64_t dt = r->t - rows[j].t;
                /* a median over a third of the range (a century between lines) is no gap rule */
                if (median > INT64_MAX / 3 || dt <= 3 * median)
                    energy += 0.5 * (rv[power_col] + vals[rows[j].off + (size_t)power_col]) *
                              (double)dt / 1e9;
            }
            have_prev = true;
            struct wt_reading *o = &rd[nr++];
            o->t_ns = r->t;
            o->value = energy;
            o->metric = WT_M_GPU_ENERGY_INTEGRATED_J;
            memcpy(o->labels, g->labels, sizeof o->labels);
        }
        if (nr >= CHUNK || i + 1 == nrows) {
            if (wt_store_write(st, node, rd, nr) != 0) {
                wt_err_set(err, "%s: writing to the store failed", name);
                rc = -EIO;
                goto out;
            }
            stats->readings += nr;
            nr = 0;
        }
    }
out:
    wt_csv_free(&csv);
    free(hdr_copy);
    free(rows);
    free(gpus);
    free(rd);
    free(dts);
    free(vals);
    return rc;
}
