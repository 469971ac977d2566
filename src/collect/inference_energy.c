/* SPDX-License-Identifier: MIT */
/*
 * The serving-energy counter of each inference target (collect/inference_energy.h): the GPU
 * ledgers' energy of the target's GPUs, poll to poll, shared between the targets that list a
 * GPU by the generated tokens each counted, then between a target's models the same way.
 */
#include "collect/inference_energy.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/gpuname.h"
#include "core/log.h"

const char *const wt_inf_gpu_vendors[2] = {"nvidia", "amd"};

/*
 * Whether device x of devs[0..n) is one of gpus: "amd:1" names AMD's GPU 1, a plain "1" the GPU
 * 1 of whichever vendor has one (NVIDIA's where both do, as before there was AMD).
 */
static bool gpu_in(const char *gpus, const struct wt_attrib_device *x,
                   const struct wt_attrib_device *devs, size_t n)
{
    char item[64];
    for (const char *p = gpus; wt_list_next(&p, item, sizeof item);) {
        const char *vendor, *idx;
        if (!wt_gpu_vendor_index(item, &vendor, &idx))
            return false;
        if (strtoul(idx, NULL, 10) == x->dev && wt_attrib_find(devs, n, vendor, x->dev) == x)
            return true;
    }
    return false;
}

