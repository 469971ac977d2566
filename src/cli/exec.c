/* SPDX-License-Identifier: MIT */
/*
 * `wattage exec [--job NAME] [--tag K=V]... [--gpus LIST] [--target M=X] -- CMD [ARGS...]`:
 * starts a job on the local daemon, runs CMD as a child (it sees WATTAGE_JOB, WATTAGE_URL and,
 * when they are known, WATTAGE_TOKEN, WATTAGE_CACERT, WATTAGE_CERT and WATTAGE_KEY, so its own
 * code can add marks), forwards the signals sent
 * to the wrapper (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) to it, ends the job when it
 * exits, prints the job's energy on stderr, and exits with CMD's status (128 + N when a signal
 * N ended it; 127 when CMD cannot be run).
 *
 * The job's GPUs: --gpus, else CUDA_VISIBLE_DEVICES (indices or GPU-UUIDs: NVIDIA's) and
 * ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES (AMD's; see visible_gpus), else the GPUs on
 * which NVML lists a process of CMD's process tree (CMD and its descendants, from /proc): once a
 * second for the first --detect seconds (default 60) the wrapper asks the daemon's
 * GET /api/v1/gpus/processes; once the set found has stayed the same for 3 checks (or the
 * command ended, or the time is up) it becomes the job's with POST /api/v1/jobs/{id}/gpus (they
 * then count over the job's whole window); else every GPU of the node.
 *
 * CMD always runs, whatever the daemon does (down, refusing the TLS handshake or the token,
 * hanging, answering 500): without a job, and the wrapper says once that energy is not being
 * recorded. Every request has a bound, so the daemon delays CMD by less than a second.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

static volatile sig_atomic_t child_pid;

/* Appends one GPU to list (n bytes): "," between. */
static void gpu_add(char *list, size_t n, const char *prefix, const char *g, size_t len)
{
    size_t used = strlen(list);
    int w = snprintf(list + used, n - used, "%s%s%.*s", used ? "," : "", prefix, (int)len, g);
    if (w < 0 || (size_t)w >= n - used)
        list[used] = '\0'; /* too long: that one is left out */
}

/* Whether s[0..len) is a device index. */
static bool is_index(const char *s, size_t len)
{
    size_t k = 0;
    while (k < len && isdigit((unsigned char)s[k]))
        k++;
    return len > 0 && k == len;
}

/*
 * The job's GPUs from the environment the command runs in (a job's scheduler sets them): CUDA's
 * indices are NVIDIA's ("nvidia:N"; a GPU-… UUID as it is), ROCm's are AMD's: ROCR_VISIBLE_DEVICES
 * (indices "amd:N", or UUIDs GPU-<unique id>: wattage's AMD-<unique id>), and
 * HIP_VISIBLE_DEVICES, indices into what ROCR_VISIBLE_DEVICES leaves (all AMD GPUs without it).
 * True when any GPU came of them (into out, comma-separated).
 */
static bool visible_gpus(const char *cuda, const char *rocr, const char *hip, char *out, size_t n)
{
    out[0] = '\0';
    if (cuda && *cuda && strstr(cuda, "MIG-"))
        fprintf(stderr, "wattage exec: CUDA_VISIBLE_DEVICES names MIG instances; the job counts "
                        "every NVIDIA GPU\n");
    else if (cuda && *cuda)
        for (const char *p = cuda; *p;) {
            size_t len = strcspn(p, ",");
            if (len)
                gpu_add(out, n, is_index(p, len) ? "nvidia:" : "", p, len);
            p += len + (p[len] == ',');
        }
    /* ROCR's list, each element as a job GPU */
    char rl[64][48];
    size_t nr = 0;
    for (const char *p = rocr ? rocr : ""; *p && nr < 64;) {
        size_t len = strcspn(p, ",");
        if (len && len < 40) {
            if (is_index(p, len))
                snprintf(rl[nr++], sizeof rl[0], "amd:%.*s", (int)len, p);
            else if (len > 4 && strncmp(p, "GPU-", 4) == 0)
                snprintf(rl[nr++], sizeof rl[0], "AMD-%.*s", (int)len - 4, p + 4);
        }
        p += len + (p[len] == ',');
    }
    if (hip && *hip) {
        for (const char *p = hip; *p;) {
            size_t len = strcspn(p, ",");
            if (is_index(p, len)) {
                unsigned long k = strtoul(p, NULL, 10);
                if (rocr && *rocr) {
                    if (k < nr)
                        gpu_add(out, n, "", rl[k], strlen(rl[k]));
                } else {
                    gpu_add(out, n, "amd:", p, len);
                }
            }
            p += len + (p[len] == ',');
        }
    } else {
        for (size_t k = 0; k < nr; k++)
            gpu_add(out, n, "", rl[k], strlen(rl[k]));
    }
    return out[0] != '\0';
}

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define NFWD (sizeof forwarded / sizeof forwarded[0])

