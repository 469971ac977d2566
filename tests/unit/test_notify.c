/* SPDX-License-Identifier: MIT */
/*
 * Delivery (src/alert/notify.c): the bodies, the exec hook's words and environment, and the
 * channels against a recording HTTP server in this process (tests/peers/notify_recorder.h) that
 * can refuse requests: retries deliver everything, in order for the webhook, coalesced per
 * fingerprint for Alertmanager; the exec hook gets the alert in its environment and on stdin,
 * is killed at its timeout and reaped; a full inbox drops instead of blocking.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alert/notify.h"
#include "core/clock.h"
#include "peers/notify_recorder.h"
#include "runner.h"
#include "serve/expo.h"

static uint64_t fnv(const char *name, const char *labels)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ 0) * 1099511628211ULL;
    for (const char *p = labels; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

static struct wt_alert mk(const char *name, int gpu, enum wt_alert_state st)
{
    struct wt_alert a;
    char g[16];
    int64_t now = wt_now_real_ns();
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "%s", name);
    snprintf(g, sizeof g, "%d", gpu);
    WT_ASSERT(wt_labels(a.labels, sizeof a.labels, "gpu", g, "uuid", "GPU-fake-0000-0", NULL) == 0);
    a.severity = WT_SEV_WARNING;
    a.state = st;
    snprintf(a.summary, sizeof a.summary, "GPU %d is hot", gpu);
    a.value = 91.5;
    a.active_since_ns = now - 10 * WT_NS_PER_S;
    a.fired_at_ns = now - 5 * WT_NS_PER_S;
    a.resolved_at_ns = st == WT_ALERT_RESOLVED ? now : 0;
    a.fingerprint = fnv(a.name, a.labels);
    a.gpu = gpu;
    return a;
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls until pending is 0, for at most s seconds. */
static bool drained(struct wt_notify *n, double s)
{
    for (int i = 0; i < s * 100; i++) {
        if (wt_notify_pending(n) == 0)
            return true;
        nap_ms(10);
    }
    return false;
}

static const char *jstr(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsString(x) ? x->valuestring : NULL;
}

WT_TEST(am_json_has_labels_annotations_and_times)
{
    struct wt_alert a[3] = {mk("GPUHot", 0, WT_ALERT_FIRING), mk("GPUHot", 1, WT_ALERT_RESOLVED),
                            mk("GPUHot", 2, WT_ALERT_FIRING)};
    WT_ASSERT(wt_labels_add(a[2].labels, sizeof a[2].labels, "node", "other") == 0);
    WT_ASSERT(wt_labels_add(a[2].labels, sizeof a[2].labels, "pci-bus", "00:1") == 0);
    WT_ASSERT(wt_labels_add(a[2].labels, sizeof a[2].labels, "empty", "") == 0);
    int64_t now = 1764439200LL * WT_NS_PER_S;
    a[1].resolved_at_ns = now - 3 * WT_NS_PER_S;
    char *s = wt_notify_am_json(a, 3, now, 240 * WT_NS_PER_S, "n1", "");
    WT_ASSERT(s);
    cJSON *arr = cJSON_Parse(s);
    WT_ASSERT(cJSON_IsArray(arr));
    WT_EQ_INT(cJSON_GetArraySize(arr), 3);
    cJSON *f = cJSON_GetArrayItem(arr, 0), *r = cJSON_GetArrayItem(arr, 1);
    WT_EQ_STR(jstr(f, "labels", "alertname"), "GPUHot");
    WT_EQ_STR(jstr(f, "labels", "severity"), "warning");
    WT_EQ_STR(jstr(f, "labels", "gpu"), "0");
    WT_EQ_STR(jstr(f, "labels", "uuid"), "GPU-fake-0000-0");
    WT_EQ_STR(jstr(f, "labels", "node"), "n1");
    WT_EQ_STR(jstr(f, "annotations", "summary"), "GPU 0 is hot");
    WT_EQ_STR(jstr(f, "annotations", "value"), "91.5");
    /* firing: valid for 4 minutes from now; resolved: ends when it resolved */
    WT_EQ_STR(jstr(f, "endsAt", NULL), "2025-11-29T18:04:00.000Z");
    WT_EQ_STR(jstr(r, "endsAt", NULL), "2025-11-29T17:59:57.000Z");
    WT_ASSERT(jstr(f, "startsAt", NULL));
    WT_ASSERT(!cJSON_GetObjectItemCaseSensitive(f, "generatorURL"));
    /* an alert that names its node keeps it */
    WT_EQ_STR(jstr(cJSON_GetArrayItem(arr, 2), "labels", "node"), "other");
    /* label names Alertmanager would refuse are made valid, empty values left out */
    WT_EQ_STR(jstr(cJSON_GetArrayItem(arr, 2), "labels", "pci_bus"), "00:1");
    WT_ASSERT(!jstr(cJSON_GetArrayItem(arr, 2), "labels", "empty"));
    cJSON_Delete(arr);
    free(s);
    s = wt_notify_am_json(a, 1, now, WT_NS_PER_S, "", "http://n1:9747/api/v1/alerts");
    arr = cJSON_Parse(s);
    WT_EQ_STR(jstr(cJSON_GetArrayItem(arr, 0), "generatorURL", NULL),
              "http://n1:9747/api/v1/alerts");
    WT_ASSERT(!jstr(cJSON_GetArrayItem(arr, 0), "labels", "node"));
    cJSON_Delete(arr);
    free(s);
}

