/* SPDX-License-Identifier: MIT */
/*
 * Who owns a process, from its cgroup path (<procfs_root>/proc/PID/cgroup):
 *   Slurm, cgroup v1:  N:memory:/slurm/uid_1000/job_4242/step_0/task_0  (also /slurm_<node>/...)
 *   Slurm, cgroup v2:  0::/system.slice/slurmstepd.scope/job_4242/step_batch/user/task_0
 *   Kubernetes, cgroupfs driver: 0::/kubepods/burstable/pod<uid>/<container id>
 *   Kubernetes, systemd driver:  0::/kubepods.slice/kubepods-besteffort.slice/
 *       kubepods-besteffort-pod<uid with _>.slice/cri-containerd-<container id>.scope
 *       (also docker-<id>.scope, crio-<id>.scope)
 *   systemd: the innermost .service or .scope unit (e.g. /system.slice/nvidia-persistenced.service,
 *       /user.slice/user-1000.slice/session-3.scope)
 * The cgroup v2 line (hierarchy 0) wins; on a v1-only host the first line that names an owner
 * (memory, cpu, cpuacct, pids... all carry the same path for Slurm and the kubelet) decides.
 */
#ifndef WT_CGROUP_H
#define WT_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

enum wt_owner_kind {
    WT_OWNER_NONE,    /* the root cgroup, or a path that names nobody */
    WT_OWNER_SLURM,   /* job (and step when inside one) */
    WT_OWNER_K8S,     /* pod (and container when inside one) */
    WT_OWNER_SYSTEMD, /* a unit */
};

struct wt_proc_owner {
    enum wt_owner_kind kind;
    char slurm_job[24];  /* "4242" (a job id; array tasks have their own id) */
    char slurm_step[24]; /* "0", "batch", "extern", "interactive"; "" outside a step */
    char pod_uid[40];    /* dashes, as the API server writes it */
    char pod_qos[12];    /* guaranteed, burstable, besteffort */
    char container[72];  /* the runtime's id (64 hex for containerd, docker and CRI-O); "" none */
    char unit[128];      /* systemd unit, also filled under Slurm and Kubernetes when named */
    char pod_namespace[64]; /* from the kubelet's pod directory; "" when none names the uid */
    char pod_name[254];
};

/* The owner's name for the API and labels: "slurm", "kubernetes", "systemd" or "none". */
const char *wt_owner_kind_name(enum wt_owner_kind kind);

/*
 * Parses the text of a /proc/PID/cgroup file. Returns 0 (out->kind may be WT_OWNER_NONE), or
 * -EINVAL for a line that is not hierarchy:controllers:path, with err naming the line.
 */
int wt_cgroup_parse(const char *text, struct wt_proc_owner *out, struct wt_err *err);

/* Reads and parses <procfs_root>/proc/PID/cgroup. Returns 0, -ENOENT (gone), or -errno. */
int wt_cgroup_owner(pid_t pid, struct wt_proc_owner *out, struct wt_err *err);

/*
 * Finds the pod's namespace and name from the kubelet's log directories,
 * <podlog root>/<namespace>_<name>_<uid>/ (root WATTAGE_PODLOG_ROOT, default /var/log/pods).
 * Returns 0 with both filled, -ENOENT when no directory names the uid (or its name does not
 * parse), -errno when the root cannot be read.
 */
int wt_pod_lookup(const char *pod_uid, char *ns, size_t ns_cap, char *name, size_t name_cap);

#endif
