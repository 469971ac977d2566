/* SPDX-License-Identifier: MIT */
/*
 * The report's writers: one self-contained HTML file (inline SVG charts drawn here and inline
 * styles; no script, no external reference, so it opens offline and makes no request),
 * Markdown (the tables and findings) and JSON. Every chart is a <figure data-chart="NAME"
 * data-points="N"> whose N is the number of points it drew; a chart without data says what is
 * missing in its place instead of drawing zeros.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/ashrae.h"
#include "audit/report.h"
#include "core/clock.h"

#define W 900
#define H 300
#define L 70 /* left margin: the value axis */
#define R 20
#define T 20
#define B 40 /* bottom margin: the time axis */

static const char *const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                     "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
#define COLOR(i) colors[(i) % 8]

static void esc(FILE *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", o);
        else if (*s == '>')
            fputs("&gt;", o);
        else if (*s == '&')
            fputs("&amp;", o);
        else if (*s == '"')
            fputs("&quot;", o);
        else
            fputc(*s, o);
    }
}

struct axes {
    double x0, x1, y0, y1;
};

static double px(const struct axes *a, double x)
{
    return L + (x - a->x0) / (a->x1 - a->x0) * (W - L - R);
}

static double py(const struct axes *a, double y)
{
    return H - B - (y - a->y0) / (a->y1 - a->y0) * (H - T - B);
}

/* Axes with 5 ticks each; time axes (x in unix seconds) label hours and minutes UTC. */
static void draw_axes(FILE *o, const struct axes *a, bool time_x, const char *xlabel,
                      const char *ylabel)
{
    fprintf(o, "<line x1='%d' y1='%d' x2='%d' y2='%d' class='ax'/>", L, H - B, W - R, H - B);
    fprintf(o, "<line x1='%d' y1='%d' x2='%d' y2='%d' class='ax'/>", L, T, L, H - B);
    for (int i = 0; i <= 4; i++) {
        double x = a->x0 + (a->x1 - a->x0) * i / 4, y = a->y0 + (a->y1 - a->y0) * i / 4;
        char lab[40];
        if (time_x)
            wt_time_format((int64_t)(x * 1e9), 0, lab, sizeof lab);
        else
            snprintf(lab, sizeof lab, "%.3g", x);
        fprintf(o, "<text x='%.1f' y='%d' class='tx' text-anchor='middle'>%s</text>", px(a, x),
                H - B + 14, time_x ? lab + 5 : lab);
        fprintf(o, "<text x='%d' y='%.1f' class='tx' text-anchor='end'>%.4g</text>", L - 4,
                py(a, y) + 4, y);
    }
    fprintf(o, "<text x='%d' y='%d' class='tl' text-anchor='middle'>%s</text>", (L + W - R) / 2,
            H - 4, xlabel);
    fprintf(o,
            "<text x='14' y='%d' class='tl' text-anchor='middle' transform='rotate(-90 14 %d)'>"
            "%s</text>",
            (T + H - B) / 2, (T + H - B) / 2, ylabel);
}

static void fig_open(FILE *o, const char *name, const char *title)
{
    fprintf(o, "<figure data-chart='%s'><figcaption><b>", name);
    esc(o, title);
    fprintf(o, "</b></figcaption><svg viewBox='0 0 %d %d' width='%d' height='%d'>", W, H, W, H);
}

/* Closes the figure: its reading, the count of points drawn, and (none drawn) why. */
static void fig_close(FILE *o, const char *name, size_t points, const char *reading,
                      const char *why)
{
    fprintf(o, "</svg><p class='reading'>");
    esc(o, points ? reading : why);
    fprintf(o, "</p><span hidden class='points' data-for='%s'>%zu</span></figure>\n", name, points);
}

static void missing_fig(FILE *o, const char *name, const char *title, const char *why)
{
    fprintf(o, "<figure data-chart='%s' data-missing='1'><figcaption><b>", name);
    esc(o, title);
    fprintf(o, "</b></figcaption><p class='missing'>");
    esc(o, why);
    fprintf(o, "</p></figure>\n");
}

/* A time line: a polyline broken where consecutive points are further apart than brk_ns. */
static size_t time_line(FILE *o, const struct axes *a, const struct wt_report_line *l,
                        int64_t brk_ns, const char *color, const char *extra)
{
    if (!l->n)
        return 0;
    fprintf(o, "<path fill='none' stroke='%s' stroke-width='1' %s d='", color, extra);
    for (size_t i = 0; i < l->n; i++) {
        bool mv = i == 0 || l->pts[i].t_ns - l->pts[i - 1].t_ns > brk_ns;
        fprintf(o, "%c%.1f %.1f", mv ? 'M' : 'L', px(a, (double)l->pts[i].t_ns / 1e9),
                py(a, l->pts[i].v));
    }
    fprintf(o, "'/>");
    return l->n;
}

static int64_t brk_of(const struct wt_report_gpu *g)
{
    int64_t b = INT64_MAX;
    for (size_t k = 0; k < g->ngaps; k++)
        if (g->gaps[k].to_ns - g->gaps[k].from_ns < b)
            b = g->gaps[k].to_ns - g->gaps[k].from_ns - 1;
    return b;
}

