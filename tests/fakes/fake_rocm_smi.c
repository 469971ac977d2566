/* SPDX-License-Identifier: MIT */
/*
 * A fake librocm_smi64.so.1 for tests: a real shared object the AMD collector finds through the
 * same dlopen path as ROCm's, exporting the documented 5.2.3 entry points the collector uses
 * (declared with src/collect/rocm_api.h's types) plus rsmi_dev_current_socket_power_get of
 * ROCm 6.0 and later. Scripted by environment variables read at every rsmi_init:
 *
 *   FAKE_RSMI_GPUS=N            number of devices (default 8, at most 64)
 *   FAKE_RSMI_MODEL=NAME        rsmi_dev_name_get (default "AMD Instinct MI300X")
 *   FAKE_RSMI_T0=SECONDS        time origin, unix seconds (float); default: the first rsmi_init
 *   FAKE_RSMI_POWER=B,A,P       power of device i at CLOCK_REALTIME t, in watts:
 *                                 P_i(t) = B + A*sin(2*pi*(t-T0)/P + i)    (default 400,150,7)
 *                               rsmi_dev_power_ave_get returns P_i(now) in µW (instantaneous)
 *   FAKE_RSMI_SOCKET_POWER=1    rsmi_dev_current_socket_power_get answers the same (default: it
 *                               answers NOT_SUPPORTED, as on an ASIC without a "PPT" sensor)
 *   FAKE_RSMI_MI250X=1          devices 2k and 2k+1 are the two dies of one MI250X: the same
 *                               unique id, model "AMD Instinct MI250X"; the second die reads 0 W
 *                               and an accumulator of 0 (as the kernel's aldebaran_ppt.c does);
 *                               FAKE_RSMI_MI250X=2: the same with a unique id per die (whether
 *                               the dies share one is not documented)
 *   FAKE_RSMI_CPX=K             an MI300X in a compute-partition mode: devices Kp..Kp+K-1 are
 *                               partitions 0..K-1 of package p (one unique id, one PCI address,
 *                               the partition in bits [31:28] of the PCI id, as ROCm 6.2 has
 *                               it); partitions other than 0 answer NOT_SUPPORTED for power and
 *                               energy (amd-smi prints N/A)
 *   FAKE_RSMI_LOST=g:from:to[,…] seconds after T0, [from, to): every call for device g answers
 *                               RSMI_STATUS_FILE_ERROR (its sysfs files gone, as after a reset)
 *   FAKE_RSMI_FROZEN=g:at[,…]   from T0+at, device g's accumulator keeps its value (its timestamp
 *                               and power go on): the counter seen frozen on ROCm 6.0.x / MI100
 *   FAKE_RSMI_RESET=g:at[,…]    device g's accumulator restarts from 0 at T0+at (driver reload)
 *   FAKE_RSMI_ENERGY_OFFSET=N   the accumulator's start, counts (default 2^32)
 *   FAKE_RSMI_READ_DELAY_US=N[,…] rsmi_dev_energy_count_get on device i first lets the i-th N µs
 *                               of wall time pass (a device past the list takes the last N), then
 *                               answers the accumulator as it is then: a read that lands after
 *                               the caller's stamp (default 0)
 *   FAKE_RSMI_COUNTER_BITS=32   a 32-bit accumulator (SMU 11, MI100) that wraps at 2^32 counts
 *   FAKE_RSMI_NOT_SUPPORTED=LIST any of energy,power,temperature,busy,cap: NOT_SUPPORTED on every
 *                               device
 *   FAKE_RSMI_ECC=g:ce:ue[,…]    device g's UMC block counts ce corrected and ue uncorrected ECC
 *                               errors (others 0); ECC is enabled on UMC, SDMA and GFX, and SDMA
 *                               has no counter (NOT_SUPPORTED, as the header allows)
 *   FAKE_RSMI_DENIED=1          rsmi_dev_busy_percent_get answers RSMI_STATUS_PERMISSION
 *   FAKE_RSMI_CALL_LOG=FILE     append each rsmi_dev_busy_percent_get call's device, one a line
 *   FAKE_RSMI_CALLS=FILE        append the name of every rsmi_* function called, one a line
 *                               (rsmi_init's too: a file that exists says the library was used)
 *   FAKE_RSMI_INIT_FAIL=N       rsmi_init returns N (8: RSMI_STATUS_INIT_ERROR)
 *   FAKE_RSMI_PROCS_FILE=FILE   the processes on the GPUs, read at every call of
 *                               rsmi_compute_process_info_get / _gpus_get: lines "GPU PID
 *                               [VRAM_BYTES]" (a pid on several GPUs has a line for each);
 *                               without it the list is empty
 *   FAKE_RSMI_NO_PROCS=1        the 5.2.3 process calls answer NOT_SUPPORTED
 *   FAKE_RSMI_CAP_LOG=FILE      the power caps' state, as the driver keeps it (it outlives the
 *                               process that set it): rsmi_dev_power_cap_set appends "DEV WATTS"
 *                               for each cap it takes; rsmi_dev_power_cap_get answers the last
 *                               line of its device, else the default 500 W. A value outside the
 *                               range answers RSMI_STATUS_INVALID_ARGS and is not written
 *   FAKE_RSMI_CAP_DENIED=1      rsmi_dev_power_cap_set answers RSMI_STATUS_PERMISSION (not root)
 *
 * The accumulator counts the hardware's unit, 2^-16 J, from an offset of 2^32 counts:
 *   counter = offset + floor(65536 * integral of P_i from T0 to now)   [mod 2^bits]
 * and rsmi_dev_energy_count_get reports the library's resolution, 15.3 µJ, with a timestamp in
 * ns of CLOCK_BOOTTIME, as the real library does. Unique ids are 0x00c0ffee00000000 + package,
 * PCI ids domain 0, bus 0x10 + i, device 0, function 0. Temperatures (millidegrees): edge 40+i,
 * junction 55+i, memory 60+i °C; busy (P - (B-A)) / 2A in percent; cap 500 W (the default),
 * range 100..560 W.
 *
 * Exported for tests:
 *   double fake_rsmi_exact_energy_j(unsigned dev, double t_from, double t_to)
 *       the exact energy of device dev's package share over [t_from, t_to] (unix seconds), J
 *       (0 for an MI250X second die)
 *   -DFAKE_RSMI_523: the library as Debian 12's 5.2.3, without
 *                               rsmi_dev_current_socket_power_get (build/tests/fakes/5.2.3/)
 *   fake_rocm_energy            -DFAKE_ROCM_TOOL: `fake_rocm_energy DEV FROM TO` prints it
 *                               (needs FAKE_RSMI_T0 and the same environment).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/rocm_api.h"

#define MAX_DEVS 64
#define MAX_EVENTS 16

struct event {
    unsigned int dev;
    double at, to;
};

static struct {
    unsigned int n;
    char model[128];
    double t0, base, amp, period;
    double delay_s[MAX_DEVS]; /* FAKE_RSMI_READ_DELAY_US */
    bool socket, mi250x, uid_per_die, bits32;
    uint64_t offset;
    unsigned int cpx;
    bool ns_energy, ns_power, ns_temp, ns_busy, ns_cap, denied;
    struct event frozen[MAX_EVENTS], reset[MAX_EVENTS], lost[MAX_EVENTS], ecc[MAX_EVENTS];
    size_t nfrozen, nreset, nlost, necc;
} fk;

