/* SPDX-License-Identifier: MIT */
/*
 * The carbon layer over known and real series: parsing (CSV, the UK Carbon Intensity API's JSON,
 * Electricity Maps' JSON) with malformed lines reported by number and nothing stored; the step
 * function (actual over forecast, the hole rule); emissions of windows and jobs, checked against
 * hand computations from the data files (../shared/data/carbon-intensity/, GB, March 2023);
 * the config section's messages.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "audit/carbon.h"
#include "audit/carbon_fetch.h"
#include "audit/carbon_parse.h"
#include "audit/jobs.h"
#include "core/clock.h"
#include "core/config.h"
#include "runner.h"
#include "serve/api_jobs.h"
#include "serve/expo.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define MIN (60 * S)
#define HOUR (3600 * S)
#define UK "../shared/data/carbon-intensity/uk-national-nmpowell/"

static int64_t t_of(const char *s)
{
    int64_t t = 0;
    WT_EQ_INT(wt_time_parse(s, 0, &t), 0);
    return t;
}

/* The rows of a UK CSV as the test reads them itself: from, forecast, actual (NAN if empty). */
struct row {
    int64_t t;
    double f, a;
};

static size_t read_uk(const char *rel, struct row *out, size_t max)
{
    FILE *f = fopen(wt_test_src_path(rel), "r");
    char line[256];
    size_t n = 0;
    WT_ASSERT(f != NULL);
    WT_ASSERT(fgets(line, sizeof line, f) != NULL); /* header */
    while (n < max && fgets(line, sizeof line, f)) {
        char ts[64];
        char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        WT_ASSERT(c1 && c2);
        memcpy(ts, line, (size_t)(c1 - line));
        ts[c1 - line] = '\0';
        out[n].t = t_of(ts);
        out[n].f = strtod(c1 + 1, NULL);
        out[n].a = (c2[1] == '\n' || c2[1] == '\0') ? NAN : strtod(c2 + 1, NULL);
        n++;
    }
    fclose(f);
    return n;
}

/* A fresh store with the carbon table. */
static struct wt_store *open_store(char *path, size_t n)
{
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    snprintf(path, n, "%s/w.db", wt_test_dir());
    WT_EQ_INT(wt_store_open(path, NULL, &st, &err), 0);
    WT_EQ_INT(wt_carbon_tables(wt_store_db(st)), 0);
    return st;
}

static int64_t count_points(struct wt_store *st, double *sum)
{
    sqlite3_stmt *s = NULL;
    int64_t n = -1;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(st),
                                 "SELECT count(*), total(value) FROM carbon_points", -1, &s, NULL),
              SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW) {
        n = sqlite3_column_int64(s, 0);
        *sum = sqlite3_column_double(s, 1);
    }
    sqlite3_finalize(s);
    return n;
}

/* ---- parsing ---- */

WT_TEST(uk_csv_real_file_forecast_and_actual_apart)
{
    struct row rows[64];
    size_t nr = read_uk(UK "national_pt24h/2023-03-15T0331Z.csv", rows, 64);
    size_t len;
    char *buf = wt_test_read(wt_test_src_path(UK "national_pt24h/2023-03-15T0331Z.csv"), &len);
    struct wt_carbon_batch b;
    struct wt_err err = {{0}};
    WT_EQ_INT(
        wt_carbon_parse("f.csv", buf, len, WT_CF_AUTO, WT_CS_INTENSITY, "GB", stderr, &b, &err), 0);
    size_t nf = 0, na = 0;
    for (size_t i = 0; i < nr; i++)
        na += !isnan(rows[i].a);
    for (size_t i = 0; i < b.n; i++) {
        WT_EQ_STR(b.p[i].zone, "GB");
        WT_EQ_INT(b.p[i].to_ns - b.p[i].from_ns, 30 * MIN);
        nf += b.p[i].kind == WT_CK_FORECAST;
    }
    WT_EQ_INT(nf, nr);
    WT_EQ_INT(b.n - nf, na);
    WT_ASSERT(na < nr); /* the last periods have no actual yet */
    /* Sorted by kind then time: actuals first. */
    WT_EQ_INT(b.p[0].kind, WT_CK_ACTUAL);
    WT_EQ_INT(b.p[0].from_ns, rows[0].t);
    WT_NEAR(b.p[0].value, rows[0].a, 1e-9);
    WT_EQ_INT(b.p[na].kind, WT_CK_FORECAST);
    WT_NEAR(b.p[na].value, rows[0].f, 1e-9);
    wt_carbon_batch_free(&b);
    free(buf);
}

WT_TEST(csv_quoted_fields_and_a_bad_quote_by_line)
{
    /* The shared CSV reader (core/csv.h): quoted cells, a comma inside quotes, CRLF. */
    const char *csv = "\"timestamp\",\"gco2_per_kwh\",\"kind\"\r\n"
                      "\"2023-03-13T03:30Z\",\"120.5\",\"actual\"\r\n"
                      "2023-03-13T04:00Z, \"99\" ,forecast\r\n";
    struct wt_carbon_batch b;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_carbon_parse("q.csv", csv, strlen(csv), WT_CF_CSV, WT_CS_INTENSITY, "GB", stderr,
                              &b, &err),
              0);
    WT_EQ_INT(b.n, 2);
    WT_NEAR(b.p[0].value, 120.5, 0);
    WT_EQ_INT(b.p[1].kind, WT_CK_FORECAST);
    WT_NEAR(b.p[1].value, 99, 0);
    wt_carbon_batch_free(&b);

    const char *bad = "timestamp,gco2_per_kwh\n"
                      "2023-03-13T03:30Z,120\n"
                      "2023-03-13T04:00Z,\"99\"x\n"
                      "\"2023-03-13T04:30Z,5\n";
    char rep[512];
    snprintf(rep, sizeof rep, "%s/q.txt", wt_test_dir());
    FILE *r = fopen(rep, "w");
    WT_ASSERT(r != NULL);
    WT_EQ_INT(
        wt_carbon_parse("q.csv", bad, strlen(bad), WT_CF_CSV, WT_CS_INTENSITY, "GB", r, &b, &err),
        -EINVAL);
    fclose(r);
    WT_CONTAINS(err.msg, "q.csv: 2 malformed lines; nothing stored");
    char *txt = wt_test_read(rep, NULL);
    WT_CONTAINS(txt, "q.csv:3: text after a closing quote");
    WT_CONTAINS(txt, "q.csv:4: unterminated quoted field");
    free(txt);
    WT_EQ_INT(b.n, 0);
}

