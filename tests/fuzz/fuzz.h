/* SPDX-License-Identifier: MIT */
/*
 * What every libFuzzer harness of tests/fuzz/ shares: the entry points libFuzzer calls (declared
 * here for -Wmissing-prototypes), a quiet log, and the checks on what a parser hands on. A
 * harness aborts (a crash libFuzzer keeps) when a parser's output breaks its header's promise:
 * an error message without its terminator, a reading that is not a finite number, a counter that
 * goes backwards between two polls of the same state.
 */
#ifndef WT_FUZZ_H
#define WT_FUZZ_H

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/log.h"
#include "core/reading.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond);          \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Log only errors: a log line per input would be most of the time spent. */
static inline void fuzz_quiet(void)
{
    wt_log_set_level(WT_LOG_ERROR);
}

/* A NUL-terminated copy of the input (the caller frees), for parsers that read C strings. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    FUZZ_CHECK(s != NULL);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* An error message is a terminated string of printable length. */
static inline void fuzz_check_err(const struct wt_err *err)
{
    FUZZ_CHECK(memchr(err->msg, '\0', sizeof err->msg) != NULL);
}

/* Every reading is a finite number with terminated labels and a known metric. */
static inline void fuzz_check_batch(const struct wt_batch *b)
{
    for (size_t i = 0; i < b->len; i++) {
        FUZZ_CHECK(isfinite(b->r[i].value));
        FUZZ_CHECK(memchr(b->r[i].labels, '\0', sizeof b->r[i].labels) != NULL);
        FUZZ_CHECK(b->r[i].metric < WT_M_COUNT);
    }
}

/*
 * Energy totals (the metric given) of poll b never fall below the same series in poll a: a
 * counter that resets or wraps is a new baseline, never a step down.
 */
static inline void fuzz_check_monotone(const struct wt_batch *a, const struct wt_batch *b,
                                       int metric)
{
    for (size_t i = 0; i < b->len; i++) {
        if (b->r[i].metric != metric)
            continue;
        for (size_t k = 0; k < a->len; k++) {
            if (a->r[k].metric == metric && strcmp(a->r[k].labels, b->r[i].labels) == 0) {
                if (b->r[i].value < a->r[k].value) {
                    fprintf(stderr, "counter %s went from %.17g to %.17g\n", b->r[i].labels,
                            a->r[k].value, b->r[i].value);
                    abort();
                }
                break;
            }
        }
    }
}

#endif
