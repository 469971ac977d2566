/* SPDX-License-Identifier: MIT */
/*
 * Readiness reasons: a process-wide table that modules report into (one mutex, a fixed array),
 * plus what a snapshot and the kernel's clock say when someone asks. See health.h.
 */
#include "core/health.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>

#include "core/clock.h"
#include "core/log.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct wt_health_reason table[WT_HEALTH_MAX_REASONS];
static size_t ntable;
static bool full_logged;

static pthread_mutex_t probe_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char component[24];
    wt_health_probe_fn fn;
    void *ctx;
} probes[WT_HEALTH_MAX_PROBES];
static size_t nprobes;

int wt_health_add_probe(const char *component, wt_health_probe_fn fn, void *ctx)
{
    int rc = -ENOSPC;
    pthread_mutex_lock(&probe_mu);
    if (nprobes < WT_HEALTH_MAX_PROBES) {
        snprintf(probes[nprobes].component, sizeof probes[nprobes].component, "%s", component);
        probes[nprobes].fn = fn;
        probes[nprobes].ctx = ctx;
        nprobes++;
        rc = 0;
    }
    pthread_mutex_unlock(&probe_mu);
    return rc;
}

void wt_health_remove_probe(wt_health_probe_fn fn, void *ctx)
{
    pthread_mutex_lock(&probe_mu);
    for (size_t i = 0; i < nprobes; i++) {
        if (probes[i].fn == fn && probes[i].ctx == ctx) {
            memmove(&probes[i], &probes[i + 1], (nprobes - i - 1) * sizeof probes[0]);
            nprobes--;
            break;
        }
    }
    pthread_mutex_unlock(&probe_mu);
}