WT_TEST(csv_with_a_byte_order_mark_unix_seconds_and_comments)
{
    const char *csv = "\xEF\xBB\xBFtimestamp,gco2_per_kwh\r\n# from a spreadsheet\r\n"
                      "1678766400,120.5\r\n1678770000,99\r\n";
    struct wt_carbon_batch b;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_carbon_parse("s.csv", csv, strlen(csv), WT_CF_AUTO, WT_CS_INTENSITY, "GB", stderr,
                              &b, &err),
              0);
    WT_EQ_INT(b.n, 2);
    WT_EQ_INT(b.p[0].from_ns, 1678766400LL * S);
    WT_EQ_INT(b.p[0].to_ns, 1678770000LL * S);
    WT_NEAR(b.p[0].value, 120.5, 0);
    WT_EQ_INT(b.p[1].kind, WT_CK_ACTUAL);
    wt_carbon_batch_free(&b);
}

WT_TEST(uk_api_json_real_reply_matches_the_csv)
{
    size_t len;
    char *buf =
        wt_test_read(wt_test_src_path(UK "national_pt24h_json/2023-03-14T0301Z.json"), &len);
    struct wt_carbon_batch b;
    struct wt_err err = {{0}};
    WT_EQ_INT(
        wt_carbon_parse("r.json", buf, len, WT_CF_AUTO, WT_CS_INTENSITY, "GB", stderr, &b, &err),
        0);
    struct row rows[64];
    size_t nr = read_uk(UK "national_pt24h/2023-03-14T0331Z.csv", rows, 64);
    /* Every actual of the CSV is in the reply at the same time with the same value. */
    size_t matched = 0;
    for (size_t i = 0; i < nr; i++) {
        for (size_t k = 0; k < b.n && !isnan(rows[i].a); k++) {
            if (b.p[k].kind == WT_CK_ACTUAL && b.p[k].from_ns == rows[i].t) {
                WT_NEAR(b.p[k].value, rows[i].a, 1e-9);
                WT_EQ_INT(b.p[k].to_ns, rows[i].t + 30 * MIN);
                matched++;
            }
        }
    }
    WT_ASSERT(matched > 40);
    wt_carbon_batch_free(&b);
    free(buf);
}

WT_TEST(electricitymaps_history_and_forecast)
{
    const char *h = "{\"zone\": \"DE\", \"history\": [\n"
                    "  {\"carbonIntensity\": 302, \"datetime\": \"2019-05-21T00:00:00.000Z\",\n"
                    "   \"isEstimated\": false},\n"
                    "  {\"carbonIntensity\": 290, \"datetime\": \"2019-05-21T01:00:00.000Z\",\n"
                    "   \"isEstimated\": true},\n"
                    "  {\"carbonIntensity\": null, \"datetime\": \"2019-05-21T02:00:00.000Z\"}\n"
                    "]}\n";
    struct wt_carbon_batch b;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_carbon_parse("h.json", h, strlen(h), WT_CF_AUTO, WT_CS_INTENSITY, NULL, stderr, &b,
                              &err),
              0);
    WT_EQ_INT(b.n, 2);
    WT_EQ_STR(b.p[0].zone, "DE");
    WT_EQ_INT(b.p[0].kind, WT_CK_ACTUAL);
    WT_NEAR(b.p[0].value, 302, 0);
    WT_EQ_INT(b.p[0].to_ns - b.p[0].from_ns, HOUR);
    WT_EQ_INT(b.p[1].kind, WT_CK_FORECAST); /* estimated: the measured value will win */
    wt_carbon_batch_free(&b);

    const char *f = "{\"zone\": \"DE\", \"forecast\": [{\"carbonIntensity\": 319, \"datetime\": "
                    "\"2019-05-21T03:00:00Z\"}, {\"carbonIntensity\": 320, \"datetime\": "
                    "\"2019-05-21T03:15:00Z\"}], \"updatedAt\": \"2019-05-21T02:00:00Z\"}";
    WT_EQ_INT(wt_carbon_parse("f.json", f, strlen(f), WT_CF_ELECTRICITYMAPS, WT_CS_INTENSITY, NULL,
                              stderr, &b, &err),
              0);
    WT_EQ_INT(b.n, 2);
    WT_EQ_INT(b.p[1].kind, WT_CK_FORECAST);
    WT_EQ_INT(b.p[0].to_ns - b.p[0].from_ns, 15 * MIN); /* the series' own step */
    wt_carbon_batch_free(&b);
}

WT_TEST(points_centuries_apart_end_in_range)
{
    /* Found by fuzzing: a period of 180 years from a start in 2206 ran past 2262 and wrapped. */
    const char *h = "{\"zone\":\"DE\",\"history\":[{\"carbonIntensity\":320,\"datetime\":"
                    "\"2026-11-29T18:00:00.000Z\"},{\"carbonIntensity\":301,\"datetime\":"
                    "\"2206-11-29T19:00:00.000Z\"}]}";
    struct wt_carbon_batch b;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_carbon_parse("h.json", h, strlen(h), WT_CF_AUTO, WT_CS_INTENSITY, NULL, stderr, &b,
                              &err),
              0);
    WT_EQ_INT(b.n, 2);
    for (size_t i = 0; i < b.n; i++)
        WT_ASSERT(b.p[i].to_ns > b.p[i].from_ns);
    WT_EQ_INT(b.p[1].to_ns, INT64_MAX);
    wt_carbon_batch_free(&b);
    /* Starts in 1724 and 2023: their distance does not fit in 64-bit nanoseconds. */
    const char *far = "{\"zone\":\"DE\",\"history\":[{\"carbonIntensity\":320,\"datetime\":"
                      "\"1724-03-13T03:30:00Z\"},{\"carbonIntensity\":301,\"datetime\":"
                      "\"2023-03-13T03:00:00Z\"}]}";
    WT_EQ_INT(wt_carbon_parse("far.json", far, strlen(far), WT_CF_AUTO, WT_CS_INTENSITY, NULL,
                              stderr, &b, &err),
              0);
    WT_EQ_INT(b.n, 2);
    WT_EQ_INT(b.p[0].to_ns - b.p[0].from_ns, HOUR); /* no period: the single point's hour */
    WT_EQ_INT(b.p[1].to_ns - b.p[1].from_ns, HOUR);
    wt_carbon_batch_free(&b);
}

