/* SPDX-License-Identifier: MIT */
/*
 * Delivery of alert transitions to the channels configured in the `alerts` section:
 *
 *   Alertmanager (alerts.alertmanager.url)   POST {url}/api/v2/alerts, JSON array. Every alert
 *       is coalesced per fingerprint (the latest state is what is sent), firing alerts are sent
 *       again every resend interval (Alertmanager drops an alert whose endsAt passes), a resolved
 *       one is sent with endsAt = its resolved time and then forgotten. While Alertmanager is
 *       down the table keeps every unsent state and retries with doubling backoff; when it
 *       returns, one batch carries everything: nothing lost, no storm.
 *   Webhook (alerts.webhook.url)             one JSON POST per transition, in order, same retry.
 *   Exec hook (alerts.exec.command)          the command (split into words here, never given to
 *       a shell) runs once per transition with the alert in WATTAGE_ALERT_* variables and as
 *       JSON on stdin, in its own process group, killed at its timeout, always reaped.
 *
 * wt_notify_post copies the transition into each channel's bounded inbox under a short lock and
 * returns; one thread per channel does the I/O. The webhook's and the exec hook's inboxes are
 * FIFOs of alerts.delivery.queue_limit: a transition merges only with a repeat of the same state
 * that is its alert's latest one queued (so nothing is reordered or lost in between), and a full
 * inbox drops its oldest, counted and logged. Alertmanager's inbox keeps one state per alert
 * (the latest), as its table does.
 *
 * Each channel counts what it sent, failed and dropped, and knows since when it fails and how old
 * its oldest undelivered transition is: wt_notify_health, the /metrics families and the engine's
 * built-in alert WattageAlertDeliveryFailing read that.
 *
 * The bodies and the exec hook's words and environment are made in alert/notify_format.c.
 */
#include "alert/notify.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/curl_lib.h"
#include "core/family.h"
#include "core/log.h"

#define MOD "notify"
#define DEFAULT_TIMEOUT_NS (5 * WT_NS_PER_S)
#define DEFAULT_RESEND_NS (60 * WT_NS_PER_S)
#define MAX_BACKOFF_NS (30 * WT_NS_PER_S)
#define LOG_EVERY_NS (60 * WT_NS_PER_S)
#define EXEC_GRACE_NS WT_NS_PER_S /* SIGTERM to SIGKILL */

extern char **environ;

enum kind { CH_AM, CH_WEBHOOK, CH_EXEC, CH_COUNT };
static const char *const kind_names[CH_COUNT] = {"alertmanager", "webhook", "exec"};

/* One transition waiting, and when it was posted (CLOCK_MONOTONIC). */
struct qitem {
    struct wt_alert a;
    int64_t t_mono;
};

struct channel {
    struct wt_notify *n;
    enum kind kind;
    pthread_t th;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    /* The inbox (a ring of cap), under mu. */
    struct qitem *q;
    size_t cap, head, len;
    size_t held;        /* taken out by the thread, not yet delivered */
    int64_t held_since; /* when the oldest of those was posted, 0: none */
    /* Health (wt_notify_health), under mu. */
    uint64_t sent, failed, dropped;
    int64_t failing_since;
    char error[160];
    struct wt_ratelimit drop_rl;
};

struct wt_notify {
    char node[128];
    struct {
        char url[300]; /* {url}/api/v2/alerts */
        char generator_url[256];
        int64_t resend_ns, timeout_ns;
    } am;
    struct {
        char url[256];
        int64_t timeout_ns;
    } webhook;
    struct {
        char command[256];
        int64_t timeout_ns;
    } exec;
    size_t queue_limit;
    struct channel ch[CH_COUNT];
    pthread_mutex_t stats_mu;
    struct wt_notify_stats stats;
};

int64_t wt_notify_backoff(int failures, int64_t max_ns)
{
    int64_t b = WT_NS_PER_S / 2;
    for (int i = 1; i < failures && b < max_ns; i++)
        b *= 2;
    return b < max_ns ? b : max_ns;
}

/* ---- HTTP -------------------------------------------------------------------------------- */

struct body {
    char buf[512];
    size_t len;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
    struct body *b = ctx;
    size_t n = size * nmemb, room = sizeof b->buf - 1 - b->len;
    memcpy(b->buf + b->len, p, n < room ? n : room);
    b->len += n < room ? n : room;
    b->buf[b->len] = '\0';
    return n;
}

/*
 * POSTs a JSON body. Returns 0 for a 2xx answer, -EAGAIN when a retry may succeed (no
 * connection, timeout, 5xx, 408, 429), -EINVAL when it cannot (another status: the body was
 * refused). why gets a message for the log.
 */