/*
 * Signals sent by a process (kill, a scheduler) are passed on. Those the kernel sends to the
 * whole foreground process group (Ctrl-C at a terminal) reached the child already.
 */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (child_pid > 0 && si->si_code <= 0)
        kill((pid_t)child_pid, sig);
}

/* A job name from the command: its basename and our pid, in the characters names allow. */
static void default_name(const char *cmd, char *out, size_t n)
{
    char tmp[256], base[48];
    snprintf(tmp, sizeof tmp, "%s", cmd);
    snprintf(base, sizeof base, "%s", basename(tmp));
    for (char *p = base; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' && *p != '-')
            *p = '_';
    }
    snprintf(out, n, "%s-%ld", base[0] ? base : "job", (long)getpid());
}

#define TREE_MAX 4096

/* The pids of root's process tree (root and its descendants) from /proc; returns how many. */
static size_t process_tree(pid_t root, pid_t *tree, size_t cap)
{
    size_t n = 0, np = 0, pcap = 0;
    struct pp {
        pid_t pid, ppid;
    } *all = NULL;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[64], buf[512];
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(path, sizeof path, "/proc/%.20s/stat", e->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
        char *rp = strrchr(buf, ')');
        int ppid;
        char state;
        if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2)
            continue;
        if (np == pcap) {
            size_t nc = pcap ? 2 * pcap : 1024;
            struct pp *na = realloc(all, nc * sizeof *all);
            if (!na)
                break;
            all = na;
            pcap = nc;
        }
        all[np].pid = (pid_t)atoi(buf);
        all[np].ppid = (pid_t)ppid;
        np++;
    }
    if (d)
        closedir(d);
    if (cap)
        tree[n++] = root;
    /* Breadth first: each pass adds the children of what is in the tree. */
    for (size_t done = 0; done < n; done++) {
        for (size_t i = 0; i < np && n < cap; i++) {
            if (all[i].ppid == tree[done])
                tree[n++] = all[i].pid;
        }
    }
    free(all);
    return n;
}

/*
 * The GPUs (a JSON array of indices, into out) on which the daemon's NVML process list shows a
 * process of child's tree. Returns 1 when there are some, 0 when none (yet), -1 when the daemon
 * has no process list (then every GPU it is).
 */
