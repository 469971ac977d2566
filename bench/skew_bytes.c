/* SPDX-License-Identifier: MIT */
/*
 * skew_bytes [HOURS]: what the read skew series (wattage_gpu_energy_read_skew_seconds) costs the
 * store when the NVML collector's energy sub-polls (collectors.nvml.energy_interval, auto: every
 * 0.2 s between 1-s ticks) store it too, against storing it at the ticks only.
 *
 * A node of 8 GPUs for HOURS (default 2): every 0.2 s a reading of each GPU's energy counter
 * (mJ, power 350 + 250 sin(t / 300 s + i) W plus 0-12 W of a hash), every fifth one a tick's.
 * The skew is modelled as an H200 node would give it: GPU i read after i others at ~3 ms each
 * plus 0-399 us of jitter, 20 + 3000 i + U(0, 400) us (a splitmix hash of reading and GPU),
 * rounded up to 10 us by wt_energy_read_skew_s as the collector does. Figures, in bytes:
 *   chunks   each series' points in 15-min spans (the store's compaction) through the chunk codec
 *            (store/chunk.h): the energy series, the skew at the ticks, the skew at every reading;
 *   ticks    each 1-s flush (a tick and its four sub-polls) through the ticks codec
 *            (store/ticks.h, store.packed_ticks): the energy readings alone, with the ticks'
 *            skews, with every reading's.
 * Deterministic (no timing): one run. Prints a summary on stderr and JSON lines for bench/run.sh.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/energy.h"
#include "store/chunk.h"
#include "store/ticks.h"

#define GPUS 8
#define PER_S 5 /* readings a second: a tick and four sub-polls */
#define STEP_NS (WT_NS_PER_S / PER_S)
#define SPAN (15 * 60 * PER_S) /* readings in a 15-min span */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The bytes of p[0..n) through the chunk codec in spans of SPAN points; -1 on failure. */
static long long chunk_bytes(const struct wt_point *p, size_t n)
{
    long long sum = 0;
    for (size_t a = 0; a < n; a += SPAN) {
        uint8_t *b = NULL;
        size_t len = 0;
        if (wt_chunk_encode(p + a, n - a < SPAN ? n - a : SPAN, &b, &len) != 0)
            return -1;
        sum += (long long)len;
        free(b);
    }
    return sum;
}

