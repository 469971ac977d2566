/* SPDX-License-Identifier: MIT */
/*
 * A fake libnvidia-ml.so.1 for tests: a real shared object the collector finds through the same
 * dlopen path as the driver's, scripted by environment variables read at nvmlInit (when the
 * first session starts). Other tests rely on this contract; keep it exact.
 *
 *   FAKE_NVML_GPUS=N             number of GPUs (default 8, at most 64)
 *   FAKE_NVML_MODEL=NAME         nvmlDeviceGetName (default "NVIDIA H200")
 *                                UUIDs are "GPU-fake-0000-<index>", PCI bus ids
 *                                "00000000:<0x10+index, 2 hex digits>:00.0"
 *   FAKE_NVML_T0=SECONDS         time origin, unix seconds (float); default: time of the first
 *                                nvmlInit in the process
 *   FAKE_NVML_POWER=B,A,P        power of GPU i at CLOCK_REALTIME t, in watts:
 *                                  P_i(t) = B + A*sin(2*pi*(t-T0)/P + i)    (default 300,100,7)
 *                                nvmlDeviceGetPowerUsage returns P_i(now) in mW (instantaneous)
 *   FAKE_NVML_WAVE=square        P_i(t) = B + A*sign(sin(2*pi*(t-T0)/P + i)) instead: a
 *                                square wave of B +- A W switching every P/2 s (exact integral
 *                                as for the sine)
 *   FAKE_NVML_WAVE=irregular     the square wave's levels, but each half-period lasts
 *                                P/2 * (0.8 + 0.45 u), u uniform in [0, 1) from a fixed sequence
 *                                (so B +- A every 0.84-1.31 s for P = 2.1): never periodic, the
 *                                way real load is not; GPU i runs i*P/(2 pi) s ahead (exact
 *                                integral too)
 *   FAKE_NVML_POWER_AVG=S        nvmlDeviceGetPowerUsage returns instead the mean of P_i over the
 *                                last S seconds, exactly (what an H100/H200 reads: a 1-s average;
 *                                default 0, instantaneous); stuck, glitch and cap as below
 *   FAKE_NVML_ENERGY_OFFSET_MJ=N the energy counter (mJ) is
 *                                  N + floor(1000 * exact integral of P_i from T0 to now)
 *                                (default 1000000000)
 *   FAKE_NVML_ENERGY_CPU_US=N    nvmlDeviceGetTotalEnergyConsumption burns N µs of the calling
 *                                thread's CPU time (CLOCK_THREAD_CPUTIME_ID) before it answers:
 *                                a counter read that is expensive in CPU (default 0)
 *   FAKE_NVML_READ_DELAY_US=N[,…] nvmlDeviceGetTotalEnergyConsumption for GPU i waits the i-th
 *                                N µs of wall time (a GPU past the list takes its last) and
 *                                answers the counter at the end of the wait: a read that lands
 *                                later than the caller's stamp (default 0)
 *   FAKE_NVML_LOST=g:from:to[,…] seconds after T0, [from, to): every call for GPU g (its handle
 *                                lookup included) returns NVML_ERROR_GPU_IS_LOST (15)
 *   FAKE_NVML_SWAP=g:at          from T0+at GPU g answers another UUID, GPU-fake-swap-g (a board
 *                                swapped while the GPU was lost)
 *   FAKE_NVML_RESET=g:at[,…]     GPU g's energy counter restarts from 0 at T0+at (driver reload):
 *                                  counter = floor(1000 * integral of P_g from T0+at to now)
 *   FAKE_NVML_NOT_SUPPORTED=LIST any of energy,power,temperature,thresholds,utilization,memory,
 *                                clocks,throttle,power_limit,pstate (also: pci,persistence,
 *                                processes);
 *                                those calls return NVML_ERROR_NOT_SUPPORTED (3) on every GPU
 *   FAKE_NVML_INIT_FAIL=1        nvmlInit returns NVML_ERROR_DRIVER_NOT_LOADED (9); another
 *                                number N > 1 makes it return N
 *   FAKE_NVML_TEMP=B,S           temperature of GPU i = B + i + S*(t-T0) °C (default 45,0)
 *   FAKE_NVML_TEMP_T0=read       the temperature's t-T0 (and FAKE_NVML_THERMAL's) counts from the
 *                                process's first nvmlDeviceGetTemperature call instead: a GPU
 *                                that starts heating when the collector first looks at it,
 *                                however late a loaded machine starts polling after nvmlInit
 *   FAKE_NVML_SLOWDOWN=C         slowdown threshold (default 87); FAKE_NVML_SHUTDOWN=C (92)
 *   FAKE_NVML_THROTTLE=MASK      clocks event reasons bitmask (default 0; decimal or 0x…)
 *   FAKE_NVML_PERSISTENCE=0|1    persistence mode (default 1, on)
 *   FAKE_NVML_CALL_LOG=FILE      append each NVML function name called, one per line
 *   FAKE_NVML_UTIL=g:from:to:pct[,…]  seconds after T0, [from, to): GPU g's utilization is pct %
 *                                (instead of the value derived from power; memory utilization,
 *                                memory used, SM clock and pstate follow it); power unchanged
 *   FAKE_NVML_STUCK=g:from:to[,…] [from, to): GPU g's power reads the value it had at T0+from (a
 *                                stuck sensor; the energy counter and utilization go on)
 *   FAKE_NVML_POWER_READ=g:from:to:W[,…]  [from, to): GPU g's power reads W watts (a sensor
 *                                glitch; the energy counter and utilization go on)
 *   FAKE_NVML_THERMAL=1          a GPU at or above its slowdown threshold adds the SW and HW
 *                                thermal slowdown reasons (0x20|0x40) to FAKE_NVML_THROTTLE
 *   FAKE_NVML_PROCS_FILE=FILE    the running processes, read at every call of
 *                                nvmlDevice{Compute,Graphics}RunningProcesses[_v2|_v3]: lines
 *                                "GPU PID [compute|graphics] [mem=MIB|mem=na] [sm=PCT] [gi=N]"
 *                                (default compute); no file: none. usedGpuMemory is MIB MiB
 *                                (default 1024; na: NVML_VALUE_NOT_AVAILABLE), the MIG ids
 *                                gpuInstanceId N and computeInstanceId 0 (default 0xFFFFFFFF
 *                                both: no MIG). "processes" in FAKE_NVML_NOT_SUPPORTED makes
 *                                them NOT_SUPPORTED.
 *                                nvmlDeviceGetProcessUtilization returns, for each line of the
 *                                GPU with sm=PCT, one sample {pid, now in µs, smUtil PCT,
 *                                memUtil PCT/2} when now is after lastSeenTimeStamp, else
 *                                NVML_ERROR_NOT_FOUND (no sample); INSUFFICIENT_SIZE as NVML.
 *                                "process_utilization" in FAKE_NVML_NOT_SUPPORTED makes it
 *                                NOT_SUPPORTED (as on GPUs before Maxwell, and vGPU guests)
 *   FAKE_NVML_LIMITS_FILE=FILE   nvmlDeviceSetPowerManagementLimit appends "GPU WATTS" (e.g.
 *                                "3 450") per accepted call. It refuses values outside the
 *                                constraints (200..700 W) with NVML_ERROR_INVALID_ARGUMENT like the
 *                                driver; an accepted limit is what nvmlDeviceGetEnforcedPowerLimit
 *                                and nvmlDeviceGetPowerManagementLimit report from then on, and
 *                                GPU i's power reads min(P_i, limit) (the GPU obeys its cap; the
 *                                energy counter stays the uncapped integral). Never set: the
 *                                default limit, 700 W, power unclamped.
 *                                The file is also the driver's state: GPU i's limit is the last
 *                                line for i in it, read at every call, so a limit outlives the
 *                                process that set it and every process sees the same one (as the
 *                                driver keeps it). A test writes a line itself to play another
 *                                tool's `nvidia-smi -pl`. Without the file, limits are kept for
 *                                the process only.
 *                                nvmlDeviceGetPowerManagementDefaultLimit is 700 W.
 *
 *   Health (all per GPU g; seconds after T0; absent entries read 0):
 *   FAKE_NVML_XID=g:at:xid[,…]   one XID event (nvmlEventTypeXidCriticalError) on GPU g at T0+at
 *   FAKE_NVML_XID_STORM=g:from:to:xid:rate[,…]  XID xid on GPU g at rate events per second in
 *                                [from, to); each one waits in the event set until taken, as the
 *                                driver's queue does
 *   FAKE_NVML_ECC=g:from:corrected:uncorrected[,…]  from T0+from, GPU g's volatile ECC counts;
 *                                aggregate counts are the volatile ones plus 12 corrected
 *   FAKE_NVML_REMAP=g:from:corr:unc:pending:failure[,…]  nvmlDeviceGetRemappedRows from T0+from
 *   FAKE_NVML_PCIE_REPLAYS=g:from:to:rate[,…]  the PCIe replay counter grows rate per second in
 *                                [from, to) (and keeps what it reached)
 *   FAKE_NVML_MEM_TEMP=C         memory temperature of GPU i = C + i °C (default 50), through
 *                                nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)
 *   FAKE_NVML_FANS=N             fans per GPU (default 0: the fan calls answer NOT_SUPPORTED, as
 *                                on SXM boards); fan f reads 30 + 10*f %
 *   NOT_SUPPORTED names for these: events, ecc, remap, pcie_replay, mem_temp, fan, vbios.
 *   nvmlDeviceGetVbiosVersion is "96.00.89.00.01", nvmlSystemGetCudaDriverVersion_v2 12040.
 *   The event calls answer UNINITIALIZED once the last session is shut down, like every call.
 *   A signal handled by the waiting thread ends nvmlEventSetWait early with NVML_ERROR_TIMEOUT
 *   (what the driver does was not measured); FAKE_NVML_WAIT_SIGNAL=ignore: the wait goes on to
 *   its timeout or event, as a library that retries on EINTR would.
 *
 *   Interconnect counters, GPM, power source and S-class units (each absent unless set; seconds
 *   after T0; a FAKE_NVML_RESET of GPU g restarts its counters from 0 too, as a driver reload):
 *   FAKE_NVML_NVLINK=TX,RX       nvmlDeviceGetFieldValues NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX
 *                                (138/139, any scopeId) count TX and RX KiB a second on every GPU
 *                                (unsigned long long); unset: NOT_SUPPORTED
 *   FAKE_NVML_PCIE=TX,RX         NVML_FI_DEV_PCIE_COUNT_TX/RX_BYTES (197/198) count TX and RX
 *                                bytes a second from FAKE_NVML_PCIE_OFFSET (default 0) as an
 *                                unsigned int, wrapping at 2^32 (FAKE_NVML_PCIE_64=1: unsigned
 *                                long long, no wrap); unset: NOT_SUPPORTED
 *   FAKE_NVML_FIELD_ERROR=g:from:to[,…]  [from, to): those four fields of GPU g answer
 *                                NVML_ERROR_UNKNOWN (999) in their nvmlReturn
 *   FAKE_NVML_GPM=1              nvmlGpmQueryDeviceSupport says supported on every GPU (as on
 *                                Hopper); unset: isSupportedDevice 0 and nvmlGpmSampleGet
 *                                NOT_SUPPORTED (before Hopper). A sample holds its time and GPU;
 *                                nvmlGpmMetricsGet over (sample1, sample2) gives, with u the mean
 *                                of the GPU's utilization at the two times: SM_UTIL u, SM_OCCUPANCY
 *                                u/2, ANY_TENSOR_UTIL u/4, DRAM_BW_UTIL 0.6*u (percent); other ids
 *                                and those in FAKE_NVML_GPM_OFF=ID[,ID…] NOT_SUPPORTED; samples
 *                                of two GPUs, or sample2 not newer than sample1,
 *                                INVALID_ARGUMENT. Each call is counted by fake_nvml_gpm_live()
 *                                (samples allocated and not freed). FAKE_NVML_GPM_SM_SCALE=K:
 *                                SM_UTIL is K*u instead (an underfilled GPU)
 *   FAKE_NVML_POWER_SOURCE=ac|battery|undersized  nvmlDeviceGetPowerSource; unset: NOT_SUPPORTED
 *   FAKE_NVML_UNITS=N            S-class units (default 0): unit u's power supply "Normal", 12 V,
 *                                40+u A, 480+12u W; two fans, 5000+100f RPM, normal.
 *   FAKE_NVML_PSU_ABNORMAL=u:from[,…]  from T0+from, unit u's supply is "Abnormal High voltage"
 *                                and its fan 1 failed
 *   NOT_SUPPORTED names for these: nvlink, pcie_bytes, gpm, power_source, psu, unit_fans.
 *
 *   MIG (Multi-Instance GPU; seconds after T0 do not apply: the layout is read at every call):
 *   FAKE_NVML_MIG=g:N[,…]        GPU g is in MIG mode with N instances (1..7): MIG device handle
 *                                index k is GPU instance k+1, compute instance 0, UUID
 *                                "MIG-fake-<g>-<gi>", 143771/7 MiB of memory (integer MiB), of
 *                                which 64 MiB plus the memory of its processes (the lines of
 *                                FAKE_NVML_PROCS_FILE for GPU g with gi=<gi>, as their count) is
 *                                used, at most all. Other GPUs: MIG disabled.
 *                                nvmlDeviceGetMaxMigDeviceCount is 7 on a MIG GPU, 0 otherwise.
 *   FAKE_NVML_MIG_FILE=FILE      when the file exists it is the layout instead, read at every
 *                                MIG call: lines "g gi" (gi 1..7) are the instances of the GPUs
 *                                FAKE_NVML_MIG names (others stay disabled). A test rewrites it to
 *                                destroy or create an instance while a reader runs. A handle of
 *                                an instance not there (destroyed) answers NVML_ERROR_NOT_FOUND
 *                                to every call, as does a handle index without an instance. A
 *                                line "g gi stale" is an instance destroyed between the handle
 *                                lookup (which still answers) and the calls on the handle
 *                                (NOT_FOUND).
 *                                On a MIG handle, nvmlDeviceGetUUID, nvmlDeviceGetMemoryInfo and
 *                                nvmlDevice{Compute,Graphics}RunningProcesses[_v2|_v3] answer for
 *                                the instance; every other call INVALID_ARGUMENT (no power,
 *                                energy or utilization of its own). The parent of instances
 *                                answers NOT_SUPPORTED to nvmlDeviceGetUtilizationRates, as the
 *                                reference says of MIG-enabled GPUs.
 *                                With FAKE_NVML_GPM=1, nvmlGpmMigSampleGet(parent, gi) samples
 *                                instance gi (NOT_FOUND when it is not there); the metrics over
 *                                two such samples give, with u the sum of sm=PCT of its processes
 *                                (at most 100), SM_UTIL u (and the other ids as above).
 *   NOT_SUPPORTED name: mig (nvmlDeviceGetMigMode and the count answer NOT_SUPPORTED, as before
 *   Ampere).
 *
 *   FAKE_NVML_SHUTDOWN_ALL=1     nvmlShutdown ends every session at once, as a wrapper or driver
 *                                that does not count nvmlInit/nvmlShutdown pairs would (the
 *                                real library counts them, as this fake does by default)
 *
 * Derived values: utilization = clamp(100*(P-60)/640) %, memory utilization 0.6 of it; memory
 * 143771 MiB total, used 10% + 80% * utilization; SM clock 345 + 1635*util/100 MHz, memory clock
 * 2619 MHz; pstate P0 (P8 when utilization < 5%); power limit 700 W (also the default limit),
 * constraints 200..700 W.
 *
 * Besides NVML it exports, for tests:
 *   double fake_nvml_exact_energy_j(unsigned gpu, double t_from, double t_to)
 *       the exact integral of P_gpu over [t_from, t_to] (unix seconds), in joules;
 *   double fake_nvml_t0(void)      the time origin in use.
 *
 * Built three ways by the Makefile:
 *   libnvidia-ml.so.1              every entry point the collector resolves, under every name;
 *   minimal/libnvidia-ml.so.1      -DFAKE_MINIMAL: only the required ones, under their oldest
 *                                  names (nvmlInit, nvmlDeviceGetCount, …), to exercise fallbacks;
 *   fake_nvml_energy               -DFAKE_NVML_TOOL: `fake_nvml_energy GPU FROM TO` prints the
 *                                  exact energy in joules (needs FAKE_NVML_T0 and the same env).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect/nvml_api.h"

#define MAX_GPUS 64
#define MAX_EVENTS 32

struct nvmlDevice_st {
    unsigned int index; /* the GPU (the parent, for a MIG handle) */
    unsigned int gi;    /* a MIG handle's GPU instance, 1..MAX_MIG; 0 for a GPU */
};

