/* SPDX-License-Identifier: MIT */
/*
 * The HTTP server: libmicrohttpd with a small pool of internal threads (epoll), serving copies
 * of the hub's snapshot so a scrape never waits for a poll. Every resource a client can claim is
 * bounded: connections (all, and per address), idle time, request memory (request line and
 * headers), body size. Requests are checked in one place before any handler runs: the client
 * certificate under mutual TLS, the path (valid UTF-8, no control characters), the method, no
 * body on GET/HEAD, and the bearer token. TLS files and the token are read at open, before any
 * privilege could be dropped, and a secret file that group or others may read is refused.
 */
#include "serve/http.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/secret.h"
#include "serve/expo.h"
#include "serve/http_reply.h"

#define MAX_ROUTES 32
#define MAX_SECRET_FILE (1024 * 1024)
#define MAX_TOKEN 4096
#define MAX_COLLECTORS WT_HUB_MAX_COLLECTORS
#define WT_HTTP_NICE 5 /* server threads run this much nicer than the collectors */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

struct route {
    char method[8];
    char path[96];
    bool prefix; /* path ended in a slash and an asterisk: matches anything below */
    bool public_read;
    wt_http_handler_fn fn;
    void *ctx;
};

/* A rendered /metrics body shared by every response that sends it; freed at the last release. */
struct shared_body {
    int refs; /* atomic */
    size_t len;
    char data[];
};

/* The cache of rendered expositions, one per format and encoding, valid while the hub's
 * collector states (which change at every publish) are those it was rendered from. */
struct hub_mark {
    size_t n;
    struct {
        int64_t tick, interval;
        uint64_t errors;
        bool present, up;
    } c[MAX_COLLECTORS];
};

struct expo_cache {
    struct hub_mark mark;
    struct wt_expo_family fam[WT_HTTP_MAX_FAMILIES]; /* the providers' samples it shows */
    struct shared_body *body;
};

struct family_provider {
    wt_http_family_fn fn;
    void *ctx;
};

struct wt_http {
    struct wt_hub *hub;
    pthread_mutex_t conns_mu;
    pthread_cond_t reaper_cv;
    pthread_t reaper;
    bool reaper_running, stopping;
    int64_t reaper_at;     /* CLOCK_MONOTONIC ns the reaper sleeps until, INT64_MAX: no timer */
    int64_t deadline_ns;   /* WT_HTTP_REQUEST_DEADLINE_S, or a test's (wt_http_set_deadline) */
    uint64_t reaper_wakes; /* times the reaper woke, for the tests */
    struct conn *conns;
    struct MHD_Daemon *mhd;
    int fd; /* the listening socket until MHD owns it */
    int port;
    char addr[160]; /* for logs: "127.0.0.1:9747", "[::1]:9747" */
    char *cert, *key, *ca;
    size_t key_len;
    char *token;
    size_t token_len;
    bool protect_reads;
    struct route routes[MAX_ROUTES];
    int nroutes;
    size_t snap_hint; /* readings in the last snapshot, to allocate once */
    pthread_mutex_t cache_mu;
    struct expo_cache cache[2][2]; /* [format][gzip] */
    struct family_provider fams[WT_HTTP_MAX_FAMILIES];
    int nfams;
};

/* Per-request state of a write route, kept while its body arrives. */
struct req {
    const struct route *route;
    char *body;
    size_t len, cap;
    bool too_big;
};

/* ---- request checks ---- */

