/* SPDX-License-Identifier: MIT */
/*
 * `wattage doctor [-c FILE] [--db FILE] [--json]`: what this node can measure, and why not.
 * Each check reads the real thing the daemon would use, through the same code: the NVML
 * collector (library, driver version, which GPUs have the energy counter), the RAPL collector
 * (readable energy_uj, and the fix when CVE-2020-8694 closed it), the kernel's clock discipline,
 * every configured PDU/BMC/meter target (opened and polled once, all at the same time, each
 * within its own timeout), the store (opens, quick_check, size, newest reading) and the listen
 * address (reachable from the network without TLS or a token).
 *
 * A check ends ok, warn (works, but less well or less safely), absent (not on this host) or
 * fail (something the node needs, or the configuration asks for, does not work). The exit status
 * is 1 when a check failed or when no source of energy is left at all, else 0; 2 for bad usage
 * or a bad configuration.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "alert/alert.h"
#include "cli/cli.h"
#include "collect/amdsmi.h"
#include "collect/collector.h"
#include "collect/hwmon.h"
#include "collect/nvml.h"
#include "collect/rapl.h"
#include "collect/rocm.h"
#include "core/clock.h"
#include "core/health.h"
#include "serve/kafka.h"
#include "serve/otlp.h"
#include "store/store.h"

enum status { ST_OK, ST_WARN, ST_ABSENT, ST_FAIL };
static const char *const status_names[] = {"ok", "warn", "absent", "fail"};

/* The report: one check per line of the human output, one object of "checks" in JSON. */
struct report {
    cJSON *checks; /* array */
    int count[4];  /* per status */
    bool energy;   /* some source of energy works: a GPU's counter or power, or RAPL */
    bool json;
};

/* Adds a check; returns its object so the caller can add details (owned by the report). */
static cJSON *add_check(struct report *r, const char *check, const char *key, enum status st,
                        const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static cJSON *add_check(struct report *r, const char *check, const char *key, enum status st,
                        const char *fix, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->count[st]++;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "check", check);
    if (key && *key)
        cJSON_AddStringToObject(o, "key", key);
    cJSON_AddStringToObject(o, "status", status_names[st]);
    cJSON_AddStringToObject(o, "message", msg);
    if (fix)
        cJSON_AddStringToObject(o, "fix", fix);
    cJSON_AddItemToArray(r->checks, o);
    return o;
}

/* ---- NVML: the library, the driver, and per GPU what it can report ---- */

struct gpu_seen {
    char gpu[16], uuid[96], model[96];
    bool up, power, energy;
};

