/* SPDX-License-Identifier: MIT */
/*
 * IPMI DCMI collector; see ipmi.h. One target is one BMC on one FreeIPMI context, its session
 * kept between polls. The request is sent raw (ipmi_cmd_raw) and decoded here
 * (wt_ipmi_parse_power), so that the decoding is tested on bytes and every completion code gets
 * its own message; FreeIPMI does the session: RMCP+ with RAKP authentication, integrity and
 * confidentiality, retransmission, or the in-band driver.
 */
#include "collect/ipmi.h"

#include <ctype.h>
#include <errno.h>
#include <freeipmi/freeipmi.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/clocksync.h"
#include "collect/facility.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/reading.h"
#include "core/secret.h"
#include "core/yget.h"

#define DCMI_GROUP 0xdc
#define DCMI_GET_POWER_READING 0x02
#define DCMI_MODE_SYSTEM_POWER 0x01
#define DCMI_GET_TEMPERATURE_READING 0x10
#define DCMI_SENSOR_TEMPERATURE 0x01
#define DCMI_ENTITY_INLET 0x40 /* DCMI's inlet temperature entity */
#define DCMI_TEMP_REQUESTS 4   /* 8 sensors an answer: up to 32 inlet sensors */
#define USER_LEN 16            /* IPMI_MAX_USER_NAME_LENGTH */
#define PASSWORD_LEN 20        /* IPMI_2_0_MAX_PASSWORD_LENGTH */
#define K_G_LEN 20             /* IPMI_MAX_K_G_LENGTH */

enum driver { DRV_OPENIPMI, DRV_KCS, DRV_SSIF, DRV_AUTO };
static const char *const driver_names[] = {"openipmi", "kcs", "ssif", "auto", NULL};
enum priv { PRIV_USER, PRIV_OPERATOR, PRIV_ADMIN };
static const char *const priv_names[] = {"user", "operator", "admin", NULL};
static const uint8_t priv_levels[] = {IPMI_PRIVILEGE_LEVEL_USER, IPMI_PRIVILEGE_LEVEL_OPERATOR,
                                      IPMI_PRIVILEGE_LEVEL_ADMIN};

/* FreeIPMI, loaded when a target opens (collect/facility.h): never linked. */
/* clang-format off */
#define FI_SYMS(X, t)                                                                              \
    X(t, ipmi_cmd_raw) X(t, ipmi_ctx_close) X(t, ipmi_ctx_create) X(t, ipmi_ctx_destroy)           \
    X(t, ipmi_ctx_errnum) X(t, ipmi_ctx_errormsg) X(t, ipmi_ctx_find_inband)                       \
    X(t, ipmi_ctx_open_inband) X(t, ipmi_ctx_open_outofband_2_0) X(t, ipmi_rmcpplus_init)
/* clang-format on */
WT_FAC_LIB_STATIC(fi, FI_SYMS, "collectors.ipmi.targets", "libfreeipmi.so.17", "libfreeipmi17");

