/* SPDX-License-Identifier: MIT */
/*
 * fleet_feed: a simulated fleet remote-written into an engine, for bench/fleet_query.sh. NODES
 * nodes ("node-000"...) of 8 GPUs each, SECONDS seconds at 1 s ending now: every GPU's
 * wattage_gpu_energy_joules_total rising at exactly 300 W, and one job "fleet-job" on every node
 * from 60 s after the start to 60 s before the end, with the series a daemon publishes for it
 * (wattage_job_info, _start_time_seconds, _end_time_seconds, _mark_time_seconds of two epochs),
 * encoded with the daemon's own encoder (serve/remote_write.h) in 2000-sample requests and
 * POSTed to URL. Prints the job's window and its exact energy (so the query can be checked) and
 * the ingest rate as JSON lines:
 *   fleet_feed URL [NODES] [SECONDS] [WORD...]    (default 256 nodes, 600 s)
 * WORDs: power (every GPU's wattage_gpu_power_watts too, at the same 300 W, for a report's
 * charts); sparse (node-000's GPUs read every 20 s, not every 1 s); leave (node-001, the last
 * node with one node, goes away 30 s after the job's first mark: none of its series after that,
 * no end or second mark for it; its energy up to its last reading is printed apart, and the job's
 * energy is the other nodes' plus it).
 */
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/reading.h"
#include "serve/remote_write.h"
#include "store/cursor.h"

#define GPUS 8
#define BATCH 2000
#define WATTS 300.0

static int post(CURL *c, const char *url, const void *body, size_t len)
{
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, "Content-Type: application/x-protobuf");
    h = curl_slist_append(h, "Content-Encoding: snappy");
    h = curl_slist_append(h, "X-Prometheus-Remote-Write-Version: 0.1.0");
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)len);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    if (rc != CURLE_OK || status / 100 != 2) {
        fprintf(stderr, "fleet_feed: %s: %s (HTTP %ld)\n", url, curl_easy_strerror(rc), status);
        return -1;
    }
    return 0;
}

