/* SPDX-License-Identifier: MIT */
/*
 * A process's owner from /proc/PID/cgroup: Slurm under cgroup v1 and v2 (job, step), Kubernetes
 * under the cgroupfs and systemd drivers (pod uid with dashes, QoS, container id for containerd,
 * docker and CRI-O but not CRI-O's conmon), systemd units, hybrid hosts where a v1 line names
 * Slurm and the unified line only systemd, and malformed files naming the line.
 */
#include <errno.h>
#include <sys/stat.h>

#include "collect/cgroup.h"
#include "runner.h"

#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static struct wt_proc_owner parse(const char *text)
{
    struct wt_proc_owner o;
    struct wt_err err = {{0}};
    int rc = wt_cgroup_parse(text, &o, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "parse: %d %s", rc, err.msg);
    return o;
}

WT_TEST(cgroup_slurm_v1_and_v2)
{
    struct wt_proc_owner o = parse("12:pids:/slurm/uid_1000/job_4242/step_0/task_1\n"
                                   "4:memory:/slurm/uid_1000/job_4242/step_0/task_1\n"
                                   "1:name=systemd:/system.slice/slurmd.service\n");
    WT_EQ_INT(o.kind, WT_OWNER_SLURM);
    WT_EQ_STR(o.slurm_job, "4242");
    WT_EQ_STR(o.slurm_step, "0");
    WT_EQ_STR(wt_owner_kind_name(o.kind), "slurm");

    o = parse("0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n");
    WT_EQ_INT(o.kind, WT_OWNER_SLURM);
    WT_EQ_STR(o.slurm_job, "77");
    WT_EQ_STR(o.slurm_step, "batch");
    WT_EQ_STR(o.unit, "slurmstepd.scope");

    /* several slurmd on one host: <node>_slurmstepd.scope, and v1's /slurm_<node> */
    o = parse("0::/system.slice/node7_slurmstepd.scope/job_9/step_extern/slurm_processes\n");
    WT_EQ_STR(o.slurm_job, "9");
    WT_EQ_STR(o.slurm_step, "extern");
    o = parse("3:cpuacct:/slurm_node7/uid_0/job_10/step_interactive\n");
    WT_EQ_STR(o.slurm_job, "10");
    WT_EQ_STR(o.slurm_step, "interactive");
    /* the job's own cgroup, outside any step */
    o = parse("0::/system.slice/slurmstepd.scope/job_11\n");
    WT_EQ_INT(o.kind, WT_OWNER_SLURM);
    WT_EQ_STR(o.slurm_step, "");
    /* job_ outside a Slurm hierarchy is not Slurm */
    o = parse("0::/user.slice/job_12.scope\n");
    WT_EQ_INT(o.kind, WT_OWNER_SYSTEMD);
    WT_EQ_STR(o.slurm_job, "");
}

WT_TEST(cgroup_kubernetes_cgroupfs_and_systemd_drivers)
{
    struct wt_proc_owner o =
        parse("0::/kubepods/burstable/pod5f1c2d3e-aaaa-4bbb-8ccc-0123456789ab/" CID "\n");
    WT_EQ_INT(o.kind, WT_OWNER_K8S);
    WT_EQ_STR(o.pod_uid, "5f1c2d3e-aaaa-4bbb-8ccc-0123456789ab");
    WT_EQ_STR(o.pod_qos, "burstable");
    WT_EQ_STR(o.container, CID);
    WT_EQ_STR(wt_owner_kind_name(o.kind), "kubernetes");

    o = parse("0::/kubepods.slice/kubepods-besteffort.slice/"
              "kubepods-besteffort-pod5f1c2d3e_aaaa_4bbb_8ccc_0123456789ab.slice/"
              "cri-containerd-" CID ".scope\n");
    WT_EQ_INT(o.kind, WT_OWNER_K8S);
    WT_EQ_STR(o.pod_uid, "5f1c2d3e-aaaa-4bbb-8ccc-0123456789ab");
    WT_EQ_STR(o.pod_qos, "besteffort");
    WT_EQ_STR(o.container, CID);

    /* guaranteed pods sit right under kubepods; docker's and CRI-O's scopes */
    o = parse("0::/kubepods.slice/kubepods-pod11112222_3333_4444_5555_666677778888.slice/"
              "docker-" CID ".scope\n");
    WT_EQ_STR(o.pod_qos, "guaranteed");
    WT_EQ_STR(o.pod_uid, "11112222-3333-4444-5555-666677778888");
    WT_EQ_STR(o.container, CID);
    o = parse("0::/kubepods.slice/kubepods-pod11112222_3333_4444_5555_666677778888.slice/"
              "crio-conmon-" CID ".scope\n");
    WT_EQ_INT(o.kind, WT_OWNER_K8S);
    WT_EQ_STR(o.container, ""); /* the monitor, not the container */
    /* the pod's own cgroup (the pause process's parent) */
    o = parse("0::/kubepods/podabc\n");
    WT_EQ_STR(o.pod_uid, "abc");
    WT_EQ_STR(o.container, "");
    /* kubepods without a pod is nobody's */
    o = parse("0::/kubepods/burstable\n");
    WT_EQ_INT(o.kind, WT_OWNER_NONE);
    WT_EQ_STR(o.pod_qos, "");
}