WT_TEST(malformed_csv_lines_reported_by_number_nothing_stored)
{
    char path[512], file[600], rep[600];
    struct wt_store *st = open_store(path, sizeof path);
    struct wt_err err = {{0}};
    size_t stored = 0;
    double sum0, sum1;
    WT_EQ_INT(wt_carbon_load_file(wt_store_db(st),
                                  wt_test_src_path(UK "national_pt24h/2023-03-14T0331Z.csv"),
                                  WT_CF_AUTO, WT_CS_INTENSITY, "GB", NULL, &stored, &err),
              0);
    WT_ASSERT(stored > 90);
    int64_t n0 = count_points(st, &sum0);
    /* Good rows that would replace stored ones, among bad ones. */
    snprintf(file, sizeof file, "%s/bad.csv", wt_test_dir());
    wt_test_write(file, "%s",
                  "timestamp,gco2_per_kwh,kind\n"
                  "2023-03-13T03:30Z,999,actual\n"
                  "2023-03-13T04:00Z,abc,actual\n"
                  "\n"
                  "2023-03-13T04:30Z,10,sometimes\n"
                  "yesterday,10,actual\n"
                  "2023-03-13T05:30Z,10\n"
                  "2023-03-13T06:00Z,-5,forecast\n");
    snprintf(rep, sizeof rep, "%s/report.txt", wt_test_dir());
    FILE *r = fopen(rep, "w");
    int rc = wt_carbon_load_file(wt_store_db(st), file, WT_CF_AUTO, WT_CS_INTENSITY, "GB", r,
                                 &stored, &err);
    fclose(r);
    WT_EQ_INT(rc, -EINVAL);
    WT_CONTAINS(err.msg, "5 malformed lines; nothing stored");
    size_t len;
    char *txt = wt_test_read(rep, &len);
    WT_CONTAINS(txt, "bad.csv:3: column 2: bad number \"abc\"");
    WT_CONTAINS(txt, "bad.csv:5: column 3: kind: expected actual or forecast");
    WT_CONTAINS(txt, "bad.csv:6: bad timestamp \"yesterday\"");
    WT_CONTAINS(txt, "bad.csv:7: expected 3 columns (got 2)");
    WT_CONTAINS(txt, "bad.csv:8: column 2: bad number \"-5\"");
    WT_ASSERT(!strstr(txt, "bad.csv:2:"));
    free(txt);
    int64_t n1 = count_points(st, &sum1);
    WT_EQ_INT(n1, n0);
    WT_NEAR(sum1, sum0, 0);
    wt_store_close(st);
}

WT_TEST(malformed_json_reported_by_line_nothing_stored)
{
    char path[512], rep[600];
    struct wt_store *st = open_store(path, sizeof path);
    struct wt_carbon_batch b;
    struct wt_err err = {{0}};
    snprintf(rep, sizeof rep, "%s/report.txt", wt_test_dir());
    const char *bad = "{\"data\": [\n"
                      "  {\"from\": \"2023-03-13T03:00Z\", \"to\": \"2023-03-13T03:30Z\",\n"
                      "   \"intensity\": {\"forecast\": 60, \"actual\": 64}},\n"
                      "  {\"from\": \"2023-03-13T03:30Z\", \"to\": \"2023-03-13T04:00Z\",\n"
                      "   \"intensity\": {\"forecast\": 52, \"actual\": \"high\"}},\n"
                      "  {\"from\": \"later\", \"to\": \"2023-03-13T04:30Z\",\n"
                      "   \"intensity\": {\"forecast\": 61}}\n"
                      "]}\n";
    FILE *r = fopen(rep, "w");
    WT_EQ_INT(wt_carbon_parse("uk.json", bad, strlen(bad), WT_CF_AUTO, WT_CS_INTENSITY, "GB", r, &b,
                              &err),
              -EINVAL);
    fclose(r);
    WT_EQ_INT(b.n, 0);
    WT_CONTAINS(err.msg, "2 malformed lines");
    size_t len;
    char *txt = wt_test_read(rep, &len);
    WT_CONTAINS(txt, "uk.json:4: data[1].intensity.actual: expected a number");
    WT_CONTAINS(txt, "uk.json:6: data[2].from: expected an RFC 3339 time");
    free(txt);
    /* A syntax error names its line. */
    const char *broken = "{\"data\": [\n  {\"from\": \"2023-03-13T03:00Z\",\n   \"intensity\": "
                         "{\"forecast\": 60,, }}\n]}\n";
    r = fopen(rep, "w");
    WT_EQ_INT(wt_carbon_parse("b.json", broken, strlen(broken), WT_CF_UK_API, WT_CS_INTENSITY, "GB",
                              r, &b, &err),
              -EINVAL);
    fclose(r);
    txt = wt_test_read(rep, &len);
    WT_CONTAINS(txt, "b.json:3: malformed JSON");
    free(txt);
    double sum;
    WT_EQ_INT(count_points(st, &sum), 0);
    wt_store_close(st);
}

/* ---- the step function ---- */

static struct wt_carbon_point pt(int64_t from, int64_t to, double v, enum wt_carbon_kind k)
{
    struct wt_carbon_point p = {.from_ns = from, .to_ns = to, .value = v, .kind = k};
    snprintf(p.zone, sizeof p.zone, "Z");
    return p;
}