static void check_nvml(const struct wt_config *cfg, struct report *r)
{
    const struct wt_collector_ops *ops = &wt_nvml_collector;
    if (!cfg->collectors.nvml.enabled) {
        add_check(r, "nvml", NULL, ST_ABSENT, NULL,
                  "disabled in the configuration "
                  "(collectors.nvml.enabled)");
        return;
    }
    void *st = NULL;
    struct wt_err err = {{0}};
    int rc = ops->open(cfg, &st, &err);
    if (rc == -ENOENT) {
        add_check(r, "nvml", NULL, ST_ABSENT,
                  "install the NVIDIA driver (libnvidia-ml.so.1), or point "
                  "collectors.nvml.library at it",
                  "no NVIDIA GPU measured: %s", err.msg);
        ops->close(st);
        return;
    }
    if (rc != 0) {
        add_check(r, "nvml", NULL, ST_FAIL, NULL, "%s", err.msg);
        ops->close(st);
        return;
    }
    struct wt_nvml_info info = {{0}};
    (void)wt_nvml_get_info(st, &info);
    cJSON *o = add_check(r, "nvml", NULL, ST_OK, NULL, "%s: driver %s, %u GPU%s", info.library,
                         info.driver_version[0] ? info.driver_version : "unknown", info.gpu_count,
                         info.gpu_count == 1 ? "" : "s");
    if (o) {
        cJSON_AddStringToObject(o, "library", info.library);
        cJSON_AddStringToObject(o, "driver_version", info.driver_version);
        cJSON_AddNumberToObject(o, "gpus", info.gpu_count);
    }

    /* One poll: a metric the GPU does not support is absent from its readings. */
    struct wt_batch b = {0};
    rc = ops->poll(st, wt_now_real_ns(), &b, &err);
    struct gpu_seen *g = calloc(info.gpu_count ? info.gpu_count : 1, sizeof *g);
    size_t ng = 0;
    if (rc != 0 || !g) {
        add_check(r, "gpu", NULL, ST_FAIL, NULL, "the GPUs did not answer a poll: %s",
                  g ? err.msg : "out of memory");
        goto out;
    }
    for (size_t i = 0; i < b.len; i++) {
        const struct wt_reading *rd = &b.r[i];
        char idx[16];
        if (wt_labels_get(rd->labels, "gpu", idx, sizeof idx) < 0)
            continue;
        size_t k = 0;
        while (k < ng && strcmp(g[k].gpu, idx) != 0)
            k++;
        if (k == ng) {
            if (ng == info.gpu_count)
                continue;
            snprintf(g[k].gpu, sizeof g[k].gpu, "%s", idx);
            (void)wt_labels_get(rd->labels, "uuid", g[k].uuid, sizeof g[k].uuid);
            (void)wt_labels_get(rd->labels, "model", g[k].model, sizeof g[k].model);
            ng++;
        }
        if (rd->metric == WT_M_GPU_UP)
            g[k].up = rd->value > 0.5;
        else if (rd->metric == WT_M_GPU_POWER_W)
            g[k].power = true;
        else if (rd->metric == WT_M_GPU_ENERGY_J)
            g[k].energy = true;
    }
    for (size_t k = 0; k < ng; k++) {
        enum status s = ST_OK;
        const char *fix = NULL;
        char what[200];
        if (!g[k].up) {
            s = ST_FAIL;
            fix = "see the kernel log (dmesg: NVRM Xid) and nvidia-smi; a reset or reboot may "
                  "be needed";
            snprintf(what, sizeof what, "does not answer (lost)");
        } else if (g[k].energy) {
            snprintf(what, sizeof what, "energy counter (nvmlDeviceGetTotalEnergyConsumption)");
        } else if (g[k].power) {
            s = ST_WARN;
            fix = "a Volta or newer GPU has the counter; here energy is power integrated by "
                  "wattage, which misses bursts shorter than the poll interval";
            snprintf(what, sizeof what,
                     "no energy counter (not supported): power only, "
                     "integrated");
        } else {
            s = ST_FAIL;
            snprintf(what, sizeof what, "neither energy counter nor power reading supported");
        }
        if (g[k].up && (g[k].energy || g[k].power))
            r->energy = true;
        /* A GPU lost before it was first read has no name or UUID yet. */
        const char *sep = g[k].model[0] && g[k].uuid[0] ? " " : "";
        cJSON *go = add_check(r, "gpu", g[k].gpu, s, fix, "%s%s%s%s%s", g[k].model, sep, g[k].uuid,
                              g[k].model[0] || g[k].uuid[0] ? ": " : "", what);
        if (go) {
            cJSON_AddStringToObject(go, "uuid", g[k].uuid);
            cJSON_AddStringToObject(go, "model", g[k].model);
            cJSON_AddBoolToObject(go, "up", g[k].up);
            cJSON_AddBoolToObject(go, "energy_counter", g[k].energy);
            cJSON_AddBoolToObject(go, "power", g[k].power);
        }
    }
out:
    free(g);
    wt_batch_free(&b);
    ops->close(st);
}

/* ---- power caps: wattage's own (from its record) and those someone else set ---- */

/*
 * One check per capped GPU, from the same report `wattage status` prints (alert/alert.h's
 * wt_cap_report): a cap wattage holds is ok (its record says why); a limit off the GPU's default
 * that no record explains is a warning, since every energy figure of that GPU runs under it.
 */