double fake_rsmi_exact_energy_j(unsigned int dev, double t_from, double t_to);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double env_double(const char *name, double def)
{
    const char *v = getenv(name);
    return v && *v ? strtod(v, NULL) : def;
}

static size_t parse_events(const char *name, struct event *ev)
{
    const char *v = getenv(name);
    size_t n = 0;
    while (v && *v && n < MAX_EVENTS) {
        unsigned int g;
        double at, to = INFINITY;
        if (sscanf(v, "%u:%lf:%lf", &g, &at, &to) >= 2)
            ev[n++] = (struct event){g, at, to};
        v = strchr(v, ',');
        if (v)
            v++;
    }
    return n;
}

static void configure(void)
{
    static double first_load;
    if (first_load == 0)
        first_load = now_s();
    memset(&fk, 0, sizeof fk);
    fk.n = (unsigned int)env_double("FAKE_RSMI_GPUS", 8);
    if (fk.n > MAX_DEVS)
        fk.n = MAX_DEVS;
    fk.t0 = env_double("FAKE_RSMI_T0", first_load);
    fk.base = 400, fk.amp = 150, fk.period = 7;
    const char *p = getenv("FAKE_RSMI_POWER");
    if (p)
        sscanf(p, "%lf,%lf,%lf", &fk.base, &fk.amp, &fk.period);
    fk.socket = env_double("FAKE_RSMI_SOCKET_POWER", 0) != 0;
    fk.mi250x = env_double("FAKE_RSMI_MI250X", 0) != 0;
    fk.uid_per_die = env_double("FAKE_RSMI_MI250X", 0) == 2;
    fk.cpx = (unsigned int)env_double("FAKE_RSMI_CPX", 0);
    fk.bits32 = env_double("FAKE_RSMI_COUNTER_BITS", 64) == 32;
    const char *off = getenv("FAKE_RSMI_ENERGY_OFFSET");
    fk.offset = off && *off ? strtoull(off, NULL, 0) : (uint64_t)1 << 32;
    const char *m = getenv("FAKE_RSMI_MODEL");
    snprintf(fk.model, sizeof fk.model, "%s",
             m && *m     ? m
             : fk.mi250x ? "AMD Instinct MI250X"
                         : "AMD Instinct MI300X");
    const char *ns = getenv("FAKE_RSMI_NOT_SUPPORTED");
    if (ns) {
        fk.ns_energy = strstr(ns, "energy") != NULL;
        fk.ns_power = strstr(ns, "power") != NULL;
        fk.ns_temp = strstr(ns, "temperature") != NULL;
        fk.ns_busy = strstr(ns, "busy") != NULL;
        fk.ns_cap = strstr(ns, "cap") != NULL;
    }
    const char *dl = getenv("FAKE_RSMI_READ_DELAY_US");
    double last = 0;
    for (unsigned int i = 0; i < MAX_DEVS; i++) {
        char *end = NULL;
        if (dl && *dl) {
            last = strtod(dl, &end);
            dl = *end == ',' ? end + 1 : NULL;
        }
        fk.delay_s[i] = last > 0 ? last / 1e6 : 0;
    }
    fk.nfrozen = parse_events("FAKE_RSMI_FROZEN", fk.frozen);
    fk.nreset = parse_events("FAKE_RSMI_RESET", fk.reset);
    fk.nlost = parse_events("FAKE_RSMI_LOST", fk.lost);
    fk.denied = env_double("FAKE_RSMI_DENIED", 0) != 0;
    /* g:ce:ue read as dev, at, to */
    fk.necc = parse_events("FAKE_RSMI_ECC", fk.ecc);
}

