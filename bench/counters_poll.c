/* SPDX-License-Identifier: MIT */
/*
 * counters_poll: opens the NVML collector (WATTAGE_NVML_LIBRARY, as the daemon does) and polls
 * it N times back to back, then prints "polls N readings R" (R: readings of the last poll).
 * Run under callgrind at two N, the difference of instructions over the difference of polls is
 * the collector's cost per poll without start-up (bench/counters_cost.py does both, with the
 * interconnect counters, GPM and units on and off). Reads only; never sets anything.
 *   counters_poll [N]   (default 100; polls at least 110 ms apart so GPM takes every sample)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "collect/collector.h"
#include "collect/nvml.h"
#include "core/clock.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    if (n < 1 || n > 100000)
        n = 100;
    struct wt_config cfg;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    void *st = NULL;
    wt_config_defaults(&cfg);
    if (wt_nvml_collector.open(&cfg, &st, &err) != 0) {
        fprintf(stderr, "counters_poll: collector: %s\n", err.msg);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        wt_batch_clear(&b);
        if (wt_nvml_collector.poll(st, wt_now_real_ns(), &b, &err) != 0) {
            fprintf(stderr, "counters_poll: poll: %s\n", err.msg);
            return 1;
        }
        /* GPM turns two samples into metrics only 100 ms apart: wait as a 1-s tick would. */
        struct timespec ts = {0, 110 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    printf("polls %d readings %zu\n", n, b.len);
    wt_nvml_collector.close(st);
    wt_batch_free(&b);
    return 0;
}
