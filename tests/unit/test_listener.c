/* SPDX-License-Identifier: MIT */
/*
 * The processes behind a listening port (collect/listener.h), on fake procfs trees laid out as
 * the kernel's: /proc/PID/net/tcp{,6} rows (LISTEN is state 0A, the port plain hex), fd links
 * "socket:[N]", stat lines with the parent, ns/net links and cgroups. vLLM's API server and its
 * EngineCore child; TGI's launcher, its router (the listener) and the shards beside it; a server
 * started from a shell (the shell is not taken); a port two namespaces listen on.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/listener.h"
#include "runner.h"

static const char *root(void)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/procfs", wt_test_dir());
    return buf;
}

static void mkdirs(const char *path)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static const char header[] = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
                             "retrnsmt   uid  timeout inode\n";

/* proc PID: comm, parent, namespace, cgroup; fds: socket inodes it holds (0-terminated) */
static void proc(const char *pid, const char *comm, int ppid, unsigned long ns, const char *cg,
                 const unsigned long *fds)
{
    char d[1024], p[1200], l[64];
    snprintf(d, sizeof d, "%s/proc/%s", root(), pid);
    mkdirs(d);
    snprintf(p, sizeof p, "%s/fd", d);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/ns", d);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/net", d);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/stat", d);
    wt_test_write(p, "%s (%s) S %d 1 1 0 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0 100 0 0\n", pid, comm,
                  ppid);
    snprintf(p, sizeof p, "%s/cgroup", d);
    wt_test_write(p, "0::%s\n", cg);
    snprintf(p, sizeof p, "%s/ns/net", d);
    snprintf(l, sizeof l, "net:[%lu]", ns);
    unlink(p);
    WT_ASSERT(symlink(l, p) == 0);
    for (int i = 0; fds && fds[i]; i++) {
        snprintf(p, sizeof p, "%s/fd/%d", d, i + 3);
        snprintf(l, sizeof l, "socket:[%lu]", fds[i]);
        unlink(p);
        WT_ASSERT(symlink(l, p) == 0);
    }
}

/* the tcp table PID sees: one LISTEN row on port with inode, one established row beside it */
static void tcp(const char *pid, unsigned port, unsigned long inode)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/proc/%s/net/tcp", root(), pid);
    wt_test_write(p,
                  "%s   0: 0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000  "
                  "1000        0 %lu 1 0000000000000000 100 0 0 10 0\n"
                  "   1: 0100007F:%04X 0100007F:9C4C 01 00000000:00000000 00:00000000 00000000  "
                  "1000        0 777 1 0000000000000000 20 4 30 10 -1\n",
                  header, port, inode, port);
    snprintf(p, sizeof p, "%s/proc/%s/net/tcp6", root(), pid);
    wt_test_write(p, "%s", header);
}

static void tree(void)
{
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root());
    WT_ASSERT(system(cmd) == 0);
    setenv("WATTAGE_PROCFS_ROOT", root(), 1);
    const unsigned long host = 4026531840UL, pod = 4026532999UL;
    /* the daemon itself ("self") in the host namespace */
    proc("self", "wattage", 1, host, "/system.slice/wattage.service", NULL);
    proc("1", "systemd", 0, host, "/init.scope", NULL);
    /* vLLM from a shell: bash -> api server (listens on 8000) -> EngineCore */
    proc("100", "bash", 1, host, "/user.slice/session-1.scope", NULL);
    proc("101", "vllm", 100, host, "/user.slice/session-1.scope", (unsigned long[]){5001, 0});
    proc("102", "VLLM::EngineCor", 101, host, "/user.slice/session-1.scope", NULL);
    proc("103", "vim", 100, host, "/user.slice/session-1.scope", NULL);
    tcp("self", 8000, 5001);
    /* TGI in a pod: containerd-shim -> launcher -> router (listens on 3000) and two shards */
    proc("200", "containerd-shim", 1, host, "/system.slice/containerd.service", NULL);
    proc("201", "text-generation", 200, pod, "/kubepods/pod-a/c1", NULL);
    proc("202", "text-generation", 201, pod, "/kubepods/pod-a/c1", (unsigned long[]){6001, 0});
    proc("203", "python3", 201, pod, "/kubepods/pod-a/c1", NULL);
    proc("204", "python3", 201, pod, "/kubepods/pod-a/c1", NULL);
    tcp("201", 3000, 6001);
    tcp("202", 3000, 6001);
    tcp("203", 3000, 6001);
    tcp("204", 3000, 6001);
    tcp("1", 22, 42);
    tcp("100", 8000, 5001);
    tcp("101", 8000, 5001);
    tcp("102", 8000, 5001);
    tcp("103", 8000, 5001);
    tcp("200", 22, 42);
}

