/* SPDX-License-Identifier: MIT */
/* The assessment's record: assessment.json beside the store, written whole (temporary file,
 * fsync, rename, fsync of the folder) so a crash leaves the old record or the new one. */
#include "audit/assess.h"
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/durable.h"

#define NS_PER_S 1000000000LL
#define HOUR_NS (3600 * NS_PER_S)
#define DAY_NS (24 * HOUR_NS)

static const char *const layer_names[WT_ASSESS_NLAYERS] = {"chip",   "node",  "wall", "facility",
                                                           "carbon", "clock", "jobs", "inlet"};

const char *wt_assess_layer_name(unsigned i)
{
    return i < WT_ASSESS_NLAYERS ? layer_names[i] : NULL;
}

int wt_assess_path(const char *store_path, char *out, size_t n)
{
    const char *slash = strrchr(store_path, '/');
    int len = slash ? (int)(slash - store_path) : 0;
    int w = slash ? snprintf(out, n, "%.*s/assessment.json", len, store_path)
                  : snprintf(out, n, "assessment.json");
    return w < 0 || (size_t)w >= n ? -ENAMETOOLONG : 0;
}

int wt_assess_save(const char *path, const struct wt_assess *a, struct wt_err *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "name", a->name);
    cJSON_AddNumberToObject(root, "start_s", (double)a->start_ns / NS_PER_S);
    cJSON_AddNumberToObject(root, "end_s", (double)a->end_ns / NS_PER_S);
    cJSON *l = cJSON_AddArrayToObject(root, "layers_at_start");
    for (unsigned i = 0; i < WT_ASSESS_NLAYERS; i++)
        if (a->layers & (1u << i))
            cJSON_AddItemToArray(l, cJSON_CreateString(layer_names[i]));
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    if (!s)
        return wt_err_set(err, "%s: out of memory", path), -ENOMEM;
    int rc = wt_durable_replace(path, s, strlen(s), "the assessment", err);
    free(s);
    return rc;
}

int wt_assess_load(const char *path, struct wt_assess *a, struct wt_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        wt_err_set(err, "%s: %s", path,
                   e == ENOENT ? "no assessment (start one with `wattage assess start`)"
                               : strerror(e));
        return -e;
    }
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *root = cJSON_Parse(buf);
    int rc = 0;
    memset(a, 0, sizeof *a);
    if (!root) {
        rc = wt_err_set(err, "%s: not JSON", path);
        goto done;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "start_s");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(root, "end_s");
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(root, "layers_at_start");
    if (!cJSON_IsString(name)) {
        rc = wt_err_set(err, "%s: name: expected a string", path);
        goto done;
    }
    if (!cJSON_IsNumber(st) || !cJSON_IsNumber(en) || en->valuedouble <= st->valuedouble) {
        rc = wt_err_set(err, "%s: start_s, end_s: expected numbers, end after start", path);
        goto done;
    }
    if (!cJSON_IsArray(l)) {
        rc = wt_err_set(err, "%s: layers_at_start: expected an array", path);
        goto done;
    }
    snprintf(a->name, sizeof a->name, "%s", name->valuestring);
    a->start_ns = (int64_t)(st->valuedouble * NS_PER_S);
    a->end_ns = (int64_t)(en->valuedouble * NS_PER_S);
    const cJSON *it;
    cJSON_ArrayForEach(it, l)
    {
        unsigned i = 0;
        while (i < WT_ASSESS_NLAYERS &&
               !(cJSON_IsString(it) && !strcmp(it->valuestring, layer_names[i])))
            i++;
        if (i == WT_ASSESS_NLAYERS) {
            rc = wt_err_set(err, "%s: layers_at_start: unknown layer", path);
            goto done;
        }
        a->layers |= 1u << i;
    }
done:
    cJSON_Delete(root);
    return rc;
}

int64_t wt_assess_baseline_end(const struct wt_assess *a)
{
    int64_t span = a->end_ns - a->start_ns;
    return a->start_ns + (span >= 3 * DAY_NS ? DAY_NS : span / 3);
}

