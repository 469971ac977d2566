/* SPDX-License-Identifier: MIT */
/*
 * The attribution over a window (serve/api_jobs.h's wt_api_attribution_window) on a store
 * written here as the NVML collector writes it, one reading per series per split: a process
 * first seen inside the window counts from 0, a fold's move is counted once (the process's),
 * the parts sum to the GPU's counter over the splits, a daemon restart inside the window
 * leaves its downtime and first split in the counter only, a window between splits is taken
 * from the split before, and bad parameters are 400s naming them.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/reading.h"
#include "runner.h"
#include "serve/api_jobs.h"
#include "store/store.h"

#define S WT_NS_PER_S
#define T0 (1780000000LL * S)
#define DEV "gpu=\"0\",uuid=\"GPU-w\""
#define P1 DEV ",pid=\"1\",owner=\"slurm\",slurm_job=\"5\",slurm_step=\"0\""
#define F1 DEV ",owner=\"slurm\",slurm_job=\"5\""
#define P2 DEV ",pid=\"2\",owner=\"systemd\",unit=\"r.service\""
#define IDLE DEV ",owner=\"idle\""

static struct wt_reading rd(int metric, const char *labels, int64_t t, double v)
{
    struct wt_reading r = {.t_ns = t, .value = v, .metric = (uint16_t)metric};
    snprintf(r.labels, sizeof r.labels, "%s", labels);
    return r;
}

/*
 * Run 1, splits k = 0..9 at T0 + k s, 10 J each: k = 0 all idle (its first split); P1 6 J at
 * k = 1..3, then not listed, kept at 18 J for k = 4, 5 and folded into F1 at k = 6; P2 3 J from
 * k = 3 on; idle the rest. The daemon stops, the GPU draws 20 J while it is down, run 2 starts
 * at T0 + 10.5 s: splits k = 11..14, everything from 0 again (k = 11 all idle, P2 3 J from
 * k = 12 on). The counter (HW) is 1000 J plus all of it.
 */