static int post_json(CURL *c, const char *url, const char *json, int64_t timeout_ns, char *why,
                     size_t whyn)
{
    struct body resp = {{0}, 0};
    char cerr[CURL_ERROR_SIZE] = "";
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    long ms = (long)(timeout_ns / WT_NS_PER_MS);
    if (ms < 100)
        ms = 100;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, json);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "wattage/" WT_VERSION);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        snprintf(why, whyn, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
        return -EAGAIN;
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300)
        return 0;
    for (size_t i = 0; i < resp.len; i++)
        if (resp.buf[i] == '\n' || resp.buf[i] == '\r')
            resp.buf[i] = ' ';
    snprintf(why, whyn, "HTTP %ld %s", status, resp.buf);
    return status >= 500 || status == 408 || status == 429 ? -EAGAIN : -EINVAL;
}

/* ---- inboxes ----------------------------------------------------------------------------- */

static void enqueue(struct channel *ch, const struct wt_alert *a, int64_t now)
{
    pthread_mutex_lock(&ch->mu);
    /* The alert's latest transition queued: Alertmanager only ever wants an alert's latest state,
     * so the new one takes its place; the other channels see every transition in order, so only
     * a repeat of the same state merges, and only with the alert's last one (merging with an
     * earlier one would move it before a transition of the other state). The merged one keeps
     * its posting time: the wait began then. */
    for (size_t i = ch->len; i-- > 0;) {
        struct qitem *old = &ch->q[(ch->head + i) % ch->cap];
        if (old->a.fingerprint != a->fingerprint)
            continue;
        if (ch->kind == CH_AM || old->a.state == a->state) {
            old->a = *a;
            goto out;
        }
        break;
    }
    if (ch->len == ch->cap) {
        uint64_t supp;
        struct qitem *old = &ch->q[ch->head];
        ch->head = (ch->head + 1) % ch->cap;
        ch->len--;
        ch->dropped++;
        if (wt_ratelimit_ok(&ch->drop_rl, now, &supp))
            wt_warn(MOD,
                    "%s: inbox full (alerts.delivery.queue_limit %zu): the oldest transition "
                    "dropped alert=%s state=%s dropped=%" PRIu64,
                    kind_names[ch->kind], ch->cap, old->a.name, wt_alert_state_name(old->a.state),
                    ch->dropped);
    }
    struct qitem *q = &ch->q[(ch->head + ch->len) % ch->cap];
    q->a = *a;
    q->t_mono = now;
    ch->len++;
out:
    pthread_cond_signal(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
}

void wt_notify_post(struct wt_notify *n, const struct wt_alert *a)
{
    if (!n || !a)
        return;
    if (a->state != WT_ALERT_FIRING && a->state != WT_ALERT_RESOLVED)
        return;
    int64_t now = wt_now_mono_ns();
    for (int k = 0; k < CH_COUNT; k++)
        if (n->ch[k].started)
            enqueue(&n->ch[k], a, now);
}

/*
 * Waits until the inbox has something, stop is set, or the CLOCK_MONOTONIC deadline wake_ns
 * (0: none) passes; moves up to max transitions into out (when out is not NULL). Returns how
 * many; *stop gets the stop flag.
 */
static size_t take(struct channel *ch, struct qitem *out, size_t max, int64_t wake_ns, bool *stop)
{
    size_t k = 0;
    pthread_mutex_lock(&ch->mu);
    while (!ch->stop && ch->len == 0) {
        if (wake_ns) {
            struct timespec ts = {.tv_sec = wake_ns / WT_NS_PER_S,
                                  .tv_nsec = wake_ns % WT_NS_PER_S};
            if (pthread_cond_timedwait(&ch->cv, &ch->mu, &ts) == ETIMEDOUT)
                break;
        } else {
            pthread_cond_wait(&ch->cv, &ch->mu);
        }
    }
    while (out && k < max && ch->len) {
        out[k++] = ch->q[ch->head];
        ch->head = (ch->head + 1) % ch->cap;
        ch->len--;
    }
    /* Still pending until the thread says otherwise (wt_notify_pending never dips to 0 while
     * a transition is in its hands). */
    if (k && (!ch->held || out[0].t_mono < ch->held_since))
        ch->held_since = out[0].t_mono;
    ch->held += k;
    *stop = ch->stop;
    pthread_mutex_unlock(&ch->mu);
    return k;
}

/* Waits until the CLOCK_MONOTONIC deadline or a stop; returns the stop flag. */
static bool wait_until(struct channel *ch, int64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = deadline_ns / WT_NS_PER_S,
                          .tv_nsec = deadline_ns % WT_NS_PER_S};
    pthread_mutex_lock(&ch->mu);
    while (!ch->stop && pthread_cond_timedwait(&ch->cv, &ch->mu, &ts) != ETIMEDOUT)
        ;
    bool stop = ch->stop;
    pthread_mutex_unlock(&ch->mu);
    return stop;
}

/* What the thread holds now: held transitions, the oldest posted at since (0: none). */
static void set_held(struct channel *ch, size_t held, int64_t since)
{
    pthread_mutex_lock(&ch->mu);
    ch->held = held;
    ch->held_since = held ? since : 0;
    pthread_mutex_unlock(&ch->mu);
}

/*
 * One delivery attempt's outcome: ok with `sent` transitions delivered, or failed (why); `lost`
 * transitions are given up either way (refused, a failing hook).
 */
