/* SPDX-License-Identifier: MIT */
/*
 * gpu_poll: one collector poll of 8 stand-in GPUs, AMD's (the fake ROCm SMI behind the real
 * dlopen path) against NVIDIA's (the fake NVML), in one process, 2 ms apart and stamped with the
 * real time (the fakes' counters run on the real clock: stamps that ran ahead of it would make
 * the AMD collector drop its counters as disagreeing with power x time).
 * Measures the CPU time of each poll and divides by the readings it gave, so the two collectors
 * compare per reading (they publish different numbers of series per GPU). Prints one JSON line
 * per collector for bench/run.sh, the AMD row with the NVML collector as its peer, and the AMD
 * collector over the fake AMD SMI (ROCm SMI absent) per reading with the same over ROCm SMI as its
 * peer: the cost of the wrappers of collect/amdsmi.c.
 *   gpu_poll BUILD_DIR [POLLS]   (default 1000; the fakes from BUILD_DIR/tests/fakes)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/collector.h"
#include "collect/nvml.h"
#include "collect/rocm.h"
#include "core/clock.h"
#include "core/config.h"

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct result {
    double med, min, max; /* µs a poll */
    size_t readings;      /* a poll's readings (the last poll) */
};

/* Opens ops, polls it polls times; fills r. 0 or 1 (said on stderr). */
static int measure(const struct wt_collector_ops *ops, const struct wt_config *cfg, int polls,
                   struct result *r)
{
    void *st = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    double *t = calloc((size_t)polls, sizeof *t);
    int rc = 1;
    if (!t || ops->open(cfg, &st, &err) != 0) {
        fprintf(stderr, "gpu_poll: %s: open: %s\n", ops->name, err.msg);
        goto out;
    }
    for (int i = 0; i < polls; i++) {
        struct timespec gap = {0, 2 * 1000 * 1000};
        nanosleep(&gap, NULL);
        wt_batch_clear(&b);
        double t0 = cpu_us();
        if (ops->poll(st, wt_now_real_ns(), &b, &err) != 0) {
            fprintf(stderr, "gpu_poll: %s: poll: %s\n", ops->name, err.msg);
            goto out;
        }
        t[i] = cpu_us() - t0;
    }
    qsort(t, (size_t)polls, sizeof *t, by_value);
    r->med = t[polls / 2];
    r->min = t[0];
    r->max = t[polls - 1];
    r->readings = b.len;
    rc = r->readings ? 0 : 1;
    if (rc)
        fprintf(stderr, "gpu_poll: %s: a poll gave no reading\n", ops->name);
out:
    if (st)
        ops->close(st);
    wt_batch_free(&b);
    free(t);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gpu_poll BUILD_DIR [POLLS]\n");
        return 2;
    }
    int polls = argc > 2 ? atoi(argv[2]) : 1000;
    if (polls < 10 || polls > 100000)
        polls = 1000;
    char lib[512];
    snprintf(lib, sizeof lib, "%s/tests/fakes/libnvidia-ml.so.1", argv[1]);
    setenv("WATTAGE_NVML_LIBRARY", lib, 1);
    snprintf(lib, sizeof lib, "%s/tests/fakes/librocm_smi64.so.1", argv[1]);
    setenv("WATTAGE_ROCM_SMI_LIBRARY", lib, 1);
    setenv("FAKE_NVML_GPUS", "8", 1);
    setenv("FAKE_RSMI_GPUS", "8", 1);
    struct wt_config cfg;
    wt_config_defaults(&cfg);
    struct result amd, nv, amdsmi;
    if (measure(&wt_amd_collector, &cfg, polls, &amd) != 0 ||
        measure(&wt_nvml_collector, &cfg, polls, &nv) != 0)
        return 1;
    snprintf(lib, sizeof lib, "%s/tests/fakes/no-librocm_smi64.so.1", argv[1]);
    setenv("WATTAGE_ROCM_SMI_LIBRARY", lib, 1);
    snprintf(lib, sizeof lib, "%s/tests/fakes/libamd_smi.so", argv[1]);
    setenv("WATTAGE_AMD_SMI_LIBRARY", lib, 1);
    if (measure(&wt_amd_collector, &cfg, polls, &amdsmi) != 0)
        return 1;
    double smi_r = amdsmi.med / (double)amdsmi.readings;
    double amd_r = amd.med / (double)amd.readings, nv_r = nv.med / (double)nv.readings;
    fprintf(stderr,
            "gpu_poll: AMD 8 GPUs: %zu readings, poll median %.1f us CPU (%.3f us a reading); "
            "NVML 8 GPUs: %zu readings, %.1f us (%.3f us a reading)\n",
            amd.readings, amd.med, amd_r, nv.readings, nv.med, nv_r);
    printf("{\"section\": \"gpu_poll\", \"what\": \"AMD collector poll, 8 stand-in GPUs, per "
           "reading\", \"unit\": \"us\", \"wattage\": {\"median\": %.4f, \"n\": %d}, \"peer\": "
           "{\"median\": %.4f, \"n\": %d}, \"peer_name\": \"wattage's NVML collector, 8 fake "
           "GPUs\", \"ratio\": %.3f, \"note\": \"CPU time; a poll %.1f us for %zu readings (NVML "
           "%.1f us for %zu)\"}\n",
           amd_r, polls, nv_r, polls, amd_r / nv_r, amd.med, amd.readings, nv.med, nv.readings);
    printf("{\"section\": \"gpu_poll\", \"what\": \"NVML collector poll, 8 fake GPUs\", \"unit\": "
           "\"us\", \"wattage\": {\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, \"n\": %d}, "
           "\"peer\": null, \"peer_name\": null, \"note\": \"CPU time; %.4f us a reading\"}\n",
           nv.med, nv.min, nv.max, polls, nv_r);
    printf("{\"section\": \"gpu_poll\", \"what\": \"AMD collector poll, 8 stand-in GPUs\", "
           "\"unit\": \"us\", \"wattage\": {\"median\": %.2f, \"min\": %.2f, \"max\": %.2f, \"n\": "
           "%d}, \"peer\": null, \"peer_name\": null, \"note\": \"CPU time; %.4f us a reading\"}\n",
           amd.med, amd.min, amd.max, polls, amd_r);
    printf("{\"section\": \"gpu_poll\", \"what\": \"AMD collector poll over AMD SMI, 8 stand-in "
           "GPUs, per reading\", \"unit\": \"us\", \"wattage\": {\"median\": %.4f, \"n\": %d}, "
           "\"peer\": {\"median\": %.4f, \"n\": %d}, \"peer_name\": \"the same over ROCm SMI\", "
           "\"ratio\": %.3f, \"note\": \"CPU time; a poll %.1f us for %zu readings (no power "
           "through AMD SMI; ROCm SMI %.1f us for %zu)\"}\n",
           smi_r, polls, amd_r, polls, smi_r / amd_r, amdsmi.med, amdsmi.readings, amd.med,
           amd.readings);
    return 0;
}
