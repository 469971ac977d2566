/* SPDX-License-Identifier: MIT */
/*
 * The client side of a Redfish service; see redfish_client.h. Owns the libcurl handle (kept
 * alive between requests), the bounded response body, the session (POST SessionService/Sessions,
 * its X-Auth-Token, DELETE at close), the poll's deadline over every request, and the Date
 * header of the quickest answer (the service's clock). Then the JSON accessors the walk and the
 * readings share (collect/redfish.c).
 */
#include "collect/redfish_client.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/reading.h"

#define ROOT WT_REDFISH_ROOT
#define URI_LEN WT_REDFISH_URI_LEN

/* ---- HTTP ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    struct wt_rf_body *b = ctx;
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
    struct wt_rf_client *s = ctx;
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
static void note_date(struct wt_rf_client *s, int64_t before, int64_t after)
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
static long request(struct wt_rf_client *s, const char *method, const char *path,
                    const char *json_body, struct wt_err *err)
{
    char url[URI_LEN + 256];
    struct curl_slist *h = NULL;
    char auth[600];
    snprintf(url, sizeof url, "%s%s", s->t->url, path);
    /*
     * A whole poll (a walk of a large service) is bounded too, so that a slow but answering
     * service cannot hold its thread, and a stop, for long.
     */
    int64_t tmo = s->t->timeout_ns;
    if (s->deadline_mono) {
        int64_t left = s->deadline_mono - wt_now_mono_ns();
        if (left <= 0) {
            wt_err_set(err, "%s: the poll took longer than %.3g s, stopped", s->t->url,
                       (double)(WT_REDFISH_POLL_TIMEOUTS * s->t->timeout_ns) / WT_NS_PER_S);
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
                       (long long)s->t->max_response);
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
                       (long long)s->t->max_response);
            return -EFBIG;
        }
        if (cc == CURLE_FILESIZE_EXCEEDED) {
            wt_err_set(err, "%s: response larger than %lld bytes, refused", path,
                       (long long)s->t->max_response);
            return -EFBIG;
        }
        wt_err_set(err, "%s%s: %s", s->t->url, path,
                   s->errbuf[0] ? s->errbuf : curl_easy_strerror(cc));
        return HTTP_TRANSPORT;
    }
    long status = 0;
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
    note_date(s, before, after);
    return status;
}

/* Opens a Redfish session (POST SessionService/Sessions) and keeps its token. */
static int login(struct wt_rf_client *s, struct wt_err *err)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return -ENOMEM;
    cJSON_AddStringToObject(o, "UserName", s->t->username);
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
        wt_err_set(err, "%s: session login refused (HTTP %ld%s)", s->t->url, st,
                   s->hdr_token[0] ? "" : ", no X-Auth-Token");
        return -EACCES;
    }
    snprintf(s->token, sizeof s->token, "%s", s->hdr_token);
    snprintf(s->session_uri, sizeof s->session_uri, "%s", s->hdr_location);
    wt_info("redfish", "%s: session opened", s->t->name);
    return 0;
}

static void logout(struct wt_rf_client *s)
{
    if (!s->curl || !s->token[0])
        return;
    const char *path = s->session_uri;
    size_t ul = strlen(s->t->url);
    if (strncmp(path, s->t->url, ul) == 0)
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
int wt_rf_get_json(struct wt_rf_client *s, const char *path, cJSON **out, struct wt_err *err)
{
    *out = NULL;
    if (s->t->username[0] && s->t->auth == WT_RF_AUTH_SESSION && !s->token[0]) {
        int rc = login(s, err);
        if (rc)
            return rc == -EACCES ? -EACCES : rc;
    }
    long st = request(s, "GET", path, NULL, err);
    if (st == 401 && s->t->auth == WT_RF_AUTH_SESSION && s->token[0]) {
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

const cJSON *wt_rf_item(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

const char *wt_rf_str(const cJSON *o, const char *key)
{
    const cJSON *v = wt_rf_item(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The @odata.id of o[key] when it is a path on this service, else NULL. */
const char *wt_rf_link(const cJSON *o, const char *key)
{
    const char *u = wt_rf_str(wt_rf_item(o, key), "@odata.id");
    if (!u || strncmp(u, ROOT, strlen(ROOT)) != 0 || strlen(u) >= URI_LEN)
        return NULL;
    return u;
}

bool wt_rf_number(const cJSON *v, double *out)
{
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
        *out = v->valuedouble;
        return true;
    }
    return false;
}

/* Copies s into out with anything outside [A-Za-z0-9_.-] replaced by '_'. */
void wt_rf_sanitize(const char *in, char *out, size_t n)
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
void wt_rf_id_of(const cJSON *j, const char *uri, char *out, size_t n)
{
    char u[URI_LEN];
    snprintf(u, sizeof u, "%s", uri);
    size_t len = strlen(u);
    while (len > 0 && u[len - 1] == '/')
        u[--len] = '\0';
    const char *slash = strrchr(u, '/');
    const char *id = slash ? slash + 1 : u;
    if (!*id || strcmp(u, ROOT) == 0)
        id = wt_rf_str(j, "Id") ? wt_rf_str(j, "Id") : "";
    wt_rf_sanitize(id, out, n);
}

/* Which wattage metric a Sensor maps to, and the factor to base units; false to leave it. */
bool wt_rf_sensor_metric(const cJSON *j, int *metric, double *factor)
{
    const char *type = wt_rf_str(j, "ReadingType"), *units = wt_rf_str(j, "ReadingUnits");
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

/* ---- the handle ---- */

int wt_rf_client_open(struct wt_rf_client *s, const struct wt_redfish_target *t, struct wt_err *err)
{
    s->t = t;
    s->body.max = (size_t)t->max_response;
    if (t->password_file[0]) {
        int rc = wt_fac_read_password(t->password_file, s->password, sizeof s->password, err);
        if (rc)
            return rc;
    }
    int rc = wt_curl_load("collectors.redfish.targets", err);
    if (rc)
        return rc;
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
    if (t->username[0] && t->auth == WT_RF_AUTH_BASIC) {
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

void wt_rf_client_close(struct wt_rf_client *s)
{
    logout(s);
    if (s->curl)
        curl_easy_cleanup(s->curl);
    s->curl = NULL;
    explicit_bzero(s->password, sizeof s->password);
    free(s->body.p);
    s->body.p = NULL;
}