static void note(struct channel *ch, bool ok, uint64_t sent, uint64_t lost, const char *why)
{
    pthread_mutex_lock(&ch->mu);
    if (ok) {
        ch->sent += sent;
        ch->failing_since = 0;
    } else {
        ch->failed++;
        if (!ch->failing_since)
            ch->failing_since = wt_now_mono_ns();
        snprintf(ch->error, sizeof ch->error, "%s", why);
    }
    ch->dropped += lost;
    pthread_mutex_unlock(&ch->mu);
}

/* Transitions given up without an attempt (no room, the daemon stopping). */
static void lose(struct channel *ch, uint64_t k)
{
    pthread_mutex_lock(&ch->mu);
    ch->dropped += k;
    pthread_mutex_unlock(&ch->mu);
}

#define STAT_ADD(n, field, v)                                                                      \
    do {                                                                                           \
        pthread_mutex_lock(&(n)->stats_mu);                                                        \
        (n)->stats.field += (v);                                                                   \
        pthread_mutex_unlock(&(n)->stats_mu);                                                      \
    } while (0)

/* ---- the Alertmanager channel ------------------------------------------------------------ */

struct am_entry {
    struct wt_alert a;
    bool dirty;         /* this state not delivered yet */
    int64_t dirty_mono; /* when the oldest undelivered state of it was posted */
    int64_t sent_mono;  /* last delivery of this alert */
};

struct am {
    struct channel *ch;
    struct wt_notify *n;
    CURL *curl;
    struct am_entry *t;
    size_t nt;
    struct wt_alert *batch;
    int failures;
    struct wt_ratelimit fail_rl, full_rl;
};

static void am_merge(struct am *s, const struct qitem *q)
{
    const struct wt_alert *a = &q->a;
    for (size_t i = 0; i < s->nt; i++) {
        if (s->t[i].a.fingerprint == a->fingerprint) {
            s->t[i].a = *a;
            if (!s->t[i].dirty)
                s->t[i].dirty_mono = q->t_mono;
            s->t[i].dirty = true;
            return;
        }
    }
    if (s->nt == WT_NOTIFY_AM_MAX) {
        uint64_t supp;
        lose(s->ch, 1);
        if (wt_ratelimit_ok(&s->full_rl, wt_now_mono_ns(), &supp))
            wt_error(MOD, "alertmanager: %d alerts held already; alert %s{%s} not delivered",
                     WT_NOTIFY_AM_MAX, a->name, a->labels);
        return;
    }
    s->t[s->nt].a = *a;
    s->t[s->nt].dirty = true;
    s->t[s->nt].dirty_mono = q->t_mono;
    s->t[s->nt].sent_mono = 0;
    s->nt++;
}

static bool am_due(const struct wt_notify *n, const struct am_entry *e, int64_t now)
{
    return e->dirty || (e->a.state == WT_ALERT_FIRING && now - e->sent_mono >= n->am.resend_ns);
}

static size_t am_count_dirty(const struct am *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->nt; i++)
        k += s->t[i].dirty;
    return k;
}

/* Tells the channel what the table holds undelivered. */
static void am_held(struct am *s)
{
    int64_t since = 0;
    for (size_t i = 0; i < s->nt; i++)
        if (s->t[i].dirty && (!since || s->t[i].dirty_mono < since))
            since = s->t[i].dirty_mono;
    set_held(s->ch, am_count_dirty(s), since);
}

/* Forgets resolved alerts that were delivered. */
static void am_compact(struct am *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->nt; i++)
        if (s->t[i].dirty || s->t[i].a.state == WT_ALERT_FIRING)
            s->t[k++] = s->t[i];
    s->nt = k;
}

/*
 * Sends every due alert, in batches. Returns 0, or -EAGAIN when a request failed and may be
 * retried (the alerts it carried stay due).
 */
static int am_flush(struct am *s, int64_t timeout_ns)
{
    struct wt_notify *n = s->n;
    int64_t now = wt_now_mono_ns();
    size_t idx[WT_NOTIFY_AM_BATCH];
    size_t i = 0;
    int ret = 0;
    while (i < s->nt) {
        size_t k = 0;
        for (; i < s->nt && k < WT_NOTIFY_AM_BATCH; i++)
            if (am_due(n, &s->t[i], now)) {
                idx[k] = i;
                s->batch[k++] = s->t[i].a;
            }
        if (k == 0)
            break;
        char why[600];
        char *json = wt_notify_am_json(s->batch, k, wt_now_real_ns(), 4 * n->am.resend_ns, n->node,
                                       n->am.generator_url);
        if (!json)
            return -EAGAIN;
        int rc = post_json(s->curl, n->am.url, json, timeout_ns, why, sizeof why);
        free(json);
        STAT_ADD(n, am_posts, 1);
        /* A refused batch is given up: sending it again would be refused again. */
        note(s->ch, rc == 0, k, rc == -EINVAL ? k : 0, why);
        if (rc == -EAGAIN) {
            uint64_t supp;
            s->failures++;
            if (wt_ratelimit_ok(&s->fail_rl, wt_now_mono_ns(), &supp))
                wt_warn(MOD,
                        "alertmanager: POST %s failed: %s; retrying with backoff "
                        "waiting=%zu failures=%d",
                        n->am.url, why, am_count_dirty(s), s->failures);
            ret = -EAGAIN;
            break;
        }
        if (rc == -EINVAL)
            wt_error(MOD, "alertmanager: POST %s refused %zu alerts: %s", n->am.url, k, why);
        else if (s->failures)
            wt_info(MOD, "alertmanager: delivered again after %d failed attempts alerts=%zu",
                    s->failures, k);
        if (rc == 0)
            s->failures = 0;
        int64_t sent = wt_now_mono_ns();
        for (size_t j = 0; j < k; j++) {
            s->t[idx[j]].dirty = false;
            s->t[idx[j]].sent_mono = sent;
        }
    }
    am_compact(s);
    return ret;
}

