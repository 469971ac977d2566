/* SPDX-License-Identifier: MIT */
/*
 * The fields' cadences (see cadence.h): the slow timer, and the tables the open collectors
 * publish for the status document.
 */
#include "collect/cadence.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_TABLES 8

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char name[32];
    int64_t slow_ns;
    const struct wt_field_cadence *t;
    size_t n;
} tables[MAX_TABLES];

bool wt_slow_due(struct wt_slow_timer *t, int64_t now_ns, int64_t tick_ns)
{
    if (t->interval_ns <= 0)
        return true;
    if (t->due_ns && now_ns + tick_ns / 2 < t->due_ns)
        return false;
    /* Anchored on the read that was due, so that the reads keep one interval apart on average;
     * after missed ticks (a stopped process, a long outage) from now. */
    int64_t next = t->due_ns ? t->due_ns + t->interval_ns : now_ns + t->interval_ns;
    if (next <= now_ns)
        next = now_ns + t->interval_ns;
    t->due_ns = next;
    return true;
}

void wt_slow_force(struct wt_slow_timer *t)
{
    t->due_ns = 0;
}

int wt_cadence_publish(const char *collector, int64_t slow_ns, const struct wt_field_cadence *t,
                       size_t n)
{
    int rc = -ENOSPC, free_i = -1;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_TABLES; i++) {
        if (tables[i].t && strcmp(tables[i].name, collector) == 0) {
            free_i = i;
            break;
        }
        if (!tables[i].t && free_i < 0)
            free_i = i;
    }
    if (free_i >= 0) {
        snprintf(tables[free_i].name, sizeof tables[free_i].name, "%s", collector);
        tables[free_i].slow_ns = slow_ns;
        tables[free_i].t = t;
        tables[free_i].n = n;
        rc = 0;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

void wt_cadence_withdraw(const char *collector, const struct wt_field_cadence *t)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_TABLES; i++)
        if (tables[i].t == t && strcmp(tables[i].name, collector) == 0)
            memset(&tables[i], 0, sizeof tables[i]);
    pthread_mutex_unlock(&mu);
}

bool wt_cadence_slow_fields(const char *collector, const char **out, size_t max, size_t *n,
                            int64_t *slow_ns)
{
    bool found = false;
    *n = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_TABLES && !found; i++) {
        if (!tables[i].t || strcmp(tables[i].name, collector) != 0)
            continue;
        found = true;
        *slow_ns = tables[i].slow_ns;
        for (size_t k = 0; k < tables[i].n; k++) {
            if (tables[i].t[k].cadence != WT_CADENCE_SLOW || !tables[i].t[k].field)
                continue;
            if (*n < max)
                out[*n] = tables[i].t[k].field;
            (*n)++;
        }
    }
    pthread_mutex_unlock(&mu);
    return found;
}