void wt_health_report(const char *component, const char *key, bool ok, const char *fmt, ...)
{
    if (!key)
        key = "";
    pthread_mutex_lock(&mu);
    size_t i = 0;
    while (i < ntable && (strcmp(table[i].component, component) || strcmp(table[i].key, key)))
        i++;
    if (ok) {
        if (i < ntable) {
            memmove(&table[i], &table[i + 1], (ntable - i - 1) * sizeof table[0]);
            ntable--;
        }
        pthread_mutex_unlock(&mu);
        return;
    }
    if (i == ntable) {
        if (ntable == WT_HEALTH_MAX_REASONS) {
            bool first = !full_logged;
            full_logged = true;
            pthread_mutex_unlock(&mu);
            if (first)
                wt_warn("health", "more than %d reasons reported; %s/%s is not listed",
                        WT_HEALTH_MAX_REASONS, component, key);
            return;
        }
        ntable++;
        snprintf(table[i].component, sizeof table[i].component, "%s", component);
        snprintf(table[i].key, sizeof table[i].key, "%s", key);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(table[i].message, sizeof table[i].message, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&mu);
}

void wt_health_reset(void)
{
    pthread_mutex_lock(&mu);
    ntable = 0;
    full_logged = false;
    pthread_mutex_unlock(&mu);
}

static void put(struct wt_health_reason *out, size_t n, size_t *k, const char *component,
                const char *key, const char *msg)
{
    if (*k < n) {
        snprintf(out[*k].component, sizeof out[*k].component, "%s", component);
        snprintf(out[*k].key, sizeof out[*k].key, "%s", key);
        snprintf(out[*k].message, sizeof out[*k].message, "%s", msg);
    }
    (*k)++;
}

size_t wt_health_from_snapshot(const struct wt_batch *b, struct wt_health_reason *out, size_t n)
{
    size_t k = 0;
    char a[64], u[80], msg[200];
    for (size_t i = 0; b && i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        /* A series with up 0 exists only for a GPU or target that was seen: one never found is
         * "not present", not lost. */
        if (r->value != 0)
            continue;
        if (r->metric == WT_M_GPU_UP) {
            if (wt_labels_get(r->labels, "gpu", a, sizeof a) != 0)
                snprintf(a, sizeof a, "?");
            if (wt_labels_get(r->labels, "uuid", u, sizeof u) != 0)
                u[0] = '\0';
            snprintf(msg, sizeof msg, "GPU %s%s%s%s stopped answering (wattage_gpu_up 0)", a,
                     u[0] ? " (" : "", u, u[0] ? ")" : "");
            put(out, n, &k, "gpu", a, msg);
        } else if (r->metric == WT_M_FAC_UP) {
            char src[16];
            if (wt_labels_get(r->labels, "target", a, sizeof a) != 0)
                snprintf(a, sizeof a, "?");
            if (wt_labels_get(r->labels, "source", src, sizeof src) != 0)
                snprintf(src, sizeof src, "facility");
            snprintf(msg, sizeof msg,
                     "%s target %s did not answer its last poll (wattage_facility_up 0)", src, a);
            put(out, n, &k, "facility", a, msg);
        }
    }
    return k;
}

void wt_health_set_adjtimex(wt_health_adjtimex_fn fn)
{
    wt_clock_set_adjtimex(fn); /* one seam for the clock's readers (core/clock.h) */
}

bool wt_health_clock_synced(char *why, size_t n)
{
    struct wt_clock_sync cs;
    wt_clock_sync_read(&cs);
    if (!cs.known || cs.synchronized)
        return true; /* no answer from the kernel: nothing known, nothing claimed */
    if (why && n)
        snprintf(why, n,
                 "the kernel clock is not synchronised (STA_UNSYNC): timestamps and energy "
                 "windows may be off; run chrony or ntpd");
    return false;
}

size_t wt_health_collect(const struct wt_batch *b, struct wt_health_reason *out, size_t n)
{
    size_t k;
    char why[200];
    pthread_mutex_lock(&mu);
    k = ntable;
    memcpy(out, table, (k < n ? k : n) * sizeof *out);
    pthread_mutex_unlock(&mu);
    pthread_mutex_lock(&probe_mu);
    for (size_t i = 0; i < nprobes; i++) {
        why[0] = '\0';
        if (probes[i].fn(probes[i].ctx, why, sizeof why))
            put(out, n, &k, probes[i].component, "", why);
    }
    pthread_mutex_unlock(&probe_mu);
    k += wt_health_from_snapshot(b, k < n ? out + k : NULL, k < n ? n - k : 0);
    if (!wt_health_clock_synced(why, sizeof why))
        put(out, n, &k, "clock", "", why);
    return k;
}

static cJSON *to_json(const struct wt_health_reason *r, size_t n)
{
    cJSON *o = cJSON_CreateObject(), *list = NULL;
    if (!o || !cJSON_AddStringToObject(o, "status", n ? "degraded" : "ok") ||
        !(list = cJSON_AddArrayToObject(o, "reasons")))
        goto fail;
    for (size_t i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        if (!e)
            goto fail;
        cJSON_AddItemToArray(list, e);
        if (!cJSON_AddStringToObject(e, "component", r[i].component) ||
            (r[i].key[0] && !cJSON_AddStringToObject(e, "key", r[i].key)) ||
            !cJSON_AddStringToObject(e, "message", r[i].message))
            goto fail;
    }
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

char *wt_health_json(const struct wt_health_reason *r, size_t n)
{
    cJSON *o = to_json(r, n);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

char *wt_health_json_into(const char *json, const struct wt_health_reason *r, size_t n, bool pretty)
{
    cJSON *doc = cJSON_Parse(json), *h = NULL;
    char *s = NULL;
    if (!doc || !cJSON_IsObject(doc) || !(h = to_json(r, n)))
        goto out;
    cJSON_AddItemToObject(doc, "health", h);
    s = pretty ? cJSON_Print(doc) : cJSON_PrintUnformatted(doc);
out:
    cJSON_Delete(doc);
    return s;
}

void wt_health_print(FILE *f, const struct wt_health_reason *r, size_t n)
{
    fprintf(f, "health: %s\n", n ? "degraded" : "ok");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %s%s%s: %s\n", r[i].component, r[i].key[0] ? " " : "", r[i].key,
                r[i].message);
}
