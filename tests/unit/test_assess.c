/* SPDX-License-Identifier: MIT */
/* The assessment's record: a round trip through assessment.json, the errors that name the field,
 * the baseline split and the hours of day a window covers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/assess.h"
#include "runner.h"

#define H (3600LL * 1000000000LL)

WT_TEST(assess_record_round_trips_and_errors_name_the_field)
{
    char dir[] = "/tmp/wt-assess-XXXXXX";
    WT_ASSERT(mkdtemp(dir) != NULL);
    char store[256], path[256];
    snprintf(store, sizeof store, "%s/wattage.db", dir);
    WT_EQ_INT(wt_assess_path(store, path, sizeof path), 0);
    char want[256];
    snprintf(want, sizeof want, "%s/assessment.json", dir);
    WT_EQ_STR(path, want);
    char tiny[8];
    WT_EQ_INT(wt_assess_path(store, tiny, sizeof tiny), -ENAMETOOLONG);

    struct wt_err err = {{0}};
    struct wt_assess a = {.start_ns = 1700000000LL * 1000000000LL};
    WT_EQ_INT(wt_assess_load(path, &a, &err), -ENOENT);
    WT_CONTAINS(err.msg, "no assessment");

    snprintf(a.name, sizeof a.name, "site-a");
    a.start_ns = 1700000000LL * 1000000000LL;
    a.end_ns = a.start_ns + 72 * H;
    a.layers = WT_ASSESS_CHIP | WT_ASSESS_CLOCK | WT_ASSESS_INLET;
    WT_EQ_INT(wt_assess_save(path, &a, &err), 0);
    struct wt_assess b;
    WT_EQ_INT(wt_assess_load(path, &b, &err), 0);
    WT_EQ_STR(b.name, "site-a");
    WT_ASSERT(b.start_ns == a.start_ns);
    WT_ASSERT(b.end_ns == a.end_ns);
    WT_EQ_INT((int)b.layers, (int)a.layers);
    WT_ASSERT(access(want, F_OK) == 0);

    FILE *f = fopen(path, "w");
    WT_ASSERT(f != NULL);
    fputs("{\"name\":\"x\",\"start_s\":10,\"end_s\":20,\"layers_at_start\":[\"chips\"]}", f);
    fclose(f);
    WT_EQ_INT(wt_assess_load(path, &b, &err), -EINVAL);
    WT_CONTAINS(err.msg, "layers_at_start");
    f = fopen(path, "w");
    fputs("{\"name\":\"x\",\"start_s\":20,\"end_s\":10,\"layers_at_start\":[]}", f);
    fclose(f);
    WT_EQ_INT(wt_assess_load(path, &b, &err), -EINVAL);
    WT_CONTAINS(err.msg, "end_s");
    unlink(path);
    rmdir(dir);
}

WT_TEST(assess_baseline_and_hours_of_day)
{
    struct wt_assess a = {.start_ns = 0, .end_ns = 72 * H};
    WT_ASSERT(wt_assess_baseline_end(&a) == 24 * H);
    a.end_ns = 96 * H;
    WT_ASSERT(wt_assess_baseline_end(&a) == 24 * H);
    a.end_ns = 30 * H; /* shorter than 72 h: the first third */
    WT_ASSERT(wt_assess_baseline_end(&a) == 10 * H);

    WT_EQ_INT((int)wt_assess_hours_seen(0, 0), 0);
    WT_EQ_INT((int)wt_assess_hours_seen(0, 1), 1);
    WT_EQ_INT((int)wt_assess_hours_seen(23 * H + 5, 25 * H + 1), (int)((1u << 23) | 3u));
    WT_EQ_INT((int)wt_assess_hours_seen(5 * H, 5 * H + 25 * H), (int)((1u << 24) - 1));
    WT_EQ_INT((int)wt_assess_hours_seen(2 * H + 1, 4 * H), (int)((1u << 2) | (1u << 3)));
}

