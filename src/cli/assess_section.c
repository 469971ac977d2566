/* SPDX-License-Identifier: MIT */
/*
 * `wattage assess`'s words for a person (assess_section.h): what to set for each missing layer,
 * spans, and the assessment section of `assess report` in Markdown and HTML.
 */
#include "cli/assess_section.h"

#include <math.h>
#include <string.h>

#include "core/clock.h"

const char *const wt_assess_how_to[WT_ASSESS_NLAYERS] = {
    "collectors.nvml.library: NVML with GPUs that have an energy counter (Volta or later; "
    "without one, energy is integrated from power)",
    "collectors.rapl.enabled, and read access to /sys/class/powercap/intel-rapl:*/energy_uj",
    "topology.meters with role pdu_outlet or bmc for this node, over collectors.snmp.targets, "
    "collectors.redfish.targets, collectors.modbus.targets or collectors.ipmi.targets",
    "topology.meters with role facility_total, and the IT meters (ups_output, pdu_output, it_input "
    "or it_total), for the PUE",
    "carbon.zone with carbon.sources or carbon.static_gco2_per_kwh (or `wattage import carbon "
    "FILE --zone Z`)",
    "collectors.clock.enabled, and the kernel clock synchronised (chrony or ntpd)",
    "tag the work as jobs: `wattage job start`, `wattage exec` or the Slurm prolog "
    "(deploy/slurm/)",
    "an inlet temperature point (kind: inlet) among collectors.snmp.targets, "
    "collectors.redfish.targets, collectors.modbus.targets or collectors.ipmi.targets",
};

struct wt_assess_dur wt_assess_fmt_dur(int64_t ns)
{
    struct wt_assess_dur d;
    double s = ns > 0 ? (double)ns / 1e9 : 0;
    if (s < 120)
        snprintf(d.s, sizeof d.s, "%.0f s", s);
    else if (s < 7200)
        snprintf(d.s, sizeof d.s, "%.1f min", s / 60);
    else
        snprintf(d.s, sizeof d.s, "%.1f h", s / 3600);
    return d;
}

static void html_text(FILE *o, const char *s)
{
    for (; *s; s++) {
        const char *e = *s == '<'    ? "&lt;"
                        : *s == '>'  ? "&gt;"
                        : *s == '&'  ? "&amp;"
                        : *s == '\'' ? "&#39;"
                        : *s == '"'  ? "&quot;"
                                     : NULL;
        if (e)
            fputs(e, o);
        else
            fputc(*s, o);
    }
}

/* A figure for a table: "-" when unknown. */
static void fig(char *buf, size_t n, bool have, double v)
{
    if (have && isfinite(v))
        snprintf(buf, n, "%.4g", v);
    else
        snprintf(buf, n, "-");
}

/* The unfinished note, or "". */
/* A comparison row's cells: baseline, rest, difference, noise, and whether it exceeds it. */
struct cells {
    char a[32], b[32], d[32], nz[32];
    const char *key, *label, *unit, *ex;
};
static struct cells cells_of(const struct wt_report_cmp_row *r)
{
    struct cells x;
    fig(x.a, sizeof x.a, r->have_a, r->a);
    fig(x.b, sizeof x.b, r->have_b, r->b);
    fig(x.d, sizeof x.d, r->have_a && r->have_b, r->diff);
    fig(x.nz, sizeof x.nz, r->have_noise, r->noise);
    x.key = r->key;
    x.label = r->label ? r->label : r->key;
    x.unit = r->unit ? r->unit : "";
    x.ex = !r->have_noise ? "unknown" : r->exceeds ? "yes" : "no";
    return x;
}

void wt_assess_state_line(const struct wt_assess_section *sc, char *buf, size_t n)
{
    struct wt_assess_dur el = wt_assess_fmt_dur(sc->g->to - sc->a->start_ns);
    struct wt_assess_dur tot = wt_assess_fmt_dur(sc->a->end_ns - sc->a->start_ns);
    if (sc->g->now < sc->a->end_ns)
        snprintf(buf, n, "unfinished: %s of %s so far; the figures cover only the time so far",
                 el.s, tot.s);
    else
        snprintf(buf, n, "finished: %s", tot.s);
}

/* The section's times (start, end so far, the baseline's end) and its state line. */
struct words {
    char s[40], e[40], st[200], b[40];
};
static struct words words_of(const struct wt_assess_section *sc)
{
    struct words w;
    wt_time_format(sc->a->start_ns, 0, w.s, sizeof w.s);
    wt_time_format(sc->g->to, 0, w.e, sizeof w.e);
    wt_time_format(sc->bend, 0, w.b, sizeof w.b);
    wt_assess_state_line(sc, w.st, sizeof w.st);
    return w;
}