static void check_caps(const struct wt_config *cfg, struct report *r)
{
    struct wt_alerts_config *a = malloc(sizeof *a);
    struct wt_err err = {{0}};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (a && f &&
        wt_alerts_config_parse(wt_config_file(cfg), wt_config_section(cfg, "alerts"), a, &err) == 0)
        (void)wt_cap_report(cfg, a, f);
    if (f)
        fclose(f);
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        unsigned gpu;
        char key[16] = "";
        if (sscanf(line, "power cap: gpu %u", &gpu) == 1)
            snprintf(key, sizeof key, "%u", gpu);
        bool foreign = strstr(line, "capped by someone else") != NULL;
        add_check(r, "power_cap", key, foreign ? ST_WARN : ST_OK,
                  foreign ? "find who set it (nvidia-smi -q -d POWER; a scheduler's prolog, "
                            "another agent) and reset it with nvidia-smi -pl, or leave it and "
                            "read this GPU's figures as capped"
                          : NULL,
                  "%s", line);
    }
    free(text);
    free(a);
}

/* ---- RAPL ---- */

/* The first energy_uj under the powercap class (for the fix: its owner group and mode). */
static void first_energy_file(char *path, size_t n, struct stat *sb)
{
    char p[512];
    path[0] = '\0';
    for (int z = 0; z < 16; z++) {
        snprintf(p, sizeof p, "%s/sys/class/powercap/intel-rapl:%d/energy_uj", wt_sysfs_root(), z);
        if (stat(p, sb) == 0) {
            snprintf(path, n, "%s", p);
            return;
        }
    }
}

static bool in_group(gid_t gid)
{
    if (getegid() == gid)
        return true;
    gid_t gs[256];
    int n = getgroups(256, gs);
    for (int i = 0; i < n; i++)
        if (gs[i] == gid)
            return true;
    return false;
}

static void check_rapl(const struct wt_config *cfg, struct report *r)
{
    const struct wt_collector_ops *ops = &wt_rapl_collector;
    if (!cfg->collectors.rapl.enabled) {
        add_check(r, "rapl", NULL, ST_ABSENT, NULL,
                  "disabled in the configuration (collectors.rapl.enabled)");
        return;
    }
    void *st = NULL;
    struct wt_err err = {{0}};
    int rc = ops->open(cfg, &st, &err);
    struct wt_batch b = {0};
    if (rc == 0)
        rc = ops->poll(st, wt_now_real_ns(), &b, &err);
    if (rc == 0) {
        size_t zones = 0;
        for (size_t i = 0; i < b.len; i++)
            zones += b.r[i].metric == WT_M_CPU_ENERGY_J;
        r->energy = r->energy || zones > 0;
        cJSON *o = add_check(r, "rapl", NULL, ST_OK, NULL,
                             "%zu RAPL zone%s readable under "
                             "%s/sys/class/powercap",
                             zones, zones == 1 ? "" : "s", wt_sysfs_root());
        if (o) {
            cJSON_AddNumberToObject(o, "zones", (double)zones);
            cJSON_AddBoolToObject(o, "readable", true);
        }
    } else if (rc == -EACCES) {
        char path[512], fix[1400];
        struct stat sb;
        first_energy_file(path, sizeof path, &sb);
        const struct group *gr = path[0] ? getgrgid(sb.st_gid) : NULL;
        const struct group *wg = getgrnam("wattage");
        char now[120] = "";
        if (path[0])
            snprintf(now, sizeof now, " (now group %s, mode %04o)", gr ? gr->gr_name : "?",
                     (unsigned)(sb.st_mode & 07777));
        snprintf(fix, sizeof fix,
                 "install the udev rule 60-wattage-rapl.rules (the package puts it in "
                 "/lib/udev/rules.d; the source tree has it in deploy/systemd) and run "
                 "`udevadm trigger --subsystem-match=powercap`: it gives energy_uj to group "
                 "wattage, mode 0440%s; then run wattage in that group (the service's "
                 "Group=wattage%s), or as root. Or a tmpfiles.d line "
                 "'z /sys/class/powercap/intel-rapl:*/energy_uj 0440 root wattage'. "
                 "CAP_DAC_READ_SEARCH would do too, but opens every file to the daemon.",
                 now,
                 !wg                    ? "; there is no group wattage yet: the package creates it"
                 : in_group(wg->gr_gid) ? "; this process is in it"
                                        : "; this process is not in it");
        cJSON *o = add_check(r, "rapl", NULL, ST_WARN, fix, "CPU energy not readable: %s", err.msg);
        if (o) {
            cJSON_AddBoolToObject(o, "readable", false);
            if (path[0])
                cJSON_AddStringToObject(o, "file", path);
        }
    } else if (rc == -ENOENT) {
        add_check(r, "rapl", NULL, ST_ABSENT,
                  "load the intel_rapl_common (or AMD's amd_energy / rapl) driver if the CPU has "
                  "RAPL",
                  "no CPU energy: %s", err.msg);
    } else {
        add_check(r, "rapl", NULL, ST_FAIL, NULL, "%s", err.msg);
    }
    wt_batch_free(&b);
    ops->close(st);
}