WT_TEST(steps_actual_over_forecast_and_the_hole_rule)
{
    struct wt_carbon_conf cf;
    wt_carbon_conf_defaults(&cf);
    cf.max_hole_ns = 2 * HOUR;
    /* Sorted by from: a forecast for 0..3 h, an actual for 1..2 h, nothing 3..10 h, one at 10. */
    struct wt_carbon_point p[] = {
        pt(0, HOUR, 100, WT_CK_FORECAST),
        pt(HOUR, 2 * HOUR, 150, WT_CK_ACTUAL),
        pt(HOUR, 2 * HOUR, 110, WT_CK_FORECAST),
        pt(2 * HOUR, 3 * HOUR, 120, WT_CK_FORECAST),
        pt(10 * HOUR, 11 * HOUR, 300, WT_CK_ACTUAL),
    };
    struct wt_carbon_step *s = NULL;
    size_t n = 0;
    WT_EQ_INT(wt_carbon_steps_of(p, 5, &cf, 0, 11 * HOUR, &s, &n), 0);
    /* forecast 100 | actual 150 | forecast 120 | filled at 120 (2 h after it, then the middle
     * of the hole: the nearest value without a static one) | filled at 300 (the 2 h before
     * the next value) | actual 300 */
    WT_EQ_INT(n, 6);
    WT_EQ_INT(s[0].src, WT_CSRC_FORECAST);
    WT_NEAR(s[0].value, 100, 0);
    WT_EQ_INT(s[1].src, WT_CSRC_ACTUAL);
    WT_NEAR(s[1].value, 150, 0);
    WT_EQ_INT(s[2].src, WT_CSRC_FORECAST);
    WT_EQ_INT(s[3].src, WT_CSRC_FILLED);
    WT_NEAR(s[3].value, 120, 0);
    WT_EQ_INT(s[3].from_ns, 3 * HOUR);
    WT_EQ_INT(s[3].to_ns, 8 * HOUR); /* 2 h carried + the middle, at the last value */
    WT_EQ_INT(s[4].src, WT_CSRC_FILLED);
    WT_NEAR(s[4].value, 300, 0);
    WT_EQ_INT(s[4].from_ns, 8 * HOUR);
    WT_EQ_INT(s[5].src, WT_CSRC_ACTUAL);
    free(s);
    /* With a static value, the middle of a long hole is charged at it. */
    cf.has_static = true;
    cf.static_g = 233;
    WT_EQ_INT(wt_carbon_steps_of(p, 5, &cf, 0, 11 * HOUR, &s, &n), 0);
    WT_EQ_INT(n, 7);
    WT_EQ_INT(s[4].src, WT_CSRC_STATIC);
    WT_NEAR(s[4].value, 233, 0);
    WT_EQ_INT(s[4].from_ns, 5 * HOUR);
    WT_EQ_INT(s[4].to_ns, 8 * HOUR);
    free(s);
    /* No series at all: static, or nothing. */
    WT_EQ_INT(wt_carbon_steps_of(NULL, 0, &cf, 0, HOUR, &s, &n), 0);
    WT_EQ_INT(n, 1);
    WT_EQ_INT(s[0].src, WT_CSRC_STATIC);
    free(s);
    cf.has_static = false;
    WT_EQ_INT(wt_carbon_steps_of(NULL, 0, &cf, 0, HOUR, &s, &n), 0);
    WT_EQ_INT(s[0].src, WT_CSRC_NONE);
    free(s);
}

/* ---- emissions ---- */

/* Energy at a constant power, or a step at `at`. */
struct power {
    double w0, w1;
    int64_t at;
};

static int power_energy(void *ctx, int64_t a, int64_t b, double *j)
{
    const struct power *p = ctx;
    int64_t m = a < p->at ? (b < p->at ? b : p->at) : a;
    *j = p->w0 * (double)(m - a) / 1e9 + p->w1 * (double)(b - m) / 1e9;
    return 0;
}

static void store_points(struct wt_store *st, const struct wt_carbon_point *p, size_t n,
                         enum wt_carbon_series series)
{
    struct wt_carbon_batch b = {.p = (struct wt_carbon_point *)p, .n = n, .cap = n};
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_carbon_store(wt_store_db(st), series, &b, "test", 0, &err), 0);
}

WT_TEST(job_spanning_an_intensity_change_charged_each_side_at_its_rate)
{
    char path[512];
    struct wt_store *st = open_store(path, sizeof path);
    struct wt_carbon_conf cf;
    wt_carbon_conf_defaults(&cf);
    snprintf(cf.zone, sizeof cf.zone, "Z");
    struct wt_carbon_point p[] = {pt(0, HOUR, 100, WT_CK_ACTUAL),
                                  pt(HOUR, 2 * HOUR, 300, WT_CK_ACTUAL)};
    store_points(st, p, 2, WT_CS_INTENSITY);
    /* 1 kW from 0:30 to 1:30, then the same with 2 kW after the change. */
    struct power pw = {1000, 1000, 0};
    struct wt_carbon_result r;
    WT_EQ_INT(wt_carbon_emissions(wt_store_db(st), NULL, &cf, "Z", HOUR / 2, 3 * HOUR / 2,
                                  power_energy, &pw, 1.25, true, &r),
              0);
    WT_ASSERT(r.known);
    WT_EQ_INT(r.pieces, 2);
    WT_NEAR(r.it_j, 3.6e6, 1e-6);
    WT_NEAR(r.g, 1.25 * (0.5 * 100 + 0.5 * 300), 1e-9);
    WT_NEAR(r.by_src_j[WT_CSRC_ACTUAL], 3.6e6, 1e-6);
    WT_ASSERT(r.pue_measured);
    pw = (struct power){1000, 2000, HOUR};
    WT_EQ_INT(wt_carbon_emissions(wt_store_db(st), NULL, &cf, "Z", HOUR / 2, 3 * HOUR / 2,
                                  power_energy, &pw, 0, false, &r),
              0);
    WT_NEAR(r.g, cf.pue_assumed * (0.5 * 100 + 1.0 * 300), 1e-9);
    WT_ASSERT(!r.pue_measured);
    WT_NEAR(r.pue, WT_CARBON_PUE_ASSUMED, 0);
    wt_store_close(st);
}

WT_TEST(forecast_replaced_by_actuals_changes_the_figure)
{
    char path[512];
    struct wt_store *st = open_store(path, sizeof path);
    struct wt_carbon_conf cf;
    wt_carbon_conf_defaults(&cf);
    struct wt_carbon_point f[] = {pt(0, HOUR, 200, WT_CK_FORECAST),
                                  pt(HOUR, 2 * HOUR, 200, WT_CK_FORECAST)};
    store_points(st, f, 2, WT_CS_INTENSITY);
    struct power pw = {3600, 3600, 0}; /* 3.6 kWh per hour */
    struct wt_carbon_result r;
    WT_EQ_INT(wt_carbon_emissions(wt_store_db(st), NULL, &cf, "Z", 0, 2 * HOUR, power_energy, &pw,
                                  1.0, false, &r),
              0);
    WT_NEAR(r.g, 2 * 3.6 * 200, 1e-9);
    WT_NEAR(r.by_src_j[WT_CSRC_FORECAST], 2 * 3.6 * 3.6e6, 1e-3);
    /* The actual of the first hour arrives (and a newer forecast of the second). */
    struct wt_carbon_point a[] = {pt(0, HOUR, 80, WT_CK_ACTUAL)};
    struct wt_carbon_point f2[] = {pt(HOUR, 2 * HOUR, 250, WT_CK_FORECAST)};
    store_points(st, a, 1, WT_CS_INTENSITY);
    store_points(st, f2, 1, WT_CS_INTENSITY);
    WT_EQ_INT(wt_carbon_emissions(wt_store_db(st), NULL, &cf, "Z", 0, 2 * HOUR, power_energy, &pw,
                                  1.0, false, &r),
              0);
    WT_NEAR(r.g, 3.6 * 80 + 3.6 * 250, 1e-9);
    WT_NEAR(r.by_src_j[WT_CSRC_ACTUAL], 3.6 * 3.6e6, 1e-3);
    /* The forecast is still stored, apart: a scheduler's view sees it. */
    struct wt_carbon_step *s = NULL;
    size_t n = 0;
    WT_EQ_INT(wt_carbon_steps_ex(wt_store_db(st), &cf, WT_CS_INTENSITY, "Z", true, 0, HOUR, &s, &n),
              0);
    WT_EQ_INT(n, 1);
    WT_NEAR(s[0].value, 200, 0);
    free(s);
    wt_store_close(st);
}