WT_TEST(event_json_carries_the_transition)
{
    struct wt_alert a = mk("IdleBurn", 3, WT_ALERT_RESOLVED);
    a.fingerprint = 0xabcdef0123456789ULL;
    char *s = wt_notify_event_json(&a, "n1");
    cJSON *o = cJSON_Parse(s);
    WT_ASSERT(o);
    WT_EQ_STR(jstr(o, "alertname", NULL), "IdleBurn");
    WT_EQ_STR(jstr(o, "state", NULL), "resolved");
    WT_EQ_STR(jstr(o, "labels", "gpu"), "3");
    WT_EQ_STR(jstr(o, "fingerprint", NULL), "abcdef0123456789");
    WT_EQ_STR(jstr(o, "node", NULL), "n1");
    WT_ASSERT(jstr(o, "endsAt", NULL));
    WT_EQ_INT(cJSON_GetObjectItemCaseSensitive(o, "gpu")->valueint, 3);
    cJSON_Delete(o);
    free(s);
}

WT_TEST(split_words_quotes_and_errors)
{
    char buf[256], *argv[8];
    int argc;
    WT_EQ_INT(wt_notify_split("  /bin/hook 'a b' \"c \\\"d\\\"\" e\\ f $HOME ", buf, sizeof buf,
                              argv, 8, &argc),
              0);
    WT_EQ_INT(argc, 5);
    WT_EQ_STR(argv[0], "/bin/hook");
    WT_EQ_STR(argv[1], "a b");
    WT_EQ_STR(argv[2], "c \"d\"");
    WT_EQ_STR(argv[3], "e f");
    WT_EQ_STR(argv[4], "$HOME"); /* nothing is expanded */
    WT_ASSERT(argv[5] == NULL);
    WT_EQ_INT(wt_notify_split("hook 'open", buf, sizeof buf, argv, 8, &argc), -EINVAL);
    WT_EQ_INT(wt_notify_split("   ", buf, sizeof buf, argv, 8, &argc), -EINVAL);
    WT_EQ_INT(wt_notify_split("a b c d e f g h i", buf, sizeof buf, argv, 8, &argc), -E2BIG);
    WT_EQ_INT(wt_notify_split("abcdefghij", buf, 8, argv, 8, &argc), -E2BIG);
}

WT_TEST(exec_environment_replaces_and_adds)
{
    char e0[] = "PATH=/usr/bin", e1[] = "WATTAGE_ALERT_NAME=stale", e2[] = "HOME=/root";
    char *env[] = {e0, e1, e2, NULL};
    struct wt_alert a = mk("GPUHot", 2, WT_ALERT_FIRING);
    snprintf(a.summary, sizeof a.summary, "$(touch /tmp/x); `id`");
    char **e = wt_notify_env(env, &a);
    WT_ASSERT(e);
    int names = 0;
    bool path = false, summary = false, state = false, gpu = false, labels = false;
    for (int i = 0; e[i]; i++) {
        names += strncmp(e[i], "WATTAGE_ALERT_NAME=", 19) == 0;
        path |= strcmp(e[i], "PATH=/usr/bin") == 0;
        summary |= strcmp(e[i], "WATTAGE_ALERT_SUMMARY=$(touch /tmp/x); `id`") == 0;
        state |= strcmp(e[i], "WATTAGE_ALERT_STATE=firing") == 0;
        gpu |= strcmp(e[i], "WATTAGE_ALERT_GPU=2") == 0;
        labels |= strcmp(e[i], "WATTAGE_ALERT_LABELS=gpu=\"2\",uuid=\"GPU-fake-0000-0\"") == 0;
        if (strncmp(e[i], "WATTAGE_ALERT_NAME=", 19) == 0)
            WT_EQ_STR(e[i], "WATTAGE_ALERT_NAME=GPUHot");
    }
    WT_EQ_INT(names, 1);
    WT_ASSERT(path && summary && state && gpu && labels);
    wt_notify_env_free(e);
}

