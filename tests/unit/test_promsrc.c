/* SPDX-License-Identifier: MIT */
/*
 * The query API's answer parsed without a tree (wt_promsrc_parse): a matrix and a vector into
 * series by node, name and labels, escapes decoded, keys in any order (samples before the
 * labels), unknown keys of any shape skipped, an error answer, isPartial, and answers cut short
 * or malformed refused with the byte where they went wrong. /api/v1/series' answer (the label
 * sets alone) adds series without points, the same series a query's answer fills, and
 * /api/v1/label/node/values' answer (strings) a series per node; an answer's
 * "warnings" (an engine that cut it short) are handed on.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"
#include "store/promsrc.h"
#include "store/promsrc_int.h"

static int parse(const char *s, struct wt_promsrc_set *set, struct wt_promsrc_answer *a, size_t *at)
{
    return wt_promsrc_parse(s, strlen(s), set, a, at);
}

static const struct wt_promsrc_series *find(const struct wt_promsrc_set *set, const char *node,
                                            const char *labels)
{
    for (size_t i = 0; i < set->n; i++) {
        if (!strcmp(set->s[i].node, node) && !strcmp(set->s[i].labels, labels))
            return &set->s[i];
    }
    return NULL;
}

WT_TEST(a_matrix_goes_into_series_by_node_name_and_labels)
{
    static const char in[] =
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
        "{\"metric\":{\"__name__\":\"wattage_gpu_energy_joules_total\",\"node\":\"n1\","
        "\"gpu\":\"0\",\"uuid\":\"GPU-a\"},\"values\":[[1700000000,\"10\"],[1700000001.5,"
        "\"12.25\"]]},\n  {\"metric\":{\"__name__\":\"wattage_gpu_energy_joules_total\","
        "\"node\":\"n2\",\"gpu\":\"0\",\"uuid\":\"GPU-b\"},\"values\":[[1700000000.001,\"NaN\"],"
        "[1700000002,\"+Inf\"],[1700000003,\"x\"]]}]},\"stats\":{\"seriesFetched\":\"2\"}}";
    struct wt_promsrc_set set = {0};
    struct wt_promsrc_answer a;
    size_t at = 0;
    WT_EQ_INT(parse(in, &set, &a, &at), 0);
    WT_EQ_STR(a.status, "success");
    WT_ASSERT(!a.partial);
    WT_EQ_U64(set.n, 2);
    const struct wt_promsrc_series *s = find(&set, "n1", "gpu=\"0\",uuid=\"GPU-a\"");
    WT_ASSERT(s != NULL);
    WT_EQ_STR(s->metric, "wattage_gpu_energy_joules_total");
    WT_EQ_U64(s->n, 2);
    WT_EQ_INT(s->pts[0].t_ns, 1700000000LL * 1000000000);
    WT_EQ_INT(s->pts[1].t_ns, 1700000001500LL * 1000000);
    WT_ASSERT(s->pts[1].v == 12.25);
    /* "x" is no number: that sample is skipped; NaN and +Inf are numbers */
    s = find(&set, "n2", "gpu=\"0\",uuid=\"GPU-b\"");
    WT_ASSERT(s != NULL);
    WT_EQ_U64(s->n, 2);
    WT_EQ_INT(s->pts[0].t_ns, 1700000000001LL * 1000000);
    WT_ASSERT(s->pts[0].v != s->pts[0].v);
    /* a second answer for the same series merges in time order, a sample met twice once */
    static const char more[] =
        "{\"status\":\"success\",\"data\":{\"result\":[{\"values\":[[1700000001.5,\"12.25\"],"
        "[1699999999,\"9\"]],\"metric\":{\"gpu\":\"0\",\"node\":\"n1\",\"uuid\":\"GPU-a\","
        "\"__name__\":\"wattage_gpu_energy_joules_total\"}}]}}";
    WT_EQ_INT(parse(more, &set, &a, &at), 0);
    WT_EQ_U64(set.n, 2);
    s = find(&set, "n1", "gpu=\"0\",uuid=\"GPU-a\"");
    WT_EQ_U64(s->n, 3);
    WT_ASSERT(s->pts[0].v == 9 && s->pts[1].v == 10 && s->pts[2].v == 12.25);
    wt_promsrc_set_free(&set);
}

