/* SPDX-License-Identifier: MIT */
/*
 * The send path shared by the streaming outputs (remote write, Kafka, OTLP): the store is the log
 * (store/cursor.h), one cursor and one thread per destination, stop and backoff waits, the
 * pending count and lag, and the self-metric families read from each destination's counters. A
 * transport gives a table of functions (struct wt_sender_ops): which series it sends, what to do
 * with a series seen for the first time (its encoder builds the labels once), and how to send one
 * batch. Over HTTP, wt_sender_post is the one POST (credentials read per request, TLS, headers),
 * and wt_sender_http_ops the whole transport: an HTTP stream (remote write, OTLP) gives only its
 * encoder (struct wt_sender_http_codec), its headers and its self-metric families. A stream
 * (remote write, OTLP, Kafka: one file each) describes itself in a struct wt_sender_stream, and
 * wt_sender_stream_open sets its destinations up from its config section.
 *
 * Threads: each destination's thread runs the loop (refresh, read a batch, send, acknowledge);
 * the counters are under the sender's mutex, read by /metrics and the stats functions.
 *
 * At a stop (daemon.stop_deadline): after the store's last flush, wt_sender_drain wakes every
 * thread, which reads and sends what is stored after its cursor without waiting for its
 * deadline, one attempt per batch, until nothing is left; a failed attempt (no backoff then),
 * a round that acknowledges nothing, or the drain's deadline (a request in progress abandoned)
 * ends it, and what is left is sent at the next start. wt_sender_close waits for that (never past
 * the deadline), then logs one line: samples sent, samples left.
 */
#ifndef WT_SENDER_H
#define WT_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/err.h"
#include "core/log.h"
#include "core/reading.h"
#include "store/cursor.h"

#define WT_SENDER_MAX_COUNTERS 8
/* family.counter values that are not counters */
#define WT_SENDER_PENDING (-1)
#define WT_SENDER_LAG (-2)

struct wt_sender;
struct wt_sender_dest;

/* What the loop does after a send. */
enum wt_send_next {
    WT_SEND_DONE,  /* handled (acknowledged or left pending by the transport): on, at once when
                    * more is waiting, else after the deadline */
    WT_SEND_AGAIN, /* the transport waited its backoff: read the store again now */
    WT_SEND_PAUSE, /* wait the deadline, then read the store again */
};

struct wt_sender_ops {
    /* before each round (may be NULL): 0 to go on, else the loop waits max_backoff */
    int (*prepare)(struct wt_sender_dest *d, void *ctx);
    /* the series at index i (the cursor's order) is new: 0, or a negative errno (the round ends
     * and the store is read again after the deadline) */
    int (*add)(struct wt_sender_dest *d, void *ctx, const struct wt_cursor_series *s, size_t i);
    /* sends b (not empty); acknowledges through wt_sender_ack* what was delivered */
    enum wt_send_next (*send)(struct wt_sender_dest *d, void *ctx, const struct wt_cursor_batch *b);
};

/* One self-metric family: label endpoint = the destination's name. */
struct wt_sender_family {
    const char *name, *help;
    enum wt_metric_type type;
    int counter; /* 0..WT_SENDER_MAX_COUNTERS-1, WT_SENDER_PENDING or WT_SENDER_LAG */
};

struct wt_sender_dest_config {
    const char *name;   /* in messages and the endpoint label (copied) */
    const char *cursor; /* the cursor's name in the store (copied) */
    size_t batch_size;
    int64_t deadline_ns, max_backoff_ns, backfill_ns;
    wt_cursor_keep_fn keep; /* which series it sends (NULL: all), with ctx */
    void *ctx;              /* the transport's, passed to ops and keep */
};

/*
 * Opens a sender for up to max destinations: mod names the log lines, thread the threads
 * (at most 15 characters), fams[0..nfams) the self-metrics (static storage). Returns 0 or -ENOMEM.
 */
int wt_sender_open(const char *mod, const char *thread, const struct wt_sender_ops *ops,
                   const struct wt_sender_family *fams, size_t nfams, size_t max,
                   struct wt_sender **out) WT_MUST_USE;
/*
 * Adds a destination: opens its cursor on the store at store_path. *out (may be NULL) the
 * destination, valid until close. Returns 0 or a negative errno with err set.
 */
int wt_sender_add_dest(struct wt_sender *s, const char *store_path,
                       const struct wt_sender_dest_config *c, struct wt_sender_dest **out,
                       struct wt_err *err) WT_MUST_USE;