/* ---- AMD GPUs (ROCm SMI, else AMD SMI) and the node's hwmon meters ---- */

static void check_amd(const struct wt_config *cfg, struct report *r)
{
    const struct wt_collector_ops *ops = &wt_amd_collector;
    if (!cfg->collectors.amd.enabled) {
        add_check(r, "amd", NULL, ST_ABSENT, NULL,
                  "disabled in the configuration (collectors.amd.enabled)");
        return;
    }
    void *st = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    int rc = ops->open(cfg, &st, &err);
    if (rc == 0)
        rc = ops->poll(st, wt_now_real_ns(), &b, &err);
    if (rc == 0) {
        size_t gpus = 0, up = 0, counters = 0, power = 0;
        for (size_t i = 0; i < b.len; i++) {
            gpus += b.r[i].metric == WT_M_GPU_UP;
            up += b.r[i].metric == WT_M_GPU_UP && b.r[i].value > 0;
            counters += b.r[i].metric == WT_M_GPU_ENERGY_J;
            power += b.r[i].metric == WT_M_GPU_POWER_W;
        }
        r->energy = r->energy || counters > 0 || power > 0;
        bool amdsmi = wt_amdsmi_loaded(); /* the collector open here holds it */
        cJSON *o = add_check(r, "amd", NULL, up == gpus ? ST_OK : ST_WARN,
                             up == gpus ? NULL : "see `wattage run`'s log for the calls that fail",
                             "%zu AMD GPU%s through %s (%zu answering): power on %zu, an "
                             "energy counter on %zu (one per package: a second die or partition "
                             "has none)",
                             gpus, gpus == 1 ? "" : "s",
                             amdsmi ? "AMD SMI (which gives no power reading)" : "ROCm SMI", up,
                             power, counters);
        if (o) {
            cJSON_AddStringToObject(o, "library", amdsmi ? "amd_smi" : "rocm_smi");
            cJSON_AddNumberToObject(o, "gpus", (double)gpus);
            cJSON_AddNumberToObject(o, "answering", (double)up);
            cJSON_AddNumberToObject(o, "energy_counters", (double)counters);
        }
    } else if (rc == -ENOENT) {
        add_check(r, "amd", NULL, ST_ABSENT, NULL, "no AMD GPU: %s", err.msg);
    } else {
        add_check(r, "amd", NULL, ST_WARN,
                  "install Debian's librocm-smi64-1 (or ROCm's ROCm SMI or AMD SMI), or name "
                  "the library in collectors.amd.library",
                  "AMD GPUs not readable: %s", err.msg);
    }
    wt_batch_free(&b);
    ops->close(st);
}

