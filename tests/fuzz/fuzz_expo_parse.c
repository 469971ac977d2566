/* SPDX-License-Identifier: MIT */
/*
 * Scraped expositions: wt_expo_parse in both syntaxes over the exact bytes (ASan sees a read past
 * the end). What it hands on must hold: names and labels of the allowed characters, a filter
 * that keeps nothing gives the same verdict and message as one that keeps everything, and a
 * text body re-written from the samples (canonical escapes, no metadata) parses to the same
 * samples again. The buckets seen go through wt_hist_quantile: an answer lies within the bounds.
 * Seeds: the field notes' vLLM and SGLang bodies and hand-made OpenMetrics (tests/fuzz/seeds.sh).
 */
#include "collect/expo_parse.h"
#include "collect/hist_quantile.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    return 0;
}

struct out {
    char *p;
    size_t len, cap;
    bool keep;
    struct wt_hist_bucket b[64];
    size_t nb;
};

static void add(struct out *o, const char *s, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        size_t cap = (o->len + n + 1) * 2;
        char *p = realloc(o->p, cap);
        FUZZ_CHECK(p != NULL);
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static bool name_char(char c, bool first, bool colon)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
           (!first && c >= '0' && c <= '9');
}

static bool keep_all(void *ctx, const struct wt_expo_parse_family *f)
{
    struct out *o = ctx;
    FUZZ_CHECK(f->name_len > 0 && f->help && f->unit);
    return o->keep;
}

/* Writes the sample as canonical 0.0.4: name{l="v",...} value, escapes \\ \" \n. */
static int on_sample(void *ctx, const struct wt_expo_parse_family *f,
                     const struct wt_expo_parse_sample *s)
{
    struct out *o = ctx;
    FUZZ_CHECK(s->name_len >= f->name_len && memcmp(s->name, f->name, f->name_len) == 0);
    for (size_t i = 0; i < s->name_len; i++)
        FUZZ_CHECK(name_char(s->name[i], i == 0, true));
    add(o, s->name, s->name_len);
    add(o, "{", 1);
    for (size_t i = 0; i < s->n_labels; i++) {
        const struct wt_expo_parse_label *l = &s->labels[i];
        FUZZ_CHECK(l->name_len > 0);
        for (size_t k = 0; k < l->name_len; k++)
            FUZZ_CHECK(name_char(l->name[k], k == 0, false));
        if (i)
            add(o, ",", 1);
        add(o, l->name, l->name_len);
        add(o, "=\"", 2);
        for (size_t k = 0; k < l->value_len; k++) {
            char c = l->value[k];
            if (c == '\\' || c == '"')
                add(o, "\\", 1);
            if (c == '\n')
                add(o, "\\n", 2);
            else
                add(o, &c, 1);
        }
        add(o, "\"", 1);
    }
    char v[40];
    if (isnan(s->value))
        snprintf(v, sizeof v, "} NaN\n");
    else if (isinf(s->value))
        snprintf(v, sizeof v, "} %sInf\n", s->value > 0 ? "+" : "-");
    else
        snprintf(v, sizeof v, "} %.17g\n", s->value);
    add(o, v, strlen(v));
    if (s->suffix == WT_EXPO_PARSE_SFX_BUCKET && o->nb < 64) {
        o->b[o->nb].le = s->le;
        o->b[o->nb].count = s->value;
        o->nb++;
    }
    return 0;
}

static void check_quantile(struct out *o)
{
    if (o->nb == 0)
        return;
    double lo = 0, hi = -INFINITY;
    for (size_t i = 0; i < o->nb; i++) {
        double le = o->b[i].le, c = o->b[i].count;
        if (isnan(le) || !isfinite(c) || c < 0 || c > 1e300 || (isinf(le) && le < 0))
            return;
        if (le < lo)
            lo = le;
        if (isfinite(le) && le > hi)
            hi = le;
    }
    static const double qs[] = {0, 0.25, 0.5, 0.9, 0.99, 1};
    for (size_t k = 0; k < sizeof qs / sizeof qs[0]; k++) {
        struct wt_hist_bucket b[64];
        memcpy(b, o->b, o->nb * sizeof *b);
        double r = wt_hist_quantile(qs[k], b, o->nb);
        if (isnan(r))
            continue;
        double tol = 1e-9 * (fabs(lo) + fabs(hi) + 1);
        if (!(r >= lo - tol && r <= hi + tol)) {
            fprintf(stderr, "q %g: %.17g outside [%.17g, %.17g]\n", qs[k], r, lo, hi);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const enum wt_expo_parse_fmt fmts[] = {WT_EXPO_PARSE_TEXT, WT_EXPO_PARSE_OPENMETRICS};
    for (size_t i = 0; i < 2; i++) {
        struct out all = {.keep = true}, none = {.keep = false};
        struct wt_err e1 = {{0}}, e2 = {{0}};
        struct wt_expo_parse_opts o = {.fmt = fmts[i], .family = keep_all, .sample = on_sample};
        o.ctx = &all;
        int rc = wt_expo_parse((const char *)data, size, &o, &e1);
        fuzz_check_err(&e1);
        o.ctx = &none;
        int rc2 = wt_expo_parse((const char *)data, size, &o, &e2);
        fuzz_check_err(&e2);
        FUZZ_CHECK(rc == rc2 && strcmp(e1.msg, e2.msg) == 0);
        FUZZ_CHECK(none.len == 0);
        FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
        FUZZ_CHECK(rc == 0 || strlen(e1.msg) > 0);
        if (rc == 0) {
            check_quantile(&all);
            /* The samples re-written parse again to the very same samples. */
            struct out again = {.keep = true};
            struct wt_err e3 = {{0}};
            struct wt_expo_parse_opts t = {.family = keep_all, .sample = on_sample, .ctx = &again};
            char *copy = malloc(all.len ? all.len : 1);
            FUZZ_CHECK(copy != NULL);
            if (all.len)
                memcpy(copy, all.p, all.len);
            int rc3 = wt_expo_parse(copy, all.len, &t, &e3);
            if (rc3 != 0) {
                fprintf(stderr, "re-parse: %s\n%s", e3.msg, all.p);
                abort();
            }
            FUZZ_CHECK(again.len == all.len &&
                       (all.len == 0 || memcmp(again.p, all.p, all.len) == 0));
            free(copy);
            free(again.p);
        }
        free(all.p);
        free(none.p);
    }
    return 0;
}
