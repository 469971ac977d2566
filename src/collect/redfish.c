/* SPDX-License-Identifier: MIT */
/*
 * Redfish collector; see redfish.h. One target is one service on one libcurl handle (kept
 * alive between requests). The walk (first poll, and again after a 404) GETs every resource it
 * keeps, so that the DataSourceUri of each excerpt is known before the Sensors collections are
 * read: a Sensor already quoted by an excerpt is not polled again. A poll GETs the kept
 * resources; a transport failure (timeout, refused, reset) ends the poll at once, while an HTTP
 * error or bad JSON from one resource skips that resource only. A service that answers nothing
 * usable fails the poll, and the loop backs off.
 */
#include "collect/redfish.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect/clocksync.h"
#include "core/clock.h"
#include "core/energy.h"
#include "core/log.h"
#include "core/reading.h"
#include "core/yget.h"

#define SECTION "collectors.redfish.targets"
#define ROOT "/redfish/v1"
#define POINT_LEN 64
#define NAME_LEN 64
#define LABEL_LEN 32
#define URI_LEN 512
#define MAX_WALK_GETS 4096
#define WT_POLL_TIMEOUTS 12 /* a poll (or walk) may take this many request timeouts at most */

enum auth_kind { AUTH_BASIC, AUTH_SESSION };
static const char *const auth_names[] = {"basic", "session", NULL};

struct target {
    char name[WT_TARGET_NAME_LEN + 1];
    char url[256]; /* scheme://host[:port], without /redfish/v1 */
    char username[128];
    char password_file[WT_PATH_LEN];
    int auth;
    char ca_file[WT_PATH_LEN];
    bool insecure, sensors;
    int64_t timeout_ns, interval_ns, max_response;
    char node[LABEL_LEN], rack[LABEL_LEN], zone[LABEL_LEN];
};

enum rkind { R_GENERIC, R_SENSOR, R_POWER_LEGACY, R_THERMAL_LEGACY, R_INFO };

struct resource {
    char *uri;
    enum rkind kind;
    char point[POINT_LEN];
    char kindl[LABEL_LEN];
    char name[NAME_LEN];
    bool skip_power_control; /* legacy Power: EnvironmentMetrics already gives chassis power */
    char vendor[NAME_LEN], model[NAME_LEN]; /* R_INFO */
};

struct counter {
    int metric;
    char labels[WT_LABELS_LEN];
    struct wt_energy_counter ctr;
    uint64_t first_raw;
};

struct body {
    char *p;
    size_t len, cap, max;
    bool too_big;
};

struct rf {
    struct target t;
    char password[256];
    CURL *curl;
    char errbuf[CURL_ERROR_SIZE];
    struct body body;
    char token[512], session_uri[URI_LEN];
    char hdr_token[512], hdr_location[URI_LEN]; /* captured from the last response */
    char hdr_date[64];                          /* its Date header ("" without one) */
    /* The service's clock against ours: the poll's answer with a Date and the quickest round
     * trip (CLOCK_REALTIME around the request), for wattage_clock_peer_skew_seconds. */
    bool have_date;
    int64_t date_s, date_before_ns, date_after_ns;
    double clock_bound_s; /* daemon.clock_max_error */
    char skew_labels[WT_LABELS_LEN];
    struct wt_peer_skew_watch skew;
    struct resource *res;
    size_t nres, capres;
    bool walked;
    unsigned walk_gets;
    struct counter *ctrs;
    size_t nctrs, capctrs;
    char **seen; /* DataSourceUris read this poll (or found by the walk) */
    size_t nseen, capseen;
    char up_labels[WT_LABELS_LEN];
    struct wt_ratelimit rl;
    wt_redfish_serve_fn serve; /* a stand-in for the service (tests, fuzzing); NULL: HTTP */
    void *serve_ctx;
    /* during a poll */
    int64_t deadline_mono; /* 0 outside a poll */
    int64_t t_ns;
    struct wt_batch *out;
    size_t out_start; /* where this poll's readings start in out */
    int add_rc;
};

/* ---- configuration ---- */

static bool name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        char c = *s;
        if (!(isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

/* One target of the section (wt_y_targets_parse), into *tv, a struct target. */
static int parse_target(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                        void *tv)
{
    struct target *t = tv;
    static const char *const keys[] = {
        "name",    "url",      "username", "password_file", "auth",
        "ca_file", "insecure", "timeout",  "interval",      "max_response_bytes",
        "sensors", "node",     "rack",     "zone",          NULL};
    int64_t maxr = WT_REDFISH_MAX_RESPONSE;
    int rc = wt_y_keys(g, m, path, keys);
    memset(t, 0, sizeof *t);
    t->timeout_ns = 5 * WT_NS_PER_S;
    t->sensors = true;
    if (!rc)
        rc = wt_y_string(g, m, path, "name", true, t->name, sizeof t->name);
    if (!rc && !name_ok(t->name))
        rc = wt_y_key_fail(g, m, path, "name",
                           "expected at most %d of A-Z a-z 0-9 _ . - (got \"%s\")",
                           WT_TARGET_NAME_LEN, t->name);
    if (!rc)
        rc = wt_y_string(g, m, path, "url", true, t->url, sizeof t->url);
    if (!rc) {
        bool https = strncmp(t->url, "https://", 8) == 0;
        const char *host = t->url + (https ? 8 : 7);
        if ((!https && strncmp(t->url, "http://", 7) != 0) || !*host || *host == '/' ||
            strpbrk(t->url, " ?#@"))
            rc = wt_y_key_fail(g, m, path, "url",
                               "expected http://HOST[:PORT] or https://HOST[:PORT] (got \"%s\")",
                               t->url);
    }
    if (!rc) {
        /* Kept as scheme://host[:port]: the walk starts at /redfish/v1 whatever was written. */
        size_t len = strlen(t->url);
        while (len > 0 && t->url[len - 1] == '/')
            t->url[--len] = '\0';
        if (len >= strlen(ROOT) && strcmp(t->url + len - strlen(ROOT), ROOT) == 0)
            t->url[len - strlen(ROOT)] = '\0';
        len = strlen(t->url);
        while (len > 0 && t->url[len - 1] == '/')
            t->url[--len] = '\0';
    }
    if (!rc)
        rc = wt_y_string(g, m, path, "username", false, t->username, sizeof t->username);
    if (!rc)
        rc = wt_y_string(g, m, path, "password_file", false, t->password_file,
                         sizeof t->password_file);
    if (!rc && !t->username[0] != !t->password_file[0])
        rc = wt_y_key_fail(g, m, path, t->username[0] ? "password_file" : "username",
                           "username and password_file go together");
    if (!rc)
        rc = wt_y_enum(g, m, path, "auth", auth_names, &t->auth);
    if (!rc && wt_y_get(m, "auth") && !t->username[0])
        rc = wt_y_key_fail(g, m, path, "auth", "needs username and password_file");
    if (!rc)
        rc = wt_y_string(g, m, path, "ca_file", false, t->ca_file, sizeof t->ca_file);
    if (!rc)
        rc = wt_y_bool(g, m, path, "insecure", &t->insecure);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "timeout", false, WT_Y_NET_TIMEOUT_MIN,
                              WT_Y_NET_TIMEOUT_MAX, WT_Y_WHY_NET_TIMEOUT, &t->timeout_ns);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "interval", false, WT_Y_NET_POLL_MIN, WT_Y_NET_POLL_MAX,
                              WT_Y_WHY_NET_POLL, &t->interval_ns);
    if (!rc)
        rc = wt_y_int(g, m, path, "max_response_bytes", 1024, 256 << 20, &maxr);
    if (!rc)
        rc = wt_y_bool(g, m, path, "sensors", &t->sensors);
    if (!rc)
        rc = wt_y_string(g, m, path, "node", false, t->node, sizeof t->node);
    if (!rc)
        rc = wt_y_string(g, m, path, "rack", false, t->rack, sizeof t->rack);
    if (!rc)
        rc = wt_y_string(g, m, path, "zone", false, t->zone, sizeof t->zone);
    t->max_response = maxr;
    return rc;
}

