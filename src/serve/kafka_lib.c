/* SPDX-License-Identifier: MIT */
/*
 * librdkafka by dlopen (see kafka_lib.h): the library is opened once and never closed (its
 * threads may outlive a producer's destroy by a moment).
 */
#ifdef WT_HAVE_KAFKA
#include "serve/kafka_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_LIBRARY "librdkafka.so.1" /* Debian 12: librdkafka1 */

_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym results must fit");

static const struct {
    const char *name;
    size_t off;
} symbols[] = {
    {"rd_kafka_version_str", offsetof(struct wt_rdk, version_str)},
    {"rd_kafka_conf_new", offsetof(struct wt_rdk, conf_new)},
    {"rd_kafka_conf_set", offsetof(struct wt_rdk, conf_set)},
    {"rd_kafka_conf_destroy", offsetof(struct wt_rdk, conf_destroy)},
    {"rd_kafka_conf_set_opaque", offsetof(struct wt_rdk, conf_set_opaque)},
    {"rd_kafka_conf_set_dr_msg_cb", offsetof(struct wt_rdk, conf_set_dr_msg_cb)},
    {"rd_kafka_conf_set_error_cb", offsetof(struct wt_rdk, conf_set_error_cb)},
    {"rd_kafka_conf_set_log_cb", offsetof(struct wt_rdk, conf_set_log_cb)},
    {"rd_kafka_new", offsetof(struct wt_rdk, new_)},
    {"rd_kafka_destroy", offsetof(struct wt_rdk, destroy)},
    {"rd_kafka_purge", offsetof(struct wt_rdk, purge)},
    {"rd_kafka_poll", offsetof(struct wt_rdk, poll)},
    {"rd_kafka_producev", offsetof(struct wt_rdk, producev)},
    {"rd_kafka_message_status", offsetof(struct wt_rdk, message_status)},
    {"rd_kafka_fatal_error", offsetof(struct wt_rdk, fatal_error)},
    {"rd_kafka_err2name", offsetof(struct wt_rdk, err2name)},
    {"rd_kafka_err2str", offsetof(struct wt_rdk, err2str)},
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct wt_rdk rdk;
static bool tried;
static char failure[WT_ERR_LEN]; /* why the first load failed, "" when it worked */

/* Under mu: opens the library and resolves every entry point, or says why not in failure. */
static void load(void)
{
    const char *path = getenv("WATTAGE_RDKAFKA_LIBRARY");
    if (!path || !path[0])
        path = DEFAULT_LIBRARY;
    dlerror();
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure,
                 "cannot load librdkafka (%s); install librdkafka1, or remove the section",
                 why ? why : path);
        return;
    }
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        void *p = dlsym(dl, symbols[i].name);
        if (!p) {
            snprintf(failure, sizeof failure,
                     "cannot load librdkafka: %s has no %s (librdkafka 1.0 or later is needed)",
                     path, symbols[i].name);
            dlclose(dl);
            return;
        }
        /* the entry point into its field: an object pointer to a function pointer, by bytes */
        memcpy((char *)&rdk + symbols[i].off, &p, sizeof p);
    }
    failure[0] = '\0';
}

int wt_kafka_lib_load(const struct wt_rdk **out, struct wt_err *err)
{
    pthread_mutex_lock(&mu);
    if (!tried)
        load();
    tried = true;
    bool ok = !failure[0];
    if (!ok)
        wt_err_set(err, "%s", failure);
    pthread_mutex_unlock(&mu);
    *out = ok ? &rdk : NULL;
    return ok ? 0 : -ENOENT;
}

#endif
