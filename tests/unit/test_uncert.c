/* SPDX-License-Identifier: MIT */
/*
 * The error bars of exact windows (store/uncert.h): the pure terms on hand-made readings, then
 * their honesty on a recording of the fake NVML (tests/fakes/fake_record.h: 2 GPUs, a square
 * wave of 435 +- 265 W every 2.1 s, 1-s ticks with wake-up latency) against the fake's exact
 * energy: over 1000 random windows of 20 s and 60 s each, in counter and integration mode, the
 * exact energy lies inside the bar in >= 99 % of windows and the mean bar is at most 3 times
 * the mean actual error. (bench/energy_eval prints the same figures, and 300-s windows.)
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tests/fakes/fake_record.h"
#include "runner.h"
#include "store/query.h"
#include "store/uncert.h"

#define S 1000000000LL

static const struct wt_segment_rule hw = {.kind = WT_SK_HWCOUNTER};

WT_TEST(uncert_edge_on_a_reading_costs_nothing)
{
    struct wt_uncert_series s = {.rule = &hw};
    struct wt_point p[] = {{0, 0}, {S, 100}, {2 * S, 800}, {3 * S, 900}};
    WT_NEAR(wt_uncert_edge(&s, p, 4, S), 0, 1e-12);
    WT_NEAR(wt_uncert_edge(&s, p, 4, 5 * S), 0, 1e-12); /* outside: coverage says it */
}

WT_TEST(uncert_edge_is_bounded_by_the_levels_around_it)
{
    struct wt_uncert_series s = {.rule = &hw};
    /* segment powers 100, 100, 700, 700 W: an edge in a segment on a level costs nothing */
    struct wt_point f[] = {{0, 0}, {S, 100}, {2 * S, 200}, {3 * S, 900}, {4 * S, 1600}};
    WT_NEAR(wt_uncert_edge(&s, f, 5, S + S / 4), 0, 1e-9);
    WT_NEAR(wt_uncert_edge(&s, f, 5, 3 * S + S / 2), 0, 1e-9);
    /* 100, 100, 250, 700, 700 W: a step inside the middle second; 0.25 s in, the share can be
     * short by min(0.25 x 450, 0.75 x 150) = 112.5 J (the mean is where the bound is widest:
     * x*y/g times the levels' spread) or over by min(0.25 x 150, 0.75 x 450) */
    struct wt_point p[] = {{0, 0},       {S, 100},      {2 * S, 200},
                           {3 * S, 450}, {4 * S, 1150}, {5 * S, 1850}};
    WT_NEAR(wt_uncert_edge(&s, p, 6, 2 * S + S / 4), 0.25 * 0.75 / 1 * 600, 1e-9);
    /* 100, 100, 700, 100, 100 W: 700 W is reached once, so it may be a mean short of the level:
     * widened by 0.2 x 600 W to 820 W; 0.25 s in, short by min(0.25 x 120, 0.75 x 600) = 30 or
     * over by min(0.25 x 600, 0.75 x 120) = 90 */
    struct wt_point q[] = {{0, 0},       {S, 100},      {2 * S, 200},
                           {3 * S, 900}, {4 * S, 1000}, {5 * S, 1100}};
    WT_NEAR(wt_uncert_edge(&s, q, 6, 2 * S + S / 4), 90, 1e-9);
    /* steady power: no swing, no bar */
    struct wt_point c[] = {{0, 0}, {S, 300}, {2 * S, 600}, {3 * S, 900}};
    WT_NEAR(wt_uncert_edge(&s, c, 4, S + S / 3), 0, 1e-9);
}

/* Readings of one series for wt_uncert_series_bar: those in [from, to]. */
struct pts {
    const struct wt_point *p;
    size_t n;
};

static int pts_in(void *ctx, int64_t from, int64_t to, struct wt_point **out, size_t *n)
{
    const struct pts *c = ctx;
    *out = malloc((c->n ? c->n : 1) * sizeof **out);
    if (!*out)
        return -ENOMEM;
    *n = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->p[i].t_ns >= from && c->p[i].t_ns <= to)
            (*out)[(*n)++] = c->p[i];
    return 0;
}

/* A counter read every second whose segment powers are pw[0..n): the readings. */
static size_t counter_of(const double *pw, size_t n, struct wt_point *p)
{
    p[0] = (struct wt_point){0, 0};
    for (size_t i = 0; i < n; i++)
        p[i + 1] = (struct wt_point){(int64_t)(i + 1) * S, p[i].v + pw[i]};
    return n + 1;
}

