/* SPDX-License-Identifier: MIT */
/*
 * OTLP/HTTP metrics export (see otlp.h): the otlp section, the mapping of wattage's metrics to
 * OpenTelemetry names, the encoder (protobuf-c over otlp.proto, then zlib's gzip), and the
 * transport on the shared send path (serve/sender.h).
 *
 * Cost: a series' attributes (KeyValue and AnyValue messages over one string area) are built
 * once, when the series is first seen; a request packs arrays of pointers into them and into the
 * batch, so encoding allocates nothing once the buffers have grown to the batch size.
 */
#include "serve/otlp.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "core/clock.h"
#include "core/curl_lib.h"
#include "core/log.h"
#include "core/secret.h"
#include "core/yget.h"
#include "serve/http.h"
#include "serve/otlp.pb-c.h"
#include "serve/sender.h"

#define MOD "otlp"

/* ---- configuration ------------------------------------------------------------------------ */

static const char *const extra_keys[] = {"headers", "compression", NULL};
static const char *const compressions[] = {"gzip", "none", NULL};

/* A header name is an HTTP token; wattage sets the ones that describe the body itself. */
static bool header_name_ok(const char *n)
{
    if (!*n)
        return false;
    for (const char *c = n; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_'))
            return false;
    return true;
}

static bool header_reserved(const char *n)
{
    static const char *const own[] = {"content-type", "content-encoding", "content-length",
                                      "authorization", NULL};
    for (size_t i = 0; own[i]; i++)
        if (strcasecmp(n, own[i]) == 0)
            return true;
    return false;
}

static int parse_headers(const struct wt_yget *g, const struct wt_ynode *n, const char *path,
                         struct wt_otlp_endpoint_config *c)
{
    char p[200];
    wt_y_path(p, sizeof p, path, "headers");
    if (n->kind != WT_YNODE_MAP)
        return wt_y_fail(g, n, p, "expected a mapping of header names to values (got %s)",
                         wt_ynode_kind_name(n->kind));
    for (size_t i = 0; i < n->n; i++) {
        const char *name = n->child[i]->key;
        const struct wt_ynode *v = n->child[i];
        char q[300];
        wt_y_path(q, sizeof q, p, name);
        if (c->nheaders == WT_OTLP_MAX_HEADERS)
            return wt_y_fail(g, v, q, "at most %d headers", WT_OTLP_MAX_HEADERS);
        if (!header_name_ok(name))
            return wt_y_fail(g, v, q, "a header name holds letters, digits, '-' and '_'");
        if (header_reserved(name))
            return wt_y_fail(g, v, q,
                             "set by wattage (the body's type and encoding; credentials go in "
                             "bearer_token_file or basic_auth, read from a file)");
        for (size_t k = 0; k < i; k++)
            if (strcasecmp(n->child[k]->key, name) == 0)
                return wt_y_fail(g, v, q, "given twice");
        if (v->kind != WT_YNODE_SCALAR)
            return wt_y_fail(g, v, q, "expected a string (got %s)", wt_ynode_kind_name(v->kind));
        if (strpbrk(v->value, "\r\n"))
            return wt_y_fail(g, v, q, "a header value is one line");
        int l = snprintf(c->headers[c->nheaders], sizeof c->headers[0], "%s: %s", name, v->value);
        if (l < 0 || (size_t)l >= sizeof c->headers[0])
            return wt_y_fail(g, v, q, "name and value are at most %zu characters",
                             sizeof c->headers[0] - 3);
        c->nheaders++;
    }
    return 0;
}

int wt_otlp_config_parse(const char *file, const struct wt_ynode *node, struct wt_otlp_config *out,
                         struct wt_err *err)
{
    struct wt_yget g = {.file = file, .err = err};
    char p[64];
    memset(out, 0, sizeof *out);
    if (!node || wt_ynode_is_null(node))
        return 0;
    int rc = wt_y_seq(&g, node, "otlp");
    for (size_t i = 0; !rc && i < node->n; i++) {
        const struct wt_ynode *m = node->child[i], *n;
        struct wt_otlp_endpoint_config *c = &out->ep[out->n];
        wt_y_index(p, sizeof p, "otlp", i);
        if (out->n == WT_OTLP_MAX_ENDPOINTS) {
            rc = wt_y_fail(&g, m, p, "at most %d endpoints", WT_OTLP_MAX_ENDPOINTS);
            break;
        }
        memset(c, 0, sizeof *c);
        rc = wt_remote_write_endpoint_parse(&g, m, p, extra_keys, &c->ep);
        c->gzip = true;
        if (!rc && (n = wt_y_get(m, "headers")) != NULL && !wt_ynode_is_null(n))
            rc = parse_headers(&g, n, p, c);
        if (!rc && wt_y_get(m, "compression")) {
            int k = 0;
            rc = wt_y_enum(&g, m, p, "compression", compressions, &k);
            c->gzip = k == 0;
        }
        for (size_t k = 0; !rc && k < out->n; k++)
            if (strcmp(out->ep[k].ep.name, c->ep.name) == 0)
                rc = wt_y_fail(&g, m, p,
                               "name \"%s\" is taken by otlp[%zu]: each endpoint keeps its own "
                               "cursor under its name",
                               c->ep.name, k);
        if (!rc)
            out->n++;
    }
    return rc;
}

int wt_otlp_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    struct wt_otlp_config *c = malloc(sizeof *c);
    if (!c)
        return wt_err_set(err, "%s: otlp: out of memory", file);
    int rc = wt_otlp_config_parse(file, node, c, err);
    free(c);
    return rc;
}

