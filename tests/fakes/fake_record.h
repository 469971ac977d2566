/* SPDX-License-Identifier: MIT */
/*
 * A recording of the fake NVML into a real store, as the daemon makes it, without waiting for
 * the wall clock: for the error-bar test (tests/unit/test_uncert.c) and its evaluation
 * (bench/energy_eval.c). The fake (libnvidia-ml.so.1, dlopen'ed, scripted by FAKE_NVML_* as
 * for the daemon) gives the exact energy; every tick k of GPU g is stamped at
 * T0 + (k + 1) tick + a wake-up latency drawn in [0.1, 3] ms (aligned ticks on a busy host; the
 * tick is 1 s, or fake_rec_make_tick's), and
 * stores what the collector (collect/nvml.c) would: the hardware counter as the fake counts it
 * (FAKE_NVML_ENERGY_OFFSET_MJ + floor(1000 * exact integral), mJ, in joules), the power as an
 * H200 reads it (the mean over the last second, rounded to mW), and that power integrated by
 * the daemon's own integrator (core/energy.h, a 1-s averaging window, the daemon's gap rule).
 * Header-only: static functions, one copy per program.
 */
#ifndef WT_FAKE_RECORD_H
#define WT_FAKE_RECORD_H

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/energy.h"
#include "core/err.h"
#include "core/reading.h"
#include "store/store.h"

typedef double (*fake_energy_fn)(unsigned int gpu, double t_from, double t_to);

struct fake_rec {
    struct wt_store *st;
    fake_energy_fn exact; /* the fake's exact integral, unix seconds -> joules */
    void *lib;
    double t0;      /* the fake's origin, unix seconds */
    double first_s; /* first tick, last tick (unix seconds) */
    double last_s;
    unsigned int gpus;
};

/* xorshift64*: the same windows on every run for a seed. */
static inline double fake_rec_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/*
 * Scripts the fake (a square wave of 435 +- 265 W every 2.1 s, phase i rad for GPU i, a 1-s
 * power average), records `seconds` of ticks of `gpus` GPUs into a new store at db. Returns 0,
 * or -1 with a message on stderr.
 */
static inline int fake_rec_make_sub(struct fake_rec *r, const char *db, unsigned int gpus,
                                    int seconds, uint64_t seed, double tick_s, double sub_s);

static inline int fake_rec_make_tick(struct fake_rec *r, const char *db, unsigned int gpus,
                                     int seconds, uint64_t seed, double tick_s)
{
    return fake_rec_make_sub(r, db, gpus, seconds, seed, tick_s, 0);
}

/*
 * As fake_rec_make_tick, with energy sub-polls every sub_s between ticks (0: none), as
 * collectors.nvml.energy_interval makes them: the counter alone, each with its own wake-up
 * latency, on the sub_s grid from each tick.
 */