static void legend(FILE *o, size_t i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void legend(FILE *o, size_t i, const char *fmt, ...)
{
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(o, "<text x='%d' y='%zu' class='lg' fill='%s'>", W - R - 260, T + 12 + 12 * i,
            COLOR(i));
    esc(o, buf);
    fprintf(o, "</text>");
}

static double tx0(const struct wt_report *r)
{
    return (double)r->from_ns / 1e9;
}

static double tx1(const struct wt_report *r)
{
    return (double)r->to_ns / 1e9;
}

static void chart_util_power(FILE *o, const struct wt_report *r)
{
    double pmax = 1, lim = NAN;
    size_t pts = 0;
    for (size_t i = 0; i < r->ngpus; i++) {
        for (size_t c = 0; c < WT_REPORT_COLS; c++)
            if (!isnan(r->gpus[i].power.mean[c]))
                pmax = fmax(pmax, r->gpus[i].power.mean[c]);
        if (!isnan(r->gpus[i].power_limit_w))
            lim = isnan(lim) ? r->gpus[i].power_limit_w : fmin(lim, r->gpus[i].power_limit_w);
    }
    if (!isnan(lim))
        pmax = fmax(pmax, lim);
    struct axes a = {0, 100, 0, pmax * 1.1};
    fig_open(o, "util_power", "GPU utilization vs power, per GPU");
    fprintf(o, "<rect x='%.1f' y='%d' width='%.1f' height='%d' class='idle'/>", px(&a, 0), T,
            px(&a, 100 * WT_REPORT_IDLE_UTIL) - px(&a, 0), H - T - B);
    if (!isnan(lim))
        fprintf(o, "<rect x='%d' y='%.1f' width='%d' height='%.1f' class='capped'/>", L,
                py(&a, a.y1), W - L - R, py(&a, WT_REPORT_CAP_SHARE * lim) - py(&a, a.y1));
    draw_axes(o, &a, false, "GPU utilization (%)", "power (W)");
    double idle = 0;
    for (size_t i = 0; i < r->ngpus; i++) {
        const struct wt_report_gpu *g = &r->gpus[i];
        idle += g->idle_j;
        fprintf(o, "<g fill='%s' fill-opacity='0.5'>", COLOR(i));
        for (size_t c = 0; c < WT_REPORT_COLS; c++) {
            if (isnan(g->power.mean[c]) || isnan(g->util.mean[c]))
                continue;
            fprintf(o, "<circle cx='%.1f' cy='%.1f' r='2'/>", px(&a, 100 * g->util.mean[c]),
                    py(&a, g->power.mean[c]));
            pts++;
        }
        fprintf(o, "</g>");
        if (i < 12)
            legend(o, i, "GPU %s %s", g->gpu, g->node);
    }
    char rd[200];
    snprintf(rd, sizeof rd,
             "Each dot is one pixel column's mean; the grey band left is idle (utilization <= "
             "%.0f%%): %.3f kWh burned there%s.",
             100 * WT_REPORT_IDLE_UTIL, idle / 3.6e6,
             isnan(lim) ? "" : "; the red band on top is power-capped (>= 95% of the limit)");
    fig_close(o, "util_power", pts, rd, "no GPU power and utilization readings in the window");
}

static void shade_jobs(FILE *o, const struct wt_report *r, const struct axes *a)
{
    for (size_t k = 0; k < r->njobs; k++) {
        const struct wt_report_job *jb = &r->jobs[k];
        double x0 = px(a, fmax(a->x0, (double)jb->start_ns / 1e9));
        double x1 = px(a, fmin(a->x1, (double)jb->end_ns / 1e9));
        fprintf(o, "<rect x='%.1f' y='%d' width='%.1f' height='%d' class='job'><title>", x0, T,
                x1 - x0, H - T - B);
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(jb->json, "name");
        esc(o, cJSON_IsString(nm) ? nm->valuestring : "job");
        fprintf(o, "</title></rect>");
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(jb->json, "phases"), *p;
        cJSON_ArrayForEach(p, ph)
        {
            const cJSON *to = cJSON_GetObjectItemCaseSensitive(p, "to_s");
            if (cJSON_IsNumber(to) && to->valuedouble > a->x0 && to->valuedouble < a->x1)
                fprintf(o, "<line x1='%.1f' x2='%.1f' y1='%d' y2='%d' class='epoch'/>",
                        px(a, to->valuedouble), px(a, to->valuedouble), T, H - B);
        }
    }
}

static void chart_power_stack(FILE *o, const struct wt_report *r)
{
    double *sum = calloc(WT_REPORT_COLS, sizeof *sum), ymax = 1;
    size_t pts = 0;
    if (!sum)
        return;
    for (size_t i = 0; i < r->ngpus; i++)
        for (size_t c = 0; c < WT_REPORT_COLS; c++)
            if (!isnan(r->gpus[i].power.mean[c]))
                sum[c] += r->gpus[i].power.mean[c];
    for (size_t c = 0; c < WT_REPORT_COLS; c++)
        ymax = fmax(ymax, sum[c]);
    memset(sum, 0, WT_REPORT_COLS * sizeof *sum);
    struct axes a = {tx0(r), tx1(r), 0, ymax * 1.1};
    double colw = (a.x1 - a.x0) / WT_REPORT_COLS;
    fig_open(o, "power_stack", "Power over time, stacked by GPU and node (jobs and epochs shaded)");
    shade_jobs(o, r, &a);
    draw_axes(o, &a, true, "time (UTC)", "power (W)");
    for (size_t i = 0; i < r->ngpus; i++) {
        const struct wt_report_gpu *g = &r->gpus[i];
        /* One bar per column on top of the GPUs before it; a column without a reading of this
         * GPU (a gap) draws nothing for it. */
        fprintf(o, "<path fill='%s' fill-opacity='0.7' d='", COLOR(i));
        for (size_t c = 0; c < WT_REPORT_COLS; c++) {
            if (isnan(g->power.mean[c]))
                continue;
            double x = a.x0 + colw * (double)c, y0 = sum[c], y1 = sum[c] + g->power.mean[c];
            fprintf(o, "M%.1f %.1fH%.1fV%.1fH%.1fZ", px(&a, x), py(&a, y0), px(&a, x + colw),
                    py(&a, y1), px(&a, x));
            sum[c] = y1;
            pts++;
        }
        fprintf(o, "'/>");
        if (i < 12)
            legend(o, i, "GPU %s %s", g->gpu, g->node);
    }
    double peak = 0;
    for (size_t c = 0; c < WT_REPORT_COLS; c++)
        peak = fmax(peak, sum[c]);
    free(sum);
    char rd[200];
    snprintf(rd, sizeof rd,
             "Summed GPU power peaks at %.0f W (column means); shaded spans are jobs, vertical "
             "lines their epoch marks; empty columns are gaps in the readings.",
             peak);
    fig_close(o, "power_stack", pts, rd, "no GPU power readings in the window");
}

static void chart_epochs(FILE *o, const struct wt_report *r)
{
    size_t n = 0;
    double emax = 1;
    for (size_t k = 0; k < r->njobs; k++) {
        const cJSON *p;
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r->jobs[k].json, "phases"))
        {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(p, "kpi"), "energy_joules");
            if (cJSON_IsNumber(e)) {
                emax = fmax(emax, e->valuedouble / 3.6e6);
                n++;
            }
        }
    }
    if (n == 0) {
        missing_fig(o, "epochs", "Energy per epoch",
                    "no job phases (epoch marks) in the window: nothing to draw");
        return;
    }
    struct axes a = {0, (double)n, 0, emax * 1.15};
    fig_open(o, "epochs", "Energy per epoch, with tokens/kWh or samples/s/W");
    draw_axes(o, &a, false, "phase (in order, all jobs)", "GPU energy (kWh)");
    size_t i = 0;
    char target[200] = "";
    for (size_t k = 0; k < r->njobs; k++) {
        const cJSON *p, *et = cJSON_GetObjectItemCaseSensitive(r->jobs[k].json, "energy_to_target");
        const cJSON *ek = cJSON_GetObjectItemCaseSensitive(et, "energy_kwh");
        if (cJSON_IsNumber(ek))
            snprintf(target, sizeof target, " Energy to target: %.4g kWh.", ek->valuedouble);
        cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(r->jobs[k].json, "phases"))
        {
            const cJSON *kp = cJSON_GetObjectItemCaseSensitive(p, "kpi");
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(kp, "energy_joules");
            if (!cJSON_IsNumber(e))
                continue;
            double v = e->valuedouble / 3.6e6;
            fprintf(o, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='%s'/>",
                    px(&a, i + 0.1), py(&a, v), px(&a, i + 0.9) - px(&a, i + 0.1),
                    py(&a, 0) - py(&a, v), COLOR(k));
            const cJSON *tk = cJSON_GetObjectItemCaseSensitive(kp, "tokens_per_kwh");
            const cJSON *ss = cJSON_GetObjectItemCaseSensitive(kp, "samples_per_s_per_w");
            if (n <= 40 && (cJSON_IsNumber(tk) || cJSON_IsNumber(ss)))
                fprintf(o, "<text x='%.1f' y='%.1f' class='tx' text-anchor='middle'>%.3g %s</text>",
                        px(&a, i + 0.5), py(&a, v) - 3,
                        cJSON_IsNumber(tk) ? tk->valuedouble : ss->valuedouble,
                        cJSON_IsNumber(tk) ? "tok/kWh" : "samp/s/W");
            i++;
        }
    }
    char rd[320];
    snprintf(rd, sizeof rd,
             "Each bar is one phase's GPU energy (the jobs' exact-window figures); the label is "
             "its output per energy.%s",
             target);
    fig_close(o, "epochs", n, rd, "");
}

