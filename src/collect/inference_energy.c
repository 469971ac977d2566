/* SPDX-License-Identifier: MIT */
/*
 * The serving-energy counter of each inference target (collect/inference_energy.h): the GPU
 * ledgers' energy of the target's GPUs, poll to poll, shared between its models by the
 * generated tokens each counted.
 */
#include "collect/inference_energy.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

const char *const wt_inf_gpu_vendors[2] = {"nvidia", "amd"};

/*
 * Whether device x of devs[0..n) is one of gpus: "amd:1" names AMD's GPU 1, a plain "1" the GPU
 * 1 of whichever vendor has one (NVIDIA's where both do, as before there was AMD).
 */
static bool gpu_in(const char *gpus, const struct wt_attrib_device *x,
                   const struct wt_attrib_device *devs, size_t n)
{
    for (const char *p = gpus; *p;) {
        const char *vendor = "";
        for (int k = 0; k < 2 && !vendor[0]; k++) {
            size_t vl = strlen(wt_inf_gpu_vendors[k]);
            if (strncmp(p, wt_inf_gpu_vendors[k], vl) == 0 && p[vl] == ':') {
                vendor = wt_inf_gpu_vendors[k];
                p += vl + 1;
            }
        }
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p)
            return false;
        if (v == x->dev && wt_attrib_find(devs, n, vendor, x->dev) == x)
            return true;
        p = *end == ',' ? end + 1 : end;
    }
    return false;
}

/* Whether gpus names GPU g by a plain index (no vendor). */
static bool plain_listed(const char *gpus, unsigned int g)
{
    for (const char *p = gpus; *p;) {
        char *end;
        unsigned long v = isdigit((unsigned char)*p) ? strtoul(p, &end, 10) : ULONG_MAX;
        if (v == g && (*end == ',' || !*end))
            return true;
        p += strcspn(p, ",");
        if (*p == ',')
            p++;
    }
    return false;
}

/* The index of vendor in wt_inf_gpu_vendors, -1 for another. */
static int vendor_slot(const char *vendor)
{
    for (int k = 0; k < 2; k++)
        if (strcmp(vendor, wt_inf_gpu_vendors[k]) == 0)
            return k;
    return -1;
}

static struct wt_inf_model_energy *model_energy(struct wt_inf_energy *e, const char *model)
{
    for (size_t i = 0; i < e->nem; i++)
        if (strcmp(e->em[i].model, model) == 0)
            return &e->em[i];
    if (e->nem == WT_INF_MAX_MODELS)
        return NULL;
    struct wt_inf_model_energy *m = &e->em[e->nem++];
    snprintf(m->model, sizeof m->model, "%s", model);
    m->generated = NAN;
    m->energy_j = 0;
    return m;
}

/*
 * The counters start at 0 when the daemon starts (a counter reset to rate() and increase()).
 */
bool wt_inf_energy_account(struct wt_inf_energy *e, const char *target, const char *gpus,
                           const struct wt_inf_value *v, size_t n)
{
    struct wt_attrib_device *devs = NULL;
    struct wt_attrib_entry *ents = NULL;
    size_t ndev = 0, nent = 0;
    double de = 0;
    if (gpus[0] && wt_attrib_copy_published(0, &devs, &ndev, &ents, &nent) == 0) {
        bool seen[2][WT_ATTRIB_MAX_DEVICES] = {{false}};
        if (!e->started)
            for (int k = 0; k < 2; k++)
                for (size_t d = 0; d < WT_ATTRIB_MAX_DEVICES; d++)
                    e->dev_j[k][d] = NAN;
        e->started = true;
        /* one device per vendor and index in the copy */
        for (size_t k = 0; k < ndev; k++) {
            const struct wt_attrib_device *x = &devs[k];
            int vs = vendor_slot(x->vendor);
            if (vs < 0 || x->dev >= WT_ATTRIB_MAX_DEVICES || !gpu_in(gpus, x, devs, ndev))
                continue;
            if (vs == 0 && !e->said_ambiguous && wt_attrib_find(devs, ndev, "amd", x->dev) &&
                plain_listed(gpus, x->dev)) {
                e->said_ambiguous = true;
                wt_warn("inference",
                        "%s: gpus %s: GPU %u is NVIDIA's and AMD's here; NVIDIA's is counted "
                        "(name nvidia:%u or amd:%u)",
                        target, gpus, x->dev, x->dev, x->dev);
            }
            double *prev = &e->dev_j[vs][x->dev];
            if (!isnan(*prev) && x->energy_j >= *prev)
                de += x->energy_j - *prev;
            *prev = x->energy_j;
            seen[vs][x->dev] = true;
        }
        /* a GPU that comes (back) starts from its value then */
        for (int k = 0; k < 2; k++)
            for (size_t d = 0; d < WT_ATTRIB_MAX_DEVICES; d++)
                if (!seen[k][d])
                    e->dev_j[k][d] = NAN;
    }
    free(devs);
    free(ents);
    if (!e->started)
        return false;
    /* the models of this scrape and their generated tokens since the last poll */
    struct wt_inf_model_energy *ms[WT_INF_MAX_MODELS];
    double d[WT_INF_MAX_MODELS], all = 0;
    size_t nm = 0;
    for (size_t i = 0; i < n; i++) {
        struct wt_inf_model_energy *m = model_energy(e, v[i].model);
        if (!m)
            continue;
        size_t k = 0;
        while (k < nm && ms[k] != m)
            k++;
        if (k == nm) {
            ms[nm] = m;
            d[nm++] = NAN;
        }
        if (isnan(v[i].generated))
            continue;
        double g = v[i].generated;
        d[k] = isnan(m->generated) ? 0 : g >= m->generated ? g - m->generated : g;
        m->generated = g;
        all += d[k];
    }
    for (size_t k = 0; k < nm; k++)
        ms[k]->energy_j += all > 0 ? de * (isnan(d[k]) ? 0 : d[k]) / all : de / (double)nm;
    return true;
}