int wt_otlp_check_secrets(const struct wt_config *cfg, struct wt_err *err)
{
    struct wt_otlp_config *c = malloc(sizeof *c);
    char what[80];
    if (!c)
        return -ENOMEM;
    int rc = wt_otlp_config_parse(wt_config_file(cfg), wt_config_section(cfg, "otlp"), c, err);
    for (size_t i = 0; !rc && i < c->n; i++) {
        const struct wt_rw_endpoint_config *e = &c->ep[i].ep;
        if (e->bearer_token_file[0]) {
            snprintf(what, sizeof what, "otlp[%zu].bearer_token_file", i);
            rc = wt_check_secret_file(what, e->bearer_token_file, err);
        }
        if (!rc && e->username[0]) {
            snprintf(what, sizeof what, "otlp[%zu].basic_auth.password_file", i);
            rc = wt_check_secret_file(what, e->password_file, err);
        }
    }
    free(c);
    return rc;
}

/* ---- names -------------------------------------------------------------------------------- */

static const struct {
    const char *metric, *name, *unit, *hw_type;
} semconv[] = {
    {"wattage_gpu_power_watts", "hw.power", "W", "gpu"},
    {"wattage_gpu_energy_joules_total", "hw.energy", "J", "gpu"},
    {"wattage_cpu_energy_joules_total", "hw.energy", "J", "cpu"},
    {"wattage_gpu_utilization_ratio", "hw.gpu.utilization", "1", "gpu"},
    {"wattage_gpu_memory_utilization_ratio", "hw.gpu.memory.utilization", "1", "gpu"},
    {"wattage_gpu_memory_used_bytes", "hw.gpu.memory.usage", "By", "gpu"},
    {"wattage_gpu_memory_total_bytes", "hw.gpu.memory.limit", "By", "gpu"},
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

void wt_otlp_map(const char *metric, struct wt_otlp_metric *out)
{
    memset(out, 0, sizeof *out);
    out->sum = ends_with(metric, "_total");
    for (size_t i = 0; i < sizeof semconv / sizeof semconv[0]; i++) {
        if (strcmp(metric, semconv[i].metric) == 0) {
            snprintf(out->name, sizeof out->name, "%s", semconv[i].name);
            out->unit = semconv[i].unit;
            out->hw_type = semconv[i].hw_type;
            return;
        }
    }
    snprintf(out->name, sizeof out->name, "%s", metric);
    char base[96];
    snprintf(base, sizeof base, "%s", metric);
    if (out->sum)
        base[strlen(base) - 6] = '\0';
    static const struct {
        const char *suffix, *unit;
    } units[] = {{"_watts", "W"},   {"_joules", "J"},      {"_seconds", "s"}, {"_bytes", "By"},
                 {"_ratio", "1"},   {"_celsius", "Cel"},   {"_hertz", "Hz"},  {"_volts", "V"},
                 {"_amperes", "A"}, {"_grams", "g"},       {"_liters", "L"},  {"_info", "1"},
                 {"_kelvin", "K"},  {"_watthours", "W.h"}, {"_hours", "h"},   {"_percent", "%"}};
    out->unit = "";
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (ends_with(base, units[i].suffix)) {
            out->unit = units[i].unit;
            break;
        }
}

/* ---- encoder ------------------------------------------------------------------------------ */

/* One OTLP metric the encoder has seen (several series share one: a GPU's and a CPU's energy). */
struct def {
    char name[96];
    const char *unit;
    bool sum;
};

/* One series: its metric, its attributes (messages over one string area), its first point. */
struct series {
    uint32_t def;
    Wattage__Otlp__KeyValue *kv;
    Wattage__Otlp__AnyValue *av;
    Wattage__Otlp__KeyValue **kvp;
    size_t nkv;
    char *strings;
    uint64_t start_ns; /* 0 until a point of it is encoded */
};

struct wt_otlp_encoder {
    /* the resource and scope, built once */
    Wattage__Otlp__KeyValue res_kv[4];
    Wattage__Otlp__AnyValue res_av[4];
    Wattage__Otlp__KeyValue *res_kvp[4];
    char host[256], node[128];
    Wattage__Otlp__Resource resource;
    Wattage__Otlp__InstrumentationScope scope;
    struct def *defs;
    size_t ndefs, capdefs;
    struct series *ser;
    size_t nser, capser;
    /* per request, grown as needed */
    Wattage__Otlp__NumberDataPoint *dp;
    Wattage__Otlp__NumberDataPoint **dpp;
    size_t capdp, capdpp;
    Wattage__Otlp__Metric *met;
    Wattage__Otlp__Metric **metp;
    Wattage__Otlp__Gauge *gauge;
    Wattage__Otlp__Sum *sum;
    size_t capmet, capmetp, capgauge, capsum;
    size_t *count, *next; /* per def: points in this batch, next free slot */
    size_t capcount, capnext;
    int32_t *slot; /* per def: its Metric in this request, -1 when none */
    size_t capslot;
    uint8_t *pb;
    size_t cappb;
    uint8_t *gz;
    size_t capgz;
    z_stream zs;
    bool zs_ready;
};

/* protobuf-c's strings are char *; packing only reads them */
static void set_str(Wattage__Otlp__KeyValue *kv, Wattage__Otlp__AnyValue *av, const char *key,
                    const char *val)
{
    wattage__otlp__key_value__init(kv);
    wattage__otlp__any_value__init(av);
    av->value_case = WATTAGE__OTLP__ANY_VALUE__VALUE_STRING_VALUE;
    av->string_value = (char *)val;
    kv->key = (char *)key;
    kv->value = av;
}

int wt_otlp_encoder_open(const char *host, const char *node, struct wt_otlp_encoder **out)
{
    struct wt_otlp_encoder *e = calloc(1, sizeof *e);
    *out = NULL;
    if (!e)
        return -ENOMEM;
    snprintf(e->host, sizeof e->host, "%s", host);
    snprintf(e->node, sizeof e->node, "%s", node);
    set_str(&e->res_kv[0], &e->res_av[0], "service.name", "wattage");
    set_str(&e->res_kv[1], &e->res_av[1], "service.version", WT_VERSION);
    set_str(&e->res_kv[2], &e->res_av[2], "host.name", e->host);
    set_str(&e->res_kv[3], &e->res_av[3], "wattage.node", e->node);
    for (size_t i = 0; i < 4; i++)
        e->res_kvp[i] = &e->res_kv[i];
    wattage__otlp__resource__init(&e->resource);
    e->resource.n_attributes = 4;
    e->resource.attributes = e->res_kvp;
    wattage__otlp__instrumentation_scope__init(&e->scope);
    e->scope.name = (char *)"wattage";
    e->scope.version = (char *)WT_VERSION;
    *out = e;
    return 0;
}

void wt_otlp_encoder_close(struct wt_otlp_encoder *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->nser; i++) {
        free(e->ser[i].kv);
        free(e->ser[i].av);
        free(e->ser[i].kvp);
        free(e->ser[i].strings);
    }
    free(e->ser);
    free(e->defs);
    free(e->dp);
    free(e->dpp);
    free(e->met);
    free(e->metp);
    free(e->gauge);
    free(e->sum);
    free(e->count);
    free(e->next);
    free(e->slot);
    free(e->pb);
    free(e->gz);
    if (e->zs_ready)
        deflateEnd(&e->zs);
    free(e);
}

