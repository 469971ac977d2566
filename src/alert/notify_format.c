/* SPDX-License-Identifier: MIT */
/*
 * Alert delivery's formats (declared in alert/notify.h): the JSON bodies sent to Alertmanager and
 * to webhooks, and for exec the command's words and its environment. Pure functions, no I/O; the
 * channels that send them are alert/notify.c.
 */
#include "alert/notify.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"

/* ---- JSON bodies ------------------------------------------------------------------------- */

static void fmt_time(int64_t t_ns, char *buf, size_t n)
{
    wt_time_format(t_ns, 1, buf, n);
}

static void fmt_value(double v, char *buf, size_t n)
{
    snprintf(buf, n, "%.6g", v);
}

/* Adds the alert's labels to obj; returns true when one of them is "node". */
static bool add_labels(cJSON *obj, const char *labels)
{
    char key[64], val[WT_LABELS_LEN];
    size_t pos = 0;
    bool node = false;
    while (wt_labels_next(labels, &pos, key, sizeof key, val, sizeof val) == 1) {
        /* Alertmanager refuses label names outside [a-zA-Z_][a-zA-Z0-9_]* and drops empty
         * values: make every name valid, leave empty values out. */
        for (char *k = key; *k; k++)
            if (!(isalpha((unsigned char)*k) || *k == '_' ||
                  (k > key && isdigit((unsigned char)*k))))
                *k = '_';
        if (!val[0] || strcmp(key, "alertname") == 0 || strcmp(key, "severity") == 0)
            continue; /* ours win */
        if (cJSON_GetObjectItemCaseSensitive(obj, key))
            continue;
        cJSON_AddStringToObject(obj, key, val);
        if (strcmp(key, "node") == 0)
            node = true;
    }
    return node;
}

static int64_t starts_at(const struct wt_alert *a, int64_t now_ns)
{
    if (a->fired_at_ns)
        return a->fired_at_ns;
    return a->active_since_ns ? a->active_since_ns : now_ns;
}

char *wt_notify_am_json(const struct wt_alert *a, size_t n, int64_t now_ns, int64_t valid_ns,
                        const char *node, const char *generator_url)
{
    char t[48], v[48];
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto fail;
        cJSON_AddItemToArray(arr, o);
        cJSON *labels = cJSON_AddObjectToObject(o, "labels");
        cJSON *ann = cJSON_AddObjectToObject(o, "annotations");
        if (!labels || !ann)
            goto fail;
        cJSON_AddStringToObject(labels, "alertname", a[i].name);
        cJSON_AddStringToObject(labels, "severity", wt_severity_name(a[i].severity));
        if (!add_labels(labels, a[i].labels) && node && *node)
            cJSON_AddStringToObject(labels, "node", node);
        if (a[i].summary[0])
            cJSON_AddStringToObject(ann, "summary", a[i].summary);
        fmt_value(a[i].value, v, sizeof v);
        cJSON_AddStringToObject(ann, "value", v);
        fmt_time(starts_at(&a[i], now_ns), t, sizeof t);
        cJSON_AddStringToObject(o, "startsAt", t);
        if (a[i].state == WT_ALERT_RESOLVED)
            fmt_time(a[i].resolved_at_ns ? a[i].resolved_at_ns : now_ns, t, sizeof t);
        else
            fmt_time(now_ns + valid_ns, t, sizeof t);
        cJSON_AddStringToObject(o, "endsAt", t);
        if (generator_url && *generator_url)
            cJSON_AddStringToObject(o, "generatorURL", generator_url);
    }
    char *s = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    return s;
fail:
    cJSON_Delete(arr);
    return NULL;
}