#define MAX_MIG 7

enum {
    NS_ENERGY,
    NS_POWER,
    NS_TEMP,
    NS_THRESH,
    NS_UTIL,
    NS_MEM,
    NS_CLOCKS,
    NS_THROTTLE,
    NS_LIMIT,
    NS_PSTATE,
    NS_PCI,
    NS_PERSIST,
    NS_PROCS,
    NS_EVENTS,
    NS_ECC,
    NS_REMAP,
    NS_PCIE_REPLAY,
    NS_MEM_TEMP,
    NS_FAN,
    NS_VBIOS,
    NS_PROC_UTIL,
    NS_NVLINK,
    NS_PCIE_BYTES,
    NS_POWER_SOURCE,
    NS_GPM,
    NS_PSU,
    NS_UNIT_FANS,
    NS_MIG,
    NS_COUNT
};
static const char *const ns_names[NS_COUNT] = {
    "energy",     "power",       "temperature",
    "thresholds", "utilization", "memory",
    "clocks",     "throttle",    "power_limit",
    "pstate",     "pci",         "persistence",
    "processes",  "events",      "ecc",
    "remap",      "pcie_replay", "mem_temp",
    "fan",        "vbios",       "process_utilization",
    "nvlink",     "pcie_bytes",  "power_source",
    "gpm",        "psu",         "unit_fans",
    "mig",
};