static bool is_read(const char *method)
{
    return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

static bool path_matches(const struct route *rt, const char *path)
{
    if (!rt->prefix)
        return strcmp(rt->path, path) == 0;
    size_t n = strlen(rt->path);
    return strncmp(rt->path, path, n) == 0 && path[n] == '/' && path[n + 1] != '\0';
}

/* Finds the route for method and path; when the path exists only for other methods, fills
 * allow with them. */
static const struct route *find_route(const struct wt_http *h, const char *method, const char *path,
                                      char *allow, size_t n, bool *path_known)
{
    const char *m = strcmp(method, "HEAD") == 0 ? "GET" : method;
    *path_known = false;
    allow[0] = '\0';
    for (int i = 0; i < h->nroutes; i++) {
        const struct route *rt = &h->routes[i];
        if (!path_matches(rt, path))
            continue;
        *path_known = true;
        if (strcmp(rt->method, m) == 0)
            return rt;
        size_t l = strlen(allow);
        snprintf(allow + l, n - l, "%s%s%s", l ? ", " : "", rt->method,
                 strcmp(rt->method, "GET") == 0 ? ", HEAD" : "");
    }
    return NULL;
}

static bool has_body(struct MHD_Connection *c)
{
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    return te || (cl && strspn(cl, "0") != strlen(cl));
}

/* Under mutual TLS: a certificate must have been presented and must verify against the CA. */
static const char *client_cert_problem(struct MHD_Connection *c, char *buf, size_t n)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (!ci || !ci->tls_session)
        return "TLS is required";
    gnutls_session_t s = (gnutls_session_t)ci->tls_session;
    unsigned count = 0;
    if (!gnutls_certificate_get_peers(s, &count) || count == 0)
        return "a client certificate is required";
    unsigned status = 0;
    int rc = gnutls_certificate_verify_peers2(s, &status);
    if (rc < 0) {
        snprintf(buf, n, "the client certificate could not be verified: %s", gnutls_strerror(rc));
        return buf;
    }
    if (status != 0) {
        gnutls_datum_t why = {0};
        if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0) == 0) {
            snprintf(buf, n, "the client certificate is not trusted: %s", (char *)why.data);
            gnutls_free(why.data);
        } else {
            snprintf(buf, n, "the client certificate is not trusted");
        }
        return buf;
    }
    return NULL;
}

/* Bearer check for a request that needs it: true when the right token came. */
static bool token_ok(const struct wt_http *h, struct MHD_Connection *c)
{
    const char *tok;
    size_t len;
    const char *auth =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (wt_http_bearer(auth, &tok, &len) != 0)
        return false;
    return wt_http_token_equal(h->token, tok, len);
}

static enum MHD_Result run_handler(struct wt_http *h, struct MHD_Connection *c,
                                   const struct route *rt, const char *method, const char *url,
                                   struct req *rq)
{
    struct out o = {0};
    struct wt_http_request req = {
        .method = method,
        .path = url,
        .body = rq && rq->body ? rq->body : "",
        .body_len = rq ? rq->len : 0,
        .conn = c,
    };
    (void)h;
    int rc = rt->fn(rt->ctx, &req, &o.r);
    if (rc != 0) {
        wt_http_reply_free(&o.r);
        memset(&o.r, 0, sizeof o.r);
        wt_warn("http", "%s %s failed: %s", method, rt->path, strerror(-rc));
        return wt_http_send_error(c, &o, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error");
    }
    return wt_http_send_out(c, &o);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
    struct wt_http *h = cls;
    struct req *rq = *con_cls;
    struct out o = {0};
    char buf[256], allow[64];
    (void)version;

    if (rq) {
        /* A write route's body, piece by piece, then one last call with nothing. */
        if (*upload_size) {
            if (!rq->too_big && rq->len + *upload_size <= WT_HTTP_MAX_BODY) {
                if (rq->len + *upload_size + 1 > rq->cap) {
                    size_t cap = rq->len + *upload_size + 1;
                    char *b = realloc(rq->body, cap);
                    if (!b)
                        return MHD_NO;
                    rq->body = b;
                    rq->cap = cap;
                }
                memcpy(rq->body + rq->len, upload, *upload_size);
                rq->len += *upload_size;
                rq->body[rq->len] = '\0';
            } else {
                rq->too_big = true;
            }
            *upload_size = 0;
            return MHD_YES;
        }
        if (rq->too_big) {
            o.close = true;
            snprintf(buf, sizeof buf, "the request body is larger than %d bytes", WT_HTTP_MAX_BODY);
            return wt_http_send_error(c, &o, MHD_HTTP_CONTENT_TOO_LARGE, buf);
        }
        return run_handler(h, c, rq->route, method, url, rq);
    }

    /* First call: the request line and headers are in; check everything before any handler. */
    if (h->ca) {
        const char *why = client_cert_problem(c, buf, sizeof buf);
        if (why) {
            o.close = true;
            wt_debug("http", "refused a client: %s", why);
            return wt_http_send_error(c, &o, MHD_HTTP_FORBIDDEN, why);
        }
    }
    if (!wt_http_path_ok(url)) {
        o.close = true;
        return wt_http_send_error(
            c, &o, MHD_HTTP_BAD_REQUEST,
            "the request path is not valid UTF-8 or holds control characters");
    }
    bool read = is_read(method);
    bool known;
    const struct route *rt = find_route(h, method, url, allow, sizeof allow, &known);
    if (!known) {
        if (h->token && h->protect_reads && !token_ok(h, c)) {
            o.auth_challenge = true;
            return wt_http_send_error(c, &o, MHD_HTTP_UNAUTHORIZED, "a bearer token is required");
        }
        char clean[100];
        wt_http_sanitize(url, clean, sizeof clean);
        snprintf(buf, sizeof buf, "no such endpoint: %s", clean);
        o.close = has_body(c);
        return wt_http_send_error(c, &o, MHD_HTTP_NOT_FOUND, buf);
    }
    if (!rt && h->token && !read && !token_ok(h, c)) {
        /* A writer without the token learns nothing, not even which methods exist. */
        o.auth_challenge = true;
        o.close = has_body(c);
        return wt_http_send_error(c, &o, MHD_HTTP_UNAUTHORIZED, "a valid bearer token is required");
    }
    if (!rt) {
        o.allow = allow;
        o.close = has_body(c);
        snprintf(buf, sizeof buf, "method %.16s is not allowed here; use %s", method, allow);
        return wt_http_send_error(c, &o, MHD_HTTP_METHOD_NOT_ALLOWED, buf);
    }
    if (read && has_body(c)) {
        o.close = true;
        snprintf(buf, sizeof buf, "a %s request must not have a body", method);
        return wt_http_send_error(c, &o, MHD_HTTP_BAD_REQUEST, buf);
    }
    if (h->token && (!read || (h->protect_reads && !rt->public_read)) && !token_ok(h, c)) {
        o.auth_challenge = true;
        o.close = has_body(c);
        return wt_http_send_error(c, &o, MHD_HTTP_UNAUTHORIZED, "a valid bearer token is required");
    }
    /* The handler runs on the next call, once libmicrohttpd has seen the (empty) body: a
     * response queued before that makes it close the connection, which would cost every
     * scraper a reconnect (and a TLS handshake) per scrape. */
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!read && cl && strtoull(cl, NULL, 10) > WT_HTTP_MAX_BODY) {
        o.close = true;
        snprintf(buf, sizeof buf, "the request body is larger than %d bytes", WT_HTTP_MAX_BODY);
        return wt_http_send_error(c, &o, MHD_HTTP_CONTENT_TOO_LARGE, buf);
    }
    rq = calloc(1, sizeof *rq);
    if (!rq)
        return MHD_NO;
    rq->route = rt;
    *con_cls = rq;
    return MHD_YES;
}

