/* SPDX-License-Identifier: MIT */
/*
 * A recording HTTP server for the delivery tests (libmicrohttpd, loopback): every POST body is
 * kept (and appended as one line "PATH BODY" to out_file when set); it answers 200, or 503 while
 * `down` is set or for the next `fail_next` requests, or 400 (refused, not kept) for the next
 * `refuse_next`. Used in-process by tests/unit/test_notify*.c
 * and as the program tests/peers/notify_recorder for the shell tests. Header-only (static).
 */
#ifndef WT_NOTIFY_RECORDER_H
#define WT_NOTIFY_RECORDER_H

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_MAX 4096
#define REC_BODY_MAX (1 << 20)

struct rec {
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t mu;
    char *bodies[REC_MAX];
    char *paths[REC_MAX];
    size_t n;
    size_t requests; /* all POSTs, refused ones included */
    int fail_next;
    int refuse_next;
    bool down;
    const char *out_file;
};

struct rec_conn {
    char *buf;
    size_t len;
    bool too_big;
};

static enum MHD_Result rec_access(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    struct rec *r = cls;
    struct rec_conn *cc = *con_cls;
    (void)version;
    if (!cc) {
        cc = calloc(1, sizeof *cc);
        if (!cc)
            return MHD_NO;
        *con_cls = cc;
        return MHD_YES;
    }
    if (*upload_size) {
        if (cc->len + *upload_size > REC_BODY_MAX) {
            cc->too_big = true;
        } else {
            char *nb = realloc(cc->buf, cc->len + *upload_size + 1);
            if (!nb)
                return MHD_NO;
            cc->buf = nb;
            memcpy(cc->buf + cc->len, upload_data, *upload_size);
            cc->len += *upload_size;
            cc->buf[cc->len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    unsigned status = 200;
    pthread_mutex_lock(&r->mu);
    if (strcmp(method, "POST") == 0) {
        r->requests++;
        if (r->down) {
            status = 503;
        } else if (r->refuse_next > 0) {
            r->refuse_next--;
            status = 400;
        } else if (r->fail_next > 0) {
            r->fail_next--;
            status = 503;
        } else if (r->n < REC_MAX && !cc->too_big) {
            r->bodies[r->n] = cc->buf ? cc->buf : strdup("");
            r->paths[r->n] = strdup(url);
            cc->buf = NULL;
            if (r->out_file) {
                FILE *f = fopen(r->out_file, "a");
                if (f) {
                    for (char *p = r->bodies[r->n]; *p; p++)
                        if (*p == '\n' || *p == '\r')
                            *p = ' ';
                    fprintf(f, "%s %s\n", url, r->bodies[r->n]);
                    fclose(f);
                }
            }
            r->n++;
        }
    }
    pthread_mutex_unlock(&r->mu);
    static const char ok[] = "{}";
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(2, (void *)(uintptr_t)ok, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result rc = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

static void rec_done(void *cls, struct MHD_Connection *c, void **con_cls,
                     enum MHD_RequestTerminationCode toe)
{
    struct rec_conn *cc = *con_cls;
    (void)cls, (void)c, (void)toe;
    if (cc) {
        free(cc->buf);
        free(cc);
        *con_cls = NULL;
    }
}

/* Starts on 127.0.0.1:port (0: any free port; r->port gets it). Returns 0 or -1. */
static int rec_start(struct rec *r, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    pthread_mutex_init(&r->mu, NULL);
    r->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                            rec_access, r, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
                            rec_done, NULL, MHD_OPTION_END);
    if (!r->d)
        return -1;
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(r->d, MHD_DAEMON_INFO_BIND_PORT);
    r->port = i ? i->port : port;
    return 0;
}

__attribute__((unused)) static void rec_stop(struct rec *r)
{
    if (r->d)
        MHD_stop_daemon(r->d);
    r->d = NULL;
    for (size_t i = 0; i < r->n; i++) {
        free(r->bodies[i]);
        free(r->paths[i]);
    }
    r->n = 0;
}

__attribute__((unused)) static size_t rec_count(struct rec *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}

__attribute__((unused)) static size_t rec_requests(struct rec *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->requests;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* A copy of body i (caller frees), NULL past the end. */
__attribute__((unused)) static char *rec_body(struct rec *r, size_t i)
{
    pthread_mutex_lock(&r->mu);
    char *s = i < r->n ? strdup(r->bodies[i]) : NULL;
    pthread_mutex_unlock(&r->mu);
    return s;
}

__attribute__((unused)) static void rec_set_down(struct rec *r, bool down)
{
    pthread_mutex_lock(&r->mu);
    r->down = down;
    pthread_mutex_unlock(&r->mu);
}

#endif