static struct {
    bool loaded;
    unsigned int gpus;
    char model[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    double t0;
    double base, amp, period;
    double power_avg_s;
    double energy_cpu_us;           /* FAKE_NVML_ENERGY_CPU_US */
    double read_delay_us[MAX_GPUS]; /* FAKE_NVML_READ_DELAY_US */
    bool square;                    /* FAKE_NVML_WAVE=square */
    bool irregular;                 /* FAKE_NVML_WAVE=irregular */
    unsigned long long offset_mj;
    struct {
        unsigned int gpu;
        double from, to;
    } lost[MAX_EVENTS];
    int nlost;
    int swap_gpu; /* -1: none */
    double swap_at;
    struct {
        unsigned int gpu;
        double at;
    } reset[MAX_EVENTS];
    int nreset;
    unsigned int notsup;
    int init_fail;
    double temp_base, temp_slope;
    unsigned int slowdown, shutdown;
    unsigned long long throttle;
    int persistence;
    const char *call_log;
    const char *procs_file;
    /* FAKE_NVML_UTIL, FAKE_NVML_STUCK, FAKE_NVML_POWER_READ: [from, to) windows with a value */
    struct window {
        unsigned int gpu;
        double from, to, v;
    } util[MAX_EVENTS], stuck[MAX_EVENTS], power_read[MAX_EVENTS];
    int nutil, nstuck, npower_read;
    bool thermal;
    bool temp_from_read; /* FAKE_NVML_TEMP_T0=read */
    bool shutdown_all;
    /* health: v[] holds the numbers after g:from (and :to for windows) */
    struct health {
        unsigned int gpu;
        double from, to;
        double v[4];
    } xid[MAX_EVENTS], storm[MAX_EVENTS], ecc[MAX_EVENTS], remap[MAX_EVENTS], replay[MAX_EVENTS];
    int nxid, nstorm, necc, nremap, nreplay;
    double mem_temp;
    unsigned int fans;
    /* interconnect counters, GPM, units */
    bool nvlink, pcie, pcie64, gpm;
    double nvlink_tx, nvlink_rx, pcie_tx, pcie_rx, pcie_offset;
    struct window field_error[MAX_EVENTS];
    int nfield_error;
    unsigned int gpm_off[8];
    int ngpm_off;
    double gpm_sm_scale; /* SM_UTIL = this x u (FAKE_NVML_GPM_SM_SCALE, default 1) */
    int power_source;    /* -1: NOT_SUPPORTED */
    unsigned int units;
    struct health psu_abnormal[MAX_EVENTS];
    int npsu_abnormal;
    bool wait_ignores_signal;
    unsigned int mig_n[MAX_GPUS]; /* FAKE_NVML_MIG: instances; 0: not in MIG mode */
    bool mig[MAX_GPUS];
    const char *mig_file;
} fk;

#define DEFAULT_LIMIT_MW 700000u

/* Atomic: the event thread of a reader waits while another thread shuts the session down. */
static _Atomic int sessions;
/* Set by nvmlDeviceSetPowerManagementLimit (0: never) when there is no FAKE_NVML_LIMITS_FILE. */
static unsigned int limit_mw[MAX_GPUS];
static struct nvmlDevice_st devices[MAX_GPUS];
static struct nvmlDevice_st mig_devices[MAX_GPUS][MAX_MIG]; /* [gpu][gi - 1] */

double fake_nvml_exact_energy_j(unsigned int gpu, double t_from, double t_to);
double fake_nvml_t0(void);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static double env_double(const char *name, double def)
{
    const char *v = env(name);
    return v ? strtod(v, NULL) : def;
}

/* Reads "g:from:to[:v],…" into w (at most MAX_EVENTS); returns how many. */
static int load_windows(const char *name, struct window *w, bool with_value)
{
    int n = 0;
    for (const char *v = env(name); v && *v && n < MAX_EVENTS;) {
        struct window x = {0};
        int got = sscanf(v, "%u:%lf:%lf:%lf", &x.gpu, &x.from, &x.to, &x.v);
        if (got == (with_value ? 4 : 3) || (!with_value && got == 4))
            w[n++] = x;
        v = strchr(v, ',');
        v = v ? v + 1 : NULL;
    }
    return n;
}

/* The window of w[0..n) that holds GPU gpu at s seconds after T0, or NULL. */
static const struct window *in_window(const struct window *w, int n, unsigned int gpu, double s)
{
    for (int i = 0; i < n; i++)
        if (w[i].gpu == gpu && s >= w[i].from && s < w[i].to)
            return &w[i];
    return NULL;
}

/* Reads "g:a[:b]:v0:v1…,…" into h: with_to says whether a window end follows `from`; nv numbers
 * follow. Returns how many. */
static int load_health(const char *name, struct health *h, bool with_to, int nv)
{
    int n = 0;
    for (const char *v = env(name); v && *v && n < MAX_EVENTS;) {
        struct health x = {0};
        double f[7] = {0};
        int got = sscanf(v, "%u:%lf:%lf:%lf:%lf:%lf:%lf", &x.gpu, &f[0], &f[1], &f[2], &f[3], &f[4],
                         &f[5]);
        int want = 2 + (with_to ? 1 : 0) + nv;
        if (got == want) {
            x.from = f[0];
            x.to = with_to ? f[1] : INFINITY;
            for (int k = 0; k < nv; k++)
                x.v[k] = f[(with_to ? 2 : 1) + k];
            h[n++] = x;
        }
        v = strchr(v, ',');
        v = v ? v + 1 : NULL;
    }
    return n;
}

static void load(void)
{
    const char *v;
    memset(&fk, 0, sizeof fk);
    fk.gpus = (unsigned int)env_double("FAKE_NVML_GPUS", 8);
    if (fk.gpus > MAX_GPUS)
        fk.gpus = MAX_GPUS;
    snprintf(fk.model, sizeof fk.model, "%s",
             env("FAKE_NVML_MODEL") ? env("FAKE_NVML_MODEL") : "NVIDIA H200");
    /* Without FAKE_NVML_T0 the origin is the first load in this process, so that a collector
     * closed and opened again (config reload, retry) sees one continuous counter. */
    static double first_load;
    if (first_load == 0)
        first_load = now_s();
    fk.t0 = env_double("FAKE_NVML_T0", first_load);
    fk.base = 300, fk.amp = 100, fk.period = 7;
    if ((v = env("FAKE_NVML_POWER")))
        sscanf(v, "%lf,%lf,%lf", &fk.base, &fk.amp, &fk.period);
    fk.power_avg_s = env_double("FAKE_NVML_POWER_AVG", 0);
    fk.energy_cpu_us = env_double("FAKE_NVML_ENERGY_CPU_US", 0);
    v = env("FAKE_NVML_READ_DELAY_US");
    for (unsigned int i = 0; i < MAX_GPUS; i++) {
        char *end;
        double us = v && *v ? strtod(v, &end) : (i ? fk.read_delay_us[i - 1] : 0);
        if (v && *v)
            v = *end == ',' ? end + 1 : NULL;
        fk.read_delay_us[i] = us > 0 ? us : 0;
    }
    fk.square = (v = env("FAKE_NVML_WAVE")) && strcmp(v, "square") == 0;
    fk.irregular = v && strcmp(v, "irregular") == 0;
    fk.offset_mj = 1000000000ULL;
    if ((v = env("FAKE_NVML_ENERGY_OFFSET_MJ")))
        fk.offset_mj = strtoull(v, NULL, 10);
    for (v = env("FAKE_NVML_LOST"); v && *v && fk.nlost < MAX_EVENTS;) {
        unsigned int g;
        double a, b;
        if (sscanf(v, "%u:%lf:%lf", &g, &a, &b) == 3) {
            fk.lost[fk.nlost].gpu = g, fk.lost[fk.nlost].from = a, fk.lost[fk.nlost].to = b;
            fk.nlost++;
        }
        v = strchr(v, ',');
        v = v ? v + 1 : NULL;
    }
    fk.swap_gpu = -1;
    if ((v = env("FAKE_NVML_SWAP")) && sscanf(v, "%d:%lf", &fk.swap_gpu, &fk.swap_at) != 2)
        fk.swap_gpu = -1;
    for (v = env("FAKE_NVML_RESET"); v && *v && fk.nreset < MAX_EVENTS;) {
        unsigned int g;
        double a;
        if (sscanf(v, "%u:%lf", &g, &a) == 2) {
            fk.reset[fk.nreset].gpu = g, fk.reset[fk.nreset].at = a;
            fk.nreset++;
        }
        v = strchr(v, ',');
        v = v ? v + 1 : NULL;
    }
    if ((v = env("FAKE_NVML_NOT_SUPPORTED"))) {
        for (int i = 0; i < NS_COUNT; i++) {
            size_t n = strlen(ns_names[i]);
            for (const char *p = v; (p = strstr(p, ns_names[i])); p += n)
                if ((p == v || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
                    fk.notsup |= 1u << i;
        }
    }
    if ((v = env("FAKE_NVML_INIT_FAIL"))) {
        fk.init_fail = atoi(v);
        if (fk.init_fail == 1)
            fk.init_fail = NVML_ERROR_DRIVER_NOT_LOADED;
    }
    fk.temp_base = 45, fk.temp_slope = 0;
    if ((v = env("FAKE_NVML_TEMP")))
        sscanf(v, "%lf,%lf", &fk.temp_base, &fk.temp_slope);
    fk.slowdown = (unsigned int)env_double("FAKE_NVML_SLOWDOWN", 87);
    fk.shutdown = (unsigned int)env_double("FAKE_NVML_SHUTDOWN", 92);
    if ((v = env("FAKE_NVML_THROTTLE")))
        fk.throttle = strtoull(v, NULL, 0);
    fk.persistence = (int)env_double("FAKE_NVML_PERSISTENCE", 1);
    fk.nutil = load_windows("FAKE_NVML_UTIL", fk.util, true);
    fk.nstuck = load_windows("FAKE_NVML_STUCK", fk.stuck, false);
    fk.npower_read = load_windows("FAKE_NVML_POWER_READ", fk.power_read, true);
    fk.thermal = env_double("FAKE_NVML_THERMAL", 0) != 0;
    fk.temp_from_read = env("FAKE_NVML_TEMP_T0") && strcmp(env("FAKE_NVML_TEMP_T0"), "read") == 0;
    fk.nxid = load_health("FAKE_NVML_XID", fk.xid, false, 1);
    fk.nstorm = load_health("FAKE_NVML_XID_STORM", fk.storm, true, 2);
    fk.necc = load_health("FAKE_NVML_ECC", fk.ecc, false, 2);
    fk.nremap = load_health("FAKE_NVML_REMAP", fk.remap, false, 4);
    fk.nreplay = load_health("FAKE_NVML_PCIE_REPLAYS", fk.replay, true, 1);
    fk.mem_temp = env_double("FAKE_NVML_MEM_TEMP", 50);
    fk.fans = (unsigned int)env_double("FAKE_NVML_FANS", 0);
    if ((v = env("FAKE_NVML_NVLINK")))
        fk.nvlink = sscanf(v, "%lf,%lf", &fk.nvlink_tx, &fk.nvlink_rx) == 2;
    if ((v = env("FAKE_NVML_PCIE")))
        fk.pcie = sscanf(v, "%lf,%lf", &fk.pcie_tx, &fk.pcie_rx) == 2;
    fk.pcie_offset = env_double("FAKE_NVML_PCIE_OFFSET", 0);
    fk.pcie64 = env_double("FAKE_NVML_PCIE_64", 0) != 0;
    fk.nfield_error = load_windows("FAKE_NVML_FIELD_ERROR", fk.field_error, false);
    fk.gpm = env_double("FAKE_NVML_GPM", 0) != 0;
    fk.gpm_sm_scale = env_double("FAKE_NVML_GPM_SM_SCALE", 1);
    for (v = env("FAKE_NVML_GPM_OFF"); v && *v && fk.ngpm_off < 8;) {
        fk.gpm_off[fk.ngpm_off++] = (unsigned int)strtoul(v, NULL, 10);
        v = strchr(v, ',');
        v = v ? v + 1 : NULL;
    }
    fk.power_source = -1;
    if ((v = env("FAKE_NVML_POWER_SOURCE")))
        fk.power_source = strcmp(v, "battery") == 0      ? (int)NVML_POWER_SOURCE_BATTERY
                          : strcmp(v, "undersized") == 0 ? (int)NVML_POWER_SOURCE_UNDERSIZED
                                                         : (int)NVML_POWER_SOURCE_AC;
    fk.units = (unsigned int)env_double("FAKE_NVML_UNITS", 0);
    if (fk.units > 16)
        fk.units = 16;
    fk.npsu_abnormal = load_health("FAKE_NVML_PSU_ABNORMAL", fk.psu_abnormal, false, 0);
    fk.wait_ignores_signal = (v = env("FAKE_NVML_WAIT_SIGNAL")) && strcmp(v, "ignore") == 0;
    fk.shutdown_all = env_double("FAKE_NVML_SHUTDOWN_ALL", 0) != 0;
    fk.call_log = env("FAKE_NVML_CALL_LOG");
    fk.procs_file = env("FAKE_NVML_PROCS_FILE");
    for (v = env("FAKE_NVML_MIG"); v && *v;) {
        unsigned int g, n;
        if (sscanf(v, "%u:%u", &g, &n) == 2 && g < MAX_GPUS) {
            fk.mig[g] = true;
            fk.mig_n[g] = n > MAX_MIG ? MAX_MIG : n;
        }
        v = strchr(v, ',');
        v = v ? v + 1 : NULL;
    }
    fk.mig_file = env("FAKE_NVML_MIG_FILE");
    for (unsigned int i = 0; i < MAX_GPUS; i++)
        for (unsigned int k = 0; k < MAX_MIG; k++)
            mig_devices[i][k] = (struct nvmlDevice_st){i, k + 1};
    for (unsigned int i = 0; i < MAX_GPUS; i++)
        devices[i].index = i;
    fk.loaded = true;
}

static void log_call(const char *fn)
{
    if (!fk.call_log)
        return;
    int fd = open(fk.call_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char line[128];
    int n = snprintf(line, sizeof line, "%s\n", fn);
    if (write(fd, line, (size_t)n) < 0) {
        /* nothing to do: the log is best effort */
    }
    close(fd);
}

/* GPU gpu's limit in mW: the last line for it in FAKE_NVML_LIMITS_FILE (the driver's state,
 * shared by every process), else what this process set; DEFAULT_LIMIT_MW when never set. */
static unsigned int current_limit_mw(unsigned int gpu)
{
    const char *file = env("FAKE_NVML_LIMITS_FILE");
    if (!file)
        return limit_mw[gpu] ? limit_mw[gpu] : DEFAULT_LIMIT_MW;
    unsigned int mw = DEFAULT_LIMIT_MW;
    FILE *f = fopen(file, "re");
    char line[128];
    while (f && fgets(line, sizeof line, f)) {
        unsigned int g;
        double w;
        if (sscanf(line, "%u %lf", &g, &w) == 2 && g == gpu && w > 0)
            mw = (unsigned int)lround(w * 1000);
    }
    if (f)
        fclose(f);
    return mw;
}

/*
 * The irregular wave: switch k (k >= 1) at sw[k] seconds after T0 (sw[0] = 0), the level +1 in
 * [sw[k], sw[k+1]) for k even and -1 for k odd; cum[k] is the integral of the level over
 * [0, sw[k]]. Built as far as a caller asks, under a lock (the collector polls from threads).
 */
static struct {
    pthread_mutex_t lock;
    double *sw, *cum;
    size_t n, cap;
} irr = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* splitmix64 of k: the half-period's share, uniform in [0, 1). */
static double irr_u(uint64_t k)
{
    uint64_t z = k + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

/* The integral over [0, x] of the irregular wave's level (x < 0: level +1), and the level at x. */
static double irr_integral(double x, int *level)
{
    if (x < 0) {
        *level = 1;
        return x;
    }
    pthread_mutex_lock(&irr.lock);
    while (irr.n == 0 || irr.sw[irr.n - 1] <= x) {
        if (irr.n == irr.cap) {
            size_t cap = irr.cap ? 2 * irr.cap : 4096;
            double *sw = realloc(irr.sw, cap * sizeof *sw), *cum;
            if (sw)
                irr.sw = sw;
            cum = sw ? realloc(irr.cum, cap * sizeof *cum) : NULL;
            if (!cum) {
                pthread_mutex_unlock(&irr.lock);
                abort(); /* a test double out of memory: nothing sensible to return */
            }
            irr.cum = cum;
            irr.cap = cap;
        }
        if (irr.n == 0) {
            irr.sw[0] = irr.cum[0] = 0;
        } else {
            size_t k = irr.n - 1;
            double d = fk.period / 2 * (0.8 + 0.45 * irr_u(k));
            irr.sw[irr.n] = irr.sw[k] + d;
            irr.cum[irr.n] = irr.cum[k] + (k % 2 == 0 ? d : -d);
        }
        irr.n++;
    }
    size_t lo = 0, hi = irr.n - 1; /* the last k with sw[k] <= x */
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (irr.sw[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    *level = lo % 2 == 0 ? 1 : -1;
    double r = irr.cum[lo] + *level * (x - irr.sw[lo]);
    pthread_mutex_unlock(&irr.lock);
    return r;
}

static double power_w(unsigned int gpu, double t)
{
    if (fk.period <= 0)
        return fk.base;
    if (fk.irregular) {
        int level;
        (void)irr_integral(t - fk.t0 + gpu * fk.period / (2 * M_PI), &level);
        return fk.base + level * fk.amp;
    }
    double s = sin(2 * M_PI * (t - fk.t0) / fk.period + gpu);
    if (fk.square)
        return fk.base + (s >= 0 ? fk.amp : -fk.amp);
    return fk.base + fk.amp * s;
}

/* The integral over [0, x] of sign(sin(u)) du: a triangle wave of period 2 pi, 0 to pi. */
static double square_integral(double x)
{
    double m = fmod(x, 2 * M_PI);
    if (m < 0)
        m += 2 * M_PI;
    return m < M_PI ? m : 2 * M_PI - m;
}

double fake_nvml_exact_energy_j(unsigned int gpu, double t_from, double t_to)
{
    if (!fk.loaded)
        load();
    if (fk.period <= 0)
        return fk.base * (t_to - t_from);
    if (fk.irregular) {
        int l;
        double shift = gpu * fk.period / (2 * M_PI);
        return fk.base * (t_to - t_from) + fk.amp * (irr_integral(t_to - fk.t0 + shift, &l) -
                                                     irr_integral(t_from - fk.t0 + shift, &l));
    }
    double w = 2 * M_PI / fk.period;
    if (fk.square)
        return fk.base * (t_to - t_from) + fk.amp / w *
                                               (square_integral(w * (t_to - fk.t0) + gpu) -
                                                square_integral(w * (t_from - fk.t0) + gpu));
    return fk.base * (t_to - t_from) +
           fk.amp / w * (cos(w * (t_from - fk.t0) + gpu) - cos(w * (t_to - fk.t0) + gpu));
}

double fake_nvml_t0(void)
{
    if (!fk.loaded)
        load();
    return fk.t0;
}

static bool lost(unsigned int gpu, double t)
{
    double s = t - fk.t0;
    for (int i = 0; i < fk.nlost; i++)
        if (fk.lost[i].gpu == gpu && s >= fk.lost[i].from && s < fk.lost[i].to)
            return true;
    return false;
}

__attribute__((unused)) static unsigned long long energy_mj(unsigned int gpu, double t)
{
    double s = t - fk.t0, from = -1;
    for (int i = 0; i < fk.nreset; i++)
        if (fk.reset[i].gpu == gpu && fk.reset[i].at <= s && fk.reset[i].at > from)
            from = fk.reset[i].at;
    double base = from >= 0 ? 0 : (double)fk.offset_mj;
    double e =
        base + floor(1000 * fake_nvml_exact_energy_j(gpu, fk.t0 + (from >= 0 ? from : 0), t));
    return e > 0 ? (unsigned long long)e : 0;
}

__attribute__((unused)) static double util_pct(unsigned int gpu, double t)
{
    const struct window *w = in_window(fk.util, fk.nutil, gpu, t - fk.t0);
    if (w)
        return w->v < 0 ? 0 : w->v > 100 ? 100 : w->v;
    double u = 100 * (power_w(gpu, t) - 60) / 640;
    return u < 0 ? 0 : u > 100 ? 100 : u;
}

/* The checks every device call starts with; sets *t to now. */
static nvmlReturn_t device_call(const char *fn, nvmlDevice_t d, int ns, double *t)
{
    log_call(fn);
    *t = now_s();
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (!d || d < devices || d >= devices + fk.gpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (lost(d->index, *t))
        return NVML_ERROR_GPU_IS_LOST;
    if (ns >= 0 && (fk.notsup & (1u << ns)))
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

/* d is a MIG device handle (of any GPU, any instance, present or not). */
static bool is_mig(nvmlDevice_t d)
{
    const struct nvmlDevice_st *first = &mig_devices[0][0];
    return d && d >= first && d < first + MAX_GPUS * MAX_MIG;
}

/* GPU instance gi (1..MAX_MIG) of GPU gpu now: FAKE_NVML_MIG_FILE when it exists, else the
 * first FAKE_NVML_MIG count of them. */
enum { MIG_ABSENT, MIG_PRESENT, MIG_STALE };
__attribute__((unused)) static int mig_state(unsigned int gpu, unsigned int gi)
{
    if (gpu >= fk.gpus || !fk.mig[gpu] || gi < 1 || gi > MAX_MIG)
        return MIG_ABSENT;
    FILE *f = fk.mig_file ? fopen(fk.mig_file, "re") : NULL;
    if (!f)
        return gi <= fk.mig_n[gpu] ? MIG_PRESENT : MIG_ABSENT;
    int st = MIG_ABSENT;
    char line[128], word[16];
    while (st == MIG_ABSENT && fgets(line, sizeof line, f)) {
        unsigned int g, i;
        int got = sscanf(line, "%u %u %15s", &g, &i, word);
        if (got >= 2 && g == gpu && i == gi)
            st = got == 3 && strcmp(word, "stale") == 0 ? MIG_STALE : MIG_PRESENT;
    }
    fclose(f);
    return st;
}

__attribute__((unused)) static bool mig_present(unsigned int gpu, unsigned int gi)
{
    return mig_state(gpu, gi) == MIG_PRESENT;
}

/* The checks every call on a MIG handle starts with: the parent's, then the instance is there
 * (NOT_FOUND once destroyed, as the driver's stale handle). */
__attribute__((unused)) static nvmlReturn_t mig_call(const char *fn, nvmlDevice_t d, int ns,
                                                     double *t)
{
    nvmlReturn_t r = device_call(fn, &devices[d->index], ns, t);
    if (r)
        return r;
    return mig_present(d->index, d->gi) ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t copy_out(char *buf, unsigned int length, const char *s)
{
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

/* ---- required entry points (in the minimal build under their oldest names only) ---- */

wt_nvml_init_fn nvmlInit, nvmlShutdown;
wt_nvml_error_string_fn nvmlErrorString;
wt_nvml_count_fn nvmlDeviceGetCount;
wt_nvml_handle_fn nvmlDeviceGetHandleByIndex;
wt_nvml_string_fn nvmlDeviceGetName, nvmlDeviceGetUUID;
wt_nvml_uint_fn nvmlDeviceGetPowerUsage;

static nvmlReturn_t do_init(const char *fn)
{
    if (sessions == 0)
        load();
    log_call(fn);
    if (fk.init_fail)
        return (nvmlReturn_t)fk.init_fail;
    sessions++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void)
{
    return do_init("nvmlInit");
}

nvmlReturn_t nvmlShutdown(void)
{
    log_call("nvmlShutdown");
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (fk.shutdown_all)
        sessions = 0;
    else
        sessions--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_TIMEOUT:
        return "Timeout";
    default:
        return "Unknown Error";
    }
}

static nvmlReturn_t do_count(const char *fn, unsigned int *count)
{
    log_call(fn);
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = fk.gpus;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *count)
{
    return do_count("nvmlDeviceGetCount", count);
}

static nvmlReturn_t do_handle(const char *fn, unsigned int index, nvmlDevice_t *device)
{
    log_call(fn);
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (index >= fk.gpus || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (lost(index, now_s()))
        return NVML_ERROR_GPU_IS_LOST;
    *device = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return do_handle("nvmlDeviceGetHandleByIndex", index, device);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int length)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetName", d, -1, &t);
    return r ? r : copy_out(buf, length, fk.model);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int length)
{
    double t;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlReturn_t r = is_mig(d) ? mig_call("nvmlDeviceGetUUID", d, -1, &t)
                               : device_call("nvmlDeviceGetUUID", d, -1, &t);
    if (r)
        return r;
    if (is_mig(d))
        snprintf(uuid, sizeof uuid, "MIG-fake-%u-%u", d->index, d->gi);
    else if ((int)d->index == fk.swap_gpu && now_s() - fk.t0 >= fk.swap_at)
        snprintf(uuid, sizeof uuid, "GPU-fake-swap-%u", d->index);
    else
        snprintf(uuid, sizeof uuid, "GPU-fake-0000-%u", d->index);
    return copy_out(buf, length, uuid);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetPowerUsage", d, NS_POWER, &t);
    if (r)
        return r;
    const struct window *w = in_window(fk.power_read, fk.npower_read, d->index, t - fk.t0);
    const struct window *st = in_window(fk.stuck, fk.nstuck, d->index, t - fk.t0);
    double at = st ? fk.t0 + st->from : t;
    double p = w ? w->v
               : fk.power_avg_s > 0
                   ? fake_nvml_exact_energy_j(d->index, at - fk.power_avg_s, at) / fk.power_avg_s
                   : power_w(d->index, at);
    double cap_w = current_limit_mw(d->index) / 1000.0;
    if (!w && p > cap_w)
        p = cap_w;
    *mw = p > 0 ? (unsigned int)lround(p * 1000) : 0;
    return NVML_SUCCESS;
}

#ifndef FAKE_MINIMAL
/* ---- newer names of the required entry points, and every optional one ---- */

wt_nvml_init_fn nvmlInit_v2;
wt_nvml_count_fn nvmlDeviceGetCount_v2;
wt_nvml_handle_fn nvmlDeviceGetHandleByIndex_v2;
wt_nvml_driver_version_fn nvmlSystemGetDriverVersion;
wt_nvml_pci_fn nvmlDeviceGetPciInfo_v3, nvmlDeviceGetPciInfo_v2, nvmlDeviceGetPciInfo;
wt_nvml_ull_fn nvmlDeviceGetTotalEnergyConsumption;
wt_nvml_temperature_fn nvmlDeviceGetTemperature;
wt_nvml_threshold_fn nvmlDeviceGetTemperatureThreshold;
wt_nvml_utilization_fn nvmlDeviceGetUtilizationRates;
wt_nvml_memory_fn nvmlDeviceGetMemoryInfo;
wt_nvml_clock_fn nvmlDeviceGetClockInfo;
wt_nvml_ull_fn nvmlDeviceGetCurrentClocksEventReasons, nvmlDeviceGetCurrentClocksThrottleReasons;
wt_nvml_uint_fn nvmlDeviceGetEnforcedPowerLimit;
wt_nvml_constraints_fn nvmlDeviceGetPowerManagementLimitConstraints;
wt_nvml_uint_fn nvmlDeviceGetPowerManagementLimit, nvmlDeviceGetPowerManagementDefaultLimit;
wt_nvml_set_limit_fn nvmlDeviceSetPowerManagementLimit;
wt_nvml_pstate_fn nvmlDeviceGetPerformanceState;
wt_nvml_enable_state_fn nvmlDeviceGetPersistenceMode;
wt_nvml_procs_fn nvmlDeviceGetComputeRunningProcesses_v3, nvmlDeviceGetComputeRunningProcesses_v2;
wt_nvml_procs_fn nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlDeviceGetGraphicsRunningProcesses_v2;
wt_nvml_procs_v1_fn nvmlDeviceGetComputeRunningProcesses, nvmlDeviceGetGraphicsRunningProcesses;

nvmlReturn_t nvmlInit_v2(void)
{
    return do_init("nvmlInit_v2");
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    return do_count("nvmlDeviceGetCount_v2", count);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    return do_handle("nvmlDeviceGetHandleByIndex_v2", index, device);
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    log_call("nvmlSystemGetDriverVersion");
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    return copy_out(version, length, "550.54.15-fake");
}

static nvmlReturn_t do_pci(const char *fn, nvmlDevice_t d, nvmlPciInfo_t *pci, bool legacy)
{
    double t;
    nvmlReturn_t r = device_call(fn, d, NS_PCI, &t);
    if (r)
        return r;
    unsigned int bus = 0x10 + d->index;
    if (legacy) {
        /* The original call knows only the 16-byte id and must not write past it. */
        snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", bus);
        return NVML_SUCCESS;
    }
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0000:%02X:00.0", bus);
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", bus);
    pci->bus = bus;
    pci->pciDeviceId = 0x233510DE;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
    return do_pci("nvmlDeviceGetPciInfo_v3", d, pci, false);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
    return do_pci("nvmlDeviceGetPciInfo_v2", d, pci, false);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *pci)
{
    return do_pci("nvmlDeviceGetPciInfo", d, pci, true);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetTotalEnergyConsumption", d, NS_ENERGY, &t);
    if (r)
        return r;
    if (fk.energy_cpu_us > 0) {
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        do
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        while ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3 <
               fk.energy_cpu_us);
    }
    if (d->index < MAX_GPUS && fk.read_delay_us[d->index] > 0) {
        double until = now_s() + fk.read_delay_us[d->index] / 1e6;
        long long ns = (long long)(fk.read_delay_us[d->index] * 1e3);
        struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        while ((t = now_s()) < until)
            ;
    }
    *mj = energy_mj(d->index, t);
    return NVML_SUCCESS;
}

/* GPU gpu's temperature at t (°C, not rounded); read says a temperature read asks, which under
 * FAKE_NVML_TEMP_T0=read starts the clock (the first in the process, kept through a reload). */
static double temp_c(unsigned int gpu, double t, bool read)
{
    static double first_read;
    double t0 = fk.t0;
    if (fk.temp_from_read) {
        if (first_read == 0 && read)
            first_read = t;
        t0 = first_read != 0 ? first_read : t;
    }
    return fk.temp_base + gpu + fk.temp_slope * (t - t0);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, nvmlTemperatureSensors_t sensor,
                                      unsigned int *temp)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetTemperature", d, NS_TEMP, &t);
    if (r)
        return r;
    if (sensor != NVML_TEMPERATURE_GPU || !temp)
        return NVML_ERROR_INVALID_ARGUMENT;
    double c = temp_c(d->index, t, true);
    *temp = c > 0 ? (unsigned int)lround(c) : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t d, nvmlTemperatureThresholds_t which,
                                               unsigned int *temp)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetTemperatureThreshold", d, NS_THRESH, &t);
    if (r)
        return r;
    if (which == NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
        *temp = fk.slowdown;
    else if (which == NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)
        *temp = fk.shutdown;
    else
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *util)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetUtilizationRates", d, NS_UTIL, &t);
    if (r)
        return r;
    if (fk.mig[d->index])
        return NVML_ERROR_NOT_SUPPORTED; /* "not currently supported" on MIG-enabled GPUs */
    double u = util_pct(d->index, t);
    util->gpu = (unsigned int)lround(u);
    util->memory = (unsigned int)lround(0.6 * u);
    return NVML_SUCCESS;
}

static nvmlReturn_t mig_memory(nvmlDevice_t d, nvmlMemory_t *mem);

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *mem)
{
    double t;
    if (is_mig(d))
        return mig_memory(d, mem);
    nvmlReturn_t r = device_call("nvmlDeviceGetMemoryInfo", d, NS_MEM, &t);
    if (r)
        return r;
    mem->total = 143771ULL * 1024 * 1024;
    mem->used = (unsigned long long)(mem->total * (0.1 + 0.8 * util_pct(d->index, t) / 100));
    mem->free = mem->total - mem->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, nvmlClockType_t type, unsigned int *mhz)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetClockInfo", d, NS_CLOCKS, &t);
    if (r)
        return r;
    if (type == NVML_CLOCK_SM || type == NVML_CLOCK_GRAPHICS)
        *mhz = (unsigned int)lround(345 + 1635 * util_pct(d->index, t) / 100);
    else if (type == NVML_CLOCK_MEM)
        *mhz = 2619;
    else
        *mhz = 1755;
    return NVML_SUCCESS;
}

static nvmlReturn_t do_reasons(const char *fn, nvmlDevice_t d, unsigned long long *mask)
{
    double t;
    nvmlReturn_t r = device_call(fn, d, NS_THROTTLE, &t);
    if (r)
        return r;
    *mask = fk.throttle;
    /* As reported: the temperature rounded to whole degrees reaches the threshold. */
    if (fk.thermal && lround(temp_c(d->index, t, false)) >= fk.slowdown)
        *mask |= 0x20ULL | 0x40ULL; /* SW and HW thermal slowdown */
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *mask)
{
    return do_reasons("nvmlDeviceGetCurrentClocksEventReasons", d, mask);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *mask)
{
    return do_reasons("nvmlDeviceGetCurrentClocksThrottleReasons", d, mask);
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetEnforcedPowerLimit", d, NS_LIMIT, &t);
    if (r)
        return r;
    *mw = current_limit_mw(d->index);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetPowerManagementLimit", d, NS_LIMIT, &t);
    if (r)
        return r;
    *mw = current_limit_mw(d->index);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned int *mw)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetPowerManagementDefaultLimit", d, NS_LIMIT, &t);
    if (r)
        return r;
    *mw = DEFAULT_LIMIT_MW;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t d, unsigned int mw)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceSetPowerManagementLimit", d, NS_LIMIT, &t);
    if (r)
        return r;
    if (mw < 200000 || mw > 700000)
        return NVML_ERROR_INVALID_ARGUMENT;
    limit_mw[d->index] = mw;
    const char *file = env("FAKE_NVML_LIMITS_FILE");
    int fd = file ? open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    if (fd >= 0) {
        char line[64];
        int n = snprintf(line, sizeof line, "%u %g\n", d->index, mw / 1000.0);
        if (write(fd, line, (size_t)n) < 0) {
            /* best effort, like the call log */
        }
        close(fd);
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d, unsigned int *min_mw,
                                                          unsigned int *max_mw)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetPowerManagementLimitConstraints", d, NS_LIMIT, &t);
    if (r)
        return r;
    *min_mw = 200000;
    *max_mw = 700000;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t d, nvmlPstates_t *pstate)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetPerformanceState", d, NS_PSTATE, &t);
    if (r)
        return r;
    *pstate = util_pct(d->index, t) < 5 ? (nvmlPstates_t)8 : NVML_PSTATE_0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, nvmlEnableState_t *mode)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetPersistenceMode", d, NS_PERSIST, &t);
    if (r)
        return r;
    *mode = fk.persistence ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

#define MAX_PROCS 1024

/* One process line of FAKE_NVML_PROCS_FILE. */
struct fake_proc {
    unsigned int pid;
    unsigned long long mem_b; /* ~0ULL: not available */
    int sm;                   /* -1: no sm= (no utilization sample) */
    unsigned int gi;          /* gi=N: its MIG GPU instance; 0xFFFFFFFF none */
};

/* The processes FAKE_NVML_PROCS_FILE lists for gpu, of one kind (any kind when any); returns
 * how many (at most cap). */
static unsigned int file_procs(unsigned int gpu, bool graphics, bool any, struct fake_proc *out,
                               unsigned int cap)
{
    FILE *f = fk.procs_file ? fopen(fk.procs_file, "re") : NULL;
    unsigned int n = 0;
    char line[256];
    while (f && n < cap && fgets(line, sizeof line, f)) {
        unsigned int g, pid;
        int used = 0;
        if (sscanf(line, "%u %u%n", &g, &pid, &used) < 2 || g != gpu)
            continue;
        struct fake_proc p = {pid, 1ULL << 30, -1, 0xFFFFFFFFu};
        bool is_graphics = false;
        char tok[64];
        int k = 0;
        for (const char *q = line + used; sscanf(q, " %63s%n", tok, &k) == 1; q += k) {
            unsigned long long mib;
            if (strcmp(tok, "graphics") == 0)
                is_graphics = true;
            else if (strcmp(tok, "mem=na") == 0)
                p.mem_b = ~0ULL;
            else if (sscanf(tok, "mem=%llu", &mib) == 1)
                p.mem_b = mib << 20;
            else if (sscanf(tok, "gi=%u", &p.gi) != 1)
                sscanf(tok, "sm=%d", &p.sm);
        }
        if (any || is_graphics == graphics)
            out[n++] = p;
    }
    if (f)
        fclose(f);
    return n;
}

/* Fills infos (the v2/v3 layout, or v1 when v1) as NVML does: INSUFFICIENT_SIZE with the count
 * needed when they do not fit. */
static nvmlReturn_t do_procs(const char *fn, nvmlDevice_t d, unsigned int *count, void *infos,
                             bool v1, bool graphics)
{
    double t;
    static _Thread_local struct fake_proc pids[MAX_PROCS];
    nvmlReturn_t r = is_mig(d) ? mig_call(fn, d, NS_PROCS, &t) : device_call(fn, d, NS_PROCS, &t);
    if (r)
        return r;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = file_procs(d->index, graphics, false, pids, MAX_PROCS);
    if (is_mig(d)) {
        /* a MIG handle lists its instance's processes only */
        unsigned int m = 0;
        for (unsigned int i = 0; i < n; i++)
            if (pids[i].gi == d->gi)
                pids[m++] = pids[i];
        n = m;
    }
    if (n > *count || (n && !infos)) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < n; i++) {
        if (v1) {
            nvmlProcessInfo_v1_t *p = (nvmlProcessInfo_v1_t *)infos + i;
            p->pid = pids[i].pid;
            p->usedGpuMemory = pids[i].mem_b;
        } else {
            nvmlProcessInfo_t *p = (nvmlProcessInfo_t *)infos + i;
            p->pid = pids[i].pid;
            p->usedGpuMemory = pids[i].mem_b;
            p->gpuInstanceId = pids[i].gi;
            p->computeInstanceId = pids[i].gi == 0xFFFFFFFFu ? 0xFFFFFFFFu : 0;
        }
    }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                     nvmlProcessInfo_t *infos)
{
    return do_procs("nvmlDeviceGetComputeRunningProcesses_v3", d, count, infos, false, false);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *count,
                                                     nvmlProcessInfo_t *infos)
{
    return do_procs("nvmlDeviceGetComputeRunningProcesses_v2", d, count, infos, false, false);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *count,
                                                  nvmlProcessInfo_v1_t *infos)
{
    return do_procs("nvmlDeviceGetComputeRunningProcesses", d, count, infos, true, false);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                      nvmlProcessInfo_t *infos)
{
    return do_procs("nvmlDeviceGetGraphicsRunningProcesses_v3", d, count, infos, false, true);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned int *count,
                                                      nvmlProcessInfo_t *infos)
{
    return do_procs("nvmlDeviceGetGraphicsRunningProcesses_v2", d, count, infos, false, true);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned int *count,
                                                   nvmlProcessInfo_v1_t *infos)
{
    return do_procs("nvmlDeviceGetGraphicsRunningProcesses", d, count, infos, true, true);
}

/* ---- per-process utilization (attribution) ---- */

wt_nvml_proc_util_fn nvmlDeviceGetProcessUtilization;

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d,
                                             nvmlProcessUtilizationSample_t *samples,
                                             unsigned int *count, unsigned long long last_seen)
{
    double t;
    static _Thread_local struct fake_proc p[MAX_PROCS];
    nvmlReturn_t r = device_call("nvmlDeviceGetProcessUtilization", d, NS_PROC_UTIL, &t);
    if (r)
        return r;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long now_us = (unsigned long long)(t * 1e6);
    unsigned int n = file_procs(d->index, false, true, p, MAX_PROCS), m = 0;
    for (unsigned int i = 0; i < n; i++)
        if (p[i].sm >= 0)
            p[m++] = p[i];
    if (m == 0 || now_us <= last_seen) {
        *count = 0;
        return NVML_ERROR_NOT_FOUND;
    }
    if (m > *count || !samples) {
        *count = m;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < m; i++) {
        samples[i].pid = p[i].pid;
        samples[i].timeStamp = now_us;
        samples[i].smUtil = (unsigned int)p[i].sm;
        samples[i].memUtil = (unsigned int)p[i].sm / 2;
        samples[i].encUtil = samples[i].decUtil = 0;
    }
    *count = m;
    return NVML_SUCCESS;
}
/* ---- health ---- */

