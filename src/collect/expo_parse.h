/* SPDX-License-Identifier: MIT */
/*
 * A parser of scraped Prometheus expositions: text format 0.0.4 and OpenMetrics 1.0.0, over a
 * whole body given as (pointer, length), never NUL-terminated and never read past its length.
 * It hands on families (name, TYPE, HELP, UNIT) and samples (labels decoded, value, optional
 * timestamp) through two callbacks; the caller says per family whether it wants its samples, so
 * a scraper keeping 20 of 300 series pays no decoding for the rest. Nothing is allocated per
 * sample: the parser owns a few buffers for the whole body.
 */
#ifndef WT_EXPO_PARSE_H
#define WT_EXPO_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* The two syntaxes. OpenMetrics is stricter: "# EOF" last, no other comments, no blank lines. */
enum wt_expo_parse_fmt { WT_EXPO_PARSE_TEXT, WT_EXPO_PARSE_OPENMETRICS };

/* A family's TYPE; UNTYPED when none was given (0.0.4's "untyped", OpenMetrics' "unknown"). */
enum wt_expo_parse_type {
    WT_EXPO_PARSE_UNTYPED,
    WT_EXPO_PARSE_COUNTER,
    WT_EXPO_PARSE_GAUGE,
    WT_EXPO_PARSE_HISTOGRAM,
    WT_EXPO_PARSE_GAUGEHISTOGRAM,
    WT_EXPO_PARSE_SUMMARY,
    WT_EXPO_PARSE_INFO,
    WT_EXPO_PARSE_STATESET,
};

/* What a sample's name adds to its family's name. */
enum wt_expo_parse_suffix {
    WT_EXPO_PARSE_SFX_NONE,
    WT_EXPO_PARSE_SFX_TOTAL,
    WT_EXPO_PARSE_SFX_CREATED,
    WT_EXPO_PARSE_SFX_BUCKET,
    WT_EXPO_PARSE_SFX_COUNT,
    WT_EXPO_PARSE_SFX_SUM,
    WT_EXPO_PARSE_SFX_GCOUNT,
    WT_EXPO_PARSE_SFX_GSUM,
    WT_EXPO_PARSE_SFX_INFO,
};

/*
 * A family. name points into the body (not terminated: use name_len). help and unit are
 * decoded, terminated strings ("" when absent) valid during the callback only.
 */
struct wt_expo_parse_family {
    const char *name;
    size_t name_len;
    enum wt_expo_parse_type type;
    const char *help;
    const char *unit;
    bool has_type, has_help, has_unit;
};

/* A label: name and value as byte strings, not terminated; the value is decoded (\\ \" \n). */
struct wt_expo_parse_label {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

/*
 * A sample, valid during the callback only. name is the whole sample name (family name plus
 * suffix). le is the value of the "le" label of a histogram bucket (NAN when absent or not a
 * number in text 0.0.4; OpenMetrics rejects both), quantile the same for a summary's quantile.
 * A timestamp (0.0.4: integer milliseconds; OpenMetrics: seconds, may be fractional) is given in
 * nanoseconds since the epoch. An OpenMetrics exemplar is checked and not handed on.
 */
struct wt_expo_parse_sample {
    const char *name;
    size_t name_len;
    enum wt_expo_parse_suffix suffix;
    const struct wt_expo_parse_label *labels;
    size_t n_labels;
    double value;
    double le;
    double quantile;
    bool has_t;
    int64_t t_ns;
    size_t line;
};

/* Limits on what a scrape may hold; 0 takes the default. */
#define WT_EXPO_PARSE_MAX_BODY (16u << 20)
#define WT_EXPO_PARSE_MAX_SERIES 100000u
#define WT_EXPO_PARSE_MAX_LABELS 64u
#define WT_EXPO_PARSE_MAX_FAMILIES 20000u
/* max_labels above this is taken as this (the label array is allocated once, whole). */
#define WT_EXPO_PARSE_LABELS_CAP 4096u

/*
 * family: called once per family, after its metadata lines and before its first sample (or at
 * the next family when it has none); returns whether the caller wants its samples. NULL: all.
 * sample: called per sample of a wanted family; returns 0 to go on or a negative errno, which
 * stops the parse and is returned as is (err gets "line N: stopped by the caller").
 */
struct wt_expo_parse_opts {
    enum wt_expo_parse_fmt fmt;
    size_t max_body, max_series, max_labels, max_families;
    bool (*family)(void *ctx, const struct wt_expo_parse_family *f);
    int (*sample)(void *ctx, const struct wt_expo_parse_family *f,
                  const struct wt_expo_parse_sample *s);
    void *ctx;
};

/*
 * Parses body[0..len) whole. A text body's last line must end in a newline (a body cut short
 * is an error, not a smaller value); an OpenMetrics body must end with "# EOF". Returns 0; -EINVAL
 * with err naming the line and what is wrong
 * ("line 12: label value: unterminated string"), or a limit ("body: 20000000 bytes, more than
 * the limit of 16777216"); -ENOMEM; or what the sample callback returned. Samples before an
 * error have been handed on: a caller that must not use a partial scrape discards them.
 */
int wt_expo_parse(const char *body, size_t len, const struct wt_expo_parse_opts *o,
                  struct wt_err *err) WT_MUST_USE;

/*
 * The syntax a Content-Type header announces: OpenMetrics for application/openmetrics-text,
 * text for everything else (NULL included).
 */
enum wt_expo_parse_fmt wt_expo_parse_fmt_of(const char *content_type);

/* True when the family's name is the n bytes at s. */
bool wt_expo_parse_family_is(const struct wt_expo_parse_family *f, const char *s, size_t n);

/* The value of the label named name in s, or NULL (and *len untouched). */
const char *wt_expo_parse_label(const struct wt_expo_parse_sample *s, const char *name,
                                size_t *len);

/* The keyword of a type ("counter", "untyped"...). */
const char *wt_expo_parse_type_name(enum wt_expo_parse_type t);

#endif
