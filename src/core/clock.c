/* SPDX-License-Identifier: MIT */
/*
 * Clocks and the text forms of time: RFC 3339 stamps, unix seconds, relative times ("-2h") and
 * durations ("500ms", "7d", "1h30m").
 */
#include "core/clock.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * WT_NS_PER_S + ts.tv_nsec;
}

int64_t wt_now_real_ns(void)
{
    return now_ns(CLOCK_REALTIME);
}

int64_t wt_now_mono_ns(void)
{
    return now_ns(CLOCK_MONOTONIC);
}

int wt_sleep_until_mono(int64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = deadline_ns / WT_NS_PER_S,
                          .tv_nsec = deadline_ns % WT_NS_PER_S};
    int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    return rc == 0 ? 0 : -rc;
}

void wt_time_format(int64_t t_ns, int frac_ms, char *buf, size_t n)
{
    time_t s = (time_t)(t_ns / WT_NS_PER_S);
    int64_t rem = t_ns % WT_NS_PER_S;
    if (rem < 0) {
        rem += WT_NS_PER_S;
        s--;
    }
    struct tm tm;
    gmtime_r(&s, &tm);
    if (frac_ms)
        snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(rem / WT_NS_PER_MS));
    else
        snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Reads exactly `digits` digits from *p. */
static int take_digits(const char **p, int digits, int *out)
{
    int v = 0;
    for (int i = 0; i < digits; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return -EINVAL;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += digits;
    *out = v;
    return 0;
}

/* Reads an optional ".123456789" fraction as nanoseconds. */
static int64_t take_fraction(const char **p)
{
    int64_t ns = 0, scale = WT_NS_PER_S / 10;
    if (**p != '.' && **p != ',')
        return 0;
    (*p)++;
    while (isdigit((unsigned char)**p)) {
        ns += (**p - '0') * scale;
        scale /= 10;
        (*p)++;
    }
    return ns;
}

static int parse_rfc3339(const char *s, int64_t *out)
{
    const char *p = s;
    int y, mo, d, h = 0, mi = 0, sec = 0;
    if (take_digits(&p, 4, &y) || *p++ != '-' || take_digits(&p, 2, &mo) || *p++ != '-' ||
        take_digits(&p, 2, &d))
        return -EINVAL;
    int64_t frac = 0, offset_s = 0;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (take_digits(&p, 2, &h) || *p++ != ':' || take_digits(&p, 2, &mi))
            return -EINVAL;
        if (*p == ':') {
            p++;
            if (take_digits(&p, 2, &sec))
                return -EINVAL;
            frac = take_fraction(&p);
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1, oh, om;
            if (take_digits(&p, 2, &oh))
                return -EINVAL;
            if (*p == ':')
                p++;
            if (take_digits(&p, 2, &om))
                return -EINVAL;
            offset_s = sign * (oh * 3600 + om * 60);
        } else {
            return -EINVAL; /* a time without a zone is ambiguous */
        }
    }
    if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -EINVAL;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    /* Nanoseconds in 64 bits reach from 1677 to 2262: a year 0001 or 9999 is out of range. */
    int64_t ns;
    if (__builtin_mul_overflow((int64_t)t - offset_s, WT_NS_PER_S, &ns) ||
        __builtin_add_overflow(ns, frac, out))
        return -EINVAL;
    return 0;
}

/* Parses "<number><unit>" sequences; unit is required unless allow_bare. */
static int parse_units(const char *s, int allow_bare, int64_t *out)
{
    static const struct {
        const char *u;
        double ns;
    } units[] = {{"ns", 1},   {"us", 1e3},   {"ms", 1e6},    {"s", 1e9},
                 {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}, {"w", 604800e9}};
    const char *p = s;
    double total = 0;
    if (!*p)
        return -EINVAL;
    while (*p) {
        /* Plain decimal digits only: no sign, exponent, hex, nan or inf. */
        const char *q = p;
        int dots = 0;
        while (isdigit((unsigned char)*q) || (*q == '.' && dots++ == 0))
            q++;
        if (q == p || (q == p + 1 && *p == '.'))
            return -EINVAL;
        char num[64];
        if ((size_t)(q - p) >= sizeof num)
            return -EINVAL;
        memcpy(num, p, (size_t)(q - p));
        num[q - p] = '\0';
        double v = strtod(num, NULL);
        p = q;
        if (!*p && allow_bare && p != s && total == 0) {
            total = v * 1e9;
            break;
        }
        size_t best = 0;
        double mult = 0;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
            size_t l = strlen(units[i].u);
            if (strncmp(p, units[i].u, l) == 0 && l > best && !isalpha((unsigned char)p[l])) {
                best = l;
                mult = units[i].ns;
            }
        }
        if (!best)
            return -EINVAL;
        total += v * mult;
        p += best;
    }
    if (total > 9.2e18)
        return -ERANGE;
    *out = (int64_t)(total + 0.5);
    return 0;
}

int wt_duration_parse(const char *s, int64_t *out_ns)
{
    int64_t v;
    if (!s || parse_units(s, 1, &v) || v <= 0)
        return -EINVAL;
    *out_ns = v;
    return 0;
}

int wt_time_parse(const char *s, int64_t now_ns, int64_t *out_ns)
{
    if (!s || !*s)
        return -EINVAL;
    if (strcmp(s, "now") == 0) {
        *out_ns = now_ns;
        return 0;
    }
    if (s[0] == '-' || s[0] == '+') {
        int64_t d;
        if (parse_units(s + 1, 0, &d))
            return -EINVAL;
        if (s[0] == '-' ? __builtin_sub_overflow(now_ns, d, out_ns)
                        : __builtin_add_overflow(now_ns, d, out_ns))
            return -EINVAL;
        return 0;
    }
    if (strlen(s) >= 10 && s[4] == '-')
        return parse_rfc3339(s, out_ns);
    /* Unix seconds, with an optional fraction kept exact to the nanosecond. */
    const char *p = s;
    int64_t secs = 0;
    if (!isdigit((unsigned char)*p))
        return -EINVAL;
    while (isdigit((unsigned char)*p)) {
        secs = secs * 10 + (*p++ - '0');
        if (secs > 9200000000LL)
            return -EINVAL;
    }
    int64_t frac = take_fraction(&p);
    if (*p)
        return -EINVAL;
    *out_ns = secs * WT_NS_PER_S + frac;
    return 0;
}