wt_nvml_string_fn nvmlDeviceGetVbiosVersion;
wt_nvml_cuda_version_fn nvmlSystemGetCudaDriverVersion_v2, nvmlSystemGetCudaDriverVersion;
wt_nvml_event_set_create_fn nvmlEventSetCreate;
wt_nvml_event_set_free_fn nvmlEventSetFree;
wt_nvml_register_events_fn nvmlDeviceRegisterEvents;
wt_nvml_ull_fn nvmlDeviceGetSupportedEventTypes;
wt_nvml_event_wait_fn nvmlEventSetWait_v2, nvmlEventSetWait;
wt_nvml_ecc_fn nvmlDeviceGetTotalEccErrors;
wt_nvml_remapped_rows_fn nvmlDeviceGetRemappedRows;
wt_nvml_uint_fn nvmlDeviceGetPcieReplayCounter, nvmlDeviceGetNumFans, nvmlDeviceGetFanSpeed;
wt_nvml_fan_fn nvmlDeviceGetFanSpeed_v2;
wt_nvml_field_values_fn nvmlDeviceGetFieldValues;

nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t d, char *buf, unsigned int length)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetVbiosVersion", d, NS_VBIOS, &t);
    return r ? r : copy_out(buf, length, "96.00.89.00.01");
}

