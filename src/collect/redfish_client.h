/* SPDX-License-Identifier: MIT */
/*
 * The client side of a Redfish service, for the Redfish collector (collect/redfish.c): one
 * target's connection settings, its libcurl handle and session, GETs that come back as JSON
 * objects, and the accessors that read Redfish's JSON (links on the same service, finite
 * numbers, ids made label-safe, a Sensor's reading type). What is walked and what becomes a
 * reading is redfish.c's.
 *
 * Every request has the target's timeout, and all of a poll's requests together end at
 * deadline_mono (0: none); a body over max_response is refused; only paths under /redfish/v1 are
 * asked for and redirects are not followed. Credentials come from password_file and are never
 * logged.
 */
#ifndef WT_REDFISH_CLIENT_H
#define WT_REDFISH_CLIENT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collect/facility.h"
#include "collect/redfish.h"
#include "core/config.h"
#include "core/curl_lib.h"
#include "core/err.h"

#define WT_REDFISH_ROOT "/redfish/v1"
#define WT_REDFISH_URI_LEN 512
#define WT_REDFISH_POLL_TIMEOUTS 12 /* a poll (or walk) may take this many request timeouts */

enum wt_rf_auth { WT_RF_AUTH_BASIC, WT_RF_AUTH_SESSION };

/* One target of collectors.redfish.targets (parsed by redfish.c). */
struct wt_redfish_target {
    char name[WT_TARGET_NAME_LEN + 1];
    char url[256]; /* scheme://host[:port], without /redfish/v1 */
    char username[128];
    char password_file[WT_PATH_LEN];
    int auth; /* enum wt_rf_auth */
    char ca_file[WT_PATH_LEN];
    bool insecure, sensors;
    int64_t timeout_ns, interval_ns, max_response;
    struct wt_fac_place place;
};

/* A response body, at most max bytes (too_big: refused). */
struct wt_rf_body {
    char *p;
    size_t len, cap, max;
    bool too_big;
};

/* One service's client; zero-initialise, then wt_rf_client_open. */
struct wt_rf_client {
    const struct wt_redfish_target *t;
    char password[256];
    CURL *curl;
    char errbuf[CURL_ERROR_SIZE];
    struct wt_rf_body body;
    char token[512], session_uri[WT_REDFISH_URI_LEN];
    char hdr_token[512], hdr_location[WT_REDFISH_URI_LEN]; /* captured from the last response */
    char hdr_date[64];                                     /* its Date header ("" without one) */
    /* The service's clock against ours: the answer with a Date and the quickest round trip
     * (CLOCK_REALTIME around the request) since have_date was last cleared. */
    bool have_date;
    int64_t date_s, date_before_ns, date_after_ns;
    wt_redfish_serve_fn serve; /* a stand-in for the service (tests, fuzzing); NULL: HTTP */
    void *serve_ctx;
    int64_t deadline_mono; /* CLOCK_MONOTONIC end of the poll's requests; 0 outside a poll */
};

/*
 * Reads t's password file and sets up the libcurl handle (TLS checks, timeouts, bounds); t must
 * outlive c. Warns once about insecure: true over https and credentials over http. Returns 0 or
 * a negative errno with err.
 */
int wt_rf_client_open(struct wt_rf_client *c, const struct wt_redfish_target *t,
                      struct wt_err *err);
/* Ends the session (a brief best-effort DELETE), frees the handle and body, wipes the password.
 * Accepts a client never opened (zeroed). */
void wt_rf_client_close(struct wt_rf_client *c);

/*
 * GETs path (a service path, "/redfish/v1/...") and parses it, logging in first (and once more
 * on a 401) with session auth. Returns 0 with *out (caller frees), -ENOENT for 404, -EIO when
 * the service did not answer, -EPROTO for another HTTP error or a body that is not a JSON
 * object, -EFBIG for a body over the bound, -EACCES when credentials are refused; err says which.
 */
int wt_rf_get_json(struct wt_rf_client *c, const char *path, cJSON **out, struct wt_err *err);

/* o[key], or NULL. */
const cJSON *wt_rf_item(const cJSON *o, const char *key);
/* o[key] when it is a string, else NULL. */
const char *wt_rf_str(const cJSON *o, const char *key);
/* The @odata.id of o[key] when it is a path on this service (under /redfish/v1), else NULL. */
const char *wt_rf_link(const cJSON *o, const char *key);
/* True with *out when v is a finite number. */
bool wt_rf_number(const cJSON *v, double *out);
/* Copies in into out (n bytes) with anything outside [A-Za-z0-9_.-] replaced by '_'. */
void wt_rf_sanitize(const char *in, char *out, size_t n);
/* A resource's id for points: the last segment of its URI, else its Id; sanitized. */
void wt_rf_id_of(const cJSON *j, const char *uri, char *out, size_t n);
/* Which wattage metric a Sensor maps to, and the factor to base units; false to leave it. */
bool wt_rf_sensor_metric(const cJSON *j, int *metric, double *factor);

#endif