static const struct wt_y_targets targets = {
    .section = SECTION,
    .size = sizeof(struct target),
    .name_at = offsetof(struct target, name),
    .interval_at = offsetof(struct target, interval_ns),
    .parse = parse_target,
    .drop = NULL,
};

/* The count of targets, or -EINVAL; target `want` is copied to *one (wt_y_targets_parse). */
static int parse_section(const char *file, const struct wt_ynode *node, long want,
                         struct target *one, struct wt_target *names, size_t max,
                         struct wt_err *err)
{
    return wt_y_targets_parse(&targets, file, node, want, one, names, max, err);
}

int wt_redfish_config_check(const char *file, const struct wt_ynode *node, struct wt_err *err)
{
    int rc = parse_section(file, node, -1, NULL, NULL, 0, err);
    return rc < 0 ? rc : 0;
}

/* ---- HTTP ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct body *b = ctx;
    size_t n = size * nmemb;
    if (b->len + n > b->max) {
        b->too_big = true;
        return 0; /* libcurl stops the transfer: CURLE_WRITE_ERROR */
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 16384;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
    return n;
}

/* Copies a header's value (trimmed) into out when the line is that header. */
static void take_header(const char *line, size_t n, const char *name, char *out, size_t outn)
{
    size_t k = strlen(name);
    if (n <= k + 1 || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return;
    const char *v = line + k + 1;
    const char *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t len = (size_t)(end - v);
    if (len >= outn)
        len = outn - 1;
    memcpy(out, v, len);
    out[len] = '\0';
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct rf *s = ctx;
    size_t n = size * nmemb;
    take_header(data, n, "X-Auth-Token", s->hdr_token, sizeof s->hdr_token);
    take_header(data, n, "Location", s->hdr_location, sizeof s->hdr_location);
    take_header(data, n, "Date", s->hdr_date, sizeof s->hdr_date);
    return n;
}

enum { HTTP_TRANSPORT = -EIO }; /* the service did not answer: the poll ends */

/*
 * Keeps the answer's Date (RFC 9110's IMF-fixdate, whole seconds: curl_getdate reads it and the
 * obsolete forms) when its round trip is the poll's quickest so far: the tightest bound on the
 * service's clock.
 */
static void note_date(struct rf *s, int64_t before, int64_t after)
{
    if (!s->hdr_date[0])
        return;
    time_t d = curl_getdate(s->hdr_date, NULL);
    if (d <= 0)
        return; /* unreadable, or a BMC whose clock was never set (1970) */
    if (s->have_date && after - before >= s->date_after_ns - s->date_before_ns)
        return;
    s->have_date = true;
    s->date_s = (int64_t)d;
    s->date_before_ns = before;
    s->date_after_ns = after;
}

/*
 * One request to a service path ("/redfish/v1/..."), the body into s->body. Returns the HTTP
 * status, or -EIO (transport: timeout, refused, TLS, the poll's deadline) or -EFBIG (body over
 * the bound), with err filled.
 */
static long request(struct rf *s, const char *method, const char *path, const char *json_body,
                    struct wt_err *err)
{
    char url[URI_LEN + 256];
    struct curl_slist *h = NULL;
    char auth[600];
    snprintf(url, sizeof url, "%s%s", s->t.url, path);
    /*
     * A whole poll (a walk of a large service) is bounded too, so that a slow but answering
     * service cannot hold its thread, and a stop, for long.
     */
    int64_t tmo = s->t.timeout_ns;
    if (s->deadline_mono) {
        int64_t left = s->deadline_mono - wt_now_mono_ns();
        if (left <= 0) {
            wt_err_set(err, "%s: the poll took longer than %.3g s, stopped", s->t.url,
                       (double)(WT_POLL_TIMEOUTS * s->t.timeout_ns) / WT_NS_PER_S);
            return HTTP_TRANSPORT;
        }
        if (left < tmo)
            tmo = left;
    }
    curl_easy_setopt(s->curl, CURLOPT_TIMEOUT_MS, (long)(tmo / WT_NS_PER_MS) + 1);
    s->body.len = 0;
    s->body.too_big = false;
    if (s->body.p)
        s->body.p[0] = '\0';
    s->hdr_token[0] = s->hdr_location[0] = s->hdr_date[0] = '\0';
    s->errbuf[0] = '\0';
    if (s->serve) {
        const char *b = NULL;
        size_t n = 0;
        long st = s->serve(s->serve_ctx, method, path, &b, &n);
        if (n && on_body((char *)b, 1, n, &s->body) != n) {
            wt_err_set(err, "%s: response larger than %lld bytes, refused", path,
                       (long long)s->t.max_response);
            return -EFBIG;
        }
        return st;
    }
    h = curl_slist_append(h, "Accept: application/json");
    if (json_body)
        h = curl_slist_append(h, "Content-Type: application/json");
    if (s->token[0]) {
        snprintf(auth, sizeof auth, "X-Auth-Token: %s", s->token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(s->curl, CURLOPT_URL, url);
    curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, h);
    if (json_body)
        curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, json_body); /* a POST */
    else
        curl_easy_setopt(s->curl, CURLOPT_HTTPGET, 1L);
    /* DELETE rides on a GET's settings; GET and POST need no custom verb. */
    curl_easy_setopt(s->curl, CURLOPT_CUSTOMREQUEST, strcmp(method, "DELETE") ? NULL : method);
    int64_t before = wt_now_real_ns();
    CURLcode cc = curl_easy_perform(s->curl);
    int64_t after = wt_now_real_ns();
    curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(h);
    if (cc != CURLE_OK) {
        if (s->body.too_big) {
            wt_err_set(err, "%s: response larger than %lld bytes, refused", path,
                       (long long)s->t.max_response);
            return -EFBIG;
        }
        if (cc == CURLE_FILESIZE_EXCEEDED) {
            wt_err_set(err, "%s: response larger than %lld bytes, refused", path,
                       (long long)s->t.max_response);
            return -EFBIG;
        }
        wt_err_set(err, "%s%s: %s", s->t.url, path,
                   s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc));
        return HTTP_TRANSPORT;
    }
    long status = 0;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
    note_date(s, before, after);
    return status;
}

/* Opens a Redfish session (POST SessionService/Sessions) and keeps its token. */
static int login(struct rf *s, struct wt_err *err)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return -ENOMEM;
    cJSON_AddStringToObject(o, "UserName", s->t.username);
    cJSON_AddStringToObject(o, "Password", s->password);
    char *txt = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!txt)
        return -ENOMEM;
    s->token[0] = '\0';
    long st = request(s, "POST", ROOT "/SessionService/Sessions", txt, err);
    size_t tl = strlen(txt);
    memset(txt, 0, tl); /* it held the password */
    free(txt);
    if (st < 0)
        return (int)st;
    if ((st != 200 && st != 201) || !s->hdr_token[0]) {
        wt_err_set(err, "%s: session login refused (HTTP %ld%s)", s->t.url, st,
                   s->hdr_token[0] ? "" : ", no X-Auth-Token");
        return -EACCES;
    }
    snprintf(s->token, sizeof s->token, "%s", s->hdr_token);
    snprintf(s->session_uri, sizeof s->session_uri, "%s", s->hdr_location);
    wt_info("redfish", "%s: session opened", s->t.name);
    return 0;
}