/* Devices per package. */
static unsigned int pkg_size(void)
{
    return fk.mi250x ? 2 : fk.cpx > 1 ? fk.cpx : 1;
}

static bool secondary(unsigned int dev)
{
    return dev % pkg_size() != 0;
}

/* The package power drawn through device dev at unix time t, W. */
__attribute__((unused)) static double power_w(unsigned int dev, double t)
{
    if (secondary(dev))
        return 0;
    return fk.base + fk.amp * sin(2 * M_PI * (t - fk.t0) / fk.period + dev);
}

double fake_rsmi_exact_energy_j(unsigned int dev, double t_from, double t_to)
{
    if (secondary(dev))
        return 0;
    double w = 2 * M_PI / fk.period;
    return fk.base * (t_to - t_from) -
           fk.amp / w * (cos(w * (t_to - fk.t0) + dev) - cos(w * (t_from - fk.t0) + dev));
}

__attribute__((unused)) static const struct event *find(const struct event *ev, size_t n,
                                                        unsigned int dev, double t)
{
    const struct event *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (ev[i].dev == dev && fk.t0 + ev[i].at <= t && (!best || ev[i].at > best->at))
            best = &ev[i];
    return best;
}

__attribute__((unused)) static uint64_t accumulator(unsigned int dev, double t)
{
    if (secondary(dev))
        return 0;
    const struct event *f = find(fk.frozen, fk.nfrozen, dev, t);
    if (f)
        t = fk.t0 + f->at;
    const struct event *r = find(fk.reset, fk.nreset, dev, t);
    double from = r ? fk.t0 + r->at : fk.t0;
    uint64_t off = r ? 0 : fk.offset;
    double e = fake_rsmi_exact_energy_j(dev, from, t);
    uint64_t v = off + (uint64_t)floor(65536.0 * (e > 0 ? e : 0));
    return fk.bits32 ? v & UINT32_MAX : v;
}