static int find_gpus(const struct wt_cli_api *api, pid_t child, char *out, size_t n)
{
    long st = 0;
    char *rep = NULL, why[256];
    pid_t *tree = malloc(TREE_MAX * sizeof *tree);
    cJSON *v = NULL, *gpus = cJSON_CreateArray();
    int res = 0;
    out[0] = '\0';
    if (!tree || !gpus ||
        wt_cli_api_call(api, "GET", "/api/v1/gpus/processes", NULL, &st, &rep, why, sizeof why))
        goto out;
    if (st != 200) {
        res = -1;
        goto out;
    }
    v = cJSON_Parse(rep);
    size_t nt = process_tree(child, tree, TREE_MAX);
    const cJSON *g;
    cJSON_ArrayForEach(g, v)
    {
        const char *idx = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "gpu"));
        const char *vendor = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(g, "vendor"));
        char amd[24];
        /* an AMD GPU by its vendor's index: a plain one may be NVIDIA's too */
        if (idx && vendor && strcmp(vendor, "amd") == 0) {
            snprintf(amd, sizeof amd, "amd:%.15s", idx);
            idx = amd;
        }
        const cJSON *p;
        bool ours = false;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(g, "pids"))
        {
            for (size_t k = 0; cJSON_IsNumber(p) && k < nt && !ours; k++)
                ours = (double)tree[k] == p->valuedouble;
        }
        if (ours && idx)
            cJSON_AddItemToArray(gpus, cJSON_CreateString(idx));
    }
    if (cJSON_GetArraySize(gpus) > 0) {
        char *txt = cJSON_PrintUnformatted(gpus);
        if (txt && strlen(txt) < n) {
            snprintf(out, n, "%s", txt);
            res = 1;
        }
        cJSON_free(txt);
    }
out:
    cJSON_Delete(v);
    cJSON_Delete(gpus);
    free(rep);
    free(tree);
    return res;
}

/* Sets the job's GPUs (a JSON array) through POST /api/v1/jobs/{id}/gpus. */
static void set_gpus(const struct wt_cli_api *api, const char *id, const char *gpus, bool quiet)
{
    char path[96], why[256], body[1100];
    long st = 0;
    char *rep = NULL;
    snprintf(path, sizeof path, "/api/v1/jobs/%s/gpus", id);
    snprintf(body, sizeof body, "{\"gpus\": %s}", gpus);
    if (wt_cli_api_call(api, "POST", path, body, &st, &rep, why, sizeof why) != 0)
        fprintf(stderr, "wattage exec: setting the job's GPUs: %s\n", why);
    else if (st != 200)
        fprintf(stderr, "wattage exec: setting the job's GPUs: HTTP %ld: %s", st, rep);
    else if (!quiet)
        fprintf(stderr, "wattage exec: the command runs on GPUs %s (NVML's process list)\n", gpus);
    free(rep);
}

/*
 * The GPU search of a running command: once a second, until the set found has stayed the same
 * for STABLE_CHECKS checks (a launcher's workers start one after another), the command exits,
 * or the time is up; then the last set found, if any, becomes the job's.
 */
#define STABLE_CHECKS 3
#define GPUS_JSON_MAX 1024

struct gpu_search {
    bool on;
    double until, next;
    int stable;
    char last[GPUS_JSON_MAX];
};

/* One step of the search; finish: the command ended, settle now. */
static void search_step(struct gpu_search *gs, const struct wt_cli_api *api, const char *id,
                        pid_t child, double now, bool finish, bool quiet)
{
    char found[GPUS_JSON_MAX];
    if (!gs->on || (!finish && now < gs->next))
        return;
    gs->next = now + 1;
    int r = finish ? 0 : find_gpus(api, child, found, sizeof found);
    if (r < 0) {
        gs->on = false;
        return;
    }
    if (r > 0) {
        gs->stable = strcmp(found, gs->last) == 0 ? gs->stable + 1 : 1;
        snprintf(gs->last, sizeof gs->last, "%s", found);
    }
    if (finish || gs->stable >= STABLE_CHECKS || now >= gs->until) {
        if (gs->last[0])
            set_gpus(api, id, gs->last, quiet);
        gs->on = false;
    }
}

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Sets name to path made absolute (the command may change directory), when path is set. */
static void child_env_path(const char *name, const char *path)
{
    char *abs = path[0] ? realpath(path, NULL) : NULL;
    if (path[0])
        setenv(name, abs ? abs : path, 1);
    free(abs);
}

/*
 * Starts the job. Fills id (empty when there is none) and, without a job, why. The daemon gets
 * START_CONNECT_MS to accept the connection (and the TLS handshake) and START_TIMEOUT_MS for the
 * whole request, so a daemon that is down, refuses or hangs delays the command by less than a
 * second.
 */
#define START_CONNECT_MS 500L
#define START_TIMEOUT_MS 800L

