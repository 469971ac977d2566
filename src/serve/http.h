/* SPDX-License-Identifier: MIT */
/*
 * The HTTP server of `wattage run` (libmicrohttpd, GnuTLS): GET /metrics, GET /healthz, and
 * the routes the API layer adds (serve/api_*.h: status, alerts, jobs). It serves from copies of
 * the hub's snapshot and never waits for the poll loop or the store. Bounded everywhere:
 * connections in all and per client address, per-connection idle timeout, request memory, body
 * size. TLS and mutual TLS from daemon.tls.*, a bearer token from daemon.auth.token_file.
 *
 * Life cycle: wt_http_open (reads keys and token, binds the socket: errors show at start),
 * wt_http_add_route (any number), wt_http_start (threads start serving), wt_http_close.
 */
#ifndef WT_HTTP_H
#define WT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "core/config.h"
#include "core/err.h"
#include "core/hub.h"
#include "serve/expo.h"

#define WT_HTTP_TIMEOUT_S 10            /* idle time before a connection is closed */
#define WT_HTTP_REQUEST_DEADLINE_S 10   /* a whole request (headers, body) must arrive in this */
#define WT_HTTP_MAX_CONNECTIONS 256     /* in all */
#define WT_HTTP_MAX_PER_IP 128          /* per client address */
#define WT_HTTP_CONN_MEMORY (32 * 1024) /* request line + headers must fit */
#define WT_HTTP_MAX_BODY (64 * 1024)    /* request bodies of write routes */
#define WT_HTTP_THREADS 2

struct wt_http;

/* One request as a route handler sees it. body is NUL-terminated ("" when none). */
struct wt_http_request {
    const char *method;
    const char *path;
    const char *body;
    size_t body_len;
    void *conn; /* the server's; use wt_http_header / wt_http_query */
};

/*
 * What a handler answers. body is malloc'd (the server frees it, also on error) unless release
 * is set: then release(release_arg) is called instead once the body is no longer needed (for
 * shared, reference-counted bodies). content_type is a static string (application/json when
 * NULL).
 */
struct wt_http_reply {
    unsigned status;
    char *body;
    size_t len;
    const char *content_type;
    const char *content_encoding; /* static; NULL for none */
    /* A page's Content-Security-Policy (static; NULL for none). With it go
     * X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer and X-Frame-Options: DENY. */
    const char *csp;
    void (*release)(void *arg);
    void *release_arg;
};

/* Returns 0 with *rep filled, or a negative errno for a 500 (rep->body is freed if set). */
typedef int (*wt_http_handler_fn)(void *ctx, const struct wt_http_request *req,
                                  struct wt_http_reply *rep);

/*
 * Reads TLS files and the token file named in cfg (refusing secret files that group or others
 * may access), checks them, and binds cfg->daemon.listen. Logs a warning when the address is not
 * loopback and neither TLS nor a token guards it. Returns 0, -EINVAL for bad settings or files,
 * or the bind error; err says which file or address and why.
 */
int wt_http_open(const struct wt_config *cfg, struct wt_hub *hub, struct wt_http **out,
                 struct wt_err *err) WT_MUST_USE;

/*
 * Adds a route before wt_http_start. path is exact, or ends in a slash and an asterisk to match
 * anything below it (for /api/v1/jobs/{id}). Writes (methods other than GET and HEAD) need the
 * bearer token when one is configured; reads need it when daemon.auth.protect_reads is set, unless
 * public. Returns 0 or -ENOSPC.
 */
int wt_http_add_route(struct wt_http *h, const char *method, const char *path, bool public_read,
                      wt_http_handler_fn fn, void *ctx) WT_MUST_USE;

/*
 * A provider of one family for /metrics beyond the hub's (the running jobs' energy): fills *fam
 * (name and help static; fam->s calloc'd, which the server frees, so equal samples compare equal
 * byte for byte; n 0 for no family). It is called on every scrape, so it answers from a cache of
 * its own; the page is rendered again when the hub published or a provider's samples changed.
 * Returns 0 or a negative errno (the family is then left out).
 */
typedef int (*wt_http_family_fn)(void *ctx, struct wt_expo_family *fam);

/* Room for every provider at once: the store's 5, the alert engine's up to 13 (alerts and
 * transitions, delivery, capping), the three senders' 19 and the jobs' 2 make 39. */
#define WT_HTTP_MAX_FAMILIES 48

/* Adds a family provider before wt_http_start. Returns 0 or -ENOSPC. */
int wt_http_add_family(struct wt_http *h, wt_http_family_fn fn, void *ctx) WT_MUST_USE;

/* Starts serving. Returns 0 or -EIO (err filled). */
int wt_http_start(struct wt_http *h, struct wt_err *err) WT_MUST_USE;

/* Stops serving (waits for requests in progress) and frees h; accepts NULL. */
void wt_http_close(struct wt_http *h);

/* The port actually bound. */
int wt_http_port(const struct wt_http *h);

/*
 * The request deadline's timer, a pure function for the deadline thread and the tests. Each
 * entry is one open connection: since is when its current request started (CLOCK_MONOTONIC
 * ns), answered that a response is queued for it, cut that it was cut already. Marks cut every
 * unanswered request whose deadline (since + deadline_ns) is at or before now, and returns the
 * earliest deadline still ahead: the instant the thread sleeps until. INT64_MAX when there is
 * none (no connection, every request answered or cut): the thread then sleeps until a request
 * starts, so an idle server never wakes it.
 */
struct wt_http_deadline {
    int64_t since;
    bool answered, cut;
};
int64_t wt_http_reap_scan(struct wt_http_deadline *d, size_t n, int64_t now, int64_t deadline_ns);

/* For tests: sets the request deadline (default WT_HTTP_REQUEST_DEADLINE_S) of h. */
void wt_http_set_deadline(struct wt_http *h, int64_t deadline_ns);
/* For tests: how many times the deadline thread has woken since it started. */
uint64_t wt_http_reaper_wakes(struct wt_http *h);

/* A request header or query argument, NULL when absent. */
const char *wt_http_header(const struct wt_http_request *req, const char *name);
const char *wt_http_query(const struct wt_http_request *req, const char *key);

/* Fills rep with {"error": msg} (msg formatted, JSON-escaped). Returns 0 or -ENOMEM. */
int wt_http_reply_error(struct wt_http_reply *rep, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- pure pieces, for the tests ---- */

/* Compares a presented token with the expected one in time independent of where they differ. */
bool wt_http_token_equal(const char *expected, const char *given, size_t given_len);

/* Extracts the token of "Bearer <token>" (scheme case-insensitive). Returns 0 or -EINVAL. */
int wt_http_bearer(const char *authorization, const char **token, size_t *len) WT_MUST_USE;

/* True for a path that is valid UTF-8 without control characters. */
bool wt_http_path_ok(const char *path);

/* Decodes %XX escapes in place, leaving malformed ones and %00 as they are; returns the length. */
size_t wt_http_unescape(char *s);

/* True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
bool wt_http_is_loopback(const struct sockaddr *sa);

#endif