/* FreeIPMI's IPMI 2.0 workarounds, by the names its tools take (-W). */
static const struct {
    const char *name;
    unsigned flag;
} workarounds[] = {
    {"authcap", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_AUTHENTICATION_CAPABILITIES},
    {"intel20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_INTEL_2_0_SESSION},
    {"supermicro20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUPERMICRO_2_0_SESSION},
    {"sun20", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUN_2_0_SESSION},
    {"opensesspriv", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE},
    {"integritycheckvalue", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NON_EMPTY_INTEGRITY_CHECK_VALUE},
    {"nochecksumcheck", IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NO_CHECKSUM_CHECK},
};
#define NWORKAROUNDS (sizeof workarounds / sizeof workarounds[0])

struct target {
    char name[WT_TARGET_NAME_LEN + 1];
    char host[256]; /* "" in band */
    bool inband;
    int driver;
    char device[WT_PATH_LEN];
    char username[USER_LEN + 1];
    char password_file[WT_PATH_LEN];
    char k_g_file[WT_PATH_LEN]; /* the BMC key (K_g), when the BMC has one */
    int priv;
    int64_t cipher_suite;
    unsigned workaround_flags;
    int64_t timeout_ns, interval_ns;
    struct wt_fac_place place;
};

struct ipmi {
    struct wt_fac f; /* first: its up labels, skew and placement (collect/facility.h) */
    struct target t;
    char password[PASSWORD_LEN + 1];
    uint8_t k_g[K_G_LEN];
    unsigned k_g_len; /* 0: no BMC key (the BMC keys the session with the user's password) */
    ipmi_ctx_t ctx;
    bool open;          /* the session (or the device) is open */
    bool inactive;      /* the last answer said "no power measurement available" */
    bool relative_said; /* the time stamps are relative: said once */
    bool no_temps;      /* the BMC has no DCMI inlet temperatures: not asked again */
    bool temps_failed;  /* the last Get Temperature Reading failed: said once */
    char labels[WT_LABELS_LEN], temp_labels[WT_LABELS_LEN];
};

/* ---- configuration ---- */

/* HOST or HOST:PORT, a name or an IPv4 address (FreeIPMI's form). */
static bool host_ok(const char *h)
{
    const char *colon = strchr(h, ':');
    if (!*h || *h == ':' || strpbrk(h, " /@[]?#"))
        return false;
    if (colon) {
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end || port < 1 || port > 65535 || strchr(colon + 1, ':'))
            return false;
    }
    return true;
}

static int parse_workarounds(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                             unsigned *flags)
{
    const struct wt_ynode *w = wt_y_get(m, "workarounds");
    char p[192], ip[200];
    *flags = 0;
    if (!w)
        return 0;
    wt_y_path(p, sizeof p, path, "workarounds");
    int rc = wt_y_seq(g, w, p);
    if (rc)
        return rc;
    for (size_t i = 0; i < w->n; i++) {
        const struct wt_ynode *e = w->child[i];
        size_t k = 0;
        wt_y_index(ip, sizeof ip, p, i);
        while (k < NWORKAROUNDS && e->kind == WT_YNODE_SCALAR &&
               strcmp(e->value, workarounds[k].name) != 0)
            k++;
        if (k == NWORKAROUNDS)
            return wt_y_fail(g, e, ip,
                             "expected one of authcap, intel20, supermicro20, sun20, "
                             "opensesspriv, integritycheckvalue, nochecksumcheck");
        *flags |= workarounds[k].flag;
    }
    return 0;
}

/* One target of the section (wt_y_targets_parse), into *tv, a struct target. */
static int parse_target(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                        void *tv)
{
    struct target *t = tv;
    static const char *const keys[] = {
        "name",          "host",     "inband",    "driver",       "device",      "username",
        "password_file", "k_g_file", "privilege", "cipher_suite", "workarounds", "timeout",
        "interval",      "node",     "rack",      "zone",         NULL};
    int rc = wt_y_keys(g, m, path, keys);
    memset(t, 0, sizeof *t);
    t->timeout_ns = 5 * WT_NS_PER_S;
    t->cipher_suite = 3;
    snprintf(t->device, sizeof t->device, "/dev/ipmi0");
    if (!rc)
        rc = wt_fac_parse_name(g, m, path, t->name, sizeof t->name);
    if (!rc)
        rc = wt_y_string(g, m, path, "host", false, t->host, sizeof t->host);
    if (!rc)
        rc = wt_y_bool(g, m, path, "inband", &t->inband);
    if (!rc && t->inband == (t->host[0] != '\0'))
        rc = wt_y_key_fail(g, m, path, t->host[0] ? "inband" : "host",
                           t->host[0] ? "host (over the LAN) and inband: true exclude each other"
                                      : "expected host (a BMC over the LAN) or inband: true (this "
                                        "machine's own BMC)");
    if (!rc && t->host[0] && !host_ok(t->host))
        rc = wt_y_key_fail(g, m, path, "host", "expected HOST or HOST:PORT (got \"%s\")", t->host);
    if (!rc)
        rc = wt_y_enum(g, m, path, "driver", driver_names, &t->driver);
    if (!rc)
        rc = wt_y_string(g, m, path, "device", false, t->device, sizeof t->device);
    /* The in-band keys and the LAN ones do not mix: a key that would be ignored is a mistake. */
    static const char *const lan_only[] = {"username",     "password_file", "k_g_file", "privilege",
                                           "cipher_suite", "workarounds",   NULL};
    static const char *const inband_only[] = {"driver", "device", NULL};
    const char *const *other = t->inband ? lan_only : inband_only;
    for (size_t i = 0; !rc && other[i]; i++)
        if (wt_y_get(m, other[i]))
            rc = wt_y_key_fail(g, m, path, other[i], "only for %s targets",
                               t->inband ? "LAN (host:)" : "in-band (inband: true)");
    if (!rc)
        rc = wt_y_string(g, m, path, "username", false, t->username, sizeof t->username);
    if (!rc)
        rc = wt_y_string(g, m, path, "password_file", !t->inband, t->password_file,
                         sizeof t->password_file);
    if (!rc)
        rc = wt_y_string(g, m, path, "k_g_file", false, t->k_g_file, sizeof t->k_g_file);
    if (!rc)
        rc = wt_y_enum(g, m, path, "privilege", priv_names, &t->priv);
    if (!rc)
        rc = wt_y_int(g, m, path, "cipher_suite", 0, 17, &t->cipher_suite);
    if (!rc && !IPMI_CIPHER_SUITE_ID_SUPPORTED(t->cipher_suite))
        rc =
            wt_y_key_fail(g, m, path, "cipher_suite",
                          "expected a cipher suite of IPMI 2.0 that FreeIPMI speaks: 0-3, 6-8, 11, "
                          "12, 15-17 (got %lld)",
                          (long long)t->cipher_suite);
    if (!rc)
        rc = parse_workarounds(g, m, path, &t->workaround_flags);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "timeout", false, 100 * WT_Y_MS, WT_Y_NET_TIMEOUT_MAX,
                              "FreeIPMI retransmits within the session timeout: under 100ms it "
                              "cannot, over 60s one dead BMC stalls its thread",
                              &t->timeout_ns);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "interval", false, WT_Y_NET_POLL_MIN, WT_Y_NET_POLL_MAX,
                              WT_Y_WHY_NET_POLL, &t->interval_ns);
    if (!rc)
        rc = wt_fac_parse_place(g, m, path, &t->place);
    return rc;
}