void wt_assess_section_md(FILE *o, const struct wt_assess_section *sc)
{
    const struct wt_assess *a = sc->a;
    const struct wt_assess_figures *g = sc->g;
    struct words w = words_of(sc);
    const char *s = w.s, *e = w.e, *st = w.st, *b = w.b;
    uint32_t hm = wt_assess_hours_seen(a->start_ns, g->to);
    fprintf(o, "# wattage assessment: %s\n\n%s to %s. **%s.** Hours of day seen: %d of 24.\n\n",
            a->name, s, e, st, wt_assess_hours_count(hm));
    fprintf(o, "## What was measured\n\n| layer | at start | now | coverage | gaps | longest gap "
               "(s) | to add it |\n|---|---|---|---|---|---|---|\n");
    for (unsigned i = 0; i < WT_ASSESS_NLAYERS; i++) {
        const struct wt_assess_cover *cv = &g->cv[i];
        unsigned lack = g->have_now ? g->now_layers : a->layers;
        fprintf(o, "| %s | %s | %s | %.1f%% | %zu | %.1f | %s |\n", wt_assess_layer_name(i),
                a->layers & (1u << i) ? "yes" : "no",
                !g->have_now                ? "?"
                : g->now_layers & (1u << i) ? "yes"
                                            : "no",
                cv->window_s > 0 ? 100 * cv->covered_s / cv->window_s : 0.0, cv->ngaps,
                cv->longest_gap_s, lack & (1u << i) ? "" : wt_assess_how_to[i]);
    }
    fprintf(o, "\n## Baseline against the rest\n\n");
    if (!sc->cmp) {
        fprintf(o, "The baseline runs until %s: no comparison yet.\n\n", b);
        return;
    }
    fprintf(o,
            "Baseline: %s to %s; the rest: %s to %s.\n\n| figure | unit | baseline | rest | "
            "difference | noise | exceeds noise |\n|---|---|---|---|---|---|---|\n",
            s, b, b, e);
    for (size_t i = 0; i < WT_REPORT_FIGURES; i++) {
        struct cells x = cells_of(&sc->cmp->rows[i]);
        fprintf(o, "| %s | %s | %s | %s | %s | %s | %s |\n", x.label, x.unit, x.a, x.b, x.d, x.nz,
                x.ex);
    }
    fprintf(o, "\n");
}

void wt_assess_section_html(FILE *o, const struct wt_assess_section *sc)
{
    const struct wt_assess *a = sc->a;
    const struct wt_assess_figures *g = sc->g;
    struct words w = words_of(sc);
    const char *s = w.s, *e = w.e, *st = w.st, *b = w.b;
    fputs("<section id='assessment'><h1>wattage assessment: ", o);
    html_text(o, a->name);
    fprintf(o, "</h1><p>%s to %s. <b class='%s'>", s, e,
            g->now < a->end_ns ? "unfinished" : "finished");
    html_text(o, st);
    fprintf(o, ".</b> Hours of day seen: %d of 24.</p>\n",
            wt_assess_hours_count(wt_assess_hours_seen(a->start_ns, g->to)));
    fputs("<h2>What was measured</h2><table><tr><th>layer</th><th>at start</th><th>now</th>"
          "<th>coverage</th><th>gaps</th><th>longest gap (s)</th><th>to add it</th></tr>\n",
          o);
    for (unsigned i = 0; i < WT_ASSESS_NLAYERS; i++) {
        const struct wt_assess_cover *cv = &g->cv[i];
        unsigned lack = g->have_now ? g->now_layers : a->layers;
        fprintf(o,
                "<tr data-layer='%s'><td>%s</td><td>%s</td><td>%s</td><td>%.1f%%</td><td>%zu</td>"
                "<td>%.1f</td><td>",
                wt_assess_layer_name(i), wt_assess_layer_name(i),
                a->layers & (1u << i) ? "yes" : "no",
                !g->have_now                ? "?"
                : g->now_layers & (1u << i) ? "yes"
                                            : "no",
                cv->window_s > 0 ? 100 * cv->covered_s / cv->window_s : 0.0, cv->ngaps,
                cv->longest_gap_s);
        if (!(lack & (1u << i)))
            html_text(o, wt_assess_how_to[i]);
        fputs("</td></tr>\n", o);
    }
    fputs("</table><h2>Baseline against the rest</h2>", o);
    if (!sc->cmp) {
        fprintf(o, "<p>The baseline runs until %s: no comparison yet.</p></section>\n", b);
        return;
    }
    fprintf(o,
            "<p>Baseline: %s to %s; the rest: %s to %s.</p><table><tr><th>figure</th><th>unit</th>"
            "<th>baseline</th><th>rest</th><th>difference</th><th>noise</th><th>exceeds "
            "noise</th></tr>\n",
            s, b, b, e);
    for (size_t i = 0; i < WT_REPORT_FIGURES; i++) {
        struct cells x = cells_of(&sc->cmp->rows[i]);
        fprintf(o,
                "<tr data-figure='%s'><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                "<td>%s</td><td>%s</td></tr>\n",
                x.key, x.label, x.unit, x.a, x.b, x.d, x.nz, x.ex);
    }
    fputs("</table></section>\n", o);
}
