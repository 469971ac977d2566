/* SPDX-License-Identifier: MIT */
/*
 * AMD SMI behind ROCm SMI's signatures (see collect/amdsmi.h). One library, one amdsmi_init and
 * one table of processor handles for the process, counted by the sessions that use them: the
 * collector's and the power capper's may overlap, and older AMD SMI releases do not count their
 * own inits (their amdsmi_shut_down ends the library for every caller; recent ones count them).
 */
#include "collect/amdsmi.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/amdsmi_api.h"
#include "collect/rocm_api.h"
#include "core/err.h"

#define MAX_HANDLES 1024

static struct {
    wt_amdsmi_init_fn *init;
    wt_amdsmi_shut_down_fn *shut_down;
    wt_amdsmi_status_string_fn *status_string;
    wt_amdsmi_sockets_fn *sockets;
    wt_amdsmi_processors_fn *processors;
    wt_amdsmi_struct_fn *asic_info;
    wt_amdsmi_uuid_fn *uuid;
    wt_amdsmi_u64_fn *bdf_id;
    wt_amdsmi_energy_fn *energy;
    wt_amdsmi_temp_fn *temp;
    wt_amdsmi_struct_fn *activity;
    wt_amdsmi_cap_info_fn *cap_info;
    wt_amdsmi_cap_set_fn *cap_set;
    wt_amdsmi_u64_fn *ecc_enabled;
    wt_amdsmi_ecc_count_fn *ecc_count;
} lib;

static const struct {
    const char *name, *alias; /* alias: the 5.5/5.6 name */
    bool required;
    size_t offset;
} symbols[] = {
#define SYM(field, req, sym, alias)                                                                \
    {                                                                                              \
        sym, alias, req, offsetof(__typeof__(lib), field)                                          \
    }
    SYM(init, true, "amdsmi_init", NULL),
    SYM(shut_down, true, "amdsmi_shut_down", NULL),
    SYM(sockets, true, "amdsmi_get_socket_handles", NULL),
    SYM(processors, true, "amdsmi_get_processor_handles", "amdsmi_get_device_handles"),
    SYM(status_string, false, "amdsmi_status_code_to_string", NULL),
    SYM(asic_info, false, "amdsmi_get_gpu_asic_info", NULL),
    SYM(uuid, false, "amdsmi_get_gpu_device_uuid", NULL),
    SYM(bdf_id, false, "amdsmi_get_gpu_bdf_id", NULL),
    SYM(energy, false, "amdsmi_get_energy_count", "amdsmi_dev_get_energy_count"),
    SYM(temp, false, "amdsmi_get_temp_metric", "amdsmi_dev_get_temp_metric"),
    SYM(activity, false, "amdsmi_get_gpu_activity", NULL),
    SYM(cap_info, false, "amdsmi_get_power_cap_info", NULL),
    SYM(cap_set, false, "amdsmi_set_power_cap", NULL),
    SYM(ecc_enabled, false, "amdsmi_get_gpu_ecc_enabled", NULL),
    SYM(ecc_count, false, "amdsmi_get_gpu_ecc_count", NULL),
#undef SYM
};
#define N_SYMBOLS (sizeof symbols / sizeof symbols[0])

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *dl;
static unsigned int loads; /* sessions holding the library */
static unsigned int inits; /* sessions inside amdsmi_init */
static wt_amdsmi_handle *handles;
static uint32_t n_handles;
/* The AMD SMI status behind the ROCm SMI status this thread's last call returned: its text. */
static _Thread_local wt_amdsmi_status_t last_status;

/* AMD SMI's status as ROCm SMI's, so that the collector's rules (not asked again, down, absent
 * at init) read them alike; a status without a counterpart is ROCm SMI's unknown error. */