WT_TEST(market_based_with_renewable_supply)
{
    char path[512];
    struct wt_store *st = open_store(path, sizeof path);
    struct wt_carbon_conf cf;
    wt_carbon_conf_defaults(&cf);
    /* The site: one GPU at 1 kW for two hours (counter every 10 s). */
    struct wt_reading r[721];
    char lab[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(lab, sizeof lab, "gpu", "0", "uuid", "GPU-1", NULL), 0);
    int64_t t0 = t_of("2023-03-14T00:00:00Z");
    for (int i = 0; i <= 720; i++) {
        r[i] = (struct wt_reading){
            .t_ns = t0 + i * 10 * S, .value = 1000.0 * 10 * i, .metric = WT_M_GPU_ENERGY_J};
        memcpy(r[i].labels, lab, sizeof lab);
    }
    WT_EQ_INT(wt_store_begin_run(st, "", t0 - S, 10 * S, "test"), 0);
    WT_EQ_INT(wt_store_write(st, "", r, 721), 0);
    struct wt_carbon_point in[] = {pt(t0, t0 + HOUR, 100, WT_CK_ACTUAL),
                                   pt(t0 + HOUR, t0 + 2 * HOUR, 100, WT_CK_ACTUAL)};
    store_points(st, in, 2, WT_CS_INTENSITY);
    /* Contracted supply: 1 kWh in the first hour, none in the second; PUE 2: site 2 kWh/h. */
    struct wt_carbon_point ren[] = {pt(t0, t0 + HOUR, 1.0, WT_CK_ACTUAL),
                                    pt(t0 + HOUR, t0 + 2 * HOUR, 0.0, WT_CK_ACTUAL)};
    store_points(st, ren, 2, WT_CS_RENEWABLE);
    struct wt_carbon_result res;
    struct power pw = {1000, 1000, 0};
    WT_EQ_INT(wt_carbon_emissions(wt_store_db(st), st, &cf, "Z", t0, t0 + 2 * HOUR, power_energy,
                                  &pw, 2.0, true, &res),
              0);
    WT_NEAR(res.g, 2 * 2 * 100, 1e-6);
    WT_ASSERT(res.has_market);
    WT_NEAR(res.g_market, 0.5 * 200 + 200, 1e-6);
    wt_store_close(st);
}

/* A store with GPU 0 drawing 600 W until `change`, then 250 W, counter every 10 s. */
static void write_gpu(struct wt_store *st, int64_t from, int64_t to, int64_t change)
{
    size_t n = (size_t)((to - from) / (10 * S)) + 1, k = 0;
    struct wt_reading *r = calloc(n, sizeof *r);
    char lab[WT_LABELS_LEN];
    double e = 5000;
    WT_EQ_INT(wt_labels(lab, sizeof lab, "gpu", "0", "uuid", "GPU-aaaa-1", "model", "H200", NULL),
              0);
    for (int64_t t = from; t <= to; t += 10 * S) {
        if (t > from)
            e += (t <= change ? 600.0 : 250.0) * 10;
        r[k] = (struct wt_reading){.t_ns = t, .value = e, .metric = WT_M_GPU_ENERGY_J};
        memcpy(r[k++].labels, lab, sizeof lab);
    }
    WT_EQ_INT(wt_store_begin_run(st, "", from - S, 10 * S, "test"), 0);
    WT_EQ_INT(wt_store_write(st, "", r, k), 0);
    free(r);
}

static cJSON *job_req(struct wt_jobs *j, const char *method, const char *path, const char *body,
                      int64_t at)
{
    char *json = NULL;
    unsigned status;
    WT_EQ_INT(
        wt_api_jobs_handle(j, method, path, body, body ? strlen(body) : 0, 0, at, &status, &json),
        0);
    WT_ASSERT(status < 300);
    cJSON *v = cJSON_Parse(json);
    cJSON_free(json);
    WT_ASSERT(v != NULL);
    return v;
}

static double jnum(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    WT_ASSERT(cJSON_IsNumber(x));
    return x->valuedouble;
}