/* ---- decoding ---- */

static unsigned le16(const uint8_t *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int wt_ipmi_parse_power(const uint8_t *rs, size_t n, struct wt_dcmi_power *out, struct wt_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 2)
        return wt_err_set(err, "DCMI Get Power Reading: an answer of %zu bytes", n), -EPROTO;
    uint8_t cc = rs[1];
    switch (cc) {
    case 0x00:
        break;
    case 0xc1:
    case 0xcc:
        wt_err_set(err,
                   "the BMC does not support DCMI power readings (Get Power Reading answered "
                   "completion code 0x%02X: %s)",
                   cc, cc == 0xc1 ? "invalid command" : "invalid data field");
        return -ENOTSUP;
    case 0xd4:
        wt_err_set(err, "DCMI Get Power Reading needs a higher privilege (completion code 0xD4): "
                        "set privilege: operator or admin");
        return -EACCES;
    case 0xc0:
        wt_err_set(err, "the BMC is busy (completion code 0xC0)");
        return -EBUSY;
    default:
        wt_err_set(err, "DCMI Get Power Reading failed with completion code 0x%02X", cc);
        return -EPROTO;
    }
    if (n < 20)
        return wt_err_set(err, "DCMI Get Power Reading: an answer of %zu bytes, expected 20", n),
               -EPROTO;
    if (rs[2] != DCMI_GROUP)
        return wt_err_set(err, "DCMI Get Power Reading: group 0x%02X in the answer, not 0xDC",
                          rs[2]),
               -EPROTO;
    out->current_w = le16(rs + 3);
    out->minimum_w = le16(rs + 5);
    out->maximum_w = le16(rs + 7);
    out->average_w = le16(rs + 9);
    out->stamp = le32(rs + 11);
    out->period_s = (double)le32(rs + 15) / 1000.0;
    out->active = (rs[19] & 0x40) != 0;
    return 0;
}