WT_TEST(backoff_doubles_to_its_cap)
{
    WT_EQ_INT(wt_notify_backoff(1, 30 * WT_NS_PER_S), WT_NS_PER_S / 2);
    WT_EQ_INT(wt_notify_backoff(2, 30 * WT_NS_PER_S), WT_NS_PER_S);
    WT_EQ_INT(wt_notify_backoff(4, 30 * WT_NS_PER_S), 4 * WT_NS_PER_S);
    WT_EQ_INT(wt_notify_backoff(40, 30 * WT_NS_PER_S), 30 * WT_NS_PER_S);
    WT_EQ_INT(wt_notify_backoff(3, WT_NS_PER_S), WT_NS_PER_S);
}

WT_TEST(no_channel_no_thread)
{
    struct wt_alerts_config c;
    struct wt_notify *n = (struct wt_notify *)1;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    WT_ASSERT(n == NULL);
    struct wt_alert a = mk("X", 0, WT_ALERT_FIRING);
    wt_notify_post(NULL, &a);
    wt_notify_close(NULL);
}

WT_TEST(exec_command_checked_at_open)
{
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.exec.command, sizeof c.exec.command, "/bin/hook 'unclosed");
    WT_EQ_INT(wt_notify_open(&c, &n, &err), -EINVAL);
    WT_ASSERT(n == NULL);
    WT_CONTAINS(err.msg, "alerts.exec.command");
}

WT_TEST(webhook_each_transition_in_order_after_retries)
{
    static struct rec r;
    r.fail_next = 2;
    WT_EQ_INT(rec_start(&r, 0), 0);
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.webhook.url, sizeof c.webhook.url, "http://127.0.0.1:%d/hook", r.port);
    c.webhook.timeout_ns = 2 * WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    WT_ASSERT(n);
    struct wt_alert a1 = mk("GPUHot", 0, WT_ALERT_FIRING), a2 = mk("GPUHot", 0, WT_ALERT_RESOLVED),
                    b1 = mk("IdleBurn", 1, WT_ALERT_FIRING);
    struct wt_alert pend = mk("GPUHot", 5, WT_ALERT_PENDING);
    wt_notify_post(n, &a1);
    wt_notify_post(n, &pend); /* not a delivered state */
    wt_notify_post(n, &a2);
    wt_notify_post(n, &b1);
    WT_ASSERT(drained(n, 20));
    WT_EQ_INT(rec_count(&r), 3);
    WT_EQ_INT(rec_requests(&r), 5);
    const char *want[3][2] = {{"GPUHot", "firing"}, {"GPUHot", "resolved"}, {"IdleBurn", "firing"}};
    for (int i = 0; i < 3; i++) {
        char *b = rec_body(&r, (size_t)i);
        cJSON *o = cJSON_Parse(b);
        WT_EQ_STR(jstr(o, "alertname", NULL), want[i][0]);
        WT_EQ_STR(jstr(o, "state", NULL), want[i][1]);
        WT_EQ_STR(r.paths[i], "/hook");
        cJSON_Delete(o);
        free(b);
    }
    struct wt_notify_stats st;
    wt_notify_stats(n, &st);
    WT_EQ_INT(st.webhook_sent, 3);
    WT_EQ_INT(st.webhook_failures, 2);
    wt_notify_close(n);
    rec_stop(&r);
}

/* How many alerts of this name the body (a JSON array) holds, and the state of the last. */
static int am_find(const char *body, const char *name, const char *gpu, bool *resolved)
{
    cJSON *arr = cJSON_Parse(body);
    int k = 0;
    cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        if (strcmp(jstr(o, "labels", "alertname"), name) == 0 &&
            strcmp(jstr(o, "labels", "gpu"), gpu) == 0) {
            k++;
            /* resolved: endsAt is not in the future */
            int64_t ends;
            WT_EQ_INT(wt_time_parse(jstr(o, "endsAt", NULL), 0, &ends), 0);
            *resolved = ends <= wt_now_real_ns();
        }
    }
    cJSON_Delete(arr);
    return k;
}

