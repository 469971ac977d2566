/* SPDX-License-Identifier: MIT */
/* nvidia-smi CSV import into a real SQLite store: column maps, units, [N/A] cells, malformed
 * lines, the integrated energy and its gaps, and re-imports that touch nothing stored. */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "runner.h"
#include "store/import.h"
#include "store/query.h"
#include "store/store.h"

static struct wt_store *open_store(void)
{
    char path[512];
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/i.db", wt_test_dir());
    if (wt_store_open(path, NULL, &s, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %s", err.msg);
    return s;
}

static int import(struct wt_store *s, const char *fixture, const char *node,
                  struct wt_import_stats *st, char *report, size_t n, struct wt_err *err)
{
    FILE *f = fopen(wt_test_src_path(fixture), "r");
    WT_ASSERT(f != NULL);
    FILE *rep = fmemopen(report, n, "w");
    int rc = wt_import_nvidia_smi(s, f, fixture, node, rep, st, err);
    fclose(rep);
    fclose(f);
    return rc;
}

static double one(struct wt_store *s, const char *sql)
{
    sqlite3_stmt *q;
    WT_EQ_INT(sqlite3_prepare_v2(wt_store_db(s), sql, -1, &q, NULL), 0);
    WT_EQ_INT(sqlite3_step(q), SQLITE_ROW);
    double v = sqlite3_column_double(q, 0);
    sqlite3_finalize(q);
    return v;
}

static int64_t t_local(int h, int m, int sec, int ms)
{
    struct tm tm = {.tm_year = 124,
                    .tm_mon = 4,
                    .tm_mday = 1,
                    .tm_hour = h,
                    .tm_min = m,
                    .tm_sec = sec,
                    .tm_isdst = -1};
    return (int64_t)mktime(&tm) * WT_NS_PER_S + ms * WT_NS_PER_MS;
}

WT_TEST(units_in_cells_na_and_malformed_lines)
{
    setenv("TZ", "UTC", 1);
    tzset();
    struct wt_store *s = open_store();
    struct wt_import_stats st;
    struct wt_err err = {{0}};
    char report[4096] = "";
    WT_EQ_INT(import(s, "tests/fixtures/nvidia-smi/h200-4gpu-units.csv", "h200", &st, report,
                     sizeof report, &err),
              0);
    WT_EQ_INT(st.gpus, 4);
    WT_EQ_INT(st.rows, 480);
    WT_EQ_INT(st.skipped, 3);
    WT_CONTAINS(report, "h200-4gpu-units.csv:51: expected 13 fields, got 3: line skipped");
    WT_CONTAINS(report, "h200-4gpu-units.csv:101: bad timestamp");
    WT_CONTAINS(report, "h200-4gpu-units.csv:201: column 5: bad number \"lots W\"");

    /* units converted to base units, labels like the daemon's, node kept apart */
    WT_NEAR(one(s, "SELECT v FROM readings r JOIN series s ON s.id=r.series WHERE "
                   "s.metric='wattage_gpu_memory_used_bytes' AND s.labels LIKE 'gpu=\"1\"%' "
                   "LIMIT 1"),
            20001.0 * 1048576, 0);
    WT_NEAR(one(s, "SELECT v FROM readings r JOIN series s ON s.id=r.series WHERE "
                   "s.metric='wattage_gpu_sm_clock_hertz' LIMIT 1"),
            1980e6, 0);
    WT_NEAR(one(s, "SELECT max(v) FROM readings r JOIN series s ON s.id=r.series WHERE "
                   "s.metric='wattage_gpu_utilization_ratio'"),
            1.0, 0);
    WT_NEAR(one(s, "SELECT count(*) FROM series WHERE node='h200' AND labels = "
                   "'gpu=\"0\",uuid=\"GPU-6a1c0000-h200-4bd1-9e2f-000000000000\","
                   "model=\"NVIDIA H200\"' AND metric='wattage_gpu_power_watts'"),
            1, 0);
    /* [N/A] cells are absent, not zero: GPU 3 misses 4 temperatures */
    WT_NEAR(one(s, "SELECT count(*) FROM readings r JOIN series s ON s.id=r.series WHERE "
                   "s.metric='wattage_gpu_temperature_celsius' AND s.labels LIKE 'gpu=\"3\"%'"),
            116, 0);
    WT_NEAR(one(s, "SELECT count(*) FROM readings r JOIN series s ON s.id=r.series WHERE "
                   "s.metric='wattage_gpu_temperature_celsius' AND v = 0"),
            0, 0);
    /* local time of the importer (TZ=UTC here), milliseconds kept */
    WT_NEAR(one(s, "SELECT min(t) FROM readings"), (double)t_local(12, 0, 0, 123), 1e3);

    /* the energy is the trapezoid of the logged power: recompute it from the formula */
    double exact = 0;
    for (int k = 1; k < 120; k++)
        exact += 0.5 * ((300 + (k - 1) % 10) + (300 + k % 10));
    struct wt_energy_row *rows = NULL;
    size_t n = 0;
    WT_EQ_INT(
        wt_store_energy(s, t_local(12, 0, 0, 123), t_local(12, 1, 59, 123), 0, &rows, &n, &err), 0);
    WT_EQ_INT(n, 4);
    WT_EQ_STR(rows[0].s.node, "h200");
    WT_EQ_STR(rows[0].method, "integrated");
    WT_NEAR(rows[0].energy_j, exact, 1e-6);
    WT_NEAR(rows[0].coverage, 1, 1e-9);
    free(rows);
    wt_store_close(s);
}

WT_TEST(nounits_reordered_gap_and_reimport)
{
    setenv("TZ", "UTC", 1);
    tzset();
    struct wt_store *s = open_store();
    struct wt_import_stats st;
    struct wt_err err = {{0}};
    char report[4096] = "";
    const char *fx = "tests/fixtures/nvidia-smi/a100-nounits.csv";
    WT_EQ_INT(import(s, fx, "a100", &st, report, sizeof report, &err), 0);
    WT_EQ_INT(st.gpus, 2);
    WT_EQ_INT(st.rows, 222);
    WT_EQ_INT(st.skipped, 0); /* the repeated header is not an error */
    WT_EQ_STR(report, "");    /* every column known */

    int64_t a = t_local(12, 0, 0, 0), b = t_local(12, 1, 0, 0);
    struct wt_energy_row *rows = NULL;
    size_t n = 0;
    WT_EQ_INT(wt_store_energy(s, a, b, 0, &rows, &n, &err), 0);
    WT_EQ_INT(n, 2);
    WT_NEAR(rows[0].energy_j, 250.0 * 60, 1e-6);
    WT_NEAR(rows[0].coverage, 1, 1e-9);
    /* GPU 1 has a 10.5 s hole (> 3 sampling intervals): not integrated, not covered */
    WT_NEAR(rows[1].energy_j, 300.0 * 49.5, 1e-6);
    WT_NEAR(rows[1].coverage, 49.5 / 60, 1e-9);
    free(rows);
    /* [Not Supported] cells: absent, so no utilization series at all */
    WT_NEAR(one(s, "SELECT count(*) FROM series WHERE metric='wattage_gpu_utilization_ratio'"), 0,
            0);

    /* a re-import touches nothing already stored */
    WT_EQ_INT(sqlite3_exec(wt_store_db(s),
                           "UPDATE readings SET v=-1 WHERE t=(SELECT min(t) FROM readings)", NULL,
                           NULL, NULL),
              SQLITE_OK);
    double marked = one(s, "SELECT count(*) FROM readings WHERE v=-1");
    double total = one(s, "SELECT count(*) FROM readings");
    WT_ASSERT(marked > 0);
    WT_EQ_INT(import(s, fx, "a100", &st, report, sizeof report, &err), 0);
    WT_NEAR(one(s, "SELECT count(*) FROM readings WHERE v=-1"), marked, 0);
    WT_NEAR(one(s, "SELECT count(*) FROM readings"), total, 0);
    wt_store_close(s);
}

/* wt_import_nvidia_smi on text (named name, node name without its ".csv"), its report into rep. */
static int import_text(struct wt_store *s, const char *text, const char *name, char *rep, size_t n,
                       struct wt_import_stats *st, struct wt_err *err)
{
    char node[32];
    snprintf(node, sizeof node, "%.*s", (int)strcspn(name, "."), name);
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    FILE *r = fmemopen(rep, n, "w");
    WT_ASSERT(f != NULL && r != NULL);
    int rc = wt_import_nvidia_smi(s, f, name, node, r, st, err);
    fclose(f);
    fclose(r);
    return rc;
}

WT_TEST(unusable_files_are_refused)
{
    struct wt_store *s = open_store();
    struct wt_import_stats st;
    struct wt_err err = {{0}};
    char in[] = "index, power.draw [W]\n0, 100\n";
    FILE *f = fmemopen(in, sizeof in - 1, "r");
    WT_EQ_INT(wt_import_nvidia_smi(s, f, "x.csv", "x", NULL, &st, &err), -EINVAL);
    fclose(f);
    WT_CONTAINS(err.msg, "x.csv:1: no timestamp column");
    char in2[] = "timestamp, power.draw [W]\n2024/05/01 12:00:00.000, 100\n";
    f = fmemopen(in2, sizeof in2 - 1, "r");
    WT_EQ_INT(wt_import_nvidia_smi(s, f, "y.csv", "y", NULL, &st, &err), -EINVAL);
    fclose(f);
    WT_CONTAINS(err.msg, "no index or uuid column");
    char in3[] = "";
    f = fmemopen(in3, 1, "r");
    WT_EQ_INT(wt_import_nvidia_smi(s, f, "z.csv", "z", NULL, &st, &err), -EINVAL);
    fclose(f);
    /* an unknown unit drops the column, with a word; with no other value nothing is stored,
     * which is an error, not "0 readings" */
    char in4[] = "timestamp, index, power.draw [hp]\n2024/05/01 12:00:00.000, 0, 1\n";
    char rep[512] = "";
    WT_EQ_INT(import_text(s, in4, "u.csv", rep, sizeof rep, &st, &err), -EINVAL);
    WT_CONTAINS(rep, "unknown unit [hp]");
    WT_CONTAINS(err.msg, "u.csv: 1 lines, none with a value");
    WT_EQ_INT(st.readings, 0);
    /* Found by fuzzing: a year 0024 overflowed the nanoseconds instead of being a bad line. */
    char in5[] = "timestamp, index, power.draw [W]\n0024/05/01 12:00:00.000, 0, 1\n"
                 "2024/05/01 12:00:00.000, 0, 1\n";
    char rep5[512] = "";
    WT_EQ_INT(import_text(s, in5, "y.csv", rep5, sizeof rep5, &st, &err), 0);
    WT_CONTAINS(rep5, "y.csv:2: bad timestamp");
    WT_EQ_INT(st.skipped, 1);
    WT_EQ_INT(st.rows, 1);
    /* Found by fuzzing: a year 1688 fits in nanoseconds, but its interval to 2024 overflowed;
     * a time before 1970 is a bad line. */
    char in6[] = "timestamp, index, power.draw [W]\n2024/05/01 12:00:00.000, 0, 1\n"
                 "1688/05/01 12:00:00.000, 0, 1\n2024/05/01 12:00:01.000, 0, 1\n";
    char rep6[512] = "";
    WT_EQ_INT(import_text(s, in6, "p.csv", rep6, sizeof rep6, &st, &err), 0);
    WT_CONTAINS(rep6, "p.csv:3: bad timestamp");
    WT_EQ_INT(st.skipped, 1);
    WT_EQ_INT(st.rows, 2);
    /* Found by fuzzing: lines 110 years apart (both in range) made the gap rule's three
     * intervals overflow; they are one interval, integrated. */
    char in7[] = "timestamp, index, power.draw [W]\n946684800, 0, 100\n4417977600, 0, 100\n";
    char rep7[512] = "";
    WT_EQ_INT(import_text(s, in7, "c.csv", rep7, sizeof rep7, &st, &err), 0);
    WT_EQ_INT(st.rows, 2);
    WT_NEAR(one(s, "SELECT max(v) FROM readings r JOIN series s ON s.id=r.series WHERE "
                   "s.metric='wattage_gpu_energy_integrated_joules_total' AND s.node='c'"),
            100.0 * 3471292800, 1);
    wt_store_close(s);

    char name[64];
    wt_import_node_name("/logs/node7.gpu.csv", NULL, name, sizeof name);
    WT_EQ_STR(name, "node7");
    wt_import_node_name("x.csv", "rack2-n1", name, sizeof name);
    WT_EQ_STR(name, "rack2-n1");
}

WT_TEST(a_file_that_stores_nothing_is_refused)
{
    /* Issue 48 item 6: every data line bad, or none at all, is -EINVAL naming the first bad
     * line, and the store keeps what it had. */
    struct wt_store *s = open_store();
    struct wt_import_stats st;
    struct wt_err err = {{0}};
    char good[] = "timestamp, index, power.draw [W]\n2024/05/01 12:00:00.000, 0, 100\n"
                  "2024/05/01 12:00:01.000, 0, 200\n";
    FILE *f = fmemopen(good, sizeof good - 1, "r");
    WT_EQ_INT(wt_import_nvidia_smi(s, f, "g.csv", "g", NULL, &st, &err), 0);
    fclose(f);
    double before = one(s, "SELECT count(*) FROM series");
    double before_r = one(s, "SELECT count(*) FROM readings");
    WT_ASSERT(before > 0);
    WT_EQ_INT(st.readings, 4);

    char bad[] = "timestamp, index, power.draw [W]\n"
                 "2024/05/01 12:00:00.000, 0, lots\n"
                 "yesterday, 0, 100\n"
                 "2024/05/01 12:00:02.000, 0\n";
    char rep[512] = "";
    FILE *r = fmemopen(rep, sizeof rep, "w");
    f = fmemopen(bad, sizeof bad - 1, "r");
    WT_EQ_INT(wt_import_nvidia_smi(s, f, "b.csv", "b", r, &st, &err), -EINVAL);
    fclose(f);
    fclose(r);
    WT_CONTAINS(err.msg, "b.csv:2: column 3: bad number \"lots\"");
    WT_CONTAINS(err.msg, "(3 skipped), nothing stored");
    WT_CONTAINS(rep, "b.csv:3: bad timestamp");
    WT_CONTAINS(rep, "b.csv:4: expected 3 fields, got 2");
    WT_EQ_INT(st.skipped, 3);
    WT_EQ_INT(st.rows, 0);
    WT_EQ_INT(st.readings, 0);
    WT_NEAR(one(s, "SELECT count(*) FROM series"), before, 0);
    WT_NEAR(one(s, "SELECT count(*) FROM series WHERE node='b'"), 0, 0);
    WT_NEAR(one(s, "SELECT count(*) FROM readings"), before_r, 0);

    char hdr[] = "timestamp, index, power.draw [W]\n";
    f = fmemopen(hdr, sizeof hdr - 1, "r");
    WT_EQ_INT(wt_import_nvidia_smi(s, f, "h.csv", "h", NULL, &st, &err), -EINVAL);
    fclose(f);
    WT_CONTAINS(err.msg, "h.csv: no data lines after the header, nothing stored");
    WT_NEAR(one(s, "SELECT count(*) FROM series"), before, 0);
    wt_store_close(s);
}

WT_TEST(quoted_cells_crlf_and_a_bad_quote)
{
    /* The shared CSV reader (core/csv.h): a model name with a comma in quotes, CRLF line ends,
     * a repeated header, and a broken quote skipped with its line number. */
    struct wt_store *s = open_store();
    struct wt_import_stats st;
    struct wt_err err = {{0}};
    char in[] = "timestamp, index, name, power.draw [W]\r\n"
                "2024/05/01 12:00:00.000, 0, \"NVIDIA H100, 80GB HBM3\", 100 W\r\n"
                "timestamp, index, name, power.draw [W]\r\n"
                "2024/05/01 12:00:01.000, 0, \"NVIDIA H100, 80GB HBM3\"x, 100 W\r\n"
                "2024/05/01 12:00:02.000, 0, \"NVIDIA H100, 80GB HBM3\", 300 W\r\n";
    char rep[512] = "";
    FILE *r = fmemopen(rep, sizeof rep, "w");
    FILE *f = fmemopen(in, sizeof in - 1, "r");
    WT_EQ_INT(wt_import_nvidia_smi(s, f, "q.csv", "q", r, &st, &err), 0);
    fclose(f);
    fclose(r);
    WT_CONTAINS(rep, "q.csv:4: text after a closing quote: line skipped");
    WT_EQ_INT(st.rows, 2);
    WT_EQ_INT(st.skipped, 1);
    WT_EQ_INT(st.gpus, 1);
    WT_NEAR(
        one(s,
            "SELECT count(*) FROM series WHERE labels LIKE '%model=\"NVIDIA H100, 80GB HBM3\"%'"),
        2, 0);
    wt_store_close(s);
}