/*
 * A request started at since (conns_mu held): wakes the reaper when it would sleep past this
 * request's deadline (it sleeps without a timer while no request is open). Deadlines only grow
 * with time, so this signals about once per burst of connections, not once per request.
 */
static void poke_reaper(struct wt_http *h, int64_t since)
{
    if (since + h->deadline_ns < h->reaper_at)
        pthread_cond_signal(&h->reaper_cv);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct req *rq = *con_cls;
    struct wt_http *h = cls;
    (void)toe;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci && ci->socket_context) {
        /* The next request's clock starts: under the lock, so the reaper either sees it in its
         * scan or has published the instant it sleeps until, which poke_reaper compares. */
        struct conn *k = ci->socket_context;
        pthread_mutex_lock(&h->conns_mu);
        __atomic_store_n(&k->since, wt_now_mono_ns(), __ATOMIC_RELEASE);
        __atomic_store_n(&k->answered, 0, __ATOMIC_RELEASE);
        poke_reaper(h, k->since);
        pthread_mutex_unlock(&h->conns_mu);
    }
    if (rq) {
        free(rq->body);
        free(rq);
        *con_cls = NULL;
    }
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct wt_http *h = cls;
    struct conn *k = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        /* Serving runs below the collectors: on a busy node a flood of scrapes must not delay
         * a poll. Linux applies nice per thread; this runs on each server thread. */
        static __thread bool niced;
        if (!niced) {
            niced = true;
            pid_t tid = (pid_t)syscall(SYS_gettid);
            errno = 0;
            int cur = getpriority(PRIO_PROCESS, (id_t)tid);
            if (errno == 0)
                setpriority(PRIO_PROCESS, (id_t)tid, cur + WT_HTTP_NICE);
        }
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        k = calloc(1, sizeof *k);
        if (!k || !ci)
            goto fail;
        k->fd = ci->connect_fd;
        pthread_mutex_lock(&h->conns_mu);
        k->since = wt_now_mono_ns();
        k->next = h->conns;
        if (h->conns)
            h->conns->prev = k;
        h->conns = k;
        poke_reaper(h, k->since);
        pthread_mutex_unlock(&h->conns_mu);
        *socket_context = k;
        return;
    fail:
        free(k);
        *socket_context = NULL;
        return;
    }
    /* CLOSED: libmicrohttpd calls this before it closes the socket, so the reaper (which
     * takes the same lock) never shuts down a descriptor that was reused. */
    if (!k)
        return;
    pthread_mutex_lock(&h->conns_mu);
    if (k->prev)
        k->prev->next = k->next;
    else
        h->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    pthread_mutex_unlock(&h->conns_mu);
    free(k);
    *socket_context = NULL;
}

