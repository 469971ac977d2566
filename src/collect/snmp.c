/* SPDX-License-Identifier: MIT */
/*
 * SNMP collector; see snmp.h. Owns a target's state (on the facility target, collect/facility.h),
 * the GETBULK walks of a profile's columns, and the conversion of what they return into facility
 * readings. Its section is snmp_config.c's, its net-snmp session snmp_session.c's, its profiles
 * snmp_profiles.c's.
 *
 * A poll is: (once) sysObjectID and model -> profile; then the columns, up to 16 side by side
 * in each GETBULK. The first request that times out or fails ends the poll with an error, so a
 * dead PDU costs at most its timeout x (retries + 1) per poll, and the loop backs off; nothing
 * stale is published.
 */
#include "collect/snmp.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>

#include "collect/facility.h"
#include "collect/snmp_config.h"
#include "collect/snmp_session.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/energy.h"
#include "core/log.h"
#include "core/source.h"
#include "core/yget.h"

#define VB_BUDGET 60 /* varbinds asked per GETBULK (snmpsim answers at most 64) */
#define MAX_PAR 16   /* columns walked side by side in one request */
#define MAX_ROWS_PER_COL 2048
#define MAX_REQ_PER_POLL 1024
#define MAX_PLAUSIBLE_W 1e7 /* a counter step above 10 MW over the interval is a reset */
#define MAX_WALK (2 * WT_SNMP_MAX_GENERIC + 8)
#define SYSOID "1.3.6.1.2.1.1.2.0"
#define UPS_IDENT_MODEL "1.3.6.1.2.1.33.1.1.2.0"

/* ---- values and readings ------------------------------------------------------------------ */

/* One value returned by a walk. */
struct row {
    uint16_t item; /* walk item */
    uint8_t nidx;  /* sub-ids of the index kept */
    bool has_num, has_raw;
    uint32_t idx[WT_SNMP_MAX_IDX];
    double num;       /* the value as a number (strings: their leading number) */
    uint64_t raw;     /* the unsigned integer, for counters */
    uint64_t modulus; /* where the integer type wraps (0: Counter64) */
    char str[WT_SNMP_STR_LEN];
};

/* One energy counter followed across polls. */
struct ectr {
    uint16_t col;
    uint8_t nidx;
    uint32_t idx[WT_SNMP_MAX_IDX];
    uint64_t base;
    struct wt_energy_counter c;
};

/* One OID walked per poll: a metric column, or a name or digits column they refer to. */
struct item {
    char txt[128];
    oid o[MAX_OID_LEN];
    size_t len;
};

struct wt_snmp {
    struct wt_fac f; /* first: its up labels (collect/facility.h) */
    struct wt_snmp_target t;
    const struct wt_snmp_profile *prof;
    struct wt_snmp_profile generic;
    char sysoid[128];
    char model[64];
    bool identified; /* sysObjectID and model read, profile chosen */
    size_t par;      /* columns per request (fewer for agents that answer less) */
    struct item items[MAX_WALK];
    size_t nitems;
    int name_item[MAX_WALK];   /* per column: its name item or -1 */
    int digits_item[MAX_WALK]; /* per column: its digits item or -1 */
    int key_item[MAX_WALK];    /* per column: its key item or -1 */
    int col_item[MAX_WALK];    /* per column: the item holding its rows (the first column with
                                * its OID: a table read twice is walked once) */
    bool model_first;          /* the model came from the profile's first model OID */
    struct row *rows;
    size_t nrows, caprows;
    struct ectr *ec;
    size_t nec, capec;
    bool produced[MAX_WALK];
    char place[WT_LABELS_LEN]; /* node/rack/zone pairs appended to every reading */
    struct wt_snmp_session ss; /* net-snmp single session (snmp_session.h); closed offline */
    size_t out_start;          /* where this poll's readings start in the batch */
};

/* Adds (or finds) a walk item. Returns its index or -EINVAL / -ENOSPC. */
static int add_item(struct wt_snmp *s, const char *txt)
{
    for (size_t i = 0; i < s->nitems; i++)
        if (strcmp(s->items[i].txt, txt) == 0)
            return (int)i;
    if (s->nitems == MAX_WALK)
        return -ENOSPC;
    struct item *it = &s->items[s->nitems];
    int n = wt_snmp_parse_oid(txt, it->o, MAX_OID_LEN);
    if (n < 2)
        return -EINVAL;
    it->len = (size_t)n;
    snprintf(it->txt, sizeof it->txt, "%s", txt);
    return (int)s->nitems++;
}