static rsmi_status_t map(wt_amdsmi_status_t s)
{
    last_status = s;
    switch (s) {
    case AMDSMI_STATUS_SUCCESS:
        return RSMI_STATUS_SUCCESS;
    case AMDSMI_STATUS_INVAL:
        return RSMI_STATUS_INVALID_ARGS;
    case AMDSMI_STATUS_NOT_SUPPORTED:
        return RSMI_STATUS_NOT_SUPPORTED;
    case AMDSMI_STATUS_NOT_YET_IMPLEMENTED:
        return RSMI_STATUS_NOT_YET_IMPLEMENTED;
    case AMDSMI_STATUS_NO_PERM:
        return RSMI_STATUS_PERMISSION;
    case AMDSMI_STATUS_INTERRUPT:
        return RSMI_STATUS_INTERRUPT;
    case AMDSMI_STATUS_FILE_ERROR:
        return RSMI_STATUS_FILE_ERROR;
    case AMDSMI_STATUS_OUT_OF_RESOURCES:
        return RSMI_STATUS_OUT_OF_RESOURCES;
    case AMDSMI_STATUS_INTERNAL_EXCEPTION:
        return RSMI_STATUS_INTERNAL_EXCEPTION;
    case AMDSMI_STATUS_INPUT_OUT_OF_BOUNDS:
        return RSMI_STATUS_INPUT_OUT_OF_BOUNDS;
    case AMDSMI_STATUS_INIT_ERROR:
    case AMDSMI_STATUS_DRM_ERROR: /* no /dev/dri render node: no GPU driver here */
        return RSMI_STATUS_INIT_ERROR;
    case AMDSMI_STATUS_REFCOUNT_OVERFLOW:
        return RSMI_STATUS_REFCOUNT_OVERFLOW;
    case AMDSMI_STATUS_BUSY:
        return RSMI_STATUS_BUSY;
    case AMDSMI_STATUS_NOT_FOUND:
        return RSMI_STATUS_NOT_FOUND;
    case AMDSMI_STATUS_NO_DATA:
        return RSMI_STATUS_NO_DATA;
    case AMDSMI_STATUS_INSUFFICIENT_SIZE:
        return RSMI_STATUS_INSUFFICIENT_SIZE;
    case AMDSMI_STATUS_UNEXPECTED_SIZE:
        return RSMI_STATUS_UNEXPECTED_SIZE;
    case AMDSMI_STATUS_UNEXPECTED_DATA:
        return RSMI_STATUS_UNEXPECTED_DATA;
    default:
        return (rsmi_status_t)0xFFFFFFFFu; /* RSMI_STATUS_UNKNOWN_ERROR */
    }
}

static wt_amdsmi_handle handle(uint32_t dv)
{
    return dv < n_handles ? handles[dv] : NULL;
}

#define HANDLE_OR_FAIL(h, dv)                                                                      \
    wt_amdsmi_handle h = handle(dv);                                                               \
    if (!h)                                                                                        \
    return map(AMDSMI_STATUS_INVAL)

/* ---- the handles ---- */

static wt_amdsmi_status_t list_handles(void)
{
    uint32_t ns = 0;
    wt_amdsmi_status_t r = lib.sockets(&ns, NULL);
    if (r != AMDSMI_STATUS_SUCCESS)
        return r;
    wt_amdsmi_handle *socks = calloc(ns ? ns : 1, sizeof *socks);
    handles = calloc(MAX_HANDLES, sizeof *handles);
    if (!socks || !handles) {
        free(socks);
        return AMDSMI_STATUS_OUT_OF_RESOURCES;
    }
    if (ns)
        r = lib.sockets(&ns, socks);
    /* A socket whose processors cannot be listed is left out: the others are still read. */
    for (uint32_t k = 0; r == AMDSMI_STATUS_SUCCESS && k < ns && n_handles < MAX_HANDLES; k++) {
        uint32_t np = 0;
        if (lib.processors(socks[k], &np, NULL) != AMDSMI_STATUS_SUCCESS || np == 0)
            continue;
        if (np > MAX_HANDLES - n_handles)
            np = MAX_HANDLES - n_handles;
        if (lib.processors(socks[k], &np, handles + n_handles) == AMDSMI_STATUS_SUCCESS)
            n_handles += np;
    }
    free(socks);
    return r;
}

static rsmi_status_t w_init(uint64_t flags)
{
    (void)flags;
    pthread_mutex_lock(&mu);
    wt_amdsmi_status_t r = AMDSMI_STATUS_SUCCESS;
    if (inits == 0) {
        r = lib.init(WT_AMDSMI_INIT_AMD_GPUS);
        if (r == AMDSMI_STATUS_SUCCESS) {
            r = list_handles();
            if (r != AMDSMI_STATUS_SUCCESS) {
                free(handles);
                handles = NULL;
                n_handles = 0;
                lib.shut_down();
            }
        }
    }
    if (r == AMDSMI_STATUS_SUCCESS)
        inits++;
    pthread_mutex_unlock(&mu);
    return map(r);
}