WT_TEST(uncert_edges_add_by_side)
{
    struct wt_uncert_series s = {.rule = &hw};
    /* 100 W, a step up to 700 W at 3/4 of second 5 (mean 250 W), 700 W, a step down at 3/4 of
     * second 11 (mean 550 W), 100 W, a step up at 3/4 of second 17, 700 W */
    double pw[24];
    for (int i = 0; i < 24; i++)
        pw[i] = i < 5     ? 100
                : i == 5  ? 250
                : i < 11  ? 700
                : i == 11 ? 550
                : i < 17  ? 100
                : i == 17 ? 250
                          : 700;
    struct wt_point p[25];
    size_t n = counter_of(pw, 24, p);
    /* 0.25 s into a rising segment of mean 250 W: short by at most min(0.25 x 450, 0.75 x 150),
     * over by at most min(0.25 x 150, 0.75 x 450); the other way round in the falling one */
    double u, o;
    wt_uncert_edge_sides(&s, p, n, 5 * S + S / 4, &u, &o);
    WT_NEAR(u, 112.5, 1e-9);
    WT_NEAR(o, 37.5, 1e-9);
    wt_uncert_edge_sides(&s, p, n, 11 * S + S / 4, &u, &o);
    WT_NEAR(u, 37.5, 1e-9);
    WT_NEAR(o, 112.5, 1e-9);
    WT_NEAR(wt_uncert_edge(&s, p, n, 11 * S + S / 4), 112.5, 1e-9);
    /* The window's energy is the estimate at b less the one at a: an estimate too high at both
     * edges cancels. [5.25 s, 17.25 s], both rising: the error lies in [-(112.5 + 37.5),
     * 37.5 + 112.5], not +-225 J. [5.25 s, 11.25 s], rising then falling: short at a and over at
     * b add up, 225 J. Plus the counter's 1 mJ at each end. */
    struct wt_series_info si = {.kind = WT_SK_HWCOUNTER};
    snprintf(si.metric, sizeof si.metric, "wattage_gpu_energy_joules_total");
    struct wt_run_list runs = {0};
    struct pts c = {p, n};
    struct wt_uncert b;
    WT_EQ_INT(wt_uncert_series_bar(&si, &runs, pts_in, NULL, &c, 5 * S + S / 4, 17 * S + S / 4,
                                   7200, 12, &b),
              0);
    WT_NEAR(b.edges_j, 150, 1e-9);
    WT_NEAR(b.total_j, 150.002, 1e-9);
    WT_EQ_INT(wt_uncert_series_bar(&si, &runs, pts_in, NULL, &c, 5 * S + S / 4, 11 * S + S / 4,
                                   3600, 6, &b),
              0);
    WT_NEAR(b.total_j, 225.002, 1e-9);
}

/* The read skew of the readings at 3 s (100 us) and 8 s (200 us). */
static int skew_at(void *ctx, int64_t from, int64_t to, struct wt_point **out, size_t *n)
{
    static const struct wt_point sk[] = {{3 * S, 100e-6}, {8 * S, 200e-6}};
    struct pts c = {sk, 2};
    (void)ctx;
    return pts_in(&c, from, to, out, n);
}

WT_TEST(uncert_counter_read_after_its_stamp_widens_the_edge)
{
    /* 100 W, then 700 W from 5 s; a window from the reading at 3 s to the one at 8 s: without the
     * read skew the bar is the counter's 1 mJ at each end; a counter read 100 us and 200 us after
     * its stamps is over by up to the skew x 700 W (the levels' top) at each edge, and the two
     * edges' overs cancel as far as they go: max(0.07, 0.14) J */
    double pw[12];
    for (int i = 0; i < 12; i++)
        pw[i] = i < 5 ? 100 : 700;
    struct wt_point p[13];
    size_t n = counter_of(pw, 12, p);
    struct wt_series_info si = {.kind = WT_SK_HWCOUNTER};
    snprintf(si.metric, sizeof si.metric, "wattage_gpu_energy_joules_total");
    struct wt_run_list runs = {0};
    struct pts c = {p, n};
    struct wt_uncert b;
    WT_EQ_INT(wt_uncert_series_bar(&si, &runs, pts_in, NULL, &c, 3 * S, 8 * S, 2300, 5, &b), 0);
    WT_NEAR(b.total_j, 0.002, 1e-9);
    WT_EQ_INT(wt_uncert_series_bar(&si, &runs, pts_in, skew_at, &c, 3 * S, 8 * S, 2300, 5, &b), 0);
    /* (these readings are the energy at their stamps: between read times, 8.0002 s to 9 s
     * shows 700.14 W) */
    WT_NEAR(b.edges_j, 200e-6 * 700, 1e-4);
    WT_NEAR(b.total_j, 0.142, 1e-4);
    /* an integrated series is not read by the counter: no skew */
    si.kind = WT_SK_INTEGRATED;
    WT_EQ_INT(wt_uncert_series_bar(&si, &runs, pts_in, skew_at, &c, 3 * S, 8 * S, 2300, 5, &b), 0);
    WT_ASSERT(b.edges_j < 1e-9);
}

