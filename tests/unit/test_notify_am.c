/* SPDX-License-Identifier: MIT */
/*
 * Delivery against the real Prometheus Alertmanager (Debian's prometheus-alertmanager), started
 * here on a free loopback port with its own config and storage in the test's directory and no
 * clustering. Its receiver is a webhook to a recording server in this process, so what
 * Alertmanager itself notifies (firing, then resolved) is checked as well as its API.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alert/notify.h"
#include "core/clock.h"
#include "peers/notify_recorder.h"
#include "runner.h"

#define AM_BIN "/usr/bin/prometheus-alertmanager"

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof sa;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    WT_ASSERT(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    WT_ASSERT(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
    close(fd);
    return ntohs(sa.sin_port);
}

struct buf {
    char *s;
    size_t n;
};

static size_t on_data(char *p, size_t size, size_t nmemb, void *ctx)
{
    struct buf *b = ctx;
    size_t n = size * nmemb;
    char *ns = realloc(b->s, b->n + n + 1);
    if (!ns)
        return 0;
    memcpy(ns + b->n, p, n);
    b->s = ns;
    b->n += n;
    b->s[b->n] = '\0';
    return n;
}

/* GET url; returns the HTTP status (0 when no answer) and the body in *out (caller frees). */
static long http_get(const char *url, char **out)
{
    struct buf b = {NULL, 0};
    long status = 0;
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (curl_easy_perform(c) == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    if (out)
        *out = b.s;
    else
        free(b.s);
    return status;
}

static pid_t start_am(const char *dir, int port)
{
    char cfg[600], storage[600], listen[64], log[600];
    snprintf(cfg, sizeof cfg, "--config.file=%s/am.yml", dir);
    snprintf(storage, sizeof storage, "--storage.path=%s/data", dir);
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", port);
    snprintf(log, sizeof log, "%s/am.log", dir);
    pid_t pid = fork();
    WT_ASSERT(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(AM_BIN, AM_BIN, cfg, storage, listen, "--cluster.listen-address=", (char *)NULL);
        _exit(127);
    }
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/-/ready", port);
    for (int i = 0; i < 300; i++) {
        if (http_get(url, NULL) == 200)
            return pid;
        nap_ms(100);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    wt_test_fail(__FILE__, __LINE__, "alertmanager did not become ready on port %d (see %s)", port,
                 log);
}

static void stop_am(pid_t pid)
{
    kill(pid, SIGTERM);
    int st;
    WT_ASSERT(waitpid(pid, &st, 0) == pid);
}

/* Whether Alertmanager's API lists the alert (alertname, gpu) as active. */
static bool am_active(int port, const char *name, const char *gpu)
{
    char url[128], *body = NULL;
    bool found = false;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v2/alerts", port);
    if (http_get(url, &body) != 200) {
        free(body);
        return false;
    }
    cJSON *arr = cJSON_Parse(body), *o;
    cJSON_ArrayForEach(o, arr)
    {
        cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "labels");
        cJSON *n = cJSON_GetObjectItemCaseSensitive(l, "alertname");
        cJSON *g = cJSON_GetObjectItemCaseSensitive(l, "gpu");
        cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "status"),
                                                    "state");
        if (cJSON_IsString(n) && cJSON_IsString(g) && cJSON_IsString(s) &&
            strcmp(n->valuestring, name) == 0 && strcmp(g->valuestring, gpu) == 0 &&
            strcmp(s->valuestring, "active") == 0)
            found = true;
    }
    cJSON_Delete(arr);
    free(body);
    return found;
}

/* Whether Alertmanager notified its receiver of (alertname, gpu) with this status. */
static bool notified(struct rec *r, const char *name, const char *gpu, const char *status)
{
    bool found = false;
    for (size_t i = 0; i < rec_count(r) && !found; i++) {
        char *body = rec_body(r, i);
        cJSON *o = cJSON_Parse(body), *a;
        cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(o, "alerts"))
        {
            cJSON *l = cJSON_GetObjectItemCaseSensitive(a, "labels");
            cJSON *n = cJSON_GetObjectItemCaseSensitive(l, "alertname");
            cJSON *g = cJSON_GetObjectItemCaseSensitive(l, "gpu");
            cJSON *s = cJSON_GetObjectItemCaseSensitive(a, "status");
            if (cJSON_IsString(n) && cJSON_IsString(g) && cJSON_IsString(s) &&
                strcmp(n->valuestring, name) == 0 && strcmp(g->valuestring, gpu) == 0 &&
                strcmp(s->valuestring, status) == 0)
                found = true;
        }
        cJSON_Delete(o);
        free(body);
    }
    return found;
}