int wt_ipmi_parse_temps(const uint8_t *rs, size_t n, struct wt_dcmi_temps *out, struct wt_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 2)
        return wt_err_set(err, "DCMI Get Temperature Reading: an answer of %zu bytes", n), -EPROTO;
    uint8_t cc = rs[1];
    if (cc == 0xc1 || cc == 0xcc)
        return wt_err_set(err,
                          "the BMC gives no DCMI inlet temperature (Get Temperature Reading "
                          "answered completion code 0x%02X: %s)",
                          cc, cc == 0xc1 ? "invalid command" : "invalid data field"),
               -ENOTSUP;
    if (cc == 0xd4)
        return wt_err_set(err, "DCMI Get Temperature Reading needs a higher privilege "
                               "(completion code 0xD4): set privilege: operator or admin"),
               -EACCES;
    if (cc != 0)
        return wt_err_set(err, "DCMI Get Temperature Reading failed with completion code 0x%02X",
                          cc),
               -EPROTO;
    if (n < 5)
        return wt_err_set(err,
                          "DCMI Get Temperature Reading: an answer of %zu bytes, expected at "
                          "least 5",
                          n),
               -EPROTO;
    if (rs[2] != DCMI_GROUP)
        return wt_err_set(err, "DCMI Get Temperature Reading: group 0x%02X in the answer, not 0xDC",
                          rs[2]),
               -EPROTO;
    unsigned sets = rs[4];
    if (sets > WT_DCMI_TEMPS_MAX || n < 5 + 2 * (size_t)sets)
        return wt_err_set(err,
                          "DCMI Get Temperature Reading: %u temperatures in an answer of %zu "
                          "bytes",
                          sets, n),
               -EPROTO;
    out->total = rs[3];
    out->n = sets;
    for (unsigned i = 0; i < sets; i++) {
        uint8_t t = rs[5 + 2 * i];
        /* bits 6:0 the reading in whole degrees Celsius, bit 7 its sign (1: below zero) */
        out->celsius[i] = (t & 0x80) ? -(double)(t & 0x7f) : (double)(t & 0x7f);
        out->instance[i] = rs[6 + 2 * i];
    }
    return 0;
}

/* ---- the session ---- */

static pthread_once_t rmcpplus_once = PTHREAD_ONCE_INIT;
static int rmcpplus_rc;
static void rmcpplus_init_once(void)
{
    /* The crypto library's set-up, once for the process (FreeIPMI asks for it before threads;
     * libgcrypt 1.6 and later need no thread callbacks, so a first target's thread is fine). */
    rmcpplus_rc = fi.ipmi_rmcpplus_init();
}

/* A negative errno for what FreeIPMI said, so that callers tell refusals from silence. */
static int errnum_rc(int e)
{
    switch (e) {
    case IPMI_ERR_USERNAME_INVALID:
    case IPMI_ERR_PASSWORD_INVALID:
    case IPMI_ERR_K_G_INVALID:
    case IPMI_ERR_PRIVILEGE_LEVEL_INSUFFICIENT:
    case IPMI_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED:
    case IPMI_ERR_PERMISSION:
        return -EACCES;
    case IPMI_ERR_CONNECTION_TIMEOUT:
    case IPMI_ERR_SESSION_TIMEOUT:
    case IPMI_ERR_MESSAGE_TIMEOUT:
    case IPMI_ERR_DRIVER_TIMEOUT:
        return -ETIMEDOUT;
    case IPMI_ERR_DEVICE_NOT_FOUND:
    case IPMI_ERR_DEVICE_NOT_SUPPORTED:
        return -ENOENT;
    case IPMI_ERR_AUTHENTICATION_TYPE_UNAVAILABLE:
    case IPMI_ERR_CIPHER_SUITE_ID_UNAVAILABLE:
    case IPMI_ERR_IPMI_2_0_UNAVAILABLE:
        return -EPROTONOSUPPORT;
    default:
        return -EIO;
    }
}

static void disconnect(struct ipmi *s)
{
    if (s->ctx) {
        if (s->open)
            fi.ipmi_ctx_close(s->ctx);
        fi.ipmi_ctx_destroy(s->ctx);
    }
    s->ctx = NULL;
    s->open = false;
}

