/* SPDX-License-Identifier: MIT */
/*
 * The exposition families every layer fills for /metrics (serve/expo.h renders them): plain types
 * in core, so that alert/ and audit/ fill a family without including serve/.
 */
#ifndef WT_FAMILY_H
#define WT_FAMILY_H

#include <stddef.h>

#include "core/reading.h"

/*
 * A family from outside wt_metrics[] (one the hub does not hold, e.g. the running jobs' energy):
 * name (text-format name; a counter's ends in _total), help and type static, s[0..n) its
 * samples (labels canonical and escaped as in a reading).
 */
struct wt_expo_sample {
    char labels[WT_LABELS_LEN];
    double value;
};

struct wt_expo_family {
    const char *name;
    const char *help;
    enum wt_metric_type type;
    struct wt_expo_sample *s;
    size_t n;
};

#endif