WT_TEST(job_emissions_on_the_real_series_match_a_hand_computation)
{
    char path[512];
    struct wt_store *st = open_store(path, sizeof path);
    struct wt_err err = {{0}};
    size_t stored;
    WT_EQ_INT(wt_carbon_load_file(wt_store_db(st),
                                  wt_test_src_path(UK "national_pt24h/2023-03-15T0331Z.csv"),
                                  WT_CF_CSV, WT_CS_INTENSITY, "GB", NULL, &stored, &err),
              0);
    /* A job from 09:10 to 15:50 on 14 March (a windy morning, then more gas), its power
     * changing at 12:05: neither edge nor change on a half-hour. */
    int64_t a = t_of("2023-03-14T09:10:00Z"), b = t_of("2023-03-14T15:50:00Z");
    int64_t change = t_of("2023-03-14T12:05:00Z");
    write_gpu(st, a - 5 * MIN, b + 5 * MIN, change);
    wt_store_close(st);

    struct wt_jobs *j = NULL;
    struct wt_carbon_conf cf;
    wt_carbon_conf_defaults(&cf);
    snprintf(cf.zone, sizeof cf.zone, "GB");
    WT_EQ_INT(wt_jobs_open(path, NULL, &j, &err), 0);
    WT_EQ_INT(wt_jobs_set_carbon(j, &cf), 0);
    cJSON *v = job_req(j, "POST", "/api/v1/jobs", "{\"name\": \"train\", \"gpus\": [0]}", a);
    cJSON_Delete(v);
    v = job_req(j, "POST", "/api/v1/jobs/train/marks", "{\"kind\": \"epoch\", \"index\": 1}",
                change);
    cJSON_Delete(v);
    v = job_req(j, "POST", "/api/v1/jobs/train/end", NULL, b);
    cJSON_Delete(v);
    v = job_req(j, "GET", "/api/v1/jobs/train", NULL, b);

    /* By hand, from the file: each half-hour's actual x the energy of the job in it. */
    struct row rows[64];
    size_t nr = read_uk(UK "national_pt24h/2023-03-15T0331Z.csv", rows, 64);
    double g = 0, kwh = 0, g_epoch = 0;
    for (size_t i = 0; i < nr; i++) {
        int64_t lo = rows[i].t > a ? rows[i].t : a, hi = rows[i].t + 30 * MIN;
        hi = hi < b ? hi : b;
        if (hi <= lo)
            continue;
        WT_ASSERT(!isnan(rows[i].a)); /* the window has actuals throughout */
        int64_t m = change < lo ? lo : change > hi ? hi : change;
        double j_hi = 600.0 * (double)(m - lo) / 1e9, j_lo = 250.0 * (double)(hi - m) / 1e9;
        g += (j_hi + j_lo) / 3.6e6 * WT_CARBON_PUE_ASSUMED * rows[i].a;
        g_epoch += j_hi / 3.6e6 * WT_CARBON_PUE_ASSUMED * rows[i].a;
        kwh += (j_hi + j_lo) / 3.6e6;
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "carbon");
    WT_ASSERT(c != NULL);
    WT_NEAR(jnum(v, "kpi", "energy_kwh"), kwh, 1e-9);
    WT_NEAR(jnum(c, "gco2e", NULL), g, 1e-6);
    WT_NEAR(jnum(v, "kpi", "gco2e"), g, 1e-6);
    WT_NEAR(jnum(c, "pue", NULL), WT_CARBON_PUE_ASSUMED, 0);
    WT_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "pue_source")), "assumed");
    WT_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "intensity_source")),
              "measured");
    WT_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "zone")), "GB");
    /* The phase (the epoch up to the change) has its own figure. */
    const cJSON *ph = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v, "phases"), 0);
    WT_NEAR(jnum(ph, "kpi", "gco2e"), g_epoch, 1e-6);
    cJSON_Delete(v);
    wt_jobs_close(j);
}

WT_TEST(running_job_emission_counter_on_metrics)
{
    char path[512];
    struct wt_store *st = open_store(path, sizeof path);
    struct wt_err err = {{0}};
    int64_t now = wt_now_real_ns();
    int64_t a = now - 20 * MIN;
    write_gpu(st, a - MIN, now, now); /* 600 W throughout */
    struct wt_carbon_point p[] = {pt(a - HOUR, now + HOUR, 200, WT_CK_ACTUAL)};
    snprintf(p[0].zone, sizeof p[0].zone, "GB");
    store_points(st, p, 1, WT_CS_INTENSITY);
    wt_store_close(st);
    struct wt_jobs *j = NULL;
    struct wt_carbon_conf cf;
    wt_carbon_conf_defaults(&cf);
    snprintf(cf.zone, sizeof cf.zone, "GB");
    cf.pue_assumed = 1.5;
    WT_EQ_INT(wt_jobs_open(path, NULL, &j, &err), 0);
    WT_EQ_INT(wt_jobs_set_carbon(j, &cf), 0);
    cJSON_Delete(job_req(j, "POST", "/api/v1/jobs", "{\"name\": \"infer\", \"gpus\": [0]}", a));
    struct wt_expo_family fam;
    WT_EQ_INT(wt_jobs_family_co2(j, &fam), 0);
    WT_EQ_STR(fam.name, "wattage_job_emissions_grams_total");
    WT_EQ_INT(fam.n, 1);
    WT_CONTAINS(fam.s[0].labels, "job=\"infer\"");
    /* 600 W for the 20 minutes until the last reading (the family is computed up to now). */
    WT_NEAR(fam.s[0].value, 600.0 * 1200 / 3.6e6 * 1.5 * 200, 600.0 * 2 / 3.6e6 * 1.5 * 200);
    free(fam.s);
    wt_jobs_close(j);
}

WT_TEST(cue_of_a_window)
{
    char path[512];
    struct wt_store *st = open_store(path, sizeof path);
    int64_t t0 = t_of("2023-03-14T10:00:00Z");
    write_gpu(st, t0, t0 + 2 * HOUR, t0 + HOUR);
    struct wt_carbon_point p[] = {pt(t0, t0 + HOUR, 100, WT_CK_ACTUAL),
                                  pt(t0 + HOUR, t0 + 2 * HOUR, 300, WT_CK_ACTUAL)};
    snprintf(p[0].zone, sizeof p[0].zone, "GB");
    snprintf(p[1].zone, sizeof p[1].zone, "GB");
    store_points(st, p, 2, WT_CS_INTENSITY);
    struct wt_carbon_conf cf;
    wt_carbon_conf_defaults(&cf);
    snprintf(cf.zone, sizeof cf.zone, "GB");
    struct wt_carbon_cue c;
    WT_EQ_INT(wt_carbon_cue(st, &cf, t0, t0 + 2 * HOUR, &c), 0);
    double kwh = (600.0 + 250.0) * 3600 / 3.6e6;
    double kg = (0.6 * 100 + 0.25 * 300) * WT_CARBON_PUE_ASSUMED / 1000;
    WT_NEAR(c.cue, kg / kwh, 1e-9);
    WT_ASSERT(!c.r.pue_measured);
    /* No zone, no static value: no figure. */
    cf.zone[0] = '\0';
    WT_EQ_INT(wt_carbon_cue(st, &cf, t0, t0 + 2 * HOUR, &c), 0);
    WT_ASSERT(isnan(c.cue));
    WT_ASSERT(!c.r.known);
    cf.has_static = true;
    cf.static_g = 200;
    WT_EQ_INT(wt_carbon_cue(st, &cf, t0, t0 + 2 * HOUR, &c), 0);
    WT_NEAR(c.cue, 200 * WT_CARBON_PUE_ASSUMED / 1000, 1e-9);
    wt_store_close(st);
}

/* ---- the config section ---- */

static int load_cfg(const char *yaml, struct wt_config *cfg, struct wt_err *err)
{
    wt_config_defaults(cfg);
    return wt_config_load_string("w.yaml", yaml, strlen(yaml), cfg, err);
}

