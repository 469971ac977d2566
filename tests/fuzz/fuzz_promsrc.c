/* SPDX-License-Identifier: MIT */
/*
 * The query API's answers as an engine sends them to `--source`: wt_promsrc_parse (the parser
 * without a tree, src/store/promsrc.c) on any bytes. What it hands on must keep the header's
 * promise: on success every series' samples in strictly increasing time, status and error
 * terminated; on failure the byte it names inside the input. The same input parsed twice into one
 * set (two answers of one series merged) keeps the samples in order and adds none twice.
 */
#include "fuzz.h"
#include "store/promsrc.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

static void check_set(const struct wt_promsrc_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        const struct wt_promsrc_series *s = &set->s[i];
        FUZZ_CHECK(s->n <= s->cap);
        FUZZ_CHECK(memchr(s->node, '\0', sizeof s->node) != NULL);
        FUZZ_CHECK(memchr(s->metric, '\0', sizeof s->metric) != NULL);
        FUZZ_CHECK(memchr(s->labels, '\0', sizeof s->labels) != NULL);
        for (size_t k = 1; k < s->n; k++)
            FUZZ_CHECK(s->pts[k - 1].t_ns < s->pts[k].t_ns);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    struct wt_promsrc_set set = {0};
    struct wt_promsrc_answer a;
    size_t at = 0;
    int rc = wt_promsrc_parse(buf, size, &set, &a, &at);
    FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
    if (rc == -EINVAL)
        FUZZ_CHECK(at <= size);
    if (rc == 0) {
        FUZZ_CHECK(memchr(a.status, '\0', sizeof a.status) != NULL);
        FUZZ_CHECK(memchr(a.error, '\0', sizeof a.error) != NULL);
        check_set(&set);
        size_t n = set.n, pts = 0;
        for (size_t i = 0; i < set.n; i++)
            pts += set.s[i].n;
        FUZZ_CHECK(wt_promsrc_parse(buf, size, &set, &a, &at) == 0);
        check_set(&set);
        size_t again = 0;
        for (size_t i = 0; i < set.n; i++)
            again += set.s[i].n;
        FUZZ_CHECK(set.n == n && again == pts);
    }
    wt_promsrc_set_free(&set);
    free(buf);
    return 0;
}