static int find_def(struct wt_otlp_encoder *e, const struct wt_otlp_metric *m)
{
    for (size_t i = 0; i < e->ndefs; i++)
        if (strcmp(e->defs[i].name, m->name) == 0)
            return (int)i;
    if (wt_sender_grow((void **)&e->defs, &e->capdefs, e->ndefs + 1, sizeof *e->defs))
        return -ENOMEM;
    struct def *d = &e->defs[e->ndefs];
    snprintf(d->name, sizeof d->name, "%s", m->name);
    d->unit = m->unit;
    d->sum = m->sum;
    return (int)e->ndefs++;
}

int wt_otlp_encoder_add(struct wt_otlp_encoder *e, const char *metric, const char *labels)
{
    struct wt_otlp_metric m;
    char key[64], val[WT_LABELS_LEN];
    const char *gpu = "", *uuid = "", *package = "";
    size_t pairs = 2, pos = 0, used = 0;
    int r, rc = -ENOMEM;
    wt_otlp_map(metric, &m);
    for (const char *c = labels; *c; c++)
        pairs += *c == '=';
    size_t room = strlen(labels) + 2 * pairs + 64 + 2 * 128;
    struct series s = {0};
    if (wt_sender_grow((void **)&e->ser, &e->capser, e->nser + 1, sizeof *e->ser))
        return -ENOMEM;
    int def = find_def(e, &m);
    if (def < 0)
        return def;
    s.def = (uint32_t)def;
    s.kv = calloc(pairs, sizeof *s.kv);
    s.av = calloc(pairs, sizeof *s.av);
    s.kvp = calloc(pairs, sizeof *s.kvp);
    s.strings = malloc(room);
    if (!s.kv || !s.av || !s.kvp || !s.strings)
        goto fail;
    while ((r = wt_labels_next(labels, &pos, key, sizeof key, val, sizeof val)) == 1) {
        if (!val[0])
            continue; /* as in remote write: an empty value is no label */
        size_t a = strlen(key) + 1, b = strlen(val) + 1;
        if (s.nkv + 2 >= pairs || used + a + b > room)
            break;
        char *k = memcpy(s.strings + used, key, a);
        char *v = memcpy(s.strings + used + a, val, b);
        if (strcmp(key, "gpu") == 0)
            gpu = v;
        else if (strcmp(key, "uuid") == 0)
            uuid = v;
        else if (strcmp(key, "package") == 0)
            package = v;
        used += a + b;
        set_str(&s.kv[s.nkv], &s.av[s.nkv], k, v);
        s.nkv++;
    }
    if (r < 0) {
        rc = -EINVAL;
        goto fail;
    }
    if (m.hw_type) {
        /* the hardware conventions: which kind of component, and which one on this host */
        char id[WT_LABELS_LEN + 8];
        if (strcmp(m.hw_type, "cpu") == 0)
            snprintf(id, sizeof id, "cpu%s", package[0] ? package : "0");
        else
            snprintf(id, sizeof id, "%s", uuid[0] ? uuid : gpu[0] ? gpu : "gpu");
        size_t need = sizeof "hw.type" + strlen(m.hw_type) + 1 + sizeof "hw.id" + strlen(id) + 1;
        if (used + need <= room) {
            char *k = memcpy(s.strings + used, "hw.type", sizeof "hw.type");
            used += sizeof "hw.type";
            char *v = memcpy(s.strings + used, m.hw_type, strlen(m.hw_type) + 1);
            used += strlen(m.hw_type) + 1;
            set_str(&s.kv[s.nkv], &s.av[s.nkv], k, v);
            s.nkv++;
            k = memcpy(s.strings + used, "hw.id", sizeof "hw.id");
            used += sizeof "hw.id";
            v = memcpy(s.strings + used, id, strlen(id) + 1);
            used += strlen(id) + 1;
            set_str(&s.kv[s.nkv], &s.av[s.nkv], k, v);
            s.nkv++;
        }
    }
    for (size_t i = 0; i < s.nkv; i++)
        s.kvp[i] = &s.kv[i];
    e->ser[e->nser] = s;
    return (int)e->nser++;
fail:
    free(s.kv);
    free(s.av);
    free(s.kvp);
    free(s.strings);
    return rc;
}

