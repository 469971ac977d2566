/* SPDX-License-Identifier: MIT */
/*
 * The built-in detectors (see detect.h). Each GPU is followed by its uuid (its labels without
 * the per-series extras: pci_bus_id, method, reason); a new sample is one whose timestamp moved,
 * so several evaluations between two polls count once. Times are the readings' own
 * (CLOCK_REALTIME), so a slope is in degrees per second of the GPU's clock, not of ours.
 */
#include "alert/detect.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert/notify.h"
#include "audit/ashrae.h"
#include "collect/nvml.h"
#include "core/clock.h"

#define MAX_GPUS 64
#define MAX_COLS 64
#define MAX_REASONS 9
#define MAX_XIDS 33    /* XID series per GPU in a snapshot (the collector's 32 and "other") */
#define REPLAY_CKPT 40 /* PCIe replay checkpoints kept per GPU, window / 32 apart */
#define RING 4096 /* temperature samples kept per GPU: 120 s at 30 ms, or a long window at 1 s */

static const char *const names[WT_DET_COUNT] = {
    "GPUThrottleForecast",
    "GPUThrottling",
    "GPUIdleBurn",
    "GPUImpossibleReading",
    "GPUSensorStuck",
    "GPUSiblingOutlier",
    "WattageDataGap",
    "WattageAlertDeliveryFailing",
    "GPUXidError",
    "GPUUncorrectableECC",
    "GPURowRemapPending",
    "GPUPCIeReplaysRising",
    "InletTemperatureOutsideEnvelope",
    "RackDeltaTHigh",
    "RackInletImbalance",
};

const char *wt_detector_alertname(enum wt_detector d)
{
    return d < WT_DET_COUNT ? names[d] : "unknown";
}

/* ---- pure pieces ---- */

int wt_detect_lsq(const double *x, const double *y, size_t n, double *slope, double *intercept)
{
    if (n < 2)
        return -EINVAL;
    /* Centred sums: x values are seconds since an origin that may be large. */
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) {
        mx += x[i] - x[0];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = x[i] - x[0] - mx;
        sxx += dx * dx;
        sxy += dx * (y[i] - my);
    }
    if (!(sxx > 0))
        return -EINVAL;
    *slope = sxy / sxx;
    *intercept = my - *slope * mx;
    return 0;
}

double wt_detect_time_to(double now, double slope, double limit)
{
    if (now >= limit)
        return 0;
    if (!(slope > 0))
        return INFINITY;
    return (limit - now) / slope;
}

double wt_detect_t_quantile(double p, double df)
{
    /* The normal quantile (Abramowitz and Stegun 26.2.23, error under 4.5e-4), then the
     * Cornish-Fisher expansion to Student's t in 1/df (within 1% from df = 3). */
    double q = p < 0.5 ? p : 1 - p;
    double r = sqrt(-2 * log(q));
    double z = r - (2.515517 + 0.802853 * r + 0.010328 * r * r) /
                       (1 + 1.432788 * r + 0.189269 * r * r + 0.001308 * r * r * r);
    if (p < 0.5)
        z = -z;
    if (!(df > 0) || isinf(df))
        return z;
    double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2;
    return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df) +
           (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df * df * df);
}

int wt_detect_plateau(const double *x, const double *y, size_t n, double *level)
{
    double sum[3] = {0, 0, 0}, span = n ? x[n - 1] - x[0] : 0;
    size_t cnt[3] = {0, 0, 0};
    if (n < 9 || !(span > 0))
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)(3 * (x[i] - x[0]) / span);
        k = k > 2 ? 2 : k;
        sum[k] += y[i];
        cnt[k]++;
    }
    if (!cnt[0] || !cnt[1] || !cnt[2])
        return -EINVAL;
    double y1 = sum[0] / (double)cnt[0], y2 = sum[1] / (double)cnt[1], y3 = sum[2] / (double)cnt[2];
    double d1 = y2 - y1, d2 = y3 - y2;
    /* Rising and clearly slowing; a ratio near 1 is a straight line with noise (integer
     * temperatures make the thirds' steps wobble by a fifth or so). */
    if (!(d1 > 0) || d2 < 0 || d2 >= 0.8 * d1)
        return -ERANGE;
    double r = d2 / d1;
    *level = y3 + d2 * r / (1 - r);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double wt_detect_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const char *wt_detect_label(const char *labels, const char *key, size_t *len)
{
    size_t kl = strlen(key);
    const char *p = labels;
    /* Pairs are key="value" separated by commas; inside a value a quote is always escaped, so
     * a match at the start or after a comma followed by =" is a key. */
    while ((p = strstr(p, key))) {
        if ((p == labels || p[-1] == ',') && p[kl] == '=' && p[kl + 1] == '"') {
            const char *v = p + kl + 2, *q = v;
            while (*q && *q != '"')
                q += *q == '\\' && q[1] ? 2 : 1;
            if (!*q)
                return NULL;
            *len = (size_t)(q - v);
            return v;
        }
        p += kl;
    }
    return NULL;
}

/* ---- state ---- */

/* One GPU's values in the current snapshot. */
struct now {
    bool seen, have_up, have_power, have_temp, have_slow, have_util, have_limit, have_max;
    bool have_energy;
    double up, power, temp, slow, util, limit, max, energy;
    int64_t t_power, t_temp, t_util, t_energy;
    /* throttle reasons in the snapshot: index into the batch */
    size_t reason[MAX_REASONS];
    int nreason;
    /* health */
    bool have_unc_vol, have_unc_agg, have_pending, have_failure, have_replays;
    double unc_vol, unc_agg, pending, failure, unc_rows, replays;
    int64_t t_replays;
    struct {
        unsigned int code; /* 0: "other" */
        double n;
    } xid[MAX_XIDS];
    int nxid;
};

/* What the XID detector remembers of one code on one GPU. */
struct xid_seen {
    unsigned int code;
    double n;
    int64_t last_rise;
};

/* One regression window's running sums over samples [tail, count) of the ring. */
struct fwin {
    uint64_t tail;
    double sx, sy, sxx, sxy, syy;
};

struct gpu {
    char uuid[96];
    char labels[WT_LABELS_LEN]; /* gpu,uuid,model (whatever the base series carry) */
    size_t labels_len;
    char model[96];
    int index;
    struct now v;
    /* last new samples */
    int64_t last_power_t, last_temp_t, last_energy_t, last_ok_t;
    int64_t first_t; /* when it was first seen, for a GPU that never answered */
    double last_power, last_energy;
    bool have_last_energy;
    /* temperature ring: sample k (counted from the first) is at k % RING; [head, count) kept */
    int64_t rt[RING];
    double rv[RING];
    uint64_t rhead, rcount;
    int64_t rorigin; /* x = (t - rorigin) s in the windows' sums */
    struct fwin fw[WT_FORECAST_MAX_WINDOWS];
    int64_t fw_ns[WT_FORECAST_MAX_WINDOWS]; /* the windows the sums are for */
    int nfw;
    /* the shortest window's residual variance, averaged over its last 300 samples */
    double noise_s2;
    int noise_n;
    /* idle burn */
    bool idle_on;
    int64_t idle_since;
    double idle_j;
    int64_t idle_low_since; /* on, and power under the band since then (0: not) */
    int64_t idle_off_at;    /* when it last cleared */
    /* stuck */
    int same;
    double util_min, util_max;
    /* impossible: when each kind was last seen, and what */
    int64_t bad_at[4];
    double bad_val[4];
    double energy_back_j;
    /* health */
    struct xid_seen xid[MAX_XIDS];
    int nxid;
    bool have_first_agg;
    double first_agg, last_agg;
    int64_t agg_rise_at;
    struct {
        int64_t t;
        double v;
    } rp[REPLAY_CKPT];
    int rp_head, rp_n;
    double rp_last;
};

