/* SPDX-License-Identifier: MIT */
/*
 * nvml_calls: times every NVML call wattage makes in its tick, on GPU 0, through the same
 * dlopen path (WATTAGE_NVML_LIBRARY or libnvidia-ml.so.1), then one whole collector poll of all
 * GPUs. Prints "call median_us min_us max_us" lines. Reads only; never sets anything.
 *   nvml_calls [ITERATIONS]   (default 200)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/collector.h"
#include "collect/nvml.h"
#include "collect/nvml_api.h"
#include "core/clock.h"

#define MAX_ITER 5000

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, double *us, int n)
{
    qsort(us, (size_t)n, sizeof *us, cmp_d);
    printf("%-48s %10.2f %10.2f %10.2f\n", name, us[n / 2], us[0], us[n - 1]);
}

static void *sym(void *dl, const char *a, const char *b)
{
    void *p = dlsym(dl, a);
    return p || !b ? p : dlsym(dl, b);
}

#define TIME_CALL(label, expr)                                                                     \
    do {                                                                                           \
        int ok_ = 1;                                                                               \
        for (int i_ = 0; i_ < iters; i_++) {                                                       \
            int64_t t0_ = wt_now_mono_ns();                                                        \
            nvmlReturn_t r_ = (expr);                                                              \
            us[i_] = (double)(wt_now_mono_ns() - t0_) / 1e3;                                       \
            if (r_ != 0)                                                                           \
                ok_ = 0;                                                                           \
        }                                                                                          \
        if (ok_)                                                                                   \
            report(label, us, iters);                                                              \
        else                                                                                       \
            printf("%-48s %10s\n", label, "n/a");                                                  \
    } while (0)

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    if (iters < 1 || iters > MAX_ITER)
        iters = 200;
    const char *lib = getenv("WATTAGE_NVML_LIBRARY");
    if (!lib)
        lib = "libnvidia-ml.so.1";
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "nvml_calls: %s\n", dlerror());
        return 1;
    }
    static double us[MAX_ITER];
    wt_nvml_init_fn *init = (wt_nvml_init_fn *)sym(dl, "nvmlInit_v2", "nvmlInit");
    wt_nvml_handle_fn *handle =
        (wt_nvml_handle_fn *)sym(dl, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    wt_nvml_shutdown_fn *shutdown = (wt_nvml_shutdown_fn *)sym(dl, "nvmlShutdown", NULL);
    if (!init || !handle || !shutdown || init() != 0) {
        fprintf(stderr, "nvml_calls: cannot initialise NVML from %s\n", lib);
        return 1;
    }
    nvmlDevice_t d;
    if (handle(0, &d) != 0) {
        fprintf(stderr, "nvml_calls: no GPU 0\n");
        return 1;
    }
    wt_nvml_uint_fn *power = (wt_nvml_uint_fn *)sym(dl, "nvmlDeviceGetPowerUsage", NULL);
    wt_nvml_ull_fn *energy = (wt_nvml_ull_fn *)sym(dl, "nvmlDeviceGetTotalEnergyConsumption", NULL);
    wt_nvml_temperature_fn *temp = (wt_nvml_temperature_fn *)sym(dl, "nvmlDeviceGetTemperature", NULL);
    wt_nvml_utilization_fn *util =
        (wt_nvml_utilization_fn *)sym(dl, "nvmlDeviceGetUtilizationRates", NULL);
    wt_nvml_memory_fn *mem = (wt_nvml_memory_fn *)sym(dl, "nvmlDeviceGetMemoryInfo", NULL);
    wt_nvml_clock_fn *clk = (wt_nvml_clock_fn *)sym(dl, "nvmlDeviceGetClockInfo", NULL);
    wt_nvml_ull_fn *thr = (wt_nvml_ull_fn *)sym(dl, "nvmlDeviceGetCurrentClocksEventReasons",
                                                "nvmlDeviceGetCurrentClocksThrottleReasons");
    wt_nvml_uint_fn *limit = (wt_nvml_uint_fn *)sym(dl, "nvmlDeviceGetEnforcedPowerLimit", NULL);
    wt_nvml_pstate_fn *pstate = (wt_nvml_pstate_fn *)sym(dl, "nvmlDeviceGetPerformanceState", NULL);
    unsigned int u;
    unsigned long long ull;
    nvmlUtilization_t ut;
    nvmlMemory_t m;
    nvmlPstates_t ps;

    printf("%-48s %10s %10s %10s\n", "call (GPU 0)", "median_us", "min_us", "max_us");
    if (power)
        TIME_CALL("nvmlDeviceGetPowerUsage", power(d, &u));
    if (energy)
        TIME_CALL("nvmlDeviceGetTotalEnergyConsumption", energy(d, &ull));
    if (temp)
        TIME_CALL("nvmlDeviceGetTemperature", temp(d, NVML_TEMPERATURE_GPU, &u));
    if (util)
        TIME_CALL("nvmlDeviceGetUtilizationRates", util(d, &ut));
    if (mem)
        TIME_CALL("nvmlDeviceGetMemoryInfo", mem(d, &m));
    if (clk)
        TIME_CALL("nvmlDeviceGetClockInfo(SM)", clk(d, NVML_CLOCK_SM, &u));
    if (thr)
        TIME_CALL("nvmlDeviceGetCurrentClocksEventReasons", thr(d, &ull));
    if (limit)
        TIME_CALL("nvmlDeviceGetEnforcedPowerLimit", limit(d, &u));
    if (pstate)
        TIME_CALL("nvmlDeviceGetPerformanceState", pstate(d, &ps));
    shutdown();

    /* One whole poll of the collector, every GPU, as the daemon does it. */
    struct wt_config cfg;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    void *st = NULL;
    wt_config_defaults(&cfg);
    if (wt_nvml_collector.open(&cfg, &st, &err) != 0) {
        fprintf(stderr, "nvml_calls: collector: %s\n", err.msg);
        return 1;
    }
    size_t readings = 0;
    for (int i = 0; i < iters; i++) {
        wt_batch_clear(&b);
        int64_t t0 = wt_now_mono_ns();
        if (wt_nvml_collector.poll(st, wt_now_real_ns(), &b, &err) != 0) {
            fprintf(stderr, "nvml_calls: poll: %s\n", err.msg);
            return 1;
        }
        us[i] = (double)(wt_now_mono_ns() - t0) / 1e3;
        readings = b.len;
    }
    char label[64];
    snprintf(label, sizeof label, "wattage nvml poll (all GPUs, %zu readings)", readings);
    report(label, us, iters);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
    return 0;
}