size_t wt_sender_ndest(const struct wt_sender *s);
/* Registers the families on http (before wt_http_start); logs when there is no room. */
struct wt_http;
void wt_sender_register(struct wt_sender *s, struct wt_http *http);
/* Starts one thread per destination. Returns 0 or a negative errno with err set. */
int wt_sender_start(struct wt_sender *s, struct wt_err *err) WT_MUST_USE;
/* Sets the stop and wakes the waits (the threads leave their loop soon). */
void wt_sender_stop(struct wt_sender *s);
/*
 * At a stop, once the store has flushed for the last time: the threads send what is stored,
 * for deadline_ns at most from now (0: nothing is sent; the line at close says what is left).
 * Returns at once: start every sender's drain, then close them, so the deadlines run together.
 * Accepts NULL.
 */
void wt_sender_drain(struct wt_sender *s, int64_t deadline_ns);
/*
 * After a drain, waits for it to end (its deadline at the latest) and logs what it sent and
 * left; then stops, joins the threads, closes the cursors, frees s; accepts NULL.
 */
void wt_sender_close(struct wt_sender *s);

/* ---- for the transports, from a destination's thread ------------------------------------- */

const char *wt_sender_dest_name(const struct wt_sender_dest *d);
struct wt_cursor *wt_sender_dest_cursor(struct wt_sender_dest *d);
int64_t wt_sender_dest_max_backoff(const struct wt_sender_dest *d);
/* True once the sender is stopping (or this destination's drain at stop is over). */
bool wt_sender_stopping(struct wt_sender_dest *d);
/* True once the drain at stop has begun (wt_sender_drain with a deadline). */
bool wt_sender_draining(struct wt_sender_dest *d);
/* What is left of the drain's deadline (0 when passed); INT64_MAX when not draining. */
int64_t wt_sender_drain_left(struct wt_sender_dest *d);
/*
 * Waits up to ns or until the stop; true when stopping. A drain beginning cuts it short (false:
 * try again now); asked for during a drain it ends this destination's drain (true).
 */
bool wt_sender_wait(struct wt_sender_dest *d, int64_t ns);
/* The backoff before retry number failures (1, 2, ...): 0.5 s doubling, capped at max_backoff. */
int64_t wt_sender_backoff(const struct wt_sender_dest *d, int failures);
/*
 * A failed attempt: counts it (the destination's failures since its last delivery) and returns
 * the backoff before the next (wt_sender_backoff).
 */
int64_t wt_sender_failed(struct wt_sender_dest *d);
/*
 * A delivery: after failed attempts, logs "NOUN NAME: delivering again after N failed attempts"
 * once (say false: the transport said it its own way) and counts from zero again.
 */
void wt_sender_delivered(struct wt_sender_dest *d, bool say);
/* Adds n to counter k (under the lock). */
void wt_sender_count(struct wt_sender_dest *d, int k, uint64_t n);
/* The pending count and lag, when due (wt_cursor_pending_paced); force: now. */
void wt_sender_count_pending(struct wt_sender_dest *d, bool force);
/* Acknowledges b, logging when the store cannot keep the cursor. Returns 0 or -EIO. */
int wt_sender_ack(struct wt_sender_dest *d, const struct wt_cursor_batch *b);
/* Acknowledges the samples of b at or before t_ns. Returns 0, -ENOMEM or -EIO. */
int wt_sender_ack_through(struct wt_sender_dest *d, const struct wt_cursor_batch *b, int64_t t_ns);

/* ---- for stats functions ------------------------------------------------------------------ */

struct wt_sender_stats {
    uint64_t c[WT_SENDER_MAX_COUNTERS];
    uint64_t pending;
    double lag_s;
};
/* The counters of destination i. Returns -ENOENT past the last. */
int wt_sender_stats(struct wt_sender *s, size_t i, struct wt_sender_stats *out);

/* ---- growth and HTTP ---------------------------------------------------------------------- */

/* Grows *p (of *cap elements of size) to hold n, doubling from 256. Returns 0 or -ENOMEM. */
int wt_sender_grow(void **p, size_t *cap, size_t n, size_t size) WT_MUST_USE;

/*
 * Reads a one-line secret file (what names it in messages) into out: refused when group or
 * others may read it, missing, empty or longer than one line. Returns 0 or a negative errno with
 * err set.
 */
int wt_sender_read_secret(const char *what, const char *path, char *out, size_t n,
                          struct wt_err *err) WT_MUST_USE;