WT_TEST(cgroup_systemd_units_and_root)
{
    struct wt_proc_owner o = parse("0::/system.slice/nvidia-persistenced.service\n");
    WT_EQ_INT(o.kind, WT_OWNER_SYSTEMD);
    WT_EQ_STR(o.unit, "nvidia-persistenced.service");
    o = parse("0::/user.slice/user-1000.slice/user@1000.service/app.slice/"
              "app-jupyter-lab@x.service\n");
    WT_EQ_STR(o.unit, "app-jupyter-lab@x.service");
    o = parse("0::/user.slice/user-1000.slice/session-3.scope\n");
    WT_EQ_STR(o.unit, "session-3.scope");
    o = parse("0::/\n");
    WT_EQ_INT(o.kind, WT_OWNER_NONE);
    WT_EQ_STR(wt_owner_kind_name(o.kind), "none");
    o = parse("");
    WT_EQ_INT(o.kind, WT_OWNER_NONE);
}

WT_TEST(cgroup_hybrid_host_v1_names_slurm_unified_names_systemd)
{
    struct wt_proc_owner o = parse("0::/system.slice/slurmd.service\n"
                                   "7:memory:/slurm/uid_5/job_31/step_2/task_0\n");
    WT_EQ_INT(o.kind, WT_OWNER_SLURM);
    WT_EQ_STR(o.slurm_job, "31");
    WT_EQ_STR(o.slurm_step, "2");
    /* with equal owners the unified line wins */
    o = parse("1:name=systemd:/system.slice/a.service\n0::/system.slice/b.service\n");
    WT_EQ_STR(o.unit, "b.service");
}

WT_TEST(cgroup_malformed_lines_name_the_line)
{
    struct wt_proc_owner o;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_cgroup_parse("0::/ok\nnot a cgroup line\n", &o, &err), -EINVAL);
    WT_CONTAINS(err.msg, "cgroup line 2");
    WT_EQ_INT(wt_cgroup_parse("0::relative\n", &o, &err), -EINVAL);
    WT_CONTAINS(err.msg, "line 1");
}

WT_TEST(cgroup_owner_reads_the_procfs_root)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/proc", wt_test_dir());
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/proc/4321", wt_test_dir());
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/proc/4321/cgroup", wt_test_dir());
    wt_test_write(p, "0::/system.slice/slurmstepd.scope/job_5/step_0/user/task_0\n");
    setenv("WATTAGE_PROCFS_ROOT", wt_test_dir(), 1);
    struct wt_proc_owner o;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_cgroup_owner(4321, &o, &err), 0);
    WT_EQ_STR(o.slurm_job, "5");
    /* a process that exited between the list and the read */
    WT_EQ_INT(wt_cgroup_owner(4322, &o, &err), -ENOENT);
    WT_CONTAINS(err.msg, "proc/4322/cgroup");
    wt_test_write(p, "garbage\n");
    WT_EQ_INT(wt_cgroup_owner(4321, &o, &err), -EINVAL);
    WT_CONTAINS(err.msg, "proc/4321/cgroup: cgroup line 1");
}

WT_TEST(cgroup_pod_namespace_and_name_from_the_pod_log_dirs)
{
    char p[1024], ns[64], name[254];
    snprintf(p, sizeof p, "%s/pods", wt_test_dir());
    mkdir(p, 0755);
    const char *dirs[] = {
        "kube-system_coredns-5d78c9869d-abcde_0f1e2d3c-aaaa-bbbb-cccc-000000000001",
        "ml_train-0_0f1e2d3c-aaaa-bbbb-cccc-000000000002",
        "not-a-pod-dir_0f1e2d3c-aaaa-bbbb-cccc-000000000003"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/pods/%s", wt_test_dir(), dirs[i]);
        WT_EQ_INT(mkdir(p, 0755), 0);
    }
    snprintf(p, sizeof p, "%s/pods", wt_test_dir());
    setenv("WATTAGE_PODLOG_ROOT", p, 1);
    WT_EQ_INT(
        wt_pod_lookup("0f1e2d3c-aaaa-bbbb-cccc-000000000002", ns, sizeof ns, name, sizeof name), 0);
    WT_EQ_STR(ns, "ml");
    WT_EQ_STR(name, "train-0");
    WT_EQ_INT(
        wt_pod_lookup("0f1e2d3c-aaaa-bbbb-cccc-000000000001", ns, sizeof ns, name, sizeof name), 0);
    WT_EQ_STR(ns, "kube-system");
    WT_EQ_STR(name, "coredns-5d78c9869d-abcde");
    /* a directory whose name does not parse (one '_'), and a uid with no directory */
    WT_EQ_INT(
        wt_pod_lookup("0f1e2d3c-aaaa-bbbb-cccc-000000000003", ns, sizeof ns, name, sizeof name),
        -ENOENT);
    WT_EQ_STR(ns, "");
    WT_EQ_INT(
        wt_pod_lookup("0f1e2d3c-aaaa-bbbb-cccc-000000000009", ns, sizeof ns, name, sizeof name),
        -ENOENT);
    /* a missing root */
    snprintf(p, sizeof p, "%s/nowhere", wt_test_dir());
    setenv("WATTAGE_PODLOG_ROOT", p, 1);
    WT_EQ_INT(
        wt_pod_lookup("0f1e2d3c-aaaa-bbbb-cccc-000000000002", ns, sizeof ns, name, sizeof name),
        -ENOENT);
    unsetenv("WATTAGE_PODLOG_ROOT");
}
