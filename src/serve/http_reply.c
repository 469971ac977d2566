/* SPDX-License-Identifier: MIT */
/*
 * The HTTP server's pure pieces (bearer tokens compared in constant time, path checks,
 * unescaping, loopback peers) and its replies (JSON errors, headers and query values, the
 * response sent with the headers only the server sets): see serve/http.h.
 */
#include "serve/http_reply.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* ---- pure pieces ---- */

bool wt_http_token_equal(const char *expected, const char *given, size_t given_len)
{
    size_t n = strlen(expected);
    /* Touch every byte of the expected token whatever the input, so the time taken says
     * nothing about where a guess first differs. */
    unsigned char diff = (unsigned char)(n != given_len);
    for (size_t i = 0; i < n; i++) {
        unsigned char g = given_len ? (unsigned char)given[i % given_len] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)expected[i]);
    }
    return n > 0 && diff == 0;
}

int wt_http_bearer(const char *authorization, const char **token, size_t *len)
{
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return -EINVAL;
    const char *p = authorization + 7;
    while (*p == ' ')
        p++;
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n == 0)
        return -EINVAL;
    *token = p;
    *len = n;
    return 0;
}

bool wt_http_path_ok(const char *path)
{
    const unsigned char *p = (const unsigned char *)path;
    while (*p) {
        unsigned c = *p;
        if (c < 0x20 || c == 0x7f)
            return false;
        if (c < 0x80) {
            p++;
            continue;
        }
        int n;
        unsigned cp;
        if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false; /* continuation byte first, overlong C0/C1, or beyond U+10FFFF */
        }
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false; /* overlong, out of range, or a UTF-16 surrogate */
        p += n + 1;
    }
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t wt_http_unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 && (hi | lo) != 0) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return (size_t)(w - s);
}

bool wt_http_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        const uint8_t *a = in6->sin6_addr.s6_addr;
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
            return true;
        return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) && a[12] == 127;
    }
    return false;
}

/* ---- replies ---- */

/* Copies msg into out, replacing control characters, and every non-ASCII byte when msg is not
 * valid UTF-8, so the JSON written from it is valid. */
void wt_http_sanitize(const char *msg, char *out, size_t n)
{
    bool utf8 = wt_http_path_ok(msg);
    size_t i = 0;
    for (; msg[i] && i + 1 < n; i++) {
        unsigned char c = (unsigned char)msg[i];
        out[i] = (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8)) ? '?' : (char)c;
    }
    out[i] = '\0';
    /* A cut in the middle of a UTF-8 sequence would leave it invalid: drop the tail bytes. */
    while (i > 0 && ((unsigned char)out[i - 1] & 0x80) && !wt_http_path_ok(out))
        out[--i] = '\0';
}

int wt_http_reply_json(struct wt_http_reply *rep, unsigned status, cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s)
        return -ENOMEM;
    rep->status = status;
    rep->body = s;
    rep->len = strlen(s);
    rep->content_type = "application/json";
    return 0;
}

int wt_http_reply_error(struct wt_http_reply *rep, unsigned status, const char *fmt, ...)
{
    char msg[512], clean[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wt_http_sanitize(msg, clean, sizeof clean);
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "error", clean)) {
        cJSON_Delete(o);
        o = NULL;
    }
    return wt_http_reply_json(rep, status, o);
}

const char *wt_http_header(const struct wt_http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *wt_http_query(const struct wt_http_request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

void wt_http_reply_free(struct wt_http_reply *r)
{
    if (r->release)
        r->release(r->release_arg);
    else
        free(r->body);
    r->body = NULL;
    r->release = NULL;
}

/* Queues o on c and frees its body. */
enum MHD_Result wt_http_send_out(struct MHD_Connection *c, struct out *o)
{
    static const char nothing[] = "";
    struct MHD_Response *resp;
    if (o->r.body && o->r.release)
        resp = MHD_create_response_from_buffer_with_free_callback_cls(
            o->r.len, o->r.body, o->r.release, o->r.release_arg);
    else if (o->r.body)
        resp = MHD_create_response_from_buffer(o->r.len, o->r.body, MHD_RESPMEM_MUST_FREE);
    else
        resp =
            MHD_create_response_from_buffer(0, (void *)(uintptr_t)nothing, MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        wt_http_reply_free(&o->r);
        return MHD_NO;
    }
    o->r.body = NULL; /* the response owns it now */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci && ci->socket_context)
        __atomic_store_n(&((struct conn *)ci->socket_context)->answered, 1, __ATOMIC_RELEASE);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            o->r.content_type ? o->r.content_type : "application/json");
    if (o->r.content_encoding)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING, o->r.content_encoding);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (o->allow)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, o->allow);
    if (o->r.csp) {
        MHD_add_response_header(resp, "Content-Security-Policy", o->r.csp);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
        MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    }
    if (o->auth_challenge)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"wattage\"");
    if (o->close)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(c, o->r.status ? o->r.status : 500, resp);
    MHD_destroy_response(resp);
    return rc;
}

enum MHD_Result wt_http_send_error(struct MHD_Connection *c, struct out *o, unsigned status,
                                   const char *msg)
{
    if (wt_http_reply_error(&o->r, status, "%s", msg) != 0)
        return MHD_NO;
    return wt_http_send_out(c, o);
}
