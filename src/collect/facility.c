/* SPDX-License-Identifier: MIT */
/*
 * The facility target; see facility.h. Owns a facility target's state from allocation to free,
 * its up labels and its up readings, and the small pieces of its reading that every protocol
 * repeated: names, placement, the peer's clock, partial reads, conditions said once.
 */
#include "collect/facility.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"

bool wt_fac_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '.' || *s == '-'))
            return false;
    return true;
}

int wt_fac_parse_name(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                      char *name, size_t n)
{
    int rc = wt_y_string(g, m, path, "name", true, name, n);
    if (!rc && !wt_fac_name_ok(name))
        rc = wt_y_key_fail(g, m, path, "name",
                           "expected at most %d of A-Z a-z 0-9 _ . - (got \"%s\")",
                           WT_TARGET_NAME_LEN, name);
    return rc;
}

int wt_fac_parse_timing(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                        int64_t *timeout_ns, int64_t *interval_ns)
{
    int rc = wt_y_duration_in(g, m, path, "timeout", false, WT_Y_NET_TIMEOUT_MIN,
                              WT_Y_NET_TIMEOUT_MAX, WT_Y_WHY_NET_TIMEOUT, timeout_ns);
    if (!rc)
        rc = wt_y_duration_in(g, m, path, "interval", false, WT_Y_NET_POLL_MIN, WT_Y_NET_POLL_MAX,
                              WT_Y_WHY_NET_POLL, interval_ns);
    return rc;
}

int wt_fac_parse_place(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                       struct wt_fac_place *p)
{
    int rc = wt_y_string(g, m, path, "node", false, p->node, WT_FAC_PLACE_LEN);
    if (!rc)
        rc = wt_y_string(g, m, path, "rack", false, p->rack, WT_FAC_PLACE_LEN);
    if (!rc)
        rc = wt_y_string(g, m, path, "zone", false, p->zone, WT_FAC_PLACE_LEN);
    return rc;
}

int wt_fac_place_labels(char *buf, size_t n, const struct wt_fac_place *p)
{
    int rc = 0;
    if (!rc && p->node[0])
        rc = wt_labels_add(buf, n, "node", p->node);
    if (!rc && p->rack[0])
        rc = wt_labels_add(buf, n, "rack", p->rack);
    if (!rc && p->zone[0])
        rc = wt_labels_add(buf, n, "zone", p->zone);
    return rc;
}

int wt_fac_read_line(const char *what, const char *path, char *out, size_t n, struct wt_err *err)
{
    char line[256];
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        wt_err_set(err, "cannot read %s %s: %s", what, path, strerror(e));
        return -e;
    }
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    if (!got) {
        wt_err_set(err, "%s %s is empty", what, path);
        return -EINVAL;
    }
    line[strcspn(line, "\r\n")] = '\0';
    size_t len = strlen(line);
    int rc = len < n ? 0 : -E2BIG;
    if (!rc)
        memcpy(out, line, len + 1);
    explicit_bzero(line, sizeof line);
    return rc;
}

int wt_fac_read_password(const char *path, char *out, size_t n, struct wt_err *err)
{
    return wt_fac_read_line("password_file", path, out, n, err);
}

int wt_fac_config_check(const struct wt_y_targets *d, const char *file, const struct wt_ynode *node,
                        struct wt_err *err)
{
    int rc = wt_y_targets_parse(d, file, node, -1, NULL, NULL, 0, err);
    return rc < 0 ? rc : 0;
}

bool wt_fac_turn(bool *said, bool now)
{
    if (*said == now)
        return false;
    *said = now;
    return true;
}

size_t wt_fac_targets(const struct wt_fac_proto *p, const struct wt_config *cfg,
                      struct wt_target *out, size_t max)
{
    return wt_y_targets_names(p->targets, wt_config_file(cfg),
                              wt_config_section(cfg, p->targets->section), p->source, out, max);
}