int64_t wt_http_reap_scan(struct wt_http_deadline *d, size_t n, int64_t now, int64_t deadline_ns)
{
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (d[i].cut || d[i].answered)
            continue;
        int64_t due = d[i].since + deadline_ns;
        if (due <= now)
            d[i].cut = true;
        else if (due < next)
            next = due;
    }
    return next;
}

static void *reaper_main(void *arg)
{
    struct wt_http *h = arg;
    pthread_setname_np(pthread_self(), "wt-http-dl");
    pthread_mutex_lock(&h->conns_mu);
    while (!h->stopping) {
        int64_t now = wt_now_mono_ns(), next = INT64_MAX;
        for (struct conn *k = h->conns; k; k = k->next) {
            struct wt_http_deadline d = {.since = __atomic_load_n(&k->since, __ATOMIC_ACQUIRE),
                                         .answered =
                                             __atomic_load_n(&k->answered, __ATOMIC_ACQUIRE),
                                         .cut = k->cut};
            int64_t due = wt_http_reap_scan(&d, 1, now, h->deadline_ns);
            if (due < next)
                next = due;
            if (d.cut && !k->cut) {
                /* The owning thread sees end-of-file and closes the connection itself. */
                shutdown(k->fd, SHUT_RDWR);
                k->cut = true;
                wt_debug("http", "cut a connection whose request took over %.3g s",
                         (double)h->deadline_ns / WT_NS_PER_S);
            }
        }
        /* A request answered since its deadline was taken makes a wake-up for nothing; a
         * request that starts later pokes the reaper if it is due sooner than next. */
        h->reaper_at = next;
        if (next == INT64_MAX) {
            pthread_cond_wait(&h->reaper_cv, &h->conns_mu);
        } else {
            struct timespec ts = {.tv_sec = next / WT_NS_PER_S, .tv_nsec = next % WT_NS_PER_S};
            pthread_cond_timedwait(&h->reaper_cv, &h->conns_mu, &ts);
        }
        h->reaper_at = INT64_MIN; /* awake: no poke needed until it sleeps again */
        h->reaper_wakes++;
    }
    pthread_mutex_unlock(&h->conns_mu);
    return NULL;
}

void wt_http_set_deadline(struct wt_http *h, int64_t deadline_ns)
{
    pthread_mutex_lock(&h->conns_mu);
    h->deadline_ns = deadline_ns;
    pthread_cond_signal(&h->reaper_cv);
    pthread_mutex_unlock(&h->conns_mu);
}

uint64_t wt_http_reaper_wakes(struct wt_http *h)
{
    pthread_mutex_lock(&h->conns_mu);
    uint64_t n = h->reaper_wakes;
    pthread_mutex_unlock(&h->conns_mu);
    return n;
}

static size_t on_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return wt_http_unescape(s);
}

__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    /* Client mistakes (bad requests, failed handshakes, timeouts) land here: debug only, so a
     * hostile client cannot flood the log. */
    wt_debug("http", "libmicrohttpd: %s", msg);
}

/* ---- built-in routes ---- */

static int take_snapshot(struct wt_http *h, struct wt_batch *b)
{
    size_t hint = __atomic_load_n(&h->snap_hint, __ATOMIC_RELAXED);
    if (hint) {
        b->r = malloc((hint + 16) * sizeof *b->r);
        b->cap = b->r ? hint + 16 : 0;
    }
    int rc = wt_hub_snapshot(h->hub, b);
    if (rc == 0 && b->len != hint)
        __atomic_store_n(&h->snap_hint, b->len, __ATOMIC_RELAXED);
    return rc;
}

static void body_release(void *arg)
{
    struct shared_body *b = arg;
    if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
        free(b);
}

static void read_mark(struct wt_http *h, struct hub_mark *m)
{
    struct wt_hub_collector cs[MAX_COLLECTORS];
    memset(m, 0, sizeof *m);
    size_t n = wt_hub_collectors(h->hub, cs, MAX_COLLECTORS);
    m->n = n < MAX_COLLECTORS ? n : MAX_COLLECTORS;
    for (size_t i = 0; i < m->n; i++) {
        m->c[i].tick = cs[i].last_tick_mono;
        m->c[i].interval = cs[i].interval_ns;
        m->c[i].errors = cs[i].errors;
        m->c[i].present = cs[i].present;
        m->c[i].up = cs[i].up;
    }
}

