/* SPDX-License-Identifier: MIT */
/* The HTTP server's pure pieces: tokens, paths, unescaping, loopback (modes: test_secret.c);
 * the request deadline's timer, pure and on a real server on loopback. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

#include "runner.h"
#include "serve/http.h"

WT_TEST(token_comparison)
{
    WT_ASSERT(wt_http_token_equal("s3cret", "s3cret", 6));
    WT_ASSERT(!wt_http_token_equal("s3cret", "s3cre", 5));
    WT_ASSERT(!wt_http_token_equal("s3cret", "s3cret!", 7));
    WT_ASSERT(!wt_http_token_equal("s3cret", "S3cret", 6));
    WT_ASSERT(!wt_http_token_equal("s3cret", "", 0));
    /* A repeated prefix of the right length is still wrong. */
    WT_ASSERT(!wt_http_token_equal("abab", "abab", 2));
    /* Only the given length counts, not what follows. */
    WT_ASSERT(wt_http_token_equal("ab", "abXYZ", 2));
    WT_ASSERT(!wt_http_token_equal("", "", 0));
}

WT_TEST(bearer_parsing)
{
    const char *t;
    size_t n;
    WT_EQ_INT(wt_http_bearer("Bearer abc", &t, &n), 0);
    WT_EQ_INT(n, 3);
    WT_ASSERT(strncmp(t, "abc", n) == 0);
    WT_EQ_INT(wt_http_bearer("bearer   xyz  ", &t, &n), 0);
    WT_EQ_INT(n, 3);
    WT_ASSERT(strncmp(t, "xyz", 3) == 0);
    WT_EQ_INT(wt_http_bearer("Basic abc", &t, &n), -EINVAL);
    WT_EQ_INT(wt_http_bearer("Bearer ", &t, &n), -EINVAL);
    WT_EQ_INT(wt_http_bearer("Bearer", &t, &n), -EINVAL);
    WT_EQ_INT(wt_http_bearer(NULL, &t, &n), -EINVAL);
}

WT_TEST(paths)
{
    WT_ASSERT(wt_http_path_ok("/metrics"));
    WT_ASSERT(wt_http_path_ok("/api/v1/jobs/caf\xc3\xa9")); /* é */
    WT_ASSERT(wt_http_path_ok("/\xe2\x82\xac"));            /* € */
    WT_ASSERT(wt_http_path_ok("/\xf0\x9f\x94\x8c"));        /* U+1F50C */
    WT_ASSERT(!wt_http_path_ok("/metrics\xff"));
    WT_ASSERT(!wt_http_path_ok("/\xc3"));             /* cut short */
    WT_ASSERT(!wt_http_path_ok("/\xc0\xaf"));         /* overlong '/' */
    WT_ASSERT(!wt_http_path_ok("/\xe0\x80\xaf"));     /* overlong '/' */
    WT_ASSERT(!wt_http_path_ok("/\xed\xa0\x80"));     /* surrogate */
    WT_ASSERT(!wt_http_path_ok("/\xf4\x90\x80\x80")); /* > U+10FFFF */
    WT_ASSERT(!wt_http_path_ok("/\x80"));
    WT_ASSERT(!wt_http_path_ok("/a\nb"));
    WT_ASSERT(!wt_http_path_ok("/a\x7f"));
    WT_ASSERT(!wt_http_path_ok("/a\tb"));
}

WT_TEST(unescape)
{
    char s[64];
    strcpy(s, "/metric%73");
    WT_EQ_INT(wt_http_unescape(s), 8);
    WT_EQ_STR(s, "/metrics");
    strcpy(s, "/a%2Fb%2fc");
    wt_http_unescape(s);
    WT_EQ_STR(s, "/a/b/c");
    strcpy(s, "/bad%zz%4");
    WT_EQ_INT(wt_http_unescape(s), 9);
    WT_EQ_STR(s, "/bad%zz%4");
    strcpy(s, "/nul%00x");
    wt_http_unescape(s);
    WT_EQ_STR(s, "/nul%00x"); /* never a NUL inside a path */
    strcpy(s, "/x%ff");
    WT_EQ_INT(wt_http_unescape(s), 3);
    WT_ASSERT(!wt_http_path_ok(s));
}

WT_TEST(loopback)
{
    struct sockaddr_in a4 = {.sin_family = AF_INET};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET, "127.0.0.1", &a4.sin_addr);
    WT_ASSERT(wt_http_is_loopback((struct sockaddr *)&a4));
    inet_pton(AF_INET, "127.5.6.7", &a4.sin_addr);
    WT_ASSERT(wt_http_is_loopback((struct sockaddr *)&a4));
    inet_pton(AF_INET, "0.0.0.0", &a4.sin_addr);
    WT_ASSERT(!wt_http_is_loopback((struct sockaddr *)&a4));
    inet_pton(AF_INET, "10.1.2.3", &a4.sin_addr);
    WT_ASSERT(!wt_http_is_loopback((struct sockaddr *)&a4));
    inet_pton(AF_INET6, "::1", &a6.sin6_addr);
    WT_ASSERT(wt_http_is_loopback((struct sockaddr *)&a6));
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &a6.sin6_addr);
    WT_ASSERT(wt_http_is_loopback((struct sockaddr *)&a6));
    inet_pton(AF_INET6, "::", &a6.sin6_addr);
    WT_ASSERT(!wt_http_is_loopback((struct sockaddr *)&a6));
    inet_pton(AF_INET6, "fe80::1", &a6.sin6_addr);
    WT_ASSERT(!wt_http_is_loopback((struct sockaddr *)&a6));
}