static void check_hwmon(const struct wt_config *cfg, struct report *r)
{
    static const char *const roles[] = {"wall",   "module",  "cpu", "cpu_rail", "sysio_rail",
                                        "psu_in", "psu_out", "gpu", "gpu_rail", "other"};
    enum { NROLES = sizeof roles / sizeof roles[0] };
    const struct wt_collector_ops *ops = &wt_hwmon_collector;
    if (!cfg->collectors.hwmon.enabled) {
        add_check(r, "hwmon", NULL, ST_ABSENT, NULL,
                  "disabled in the configuration (collectors.hwmon.enabled)");
        return;
    }
    void *st = NULL;
    struct wt_err err = {{0}};
    struct wt_batch b = {0};
    int rc = ops->open(cfg, &st, &err);
    if (rc == 0)
        rc = ops->poll(st, wt_now_real_ns(), &b, &err);
    if (rc == 0) {
        /* a sensor's energy series is its one series on every poll (counted or integrated) */
        int count[NROLES] = {0};
        size_t sensors = 0;
        for (size_t i = 0; i < b.len; i++) {
            char role[16];
            if (b.r[i].metric != WT_M_HWMON_ENERGY_J ||
                wt_labels_get(b.r[i].labels, "role", role, sizeof role) != 0)
                continue;
            sensors++;
            for (size_t k = 0; k < NROLES; k++)
                if (strcmp(role, roles[k]) == 0)
                    count[k]++;
        }
        char list[256] = "";
        size_t used = 0;
        for (size_t k = 0; k < NROLES && used < sizeof list; k++)
            if (count[k]) {
                int w = snprintf(list + used, sizeof list - used, "%s%s %d", used ? ", " : "",
                                 roles[k], count[k]);
                used += w > 0 ? (size_t)w : 0;
            }
        cJSON *o = add_check(
            r, "hwmon", NULL, ST_OK, NULL, "%zu hwmon power/energy sensor%s (%s)%s", sensors,
            sensors == 1 ? "" : "s", sensors ? list : "none",
            count[0] ? ": a node without a PDU or BMC meter reconciles against its wall sensor"
                     : "");
        if (o) {
            cJSON_AddNumberToObject(o, "sensors", (double)sensors);
            cJSON *ro = cJSON_AddObjectToObject(o, "roles");
            for (size_t k = 0; ro && k < NROLES; k++)
                if (count[k])
                    cJSON_AddNumberToObject(ro, roles[k], count[k]);
        }
    } else if (rc == -ENOENT) {
        add_check(r, "hwmon", NULL, ST_ABSENT, NULL, "no hwmon power or energy sensor: %s",
                  err.msg);
    } else {
        add_check(r, "hwmon", NULL, ST_WARN, NULL, "hwmon sensors not readable: %s", err.msg);
    }
    wt_batch_free(&b);
    ops->close(st);
}

/* ---- the clock ---- */

static void check_clock(struct report *r)
{
    char why[256] = "";
    bool ok = wt_health_clock_synced(why, sizeof why);
    cJSON *o;
    if (ok)
        o = add_check(r, "clock", NULL, ST_OK, NULL, "the kernel clock is synchronised");
    else
        o = add_check(r, "clock", NULL, ST_WARN,
                      "run an NTP client (chrony, systemd-timesyncd): windows of jobs and "
                      "readings of several nodes are compared by their time stamps",
                      "%s", why[0] ? why : "the kernel clock is not synchronised");
    if (o)
        cJSON_AddBoolToObject(o, "synced", ok);
}

/* ---- PDUs, BMCs, meters: each target opened and polled once, all at the same time ---- */

struct probe {
    const struct wt_collector_ops *ops;
    const struct wt_config *cfg;
    size_t index;
    char name[40];
    int rc;
    size_t readings;
    double seconds;
    struct wt_err err;
    pthread_t th;
    bool started;
};

static void *probe_run(void *arg)
{
    struct probe *p = arg;
    void *st = NULL;
    int64_t t0 = wt_now_mono_ns();
    p->rc = p->ops->open_target(p->cfg, p->index, &st, &p->err);
    if (p->rc == 0) {
        struct wt_batch b = {0};
        p->rc = p->ops->poll(st, wt_now_real_ns(), &b, &p->err);
        p->readings = b.len;
        wt_batch_free(&b);
    }
    p->seconds = (double)(wt_now_mono_ns() - t0) / WT_NS_PER_S;
    p->ops->close(st);
    return NULL;
}