static void chart_pue(FILE *o, const struct wt_report *r)
{
    size_t n = 0;
    if (!r->have_kpi) {
        missing_fig(o, "pue_load", "PUE against IT load", "no facility meters: no PUE");
        return;
    }
    const struct wt_kpi_report *k = &r->kpi;
    double ymax = 1.5;
    for (size_t i = 0; i < k->nbands; i++)
        if (k->bands[i].available)
            ymax = fmax(ymax, k->bands[i].pue), n++;
    for (size_t i = 0; i < k->nzones; i++)
        if (k->zones[i].available)
            ymax = fmax(ymax, k->zones[i].pue), n++;
    const struct wt_kpi_row *pue = wt_kpi_row(k, "pue");
    if (pue && pue->available)
        ymax = fmax(ymax, pue->value), n++;
    if (n == 0) {
        missing_fig(o, "pue_load", "PUE against IT load",
                    k->part_load_available ? "no band, zone or site PUE has data"
                                           : k->part_load_why);
        return;
    }
    struct axes a = {0, 100, 1, ymax * 1.1};
    fig_open(o, "pue_load", "PUE against IT load (part-load curve), site-wide vs pod-local");
    draw_axes(o, &a, false, "IT load (% of design capacity)", "PUE (ratio)");
    fprintf(o, "<path fill='none' stroke='#1f77b4' d='");
    for (size_t i = 0, m = 0; i < k->nbands; i++) {
        const struct wt_kpi_band *b = &k->bands[i];
        if (!b->available)
            continue;
        double mid = (b->lo_pct + fmin(b->hi_pct, 100)) / 2;
        fprintf(o, "%c%.1f %.1f", m++ ? 'L' : 'M', px(&a, mid), py(&a, b->pue));
    }
    fprintf(o, "'/>");
    for (size_t i = 0; i < k->nbands; i++) {
        const struct wt_kpi_band *b = &k->bands[i];
        if (b->available)
            fprintf(o, "<circle cx='%.1f' cy='%.1f' r='4' fill='#1f77b4'/>",
                    px(&a, (b->lo_pct + fmin(b->hi_pct, 100)) / 2), py(&a, b->pue));
    }
    if (pue && pue->available) {
        fprintf(o,
                "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='#000' "
                "stroke-dasharray='6 3'/>",
                L, W - R, py(&a, pue->value), py(&a, pue->value));
        legend(o, 0, "site-wide PUE %.3f (%s)", pue->value, pue->measured ? "measured" : "assumed");
    }
    for (size_t i = 0; i < k->nzones; i++) {
        if (!k->zones[i].available)
            continue;
        fprintf(o, "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='%s' stroke-dasharray='2 2'/>",
                L, W - R, py(&a, k->zones[i].pue), py(&a, k->zones[i].pue), COLOR(i + 1));
        legend(o, i + 1, "pod %s PUE %.3f", k->zones[i].zone, k->zones[i].pue);
    }
    fig_close(o, "pue_load", n,
              "Dots: PUE per band of IT load (energy-weighted); dashed: the site-wide PUE and each "
              "zone's own (pod-local) PUE over the window.",
              "");
}

static void chart_recon(FILE *o, const struct wt_report *r)
{
    if (!r->have_kpi || r->kpi.nnodes == 0) {
        missing_fig(o, "reconcile", "Chip sum vs node/PDU vs facility",
                    "no node has PDU outlet or BMC meters: nothing to reconcile");
        return;
    }
    const struct wt_kpi_report *k = &r->kpi;
    double ymax = k->facility.j / 3.6e6;
    for (size_t i = 0; i < k->nnodes; i++)
        ymax = fmax(ymax, fmax(k->nodes[i].wall_j, k->nodes[i].chips_j) / 3.6e6);
    size_t nb = k->nnodes + 1;
    struct axes a = {0, (double)nb, 0, fmax(ymax, 1e-9) * 1.15};
    fig_open(o, "reconcile", "Chip sum vs node/PDU vs facility: where the unaccounted watts are");
    draw_axes(o, &a, false, "node (chips | wall), then the facility", "energy (kWh)");
    size_t n = 0;
    for (size_t i = 0; i < k->nnodes; i++) {
        const struct wt_recon_node *x = &k->nodes[i];
        double c = x->chips_j / 3.6e6, w = x->wall_j / 3.6e6;
        fprintf(o, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='#2ca02c'/>",
                px(&a, i + 0.1), py(&a, c), px(&a, i + 0.5) - px(&a, i + 0.1),
                py(&a, 0) - py(&a, c));
        fprintf(o, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='#7f7f7f'/>",
                px(&a, i + 0.5), py(&a, w), px(&a, i + 0.9) - px(&a, i + 0.5),
                py(&a, 0) - py(&a, w));
        fprintf(o, "<text x='%.1f' y='%d' class='tx' text-anchor='middle'>", px(&a, i + 0.5),
                T + 10);
        esc(o, x->node);
        fprintf(o, " %+.0f W</text>", x->unaccounted_w);
        n += 2;
    }
    double f = k->facility.j / 3.6e6;
    if (f > 0) {
        fprintf(o, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' fill='#d62728'/>",
                px(&a, nb - 0.9), py(&a, f), px(&a, nb - 0.1) - px(&a, nb - 0.9),
                py(&a, 0) - py(&a, f));
        n++;
    }
    legend(o, 2, "green: chips (GPU+CPU+DRAM)");
    legend(o, 7, "grey: wall (PDU outlet or BMC)");
    legend(o, 3, "red: facility");
    fig_close(o, "reconcile", n,
              "Per node the chips' energy beside the wall's; the gap is fans, PSU losses, NICs "
              "and disks (the label: unaccounted watts). The last bar is the facility meter.",
              "");
}