static rsmi_status_t w_shut_down(void)
{
    wt_amdsmi_status_t r = AMDSMI_STATUS_SUCCESS;
    pthread_mutex_lock(&mu);
    if (inits && --inits == 0) {
        r = lib.shut_down();
        free(handles);
        handles = NULL;
        n_handles = 0;
    }
    pthread_mutex_unlock(&mu);
    return map(r);
}

static rsmi_status_t w_num_devices(uint32_t *n)
{
    *n = n_handles;
    return RSMI_STATUS_SUCCESS;
}

/* ROCm SMI's status_string of the status a wrapper returned: AMD SMI's own text for it. */
static rsmi_status_t w_status_string(rsmi_status_t status, const char **out)
{
    *out = NULL;
    wt_amdsmi_status_t s = last_status;
    if (map(s) == status && lib.status_string && lib.status_string(s, out) == 0 && *out)
        return RSMI_STATUS_SUCCESS;
    return RSMI_STATUS_INVALID_ARGS;
}

/* ---- identity ---- */

int wt_amdsmi_uuid_uid(const char *uuid, uint64_t *uid)
{
    unsigned int t, m, h, c, a, b;
    int used = 0;
    if (!uuid || strlen(uuid) != 36 ||
        sscanf(uuid, "%8x-%4x-%4x-%4x-%4x%8x%n", &t, &m, &h, &c, &a, &b, &used) != 6 || used != 36)
        return -1;
    *uid = (uint64_t)(t >> 24) << 56 | (uint64_t)(c & 0xffu) << 48 | (uint64_t)a << 32 | b;
    return 0;
}

static rsmi_status_t w_name(uint32_t dv, char *name, size_t len)
{
    HANDLE_OR_FAIL(h, dv);
    wt_amdsmi_buf buf = {0};
    wt_amdsmi_status_t r = lib.asic_info(h, &buf);
    if (r == AMDSMI_STATUS_SUCCESS) {
        buf.market_name[sizeof buf.market_name - 1] = '\0';
        snprintf(name, len, "%s", buf.market_name);
    }
    return map(r);
}

static rsmi_status_t w_unique_id(uint32_t dv, uint64_t *id)
{
    HANDLE_OR_FAIL(h, dv);
    char uuid[WT_AMDSMI_UUID_SIZE + 26] = {0};
    unsigned int len = sizeof uuid - 1;
    wt_amdsmi_status_t r = lib.uuid(h, &len, uuid);
    if (r == AMDSMI_STATUS_SUCCESS && wt_amdsmi_uuid_uid(uuid, id) != 0)
        r = AMDSMI_STATUS_UNEXPECTED_DATA;
    return map(r);
}

static rsmi_status_t w_pci_id(uint32_t dv, uint64_t *bdf)
{
    HANDLE_OR_FAIL(h, dv);
    return map(lib.bdf_id(h, bdf));
}

/* ---- readings ---- */

static rsmi_status_t w_energy(uint32_t dv, uint64_t *acc, float *res, uint64_t *ts)
{
    HANDLE_OR_FAIL(h, dv);
    return map(lib.energy(h, acc, res, ts));
}

static rsmi_status_t w_temp(uint32_t dv, uint32_t sensor, rsmi_temperature_metric_t metric,
                            int64_t *mc)
{
    HANDLE_OR_FAIL(h, dv);
    (void)metric; /* the collector asks the current value only */
    /* ROCm SMI's edge, junction, memory are AMD SMI's edge, hotspot, VRAM: the same numbers */
    int64_t c = 0;
    wt_amdsmi_status_t r = lib.temp(h, sensor, WT_AMDSMI_TEMP_CURRENT, &c);
    if (r == AMDSMI_STATUS_SUCCESS)
        *mc = c * 1000;
    return map(r);
}

