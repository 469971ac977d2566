/* SPDX-License-Identifier: MIT */
/*
 * The series the remote-write and Kafka benchmarks send and store: shaped like the NVML
 * collector's for GPUS GPUs (NMETRIC metrics each, the labels gpu, uuid and model), with values
 * with the entropy of real ones (power with decimals, growing energy counters, integer clocks
 * and bytes); and the CPU clock and the median/min/max both report.
 */
#ifndef WT_BENCH_GPU_SERIES_H
#define WT_BENCH_GPU_SERIES_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/clock.h"
#include "core/reading.h"
#include "store/store.h"

#define GPUS 8
#define NMETRIC 20
#define NSERIES (GPUS * NMETRIC)

static const char *const metrics[NMETRIC] = {
    "wattage_gpu_power_watts",
    "wattage_gpu_energy_joules_total",
    "wattage_gpu_temperature_celsius",
    "wattage_gpu_slowdown_temperature_celsius",
    "wattage_gpu_shutdown_temperature_celsius",
    "wattage_gpu_utilization_ratio",
    "wattage_gpu_memory_utilization_ratio",
    "wattage_gpu_memory_used_bytes",
    "wattage_gpu_memory_total_bytes",
    "wattage_gpu_sm_clock_hertz",
    "wattage_gpu_memory_clock_hertz",
    "wattage_gpu_power_limit_watts",
    "wattage_gpu_power_limit_min_watts",
    "wattage_gpu_power_limit_max_watts",
    "wattage_gpu_performance_state",
    "wattage_gpu_throttle_reasons",
    "wattage_gpu_up",
    "wattage_gpu_info",
    "wattage_gpu_energy_gaps_total",
    "wattage_gpu_energy_joules_total",
};

static inline double cpu_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void labels_of(int s, char *out, size_t n)
{
    int g = s / NMETRIC, m = s % NMETRIC;
    snprintf(out, n,
             "gpu=\"%d\",uuid=\"GPU-5f3c%04d-8a1e-4b2d-9c7e-3d1f0a%06d\",model=\"NVIDIA H200\"%s",
             g, g * 37, g * 1013, m == NMETRIC - 1 ? ",method=\"integrated\"" : "");
}

/* A value with the entropy of a real reading of series s at second k. */
static inline double value_of(int s, int k)
{
    int g = s / NMETRIC, m = s % NMETRIC;
    double w = 300 + 100 * sin(k / 7.0 + g) + (k * 7919 % 1000) / 1000.0;
    switch (m) {
    case 0:
        return round(w * 1000) / 1000; /* mW resolution */
    case 1:
    case 19:
        return 1.0e6 + g * 1e5 + k * 400.0 + (k * 104729 % 1000) / 1000.0; /* mJ resolution */
    case 2:
        return 45 + (k / 5 + g) % 20;
    case 5:
    case 6:
        return (double)((k * 31 + g * 7) % 101) / 100;
    case 7:
        return 4.0e10 + (double)((k * 2654435761u) % 1000000) * 4096;
    case 9:
        return 1.98e9 - (k % 3) * 1.5e7;
    default:
        return 100 + m; /* constant gauges */
    }
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline void figures(double *v, int n, double *med, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *med = v[n / 2];
    *lo = v[0];
    *hi = v[n - 1];
}

/*
 * Writes `seconds` seconds of every series into st, one reading a second from t0; series s is
 * stamped spread_ns * s after its second (0: one time for all, as a tick is). 0, or 1 on error.
 */
static inline int write_series(struct wt_store *st, int64_t t0, int seconds, int64_t spread_ns)
{
    struct wt_reading *r = calloc(NSERIES, sizeof *r);
    if (!r)
        return 1;
    for (int k = 0; k < seconds; k++) {
        for (int s = 0; s < NSERIES; s++) {
            int m = wt_metric_find(metrics[s % NMETRIC]);
            if (m < 0) {
                free(r);
                return 1;
            }
            r[s].t_ns = t0 + (int64_t)k * WT_NS_PER_S + spread_ns * s;
            r[s].value = value_of(s, k);
            r[s].metric = (uint16_t)m;
            labels_of(s, r[s].labels, sizeof r[s].labels);
        }
        if (wt_store_write(st, "", r, NSERIES) != 0) {
            free(r);
            return 1;
        }
    }
    free(r);
    return 0;
}

#endif