WT_TEST(alertmanager_coalesces_while_down_and_resends_firing)
{
    static struct rec r;
    WT_EQ_INT(rec_start(&r, 0), 0);
    rec_set_down(&r, true);
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.alertmanager.url, sizeof c.alertmanager.url, "http://127.0.0.1:%d/", r.port);
    c.alertmanager.resend_ns = WT_NS_PER_S;
    c.alertmanager.timeout_ns = 2 * WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    /* A flaps many times while Alertmanager is down, B fires once. */
    for (int i = 0; i < 10; i++) {
        struct wt_alert a = mk("GPUHot", 0, i % 2 ? WT_ALERT_RESOLVED : WT_ALERT_FIRING);
        wt_notify_post(n, &a);
    }
    struct wt_alert b = mk("IdleBurn", 1, WT_ALERT_FIRING);
    wt_notify_post(n, &b);
    struct wt_notify_stats st;
    for (int i = 0; i < 500; i++) {
        wt_notify_stats(n, &st);
        if (st.am_failures >= 2)
            break;
        nap_ms(10);
    }
    WT_ASSERT(st.am_failures >= 2);
    WT_EQ_INT(rec_count(&r), 0);
    WT_EQ_INT(wt_notify_pending(n), 2); /* one state per fingerprint waits */
    rec_set_down(&r, false);
    WT_ASSERT(drained(n, 20));
    /* The first delivered batch carries the latest state of each: A resolved, B firing. */
    char *body = rec_body(&r, 0);
    bool res = false;
    WT_EQ_STR(r.paths[0], "/api/v2/alerts");
    WT_EQ_INT(am_find(body, "GPUHot", "0", &res), 1);
    WT_ASSERT(res);
    WT_EQ_INT(am_find(body, "IdleBurn", "1", &res), 1);
    WT_ASSERT(!res);
    free(body);
    /* B is firing: sent again every second; A, resolved and delivered, never again. */
    size_t before = rec_count(&r);
    for (int i = 0; i < 400 && rec_count(&r) < before + 2; i++)
        nap_ms(10);
    WT_ASSERT(rec_count(&r) >= before + 2);
    for (size_t i = 1; i < rec_count(&r); i++) {
        body = rec_body(&r, i);
        WT_EQ_INT(am_find(body, "GPUHot", "0", &res), 0);
        WT_EQ_INT(am_find(body, "IdleBurn", "1", &res), 1);
        WT_ASSERT(!res);
        free(body);
    }
    /* Resolving B: delivered once with its end, then B is no longer re-sent. */
    b = mk("IdleBurn", 1, WT_ALERT_RESOLVED);
    wt_notify_post(n, &b);
    WT_ASSERT(drained(n, 10));
    size_t last = rec_count(&r) - 1;
    body = rec_body(&r, last);
    WT_EQ_INT(am_find(body, "IdleBurn", "1", &res), 1);
    WT_ASSERT(res);
    free(body);
    nap_ms(1500);
    WT_EQ_INT(rec_count(&r), last + 1);
    wt_notify_close(n);
    rec_stop(&r);
}

WT_TEST(close_flushes_what_is_waiting)
{
    static struct rec r;
    WT_EQ_INT(rec_start(&r, 0), 0);
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.alertmanager.url, sizeof c.alertmanager.url, "http://127.0.0.1:%d", r.port);
    snprintf(c.webhook.url, sizeof c.webhook.url, "http://127.0.0.1:%d/w", r.port);
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    struct wt_alert a = mk("GPUHot", 0, WT_ALERT_FIRING);
    wt_notify_post(n, &a);
    wt_notify_close(n);
    WT_EQ_INT(rec_count(&r), 2);
    rec_stop(&r);
}