static rsmi_status_t w_busy(uint32_t dv, uint32_t *pct)
{
    HANDLE_OR_FAIL(h, dv);
    wt_amdsmi_buf buf = {0};
    wt_amdsmi_status_t r = lib.activity(h, &buf);
    if (r == AMDSMI_STATUS_SUCCESS)
        *pct = buf.gfx_activity;
    return map(r);
}

static rsmi_status_t w_ecc_enabled(uint32_t dv, uint64_t *blocks)
{
    HANDLE_OR_FAIL(h, dv);
    return map(lib.ecc_enabled(h, blocks));
}

static rsmi_status_t w_ecc_count(uint32_t dv, uint64_t block, wt_rsmi_error_count_t *ec)
{
    HANDLE_OR_FAIL(h, dv);
    wt_amdsmi_buf buf = {0};
    wt_amdsmi_status_t r = lib.ecc_count(h, block, &buf);
    if (r == AMDSMI_STATUS_SUCCESS) {
        ec->correctable_err = buf.ecc.correctable_count;
        ec->uncorrectable_err = buf.ecc.uncorrectable_count;
    }
    return map(r);
}

/* ---- caps ---- */

static wt_amdsmi_status_t cap_info(uint32_t dv, uint32_t sensor, wt_amdsmi_power_cap_head_t *out)
{
    wt_amdsmi_handle h = handle(dv);
    if (!h)
        return AMDSMI_STATUS_INVAL;
    wt_amdsmi_buf buf = {0};
    wt_amdsmi_status_t r = lib.cap_info(h, sensor, &buf);
    *out = buf.cap;
    return r;
}

static rsmi_status_t w_cap(uint32_t dv, uint32_t sensor, uint64_t *uw)
{
    wt_amdsmi_power_cap_head_t c;
    wt_amdsmi_status_t r = cap_info(dv, sensor, &c);
    if (r == AMDSMI_STATUS_SUCCESS)
        *uw = c.power_cap;
    return map(r);
}

static rsmi_status_t w_cap_range(uint32_t dv, uint32_t sensor, uint64_t *max, uint64_t *min)
{
    wt_amdsmi_power_cap_head_t c;
    wt_amdsmi_status_t r = cap_info(dv, sensor, &c);
    if (r == AMDSMI_STATUS_SUCCESS && c.max_power_cap == 0)
        r = AMDSMI_STATUS_NOT_SUPPORTED; /* not filled: no range */
    if (r == AMDSMI_STATUS_SUCCESS) {
        *max = c.max_power_cap;
        *min = c.min_power_cap;
    }
    return map(r);
}

static rsmi_status_t w_cap_default(uint32_t dv, uint64_t *uw)
{
    wt_amdsmi_power_cap_head_t c;
    wt_amdsmi_status_t r = cap_info(dv, 0, &c);
    if (r == AMDSMI_STATUS_SUCCESS)
        *uw = c.default_power_cap;
    return map(r);
}

static rsmi_status_t w_cap_set(uint32_t dv, uint32_t sensor, uint64_t uw)
{
    HANDLE_OR_FAIL(h, dv);
    return map(lib.cap_set(h, sensor, uw));
}

/* ---- the library ---- */

/* Each wrapper with its ROCm SMI type (a mismatch is a compile error) and the AMD SMI call it
 * needs. */
static wt_rsmi_init_fn *const p_init = w_init;
static wt_rsmi_shut_down_fn *const p_shut_down = w_shut_down;
static wt_rsmi_num_devices_fn *const p_num = w_num_devices;
static wt_rsmi_status_string_fn *const p_status = w_status_string;
static wt_rsmi_name_fn *const p_name = w_name;
static wt_rsmi_u64_fn *const p_uid = w_unique_id, *const p_pci = w_pci_id;
static wt_rsmi_energy_fn *const p_energy = w_energy;
static wt_rsmi_temp_fn *const p_temp = w_temp;
static wt_rsmi_u32_fn *const p_busy = w_busy;
static wt_rsmi_sensor_u64_fn *const p_cap = w_cap;
static wt_rsmi_cap_range_fn *const p_cap_range = w_cap_range;
static wt_rsmi_u64_fn *const p_cap_default = w_cap_default;
static wt_rsmi_cap_set_fn *const p_cap_set = w_cap_set;
static wt_rsmi_u64_fn *const p_ecc_enabled = w_ecc_enabled;
static wt_rsmi_ecc_count_fn *const p_ecc_count = w_ecc_count;