/* Asks every family provider for its samples (a failing one shows no family). */
static void read_families(struct wt_http *h, struct wt_expo_family *fam)
{
    memset(fam, 0, WT_HTTP_MAX_FAMILIES * sizeof *fam);
    for (int i = 0; i < h->nfams; i++) {
        if (h->fams[i].fn(h->fams[i].ctx, &fam[i]) != 0) {
            free(fam[i].s);
            memset(&fam[i], 0, sizeof fam[i]);
        }
    }
}

static void free_families(struct wt_expo_family *fam)
{
    for (int i = 0; i < WT_HTTP_MAX_FAMILIES; i++) {
        free(fam[i].s);
        fam[i].s = NULL;
        fam[i].n = 0;
    }
}

static bool same_families(const struct wt_expo_family *a, const struct wt_expo_family *b)
{
    for (int i = 0; i < WT_HTTP_MAX_FAMILIES; i++) {
        if (a[i].n != b[i].n || a[i].name != b[i].name ||
            (a[i].n && memcmp(a[i].s, b[i].s, a[i].n * sizeof *a[i].s) != 0))
            return false;
    }
    return true;
}

/* Renders the exposition (gzipped when asked) into a new shared body holding one reference. */
static int render_body(struct wt_http *h, const struct wt_expo_family *fam, enum wt_expo_format f,
                       bool gz, struct shared_body **out)
{
    struct wt_batch b = {0};
    size_t len = 0, zlen;
    char *text = NULL, *z = NULL;
    int rc = take_snapshot(h, &b);
    if (rc == 0) {
        text = wt_expo_render_with(&b, fam, (size_t)h->nfams, f, WT_VERSION, &len);
        rc = text ? 0 : -ENOMEM;
    }
    if (rc == 0 && gz) {
        rc = wt_expo_gzip(text, len, &z, &zlen);
        if (rc == 0) {
            free(text);
            text = z;
            len = zlen;
        }
    }
    if (rc == 0) {
        struct shared_body *sb = malloc(sizeof *sb + len);
        if (sb) {
            sb->refs = 1;
            sb->len = len;
            memcpy(sb->data, text, len);
            *out = sb;
        } else {
            rc = -ENOMEM;
        }
    }
    free(text);
    wt_batch_free(&b);
    return rc;
}

static int route_metrics(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    struct wt_http *h = ctx;
    struct hub_mark mark;
    struct wt_expo_family fam[WT_HTTP_MAX_FAMILIES];
    struct shared_body *sb = NULL;
    enum wt_expo_format f = wt_expo_negotiate(wt_http_header(req, MHD_HTTP_HEADER_ACCEPT));
    bool gz = wt_expo_accepts_gzip(wt_http_header(req, MHD_HTTP_HEADER_ACCEPT_ENCODING));
    struct expo_cache *ec = &h->cache[f == WT_EXPO_OPENMETRICS][gz];

    /* The mark is read before the snapshot, so a cached body is never older than its mark;
     * a publish in between only makes the next request render again. */
    read_mark(h, &mark);
    read_families(h, fam);
    pthread_mutex_lock(&h->cache_mu);
    if (ec->body && memcmp(&ec->mark, &mark, sizeof mark) == 0 && same_families(ec->fam, fam)) {
        sb = ec->body;
        __atomic_add_fetch(&sb->refs, 1, __ATOMIC_ACQ_REL);
    }
    pthread_mutex_unlock(&h->cache_mu);
    if (!sb) {
        int rc = render_body(h, fam, f, gz, &sb);
        if (rc != 0) {
            free_families(fam);
            return rc;
        }
        struct shared_body *old = NULL;
        struct wt_expo_family old_fam[WT_HTTP_MAX_FAMILIES];
        __atomic_add_fetch(&sb->refs, 1, __ATOMIC_ACQ_REL); /* one for the cache */
        pthread_mutex_lock(&h->cache_mu);
        old = ec->body;
        memcpy(old_fam, ec->fam, sizeof old_fam);
        ec->body = sb;
        ec->mark = mark;
        memcpy(ec->fam, fam, sizeof fam); /* the cache owns these samples now */
        pthread_mutex_unlock(&h->cache_mu);
        body_release(old);
        memcpy(fam, old_fam, sizeof fam);
    }
    free_families(fam);
    rep->status = 200;
    rep->content_type = wt_expo_content_type(f);
    rep->content_encoding = gz ? "gzip" : NULL;
    rep->body = sb->data;
    rep->len = sb->len;
    rep->release = body_release;
    rep->release_arg = sb;
    return 0;
}