/* The next time something is due (0: nothing until a transition comes). */
static int64_t am_next(const struct am *s)
{
    int64_t next = 0;
    for (size_t i = 0; i < s->nt; i++) {
        const struct am_entry *e = &s->t[i];
        int64_t at = e->dirty ? 1 : e->sent_mono + s->n->am.resend_ns;
        if (e->a.state != WT_ALERT_FIRING && !e->dirty)
            continue;
        if (!next || at < next)
            next = at;
    }
    return next;
}

static void *am_main(void *arg)
{
    struct channel *ch = arg;
    struct wt_notify *n = ch->n;
    struct am s = {.ch = ch, .n = n};
    struct qitem *in = malloc(ch->cap * sizeof *in);
    s.t = calloc(WT_NOTIFY_AM_MAX, sizeof *s.t);
    s.batch = malloc(WT_NOTIFY_AM_BATCH * sizeof *s.batch);
    s.curl = curl_easy_init();
    s.fail_rl.interval_ns = s.full_rl.interval_ns = LOG_EVERY_NS;
    if (!in || !s.t || !s.batch || !s.curl) {
        wt_error(MOD, "alertmanager: out of memory; delivery stopped");
        goto out;
    }
    int64_t retry_at = 0, wake = 0, stop_by = 0;
    for (;;) {
        bool stop;
        size_t k = take(ch, in, ch->cap, wake, &stop);
        for (size_t i = 0; i < k; i++)
            am_merge(&s, &in[i]);
        am_held(&s);
        int64_t now = wt_now_mono_ns();
        if (stop && !stop_by) {
            stop_by = now + WT_NOTIFY_CLOSE_NS;
            retry_at = 0; /* one last try, whatever the backoff says */
        }
        if (stop && (am_count_dirty(&s) == 0 || now >= stop_by))
            break;
        if (now >= retry_at) {
            int64_t to = n->am.timeout_ns;
            if (stop && stop_by - now < to)
                to = stop_by - now;
            if (am_flush(&s, to) == -EAGAIN) {
                if (stop)
                    break;
                int64_t cap = n->am.resend_ns < MAX_BACKOFF_NS ? n->am.resend_ns : MAX_BACKOFF_NS;
                retry_at = wt_now_mono_ns() + wt_notify_backoff(s.failures, cap);
            } else {
                retry_at = 0;
            }
            am_held(&s);
        }
        /* Nothing is sent before the backoff ends, whatever comes in meanwhile. */
        int64_t next = am_next(&s);
        if (next && next < retry_at)
            next = retry_at;
        wake = next;
    }
    if (am_count_dirty(&s)) {
        wt_warn(MOD, "alertmanager: stopping with %zu alert states not delivered",
                am_count_dirty(&s));
        lose(ch, am_count_dirty(&s));
    }
out:
    set_held(ch, 0, 0);
    if (s.curl)
        curl_easy_cleanup(s.curl);
    free(s.batch);
    free(s.t);
    free(in);
    return NULL;
}

/* ---- webhook and exec: one transition at a time, in order -------------------------------- */

