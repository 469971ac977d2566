/* SPDX-License-Identifier: MIT */
/*
 * A small in-tree test runner. Each test runs in its own process with its own temporary
 * directory (wt_test_dir()); assertions print both sides with file:line. Output is TAP,
 * closed by the plain line "N passed, N failed, N skipped". Under CI=true a skip is a failure.
 */
#ifndef WT_TEST_RUNNER_H
#define WT_TEST_RUNNER_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*wt_test_fn)(void);
void wt_test_register(const char *name, wt_test_fn fn);
const char *wt_test_dir(void);
_Noreturn void wt_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void wt_test_skip(const char *why);
/* Path of a file in the source tree: WATTAGE_SRCDIR, else the directory the runner started in. */
const char *wt_test_src_path(const char *rel);
/*
 * Writes a file whole, through PATH.tmp and a rename, so that a peer reading it sees the old
 * file or the new one; fails the test when it cannot.
 */
void wt_test_write(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reads a whole file, NUL-terminated (the caller frees); *len (may be NULL) gets its size.
 * Fails the test when the file cannot be read. */
char *wt_test_read(const char *path, size_t *len);
/* Path of a file under build/ (the directory tests/run.sh passes as WATTAGE_BUILD). */
const char *wt_test_build_path(const char *rel);

#define WT_TEST(name)                                                                              \
    static void name(void);                                                                        \
    __attribute__((constructor)) static void reg_##name(void)                                      \
    {                                                                                              \
        wt_test_register(#name, name);                                                             \
    }                                                                                              \
    static void name(void)

#define WT_ASSERT(c)                                                                               \
    do {                                                                                           \
        if (!(c))                                                                                  \
            wt_test_fail(__FILE__, __LINE__, "assertion failed: %s", #c);                          \
    } while (0)

#define WT_EQ_INT(a, b)                                                                            \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_)                                                                              \
            wt_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);            \
    } while (0)

#define WT_EQ_U64(a, b)                                                                            \
    do {                                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                           \
        if (a_ != b_)                                                                              \
            wt_test_fail(__FILE__, __LINE__, "%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_); \
    } while (0)

#define WT_EQ_STR(a, b)                                                                            \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                     \
            wt_test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,                 \
                         a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                  \
    } while (0)

#define WT_CONTAINS(hay, needle)                                                                   \
    do {                                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                                    \
        if (!h_ || !strstr(h_, n_))                                                                \
            wt_test_fail(__FILE__, __LINE__, "%s does not contain \"%s\": \"%s\"", #hay, n_,       \
                         h_ ? h_ : "(null)");                                                      \
    } while (0)

/* |a - b| <= tol */
#define WT_NEAR(a, b, tol)                                                                         \
    do {                                                                                           \
        double a_ = (a), b_ = (b), t_ = (tol);                                                     \
        if (!(fabs(a_ - b_) <= t_))                                                                \
            wt_test_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g (tol %.3g)", #a, #b, a_, b_,   \
                         t_);                                                                      \
    } while (0)

#define WT_SKIP(why) wt_test_skip(why)

#endif
