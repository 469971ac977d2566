/* SPDX-License-Identifier: MIT */
/*
 * Modbus TCP collector; see modbus.h. One target is one meter on one TCP connection, opened
 * lazily at the first poll and again at the poll after any transport error: a meter that drops
 * the connection costs one failed poll, never a hang, since libmodbus bounds the connect and
 * every response by the target's timeout. Registers are read in contiguous runs of the same
 * function (at most 125 words, the protocol's limit), so a meter with 20 registers in one table
 * is one request.
 */
#include "collect/modbus.h"

#include <errno.h>
#include <math.h>
#include <modbus.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/facility.h"
#include "core/clock.h"
#include "core/energy.h"
#include "core/log.h"
#include "core/reading.h"
#include "core/yget.h"

#define MAX_REGS 256
#define MAX_RUN_WORDS 125 /* Modbus: at most 125 registers per read */
#define LABEL_LEN 32

struct unit {
    const char *name;
    double factor, offset; /* base = value * factor + offset */
};

struct metric_kind {
    const char *name;
    int metric;
    bool counter;
    const struct unit *units; /* the first is the base unit, the default */
};

static const struct unit u_power[] = {{"W", 1, 0}, {"kW", 1e3, 0}, {"MW", 1e6, 0}, {0}};
static const struct unit u_energy[] = {
    {"J", 1, 0},     {"kJ", 1e3, 0},    {"MJ", 1e6, 0},    {"GJ", 1e9, 0},
    {"Wh", 3600, 0}, {"kWh", 3.6e6, 0}, {"MWh", 3.6e9, 0}, {0}};
static const struct unit u_current[] = {{"A", 1, 0}, {"mA", 1e-3, 0}, {"kA", 1e3, 0}, {0}};
static const struct unit u_voltage[] = {{"V", 1, 0}, {"mV", 1e-3, 0}, {"kV", 1e3, 0}, {0}};
static const struct unit u_va[] = {{"VA", 1, 0}, {"kVA", 1e3, 0}, {"MVA", 1e6, 0}, {0}};
static const struct unit u_ratio[] = {{"ratio", 1, 0}, {"%", 0.01, 0}, {0}};
static const struct unit u_temp[] = {{"C", 1, 0}, {"degC", 1, 0}, {"K", 1, -273.15}, {0}};
static const struct unit u_flow[] = {
    {"m3/s", 1, 0}, {"L/s", 1e-3, 0}, {"L/min", 1.0 / 60000, 0}, {"m3/h", 1.0 / 3600, 0}, {0}};
static const struct unit u_water[] = {{"m3", 1, 0}, {"L", 1e-3, 0}, {0}};
static const struct unit u_pressure[] = {{"Pa", 1, 0}, {"kPa", 1e3, 0}, {"bar", 1e5, 0}, {0}};
static const struct unit u_rpm[] = {{"rpm", 1, 0}, {0}};

static const struct metric_kind metric_kinds[] = {
    {"power", WT_M_FAC_POWER_W, false, u_power},
    {"energy", WT_M_FAC_ENERGY_J, true, u_energy},
    {"current", WT_M_FAC_CURRENT_A, false, u_current},
    {"voltage", WT_M_FAC_VOLTAGE_V, false, u_voltage},
    {"apparent_power", WT_M_FAC_APPARENT_VA, false, u_va},
    {"power_factor", WT_M_FAC_POWER_FACTOR, false, u_ratio},
    {"temperature", WT_M_FAC_TEMP_C, false, u_temp},
    {"humidity", WT_M_FAC_HUMIDITY_RATIO, false, u_ratio},
    {"flow", WT_M_FAC_FLOW_M3S, false, u_flow},
    {"water", WT_M_FAC_WATER_M3, true, u_water},
    {"heat", WT_M_FAC_HEAT_J, true, u_energy},
    {"pressure", WT_M_FAC_PRESSURE_PA, false, u_pressure},
    {"fan", WT_M_FAC_FAN_RPM, false, u_rpm},
    {NULL, 0, false, NULL},
};