WT_TEST(exec_hook_gets_env_and_stdin_never_a_shell)
{
    char out[100], pwned[100];
    WT_ASSERT(strlen(wt_test_dir()) < 80);
    snprintf(out, sizeof out, "%.80s/hook.out", wt_test_dir());
    snprintf(pwned, sizeof pwned, "%.80s/pwned", wt_test_dir());
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.exec.command, sizeof c.exec.command, "'%s' '%s'",
             wt_test_src_path("tests/peers/notify_hook.sh"), out);
    c.exec.timeout_ns = 5 * WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    struct wt_alert a = mk("GPUHot", 4, WT_ALERT_FIRING);
    snprintf(a.summary, sizeof a.summary, "hot $(touch %.60s) `touch %.60s`; touch %.60s", pwned,
             pwned, pwned);
    wt_notify_post(n, &a);
    a.state = WT_ALERT_RESOLVED;
    a.resolved_at_ns = wt_now_real_ns();
    wt_notify_post(n, &a);
    WT_ASSERT(drained(n, 15));
    wt_notify_close(n);
    char *s = wt_test_read(out, NULL);
    WT_ASSERT(s);
    WT_CONTAINS(s, "WATTAGE_ALERT_NAME=GPUHot\n");
    WT_CONTAINS(s, "WATTAGE_ALERT_STATE=firing\n");
    WT_CONTAINS(s, "WATTAGE_ALERT_STATE=resolved\n");
    WT_CONTAINS(s, "WATTAGE_ALERT_SEVERITY=warning\n");
    WT_CONTAINS(s, "WATTAGE_ALERT_LABELS=gpu=\"4\",uuid=\"GPU-fake-0000-0\"\n");
    WT_CONTAINS(s, "WATTAGE_ALERT_VALUE=91.5\n");
    WT_CONTAINS(s, "WATTAGE_ALERT_SUMMARY=hot $(touch ");
    WT_CONTAINS(s, "stdin={\"alertname\":\"GPUHot\",\"state\":\"firing\"");
    WT_ASSERT(strstr(strstr(s, "--- call") + 1, "--- call")); /* two calls */
    free(s);
    struct stat sb;
    WT_ASSERT(stat(pwned, &sb) != 0);
    /* every hook was reaped */
    WT_ASSERT(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

WT_TEST(exec_hook_killed_at_timeout_and_reaped)
{
    char cmd[256];
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    /* It ignores SIGTERM (and so does its sleep): only SIGKILL ends it. */
    snprintf(cmd, sizeof cmd, "/bin/sh -c 'trap \"\" TERM; sleep 30; exit 0'");
    snprintf(c.exec.command, sizeof c.exec.command, "%s", cmd);
    c.exec.timeout_ns = 300 * WT_NS_PER_MS;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    struct wt_alert a = mk("GPUHot", 0, WT_ALERT_FIRING);
    wt_notify_post(n, &a);
    WT_ASSERT(drained(n, 10));
    struct wt_notify_stats st;
    wt_notify_stats(n, &st);
    WT_EQ_INT(st.exec_runs, 1);
    WT_EQ_INT(st.exec_timeouts, 1);
    WT_EQ_INT(st.exec_failures, 1);
    wt_notify_close(n);
    WT_ASSERT(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

WT_TEST(exec_hook_missing_program_is_logged)
{
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.exec.command, sizeof c.exec.command, "/nonexistent/hook arg");
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    struct wt_alert a = mk("GPUHot", 0, WT_ALERT_FIRING);
    wt_notify_post(n, &a);
    WT_ASSERT(drained(n, 10));
    struct wt_notify_stats st;
    wt_notify_stats(n, &st);
    WT_EQ_INT(st.exec_failures, 1);
    wt_notify_close(n);
}

WT_TEST(post_never_blocks_a_full_inbox_drops_the_oldest)
{
    static struct rec r;
    WT_EQ_INT(rec_start(&r, 0), 0);
    rec_set_down(&r, true);
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.webhook.url, sizeof c.webhook.url, "http://127.0.0.1:%d/w", r.port);
    c.webhook.timeout_ns = WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    for (int i = 0; i < 3000; i++) {
        struct wt_alert a = mk("Flood", i, WT_ALERT_FIRING);
        wt_notify_post(n, &a);
    }
    WT_ASSERT(wt_notify_pending(n) <= WT_NOTIFY_QUEUE + 1);
    /* the same alert in the same state again merges with the one waiting */
    size_t p = wt_notify_pending(n);
    struct wt_alert again = mk("Flood", 2999, WT_ALERT_FIRING);
    wt_notify_post(n, &again);
    WT_EQ_INT(wt_notify_pending(n), p);
    struct wt_notify_stats st;
    wt_notify_stats(n, &st);
    WT_ASSERT(st.webhook_dropped >= 3000 - WT_NOTIFY_QUEUE - 1);
    wt_notify_close(n);
    rec_stop(&r);
}

WT_TEST(close_does_not_wait_out_a_slow_hook)
{
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.exec.command, sizeof c.exec.command, "sleep 600");
    c.exec.timeout_ns = 600 * WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    struct wt_alert a = mk("GPUHot", 0, WT_ALERT_FIRING);
    wt_notify_post(n, &a);
    struct wt_notify_stats st;
    for (int i = 0; i < 500; i++) {
        wt_notify_stats(n, &st);
        if (st.exec_runs == 1)
            break;
        nap_ms(10);
    }
    WT_EQ_INT(st.exec_runs, 1);
    /* close returns (within its bound, not 600 s) with the hook killed and reaped */
    wt_notify_close(n);
    WT_ASSERT(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

/* The state of each webhook body received, in order, for alert name (one letter each: F, R). */
static void rec_states(struct rec *r, const char *name, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; k + 1 < n; i++) {
        char *b = rec_body(r, i);
        if (!b)
            break;
        cJSON *o = cJSON_Parse(b);
        const char *an = jstr(o, "alertname", NULL), *st = jstr(o, "state", NULL);
        if (an && st && strcmp(an, name) == 0)
            out[k++] = strcmp(st, "firing") == 0 ? 'F' : strcmp(st, "resolved") == 0 ? 'R' : '?';
        cJSON_Delete(o);
        free(b);
    }
    out[k] = '\0';
}

WT_TEST(webhook_down_while_an_alert_flaps_gets_every_transition_in_order)
{
    static struct rec r;
    WT_EQ_INT(rec_start(&r, 0), 0);
    rec_set_down(&r, true);
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.webhook.url, sizeof c.webhook.url, "http://127.0.0.1:%d/hook", r.port);
    c.webhook.timeout_ns = 2 * WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    /* Five times firing then resolved while the receiver answers 503; another alert fires in
     * the middle. The first transition is in the thread's hands, the rest wait. */
    for (int i = 0; i < 5; i++) {
        struct wt_alert f = mk("GPUHot", 0, WT_ALERT_FIRING),
                        res = mk("GPUHot", 0, WT_ALERT_RESOLVED);
        f.value = i;
        res.value = i;
        wt_notify_post(n, &f);
        nap_ms(20);
        wt_notify_post(n, &res);
        if (i == 2) {
            struct wt_alert b = mk("IdleBurn", 1, WT_ALERT_FIRING);
            wt_notify_post(n, &b);
        }
        nap_ms(20);
    }
    WT_EQ_INT(wt_notify_pending(n), 11);
    struct wt_notify_stats st;
    for (int i = 0; i < 500; i++) {
        wt_notify_stats(n, &st);
        if (st.webhook_failures >= 2)
            break;
        nap_ms(10);
    }
    WT_ASSERT(st.webhook_failures >= 2);
    rec_set_down(&r, false);
    WT_ASSERT(drained(n, 30));
    char got[64];
    rec_states(&r, "GPUHot", got, sizeof got);
    WT_EQ_STR(got, "FRFRFRFRFR");
    /* in order: each transition carries the value of its round */
    for (size_t i = 0, k = 0; i < rec_count(&r); i++) {
        char *b = rec_body(&r, i);
        cJSON *o = cJSON_Parse(b);
        if (strcmp(jstr(o, "alertname", NULL), "GPUHot") == 0) {
            WT_EQ_INT(cJSON_GetObjectItemCaseSensitive(o, "value")->valueint, (int)(k / 2));
            k++;
        } else {
            WT_EQ_INT(i, 6); /* after round 2's resolution */
        }
        cJSON_Delete(o);
        free(b);
    }
    WT_EQ_INT(rec_count(&r), 11);
    wt_notify_stats(n, &st);
    WT_EQ_INT(st.webhook_sent, 11);
    WT_EQ_INT(st.webhook_dropped, 0);
    wt_notify_close(n);
    rec_stop(&r);
}