/* Whether gpus names GPU g by a plain index (no vendor). */
static bool plain_listed(const char *gpus, unsigned int g)
{
    char item[64];
    for (const char *p = gpus; wt_list_next(&p, item, sizeof item);) {
        const char *vendor, *idx;
        if (wt_gpu_vendor_index(item, &vendor, &idx) && !vendor[0] && strtoul(idx, NULL, 10) == g)
            return true;
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

/* ---- each GPU's energy, shared between the targets that list it ---- */

#define MAX_SHARERS 16 /* targets on one GPU; more are not given any of it */

/*
 * A GPU's energy since its round opened, and its sharers: the targets that list it. Each poll of
 * a sharer adds to the pot the GPU's energy since the last reading (whichever sharer's), and to
 * its part of the round the generated tokens it counted since its last poll. The round closes
 * when the pot holds energy (the ledger moves at its own poll: till then the tokens wait for it)
 * and every sharer that still polls (polled within twice its last gap) has added to it since the
 * ledger last moved, so that all have added their tokens up to the same tick: the pot goes to
 * those in the round by their tokens (equal parts when none counted any), owed to each until its
 * poll. Targets scraped at the same tick share each ledger step by that step's tokens.
 */
struct sharer {
    const struct wt_inf_energy *who;
    double tokens;   /* generated since the round opened */
    bool in;         /* added to the round */
    bool fresh;      /* added since the ledger last moved */
    int64_t seen_ns; /* its last poll (monotonic) */
    int64_t gap_ns;  /* between its last two polls, 0: one poll yet */
    double owed_j;   /* its parts of closed rounds, not yet counted */
};

struct pool {
    bool have_j;   /* last_j was read */
    double last_j; /* the ledger's energy at the last reading */
    double pot_j;
    struct sharer m[MAX_SHARERS];
    size_t n;
};

static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool pools[2][WT_ATTRIB_MAX_DEVICES]; /* by vendor and index */

/* who's place among p's sharers, it joining (NULL: no room); the lock is held. */
static struct sharer *sharer_of(struct pool *p, const struct wt_inf_energy *who, int64_t now_ns)
{
    for (size_t k = 0; k < p->n; k++)
        if (p->m[k].who == who)
            return &p->m[k];
    if (p->n == MAX_SHARERS)
        return NULL;
    if (p->n == 0) /* nobody read it since it was last shared: it starts from now */
        p->have_j = false, p->pot_j = 0;
    p->m[p->n] = (struct sharer){.who = who, .seen_ns = now_ns};
    return &p->m[p->n++];
}

/* who leaves the GPUs not in listed (all of them when listed is NULL); the lock is held. */
static void leave(const struct wt_inf_energy *who, const bool (*listed)[WT_ATTRIB_MAX_DEVICES])
{
    for (int v = 0; v < 2; v++)
        for (size_t d = 0; d < WT_ATTRIB_MAX_DEVICES; d++) {
            struct pool *p = &pools[v][d];
            for (size_t k = 0; k < p->n; k++)
                if (p->m[k].who == who && !(listed && listed[v][d])) {
                    p->m[k] = p->m[--p->n];
                    break;
                }
        }
}

/*
 * Closes p's round when it holds energy and every sharer still polling added to it since the
 * ledger moved; the lock is held.
 */
static void close_round(struct pool *p, int64_t now_ns)
{
    double all = 0;
    size_t nin = 0;
    for (size_t k = 0; k < p->n; k++) {
        const struct sharer *m = &p->m[k];
        if (!m->fresh && now_ns - m->seen_ns <= 2 * m->gap_ns)
            return; /* waited for */
        if (m->in)
            all += m->tokens, nin++;
    }
    if (!nin || p->pot_j <= 0)
        return; /* the ledger has not moved: the tokens wait for its energy */
    for (size_t k = 0; k < p->n; k++) {
        struct sharer *m = &p->m[k];
        if (m->in)
            m->owed_j += all > 0 ? p->pot_j * m->tokens / all : p->pot_j / (double)nin;
        m->tokens = 0;
        m->in = false;
    }
    p->pot_j = 0;
}

void wt_inf_energy_close(struct wt_inf_energy *e)
{
    pthread_mutex_lock(&pools_lock);
    leave(e, NULL);
    pthread_mutex_unlock(&pools_lock);
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
    /* the target's part of its GPUs' energy since its last poll */
    struct wt_attrib_device *devs = NULL;
    struct wt_attrib_entry *ents = NULL;
    size_t ndev = 0, nent = 0;
    double de = 0;
    bool copied = gpus[0] && wt_attrib_copy_published(0, &devs, &ndev, &ents, &nent) == 0;
    bool seen[2][WT_ATTRIB_MAX_DEVICES] = {{false}}, listed[2][WT_ATTRIB_MAX_DEVICES] = {{false}};
    int64_t now = wt_now_mono_ns();
    pthread_mutex_lock(&pools_lock);
    if (copied) {
        e->started = true;
        /* one device per vendor and index in the copy */
        for (size_t k = 0; k < ndev; k++) {
            const struct wt_attrib_device *x = &devs[k];
            int vs = vendor_slot(x->vendor);
            if (vs < 0 || x->dev >= WT_ATTRIB_MAX_DEVICES)
                continue;
            seen[vs][x->dev] = true;
            if (!gpu_in(gpus, x, devs, ndev))
                continue;
            if (vs == 0 && !e->said_ambiguous && wt_attrib_find(devs, ndev, "amd", x->dev) &&
                plain_listed(gpus, x->dev)) {
                e->said_ambiguous = true;
                wt_warn("inference",
                        "%s: gpus %s: GPU %u is NVIDIA's and AMD's here; NVIDIA's is counted "
                        "(name nvidia:%u or amd:%u)",
                        target, gpus, x->dev, x->dev, x->dev);
            }
            listed[vs][x->dev] = true;
            struct pool *p = &pools[vs][x->dev];
            struct sharer *me = sharer_of(p, e, now);
            if (p->have_j && x->energy_j > p->last_j) {
                p->pot_j += x->energy_j - p->last_j;
                for (size_t k2 = 0; k2 < p->n; k2++)
                    p->m[k2].fresh = false;
            }
            p->last_j = x->energy_j;
            p->have_j = true;
            if (!me)
                continue;
            me->gap_ns = now - me->seen_ns; /* 0 as it joins */
            me->seen_ns = now;
            me->tokens += all;
            me->in = me->fresh = true;
            close_round(p, now);
            de += me->owed_j;
            me->owed_j = 0;
        }
        /* a GPU that comes (back) starts from its value then */
        for (int k = 0; k < 2; k++)
            for (size_t g = 0; g < WT_ATTRIB_MAX_DEVICES; g++)
                if (!seen[k][g])
                    pools[k][g].have_j = false;
    }
    if (copied || !gpus[0]) /* no ledger a moment: the target keeps its GPUs and its parts */
        leave(e, listed);
    pthread_mutex_unlock(&pools_lock);
    free(devs);
    free(ents);
    if (!e->started)
        return false;
    for (size_t k = 0; k < nm; k++)
        ms[k]->energy_j += all > 0 ? de * (isnan(d[k]) ? 0 : d[k]) / all : de / (double)nm;
    return true;
}