static void check_sources(const struct wt_config *cfg, struct report *r)
{
    struct probe *p = calloc(WT_MAX_TARGETS * 4, sizeof *p);
    size_t n = 0;
    if (!p) {
        add_check(r, "source", NULL, ST_FAIL, NULL, "out of memory");
        return;
    }
    for (size_t i = 0; wt_collectors[i]; i++) {
        const struct wt_collector_ops *ops = wt_collectors[i];
        if (!ops->targets || !ops->config(cfg)->enabled)
            continue;
        struct wt_target t[WT_MAX_TARGETS];
        size_t nt = ops->targets(cfg, t, WT_MAX_TARGETS);
        for (size_t k = 0; k < nt && k < WT_MAX_TARGETS && n < WT_MAX_TARGETS * 4; k++) {
            struct probe *q = &p[n++];
            q->ops = ops;
            q->cfg = cfg;
            q->index = k;
            snprintf(q->name, sizeof q->name, "%s:%s", ops->name, t[k].name);
        }
    }
    for (size_t i = 0; i < n; i++)
        p[i].started = pthread_create(&p[i].th, NULL, probe_run, &p[i]) == 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i].started)
            pthread_join(p[i].th, NULL);
        else
            probe_run(&p[i]);
    }
    for (size_t i = 0; i < n; i++) {
        cJSON *o;
        if (p[i].rc == 0)
            o = add_check(r, "source", p[i].name, ST_OK, NULL, "answered in %.3f s (%zu readings)",
                          p[i].seconds, p[i].readings);
        else
            o = add_check(r, "source", p[i].name, ST_FAIL,
                          "check the address, the port, the credentials and the firewall between "
                          "this node and the device (its timeout is the target's timeout key)",
                          "not reachable after %.3f s: %s", p[i].seconds, p[i].err.msg);
        if (o) {
            cJSON_AddBoolToObject(o, "reachable", p[i].rc == 0);
            cJSON_AddNumberToObject(o, "seconds", p[i].seconds);
        }
    }
    if (n == 0)
        add_check(r, "source", NULL, ST_ABSENT, NULL,
                  "no PDU, BMC or meter configured (collectors.snmp, .redfish, .modbus targets)");
    free(p);
}

/* ---- the store ---- */

static int64_t newest_reading(struct wt_store *s, bool *have)
{
    int64_t t = 0;
    *have = wt_store_newest(s, &t) > 0;
    return *have ? t : 0;
}