static void logout(struct rf *s)
{
    if (!s->curl || !s->token[0])
        return;
    const char *path = s->session_uri;
    size_t ul = strlen(s->t.url);
    if (strncmp(path, s->t.url, ul) == 0)
        path += ul; /* an absolute Location on the same service */
    if (strncmp(path, ROOT "/", strlen(ROOT) + 1) == 0) {
        struct wt_err err = {{0}};
        /* Best effort, and brief: a stop must not wait on a service that went away. */
        s->deadline_mono = wt_now_mono_ns() + 2 * WT_NS_PER_S;
        (void)request(s, "DELETE", path, NULL, &err);
        s->deadline_mono = 0;
    }
    s->token[0] = '\0';
}

/*
 * GETs path and parses it. Returns 0 with *out (caller frees), -ENOENT for 404, -EIO when the
 * service did not answer, -EPROTO for another HTTP error or a body that is not a JSON object,
 * -EFBIG for a body over the bound, -EACCES when credentials are refused.
 */
static int get_json(struct rf *s, const char *path, cJSON **out, struct wt_err *err)
{
    *out = NULL;
    if (s->t.username[0] && s->t.auth == AUTH_SESSION && !s->token[0]) {
        int rc = login(s, err);
        if (rc)
            return rc == -EACCES ? -EACCES : rc;
    }
    long st = request(s, "GET", path, NULL, err);
    if (st == 401 && s->t.auth == AUTH_SESSION && s->token[0]) {
        /* The session expired (or the BMC restarted): log in once more. */
        s->token[0] = '\0';
        int rc = login(s, err);
        if (rc)
            return rc;
        st = request(s, "GET", path, NULL, err);
    }
    if (st < 0)
        return (int)st;
    if (st == 404) {
        wt_err_set(err, "%s: HTTP 404", path);
        return -ENOENT;
    }
    if (st == 401 || st == 403) {
        wt_err_set(err, "%s: HTTP %ld: credentials refused", path, st);
        return -EACCES;
    }
    if (st < 200 || st > 299) {
        wt_err_set(err, "%s: HTTP %ld", path, st);
        return -EPROTO;
    }
    cJSON *j = cJSON_ParseWithLength(s->body.p ? s->body.p : "", s->body.len);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        wt_err_set(err, "%s: the body is not a JSON object (%zu bytes)", path, s->body.len);
        return -EPROTO;
    }
    *out = j;
    return 0;
}

/* ---- JSON helpers ---- */

static const cJSON *item(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = item(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The @odata.id of o[key] when it is a path on this service, else NULL. */
static const char *link(const cJSON *o, const char *key)
{
    const char *u = str(item(o, key), "@odata.id");
    if (!u || strncmp(u, ROOT, strlen(ROOT)) != 0 || strlen(u) >= URI_LEN)
        return NULL;
    return u;
}

static bool number(const cJSON *v, double *out)
{
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
        *out = v->valuedouble;
        return true;
    }
    return false;
}

/* Copies s into out with anything outside [A-Za-z0-9_.-] replaced by '_'. */
static void sanitize(const char *in, char *out, size_t n)
{
    size_t i = 0;
    for (; in[i] && i + 1 < n; i++) {
        char c = in[i];
        out[i] = (isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-') ? c : '_';
    }
    out[i] = '\0';
}

/*
 * The last segment of the resource's URI (unique in its collection, where an Id copied by
 * mistake is not: public-tower's Bay2 says "Id": "Bay1"), else its Id.
 */
static void id_of(const cJSON *j, const char *uri, char *out, size_t n)
{
    char u[URI_LEN];
    snprintf(u, sizeof u, "%s", uri);
    size_t len = strlen(u);
    while (len > 0 && u[len - 1] == '/')
        u[--len] = '\0';
    const char *slash = strrchr(u, '/');
    const char *id = slash ? slash + 1 : u;
    if (!*id || strcmp(u, ROOT) == 0)
        id = str(j, "Id") ? str(j, "Id") : "";
    sanitize(id, out, n);
}

static bool seen(const struct rf *s, const char *uri)
{
    for (size_t i = 0; i < s->nseen; i++)
        if (strcmp(s->seen[i], uri) == 0)
            return true;
    return false;
}

static void mark_seen(struct rf *s, const char *uri)
{
    if (seen(s, uri))
        return;
    if (s->nseen == s->capseen) {
        size_t cap = s->capseen ? 2 * s->capseen : 64;
        char **p = realloc(s->seen, cap * sizeof *p);
        if (!p)
            return;
        s->seen = p;
        s->capseen = cap;
    }
    char *d = strdup(uri);
    if (d)
        s->seen[s->nseen++] = d;
}

static void clear_seen(struct rf *s)
{
    for (size_t i = 0; i < s->nseen; i++)
        free(s->seen[i]);
    s->nseen = 0;
}

/* Every DataSourceUri below j: the Sensors these excerpts were taken from. */
static void mark_sources(struct rf *s, const cJSON *j)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, j)
    {
        if (c->string && strcmp(c->string, "DataSourceUri") == 0 && cJSON_IsString(c))
            mark_seen(s, c->valuestring);
        else if (cJSON_IsObject(c) || cJSON_IsArray(c))
            mark_sources(s, c);
    }
}

/* ---- the walk ---- */

static void free_resources(struct rf *s)
{
    for (size_t i = 0; i < s->nres; i++)
        free(s->res[i].uri);
    s->nres = 0;
}

static struct resource *add_resource(struct rf *s, const char *uri, enum rkind kind,
                                     const char *point, const char *kindl, const char *name)
{
    if (s->nres >= WT_REDFISH_MAX_RESOURCES)
        return NULL;
    if (s->nres == s->capres) {
        size_t cap = s->capres ? 2 * s->capres : 32;
        struct resource *p = realloc(s->res, cap * sizeof *p);
        if (!p)
            return NULL;
        s->res = p;
        s->capres = cap;
    }
    struct resource *r = &s->res[s->nres];
    memset(r, 0, sizeof *r);
    r->uri = strdup(uri ? uri : "");
    if (!r->uri)
        return NULL;
    r->kind = kind;
    snprintf(r->point, sizeof r->point, "%s", point);
    snprintf(r->kindl, sizeof r->kindl, "%s", kindl);
    snprintf(r->name, sizeof r->name, "%s", name ? name : "");
    s->nres++;
    return r;
}

/*
 * GETs during the walk. Transport errors end the walk (-EIO); a resource that cannot be read
 * is left out (logged at debug). Returns 0 with *out, or -ENOENT-like codes for "skip".
 */
static int walk_get(struct rf *s, const char *uri, cJSON **out, struct wt_err *err)
{
    if (++s->walk_gets > MAX_WALK_GETS) {
        wt_err_set(err, "walk stopped after %d requests", MAX_WALK_GETS);
        return -E2BIG;
    }
    int rc = get_json(s, uri, out, err);
    if (rc && rc != -EIO && rc != -EACCES)
        wt_debug("redfish", "%s: left out: %s", s->t.name, err->msg);
    return rc;
}