/* Chooses the profile and lays out the walk: columns first (item i = column i), then the rest. */
static int set_profile(struct wt_snmp *s, const struct wt_snmp_profile *p, struct wt_err *err)
{
    s->prof = p;
    s->nitems = 0;
    if (p->ncols > WT_SNMP_MAX_GENERIC + 8)
        return wt_err_set(err, "profile %s has too many columns", p->name);
    for (size_t c = 0; c < p->ncols; c++) {
        /* Columns may repeat an OID (the same table read twice) but keep their own item. */
        struct item *it = &s->items[s->nitems];
        int n = wt_snmp_parse_oid(p->cols[c].oid, it->o, MAX_OID_LEN);
        if (n < 2)
            return wt_err_set(err, "profile %s: bad OID %s", p->name, p->cols[c].oid);
        it->len = (size_t)n;
        snprintf(it->txt, sizeof it->txt, "%s", p->cols[c].oid);
        s->nitems++;
        s->col_item[c] = (int)c;
        for (size_t e = 0; e < c && s->col_item[c] == (int)c; e++)
            if (strcmp(s->items[e].txt, it->txt) == 0)
                s->col_item[c] = (int)e;
    }
    for (size_t c = 0; c < p->ncols; c++) {
        s->name_item[c] = p->cols[c].name_oid ? add_item(s, p->cols[c].name_oid) : -1;
        s->digits_item[c] = p->cols[c].digits_oid ? add_item(s, p->cols[c].digits_oid) : -1;
        s->key_item[c] = p->cols[c].key_oid ? add_item(s, p->cols[c].key_oid) : -1;
        if (s->name_item[c] == -ENOSPC || s->digits_item[c] == -ENOSPC ||
            s->key_item[c] == -ENOSPC || s->name_item[c] == -EINVAL ||
            s->digits_item[c] == -EINVAL || s->key_item[c] == -EINVAL)
            return wt_err_set(err, "profile %s: too many columns", p->name);
    }
    return 0;
}

static int pdu_open(struct wt_fac *f, const struct wt_config *cfg, struct wt_err *err);
static int pdu_read(struct wt_fac *f, int64_t t_ns, struct wt_batch *out, struct wt_err *err);
static void pdu_release(struct wt_fac *f);

/* The loop (core/loop.c) and facility.c run each PDU: its section, check and list of targets,
 * its state's life, up and down; pdu_read walks it. */
WT_FAC_COLLECTOR(wt_snmp_collector, wt_snmp_config_check, snmp, "SNMP", struct wt_snmp_target,
                 wt_snmp_parse_target, NULL, struct wt_snmp, pdu_open, pdu_read, pdu_release);

int wt_snmp_parse_targets(const char *file, const struct wt_ynode *node, struct wt_snmp_target *out,
                          size_t max, struct wt_err *err)
{
    int n = wt_y_targets_parse(&snmp_section, file, node, -1, NULL, NULL, 0, err);
    for (int i = 0; i < n && (size_t)i < max; i++) {
        int rc = wt_y_target_at(&snmp_section, file, node, (size_t)i, &out[i], "SNMP", err);
        if (rc)
            return rc;
        wt_snmp_target_aim(&out[i]);
    }
    return n;
}

/* The state once its target is in place (wt_fac_init done), without a session: placement
 * labels, and the profile (given, the target's own, or later from the sysObjectID). */
static int prepare(struct wt_snmp *s, const struct wt_snmp_profile *profile, struct wt_err *err)
{
    const struct wt_snmp_target *t = &s->t;
    /* The generic columns point into the target's storage: aim them at this copy. */
    wt_snmp_target_aim(&s->t);
    s->par = MAX_PAR;
    if (wt_fac_place_labels(s->place, sizeof s->place, &t->place) != 0)
        return wt_err_set(err, "target %s: node, rack and zone labels are too long", t->name);
    if (strcmp(t->profile, "generic") == 0) {
        s->generic.name = "generic";
        s->generic.vendor = "";
        s->generic.cols = s->t.generic;
        s->generic.ncols = s->t.ngeneric;
        profile = &s->generic;
    } else if (!profile && strcmp(t->profile, "auto") != 0) {
        profile = wt_snmp_profile_find(t->profile);
    }
    return profile ? set_profile(s, profile, err) : 0;
}

