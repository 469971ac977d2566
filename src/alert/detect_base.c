/* SPDX-License-Identifier: MIT */
/*
 * The built-in detectors' pure pieces (least squares, time to a limit, Student's t, plateau,
 * median, a label's value: see detect.h) and the helpers every detector reports through.
 */
#include "alert/detect_base.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/notify.h"
#include "audit/ashrae.h"
#include "collect/nvml.h"
#include "core/clock.h"

/* ---- pure pieces ---- */

int wt_detect_lsq(const double *x, const double *y, size_t n, double *slope, double *intercept)
{
    if (n < 2)
        return -EINVAL;
    /* Centred sums: x values are seconds since an origin that may be large. */
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) {
        mx += x[i] - x[0];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = x[i] - x[0] - mx;
        sxx += dx * dx;
        sxy += dx * (y[i] - my);
    }
    if (!(sxx > 0))
        return -EINVAL;
    *slope = sxy / sxx;
    *intercept = my - *slope * mx;
    return 0;
}

double wt_detect_time_to(double now, double slope, double limit)
{
    if (now >= limit)
        return 0;
    if (!(slope > 0))
        return INFINITY;
    return (limit - now) / slope;
}

double wt_detect_t_quantile(double p, double df)
{
    /* The normal quantile (Abramowitz and Stegun 26.2.23, error under 4.5e-4), then the
     * Cornish-Fisher expansion to Student's t in 1/df (within 1% from df = 3). */
    double q = p < 0.5 ? p : 1 - p;
    double r = sqrt(-2 * log(q));
    double z = r - (2.515517 + 0.802853 * r + 0.010328 * r * r) /
                       (1 + 1.432788 * r + 0.189269 * r * r + 0.001308 * r * r * r);
    if (p < 0.5)
        z = -z;
    if (!(df > 0) || isinf(df))
        return z;
    double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2;
    return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df) +
           (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df * df * df);
}

/* The variance of one whole-degree reading about the true temperature (rounding: 1/12 °C²), the
 * floor of the thirds' scatter below. */
#define PLATEAU_READ_VAR (1.0 / 12)
/* The slowing must exceed this many standard errors of the thirds' steps. */
#define PLATEAU_Z 3.0

int wt_detect_plateau(const double *x, const double *y, size_t n, double *level)
{
    double sum[3] = {0, 0, 0}, sx[3] = {0, 0, 0}, span = n ? x[n - 1] - x[0] : 0;
    size_t cnt[3] = {0, 0, 0};
    if (n < 9 || !(span > 0))
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)(3 * (x[i] - x[0]) / span);
        k = k > 2 ? 2 : k;
        sum[k] += y[i];
        sx[k] += x[i];
        cnt[k]++;
    }
    if (!cnt[0] || !cnt[1] || !cnt[2])
        return -EINVAL;
    double m[3], c[3];
    for (int k = 0; k < 3; k++)
        m[k] = sum[k] / (double)cnt[k], c[k] = sx[k] / (double)cnt[k];
    if (!(c[1] > c[0] && c[2] > c[1]))
        return -EINVAL;
    /* The steps per third of the span, from each third's mean time, not its middle: readings
     * missed in a third (a poll late on a loaded machine) move its mean, and a straight rise
     * read with a gap would look like one slowing down. */
    double u = span / 3, g1 = u / (c[1] - c[0]), g2 = u / (c[2] - c[1]);
    double d1 = (m[1] - m[0]) * g1, d2 = (m[2] - m[1]) * g2;
    /* Rising and clearly slowing: by a fifth at least (integer temperatures make the thirds'
     * steps wobble by a fifth or so), and by more than the steps' own error when the thirds are
     * thin (a few whole-degree readings). */
    double se = sqrt(PLATEAU_READ_VAR * ((1.0 / cnt[0] + 1.0 / cnt[1]) * g1 * g1 +
                                         (1.0 / cnt[1] + 1.0 / cnt[2]) * g2 * g2));
    if (!(d1 > 0) || d2 < 0 || d2 >= 0.8 * d1 || d1 - d2 < PLATEAU_Z * se)
        return -ERANGE;
    double r = d2 / d1;
    *level = m[2] + d2 * r / (1 - r);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double wt_detect_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char *wt_detect_label(const char *labels, const char *key, size_t *len)
{
    size_t kl = strlen(key);
    const char *p = labels;
    /* Pairs are key="value" separated by commas; inside a value a quote is always escaped, so
     * a match at the start or after a comma followed by =" is a key. */
    while ((p = strstr(p, key))) {
        if ((p == labels || p[-1] == ',') && p[kl] == '=' && p[kl + 1] == '"') {
            const char *v = p + kl + 2, *q = v;
            while (*q && *q != '"')
                q += *q == '\\' && q[1] ? 2 : 1;
            if (!*q)
                return NULL;
            *len = (size_t)(q - v);
            return v;
        }
        p += kl;
    }
    return NULL;
}

/* A summary: truncated at the size of struct wt_alert's, on purpose. */
__attribute__((format(printf, 3, 4))) void wt_detect_say(char *s, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, n, fmt, ap);
    va_end(ap);
}

void wt_detect_report(const struct emit *em, enum wt_detector det, const char *labels,
                      enum wt_cond cond, enum wt_severity sev, int64_t for_ns, double value,
                      const char *summary, int gpu)
{
    struct wt_finding f = {.det = det,
                           .labels = labels,
                           .cond = cond,
                           .severity = sev,
                           .for_ns = for_ns,
                           .value = value,
                           .summary = cond == WT_COND_FALSE ? NULL : summary,
                           .gpu = gpu};
    em->fn(em->ctx, &f);
}

void wt_detect_fmt_duration(int64_t ns, char *buf, size_t n)
{
    int64_t s = ns / WT_NS_PER_S;
    if (s >= 3600)
        snprintf(buf, n, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else if (s >= 60)
        snprintf(buf, n, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else
        snprintf(buf, n, "%.1fs", (double)ns / WT_NS_PER_S);
}