static void chart_carbon(FILE *o, const struct wt_report *r)
{
    if (r->nsteps == 0) {
        missing_fig(o, "carbon", "Carbon intensity against consumption",
                    r->carbon_zone[0] ? "no carbon intensity series for the zone in the window"
                                      : "no carbon zone configured (carbon.zone)");
        return;
    }
    double gmax = 1, kmax = 1e-9;
    for (size_t i = 0; i < r->nsteps; i++) {
        gmax = fmax(gmax, r->steps[i].g_per_kwh);
        double h = (double)(r->steps[i].to_ns - r->steps[i].from_ns) / 3.6e12;
        kmax = fmax(kmax, r->steps[i].it_j / 3.6e6 / h);
    }
    struct axes a = {tx0(r), tx1(r), 0, gmax * 1.1};
    struct axes b = {tx0(r), tx1(r), 0, kmax * 1.1};
    fig_open(o, "carbon",
             "Carbon intensity against consumption; where a carbon-aware schedule "
             "would have put the jobs");
    draw_axes(o, &a, true, "time (UTC)", "intensity (gCO2e/kWh); bars: IT power (kW)");
    /* the bars' own scale: 0 at the axis, the top of the plot at b.y1 */
    fprintf(o, "<text x='%d' y='%d' class='tx' text-anchor='end'>bars: top = %.4g kW</text>", W - R,
            T - 6, b.y1);
    size_t n = 0;
    for (size_t i = 0; i < r->nsteps; i++) {
        const struct wt_report_step *s = &r->steps[i];
        double x0 = px(&a, (double)s->from_ns / 1e9), x1 = px(&a, (double)s->to_ns / 1e9);
        double kw = s->it_j / 3.6e6 / ((double)(s->to_ns - s->from_ns) / 3.6e12);
        fprintf(o, "<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' class='cons'/>", x0,
                py(&b, kw), x1 - x0, py(&b, 0) - py(&b, kw));
        fprintf(o, "<path stroke='#d62728' fill='none' d='M%.1f %.1fH%.1f'/>", x0,
                py(&a, s->g_per_kwh), x1);
        n++;
    }
    double saved = 0;
    for (size_t k = 0; k < r->njobs; k++) {
        const struct wt_report_job *jb = &r->jobs[k];
        if (!jb->sched_known)
            continue;
        double x = px(&a, (double)jb->start_ns / 1e9), y = px(&a, (double)jb->best_start_ns / 1e9);
        fprintf(o, "<line x1='%.1f' x2='%.1f' y1='%d' y2='%d' stroke='#000'/>", x, x, T, T + 20);
        fprintf(o,
                "<path d='M%.1f %dL%.1f %d' stroke='#2ca02c' "
                "fill='none'/>",
                x, T + 10, y, T + 10);
        fprintf(o, "<circle cx='%.1f' cy='%d' r='4' fill='#2ca02c'/>", y, T + 10);
        saved += jb->g_now - jb->g_best;
    }
    char rd[240];
    snprintf(rd, sizeof rd,
             "Red steps: grid intensity of zone %s; bars: the IT power drawn in each step. Green "
             "dots: where each job would have started for the least carbon (saving %.0f g).",
             r->carbon_zone, saved);
    fig_close(o, "carbon", n, rd, "");
}

static void chart_temp(FILE *o, const struct wt_report *r)
{
    double lo = 1e9, hi = -1e9;
    size_t n = 0;
    for (size_t i = 0; i < r->ngpus; i++) {
        for (size_t k = 0; k < r->gpus[i].temp.n; k++) {
            lo = fmin(lo, r->gpus[i].temp.pts[k].v);
            hi = fmax(hi, r->gpus[i].temp.pts[k].v);
        }
        if (!isnan(r->gpus[i].slowdown_c))
            hi = fmax(hi, r->gpus[i].slowdown_c);
    }
    if (hi < lo) {
        missing_fig(o, "temperature", "GPU temperature against its slowdown threshold",
                    "no GPU temperature readings in the window");
        return;
    }
    struct axes a = {tx0(r), tx1(r), fmax(0, lo - 5), hi + 5};
    fig_open(o, "temperature", "GPU temperature against each GPU's slowdown threshold");
    draw_axes(o, &a, true, "time (UTC)", "temperature (C)");
    double thr = 0;
    for (size_t i = 0; i < r->ngpus; i++) {
        const struct wt_report_gpu *g = &r->gpus[i];
        n += time_line(o, &a, &g->temp, brk_of(g), COLOR(i), "");
        if (!isnan(g->slowdown_c))
            fprintf(o,
                    "<line x1='%d' x2='%d' y1='%.1f' y2='%.1f' stroke='%s' "
                    "stroke-dasharray='6 3'/>",
                    L, W - R, py(&a, g->slowdown_c), py(&a, g->slowdown_c), COLOR(i));
        thr += g->throttle_s;
        if (i < 12)
            legend(o, i, "GPU %s %s: %.1f throttle min", g->gpu, g->node, g->throttle_s / 60);
    }
    char rd[200];
    snprintf(rd, sizeof rd,
             "Lines: each GPU's temperature (min and max per pixel column); dashed: its slowdown "
             "threshold. %.1f throttle minutes in all.",
             thr / 60);
    fig_close(o, "temperature", n, rd, "");
}

static void chart_inlet(FILE *o, const struct wt_report *r)
{
    if (r->ninlets == 0) {
        missing_fig(o, "inlet", "Inlet temperatures against the ASHRAE envelope",
                    "no inlet temperature sensors in the store");
        return;
    }
    double lo = 15, hi = 30, out = 0;
    for (size_t i = 0; i < r->ninlets; i++)
        lo = fmin(lo, r->inlets[i].min_c), hi = fmax(hi, r->inlets[i].max_c);
    struct axes a = {tx0(r), tx1(r), lo - 2, hi + 2};
    fig_open(o, "inlet", "Inlet temperatures against the ASHRAE recommended envelope");
    fprintf(o, "<rect x='%d' y='%.1f' width='%d' height='%.1f' class='envelope'/>", L, py(&a, 27),
            W - L - R, py(&a, 18) - py(&a, 27));
    draw_axes(o, &a, true, "time (UTC)", "inlet temperature (C)");
    size_t n = 0;
    for (size_t i = 0; i < r->ninlets; i++) {
        n += time_line(o, &a, &r->inlets[i].t, INT64_MAX, COLOR(i), "");
        out += r->inlets[i].outside_s;
        if (i < 12)
            legend(o, i, "%s", r->inlets[i].name);
    }
    char rd[200];
    snprintf(
        rd, sizeof rd,
        "Green band: ASHRAE's recommended 18-27 C for inlet air; %.0f sensor-minutes outside it.",
        out / 60);
    fig_close(o, "inlet", n, rd, "");
}

/* ---- GPU activity: NVML utilization beside GPM and interconnect counters ---- */

static bool any_activity(const struct wt_report *r)
{
    for (size_t i = 0; i < r->ngpus; i++) {
        const struct wt_report_gpu *g = &r->gpus[i];
        double v[] = {g->sm_active,     g->sm_occupancy,  g->tensor_active, g->dram_bw,
                      g->nvlink_tx_bps, g->nvlink_rx_bps, g->pcie_tx_bps,   g->pcie_rx_bps};
        for (size_t k = 0; k < sizeof v / sizeof *v; k++)
            if (!isnan(v[k]))
                return true;
    }
    return false;
}