int wt_fac_init(struct wt_fac *f, const struct wt_fac_proto *p, const struct wt_config *cfg,
                struct wt_err *err)
{
    const char *target = (const char *)f + p->target_at;
    f->proto = p;
    f->name = target + p->targets->name_at;
    f->place = (const struct wt_fac_place *)(const void *)(target + p->place_at);
    f->clock_bound_s = cfg ? (double)cfg->daemon.clock_max_error_ns / 1e9 : 0;
    f->rl.interval_ns = 60 * WT_NS_PER_S;
    /* up carries the placement too, so that a rack's dead PDU can be told apart. */
    int rc =
        wt_labels(f->up_labels, sizeof f->up_labels, "source", p->source, "target", f->name, NULL);
    if (!rc)
        rc = wt_fac_place_labels(f->up_labels, sizeof f->up_labels, f->place);
    if (rc)
        return wt_err_set(err, "%s: labels too long", f->name), -E2BIG;
    return 0;
}

int wt_fac_open_target(const struct wt_fac_proto *p, const struct wt_config *cfg, size_t i,
                       void **state, struct wt_err *err)
{
    struct wt_fac *f = calloc(1, p->state_size);
    if (!f)
        return -ENOMEM;
    *state = f;
    f->proto = p;
    char *target = (char *)f + p->target_at;
    int rc = wt_y_target_at(p->targets, wt_config_file(cfg),
                            wt_config_section(cfg, p->targets->section), i, target, p->title, err);
    if (!rc)
        rc = wt_fac_init(f, p, cfg, err);
    if (rc)
        return rc;
    return p->open ? p->open(f, cfg, err) : 0;
}

int wt_fac_poll(void *state, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct wt_fac *f = state;
    int rc = f->proto->read(f, t_ns, out, err);
    if (rc)
        return rc;
    rc = wt_batch_add(out, WT_M_FAC_UP, f->up_labels, t_ns, 1);
    if (rc)
        wt_err_set(err, "out of memory");
    return rc;
}

int wt_fac_down(void *state, int64_t t_ns, struct wt_batch *out)
{
    const struct wt_fac *f = state;
    return wt_batch_add(out, WT_M_FAC_UP, f->up_labels, t_ns, 0);
}

void wt_fac_close(void *state)
{
    struct wt_fac *f = state;
    if (!f)
        return;
    if (f->proto->close)
        f->proto->close(f);
    free(f);
}

int wt_fac_skew(struct wt_fac *f, int64_t stamp_s, int64_t before_ns, int64_t after_ns,
                int64_t t_ns, struct wt_batch *out)
{
    double skew, unc;
    wt_peer_skew(stamp_s, before_ns, after_ns, &skew, &unc);
    int rc = wt_batch_add(out, WT_M_CLOCK_PEER_SKEW_S, f->up_labels, t_ns, skew);
    if (rc)
        return rc;
    wt_peer_skew_note(&f->skew, f->proto->source, f->name, skew, unc, f->clock_bound_s);
    return 0;
}

void wt_fac_partial(struct wt_fac *f, const char *fmt, ...)
{
    uint64_t held;
    char what[WT_ERR_LEN];
    if (!wt_ratelimit_ok(&f->rl, wt_now_mono_ns(), &held))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    wt_warn(f->proto->source, "%s: %s suppressed=%llu", f->name, what, (unsigned long long)held);
}

/* One lock for every protocol library's load: loads are rare (a target's open). */
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

int wt_fac_lib_load(struct wt_fac_lib *l, struct wt_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&lib_mu);
    if (l->loaded)
        goto out;
    void *dl = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        wt_err_set(err, "%s: cannot load %s (Debian package %s): %s", l->section, l->soname,
                   l->package, why ? why : "dlopen failed");
        rc = -ELIBACC;
        goto out;
    }
    for (size_t i = 0; i < l->nsyms; i++) {
        void *p = dlsym(dl, l->syms[i].name);
        if (!p) {
            wt_err_set(err, "%s: %s has no %s (not a version wattage knows)", l->section, l->soname,
                       l->syms[i].name);
            dlclose(dl);
            rc = -ELIBBAD;
            goto out;
        }
        memcpy(l->syms[i].slot, &p, sizeof p);
    }
    l->loaded = true;
out:
    pthread_mutex_unlock(&lib_mu);
    return rc;
}