static nvmlReturn_t do_cuda_version(const char *fn, int *v)
{
    log_call(fn);
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (!v)
        return NVML_ERROR_INVALID_ARGUMENT;
    *v = 12040;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    return do_cuda_version("nvmlSystemGetCudaDriverVersion_v2", v);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    return do_cuda_version("nvmlSystemGetCudaDriverVersion", v);
}

/* The latest entry of h[0..n) for gpu that has started by s, or NULL. */
static const struct health *latest(const struct health *h, int n, unsigned int gpu, double s)
{
    const struct health *best = NULL;
    for (int i = 0; i < n; i++)
        if (h[i].gpu == gpu && h[i].from <= s && (!best || h[i].from >= best->from))
            best = &h[i];
    return best;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, nvmlMemoryErrorType_t type,
                                         nvmlEccCounterType_t counter, unsigned long long *count)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetTotalEccErrors", d, NS_ECC, &t);
    if (r)
        return r;
    if (!count ||
        (type != NVML_MEMORY_ERROR_TYPE_CORRECTED && type != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) ||
        (counter != NVML_VOLATILE_ECC && counter != NVML_AGGREGATE_ECC))
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct health *h = latest(fk.ecc, fk.necc, d->index, t - fk.t0);
    double v = h ? h->v[type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? 0 : 1] : 0;
    if (counter == NVML_AGGREGATE_ECC && type == NVML_MEMORY_ERROR_TYPE_CORRECTED)
        v += 12;
    *count = (unsigned long long)v;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
                                       unsigned int *pending, unsigned int *failure)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetRemappedRows", d, NS_REMAP, &t);
    if (r)
        return r;
    if (!corr || !unc || !pending || !failure)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct health *h = latest(fk.remap, fk.nremap, d->index, t - fk.t0);
    *corr = h ? (unsigned int)h->v[0] : 0;
    *unc = h ? (unsigned int)h->v[1] : 0;
    *pending = h ? (unsigned int)h->v[2] : 0;
    *failure = h ? (unsigned int)h->v[3] : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *value)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetPcieReplayCounter", d, NS_PCIE_REPLAY, &t);
    if (r)
        return r;
    double s = t - fk.t0, n = 0;
    for (int i = 0; i < fk.nreplay; i++) {
        const struct health *h = &fk.replay[i];
        if (h->gpu == d->index && s > h->from)
            n += h->v[0] * ((s < h->to ? s : h->to) - h->from);
    }
    *value = (unsigned int)floor(n);
    return NVML_SUCCESS;
}