/* Runs the hook for one transition. Returns 0, or -EIO when it failed (logged; why says how). */
static int run_exec(struct wt_notify *n, struct channel *ch, const struct wt_alert *a,
                    int64_t timeout_ns, char *why, size_t whyn)
{
    char words[512], *argv[WT_NOTIFY_MAX_ARGS + 1];
    int argc, rc = -EIO;
    snprintf(why, whyn, "out of memory");
    if (wt_notify_split(n->exec.command, words, sizeof words, argv, WT_NOTIFY_MAX_ARGS + 1,
                        &argc) != 0) {
        wt_error(MOD, "exec: cannot split alerts.exec.command into words: %s", n->exec.command);
        snprintf(why, whyn, "cannot split alerts.exec.command into words");
        return -EIO;
    }
    char **envp = wt_notify_env(environ, a);
    char *json = wt_notify_event_json(a, n->node);
    int pfd[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    bool fa_ok = false, attr_ok = false;
    pid_t pid = -1;
    if (!envp || !json || pipe2(pfd, O_CLOEXEC) != 0)
        goto out;
    fa_ok = posix_spawn_file_actions_init(&fa) == 0;
    attr_ok = posix_spawnattr_init(&attr) == 0;
    if (!fa_ok || !attr_ok)
        goto out;
    /* stdin is the JSON; stdout joins stderr (the daemon's log). */
    posix_spawn_file_actions_adddup2(&fa, pfd[0], 0);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    /* The daemon blocks its signals in every thread and ignores SIGPIPE: the hook must not
     * inherit either. Its own process group lets a timeout kill whatever it started. */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
    int e = posix_spawnp(&pid, argv[0], &fa, &attr, argv, envp);
    if (e != 0) {
        wt_error(MOD, "exec: cannot start %s: %s", argv[0], strerror(e));
        snprintf(why, whyn, "cannot start %s: %s", argv[0], strerror(e));
        pid = -1;
        goto out;
    }
    STAT_ADD(n, exec_runs, 1);
    close(pfd[0]);
    pfd[0] = -1;
    /* A JSON body is far below the pipe's capacity; a hook that does not read it is fine. */
    (void)fcntl(pfd[1], F_SETFL, O_NONBLOCK);
    size_t len = strlen(json), off = 0;
    while (off < len) {
        ssize_t w = write(pfd[1], json + off, len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(pfd[1]);
    pfd[1] = -1;

    int64_t deadline = wt_now_mono_ns() + timeout_ns;
    int status = 0;
    bool termed = false, timed_out = false, stopping = false;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            wt_error(MOD, "exec: waitpid: %s", strerror(errno));
            break;
        }
        int64_t now = wt_now_mono_ns();
        if (!stopping) {
            /* The daemon is stopping: a slow hook gets the close bound, not its whole timeout. */
            pthread_mutex_lock(&ch->mu);
            stopping = ch->stop;
            pthread_mutex_unlock(&ch->mu);
            if (stopping && !termed && now + WT_NOTIFY_CLOSE_NS < deadline)
                deadline = now + WT_NOTIFY_CLOSE_NS;
        }
        if (now >= deadline) {
            if (!termed) {
                timed_out = termed = true;
                kill(-pid, SIGTERM);
                deadline = now + EXEC_GRACE_NS;
            } else {
                kill(-pid, SIGKILL);
                while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                    ;
                break;
            }
        }
        struct timespec ts = {0, 10 * WT_NS_PER_MS};
        nanosleep(&ts, NULL);
    }
    if (timed_out) {
        STAT_ADD(n, exec_timeouts, 1);
        snprintf(why, whyn, "%s timed out after %.3g s", argv[0], (double)timeout_ns / WT_NS_PER_S);
        if (stopping)
            wt_warn(MOD, "exec: %s killed: the daemon is stopping alert=%s state=%s", argv[0],
                    a->name, wt_alert_state_name(a->state));
        else
            wt_warn(MOD, "exec: %s timed out after %.3g s and was killed alert=%s state=%s",
                    argv[0], (double)timeout_ns / WT_NS_PER_S, a->name,
                    wt_alert_state_name(a->state));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        wt_debug(MOD, "exec: %s done alert=%s state=%s", argv[0], a->name,
                 wt_alert_state_name(a->state));
        rc = 0;
    } else if (WIFEXITED(status)) {
        snprintf(why, whyn, "%s exited with status %d", argv[0], WEXITSTATUS(status));
        wt_warn(MOD, "exec: %s exited with status %d alert=%s state=%s", argv[0],
                WEXITSTATUS(status), a->name, wt_alert_state_name(a->state));
    } else if (WIFSIGNALED(status)) {
        snprintf(why, whyn, "%s killed by signal %d", argv[0], WTERMSIG(status));
        wt_warn(MOD, "exec: %s killed by signal %d alert=%s state=%s", argv[0], WTERMSIG(status),
                a->name, wt_alert_state_name(a->state));
    }
out:
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (attr_ok)
        posix_spawnattr_destroy(&attr);
    wt_notify_env_free(envp);
    free(json);
    return rc;
}

static void *fifo_main(void *arg)
{
    struct channel *ch = arg;
    struct wt_notify *n = ch->n;
    struct wt_ratelimit fail_rl = {.interval_ns = LOG_EVERY_NS};
    CURL *curl = ch->kind == CH_WEBHOOK ? curl_easy_init() : NULL;
    struct qitem item;
    const struct wt_alert *cur = &item.a;
    bool have = false;
    int failures = 0;
    int64_t retry_at = 0, stop_by = 0;
    if (ch->kind == CH_WEBHOOK && !curl) {
        wt_error(MOD, "webhook: out of memory; delivery stopped");
        return NULL;
    }
    for (;;) {
        bool stop;
        if (!have) {
            have = take(ch, &item, 1, 0, &stop) == 1;
        } else {
            /* Waiting out the backoff; a stop ends the wait. */
            stop = wait_until(ch, retry_at);
        }
        int64_t now = wt_now_mono_ns();
        if (stop && !stop_by) {
            stop_by = now + WT_NOTIFY_CLOSE_NS;
            retry_at = 0;
        }
        if (stop && (!have || now >= stop_by))
            break;
        if (!have || now < retry_at)
            continue;
        int64_t to = ch->kind == CH_WEBHOOK ? n->webhook.timeout_ns : n->exec.timeout_ns;
        if (stop && stop_by - now < to)
            to = stop_by - now;
        int rc;
        char why[600];
        if (ch->kind == CH_WEBHOOK) {
            char *json = wt_notify_event_json(cur, n->node);
            rc = json ? post_json(curl, n->webhook.url, json, to, why, sizeof why) : -EAGAIN;
            if (!json)
                snprintf(why, sizeof why, "out of memory");
            free(json);
            if (rc == 0) {
                if (failures)
                    wt_info(MOD, "webhook: delivered again after %d failed attempts", failures);
            } else {
                uint64_t supp;
                if (rc == -EINVAL)
                    wt_error(MOD, "webhook: POST %s refused alert=%s state=%s: %s", n->webhook.url,
                             cur->name, wt_alert_state_name(cur->state), why);
                else if (wt_ratelimit_ok(&fail_rl, now, &supp))
                    wt_warn(MOD, "webhook: POST %s failed: %s; retrying with backoff",
                            n->webhook.url, why);
            }
        } else {
            rc = run_exec(n, ch, cur, to, why, sizeof why);
            if (rc)
                rc = -EINVAL; /* a failing hook is logged, not run again */
        }
        /* Refused, or a failing hook: given up (delivering it again would fail the same way). */
        note(ch, rc == 0, 1, rc == -EINVAL ? 1 : 0, why);
        if (rc == -EAGAIN) {
            if (stop)
                break;
            failures++;
            retry_at = wt_now_mono_ns() + wt_notify_backoff(failures, MAX_BACKOFF_NS);
            continue;
        }
        failures = 0;
        retry_at = 0;
        have = false;
        set_held(ch, 0, 0);
    }
    if (have) {
        wt_warn(MOD, "%s: stopping with transitions not delivered", kind_names[ch->kind]);
        lose(ch, 1);
    }
    set_held(ch, 0, 0);
    if (curl)
        curl_easy_cleanup(curl);
    return NULL;
}

/* ---- life cycle -------------------------------------------------------------------------- */

static int start_channel(struct wt_notify *n, enum kind k, struct wt_err *err)
{
    struct channel *ch = &n->ch[k];
    pthread_condattr_t ca;
    ch->n = n;
    ch->kind = k;
    ch->drop_rl.interval_ns = LOG_EVERY_NS;
    /* Alertmanager's inbox holds one state per alert, like its table. */
    ch->cap = k == CH_AM ? WT_NOTIFY_AM_MAX : n->queue_limit;
    ch->q = calloc(ch->cap, sizeof *ch->q);
    if (!ch->q)
        return -ENOMEM;
    pthread_mutex_init(&ch->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ch->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* The delivery threads never take SIGPIPE (a hook that closed its stdin). */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    int rc = pthread_create(&ch->th, NULL, k == CH_AM ? am_main : fifo_main, ch);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        wt_err_set(err, "alerts: cannot start the %s delivery thread: %s", kind_names[k],
                   strerror(rc));
        return -rc;
    }
    char name[16];
    snprintf(name, sizeof name, "wt-%s", k == CH_AM ? "am" : kind_names[k]);
    pthread_setname_np(ch->th, name);
    ch->started = true;
    return 0;
}

static int64_t or_default(int64_t v, int64_t def)
{
    return v > 0 ? v : def;
}

int wt_notify_open(const struct wt_alerts_config *cfg, struct wt_notify **out, struct wt_err *err)
{
    *out = NULL;
    if (!cfg || (!cfg->alertmanager.url[0] && !cfg->webhook.url[0] && !cfg->exec.command[0]))
        return 0;
    struct wt_notify *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    int rc;
    pthread_mutex_init(&n->stats_mu, NULL);
    if (gethostname(n->node, sizeof n->node) != 0)
        n->node[0] = '\0';
    n->node[sizeof n->node - 1] = '\0';
    n->queue_limit =
        cfg->delivery.queue_limit > 0 ? (size_t)cfg->delivery.queue_limit : WT_NOTIFY_QUEUE;
    if (n->queue_limit < WT_NOTIFY_QUEUE_MIN)
        n->queue_limit = WT_NOTIFY_QUEUE_MIN;
    if (n->queue_limit > WT_NOTIFY_QUEUE_MAX)
        n->queue_limit = WT_NOTIFY_QUEUE_MAX;
    if (cfg->alertmanager.url[0]) {
        size_t l = strlen(cfg->alertmanager.url);
        while (l && cfg->alertmanager.url[l - 1] == '/')
            l--;
        snprintf(n->am.url, sizeof n->am.url, "%.*s/api/v2/alerts", (int)l, cfg->alertmanager.url);
        n->am.resend_ns = or_default(cfg->alertmanager.resend_ns, DEFAULT_RESEND_NS);
        n->am.timeout_ns = or_default(cfg->alertmanager.timeout_ns, DEFAULT_TIMEOUT_NS);
        snprintf(n->am.generator_url, sizeof n->am.generator_url, "%s",
                 cfg->alertmanager.generator_url);
    }
    if (cfg->webhook.url[0]) {
        snprintf(n->webhook.url, sizeof n->webhook.url, "%s", cfg->webhook.url);
        n->webhook.timeout_ns = or_default(cfg->webhook.timeout_ns, DEFAULT_TIMEOUT_NS);
    }
    if (cfg->exec.command[0]) {
        char words[512], *argv[WT_NOTIFY_MAX_ARGS + 1];
        int argc;
        if (wt_notify_split(cfg->exec.command, words, sizeof words, argv, WT_NOTIFY_MAX_ARGS + 1,
                            &argc) != 0) {
            rc = wt_err_set(err,
                            "alerts.exec.command: expected a command and its arguments "
                            "(quotes closed, at most %d words), got \"%s\"",
                            WT_NOTIFY_MAX_ARGS, cfg->exec.command);
            goto fail;
        }
        snprintf(n->exec.command, sizeof n->exec.command, "%s", cfg->exec.command);
        n->exec.timeout_ns = or_default(cfg->exec.timeout_ns, DEFAULT_TIMEOUT_NS);
    }
    /* libcurl only for the channels that post */
    if (n->am.url[0] && (rc = wt_curl_load("alerts.alertmanager", err)))
        goto fail;
    if (n->webhook.url[0] && (rc = wt_curl_load("alerts.webhook", err)))
        goto fail;
    if (n->am.url[0] && (rc = start_channel(n, CH_AM, err)))
        goto fail;
    if (n->webhook.url[0] && (rc = start_channel(n, CH_WEBHOOK, err)))
        goto fail;
    if (n->exec.command[0] && (rc = start_channel(n, CH_EXEC, err)))
        goto fail;
    wt_info(MOD, "delivery alertmanager=%s webhook=%s exec=%s queue_limit=%zu",
            n->am.url[0] ? n->am.url : "off", n->webhook.url[0] ? n->webhook.url : "off",
            n->exec.command[0] ? n->exec.command : "off", n->queue_limit);
    *out = n;
    return 0;
fail:
    wt_notify_close(n);
    return rc;
}

void wt_notify_close(struct wt_notify *n)
{
    if (!n)
        return;
    for (int k = 0; k < CH_COUNT; k++) {
        struct channel *ch = &n->ch[k];
        if (!ch->started)
            continue;
        pthread_mutex_lock(&ch->mu);
        ch->stop = true;
        pthread_cond_broadcast(&ch->cv);
        pthread_mutex_unlock(&ch->mu);
    }
    for (int k = 0; k < CH_COUNT; k++) {
        struct channel *ch = &n->ch[k];
        if (ch->started) {
            pthread_join(ch->th, NULL);
            if (ch->len)
                wt_warn(MOD, "%s: %zu transitions not delivered at stop", kind_names[k], ch->len);
            ch->dropped += ch->len;
        }
        if (ch->q) {
            pthread_mutex_destroy(&ch->mu);
            pthread_cond_destroy(&ch->cv);
        }
        free(ch->q);
    }
    pthread_mutex_destroy(&n->stats_mu);
    free(n);
}

size_t wt_notify_pending(struct wt_notify *n)
{
    size_t p = 0;
    if (!n)
        return 0;
    for (int k = 0; k < CH_COUNT; k++) {
        struct channel *ch = &n->ch[k];
        if (!ch->started)
            continue;
        pthread_mutex_lock(&ch->mu);
        p += ch->len + ch->held;
        pthread_mutex_unlock(&ch->mu);
    }
    return p;
}

void wt_notify_stats(struct wt_notify *n, struct wt_notify_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!n)
        return;
    pthread_mutex_lock(&n->stats_mu);
    *out = n->stats;
    pthread_mutex_unlock(&n->stats_mu);
    uint64_t *sent[CH_COUNT] = {&out->am_sent, &out->webhook_sent, NULL};
    uint64_t *failed[CH_COUNT] = {&out->am_failures, &out->webhook_failures, &out->exec_failures};
    uint64_t *dropped[CH_COUNT] = {NULL, &out->webhook_dropped, &out->exec_dropped};
    for (int k = 0; k < CH_COUNT; k++) {
        struct channel *ch = &n->ch[k];
        if (!ch->started)
            continue;
        pthread_mutex_lock(&ch->mu);
        if (sent[k])
            *sent[k] = ch->sent;
        *failed[k] = ch->failed;
        if (dropped[k])
            *dropped[k] = ch->dropped;
        pthread_mutex_unlock(&ch->mu);
    }
}