char *wt_notify_event_json(const struct wt_alert *a, const char *node)
{
    char t[48], fp[20];
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "alertname", a->name);
    cJSON_AddStringToObject(o, "state", wt_alert_state_name(a->state));
    cJSON_AddStringToObject(o, "severity", wt_severity_name(a->severity));
    cJSON *labels = cJSON_AddObjectToObject(o, "labels");
    if (labels)
        add_labels(labels, a->labels);
    cJSON_AddStringToObject(o, "summary", a->summary);
    cJSON_AddNumberToObject(o, "value", a->value);
    fmt_time(starts_at(a, wt_now_real_ns()), t, sizeof t);
    cJSON_AddStringToObject(o, "startsAt", t);
    if (a->state == WT_ALERT_RESOLVED) {
        fmt_time(a->resolved_at_ns ? a->resolved_at_ns : wt_now_real_ns(), t, sizeof t);
        cJSON_AddStringToObject(o, "endsAt", t);
    }
    snprintf(fp, sizeof fp, "%016" PRIx64, a->fingerprint);
    cJSON_AddStringToObject(o, "fingerprint", fp);
    if (a->gpu >= 0)
        cJSON_AddNumberToObject(o, "gpu", a->gpu);
    if (node && *node)
        cJSON_AddStringToObject(o, "node", node);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* ---- exec: words and environment --------------------------------------------------------- */

int wt_notify_split(const char *command, char *buf, size_t bufn, char **argv, size_t maxargs,
                    int *argc)
{
    size_t o = 0, n = 0;
    const char *p = command;
    *argc = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        if (n + 1 >= maxargs)
            return -E2BIG;
        argv[n++] = buf + o;
        char quote = 0;
        while (*p && (quote || (*p != ' ' && *p != '\t' && *p != '\n'))) {
            char c = *p++;
            if (quote == '\'' && c == '\'') {
                quote = 0;
                continue;
            }
            if (quote == '"' && c == '"') {
                quote = 0;
                continue;
            }
            if (!quote && (c == '\'' || c == '"')) {
                quote = c;
                continue;
            }
            if (c == '\\' && quote != '\'' && *p)
                c = *p++;
            if (o + 1 >= bufn)
                return -E2BIG;
            buf[o++] = c;
        }
        if (quote)
            return -EINVAL;
        if (o + 1 >= bufn)
            return -E2BIG;
        buf[o++] = '\0';
    }
    if (n == 0)
        return -EINVAL;
    argv[n] = NULL;
    *argc = (int)n;
    return 0;
}

static char *env_pair(const char *key, const char *val)
{
    size_t n = strlen(key) + strlen(val) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s=%s", key, val);
    return s;
}

void wt_notify_env_free(char **envp)
{
    if (!envp)
        return;
    for (size_t i = 0; envp[i]; i++)
        free(envp[i]);
    free(envp);
}

char **wt_notify_env(char *const *env, const struct wt_alert *a)
{
    static const char prefix[] = "WATTAGE_ALERT_";
    size_t n = 0, k = 0;
    while (env && env[n])
        n++;
    char **e = calloc(n + 9, sizeof *e);
    if (!e)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(env[i], prefix, sizeof prefix - 1) == 0)
            continue;
        if (!(e[k++] = strdup(env[i])))
            goto fail;
    }
    char v[48], fp[20], gpu[16];
    fmt_value(a->value, v, sizeof v);
    snprintf(fp, sizeof fp, "%016" PRIx64, a->fingerprint);
    snprintf(gpu, sizeof gpu, "%d", a->gpu);
    const char *pairs[][2] = {
        {"WATTAGE_ALERT_NAME", a->name},
        {"WATTAGE_ALERT_STATE", wt_alert_state_name(a->state)},
        {"WATTAGE_ALERT_SEVERITY", wt_severity_name(a->severity)},
        {"WATTAGE_ALERT_LABELS", a->labels},
        {"WATTAGE_ALERT_SUMMARY", a->summary},
        {"WATTAGE_ALERT_VALUE", v},
        {"WATTAGE_ALERT_FINGERPRINT", fp},
        {"WATTAGE_ALERT_GPU", a->gpu >= 0 ? gpu : NULL},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        if (!pairs[i][1])
            continue;
        if (!(e[k++] = env_pair(pairs[i][0], pairs[i][1])))
            goto fail;
    }
    e[k] = NULL;
    return e;
fail:
    wt_notify_env_free(e);
    return NULL;
}