/* Seconds GPU gpu's counters have counted at t (since T0, or since its latest FAKE_NVML_RESET);
 * *reset says whether a reset started them. */
static double counting_s(unsigned int gpu, double t, bool *reset)
{
    double s = t - fk.t0, from = -1;
    for (int i = 0; i < fk.nreset; i++)
        if (fk.reset[i].gpu == gpu && fk.reset[i].at <= s && fk.reset[i].at > from)
            from = fk.reset[i].at;
    *reset = from >= 0;
    s -= from >= 0 ? from : 0;
    return s > 0 ? s : 0;
}

/* The NVLink and PCIe counter fields: true when v is one of them and the GPU has it. */
static bool counter_field(unsigned int gpu, double t, nvmlFieldValue_t *v)
{
    unsigned int id = v->fieldId;
    bool nvl =
        id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX || id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
    bool pcie = id == NVML_FI_DEV_PCIE_COUNT_TX_BYTES || id == NVML_FI_DEV_PCIE_COUNT_RX_BYTES;
    if (nvl ? !fk.nvlink || (fk.notsup & (1u << NS_NVLINK))
            : !pcie || !fk.pcie || (fk.notsup & (1u << NS_PCIE_BYTES)))
        return false;
    if (in_window(fk.field_error, fk.nfield_error, gpu, t - fk.t0)) {
        v->nvmlReturn = NVML_ERROR_UNKNOWN;
        return true;
    }
    bool reset = false;
    double s = counting_s(gpu, t, &reset);
    double rate = id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX   ? fk.nvlink_tx
                  : id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX ? fk.nvlink_rx
                  : id == NVML_FI_DEV_PCIE_COUNT_TX_BYTES       ? fk.pcie_tx
                                                                : fk.pcie_rx;
    double n = floor(rate * s);
    v->nvmlReturn = NVML_SUCCESS;
    if (nvl) {
        v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        v->value.ullVal = (unsigned long long)n; /* KiB */
    } else if (fk.pcie64) {
        v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        v->value.ullVal = (unsigned long long)(n + (reset ? 0 : fk.pcie_offset));
    } else {
        v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
        v->value.uiVal = (unsigned int)fmod(n + (reset ? 0 : fk.pcie_offset), 4294967296.0);
    }
    return true;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t *values)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetFieldValues", d, -1, &t);
    if (r)
        return r;
    if (count < 0 || (count && !values))
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < count; i++) {
        nvmlFieldValue_t *v = &values[i];
        v->timestamp = (long long)(t * 1e6);
        v->latencyUsec = 0;
        if (counter_field(d->index, t, v)) {
            /* NVLink and PCIe counters (below) */
        } else if (v->fieldId == NVML_FI_DEV_MEMORY_TEMP && !(fk.notsup & (1u << NS_MEM_TEMP))) {
            v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
            v->value.uiVal = (unsigned int)lround(fk.mem_temp + d->index);
            v->nvmlReturn = NVML_SUCCESS;
        } else {
            v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        }
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t d, unsigned int *n)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetNumFans", d, NS_FAN, &t);
    if (r)
        return r;
    if (!fk.fans)
        return NVML_ERROR_NOT_SUPPORTED;
    *n = fk.fans;
    return NVML_SUCCESS;
}

