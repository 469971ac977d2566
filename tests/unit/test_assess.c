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