/* One table, HTML or Markdown: percent for the ratios, GB/s for the byte rates, "-": not stored. */
static void activity_table(FILE *o, const struct wt_report *r, bool md)
{
    static const char *const head[] = {
        "GPU",         "node",           "utilization",    "SM active",      "SM occupancy",
        "tensor",      "DRAM bandwidth", "NVLink tx GB/s", "NVLink rx GB/s", "PCIe tx GB/s",
        "PCIe rx GB/s"};
    const size_t nh = sizeof head / sizeof *head;
    fprintf(o, md ? "\n## GPU activity\n\n|" : "<h2>GPU activity</h2><table id='activity'><tr>");
    for (size_t k = 0; k < nh; k++)
        fprintf(o, md ? " %s |" : "<th>%s</th>", head[k]);
    if (md) {
        fprintf(o, "\n|");
        for (size_t k = 0; k < nh; k++)
            fprintf(o, "---|");
    } else {
        fprintf(o, "</tr>");
    }
    fprintf(o, "\n");
    for (size_t i = 0; i < r->ngpus; i++) {
        const struct wt_report_gpu *g = &r->gpus[i];
        double v[] = {g->util_mean,           g->sm_active,         g->sm_occupancy,
                      g->tensor_active,       g->dram_bw,           g->nvlink_tx_bps / 1e9,
                      g->nvlink_rx_bps / 1e9, g->pcie_tx_bps / 1e9, g->pcie_rx_bps / 1e9};
        fprintf(o, md ? "| %s | " : "<tr><td>%s</td><td>", g->gpu);
        if (md)
            fprintf(o, "%s |", g->node[0] ? g->node : "-");
        else
            esc(o, g->node[0] ? g->node : "-"), fprintf(o, "</td>");
        for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
            fprintf(o, md ? " " : "<td>");
            if (isnan(v[k]))
                fprintf(o, "-");
            else if (k < 5)
                fprintf(o, "%.1f %%", 100 * v[k]);
            else
                fprintf(o, "%.3f", v[k]);
            fprintf(o, md ? " |" : "</td>");
        }
        fprintf(o, md ? "\n" : "</tr>\n");
    }
    fprintf(o,
            md ? "\nutilization: NVML's, time with a kernel running; SM active, occupancy, tensor "
                 "and DRAM bandwidth: GPM (Hopper and newer), means of the readings; GB/s over "
                 "the window.\n"
               : "</table><p>utilization: NVML's, time with a kernel running; SM active, "
                 "occupancy, tensor and DRAM bandwidth: GPM (Hopper and newer), means of the "
                 "readings; GB/s over the window.</p>\n");
}

/* ---- tables ---- */

static const char *tag_of(const char *method)
{
    return !method ? "missing" : strcmp(method, "counter") == 0 ? "measured" : "integrated";
}

/* Where KPI rows go: an HTML table, a Markdown table (md) or a JSON array (arr). */
struct row_sink {
    FILE *o;
    bool md;
    cJSON *arr;
};

static void row(const struct row_sink *s, const char *layer, const char *name, const char *value,
                const char *tag, double coverage)
{
    char cov[24] = "-";
    if (coverage >= 0)
        snprintf(cov, sizeof cov, "%.1f%%", 100 * coverage);
    if (s->arr) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "layer", layer);
        cJSON_AddStringToObject(e, "name", name);
        cJSON_AddStringToObject(e, "value", value);
        cJSON_AddStringToObject(e, "source", tag);
        if (coverage >= 0)
            cJSON_AddNumberToObject(e, "coverage", coverage);
        else
            cJSON_AddNullToObject(e, "coverage");
        cJSON_AddItemToArray(s->arr, e);
        return;
    }
    if (s->md) {
        fprintf(s->o, "| %s | %s | %s | %s | %s |\n", layer, name, value, tag, cov);
        return;
    }
    fprintf(s->o, "<tr><td>%s</td><td>", layer);
    esc(s->o, name);
    fprintf(s->o, "</td><td>");
    esc(s->o, value);
    fprintf(s->o, "</td><td class='%s'>%s</td><td>%s</td></tr>\n", tag, tag, cov);
}

static void kpi_rows(const struct wt_report *r, const struct row_sink *s)
{
    char name[160], v[96];
    for (size_t i = 0; i < r->ngpus; i++) {
        const struct wt_report_gpu *g = &r->gpus[i];
        snprintf(name, sizeof name, "GPU %s %s energy", g->gpu, g->node);
        snprintf(v, sizeof v, "%.4f kWh \u00b1 %.2g J", g->energy_j / 3.6e6, g->uncertainty_j);
        row(s, "compute", name, v, tag_of(g->method), g->method ? g->coverage : 0);
        snprintf(name, sizeof name, "GPU %s %s idle burn", g->gpu, g->node);
        snprintf(v, sizeof v, "%.4f kWh (%.0f min)", g->idle_j / 3.6e6, g->idle_s / 60);
        row(s, "compute", name, v, "integrated", g->coverage);
    }
    for (size_t k = 0; k < r->njobs; k++) {
        const cJSON *j = r->jobs[k].json, *nm = cJSON_GetObjectItemCaseSensitive(j, "name");
        const cJSON *kp = cJSON_GetObjectItemCaseSensitive(j, "kpi");
        const cJSON *cv = cJSON_GetObjectItemCaseSensitive(kp, "coverage");
        snprintf(name, sizeof name, "job %s energy", cJSON_IsString(nm) ? nm->valuestring : "?");
        const cJSON *uj = cJSON_GetObjectItemCaseSensitive(kp, "uncertainty_joules");
        snprintf(v, sizeof v, "%.4f kWh \u00b1 %.2g J", r->jobs[k].energy_j / 3.6e6,
                 cJSON_IsNumber(uj) ? uj->valuedouble : 0);
        row(s, "workload", name, v, "measured", cJSON_IsNumber(cv) ? cv->valuedouble : -1);
        if (!isnan(r->jobs[k].out_per_kwh)) {
            snprintf(name, sizeof name, "job %s tokens/kWh",
                     cJSON_IsString(nm) ? nm->valuestring : "?");
            snprintf(v, sizeof v, "%.4g", r->jobs[k].out_per_kwh);
            row(s, "workload", name, v, "measured", cJSON_IsNumber(cv) ? cv->valuedouble : -1);
        }
    }
    if (!r->have_kpi)
        return;
    for (size_t i = 0; i < r->kpi.nnodes; i++) {
        const struct wt_recon_node *x = &r->kpi.nodes[i];
        snprintf(name, sizeof name, "node %s unaccounted power", x->node);
        snprintf(v, sizeof v, "%.1f W (%.1f%%)", x->unaccounted_w, 100 * x->share);
        /* both sides are meters or sensors; the coverage is the lesser of the two */
        row(s, "system", name, v, "measured", fmin(x->wall_coverage, x->chips_coverage));
    }
    for (size_t i = 0; i < r->kpi.nrows; i++) {
        const struct wt_kpi_row *k = &r->kpi.rows[i];
        if (k->available)
            snprintf(v, sizeof v, "%.4g %s", k->value, strcmp(k->unit, "ratio") ? k->unit : "");
        else
            snprintf(v, sizeof v, "- (%.80s)", k->why);
        row(s, strcmp(k->key, "cue") == 0 ? "carbon" : "facility", k->label, v,
            !k->available ? "missing"
            : k->measured ? "measured"
                          : "assumed",
            strcmp(k->key, "cue") == 0 ? -1 : r->kpi.facility.coverage);
    }
}

