/* SPDX-License-Identifier: MIT */
/*
 * field_cadence: the NVML collector on 8 GPUs of the fake NVML (the real dlopen path), every
 * field read every tick (collectors.nvml.slow_interval 0) against the slow fields at their own
 * cadence, at the ratio of the defaults (1-s ticks, 60-s slow interval) played faster: ticks
 * TICK_MS apart, slow fields every 60 ticks. Each mode runs twice in its own process: once with
 * the fake's call log (FAKE_NVML_CALL_LOG) to count the NVML calls a tick, once without it to
 * time the poll in the polling thread's CPU time (CLOCK_THREAD_CPUTIME_ID). Prints one JSON
 * line per mode and one comparing them.
 *   field_cadence BUILD_DIR [POLLS] [TICK_MS]   (default 1200 polls, 5 ms)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect/collector.h"
#include "collect/nvml.h"
#include "core/clock.h"
#include "core/config.h"

struct result {
    double cpu_mean_us, cpu_med_us; /* a poll */
    double calls;                   /* NVML calls a poll (call log runs) */
    double slow_calls[4];           /* calls a poll of each of slow_fns */
    size_t readings;                /* of the last poll */
};

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The calls of the slow fields (the power source is NOT_SUPPORTED on the fake by default). */
static const char *const slow_fns[4] = {"nvmlDeviceGetEnforcedPowerLimit",
                                        "nvmlDeviceGetPowerManagementLimitConstraints",
                                        "nvmlDeviceGetTotalEccErrors", "nvmlDeviceGetRemappedRows"};

/* Lines of the call log, and those of each slow_fns. */
static void count_log(const char *path, long *all, long match[4])
{
    char line[160];
    FILE *f = fopen(path, "re");
    *all = 0;
    memset(match, 0, 4 * sizeof match[0]);
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        (*all)++;
        for (int k = 0; k < 4; k++)
            match[k] += strcmp(line, slow_fns[k]) == 0;
    }
    if (f)
        fclose(f);
}

/* One mode in this process: open, poll polls times tick_ns apart, close. 0 or 1. */
static int run(int64_t slow_ns, int64_t tick_ns, int polls, const char *log, struct result *r)
{
    struct wt_config cfg;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    void *st = NULL;
    double *cpu = calloc((size_t)polls, sizeof *cpu);
    long all0 = 0, all1 = 0, m0[4] = {0}, m1[4] = {0};
    int rc = 1;
    wt_config_defaults(&cfg);
    cfg.collectors.nvml.interval_ns = tick_ns;
    cfg.collectors.nvml_slow_interval_ns = slow_ns;
    cfg.collectors.nvml_energy_interval_ns = 0; /* no sub-polls: this counts the ticks' calls */
    if (!cpu || wt_nvml_collector.open(&cfg, &st, &err) != 0) {
        fprintf(stderr, "field_cadence: open: %s\n", err.msg);
        goto out;
    }
    if (log)
        count_log(log, &all0, m0);
    int64_t next = wt_now_mono_ns();
    for (int i = 0; i < polls; i++) {
        next += tick_ns;
        wt_sleep_until_mono(next);
        wt_batch_clear(&b);
        int64_t c0 = wt_thread_cpu_ns();
        if (wt_nvml_collector.poll(st, wt_now_real_ns(), &b, &err) != 0) {
            fprintf(stderr, "field_cadence: poll: %s\n", err.msg);
            goto out;
        }
        cpu[i] = (double)(wt_thread_cpu_ns() - c0) / 1e3;
    }
    if (log)
        count_log(log, &all1, m1);
    double sum = 0;
    for (int i = 0; i < polls; i++)
        sum += cpu[i];
    qsort(cpu, (size_t)polls, sizeof *cpu, by_value);
    r->cpu_mean_us = sum / polls;
    r->cpu_med_us = cpu[polls / 2];
    r->calls = (double)(all1 - all0) / polls;
    for (int k = 0; k < 4; k++)
        r->slow_calls[k] = (double)(m1[k] - m0[k]) / polls;
    r->readings = b.len;
    rc = b.len ? 0 : 1;
out:
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
    free(cpu);
    return rc;
}

/* Runs a mode in a child (a fresh fake, which reads its environment at load); the result comes
 * back through a pipe. */
