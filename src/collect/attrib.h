/* SPDX-License-Identifier: MIT */
/*
 * Attribution: a device's measured energy over an interval split among the processes that used
 * it, the rest to "idle", and kept per process as counters (a ledger). Two ledgers exist in the
 * daemon: the NVML collector's (each GPU's counter energy, mJ, split by per-process SM
 * utilization, else by memory used, else equally) and the CPU one (RAPL package energy, µJ,
 * split by CPU time; collect/procattr.c).
 *
 * Conservation is exact: a device's energy of an interval is an integer in its raw unit and
 * the parts are integers that sum to it (largest remainders), so for every device and every
 * window the series sum to the device's energy; a process gets energy only from a device whose
 * interval listed it.
 *
 * A process is keyed by pid and start time (/proc/PID/stat field 22), so a reused pid is
 * another process. Its owner (collect/cgroup.h) is read once, when it is first seen. A process
 * not listed any more is kept for the grace period (it may come back: a pause between kernels)
 * and then folded into its owner's series (Slurm job, pod, systemd unit, or owner "none"):
 * the per-pid series goes, the owner's grows by as much, so sums stay continuous and the number
 * of series stays bounded by the processes of the last grace period plus the owners (at most
 * WT_ATTRIB_MAX_FOLDED per device; more go to one series per owner kind).
 *
 * Readings (wt_attrib_emit), for metric M (wattage_process_gpu_energy_joules_total or
 * wattage_process_cpu_energy_joules_total), with the device's labels first:
 *   M{dev…,pid="123",owner="slurm",slurm_job="4242",slurm_step="0"}   a process
 *       (with gpu_instance="N" after pid when it runs in MIG GPU instance N)
 *   M{dev…,owner="slurm",slurm_job="4242"}                            its folded processes
 *   M{dev…,owner="idle"}                                              the unused rest
 * and, for a ledger opened with an info metric, info{dev…,method="utilization"} 1.
 * Owner labels: slurm_job, slurm_step (Slurm), pod_uid, container (its first 12 characters;
 * Kubernetes), unit (systemd); a label that would not fit WT_LABELS_LEN is left out.
 *
 * A GPU ledger belongs to one vendor ("nvidia" unless wt_attrib_set_vendor says otherwise; the
 * AMD collector's is "amd"): a device is known by its vendor and its index ("nvidia:0",
 * "amd:0", as `status` and jobs name GPUs), so a node with both vendors has one ledger each,
 * both published as the GPU ledgers, and no index collides.
 *
 * Thread-safe: one thread accounts and emits, others copy (wt_attrib_copy).
 */
#ifndef WT_ATTRIB_H
#define WT_ATTRIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/cgroup.h"
#include "core/reading.h"

enum wt_attrib_method {
    WT_ATTRIB_UTILIZATION, /* per-process utilization (NVML samples) or CPU time */
    WT_ATTRIB_MEMORY,      /* share of the device memory the processes use */
    WT_ATTRIB_EQUAL,       /* an equal split: the device says nothing per process */
};

/* "utilization", "memory", "equal". */
const char *wt_attrib_method_name(enum wt_attrib_method m);

/*
 * Splits energy (an integer in the device's raw unit) over n weights: busy (clamped to 0..1) of
 * it goes to the weights in proportion, the rest to *idle. Every part is an integer; leftover
 * units go to the largest remainders, so idle + sum(parts) == energy exactly. With n == 0 or
 * all weights 0 everything is idle. A part whose weight is 0 is 0.
 */
void wt_attrib_split(uint64_t energy, double busy, const uint64_t *weights, size_t n,
                     uint64_t *parts, uint64_t *idle);

/* One process's share of one interval on one device. */
struct wt_attrib_share {
    unsigned int pid;
    uint64_t start;  /* start time (USER_HZ ticks after boot); 0 when /proc could not say */
    uint64_t weight; /* in any unit, the same for every share of the interval */
    int instance;    /* a MIG GPU instance id (label gpu_instance), -1 for none; it is set
                      * when the process is first seen */
};

#define WT_ATTRIB_STARTS_MAX 64     /* processes whose start time a device keeps */
#define WT_ATTRIB_STARTS_REFRESH 30 /* splits between two reads of a listed process's start */

/* A device's start times of the processes of its last split. Zero-initialise. */
struct wt_attrib_starts {
    unsigned int n, age;
    unsigned int pid[WT_ATTRIB_STARTS_MAX];
    uint64_t start[WT_ATTRIB_STARTS_MAX];
};

/*
 * Fills sh[i].start of sh[0..n) (pid set): the start kept from the last split for a pid listed
 * there, else read from /proc (collect/procfs.h; 0 when it cannot say: a process gone since its
 * list keeps its energy under its pid), and keeps this split's for the next: a pid no longer
 * listed is dropped. Every WT_ATTRIB_STARTS_REFRESH calls every start is read again: a pid that
 * left and came back between two lists a second apart is the one reuse the cache could miss.
 */
void wt_attrib_starts_fill(struct wt_attrib_starts *c, struct wt_attrib_share *sh, size_t n);