static const char *const type_names[] = {"u16", "i16", "u32", "i32", "float32", "u64", NULL};
static const char *const function_names[] = {"holding", "input", NULL};
static const char *const order_names[] = {"big", "little", NULL};

struct reg {
    char name[LABEL_LEN], point[LABEL_LEN], kind[LABEL_LEN];
    uint16_t addr;
    int function; /* 0 holding, 1 input */
    enum wt_modbus_type type;
    bool little;
    double scale;
    const struct metric_kind *mk;
    const struct unit *unit;
    int64_t sf_addr; /* scale_register (SunSpec sunssf: value x 10^sf), -1 for none */
    bool hidden;     /* a scale-factor register read for others, not exported */
    /* state */
    long sf_index; /* its scale-factor register in the sorted array, -1 for none */
    char labels[WT_LABELS_LEN];
    struct wt_energy_counter ctr;
    uint64_t first_raw;
    double per_raw;    /* base units per raw unit at the last poll */
    double carried;    /* base units counted before the scale factor last changed */
    bool rebased;      /* the counter started again after a scale change */
    uint16_t words[4]; /* this poll's registers */
    bool have;         /* words were read this poll */
};

struct target {
    char name[WT_TARGET_NAME_LEN + 1];
    char host[128];
    int port;
    int unit_id;
    int64_t timeout_ns, interval_ns;
    struct wt_fac_place place;
    struct reg *regs;
    size_t nregs;
};

struct mb_state {
    struct wt_fac f; /* first: its up labels and placement (collect/facility.h) */
    struct target t;
    modbus_t *ctx;
};

unsigned wt_modbus_type_words(enum wt_modbus_type t)
{
    switch (t) {
    case WT_MB_U16:
    case WT_MB_I16:
        return 1;
    case WT_MB_U32:
    case WT_MB_I32:
    case WT_MB_FLOAT32:
        return 2;
    case WT_MB_U64:
        return 4;
    }
    return 1;
}

void wt_modbus_decode(const uint16_t *regs, enum wt_modbus_type t, bool little_words, uint64_t *raw,
                      double *value)
{
    unsigned n = wt_modbus_type_words(t);
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        /* Most significant word first, whichever order the meter sends them in. */
        uint16_t w = little_words ? regs[n - 1 - i] : regs[i];
        v = (v << 16) | w;
    }
    switch (t) {
    case WT_MB_U16:
    case WT_MB_U32:
    case WT_MB_U64:
        *value = (double)v;
        break;
    case WT_MB_I16:
        v = (uint64_t)(int64_t)(int16_t)(uint16_t)v;
        *value = (double)(int64_t)v;
        break;
    case WT_MB_I32:
        v = (uint64_t)(int64_t)(int32_t)(uint32_t)v;
        *value = (double)(int64_t)v;
        break;
    case WT_MB_FLOAT32: {
        uint32_t b = (uint32_t)v;
        float f;
        memcpy(&f, &b, sizeof f);
        *value = f;
        break;
    }
    }
    *raw = v;
}

/* libmodbus, loaded when a target opens (collect/facility.h): never linked. */
/* clang-format off */
#define MB_SYMS(X, t)                                                                              \
    X(t, modbus_close) X(t, modbus_connect) X(t, modbus_free) X(t, modbus_new_tcp_pi)              \
    X(t, modbus_read_input_registers) X(t, modbus_read_registers) X(t, modbus_set_byte_timeout)    \
    X(t, modbus_set_response_timeout) X(t, modbus_set_slave) X(t, modbus_strerror)
/* clang-format on */
WT_FAC_LIB_STATIC(mb, MB_SYMS, "collectors.modbus.targets", "libmodbus.so.5", "libmodbus5");

/* ---- configuration ---- */