#ifndef FAKE_ROCM_TOOL

/* FAKE_RSMI_CALLS: one line per call of an exported rsmi_* function, its name. */
static void called(const char *fn)
{
    const char *path = getenv("FAKE_RSMI_CALLS");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%s\n", fn);
        fclose(f);
    }
}

static bool bad(uint32_t dv)
{
    return dv >= fk.n;
}

/* A device whose calls fail now (FAKE_RSMI_LOST). */
static bool lost(uint32_t dv)
{
    double t = now_s();
    for (size_t i = 0; i < fk.nlost; i++)
        if (fk.lost[i].dev == dv && t >= fk.t0 + fk.lost[i].at && t < fk.t0 + fk.lost[i].to)
            return true;
    return false;
}

/* A CPX secondary partition: no power, no energy. */
static bool no_power(uint32_t dv)
{
    return fk.cpx > 1 && secondary(dv);
}

wt_rsmi_init_fn rsmi_init;
wt_rsmi_shut_down_fn rsmi_shut_down;
wt_rsmi_status_string_fn rsmi_status_string;
wt_rsmi_num_devices_fn rsmi_num_monitor_devices;
wt_rsmi_name_fn rsmi_dev_name_get;
wt_rsmi_u64_fn rsmi_dev_unique_id_get, rsmi_dev_pci_id_get;
#ifndef FAKE_RSMI_523
wt_rsmi_u64_fn rsmi_dev_current_socket_power_get;
#endif
wt_rsmi_energy_fn rsmi_dev_energy_count_get;
wt_rsmi_sensor_u64_fn rsmi_dev_power_ave_get, rsmi_dev_power_cap_get;
wt_rsmi_cap_range_fn rsmi_dev_power_cap_range_get;
wt_rsmi_cap_set_fn rsmi_dev_power_cap_set;
wt_rsmi_u64_fn rsmi_dev_power_cap_default_get;
wt_rsmi_temp_fn rsmi_dev_temp_metric_get;
wt_rsmi_u32_fn rsmi_dev_busy_percent_get;
wt_rsmi_u64_fn rsmi_dev_ecc_enabled_get;
wt_rsmi_ecc_count_fn rsmi_dev_ecc_count_get;
wt_rsmi_proc_info_fn rsmi_compute_process_info_get;
wt_rsmi_proc_gpus_fn rsmi_compute_process_gpus_get;

#define MAX_PROCS 256

/* FAKE_RSMI_PROCS_FILE's lines into gpu[], pid[], vram[]; their count. */
static size_t read_procs(uint32_t *gpu, uint32_t *pid, uint64_t *vram)
{
    const char *path = getenv("FAKE_RSMI_PROCS_FILE");
    FILE *f = path ? fopen(path, "r") : NULL;
    size_t n = 0;
    char line[128];
    while (f && n < MAX_PROCS && fgets(line, sizeof line, f)) {
        unsigned int g, p;
        unsigned long long v = 0;
        if (sscanf(line, "%u %u %llu", &g, &p, &v) >= 2 && g < fk.n) {
            gpu[n] = g;
            pid[n] = p;
            vram[n++] = v;
        }
    }
    if (f)
        fclose(f);
    return n;
}