static int connect_bmc(struct ipmi *s, struct wt_err *err)
{
    const struct target *t = &s->t;
    disconnect(s);
    if (!(s->ctx = fi.ipmi_ctx_create()))
        return wt_err_set(err, "out of memory (ipmi_ctx_create)"), -ENOMEM;
    int rc;
    if (!t->inband) {
        unsigned tmo = (unsigned)(t->timeout_ns / WT_NS_PER_MS);
        /* Retransmit a few times within the session timeout (FreeIPMI's default is 1 s of 20). */
        unsigned retrans = tmo / 4 ? tmo / 4 : 1;
        if (retrans > 1000)
            retrans = 1000;
        rc = fi.ipmi_ctx_open_outofband_2_0(s->ctx, t->host, t->username[0] ? t->username : NULL,
                                            s->password, s->k_g_len ? s->k_g : NULL, s->k_g_len,
                                            priv_levels[t->priv], (uint8_t)t->cipher_suite, tmo,
                                            retrans, t->workaround_flags, IPMI_FLAGS_DEFAULT);
    } else if (t->driver == DRV_AUTO) {
        ipmi_driver_type_t type;
        rc = fi.ipmi_ctx_find_inband(s->ctx, &type, 0, 0, 0, NULL, 0, IPMI_FLAGS_DEFAULT);
        if (rc == 0) {
            wt_err_set(err, "no in-band IPMI interface found (no /dev/ipmi0, KCS, SSIF...)");
            disconnect(s);
            return -ENOENT;
        }
        rc = rc == 1 ? 0 : -1;
    } else {
        static const ipmi_driver_type_t types[] = {IPMI_DEVICE_OPENIPMI, IPMI_DEVICE_KCS,
                                                   IPMI_DEVICE_SSIF};
        rc =
            fi.ipmi_ctx_open_inband(s->ctx, types[t->driver], 0, 0, 0,
                                    t->driver == DRV_KCS ? NULL : t->device, 0, IPMI_FLAGS_DEFAULT);
    }
    if (rc < 0) {
        int e = fi.ipmi_ctx_errnum(s->ctx);
        int nrc = errnum_rc(e);
        if (t->inband)
            wt_err_set(err, "cannot open the in-band IPMI interface (%s%s%s): %s",
                       driver_names[t->driver], t->driver == DRV_KCS ? "" : " ",
                       t->driver == DRV_KCS ? "" : t->device, fi.ipmi_ctx_errormsg(s->ctx));
        else if (nrc == -ETIMEDOUT)
            wt_err_set(err, "%s: no answer within %.3g s (%s)", t->host,
                       (double)t->timeout_ns / WT_NS_PER_S, fi.ipmi_ctx_errormsg(s->ctx));
        else
            wt_err_set(err, "%s: cannot open an IPMI 2.0 session as %s%s%s: %s", t->host,
                       t->username[0] ? "\"" : "", t->username[0] ? t->username : "the null user",
                       t->username[0] ? "\"" : "", fi.ipmi_ctx_errormsg(s->ctx));
        disconnect(s);
        return nrc;
    }
    s->open = true;
    return 0;
}

/* Sends the DCMI request rq (what names it in messages); *before and *after bracket it
 * (CLOCK_REALTIME). Returns the answer's length or a negative errno with err. */
static int send_dcmi(struct ipmi *s, const uint8_t *rq, size_t rqn, const char *what, uint8_t *rs,
                     size_t rsn, int64_t *before, int64_t *after, struct wt_err *err)
{
    *before = wt_now_real_ns();
    int n = fi.ipmi_cmd_raw(s->ctx, IPMI_BMC_IPMB_LUN_BMC, IPMI_NET_FN_GROUP_EXTENSION_RQ, rq,
                            (unsigned)rqn, rs, (unsigned)rsn);
    *after = wt_now_real_ns();
    if (n < 0) {
        int e = fi.ipmi_ctx_errnum(s->ctx);
        int nrc = errnum_rc(e);
        if (nrc == -ETIMEDOUT)
            wt_err_set(err, "%s: no answer to DCMI %s within %.3g s (%s)",
                       s->t.inband ? s->t.device : s->t.host, what,
                       (double)s->t.timeout_ns / WT_NS_PER_S, fi.ipmi_ctx_errormsg(s->ctx));
        else
            wt_err_set(err, "%s: DCMI %s: %s", s->t.inband ? s->t.device : s->t.host, what,
                       fi.ipmi_ctx_errormsg(s->ctx));
        return nrc;
    }
    return n;
}