/* "host", "host:port" or "[v6]:port" into host and port (default 502). */
static int split_address(const char *s, char *host, size_t n, int *port)
{
    const char *colon;
    *port = 502;
    if (*s == '[') {
        const char *end = strchr(s, ']');
        if (!end || (end[1] && end[1] != ':'))
            return -EINVAL;
        if ((size_t)(end - s - 1) >= n)
            return -EINVAL;
        memcpy(host, s + 1, (size_t)(end - s - 1));
        host[end - s - 1] = '\0';
        colon = end[1] ? end + 1 : NULL;
    } else {
        colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
            return -EINVAL; /* a bare IPv6 address needs brackets */
        size_t len = colon ? (size_t)(colon - s) : strlen(s);
        if (len == 0 || len >= n)
            return -EINVAL;
        memcpy(host, s, len);
        host[len] = '\0';
    }
    if (colon) {
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (*end || end == colon + 1 || p < 1 || p > 65535)
            return -EINVAL;
        *port = (int)p;
    }
    return host[0] ? 0 : -EINVAL;
}

static int parse_reg(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                     struct reg *r)
{
    static const char *const keys[] = {"name",       "address", "function",       "type",
                                       "word_order", "scale",   "unit",           "metric",
                                       "point",      "kind",    "scale_register", NULL};
    char unit[16] = "", metric[32] = "";
    int64_t addr = 0;
    int fn = 0, type = 0, order = 0;
    int rc = wt_y_keys(g, m, path, keys);
    memset(r, 0, sizeof *r);
    r->scale = 1;
    r->sf_addr = -1;
    if (!rc)
        rc = wt_y_string(g, m, path, "name", true, r->name, sizeof r->name);
    if (!rc && !wt_fac_name_ok(r->name))
        rc = wt_y_key_fail(g, m, path, "name",
                           "expected letters, digits, '_', '.' or '-' (got \"%s\")", r->name);
    if (!rc)
        rc = wt_y_int(g, m, path, "address", 0, 65535, &addr);
    if (!rc && !wt_y_get(m, "address"))
        rc = wt_y_key_fail(g, m, path, "address", "required");
    if (!rc)
        rc = wt_y_enum(g, m, path, "function", function_names, &fn);
    if (!rc)
        rc = wt_y_enum(g, m, path, "type", type_names, &type);
    if (!rc)
        rc = wt_y_enum(g, m, path, "word_order", order_names, &order);
    if (!rc)
        rc = wt_y_double(g, m, path, "scale", -1e12, 1e12, &r->scale);
    if (!rc && r->scale == 0)
        rc = wt_y_key_fail(g, m, path, "scale", "expected a non-zero number");
    if (!rc)
        rc = wt_y_string(g, m, path, "metric", true, metric, sizeof metric);
    if (!rc) {
        for (const struct metric_kind *k = metric_kinds; k->name && !r->mk; k++)
            if (strcmp(k->name, metric) == 0)
                r->mk = k;
        if (!r->mk) {
            char list[256] = "";
            for (const struct metric_kind *k = metric_kinds; k->name; k++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         k == metric_kinds ? "" : ", ", k->name);
            rc = wt_y_key_fail(g, m, path, "metric", "expected one of %s (got \"%s\")", list,
                               metric);
        }
    }
    if (!rc)
        rc = wt_y_string(g, m, path, "unit", false, unit, sizeof unit);
    if (!rc && r->mk) {
        r->unit = r->mk->units;
        if (unit[0]) {
            r->unit = NULL;
            for (const struct unit *u = r->mk->units; u->name && !r->unit; u++)
                if (strcmp(u->name, unit) == 0)
                    r->unit = u;
            if (!r->unit) {
                char list[128] = "";
                for (const struct unit *u = r->mk->units; u->name; u++)
                    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                             u == r->mk->units ? "" : ", ", u->name);
                rc = wt_y_key_fail(g, m, path, "unit",
                                   "expected one of %s for metric %s (got \"%s\")", list,
                                   r->mk->name, unit);
            }
        }
    }
    if (!rc)
        rc = wt_y_int(g, m, path, "scale_register", 0, 65535, &r->sf_addr);
    if (!rc)
        rc = wt_y_string(g, m, path, "point", false, r->point, sizeof r->point);
    if (!rc)
        rc = wt_y_string(g, m, path, "kind", false, r->kind, sizeof r->kind);
    if (rc)
        return rc;
    r->addr = (uint16_t)addr;
    r->function = fn;
    r->type = (enum wt_modbus_type)type;
    r->little = order == 1;
    if (addr + wt_modbus_type_words(r->type) > 65536)
        return wt_y_key_fail(g, m, path, "address", "a %s at %lld runs past register 65535",
                             type_names[type], (long long)addr);
    if (!r->point[0])
        snprintf(r->point, sizeof r->point, "%s", r->name);
    if (!r->kind[0])
        snprintf(r->kind, sizeof r->kind, "meter");
    return 0;
}