static nvmlReturn_t do_fan(const char *fn, nvmlDevice_t d, unsigned int fan, unsigned int *pct)
{
    double t;
    nvmlReturn_t r = device_call(fn, d, NS_FAN, &t);
    if (r)
        return r;
    if (!fk.fans)
        return NVML_ERROR_NOT_SUPPORTED;
    if (fan >= fk.fans || !pct)
        return NVML_ERROR_INVALID_ARGUMENT;
    *pct = 30 + 10 * fan;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t d, unsigned int fan, unsigned int *pct)
{
    return do_fan("nvmlDeviceGetFanSpeed_v2", d, fan, pct);
}

nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned int *pct)
{
    return do_fan("nvmlDeviceGetFanSpeed", d, 0, pct);
}

/*
 * An event set: which GPUs are registered, and how many events of each source it has handed
 * out. Events are due by the fake's clock; each waits until a wait takes it (the driver queues
 * them), so a slow reader gets every one, late.
 */
struct nvmlEventSet_st {
    unsigned long long gpus; /* bit per registered GPU */
    unsigned long long taken_xid[MAX_EVENTS], taken_storm[MAX_EVENTS];
};

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    log_call("nvmlEventSetCreate");
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    *set = calloc(1, sizeof **set);
    return *set ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    log_call("nvmlEventSetFree");
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    free(set);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetSupportedEventTypes", d, -1, &t);
    if (r)
        return r;
    /* single and double bit ECC, pstate, XID */
    *types = (fk.notsup & (1u << NS_EVENTS)) ? 0 : 0x1ULL | 0x2ULL | 0x4ULL | 0x8ULL;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceRegisterEvents", d, NS_EVENTS, &t);
    if (r)
        return r;
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (types & nvmlEventTypeXidCriticalError)
        set->gpus |= 1ULL << d->index;
    return NVML_SUCCESS;
}

/* How many events of storm h are due at s seconds after T0. */
static unsigned long long storm_due(const struct health *h, double s)
{
    if (s <= h->from)
        return 0;
    double end = s < h->to ? s : h->to;
    return (unsigned long long)floor((end - h->from) * h->v[1]);
}

/* Takes one due event into *data; returns false with *next (s after T0) when none is due. */
static bool take_event(nvmlEventSet_t set, double s, nvmlEventData_t *data, double *next)
{
    *next = INFINITY;
    for (int i = 0; i < fk.nxid; i++) {
        const struct health *h = &fk.xid[i];
        if (!(set->gpus & (1ULL << h->gpu)) || set->taken_xid[i])
            continue;
        if (h->from <= s) {
            set->taken_xid[i] = 1;
            data->device = &devices[h->gpu];
            data->eventData = (unsigned long long)h->v[0];
            return true;
        }
        if (h->from < *next)
            *next = h->from;
    }
    for (int i = 0; i < fk.nstorm; i++) {
        const struct health *h = &fk.storm[i];
        if (!(set->gpus & (1ULL << h->gpu)) || h->v[1] <= 0)
            continue;
        if (set->taken_storm[i] < storm_due(h, s)) {
            set->taken_storm[i]++;
            data->device = &devices[h->gpu];
            data->eventData = (unsigned long long)h->v[0];
            return true;
        }
        double at = h->from + (double)(set->taken_storm[i] + 1) / h->v[1];
        if (at <= h->to && at < *next) /* the last is due at to itself */
            *next = at;
    }
    return false;
}

static nvmlReturn_t do_wait(const char *fn, nvmlEventSet_t set, nvmlEventData_t *data,
                            unsigned int timeout_ms, bool v2)
{
    log_call(fn);
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (!set || !data)
        return NVML_ERROR_INVALID_ARGUMENT;
    double end = now_s() + timeout_ms / 1000.0;
    for (;;) {
        double t = now_s(), next;
        nvmlEventData_t ev = {0};
        if (take_event(set, t - fk.t0, &ev, &next)) {
            ev.eventType = nvmlEventTypeXidCriticalError;
            if (v2) {
                ev.gpuInstanceId = ev.computeInstanceId = 0xFFFFFFFFu;
                *data = ev;
            } else {
                /* the original layout: device, eventType, eventData */
                data->device = ev.device;
                data->eventType = ev.eventType;
                data->eventData = ev.eventData;
            }
            return NVML_SUCCESS;
        }
        if (t >= end)
            return NVML_ERROR_TIMEOUT;
        double until = fk.t0 + next < end ? fk.t0 + next : end;
        double d = until - t;
        struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
        if (nanosleep(&ts, NULL) != 0 && errno == EINTR && !fk.wait_ignores_signal)
            return NVML_ERROR_TIMEOUT;
        if (!sessions)
            return NVML_ERROR_UNINITIALIZED;
    }
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int ms)
{
    return do_wait("nvmlEventSetWait_v2", set, data, ms, true);
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int ms)
{
    return do_wait("nvmlEventSetWait", set, data, ms, false);
}
/* ---- GPM, power source, S-class units ---- */

wt_nvml_gpm_support_fn nvmlGpmQueryDeviceSupport;
wt_nvml_gpm_alloc_fn nvmlGpmSampleAlloc;
wt_nvml_gpm_free_fn nvmlGpmSampleFree;
wt_nvml_gpm_sample_fn nvmlGpmSampleGet;
wt_nvml_gpm_metrics_fn nvmlGpmMetricsGet;
wt_nvml_uint_fn nvmlDeviceGetPowerSource;
wt_nvml_count_fn nvmlUnitGetCount;
wt_nvml_unit_handle_fn nvmlUnitGetHandleByIndex;
wt_nvml_unit_psu_fn nvmlUnitGetPsuInfo;
wt_nvml_unit_fans_fn nvmlUnitGetFanSpeedInfo;
int fake_nvml_gpm_live(void);

/* A GPM sample: when and on which GPU (and GPU instance: 0 for the whole GPU) it was taken. */
struct nvmlGpmSample_st {
    bool taken;
    unsigned int gpu, gi;
    double t;
};
static _Atomic int gpm_live;