/* ---- health ------------------------------------------------------------------------------ */

size_t wt_notify_health(struct wt_notify *n, struct wt_notify_health *out, size_t max)
{
    size_t k = 0;
    if (!n)
        return 0;
    for (int c = 0; c < CH_COUNT; c++) {
        struct channel *ch = &n->ch[c];
        if (!ch->started)
            continue;
        if (k < max) {
            struct wt_notify_health *h = &out[k];
            memset(h, 0, sizeof *h);
            h->channel = kind_names[c];
            pthread_mutex_lock(&ch->mu);
            h->sent = ch->sent;
            h->failed = ch->failed;
            h->dropped = ch->dropped;
            h->queued = ch->len + ch->held;
            /* The inbox is in posting order, and what the thread holds came out of it first. */
            h->oldest_mono = ch->held ? ch->held_since : 0;
            if (ch->len && (!h->oldest_mono || ch->q[ch->head].t_mono < h->oldest_mono))
                h->oldest_mono = ch->q[ch->head].t_mono;
            h->failing_since_mono = ch->failing_since;
            snprintf(h->error, sizeof h->error, "%s", ch->error);
            pthread_mutex_unlock(&ch->mu);
        }
        k++;
    }
    return k;
}

bool wt_notify_failing(struct wt_notify *n, int64_t now_mono, int64_t *since_mono, char *why,
                       size_t whyn)
{
    struct wt_notify_health h[CH_COUNT];
    size_t k = wt_notify_health(n, h, CH_COUNT), o = 0;
    bool failing = false;
    *since_mono = 0;
    if (why && whyn)
        why[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        if (!h[i].failing_since_mono)
            continue;
        if (!failing || h[i].failing_since_mono < *since_mono)
            *since_mono = h[i].failing_since_mono;
        if (why && o < whyn) {
            int w =
                snprintf(why + o, whyn - o, "%s%s: %s (since %.0f s, %zu queued)",
                         failing ? "; " : "", h[i].channel, h[i].error,
                         (double)(now_mono - h[i].failing_since_mono) / WT_NS_PER_S, h[i].queued);
            o += w > 0 ? (size_t)w : 0;
        }
        failing = true;
    }
    return failing;
}