uint32_t wt_assess_hours_seen(int64_t from_ns, int64_t to_ns)
{
    if (to_ns <= from_ns)
        return 0;
    if (to_ns - from_ns >= DAY_NS)
        return (1u << 24) - 1;
    uint32_t m = 0;
    /* hour of day of each hour boundary step from the hour that holds from_ns */
    for (int64_t t = from_ns - (from_ns % HOUR_NS + HOUR_NS) % HOUR_NS; t < to_ns; t += HOUR_NS)
        m |= 1u << (int)(((t / HOUR_NS) % 24 + 24) % 24);
    return m;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t wt_assess_gap_bound(const struct wt_point *p, size_t n)
{
    if (n < 2)
        return 0;
    int64_t *d = malloc((n - 1) * sizeof *d);
    if (!d)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i + 1].t_ns > p[i].t_ns)
            d[k++] = p[i + 1].t_ns - p[i].t_ns;
    int64_t med = 0;
    if (k) {
        qsort(d, k, sizeof *d, cmp_i64);
        med = d[k / 2];
    }
    free(d);
    return (int64_t)(WT_ASSESS_GAP_FACTOR * (double)med);
}

size_t wt_assess_spans(const struct wt_point *p, size_t n, int64_t from_ns, int64_t to_ns,
                       bool positive_only, struct wt_assess_span *out)
{
    int64_t bound = wt_assess_gap_bound(p, n);
    size_t k = 0;
    if (bound <= 0 || to_ns <= from_ns)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (positive_only && !(p[i].v > 0.5))
            continue;
        int64_t a = p[i].t_ns, b;
        if (i + 1 < n) {
            b = p[i + 1].t_ns;
            if (b - a > bound)
                continue;
        } else if (to_ns - a <= bound && to_ns > a) {
            b = to_ns; /* the newest reading: the next one is not stored yet */
        } else {
            continue;
        }
        if (a < from_ns)
            a = from_ns;
        if (b > to_ns)
            b = to_ns;
        if (b <= a)
            continue;
        if (k && out[k - 1].to_ns >= a) /* contiguous with the last: extend it */
            out[k - 1].to_ns = b > out[k - 1].to_ns ? b : out[k - 1].to_ns;
        else
            out[k++] = (struct wt_assess_span){a, b};
    }
    return k;
}

static int cmp_span(const void *a, const void *b)
{
    const struct wt_assess_span *x = a, *y = b;
    return (x->from_ns > y->from_ns) - (x->from_ns < y->from_ns);
}

size_t wt_assess_cover_of(struct wt_assess_span *s, size_t n, int64_t from_ns, int64_t to_ns,
                          struct wt_assess_cover *c)
{
    size_t nseries = c->nseries;
    memset(c, 0, sizeof *c);
    c->nseries = nseries;
    c->window_s = to_ns > from_ns ? (double)(to_ns - from_ns) / NS_PER_S : 0;
    qsort(s, n, sizeof *s, cmp_span);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t a = s[i].from_ns < from_ns ? from_ns : s[i].from_ns;
        int64_t b = s[i].to_ns > to_ns ? to_ns : s[i].to_ns;
        if (b <= a)
            continue;
        if (k && s[k - 1].to_ns >= a) {
            if (b > s[k - 1].to_ns)
                s[k - 1].to_ns = b;
        } else {
            s[k++] = (struct wt_assess_span){a, b};
        }
    }
    int64_t cursor = from_ns;
    for (size_t i = 0; i <= k && to_ns > from_ns; i++) {
        int64_t next = i < k ? s[i].from_ns : to_ns;
        if (next > cursor) {
            double g = (double)(next - cursor) / NS_PER_S;
            c->ngaps++;
            if (g > c->longest_gap_s) {
                c->longest_gap_s = g;
                c->longest_gap_from_ns = cursor;
            }
        }
        if (i < k) {
            c->covered_s += (double)(s[i].to_ns - s[i].from_ns) / NS_PER_S;
            cursor = s[i].to_ns;
        }
    }
    return k;
}