static int send_reading(struct ipmi *s, uint8_t *rs, size_t rsn, int64_t *before, int64_t *after,
                        struct wt_err *err)
{
    const uint8_t rq[] = {DCMI_GET_POWER_READING, DCMI_GROUP, DCMI_MODE_SYSTEM_POWER, 0, 0};
    return send_dcmi(s, rq, sizeof rq, "Get Power Reading", rs, rsn, before, after, err);
}

/* ---- polling ---- */

static int add(struct wt_batch *out, int metric, const char *labels, const char *key,
               const char *value, int64_t t_ns, double v)
{
    char l[WT_LABELS_LEN];
    if (!key)
        return wt_batch_add(out, metric, labels, t_ns, v);
    snprintf(l, sizeof l, "%s", labels);
    if (wt_labels_add(l, sizeof l, key, value) != 0)
        return -E2BIG;
    return wt_batch_add(out, metric, l, t_ns, v);
}

/*
 * The BMC's inlet temperatures (DCMI Get Temperature Reading, entity 0x40, every instance), as
 * wattage_facility_temperature_celsius{...,point="inlet",instance}: the ASHRAE envelope and the
 * racks' Delta-T read them as they read a Redfish BMC's inlet sensors. A BMC without them
 * (0xC1, 0xCC) is said once and not asked again; another failure is said once until an answer
 * comes, and never fails the poll: the power was read. Returns 0, -ENOMEM or -E2BIG.
 */
static int read_temps(struct ipmi *s, int64_t t_ns, struct wt_batch *out)
{
    unsigned start = 1, total = 1;
    for (int k = 0; k < DCMI_TEMP_REQUESTS && !s->no_temps && start <= total; k++) {
        const uint8_t rq[] = {DCMI_GET_TEMPERATURE_READING, DCMI_GROUP,
                              DCMI_SENSOR_TEMPERATURE,      DCMI_ENTITY_INLET,
                              0 /* every instance */,       (uint8_t)start};
        uint8_t rs[64];
        int64_t before, after;
        struct wt_err err = {{0}};
        struct wt_dcmi_temps tp;
        int n = send_dcmi(s, rq, sizeof rq, "Get Temperature Reading", rs, sizeof rs, &before,
                          &after, &err);
        int rc = n < 0 ? n : wt_ipmi_parse_temps(rs, (size_t)n, &tp, &err);
        if (rc == -ENOTSUP) {
            wt_info("ipmi", "%s: %s; its power is read all the same", s->t.name, err.msg);
            s->no_temps = true;
            return 0;
        }
        if (wt_fac_turn(&s->temps_failed, rc != 0)) {
            if (rc)
                wt_warn("ipmi", "%s: no inlet temperature this poll: %s", s->t.name, err.msg);
            else
                wt_info("ipmi", "%s: the inlet temperatures are read again", s->t.name);
        }
        if (rc)
            return 0;
        if (tp.total == 0 && k == 0) {
            wt_info("ipmi", "%s: the BMC lists no DCMI inlet temperature sensor", s->t.name);
            s->no_temps = true;
            return 0;
        }
        for (unsigned i = 0; i < tp.n; i++) {
            char inst[8];
            snprintf(inst, sizeof inst, "%u", (unsigned)tp.instance[i]);
            int arc =
                add(out, WT_M_FAC_TEMP_C, s->temp_labels, "instance", inst, t_ns, tp.celsius[i]);
            if (arc)
                return arc;
        }
        total = tp.total;
        if (tp.n == 0)
            break; /* a BMC that counts more than it gives: what came is all there is */
        start += tp.n;
    }
    return 0;
}