/* A number of a Serving row for a person ("-" when null or missing). */
static const char *serving_num(const cJSON *row, const char *key, const char *fmt, double scale,
                               char *buf, size_t n)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    int prec = fmt[2] - '0'; /* "%.Nf" or "%.Ng": the format stays a literal below */
    if (!cJSON_IsNumber(v))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, fmt[3] == 'g' ? "%.*g" : "%.*f", prec, v->valuedouble * scale);
    return buf;
}

/* The Serving section (r->serving: `wattage inference`'s rows), one row per target and model. */
static void serving_section(FILE *o, const struct wt_report *r, bool md)
{
    static const struct {
        const char *head, *key, *fmt;
        double scale;
    } cols[] = {
        {"GPU kWh", "energy_joules", "%.4f", 1 / 3.6e6},
        {"\u00b1 J", "energy_uncertainty_joules", "%.3g", 1},
        {"generated tokens", "generated_tokens", "%.0f", 1},
        {"tokens/kWh", "generated_tokens_per_kwh", "%.0f", 1},
        {"J/generated token", "joules_per_generated_token", "%.4f", 1},
        {"J/computed prompt token", "joules_per_computed_prompt_token", "%.4f", 1},
        {"J/request", "joules_per_request", "%.1f", 1},
        {"e2e p99 s", "e2e_latency_p99_seconds", "%.4g", 1},
        {"ttft p99 s", "ttft_latency_p99_seconds", "%.4g", 1},
        {"itl p99 s", "itl_latency_p99_seconds", "%.4g", 1},
        {"idle kWh", "idle_energy_joules", "%.4f", 1 / 3.6e6},
        {"gCO2e/1k tokens", "gco2e_per_1k_generated_tokens", "%.4g", 1},
        {"node J/token", "node_joules_per_generated_token", "%.4f", 1},
    };
    size_t nc = sizeof cols / sizeof cols[0];
    if (!r->serving)
        return;
    fprintf(o, md ? "\n## Serving\n\n| target | model |"
                  : "<h2>Serving</h2><table id='serving'><tr><th>target</th><th>model</th>");
    for (size_t c = 0; c < nc; c++)
        fprintf(o, md ? " %s |" : "<th>%s</th>", cols[c].head);
    fprintf(o, md ? "\n|---|---|" : "</tr>\n");
    for (size_t c = 0; md && c < nc; c++)
        fprintf(o, "---|");
    if (md)
        fprintf(o, "\n");
    const cJSON *row;
    cJSON_ArrayForEach(row, r->serving)
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(row, "target");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(row, "model");
        const char *ts = cJSON_IsString(t) ? t->valuestring : "";
        const char *ms = cJSON_IsString(m) ? m->valuestring : "";
        if (md) {
            fprintf(o, "| %s | %s |", ts, ms);
        } else {
            fprintf(o, "<tr><td>");
            esc(o, ts);
            fprintf(o, "</td><td>");
            esc(o, ms);
            fprintf(o, "</td>");
        }
        for (size_t c = 0; c < nc; c++) {
            char buf[48];
            serving_num(row, cols[c].key, cols[c].fmt, cols[c].scale, buf, sizeof buf);
            fprintf(o, md ? " %s |" : "<td>%s</td>", buf);
        }
        fprintf(o, md ? "\n" : "</tr>\n");
    }
    fprintf(o, md ? "\nGPU energy of each target's GPUs (several models on one target share it by "
                    "generated tokens); each ratio is all-in; latencies from the window's bucket "
                    "increases (`wattage inference` gives the estimated prefill/decode split).\n"
                  : "</table>\n<p>GPU energy of each target's GPUs (several models on one target "
                    "share it by generated tokens); each ratio is all-in; latencies from the "
                    "window's bucket increases (<code>wattage inference</code> gives the estimated "
                    "prefill/decode split).</p>\n");
}

int wt_report_write_html(const struct wt_report *r, FILE *o)
{
    char fs[40], ts[40];
    wt_time_format(r->from_ns, 0, fs, sizeof fs);
    wt_time_format(r->to_ns, 0, ts, sizeof ts);
    fprintf(o,
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<title>wattage report %s .. %s</title><style>\n"
            "body{font:14px sans-serif;margin:2em;max-width:960px}"
            "figure{margin:1.5em 0;border:1px solid #ddd;padding:.5em}"
            ".ax{stroke:#000}.tx{font-size:10px}.tl{font-size:12px}.lg{font-size:11px}"
            ".idle{fill:#ccc;opacity:.5}.capped{fill:#f88;opacity:.3}"
            ".job{fill:#88f;opacity:.12}.epoch{stroke:#44a;stroke-dasharray:2 3}"
            ".cons{fill:#999;opacity:.4}.envelope{fill:#8c8;opacity:.3}"
            ".missing{color:#a00}.measured{color:#060}.assumed{color:#a60}"
            ".integrated{color:#06a}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}\n"
            "</style></head><body>\n",
            fs, ts);
    fprintf(o, "<h1>wattage report</h1><p>%s to %s (%.1f h), node ", fs, ts,
            (double)(r->to_ns - r->from_ns) / 3.6e12);
    esc(o, r->node[0] ? r->node : "(unnamed)");
    fprintf(o, ", %zu GPU series, %zu jobs.</p>\n", r->ngpus, r->njobs);
    if (r->nmissing) {
        fprintf(o, "<h2>What is missing</h2><ul id='missing'>");
        for (size_t i = 0; i < r->nmissing; i++) {
            fprintf(o, "<li>");
            esc(o, r->missing[i]);
            fprintf(o, "</li>");
        }
        fprintf(o, "</ul>\n");
    }
    if (r->clock.n) {
        fprintf(o, "<h2>Warnings</h2><ul id='warnings'>");
        for (size_t i = 0; i < r->clock.n; i++) {
            fprintf(o, "<li>");
            esc(o, r->clock.msg[i]);
            fprintf(o, "</li>");
        }
        fprintf(o, "</ul>\n");
    }
    fprintf(o, "<h2>Findings, ranked by energy</h2><ol id='findings'>");
    for (size_t i = 0; i < r->nfindings; i++) {
        fprintf(o, "<li data-kind='%s'><b>", r->findings[i].kind);
        esc(o, r->findings[i].title);
        fprintf(o, "</b> (%.4f kWh)<br>", r->findings[i].energy_j / 3.6e6);
        esc(o, r->findings[i].evidence);
        fprintf(o, "</li>");
    }
    if (!r->nfindings)
        fprintf(o, "<li>none</li>");
    fprintf(o, "</ol>\n<h2>Charts</h2>\n");
    size_t raw = 0;
    for (size_t i = 0; i < r->ngpus; i++)
        raw += r->gpus[i].power.raw;
    if (raw) {
        chart_util_power(o, r);
        chart_power_stack(o, r);
    } else {
        const char *why =
            r->ngpus ? "no GPU power readings in the window" : "no GPU series in the store";
        missing_fig(o, "util_power", "GPU utilization vs power", why);
        missing_fig(o, "power_stack", "Power over time", why);
    }
    chart_epochs(o, r);
    chart_pue(o, r);
    chart_recon(o, r);
    chart_carbon(o, r);
    chart_temp(o, r);
    chart_inlet(o, r);
    if (any_activity(r))
        activity_table(o, r, false);
    fprintf(o, "<h2>KPIs</h2><table id='kpis'><tr><th>layer</th><th>figure</th><th>value</th>"
               "<th>source</th><th>coverage</th></tr>\n");
    struct row_sink s = {o, false, NULL};
    kpi_rows(r, &s);
    fprintf(o, "</table>\n<p>measured: a sensor's counter or a meter; integrated: power readings "
               "integrated over time; assumed: a configured constant.</p>\n");
    serving_section(o, r, false);
    fprintf(o, "</body></html>\n");
    return ferror(o) ? -EIO : 0;
}

