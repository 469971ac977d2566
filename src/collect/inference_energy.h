/* SPDX-License-Identifier: MIT */
/*
 * wattage_inference_energy_joules_total (collect/inference.h): the energy of a serving target's
 * GPUs since the daemon started, from the GPU ledgers of the attribution (NVML's and ROCm SMI's,
 * collect/attrib.h). A GPU that several targets list is shared between them by the generated
 * tokens each counted (so that it is counted once), then a target's part between its models the
 * same way. One struct wt_inf_energy per target, used by that target's thread alone; the GPUs'
 * sharing between the targets' threads is kept behind a lock here.
 */
#ifndef WT_INFERENCE_ENERGY_H
#define WT_INFERENCE_ENERGY_H

#include <stdbool.h>
#include <stddef.h>

#include "collect/attrib.h"

#define WT_INF_MODEL_LEN 96
#define WT_INF_MAX_MODELS 32 /* per target, with an energy counter */

/* The GPU vendors, as the attribution ledgers name them; a gpus entry "amd:1" names one. */
extern const char *const wt_inf_gpu_vendors[2];

struct wt_inf_energy {
    bool started;        /* the GPU ledger was seen once: the counters are published */
    bool said_ambiguous; /* a plain index of gpus that both vendors have, said once */
    /* per model its generated tokens at the last poll and its energy */
    struct wt_inf_model_energy {
        char model[WT_INF_MODEL_LEN];
        double generated; /* NaN: not seen yet */
        double energy_j;
    } em[WT_INF_MAX_MODELS];
    size_t nem;
};

/* One kept value of a scrape: its model, and its value where it counts generated tokens. */
struct wt_inf_value {
    const char *model;
    double generated; /* NaN: not a generated-tokens counter */
};

/*
 * Adds to target's models, the models of v[0..n) (one scrape's values), its part of the energy
 * of GPUs gpus ("0,amd:1"; "" none) since the last call: of each GPU, the energy since its round
 * opened, shared between the targets listing it by the generated tokens each counted in the
 * round (inference_energy.c says when a round closes; a target's part of one closed at another
 * target's poll comes at its next poll), then between the models by the generated tokens each
 * counted since the last call (a counter that dropped: the server restarted, its value counts),
 * equally when none generated. Returns whether the counters (e->em) are to be published: once a
 * GPU ledger was seen.
 */
bool wt_inf_energy_account(struct wt_inf_energy *e, const char *target, const char *gpus,
                           const struct wt_inf_value *v, size_t n);

/* e no longer shares any GPU (its target closes); e may be one that never polled. */
void wt_inf_energy_close(struct wt_inf_energy *e);

#endif