/* The energy used by 100 W until 5 s, then 700 W, from 0 s to t (in ns). */
static double used_j(int64_t t)
{
    double x = (double)t / S;
    return x <= 5 ? 100 * x : 500 + 700 * (x - 5);
}

/* The read skew of the edge sample at 8.1 s: 4 ms (its tick at 8 s and the rest: 0). */
static int skew_edge(void *ctx, int64_t from, int64_t to, struct wt_point **out, size_t *n)
{
    static const struct wt_point sk[] = {
        {7 * S, 0}, {8 * S, 0}, {8 * S + S / 10, 4e-3}, {9 * S, 0}};
    struct pts c = {sk, 4};
    (void)ctx;
    return pts_in(&c, from, to, out, n);
}

WT_TEST(uncert_read_skew_counts_the_power_between_read_times_not_more)
{
    /* 100 W, then 700 W from 5 s; ticks every second and an edge sample at 8.1 s whose counter
     * was read 4 ms late: the window [3 s, 8.1 s] is 2.8 J over (4 ms at 700 W) where the bar
     * without the skew is the counter's 1 mJ at each end. With it the bar is 4 ms x 700 W: by
     * their stamps the 0.1-s segment [8 s, 8.1 s] would show 728 W (its energy to 8.104 s), a
     * lone top widened by 20 % of the swing to 853.6 W and a bar of 3.41 J; between the read
     * times it is the 700 W drawn. */
    struct wt_point p[14];
    size_t n = 0;
    for (int64_t t = 0; t <= 12 * S; t += S) {
        p[n++] = (struct wt_point){t, used_j(t)};
        if (t == 8 * S)
            p[n++] = (struct wt_point){t + S / 10, used_j(t + S / 10 + 4000000)};
    }
    struct wt_series_info si = {.kind = WT_SK_HWCOUNTER};
    snprintf(si.metric, sizeof si.metric, "wattage_gpu_energy_joules_total");
    struct wt_run_list runs = {0};
    struct pts c = {p, n};
    struct wt_uncert b;
    int64_t a = 3 * S, e = 8 * S + S / 10;
    double err = (p[9].v - p[3].v) - (used_j(e) - used_j(a));
    WT_NEAR(err, 2.8, 1e-9);
    WT_EQ_INT(wt_uncert_series_bar(&si, &runs, pts_in, NULL, &c, a, e, p[9].v - p[3].v, 5.1, &b),
              0);
    WT_NEAR(b.total_j, 0.002, 1e-9); /* missed by far */
    WT_EQ_INT(
        wt_uncert_series_bar(&si, &runs, pts_in, skew_edge, &c, a, e, p[9].v - p[3].v, 5.1, &b), 0);
    WT_NEAR(b.edges_j, 4e-3 * 700, 1e-6);
    WT_NEAR(b.total_j, 2.802, 1e-6);
    WT_ASSERT(err <= b.total_j);
}

WT_TEST(uncert_gap_inside_the_window_counts_what_it_may_hide)
{
    /* a reset between 2 s and 3 s: the second is a gap beside 300 W segments */
    struct wt_uncert_series s = {.rule = &hw};
    struct wt_point p[] = {{0, 0}, {S, 300}, {2 * S, 600}, {3 * S, 10}, {4 * S, 310}};
    double msq, gaps;
    wt_uncert_interior(&s, p, 5, S / 2, 4 * S, &msq, &gaps);
    WT_NEAR(gaps, 300, 1e-9);
    WT_NEAR(msq, 0, 1e-12); /* a counter has no method term */
}

