/* SPDX-License-Identifier: MIT */
/* libcurl by dlopen (see curl_lib.h): opened once, never closed. */
#define WT_CURL_LIB_IMPL 1
#include "core/curl_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym results must fit");

struct wt_curl_table wt_curl;

#define WT_CURL_SYM(f) {#f, (void *)&wt_curl.f},
static const struct {
    const char *name;
    void *slot;
} symbols[] = {WT_CURL_SYMS(WT_CURL_SYM)};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bool tried, loaded;
static char failure[WT_ERR_LEN]; /* why the first load failed: "cannot load ..." */

/* Under mu: opens the library, resolves every entry point, runs curl_global_init. */
static void load(void)
{
    const char *path = getenv("WATTAGE_CURL_LIBRARY");
    if (!path || !path[0])
        path = WT_CURL_SONAME;
    dlerror();
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "cannot load %s (Debian package %s): %s", path,
                 WT_CURL_PACKAGE, why ? why : "dlopen failed");
        return;
    }
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        void *p = dlsym(dl, symbols[i].name);
        if (!p) {
            snprintf(failure, sizeof failure,
                     "cannot load %s (Debian package %s): it has no %s (libcurl 7.74 or later "
                     "is needed)",
                     path, WT_CURL_PACKAGE, symbols[i].name);
            dlclose(dl);
            memset(&wt_curl, 0, sizeof wt_curl);
            return;
        }
        /* the entry point into its slot: an object pointer to a function pointer, by bytes */
        memcpy(symbols[i].slot, &p, sizeof p);
    }
    CURLcode rc = wt_curl.curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(failure, sizeof failure, "%s: curl_global_init failed: %s", path,
                 wt_curl.curl_easy_strerror(rc));
        return;
    }
    loaded = true;
}

int wt_curl_load(const char *who, struct wt_err *err)
{
    pthread_mutex_lock(&mu);
    if (!tried)
        load();
    tried = true;
    bool ok = loaded;
    if (!ok)
        wt_err_set(err, "%s: %s", who, failure);
    pthread_mutex_unlock(&mu);
    return ok ? 0 : -ELIBACC;
}

bool wt_curl_loaded(void)
{
    pthread_mutex_lock(&mu);
    bool ok = loaded;
    pthread_mutex_unlock(&mu);
    return ok;
}