/* A poll (collect/facility.h's read): the power reading, its clock, the inlet temperatures. */
static int ipmi_read(struct wt_fac *f, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct ipmi *s = (struct ipmi *)f;
    uint8_t rs[64];
    int64_t before = 0, after = 0;
    bool fresh = false;
    int n;
    if (!s->open) {
        int rc = connect_bmc(s, err);
        if (rc)
            return rc;
        fresh = true;
    }
    n = send_reading(s, rs, sizeof rs, &before, &after, err);
    if (n < 0 && !fresh && n != -EACCES) {
        /* A session from an earlier poll: the BMC may have restarted or dropped it. */
        wt_debug("ipmi", "%s: %s; opening a new session", s->t.name, err->msg);
        int rc = connect_bmc(s, err);
        if (rc)
            return rc;
        n = send_reading(s, rs, sizeof rs, &before, &after, err);
    }
    if (n < 0) {
        disconnect(s);
        return n;
    }
    struct wt_dcmi_power p;
    int rc = wt_ipmi_parse_power(rs, (size_t)n, &p, err);
    if (rc)
        return rc; /* the session is fine: the BMC answered */
    if (wt_fac_turn(&s->inactive, !p.active)) {
        if (s->inactive)
            wt_warn("ipmi",
                    "%s: the BMC has no power measurement now (DCMI power reading state "
                    "not active; many BMCs say so while the host is off)",
                    s->t.name);
        else
            wt_info("ipmi", "%s: the BMC measures power again", s->t.name);
    }
    if (s->inactive) {
        if ((rc = read_temps(s, t_ns, out)) != 0)
            goto fail;
        return 0;
    }
    if ((rc = add(out, WT_M_FAC_POWER_W, s->labels, NULL, NULL, t_ns, p.current_w)) ||
        (rc = add(out, WT_M_FAC_POWER_STAT_W, s->labels, "statistic", "minimum", t_ns,
                  p.minimum_w)) ||
        (rc = add(out, WT_M_FAC_POWER_STAT_W, s->labels, "statistic", "maximum", t_ns,
                  p.maximum_w)) ||
        (rc = add(out, WT_M_FAC_POWER_STAT_W, s->labels, "statistic", "average", t_ns,
                  p.average_w)) ||
        (rc = add(out, WT_M_FAC_POWER_PERIOD_S, s->labels, NULL, NULL, t_ns, p.period_s)))
        goto fail;
    if (p.stamp > WT_IPMI_STAMP_RELATIVE_MAX && p.stamp != 0xffffffffu) {
        if ((rc = wt_fac_skew(&s->f, (int64_t)p.stamp, before, after, t_ns, out)))
            goto fail;
    } else if (!s->relative_said) {
        wt_info("ipmi",
                "%s: the BMC's time stamps count from its start (0x%08X), not the "
                "calendar: its clock's skew is not known",
                s->t.name, (unsigned)p.stamp);
        s->relative_said = true;
    }
    if ((rc = read_temps(s, t_ns, out)) != 0)
        goto fail;
    return 0;
fail:
    wt_err_set(err, "%s", rc == -E2BIG ? "labels too long" : "out of memory");
    return rc;
}

/* What ipmi_open made (collect/facility.h's close): the session, and the secrets wiped. */
static void ipmi_release(struct wt_fac *f)
{
    struct ipmi *s = (struct ipmi *)f;
    disconnect(s);
    explicit_bzero(s->password, sizeof s->password);
    explicit_bzero(s->k_g, sizeof s->k_g);
}

/* Reads the first line of the password file (never logged): at most 20 bytes in IPMI 2.0. */
static int read_password(const char *path, char *out, size_t n, struct wt_err *err)
{
    int rc = wt_check_secret_file("password_file", path, err);
    if (!rc)
        rc = wt_fac_read_password(path, out, n, err);
    if (rc == -E2BIG)
        rc = wt_err_set(err, "password_file %s: an IPMI 2.0 password has at most %d characters",
                        path, PASSWORD_LEN);
    return rc;
}

