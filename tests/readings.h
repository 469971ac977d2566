/* SPDX-License-Identifier: MIT */
/* Looking readings up in a batch, for the collector tests. */
#ifndef WT_TEST_READINGS_H
#define WT_TEST_READINGS_H

#include <string.h>

#include "core/reading.h"
#include "runner.h"

/* The reading of metric with exactly these labels, or NULL. */
static inline const struct wt_reading *find_reading(const struct wt_batch *b, int metric,
                                                    const char *labels)
{
    for (size_t i = 0; i < b->len; i++) {
        if (b->r[i].metric == metric && strcmp(b->r[i].labels, labels) == 0)
            return &b->r[i];
    }
    return NULL;
}

/* How many readings of metric the batch holds. */
static inline size_t count_readings(const struct wt_batch *b, int metric)
{
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->r[i].metric == metric;
    return n;
}

/* The value of the reading of metric with exactly these labels; fails the test when absent. */
static inline double reading_value(const struct wt_batch *b, int metric, const char *labels)
{
    const struct wt_reading *r = find_reading(b, metric, labels);
    if (!r)
        wt_test_fail(__FILE__, __LINE__, "no reading metric=%d labels=%s", metric, labels);
    return r->value;
}

#endif