static void start_job(struct wt_cli_api *api, const char *name, char **tags, int ntags,
                      const char *gpus, char **targets, int ntargets, char *id, size_t idn,
                      char *why, size_t whyn)
{
    char *body = NULL, *rep = NULL;
    long st = 0;
    id[0] = '\0';
    if (wt_cli_job_body("exec", name, tags, ntags, gpus, targets, ntargets, &body) != 0) {
        snprintf(why, whyn, "the job's tags or target are wrong (see above)");
        return;
    }
    api->connect_ms = START_CONNECT_MS;
    api->timeout_ms = START_TIMEOUT_MS;
    if (wt_cli_api_call(api, "POST", "/api/v1/jobs", body, &st, &rep, why, whyn) == 0) {
        cJSON *v = cJSON_Parse(rep);
        const cJSON *jid = cJSON_GetObjectItemCaseSensitive(v, "id");
        if (st == 201 && cJSON_IsNumber(jid)) {
            snprintf(id, idn, "%.0f", jid->valuedouble);
        } else {
            const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "error"));
            snprintf(why, whyn, "the daemon at %s refused the job: %.200s (HTTP %ld)", api->url,
                     m ? m : rep, st);
        }
        cJSON_Delete(v);
    }
    free(rep);
    cJSON_free(body);
}

static const struct wt_cli_opt exec_opts[] = {
    {"job", 'J', "NAME", "the job's name (default the command's name and the wrapper's pid)"},
    {"tag", 't', "K=V", "a tag of the job", WT_OPT_REPEAT},
    {"gpus", 'g', "LIST",
     "its GPUs (default CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES, else "
     "those NVML shows the command on)"},
    {"target", 'x', "M=X", "energy to a target: the first mark with counter M reaching X",
     WT_OPT_REPEAT},
    {"detect", 'D', "S", "look for the command's GPUs during its first S seconds (default 60)"},
    {"wait", 'w', "S", "wait at most S seconds for the final figures (default 5)"},
    {"json", WT_OPT_JSON, NULL, "print the job as JSON on stderr"},
    {"quiet", 'q', NULL, "print no figures"},
    {NULL}};

const struct wt_cli_form wt_cli_form_exec = {
    "exec",
    "-- CMD [ARGS...]",
    "runs CMD as a job of the daemon and prints its energy when it ends; CMD runs whatever the "
    "daemon does",
    __FILE__,
    true,
    {exec_opts, wt_cli_conn_opts}};