/* One target of the section (wt_y_targets_parse), into *tv, a struct target. */
static int parse_target(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                        void *tv)
{
    struct target *t = tv;
    static const char *const keys[] = {"name", "address", "unit_id", "timeout",   "interval",
                                       "node", "rack",    "zone",    "registers", NULL};
    char addr[160] = "";
    int64_t unit_id = 1;
    int rc = wt_y_keys(g, m, path, keys);
    memset(t, 0, sizeof *t);
    t->timeout_ns = 2 * WT_NS_PER_S;
    if (!rc)
        rc = wt_fac_parse_name(g, m, path, t->name, sizeof t->name);
    if (!rc)
        rc = wt_y_string(g, m, path, "address", true, addr, sizeof addr);
    if (!rc && split_address(addr, t->host, sizeof t->host, &t->port) != 0)
        rc = wt_y_key_fail(g, m, path, "address",
                           "expected HOST, HOST:PORT or [IPv6]:PORT (got \"%s\")", addr);
    if (!rc)
        rc = wt_y_int(g, m, path, "unit_id", 0, 255, &unit_id);
    if (!rc)
        rc = wt_fac_parse_timing(g, m, path, &t->timeout_ns, &t->interval_ns);
    if (!rc)
        rc = wt_fac_parse_place(g, m, path, &t->place);
    if (rc)
        return rc;
    t->unit_id = (int)unit_id;

    const struct wt_ynode *regs = wt_y_get(m, "registers");
    char rpath[160], ipath[192];
    wt_y_path(rpath, sizeof rpath, path, "registers");
    if (!regs || regs->kind != WT_YNODE_SEQ || regs->n == 0)
        return wt_y_fail(g, regs ? regs : m, rpath, "expected a list of registers (at least one)");
    if (regs->n > MAX_REGS)
        return wt_y_fail(g, regs, rpath, "at most %d registers per target (got %zu)", MAX_REGS,
                         regs->n);
    /* Room for one hidden scale-factor register per register at most. */
    t->regs = calloc(2 * regs->n, sizeof *t->regs);
    if (!t->regs)
        return wt_err_set(g->err, "out of memory");
    for (size_t i = 0; i < regs->n; i++) {
        wt_y_index(ipath, sizeof ipath, rpath, i);
        rc = parse_reg(g, regs->child[i], ipath, &t->regs[i]);
        if (rc)
            return rc;
        t->nregs++;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(t->regs[j].name, t->regs[i].name) == 0)
                return wt_y_key_fail(g, regs->child[i], ipath, "name", "\"%s\" is used twice",
                                     t->regs[i].name);
            if (t->regs[j].mk == t->regs[i].mk && strcmp(t->regs[j].point, t->regs[i].point) == 0)
                return wt_y_key_fail(g, regs->child[i], ipath, "point",
                                     "\"%s\" already has a %s register (%s)", t->regs[i].point,
                                     t->regs[i].mk->name, t->regs[j].name);
        }
    }
    return 0;
}

static void target_drop(void *t)
{
    free(((struct target *)t)->regs);
    ((struct target *)t)->regs = NULL;
}

/* ---- collector ---- */

/* Labels of one reading: source, target, point, kind, [name], [node, rack, zone]. */
static int make_labels(const struct target *t, const char *point, const char *kind,
                       const char *name, char *buf, size_t n)
{
    int rc = wt_labels(buf, n, "source", "modbus", "target", t->name, "point", point, "kind", kind,
                       NULL);
    if (!rc && name && *name)
        rc = wt_labels_add(buf, n, "name", name);
    if (!rc)
        rc = wt_fac_place_labels(buf, n, &t->place);
    return rc;
}

