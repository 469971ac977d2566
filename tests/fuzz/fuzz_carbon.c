/* SPDX-License-Identifier: MIT */
/*
 * Carbon-intensity files and replies: wt_carbon_parse in every format of src/audit/carbon_parse.c
 * (auto, the two CSV layouts, the UK Carbon Intensity API's JSON, Electricity Maps' history,
 * forecast and /latest JSON), then the step function over what parsed: the steps of each zone
 * must cover the window from its first point to its last, in order, without a gap.
 * Seeds: ../shared/data/carbon-intensity.
 */
#include "audit/carbon_parse.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

static int by_from(const void *x, const void *y)
{
    const struct wt_carbon_point *a = x, *b = y;
    return (a->from_ns > b->from_ns) - (a->from_ns < b->from_ns);
}

static void check_steps(const struct wt_carbon_batch *b)
{
    for (size_t i = 0; i < b->n;) {
        size_t j = i;
        int64_t a = b->p[i].from_ns, e = b->p[i].to_ns;
        /* One zone's points (sorted by zone, kind, from). */
        while (j < b->n && strcmp(b->p[j].zone, b->p[i].zone) == 0) {
            FUZZ_CHECK(b->p[j].from_ns < b->p[j].to_ns);
            FUZZ_CHECK(isfinite(b->p[j].value));
            if (b->p[j].from_ns < a)
                a = b->p[j].from_ns;
            if (b->p[j].to_ns > e)
                e = b->p[j].to_ns;
            j++;
        }
        /* steps_of wants them by start time. */
        size_t n = j - i;
        struct wt_carbon_point *p = malloc(n * sizeof *p);
        FUZZ_CHECK(p != NULL);
        memcpy(p, b->p + i, n * sizeof *p);
        qsort(p, n, sizeof *p, by_from);
        struct wt_carbon_step *st = NULL;
        size_t ns = 0;
        FUZZ_CHECK(wt_carbon_steps_of(p, n, NULL, a, e, &st, &ns) == 0);
        FUZZ_CHECK(ns > 0 && st[0].from_ns == a && st[ns - 1].to_ns == e);
        for (size_t k = 0; k < ns; k++) {
            FUZZ_CHECK(st[k].from_ns < st[k].to_ns);
            FUZZ_CHECK(k == 0 || st[k].from_ns == st[k - 1].to_ns);
        }
        free(st);
        free(p);
        i = j;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum wt_carbon_format fmts[] = {WT_CF_AUTO, WT_CF_CSV, WT_CF_UK_API,
                                                 WT_CF_ELECTRICITYMAPS};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        struct wt_carbon_batch b = {0};
        struct wt_err err = {{0}};
        int rc = wt_carbon_parse("fuzz", (const char *)data, size, fmts[f], WT_CS_INTENSITY, "GB",
                                 NULL, &b, &err);
        fuzz_check_err(&err);
        if (rc == 0)
            check_steps(&b);
        else
            FUZZ_CHECK(b.n == 0);
        wt_carbon_batch_free(&b);
    }
    return 0;
}