WT_TEST(error_replies_are_valid_json)
{
    struct wt_http_reply rep = {0};
    WT_EQ_INT(wt_http_reply_error(&rep, 404, "no such endpoint: %s", "/a\"b\\c\xff\n"), 0);
    WT_EQ_INT(rep.status, 404);
    WT_EQ_STR(rep.body, "{\"error\":\"no such endpoint: /a\\\"b\\\\c??\"}");
    WT_EQ_INT(rep.len, strlen(rep.body));
    WT_EQ_STR(rep.content_type, "application/json");
    free(rep.body);
    /* Valid UTF-8 is kept. */
    WT_EQ_INT(wt_http_reply_error(&rep, 400, "caf\xc3\xa9"), 0);
    WT_EQ_STR(rep.body, "{\"error\":\"caf\xc3\xa9\"}");
    free(rep.body);
}

WT_TEST(deadline_timer)
{
    const int64_t dl = 10 * WT_NS_PER_S;
    /* Nothing open: no timer at all, the thread sleeps until a request starts. */
    WT_ASSERT(wt_http_reap_scan(NULL, 0, 5, dl) == INT64_MAX);
    struct wt_http_deadline d[4] = {
        {.since = 100},                  /* due at 100 + dl */
        {.since = 50, .answered = true}, /* answered: no deadline */
        {.since = 70},                   /* due first */
        {.since = 0, .cut = true},       /* cut already */
    };
    WT_ASSERT(wt_http_reap_scan(d, 4, 1000, dl) == 70 + dl);
    WT_ASSERT(!d[0].cut && !d[1].cut && !d[2].cut);
    /* At its deadline the request is cut and the next one is what the thread waits for. */
    WT_ASSERT(wt_http_reap_scan(d, 4, 70 + dl, dl) == 100 + dl);
    WT_ASSERT(d[2].cut && !d[0].cut && !d[1].cut);
    WT_ASSERT(wt_http_reap_scan(d, 4, 100 + dl + 1, dl) == INT64_MAX);
    WT_ASSERT(d[0].cut && !d[1].cut);
    /* Only answered requests left: no timer. */
    struct wt_http_deadline a[2] = {{.since = 1, .answered = true}, {.since = 2, .answered = true}};
    WT_ASSERT(wt_http_reap_scan(a, 2, 3 * dl, dl) == INT64_MAX);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    WT_ASSERT(fd >= 0);
    WT_EQ_INT(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* A loopback port nothing listens on now (daemon.listen takes no port 0). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof sa;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    WT_ASSERT(fd >= 0);
    WT_EQ_INT(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    WT_EQ_INT(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

/* Reads until end-of-file or timeout_ms; returns the ms it took, or -1 on timeout. */
static long ms_to_eof(int fd, long timeout_ms)
{
    int64_t t0 = wt_now_mono_ns();
    char buf[512];
    for (;;) {
        long spent = (long)((wt_now_mono_ns() - t0) / 1000000);
        if (spent > timeout_ms)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(timeout_ms - spent)) <= 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            return (long)((wt_now_mono_ns() - t0) / 1000000);
    }
}

/*
 * The deadline thread on a real server: idle it does not wake (it used to look 4 times a
 * second), a request that never completes is still cut at its deadline, and once the only
 * connection is gone it sleeps again. The bounds count wake-ups, not time: a loaded machine
 * makes the cut late, never the counts higher (only the poke at a connection's start, the
 * deadline's timer, and spurious wake-ups of the condition variable, which are rare).
 */
WT_TEST(deadline_thread_wakes_only_for_requests)
{
    struct wt_config cfg;
    struct wt_hub *hub = NULL;
    struct wt_http *h = NULL;
    struct wt_err err = {{0}};
    wt_config_defaults(&cfg);
    snprintf(cfg.daemon.listen, sizeof cfg.daemon.listen, "127.0.0.1:%d", free_port());
    WT_EQ_INT(wt_hub_open(&hub), 0);
    WT_EQ_INT(wt_http_open(&cfg, hub, &h, &err), 0);
    WT_EQ_INT(wt_http_start(h, &err), 0);
    wt_http_set_deadline(h, 300 * WT_NS_PER_MS);
    sleep_ms(100); /* the thread has taken the new deadline and sleeps */
    uint64_t w0 = wt_http_reaper_wakes(h);
    sleep_ms(1200); /* the old thread would have woken about 5 times */
    uint64_t w1 = wt_http_reaper_wakes(h);
    WT_ASSERT(w1 - w0 <= 1); /* 0, or a rare spurious wake-up */

    /* A slow client: half a request line, never finished. */
    int fd = connect_to(wt_http_port(h));
    WT_ASSERT(write(fd, "GET /metrics HT", 15) == 15);
    long ms = ms_to_eof(fd, 8000);
    WT_ASSERT(ms >= 0);   /* cut: end-of-file well before the 10-s idle timeout */
    WT_ASSERT(ms >= 150); /* not before its deadline (300 ms from the accept) */
    close(fd);
    sleep_ms(200);
    uint64_t w2 = wt_http_reaper_wakes(h);
    /* The poke at the connection's start and the timer at its deadline, with room for a
     * spurious wake-up or two; the old thread woke 4 times a second all along. */
    WT_ASSERT(w2 - w1 >= 1);
    WT_ASSERT(w2 - w1 <= 4);
    sleep_ms(1000);
    WT_ASSERT(wt_http_reaper_wakes(h) - w2 <= 1);
    wt_http_close(h);
    wt_hub_close(hub);
    wt_config_free(&cfg);
}