static int cmp_reg(const void *a, const void *b)
{
    const struct reg *x = a, *y = b;
    if (x->function != y->function)
        return x->function - y->function;
    return (int)x->addr - (int)y->addr;
}

/* What mb_open made (collect/facility.h's close): the connection and the registers. */
static void mb_release(struct wt_fac *f)
{
    struct mb_state *s = (struct mb_state *)f;
    if (s->ctx) {
        mb.modbus_close(s->ctx);
        mb.modbus_free(s->ctx);
    }
    free(s->t.regs);
}

/* Target i's state once parsed (collect/facility.h's open): its registers in reading order. */
static int mb_open(struct wt_fac *f, const struct wt_config *cfg, struct wt_err *err)
{
    struct mb_state *s = (struct mb_state *)f;
    (void)cfg;
    int rc = wt_fac_lib_load(&mb_lib, err);
    if (rc)
        return rc;
    /* Scale-factor registers (SunSpec sunssf) are read like the others, and not exported. */
    size_t nconf = s->t.nregs;
    for (size_t k = 0; k < nconf; k++) {
        struct reg *r = &s->t.regs[k];
        bool have = false;
        if (r->sf_addr < 0)
            continue;
        for (size_t q = nconf; q < s->t.nregs && !have; q++)
            have = s->t.regs[q].function == r->function && s->t.regs[q].addr == r->sf_addr;
        if (!have) {
            struct reg *h = &s->t.regs[s->t.nregs++];
            memset(h, 0, sizeof *h);
            snprintf(h->name, sizeof h->name, "scale_register %d", (int)r->sf_addr);
            h->addr = (uint16_t)r->sf_addr;
            h->function = r->function;
            h->type = WT_MB_I16;
            h->hidden = true;
            h->sf_addr = -1;
        }
    }
    /* Sorted by function and address, so contiguous registers are read in one request. */
    if (s->t.nregs > 1)
        qsort(s->t.regs, s->t.nregs, sizeof *s->t.regs, cmp_reg);
    for (size_t k = 0; k < s->t.nregs; k++) {
        struct reg *r = &s->t.regs[k];
        r->sf_index = -1;
        for (size_t q = 0; q < s->t.nregs && r->sf_addr >= 0 && r->sf_index < 0; q++)
            if (s->t.regs[q].hidden && s->t.regs[q].function == r->function &&
                s->t.regs[q].addr == r->sf_addr)
                r->sf_index = (long)q;
    }
    for (size_t k = 0; k < s->t.nregs; k++) {
        struct reg *r = &s->t.regs[k];
        if (r->hidden)
            continue;
        if (make_labels(&s->t, r->point, r->kind, r->name, r->labels, sizeof r->labels) != 0)
            return wt_err_set(err, "%s: labels of register %s too long", s->t.name, r->name);
    }
    return 0;
}

static void disconnect(struct mb_state *s)
{
    if (s->ctx) {
        mb.modbus_close(s->ctx);
        mb.modbus_free(s->ctx);
        s->ctx = NULL;
    }
}

static int connect_meter(struct mb_state *s, struct wt_err *err)
{
    char port[8];
    snprintf(port, sizeof port, "%d", s->t.port);
    s->ctx = mb.modbus_new_tcp_pi(s->t.host, port);
    if (!s->ctx) {
        wt_err_set(err, "%s:%s: %s", s->t.host, port, mb.modbus_strerror(errno));
        return -ENOMEM;
    }
    uint32_t sec = (uint32_t)(s->t.timeout_ns / WT_NS_PER_S);
    uint32_t usec = (uint32_t)(s->t.timeout_ns % WT_NS_PER_S / 1000);
    /* The response timeout bounds the connect too (libmodbus waits on a non-blocking socket). */
    mb.modbus_set_response_timeout(s->ctx, sec, usec);
    mb.modbus_set_byte_timeout(s->ctx, sec, usec);
    mb.modbus_set_slave(s->ctx, s->t.unit_id);
    if (mb.modbus_connect(s->ctx) != 0) {
        int e = errno;
        /* libmodbus gives up on a connect that did not complete within the response timeout
         * and leaves errno as the non-blocking connect set it: EINPROGRESS, "Operation now in
         * progress", which reads as if nothing had gone wrong. */
        if (e == EINPROGRESS || e == ETIMEDOUT)
            wt_err_set(err, "cannot connect to %s:%s: connect timed out after %.3g s", s->t.host,
                       port, (double)s->t.timeout_ns / WT_NS_PER_S);
        else
            wt_err_set(err, "cannot connect to %s:%s: %s", s->t.host, port, mb.modbus_strerror(e));
        disconnect(s);
        return -EIO;
    }
    return 0;
}