/* A walk error that ends the walk: the service stopped answering, or refuses us. */
static bool fatal(int rc)
{
    return rc == -EIO || rc == -EACCES || rc == -E2BIG || rc == -ENOMEM;
}

static void add_info(struct rf *s, const cJSON *j, const char *point, const char *kindl)
{
    struct resource *r = add_resource(s, NULL, R_INFO, point, kindl, str(j, "Name"));
    if (r) {
        snprintf(r->vendor, sizeof r->vendor, "%s",
                 str(j, "Manufacturer") ? str(j, "Manufacturer") : "");
        snprintf(r->model, sizeof r->model, "%s", str(j, "Model") ? str(j, "Model") : "");
    }
}

/*
 * Keeps uri as a resource polled as kind, at point (or parent/prefix<Id> when point is NULL),
 * named name (or its own Name). GETs it once to learn its Id and DataSourceUris.
 */
static int keep(struct rf *s, const char *uri, enum rkind kind, const char *point,
                const char *parent, const char *prefix, const char *kindl, const char *name,
                struct resource **out, struct wt_err *err)
{
    cJSON *j = NULL;
    char id[48], pt[POINT_LEN];
    int rc = walk_get(s, uri, &j, err);
    if (out)
        *out = NULL;
    if (rc)
        return fatal(rc) ? rc : 0;
    if (!point) {
        id_of(j, uri, id, sizeof id);
        snprintf(pt, sizeof pt, "%s%s%s%s", parent ? parent : "", parent ? "/" : "",
                 prefix ? prefix : "", id);
        point = pt;
    }
    mark_sources(s, j);
    struct resource *r = add_resource(s, uri, kind, point, kindl, name ? name : str(j, "Name"));
    if (out)
        *out = r;
    cJSON_Delete(j);
    return 0;
}

/* Calls fn for each member of the collection at uri. Stops on a fatal error. */
typedef int (*member_fn)(struct rf *s, const char *uri, const void *ctx, struct wt_err *err);
static int each_member(struct rf *s, const char *coll, member_fn fn, const void *ctx,
                       struct wt_err *err)
{
    char page[URI_LEN];
    int rc = 0;
    snprintf(page, sizeof page, "%s", coll);
    /* A large collection comes in pages (Members@odata.nextLink); walk_get bounds the count. */
    while (page[0] && rc == 0) {
        cJSON *j = NULL;
        rc = walk_get(s, page, &j, err);
        if (rc)
            return fatal(rc) ? rc : 0;
        const cJSON *m;
        cJSON_ArrayForEach(m, item(j, "Members"))
        {
            const char *u = str(m, "@odata.id");
            if (!u || strncmp(u, ROOT, strlen(ROOT)) != 0 || strlen(u) >= URI_LEN)
                continue;
            rc = fn(s, u, ctx, err);
            if (rc)
                break;
        }
        const char *next = str(j, "Members@odata.nextLink");
        if (next && strncmp(next, ROOT "/", strlen(ROOT) + 1) == 0 && strlen(next) < URI_LEN &&
            strcmp(next, page) != 0)
            snprintf(page, sizeof page, "%s", next);
        else
            page[0] = '\0';
        cJSON_Delete(j);
    }
    return rc;
}

struct sub {
    const char *parent, *prefix, *kindl;
};

static int keep_member(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    const struct sub *sb = ctx;
    return keep(s, uri, R_GENERIC, NULL, sb->parent, sb->prefix, sb->kindl, NULL, NULL, err);
}

struct equip {
    const char *coll, *prefix, *kindl;
};

static const struct equip power_equipment[] = {
    {"RackPDUs", "pdu", "pdu"},
    {"FloorPDUs", "floorpdu", "floor_pdu"},
    {"PowerShelves", "shelf", "power_shelf"},
    {"TransferSwitches", "ats", "transfer_switch"},
    {"ElectricalBuses", "bus", "bus"},
    {NULL, NULL, NULL},
};

static const struct equip thermal_equipment[] = {
    {"CDUs", "cdu", "cdu"},
    {"HeatExchangers", "hx", "heat_exchanger"},
    {"ImmersionUnits", "immersion", "immersion_unit"},
    {NULL, NULL, NULL},
};

/* "pdu" + "1" = "pdu1"; "bus" + "Busway" = "bus-Busway". */
static void equip_point(const struct equip *e, const cJSON *j, const char *uri, char *out, size_t n)
{
    char id[48];
    id_of(j, uri, id, sizeof id);
    snprintf(out, n, "%s%s%s", e->prefix, isdigit((unsigned char)id[0]) ? "" : "-", id);
}

static int walk_power_unit(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    const struct equip *e = ctx;
    static const struct {
        const char *key, *kindl;
    } subs[] = {{"Mains", "mains"},      {"Branches", "branch"}, {"Feeders", "feeder"},
                {"Subfeeds", "subfeed"}, {"Outlets", "outlet"},  {NULL, NULL}};
    cJSON *j = NULL;
    char point[POINT_LEN];
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    equip_point(e, j, uri, point, sizeof point);
    add_info(s, j, point, e->kindl);
    const char *metrics = link(j, "Metrics");
    if (metrics)
        rc = keep(s, metrics, R_GENERIC, point, NULL, NULL, e->kindl, str(j, "Name"), NULL, err);
    for (int i = 0; subs[i].key && !rc; i++) {
        const char *c = link(j, subs[i].key);
        struct sub sb = {point, "", subs[i].kindl};
        if (c)
            rc = each_member(s, c, keep_member, &sb, err);
    }
    cJSON_Delete(j);
    return rc;
}

static int walk_cooling_unit(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    const struct equip *e = ctx;
    static const struct {
        const char *key, *prefix, *kindl;
    } subs[] = {{"PrimaryCoolantConnectors", "primary", "coolant_primary"},
                {"SecondaryCoolantConnectors", "secondary", "coolant_secondary"},
                {"Pumps", "pump", "pump"},
                {NULL, NULL, NULL}};
    cJSON *j = NULL;
    char point[POINT_LEN];
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    equip_point(e, j, uri, point, sizeof point);
    add_info(s, j, point, e->kindl);
    const char *env = link(j, "EnvironmentMetrics");
    if (env)
        rc = keep(s, env, R_GENERIC, point, NULL, NULL, e->kindl, str(j, "Name"), NULL, err);
    for (int i = 0; subs[i].key && !rc; i++) {
        const char *c = link(j, subs[i].key);
        struct sub sb = {point, subs[i].prefix, subs[i].kindl};
        if (c)
            rc = each_member(s, c, keep_member, &sb, err);
    }
    cJSON_Delete(j);
    return rc;
}

static int walk_equipment(struct rf *s, const char *uri, const struct equip *list, member_fn fn,
                          struct wt_err *err)
{
    cJSON *j = NULL;
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    for (const struct equip *e = list; e->coll && !rc; e++) {
        const char *c = link(j, e->coll);
        if (c)
            rc = each_member(s, c, fn, e, err);
    }
    cJSON_Delete(j);
    return rc;
}