static void check_store(const struct wt_config *cfg, const char *db, struct report *r)
{
    const char *path = db ? db : cfg->store.path;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        /* The daemon creates it (and its directory): can it, in the nearest existing one? */
        char dir[WT_PATH_LEN];
        snprintf(dir, sizeof dir, "%s", path);
        for (;;) {
            char *slash = strrchr(dir, '/');
            if (!slash) {
                snprintf(dir, sizeof dir, ".");
                break;
            }
            slash[slash == dir ? 1 : 0] = '\0';
            if (access(dir, F_OK) == 0 || strcmp(dir, "/") == 0)
                break;
        }
        bool can = access(dir, W_OK | X_OK) == 0;
        cJSON *o = add_check(
            r, "store", NULL, can ? ST_WARN : ST_FAIL,
            can ? "start the daemon (wattage run, or the wattage service)"
                : "create the directory for the daemon's user, or set store.path (the package's "
                  "service has /var/lib/wattage as its state directory)",
            "no store at %s yet; %s", path,
            can ? "the daemon will create it" : "and this user cannot create it there");
        if (o) {
            cJSON_AddStringToObject(o, "path", path);
            cJSON_AddBoolToObject(o, "exists", false);
        }
        return;
    }
    struct wt_store *s = NULL;
    struct wt_err err = {{0}};
    struct wt_store_opts o = {.create = false};
    int rc = wt_store_open(path, &o, &s, &err);
    if (rc != 0) {
        cJSON *c = add_check(r, "store", NULL, ST_FAIL, NULL, "%s: cannot open: %s", path, err.msg);
        if (c) {
            cJSON_AddStringToObject(c, "path", path);
            cJSON_AddBoolToObject(c, "exists", true);
        }
        return;
    }
    sqlite3 *h = wt_store_db(s);
    sqlite3_stmt *q = NULL;
    char integrity[200] = "";
    if (sqlite3_prepare_v2(h, "PRAGMA quick_check(1)", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        snprintf(integrity, sizeof integrity, "%s", (const char *)sqlite3_column_text(q, 0));
    else
        snprintf(integrity, sizeof integrity, "%s", sqlite3_errmsg(h));
    sqlite3_finalize(q);
    for (char *p = integrity; *p; p++)
        if (*p == '\n')
            *p = ' '; /* quick_check's findings, one line each: one message */
    bool have;
    int64_t newest = newest_reading(s, &have);
    wt_store_close(s);

    uint64_t bytes = (uint64_t)sb.st_size;
    char wal[WT_PATH_LEN + 8];
    snprintf(wal, sizeof wal, "%s-wal", path);
    if (stat(wal, &sb) == 0)
        bytes += (uint64_t)sb.st_size;
    double age = have ? (double)(wt_now_real_ns() - newest) / WT_NS_PER_S : -1;
    bool intact = strcmp(integrity, "ok") == 0;
    enum status st = !intact ? ST_FAIL : (!have || age > 300) ? ST_WARN : ST_OK;
    char newest_s[80];
    if (have)
        snprintf(newest_s, sizeof newest_s, "newest reading %.0f s ago", age);
    else
        snprintf(newest_s, sizeof newest_s, "no reading yet");
    cJSON *c = add_check(
        r, "store", NULL, st,
        !intact         ? "stop the daemon, keep a copy of the file, and recover it with sqlite3's "
                          ".recover (or move it aside: the daemon starts a new one)"
        : st == ST_WARN ? "is the daemon running? (systemctl status wattage)"
                        : NULL,
        "%s: integrity %s, %.1f MiB, %s", path, integrity, (double)bytes / (1024.0 * 1024.0),
        newest_s);
    if (c) {
        cJSON_AddStringToObject(c, "path", path);
        cJSON_AddBoolToObject(c, "exists", true);
        cJSON_AddStringToObject(c, "integrity", integrity);
        cJSON_AddNumberToObject(c, "bytes", (double)bytes);
        if (have) {
            cJSON_AddNumberToObject(c, "newest_reading_s", (double)newest / WT_NS_PER_S);
            cJSON_AddNumberToObject(c, "newest_reading_age_s", age);
        } else {
            cJSON_AddNullToObject(c, "newest_reading_s");
        }
    }
}

/* ---- the listen address ---- */

static bool loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

static void check_listen(const struct wt_config *cfg, struct report *r)
{
    char host[128] = "";
    int port = 0;
    if (wt_config_parse_listen(cfg->daemon.listen, host, sizeof host, &port) != 0) {
        add_check(r, "listen", NULL, ST_FAIL, NULL, "daemon.listen: not HOST:PORT (\"%s\")",
                  cfg->daemon.listen);
        return;
    }
    bool lo = loopback(host), tls = cfg->daemon.tls.cert[0] != '\0';
    bool auth = cfg->daemon.auth.token_file[0] != '\0';
    cJSON *o;
    if (lo)
        o = add_check(r, "listen", NULL, ST_OK, NULL,
                      "%s: loopback only (set daemon.listen for Prometheus on another host)",
                      cfg->daemon.listen);
    else if (tls && auth)
        o = add_check(r, "listen", NULL, ST_OK, NULL,
                      "%s: reachable from the network, with TLS "
                      "and a bearer token",
                      cfg->daemon.listen);
    else
        o = add_check(r, "listen", NULL, ST_WARN,
                      "set daemon.tls.cert and daemon.tls.key, and daemon.auth.token_file (and "
                      "daemon.auth.protect_reads), or listen on 127.0.0.1 behind a proxy",
                      "%s: reachable from the network %s", cfg->daemon.listen,
                      !tls && !auth ? "in plain HTTP and without a token: anyone can read and "
                                      "write jobs"
                      : !tls        ? "in plain HTTP: the token and the readings travel in clear"
                                    : "without a token: anyone can write jobs");
    if (o) {
        cJSON_AddStringToObject(o, "address", cfg->daemon.listen);
        cJSON_AddBoolToObject(o, "loopback", lo);
        cJSON_AddBoolToObject(o, "tls", tls);
        cJSON_AddBoolToObject(o, "auth", auth);
    }
}

/* ---- the command ---- */

static const struct wt_cli_opt doctor_opts[] = {
    {"json", WT_OPT_JSON, NULL, "JSON instead of lines"}, {NULL}};

const struct wt_cli_form wt_cli_form_doctor = {
    "doctor",
    "",
    "what this node can measure and why not; exit 1 when something essential is missing",
    __FILE__,
    false,
    {wt_cli_store_opts, doctor_opts}};

static void print_human(const struct report *r)
{
    printf("wattage doctor: what this node can measure\n");
    const cJSON *c;
    cJSON_ArrayForEach(c, r->checks)
    {
        const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(c, "key"));
        char name[64];
        snprintf(name, sizeof name, "%s%s%s", cJSON_GetStringValue(cJSON_GetObjectItem(c, "check")),
                 key ? " " : "", key ? key : "");
        printf("  %-6s %-18s %s\n", cJSON_GetStringValue(cJSON_GetObjectItem(c, "status")), name,
               cJSON_GetStringValue(cJSON_GetObjectItem(c, "message")));
        const char *fix = cJSON_GetStringValue(cJSON_GetObjectItem(c, "fix"));
        if (fix)
            printf("  %-6s %-18s fix: %s\n", "", "", fix);
    }
}