WT_TEST(uncert_integrated_step_off_its_averaging_window)
{
    /* readings 1 s apart averaged over 1 s: exact steps; 2 s apart: off by 1 s x the swing */
    struct wt_segment_rule ir = {.kind = WT_SK_INTEGRATED};
    struct wt_uncert_series s = {.rule = &ir, .power_window_ns = S};
    struct wt_point p[] = {{0, 0}, {S, 100}, {2 * S, 800}, {3 * S, 900}};
    double msq, gaps;
    wt_uncert_interior(&s, p, 4, 0, 3 * S, &msq, &gaps);
    WT_NEAR(msq, 0, 1e-9);
    struct wt_point q[] = {{0, 0}, {2 * S, 200}, {4 * S, 1600}, {6 * S, 1800}};
    wt_uncert_interior(&s, q, 4, 0, 6 * S, &msq, &gaps);
    WT_NEAR(sqrt(msq), sqrt(3) * 1 * 600, 1e-6);
}

WT_TEST(uncert_overlapping_averages_leave_only_the_lag_at_the_edges)
{
    /* readings 0.2 s apart, each a 1-s mean: the steps do not add up; an edge within a second of
     * a swing of 500 W costs W/16 x 500 W, as when read every W */
    struct wt_segment_rule ir = {.kind = WT_SK_INTEGRATED};
    struct wt_uncert_series s = {.rule = &ir, .power_window_ns = S};
    struct wt_point p[12];
    double e = 0;
    for (int i = 0; i < 12; i++) {
        p[i] = (struct wt_point){i * S / 5, e};
        e += (i < 6 ? 100.0 : 600.0) * 0.2; /* segment powers 100 W, then 600 W */
    }
    double msq, gaps;
    wt_uncert_interior(&s, p, 12, 0, 11 * S / 5, &msq, &gaps);
    WT_NEAR(msq, 0, 1e-12);
    WT_NEAR(gaps, 0, 1e-12);
    WT_NEAR(wt_uncert_lag(&s, p, 12, S + S / 10), 500.0 / 16, 1e-9);
    /* readings as far apart as the window: a step beside the edge is smoothed over it, W/16 of
     * the swing of the edge's segment and its neighbours (100, 600, 100 W) counted; steady power
     * costs nothing; counters have no lag */
    struct wt_point q[] = {{0, 0}, {S, 100}, {2 * S, 700}, {3 * S, 800}};
    WT_NEAR(wt_uncert_lag(&s, q, 4, S + S / 2), 500.0 / 16, 1e-9);
    struct wt_point st[] = {{0, 0}, {S, 300}, {2 * S, 600}, {3 * S, 900}};
    WT_NEAR(wt_uncert_lag(&s, st, 4, S + S / 2), 0, 1e-12);
    struct wt_uncert_series c = {.rule = &hw};
    WT_NEAR(wt_uncert_lag(&c, p, 12, S + S / 10), 0, 1e-12);
}

/* Issue 19's goal for windows with edges anywhere: at 0.2-s ticks (collectors.nvml.interval
 * 0.2) every 60-s window within 0.2 % in counter mode, the bars still honest in both modes. */