#define S 1000000000LL

WT_TEST(assess_coverage_spans_gaps_and_union)
{
    /* readings every second over [100, 130] s, a 6-s hole after 110 (the daemon restarted) */
    struct wt_point p[40];
    size_t n = 0;
    for (int t = 100; t <= 110; t++)
        p[n++] = (struct wt_point){t * S, 1};
    for (int t = 116; t <= 130; t++)
        p[n++] = (struct wt_point){t * S, 1};
    WT_ASSERT(wt_assess_gap_bound(p, n) == 3 * S);
    WT_ASSERT(wt_assess_gap_bound(p, 1) == 0);

    struct wt_assess_span sp[80];
    size_t k = wt_assess_spans(p, n, 105 * S, 128 * S, false, sp);
    WT_EQ_INT((int)k, 2);
    WT_ASSERT(sp[0].from_ns == 105 * S && sp[0].to_ns == 110 * S);
    WT_ASSERT(sp[1].from_ns == 116 * S && sp[1].to_ns == 128 * S);
    struct wt_assess_cover c = {.nseries = 1};
    WT_EQ_INT((int)wt_assess_cover_of(sp, k, 105 * S, 128 * S, &c), 2);
    WT_NEAR(c.window_s, 23.0, 1e-9);
    WT_NEAR(c.covered_s, 17.0, 1e-9);
    WT_EQ_INT((int)c.ngaps, 1);
    WT_NEAR(c.longest_gap_s, 6.0, 1e-9);
    WT_ASSERT(c.longest_gap_from_ns == 110 * S);
    WT_EQ_INT((int)c.nseries, 1);

    /* the newest reading covers up to the window's end when within the bound, not beyond */
    k = wt_assess_spans(p, n, 120 * S, 132 * S, false, sp);
    WT_EQ_INT((int)k, 1);
    WT_ASSERT(sp[0].to_ns == 132 * S);
    k = wt_assess_spans(p, n, 120 * S, 140 * S, false, sp);
    WT_ASSERT(sp[k - 1].to_ns == 130 * S);
    memset(&c, 0, sizeof c);
    wt_assess_cover_of(sp, k, 120 * S, 140 * S, &c);
    WT_NEAR(c.covered_s, 10.0, 1e-9);
    WT_EQ_INT((int)c.ngaps, 1); /* the tail */

    /* a flag: only the time it read 1 */
    for (size_t i = 0; i < n; i++)
        p[i].v = p[i].t_ns >= 120 * S ? 0 : 1;
    k = wt_assess_spans(p, n, 100 * S, 130 * S, true, sp);
    memset(&c, 0, sizeof c);
    wt_assess_cover_of(sp, k, 100 * S, 130 * S, &c);
    WT_NEAR(c.covered_s, 10.0 + 4.0, 1e-9); /* 100..110 and 116..120 */

    /* two series: their union, a gap only where both miss */
    struct wt_assess_span u[] = {{10 * S, 20 * S}, {0, 5 * S}, {15 * S, 30 * S}, {40 * S, 50 * S}};
    memset(&c, 0, sizeof c);
    WT_EQ_INT((int)wt_assess_cover_of(u, 4, 0, 50 * S, &c), 3);
    WT_NEAR(c.covered_s, 5.0 + 20.0 + 10.0, 1e-9);
    WT_EQ_INT((int)c.ngaps, 2);
    WT_NEAR(c.longest_gap_s, 10.0, 1e-9);
    WT_ASSERT(c.longest_gap_from_ns == 30 * S);
    /* nothing at all: the whole window is one gap */
    memset(&c, 0, sizeof c);
    WT_EQ_INT((int)wt_assess_cover_of(u, 0, 0, 50 * S, &c), 0);
    WT_NEAR(c.covered_s, 0.0, 1e-9);
    WT_EQ_INT((int)c.ngaps, 1);
    WT_NEAR(c.longest_gap_s, 50.0, 1e-9);
}