int wt_snmp_state_new(const struct wt_snmp_target *t, const struct wt_snmp_profile *profile,
                      struct wt_snmp **out, struct wt_err *err)
{
    struct wt_snmp *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->t = *t;
    int rc = wt_fac_init(&s->f, &snmp_proto, NULL, err);
    if (!rc)
        rc = prepare(s, profile, err);
    if (rc) {
        wt_fac_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* Target i once facility.c has parsed it (collect/facility.h's open): the state, the session. */
static int pdu_open(struct wt_fac *f, const struct wt_config *cfg, struct wt_err *err)
{
    struct wt_snmp *s = (struct wt_snmp *)f;
    (void)cfg;
    int rc = wt_snmp_lib_load(err);
    if (!rc)
        rc = prepare(s, NULL, err);
    return rc ? rc : wt_snmp_session_open(&s->ss, &s->t, err);
}

const struct wt_snmp_profile *wt_snmp_state_profile(const struct wt_snmp *s)
{
    return s->prof;
}

void wt_snmp_reset(struct wt_snmp *s)
{
    s->nrows = 0;
}

/* Two OIDs in SNMP's order: sub-identifier by sub-identifier, then the shorter first. */
static int oid_cmp(const oid *a, size_t an, const oid *b, size_t bn)
{
    for (size_t i = 0; i < an && i < bn; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

/* Which walk item covers o, and the index after it. Returns the item or -1. */
static int find_item(const struct wt_snmp *s, const oid *o, size_t len)
{
    int best = -1;
    size_t best_len = 0;
    for (size_t i = 0; i < s->nitems; i++) {
        const struct item *it = &s->items[i];
        if (len > it->len && it->len > best_len && oid_cmp(o, it->len, it->o, it->len) == 0) {
            best = (int)i;
            best_len = it->len;
        }
    }
    return best;
}

/* Array arr of n elements of size bytes, *cap allocated, with room for one more (first: the
 * first allocation's count): arr, or arr moved; NULL when out of memory (arr kept). */
static void *room(void *arr, size_t *cap, size_t n, size_t size, size_t first)
{
    if (n < *cap)
        return arr;
    size_t c = *cap ? *cap * 2 : first;
    void *p = realloc(arr, c * size);
    if (p)
        *cap = c;
    return p;
}

/* Adds an empty row for item with the index o[from..len). Returns it or NULL (-ENOMEM). */
static struct row *new_row(struct wt_snmp *s, int item, const oid *o, size_t from, size_t len)
{
    struct row *rows = room(s->rows, &s->caprows, s->nrows, sizeof *rows, 256);
    if (!rows)
        return NULL;
    s->rows = rows;
    struct row *r = &s->rows[s->nrows++];
    memset(r, 0, offsetof(struct row, str) + 1);
    r->item = (uint16_t)item;
    for (size_t i = from; i < len && r->nidx < WT_SNMP_MAX_IDX; i++)
        r->idx[r->nidx++] = (uint32_t)o[i];
    return r;
}

/* The leading number of a string value ("207", "0.375000", " 12.5 V"). */
static bool text_number(const char *v, double *out)
{
    char *end;
    while (isspace((unsigned char)*v))
        v++;
    if (!*v || !(isdigit((unsigned char)*v) || *v == '-' || *v == '+' || *v == '.'))
        return false;
    double d = strtod(v, &end);
    if (end == v || !isfinite(d))
        return false;
    *out = d;
    return true;
}

/*
 * Makes s valid UTF-8 in place (label values must be): a byte that starts no valid sequence
 * becomes '?' (Latin-1 names), and a sequence cut short at the end (by truncation) is dropped.
 */
static void utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t len = *p < 0x80             ? 1
                     : (*p & 0xe0) == 0xc0 ? 2
                     : (*p & 0xf0) == 0xe0 ? 3
                     : (*p & 0xf8) == 0xf0 ? 4
                                           : 0;
        size_t k = 1;
        while (len > 1 && k < len && (p[k] & 0xc0) == 0x80)
            k++;
        if (len == 0 || (len > 1 && *p < 0xc2) || k < len) {
            if (len > 1 && k < len && p[k] == '\0') {
                *p = '\0'; /* cut short at the end */
                return;
            }
            *p++ = '?';
            continue;
        }
        p += len;
    }
}

/* Stores a string value (name, or a number sent as text). */
static void row_string(struct row *r, const char *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof r->str; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch == '\0')
            break;
        r->str[k++] = (char)(ch < 0x20 || ch == 0x7f ? ' ' : ch);
    }
    while (k > 0 && r->str[k - 1] == ' ')
        k--;
    r->str[k] = '\0';
    utf8_clean(r->str);
    r->has_num = text_number(r->str, &r->num);
}

int wt_snmp_feed(struct wt_snmp *s, const char *oidtxt, int tag, const char *value)
{
    oid o[MAX_OID_LEN];
    int n = wt_snmp_parse_oid(oidtxt, o, MAX_OID_LEN);
    if (n < 0)
        return 0;
    /* sysObjectID; some agents send it as a string (the HPE recording does). */
    if (!s->prof && (tag == 6 || tag == 4) &&
        strcmp(oidtxt[0] == '.' ? oidtxt + 1 : oidtxt, SYSOID) == 0) {
        snprintf(s->sysoid, sizeof s->sysoid, "%s", value[0] == '.' ? value + 1 : value);
        const struct wt_snmp_profile *p = wt_snmp_profile_match(s->sysoid);
        if (p && set_profile(s, p, NULL) != 0)
            return -EINVAL;
        return 0;
    }
    if ((tag == 6 || tag == 4) && strcmp(oidtxt[0] == '.' ? oidtxt + 1 : oidtxt, SYSOID) == 0)
        snprintf(s->sysoid, sizeof s->sysoid, "%s", value[0] == '.' ? value + 1 : value);
    if (s->prof && tag == 4 && value[0]) {
        const char *bare = oidtxt[0] == '.' ? oidtxt + 1 : oidtxt;
        bool first = s->prof->model_oid && strcmp(bare, s->prof->model_oid) == 0;
        bool second = s->prof->model_oid2 && strcmp(bare, s->prof->model_oid2) == 0;
        /* The first model OID wins whichever arrives first. */
        if (first || (second && !s->model_first)) {
            snprintf(s->model, sizeof s->model, "%s", value);
            s->model_first = first;
        }
    }
    int it = find_item(s, o, (size_t)n);
    if (it < 0)
        return 0;
    struct row *r = new_row(s, it, o, s->items[it].len, (size_t)n);
    if (!r)
        return -ENOMEM;
    char *end;
    switch (tag) {
    case 2: { /* Integer32 */
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value)
            break;
        r->num = (double)v;
        r->has_num = true;
        if (v >= 0) {
            r->raw = (uint64_t)v;
            r->has_raw = true;
            r->modulus = 1ULL << 31;
        }
        break;
    }
    case 65:
    case 66:
    case 67:
    case 70: { /* Counter32, Gauge32, TimeTicks, Counter64 */
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value)
            break;
        r->num = (double)v;
        r->raw = v;
        r->has_num = r->has_raw = true;
        r->modulus = tag == 70 ? 0 : 1ULL << 32;
        break;
    }
    case 4:
        row_string(r, value, strlen(value));
        break;
    default:
        break;
    }
    return 0;
}