WT_TEST(exec_hook_runs_every_transition_in_order_while_busy)
{
    char out[100], cmd[256];
    WT_ASSERT(strlen(wt_test_dir()) < 80);
    snprintf(out, sizeof out, "%.80s/states", wt_test_dir());
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    /* A slow hook: everything after the first transition waits in the inbox. */
    snprintf(cmd, sizeof cmd,
             "/bin/sh -c 'echo \"$WATTAGE_ALERT_STATE $WATTAGE_ALERT_VALUE\" >>\"$1\"; sleep 0.1' "
             "hook '%s'",
             out);
    snprintf(c.exec.command, sizeof c.exec.command, "%s", cmd);
    c.exec.timeout_ns = 5 * WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    for (int i = 0; i < 5; i++) {
        struct wt_alert f = mk("GPUHot", 0, WT_ALERT_FIRING),
                        res = mk("GPUHot", 0, WT_ALERT_RESOLVED);
        f.value = res.value = i;
        wt_notify_post(n, &f);
        wt_notify_post(n, &res);
    }
    WT_ASSERT(drained(n, 30));
    wt_notify_close(n);
    char *s = wt_test_read(out, NULL);
    WT_ASSERT(s);
    WT_EQ_STR(s, "firing 0\nresolved 0\nfiring 1\nresolved 1\nfiring 2\nresolved 2\n"
                 "firing 3\nresolved 3\nfiring 4\nresolved 4\n");
    free(s);
    WT_ASSERT(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

static const struct wt_notify_health *health_of(struct wt_notify *n, const char *channel,
                                                struct wt_notify_health *h)
{
    size_t k = wt_notify_health(n, h, 3);
    for (size_t i = 0; i < k && i < 3; i++)
        if (strcmp(h[i].channel, channel) == 0)
            return &h[i];
    return NULL;
}

/* The value of the family's sample for channel, or NAN. */
static double fam_value(struct wt_notify *n, enum wt_notify_family which, const char *channel,
                        const char *want_name)
{
    struct wt_expo_family f;
    char l[64];
    double v = NAN;
    WT_EQ_INT(wt_notify_family(n, which, wt_now_mono_ns(), &f), 0);
    WT_EQ_STR(f.name, want_name);
    snprintf(l, sizeof l, "channel=\"%s\"", channel);
    for (size_t i = 0; i < f.n; i++)
        if (strcmp(f.s[i].labels, l) == 0)
            v = f.s[i].value;
    free(f.s);
    return v;
}

WT_TEST(health_counts_a_dead_receiver_and_its_recovery)
{
    static struct rec r;
    WT_EQ_INT(rec_start(&r, 0), 0);
    rec_set_down(&r, true);
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.webhook.url, sizeof c.webhook.url, "http://127.0.0.1:%d/hook", r.port);
    snprintf(c.alertmanager.url, sizeof c.alertmanager.url, "http://127.0.0.1:%d", r.port);
    c.webhook.timeout_ns = c.alertmanager.timeout_ns = 2 * WT_NS_PER_S;
    c.alertmanager.resend_ns = 60 * WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    struct wt_notify_health h[3];
    const struct wt_notify_health *w = health_of(n, "webhook", h);
    WT_ASSERT(w && !w->failing_since_mono && w->queued == 0 && w->oldest_mono == 0);
    int64_t t_post = wt_now_mono_ns();
    for (int i = 0; i < 3; i++) {
        struct wt_alert a = mk("GPUHot", i, WT_ALERT_FIRING);
        wt_notify_post(n, &a);
    }
    for (int i = 0; i < 500; i++) {
        w = health_of(n, "webhook", h);
        if (w->failed >= 2 && health_of(n, "alertmanager", h + 1)->failed >= 2)
            break;
        nap_ms(10);
    }
    nap_ms(300);
    w = health_of(n, "webhook", h);
    WT_ASSERT(w->failed >= 2);
    WT_EQ_INT(w->sent, 0);
    WT_EQ_INT(w->dropped, 0);
    WT_EQ_INT(w->queued, 3);
    WT_ASSERT(w->failing_since_mono >= t_post);
    WT_ASSERT(w->oldest_mono >= t_post && w->oldest_mono <= w->failing_since_mono);
    WT_CONTAINS(w->error, "HTTP 503");
    const struct wt_notify_health *am = health_of(n, "alertmanager", h + 1);
    WT_EQ_INT(am->queued, 3); /* three alerts, one state each */
    WT_ASSERT(am->failing_since_mono > 0 && am->oldest_mono > 0);
    /* the same on /metrics, per channel */
    WT_EQ_INT(fam_value(n, WT_NOTIFY_FAM_QUEUED, "webhook", "wattage_alert_notifications_queued"),
              3);
    WT_ASSERT(fam_value(n, WT_NOTIFY_FAM_FAILED, "webhook",
                        "wattage_alert_notifications_failed_total") >= 2);
    WT_EQ_INT(fam_value(n, WT_NOTIFY_FAM_SENT, "webhook", "wattage_alert_notifications_sent_total"),
              0);
    WT_EQ_INT(fam_value(n, WT_NOTIFY_FAM_DROPPED, "alertmanager",
                        "wattage_alert_notifications_dropped_total"),
              0);
    double age = fam_value(n, WT_NOTIFY_FAM_OLDEST, "webhook",
                           "wattage_alert_notification_oldest_pending_seconds");
    WT_ASSERT(age >= 0.3 && age < 60);
    WT_ASSERT(isnan(fam_value(n, WT_NOTIFY_FAM_SENT, "exec",
                              "wattage_alert_notifications_sent_total"))); /* not configured */
    int64_t since;
    char why[256];
    WT_ASSERT(wt_notify_failing(n, wt_now_mono_ns(), &since, why, sizeof why));
    WT_CONTAINS(why, "webhook: HTTP 503");
    WT_CONTAINS(why, "alertmanager: HTTP 503");
    WT_ASSERT(since > 0 && since <= w->failing_since_mono);

    rec_set_down(&r, false);
    WT_ASSERT(drained(n, 30));
    w = health_of(n, "webhook", h);
    WT_EQ_INT(w->sent, 3);
    WT_EQ_INT(w->queued, 0);
    WT_EQ_INT(w->oldest_mono, 0);
    WT_EQ_INT(w->failing_since_mono, 0);
    am = health_of(n, "alertmanager", h + 1);
    WT_EQ_INT(am->sent, 3);
    WT_EQ_INT(am->failing_since_mono, 0);
    WT_EQ_INT(fam_value(n, WT_NOTIFY_FAM_OLDEST, "webhook",
                        "wattage_alert_notification_oldest_pending_seconds"),
              0);
    WT_EQ_INT(fam_value(n, WT_NOTIFY_FAM_SENT, "webhook", "wattage_alert_notifications_sent_total"),
              3);
    WT_ASSERT(!wt_notify_failing(n, wt_now_mono_ns(), &since, why, sizeof why));
    wt_notify_close(n);
    rec_stop(&r);
}

WT_TEST(queue_limit_drops_the_oldest_counts_it_and_keeps_the_order)
{
    static struct rec r;
    WT_EQ_INT(rec_start(&r, 0), 0);
    rec_set_down(&r, true);
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.webhook.url, sizeof c.webhook.url, "http://127.0.0.1:%d/w", r.port);
    c.webhook.timeout_ns = 2 * WT_NS_PER_S;
    c.delivery.queue_limit = 16;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    /* The first goes into the thread's hands (retried), then 39 more while it is down. */
    struct wt_alert first = mk("Flood", 0, WT_ALERT_FIRING);
    first.value = 0;
    wt_notify_post(n, &first);
    struct wt_notify_health h[3];
    for (int i = 0; i < 500 && health_of(n, "webhook", h)->failed == 0; i++)
        nap_ms(10);
    for (int i = 1; i < 40; i++) {
        struct wt_alert a = mk("Flood", i, WT_ALERT_FIRING);
        a.value = i;
        wt_notify_post(n, &a);
    }
    const struct wt_notify_health *w = health_of(n, "webhook", h);
    WT_EQ_INT(w->queued, 17);
    WT_EQ_INT(w->dropped, 40 - 17);
    rec_set_down(&r, false);
    WT_ASSERT(drained(n, 30));
    w = health_of(n, "webhook", h);
    WT_EQ_INT(w->sent, 17);
    WT_EQ_INT(w->sent + w->dropped, 40);
    /* what is left is the one in hand and the newest 16, in order */
    WT_EQ_INT(rec_count(&r), 17);
    for (size_t i = 0; i < 17; i++) {
        char *b = rec_body(&r, i);
        cJSON *o = cJSON_Parse(b);
        WT_EQ_INT(cJSON_GetObjectItemCaseSensitive(o, "value")->valueint,
                  i == 0 ? 0 : (int)(23 + i));
        cJSON_Delete(o);
        free(b);
    }
    wt_notify_close(n);
    rec_stop(&r);
}