/* As the library: one entry per process (its VRAM summed over its GPUs). */
rsmi_status_t rsmi_compute_process_info_get(wt_rsmi_process_info_t *procs, uint32_t *num_items)
{
    called(__func__);
    static uint32_t gpu[MAX_PROCS], pid[MAX_PROCS];
    static uint64_t vram[MAX_PROCS];
    if (!num_items)
        return RSMI_STATUS_INVALID_ARGS;
    if (getenv("FAKE_RSMI_NO_PROCS"))
        return RSMI_STATUS_NOT_SUPPORTED;
    size_t n = read_procs(gpu, pid, vram), u = 0;
    wt_rsmi_process_info_t one[MAX_PROCS];
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < u && one[k].process_id != pid[i])
            k++;
        if (k == u) {
            memset(&one[u], 0, sizeof one[u]);
            one[u].process_id = pid[i];
            one[u].pasid = 0x8000u + (uint32_t)u;
            u++;
        }
        one[k].vram_usage += vram[i];
    }
    if (!procs) {
        *num_items = (uint32_t)u;
        return RSMI_STATUS_SUCCESS;
    }
    uint32_t room = *num_items;
    *num_items = (uint32_t)(u < room ? u : room);
    memcpy(procs, one, *num_items * sizeof one[0]);
    return u > room ? RSMI_STATUS_INSUFFICIENT_SIZE : RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_compute_process_gpus_get(uint32_t pid, uint32_t *dv_indices,
                                            uint32_t *num_devices)
{
    called(__func__);
    static uint32_t gpu[MAX_PROCS], pids[MAX_PROCS];
    static uint64_t vram[MAX_PROCS];
    if (!num_devices)
        return RSMI_STATUS_INVALID_ARGS;
    if (getenv("FAKE_RSMI_NO_PROCS"))
        return RSMI_STATUS_NOT_SUPPORTED;
    size_t n = read_procs(gpu, pids, vram);
    uint32_t found = 0, room = dv_indices ? *num_devices : 0;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (pids[i] != pid)
            continue;
        any = true;
        if (dv_indices && found < room)
            dv_indices[found] = gpu[i];
        found++;
    }
    if (!any)
        return RSMI_STATUS_NOT_FOUND;
    *num_devices = dv_indices && found > room ? room : found;
    return dv_indices && found > room ? RSMI_STATUS_INSUFFICIENT_SIZE : RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_ecc_enabled_get(uint32_t dv_ind, uint64_t *enabled_blocks)
{
    called(__func__);
    if (bad(dv_ind) || !enabled_blocks)
        return RSMI_STATUS_INVALID_ARGS;
    *enabled_blocks = 0x7; /* UMC, SDMA, GFX */
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_ecc_count_get(uint32_t dv_ind, uint64_t block, wt_rsmi_error_count_t *ec)
{
    called(__func__);
    if (bad(dv_ind) || !ec)
        return RSMI_STATUS_INVALID_ARGS;
    if (lost(dv_ind))
        return RSMI_STATUS_FILE_ERROR;
    if (block == 0x2)
        return RSMI_STATUS_NOT_SUPPORTED;
    ec->correctable_err = ec->uncorrectable_err = 0;
    for (size_t i = 0; block == 0x1 && i < fk.necc; i++)
        if (fk.ecc[i].dev == dv_ind) {
            ec->correctable_err = (uint64_t)fk.ecc[i].at;
            ec->uncorrectable_err = isfinite(fk.ecc[i].to) ? (uint64_t)fk.ecc[i].to : 0;
        }
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_init(uint64_t init_flags)
{
    called(__func__);
    (void)init_flags;
    configure();
    int fail = (int)env_double("FAKE_RSMI_INIT_FAIL", 0);
    return fail ? (rsmi_status_t)fail : RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_shut_down(void)
{
    called(__func__);
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_status_string(rsmi_status_t status, const char **status_string)
{
    called(__func__);
    static const char *const names[] = {
        "RSMI_STATUS_SUCCESS",
        "RSMI_STATUS_INVALID_ARGS",
        "RSMI_STATUS_NOT_SUPPORTED",
        "RSMI_STATUS_FILE_ERROR",
        "RSMI_STATUS_PERMISSION",
        "RSMI_STATUS_OUT_OF_RESOURCES",
        "RSMI_STATUS_INTERNAL_EXCEPTION",
        "RSMI_STATUS_INPUT_OUT_OF_BOUNDS",
        "RSMI_STATUS_INIT_ERROR",
    };
    if (!status_string)
        return RSMI_STATUS_INVALID_ARGS;
    *status_string =
        (unsigned int)status < sizeof names / sizeof names[0] ? names[status] : "An unknown error";
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_num_monitor_devices(uint32_t *num_devices)
{
    called(__func__);
    if (!num_devices)
        return RSMI_STATUS_INVALID_ARGS;
    *num_devices = fk.n;
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_name_get(uint32_t dv_ind, char *name, size_t len)
{
    called(__func__);
    if (bad(dv_ind) || !name || len == 0)
        return RSMI_STATUS_INVALID_ARGS;
    snprintf(name, len, "%s", fk.model);
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_unique_id_get(uint32_t dv_ind, uint64_t *id)
{
    called(__func__);
    if (bad(dv_ind) || !id)
        return RSMI_STATUS_INVALID_ARGS;
    if (lost(dv_ind))
        return RSMI_STATUS_FILE_ERROR;
    *id = 0x00c0ffee00000000ull + (fk.uid_per_die ? dv_ind : dv_ind / pkg_size());
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_pci_id_get(uint32_t dv_ind, uint64_t *bdfid)
{
    called(__func__);
    if (bad(dv_ind) || !bdfid)
        return RSMI_STATUS_INVALID_ARGS;
    if (lost(dv_ind))
        return RSMI_STATUS_FILE_ERROR;
    if (fk.cpx > 1)
        *bdfid = (uint64_t)(0x10 + dv_ind / fk.cpx) << 8 | (uint64_t)(dv_ind % fk.cpx) << 28;
    else
        *bdfid = (uint64_t)(0x10 + dv_ind) << 8;
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_energy_count_get(uint32_t dv_ind, uint64_t *power, float *counter_resolution,
                                        uint64_t *timestamp)
{
    called(__func__);
    if (bad(dv_ind) || !power || !counter_resolution || !timestamp)
        return RSMI_STATUS_INVALID_ARGS;
    if (lost(dv_ind))
        return RSMI_STATUS_FILE_ERROR;
    if (fk.ns_energy || no_power(dv_ind))
        return RSMI_STATUS_NOT_SUPPORTED;
    /* a read held in the driver: the accumulator as it is when the wait is over */
    for (double until = now_s() + fk.delay_s[dv_ind]; fk.delay_s[dv_ind] > 0 && now_s() < until;) {
        struct timespec nap = {0, 100000};
        nanosleep(&nap, NULL);
    }
    struct timespec bt;
    clock_gettime(CLOCK_BOOTTIME, &bt);
    *power = accumulator(dv_ind, now_s());
    *counter_resolution = 15.3f;
    *timestamp = (uint64_t)bt.tv_sec * 1000000000u + (uint64_t)bt.tv_nsec;
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_power_ave_get(uint32_t dv_ind, uint32_t sensor_ind, uint64_t *power)
{
    called(__func__);
    if (bad(dv_ind) || sensor_ind != 0 || !power)
        return RSMI_STATUS_INVALID_ARGS;
    if (lost(dv_ind))
        return RSMI_STATUS_FILE_ERROR;
    if (fk.ns_power || no_power(dv_ind))
        return RSMI_STATUS_NOT_SUPPORTED;
    *power = (uint64_t)llround(power_w(dv_ind, now_s()) * 1e6);
    return RSMI_STATUS_SUCCESS;
}

#ifndef FAKE_RSMI_523
rsmi_status_t rsmi_dev_current_socket_power_get(uint32_t dv_ind, uint64_t *socket_power)
{
    called(__func__);
    if (bad(dv_ind) || !socket_power)
        return RSMI_STATUS_INVALID_ARGS;
    if (lost(dv_ind))
        return RSMI_STATUS_FILE_ERROR;
    if (fk.ns_power || !fk.socket || no_power(dv_ind))
        return RSMI_STATUS_NOT_SUPPORTED;
    *socket_power = (uint64_t)llround(power_w(dv_ind, now_s()) * 1e6);
    return RSMI_STATUS_SUCCESS;
}
#endif

rsmi_status_t rsmi_dev_temp_metric_get(uint32_t dv_ind, uint32_t sensor_type,
                                       rsmi_temperature_metric_t metric, int64_t *temperature)
{
    called(__func__);
    static const int64_t base_c[] = {40, 55, 60};
    if (bad(dv_ind) || !temperature || metric != RSMI_TEMP_CURRENT || sensor_type > 2)
        return RSMI_STATUS_INVALID_ARGS;
    if (lost(dv_ind))
        return RSMI_STATUS_FILE_ERROR;
    if (fk.ns_temp)
        return RSMI_STATUS_NOT_SUPPORTED;
    *temperature = (base_c[sensor_type] + dv_ind) * 1000;
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_busy_percent_get(uint32_t dv_ind, uint32_t *busy_percent)
{
    called(__func__);
    if (bad(dv_ind) || !busy_percent)
        return RSMI_STATUS_INVALID_ARGS;
    if (lost(dv_ind))
        return RSMI_STATUS_FILE_ERROR;
    const char *log = getenv("FAKE_RSMI_CALL_LOG");
    FILE *lf = log && *log ? fopen(log, "a") : NULL;
    if (lf) {
        fprintf(lf, "%u\n", dv_ind);
        fclose(lf);
    }
    if (fk.ns_busy)
        return RSMI_STATUS_NOT_SUPPORTED;
    if (fk.denied)
        return RSMI_STATUS_PERMISSION;
    double p = fk.base + fk.amp * sin(2 * M_PI * (now_s() - fk.t0) / fk.period + dv_ind);
    double pct = fk.amp > 0 ? 100 * (p - (fk.base - fk.amp)) / (2 * fk.amp) : 0;
    *busy_percent = (uint32_t)lround(pct < 0 ? 0 : pct > 100 ? 100 : pct);
    return RSMI_STATUS_SUCCESS;
}

#define CAP_DEFAULT_UW 500000000u
#define CAP_MIN_UW 100000000u
#define CAP_MAX_UW 560000000u

/* Device dv's cap now: its last line in FAKE_RSMI_CAP_LOG, else the default. µW. */
static uint64_t cap_now(uint32_t dv)
{
    uint64_t uw = CAP_DEFAULT_UW;
    const char *path = getenv("FAKE_RSMI_CAP_LOG");
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f)
        return uw;
    unsigned int d;
    double w;
    while (fscanf(f, "%u %lf", &d, &w) == 2)
        if (d == dv && w > 0)
            uw = (uint64_t)llround(w * 1e6);
    fclose(f);
    return uw;
}

/* What every cap call answers first: the arguments, a lost device, caps not supported. */
static rsmi_status_t cap_guard(uint32_t dv, uint32_t sensor_ind, const void *out)
{
    if (bad(dv) || sensor_ind != 0 || !out)
        return RSMI_STATUS_INVALID_ARGS;
    if (lost(dv))
        return RSMI_STATUS_FILE_ERROR;
    return fk.ns_cap ? RSMI_STATUS_NOT_SUPPORTED : RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_power_cap_get(uint32_t dv_ind, uint32_t sensor_ind, uint64_t *cap)
{
    called(__func__);
    rsmi_status_t r = cap_guard(dv_ind, sensor_ind, cap);
    if (r == RSMI_STATUS_SUCCESS)
        *cap = cap_now(dv_ind);
    return r;
}

rsmi_status_t rsmi_dev_power_cap_default_get(uint32_t dv_ind, uint64_t *default_cap)
{
    called(__func__);
    rsmi_status_t r = cap_guard(dv_ind, 0, default_cap);
    if (r == RSMI_STATUS_SUCCESS)
        *default_cap = CAP_DEFAULT_UW;
    return r;
}

rsmi_status_t rsmi_dev_power_cap_set(uint32_t dv_ind, uint32_t sensor_ind, uint64_t cap)
{
    called(__func__);
    rsmi_status_t r = cap_guard(dv_ind, sensor_ind, &cap);
    if (r != RSMI_STATUS_SUCCESS)
        return r;
    if (getenv("FAKE_RSMI_CAP_DENIED"))
        return RSMI_STATUS_PERMISSION;
    if (cap < CAP_MIN_UW || cap > CAP_MAX_UW)
        return RSMI_STATUS_INVALID_ARGS; /* the library checks the range first */
    const char *path = getenv("FAKE_RSMI_CAP_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f)
        return RSMI_STATUS_FILE_ERROR; /* nowhere to keep it: as a sysfs write that failed */
    fprintf(f, "%u %.6g\n", dv_ind, (double)cap / 1e6);
    fclose(f);
    return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_power_cap_range_get(uint32_t dv_ind, uint32_t sensor_ind, uint64_t *max,
                                           uint64_t *min)
{
    called(__func__);
    rsmi_status_t r = cap_guard(dv_ind, sensor_ind, min);
    if (r == RSMI_STATUS_SUCCESS && !max)
        r = RSMI_STATUS_INVALID_ARGS;
    if (r == RSMI_STATUS_SUCCESS) {
        *max = CAP_MAX_UW;
        *min = CAP_MIN_UW;
    }
    return r;
}

#else

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: fake_rocm_energy DEV FROM TO\n");
        return 2;
    }
    configure();
    printf("%.6f\n", fake_rsmi_exact_energy_j((unsigned int)atoi(argv[1]), strtod(argv[2], NULL),
                                              strtod(argv[3], NULL)));
    return 0;
}

#endif