struct col {
    char name[32];
    int64_t base_ns; /* the smallest interval seen: the configured one (backoff doubles it) */
    int64_t first_mono;
};

struct wt_detect {
    struct gpu *g[MAX_GPUS];
    int ng;
    struct col c[MAX_COLS];
    int nc;
    /* scratch */
    double xs[RING], ys[RING];
};

int wt_detect_new(struct wt_detect **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : -ENOMEM;
}

void wt_detect_free(struct wt_detect *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->ng; i++)
        free(d->g[i]);
    free(d);
}

static bool is_gpu_metric(int m)
{
    return m >= WT_M_GPU_INFO && m <= WT_M_GPU_ENERGY_GAPS;
}

/* The labels of r without the per-series extras. */
static void base_labels(const char *labels, char *out, size_t n)
{
    char k[64], v[WT_LABELS_LEN];
    size_t pos = 0;
    out[0] = '\0';
    while (wt_labels_next(labels, &pos, k, sizeof k, v, sizeof v) == 1) {
        static const char *const extras[] = {"pci_bus_id",
                                             "method",
                                             "reason",
                                             "driver_version",
                                             "vbios_version",
                                             "cuda_driver_version",
                                             "type",
                                             "counter",
                                             "kind",
                                             "xid",
                                             "fan"};
        bool extra = false;
        for (size_t i = 0; i < sizeof extras / sizeof extras[0] && !extra; i++)
            extra = strcmp(k, extras[i]) == 0;
        if (extra)
            continue;
        if (wt_labels_add(out, n, k, v) != 0)
            break;
    }
}

static struct gpu *find_gpu(struct wt_detect *d, const char *labels)
{
    char uuid[96], idx[16];
    if (wt_labels_get(labels, "uuid", uuid, sizeof uuid) != 0 || !uuid[0]) {
        /* No uuid (a GPU lost before the collector could read it): the index names it, and it
         * is the GPU known at that index, if any. */
        if (wt_labels_get(labels, "gpu", idx, sizeof idx) != 0)
            return NULL;
        for (int i = 0; i < d->ng; i++)
            if (d->g[i]->index == atoi(idx))
                return d->g[i];
        snprintf(uuid, sizeof uuid, "gpu:%s", idx);
    }
    for (int i = 0; i < d->ng; i++)
        if (strcmp(d->g[i]->uuid, uuid) == 0)
            return d->g[i];
    if (d->ng == MAX_GPUS)
        return NULL;
    struct gpu *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
    base_labels(labels, g->labels, sizeof g->labels);
    g->labels_len = strlen(g->labels);
    if (wt_labels_get(labels, "model", g->model, sizeof g->model) != 0)
        g->model[0] = '\0';
    g->index = wt_labels_get(labels, "gpu", idx, sizeof idx) == 0 ? atoi(idx) : -1;
    g->util_min = INFINITY;
    g->util_max = -INFINITY;
    d->g[d->ng++] = g;
    return g;
}

/* True when labels are g's base labels, or them followed by more pairs. */
static bool same_gpu(const struct gpu *g, const char *labels)
{
    return strncmp(labels, g->labels, g->labels_len) == 0 &&
           (labels[g->labels_len] == '\0' || labels[g->labels_len] == ',');
}

static bool has_label(const char *labels, const char *key)
{
    size_t n;
    return wt_detect_label(labels, key, &n) != NULL;
}

/* True when label key of labels is exactly val. */
static bool label_is(const char *labels, const char *key, const char *val)
{
    size_t n;
    const char *p = wt_detect_label(labels, key, &n);
    return p && n == strlen(val) && memcmp(p, val, n) == 0;
}

static void gather_ecc(struct now *v, const struct wt_reading *r)
{
    if (!label_is(r->labels, "type", "uncorrected"))
        return;
    if (label_is(r->labels, "counter", "volatile"))
        v->have_unc_vol = true, v->unc_vol = r->value;
    else if (label_is(r->labels, "counter", "aggregate"))
        v->have_unc_agg = true, v->unc_agg = r->value;
}

static void gather_remap(struct now *v, const struct wt_reading *r)
{
    if (label_is(r->labels, "kind", "pending"))
        v->have_pending = true, v->pending = r->value;
    else if (label_is(r->labels, "kind", "failure"))
        v->have_failure = true, v->failure = r->value;
    else if (label_is(r->labels, "kind", "uncorrectable"))
        v->unc_rows = r->value;
}

static void gather_xid(struct now *v, const struct wt_reading *r)
{
    size_t n;
    const char *p = wt_detect_label(r->labels, "xid", &n);
    if (!p || v->nxid == MAX_XIDS)
        return;
    char code[16];
    if (n >= sizeof code)
        return;
    memcpy(code, p, n);
    code[n] = '\0';
    v->xid[v->nxid].code = (unsigned int)strtoul(code, NULL, 10); /* "other" is 0 */
    v->xid[v->nxid].n = r->value;
    v->nxid++;
}

static void gather(struct wt_detect *d, const struct wt_batch *b)
{
    struct gpu *cur = NULL;
    for (int i = 0; i < d->ng; i++)
        memset(&d->g[i]->v, 0, sizeof d->g[i]->v);
    for (size_t i = 0; i < b->len; i++) {
        const struct wt_reading *r = &b->r[i];
        if (!is_gpu_metric(r->metric))
            continue;
        if (!cur || !same_gpu(cur, r->labels))
            cur = find_gpu(d, r->labels);
        if (!cur)
            continue;
        if (!cur->first_t)
            cur->first_t = r->t_ns;
        struct now *v = &cur->v;
        v->seen = true;
        switch (r->metric) {
        case WT_M_GPU_UP:
            v->have_up = true, v->up = r->value;
            break;
        case WT_M_GPU_POWER_W:
            v->have_power = true, v->power = r->value, v->t_power = r->t_ns;
            break;
        case WT_M_GPU_TEMP_C:
            v->have_temp = true, v->temp = r->value, v->t_temp = r->t_ns;
            break;
        case WT_M_GPU_SLOWDOWN_TEMP_C:
            v->have_slow = true, v->slow = r->value;
            break;
        case WT_M_GPU_UTIL_RATIO:
            v->have_util = true, v->util = r->value, v->t_util = r->t_ns;
            break;
        case WT_M_GPU_POWER_LIMIT_W:
            v->have_limit = true, v->limit = r->value;
            break;
        case WT_M_GPU_POWER_LIMIT_MAX_W:
            v->have_max = true, v->max = r->value;
            break;
        case WT_M_GPU_ENERGY_J:
            if (!has_label(r->labels, "method"))
                v->have_energy = true, v->energy = r->value, v->t_energy = r->t_ns;
            break;
        case WT_M_GPU_THROTTLED:
            if (v->nreason < MAX_REASONS)
                v->reason[v->nreason++] = i;
            break;
        case WT_M_GPU_ECC_ERRORS:
            gather_ecc(v, r);
            break;
        case WT_M_GPU_REMAPPED_ROWS:
            gather_remap(v, r);
            break;
        case WT_M_GPU_PCIE_REPLAYS:
            v->have_replays = true, v->replays = r->value, v->t_replays = r->t_ns;
            break;
        case WT_M_GPU_XID_ERRORS:
            gather_xid(v, r);
            break;
        default:
            break;
        }
    }
}

/* ---- the detectors, per GPU ---- */