static int route_healthz(void *ctx, const struct wt_http_request *req, struct wt_http_reply *rep)
{
    struct wt_http *h = ctx;
    char why[256];
    (void)req;
    bool ok = wt_hub_healthy(h->hub, wt_now_mono_ns(), why, sizeof why);
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "status", ok ? "ok" : "unhealthy"))
        goto fail;
    if (o && !ok && !cJSON_AddStringToObject(o, "why", why))
        goto fail;
    return wt_http_reply_json(rep, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, o);
fail:
    cJSON_Delete(o);
    return -ENOMEM;
}

/* ---- set-up ---- */

/* Reads a whole file (at most max bytes) NUL-terminated; secret files go through the mode
 * check first, on the opened file so what is checked is what is read. */
static int read_file(const char *what, const char *path, bool secret, size_t max, char **out,
                     size_t *len, struct wt_err *err)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        wt_err_set(err, "%s: cannot open %s: %s", what, path, strerror(e));
        return -e;
    }
    int rc = 0;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = wt_err_set(err, "%s: %s is not a regular file", what, path);
        goto out;
    }
    if (secret) {
        rc = wt_check_secret_mode(what, path, st.st_mode, err);
        if (rc)
            goto out;
    }
    if ((size_t)st.st_size > max) {
        rc = wt_err_set(err, "%s: %s is larger than %zu bytes", what, path, max);
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        rc = -ENOMEM;
        goto out;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = wt_err_set(err, "%s: cannot read %s", what, path);
            goto out;
        }
        got += (size_t)r;
    }
    buf[got] = '\0';
    *out = buf;
    *len = got;
    buf = NULL;
out:
    if (buf) {
        explicit_bzero(buf, (size_t)st.st_size);
        free(buf);
    }
    close(fd);
    return rc;
}

static void free_secret(char *p, size_t n)
{
    if (p) {
        explicit_bzero(p, n);
        free(p);
    }
}

static int load_tls(struct wt_http *h, const struct wt_config *cfg, struct wt_err *err)
{
    size_t clen, calen;
    const char *cert = cfg->daemon.tls.cert, *key = cfg->daemon.tls.key;
    const char *ca = cfg->daemon.tls.client_ca;
    if (!cert[0] && !key[0] && !ca[0])
        return 0;
    if (!cert[0] || !key[0])
        return wt_err_set(err, "daemon.tls: cert and key go together; set both or neither");
    int rc = read_file("daemon.tls.key", key, true, MAX_SECRET_FILE, &h->key, &h->key_len, err);
    if (!rc)
        rc = read_file("daemon.tls.cert", cert, false, MAX_SECRET_FILE, &h->cert, &clen, err);
    if (!rc && ca[0])
        rc = read_file("daemon.tls.client_ca", ca, false, MAX_SECRET_FILE, &h->ca, &calen, err);
    if (rc)
        return rc;

    /* Load them once through GnuTLS here, for messages that name the file; libmicrohttpd
     * would only say that it could not start. */
    gnutls_certificate_credentials_t cr;
    if (gnutls_certificate_allocate_credentials(&cr) < 0)
        return -ENOMEM;
    gnutls_datum_t dc = {(unsigned char *)h->cert, (unsigned)clen};
    gnutls_datum_t dk = {(unsigned char *)h->key, (unsigned)h->key_len};
    int g = gnutls_certificate_set_x509_key_mem(cr, &dc, &dk, GNUTLS_X509_FMT_PEM);
    if (g < 0) {
        rc = wt_err_set(err, "daemon.tls: the certificate %s and key %s do not load: %s", cert, key,
                        gnutls_strerror(g));
    } else if (h->ca) {
        gnutls_datum_t da = {(unsigned char *)h->ca, (unsigned)calen};
        g = gnutls_certificate_set_x509_trust_mem(cr, &da, GNUTLS_X509_FMT_PEM);
        if (g <= 0)
            rc = wt_err_set(err, "daemon.tls.client_ca: %s holds no usable CA certificate%s%s", ca,
                            g < 0 ? ": " : "", g < 0 ? gnutls_strerror(g) : "");
    }
    gnutls_certificate_free_credentials(cr);
    return rc;
}