/* Which wattage metric a Sensor maps to, and the factor to base units; false to leave it. */
static bool sensor_metric(const cJSON *j, int *metric, double *factor)
{
    const char *type = str(j, "ReadingType"), *units = str(j, "ReadingUnits");
    if (!type)
        return false;
    *factor = 1;
    if (strcmp(type, "Power") == 0) {
        *metric = WT_M_FAC_POWER_W;
        *factor = units && strcmp(units, "kW") == 0 ? 1e3 : 1;
    } else if (strcmp(type, "EnergykWh") == 0) {
        *metric = WT_M_FAC_ENERGY_J;
        *factor = 3.6e6;
    } else if (strcmp(type, "EnergyWh") == 0) {
        *metric = WT_M_FAC_ENERGY_J;
        *factor = 3600;
    } else if (strcmp(type, "EnergyJoules") == 0) {
        *metric = WT_M_FAC_ENERGY_J;
    } else if (strcmp(type, "Temperature") == 0) {
        *metric = WT_M_FAC_TEMP_C;
    } else if (strcmp(type, "Current") == 0) {
        *metric = WT_M_FAC_CURRENT_A;
    } else if (strcmp(type, "Voltage") == 0) {
        *metric = WT_M_FAC_VOLTAGE_V;
    } else if (strcmp(type, "Rotational") == 0) {
        *metric = WT_M_FAC_FAN_RPM;
    } else if (strcmp(type, "Humidity") == 0) {
        *metric = WT_M_FAC_HUMIDITY_RATIO;
        *factor = 0.01;
    } else if (strcmp(type, "LiquidFlowLPM") == 0 || strcmp(type, "LiquidFlow") == 0) {
        *metric = WT_M_FAC_FLOW_M3S;
        *factor = 1.0 / 60000;
    } else if (strcmp(type, "PressurekPa") == 0) {
        *metric = WT_M_FAC_PRESSURE_PA;
        *factor = 1e3;
    } else if (strcmp(type, "PressurePa") == 0) {
        *metric = WT_M_FAC_PRESSURE_PA;
    } else {
        return false; /* Frequency, Percent, Heat (kW of heat, not electric power)... */
    }
    return true;
}

static int keep_sensor(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    const char *chassis = ctx;
    if (seen(s, uri))
        return 0; /* an excerpt already gives it */
    cJSON *j = NULL;
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    int metric;
    double factor;
    if (sensor_metric(j, &metric, &factor)) {
        char id[48], point[POINT_LEN];
        id_of(j, uri, id, sizeof id);
        snprintf(point, sizeof point, "%s/%s", chassis, id);
        mark_seen(s, uri);
        add_resource(s, uri, R_SENSOR, point, "sensor", str(j, "Name"));
    }
    cJSON_Delete(j);
    return 0;
}

static int walk_psu(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    const char *chassis = ctx;
    cJSON *j = NULL;
    char id[48], point[POINT_LEN];
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    const char *metrics = link(j, "Metrics");
    id_of(j, uri, id, sizeof id);
    snprintf(point, sizeof point, "%s/%s", chassis, id);
    if (metrics)
        rc = keep(s, metrics, R_GENERIC, point, NULL, NULL, "psu", str(j, "Name"), NULL, err);
    cJSON_Delete(j);
    return rc;
}

static int walk_chassis(struct rf *s, const char *uri, const void *ctx, struct wt_err *err)
{
    (void)ctx;
    cJSON *j = NULL, *sub = NULL;
    char id[48];
    int rc = walk_get(s, uri, &j, err);
    if (rc)
        return fatal(rc) ? rc : 0;
    id_of(j, uri, id, sizeof id);
    add_info(s, j, id, "chassis");
    const char *env = link(j, "EnvironmentMetrics"), *ps = link(j, "PowerSubsystem");
    const char *ts = link(j, "ThermalSubsystem"), *sensors = link(j, "Sensors");
    const char *power = link(j, "Power"), *thermal = link(j, "Thermal");
    const char *name = str(j, "Name");
    /*
     * ThermalSubsystem first: where it and EnvironmentMetrics quote the same sensor, its point
     * ("1U/internal", a fan's own Id) says more.
     */
    if (ts) {
        rc = walk_get(s, ts, &sub, err);
        if (rc == 0) {
            const char *tm = link(sub, "ThermalMetrics"), *fans = link(sub, "Fans");
            struct sub sb = {id, "", "fan"};
            if (tm)
                rc = keep(s, tm, R_GENERIC, id, NULL, NULL, "chassis", name, NULL, err);
            if (!rc && fans)
                rc = each_member(s, fans, keep_member, &sb, err);
            cJSON_Delete(sub);
        } else if (!fatal(rc)) {
            rc = 0;
            ts = NULL;
        }
    }
    if (!rc && env)
        rc = keep(s, env, R_GENERIC, id, NULL, NULL, "chassis", name, NULL, err);
    if (!rc && ps) {
        rc = walk_get(s, ps, &sub, err);
        if (rc == 0) {
            const char *psus = link(sub, "PowerSupplies");
            if (psus)
                rc = each_member(s, psus, walk_psu, id, err);
            cJSON_Delete(sub);
        } else if (!fatal(rc)) {
            rc = 0;
            ps = NULL;
        }
    }
    /* The deprecated resources, only where the new ones are missing (same values twice). */
    if (!rc && power && !ps) {
        struct resource *r;
        rc = keep(s, power, R_POWER_LEGACY, id, NULL, NULL, "chassis", name, &r, err);
        if (r)
            r->skip_power_control = env != NULL;
    }
    if (!rc && thermal && !ts)
        rc = keep(s, thermal, R_THERMAL_LEGACY, id, NULL, NULL, "chassis", name, NULL, err);
    if (!rc && sensors && s->t.sensors)
        rc = each_member(s, sensors, keep_sensor, id, err);
    cJSON_Delete(j);
    return rc;
}

static int walk(struct rf *s, struct wt_err *err)
{
    cJSON *root = NULL;
    free_resources(s);
    clear_seen(s);
    s->walk_gets = 0;
    int rc = get_json(s, ROOT, &root, err);
    if (rc)
        return rc;
    const char *pe = link(root, "PowerEquipment"), *te = link(root, "ThermalEquipment");
    const char *ch = link(root, "Chassis");
    /* Equipment first: its excerpts name the Sensors that the Chassis walk then leaves out. */
    if (pe)
        rc = walk_equipment(s, pe, power_equipment, walk_power_unit, err);
    if (!rc && te)
        rc = walk_equipment(s, te, thermal_equipment, walk_cooling_unit, err);
    if (!rc && ch)
        rc = each_member(s, ch, walk_chassis, NULL, err);
    cJSON_Delete(root);
    if (rc)
        return rc == -EIO || rc == -EACCES ? rc : -EIO;
    size_t polled = 0;
    for (size_t i = 0; i < s->nres; i++)
        polled += s->res[i].kind != R_INFO;
    if (polled == 0) {
        wt_err_set(err, "%s: no power, thermal or sensor resources under %s", s->t.url, ROOT);
        return -ENOENT;
    }
    s->walked = true;
    clear_seen(s);
    wt_info("redfish", "%s: found %zu resources to poll (%u requests)", s->t.name, polled,
            s->walk_gets + 1);
    return 0;
}

/* ---- readings ---- */

static int labels_for(const struct rf *s, const char *point, const char *kindl, const char *name,
                      char *buf, size_t n)
{
    int rc = wt_labels(buf, n, "source", "redfish", "target", s->t.name, "point", point, "kind",
                       kindl, NULL);
    if (!rc && name && *name)
        rc = wt_labels_add(buf, n, "name", name);
    if (!rc && s->t.node[0])
        rc = wt_labels_add(buf, n, "node", s->t.node);
    if (!rc && s->t.rack[0])
        rc = wt_labels_add(buf, n, "rack", s->t.rack);
    if (!rc && s->t.zone[0])
        rc = wt_labels_add(buf, n, "zone", s->t.zone);
    return rc;
}