static struct wt_store *fill(void)
{
    char path[512];
    struct wt_store *st = NULL;
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/w.db", wt_test_dir());
    if (wt_store_open(path, NULL, &st, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %s", err.msg);
    struct wt_reading r[64];
    size_t n = 0;
    double c = 1000, idle = 0, p1 = 0, p2 = 0;
    if (wt_store_begin_run(st, "", T0 - S, S, "test") != 0)
        wt_test_fail(__FILE__, __LINE__, "run");
    for (int k = 0; k <= 9; k++) {
        int64_t t = T0 + k * S;
        double a = k >= 1 && k <= 3 ? 6 : 0, b = k >= 3 ? 3 : 0;
        c += 10;
        p1 += a;
        p2 += b;
        idle += 10 - a - b;
        n = 0;
        r[n++] = rd(WT_M_GPU_ENERGY_J, DEV, t, c);
        r[n++] = rd(WT_M_PROC_GPU_ENERGY_J, IDLE, t, idle);
        if (k >= 1 && k <= 5)
            r[n++] = rd(WT_M_PROC_GPU_ENERGY_J, P1, t, p1);
        if (k >= 6)
            r[n++] = rd(WT_M_PROC_GPU_ENERGY_J, F1, t, p1);
        if (k >= 3)
            r[n++] = rd(WT_M_PROC_GPU_ENERGY_J, P2, t, p2);
        if (wt_store_write(st, "", r, n) != 0)
            wt_test_fail(__FILE__, __LINE__, "write");
    }
    c += 20; /* the daemon is down */
    if (wt_store_begin_run(st, "", T0 + 10 * S + S / 2, S, "test") != 0)
        wt_test_fail(__FILE__, __LINE__, "run 2");
    idle = p2 = 0;
    for (int k = 11; k <= 14; k++) {
        int64_t t = T0 + k * S;
        double b = k >= 12 ? 3 : 0;
        c += 10;
        p2 += b;
        idle += 10 - b;
        n = 0;
        r[n++] = rd(WT_M_GPU_ENERGY_J, DEV, t, c);
        r[n++] = rd(WT_M_PROC_GPU_ENERGY_J, IDLE, t, idle);
        if (k >= 12)
            r[n++] = rd(WT_M_PROC_GPU_ENERGY_J, P2, t, p2);
        if (wt_store_write(st, "", r, n) != 0)
            wt_test_fail(__FILE__, __LINE__, "write 2");
    }
    return st;
}

/* The reply for [from, to] (unix seconds), its first GPU in *g; the caller frees *root. */
static unsigned ask(struct wt_store *st, const char *from, const char *to, cJSON **root,
                    const cJSON **g)
{
    unsigned status = 0;
    char *json = NULL;
    *root = NULL;
    *g = NULL;
    WT_EQ_INT(wt_api_attribution_window(st, from, to, T0 + 20 * S, &status, &json), 0);
    *root = cJSON_Parse(json);
    free(json);
    WT_ASSERT(*root != NULL);
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(*root, "gpus");
    if (status == 200 && cJSON_GetArraySize(gpus) > 0)
        *g = cJSON_GetArrayItem(gpus, 0);
    return status;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The entry of array k of g whose member key has value v. */
static const cJSON *entry(const cJSON *g, const char *k, const char *key, const char *v)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(g, k))
    {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(it, key);
        if (cJSON_IsString(x) && strcmp(x->valuestring, v) == 0)
            return it;
    }
    return NULL;
}

WT_TEST(a_window_counts_new_processes_from_zero_and_a_fold_once)
{
    struct wt_store *st = fill();
    cJSON *root;
    const cJSON *g;
    char a[32], b[32];
    /* [T0+2.4, T0+9.2]: taken between the splits k = 2 and k = 9 */
    snprintf(a, sizeof a, "%.1f", (double)(T0 / S) + 2.4);
    snprintf(b, sizeof b, "%.1f", (double)(T0 / S) + 9.2);
    WT_EQ_INT((int)ask(st, a, b, &root, &g), 200);
    WT_ASSERT(g != NULL);
    WT_NEAR(num(g, "from"), (double)(T0 / S) + 2, 1e-6);
    WT_NEAR(num(g, "to"), (double)(T0 / S) + 9, 1e-6);
    WT_NEAR(num(g, "energy_joules"), 70, 1e-9);
    WT_NEAR(num(g, "attributed_joules"), 70, 1e-9);
    /* P1: its k = 3 part; its fold at k = 6 is not energy */
    const cJSON *slurm = entry(g, "owners", "slurm_job", "5");
    WT_ASSERT(slurm != NULL);
    WT_NEAR(num(slurm, "energy_joules"), 6, 1e-9);
    WT_NEAR(num(slurm, "processes"), 1, 0);
    /* P2: first stored at k = 3 with 3 J, which counts; 7 splits of 3 J */
    const cJSON *unit = entry(g, "owners", "unit", "r.service");
    WT_ASSERT(unit != NULL);
    WT_NEAR(num(unit, "energy_joules"), 21, 1e-9);
    WT_NEAR(num(g, "idle_joules"), 70 - 6 - 21, 1e-9);
    const cJSON *p = entry(g, "processes", "owner", "slurm");
    WT_ASSERT(p != NULL);
    WT_NEAR(num(p, "pid"), 1, 0);
    WT_EQ_STR(cJSON_GetObjectItemCaseSensitive(p, "slurm_step")->valuestring, "0");
    WT_NEAR(num(p, "energy_joules"), 6, 1e-9);
    cJSON_Delete(root);
    wt_store_close(st);
}

WT_TEST(a_restart_inside_the_window_is_in_the_counter_only)
{
    struct wt_store *st = fill();
    cJSON *root;
    const cJSON *g;
    char a[32], b[32];
    snprintf(a, sizeof a, "%lld", (long long)(T0 / S) + 8);
    snprintf(b, sizeof b, "%lld", (long long)(T0 / S) + 14);
    WT_EQ_INT((int)ask(st, a, b, &root, &g), 200);
    WT_ASSERT(g != NULL);
    /* the counter: k = 9 (10), the downtime (20), k = 11..14 (40) */
    WT_NEAR(num(g, "energy_joules"), 70, 1e-9);
    /* the parts: k = 9, and k = 12..14 of run 2 (its first split is nobody's) */
    WT_NEAR(num(g, "attributed_joules"), 40, 1e-9);
    /* P2: 3 J at k = 9, and in run 2 from 0: 3 + 3 + 3 */
    WT_NEAR(num(entry(g, "owners", "unit", "r.service"), "energy_joules"), 12, 1e-9);
    /* the job folded before the window has nothing in it */
    WT_NEAR(num(entry(g, "owners", "slurm_job", "5"), "energy_joules"), 0, 1e-9);
    cJSON_Delete(root);
    wt_store_close(st);
}

WT_TEST(bad_windows_are_400s_naming_the_parameter)
{
    struct wt_store *st = fill();
    const char *cases[][3] = {{"yesterday", NULL, "from"},
                              {NULL, "noon", "to"},
                              {"1780000010", "1780000005", "to"},
                              {"-40d", NULL, "from"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *root;
        const cJSON *g;
        WT_EQ_INT((int)ask(st, cases[i][0], cases[i][1], &root, &g), 400);
        WT_EQ_STR(cJSON_GetObjectItemCaseSensitive(root, "field")->valuestring, cases[i][2]);
        cJSON_Delete(root);
    }
    /* a window with no split in it: no GPU rather than a made-up one */
    cJSON *root;
    const cJSON *g;
    WT_EQ_INT((int)ask(st, "1700000000", "1700000100", &root, &g), 200);
    WT_ASSERT(g == NULL);
    cJSON_Delete(root);
    wt_store_close(st);
}
