/* SPDX-License-Identifier: MIT */
/*
 * The honesty of the error bars (store/uncert.h) and the accuracy of exact windows, against the
 * fake NVML's analytic energy: a recording of SECONDS (default 3600) of 2 GPUs at 1 s on a
 * square wave of 435 +- 265 W every 2.1 s (tests/fakes/fake_record.h), then WINDOWS (default
 * 1000) random windows of 20, 60 and 300 s through the store's own query (wt_store_energy), per
 * mode (the hardware counter; the daemon's integrated power). Per length and mode: the share of
 * windows whose exact energy lies inside the bar (coverage), the mean bar over the mean actual
 * error, and the mean and worst error in percent; then the same windows with edges on whole
 * seconds (what aligned ticks make exact but for the ticks' wake-up latency), counter mode.
 * FAKE_NVML_WAVE=irregular records the fake's irregular square wave instead (the same levels,
 * each half-period 0.84-1.31 s, never periodic): on the periodic wave the errors at a window's
 * two edges are correlated by the window's length against the wave's period.
 * A table on stderr, JSON rows on stdout. TICK (default 1 s) records at another pace, the one
 * collectors.nvml.interval would give: windows with edges anywhere need ticks faster than the
 * wave moves (the JSON rows then name the tick).
 * SUB (default none) adds energy sub-polls every SUB s between the ticks: the counter alone, as
 * collectors.nvml.energy_interval reads it.
 * SEED (default none: the recording's wake-up latencies from 42, the windows from 7) draws both
 * from SEED instead (the JSON rows then name it): a figure that holds on one draw only is luck.
 * LENGTHS (default 20,60,300) the window lengths, whole seconds, comma-separated: on the periodic
 * wave a length that is a multiple of its 21-s common period with the ticks (21, 42, 105) lets
 * the edges' errors cancel, one half a period off (20, 60) adds them up.
 *   energy_eval [SECONDS [WINDOWS [TICK [SUB [SEED [LENGTHS]]]]]]   (WATTAGE_FAKE_NVML: the
 *   fake; default the build's)
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/fakes/fake_record.h"
#include "store/query.h"

struct acc {
    int n, inside;
    double bar, err, rel, worst;
};

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 3600, windows = argc > 2 ? atoi(argv[2]) : 1000;
    double tick = argc > 3 ? atof(argv[3]) : 1.0;
    double sub = argc > 4 ? atof(argv[4]) : 0.0;    /* energy sub-polls between ticks */
    long long seed = argc > 5 ? atoll(argv[5]) : 0; /* 0: the default draws */
    char at[128] = ""; /* the JSON rows' "what" names a tick other than 1 s, a wave other than
                         the periodic square */
    const char *wave = getenv("FAKE_NVML_WAVE");
    bool irregular = wave && strcmp(wave, "irregular") == 0;
    snprintf(at, sizeof at, "%s%s", irregular ? ", irregular wave" : "", "");
    if (tick != 1.0)
        snprintf(at + strlen(at), sizeof at - strlen(at), ", %g-s ticks", tick);
    if (sub > 0)
        snprintf(at + strlen(at), sizeof at - strlen(at), ", %g-s energy sub-polls", sub);
    if (seed > 0)
        snprintf(at + strlen(at), sizeof at - strlen(at), ", seed %lld", seed);
    int lens[16], nlens = 0;
    const char *ls = argc > 6 ? argv[6] : "20,60,300";
    for (char *end; *ls && nlens < 16; ls = *end == ',' ? end + 1 : end) {
        long v = strtol(ls, &end, 10);
        if (end == ls || v < 1 || (*end && *end != ','))
            break;
        lens[nlens++] = (int)v;
    }
    char dir[] = "/tmp/wt-energy-eval-XXXXXX", db[64];
    struct fake_rec r;
    int longest = 0;
    for (int i = 0; i < nlens; i++)
        longest = lens[i] > longest ? lens[i] : longest;
    if (seconds < 400 || seconds < longest + 100 || windows < 1 || !(tick >= 0.01 && tick <= 10) ||
        seed < 0 || nlens == 0 || *ls) {
        fprintf(stderr, "usage: energy_eval [SECONDS >= 400 [WINDOWS >= 1 [TICK 0.01..10 s [SUB "
                        "s [SEED >= 1 [LENGTHS s,s,... (at most 16, each at most SECONDS - "
                        "100)]]]]]]\n");
        return 2;
    }
    if (!mkdtemp(dir))
        return 1;
    snprintf(db, sizeof db, "%s/e.db", dir);
    if (fake_rec_make_sub(&r, db, 2, seconds, seed > 0 ? (uint64_t)seed : 42, tick, sub) != 0)
        return 1;
    uint64_t rs = seed > 0 ? (uint64_t)seed * 2654435761u + 1 : 7;
    for (int li = 0; li < nlens; li++) {
        struct acc m[3] = {{0}};
        int L = lens[li];
        for (int w = 0; w < 2 * windows; w++) {
            unsigned int g = (unsigned int)w % r.gpus;
            bool whole = w >= windows; /* the second half: edges on whole seconds */
            double a = r.first_s + 5 + fake_rec_rand(&rs) * (r.last_s - r.first_s - L - 10);
            if (whole)
                a = floor(a);
            int64_t a_ns = (int64_t)llround(a * 1e9), b_ns = a_ns + (int64_t)L * 1000000000;
            double truth = r.exact(g, (double)a_ns / 1e9, (double)b_ns / 1e9);
            struct wt_energy_row *rows = NULL;
            size_t n = 0;
            struct wt_err err = {{0}};
            if (wt_store_energy(r.st, a_ns, b_ns, 0, &rows, &n, &err) != 0) {
                fprintf(stderr, "energy_eval: %s\n", err.msg);
                return 1;
            }
            char gs[16], want[16];
            snprintf(want, sizeof want, "%u", g);
            for (size_t i = 0; i < n; i++) {
                int k = rows[i].s.kind == WT_SK_HWCOUNTER    ? 0
                        : rows[i].s.kind == WT_SK_INTEGRATED ? 1
                                                             : -1;
                if (whole && k == 0)
                    k = 2;
                else if (whole)
                    continue;
                if (k < 0 || wt_labels_get(rows[i].s.labels, "gpu", gs, sizeof gs) != 0 ||
                    strcmp(gs, want) != 0)
                    continue;
                double e = fabs(rows[i].energy_j - truth);
                m[k].n++;
                m[k].inside += e <= rows[i].uncertainty_j;
                m[k].bar += rows[i].uncertainty_j;
                m[k].err += e;
                m[k].rel += e / truth;
                if (e / truth > m[k].worst)
                    m[k].worst = e / truth;
            }
            free(rows);
        }
        for (int k = 0; k < 3; k++) {
            const char *mode = k == 2 ? "counter, edges on whole seconds"
                               : k    ? "integration"
                                      : "counter";
            double cov = m[k].n ? (double)m[k].inside / m[k].n : 0;
            double ratio = m[k].err > 0 ? m[k].bar / m[k].err : INFINITY;
            fprintf(
                stderr,
                "energy_eval: %3d s%s %-32s windows %d  inside the bar %.1f %%  mean bar / mean "
                "error %.2f  mean error %.4f %%  worst %.4f %%  mean bar %.3f J\n",
                L, at, mode, m[k].n, 100 * cov, ratio, 100 * m[k].rel / (m[k].n ? m[k].n : 1),
                100 * m[k].worst, m[k].bar / (m[k].n ? m[k].n : 1));
            printf("{\"section\": \"Energy accuracy\", \"what\": \"%d-s windows%s, %s: exact "
                   "energy inside the error bar\", \"unit\": \"%%\", \"wattage\": %.2f}\n",
                   L, at, mode, 100 * cov);
            printf("{\"section\": \"Energy accuracy\", \"what\": \"%d-s windows%s, %s: mean bar / "
                   "mean error\", \"unit\": \"x\", \"wattage\": %.3f}\n",
                   L, at, mode, ratio);
            printf("{\"section\": \"Energy accuracy\", \"what\": \"%d-s windows%s, %s: mean "
                   "|error|\", \"unit\": \"%%\", \"wattage\": %.5f}\n",
                   L, at, mode, 100 * m[k].rel / (m[k].n ? m[k].n : 1));
            printf("{\"section\": \"Energy accuracy\", \"what\": \"%d-s windows%s, %s: worst "
                   "|error|\", \"unit\": \"%%\", \"wattage\": %.5f}\n",
                   L, at, mode, 100 * m[k].worst);
        }
    }
    fake_rec_close(&r);
    unlink(db);
    char p[96];
    snprintf(p, sizeof p, "%s-wal", db);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", db);
    unlink(p);
    rmdir(dir);
    return 0;
}