int main(int argc, char **argv)
{
    double hours = argc > 1 ? atof(argv[1]) : 2;
    size_t n = (size_t)(hours * 3600 * PER_S);
    if (!(hours > 0) || n < PER_S) {
        fprintf(stderr, "usage: skew_bytes [HOURS]\n");
        return 2;
    }
    int64_t t0 = 1700000000 * WT_NS_PER_S;
    struct wt_point *e = malloc(n * sizeof *e), *sk = malloc(n * sizeof *sk);
    struct wt_point *tk = malloc((n / PER_S + 1) * sizeof *tk);
    /* series ids: 1..8 energy, 9..16 skew */
    struct wt_tick_reading *r = malloc(2 * GPUS * PER_S * sizeof *r);
    double *skew = malloc(n * GPUS * sizeof *skew);
    long long *mj = malloc(n * GPUS * sizeof *mj);
    if (!e || !sk || !tk || !r || !skew || !mj)
        return 1;
    for (size_t k = 0; k < n; k++)
        for (int i = 0; i < GPUS; i++) {
            double t = (double)k / PER_S;
            double w = 350 + 250 * sin(t / 300 + i) + (double)(mix(k * GPUS + i) % 13);
            long long prev = k ? mj[(k - 1) * GPUS + i] : 0;
            mj[k * GPUS + i] = prev + llround(w * 1000 / PER_S);
            int64_t us = 20 + 3000 * i + (int64_t)(mix((k << 8) ^ (uint64_t)i ^ 0x5eed) % 400);
            int64_t stamp = t0 + (int64_t)k * STEP_NS;
            skew[k * GPUS + i] = wt_energy_read_skew_s(stamp, stamp + us * 1000);
        }

    long long ce = 0, ctick = 0, call = 0;
    for (int i = 0; i < GPUS; i++) {
        size_t nt = 0;
        for (size_t k = 0; k < n; k++) {
            int64_t t = t0 + (int64_t)k * STEP_NS;
            e[k] = (struct wt_point){t, (double)mj[k * GPUS + i] / 1000};
            sk[k] = (struct wt_point){t, skew[k * GPUS + i]};
            if (k % PER_S == 0)
                tk[nt++] = sk[k];
        }
        long long a = chunk_bytes(e, n), b = chunk_bytes(tk, nt), c = chunk_bytes(sk, n);
        if (a < 0 || b < 0 || c < 0)
            return 1;
        ce += a;
        ctick += b;
        call += c;
    }

    long long fe = 0, ftick = 0, fall = 0;
    size_t flushes = n / PER_S;
    for (size_t f = 0; f < flushes; f++) {
        for (int mode = 0; mode < 3; mode++) {
            size_t m = 0;
            for (size_t j = 0; j < PER_S; j++) {
                size_t k = f * PER_S + j;
                int64_t t = t0 + (int64_t)k * STEP_NS;
                for (int i = 0; i < GPUS; i++) {
                    r[m++] = (struct wt_tick_reading){i + 1, t, (double)mj[k * GPUS + i] / 1000};
                    if (mode == 2 || (mode == 1 && j == 0))
                        r[m++] = (struct wt_tick_reading){GPUS + i + 1, t, skew[k * GPUS + i]};
                }
            }
            uint8_t *b = NULL;
            size_t len = 0;
            int64_t lo, hi;
            if (wt_ticks_encode(r, m, &b, &len, &lo, &hi) != 0)
                return 1;
            *(mode == 0 ? &fe : mode == 1 ? &ftick : &fall) += (long long)len;
            free(b);
        }
    }

    double per_h = 1 / hours;
    fprintf(stderr,
            "skew_bytes: %.3g h of %d GPUs, a reading every %.1f s (1-s ticks + energy "
            "sub-polls)\n"
            "  chunks: energy %.0f kB/h; skew at the ticks %.0f kB/h (+%.1f %%), at every reading "
            "%.0f kB/h (+%.1f %%)\n"
            "  ticks codec, a 1-s flush: energy %.1f B; + ticks' skew %.1f B (+%.1f %%), + every "
            "reading's %.1f B (+%.1f %%)\n",
            hours, GPUS, 1.0 / PER_S, (double)ce * per_h / 1e3, (double)ctick * per_h / 1e3,
            100.0 * (double)ctick / (double)ce, (double)call * per_h / 1e3,
            100.0 * (double)call / (double)ce, (double)fe / (double)flushes,
            (double)ftick / (double)flushes, 100.0 * (double)(ftick - fe) / (double)fe,
            (double)fall / (double)flushes, 100.0 * (double)(fall - fe) / (double)fe);
    printf("{\"section\": \"Store\", \"what\": \"read skew stored with every energy sub-poll "
           "reading, %d GPUs, a reading every 0.2 s: chunk bytes an hour\", \"unit\": \"kB\", "
           "\"wattage\": %.1f, \"note\": \"at the ticks only %.1f kB; the energy series "
           "themselves %.1f kB\"}\n",
           GPUS, (double)call * per_h / 1e3, (double)ctick * per_h / 1e3, (double)ce * per_h / 1e3);
    printf("{\"section\": \"Store\", \"what\": \"read skew stored with every energy sub-poll "
           "reading, %d GPUs: ticks codec bytes a 1-s flush of the energy readings\", \"unit\": "
           "\"B\", \"wattage\": %.1f, \"note\": \"skew at the ticks only %.1f B; none %.1f B\"}\n",
           GPUS, (double)fall / (double)flushes, (double)ftick / (double)flushes,
           (double)fe / (double)flushes);
    free(e);
    free(sk);
    free(tk);
    free(r);
    free(skew);
    free(mj);
    return 0;
}