WT_TEST(the_listener_and_its_children_not_the_shell)
{
    tree();
    int pids[WT_LISTENER_MAX_PIDS];
    size_t n = 0;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_listener_find(8000, true, pids, WT_LISTENER_MAX_PIDS, &n, &err), 0);
    WT_EQ_INT((int)n, 2);
    WT_EQ_INT(pids[0], 101);
    WT_EQ_INT(pids[1], 102);
    unsetenv("WATTAGE_PROCFS_ROOT");
}

WT_TEST(a_pod_listener_takes_its_launcher_and_the_shards_beside_it)
{
    tree();
    int pids[WT_LISTENER_MAX_PIDS];
    size_t n = 0;
    struct wt_err err = {{0}};
    /* not on this host's loopback: every namespace is searched, the pod's alone listens */
    WT_EQ_INT(wt_listener_find(3000, false, pids, WT_LISTENER_MAX_PIDS, &n, &err), 0);
    WT_EQ_INT((int)n, 4);
    WT_EQ_INT(pids[0], 201);
    WT_EQ_INT(pids[3], 204);
    /* on loopback the daemon's own namespace has nothing on 3000 */
    WT_EQ_INT(wt_listener_find(3000, true, pids, WT_LISTENER_MAX_PIDS, &n, &err), -ENOENT);
    WT_CONTAINS(err.msg, "nothing listens on port 3000");
    unsetenv("WATTAGE_PROCFS_ROOT");
}

WT_TEST(two_namespaces_on_one_port_are_not_guessed)
{
    tree();
    /* a second pod listens on 3000 too */
    proc("300", "text-generation", 1, 4026533111UL, "/kubepods/pod-b/c1",
         (unsigned long[]){7001, 0});
    tcp("300", 3000, 7001);
    int pids[WT_LISTENER_MAX_PIDS];
    size_t n = 0;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_listener_find(3000, false, pids, WT_LISTENER_MAX_PIDS, &n, &err), -EEXIST);
    WT_CONTAINS(err.msg, "more than one network namespace");
    /* a socket nobody visible holds */
    WT_EQ_INT(wt_listener_find(22, true, pids, WT_LISTENER_MAX_PIDS, &n, &err), -ENOENT);
    unsetenv("WATTAGE_PROCFS_ROOT");
}

WT_TEST(tcp_rows_listen_only_on_their_port)
{
    unsigned long in[4];
    char text[1024];
    snprintf(text, sizeof text,
             "%s   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
             "       0 111 1 0\n"
             "   1: 0100007F:1F40 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0 "
             "       0 222 1 0\n"
             "   2: 0100007F:1F41 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0 "
             "       0 333 1 0\n",
             header);
    WT_EQ_INT((int)wt_listener_parse_tcp(text, 8000, in, 4), 1);
    WT_EQ_INT((int)in[0], 111);
    /* tcp6: a 32-digit address */
    snprintf(text, sizeof text,
             "%s   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 "
             "0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0\n",
             header);
    WT_EQ_INT((int)wt_listener_parse_tcp(text, 8000, in, 4), 1);
    WT_EQ_INT((int)in[0], 444);
}