int fake_nvml_gpm_live(void)
{
    return gpm_live;
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *sup)
{
    double t;
    nvmlReturn_t r = device_call("nvmlGpmQueryDeviceSupport", d, NS_GPM, &t);
    if (r)
        return r;
    if (!sup || sup->version != NVML_GPM_SUPPORT_VERSION)
        return NVML_ERROR_INVALID_ARGUMENT;
    sup->isSupportedDevice = fk.gpm ? 1 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *smp)
{
    log_call("nvmlGpmSampleAlloc");
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (!smp)
        return NVML_ERROR_INVALID_ARGUMENT;
    *smp = calloc(1, sizeof **smp);
    if (!*smp)
        return NVML_ERROR_MEMORY;
    gpm_live++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t smp)
{
    log_call("nvmlGpmSampleFree");
    if (!smp)
        return NVML_ERROR_INVALID_ARGUMENT;
    free(smp);
    gpm_live--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t smp)
{
    double t;
    nvmlReturn_t r = device_call("nvmlGpmSampleGet", d, NS_GPM, &t);
    if (r)
        return r;
    if (!fk.gpm)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!smp)
        return NVML_ERROR_INVALID_ARGUMENT;
    smp->taken = true;
    smp->gpu = d->index;
    smp->gi = 0;
    smp->t = t;
    return NVML_SUCCESS;
}

wt_nvml_gpm_mig_sample_fn nvmlGpmMigSampleGet;

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t d, unsigned int gi, nvmlGpmSample_t smp)
{
    double t;
    if (is_mig(d))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = device_call("nvmlGpmMigSampleGet", d, NS_GPM, &t);
    if (r)
        return r;
    if (!fk.gpm)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!smp || !fk.mig[d->index])
        return NVML_ERROR_INVALID_ARGUMENT;
    if (!mig_present(d->index, gi))
        return NVML_ERROR_NOT_FOUND;
    smp->taken = true;
    smp->gpu = d->index;
    smp->gi = gi;
    smp->t = t;
    return NVML_SUCCESS;
}

/* GPU instance gi's SM activity: the sm= of its processes, summed, at most 100 %. */
static double mig_util_pct(unsigned int gpu, unsigned int gi)
{
    static _Thread_local struct fake_proc p[MAX_PROCS];
    unsigned int n = file_procs(gpu, false, true, p, MAX_PROCS);
    double u = 0;
    for (unsigned int i = 0; i < n; i++)
        if (p[i].gi == gi && p[i].sm > 0)
            u += p[i].sm;
    return u > 100 ? 100 : u;
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *mg)
{
    log_call("nvmlGpmMetricsGet");
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (!mg || mg->version != NVML_GPM_METRICS_GET_VERSION || mg->numMetrics > NVML_GPM_METRIC_MAX)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct nvmlGpmSample_st *a = mg->sample1, *b = mg->sample2;
    if (!a || !b || !a->taken || !b->taken || a->gpu != b->gpu || a->gi != b->gi || !(b->t > a->t))
        return NVML_ERROR_INVALID_ARGUMENT;
    double u =
        a->gi ? mig_util_pct(a->gpu, a->gi) : (util_pct(a->gpu, a->t) + util_pct(b->gpu, b->t)) / 2;
    for (unsigned int i = 0; i < mg->numMetrics; i++) {
        nvmlGpmMetric_t *m = &mg->metrics[i];
        bool off = false;
        for (int k = 0; k < fk.ngpm_off; k++)
            off |= fk.gpm_off[k] == m->metricId;
        m->nvmlReturn = NVML_SUCCESS;
        if (off)
            m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
        else if (m->metricId == NVML_GPM_METRIC_SM_UTIL)
            m->value = fk.gpm_sm_scale * u;
        else if (m->metricId == NVML_GPM_METRIC_SM_OCCUPANCY)
            m->value = u / 2;
        else if (m->metricId == NVML_GPM_METRIC_ANY_TENSOR_UTIL)
            m->value = u / 4;
        else if (m->metricId == NVML_GPM_METRIC_DRAM_BW_UTIL)
            m->value = 0.6 * u;
        else
            m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerSource(nvmlDevice_t d, unsigned int *src)
{
    double t;
    nvmlReturn_t r = device_call("nvmlDeviceGetPowerSource", d, NS_POWER_SOURCE, &t);
    if (r)
        return r;
    if (fk.power_source < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (!src)
        return NVML_ERROR_INVALID_ARGUMENT;
    *src = (unsigned int)fk.power_source;
    return NVML_SUCCESS;
}

struct nvmlUnit_st {
    unsigned int index;
};
static struct nvmlUnit_st units[16];

nvmlReturn_t nvmlUnitGetCount(unsigned int *n)
{
    log_call("nvmlUnitGetCount");
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (!n)
        return NVML_ERROR_INVALID_ARGUMENT;
    *n = fk.units;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlUnitGetHandleByIndex(unsigned int i, nvmlUnit_t *u)
{
    log_call("nvmlUnitGetHandleByIndex");
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (i >= fk.units || !u)
        return NVML_ERROR_INVALID_ARGUMENT;
    units[i].index = i;
    *u = &units[i];
    return NVML_SUCCESS;
}

/* The checks every unit call starts with; sets *abnormal from FAKE_NVML_PSU_ABNORMAL. */
static nvmlReturn_t unit_call(const char *fn, nvmlUnit_t u, int ns, bool *abnormal)
{
    log_call(fn);
    if (!sessions)
        return NVML_ERROR_UNINITIALIZED;
    if (!u || u < units || u >= units + fk.units)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (fk.notsup & (1u << ns))
        return NVML_ERROR_NOT_SUPPORTED;
    *abnormal = latest(fk.psu_abnormal, fk.npsu_abnormal, u->index, now_s() - fk.t0) != NULL;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlUnitGetPsuInfo(nvmlUnit_t u, nvmlPSUInfo_t *psu)
{
    bool abnormal = false;
    nvmlReturn_t r = unit_call("nvmlUnitGetPsuInfo", u, NS_PSU, &abnormal);
    if (r)
        return r;
    if (!psu)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(psu->state, sizeof psu->state, "%s", abnormal ? "Abnormal High voltage" : "Normal");
    psu->voltage = 12;
    psu->current = 40 + u->index;
    psu->power = 480 + 12 * u->index;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlUnitGetFanSpeedInfo(nvmlUnit_t u, nvmlUnitFanSpeeds_t *fans)
{
    bool abnormal = false;
    nvmlReturn_t r = unit_call("nvmlUnitGetFanSpeedInfo", u, NS_UNIT_FANS, &abnormal);
    if (r)
        return r;
    if (!fans)
        return NVML_ERROR_INVALID_ARGUMENT;
    fans->count = 2;
    for (unsigned int f = 0; f < 2; f++) {
        fans->fans[f].speed = 5000 + 100 * f;
        fans->fans[f].state = abnormal && f == 1 ? NVML_FAN_FAILED : NVML_FAN_NORMAL;
    }
    return NVML_SUCCESS;
}
/* ---- MIG ---- */

wt_nvml_mig_mode_fn nvmlDeviceGetMigMode;
wt_nvml_uint_fn nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetGpuInstanceId,
    nvmlDeviceGetComputeInstanceId;
wt_nvml_mig_handle_fn nvmlDeviceGetMigDeviceHandleByIndex;

static nvmlReturn_t mig_memory(nvmlDevice_t d, nvmlMemory_t *mem)
{
    double t;
    static _Thread_local struct fake_proc p[MAX_PROCS];
    nvmlReturn_t r = mig_call("nvmlDeviceGetMemoryInfo", d, NS_MEM, &t);
    if (r)
        return r;
    if (!mem)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int n = file_procs(d->index, false, true, p, MAX_PROCS);
    unsigned long long used = 64ULL << 20;
    for (unsigned int i = 0; i < n; i++)
        if (p[i].gi == d->gi && p[i].mem_b != ~0ULL)
            used += p[i].mem_b;
    mem->total = (143771ULL / MAX_MIG) << 20;
    mem->used = used < mem->total ? used : mem->total;
    mem->free = mem->total - mem->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending)
{
    double t;
    if (is_mig(d))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = device_call("nvmlDeviceGetMigMode", d, NS_MIG, &t);
    if (r)
        return r;
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    *current = *pending = fk.mig[d->index] ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count)
{
    double t;
    if (is_mig(d))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = device_call("nvmlDeviceGetMaxMigDeviceCount", d, NS_MIG, &t);
    if (r)
        return r;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = fk.mig[d->index] ? MAX_MIG : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index,
                                                 nvmlDevice_t *mig)
{
    double t;
    if (is_mig(d))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = device_call("nvmlDeviceGetMigDeviceHandleByIndex", d, NS_MIG, &t);
    if (r)
        return r;
    if (!mig || index >= MAX_MIG || !fk.mig[d->index])
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mig_state(d->index, index + 1) == MIG_ABSENT)
        return NVML_ERROR_NOT_FOUND;
    *mig = &mig_devices[d->index][index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id)
{
    double t;
    if (!is_mig(d))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = mig_call("nvmlDeviceGetGpuInstanceId", d, -1, &t);
    if (r)
        return r;
    *id = d->gi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id)
{
    double t;
    if (!is_mig(d))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = mig_call("nvmlDeviceGetComputeInstanceId", d, -1, &t);
    if (r)
        return r;
    *id = 0;
    return NVML_SUCCESS;
}

#endif /* FAKE_MINIMAL */

#ifdef FAKE_NVML_TOOL
/* fake_nvml_energy GPU FROM TO: the exact energy of GPU over [FROM, TO] (unix seconds), in J. */
int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr,
                "usage: %s GPU FROM TO   (unix seconds; same FAKE_NVML_* environment, "
                "FAKE_NVML_T0 required)\n",
                argv[0]);
        return 2;
    }
    if (!env("FAKE_NVML_T0")) {
        fprintf(stderr, "%s: set FAKE_NVML_T0 to the time origin the fake used\n", argv[0]);
        return 2;
    }
    unsigned int gpu = (unsigned int)strtoul(argv[1], NULL, 10);
    printf("%.6f\n", fake_nvml_exact_energy_j(gpu, strtod(argv[2], NULL), strtod(argv[3], NULL)));
    return 0;
}
#endif