int wt_report_write_md(const struct wt_report *r, FILE *o)
{
    char fs[40], ts[40];
    wt_time_format(r->from_ns, 0, fs, sizeof fs);
    wt_time_format(r->to_ns, 0, ts, sizeof ts);
    fprintf(o, "# wattage report\n\n%s to %s, node %s\n\n", fs, ts, r->node[0] ? r->node : "-");
    if (r->nmissing) {
        fprintf(o, "## What is missing\n\n");
        for (size_t i = 0; i < r->nmissing; i++)
            fprintf(o, "- %s\n", r->missing[i]);
        fprintf(o, "\n");
    }
    if (r->clock.n) {
        fprintf(o, "## Warnings\n\n");
        for (size_t i = 0; i < r->clock.n; i++)
            fprintf(o, "- %s\n", r->clock.msg[i]);
        fprintf(o, "\n");
    }
    fprintf(o, "## Findings, ranked by energy\n\n");
    for (size_t i = 0; i < r->nfindings; i++)
        fprintf(o, "%zu. **%s** (%.4f kWh): %s\n", i + 1, r->findings[i].title,
                r->findings[i].energy_j / 3.6e6, r->findings[i].evidence);
    if (any_activity(r))
        activity_table(o, r, true);
    fprintf(o,
            "\n## KPIs\n\n| layer | figure | value | source | coverage |\n|---|---|---|---|---|\n");
    struct row_sink s = {o, true, NULL};
    kpi_rows(r, &s);
    serving_section(o, r, true);
    return ferror(o) ? -EIO : 0;
}

int wt_report_write_json(const struct wt_report *r, FILE *o)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return -ENOMEM;
    cJSON_AddNumberToObject(root, "from_s", (double)r->from_ns / 1e9);
    cJSON_AddNumberToObject(root, "to_s", (double)r->to_ns / 1e9);
    cJSON_AddStringToObject(root, "node", r->node);
    if (r->source[0])
        cJSON_AddStringToObject(root, "source", r->source);
    cJSON *m = cJSON_AddArrayToObject(root, "missing");
    for (size_t i = 0; i < r->nmissing; i++)
        cJSON_AddItemToArray(m, cJSON_CreateString(r->missing[i]));
    cJSON *in = cJSON_AddArrayToObject(root, "inlets");
    for (size_t i = 0; in && i < r->ninlets; i++) {
        const struct wt_report_inlet *x = &r->inlets[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", x->name);
        cJSON_AddStringToObject(e, "ashrae_class",
                                wt_ashrae_class_name((enum wt_ashrae_class)r->ashrae_class));
        cJSON_AddNumberToObject(e, "min_celsius", x->min_c);
        cJSON_AddNumberToObject(e, "max_celsius", x->max_c);
        cJSON_AddNumberToObject(e, "outside_recommended_seconds", x->outside_s);
        cJSON_AddNumberToObject(e, "outside_allowable_seconds", x->outside_allow_s);
        cJSON_AddItemToArray(in, e);
    }
    if (wt_clockcheck_json(root, &r->clock) != 0) {
        cJSON_Delete(root);
        return -ENOMEM;
    }
    cJSON *g = cJSON_AddArrayToObject(root, "gpus");
    for (size_t i = 0; i < r->ngpus; i++) {
        const struct wt_report_gpu *x = &r->gpus[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "node", x->node);
        cJSON_AddStringToObject(e, "gpu", x->gpu);
        cJSON_AddStringToObject(e, "uuid", x->uuid);
        cJSON_AddNumberToObject(e, "energy_joules", x->energy_j);
        cJSON_AddNumberToObject(e, "uncertainty_joules", x->uncertainty_j);
        cJSON_AddStringToObject(e, "method", tag_of(x->method));
        cJSON_AddNumberToObject(e, "coverage", x->coverage);
        cJSON_AddNumberToObject(e, "idle_joules", x->idle_j);
        cJSON_AddNumberToObject(e, "idle_seconds", x->idle_s);
        cJSON_AddNumberToObject(e, "capped_seconds", x->capped_s);
        cJSON_AddNumberToObject(e, "throttle_seconds", x->throttle_s);
        cJSON_AddNumberToObject(e, "power_readings", (double)x->power.raw);
        cJSON_AddNumberToObject(e, "gaps", (double)x->ngaps);
        cJSON *act = cJSON_AddObjectToObject(e, "activity");
        const struct {
            const char *key;
            double v;
        } av[] = {{"utilization_ratio", x->util_mean},
                  {"sm_active_ratio", x->sm_active},
                  {"sm_occupancy_ratio", x->sm_occupancy},
                  {"tensor_active_ratio", x->tensor_active},
                  {"dram_bandwidth_utilization_ratio", x->dram_bw},
                  {"nvlink_transmit_bytes_per_second", x->nvlink_tx_bps},
                  {"nvlink_receive_bytes_per_second", x->nvlink_rx_bps},
                  {"pcie_transmit_bytes_per_second", x->pcie_tx_bps},
                  {"pcie_receive_bytes_per_second", x->pcie_rx_bps}};
        for (size_t k = 0; act && k < sizeof av / sizeof *av; k++)
            if (!isnan(av[k].v))
                cJSON_AddNumberToObject(act, av[k].key, av[k].v);
        cJSON_AddItemToArray(g, e);
    }
    cJSON *f = cJSON_AddArrayToObject(root, "findings");
    for (size_t i = 0; i < r->nfindings; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "kind", r->findings[i].kind);
        cJSON_AddNumberToObject(e, "energy_joules", r->findings[i].energy_j);
        cJSON_AddStringToObject(e, "title", r->findings[i].title);
        cJSON_AddStringToObject(e, "evidence", r->findings[i].evidence);
        cJSON_AddItemToArray(f, e);
    }
    cJSON *j = cJSON_AddArrayToObject(root, "jobs");
    for (size_t i = 0; i < r->njobs; i++)
        cJSON_AddItemToArray(j, cJSON_Duplicate(r->jobs[i].json, 1));
    cJSON_AddNumberToObject(root, "carbon_steps", (double)r->nsteps);
    struct row_sink s = {o, false, cJSON_AddArrayToObject(root, "kpis")};
    kpi_rows(r, &s);
    if (r->serving)
        cJSON_AddItemToObject(root, "serving", cJSON_Duplicate(r->serving, 1));
    char *txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!txt)
        return -ENOMEM;
    fprintf(o, "%s\n", txt);
    cJSON_free(txt);
    return ferror(o) ? -EIO : 0;
}