int wt_cmd_exec(int argc, char **argv)
{
    const char *name = NULL, *gpus = NULL;
    struct wt_cli_common co = {0};
    char *tags[64], *targets[4], namebuf[80], idbuf[32] = "";
    int ntags = 0, ntargets = 0, c;
    double wait_s = 5, detect_s = 60;
    bool quiet = false;

    optind = 1;
    /* The form stops at the first operand, so CMD's own options stay its own. */
    while ((c = wt_cli_next(&wt_cli_form_exec, argc, argv, &co)) != -1) {
        switch (c) {
        case 'J':
            name = optarg;
            break;
        case 't':
            if (ntags < 64)
                tags[ntags++] = optarg;
            break;
        case 'g':
            gpus = optarg;
            break;
        case 'x':
            if (ntargets < 4)
                targets[ntargets++] = optarg;
            break;
        case 'w':
            wait_s = atof(optarg);
            break;
        case 'D':
            detect_s = atof(optarg);
            break;
        case 'q':
            quiet = true;
            break;
        case WT_CLI_HELP:
            return 0;
        default:
            return 2;
        }
    }
    if (optind >= argc) {
        wt_cli_help(stderr, &wt_cli_form_exec);
        return 2;
    }
    char **cmd = argv + optind;
    if (!name) {
        default_name(cmd[0], namebuf, sizeof namebuf);
        name = namebuf;
    }
    char envgpus[1024];
    if (!gpus && visible_gpus(getenv("CUDA_VISIBLE_DEVICES"), getenv("ROCR_VISIBLE_DEVICES"),
                              getenv("HIP_VISIBLE_DEVICES"), envgpus, sizeof envgpus))
        gpus = envgpus;

    /* Whatever happens from here on, the command runs: a monitor must never stop the work it
     * measures. Without a job it says so once. */
    struct wt_cli_api api;
    char why[600] = "";
    if (wt_cli_api_setup(&co.conn, &api) != 0)
        snprintf(why, sizeof why, "the options or the configuration are wrong (see above)");
    else
        start_job(&api, name, tags, ntags, gpus, targets, ntargets, idbuf, sizeof idbuf, why,
                  sizeof why);
    if (!idbuf[0])
        fprintf(stderr,
                "wattage exec: energy is not being recorded: %s; running the command "
                "without a job\n",
                why);

    /* Signals are blocked from before the fork until the handlers are in place, so none is
     * lost in between; the child gets back the mask and dispositions it would have had. */
    sigset_t all, old;
    sigemptyset(&all);
    for (size_t i = 0; i < NFWD; i++)
        sigaddset(&all, forwarded[i]);
    sigprocmask(SIG_BLOCK, &all, &old);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "wattage exec: fork: %s\n", strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        return 1;
    }
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (idbuf[0]) {
            setenv("WATTAGE_JOB", idbuf, 1);
            setenv("WATTAGE_URL", api.url, 1);
            if (api.token[0])
                setenv("WATTAGE_TOKEN", api.token, 1);
            child_env_path("WATTAGE_CACERT", api.cacert);
            child_env_path("WATTAGE_CERT", api.cert);
            child_env_path("WATTAGE_KEY", api.key);
        }
        execvp(cmd[0], cmd);
        int e = errno;
        fprintf(stderr, "wattage exec: %s: %s\n", cmd[0], strerror(e));
        _exit(e == EACCES || e == ENOEXEC ? 126 : 127);
    }
    child_pid = pid;
    struct sigaction sa = {0};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NFWD; i++)
        sigaction(forwarded[i], &sa, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);

    /* Without --gpus or CUDA_VISIBLE_DEVICES, look for the command's processes on the GPUs
     * once a second while it starts up. */
    int status = 0;
    api.connect_ms = 500;
    api.timeout_ms = 1000;
    struct gpu_search gs = {.on = idbuf[0] && !gpus && detect_s > 0};
    gs.next = mono_s() + 1;
    gs.until = gs.next - 1 + detect_s;
    for (;;) {
        pid_t w = waitpid(pid, &status, gs.on ? WNOHANG : 0);
        if (w == pid)
            break;
        if (w < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "wattage exec: waitpid: %s\n", strerror(errno));
            status = 1 << 8;
            break;
        }
        search_step(&gs, &api, idbuf, pid, mono_s(), false, quiet);
        struct timespec d = {0, 50 * 1000000L};
        nanosleep(&d, NULL);
    }
    search_step(&gs, &api, idbuf, pid, mono_s(), true, quiet);
    child_pid = 0;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    if (idbuf[0]) {
        char path[96], *rep = NULL;
        long st = 0;
        /* The daemon answered a moment ago; it still gets a bound, so the wrapper always ends. */
        api.connect_ms = 1000;
        api.timeout_ms = 2000;
        snprintf(path, sizeof path, "/api/v1/jobs/%s/end", idbuf);
        if (wt_cli_api_call(&api, "POST", path, "{}", &st, &rep, why, sizeof why) != 0)
            fprintf(stderr, "wattage exec: cannot end job %s: %s\n", idbuf, why);
        else if (st != 200)
            fprintf(stderr, "wattage exec: ending job %s: HTTP %ld: %s\n", idbuf, st, rep);
        free(rep);
        bool final = false;
        cJSON *j = quiet ? NULL : wt_cli_final_job(&api, idbuf, NULL, wait_s, &final);
        if (j) {
            if (!co.json)
                fprintf(stderr, "wattage exec: ");
            wt_cli_print_ended(stderr, j, co.json, final);
        }
        cJSON_Delete(j);
    }
    return code;
}