/* The row of item with the same index as r, or NULL. */
static const struct row *same_index(const struct wt_snmp *s, int item, const struct row *r)
{
    if (item < 0)
        return NULL;
    for (size_t i = 0; i < s->nrows; i++) {
        const struct row *q = &s->rows[i];
        if (q->item == item && q->nidx == r->nidx &&
            memcmp(q->idx, r->idx, r->nidx * sizeof r->idx[0]) == 0)
            return q;
    }
    return NULL;
}

/*
 * The row of a name item for r: the one with r's index, else the one whose index is the longest
 * prefix of r's (a name per outlet for values per outlet and sensor); NULL when none.
 */
static const struct row *name_row(const struct wt_snmp *s, int item, const struct row *r)
{
    const struct row *best = NULL;
    if (item < 0)
        return NULL;
    for (size_t i = 0; i < s->nrows; i++) {
        const struct row *q = &s->rows[i];
        if (q->item != item || q->nidx == 0 || q->nidx > r->nidx ||
            (best && q->nidx <= best->nidx) ||
            memcmp(q->idx, r->idx, q->nidx * sizeof r->idx[0]) != 0)
            continue;
        best = q;
        if (q->nidx == r->nidx)
            break;
    }
    return best;
}

/*
 * Renders a point template with the row's index (and key, -1 when none); other daisy-chain units
 * get "unitN.".
 */