static struct counter *counter_for(struct rf *s, int metric, const char *labels)
{
    for (size_t i = 0; i < s->nctrs; i++)
        if (s->ctrs[i].metric == metric && strcmp(s->ctrs[i].labels, labels) == 0)
            return &s->ctrs[i];
    if (s->nctrs == s->capctrs) {
        size_t cap = s->capctrs ? 2 * s->capctrs : 16;
        struct counter *p = realloc(s->ctrs, cap * sizeof *p);
        if (!p)
            return NULL;
        s->ctrs = p;
        s->capctrs = cap;
    }
    struct counter *c = &s->ctrs[s->nctrs++];
    memset(c, 0, sizeof *c);
    c->metric = metric;
    snprintf(c->labels, sizeof c->labels, "%s", labels);
    return c;
}

/* One reading of resource r: point r->point[/qual], kind (r's unless given), value in base units.
 */
static void emit(struct rf *s, const struct resource *r, const char *kindl, const char *qual,
                 int metric, double value)
{
    char point[POINT_LEN + 48], labels[WT_LABELS_LEN];
    if (s->add_rc || !isfinite(value))
        return;
    if (qual && *qual)
        snprintf(point, sizeof point, "%s/%s", r->point, qual);
    else
        snprintf(point, sizeof point, "%s", r->point);
    const char *k = kindl ? kindl : r->kindl;
    /* A long name is dropped before the reading is. */
    if (labels_for(s, point, k, r->name, labels, sizeof labels) != 0 &&
        labels_for(s, point, k, NULL, labels, sizeof labels) != 0)
        return;
    /* Whatever a service says twice (ids copied by mistake), a series is exported once. */
    for (size_t i = s->out_start; i < s->out->len; i++)
        if (s->out->r[i].metric == metric && strcmp(s->out->r[i].labels, labels) == 0)
            return;
    if (metric == WT_M_FAC_ENERGY_J) {
        /* Counters stay integer, in millijoules, through energy.c (a reset is a new baseline). */
        struct counter *c = counter_for(s, metric, labels);
        if (!c || value < 0)
            return;
        if (value > 1e15)
            return; /* more than 277 GWh: not a reading, and it would not fit in mJ */
        uint64_t raw = (uint64_t)llround(value * 1000.0);
        if (wt_energy_counter_update(&c->ctr, s->t_ns, raw, 0, 0) == WT_DELTA_FIRST)
            c->first_raw = raw;
        value = (double)(c->first_raw + c->ctr.total_raw) / 1000.0;
    }
    s->add_rc = wt_batch_add(s->out, metric, labels, s->t_ns, value);
}

/*
 * An excerpt: a number, or an object with Reading (and DataSourceUri: read once per poll).
 * Power excerpts carry ApparentVA and PowerFactor too.
 */
static void excerpt(struct rf *s, const struct resource *r, const cJSON *v, const char *qual,
                    int metric, double factor)
{
    double x;
    if (cJSON_IsObject(v)) {
        const char *src = str(v, "DataSourceUri");
        if (src) {
            if (seen(s, src))
                return;
            mark_seen(s, src);
        }
        if (number(item(v, "Reading"), &x))
            emit(s, r, NULL, qual, metric, x * factor);
        if (metric == WT_M_FAC_POWER_W) {
            if (number(item(v, "ApparentVA"), &x))
                emit(s, r, NULL, qual, WT_M_FAC_APPARENT_VA, x);
            if (number(item(v, "PowerFactor"), &x))
                emit(s, r, NULL, qual, WT_M_FAC_POWER_FACTOR, x);
        }
    } else if (number(v, &x)) {
        emit(s, r, NULL, qual, metric, x * factor);
    }
}

