/* SPDX-License-Identifier: MIT */
/*
 * The HTTP server's replies and pure pieces (serve/http_reply.c), shared with the server
 * (serve/http.c) and nothing else: the public functions are declared in serve/http.h.
 */
#ifndef WT_HTTP_REPLY_H
#define WT_HTTP_REPLY_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve/http.h"

/*
 * One open connection, for the request deadline: libmicrohttpd's timeout is an idle timeout, so
 * a client trickling one header byte at a time (slow loris) would hold a connection for ever.
 * The reaper thread cuts every connection whose request has not been answered within
 * WT_HTTP_REQUEST_DEADLINE_S of its start (the connection's start, or the end of the previous
 * response on a kept-alive connection). It sleeps until the earliest of those deadlines, and
 * with none (no connection, or every request answered) until a request starts: an idle server
 * never wakes it (issue 17: it looked 4 times a second).
 */
struct conn {
    struct conn *prev, *next;
    int fd;
    int64_t since; /* CLOCK_MONOTONIC ns; atomic */
    int answered;  /* a response is queued for the current request; atomic */
    bool cut;
};

/* A reply plus the headers only the server sets. */
struct out {
    struct wt_http_reply r;
    const char *allow;
    bool auth_challenge;
    bool close;
};

/* Copies msg into out, replacing control characters, and every non-ASCII byte when msg is not
 * valid UTF-8, so the JSON written from it is valid. */
void wt_http_sanitize(const char *msg, char *out, size_t n);
int wt_http_reply_json(struct wt_http_reply *rep, unsigned status, cJSON *o);
void wt_http_reply_free(struct wt_http_reply *r);
/* Queues o on c and frees its body. */
enum MHD_Result wt_http_send_out(struct MHD_Connection *c, struct out *o);
enum MHD_Result wt_http_send_error(struct MHD_Connection *c, struct out *o, unsigned status,
                                   const char *msg);

#endif