static const struct {
    const char *name, *help;
    enum wt_metric_type type;
} fams[WT_NOTIFY_FAM_COUNT] = {
    [WT_NOTIFY_FAM_SENT] = {"wattage_alert_notifications_sent_total",
                            "Alert transitions delivered, per channel (alertmanager: alert states "
                            "accepted, re-sends of firing alerts included)",
                            WT_COUNTER},
    [WT_NOTIFY_FAM_FAILED] = {"wattage_alert_notifications_failed_total",
                              "Delivery attempts that failed, per channel (no answer, 5xx, "
                              "refused, a hook that failed or timed out)",
                              WT_COUNTER},
    [WT_NOTIFY_FAM_DROPPED] = {"wattage_alert_notifications_dropped_total",
                               "Alert transitions given up, per channel (queue full: the oldest; "
                               "refused by the receiver; a hook that failed)",
                               WT_COUNTER},
    [WT_NOTIFY_FAM_QUEUED] = {"wattage_alert_notifications_queued",
                              "Alert transitions waiting for delivery, per channel", WT_GAUGE},
    [WT_NOTIFY_FAM_OLDEST] = {"wattage_alert_notification_oldest_pending_seconds",
                              "Age of the oldest undelivered alert transition, per channel (0: "
                              "none)",
                              WT_GAUGE},
};