WT_TEST(a_vector_with_escapes_and_unknown_keys_of_any_shape)
{
    static const char in[] =
        "{\"warnings\":[\"a\",{\"x\":[1,2,{\"y\":null}]}],\"status\":\"success\","
        "\"isPartial\":false,\"data\":{\"result\":[{\"value\":[1700000000,\"5\"],\"extra\":"
        "{\"k\":[true,false,null,-1.5e3]},\"metric\":{\"__name__\":\"m\",\"node\":\"n\\\"1\","
        "\"job\":\"caf\\u00e9 \\ud83d\\ude00\\n\\/\"}}]}}";
    struct wt_promsrc_set set = {0};
    struct wt_promsrc_answer a;
    size_t at = 0;
    WT_EQ_INT(parse(in, &set, &a, &at), 0);
    WT_EQ_U64(set.n, 1);
    WT_EQ_STR(set.s[0].node, "n\"1");
    WT_EQ_STR(set.s[0].metric, "m");
    /* the job label decoded to UTF-8 (é, U+1F600 from its surrogate pair), then stored in the
     * store's canonical label form */
    char want[64];
    WT_ASSERT(wt_labels(want, sizeof want, "job", "caf\xc3\xa9 \xf0\x9f\x98\x80\n/", NULL) == 0);
    WT_EQ_STR(set.s[0].labels, want);
    WT_EQ_U64(set.s[0].n, 1);
    WT_ASSERT(set.s[0].pts[0].v == 5);
    wt_promsrc_set_free(&set);
}

WT_TEST(an_error_answer_and_a_partial_one_are_said)
{
    struct wt_promsrc_set set = {0};
    struct wt_promsrc_answer a;
    size_t at = 0;
    WT_EQ_INT(
        parse("{\"status\":\"error\",\"errorType\":\"422\",\"error\":\"too many \\\"samples\\\"\"}",
              &set, &a, &at),
        0);
    WT_EQ_STR(a.status, "error");
    WT_EQ_STR(a.error, "too many \"samples\"");
    WT_EQ_INT(parse("{\"status\":\"success\",\"isPartial\":true,\"data\":{\"result\":[]}}", &set,
                    &a, &at),
              0);
    WT_ASSERT(a.partial);
    WT_EQ_U64(set.n, 0);
    wt_promsrc_set_free(&set);
}