WT_TEST(config_section_parsed_and_errors_name_file_line_and_path)
{
    struct wt_config cfg;
    struct wt_carbon_conf cf;
    struct wt_err err = {{0}};
    WT_EQ_INT(load_cfg("carbon:\n"
                       "  zone: GB\n"
                       "  static_gco2_per_kwh: 233\n"
                       "  pue_assumed: 1.3\n"
                       "  nodes:\n"
                       "    gpu-07: DE\n"
                       "  sources:\n"
                       "    - kind: uk_api\n"
                       "      url: https://api.carbonintensity.org.uk/intensity/date\n"
                       "      interval: 30m\n"
                       "    - kind: electricitymaps\n"
                       "      url: https://api.electricitymap.org/v3/carbon-intensity/forecast\n"
                       "      token_file: /etc/wattage/em.token\n"
                       "      zone: DE\n"
                       "    - kind: csv\n"
                       "      series: price\n"
                       "      file: /var/lib/wattage/price.csv\n",
                       &cfg, &err),
              0);
    WT_EQ_INT(wt_carbon_conf_from(&cfg, &cf, &err), 0);
    WT_EQ_STR(cf.zone, "GB");
    WT_ASSERT(cf.has_static);
    WT_NEAR(cf.static_g, 233, 0);
    WT_NEAR(cf.pue_assumed, 1.3, 0);
    WT_EQ_STR(wt_carbon_zone_of(&cf, "gpu-07"), "DE");
    WT_EQ_STR(wt_carbon_zone_of(&cf, "gpu-01"), "GB");
    WT_EQ_INT(cf.nsrc, 3);
    WT_EQ_INT(cf.src[0].format, WT_CF_UK_API);
    WT_EQ_STR(cf.src[0].zone, "GB");
    WT_EQ_INT(cf.src[0].interval_ns, 30 * MIN);
    WT_EQ_STR(cf.src[1].zone, "DE");
    WT_EQ_STR(cf.src[1].token_header, "auth-token");
    WT_EQ_INT(cf.src[2].series, WT_CS_PRICE);
    wt_config_free(&cfg);

    struct {
        const char *yaml, *msg;
    } bad[] = {
        {"carbon:\n  zone: GB\n  pue_asumed: 1.2\n", "w.yaml:3: carbon.pue_asumed"},
        {"carbon:\n  pue_assumed: 0.5\n", "w.yaml:2: carbon.pue_assumed"},
        {"carbon:\n  zone: GB\n  sources:\n    - kind: csv\n",
         "w.yaml:4: carbon.sources[0]: "
         "expected exactly one of file or url"},
        {"carbon:\n  zone: GB\n  sources:\n    - kind: xml\n      file: a\n",
         "w.yaml:4: carbon.sources[0].kind"},
        {"carbon:\n  sources:\n    - kind: csv\n      file: a\n",
         "w.yaml:3: carbon.sources[0]: no zone"},
        {"carbon:\n  zone: GB\n  sources:\n    - kind: uk_api\n      url: ftp://x\n",
         "w.yaml:5: carbon.sources[0].url: expected an http:// or https:// URL"},
        {"carbon:\n  zone: GB\n  sources:\n    - kind: uk_api\n      url: http://x\n"
         "      timeout: 5m\n",
         "w.yaml:6: carbon.sources[0].timeout: expected a duration from 100ms to 1m (got \"5m\", "
         "above 1m)"},
        {"carbon:\n  zone: \"G B\"\n", "w.yaml:2: carbon.zone: expected a zone name"},
        {"carbon:\n  zone: GB\n  sources:\n    - kind: uk_api\n      url: http://x\n"
         "      token_header: \"a: b\"\n",
         "w.yaml:6: carbon.sources[0].token_header: expected a header name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        WT_EQ_INT(load_cfg(bad[i].yaml, &cfg, &err), -EINVAL);
        WT_CONTAINS(err.msg, bad[i].msg);
        wt_config_free(&cfg);
    }
}

/* ---- the fetch thread ---- */

WT_TEST(fetch_failures_back_off_doubling_up_to_the_interval)
{
    char path[512];
    struct wt_store *st = open_store(path, sizeof path);
    wt_store_close(st);
    struct wt_carbon_conf cf;
    wt_carbon_conf_defaults(&cf);
    snprintf(cf.zone, sizeof cf.zone, "GB");
    cf.nsrc = 1;
    struct wt_carbon_source *s = &cf.src[0];
    s->format = WT_CF_UK_API;
    /* A refused connection fails at once: only the backoff paces the attempts. */
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:1/intensity");
    snprintf(s->zone, sizeof s->zone, "GB");
    snprintf(s->token_header, sizeof s->token_header, "auth-token");
    s->interval_ns = 800 * WT_NS_PER_MS;
    s->timeout_ns = 2 * S;
    s->retry_ns = 100 * WT_NS_PER_MS;
    struct wt_carbon *c = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_carbon_open(&cf, path, NULL, &c, &err), 0);
    struct wt_carbon_fetch_stats fs = {0};
    /* 100, 200, 400, 800, 800 ms...: five attempts take at least 1.5 s. */
    for (int i = 0; i < 100 && fs.attempts < 5; i++) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
        WT_EQ_INT(wt_carbon_fetch_stats(c, 0, &fs), 0);
    }
    WT_ASSERT(fs.attempts >= 5);
    WT_EQ_INT(fs.successes, 0);
    WT_ASSERT(fs.failures >= 4);
    WT_EQ_INT(fs.next_retry_ns, 800 * WT_NS_PER_MS); /* capped at the interval */
    WT_EQ_INT(wt_carbon_fetch_stats(c, 1, &fs), -ENOENT);
    wt_carbon_close(c);
}

/* Counter readings every 10 s over [t0, t0 + 1 h] at watts W. */
static void meter(struct wt_store *st, int metric, const char *labels, int64_t t0, double w)
{
    struct wt_reading r[361];
    for (int i = 0; i <= 360; i++) {
        r[i] = (struct wt_reading){.t_ns = t0 + i * 10 * S, .value = w * 10 * i, .metric = metric};
        snprintf(r[i].labels, sizeof r[i].labels, "%s", labels);
    }
    WT_EQ_INT(wt_store_write(st, "", r, 361), 0);
}

