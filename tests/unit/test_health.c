/* SPDX-License-Identifier: MIT */
/* Readiness reasons: reported ones, those a snapshot shows (lost GPUs, targets down), the clock
 * through its seam, and the JSON the endpoints answer. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timex.h>

#include "core/health.h"
#include "runner.h"

static int clock_synced(struct timex *tx)
{
    tx->status = STA_PLL;
    return TIME_OK;
}

static int clock_unsynced(struct timex *tx)
{
    tx->status = STA_UNSYNC;
    return TIME_ERROR;
}

WT_TEST(reported_reasons_set_update_and_clear)
{
    struct wt_health_reason r[8];
    wt_health_reset();
    wt_health_set_adjtimex(clock_synced);
    WT_EQ_INT(wt_health_collect(NULL, r, 8), 0);
    wt_health_report("store", NULL, false, "writes failing: %s", "disk full");
    wt_health_report("alerts", "webhook", false, "delivery failing for %d s", 30);
    wt_health_report("store", NULL, false, "writes failing: %s", "I/O error"); /* updates */
    WT_EQ_INT(wt_health_collect(NULL, r, 8), 2);
    WT_EQ_STR(r[0].component, "store");
    WT_EQ_STR(r[0].message, "writes failing: I/O error");
    WT_EQ_STR(r[1].key, "webhook");
    wt_health_report("store", "", true, " ");
    WT_EQ_INT(wt_health_collect(NULL, r, 8), 1);
    WT_EQ_STR(r[0].component, "alerts");
    /* More than fit: the count says so, out holds what fits. */
    WT_EQ_INT(wt_health_collect(NULL, r, 0), 1);
    wt_health_reset();
    wt_health_set_adjtimex(NULL);
}

WT_TEST(lost_gpus_and_targets_down_come_from_the_snapshot)
{
    struct wt_batch b = {0};
    struct wt_health_reason r[8];
    char l[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(l, sizeof l, "gpu", "0", "uuid", "GPU-a", NULL), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_UP, l, 1, 1), 0);
    WT_EQ_INT(wt_labels(l, sizeof l, "gpu", "3", "uuid", "GPU-d", NULL), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_UP, l, 1, 0), 0);
    WT_EQ_INT(wt_labels(l, sizeof l, "source", "snmp", "target", "pdu-a", NULL), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_UP, l, 1, 0), 0);
    WT_EQ_INT(wt_labels(l, sizeof l, "source", "modbus", "target", "meter", NULL), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_UP, l, 1, 1), 0);
    WT_EQ_INT(wt_health_from_snapshot(&b, r, 8), 2);
    WT_EQ_STR(r[0].component, "gpu");
    WT_EQ_STR(r[0].key, "3");
    WT_CONTAINS(r[0].message, "GPU 3 (GPU-d) stopped answering");
    WT_EQ_STR(r[1].component, "facility");
    WT_EQ_STR(r[1].key, "pdu-a");
    WT_CONTAINS(r[1].message, "snmp target pdu-a did not answer");
    wt_batch_free(&b);
}

WT_TEST(unsynchronised_clock_is_a_reason)
{
    struct wt_health_reason r[4];
    char why[200];
    wt_health_reset();
    wt_health_set_adjtimex(clock_unsynced);
    WT_ASSERT(!wt_health_clock_synced(why, sizeof why));
    WT_CONTAINS(why, "not synchronised (STA_UNSYNC)");
    WT_EQ_INT(wt_health_collect(NULL, r, 4), 1);
    WT_EQ_STR(r[0].component, "clock");
    wt_health_set_adjtimex(clock_synced);
    WT_ASSERT(wt_health_clock_synced(why, sizeof why));
    WT_EQ_INT(wt_health_collect(NULL, r, 4), 0);
    wt_health_set_adjtimex(NULL);
}

WT_TEST(json_says_status_and_reasons)
{
    struct wt_health_reason r[2] = {{"store", "", "writes failing"}, {"gpu", "2", "lost"}};
    char *s = wt_health_json(r, 2);
    WT_ASSERT(s != NULL);
    WT_EQ_STR(s,
              "{\"status\":\"degraded\",\"reasons\":[{\"component\":\"store\",\"message\":"
              "\"writes failing\"},{\"component\":\"gpu\",\"key\":\"2\",\"message\":\"lost\"}]}");
    free(s);
    s = wt_health_json(r, 0);
    WT_EQ_STR(s, "{\"status\":\"ok\",\"reasons\":[]}");
    free(s);
    s = wt_health_json_into("{\"gpus\":[]}", r, 1, false);
    WT_EQ_STR(s, "{\"gpus\":[],\"health\":{\"status\":\"degraded\",\"reasons\":[{\"component\":"
                 "\"store\",\"message\":\"writes failing\"}]}}");
    free(s);
    WT_ASSERT(wt_health_json_into("[1]", r, 1, false) == NULL);
}

static bool probe_state;
static char probe_why[] = "webhook: HTTP 503";
static bool probe(void *ctx, char *why, size_t n)
{
    snprintf(why, n, "%s", (const char *)ctx);
    return probe_state;
}

/* A probe is asked at each collect; removed, it is asked no more. */
WT_TEST(probes_answer_at_collect)
{
    struct wt_health_reason r[4];
    wt_health_reset();
    wt_health_set_adjtimex(clock_synced);
    WT_EQ_INT(wt_health_add_probe("alerts", probe, probe_why), 0);
    probe_state = false;
    WT_EQ_INT(wt_health_collect(NULL, r, 4), 0);
    probe_state = true;
    WT_EQ_INT(wt_health_collect(NULL, r, 4), 1);
    WT_EQ_STR(r[0].component, "alerts");
    WT_EQ_STR(r[0].message, "webhook: HTTP 503");
    wt_health_remove_probe(probe, probe_why);
    WT_EQ_INT(wt_health_collect(NULL, r, 4), 0);
    wt_health_set_adjtimex(NULL);
}