#define WAIT_FOR(cond, seconds)                                                                    \
    do {                                                                                           \
        int i_;                                                                                    \
        for (i_ = 0; i_ < (seconds)*10 && !(cond); i_++)                                           \
            nap_ms(100);                                                                           \
        if (!(cond))                                                                               \
            wt_test_fail(__FILE__, __LINE__, "not within %d s: %s", (seconds), #cond);             \
    } while (0)

static struct wt_alert mk(const char *name, int gpu, enum wt_alert_state st)
{
    struct wt_alert a;
    char g[16];
    int64_t now = wt_now_real_ns();
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "%s", name);
    snprintf(g, sizeof g, "%d", gpu);
    WT_ASSERT(wt_labels(a.labels, sizeof a.labels, "gpu", g, NULL) == 0);
    a.severity = WT_SEV_CRITICAL;
    a.state = st;
    snprintf(a.summary, sizeof a.summary, "%s on GPU %d", name, gpu);
    a.value = 42;
    a.active_since_ns = a.fired_at_ns = now - WT_NS_PER_S;
    a.resolved_at_ns = st == WT_ALERT_RESOLVED ? now : 0;
    a.fingerprint = ((uint64_t)gpu << 32) ^ (uint64_t)strlen(name) ^ (uint64_t)name[0] << 8;
    a.gpu = gpu;
    return a;
}

WT_TEST(alertmanager_sees_firing_then_resolved_across_a_restart)
{
    struct stat sb;
    if (stat(AM_BIN, &sb) != 0)
        WT_SKIP(AM_BIN " is not installed (Debian package prometheus-alertmanager)");
    static struct rec r;
    WT_EQ_INT(rec_start(&r, 0), 0);
    int port = free_port();
    const char *dir = wt_test_dir();
    char path[600];
    snprintf(path, sizeof path, "%s/am.yml", dir);
    FILE *f = fopen(path, "w");
    WT_ASSERT(f);
    fprintf(f,
            "route:\n"
            "  receiver: rec\n"
            "  group_by: [alertname, gpu]\n"
            "  group_wait: 1s\n"
            "  group_interval: 1s\n"
            "  repeat_interval: 1h\n"
            "receivers:\n"
            "- name: rec\n"
            "  webhook_configs:\n"
            "  - url: http://127.0.0.1:%d/am-receiver\n"
            "    send_resolved: true\n",
            r.port);
    fclose(f);
    pid_t am = start_am(dir, port);

    struct wt_alerts_config c;
    struct wt_notify *n = NULL;
    struct wt_err err = {{0}};
    memset(&c, 0, sizeof c);
    snprintf(c.alertmanager.url, sizeof c.alertmanager.url, "http://127.0.0.1:%d", port);
    c.alertmanager.resend_ns = WT_NS_PER_S;
    c.alertmanager.timeout_ns = WT_NS_PER_S;
    WT_EQ_INT(wt_notify_open(&c, &n, &err), 0);

    struct wt_alert a = mk("GPUHot", 0, WT_ALERT_FIRING), b = mk("GPUHot", 1, WT_ALERT_FIRING);
    wt_notify_post(n, &a);
    wt_notify_post(n, &b);
    WAIT_FOR(am_active(port, "GPUHot", "0") && am_active(port, "GPUHot", "1"), 20);
    WAIT_FOR(notified(&r, "GPUHot", "0", "firing"), 20);

    /* Alertmanager goes away; A resolves and C fires meanwhile. */
    stop_am(am);
    a = mk("GPUHot", 0, WT_ALERT_RESOLVED);
    wt_notify_post(n, &a);
    struct wt_alert cc = mk("IdleBurn", 2, WT_ALERT_FIRING);
    wt_notify_post(n, &cc);
    struct wt_notify_stats st;
    for (int i = 0; i < 100; i++) {
        wt_notify_stats(n, &st);
        if (st.am_failures >= 1)
            break;
        nap_ms(100);
    }
    WT_ASSERT(st.am_failures >= 1);
    WT_ASSERT(wt_notify_pending(n) >= 2);

    /* It comes back (same storage): the resolution and the new alert both arrive. */
    am = start_am(dir, port);
    WAIT_FOR(am_active(port, "IdleBurn", "2") && am_active(port, "GPUHot", "1") &&
                 !am_active(port, "GPUHot", "0"),
             30);
    WAIT_FOR(notified(&r, "GPUHot", "0", "resolved"), 30);
    WAIT_FOR(notified(&r, "IdleBurn", "2", "firing"), 30);
    WT_ASSERT(!notified(&r, "GPUHot", "1", "resolved"));

    /* B resolves with Alertmanager up: gone from the API, notified as resolved. */
    b = mk("GPUHot", 1, WT_ALERT_RESOLVED);
    wt_notify_post(n, &b);
    WAIT_FOR(!am_active(port, "GPUHot", "1"), 20);
    WAIT_FOR(notified(&r, "GPUHot", "1", "resolved"), 20);
    WT_ASSERT(am_active(port, "IdleBurn", "2"));

    wt_notify_close(n);
    stop_am(am);
    rec_stop(&r);
}