WT_TEST(uncert_fast_ticks_make_any_60s_window_exact_to_0_2_percent)
{
    char dir[] = "/tmp/wt-test-uncert-XXXXXX", db[80];
    struct fake_rec r;
    WT_ASSERT(mkdtemp(dir) != NULL);
    snprintf(db, sizeof db, "%s/u.db", dir);
    WT_EQ_INT(fake_rec_make_tick(&r, db, 2, 400, 5, 0.2), 0);
    uint64_t rs = 13;
    int n[2] = {0}, inside[2] = {0};
    double bar[2] = {0}, err[2] = {0}, worst = 0;
    for (int w = 0; w < 400; w++) {
        unsigned int g = (unsigned int)w % 2;
        double a = r.first_s + 5 + fake_rec_rand(&rs) * (r.last_s - r.first_s - 70);
        int64_t a_ns = (int64_t)llround(a * 1e9), b_ns = a_ns + 60 * S;
        double truth = r.exact(g, (double)a_ns / 1e9, (double)b_ns / 1e9);
        struct wt_energy_row *rows = NULL;
        size_t nr = 0;
        struct wt_err e = {{0}};
        WT_EQ_INT(wt_store_energy(r.st, a_ns, b_ns, 0, &rows, &nr, &e), 0);
        for (size_t i = 0; i < nr; i++) {
            char gs[8];
            int k = rows[i].s.kind == WT_SK_HWCOUNTER    ? 0
                    : rows[i].s.kind == WT_SK_INTEGRATED ? 1
                                                         : -1;
            if (k < 0 || wt_labels_get(rows[i].s.labels, "gpu", gs, sizeof gs) != 0 ||
                (unsigned int)atoi(gs) != g)
                continue;
            double d = fabs(rows[i].energy_j - truth);
            n[k]++;
            inside[k] += d <= rows[i].uncertainty_j;
            bar[k] += rows[i].uncertainty_j;
            err[k] += d;
            if (k == 0 && d / truth > worst)
                worst = d / truth;
        }
        free(rows);
    }
    printf("# 0.2-s ticks, 60-s windows: counter worst %.4f %%, inside %d/%d (bar/error %.1f); "
           "integration inside %d/%d (bar/error %.1f)\n",
           100 * worst, inside[0], n[0], bar[0] / err[0], inside[1], n[1], bar[1] / err[1]);
    WT_EQ_INT(n[0], 400);
    WT_EQ_INT(n[1], 400);
    WT_ASSERT(worst > 0 && worst <= 0.002);
    WT_ASSERT(inside[0] >= 396 && inside[1] >= 396);
    WT_ASSERT(bar[0] <= 3 * err[0]); /* a segment on a level costs nothing (it was ~10x) */
    /* the overlap of 1-s means read every 0.2 s no longer adds up per step (it was ~490x) */
    WT_ASSERT(bar[1] <= 80 * err[1]);
    fake_rec_close(&r);
    char p[96];
    snprintf(p, sizeof p, "rm -rf %s", dir);
    WT_ASSERT(system(p) == 0);
}

/* The same goal at the default 1-s ticks with energy sub-polls every 0.2 s
 * (collectors.nvml.energy_interval): the counter alone between ticks, on both waves. */
static void sub_polls_60s(const char *wave)
{
    char dir[] = "/tmp/wt-test-uncert-XXXXXX", db[80];
    struct fake_rec r;
    setenv("FAKE_NVML_WAVE", wave, 1);
    WT_ASSERT(mkdtemp(dir) != NULL);
    snprintf(db, sizeof db, "%s/u.db", dir);
    WT_EQ_INT(fake_rec_make_sub(&r, db, 2, 900, 5, 1.0, 0.2), 0);
    uint64_t rs = 17;
    int n = 0, inside = 0;
    double worst = 0;
    for (int w = 0; w < 600; w++) {
        unsigned int g = (unsigned int)w % 2;
        double a = r.first_s + 5 + fake_rec_rand(&rs) * (r.last_s - r.first_s - 70);
        int64_t a_ns = (int64_t)llround(a * 1e9), b_ns = a_ns + 60 * S;
        double truth = r.exact(g, (double)a_ns / 1e9, (double)b_ns / 1e9);
        struct wt_energy_row *rows = NULL;
        size_t nr = 0;
        struct wt_err e = {{0}};
        WT_EQ_INT(wt_store_energy(r.st, a_ns, b_ns, 0, &rows, &nr, &e), 0);
        for (size_t i = 0; i < nr; i++) {
            char gs[8];
            if (rows[i].s.kind != WT_SK_HWCOUNTER ||
                wt_labels_get(rows[i].s.labels, "gpu", gs, sizeof gs) != 0 ||
                (unsigned int)atoi(gs) != g)
                continue;
            double d = fabs(rows[i].energy_j - truth);
            n++;
            inside += d <= rows[i].uncertainty_j;
            if (d / truth > worst)
                worst = d / truth;
        }
        free(rows);
    }
    printf("# %s wave, 1-s ticks + 0.2-s energy sub-polls, 60-s windows: counter worst %.4f %%, "
           "inside %d/%d\n",
           wave, 100 * worst, inside, n);
    WT_EQ_INT(n, 600);
    WT_ASSERT(worst > 0 && worst <= 0.002);
    WT_ASSERT(inside >= 594);
    fake_rec_close(&r);
    char p[96];
    snprintf(p, sizeof p, "rm -rf %s", dir);
    WT_ASSERT(system(p) == 0);
}

WT_TEST(energy_sub_polls_make_any_60s_window_exact_to_0_2_percent_on_the_square_wave)
{
    sub_polls_60s("square");
}

WT_TEST(energy_sub_polls_make_any_60s_window_exact_to_0_2_percent_on_the_irregular_wave)
{
    sub_polls_60s("irregular");
}

