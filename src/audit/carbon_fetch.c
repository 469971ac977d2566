/* SPDX-License-Identifier: MIT */
/*
 * The carbon layer's daemon part (see carbon_fetch.h): one HTTP fetch with libcurl, and the
 * thread of `wattage run` that fetches or re-reads every source on its schedule with doubling
 * backoff, stores what it parsed and publishes the grid-intensity gauge on the hub.
 */
#include "audit/carbon_fetch.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "audit/carbon_parse.h"
#include "core/clock.h"
#include "core/curl_lib.h"
#include "core/hub.h"
#include "core/log.h"
#include "core/secret.h"
#include "store/store.h"

#define MAX_BODY (16u * 1024 * 1024) /* a fetched reply */
#define CACHE_REFRESH_NS (30LL * WT_NS_PER_S)

/* ---- fetching ---- */

struct body {
    char *p;
    size_t n;
    bool too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct body *b = ud;
    size_t len = size * nmemb;
    if (b->n + len > MAX_BODY) {
        b->too_big = true;
        return 0;
    }
    char *np = realloc(b->p, b->n + len + 1);
    if (!np)
        return 0;
    memcpy(np + b->n, ptr, len);
    b->p = np;
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    const volatile int *abort = ud;
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return abort && *abort ? 1 : 0;
}

int wt_carbon_fetch(const char *url, const char *token_header, const char *token,
                    int64_t timeout_ns, const volatile int *abort, char **body, size_t *len,
                    char *why, size_t whyn)
{
    struct body b = {0};
    struct curl_slist *hdr = NULL;
    char line[700];
    long status = 0;
    int rc = 0;
    *body = NULL;
    *len = 0;
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(why, whyn, "curl_easy_init failed");
        return -ENOMEM;
    }
    long ms = (long)(timeout_ns / WT_NS_PER_MS);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 ? ms : 1L);
    /* A token is never sent on to wherever a redirect points (curl would pass a custom header
     * to another host): with a token, a redirect is an error that says where to point the url. */
    bool with_token = token && *token;
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, with_token ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    curl_easy_setopt(c, CURLOPT_USERAGENT, "wattage/" WT_VERSION);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)abort);
    hdr = curl_slist_append(hdr, "Accept: application/json, text/csv");
    if (token && *token) {
        snprintf(line, sizeof line, "%s: %s",
                 token_header && *token_header ? token_header : "auth-token", token);
        hdr = curl_slist_append(hdr, line);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    CURLcode cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (cc == CURLE_OPERATION_TIMEDOUT) {
        snprintf(why, whyn, "timed out after %ld ms", ms);
        rc = -ETIMEDOUT;
    } else if (cc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(why, whyn, "stopped");
        rc = -ECANCELED;
    } else if (cc != CURLE_OK) {
        snprintf(why, whyn, "%s", b.too_big ? "reply larger than 16 MiB" : curl_easy_strerror(cc));
        rc = -EIO;
    } else if (with_token && status >= 300 && status < 400) {
        char *to = NULL;
        curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &to);
        snprintf(why, whyn,
                 "HTTP status %ld: redirected to %.200s; the token is not sent there, set the url "
                 "to it if it is right",
                 status, to ? to : "(no location)");
        rc = -EIO;
    } else if (status >= 400 || status < 200) {
        snprintf(why, whyn, "HTTP status %ld", status);
        rc = -EIO;
    }
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    if (rc) {
        free(b.p);
        return rc;
    }
    if (!b.p && !(b.p = calloc(1, 1)))
        return -ENOMEM;
    *body = b.p;
    *len = b.n;
    return 0;
}

