/* SPDX-License-Identifier: MIT */
/* The HTTP server's pure pieces: tokens, paths, unescaping, loopback (modes: test_secret.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/stat.h>

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