/*
 * Over 1000 random windows of each length on a recording of `seconds` of the fake's wave
 * (FAKE_NVML_WAVE, set before the fake loads: one test a process), per mode: the exact energy
 * inside the bar in >= 99 % of windows, the mean bar at most max_ratio[length][mode] times the
 * mean error.
 */
static void honesty(const char *wave, int seconds, const int *lens, int nlens,
                    const double (*max_ratio)[2])
{
    char dir[] = "/tmp/wt-test-uncert-XXXXXX", db[80];
    struct fake_rec r;
    setenv("FAKE_NVML_WAVE", wave, 1);
    WT_ASSERT(mkdtemp(dir) != NULL);
    snprintf(db, sizeof db, "%s/u.db", dir);
    WT_EQ_INT(fake_rec_make(&r, db, 2, seconds, 3), 0);
    uint64_t rs = 11;
    for (int li = 0; li < nlens; li++) {
        int n[2] = {0}, inside[2] = {0};
        double bar[2] = {0}, err[2] = {0};
        for (int w = 0; w < 1000; w++) {
            unsigned int g = (unsigned int)w % 2;
            double a = r.first_s + 5 + fake_rec_rand(&rs) * (r.last_s - r.first_s - lens[li] - 10);
            int64_t a_ns = (int64_t)llround(a * 1e9), b_ns = a_ns + lens[li] * S;
            double truth = r.exact(g, (double)a_ns / 1e9, (double)b_ns / 1e9);
            struct wt_energy_row *rows = NULL;
            size_t nr = 0;
            struct wt_err e = {{0}};
            WT_EQ_INT(wt_store_energy(r.st, a_ns, b_ns, 0, &rows, &nr, &e), 0);
            for (size_t i = 0; i < nr; i++) {
                char gs[8];
                int k = rows[i].s.kind == WT_SK_HWCOUNTER    ? 0
                        : rows[i].s.kind == WT_SK_INTEGRATED ? 1
                                                             : -1;
                if (k < 0 || wt_labels_get(rows[i].s.labels, "gpu", gs, sizeof gs) != 0 ||
                    (unsigned int)atoi(gs) != g)
                    continue;
                double d = fabs(rows[i].energy_j - truth);
                n[k]++;
                inside[k] += d <= rows[i].uncertainty_j;
                bar[k] += rows[i].uncertainty_j;
                err[k] += d;
                WT_ASSERT(rows[i].coverage > 0.999);
            }
            free(rows);
        }
        for (int k = 0; k < 2; k++) {
            printf("# %s wave, %d-s windows, %s: %d of %d inside the bar, mean bar / mean error "
                   "%.2f\n",
                   wave, lens[li], k ? "integration" : "counter", inside[k], n[k], bar[k] / err[k]);
            WT_EQ_INT(n[k], 1000);
            WT_ASSERT(inside[k] >= 990);
            WT_ASSERT(bar[k] <= max_ratio[li][k] * err[k]);
            WT_ASSERT(err[k] > 0); /* the windows do fall between samples */
        }
    }
    fake_rec_close(&r);
    char p[96];
    snprintf(p, sizeof p, "rm -rf %s", dir);
    WT_ASSERT(system(p) == 0);
}

/* On the periodic wave, 300 s is 6 s past a multiple of the wave's 21-s common period with the
 * ticks: the errors at the two edges mostly cancel, which the readings around each edge cannot
 * show (bench/results/2026-12-07-energy-bars-periodic.md), so the bar there is about 4x the
 * error (3.9x counter, 4.1x integration), not 3x; still every window inside. */
WT_TEST(uncert_bars_are_honest_on_the_fake)
{
    static const int lens[] = {20, 60, 300};
    static const double ratio[][2] = {{3, 3}, {3, 3}, {4.5, 4.5}};
    honesty("square", 900, lens, 3, ratio);
}

/* The irregular wave (half-periods of 0.84-1.31 s, never periodic) does not let the errors at a
 * window's two edges cancel by its length, as the periodic one does at 300 s: there every length
 * keeps its bar within 3x the error in both modes (integration mode's bar also counts the
 * smoothing of a step beside each edge and the interior's jitter: about 2.8x). */
WT_TEST(uncert_bars_are_honest_on_an_irregular_wave)
{
    static const int lens[] = {20, 60, 300};
    static const double ratio[][2] = {{3, 3}, {3, 3}, {3, 3}};
    honesty("irregular", 1800, lens, 3, ratio);
}