WT_TEST(a_refused_transition_and_a_failing_hook_are_counted_failed_and_dropped)
{
    static struct rec r;
    WT_EQ_INT(rec_start(&r, 0), 0);
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.webhook.url, sizeof c.webhook.url, "http://127.0.0.1:%d/w", r.port);
    snprintf(c.exec.command, sizeof c.exec.command, "/bin/sh -c 'exit 3'");
    r.refuse_next = 1; /* the webhook refuses the first transition (HTTP 400) */
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    struct wt_alert a = mk("GPUHot", 0, WT_ALERT_FIRING);
    wt_notify_post(n, &a);
    WT_ASSERT(drained(n, 15));
    struct wt_notify_health h0[3];
    const struct wt_notify_health *w0 = health_of(n, "webhook", h0);
    WT_EQ_INT(w0->sent, 0);
    WT_EQ_INT(w0->failed, 1);
    WT_EQ_INT(w0->dropped, 1); /* not sent again: it would be refused again */
    WT_ASSERT(w0->failing_since_mono > 0);
    WT_CONTAINS(w0->error, "HTTP 400");
    a.state = WT_ALERT_RESOLVED;
    wt_notify_post(n, &a);
    WT_ASSERT(drained(n, 15));
    struct wt_notify_health h[3];
    const struct wt_notify_health *x = health_of(n, "exec", h);
    WT_EQ_INT(x->sent, 0);
    WT_EQ_INT(x->failed, 2);
    WT_EQ_INT(x->dropped, 2);
    WT_ASSERT(x->failing_since_mono > 0);
    WT_CONTAINS(x->error, "exited with status 3");
    /* the next delivery succeeds: the webhook is not failing any more */
    const struct wt_notify_health *w = health_of(n, "webhook", h + 1);
    WT_EQ_INT(w->sent, 1);
    WT_EQ_INT(w->failed, 1);
    WT_EQ_INT(w->failing_since_mono, 0);
    WT_EQ_INT(rec_count(&r), 1);
    wt_notify_close(n);
    rec_stop(&r);
}