WT_TEST(job_emissions_use_the_measured_pue_of_the_facility_layer)
{
    char path[512], lab[WT_LABELS_LEN];
    struct wt_store *st = open_store(path, sizeof path);
    struct wt_err err = {{0}};
    int64_t t0 = t_of("2023-03-14T10:00:00Z");
    WT_EQ_INT(wt_store_begin_run(st, "", t0 - MIN, 10 * S, "test"), 0);
    /* The site: 1.5 kW at the facility meter, 1 kW at the UPS output (PUE 1.5); GPU 0 600 W. */
    WT_EQ_INT(wt_labels(lab, sizeof lab, "source", "modbus", "target", "main", "point", "total",
                        "kind", "meter", NULL),
              0);
    meter(st, WT_M_FAC_ENERGY_J, lab, t0, 1500);
    WT_EQ_INT(wt_labels(lab, sizeof lab, "source", "snmp", "target", "ups", "point", "out", "kind",
                        "ups_output", NULL),
              0);
    meter(st, WT_M_FAC_ENERGY_J, lab, t0, 1000);
    WT_EQ_INT(wt_labels(lab, sizeof lab, "gpu", "0", "uuid", "GPU-aaaa-1", NULL), 0);
    meter(st, WT_M_GPU_ENERGY_J, lab, t0, 600);
    struct wt_carbon_point p[] = {pt(t0, t0 + 30 * MIN, 100, WT_CK_ACTUAL),
                                  pt(t0 + 30 * MIN, t0 + HOUR, 300, WT_CK_ACTUAL)};
    snprintf(p[0].zone, sizeof p[0].zone, "GB");
    snprintf(p[1].zone, sizeof p[1].zone, "GB");
    store_points(st, p, 2, WT_CS_INTENSITY);
    wt_store_close(st);

    static const char yaml[] = "topology:\n"
                               "  meters:\n"
                               "    - {target: main, point: total, role: facility_total}\n"
                               "    - {target: ups, point: out, role: it_total}\n"
                               "carbon:\n"
                               "  zone: GB\n";
    struct wt_config cfg;
    struct wt_carbon_conf cf;
    WT_EQ_INT(load_cfg(yaml, &cfg, &err), 0);
    WT_EQ_INT(wt_carbon_conf_from(&cfg, &cf, &err), 0);
    struct wt_jobs *j = NULL;
    WT_EQ_INT(wt_jobs_open(path, NULL, &j, &err), 0);
    WT_EQ_INT(wt_jobs_set_carbon(j, &cf), 0);
    cJSON_Delete(job_req(j, "POST", "/api/v1/jobs", "{\"name\": \"m\", \"gpus\": [0]}", t0));
    cJSON_Delete(job_req(j, "POST", "/api/v1/jobs/m/end", NULL, t0 + HOUR));
    cJSON *v = job_req(j, "GET", "/api/v1/jobs/m", NULL, t0 + HOUR);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(v, "carbon");
    WT_EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "pue_source")), "measured");
    WT_NEAR(jnum(c, "pue", NULL), 1.5, 1e-9);
    WT_NEAR(jnum(c, "gco2e", NULL), 0.3 * 1.5 * 100 + 0.3 * 1.5 * 300, 1e-6);
    cJSON_Delete(v);
    wt_jobs_close(j);
    wt_config_free(&cfg);
}

/* One assumed PUE for every figure: facility.pue_assumed wins over carbon.pue_assumed. */
WT_TEST(facility_assumed_pue_serves_carbon_too)
{
    char path[512];
    struct wt_store *st = open_store(path, sizeof path);
    struct wt_err err = {{0}};
    int64_t t0 = t_of("2023-03-14T10:00:00Z");
    static const char both[] = "facility:\n  pue_assumed: 1.25\ncarbon:\n  zone: GB\n"
                               "  pue_assumed: 1.5\n";
    static const char carbon_only[] = "carbon:\n  zone: GB\n  pue_assumed: 1.5\n";
    struct wt_config cfg;
    struct wt_carbon_conf cf;
    double pue = 0;
    bool measured = true;

    WT_EQ_INT(load_cfg(both, &cfg, &err), 0);
    WT_EQ_INT(wt_carbon_conf_from(&cfg, &cf, &err), 0);
    wt_carbon_pue(st, &cf, t0, t0 + HOUR, &pue, &measured);
    WT_NEAR(pue, 1.25, 0);
    WT_ASSERT(!measured);
    wt_config_free(&cfg);

    WT_EQ_INT(load_cfg(carbon_only, &cfg, &err), 0);
    WT_EQ_INT(wt_carbon_conf_from(&cfg, &cf, &err), 0);
    measured = true;
    wt_carbon_pue(st, &cf, t0, t0 + HOUR, &pue, &measured);
    WT_NEAR(pue, 1.5, 0);
    WT_ASSERT(!measured);
    wt_config_free(&cfg);
    wt_store_close(st);
}

WT_TEST(url_now_placeholder)
{
    char out[128];
    wt_carbon_url_expand("https://api.carbonintensity.org.uk/intensity/{now}/fw48h",
                         t_of("2026-11-29T18:07:31Z"), out, sizeof out);
    WT_EQ_STR(out, "https://api.carbonintensity.org.uk/intensity/2026-11-29T18:07Z/fw48h");
    wt_carbon_url_expand("http://x/{now}", 0, out, 12);
    WT_EQ_STR(out, "http://x/"); /* no room: cut before the placeholder, never mid-way */
    wt_carbon_url_expand("http://x/plain", 0, out, sizeof out);
    WT_EQ_STR(out, "http://x/plain");
}

WT_TEST(a_url_source_token_readable_by_others_stops_the_start)
{
    char path[512], tok[200];
    struct wt_err err = {{0}};
    wt_store_close(open_store(path, sizeof path));
    snprintf(tok, sizeof tok, "%s/em.token", wt_test_dir());
    wt_test_write(tok, "s3cret\n");
    WT_EQ_INT(chmod(tok, 0644), 0);
    struct wt_carbon_conf cf;
    wt_carbon_conf_defaults(&cf);
    cf.nsrc = 2;
    /* A file source never sends its token: not checked. */
    snprintf(cf.src[0].file, sizeof cf.src[0].file, "%s/none.csv", wt_test_dir());
    snprintf(cf.src[0].token_file, sizeof cf.src[0].token_file, "%s", tok);
    snprintf(cf.src[1].url, sizeof cf.src[1].url, "http://127.0.0.1:1/latest");
    snprintf(cf.src[1].token_file, sizeof cf.src[1].token_file, "%s", tok);
    WT_EQ_INT(wt_carbon_check_secrets(&cf, &err), -EPERM);
    WT_CONTAINS(err.msg, "carbon.sources[1].token_file: ");
    WT_CONTAINS(err.msg, "em.token is accessible by group or others (mode 0644)");
    struct wt_carbon *c = NULL;
    memset(&err, 0, sizeof err);
    WT_EQ_INT(wt_carbon_open(&cf, path, NULL, &c, &err), -EPERM);
    WT_ASSERT(c == NULL);
    WT_CONTAINS(err.msg, "carbon.sources[1].token_file: ");
    WT_EQ_INT(chmod(tok, 0600), 0);
    WT_EQ_INT(wt_carbon_check_secrets(&cf, &err), 0);
}
