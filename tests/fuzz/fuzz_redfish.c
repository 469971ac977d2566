/* SPDX-License-Identifier: MIT */
/*
 * Redfish JSON: a whole service given as the input, walked and polled by the collector as over
 * HTTP (the requests go to wt_redfish_serve's stand-in instead of the network): the walk from
 * /redfish/v1 through PowerEquipment, ThermalEquipment and Chassis, and the parsers of every
 * resource kind (EnvironmentMetrics, PowerSubsystem, Sensors, outlets and mains with their
 * phases, coolant connectors, the legacy Power and Thermal resources). The input is the
 * service's resources, each a line ">PATH" and its JSON body up to the next line starting with
 * '>'; a path not given is a 404. Two polls of one state must give finite readings and energy
 * totals that never go down. Seeds: tests/fuzz/seeds.sh makes them from the DMTF mockups and
 * the vendor responses in ../shared/data/redfish.
 */
#include "collect/redfish.h"
#include "core/config.h"
#include "fuzz.h"

#define T0 (1764439200LL * 1000000000LL)

static const char cfg_text[] = "collectors:\n"
                               "  redfish:\n"
                               "    targets:\n"
                               "      - name: fz\n"
                               "        url: http://127.0.0.1:9\n"
                               "        max_response_bytes: 1048576\n";

static struct wt_config cfg;

static void cleanup(void)
{
    wt_config_free(&cfg);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct wt_err err = {{0}};
    fuzz_quiet();
    wt_config_defaults(&cfg);
    FUZZ_CHECK(wt_config_load_string("fuzz.yaml", cfg_text, sizeof cfg_text - 1, &cfg, &err) == 0);
    atexit(cleanup);
    return 0;
}

struct res {
    const char *path, *body;
    size_t plen, blen;
};

struct service {
    struct res *r;
    size_t n;
    unsigned gets;
};

static long serve(void *ctx, const char *method, const char *path, const char **body, size_t *len)
{
    struct service *sv = ctx;
    size_t pl = strlen(path);
    (void)method;
    sv->gets++;
    while (pl > 1 && path[pl - 1] == '/')
        pl--;
    for (size_t i = 0; i < sv->n; i++) {
        if (sv->r[i].plen == pl && memcmp(sv->r[i].path, path, pl) == 0) {
            *body = sv->r[i].body;
            *len = sv->r[i].blen;
            return 200;
        }
    }
    *body = NULL;
    *len = 0;
    return 404;
}

/* Splits the input into resources (pointing into text). */
static void split(const char *text, size_t size, struct service *sv)
{
    size_t cap = 16;
    sv->r = malloc(cap * sizeof *sv->r);
    FUZZ_CHECK(sv->r != NULL);
    for (size_t at = 0; at < size;) {
        const char *line = text + at, *end = text + size;
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t next = nl ? (size_t)(nl - text) + 1 : size;
        if (*line != '>') {
            at = next;
            continue;
        }
        struct res r = {line + 1, nl ? nl + 1 : end, (size_t)((nl ? nl : end) - line - 1), 0};
        while (r.plen > 1 && r.path[r.plen - 1] == '/')
            r.plen--;
        /* The body: up to the next line that starts with '>'. */
        at = next;
        while (at < size && text[at] != '>') {
            const char *q = memchr(text + at, '\n', size - at);
            at = q ? (size_t)(q - text) + 1 : size;
        }
        r.blen = (size_t)(text + at - r.body);
        if (sv->n == cap) {
            cap *= 2;
            sv->r = realloc(sv->r, cap * sizeof *sv->r);
            FUZZ_CHECK(sv->r != NULL);
        }
        sv->r[sv->n++] = r;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct service sv = {0};
    struct wt_err err = {{0}};
    struct wt_batch prev = {0}, cur = {0};
    void *state = NULL;
    split((const char *)data, size, &sv);
    FUZZ_CHECK(wt_redfish_collector.open_target(&cfg, 0, &state, &err) == 0);
    wt_redfish_serve(state, serve, &sv);
    for (int p = 0; p < 2; p++) {
        wt_batch_clear(&cur);
        int rc = wt_redfish_collector.poll(state, T0 + p * 10000000000LL, &cur, &err);
        fuzz_check_err(&err);
        if (rc == 0) {
            fuzz_check_batch(&cur);
            fuzz_check_monotone(&prev, &cur, WT_M_FAC_ENERGY_J);
        }
        struct wt_batch t = prev;
        prev = cur;
        cur = t;
    }
    wt_redfish_collector.close(state);
    wt_batch_free(&prev);
    wt_batch_free(&cur);
    free(sv.r);
    return 0;
}