/* A summary: truncated at the size of struct wt_alert's, on purpose. */
__attribute__((format(printf, 3, 4))) static void say(char *s, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, n, fmt, ap);
    va_end(ap);
}

struct emit {
    wt_finding_fn fn;
    void *ctx;
};

static void report(const struct emit *em, enum wt_detector det, const char *labels,
                   enum wt_cond cond, enum wt_severity sev, int64_t for_ns, double value,
                   const char *summary, int gpu)
{
    struct wt_finding f = {.det = det,
                           .labels = labels,
                           .cond = cond,
                           .severity = sev,
                           .for_ns = for_ns,
                           .value = value,
                           .summary = cond == WT_COND_FALSE ? NULL : summary,
                           .gpu = gpu};
    em->fn(em->ctx, &f);
}

static void fmt_duration(int64_t ns, char *buf, size_t n)
{
    int64_t s = ns / WT_NS_PER_S;
    if (s >= 3600)
        snprintf(buf, n, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else if (s >= 60)
        snprintf(buf, n, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else
        snprintf(buf, n, "%.1fs", (double)ns / WT_NS_PER_S);
}

/* ---- the throttle forecast ---- */

/* A window shorter than the longest forecasts at most this many of its own spans ahead: a line
 * through 10 s of a warm-up says little about where it is 60 s on, but a sudden rise is seen
 * first there. The longest window forecasts the whole lead. */
#define FORECAST_SPANS 2.5
/* A window shorter than the longest warns only when even its slope's lower bound heats this
 * fast (°C/s): those windows are there for a sudden rise. A slow climb read in ten readings of
 * noise (a GPU steady a few degrees under the slowdown) is left to the longer windows. */
#define FORECAST_MIN_RISE 0.25
/* The sums' origin moves this often (and the sums are recomputed from the ring then), so that
 * x stays small next to the windows' spans and what adding and subtracting lost is reset. */
#define FORECAST_REBASE_NS (3600 * WT_NS_PER_S)

static double sample_x(const struct gpu *g, uint64_t k)
{
    return (double)(g->rt[k % RING] - g->rorigin) / WT_NS_PER_S;
}

static void fw_put(struct fwin *w, double x, double y, double sign)
{
    w->sx += sign * x;
    w->sy += sign * y;
    w->sxx += sign * x * x;
    w->sxy += sign * x * y;
    w->syy += sign * y * y;
}

static void fw_rebuild(struct gpu *g)
{
    for (int j = 0; j < g->nfw; j++) {
        struct fwin *w = &g->fw[j];
        uint64_t tail = w->tail;
        memset(w, 0, sizeof *w);
        w->tail = tail;
        for (uint64_t k = tail; k < g->rcount; k++)
            fw_put(w, sample_x(g, k), g->rv[k % RING], 1);
    }
}

/* Takes the new sample (if any) into the ring and every window, and drops what fell out. */
static void forecast_take(struct gpu *g, const struct wt_alerts_config *cfg,
                          const struct wt_alert_input *in)
{
    const struct now *v = &g->v;
    int nw = cfg->throttle_forecast.nwindows;
    if (nw != g->nfw ||
        memcmp(g->fw_ns, cfg->throttle_forecast.windows_ns, (size_t)nw * sizeof g->fw_ns[0])) {
        /* New windows (a reload): every one starts from the samples kept. */
        g->nfw = nw;
        memcpy(g->fw_ns, cfg->throttle_forecast.windows_ns, (size_t)nw * sizeof g->fw_ns[0]);
        for (int j = 0; j < nw; j++)
            g->fw[j].tail = g->rhead;
        fw_rebuild(g);
    }
    if (v->have_temp && v->t_temp > g->last_temp_t) {
        if (g->rcount - g->rhead == RING) {
            for (int j = 0; j < nw; j++)
                if (g->fw[j].tail == g->rhead) {
                    fw_put(&g->fw[j], sample_x(g, g->rhead), g->rv[g->rhead % RING], -1);
                    g->fw[j].tail++;
                }
            g->rhead++;
        }
        if (g->rcount == g->rhead) {
            /* Nothing kept (a long gap): the sums start again from exact zeros. */
            g->rorigin = v->t_temp;
            for (int j = 0; j < nw; j++)
                g->fw[j] = (struct fwin){.tail = g->rcount};
        }
        g->rt[g->rcount % RING] = v->t_temp;
        g->rv[g->rcount % RING] = v->temp;
        g->rcount++;
        double x = sample_x(g, g->rcount - 1);
        for (int j = 0; j < nw; j++)
            fw_put(&g->fw[j], x, v->temp, 1);
        g->last_temp_t = v->t_temp;
    }
    for (int j = 0; j < nw; j++) {
        struct fwin *w = &g->fw[j];
        while (w->tail < g->rcount && g->rt[w->tail % RING] < in->now_ns - g->fw_ns[j]) {
            fw_put(w, sample_x(g, w->tail), g->rv[w->tail % RING], -1);
            w->tail++;
        }
    }
    /* The longest window starts first: nothing older is needed. */
    if (nw)
        g->rhead = g->fw[nw - 1].tail;
    if (g->rcount > g->rhead && g->rt[(g->rcount - 1) % RING] - g->rorigin > FORECAST_REBASE_NS) {
        g->rorigin = g->rt[g->rhead % RING];
        fw_rebuild(g);
    }
}

/* What one window says. */
struct fverdict {
    double slope, span_s, left, horizon;
};

/* Where the window's samples are heading, by the thirds (wt_detect_plateau); NAN when it does
 * not level off. O(window), so only asked when the window would warn. */
static double window_level(struct wt_detect *d, const struct gpu *g, const struct fwin *w)
{
    size_t n = 0;
    for (uint64_t k = w->tail; k < g->rcount; k++, n++) {
        d->xs[n] = sample_x(g, k);
        d->ys[n] = g->rv[k % RING];
    }
    double level;
    return wt_detect_plateau(d->xs, d->ys, n, &level) == 0 ? level : NAN;
}

/*
 * The windows from the shortest: each fits a line (from its running sums) and bounds the slope
 * by its standard error from the residuals at the configured confidence. A window decides when
 * it is confident either way: the slope's lower bound reaches the slowdown within its horizon
 * (warn), or it levels off under the threshold, or even the slope's upper bound stays clear of
 * it (quiet). A window that cannot tell (too noisy, or a rise just begun in it) leaves it to the
 * next, longer one; when none can, the last ready one's bound is held in the band (no change).
 * Returns whether any window was ready.
 */
static bool forecast_judge(struct wt_detect *d, struct gpu *g, const struct wt_alerts_config *cfg,
                           const struct wt_alert_input *in, bool new_sample, struct fverdict *out)
{
    const struct now *v = &g->v;
    double lead = (double)cfg->throttle_forecast.lead_ns / WT_NS_PER_S;
    bool ready = false, warned = false;
    for (int j = 0; j < g->nfw; j++) {
        const struct fwin *w = &g->fw[j];
        uint64_t n = g->rcount - w->tail;
        if (n < 5)
            continue;
        int64_t first = g->rt[w->tail % RING], last = g->rt[(g->rcount - 1) % RING];
        /* A shorter window speaks once it is (nearly) full: a half-full one right after a
         * start is a few readings of noise. The longest starts at half its span. */
        if (last - first < (j == g->nfw - 1 ? g->fw_ns[j] / 2 : g->fw_ns[j] * 9 / 10))
            continue;
        double nn = (double)n, mx = w->sx / nn, my = w->sy / nn;
        double sxx = w->sxx - w->sx * mx, sxy = w->sxy - w->sx * my, syy = w->syy - w->sy * my;
        if (!(sxx > 0))
            continue;
        double b = sxy / sxx, rss = syy - b * sxy;
        double s2 = (rss > 0 ? rss : 0) / (nn - 2);
        /* Whole-degree readings make a short window's residuals small by chance now and then
         * (ten readings of 84 and 85 that happen to climb): the sensor's usual scatter is the
         * floor. */
        if (j == 0 && new_sample)
            g->noise_s2 += (s2 - g->noise_s2) / (g->noise_n < 300 ? ++g->noise_n : 300);
        double se = sqrt((s2 > g->noise_s2 ? s2 : g->noise_s2) / sxx);
        double tq = wt_detect_t_quantile(cfg->throttle_forecast.confidence, nn - 2);
        /* Where the line is at the latest sample (not the sample itself: one reading a degree
         * up in the noise, near the threshold, would be a warning). */
        double t_now = my + b * (sample_x(g, g->rcount - 1) - mx);
        double stale = (double)(in->now_ns - last) / WT_NS_PER_S;
        double h = (double)g->fw_ns[j] / WT_NS_PER_S * FORECAST_SPANS;
        if (j == g->nfw - 1 || h > lead)
            h = lead;
        /* The latest the slowdown can come (the slope's lower bound), and the earliest. */
        double late = wt_detect_time_to(t_now, b - tq * se, v->slow);
        double soon = wt_detect_time_to(t_now, b + tq * se, v->slow);
        if (isfinite(late) && late > 0)
            late = late - stale > 0 ? late - stale : 0;
        if (warned) {
            /* The window that warned is checked by the next longer one: when that one is
             * confidently quiet (a steady GPU whose last ten readings happen to climb), it is
             * noise. A rise just begun leaves the longer one unsure, not quiet. */
            if (soon - stale > 1.5 * h)
                *out = (struct fverdict){b, (double)(last - first) / WT_NS_PER_S, INFINITY, h};
            return true;
        }
        *out = (struct fverdict){b, (double)(last - first) / WT_NS_PER_S, late, h};
        ready = true;
        if (late > 0 && late < 1.5 * h) {
            /* A GPU warming up after a job starts rises fast, then levels off: a straight line
             * through the rise would forecast a throttle that never comes (on every job
             * start). When the rise is clearly slowing towards a level under the threshold,
             * this window is sure there is none. */
            double level = window_level(d, g, w);
            if (level < v->slow - 0.5) {
                out->left = INFINITY;
                return true;
            }
        }
        /* Confident: it warns, or even the steepest slope it allows stays clear, or it knows
         * its slope to within half: then a longer window, which averages over older and other
         * behaviour, has nothing to add. */
        if (late < h && j < g->nfw - 1) {
            if (b - tq * se >= FORECAST_MIN_RISE)
                warned = true;
            continue;
        }
        if (late < h || soon - stale > 1.5 * h || tq * se <= 0.5 * fabs(b))
            return true;
    }
    return ready;
}

static void forecast(struct wt_detect *d, struct gpu *g, const struct wt_alerts_config *cfg,
                     const struct wt_alert_input *in, const struct emit *em)
{
    const struct now *v = &g->v;
    struct fverdict f;
    bool new_sample = v->have_temp && v->t_temp > g->last_temp_t;
    forecast_take(g, cfg, in);
    if (!v->have_temp || !v->have_slow || !forecast_judge(d, g, cfg, in, new_sample, &f))
        return;
    double left = f.left;
    enum wt_cond c = left < f.horizon         ? WT_COND_TRUE
                     : left > 1.5 * f.horizon ? WT_COND_FALSE
                                              : WT_COND_HOLD;
    char s[256];
    if (c != WT_COND_FALSE) {
        if (left <= 0)
            say(s, sizeof s,
                "GPU %d (%s) is at its slowdown temperature %.0f °C (%.0f °C, rising "
                "%.2f °C/s over the last %.0f s)",
                g->index, g->model, v->slow, v->temp, f.slope, f.span_s);
        else
            say(s, sizeof s,
                "GPU %d (%s) reaches its slowdown temperature %.0f °C in %.0f s: %.0f °C "
                "now, rising %.2f °C/s over the last %.0f s",
                g->index, g->model, v->slow, left, v->temp, f.slope, f.span_s);
    }
    report(em, WT_DET_THROTTLE_FORECAST, g->labels, c, WT_SEV_WARNING, 0,
           isfinite(left) ? left : -1, s, g->index);
}

static const struct {
    const char *reason;
    enum wt_severity sev;
    const char *what;
} throttle_reasons[] = {
    {"sw_thermal_slowdown", WT_SEV_WARNING, "the driver lowers clocks to hold the temperature"},
    {"hw_thermal_slowdown", WT_SEV_CRITICAL, "the hardware halves clocks: it is too hot"},
    {"hw_slowdown", WT_SEV_CRITICAL, "the hardware slows down (thermal or power brake)"},
    {"hw_power_brake_slowdown", WT_SEV_CRITICAL,
     "the power brake is asserted (external power supply limit)"},
};

static void throttling(struct gpu *g, const struct wt_alerts_config *cfg, const struct wt_batch *b,
                       const struct emit *em)
{
    const struct now *v = &g->v;
    for (int i = 0; i < v->nreason; i++) {
        const struct wt_reading *r = &b->r[v->reason[i]];
        size_t n;
        const char *rv = wt_detect_label(r->labels, "reason", &n);
        for (size_t k = 0; rv && k < sizeof throttle_reasons / sizeof throttle_reasons[0]; k++) {
            if (strlen(throttle_reasons[k].reason) != n ||
                memcmp(rv, throttle_reasons[k].reason, n) != 0)
                continue;
            const char *reason = throttle_reasons[k].reason;
            char s[256];
            enum wt_cond c = r->value >= 0.5 ? WT_COND_TRUE : WT_COND_FALSE;
            if (c == WT_COND_TRUE) {
                char temp[48] = "";
                if (v->have_temp)
                    snprintf(temp, sizeof temp, " at %.0f °C", v->temp);
                say(s, sizeof s, "GPU %d (%s) throttled by %s%s: %s", g->index, g->model, reason,
                    temp, throttle_reasons[k].what);
            }
            report(em, WT_DET_THROTTLING, r->labels, c, throttle_reasons[k].sev,
                   cfg->throttling.for_ns, r->value, s, g->index);
        }
    }
}

/*
 * Idle burn: utilization under util_below while power is over power_share of the limit. An idle
 * GPU's power swings (clocks ramp, fans, memory refresh), so the condition is held with
 * hysteresis: once on, utilization at twice util_below (work started) clears it at once, but
 * power under 90% of the share must last IDLE_DWELL_NS (or `for`, when shorter) before it
 * clears; after a clear it comes back no sooner than that. A GPU hovering at the threshold thus
 * changes state (and logs pending or cleared) at most once per dwell, not every tick.
 */
#define IDLE_DWELL_NS (60 * WT_NS_PER_S)

static void idle_burn(struct gpu *g, const struct wt_alerts_config *cfg,
                      const struct wt_alert_input *in, int64_t interval, const struct emit *em)
{
    const struct now *v = &g->v;
    double limit = v->have_limit ? v->limit : v->have_max ? v->max : 0;
    if (!v->have_util || !v->have_power || limit <= 0)
        return;
    double below = cfg->idle_burn.util_below, share = cfg->idle_burn.power_share;
    int64_t dwell = cfg->idle_burn.for_ns > 0 && cfg->idle_burn.for_ns < IDLE_DWELL_NS
                        ? cfg->idle_burn.for_ns
                        : IDLE_DWELL_NS;
    int64_t t = v->t_power;
    bool idle_high = v->util < below && v->power > share * limit;
    enum wt_cond c = WT_COND_FALSE;
    if (g->idle_on) {
        c = idle_high ? WT_COND_TRUE : WT_COND_HOLD;
        if (v->util >= 2 * below) {
            c = WT_COND_FALSE;
        } else if (v->power < 0.9 * share * limit) {
            if (!g->idle_low_since)
                g->idle_low_since = t;
            if (t - g->idle_low_since >= dwell)
                c = WT_COND_FALSE;
        } else {
            g->idle_low_since = 0;
        }
        if (c == WT_COND_FALSE) {
            g->idle_on = false;
            g->idle_low_since = 0;
            g->idle_off_at = t;
        }
    } else if (idle_high && (!g->idle_off_at || t - g->idle_off_at >= dwell)) {
        c = WT_COND_TRUE;
        g->idle_on = true;
        g->idle_since = t;
        g->idle_j = 0;
        g->idle_low_since = 0;
    }
    bool fresh = v->t_power > g->last_power_t;
    if (g->idle_on && fresh && g->last_power_t && v->t_power > g->idle_since) {
        /* The energy drawn while idle: trapezoids over the power samples, never across a gap
         * of more than 3 intervals. */
        int64_t dt =
            v->t_power - (g->last_power_t > g->idle_since ? g->last_power_t : g->idle_since);
        if (dt <= 3 * interval)
            g->idle_j += (g->last_power + v->power) / 2 * (double)dt / WT_NS_PER_S;
    }
    char s[256], dur[32];
    if (c != WT_COND_FALSE) {
        fmt_duration(in->now_ns - g->idle_since, dur, sizeof dur);
        say(s, sizeof s,
            "GPU %d (%s) idle (%.0f%% utilization) while drawing %.0f W (%.0f%% of its "
            "%.0f W limit) for %s: %.3f kWh so far",
            g->index, g->model, 100 * v->util, v->power, 100 * v->power / limit, limit, dur,
            g->idle_j / 3.6e6);
    }
    report(em, WT_DET_IDLE_BURN, g->labels, c, WT_SEV_WARNING, cfg->idle_burn.for_ns, v->power, s,
           g->index);
}

enum { BAD_POWER, BAD_ENERGY, BAD_TEMP, BAD_UTIL };

static void impossible(struct gpu *g, const struct wt_alerts_config *cfg,
                       const struct wt_alert_input *in, const struct emit *em)
{
    static const char *const kind[] = {"power", "energy", "temperature", "utilization"};
    const struct now *v = &g->v;
    double max = v->have_max ? v->max : v->have_limit ? v->limit : 0;
    bool bad[4] = {false};
    double val[4] = {0};
    if (v->have_power && max > 0 && v->power > max * (1 + cfg->impossible.power_margin))
        bad[BAD_POWER] = true, val[BAD_POWER] = v->power;
    if (v->have_energy && v->t_energy > g->last_energy_t) {
        if (v->energy < 0) {
            bad[BAD_ENERGY] = true, val[BAD_ENERGY] = v->energy;
            g->energy_back_j = v->energy;
        } else if (g->have_last_energy && v->energy < g->last_energy - 1e-3) {
            bad[BAD_ENERGY] = true, val[BAD_ENERGY] = v->energy;
            g->energy_back_j = g->last_energy - v->energy;
        }
        g->last_energy = v->energy;
        g->have_last_energy = true;
        g->last_energy_t = v->t_energy;
    }
    if (v->have_temp &&
        (v->temp < cfg->impossible.temp_min_c || v->temp > cfg->impossible.temp_max_c))
        bad[BAD_TEMP] = true, val[BAD_TEMP] = v->temp;
    if (v->have_util && (v->util < 0 || v->util > 1))
        bad[BAD_UTIL] = true, val[BAD_UTIL] = v->util;
    for (int k = 0; k < 4; k++) {
        if (bad[k]) {
            g->bad_at[k] = in->now_ns;
            g->bad_val[k] = val[k];
        }
        if (!g->bad_at[k])
            continue;
        enum wt_cond c = bad[k]                                                     ? WT_COND_TRUE
                         : in->now_ns - g->bad_at[k] < WT_DETECT_IMPOSSIBLE_HOLD_NS ? WT_COND_HOLD
                                                                                    : WT_COND_FALSE;
        char labels[WT_LABELS_LEN], s[256];
        memcpy(labels, g->labels, sizeof labels);
        if (wt_labels_add(labels, sizeof labels, "reading", kind[k]) != 0)
            continue;
        if (c != WT_COND_FALSE) {
            switch (k) {
            case BAD_POWER:
                say(s, sizeof s,
                    "GPU %d (%s) reports %.0f W, over its max power limit %.0f W + %.0f%%: "
                    "the power sensor cannot be trusted",
                    g->index, g->model, g->bad_val[k], max, 100 * cfg->impossible.power_margin);
                break;
            case BAD_ENERGY:
                if (g->bad_val[k] < 0)
                    say(s, sizeof s,
                        "GPU %d (%s) energy counter is negative (%.3f J): energy figures over "
                        "this time are wrong",
                        g->index, g->model, g->bad_val[k]);
                else
                    say(s, sizeof s,
                        "GPU %d (%s) energy counter went backwards by %.3f J: energy figures "
                        "over this time are wrong",
                        g->index, g->model, g->energy_back_j);
                break;
            case BAD_TEMP:
                say(s, sizeof s,
                    "GPU %d (%s) reports %.0f °C, outside the physical range %.0f..%.0f °C",
                    g->index, g->model, g->bad_val[k], cfg->impossible.temp_min_c,
                    cfg->impossible.temp_max_c);
                break;
            default:
                say(s, sizeof s, "GPU %d (%s) reports a utilization of %.2f, outside 0..1",
                    g->index, g->model, g->bad_val[k]);
            }
        } else {
            g->bad_at[k] = 0;
        }
        report(em, WT_DET_IMPOSSIBLE, labels, c, WT_SEV_WARNING, 0, g->bad_val[k], s, g->index);
    }
}

static void stuck(struct gpu *g, const struct wt_alerts_config *cfg, const struct emit *em)
{
    const struct now *v = &g->v;
    if (!v->have_power)
        return;
    if (v->t_power > g->last_power_t) {
        if (g->last_power_t && v->power == g->last_power) {
            g->same++;
        } else {
            g->same = 0;
            g->util_min = INFINITY;
            g->util_max = -INFINITY;
        }
        if (v->have_util) {
            if (v->util < g->util_min)
                g->util_min = v->util;
            if (v->util > g->util_max)
                g->util_max = v->util;
        }
    }
    if (!v->have_util)
        return;
    /* same counts repeats: N equal readings are N - 1 repeats */
    bool moved = g->util_max - g->util_min >= 0.02;
    enum wt_cond c = g->same == 0                               ? WT_COND_FALSE
                     : g->same + 1 >= cfg->stuck.ticks && moved ? WT_COND_TRUE
                                                                : WT_COND_HOLD;
    char s[256];
    if (c != WT_COND_FALSE)
        say(s, sizeof s,
            "GPU %d (%s) power reads %.3f W for %d samples in a row while utilization "
            "moved between %.0f%% and %.0f%%: the power sensor looks stuck",
            g->index, g->model, v->power, g->same + 1, 100 * g->util_min, 100 * g->util_max);
    report(em, WT_DET_STUCK, g->labels, c, WT_SEV_WARNING, 0, v->power, s, g->index);
}

static void sibling(struct wt_detect *d, const struct wt_alerts_config *cfg, const struct emit *em)
{
    bool done[MAX_GPUS] = {false};
    double temps[MAX_GPUS], powers[MAX_GPUS];
    for (int i = 0; i < d->ng; i++) {
        struct gpu *a = d->g[i];
        if (done[i] || !a->v.have_temp || !a->v.have_power)
            continue;
        int members[MAX_GPUS], n = 0;
        for (int j = i; j < d->ng; j++) {
            struct gpu *b = d->g[j];
            if (!done[j] && b->v.have_temp && b->v.have_power && strcmp(a->model, b->model) == 0) {
                done[j] = true;
                members[n++] = j;
            }
        }
        if (n < 3)
            continue;
        for (int k = 0; k < n; k++) {
            temps[k] = d->g[members[k]]->v.temp;
            powers[k] = d->g[members[k]]->v.power;
        }
        double mt = wt_detect_median(temps, (size_t)n), mp = wt_detect_median(powers, (size_t)n);
        for (int k = 0; k < n; k++) {
            struct gpu *g = d->g[members[k]];
            double hot = g->v.temp - mt;
            bool similar = fabs(g->v.power - mp) <= cfg->sibling.power_band * mp;
            enum wt_cond c = hot < 0.7 * cfg->sibling.delta_c         ? WT_COND_FALSE
                             : hot >= cfg->sibling.delta_c && similar ? WT_COND_TRUE
                                                                      : WT_COND_HOLD;
            char s[256];
            if (c != WT_COND_FALSE)
                say(s, sizeof s,
                    "GPU %d (%s) runs %.0f °C hotter than the median %.0f °C of its %d "
                    "siblings at similar power (%.0f W, median %.0f W): check its cooling",
                    g->index, g->model, hot, mt, n, g->v.power, mp);
            report(em, WT_DET_SIBLING, g->labels, c, WT_SEV_WARNING, cfg->sibling.for_ns, hot, s,
                   g->index);
        }
    }
}

/* ---- GPU health ---- */

enum wt_severity wt_detect_xid_severity(unsigned int xid)
{
    /* From NVIDIA's XID catalog: what a restart of the application resolves, or the hardware
     * already contained or recorded, is a warning; the rest needs the GPU looked at. */
    static const unsigned int warning[] = {8, 13, 31, 32, 43, 45, 63, 68, 69, 92, 94};
    for (size_t i = 0; i < sizeof warning / sizeof warning[0]; i++)
        if (warning[i] == xid)
            return WT_SEV_WARNING;
    return WT_SEV_CRITICAL;
}

static void xid_alerts(struct gpu *g, const struct wt_alerts_config *cfg,
                       const struct wt_alert_input *in, const struct emit *em)
{
    const struct now *v = &g->v;
    for (int i = 0; i < v->nxid; i++) {
        unsigned int code = v->xid[i].code;
        struct xid_seen *x = NULL;
        for (int k = 0; k < g->nxid && !x; k++)
            if (g->xid[k].code == code)
                x = &g->xid[k];
        if (!x) {
            if (g->nxid == MAX_XIDS)
                continue;
            /* A series appears with its first event: it starts from none. */
            x = &g->xid[g->nxid++];
            *x = (struct xid_seen){.code = code};
        }
        bool rose = v->xid[i].n > x->n;
        if (v->xid[i].n < x->n) /* the collector restarted: its count too */
            rose = v->xid[i].n > 0;
        if (rose)
            x->last_rise = in->now_ns;
        double added = rose ? (v->xid[i].n > x->n ? v->xid[i].n - x->n : v->xid[i].n) : 0;
        x->n = v->xid[i].n;
        enum wt_cond c = rose ? WT_COND_TRUE
                         : x->last_rise && in->now_ns - x->last_rise < cfg->xid.hold_ns
                             ? WT_COND_HOLD
                             : WT_COND_FALSE;
        char labels[WT_LABELS_LEN], s[256], code_s[16], ago[32];
        if (code)
            snprintf(code_s, sizeof code_s, "%u", code);
        else
            snprintf(code_s, sizeof code_s, "other");
        memcpy(labels, g->labels, sizeof labels);
        if (wt_labels_add(labels, sizeof labels, "xid", code_s) != 0)
            continue;
        if (c != WT_COND_FALSE) {
            const char *m = code ? wt_nvml_xid_meaning(code) : NULL;
            fmt_duration(in->now_ns - x->last_rise, ago, sizeof ago);
            if (rose)
                say(s, sizeof s,
                    "GPU %d (%s) reported XID %s: %s (%.0f new, %.0f since wattage started)",
                    g->index, g->model, code_s,
                    m      ? m
                    : code ? "see NVIDIA's XID catalog"
                           : "one of several codes",
                    added, x->n);
            else
                say(s, sizeof s,
                    "GPU %d (%s) reported XID %s: %s (%.0f since wattage started, the last %s ago)",
                    g->index, g->model, code_s,
                    m      ? m
                    : code ? "see NVIDIA's XID catalog"
                           : "one of several codes",
                    x->n, ago);
        }
        report(em, WT_DET_XID, labels, c, wt_detect_xid_severity(code), 0, x->n, s, g->index);
    }
}

static void ecc_alert(struct gpu *g, const struct wt_alert_input *in, const struct emit *em)
{
    const struct now *v = &g->v;
    if (!v->have_unc_vol && !v->have_unc_agg)
        return;
    if (v->have_unc_agg) {
        if (!g->have_first_agg || v->unc_agg < g->last_agg) {
            /* The first look (or a board swapped at this index): what it carried is history. */
            g->have_first_agg = true;
            g->first_agg = v->unc_agg;
        } else if (v->unc_agg > g->last_agg) {
            g->agg_rise_at = in->now_ns;
        }
        g->last_agg = v->unc_agg;
    }
    bool vol = v->have_unc_vol && v->unc_vol > 0;
    bool agg = g->agg_rise_at && in->now_ns - g->agg_rise_at < WT_DETECT_ECC_HOLD_NS;
    enum wt_cond c = vol || agg ? WT_COND_TRUE : WT_COND_FALSE;
    char s[256];
    if (c != WT_COND_FALSE) {
        if (vol)
            say(s, sizeof s,
                "GPU %d (%s) has %.0f uncorrectable ECC errors since the driver loaded: data on "
                "it may be corrupt; drain it, reset it, replace it if they come back",
                g->index, g->model, v->unc_vol);
        else
            say(s, sizeof s,
                "GPU %d (%s) uncorrectable ECC errors rose to %.0f over its life (%.0f since "
                "wattage started): drain it, reset it, replace it if they come back",
                g->index, g->model, v->unc_agg, v->unc_agg - g->first_agg);
    }
    report(em, WT_DET_ECC_UNCORRECTABLE, g->labels, c, WT_SEV_CRITICAL, 0,
           vol ? v->unc_vol : v->unc_agg, s, g->index);
}

static void remap_alert(struct gpu *g, const struct emit *em)
{
    const struct now *v = &g->v;
    if (!v->have_pending && !v->have_failure)
        return;
    bool failed = v->have_failure && v->failure > 0;
    bool pending = v->have_pending && v->pending > 0;
    enum wt_cond c = failed || pending ? WT_COND_TRUE : WT_COND_FALSE;
    char s[256];
    if (failed)
        say(s, sizeof s,
            "GPU %d (%s) row remapping failed: its memory cannot be repaired; replace the board",
            g->index, g->model);
    else if (pending)
        say(s, sizeof s,
            "GPU %d (%s) has a memory row remap pending (%.0f rows remapped for uncorrectable "
            "errors): reset the GPU to apply it",
            g->index, g->model, v->unc_rows);
    report(em, WT_DET_ROW_REMAP, g->labels, c, failed ? WT_SEV_CRITICAL : WT_SEV_WARNING, 0,
           failed    ? 1
           : pending ? 1
                     : 0,
           s, g->index);
}

/*
 * PCIe replays over the window: checkpoints of the counter every window / 32; the rise is now
 * minus the newest checkpoint at least a window old (or the oldest kept, while the window fills).
 */
static void replay_alert(struct gpu *g, const struct wt_alerts_config *cfg, const struct emit *em)
{
    const struct now *v = &g->v;
    if (!v->have_replays)
        return;
    int64_t w = cfg->pcie_replays.window_ns, t = v->t_replays;
    if (g->rp_n && v->replays < g->rp_last)
        g->rp_n = 0; /* the counter restarted (driver reload): a new baseline */
    g->rp_last = v->replays;
    int newest = (g->rp_head + g->rp_n - 1) % REPLAY_CKPT;
    if (!g->rp_n || t - g->rp[newest].t >= w / 32) {
        if (g->rp_n == REPLAY_CKPT) {
            g->rp_head = (g->rp_head + 1) % REPLAY_CKPT;
            g->rp_n--;
        }
        int at = (g->rp_head + g->rp_n) % REPLAY_CKPT;
        g->rp[at].t = t;
        g->rp[at].v = v->replays;
        g->rp_n++;
    }
    double base = g->rp[g->rp_head].v;
    for (int k = 0; k < g->rp_n; k++) {
        int at = (g->rp_head + k) % REPLAY_CKPT;
        if (g->rp[at].t <= t - w)
            base = g->rp[at].v;
    }
    double rise = v->replays - base;
    enum wt_cond c = rise >= cfg->pcie_replays.threshold ? WT_COND_TRUE
                     : rise <= 0                         ? WT_COND_FALSE
                                                         : WT_COND_HOLD;
    char s[256], win[32];
    if (c != WT_COND_FALSE) {
        fmt_duration(w, win, sizeof win);
        say(s, sizeof s,
            "GPU %d (%s) PCIe replays rose by %.0f in the last %s (%.0f in all): the link is "
            "retransmitting; check the riser, slot and cabling",
            g->index, g->model, rise, win, v->replays);
    }
    report(em, WT_DET_PCIE_REPLAYS, g->labels, c, WT_SEV_WARNING, 0, rise, s, g->index);
}

/* ---- data gaps ---- */

static struct col *find_col(struct wt_detect *d, const char *name, int64_t mono)
{
    for (int i = 0; i < d->nc; i++)
        if (strcmp(d->c[i].name, name) == 0)
            return &d->c[i];
    if (d->nc == MAX_COLS)
        return NULL;
    struct col *c = &d->c[d->nc++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->first_mono = mono;
    return c;
}

static void data_gaps(struct wt_detect *d, const struct wt_alerts_config *cfg,
                      const struct wt_alert_input *in, int64_t default_interval,
                      const struct emit *em)
{
    int64_t gpu_interval = default_interval;
    bool nvml_present = in->cols == NULL;
    for (size_t i = 0; i < in->ncols; i++) {
        const struct wt_hub_collector *hc = &in->cols[i];
        struct col *c = find_col(d, hc->name, in->now_mono);
        if (!c)
            continue;
        if (hc->interval_ns > 0 && (!c->base_ns || hc->interval_ns < c->base_ns))
            c->base_ns = hc->interval_ns;
        int64_t interval = c->base_ns ? c->base_ns : default_interval;
        if (strcmp(hc->name, "nvml") == 0 || strncmp(hc->name, "nvml:", 5) == 0) {
            nvml_present |= hc->present;
            gpu_interval = interval;
        }
        char labels[WT_LABELS_LEN], s[256];
        if (wt_labels(labels, sizeof labels, "collector", hc->name, NULL) != 0)
            continue;
        enum wt_cond cond = WT_COND_FALSE;
        int64_t since = hc->last_ok_mono ? hc->last_ok_mono : c->first_mono;
        int64_t silent = in->now_mono - since;
        if (hc->present && cfg->data_gap.enabled && silent > cfg->data_gap.intervals * interval)
            cond = WT_COND_TRUE;
        if (cond != WT_COND_FALSE)
            say(s, sizeof s,
                "collector %s has not delivered readings for %.1f s (interval %.3g s, %" PRIu64
                " failed polls)",
                hc->name, (double)silent / WT_NS_PER_S, (double)interval / WT_NS_PER_S, hc->errors);
        report(em, WT_DET_DATA_GAP, labels, cond, WT_SEV_WARNING, 0, (double)silent / WT_NS_PER_S,
               s, -1);
    }
    for (int i = 0; i < d->ng; i++) {
        struct gpu *g = d->g[i];
        const struct now *v = &g->v;
        if (v->have_power || v->have_temp || v->have_util) {
            int64_t t = v->t_power > v->t_temp ? v->t_power : v->t_temp;
            if (v->t_util > t)
                t = v->t_util;
            if (!(v->have_up && v->up < 0.5) && t > g->last_ok_t)
                g->last_ok_t = t;
        }
        int64_t since = g->last_ok_t ? g->last_ok_t : g->first_t;
        if (!since)
            continue;
        int64_t silent = in->now_ns - since;
        enum wt_cond cond = nvml_present && silent > cfg->data_gap.intervals * gpu_interval
                                ? WT_COND_TRUE
                                : WT_COND_FALSE;
        char s[256];
        if (cond != WT_COND_FALSE)
            say(s, sizeof s, "GPU %d (%s, %s) silent for %.1f s (interval %.3g s)%s", g->index,
                g->model, g->uuid, (double)silent / WT_NS_PER_S, (double)gpu_interval / WT_NS_PER_S,
                v->have_up && v->up < 0.5 ? ": the GPU is down (lost or not answering)"
                : v->seen                 ? ""
                                          : ": its series are gone");
        report(em, WT_DET_DATA_GAP, g->labels, cond, WT_SEV_CRITICAL, 0,
               (double)silent / WT_NS_PER_S, s, g->index);
    }
}

/* ---- delivery ---- */

/*
 * A channel fails from its first failed attempt after a success until the next success; the
 * engine's `for` makes that an alert after delivery_failing.for. The alert goes to every channel,
 * the failing one included (it gets it, in order, once it recovers); the log, wattage_alerts and
 * GET /api/v1/alerts show it meanwhile.
 */
static void delivery_failing(const struct wt_alerts_config *cfg, const struct wt_alert_input *in,
                             const struct emit *em)
{
    for (size_t i = 0; i < in->ndelivery; i++) {
        const struct wt_notify_health *h = &in->delivery[i];
        char labels[WT_LABELS_LEN], s[256], age[32];
        if (wt_labels(labels, sizeof labels, "channel", h->channel, NULL) != 0)
            continue;
        int64_t failing = h->failing_since_mono ? in->now_mono - h->failing_since_mono : 0;
        enum wt_cond cond = h->failing_since_mono ? WT_COND_TRUE : WT_COND_FALSE;
        fmt_duration(failing, age, sizeof age);
        if (cond != WT_COND_FALSE)
            say(s, sizeof s,
                "alert delivery to %s failing for %s: %s (%zu waiting, %" PRIu64 " dropped)",
                h->channel, age, h->error, h->queued, h->dropped);
        report(em, WT_DET_DELIVERY_FAILING, labels, cond, WT_SEV_CRITICAL,
               cfg->delivery_failing.for_ns, (double)failing / WT_NS_PER_S, s, -1);
    }
}

/* ---- facility air: inlet envelopes, rack Delta-T, aisle imbalance ---- */

static void inlet_envelope(const struct wt_alerts_config *cfg, const struct wt_batch *snap,
                           const struct emit *em)
{
    for (size_t i = 0; snap && i < snap->len; i++) {
        const struct wt_reading *r = &snap->r[i];
        char env[16], s[256];
        if (r->metric != WT_M_INLET_COMPLIANT ||
            wt_labels_get(r->labels, "envelope", env, sizeof env) != 0)
            continue;
        bool allow = strcmp(env, "allowable") == 0;
        enum wt_cond c = r->value < 0.5 ? WT_COND_TRUE : WT_COND_FALSE;
        if (c == WT_COND_TRUE)
            say(s, sizeof s, "inlet air outside ASHRAE's %s envelope (%s)", env, r->labels);
        report(em, WT_DET_INLET_ENVELOPE, r->labels, c, allow ? WT_SEV_CRITICAL : WT_SEV_WARNING,
               cfg->inlet_envelope.for_ns, r->value, s, -1);
    }
}

#define AIR_RACKS 64
struct air_rack {
    char rack[64], zone[64], labels[WT_LABELS_LEN];
    double sum[2];
    int n[2]; /* inlet, exhaust */
};

/* Which side of a rack a facility temperature measures: 0 inlet, 1 exhaust, -1 neither. */
static int air_side(const char *labels)
{
    char kind[32] = "", point[96] = "";
    (void)wt_labels_get(labels, "kind", kind, sizeof kind);
    (void)wt_labels_get(labels, "point", point, sizeof point);
    if (wt_ashrae_is_inlet(labels))
        return 0;
    if (strcmp(kind, "exhaust") == 0 || strcmp(kind, "outlet") == 0 ||
        strcasestr(point, "exhaust") || strcasestr(point, "outlet"))
        return 1;
    return -1;
}

static size_t air_racks(const struct wt_batch *snap, struct air_rack *out)
{
    size_t n = 0;
    for (size_t i = 0; snap && i < snap->len; i++) {
        const struct wt_reading *r = &snap->r[i];
        char rack[64], zone[64] = "";
        int side;
        if (r->metric != WT_M_FAC_TEMP_C || (side = air_side(r->labels)) < 0 ||
            (wt_labels_get(r->labels, "rack", rack, sizeof rack) != 0 &&
             wt_labels_get(r->labels, "node", rack, sizeof rack) != 0))
            continue;
        (void)wt_labels_get(r->labels, "zone", zone, sizeof zone);
        size_t k = 0;
        while (k < n && strcmp(out[k].rack, rack) != 0)
            k++;
        if (k == n) {
            if (n == AIR_RACKS)
                continue;
            memset(&out[n], 0, sizeof out[n]);
            snprintf(out[n].rack, sizeof out[n].rack, "%s", rack);
            snprintf(out[n].zone, sizeof out[n].zone, "%s", zone);
            if (wt_labels(out[n].labels, sizeof out[n].labels, "rack", rack, NULL) != 0)
                continue;
            n++;
        }
        out[k].sum[side] += r->value;
        out[k].n[side]++;
    }
    return n;
}

static void rack_air(const struct wt_alerts_config *cfg, const struct wt_batch *snap,
                     const struct emit *em)
{
    struct air_rack *rk = malloc(AIR_RACKS * sizeof *rk);
    if (!rk)
        return;
    size_t n = air_racks(snap, rk);
    for (size_t i = 0; i < n && cfg->rack_delta_t.enabled; i++) {
        if (!rk[i].n[0] || !rk[i].n[1])
            continue;
        double dt = rk[i].sum[1] / rk[i].n[1] - rk[i].sum[0] / rk[i].n[0];
        char s[256];
        enum wt_cond c = dt > cfg->rack_delta_t.max_k         ? WT_COND_TRUE
                         : dt > cfg->rack_delta_t.max_k - 2.0 ? WT_COND_HOLD
                                                              : WT_COND_FALSE;
        if (c != WT_COND_FALSE)
            say(s, sizeof s, "rack %s: exhaust %.1f K over inlet (bound %.1f K)", rk[i].rack, dt,
                cfg->rack_delta_t.max_k);
        report(em, WT_DET_RACK_DELTA_T, rk[i].labels, c, WT_SEV_WARNING, cfg->rack_delta_t.for_ns,
               dt, s, -1);
    }
    for (size_t i = 0; i < n && cfg->aisle_imbalance.enabled; i++) {
        if (!rk[i].n[0])
            continue;
        double v[AIR_RACKS];
        size_t m = 0;
        for (size_t k = 0; k < n; k++)
            if (rk[k].n[0] && strcmp(rk[k].zone, rk[i].zone) == 0)
                v[m++] = rk[k].sum[0] / rk[k].n[0];
        if (m < 3)
            continue; /* a median of two is no reference */
        double mine = rk[i].sum[0] / rk[i].n[0], over = mine - wt_detect_median(v, m);
        double k = cfg->aisle_imbalance.delta_k;
        char s[256];
        enum wt_cond c = over >= k ? WT_COND_TRUE : over >= 0.7 * k ? WT_COND_HOLD : WT_COND_FALSE;
        if (c != WT_COND_FALSE)
            say(s, sizeof s, "rack %s: inlet %.1f C, %.1f K over the median rack of its zone",
                rk[i].rack, mine, over);
        report(em, WT_DET_AISLE_IMBALANCE, rk[i].labels, c, WT_SEV_WARNING,
               cfg->aisle_imbalance.for_ns, over, s, -1);
    }
    free(rk);
}

void wt_detect_tick(struct wt_detect *d, const struct wt_alerts_config *cfg,
                    const struct wt_alert_input *in, int64_t default_interval_ns, wt_finding_fn fn,
                    void *ctx)
{
    struct emit em = {fn, ctx};
    gather(d, in->snap);
    int64_t interval = default_interval_ns > 0 ? default_interval_ns : WT_NS_PER_S;
    for (int i = 0; i < d->ng; i++) {
        struct gpu *g = d->g[i];
        if (!g->v.seen)
            continue;
        if (cfg->throttle_forecast.enabled)
            forecast(d, g, cfg, in, &em);
        if (cfg->throttling.enabled)
            throttling(g, cfg, in->snap, &em);
        if (cfg->idle_burn.enabled)
            idle_burn(g, cfg, in, interval, &em);
        if (cfg->impossible.enabled)
            impossible(g, cfg, in, &em);
        if (cfg->stuck.enabled)
            stuck(g, cfg, &em);
        if (cfg->xid.enabled)
            xid_alerts(g, cfg, in, &em);
        if (cfg->ecc_uncorrectable.enabled)
            ecc_alert(g, in, &em);
        if (cfg->row_remap.enabled)
            remap_alert(g, &em);
        if (cfg->pcie_replays.enabled)
            replay_alert(g, cfg, &em);
    }
    if (cfg->sibling.enabled)
        sibling(d, cfg, &em);
    if (cfg->data_gap.enabled)
        data_gaps(d, cfg, in, interval, &em);
    if (cfg->delivery_failing.enabled)
        delivery_failing(cfg, in, &em);
    if (cfg->inlet_envelope.enabled)
        inlet_envelope(cfg, in->snap, &em);
    if (cfg->rack_delta_t.enabled || cfg->aisle_imbalance.enabled)
        rack_air(cfg, in->snap, &em);
    /* What the next tick compares with. */
    for (int i = 0; i < d->ng; i++) {
        struct gpu *g = d->g[i];
        if (g->v.have_power && g->v.t_power > g->last_power_t) {
            g->last_power = g->v.power;
            g->last_power_t = g->v.t_power;
        }
    }
}
