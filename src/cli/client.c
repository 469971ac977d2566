/* SPDX-License-Identifier: MIT */
/*
 * The daemon's client for `wattage job`, `jobs` and `exec`: where the daemon is, its CA, the
 * client certificate and the token (from flags, the environment or the configuration, in the
 * order wt_cli_api_setup in cli.h gives), and requests over HTTP(S) with libcurl, with a client
 * certificate under mutual TLS.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "core/curl_lib.h"

#define MAX_REPLY (16 * 1024 * 1024)

static int read_token(const char *path, char *out, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    size_t len = fread(out, 1, n - 1, f);
    fclose(f);
    out[len] = '\0';
    while (len && isspace((unsigned char)out[len - 1]))
        out[--len] = '\0';
    return 0;
}

static bool given(const char *s)
{
    return s && *s;
}

/* The first of a flag, an environment variable and a configuration value that is set. */
static const char *pick(const char *flag, const char *env, const char *conf)
{
    if (given(flag))
        return flag;
    if (given(getenv(env)))
        return getenv(env);
    return given(conf) ? conf : NULL;
}

int wt_cli_api_setup(const struct wt_cli_conn *conn, struct wt_cli_api *api)
{
    struct wt_config cfg;
    memset(api, 0, sizeof *api);
    int rc = wt_cli_load_config(conn->config, &cfg);
    if (rc)
        return rc;
    wt_config_free(&cfg); /* only the daemon's and the client's scalar settings are read below */
    const char *url = pick(conn->url, "WATTAGE_URL", cfg.client.url);
    if (url) {
        snprintf(api->url, sizeof api->url, "%s", url);
    } else {
        char host[128];
        int port;
        if (wt_config_parse_listen(cfg.daemon.listen, host, sizeof host, &port) != 0)
            return 2;
        if (strcmp(host, "0.0.0.0") == 0 || host[0] == '\0')
            snprintf(host, sizeof host, "127.0.0.1");
        else if (strcmp(host, "::") == 0)
            snprintf(host, sizeof host, "::1");
        bool tls = cfg.daemon.tls.cert[0] != '\0';
        snprintf(api->url, sizeof api->url, strchr(host, ':') ? "%s://[%s]:%d" : "%s://%s:%d",
                 tls ? "https" : "http", host, port);
        if (tls)
            snprintf(api->cacert, sizeof api->cacert, "%s", cfg.daemon.tls.cert);
    }
    size_t l = strlen(api->url);
    while (l && api->url[l - 1] == '/')
        api->url[--l] = '\0';
    const char *ca = pick(conn->cacert, "WATTAGE_CACERT", cfg.client.cacert);
    if (ca)
        snprintf(api->cacert, sizeof api->cacert, "%s", ca);
    /* A certificate and its key come from the same place: the flags, the environment or the
     * configuration, the first that names either. */
    const char *cert = conn->cert, *key = conn->key, *from = "--cert and --key";
    if (!given(cert) && !given(key)) {
        cert = getenv("WATTAGE_CERT");
        key = getenv("WATTAGE_KEY");
        from = "WATTAGE_CERT and WATTAGE_KEY";
    }
    if (!given(cert) && !given(key)) {
        cert = cfg.client.cert;
        key = cfg.client.key;
        from = "client.cert and client.key";
    }
    if (given(cert) != given(key)) {
        fprintf(stderr, "wattage: %s go together (%s is missing)\n", from,
                given(cert) ? "the key" : "the certificate");
        return 2;
    }
    if (given(cert)) {
        snprintf(api->cert, sizeof api->cert, "%s", cert);
        snprintf(api->key, sizeof api->key, "%s", key);
    }
    const char *t = getenv("WATTAGE_TOKEN");
    const char *tf = conn->token_file ? conn->token_file : cfg.client.token_file;
    if (t && *t) {
        snprintf(api->token, sizeof api->token, "%s", t);
    } else if (tf && *tf) {
        if (read_token(tf, api->token, sizeof api->token) != 0) {
            fprintf(stderr, "wattage: %s: cannot read %s: %s\n",
                    conn->token_file ? "--token-file" : "client.token_file", tf, strerror(errno));
            return 2;
        }
    } else if (cfg.daemon.auth.token_file[0]) {
        (void)read_token(cfg.daemon.auth.token_file, api->token, sizeof api->token);
    }
    return 0;
}