void *wt_amdsmi_sym(const char *rsmi_name)
{
    const struct {
        const char *name;
        bool needs; /* the AMD SMI call behind it is there */
        void (*fn)(void);
    } map_[] = {
#define W(n, need, p) {n, (need) != NULL, (void (*)(void))(p)}
        W("rsmi_init", lib.init, p_init),
        W("rsmi_shut_down", lib.shut_down, p_shut_down),
        W("rsmi_num_monitor_devices", lib.init, p_num),
        W("rsmi_status_string", lib.init, p_status),
        W("rsmi_dev_name_get", lib.asic_info, p_name),
        W("rsmi_dev_unique_id_get", lib.uuid, p_uid),
        W("rsmi_dev_pci_id_get", lib.bdf_id, p_pci),
        W("rsmi_dev_energy_count_get", lib.energy, p_energy),
        W("rsmi_dev_temp_metric_get", lib.temp, p_temp),
        W("rsmi_dev_busy_percent_get", lib.activity, p_busy),
        W("rsmi_dev_power_cap_get", lib.cap_info, p_cap),
        W("rsmi_dev_power_cap_range_get", lib.cap_info, p_cap_range),
        W("rsmi_dev_power_cap_default_get", lib.cap_info, p_cap_default),
        W("rsmi_dev_power_cap_set", lib.cap_set, p_cap_set),
        W("rsmi_dev_ecc_enabled_get", lib.ecc_enabled, p_ecc_enabled),
        W("rsmi_dev_ecc_count_get", lib.ecc_count, p_ecc_count),
#undef W
    };
    for (size_t i = 0; i < sizeof map_ / sizeof map_[0]; i++) {
        if (strcmp(map_[i].name, rsmi_name) != 0 || !map_[i].needs)
            continue;
        void *p;
        /* POSIX guarantees object and function pointers share a representation. */
        memcpy(&p, &map_[i].fn, sizeof p);
        return p;
    }
    return NULL;
}

static int resolve(void *h, const char *file, struct wt_err *err)
{
    __typeof__(lib) got = {0};
    for (size_t i = 0; i < N_SYMBOLS; i++) {
        void *p = dlsym(h, symbols[i].name);
        if (!p && symbols[i].alias)
            p = dlsym(h, symbols[i].alias);
        if (!p && symbols[i].required) {
            wt_err_set(err, "%s does not export %s: not a usable AMD SMI library", file,
                       symbols[i].name);
            return -ENOSYS;
        }
        memcpy((char *)&got + symbols[i].offset, &p, sizeof p);
    }
    lib = got;
    return 0;
}

int wt_amdsmi_load(const char *path, char *library, size_t len, struct wt_err *err)
{
    static const char *const names[] = {WT_AMDSMI_LIBRARIES};
    static char loaded[256];
    int rc = 0;
    pthread_mutex_lock(&mu);
    if (loads == 0) {
        const char *why = NULL;
        void *h = NULL;
        for (size_t i = 0; i < (path ? 1 : sizeof names / sizeof names[0]) && !h; i++) {
            const char *p = path ? path : names[i];
            dlerror();
            h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
            if (h)
                snprintf(loaded, sizeof loaded, "%s", p);
            else if (i == 0)
                why = dlerror();
        }
        if (!h) {
            wt_err_set(err, "%s not found (%s)", path ? path : names[0],
                       why ? why : "dlopen failed");
            rc = -ENOENT;
        } else if ((rc = resolve(h, loaded, err)) != 0) {
            dlclose(h);
        } else {
            dl = h;
        }
    }
    if (rc == 0) {
        loads++;
        snprintf(library, len, "%s", loaded);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

bool wt_amdsmi_loaded(void)
{
    pthread_mutex_lock(&mu);
    bool held = loads > 0;
    pthread_mutex_unlock(&mu);
    return held;
}

void wt_amdsmi_unload(void)
{
    pthread_mutex_lock(&mu);
    if (loads && --loads == 0) {
        if (dl)
            dlclose(dl);
        dl = NULL;
        memset(&lib, 0, sizeof lib);
    }
    pthread_mutex_unlock(&mu);
}
