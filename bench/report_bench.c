/* SPDX-License-Identifier: MIT */
/*
 * The report's cost: a store holding H hours of 8 GPUs at 1 s (power, utilization, temperature
 * and the energy counter, as the daemon stores them, rollups built), then wattage_report_build +
 * the HTML writer over the whole window, timed (best of 3) with the file's size. Prints JSON rows
 * for bench/run.sh; details on stderr.
 *   report_bench [HOURS...]   (default 24 72)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/report.h"
#include "core/clock.h"
#include "core/config.h"
#include "store/store.h"

#define GPUS 8
#define S WT_NS_PER_S

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One hour-long batch of readings of every GPU (a diurnal load with idle stretches). */
static size_t hour(const char labels[GPUS][WT_LABELS_LEN], int64_t t0, long h, double *mj,
                   struct wt_reading *r)
{
    size_t n = 0;
    for (long s = 0; s < 3600; s++) {
        long k = h * 3600 + s;
        int64_t t = t0 + k * S;
        for (int g = 0; g < GPUS; g++) {
            double u = ((k / 900 + g) % 5 == 0) ? 0 : 0.3 + 0.6 * ((k * 7 + g * 13) % 100) / 100.0;
            double p = 90 + 600 * u + (k % 17);
            *mj += p * 1000;
            const struct {
                int m;
                double v;
            } v[] = {{WT_M_GPU_POWER_W, p},
                     {WT_M_GPU_UTIL_RATIO, u},
                     {WT_M_GPU_TEMP_C, 40 + 45 * u},
                     {WT_M_GPU_ENERGY_J, mj[0] / 1000 + g}};
            for (size_t i = 0; i < 4; i++) {
                r[n].t_ns = t;
                r[n].value = v[i].v;
                r[n].metric = (uint16_t)v[i].m;
                memcpy(r[n].labels, labels[g], WT_LABELS_LEN);
                n++;
            }
        }
    }
    return n;
}

static int one(double hours)
{
    char dir[] = "/tmp/wt-report-bench-XXXXXX", path[600], html[600];
    char labels[GPUS][WT_LABELS_LEN];
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = true};
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/r.db", dir);
    snprintf(html, sizeof html, "%s/r.html", dir);
    for (int g = 0; g < GPUS; g++) {
        char idx[8], uuid[64];
        snprintf(idx, sizeof idx, "%d", g);
        snprintf(uuid, sizeof uuid, "GPU-bench-%04d", g);
        if (wt_labels(labels[g], WT_LABELS_LEN, "gpu", idx, "uuid", uuid, NULL) != 0)
            return 1;
    }
    if (wt_store_open(path, &o, &st, &err) != 0) {
        fprintf(stderr, "report_bench: %s\n", err.msg);
        return 1;
    }
    long hs = (long)hours;
    int64_t t0 = wt_minute_floor(wt_now_real_ns()) - (int64_t)hs * 3600 * S - 3600 * S;
    struct wt_reading *r = calloc(3600 * GPUS * 4, sizeof *r);
    double mj = 0, a = now_s();
    if (!r || wt_store_begin_run(st, "", t0 - S, S, "bench") != 0)
        return 1;
    for (long h = 0; h < hs; h++) {
        size_t n = hour(labels, t0, h, &mj, r);
        if (wt_store_write(st, "", r, n) != 0)
            return 1;
    }
    for (bool more = true; more;)
        if (wt_store_maintain(st, t0 + hs * 3600 * S, 200000, &more) != 0)
            return 1;
    fprintf(stderr, "report_bench: %ld h of %d GPUs written and rolled up in %.1f s\n", hs, GPUS,
            now_s() - a);
    struct wt_config cfg;
    wt_config_defaults(&cfg);
    double best = 1e9;
    long size = 0;
    for (int k = 0; k < 3; k++) {
        struct wt_report rep;
        a = now_s();
        if (wt_report_build(st, path, &cfg, t0, t0 + hs * 3600 * S, &rep, &err) != 0) {
            fprintf(stderr, "report_bench: %s\n", err.msg);
            return 1;
        }
        FILE *f = fopen(html, "w");
        if (!f || wt_report_write_html(&rep, f) != 0 || fclose(f) != 0)
            return 1;
        double d = now_s() - a;
        best = d < best ? d : best;
        struct stat sb;
        size = stat(html, &sb) == 0 ? (long)sb.st_size : -1;
        size_t raw = 0;
        for (size_t i = 0; i < rep.ngpus; i++)
            raw += rep.gpus[i].power.raw + rep.gpus[i].util.raw + rep.gpus[i].temp.raw;
        fprintf(stderr,
                "report_bench: %ld h: built and written in %.2f s, %ld bytes, %zu readings read\n",
                hs, d, size, raw);
        wt_report_free(&rep);
    }
    free(r);
    wt_config_free(&cfg);
    wt_store_close(st);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "report_bench: could not remove %s\n", dir);
    printf("{\"section\": \"Report\", \"what\": \"report build + HTML, %ld h of %d GPUs at 1 s\", "
           "\"unit\": \"s\", \"wattage\": %.3f}\n",
           hs, GPUS, best);
    printf("{\"section\": \"Report\", \"what\": \"report HTML size, %ld h of %d GPUs at 1 s\", "
           "\"unit\": \"MB\", \"wattage\": %.3f}\n",
           hs, GPUS, (double)size / 1e6);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return one(24) || one(72);
    for (int i = 1; i < argc; i++)
        if (one(atof(argv[i])))
            return 1;
    return 0;
}