struct buf {
    char *p;
    size_t len;
};

static size_t on_data(char *d, size_t sz, size_t nm, void *arg)
{
    struct buf *b = arg;
    size_t n = sz * nm;
    if (b->len + n > MAX_REPLY)
        return 0;
    char *p = realloc(b->p, b->len + n + 1);
    if (!p)
        return 0;
    memcpy(p + b->len, d, n);
    b->p = p;
    b->len += n;
    p[b->len] = '\0';
    return n;
}

int wt_cli_api_call(const struct wt_cli_api *api, const char *method, const char *path,
                    const char *body, long *status, char **reply, char *why, size_t whyn)
{
    char url[768], auth[600];
    struct buf b = {0};
    struct curl_slist *h = NULL;
    int ret = -EIO;
    *reply = NULL;
    *status = 0;
    struct wt_err err = {{0}};
    if (wt_curl_load("--source", &err) != 0) {
        snprintf(why, whyn, "%s", err.msg);
        return -ELIBACC;
    }
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(why, whyn, "out of memory");
        return -ENOMEM;
    }
    snprintf(url, sizeof url, "%s%s", api->url, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, api->connect_ms > 0 ? api->connect_ms : 3000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, api->timeout_ms > 0 ? api->timeout_ms : 30000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (api->cacert[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, api->cacert);
    if (api->cert[0]) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, api->cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, api->key);
    }
    if (api->token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", api->token);
        h = curl_slist_append(h, auth);
    }
    if (strcmp(method, "POST") == 0) {
        h = curl_slist_append(h, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    }
    if (h)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
        snprintf(why, whyn, "cannot reach the daemon at %s: %s", api->url, curl_easy_strerror(rc));
        free(b.p);
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        *reply = b.p ? b.p : strdup("");
        ret = *reply ? 0 : -ENOMEM;
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return ret;
}

int wt_cli_api_json(const struct wt_cli_api *api, const char *cmd, const char *method,
                    const char *path, const char *body, cJSON **out)
{
    long st;
    char *rep = NULL, why[512];
    *out = NULL;
    if (wt_cli_api_call(api, method, path, body, &st, &rep, why, sizeof why) != 0) {
        fprintf(stderr, "wattage %s: %s\n", cmd, why);
        return 1;
    }
    cJSON *v = cJSON_Parse(rep);
    if (st < 200 || st >= 300) {
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "error"));
        fprintf(stderr, "wattage %s: %s (HTTP %ld)\n", cmd, msg ? msg : rep, st);
        cJSON_Delete(v);
        free(rep);
        return st >= 400 && st < 500 ? 2 : 1;
    }
    free(rep);
    if (!v) {
        fprintf(stderr, "wattage %s: the daemon's reply is not JSON\n", cmd);
        return 1;
    }
    *out = v;
    return 0;
}

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static bool covered(const cJSON *j)
{
    const cJSON *cov =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "kpi"), "coverage");
    return cJSON_IsNumber(cov) && cov->valuedouble >= 0.999;
}

cJSON *wt_cli_final_job(struct wt_cli_api *api, const char *id, cJSON *first, double wait_s,
                        bool *final)
{
    char path[96], why[256];
    cJSON *j = first;
    double until = mono_s() + wait_s;
    snprintf(path, sizeof path, "/api/v1/jobs/%s", id);
    for (;;) {
        double left = until - mono_s();
        if (j && (covered(j) || left <= 0))
            break;
        if (j) {
            struct timespec d = {0, 200 * 1000000L};
            nanosleep(&d, NULL);
            left -= 0.2;
        }
        long st, ms = left > 0.5 ? (long)(left * 1000) : 500;
        char *rep = NULL;
        api->connect_ms = ms < 1000 ? ms : 1000;
        api->timeout_ms = ms;
        cJSON *next = NULL;
        if (wt_cli_api_call(api, "GET", path, NULL, &st, &rep, why, sizeof why) == 0 && st == 200)
            next = cJSON_Parse(rep);
        free(rep);
        if (!next)
            break; /* the last figures read, if any, are what there is */
        cJSON_Delete(j);
        j = next;
    }
    *final = covered(j);
    return j;
}