static int load_token(struct wt_http *h, const struct wt_config *cfg, struct wt_err *err)
{
    const char *path = cfg->daemon.auth.token_file;
    size_t len;
    h->protect_reads = cfg->daemon.auth.protect_reads;
    if (!path[0]) {
        if (h->protect_reads)
            return wt_err_set(err, "daemon.auth.protect_reads: needs daemon.auth.token_file");
        return 0;
    }
    int rc = read_file("daemon.auth.token_file", path, true, MAX_TOKEN, &h->token, &len, err);
    if (rc)
        return rc;
    h->token_len = len;
    while (len && strchr(" \t\r\n", h->token[len - 1]))
        h->token[--len] = '\0';
    if (len == 0 || strpbrk(h->token, " \t\r\n"))
        return wt_err_set(err, "daemon.auth.token_file: %s must hold one token on one line", path);
    return 0;
}

static void format_addr(const struct sockaddr *sa, char *buf, size_t n)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)sa;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        port = ntohs(a->sin6_port);
        snprintf(buf, n, "[%s]:%d", host, port);
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)sa;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        port = ntohs(a->sin_port);
        snprintf(buf, n, "%s:%d", host, port);
    }
}

/*
 * Binds daemon.listen: a literal IPv4 or IPv6 address, a host name, or "*" / "" / "::" for every
 * address (one IPv6 socket taking IPv4 too; plain IPv4 when the host has no IPv6).
 */
static int bind_listen(struct wt_http *h, const char *spec, struct sockaddr_storage *bound,
                       struct wt_err *err)
{
    char host[256], port[8];
    int p;
    if (wt_config_parse_listen(spec, host, sizeof host, &p) != 0)
        return wt_err_set(err, "daemon.listen: \"%s\" is not ADDRESS:PORT (IPv6 as [::1]:9747)",
                          spec);
    snprintf(port, sizeof port, "%d", p);
    bool any = host[0] == '\0' || strcmp(host, "*") == 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(any ? "::" : host, port, &hints, &res);
    if (g != 0 && any)
        g = getaddrinfo("0.0.0.0", port, &hints, &res);
    if (g != 0)
        return wt_err_set(err, "daemon.listen: cannot resolve %s: %s", host, gai_strerror(g));
    int e = EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ai->ai_family == AF_INET6) {
            const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)(void *)ai->ai_addr;
            int v6only = IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr) ? 0 : 1;
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
        }
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) {
            socklen_t sl = sizeof *bound;
            getsockname(fd, (struct sockaddr *)bound, &sl);
            h->fd = fd;
            break;
        }
        e = errno;
        close(fd);
    }
    freeaddrinfo(res);
    if (h->fd < 0)
        return wt_err_set(err, "daemon.listen: cannot listen on %s: %s", spec, strerror(e));
    format_addr((struct sockaddr *)bound, h->addr, sizeof h->addr);
    h->port = bound->ss_family == AF_INET6
                  ? ntohs(((struct sockaddr_in6 *)(void *)bound)->sin6_port)
                  : ntohs(((struct sockaddr_in *)(void *)bound)->sin_port);
    return 0;
}

int wt_http_open(const struct wt_config *cfg, struct wt_hub *hub, struct wt_http **out,
                 struct wt_err *err)
{
    struct sockaddr_storage bound;
    struct wt_http *h = calloc(1, sizeof *h);
    if (!h)
        return -ENOMEM;
    h->hub = hub;
    h->fd = -1;
    h->deadline_ns = (int64_t)WT_HTTP_REQUEST_DEADLINE_S * WT_NS_PER_S;
    h->reaper_at = INT64_MIN;
    pthread_mutex_init(&h->conns_mu, NULL);
    pthread_mutex_init(&h->cache_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->reaper_cv, &ca);
    pthread_condattr_destroy(&ca);
    int rc = load_tls(h, cfg, err);
    if (!rc)
        rc = load_token(h, cfg, err);
    if (!rc)
        rc = bind_listen(h, cfg->daemon.listen, &bound, err);
    if (!rc)
        rc = wt_http_add_route(h, "GET", "/metrics", false, route_metrics, h);
    if (!rc)
        rc = wt_http_add_route(h, "GET", "/healthz", true, route_healthz, h);
    if (rc) {
        wt_http_close(h);
        return rc;
    }
    bool loop = wt_http_is_loopback((struct sockaddr *)&bound);
    if (!loop && !h->cert && !h->token)
        wt_warn("http",
                "listening on %s without TLS or a token: anyone who reaches this address reads "
                "the metrics; set daemon.tls.cert/key (and client_ca) or daemon.auth.token_file",
                h->addr);
    else if (!loop && !h->cert)
        wt_warn("http",
                "listening on %s without TLS: the bearer token crosses the network in "
                "clear; set daemon.tls.cert and daemon.tls.key",
                h->addr);
    *out = h;
    return 0;
}