int wt_ipmi_parse_k_g(const char *text, uint8_t *out, unsigned *len, struct wt_err *err)
{
    size_t n = strlen(text);
    *len = 0;
    if (n == 0)
        return wt_err_set(err, "an empty BMC key"), -EINVAL;
    if (n > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        const char *h = text + 2;
        size_t digits = n - 2;
        if (digits % 2 != 0 || digits > 2 * K_G_LEN)
            return wt_err_set(err,
                              "a BMC key in hexadecimal is 0x and an even number of digits, at "
                              "most %d (%d bytes); got %zu digits",
                              2 * K_G_LEN, K_G_LEN, digits),
                   -EINVAL;
        for (size_t i = 0; i < digits; i += 2) {
            char b[3] = {h[i], h[i + 1], 0};
            if (!isxdigit((unsigned char)b[0]) || !isxdigit((unsigned char)b[1]))
                return wt_err_set(err, "a BMC key in hexadecimal: \"%s\" is not a hex digit pair",
                                  b),
                       -EINVAL;
            out[i / 2] = (uint8_t)strtoul(b, NULL, 16);
        }
        *len = (unsigned)(digits / 2);
        return 0;
    }
    if (n > K_G_LEN)
        return wt_err_set(err,
                          "a BMC key has at most %d characters (or 0x and up to %d hex "
                          "digits); got %zu",
                          K_G_LEN, 2 * K_G_LEN, n),
               -EINVAL;
    memcpy(out, text, n);
    *len = (unsigned)n;
    return 0;
}

/* The BMC key from k_g_file's first line (a secret: mode 0600). Returns 0 or -errno with err. */
static int read_k_g(const char *path, uint8_t *out, unsigned *len, struct wt_err *err)
{
    char line[256];
    struct wt_err why = {{0}};
    int rc = wt_check_secret_file("k_g_file", path, err);
    if (rc)
        return rc;
    rc = wt_fac_read_line("k_g_file", path, line, sizeof line, err);
    if (rc)
        return rc;
    rc = wt_ipmi_parse_k_g(line, out, len, &why);
    explicit_bzero(line, sizeof line);
    if (rc)
        wt_err_set(err, "k_g_file %s: %s", path, why.msg);
    return rc;
}

/* Target i's state once parsed (collect/facility.h's open): labels, device, secrets. */
static int ipmi_open(struct wt_fac *f, const struct wt_config *cfg, struct wt_err *err)
{
    struct ipmi *s = (struct ipmi *)f;
    const struct target *t = &s->t;
    (void)cfg;
    int lrc = wt_fac_lib_load(&fi_lib, err);
    if (lrc)
        return lrc;
    lrc = wt_labels(s->labels, sizeof s->labels, "source", "ipmi", "target", t->name, "point",
                    "dcmi", "kind", "chassis", NULL);
    if (!lrc)
        lrc = wt_fac_place_labels(s->labels, sizeof s->labels, &t->place);
    if (!lrc)
        lrc = wt_labels(s->temp_labels, sizeof s->temp_labels, "source", "ipmi", "target", t->name,
                        "point", "inlet", NULL);
    if (!lrc)
        lrc = wt_fac_place_labels(s->temp_labels, sizeof s->temp_labels, &t->place);
    if (lrc)
        return wt_err_set(err, "%s: labels too long", t->name), -E2BIG;
    if (t->inband && t->driver != DRV_KCS && t->driver != DRV_AUTO &&
        access(t->device, F_OK) != 0) {
        /* Not an error: the kernel's IPMI drivers (ipmi_si, ipmi_devintf) are not loaded, or
         * this machine has no BMC. The loop looks again later. */
        wt_err_set(err, "%s: no %s (load the kernel's ipmi_si and ipmi_devintf modules)", t->name,
                   t->device);
        return -ENOENT;
    }
    if (t->password_file[0]) {
        int rc = read_password(t->password_file, s->password, sizeof s->password, err);
        if (rc)
            return rc;
    }
    if (t->k_g_file[0]) {
        int rc = read_k_g(t->k_g_file, s->k_g, &s->k_g_len, err);
        if (rc)
            return rc;
    }
    pthread_once(&rmcpplus_once, rmcpplus_init_once);
    if (!t->inband && rmcpplus_rc != 0)
        return wt_err_set(err, "FreeIPMI cannot start its cryptography (ipmi_rmcpplus_init)"), -EIO;
    if (!t->inband && t->cipher_suite == 0)
        wt_warn("ipmi", "%s: cipher_suite 0: the session is neither authenticated nor encrypted",
                t->name);
    return 0;
}

/* The loop (core/loop.c) and facility.c run each BMC; ipmi_read reads it. */
WT_FAC_COLLECTOR(wt_ipmi_collector, wt_ipmi_config_check, ipmi, "IPMI", struct target, parse_target,
                 NULL, struct ipmi, ipmi_open, ipmi_read, ipmi_release);