/* gzip (RFC 1952) of the packed request into e->gz. */
static int gzip_body(struct wt_otlp_encoder *e, size_t raw, size_t *out)
{
    if (!e->zs_ready) {
        memset(&e->zs, 0, sizeof e->zs);
        /* 15 + 16: a gzip header and trailer; level 1: the sender's CPU matters more than bytes */
        if (deflateInit2(&e->zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            return -ENOMEM;
        e->zs_ready = true;
    } else if (deflateReset(&e->zs) != Z_OK) {
        return -ENOMEM;
    }
    size_t max = deflateBound(&e->zs, raw) + 32;
    if (wt_sender_grow((void **)&e->gz, &e->capgz, max, 1))
        return -ENOMEM;
    e->zs.next_in = e->pb;
    e->zs.avail_in = (uInt)raw;
    e->zs.next_out = e->gz;
    e->zs.avail_out = (uInt)e->capgz;
    if (deflate(&e->zs, Z_FINISH) != Z_STREAM_END)
        return -ENOMEM;
    *out = e->zs.total_out;
    return 0;
}

int wt_otlp_encode(struct wt_otlp_encoder *e, const struct wt_cursor_batch *b, bool gzip,
                   const char **body, size_t *len, size_t *raw_len)
{
    size_t nd = e->ndefs ? e->ndefs : 1, nmet = 0;
    size_t cm = e->capmet, cg = e->capgauge, cs = e->capsum, cn = e->capnext, csl = e->capslot;
    size_t cdpp = e->capdpp;
    for (size_t k = 0; k < b->n; k++)
        if (b->s[k].series >= e->nser)
            return -EINVAL;
    if (wt_sender_grow((void **)&e->dp, &e->capdp, b->n ? b->n : 1, sizeof *e->dp) ||
        wt_sender_grow((void **)&e->dpp, &cdpp, b->n ? b->n : 1, sizeof *e->dpp) ||
        wt_sender_grow((void **)&e->count, &e->capcount, nd, sizeof *e->count) ||
        wt_sender_grow((void **)&e->next, &cn, nd, sizeof *e->next) ||
        wt_sender_grow((void **)&e->slot, &csl, nd, sizeof *e->slot) ||
        wt_sender_grow((void **)&e->met, &cm, nd, sizeof *e->met) ||
        wt_sender_grow((void **)&e->metp, &e->capmetp, nd, sizeof *e->metp) ||
        wt_sender_grow((void **)&e->gauge, &cg, nd, sizeof *e->gauge) ||
        wt_sender_grow((void **)&e->sum, &cs, nd, sizeof *e->sum))
        return -ENOMEM;
    e->capdpp = cdpp, e->capnext = cn, e->capslot = csl, e->capmet = cm, e->capgauge = cg;
    e->capsum = cs;
    memset(e->count, 0, nd * sizeof *e->count);
    for (size_t k = 0; k < b->n; k++)
        e->count[e->ser[b->s[k].series].def]++;
    /* one Metric per OTLP name present, in the order the names were first seen */
    size_t off = 0;
    for (size_t i = 0; i < e->ndefs; i++) {
        e->slot[i] = -1;
        if (!e->count[i])
            continue;
        const struct def *d = &e->defs[i];
        Wattage__Otlp__Metric *m = &e->met[nmet];
        wattage__otlp__metric__init(m);
        m->name = (char *)d->name;
        m->unit = (char *)d->unit;
        if (d->sum) {
            Wattage__Otlp__Sum *s = &e->sum[nmet];
            wattage__otlp__sum__init(s);
            s->aggregation_temporality =
                WATTAGE__OTLP__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE;
            s->is_monotonic = 1;
            s->data_points = &e->dpp[off];
            m->data_case = WATTAGE__OTLP__METRIC__DATA_SUM;
            m->sum = s;
        } else {
            Wattage__Otlp__Gauge *g = &e->gauge[nmet];
            wattage__otlp__gauge__init(g);
            g->data_points = &e->dpp[off];
            m->data_case = WATTAGE__OTLP__METRIC__DATA_GAUGE;
            m->gauge = g;
        }
        e->next[i] = off;
        off += e->count[i];
        e->slot[i] = (int32_t)nmet;
        e->metp[nmet++] = m;
    }
    for (size_t k = 0; k < b->n; k++) {
        const struct wt_cursor_sample *x = &b->s[k];
        struct series *s = &e->ser[x->series];
        Wattage__Otlp__NumberDataPoint *p = &e->dp[k];
        wattage__otlp__number_data_point__init(p);
        p->n_attributes = s->nkv;
        p->attributes = s->kvp;
        p->time_unix_nano = x->t_ns > 0 ? (uint64_t)x->t_ns : 0;
        p->value_case = WATTAGE__OTLP__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
        p->as_double = x->v;
        const struct def *d = &e->defs[s->def];
        if (d->sum) {
            if (!s->start_ns)
                s->start_ns = p->time_unix_nano;
            p->start_time_unix_nano = s->start_ns;
        }
        e->dpp[e->next[s->def]++] = p;
        Wattage__Otlp__Metric *m = &e->met[e->slot[s->def]];
        if (d->sum)
            m->sum->n_data_points++;
        else
            m->gauge->n_data_points++;
    }
    Wattage__Otlp__ScopeMetrics sm = WATTAGE__OTLP__SCOPE_METRICS__INIT;
    Wattage__Otlp__ScopeMetrics *smp = &sm;
    Wattage__Otlp__ResourceMetrics rm = WATTAGE__OTLP__RESOURCE_METRICS__INIT;
    Wattage__Otlp__ResourceMetrics *rmp = &rm;
    Wattage__Otlp__ExportMetricsServiceRequest req =
        WATTAGE__OTLP__EXPORT_METRICS_SERVICE_REQUEST__INIT;
    sm.scope = &e->scope;
    sm.n_metrics = nmet;
    sm.metrics = e->metp;
    rm.resource = &e->resource;
    rm.n_scope_metrics = 1;
    rm.scope_metrics = &smp;
    req.n_resource_metrics = 1;
    req.resource_metrics = &rmp;
    size_t raw = wattage__otlp__export_metrics_service_request__get_packed_size(&req);
    if (wt_sender_grow((void **)&e->pb, &e->cappb, raw ? raw : 1, 1))
        return -ENOMEM;
    wattage__otlp__export_metrics_service_request__pack(&req, e->pb);
    if (raw_len)
        *raw_len = raw;
    if (!gzip) {
        *body = (const char *)e->pb;
        *len = raw;
        return 0;
    }
    int rc = gzip_body(e, raw, len);
    if (rc)
        return rc;
    *body = (const char *)e->gz;
    return 0;
}

size_t wt_otlp_rejected(const char *body, size_t len, char *msg, size_t n)
{
    Wattage__Otlp__ExportMetricsServiceResponse *r =
        len ? wattage__otlp__export_metrics_service_response__unpack(NULL, len,
                                                                     (const uint8_t *)body)
            : NULL;
    size_t rej = 0;
    if (n)
        msg[0] = '\0';
    if (!r)
        return 0; /* empty, not protobuf (a JSON answer) or cut short: nothing said rejected */
    if (r->partial_success && r->partial_success->rejected_data_points > 0) {
        rej = (size_t)r->partial_success->rejected_data_points;
        if (n && r->partial_success->error_message)
            snprintf(msg, n, "%s", r->partial_success->error_message);
    }
    wattage__otlp__export_metrics_service_response__free_unpacked(r, NULL);
    return rej;
}

/* ---- senders ------------------------------------------------------------------------------ */

struct endpoint {
    struct wt_otlp_endpoint_config cf;
    struct wt_sender_http_ep hep;
    const char *headers[WT_OTLP_MAX_HEADERS + 4];
    struct wt_otlp_encoder *enc;
    char host[256]; /* host.name: the host name, else the node */
};

/* The handle is the stream's sender: struct wt_otlp is never defined. */
static struct wt_sender *sender(struct wt_otlp *o)
{
    return (struct wt_sender *)o;
}

/* The encoder, for the shared HTTP stream (wt_sender_http_ops). */
static int codec_add(void *owner, const char *metric, const char *labels)
{
    struct endpoint *e = owner;
    int k = wt_otlp_encoder_add(e->enc, metric, labels);
    if (k == -EINVAL) {
        /* cannot happen with labels the store wrote; sent without them, indices aligned */
        wt_error(MOD, "endpoint %s: cannot read the labels of series %s{%s}; sending it without",
                 e->cf.ep.name, metric, labels);
        k = wt_otlp_encoder_add(e->enc, metric, "");
    }
    return k;
}

static int codec_encode(void *owner, const struct wt_cursor_batch *b, const char **body,
                        size_t *len)
{
    struct endpoint *e = owner;
    return wt_otlp_encode(e->enc, b, e->cf.gzip, body, len, NULL);
}

static const struct wt_sender_http_codec codec = {
    .add = codec_add, .encode = codec_encode, .keep = wt_remote_write_match};

static const struct wt_sender_family fams[] = {
    {"wattage_otlp_samples_sent_total",
     "Samples the OTLP endpoint accepted (2xx), since the daemon started", WT_COUNTER,
     WT_SENDER_C_SENT},
    {"wattage_otlp_samples_failed_total",
     "Samples of requests that failed with 5xx, 429, a timeout or a network error (retried)",
     WT_COUNTER, WT_SENDER_C_FAILED},
    {"wattage_otlp_samples_dropped_total",
     "Samples of requests the endpoint refused with another 4xx (dropped, not retried)", WT_COUNTER,
     WT_SENDER_C_DROPPED},
    {"wattage_otlp_samples_pending", "Stored samples the endpoint has not acknowledged yet",
     WT_GAUGE, WT_SENDER_PENDING},
    {"wattage_otlp_lag_seconds",
     "Age of the oldest stored sample the endpoint has not acknowledged (0 when none)", WT_GAUGE,
     WT_SENDER_LAG},
    {"wattage_otlp_auth_failures_total",
     "Requests the endpoint refused with 401 or 403 (retried with backoff; the samples stay "
     "pending)",
     WT_COUNTER, WT_SENDER_C_AUTH},
};

int wt_otlp_stats(struct wt_otlp *o, size_t i, struct wt_rw_stats *out)
{
    return wt_sender_http_stats(sender(o), i, out);
}

bool wt_otlp_built_in(void)
{
    return true;
}

/* ---- the stream --------------------------------------------------------------------------- */

static int parse(const char *file, const struct wt_ynode *node, void *confs, struct wt_err *err)
{
    struct wt_otlp_config *c = confs;
    int rc = wt_otlp_config_parse(file, node, c, err);
    return rc ? rc : (int)c->n;
}

static const char *dest_name(const void *confs, size_t i)
{
    return ((const struct wt_otlp_config *)confs)->ep[i].ep.name;
}

static int open_dest(const struct wt_sender_setup *su, const void *confs, void *dest,
                     struct wt_err *err)
{
    struct endpoint *e = dest;
    char cursor[160];
    size_t nh = 0;
    e->cf = ((const struct wt_otlp_config *)confs)->ep[su->i];
    e->hep.codec = &codec;
    e->hep.owner = e;
    e->hep.headers = e->headers;
    e->hep.http.rejected = wt_otlp_rejected;
    e->headers[nh++] = "Content-Type: application/x-protobuf";
    if (e->cf.gzip)
        e->headers[nh++] = "Content-Encoding: gzip";
    e->headers[nh++] = "Expect:"; /* no 100-continue round trip */
    for (size_t k = 0; k < e->cf.nheaders; k++)
        e->headers[nh++] = e->cf.headers[k];
    e->headers[nh] = NULL;
    if (gethostname(e->host, sizeof e->host - 1) != 0 || !e->host[0])
        snprintf(e->host, sizeof e->host, "%s", su->node);
    snprintf(cursor, sizeof cursor, "otlp:%s", e->cf.ep.name);
    int rc = wt_sender_http_dest(su->s, su->cfg->store.path, &e->cf.ep, cursor, &e->hep, err);
    return rc ? rc : wt_otlp_encoder_open(e->host, su->node, &e->enc);
}

static void describe(const void *dest, const char *node)
{
    const struct endpoint *e = dest;
    wt_info(MOD,
            "endpoint %s url=%s host=%s node=%s batch_size=%" PRId64 " compression=%s "
            "headers=%zu series=%s",
            e->cf.ep.name, e->cf.ep.url, e->host, node, e->cf.ep.batch_size,
            e->cf.gzip ? "gzip" : "none", e->cf.nheaders, e->cf.ep.nsel ? "matched" : "all");
}

static void close_dest(void *dest)
{
    struct endpoint *e = dest;
    wt_otlp_encoder_close(e->enc);
    wt_sender_http_ep_close(&e->hep);
}

static const struct wt_sender_stream stream = {
    .section = "otlp",
    .thread = "wt-otlp",
    .noun = "endpoint",
    .indexed = true,
    .ops = &wt_sender_http_ops,
    WT_SENDER_STREAM_FILE(struct wt_otlp_config, struct endpoint)};

int wt_otlp_open(const struct wt_config *cfg, struct wt_http *http, struct wt_otlp **out,
                 struct wt_err *err)
{
    return wt_sender_stream_open(&stream, cfg, http, (struct wt_sender **)out, err);
}

void wt_otlp_drain(struct wt_otlp *o, int64_t deadline_ns)
{
    wt_sender_drain(sender(o), deadline_ns);
}

void wt_otlp_close(struct wt_otlp *o)
{
    wt_sender_close(sender(o)); /* joins the threads before their encoders go */
}