int wt_cmd_doctor(int argc, char **argv)
{
    struct wt_cli_common co = {0};
    int c;
    optind = 1;
    while ((c = wt_cli_next(&wt_cli_form_doctor, argc, argv, &co)) != -1)
        return c == WT_CLI_HELP ? 0 : 2;
    if (wt_cli_no_operands(&wt_cli_form_doctor, argc, argv))
        return 2;
    const char *cfg_path = co.config, *db = co.db;
    bool json = co.json;
    struct wt_config cfg;
    int rc = wt_cli_load_config(cfg_path, &cfg);
    if (rc)
        return rc;
    /* The collectors' own warnings repeat what the checks say. */
    wt_log_set_level(WT_LOG_ERROR);
    struct report r = {.checks = cJSON_CreateArray(), .json = json};
    if (!r.checks) {
        wt_config_free(&cfg);
        return 1;
    }
    check_nvml(&cfg, &r);
    check_caps(&cfg, &r);
    check_rapl(&cfg, &r);
    check_amd(&cfg, &r);
    check_hwmon(&cfg, &r);
    check_clock(&r);
    check_sources(&cfg, &r);
    check_store(&cfg, db, &r);
    check_listen(&cfg, &r);
    /* the streaming outputs this binary carries */
    if (wt_kafka_built_in())
        add_check(&r, "kafka", NULL, ST_OK, NULL, "built in (librdkafka %s)", wt_kafka_version());
    else
        add_check(&r, "kafka", NULL, ST_ABSENT, NULL, "not built in (librdkafka-dev missing)");
    if (wt_otlp_built_in())
        add_check(&r, "otlp", NULL, ST_OK, NULL, "built in (OTLP/HTTP protobuf, gzip)");
    else
        add_check(&r, "otlp", NULL, ST_ABSENT, NULL, "not built in");
    if (!r.energy)
        add_check(&r, "energy", NULL, ST_FAIL,
                  "see the nvml, gpu and rapl lines above: at least one of them must work",
                  "nothing on this node can be measured: no GPU and no readable RAPL zone");
    bool essential_ok = r.count[ST_FAIL] == 0;
    if (json) {
        cJSON *doc = cJSON_CreateObject();
        if (doc) {
            cJSON_AddBoolToObject(doc, "ok", essential_ok);
            cJSON_AddBoolToObject(doc, "energy", r.energy);
            cJSON *counts = cJSON_AddObjectToObject(doc, "counts");
            for (int i = 0; i < 4 && counts; i++)
                cJSON_AddNumberToObject(counts, status_names[i], r.count[i]);
            cJSON_AddItemToObject(doc, "checks", r.checks);
            r.checks = NULL;
            char *s = cJSON_Print(doc);
            if (s)
                printf("%s\n", s);
            cJSON_free(s);
            cJSON_Delete(doc);
        }
    } else {
        print_human(&r);
        printf("%d ok, %d warnings, %d absent, %d failed: %s\n", r.count[ST_OK], r.count[ST_WARN],
               r.count[ST_ABSENT], r.count[ST_FAIL],
               essential_ok ? "nothing essential is missing" : "something essential is missing");
    }
    cJSON_Delete(r.checks);
    wt_config_free(&cfg);
    return essential_ok ? 0 : 1;
}