void wt_carbon_url_expand(const char *url, int64_t now_ns, char *out, size_t n)
{
    char now[24];
    time_t t = (time_t)(now_ns / WT_NS_PER_S);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%MZ", &tm);
    size_t o = 0;
    for (const char *p = url; *p && o + 1 < n;) {
        if (strncmp(p, "{now}", 5) == 0) {
            size_t l = strlen(now);
            if (o + l + 1 > n)
                break;
            memcpy(out + o, now, l);
            o += l;
            p += 5;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

/* ---- the daemon part ---- */

struct src_state {
    int64_t due;     /* CLOCK_MONOTONIC */
    int64_t backoff; /* current retry wait; 0 after a success */
    int64_t mtime_ns;
    struct wt_carbon_fetch_stats stats;
    uint64_t fails_logged;
};

struct zone_now {
    char zone[WT_CARBON_ZONE_LEN];
    double value;
    bool known;
};

struct wt_carbon {
    struct wt_carbon_conf cf;
    struct wt_store *st;
    sqlite3 *db;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    volatile int stop;
    struct src_state ss[WT_CARBON_MAX_SOURCES];
    struct zone_now zones[WT_CARBON_MAX_SOURCES + WT_CARBON_MAX_NODES + 1];
    size_t nzones;
    struct wt_hub *hub;
    int slot; /* the hub slot "carbon" (-1: none) */
    struct wt_batch batch;
    struct wt_config *own_cfg; /* wt_carbon_attach's copy, freed at close */
};

const struct wt_carbon_conf *wt_carbon_config(const struct wt_carbon *c)
{
    return &c->cf;
}

static void add_zone(struct wt_carbon *c, const char *z)
{
    if (!z || !*z)
        return;
    for (size_t i = 0; i < c->nzones; i++) {
        if (strcmp(c->zones[i].zone, z) == 0)
            return;
    }
    if (c->nzones == sizeof c->zones / sizeof c->zones[0])
        return;
    snprintf(c->zones[c->nzones].zone, sizeof c->zones[0].zone, "%s", z);
    c->nzones++;
}

static void read_token(size_t i, const char *path, char *out, size_t n)
{
    struct wt_err err = {{0}};
    char what[64];
    out[0] = '\0';
    if (!path || !*path)
        return;
    /* Read for every request, so a rotated token is used without a restart; checked each time,
     * as at start (wt_carbon_check_secrets), since the file may have changed since. */
    wt_carbon_token_what(i, what, sizeof what);
    if (wt_check_secret_file(what, path, &err) != 0) {
        wt_warn("carbon", "%s", err.msg);
        return;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        wt_warn("carbon", "%s %s: %s", what, path, strerror(errno));
        return;
    }
    if (fgets(out, (int)n, f)) {
        size_t l = strlen(out);
        while (l && isspace((unsigned char)out[l - 1]))
            out[--l] = '\0';
    }
    fclose(f);
}

/* One attempt at source i: 0 success (or nothing new), else a negative errno. */
static int run_source(struct wt_carbon *c, size_t i, char *why, size_t whyn)
{
    const struct wt_carbon_source *s = &c->cf.src[i];
    struct src_state *ss = &c->ss[i];
    struct wt_err err = {{0}};
    struct wt_carbon_batch b = {0};
    char *buf = NULL;
    size_t len = 0;
    int rc;
    const char *name = s->url[0] ? s->url : s->file;
    if (s->file[0]) {
        struct stat sb;
        if (stat(s->file, &sb) != 0) {
            snprintf(why, whyn, "%s: %s", s->file, strerror(errno));
            return -ENOENT;
        }
        int64_t m = (int64_t)sb.st_mtim.tv_sec * WT_NS_PER_S + sb.st_mtim.tv_nsec;
        if (m == ss->mtime_ns)
            return 0;
        if ((rc = wt_carbon_read_file(s->file, &buf, &len, &err)) != 0) {
            snprintf(why, whyn, "%s", err.msg);
            return rc;
        }
        ss->mtime_ns = m;
    } else {
        char token[512], url[sizeof s->url + 64];
        read_token(i, s->token_file, token, sizeof token);
        wt_carbon_url_expand(s->url, wt_now_real_ns(), url, sizeof url);
        rc = wt_carbon_fetch(url, s->token_header, token, s->timeout_ns, &c->stop, &buf, &len, why,
                             whyn);
        if (rc)
            return rc;
    }
    rc = wt_carbon_parse(name, buf, len, s->format, s->series, s->zone, NULL, &b, &err);
    free(buf);
    if (rc == 0)
        rc = wt_carbon_store(c->db, s->series, &b, name, wt_now_real_ns(), &err);
    if (rc) {
        snprintf(why, whyn, "%s", err.msg);
        if (s->file[0])
            ss->mtime_ns = 0; /* try again */
    } else {
        wt_info("carbon", "loaded %zu %s values from %s", b.n, wt_carbon_series_name(s->series),
                name);
        /* A reply may name its zone (Electricity Maps): the gauge shows it too. */
        pthread_mutex_lock(&c->mu);
        for (size_t k = 0; s->series == WT_CS_INTENSITY && k < b.n; k++)
            add_zone(c, b.p[k].zone);
        pthread_mutex_unlock(&c->mu);
    }
    wt_carbon_batch_free(&b);
    return rc;
}

/* The current value of every zone, for /metrics (c->mu not held: the thread's connection). */
static void refresh_zones(struct wt_carbon *c)
{
    int64_t now = wt_now_real_ns();
    for (size_t i = 0; i < c->nzones; i++) {
        struct wt_carbon_step *s = NULL;
        size_t n = 0;
        bool known = false;
        double v = 0;
        if (wt_carbon_steps(c->db, &c->cf, WT_CS_INTENSITY, c->zones[i].zone, now, now + 1, &s,
                            &n) == 0 &&
            n && s[0].src != WT_CSRC_NONE) {
            known = true;
            v = s[0].value;
        }
        free(s);
        pthread_mutex_lock(&c->mu);
        c->zones[i].known = known;
        c->zones[i].value = v;
        pthread_mutex_unlock(&c->mu);
    }
    if (!c->hub || c->slot < 0)
        return;
    wt_batch_clear(&c->batch);
    for (size_t i = 0; i < c->nzones; i++) {
        char lab[WT_LABELS_LEN];
        if (c->zones[i].known && wt_labels(lab, sizeof lab, "zone", c->zones[i].zone, NULL) == 0 &&
            wt_batch_add(&c->batch, WT_M_GRID_CARBON_INTENSITY, lab, now, c->zones[i].value) != 0)
            break;
    }
    wt_hub_publish(c->hub, c->slot, &c->batch, true, 0, wt_now_mono_ns());
}

static void *fetch_thread(void *arg)
{
    struct wt_carbon *c = arg;
    int64_t next_refresh = 0;
    for (;;) {
        int64_t now = wt_now_mono_ns(), wake = now + CACHE_REFRESH_NS;
        for (size_t i = 0; i < c->cf.nsrc && !c->stop; i++) {
            struct src_state *ss = &c->ss[i];
            const struct wt_carbon_source *s = &c->cf.src[i];
            if (ss->due > now)
                continue;
            char why[WT_ERR_LEN];
            pthread_mutex_lock(&c->mu);
            ss->stats.attempts++;
            pthread_mutex_unlock(&c->mu);
            int rc = run_source(c, i, why, sizeof why);
            if (c->stop)
                break;
            now = wt_now_mono_ns();
            pthread_mutex_lock(&c->mu);
            if (rc == 0) {
                if (ss->stats.failures > ss->fails_logged)
                    wt_info("carbon", "%s: recovered after %llu failed attempts",
                            s->url[0] ? s->url : s->file,
                            (unsigned long long)(ss->stats.failures - ss->fails_logged));
                ss->fails_logged = ss->stats.failures;
                ss->stats.successes++;
                ss->backoff = 0;
                /* A file is watched more often than a URL is fetched. */
                ss->due = now + (s->file[0] && s->interval_ns > CACHE_REFRESH_NS ? CACHE_REFRESH_NS
                                                                                 : s->interval_ns);
            } else {
                ss->stats.failures++;
                ss->backoff = ss->backoff ? 2 * ss->backoff : s->retry_ns;
                if (ss->backoff > s->interval_ns)
                    ss->backoff = s->interval_ns;
                ss->due = now + ss->backoff;
                /* Rate-limited: the first failure, then every 10th. */
                if ((ss->stats.failures - ss->fails_logged) % 10 == 1)
                    wt_warn("carbon", "%s: %s; retry in %.3g s (failures=%llu)",
                            s->url[0] ? s->url : s->file, why, (double)ss->backoff / WT_NS_PER_S,
                            (unsigned long long)(ss->stats.failures - ss->fails_logged));
            }
            ss->stats.next_retry_ns = ss->backoff;
            pthread_mutex_unlock(&c->mu);
            next_refresh = 0;
        }
        if (c->stop)
            break;
        now = wt_now_mono_ns();
        if (now >= next_refresh) {
            refresh_zones(c);
            next_refresh = now + CACHE_REFRESH_NS;
        }
        for (size_t i = 0; i < c->cf.nsrc; i++)
            wake = c->ss[i].due < wake ? c->ss[i].due : wake;
        wake = next_refresh < wake ? next_refresh : wake;
        pthread_mutex_lock(&c->mu);
        /* The condition variable runs on CLOCK_MONOTONIC (set at open). */
        struct timespec ts = {.tv_sec = wake / WT_NS_PER_S, .tv_nsec = wake % WT_NS_PER_S};
        while (!c->stop && wt_now_mono_ns() < wake)
            if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT)
                break;
        pthread_mutex_unlock(&c->mu);
        if (c->stop)
            break;
    }
    return NULL;
}

int wt_carbon_open(const struct wt_carbon_conf *cf, const char *db_path, struct wt_hub *hub,
                   struct wt_carbon **out, struct wt_err *err)
{
    struct wt_store_opts o = {.create = false};
    struct wt_carbon *c = calloc(1, sizeof *c);
    pthread_condattr_t ca;
    int rc;
    *out = NULL;
    if (!c)
        return -ENOMEM;
    /* A token that cannot be used is a setup error, named at start (check-config says the same). */
    if ((rc = wt_carbon_check_secrets(cf, err)) != 0) {
        free(c);
        return rc;
    }
    c->cf = *cf;
    c->slot = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    if ((rc = wt_store_open(db_path, &o, &c->st, err)) != 0)
        goto fail;
    c->db = wt_store_db(c->st);
    sqlite3_busy_timeout(c->db, 5000);
    if (wt_carbon_tables(c->db) != 0) {
        rc = -EIO;
        wt_err_set(err, "%s: cannot create the carbon table: %s", db_path, sqlite3_errmsg(c->db));
        goto fail;
    }
    add_zone(c, c->cf.zone);
    for (size_t i = 0; i < c->cf.nnodes; i++)
        add_zone(c, c->cf.nodes[i].zone);
    for (size_t i = 0; i < c->cf.nsrc; i++) {
        if (c->cf.src[i].series == WT_CS_INTENSITY)
            add_zone(c, c->cf.src[i].zone);
    }
    /* Only the sources' fetches use libcurl (and the OpenSSL, Kerberos, LDAP... it maps): a
     * daemon without carbon sources never loads it. */
    if (c->cf.nsrc && (rc = wt_curl_load("carbon.sources", err)) != 0)
        goto fail;
    if (hub && c->nzones) {
        /* Published every CACHE_REFRESH_NS; the slot's interval allows for a slow fetch
         * (timeouts are at most 60 s) before /healthz calls it late. */
        c->hub = hub;
        c->slot = wt_hub_add_collector(hub, "carbon", 2 * WT_CARBON_MAX_TIMEOUT_NS);
        if (c->slot >= 0)
            wt_hub_set_state(hub, c->slot, true, 2 * WT_CARBON_MAX_TIMEOUT_NS);
    }
    refresh_zones(c);
    if (c->cf.nsrc || c->nzones) {
        if ((rc = -pthread_create(&c->thread, NULL, fetch_thread, c)) != 0) {
            wt_err_set(err, "carbon: cannot start the fetch thread");
            goto fail;
        }
        c->started = true;
    }
    *out = c;
    return 0;
fail:
    wt_carbon_close(c);
    return rc;
}

void wt_carbon_close(struct wt_carbon *c)
{
    if (!c)
        return;
    if (c->started) {
        pthread_mutex_lock(&c->mu);
        c->stop = 1;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    wt_store_close(c->st);
    wt_batch_free(&c->batch);
    if (c->own_cfg) {
        wt_config_free(c->own_cfg);
        free(c->own_cfg);
    }
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int wt_carbon_fetch_stats(struct wt_carbon *c, size_t i, struct wt_carbon_fetch_stats *out)
{
    if (i >= c->cf.nsrc)
        return -ENOENT;
    pthread_mutex_lock(&c->mu);
    *out = c->ss[i].stats;
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int wt_carbon_attach(const struct wt_config *cfg, struct wt_hub *hub, struct wt_carbon **out,
                     struct wt_err *err)
{
    struct wt_carbon_conf *cf = malloc(sizeof *cf);
    struct wt_config *own = calloc(1, sizeof *own);
    int rc;
    *out = NULL;
    if (!cf || !own) {
        free(cf);
        free(own);
        return -ENOMEM;
    }
    /* A private copy of the configuration for the measured PUE: a SIGHUP reload replaces the
     * daemon's document while the jobs API may be reading this one. */
    wt_config_defaults(own);
    if (cfg->source[0] && wt_config_load(cfg->source, own, err) != 0) {
        wt_config_free(own);
        free(own);
        own = NULL;
        wt_warn("carbon", "%s; the PUE of carbon figures is the assumed one", err->msg);
    }
    if ((rc = wt_carbon_conf_from(cfg, cf, err)) == 0) {
        cf->cfg = own;
        rc = wt_carbon_open(cf, cfg->store.path, hub, out, err);
    }
    if (rc == 0) {
        (*out)->own_cfg = own;
        own = NULL;
    }
    if (own) {
        wt_config_free(own);
        free(own);
    }
    free(cf);
    return rc;
}