static void render_point(const struct wt_snmp_column *c, const struct row *r, int64_t key,
                         char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    if (c->unit_pos && c->unit_pos <= r->nidx && r->idx[c->unit_pos - 1] != c->unit_base)
        k = (size_t)snprintf(out, n, "unit%" PRIu32 ".", r->idx[c->unit_pos - 1]);
    for (const char *t = c->point; *t && k + 1 < n; t++) {
        if (*t == '%' && t[1] >= '1' && t[1] <= '9') {
            unsigned pos = (unsigned)(t[1] - '1');
            t++;
            if (pos < r->nidx)
                k += (size_t)snprintf(out + k, n - k, "%" PRIu32, r->idx[pos]);
            if (k >= n)
                k = n - 1;
        } else if (*t == '%' && t[1] == 'k') {
            t++;
            if (key >= 0)
                k += (size_t)snprintf(out + k, n - k, "%" PRId64, key);
            else if (r->nidx > 0)
                k += (size_t)snprintf(out + k, n - k, "%" PRIu32, r->idx[r->nidx - 1]);
            if (k >= n)
                k = n - 1;
        } else {
            out[k++] = *t;
            out[k] = '\0';
        }
    }
}

/*
 * The sub-identifiers of an index that a column's point names: its highest %N, the daisy-chain
 * unit, the sensor type of a typed column; at least one (a scalar's ".0").
 */
static size_t index_named(const struct wt_snmp_column *c)
{
    size_t n = c->unit_pos;
    for (const char *t = c->point; *t; t++)
        if (*t == '%' && t[1] >= '1' && t[1] <= '9' && (size_t)(t[1] - '0') > n)
            n = (size_t)(t[1] - '0');
    if (c->flags & WT_SNMP_TYPED)
        n++;
    return n ? n : 1;
}

/* The energy counter of (col, index), made on first use. NULL when out of memory. */
static struct ectr *counter(struct wt_snmp *s, size_t col, const struct row *r)
{
    for (size_t i = 0; i < s->nec; i++) {
        struct ectr *e = &s->ec[i];
        if (e->col == col && e->nidx == r->nidx &&
            memcmp(e->idx, r->idx, r->nidx * sizeof r->idx[0]) == 0)
            return e;
    }
    struct ectr *ec = room(s->ec, &s->capec, s->nec, sizeof *ec, 16);
    if (!ec)
        return NULL;
    s->ec = ec;
    struct ectr *e = &s->ec[s->nec++];
    memset(e, 0, sizeof *e);
    e->col = (uint16_t)col;
    e->nidx = r->nidx;
    memcpy(e->idx, r->idx, sizeof e->idx);
    return e;
}

static int emit(struct wt_snmp *s, int metric, const char *kind, const char *point,
                const char *name, int64_t t_ns, double v, struct wt_batch *out)
{
    char lb[WT_LABELS_LEN];
    int rc = wt_labels(lb, sizeof lb, "source", "snmp", "target", s->t.name, "point", point, "kind",
                       kind, NULL);
    if (rc)
        return rc;
    /* Room is kept for node/rack/zone (bounded by the config check); a long name is cut. */
    size_t keep = s->place[0] ? strlen(s->place) + 1 : 0;
    if (name && name[0]) {
        char nm[64];
        size_t base = strlen(lb);
        snprintf(nm, sizeof nm, "%s", name);
        for (size_t n = strlen(nm); n > 0; n = n > 8 ? n - 8 : 0) {
            nm[n] = '\0';
            utf8_clean(nm);
            if (wt_labels_add(lb, sizeof lb - keep, "name", nm) == 0)
                break;
            lb[base] = '\0';
        }
    }
    if (s->place[0]) {
        size_t l = strlen(lb);
        if (l + 1 + strlen(s->place) >= sizeof lb)
            return -E2BIG;
        snprintf(lb + l, sizeof lb - l, ",%s", s->place);
    }
    /*
     * Two columns (a generic profile's OIDs with one point) or two rows that render the same
     * point would export a series twice, and Prometheus refuses a scrape with a duplicate: the
     * first one this poll is kept.
     */
    for (size_t i = s->out_start; i < out->len; i++)
        if (out->r[i].metric == metric && strcmp(out->r[i].labels, lb) == 0)
            return 0;
    return wt_batch_add(out, metric, lb, t_ns, v);
}