/* An HTTP receiver: where, with which credentials (files read for every request) and TLS. */
struct wt_sender_http {
    const char *url;
    const char *bearer_token_file; /* "" or NULL: none */
    const char *username, *password_file;
    const char *tls_ca, *tls_cert, *tls_key;
    bool insecure_skip_verify;
    int64_t timeout_ns;
    /* on a 2xx, how many of the request's samples the answer says were rejected anyway (its
     * reason into msg); NULL: none. The rejected ones count as dropped. */
    size_t (*rejected)(const char *body, size_t len, char *msg, size_t n);
};

/* What an HTTP status means: sent (2xx), retry (5xx, 429, none), auth (401, 403: retried,
 * counted apart) or drop (any other). */
enum wt_sender_verdict { WT_SENDER_SENT, WT_SENDER_RETRY, WT_SENDER_DROP, WT_SENDER_AUTH };
enum wt_sender_verdict wt_sender_verdict(long status);

/* The counters an HTTP transport's destination keeps (wt_sender_http_deliver). */
enum {
    WT_SENDER_C_SENT,     /* samples accepted */
    WT_SENDER_C_FAILED,   /* samples of failed attempts (retried) */
    WT_SENDER_C_DROPPED,  /* samples refused with a 4xx (not retried) */
    WT_SENDER_C_REQUESTS, /* requests answered or failed */
    WT_SENDER_C_AUTH,     /* requests refused with 401 or 403 */
};

/* What wt_sender_http_deliver keeps between batches (zeroed at start). */
struct wt_sender_http_state {
    struct wt_ratelimit rl_fail, rl_drop;
    bool refused;      /* the receiver's last answer was a 401 or 403 */
    uint64_t refusals; /* of the requests since it began refusing */
};

/*
 * Posts body (the encoding of b) until the receiver accepts it (2xx) or drops it (another 4xx),
 * or the sender stops: 5xx, 429, network errors, 401 and 403 are retried with backoff, logged
 * (rate-limited; a refusal once when it begins and once when it ends); the WT_SENDER_C_*
 * counters move; accepted or dropped, b is acknowledged. A stop leaves b pending.
 */
void wt_sender_http_deliver(struct wt_sender_dest *d, struct wt_sender_http_state *st, void *curl,
                            const struct wt_sender_http *h, const char *const *headers,
                            const struct wt_cursor_batch *b, const char *body, size_t len);

/*
 * One POST of body with the headers (NULL-terminated "Name: value" lines) on the handle curl (a
 * CURL *, reset first); a stop of d's sender abandons it. Returns the HTTP status, or 0 with why
 * filled when none came back; why also holds the start of the receiver's answer, on one line.
 * raw (may be NULL) gets the answer's first rawn bytes as they came, *rawlen how many.
 */
long wt_sender_post(struct wt_sender_dest *d, void *curl, const struct wt_sender_http *h,
                    const char *const *headers, const char *body, size_t len, char *why,
                    size_t whyn, char *raw, size_t rawn, size_t *rawlen);

/* ---- HTTP streams (remote write, OTLP) ---------------------------------------------------- */

/*
 * An HTTP stream's encoder, called from the destination's thread with its owner (the
 * transport's endpoint): add gives the series (metric, labels) the next index and returns it (or
 * a negative errno); encode packs b into *body, *len (the encoder's buffers, valid until its next
 * call). Returns 0 or a negative errno.
 */
struct wt_rw_selector;
struct wt_sender_http_codec {
    int (*add)(void *owner, const char *metric, const char *labels);
    int (*encode)(void *owner, const struct wt_cursor_batch *b, const char **body, size_t *len);
    /* whether the endpoint's selectors (sel, n; none: all) keep a series: the transport's, so
     * that the sender calls no function of a transport by name (wt_remote_write_match) */
    bool (*keep)(const struct wt_rw_selector *sel, size_t n, const char *metric,
                 const char *labels);
};

struct wt_rw_endpoint_config;
struct wt_rw_stats;
/*
 * An HTTP destination, within the transport's endpoint: the transport sets codec, owner, headers
 * (NULL-terminated) and http.rejected; wt_sender_http_dest the rest. Its destination runs
 * wt_sender_http_ops: which series (its selectors), a new series into the codec, a batch encoded
 * and delivered (wt_sender_http_deliver).
 */
struct wt_sender_http_ep {
    const struct wt_sender_http_codec *codec;
    void *owner;
    const char *const *headers;
    struct wt_sender_http http;
    const char *name;
    const struct wt_rw_selector *sel;
    size_t nsel;
    void *curl; /* a CURL * */
    struct wt_sender_http_state hs;
};
/* The ops of a sender whose destinations are struct wt_sender_http_ep (their ctx). */
extern const struct wt_sender_ops wt_sender_http_ops;
/*
 * Adds the HTTP destination ep from its endpoint settings c (remote write's keys, which OTLP
 * shares; c must outlive ep, which points into it): fills ep->http but its rejected, reads the
 * secrets once (one that cannot be read is a setup error, named at start), adds the destination
 * (its cursor named cursor) and makes ep->curl. Returns 0 or a negative errno with err set.
 */
