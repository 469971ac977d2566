/* SPDX-License-Identifier: MIT */
/*
 * `wattage assess`'s words for a person (src/cli/assess.c): what to set for a missing layer,
 * spans as "20 s" or "72.0 h", and the assessment section of `assess report` in Markdown and
 * HTML (its JSON stays in assess.c, beside the status it extends).
 */
#ifndef WT_CLI_ASSESS_SECTION_H
#define WT_CLI_ASSESS_SECTION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "audit/assess.h"
#include "audit/report.h"

#define FOUND_LEN 720 /* a checklist line */

/* What to set for a layer that is missing, by layer bit. */
extern const char *const wt_assess_how_to[WT_ASSESS_NLAYERS];

/* A span for a person: "20 s", "45.0 min", "72.0 h". */
struct wt_assess_dur {
    char s[32];
};
struct wt_assess_dur wt_assess_fmt_dur(int64_t ns);

static inline int wt_assess_hours_count(uint32_t m)
{
    return __builtin_popcount(m);
}

/* What `assess status` and `assess report` show of an assessment. */
struct wt_assess_figures {
    int64_t now, to; /* to: min(now, end) */
    unsigned now_layers;
    bool have_now;
    char found[WT_ASSESS_NLAYERS][FOUND_LEN];
    struct wt_assess_cover cv[WT_ASSESS_NLAYERS];
};

struct wt_assess_section {
    const struct wt_assess *a;
    const struct wt_assess_figures *g;
    const struct wt_report_cmp *cmp; /* NULL: the baseline is not over */
    int64_t bend;
};

/* "unfinished: ... so far; ..." or "finished: 20 s" into buf. */
void wt_assess_state_line(const struct wt_assess_section *sc, char *buf, size_t n);
/* The section before the report: the checklist and coverage, the baseline against the rest. */
void wt_assess_section_md(FILE *o, const struct wt_assess_section *sc);
void wt_assess_section_html(FILE *o, const struct wt_assess_section *sc);

#endif