WT_TEST(alertmanager_ends_in_the_engines_state_after_flapping_while_down)
{
    static struct rec r;
    WT_EQ_INT(rec_start(&r, 0), 0);
    rec_set_down(&r, true);
    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.alertmanager.url, sizeof c.alertmanager.url, "http://127.0.0.1:%d", r.port);
    c.alertmanager.resend_ns = WT_NS_PER_S;
    c.alertmanager.timeout_ns = 2 * WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);
    /* Firing, resolved five times, then firing again (and staying so), while it is down; some
     * posts land while a failed POST is in flight. */
    for (int i = 0; i < 11; i++) {
        struct wt_alert a = mk("GPUHot", 0, i % 2 ? WT_ALERT_RESOLVED : WT_ALERT_FIRING);
        wt_notify_post(n, &a);
        nap_ms(15);
    }
    struct wt_notify_stats st;
    for (int i = 0; i < 500; i++) {
        wt_notify_stats(n, &st);
        if (st.am_failures >= 2)
            break;
        nap_ms(10);
    }
    rec_set_down(&r, false);
    WT_ASSERT(drained(n, 20));
    /* Every body sent after the outage says firing; it is re-sent as firing. */
    size_t first = rec_count(&r);
    WT_ASSERT(first >= 1);
    for (int i = 0; i < 400 && rec_count(&r) < first + 2; i++)
        nap_ms(10);
    WT_ASSERT(rec_count(&r) >= first + 2);
    for (size_t i = 0; i < rec_count(&r); i++) {
        char *body = rec_body(&r, i);
        bool res = true;
        WT_EQ_INT(am_find(body, "GPUHot", "0", &res), 1);
        WT_ASSERT(!res);
        free(body);
    }
    wt_notify_close(n);
    rec_stop(&r);
}