WT_TEST(a_series_answer_lists_series_that_a_query_answer_fills)
{
    struct wt_promsrc_set set = {0};
    struct wt_promsrc_answer a;
    size_t at = 0;
    WT_EQ_INT(parse("{\"status\":\"success\",\"data\":[{\"__name__\":\"e_joules_total\","
                    "\"node\":\"n1\",\"gpu\":\"0\"},{\"gpu\":\"1\",\"node\":\"n1\","
                    "\"__name__\":\"e_joules_total\"},{\"node\":\"n\\\"2\",\"__name__\":\"x\"}]}",
                    &set, &a, &at),
              0);
    WT_EQ_STR(a.status, "success");
    WT_EQ_U64(set.n, 3);
    const struct wt_promsrc_series *g1 = find(&set, "n1", "gpu=\"1\"");
    WT_ASSERT(g1 != NULL);
    WT_EQ_U64(g1->n, 0);
    WT_EQ_STR(g1->metric, "e_joules_total");
    WT_ASSERT(find(&set, "n\"2", "") != NULL);
    /* a query's answer for the same series fills it: no second series */
    WT_EQ_INT(parse("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                    "{\"metric\":{\"gpu\":\"1\",\"__name__\":\"e_joules_total\",\"node\":\"n1\"},"
                    "\"values\":[[10,\"1\"],[11,\"2\"]]}]}}",
                    &set, &a, &at),
              0);
    WT_EQ_U64(set.n, 3);
    g1 = find(&set, "n1", "gpu=\"1\"");
    WT_EQ_U64(g1->n, 2);
    WT_EQ_INT(parse("{\"status\":\"success\",\"data\":[{\"node\":1}]}", &set, &a, &at), -EINVAL);
    WT_EQ_INT(parse("{\"status\":\"success\",\"data\":[{\"node\":\"a\"}", &set, &a, &at), -EINVAL);
    wt_promsrc_set_free(&set);
}

WT_TEST(a_label_values_answer_lists_each_value_as_a_node)
{
    struct wt_promsrc_set set = {0};
    struct wt_promsrc_answer a;
    size_t at = 0;
    WT_EQ_INT(parse("{\"status\":\"success\",\"data\":[\"n1\", \"rack(3)+x\",\"n\\\"2\",\"n1\"]}",
                    &set, &a, &at),
              0);
    WT_EQ_STR(a.status, "success");
    WT_EQ_U64(set.n, 3); /* a value met twice: one node */
    WT_ASSERT(find(&set, "n1", "") != NULL);
    WT_ASSERT(find(&set, "rack(3)+x", "") != NULL);
    WT_ASSERT(find(&set, "n\"2", "") != NULL);
    WT_EQ_STR(find(&set, "n1", "")->metric, "");
    WT_EQ_U64(find(&set, "n1", "")->n, 0);
    WT_EQ_INT(parse("{\"status\":\"success\",\"data\":[\"a\",1]}", &set, &a, &at), -EINVAL);
    WT_EQ_INT(parse("{\"status\":\"success\",\"data\":[\"a\"", &set, &a, &at), -EINVAL);
    wt_promsrc_set_free(&set);
}

WT_TEST(an_answers_warnings_are_handed_on)
{
    struct wt_promsrc_set set = {0};
    struct wt_promsrc_answer a;
    size_t at = 0;
    char w[24] = "stale";
    static const char cut[] =
        "{\"status\":\"success\",\"warnings\":[\"results truncated due to limit\",\"2nd\"],"
        "\"data\":{\"result\":[]}}";
    WT_EQ_INT(wt_promsrc_parse_warned(cut, strlen(cut), &set, &a, &at, w, sizeof w), 0);
    WT_EQ_STR(w, "results truncated due t"); /* the first, cut to fit */
    static const char none[] = "{\"status\":\"success\",\"warnings\":[],\"data\":{}}";
    WT_EQ_INT(wt_promsrc_parse_warned(none, strlen(none), &set, &a, &at, w, sizeof w), 0);
    WT_EQ_STR(w, "");
    static const char odd[] = "{\"warnings\":[{\"x\":1}],\"status\":\"success\"}";
    WT_EQ_INT(wt_promsrc_parse_warned(odd, strlen(odd), &set, &a, &at, w, sizeof w), 0);
    WT_ASSERT(w[0] != '\0');
    /* wt_promsrc_parse reads past them */
    WT_EQ_INT(parse(cut, &set, &a, &at), 0);
    WT_EQ_STR(a.status, "success");
    wt_promsrc_set_free(&set);
}

WT_TEST(answers_cut_short_or_malformed_are_refused_with_the_byte)
{
    static const char whole[] =
        "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":{\"node\":\"a\"},"
        "\"values\":[[1,\"2\"],[3,\"4\"]]}]}}";
    struct wt_promsrc_answer a;
    size_t at = 0;
    /* every prefix of a good answer is refused, at or before its end */
    for (size_t n = 0; n < sizeof whole - 1; n++) {
        char buf[sizeof whole];
        memcpy(buf, whole, n);
        buf[n] = '\0';
        struct wt_promsrc_set set = {0};
        WT_EQ_INT(wt_promsrc_parse(buf, n, &set, &a, &at), -EINVAL);
        WT_ASSERT(at <= n);
        wt_promsrc_set_free(&set);
    }
    static const char *const bad[] = {
        "[]",
        "{\"status\":\"success\"} trailing",
        "{\"status\":\"success\",}",
        "{\"data\":{\"result\":[{\"metric\":{\"node\":1}}]}}",
        "{\"data\":{\"result\":[{\"metric\":{},\"values\":[[1,2]]}]}}",
        "{\"s\":\"bad \\x escape\"}",
        "{\"s\":\"\\ud800 lone surrogate\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct wt_promsrc_set set = {0};
        WT_EQ_INT(parse(bad[i], &set, &a, &at), -EINVAL);
        wt_promsrc_set_free(&set);
    }
    /* nesting deeper than the parser follows */
    char deep[300];
    size_t k = (size_t)snprintf(deep, sizeof deep, "{\"x\":");
    for (int i = 0; i < 100; i++)
        deep[k++] = '[';
    deep[k] = '\0';
    struct wt_promsrc_set set = {0};
    WT_EQ_INT(parse(deep, &set, &a, &at), -EINVAL);
    WT_ASSERT(at < k);
    wt_promsrc_set_free(&set);
}

/* Values and stamps the parser reads the fast way (a plain decimal: one exact division) or with
 * strtod (an exponent, hex, more digits than a double holds exactly, signs and forms strtod
 * takes): each the very double strtod gives, -0 included. */
WT_TEST(numbers_are_the_doubles_strtod_gives)
{
    static const char *const fixed[] = {"0",
                                        "-0",
                                        "0.1",
                                        "5.",
                                        ".5",
                                        "+12",
                                        "12abc",
                                        "1e3",
                                        "0x10",
                                        "-2.5",
                                        "1.7976931348623157",
                                        "9007199254740993",
                                        "9007199254740992",
                                        "0.30000000000000004",
                                        "123456.789012345678901234",
                                        "0.0000000000000000000001",
                                        "00012.50",
                                        "NaN"};
    enum { N = 3000 };
    static char vals[N][40];
    size_t nf = sizeof fixed / sizeof fixed[0];
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        if (i < nf) {
            snprintf(vals[i], sizeof vals[i], "%s", fixed[i]);
            continue;
        }
        uint64_t m = x >> (x % 24); /* 40 to 64 bits: about and beyond 2^53 */
        int point = (int)(x >> 58) % 26;
        char d[32];
        int len = snprintf(d, sizeof d, "%llu", (unsigned long long)m);
        if (point >= len)
            snprintf(vals[i], sizeof vals[i], "%s0.%0*d%s", i / 7 % 2 ? "" : "-", point - len, 0,
                     d);
        else
            snprintf(vals[i], sizeof vals[i], "%s%.*s.%s", i / 7 % 2 ? "" : "-", len - point, d,
                     d + len - point);
    }
    size_t cap = (size_t)N * 80 + 256, off = 0;
    char *in = malloc(cap);
    WT_ASSERT(in != NULL);
    off += (size_t)snprintf(in, cap,
                            "{\"status\":\"success\",\"data\":{\"result\":[{\"metric\":"
                            "{\"__name__\":\"m\",\"node\":\"n\"},\"values\":[");
    for (size_t i = 0; i < N; i++)
        off += (size_t)snprintf(in + off, cap - off, "%s[%zu.%03zu%s,\"%s\"]", i ? "," : "",
                                1700000000 + i / 1000, i % 1000, i % 4 == 1 ? "0" : "", vals[i]);
    snprintf(in + off, cap - off, "]}]}}");
    struct wt_promsrc_set set = {0};
    struct wt_promsrc_answer a;
    size_t at = 0;
    WT_EQ_INT(parse(in, &set, &a, &at), 0);
    WT_EQ_U64(set.n, 1);
    WT_EQ_U64(set.s[0].n, N);
    for (size_t i = 0; i < N; i++) {
        const struct wt_point *p = &set.s[0].pts[i];
        char ts[32];
        snprintf(ts, sizeof ts, "%zu.%03zu", 1700000000 + i / 1000, i % 1000);
        double want = strtod(vals[i], NULL);
        WT_EQ_INT(p->t_ns, llround(strtod(ts, NULL) * 1e3) * 1000000);
        if (want != want)
            WT_ASSERT(p->v != p->v);
        else if (memcmp(&p->v, &want, sizeof want) != 0)
            WT_EQ_STR(vals[i], "parsed as strtod does");
    }
    wt_promsrc_set_free(&set);
    free(in);
}