int wt_sender_http_dest(struct wt_sender *s, const char *store_path,
                        const struct wt_rw_endpoint_config *c, const char *cursor,
                        struct wt_sender_http_ep *ep, struct wt_err *err) WT_MUST_USE;
/* Frees what wt_sender_http_dest made (after wt_sender_close); accepts a zeroed ep. */
void wt_sender_http_ep_close(struct wt_sender_http_ep *ep);
/* The counters of an HTTP stream's destination i (wt_sender_http_deliver's). -ENOENT past the
 * last or when s is NULL. */
int wt_sender_http_stats(struct wt_sender *s, size_t i, struct wt_rw_stats *out);

/* ---- streams ------------------------------------------------------------------------------ */

/*
 * A stream is one file (serve/kafka.c, remote_write.c, otlp.c): its config section, its encoder
 * and transport (struct wt_sender_ops), its self-metrics, and the table below; the sender does
 * the rest (the destinations' setup, threads, cursors, batches, backoff, drain and close).
 */
struct wt_sender_setup {
    struct wt_sender *s;
    const struct wt_config *cfg;
    const char *node; /* topology.node: the series' node */
    const char *what; /* the destination's settings in messages: "kafka", "kafka[1]" */
    size_t i;         /* its index in the section */
};

struct wt_sender_stream {
    const char *section; /* the config section; the log lines' module */
    const char *thread;  /* the threads' name (at most 15 characters) */
    const char *noun;    /* what the messages call a destination: "endpoint", "destination" */
    bool indexed;        /* a section of one mapping is still named section[0] in messages */
    const struct wt_sender_ops *ops;
    const struct wt_sender_family *fams;
    size_t nfams;
    size_t conf_size; /* the section's parsed settings (given to parse, then to open_dest) */
    size_t dest_size; /* the stream's state per destination (zeroed before open_dest) */
    /* parses the section (node; NULL: none) of file into confs: returns how many destinations
     * (0: none) or -EINVAL with err set */
    int (*parse)(const char *file, const struct wt_ynode *node, void *confs, struct wt_err *err);
    /* the name of destination i of confs, for messages */
    const char *(*dest_name)(const void *confs, size_t i);
    /* sets up destination su->i in dest: its settings and secrets, wt_sender_add_dest on su->s
     * (its ctx dest), its encoder and transport. Returns 0 or a negative errno with err set (the
     * sender prefixes "what (name): "); dest is closed either way. */
    int (*open_dest)(const struct wt_sender_setup *su, const void *confs, void *dest,
                     struct wt_err *err);
    /* logs the destination's line at start (may be NULL) */
    void (*describe)(const void *dest, const char *node);
    /* frees what open_dest made (after the threads ended); dest may be half set up */
    void (*close_dest)(void *dest);
};

/*
 * The fields every stream file fills the same way: its families fams[], its settings conf_type,
 * its state per destination dest_type and its functions parse, dest_name, open_dest, describe
 * and close_dest (static, by these names). A stream's table is then
 *   {.section = "kafka", .thread = "wt-kafka", .noun = "destination", .ops = &kafka_ops,
 *    WT_SENDER_STREAM_FILE(struct wt_kafka_configs, struct dest)}
 */
#define WT_SENDER_STREAM_FILE(conf_type, dest_type)                                                \
    .fams = fams, .nfams = sizeof fams / sizeof fams[0], .conf_size = sizeof(conf_type),           \
    .dest_size = sizeof(dest_type), .parse = parse, .dest_name = dest_name,                        \
    .open_dest = open_dest, .describe = describe, .close_dest = close_dest

/*
 * For `wattage run`: parses the stream's section of cfg, sets up each destination (its cursor on
 * cfg's store, which must exist), registers the self-metrics on http (may be NULL; before
 * wt_http_start) and starts the threads. No section: *out is NULL, which drain, close and stats
 * accept. Returns 0 or a negative errno with err set. wt_sender_close closes the destinations.
 */
int wt_sender_stream_open(const struct wt_sender_stream *st, const struct wt_config *cfg,
                          struct wt_http *http, struct wt_sender **out,
                          struct wt_err *err) WT_MUST_USE;

#endif