#define WT_ATTRIB_MAX_DEVICES 64
#define WT_ATTRIB_MAX_PROCS 512  /* tracked per device; more are counted under their owner */
#define WT_ATTRIB_MAX_FOLDED 256 /* owner series per device; more under one per owner kind */

struct wt_attrib;

/*
 * Opens a ledger. metric: the reading id of its per-process counter; info_metric: the id of its
 * method gauge, or -1 for none. joules_per_unit converts the raw unit (1e-3 for mJ). grace_ns:
 * how long a process that is not listed keeps its own series. Returns 0 or -ENOMEM.
 */
int wt_attrib_open(int metric, int info_metric, double joules_per_unit, int64_t grace_ns,
                   struct wt_attrib **out) __attribute__((warn_unused_result));
/* Sets the vendor of a GPU ledger's devices ("nvidia", "amd"; at most 7 characters), before
 * its first interval. The default: "nvidia" for a ledger of the per-process GPU metric, ""
 * for any other (the CPU one). */
void wt_attrib_set_vendor(struct wt_attrib *a, const char *vendor);
/* Closes it (NULL is fine); unpublishes it first. */
void wt_attrib_close(struct wt_attrib *a);

/*
 * One interval of device dev (0 .. WT_ATTRIB_MAX_DEVICES-1), ending at t_ns: energy (raw units)
 * split as wt_attrib_split with the shares' weights; processes of dev not among the shares
 * start their grace period, and those past it are folded. dev_labels are the device's labels
 * (e.g. gpu="0",uuid="GPU-…"; "" for the CPU ledger), taken at its first interval. Returns 0,
 * -EINVAL for a device out of range, -ENOMEM.
 */
int wt_attrib_account(struct wt_attrib *a, unsigned int dev, const char *dev_labels, int64_t t_ns,
                      uint64_t energy, double busy, enum wt_attrib_method method,
                      const struct wt_attrib_share *shares, size_t n)
    __attribute__((warn_unused_result));

/* Appends every series of every device that has had an interval, at t_ns. 0 or -ENOMEM. */
int wt_attrib_emit(struct wt_attrib *a, int64_t t_ns, struct wt_batch *out)
    __attribute__((warn_unused_result));

/* What a copy holds: one per device, one per process or folded owner. */
#define WT_ATTRIB_VENDOR_LEN 8
struct wt_attrib_device {
    unsigned int dev;                  /* the vendor's index */
    char vendor[WT_ATTRIB_VENDOR_LEN]; /* its ledger's: "nvidia", "amd", "" for the CPUs */
    char labels[WT_LABELS_LEN];
    enum wt_attrib_method method;
    double energy_j; /* everything accounted since its first interval */
    double idle_j;
    int64_t t_ns; /* end of its latest interval */
};

struct wt_attrib_entry {
    unsigned int dev; /* with vendor, the device it is on (wt_attrib_on) */
    char vendor[WT_ATTRIB_VENDOR_LEN];
    unsigned int pid; /* 0 for a folded owner */
    uint64_t start;
    bool live; /* listed in the device's latest interval */
    bool owner_known;
    struct wt_proc_owner owner;
    double energy_j;
};

/*
 * Copies the ledger: *devs (*ndev) and *ents (*nent), caller frees both. Returns 0 or -ENOMEM.
 */
int wt_attrib_copy(struct wt_attrib *a, struct wt_attrib_device **devs, size_t *ndev,
                   struct wt_attrib_entry **ents, size_t *nent) __attribute__((warn_unused_result));

/* Whether entry e is on device d (the same vendor and index). */
bool wt_attrib_on(const struct wt_attrib_entry *e, const struct wt_attrib_device *d);

/* The device of vendor and index dev in devs[0..n), NULL when none; vendor "" or NULL: the
 * device of that index of whichever vendor has it, NVIDIA's where both do. */
const struct wt_attrib_device *wt_attrib_find(const struct wt_attrib_device *devs, size_t n,
                                              const char *vendor, unsigned int dev);

/*
 * The daemon's published ledgers, for the API: which = 0 for the GPU ledgers (one per vendor,
 * at most WT_ATTRIB_MAX_PUBLISHED), 1 for the CPU one. wt_attrib_publish adds a ledger to
 * which's (NULL unpublishes them all; closing a ledger unpublishes it); wt_attrib_copy_published
 * copies them all, one after the other in the order they were published, -ENODATA when none is
 * published.
 */
#define WT_ATTRIB_MAX_PUBLISHED 4
void wt_attrib_publish(int which, struct wt_attrib *a);
int wt_attrib_copy_published(int which, struct wt_attrib_device **devs, size_t *ndev,
                             struct wt_attrib_entry **ents, size_t *nent)
    __attribute__((warn_unused_result));

/*
 * The owner labels of o (owner="…" and the ids above) appended to labels; with folded, only
 * the owner's id (job, pod, unit), not step or container. Labels that do not fit are left out.
 */
void wt_attrib_owner_labels(char *labels, size_t n, const struct wt_proc_owner *o, bool folded);

#endif