/* True for a Modbus exception from the meter (the request was answered): not a transport error. */
static bool is_exception(int e)
{
    return e >= EMBXILFUN && e <= EMBXGTAR;
}

static int emit(struct reg *r, double sf_mult, int64_t t_ns, struct wt_batch *out)
{
    uint64_t raw;
    double v;
    wt_modbus_decode(r->words, r->type, r->little, &raw, &v);
    if (!isfinite(v))
        return 0; /* a float32 NaN is how many meters say "no value" */
    double f = r->scale * r->unit->factor * sf_mult;
    if (!r->mk->counter)
        return wt_batch_add(out, r->mk->metric, r->labels, t_ns, v * f + r->unit->offset);
    /*
     * Counters stay in integer raw units with wrap and reset handled by energy.c: the register's
     * own integer (wrapping at 2^16 or 2^32), or a float scaled to thousandths of the base unit.
     */
    uint64_t modulus = 0, cur;
    double per_raw;
    if (r->type == WT_MB_FLOAT32) {
        double base = v * f;
        if (base < 0 || base > 9e15)
            return 0; /* thousandths of it must fit in 64 bits */
        cur = (uint64_t)llround(base * 1000.0);
        per_raw = 1e-3;
    } else {
        unsigned bits = 16 * wt_modbus_type_words(r->type);
        if (bits < 64) {
            modulus = 1ULL << bits;
            raw &= modulus - 1;
        }
        cur = raw;
        per_raw = f;
        if (per_raw < 0)
            return 0;
    }
    /*
     * A decrease by more than half the range is a reset (meter cleared), not a wrap. The total
     * is summed as a double: a u64 register near 2^64 (0xFFFF... is how many meters say "no
     * value") plus what followed would wrap in 64 bits.
     */
    if (r->ctr.have && per_raw != r->per_raw) {
        /*
         * The scale factor changed (a SunSpec sunssf may): what was counted stays in base
         * units, and the counter starts again from this raw value, so the total never jumps.
         */
        r->carried += ((double)r->first_raw + (double)r->ctr.total_raw) * r->per_raw;
        memset(&r->ctr, 0, sizeof r->ctr);
        r->first_raw = 0;
        r->rebased = true;
    }
    r->per_raw = per_raw;
    if (wt_energy_counter_update(&r->ctr, t_ns, cur, modulus, modulus / 2) == WT_DELTA_FIRST &&
        !r->rebased)
        r->first_raw = cur; /* what the meter counted before we started is part of the total */
    return wt_batch_add(out, r->mk->metric, r->labels, t_ns,
                        r->carried + ((double)r->first_raw + (double)r->ctr.total_raw) * per_raw);
}

/* This poll's registers (those with words read) as readings; *ok counts them. 0 or -ENOMEM. */
static int decode(struct target *t, int64_t t_ns, struct wt_batch *out, size_t *ok)
{
    for (size_t k = 0; k < t->nregs; k++) {
        struct reg *r = &t->regs[k];
        double mult = 1;
        if (!r->have || r->hidden)
            continue;
        if (r->sf_index >= 0) {
            const struct reg *sf = &t->regs[r->sf_index];
            int16_t e = (int16_t)sf->words[0];
            /* SunSpec: 0x8000 is "not implemented"; a sane exponent is small. */
            if (!sf->have || e == INT16_MIN || e < -10 || e > 10)
                continue;
            mult = pow(10, e);
        }
        int rc = emit(r, mult, t_ns, out);
        if (rc)
            return rc;
        (*ok)++;
    }
    return 0;
}

