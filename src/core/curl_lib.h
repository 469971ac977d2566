/* SPDX-License-Identifier: MIT */
/*
 * libcurl, loaded with dlopen (libcurl.so.4, Debian package libcurl4, or
 * WATTAGE_CURL_LIBRARY) by the first part that needs it: a Redfish target, an inference target,
 * the carbon intensity fetch, Alertmanager or webhook notifications, a remote write, OTLP or
 * Prometheus sink, a Prometheus import, the CLI's --source client. A daemon configured without
 * any of them does not map libcurl, nor the TLS, SSH, LDAP, Kerberos and HTTP/2 libraries it
 * pulls in. The types and constants come from the header (libcurl4-openssl-dev at build time).
 *
 * Include this header instead of <curl/curl.h>: it names each entry point the code calls
 * (curl_easy_init, curl_easy_setopt...) after its slot in the table, so the calls read as
 * libcurl's own. Every caller loads the library (wt_curl_load) before its first call.
 */
#ifndef WT_CURL_LIB_H
#define WT_CURL_LIB_H

/* no type-checking wrappers of curl_easy_setopt and curl_easy_getinfo: they name the symbols */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <stdbool.h>

#include "core/err.h"

#define WT_CURL_SONAME "libcurl.so.4"
#define WT_CURL_PACKAGE "libcurl4"

/* The entry points wattage calls: X(name) each. */
#define WT_CURL_SYMS(X)                                                                            \
    X(curl_global_init)                                                                            \
    X(curl_easy_init)                                                                              \
    X(curl_easy_setopt)                                                                            \
    X(curl_easy_perform)                                                                           \
    X(curl_easy_cleanup)                                                                           \
    X(curl_easy_getinfo)                                                                           \
    X(curl_easy_strerror)                                                                          \
    X(curl_easy_reset)                                                                             \
    X(curl_easy_escape)                                                                            \
    X(curl_free)                                                                                   \
    X(curl_slist_append)                                                                           \
    X(curl_slist_free_all)                                                                         \
    X(curl_getdate)

#define WT_CURL_MEMBER(f) __typeof__(f) *f;
/* A slot per entry point, of the library's own type; filled by wt_curl_load. */
struct wt_curl_table {
    WT_CURL_SYMS(WT_CURL_MEMBER)
};
extern struct wt_curl_table wt_curl;

/*
 * Loads libcurl and runs curl_global_init, once per process (later calls give the first one's
 * result; threads may call it at once). who names the part that needs it in the error
 * ("alerts.webhook", "wattage query --source"). Returns 0, or -ELIBACC with err "WHO: cannot
 * load libcurl.so.4 (Debian package libcurl4): why" when it is not there, or its version lacks
 * an entry point.
 */
int wt_curl_load(const char *who, struct wt_err *err) WT_MUST_USE;

/* True once wt_curl_load succeeded (for the tests: a daemon that needs no curl never loads it). */
bool wt_curl_loaded(void);

#ifndef WT_CURL_LIB_IMPL
/* curl.h's own macros of these two (pass-through without the type checks) */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init (*wt_curl.curl_global_init)
#define curl_easy_init (*wt_curl.curl_easy_init)
#define curl_easy_setopt (*wt_curl.curl_easy_setopt)
#define curl_easy_perform (*wt_curl.curl_easy_perform)
#define curl_easy_cleanup (*wt_curl.curl_easy_cleanup)
#define curl_easy_getinfo (*wt_curl.curl_easy_getinfo)
#define curl_easy_strerror (*wt_curl.curl_easy_strerror)
#define curl_easy_reset (*wt_curl.curl_easy_reset)
#define curl_easy_escape (*wt_curl.curl_easy_escape)
#define curl_free (*wt_curl.curl_free)
#define curl_slist_append (*wt_curl.curl_slist_append)
#define curl_slist_free_all (*wt_curl.curl_slist_free_all)
#define curl_getdate (*wt_curl.curl_getdate)
#endif

#endif