static int add(struct wt_cursor_batch *b, uint32_t series, int64_t t, double v)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? 2 * b->cap : 4096;
        struct wt_cursor_sample *s = realloc(b->s, nc * sizeof *s);
        if (!s)
            return -1;
        b->s = s;
        b->cap = nc;
    }
    b->s[b->n++] = (struct wt_cursor_sample){.series = series, .t_ns = t, .v = v};
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fleet_feed URL [NODES] [SECONDS]\n");
        return 2;
    }
    const char *url = argv[1];
    int nodes = argc > 2 ? atoi(argv[2]) : 256, secs = argc > 3 ? atoi(argv[3]) : 600;
    bool power = false, sparse = false, leave = false;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "power") || !strcmp(argv[i], "sparse") || !strcmp(argv[i], "leave")) {
            *(argv[i][0] == 'p' ? &power : argv[i][0] == 's' ? &sparse : &leave) = true;
        } else {
            fprintf(stderr, "fleet_feed: %s: expected power, sparse or leave\n", argv[i]);
            return 2;
        }
    }
    int64_t now = wt_now_real_ns() / WT_NS_PER_S * WT_NS_PER_S;
    int64_t t0 = now - (int64_t)secs * WT_NS_PER_S;
    int64_t js = t0 + 60 * WT_NS_PER_S + 250 * 1000000, je = now - 60 * WT_NS_PER_S + 500 * 1000000;
    int64_t m1 = js + (je - js) / 2, m2 = je;
    int gone = leave ? (nodes > 1 ? 1 : 0) : -1; /* the node that leaves */
    /* its last reading: the last whole second of the feed at or before m1 + 30 s */
    int last_s = (int)((m1 + 30 * WT_NS_PER_S - t0) / WT_NS_PER_S);
    CURL *c = curl_easy_init();
    struct wt_cursor_batch b = {0};
    size_t samples = 0, bytes = 0;
    int64_t w0 = wt_now_mono_ns();
    for (int n = 0; n < nodes; n++) {
        char node[32], lb[WT_LABELS_LEN], g[8], uuid[48];
        struct wt_rw_encoder *e = NULL;
        snprintf(node, sizeof node, "node-%03d", n);
        if (wt_remote_write_encoder_open(node, &e) != 0)
            return 1;
        for (int i = 0; i < GPUS; i++) {
            snprintf(g, sizeof g, "%d", i);
            snprintf(uuid, sizeof uuid, "GPU-%03d-%d", n, i);
            if (wt_labels(lb, sizeof lb, "gpu", g, "uuid", uuid, "model", "NVIDIA H200", NULL) ||
                wt_remote_write_encoder_add(e, "wattage_gpu_energy_joules_total", lb) < 0)
                return 1;
        }
        /* the job's series, as the daemon's exporter publishes them (ids differ per node) */
        char id[16];
        snprintf(id, sizeof id, "%d", 100 + n % 7);
        static const char *const jm[] = {"wattage_job_info", "wattage_job_start_time_seconds",
                                         "wattage_job_end_time_seconds"};
        for (int k = 0; k < 3; k++) {
            if (k == 0 ? wt_labels(lb, sizeof lb, "id", id, "job", "fleet-job", "gpus", "", NULL)
                       : wt_labels(lb, sizeof lb, "id", id, "job", "fleet-job", NULL))
                return 1;
            if (wt_remote_write_encoder_add(e, jm[k], lb) < 0)
                return 1;
        }
        for (int k = 1; k <= 2; k++) {
            snprintf(g, sizeof g, "%d", k);
            if (wt_labels(lb, sizeof lb, "id", id, "job", "fleet-job", "kind", "epoch", "index", g,
                          NULL) ||
                wt_remote_write_encoder_add(e, "wattage_job_mark_time_seconds", lb) < 0)
                return 1;
        }
        /* with "power": each GPU's wattage_gpu_power_watts too, at WATTS */
        for (int i = 0; power && i < GPUS; i++) {
            snprintf(g, sizeof g, "%d", i);
            snprintf(uuid, sizeof uuid, "GPU-%03d-%d", n, i);
            if (wt_labels(lb, sizeof lb, "gpu", g, "uuid", uuid, "model", "NVIDIA H200", NULL) ||
                wt_remote_write_encoder_add(e, "wattage_gpu_power_watts", lb) < 0)
                return 1;
        }
        /* oldest first, series by series within each 2000-sample request */
        int per = BATCH / (GPUS + 5 + (power ? GPUS : 0));
        for (int s0 = 0; s0 <= secs; s0 += per) {
            b.n = 0;
            int s1 = s0 + per <= secs + 1 ? s0 + per : secs + 1;
            for (int i = 0; i < GPUS; i++) {
                for (int s = s0; s < s1; s++) {
                    if ((sparse && n == 0 && s % 20) || (n == gone && s > last_s))
                        continue;
                    add(&b, (uint32_t)i, t0 + (int64_t)s * WT_NS_PER_S, WATTS * s + 1000.0 * i);
                }
            }
            for (int k = 0; k < 5; k++) {
                for (int s = s0; s < s1; s++) {
                    int64_t t = t0 + (int64_t)s * WT_NS_PER_S;
                    bool ran = t >= js && t <= je + 60 * WT_NS_PER_S;
                    if (!ran || (k == 2 && t < je) || (k == 3 && t < m1) || (k == 4 && t < m2) ||
                        (n == gone && s > last_s))
                        continue;
                    double v = k == 0   ? 1
                               : k == 1 ? js / 1e9
                               : k == 2 ? je / 1e9
                               : k == 3 ? m1 / 1e9
                                        : m2 / 1e9;
                    add(&b, (uint32_t)(GPUS + k), t, v);
                }
            }
            for (int i = 0; power && i < GPUS; i++)
                for (int s = s0; s < s1; s++)
                    add(&b, (uint32_t)(GPUS + 5 + i), t0 + (int64_t)s * WT_NS_PER_S, WATTS);
            const char *body;
            size_t len;
            if (wt_remote_write_encode(e, &b, &body, &len, NULL) != 0 || post(c, url, body, len))
                return 1;
            samples += b.n;
            bytes += len;
        }
        wt_remote_write_encoder_close(e);
    }
    double wall = (double)(wt_now_mono_ns() - w0) / 1e9;
    double left = gone >= 0 ? GPUS * WATTS * (double)(t0 + last_s * WT_NS_PER_S - js) / 1e9 : 0;
    double joules = (double)(nodes - (gone >= 0)) * GPUS * WATTS * (double)(je - js) / 1e9 + left;
    printf("{\"job\": \"fleet-job\", \"start_s\": %.3f, \"end_s\": %.3f, \"energy_joules\": %.3f",
           js / 1e9, je / 1e9, joules);
    if (gone >= 0)
        printf(", \"left_node\": \"node-%03d\", \"left_s\": %.3f, \"left_energy_joules\": %.3f",
               gone, (t0 + last_s * WT_NS_PER_S) / 1e9, left);
    printf("}\n");
    printf("{\"section\": \"Fleet\", \"what\": \"%d nodes x %d GPUs x %d s remote-written into the "
           "engine (one sender)\", \"unit\": \"samples/s\", \"wattage\": %.0f}\n",
           nodes, GPUS, secs, (double)samples / wall);
    fprintf(stderr, "fleet_feed: %zu samples, %zu bytes in %.1f s\n", samples, bytes, wall);
    free(b.s);
    curl_easy_cleanup(c);
    return 0;
}