/* ---- two windows ---- */

static void fmt_num(char *buf, size_t n, bool have, double v)
{
    if (have)
        snprintf(buf, n, "%.4g", v);
    else
        snprintf(buf, n, "-");
}

static void cmp_missing(FILE *o, const struct wt_report *r, const char *name, bool md)
{
    for (size_t i = 0; i < r->nmissing; i++) {
        if (md) {
            fprintf(o, "- %s: %s\n", name, r->missing[i]);
            continue;
        }
        fprintf(o, "<li>%s: ", name);
        esc(o, r->missing[i]);
        fprintf(o, "</li>");
    }
}

static int cmp_json(const struct wt_report_cmp *c, FILE *o)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return -ENOMEM;
    const struct wt_report *w[2] = {&c->a, &c->b};
    for (int k = 0; k < 2; k++) {
        cJSON *x = cJSON_AddObjectToObject(root, k ? "b" : "a");
        cJSON_AddNumberToObject(x, "from_s", (double)w[k]->from_ns / 1e9);
        cJSON_AddNumberToObject(x, "to_s", (double)w[k]->to_ns / 1e9);
        cJSON *m = cJSON_AddArrayToObject(x, "missing");
        for (size_t i = 0; i < w[k]->nmissing; i++)
            cJSON_AddItemToArray(m, cJSON_CreateString(w[k]->missing[i]));
    }
    cJSON *rows = cJSON_AddArrayToObject(root, "figures");
    for (size_t i = 0; i < WT_REPORT_FIGURES; i++) {
        const struct wt_report_cmp_row *r = &c->rows[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", r->key);
        cJSON_AddStringToObject(e, "unit", r->unit);
        if (r->have_a)
            cJSON_AddNumberToObject(e, "a", r->a);
        else
            cJSON_AddNullToObject(e, "a");
        if (r->have_b)
            cJSON_AddNumberToObject(e, "b", r->b);
        else
            cJSON_AddNullToObject(e, "b");
        if (r->have_a && r->have_b)
            cJSON_AddNumberToObject(e, "difference", r->diff);
        else
            cJSON_AddNullToObject(e, "difference");
        if (r->have_noise) {
            cJSON_AddNumberToObject(e, "noise", r->noise);
            cJSON_AddBoolToObject(e, "exceeds_noise", r->exceeds);
        } else {
            cJSON_AddNullToObject(e, "noise");
            cJSON_AddNullToObject(e, "exceeds_noise");
        }
        cJSON_AddItemToArray(rows, e);
    }
    char *txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!txt)
        return -ENOMEM;
    fprintf(o, "%s\n", txt);
    cJSON_free(txt);
    return ferror(o) ? -EIO : 0;
}

int wt_report_write_cmp(const struct wt_report_cmp *c, const char *format, FILE *o)
{
    if (strcmp(format, "json") == 0)
        return cmp_json(c, o);
    bool md = strcmp(format, "md") == 0;
    char a0[40], a1[40], b0[40], b1[40];
    wt_time_format(c->a.from_ns, 0, a0, sizeof a0);
    wt_time_format(c->a.to_ns, 0, a1, sizeof a1);
    wt_time_format(c->b.from_ns, 0, b0, sizeof b0);
    wt_time_format(c->b.to_ns, 0, b1, sizeof b1);
    if (md)
        fprintf(o, "# wattage report: two windows\n\nA: %s to %s\nB: %s to %s\n\n", a0, a1, b0, b1);
    else
        fprintf(o,
                "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>wattage "
                "report: A vs B</title><style>body{font:14px sans-serif;margin:2em}"
                "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
                ".yes{color:#a00;font-weight:bold}</style></head><body>"
                "<h1>wattage report: two windows</h1><p>A: %s to %s<br>B: %s to %s</p>\n",
                a0, a1, b0, b1);
    if (c->a.nmissing || c->b.nmissing) {
        fprintf(o, md ? "## What is missing\n\n" : "<h2>What is missing</h2><ul>");
        cmp_missing(o, &c->a, "A", md);
        cmp_missing(o, &c->b, "B", md);
        fprintf(o, md ? "\n" : "</ul>\n");
    }
    if (md)
        fprintf(o, "| figure | unit | A | B | B - A | noise | exceeds noise |\n"
                   "|---|---|---|---|---|---|---|\n");
    else
        fprintf(o, "<table id='compare'><tr><th>figure</th><th>unit</th><th>A</th><th>B</th>"
                   "<th>B - A</th><th>noise</th><th>exceeds noise</th></tr>\n");
    for (size_t i = 0; i < WT_REPORT_FIGURES; i++) {
        const struct wt_report_cmp_row *r = &c->rows[i];
        char va[32], vb[32], d[32], n[32];
        fmt_num(va, sizeof va, r->have_a, r->a);
        fmt_num(vb, sizeof vb, r->have_b, r->b);
        fmt_num(d, sizeof d, r->have_a && r->have_b, r->diff);
        fmt_num(n, sizeof n, r->have_noise, r->noise);
        const char *ex = !r->have_noise ? "unknown" : r->exceeds ? "yes" : "no";
        if (md)
            fprintf(o, "| %s | %s | %s | %s | %s | %s | %s |\n", r->label, r->unit, va, vb, d, n,
                    ex);
        else
            fprintf(o,
                    "<tr data-figure='%s'><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                    "<td>%s</td><td class='%s'>%s</td></tr>\n",
                    r->key, r->label, r->unit, va, vb, d, n, ex, ex);
    }
    if (!md)
        fprintf(o,
                "</table><p>noise: twice the combined standard error of the figure over %d "
                "equal pieces of each window; a difference beyond it is unlikely to be "
                "measurement noise.</p></body></html>\n",
                WT_REPORT_PIECES);
    return ferror(o) ? -EIO : 0;
}