/* One row of a column as a reading. */
static int row_reading(struct wt_snmp *s, size_t c, const struct row *r, int64_t t_ns,
                       struct wt_batch *out)
{
    const struct wt_snmp_column *col = &s->prof->cols[c];
    int metric = col->metric;
    double scale = col->scale;
    int64_t key = -1;
    if (!r->has_num)
        return 0;
    /*
     * A row whose index goes on past what the point names is not a row of this table: it would
     * render the point of another row, and one series would take turns between two counters.
     */
    if (r->nidx > index_named(col))
        return 0;
    if (col->key_oid) {
        const struct row *kr = same_index(s, s->key_item[c], r);
        if (kr && kr->has_num && kr->num >= 0 && kr->num < 1e9)
            key = (int64_t)kr->num;
        if ((key < 0 && (col->flags & WT_SNMP_KEY_REQUIRED)) ||
            (key == 0 && (col->flags & WT_SNMP_KEY_NONZERO)))
            return 0; /* another column's row */
    }
    if (col->flags & WT_SNMP_TYPED) {
        if (r->nidx == 0)
            return 0;
        const struct wt_snmp_type_map *m = col->types;
        while (m && m->metric >= 0 && m->type != r->idx[r->nidx - 1])
            m++;
        if (!m || m->metric < 0)
            return 0;
        metric = m->metric;
        scale = m->scale;
        const struct row *d = same_index(s, s->digits_item[c], r);
        if (d && d->has_num && d->num > 0 && d->num < 10)
            scale *= pow(10, -d->num);
    }
    double v = r->num;
    if (v < 0) {
        if (col->flags & WT_SNMP_ABS)
            v = -v;
        else if (!(col->flags & WT_SNMP_SIGNED))
            return 0; /* "not available" on these MIBs */
    }
    if (metric == WT_M_FAC_ENERGY_J) {
        uint64_t raw = r->raw, modulus = r->modulus;
        if (!r->has_raw) {
            /* A counter sent as text ("2.28kWh"): followed in millionths of its unit. */
            if (v < 0 || v > 1e12)
                return 0;
            raw = (uint64_t)llround(v * 1e6);
            modulus = 0;
            scale *= 1e-6;
        }
        struct ectr *e = counter(s, c, r);
        if (!e)
            return -ENOMEM;
        if (!e->c.have)
            e->base = raw; /* what the meter counted before us is part of the total */
        uint64_t max_delta = 1;
        if (e->c.have && t_ns > e->c.last_t_ns) {
            double dt = (double)(t_ns - e->c.last_t_ns) / WT_NS_PER_S;
            double md = MAX_PLAUSIBLE_W * dt / scale;
            max_delta = md > 1.8e19 ? 0 : md < 1 ? 1 : (uint64_t)md;
        }
        enum wt_delta_kind k = wt_energy_counter_update(&e->c, t_ns, raw, modulus, max_delta);
        if (k == WT_DELTA_RESET)
            wt_info("snmp", "energy counter reset target=%s column=%s raw=%" PRIu64, s->t.name,
                    col->oid, raw);
        v = (double)e->base + (double)e->c.total_raw; /* a Counter64 near 2^64: no wrap */
    }
    char point[64];
    render_point(col, r, key, point, sizeof point);
    const struct row *nm = name_row(s, s->name_item[c], r);
    int rc = emit(s, metric, col->kind, point, nm ? nm->str : NULL, t_ns, v * scale, out);
    if (rc == 0)
        s->produced[c] = true;
    return rc;
}

/* The readings of the values fed, then wattage_facility_info (facility.c adds up). */
static int readings(struct wt_snmp *s, int64_t t_ns, struct wt_batch *out)
{
    int rc = 0;
    s->out_start = out->len;
    if (s->prof) {
        for (size_t c = 0; c < s->prof->ncols; c++) {
            const struct wt_snmp_column *col = &s->prof->cols[c];
            s->produced[c] = false;
            if (col->flags & WT_SNMP_FALLBACK) {
                bool covered = false;
                for (size_t e = 0; e < c && !covered; e++)
                    covered = s->produced[e] && s->prof->cols[e].metric == col->metric &&
                              strcmp(s->prof->cols[e].kind, col->kind) == 0;
                if (covered)
                    continue;
            }
            for (size_t i = 0; i < s->nrows && rc == 0; i++)
                if (s->rows[i].item == s->col_item[c])
                    rc = row_reading(s, c, &s->rows[i], t_ns, out);
            if (rc)
                return rc;
        }
    }
    char lb[WT_LABELS_LEN];
    snprintf(lb, sizeof lb, "%s", s->f.up_labels);
    rc = wt_labels_add(lb, sizeof lb, "profile", s->prof ? s->prof->name : "none");
    if (!rc && s->prof && s->prof->vendor[0])
        rc = wt_labels_add(lb, sizeof lb, "vendor", s->prof->vendor);
    if (!rc && s->sysoid[0])
        rc = wt_labels_add(lb, sizeof lb, "sys_object_id", s->sysoid);
    if (!rc && s->model[0])
        rc = wt_labels_add(lb, sizeof lb, "model", s->model);
    if (!rc)
        rc = wt_batch_add(out, WT_M_FAC_INFO, lb, t_ns, 1);
    return rc;
}