/* A poll (collect/facility.h's read): every register, in runs. */
static int mb_read(struct wt_fac *f, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct mb_state *s = (struct mb_state *)f;
    struct target *t = &s->t;
    uint16_t words[MAX_RUN_WORDS];
    size_t ok = 0, failed = 0;
    char first_fail[160] = "";
    if (!s->ctx) {
        int rc = connect_meter(s, err);
        if (rc)
            return rc;
    }
    for (size_t k = 0; k < t->nregs; k++)
        t->regs[k].have = false;
    for (size_t i = 0; i < t->nregs;) {
        /* One run: registers of one function, back to back, within MAX_RUN_WORDS. */
        struct reg *r0 = &t->regs[i];
        unsigned start = r0->addr, end = r0->addr + wt_modbus_type_words(r0->type);
        size_t j = i + 1;
        while (j < t->nregs && t->regs[j].function == r0->function && t->regs[j].addr <= end) {
            unsigned e = t->regs[j].addr + wt_modbus_type_words(t->regs[j].type);
            if ((e > end ? e : end) - start > MAX_RUN_WORDS)
                break;
            if (e > end)
                end = e;
            j++;
        }
        int n = (int)(end - start);
        int got = r0->function == 0 ? mb.modbus_read_registers(s->ctx, (int)start, n, words)
                                    : mb.modbus_read_input_registers(s->ctx, (int)start, n, words);
        if (got != n) {
            int e = errno;
            if (got >= 0 || !is_exception(e)) {
                /* Timeout, reset, a short or garbled reply: the connection is not to be trusted. */
                wt_err_set(err, "%s:%d unit %d: reading %s registers %u..%u: %s", t->host, t->port,
                           t->unit_id, function_names[r0->function], start, end - 1,
                           got >= 0 ? "short reply" : mb.modbus_strerror(e));
                disconnect(s);
                return -EIO;
            }
            if (!first_fail[0])
                snprintf(first_fail, sizeof first_fail, "%s registers %u..%u: %s",
                         function_names[r0->function], start, end - 1, mb.modbus_strerror(e));
            failed += j - i;
            i = j;
            continue;
        }
        for (size_t k = i; k < j; k++) {
            memcpy(t->regs[k].words, words + (t->regs[k].addr - start),
                   wt_modbus_type_words(t->regs[k].type) * sizeof *words);
            t->regs[k].have = true;
        }
        i = j;
    }
    int rc = decode(t, t_ns, out, &ok);
    if (rc) {
        wt_err_set(err, "out of memory");
        return rc;
    }
    if (failed) {
        wt_fac_partial(&s->f, "%zu registers not read: %s", failed, first_fail);
        if (ok == 0) {
            wt_err_set(err, "%s: no register could be read: %s", t->name, first_fail);
            return -EIO;
        }
    }
    return 0;
}

void wt_modbus_feed(void *state, int function, unsigned first, const uint16_t *words, size_t n)
{
    struct target *t = &((struct mb_state *)state)->t;
    for (size_t k = 0; k < t->nregs; k++) {
        struct reg *r = &t->regs[k];
        unsigned w = wt_modbus_type_words(r->type);
        if (r->function != function || r->addr < first || r->addr + w > first + n)
            continue;
        memcpy(r->words, words + (r->addr - first), w * sizeof *words);
        r->have = true;
    }
}

int wt_modbus_readings(void *state, int64_t t_ns, struct wt_batch *out)
{
    struct target *t = &((struct mb_state *)state)->t;
    size_t ok = 0;
    int rc = decode(t, t_ns, out, &ok);
    for (size_t k = 0; k < t->nregs; k++)
        t->regs[k].have = false;
    return rc;
}

/* The loop (core/loop.c) and facility.c run each meter; mb_read reads it. */
WT_FAC_COLLECTOR(wt_modbus_collector, wt_modbus_config_check, modbus, "Modbus", struct target,
                 parse_target, target_drop, struct mb_state, mb_open, mb_read, mb_release);