static int run_child(int64_t slow_ns, int64_t tick_ns, int polls, const char *log, struct result *r)
{
    int fd[2];
    pid_t pid = pipe(fd) == 0 ? fork() : -1;
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(fd[0]);
        if (log) {
            unlink(log);
            setenv("FAKE_NVML_CALL_LOG", log, 1);
        } else {
            unsetenv("FAKE_NVML_CALL_LOG");
        }
        struct result x = {0};
        int rc = run(slow_ns, tick_ns, polls, log, &x);
        if (write(fd[1], &x, sizeof x) != (ssize_t)sizeof x)
            rc = 1;
        _exit(rc);
    }
    close(fd[1]);
    ssize_t n = read(fd[0], r, sizeof *r);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return n == (ssize_t)sizeof *r && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: field_cadence BUILD_DIR [POLLS] [TICK_MS]\n");
        return 2;
    }
    int polls = argc > 2 ? atoi(argv[2]) : 1200;
    int tick_ms = argc > 3 ? atoi(argv[3]) : 5;
    if (polls < 60 || polls > 100000)
        polls = 1200;
    if (tick_ms < 1 || tick_ms > 1000)
        tick_ms = 5;
    char lib[512], log[64];
    snprintf(lib, sizeof lib, "%s/tests/fakes/libnvidia-ml.so.1", argv[1]);
    setenv("WATTAGE_NVML_LIBRARY", lib, 1);
    setenv("FAKE_NVML_GPUS", "8", 1);
    snprintf(log, sizeof log, "/tmp/field_cadence.%ld.calls", (long)getpid());
    int64_t tick_ns = (int64_t)tick_ms * WT_NS_PER_MS;
    /* [0]: every tick, [1]: slow fields every 60 ticks */
    struct result cnt[2], cpu[2];
    const int64_t slow[2] = {0, 60 * tick_ns};
    for (int k = 0; k < 2; k++)
        if (run_child(slow[k], tick_ns, polls, log, &cnt[k]) != 0 ||
            run_child(slow[k], tick_ns, polls, NULL, &cpu[k]) != 0) {
            fprintf(stderr, "field_cadence: a run failed\n");
            unlink(log);
            return 1;
        }
    unlink(log);
    static const char *const name[2] = {"every field every tick (slow_interval 0)",
                                        "slow fields every 60 ticks (slow_interval 60s at 1s)"};
    for (int k = 0; k < 2; k++)
        printf("{\"section\": \"field_cadence\", \"what\": \"NVML poll, 8 fake GPUs, %s\", "
               "\"unit\": \"us\", \"wattage\": {\"median\": %.2f, \"mean\": %.2f, \"n\": %d}, "
               "\"peer\": null, \"peer_name\": null, \"ratio\": null, \"note\": \"CPU time a "
               "poll; %.2f NVML calls a poll, of them the slow fields': %.3f limit, %.3f limit "
               "range, %.3f ECC (volatile and aggregate), %.3f remapped rows; %zu readings\"}\n",
               name[k], cpu[k].cpu_med_us, cpu[k].cpu_mean_us, polls, cnt[k].calls,
               cnt[k].slow_calls[0], cnt[k].slow_calls[1], cnt[k].slow_calls[2],
               cnt[k].slow_calls[3], cpu[k].readings);
    printf("{\"section\": \"field_cadence\", \"what\": \"NVML calls a poll, 8 fake GPUs, slow "
           "fields at their cadence\", \"unit\": \"calls\", \"wattage\": {\"median\": %.2f, "
           "\"n\": %d}, \"peer\": {\"median\": %.2f, \"n\": %d}, \"peer_name\": \"%s\", "
           "\"ratio\": %.3f}\n",
           cnt[1].calls, polls, cnt[0].calls, polls, name[0], cnt[1].calls / cnt[0].calls);
    printf("{\"section\": \"field_cadence\", \"what\": \"NVML poll CPU, 8 fake GPUs, slow "
           "fields at their cadence (mean over the ticks)\", \"unit\": \"us\", \"wattage\": "
           "{\"median\": %.2f, \"n\": %d}, \"peer\": {\"median\": %.2f, \"n\": %d}, "
           "\"peer_name\": \"%s\", \"ratio\": %.3f}\n",
           cpu[1].cpu_mean_us, polls, cpu[0].cpu_mean_us, polls, name[0],
           cpu[1].cpu_mean_us / cpu[0].cpu_mean_us);
    return 0;
}