/* "Line1ToNeutral" -> "L1N", "Line1ToLine2" -> "L1L2", "Line1" -> "L1", "Neutral" -> "N". */
static void line_name(const char *key, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = key; *p && o + 1 < n;) {
        if (strncmp(p, "Line", 4) == 0) {
            out[o++] = 'L';
            p += 4;
        } else if (strncmp(p, "Neutral", 7) == 0) {
            out[o++] = 'N';
            p += 7;
        } else if (strncmp(p, "To", 2) == 0) {
            p += 2;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

struct prop {
    const char *key;
    int metric;
    double factor;
    const char *qual;
};

static const struct prop props[] = {
    {"PowerWatts", WT_M_FAC_POWER_W, 1, NULL},
    {"InputPowerWatts", WT_M_FAC_POWER_W, 1, "input"},
    {"OutputPowerWatts", WT_M_FAC_POWER_W, 1, "output"},
    {"EnergykWh", WT_M_FAC_ENERGY_J, 3.6e6, NULL},
    {"Voltage", WT_M_FAC_VOLTAGE_V, 1, NULL},
    {"InputVoltage", WT_M_FAC_VOLTAGE_V, 1, "input"},
    {"CurrentAmps", WT_M_FAC_CURRENT_A, 1, NULL},
    {"InputCurrentAmps", WT_M_FAC_CURRENT_A, 1, "input"},
    {"TemperatureCelsius", WT_M_FAC_TEMP_C, 1, NULL},
    {"HumidityPercent", WT_M_FAC_HUMIDITY_RATIO, 0.01, NULL},
    {"SupplyTemperatureCelsius", WT_M_FAC_TEMP_C, 1, "supply"},
    {"ReturnTemperatureCelsius", WT_M_FAC_TEMP_C, 1, "return"},
    {"FlowLitersPerMinute", WT_M_FAC_FLOW_M3S, 1.0 / 60000, NULL},
    {"SupplyPressurekPa", WT_M_FAC_PRESSURE_PA, 1e3, "supply"},
    {"ReturnPressurekPa", WT_M_FAC_PRESSURE_PA, 1e3, "return"},
    {NULL, 0, 0, NULL},
};

static const struct prop polyphase[] = {
    {"PolyPhasePowerWatts", WT_M_FAC_POWER_W, 1, "PowerWatts"},
    {"PolyPhaseCurrentAmps", WT_M_FAC_CURRENT_A, 1, "CurrentAmps"},
    {"PolyPhaseVoltage", WT_M_FAC_VOLTAGE_V, 1, "Voltage"},
    {NULL, 0, 0, NULL},
};

static void fan_rpm(struct rf *s, const struct resource *r, const cJSON *v, const char *qual)
{
    double x;
    const char *src = str(v, "DataSourceUri");
    if (!number(item(v, "SpeedRPM"), &x))
        return;
    /*
     * The Sensor behind a fan excerpt is in percent, so the RPM is keyed apart from it; the same
     * fan quoted by ThermalSubsystem and EnvironmentMetrics is still read once.
     */
    if (src) {
        char key[URI_LEN + 8];
        snprintf(key, sizeof key, "rpm:%s", src);
        if (seen(s, key))
            return;
        mark_seen(s, key);
    }
    emit(s, r, "fan", qual, WT_M_FAC_FAN_RPM, x);
}

static void parse_generic(struct rf *s, const struct resource *r, const cJSON *j)
{
    char q[48];
    const cJSON *v;
    for (const struct prop *p = props; p->key; p++)
        if ((v = item(j, p->key)))
            excerpt(s, r, v, p->qual, p->metric, p->factor);
    for (const struct prop *p = polyphase; p->key; p++) {
        const cJSON *pp = item(j, p->key), *line;
        /* One line that repeats the single-phase value (outlets) is not read twice. */
        if (!cJSON_IsObject(pp) || (cJSON_GetArraySize(pp) == 1 && item(j, p->qual)))
            continue;
        cJSON_ArrayForEach(line, pp)
        {
            line_name(line->string ? line->string : "", q, sizeof q);
            excerpt(s, r, line, q, p->metric, p->factor);
        }
    }
    /* Fans: Fan.SpeedPercent, PowerSupplyMetrics.FanSpeedPercent, EnvironmentMetrics array. */
    if ((v = item(j, "SpeedPercent")))
        fan_rpm(s, r, v, NULL);
    if ((v = item(j, "FanSpeedPercent")))
        fan_rpm(s, r, v, "fan");
    size_t i = 0;
    cJSON_ArrayForEach(v, item(j, "FanSpeedsPercent"))
    {
        const char *dn = str(v, "DeviceName");
        char dq[48];
        if (dn)
            sanitize(dn, dq, sizeof dq);
        else
            snprintf(dq, sizeof dq, "fan%zu", i);
        fan_rpm(s, r, v, dq);
        i++;
    }
    /* ThermalMetrics. */
    const cJSON *sum = item(j, "TemperatureSummaryCelsius");
    cJSON_ArrayForEach(v, sum)
    {
        size_t k = 0;
        for (; v->string && v->string[k] && k + 1 < sizeof q; k++)
            q[k] = (char)tolower((unsigned char)v->string[k]);
        q[k] = '\0';
        excerpt(s, r, v, q, WT_M_FAC_TEMP_C, 1);
    }
    i = 0;
    cJSON_ArrayForEach(v, item(j, "TemperatureReadingsCelsius"))
    {
        const char *dn = str(v, "DeviceName");
        if (dn)
            sanitize(dn, q, sizeof q);
        else
            snprintf(q, sizeof q, "temp%zu", i);
        excerpt(s, r, v, q, WT_M_FAC_TEMP_C, 1);
        i++;
    }
}

static void parse_sensor(struct rf *s, const struct resource *r, const cJSON *j)
{
    int metric;
    double factor, x;
    if (seen(s, r->uri))
        return;
    mark_seen(s, r->uri);
    if (sensor_metric(j, &metric, &factor) && number(item(j, "Reading"), &x))
        emit(s, r, NULL, NULL, metric, x * factor);
}

/* Chassis Power (deprecated schema): PowerControl and PowerSupplies arrays. */
static void parse_power_legacy(struct rf *s, const struct resource *r, const cJSON *j)
{
    const cJSON *v;
    double x;
    char q[64], id[32];
    int n = cJSON_GetArraySize(item(j, "PowerControl")), i = 0;
    cJSON_ArrayForEach(v, item(j, "PowerControl"))
    {
        const char *mid = str(v, "MemberId");
        snprintf(id, sizeof id, "%s", mid ? mid : "");
        if (!mid)
            snprintf(id, sizeof id, "%d", i);
        sanitize(id, q, sizeof q);
        if (!r->skip_power_control && number(item(v, "PowerConsumedWatts"), &x))
            emit(s, r, NULL, n > 1 ? q : NULL, WT_M_FAC_POWER_W, x);
        i++;
    }
    i = 0;
    cJSON_ArrayForEach(v, item(j, "PowerSupplies"))
    {
        const char *mid = str(v, "MemberId");
        char sid[32], qi[64];
        if (mid)
            sanitize(mid, sid, sizeof sid);
        else
            snprintf(sid, sizeof sid, "%d", i);
        /* Dell's MemberIds ("PSU.Slot.1") say what they are; plain numbers get "psu". */
        const char *pre = isdigit((unsigned char)sid[0]) ? "psu" : "";
        snprintf(q, sizeof q, "%s%s/input", pre, sid);
        if (number(item(v, "PowerInputWatts"), &x))
            emit(s, r, "psu", q, WT_M_FAC_POWER_W, x);
        if (number(item(v, "LineInputVoltage"), &x))
            emit(s, r, "psu", q, WT_M_FAC_VOLTAGE_V, x);
        snprintf(qi, sizeof qi, "%s%s/output", pre, sid);
        if (number(item(v, "LastPowerOutputWatts"), &x))
            emit(s, r, "psu", qi, WT_M_FAC_POWER_W, x);
        i++;
    }
}

/* Chassis Thermal (deprecated schema): Temperatures and Fans arrays. */
static void parse_thermal_legacy(struct rf *s, const struct resource *r, const cJSON *j)
{
    const cJSON *v;
    double x;
    char q[48];
    int i = 0;
    cJSON_ArrayForEach(v, item(j, "Temperatures"))
    {
        const char *nm = str(v, "Name");
        if (nm)
            sanitize(nm, q, sizeof q);
        else
            snprintf(q, sizeof q, "temp%d", i);
        if (number(item(v, "ReadingCelsius"), &x))
            emit(s, r, NULL, q, WT_M_FAC_TEMP_C, x);
        i++;
    }
    i = 0;
    cJSON_ArrayForEach(v, item(j, "Fans"))
    {
        const char *nm = str(v, "Name") ? str(v, "Name") : str(v, "FanName");
        const char *units = str(v, "ReadingUnits");
        if (nm)
            sanitize(nm, q, sizeof q);
        else
            snprintf(q, sizeof q, "fan%d", i);
        /* Older services give percent here; only RPM is a fan speed we export. */
        if ((!units || strcmp(units, "RPM") == 0) && number(item(v, "Reading"), &x))
            emit(s, r, "fan", q, WT_M_FAC_FAN_RPM, x);
        i++;
    }
}

static void emit_info(struct rf *s, const struct resource *r)
{
    char labels[WT_LABELS_LEN];
    if (s->add_rc)
        return;
    int rc = wt_labels(labels, sizeof labels, "source", "redfish", "target", s->t.name, "point",
                       r->point, "kind", r->kindl, "vendor", r->vendor, "model", r->model, NULL);
    if (!rc && s->t.node[0])
        rc = wt_labels_add(labels, sizeof labels, "node", s->t.node);
    if (!rc && s->t.rack[0])
        rc = wt_labels_add(labels, sizeof labels, "rack", s->t.rack);
    if (!rc && s->t.zone[0])
        rc = wt_labels_add(labels, sizeof labels, "zone", s->t.zone);
    if (rc)
        return;
    s->add_rc = wt_batch_add(s->out, WT_M_FAC_INFO, labels, s->t_ns, 1);
}

/*
 * GETs every kept resource. Returns 0, or -EIO when the service stopped answering; sets
 * *relayout on a 404. ok/failed count the resources read and not.
 */
static int poll_resources(struct rf *s, bool *relayout, size_t *ok, size_t *failed,
                          struct wt_err *first, struct wt_err *err)
{
    clear_seen(s);
    for (size_t i = 0; i < s->nres && !s->add_rc; i++) {
        struct resource *r = &s->res[i];
        cJSON *j = NULL;
        struct wt_err e = {{0}};
        if (r->kind == R_INFO) {
            emit_info(s, r);
            continue;
        }
        int rc = get_json(s, r->uri, &j, &e);
        if (rc == -EIO || rc == -EACCES) {
            *err = e;
            return rc;
        }
        if (rc == -ENOENT) {
            *relayout = true;
            *first = e;
            return 0;
        }
        if (rc) {
            if (!*failed)
                *first = e;
            (*failed)++;
            continue;
        }
        switch (r->kind) {
        case R_GENERIC:
            parse_generic(s, r, j);
            break;
        case R_SENSOR:
            parse_sensor(s, r, j);
            break;
        case R_POWER_LEGACY:
            parse_power_legacy(s, r, j);
            break;
        case R_THERMAL_LEGACY:
            parse_thermal_legacy(s, r, j);
            break;
        case R_INFO:
            break;
        }
        cJSON_Delete(j);
        (*ok)++;
    }
    return 0;
}

static int poll_walked(struct rf *s, struct wt_err *err);

static int rf_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct rf *s = state;
    s->t_ns = t_ns;
    s->out = out;
    s->out_start = out->len;
    s->add_rc = 0;
    s->have_date = false;
    s->deadline_mono = wt_now_mono_ns() + WT_POLL_TIMEOUTS * s->t.timeout_ns;
    int rc = poll_walked(s, err);
    s->deadline_mono = 0;
    return rc;
}

static int poll_walked(struct rf *s, struct wt_err *err)
{
    struct wt_batch *out = s->out;
    int64_t t_ns = s->t_ns;
    for (int attempt = 0; attempt < 2; attempt++) {
        size_t ok = 0, failed = 0;
        bool relayout = false;
        struct wt_err first = {{0}};
        if (!s->walked) {
            int rc = walk(s, err);
            if (rc)
                return rc;
        }
        int rc = poll_resources(s, &relayout, &ok, &failed, &first, err);
        if (rc)
            return rc;
        if (relayout) {
            /* The service moved things (firmware update, new chassis): walk again, once. */
            wt_info("redfish", "%s: %s; walking the service again", s->t.name, first.msg);
            s->walked = false;
            wt_batch_clear(out);
            s->out_start = 0;
            s->add_rc = 0;
            continue;
        }
        if (s->add_rc) {
            wt_err_set(err, "out of memory");
            return s->add_rc;
        }
        if (failed) {
            uint64_t held;
            if (ok == 0) {
                *err = first;
                return -EPROTO;
            }
            if (wt_ratelimit_ok(&s->rl, wt_now_mono_ns(), &held))
                wt_warn("redfish", "%s: %zu of %zu resources not read: %s suppressed=%llu",
                        s->t.name, failed, ok + failed, first.msg, (unsigned long long)held);
        }
        if (s->have_date) {
            double skew, unc;
            wt_peer_skew(s->date_s, s->date_before_ns, s->date_after_ns, &skew, &unc);
            if (wt_batch_add(out, WT_M_CLOCK_PEER_SKEW_S, s->skew_labels, t_ns, skew) != 0)
                return wt_err_set(err, "out of memory"), -ENOMEM;
            wt_peer_skew_note(&s->skew, "redfish", s->t.name, skew, unc, s->clock_bound_s);
        }
        return wt_batch_add(out, WT_M_FAC_UP, s->up_labels, t_ns, 1);
    }
    wt_err_set(err, "%s: resources keep moving (404 after a fresh walk)", s->t.name);
    return -EIO;
}

/* ---- open / close ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static const struct wt_collector_config *rf_config(const struct wt_config *cfg)
{
    return &cfg->collectors.redfish;
}

static size_t rf_targets(const struct wt_config *cfg, struct wt_target *out, size_t max)
{
    return wt_y_targets_names(&targets, wt_config_file(cfg), wt_config_section(cfg, SECTION),
                              "redfish", out, max);
}

static void rf_close(void *state)
{
    struct rf *s = state;
    if (!s)
        return;
    logout(s);
    if (s->curl)
        curl_easy_cleanup(s->curl);
    explicit_bzero(s->password, sizeof s->password);
    free_resources(s);
    free(s->res);
    clear_seen(s);
    free(s->seen);
    free(s->ctrs);
    free(s->body.p);
    free(s);
}

/* Reads the first line of a password file (never logged). */
static int read_password(const char *path, char *out, size_t n, struct wt_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        wt_err_set(err, "cannot read password_file %s: %s", path, strerror(e));
        return -e;
    }
    char *line = fgets(out, (int)n, f);
    fclose(f);
    if (!line) {
        wt_err_set(err, "password_file %s is empty", path);
        return -EINVAL;
    }
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

static int rf_open_target(const struct wt_config *cfg, size_t i, void **state, struct wt_err *err)
{
    struct rf *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    *state = s;
    int prc = wt_y_target_at(&targets, wt_config_file(cfg), wt_config_section(cfg, SECTION), i,
                             &s->t, "Redfish", err);
    if (prc)
        return prc;
    struct target *t = &s->t;
    s->rl.interval_ns = 60 * WT_NS_PER_S;
    s->body.max = (size_t)t->max_response;
    /* up carries the placement too, so that a rack's dead PDU can be told apart. */
    int lrc =
        wt_labels(s->up_labels, sizeof s->up_labels, "source", "redfish", "target", t->name, NULL);
    if (!lrc && t->node[0])
        lrc = wt_labels_add(s->up_labels, sizeof s->up_labels, "node", t->node);
    if (!lrc && t->rack[0])
        lrc = wt_labels_add(s->up_labels, sizeof s->up_labels, "rack", t->rack);
    if (!lrc && t->zone[0])
        lrc = wt_labels_add(s->up_labels, sizeof s->up_labels, "zone", t->zone);
    /* The skew series is the clock's, not a facility reading's: the target and its placement. */
    snprintf(s->skew_labels, sizeof s->skew_labels, "%s", s->up_labels);
    s->clock_bound_s = (double)cfg->daemon.clock_max_error_ns / 1e9;
    if (lrc != 0)
        return wt_err_set(err, "%s: labels too long", t->name);
    if (t->password_file[0]) {
        int rc = read_password(t->password_file, s->password, sizeof s->password, err);
        if (rc)
            return rc;
    }
    pthread_once(&curl_once, curl_init_once);
    s->curl = curl_easy_init();
    if (!s->curl)
        return wt_err_set(err, "cannot start libcurl");
    CURL *c = s->curl;
    long tmo = (long)(t->timeout_ns / WT_NS_PER_MS);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, tmo);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, tmo);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)t->max_response);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, s->errbuf);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "wattage/" WT_VERSION);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, t->insecure ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, t->insecure ? 0L : 2L);
    if (t->ca_file[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, t->ca_file);
    if (t->username[0] && t->auth == AUTH_BASIC) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, t->username);
        curl_easy_setopt(c, CURLOPT_PASSWORD, s->password);
    }
    bool https = strncmp(t->url, "https://", 8) == 0;
    if (t->insecure && https)
        wt_warn("redfish", "%s: insecure: true: the TLS certificate of %s is NOT verified", t->name,
                t->url);
    if (t->username[0] && !https)
        wt_warn("redfish", "%s: credentials are sent without TLS to %s", t->name, t->url);
    return 0;
}

void wt_redfish_serve(void *state, wt_redfish_serve_fn fn, void *ctx)
{
    struct rf *s = state;
    s->serve = fn;
    s->serve_ctx = ctx;
}

/* After a failed poll: the target is down (its last readings are stale and go). */
static int rf_down(void *state, int64_t t_ns, struct wt_batch *out)
{
    const struct rf *s = state;
    return wt_batch_add(out, WT_M_FAC_UP, s->up_labels, t_ns, 0);
}

const struct wt_collector_ops wt_redfish_collector = {
    .name = "redfish",
    .config = rf_config,
    .poll = rf_poll,
    .close = rf_close,
    .targets = rf_targets,
    .open_target = rf_open_target,
    .down = rf_down,
};