int wt_snmp_readings(struct wt_snmp *s, int64_t t_ns, struct wt_batch *out)
{
    int rc = readings(s, t_ns, out);
    return rc ? rc : wt_batch_add(out, WT_M_FAC_UP, s->f.up_labels, t_ns, 1);
}

/* ---- the network ---------------------------------------------------------------------------- */

/* What the state holds (collect/facility.h's close): the session, rows, counters. */
static void pdu_release(struct wt_fac *f)
{
    struct wt_snmp *s = (struct wt_snmp *)f;
    wt_snmp_session_close(&s->ss);
    free(s->rows);
    free(s->ec);
    explicit_bzero(s->t.community, sizeof s->t.community);
}

void wt_snmp_state_free(struct wt_snmp *s)
{
    wt_fac_close(s);
}

/* Stores a varbind of item into a row. Returns 0 or -ENOMEM. */
static int store_var(struct wt_snmp *s, int item, const netsnmp_variable_list *v)
{
    struct row *r = new_row(s, item, v->name, s->items[item].len, v->name_length);
    if (!r)
        return -ENOMEM;
    switch (v->type) {
    case ASN_INTEGER:
        r->num = (double)*v->val.integer;
        r->has_num = true;
        if (*v->val.integer >= 0) {
            r->raw = (uint64_t)*v->val.integer;
            r->has_raw = true;
            r->modulus = 1ULL << 31;
        }
        break;
    case ASN_COUNTER:
    case ASN_GAUGE:
    case ASN_TIMETICKS:
        r->raw = (uint64_t)(*v->val.integer & 0xffffffffUL);
        r->num = (double)r->raw;
        r->has_num = r->has_raw = true;
        r->modulus = 1ULL << 32;
        break;
    case ASN_COUNTER64:
        r->raw = ((uint64_t)v->val.counter64->high << 32) | v->val.counter64->low;
        r->num = (double)r->raw;
        r->has_num = r->has_raw = true;
        r->modulus = 0;
        break;
    case ASN_OCTET_STR:
        row_string(r, (const char *)v->val.string, v->val_len);
        break;
    default:
        break;
    }
    return 0;
}

/* A column being walked: where it stands. */
struct cursor {
    oid o[MAX_OID_LEN];
    size_t len;
    size_t rows;
    int item;
    bool done;
};

/*
 * Walks every item into rows, several columns per GETBULK (one varbind each, the repetitions
 * sharing a budget of VB_BUDGET varbinds per answer), each column dropping out when it ends. An
 * agent that answers "tooBig" gets smaller requests; one that answers fewer varbinds than asked
 * gets fewer columns at a time. Returns 0 or the first request error.
 */