static inline int fake_rec_make_sub(struct fake_rec *r, const char *db, unsigned int gpus,
                                    int seconds, uint64_t seed, double tick_s, double sub_s)
{
    const char *lib = getenv("WATTAGE_FAKE_NVML");
    if (!lib)
        lib = getenv("WATTAGE_NVML_LIBRARY"); /* bench/bench.py's name for it */
    char buf[64];
    struct wt_err err = {{0}};
    memset(r, 0, sizeof *r);
    r->t0 = 1767225600.0; /* 2026-01-01T00:00:00Z */
    r->gpus = gpus;
    snprintf(buf, sizeof buf, "%.3f", r->t0);
    setenv("FAKE_NVML_T0", buf, 1);
    setenv("FAKE_NVML_POWER", "435,265,2.1", 0);
    setenv("FAKE_NVML_WAVE", "square", 0);
    r->lib = dlopen(lib ? lib : "build/tests/fakes/libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!r->lib) {
        fprintf(stderr, "fake_record: %s (set WATTAGE_FAKE_NVML)\n", dlerror());
        return -1;
    }
    r->exact = (fake_energy_fn)dlsym(r->lib, "fake_nvml_exact_energy_j");
    if (!r->exact) {
        fprintf(stderr, "fake_record: the fake has no fake_nvml_exact_energy_j\n");
        return -1;
    }
    struct wt_store_opts o = {.create = true};
    if (wt_store_open(db, &o, &r->st, &err) != 0) {
        fprintf(stderr, "fake_record: %s\n", err.msg);
        return -1;
    }
    const int64_t iv = (int64_t)llround(tick_s * 1e9);
    if (iv < 1000000 || iv > 60 * (int64_t)1000000000) {
        fprintf(stderr, "fake_record: a tick of %g s (1 ms to 60 s)\n", tick_s);
        return -1;
    }
    const int64_t ticks = (int64_t)seconds * 1000000000 / iv;
    int64_t start = (int64_t)llround(r->t0 * 1e9) + iv / 2;
    if (wt_store_begin_run(r->st, "", start, iv, "fake_record") != 0)
        return -1;
    struct wt_energy_integral *ig = calloc(gpus, sizeof *ig);
    struct wt_reading *rd = calloc((size_t)gpus * 3, sizeof *rd);
    if (!ig || !rd) {
        free(ig);
        free(rd);
        return -1;
    }
    uint64_t rs = seed ? seed : 1;
    int rc = 0;
    for (unsigned int g = 0; g < gpus; g++)
        ig[g].window_ns = wt_energy_nvml_power_window_ns("NVIDIA H200");
    for (int64_t k = 0; k <= ticks && rc == 0; k++) {
        size_t n = 0;
        /* one poll stamps every GPU's readings with its start */
        int64_t t_ns = (int64_t)llround(r->t0 * 1e9) + (int64_t)(k + 1) * iv +
                       (int64_t)((0.1 + 2.9 * fake_rec_rand(&rs)) * 1e6);
        double t = (double)t_ns / 1e9;
        if (k == 0)
            r->first_s = t;
        r->last_s = t;
        for (unsigned int g = 0; g < gpus; g++) {
            char gs[16], uu[48], labels[WT_LABELS_LEN];
            snprintf(gs, sizeof gs, "%u", g);
            snprintf(uu, sizeof uu, "GPU-fake-0000-%u", g);
            (void)wt_labels(labels, sizeof labels, "gpu", gs, "uuid", uu, "model", "NVIDIA H200",
                            NULL);
            double mj = 1e9 + floor(1000 * r->exact(g, r->t0, t));
            double p = round(1000 * r->exact(g, t - 1, t)) / 1000; /* a 1-s mean at any tick */
            wt_energy_integral_update(&ig[g], t_ns, p, 3 * iv);
            rd[n++] =
                (struct wt_reading){.t_ns = t_ns, .value = mj / 1000, .metric = WT_M_GPU_ENERGY_J};
            rd[n++] = (struct wt_reading){
                .t_ns = t_ns, .value = ig[g].total_j, .metric = WT_M_GPU_ENERGY_INTEGRATED_J};
            rd[n++] = (struct wt_reading){.t_ns = t_ns, .value = p, .metric = WT_M_GPU_POWER_W};
            for (size_t i = n - 3; i < n; i++)
                memcpy(rd[i].labels, labels, sizeof labels);
        }
        rc = wt_store_write(r->st, "", rd, n);
        const int64_t sv = (int64_t)llround(sub_s * 1e9);
        for (int64_t j = 1; sv > 0 && j * sv + sv / 2 < iv && k < ticks && rc == 0; j++) {
            int64_t ts = (int64_t)llround(r->t0 * 1e9) + (int64_t)(k + 1) * iv + j * sv +
                         (int64_t)((0.1 + 2.9 * fake_rec_rand(&rs)) * 1e6);
            size_t m = 0;
            for (unsigned int g = 0; g < gpus; g++) {
                rd[m] = rd[3 * g]; /* the counter's labels */
                rd[m].t_ns = ts;
                rd[m].value = (1e9 + floor(1000 * r->exact(g, r->t0, (double)ts / 1e9))) / 1000;
                m++;
            }
            rc = wt_store_write(r->st, "", rd, m);
        }
    }
    free(ig);
    free(rd);
    return rc ? -1 : 0;
}

/* The recording at 1-s ticks. */
static inline int fake_rec_make(struct fake_rec *r, const char *db, unsigned int gpus, int seconds,
                                uint64_t seed)
{
    return fake_rec_make_tick(r, db, gpus, seconds, seed, 1.0);
}

static inline void fake_rec_close(struct fake_rec *r)
{
    wt_store_close(r->st);
    if (r->lib)
        dlclose(r->lib);
}

#endif