int wt_http_add_route(struct wt_http *h, const char *method, const char *path, bool public_read,
                      wt_http_handler_fn fn, void *ctx)
{
    if (h->nroutes >= MAX_ROUTES || h->mhd)
        return -ENOSPC;
    struct route *rt = &h->routes[h->nroutes];
    size_t n = strlen(path);
    if (strlen(method) >= sizeof rt->method || n >= sizeof rt->path)
        return -ENOSPC;
    snprintf(rt->method, sizeof rt->method, "%s", method);
    snprintf(rt->path, sizeof rt->path, "%s", path);
    if (n >= 2 && strcmp(path + n - 2, "/*") == 0) {
        rt->path[n - 2] = '\0';
        rt->prefix = true;
    }
    rt->public_read = public_read;
    rt->fn = fn;
    rt->ctx = ctx;
    h->nroutes++;
    return 0;
}

int wt_http_add_family(struct wt_http *h, wt_http_family_fn fn, void *ctx)
{
    if (h->nfams >= WT_HTTP_MAX_FAMILIES || h->mhd)
        return -ENOSPC;
    h->fams[h->nfams].fn = fn;
    h->fams[h->nfams].ctx = ctx;
    h->nfams++;
    return 0;
}

int wt_http_start(struct wt_http *h, struct wt_err *err)
{
    struct MHD_OptionItem o[24];
    int n = 0;
#define OPT(opt, v, p) o[n++] = (struct MHD_OptionItem){(opt), (intptr_t)(v), (p)}
    OPT(MHD_OPTION_LISTEN_SOCKET, h->fd, NULL);
    OPT(MHD_OPTION_THREAD_POOL_SIZE, WT_HTTP_THREADS, NULL);
    OPT(MHD_OPTION_CONNECTION_LIMIT, WT_HTTP_MAX_CONNECTIONS, NULL);
    OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, WT_HTTP_MAX_PER_IP, NULL);
    OPT(MHD_OPTION_CONNECTION_TIMEOUT, WT_HTTP_TIMEOUT_S, NULL);
    OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, WT_HTTP_CONN_MEMORY, NULL);
    OPT(MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL);
    OPT(MHD_OPTION_NOTIFY_COMPLETED, on_completed, h);
    OPT(MHD_OPTION_NOTIFY_CONNECTION, on_connection, h);
    OPT(MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, h);
    OPT(MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (h->cert) {
        flags |= MHD_USE_TLS;
        OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, h->key);
        OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert);
        OPT(MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)(uintptr_t)TLS_PRIORITIES);
        /* Makes the server ask for a client certificate; whether one came and verified is
         * checked for every request (client_cert_problem), as libmicrohttpd leaves it to us. */
        if (h->ca)
            OPT(MHD_OPTION_HTTPS_MEM_TRUST, 0, h->ca);
    }
    OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
    h->mhd =
        MHD_start_daemon(flags, 0, NULL, NULL, on_access, h, MHD_OPTION_ARRAY, o, MHD_OPTION_END);
    if (!h->mhd) {
        wt_err_set(err, "http: cannot start serving on %s (libmicrohttpd refused)", h->addr);
        return -EIO;
    }
    h->fd = -1; /* closed by MHD_stop_daemon from now on */
    if (pthread_create(&h->reaper, NULL, reaper_main, h) == 0)
        h->reaper_running = true;
    else
        wt_warn("http", "no request deadline thread: slow clients are cut only when idle");
    wt_info("http", "serving on %s://%s%s%s", h->cert ? "https" : "http", h->addr,
            h->ca ? " client_certificates=required" : "",
            h->token ? (h->protect_reads ? " token=reads,writes" : " token=writes") : "");
    return 0;
}

void wt_http_close(struct wt_http *h)
{
    if (!h)
        return;
    if (h->reaper_running) {
        pthread_mutex_lock(&h->conns_mu);
        h->stopping = true;
        pthread_cond_signal(&h->reaper_cv);
        pthread_mutex_unlock(&h->conns_mu);
        pthread_join(h->reaper, NULL);
    }
    if (h->mhd)
        MHD_stop_daemon(h->mhd);
    if (h->fd >= 0)
        close(h->fd);
    free_secret(h->key, h->key_len);
    free_secret(h->token, h->token_len);
    free(h->cert);
    free(h->ca);
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            body_release(h->cache[i][j].body);
            free_families(h->cache[i][j].fam);
        }
    }
    pthread_mutex_destroy(&h->cache_mu);
    pthread_cond_destroy(&h->reaper_cv);
    pthread_mutex_destroy(&h->conns_mu);
    free(h);
}

int wt_http_port(const struct wt_http *h)
{
    return h->port;
}