static int walk_all(struct wt_snmp *s, int *nreq, struct wt_err *err)
{
    struct cursor c[MAX_PAR];
    size_t nact = 0, next = 0;
    int budget = VB_BUDGET;
    for (int req = 0;; req++) {
        size_t k = 0;
        for (size_t i = 0; i < nact; i++)
            if (!c[i].done)
                c[k++] = c[i];
        nact = k;
        while (nact < s->par && next < s->nitems) {
            if (next < s->prof->ncols && s->col_item[next] != (int)next) {
                next++; /* the same column as an earlier one: its rows are that one's */
                continue;
            }
            struct cursor *n = &c[nact++];
            n->item = (int)next;
            n->len = s->items[next].len;
            memcpy(n->o, s->items[next].o, n->len * sizeof(oid));
            n->rows = 0;
            n->done = false;
            next++;
        }
        *nreq = req;
        if (nact == 0)
            return 0;
        if (req >= MAX_REQ_PER_POLL)
            return wt_err_set(err, "target %s: more than %d requests in one poll", s->t.name,
                              MAX_REQ_PER_POLL);
        netsnmp_pdu *pdu = wt_ns.snmp_pdu_create(SNMP_MSG_GETBULK), *resp;
        if (!pdu)
            return -ENOMEM;
        int reps = budget / (int)nact;
        pdu->non_repeaters = 0;
        pdu->max_repetitions = reps < 1 ? 1 : reps;
        for (size_t i = 0; i < nact; i++)
            wt_ns.snmp_add_null_var(pdu, c[i].o, c[i].len);
        int rc = wt_snmp_request(&s->ss, pdu, &resp, err);
        if (rc == -EMSGSIZE && (budget > 1 || s->par > 1)) {
            /* Ask for less: fewer repetitions first, then fewer columns at a time. */
            if (budget > (int)nact)
                budget /= 2;
            else if (s->par > 1)
                s->par = s->par / 2;
            else
                budget = 1;
            continue;
        }
        if (rc)
            return rc;
        size_t got = 0;
        for (netsnmp_variable_list *v = resp->variables; v; v = v->next_variable, got++) {
            struct cursor *q = &c[got % nact];
            const struct item *it = &s->items[q->item];
            if (q->done)
                continue;
            if (v->type == SNMP_ENDOFMIBVIEW || v->type == SNMP_NOSUCHOBJECT ||
                v->type == SNMP_NOSUCHINSTANCE || v->name_length <= it->len ||
                oid_cmp(v->name, it->len, it->o, it->len) != 0 ||
                oid_cmp(v->name, v->name_length, q->o, q->len) <= 0 ||
                q->rows >= MAX_ROWS_PER_COL) {
                q->done = true; /* left the column, or an agent that does not go forward */
                continue;
            }
            rc = store_var(s, q->item, v);
            if (rc) {
                wt_ns.snmp_free_pdu(resp);
                return rc;
            }
            q->rows++;
            q->len = v->name_length < MAX_OID_LEN ? v->name_length : MAX_OID_LEN;
            memcpy(q->o, v->name, q->len * sizeof(oid));
        }
        wt_ns.snmp_free_pdu(resp);
        if (got == 0) {
            for (size_t i = 0; i < nact; i++)
                c[i].done = true;
        } else if (got < nact) {
            /* The columns past what it answered saw nothing: ask for fewer at a time. */
            s->par = got;
        }
    }
}

/* First contact: the sysObjectID, the profile when auto, the model. */
static int identify(struct wt_snmp *s, struct wt_err *err)
{
    int rc = wt_snmp_get_text(&s->ss, SYSOID, s->sysoid, sizeof s->sysoid, err);
    if (rc)
        return rc;
    if (s->sysoid[0] == '.') /* sent as a string with its leading dot (HPE) */
        memmove(s->sysoid, s->sysoid + 1, strlen(s->sysoid));
    if (!s->prof) {
        const struct wt_snmp_profile *p = wt_snmp_profile_match(s->sysoid);
        if (!p) {
            /* Any UPS may serve RFC 1628 whatever its vendor's sysObjectID. */
            char m[64];
            rc = wt_snmp_get_text(&s->ss, UPS_IDENT_MODEL, m, sizeof m, err);
            if (rc)
                return rc;
            if (m[0])
                p = wt_snmp_profile_find("ups-mib");
        }
        if (!p)
            return wt_err_set(err,
                              "target %s: sysObjectID %s matches no built-in profile; set "
                              "profile: generic with the OIDs to read",
                              s->t.name, s->sysoid[0] ? s->sysoid : "(none)");
        rc = set_profile(s, p, err);
        if (rc)
            return rc;
        wt_info("snmp", "target %s: sysObjectID %s, profile %s", s->t.name, s->sysoid, p->name);
    }
    if (s->prof->model_oid) {
        rc = wt_snmp_get_text(&s->ss, s->prof->model_oid, s->model, sizeof s->model, err);
        if (rc)
            return rc;
    }
    if (!s->model[0] && s->prof->model_oid2) {
        rc = wt_snmp_get_text(&s->ss, s->prof->model_oid2, s->model, sizeof s->model, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* One poll (collect/facility.h's read): first contact once, then every column. */
static int pdu_read(struct wt_fac *f, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct wt_snmp *s = (struct wt_snmp *)f;
    int rc = 0;
    if (!s->identified) {
        rc = identify(s, err);
        if (rc) {
            s->sysoid[0] = '\0';
            return rc;
        }
        s->identified = true;
    }
    wt_snmp_reset(s);
    int nreq = 0;
    rc = walk_all(s, &nreq, err);
    if (rc)
        return rc;
    wt_debug("snmp", "target %s: requests=%d values=%zu", s->t.name, nreq, s->nrows);
    rc = readings(s, t_ns, out);
    if (rc)
        wt_err_set(err, "target %s: cannot build readings: %s", s->t.name, strerror(-rc));
    return rc;
}