int wt_notify_family(struct wt_notify *n, enum wt_notify_family which, int64_t now_mono,
                     struct wt_expo_family *fam)
{
    struct wt_notify_health h[CH_COUNT];
    memset(fam, 0, sizeof *fam);
    if ((unsigned)which >= WT_NOTIFY_FAM_COUNT)
        return -EINVAL;
    fam->name = fams[which].name;
    fam->help = fams[which].help;
    fam->type = fams[which].type;
    size_t k = wt_notify_health(n, h, CH_COUNT);
    if (!k)
        return 0;
    if (!(fam->s = calloc(k, sizeof *fam->s)))
        return -ENOMEM;
    for (size_t i = 0; i < k; i++) {
        double v = 0;
        switch (which) {
        case WT_NOTIFY_FAM_SENT:
            v = (double)h[i].sent;
            break;
        case WT_NOTIFY_FAM_FAILED:
            v = (double)h[i].failed;
            break;
        case WT_NOTIFY_FAM_DROPPED:
            v = (double)h[i].dropped;
            break;
        case WT_NOTIFY_FAM_QUEUED:
            v = (double)h[i].queued;
            break;
        default:
            v = h[i].oldest_mono ? (double)(now_mono - h[i].oldest_mono) / WT_NS_PER_S : 0;
            break;
        }
        if (wt_labels(fam->s[i].labels, sizeof fam->s[i].labels, "channel", h[i].channel, NULL))
            continue;
        fam->s[i].value = v;
    }
    fam->n = k;
    return 0;
}
