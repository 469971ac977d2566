/* SPDX-License-Identifier: MIT */
/* Reading module-owned config sections: values, defaults and the file:line messages. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "core/source.h"
#include "core/yget.h"
#include "runner.h"

static struct wt_ynode *parse(const char *yaml)
{
    struct wt_ynode *root = NULL;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_yaml_parse("t.yaml", yaml, strlen(yaml), &root, &err), 0);
    WT_ASSERT(root != NULL);
    return root;
}

static const char *const target_keys[] = {"name",  "address", "timeout", "retries",
                                          "scale", "enabled", "version", NULL};

WT_TEST(reads_every_kind_and_keeps_defaults)
{
    struct wt_ynode *root = parse("name: pdu-1\naddress: 10.0.0.5:161\ntimeout: 1.5s\n"
                                  "retries: 0x3\nscale: 0.1\nenabled: off\nversion: 3\n");
    struct wt_err err = {{0}};
    struct wt_yget g = {"t.yaml", &err};
    char name[24], addr[64], absent[16] = "keep";
    int64_t timeout = 0, retries = 0;
    double scale = 1;
    bool enabled = true;
    int version = -1;
    static const char *const versions[] = {"1", "2c", "3", NULL};

    WT_EQ_INT(wt_y_keys(&g, root, "t", target_keys), 0);
    WT_EQ_INT(wt_y_string(&g, root, "t", "name", true, name, sizeof name), 0);
    WT_EQ_STR(name, "pdu-1");
    WT_EQ_INT(wt_y_string(&g, root, "t", "address", false, addr, sizeof addr), 0);
    WT_EQ_STR(addr, "10.0.0.5:161");
    WT_EQ_INT(wt_y_string(&g, root, "t", "community", false, absent, sizeof absent), 0);
    WT_EQ_STR(absent, "keep");
    WT_EQ_INT(wt_y_duration(&g, root, "t", "timeout", false, &timeout), 0);
    WT_EQ_INT(timeout, 1500000000);
    WT_EQ_INT(wt_y_int(&g, root, "t", "retries", 0, 10, &retries), 0);
    WT_EQ_INT(retries, 3);
    WT_EQ_INT(wt_y_double(&g, root, "t", "scale", 0, 1000, &scale), 0);
    WT_NEAR(scale, 0.1, 1e-12);
    WT_EQ_INT(wt_y_bool(&g, root, "t", "enabled", &enabled), 0);
    WT_ASSERT(!enabled);
    WT_EQ_INT(wt_y_enum(&g, root, "t", "version", versions, &version), 0);
    WT_EQ_INT(version, 2);
    wt_ynode_free(root);
}

#define EXPECT(yaml, call, message)                                                                \
    do {                                                                                           \
        struct wt_ynode *root_ = parse(yaml);                                                      \
        struct wt_err err = {{0}};                                                                 \
        struct wt_yget g = {"t.yaml", &err};                                                       \
        WT_EQ_INT((call), -EINVAL);                                                                \
        WT_EQ_STR(err.msg, message);                                                               \
        wt_ynode_free(root_);                                                                      \
    } while (0)

WT_TEST(errors_name_file_line_and_path)
{
    char s[8];
    int64_t i;
    double d;
    int e;
    static const char *const names[] = {"v2c", "v3", NULL};
    EXPECT("name: a\nadress: x\n", wt_y_keys(&g, root_, "collectors.snmp.targets[0]", target_keys),
           "t.yaml:2: collectors.snmp.targets[0].adress: unknown key; did you mean 'address'?");
    EXPECT("name: a\ncolour: red\n", wt_y_keys(&g, root_, "x", target_keys),
           "t.yaml:2: x.colour: unknown key (known: name, address, timeout, retries, scale, "
           "enabled, version)");
    EXPECT("name: a\nname: b\n", wt_y_keys(&g, root_, "x", target_keys),
           "t.yaml:2: x.name: duplicate key (first set on line 1)");
    EXPECT("x: 1\ntimeout: soon\n", wt_y_duration(&g, root_, "a", "timeout", false, &i),
           "t.yaml:2: a.timeout: expected a duration > 0 such as 30s or 5m (got \"soon\")");
    EXPECT("timeout: -1s\n", wt_y_duration(&g, root_, "a", "timeout", false, &i),
           "t.yaml:1: a.timeout: expected a duration > 0 such as 30s or 5m (got \"-1s\")");
    EXPECT("retries: 11\n", wt_y_int(&g, root_, "a", "retries", 0, 10, &i),
           "t.yaml:1: a.retries: expected an integer from 0 to 10 (got \"11\")");
    EXPECT("scale: nan\n", wt_y_double(&g, root_, "a", "scale", 0, 1, &d),
           "t.yaml:1: a.scale: expected a number from 0 to 1 (got \"nan\")");
    EXPECT("v: 2\n", wt_y_enum(&g, root_, "a", "v", names, &e),
           "t.yaml:1: a.v: expected one of v2c, v3 (got \"2\")");
    EXPECT("x: 1\n", wt_y_string(&g, root_, "a", "name", true, s, sizeof s),
           "t.yaml:1: a.name: required");
    EXPECT("name: [1, 2]\n", wt_y_string(&g, root_, "a", "name", true, s, sizeof s),
           "t.yaml:1: a.name: expected a string, not a list");
    EXPECT("name: abcdefghij\n", wt_y_string(&g, root_, "a", "name", true, s, sizeof s),
           "t.yaml:1: a.name: expected a string of at most 7 characters (got \"abcdefghij\")");
    EXPECT("- a\n", wt_y_keys(&g, root_, "alerts", target_keys),
           "t.yaml:1: alerts: expected a section with keys name, address, timeout, retries, "
           "scale, enabled, version, not a list");
    EXPECT("a: 1\n", wt_y_seq(&g, root_, "alerts.rules"),
           "t.yaml:1: alerts.rules: expected a list, not a mapping");
}

WT_TEST(paths_and_lookup)
{
    char p[64];
    WT_EQ_STR(wt_y_path(p, sizeof p, "", "alerts"), "alerts");
    WT_EQ_STR(wt_y_path(p, sizeof p, "alerts", "rules"), "alerts.rules");
    WT_EQ_STR(wt_y_index(p, sizeof p, "alerts.rules", 2), "alerts.rules[2]");
    struct wt_ynode *root = parse("rules:\n  - name: a\n  - name: b\n");
    const struct wt_ynode *rules = wt_y_get(root, "rules");
    WT_ASSERT(rules && rules->kind == WT_YNODE_SEQ && rules->n == 2);
    WT_EQ_INT(rules->child[1]->line, 3);
    WT_ASSERT(wt_y_get(root, "none") == NULL);
    WT_ASSERT(wt_y_get(NULL, "rules") == NULL);
    WT_EQ_INT((int)wt_edit_distance("intervall", 9, "interval", 8), 1);
    WT_EQ_INT((int)wt_edit_distance("Adress", 6, "address", 7), 1);
    wt_ynode_free(root);
}

/* A ranged duration: the edges pass, outside is refused with the bound broken and why. */
WT_TEST(ranged_durations_name_the_bound_and_why)
{
    static const struct {
        const char *yaml;
        int rc;
        int64_t ns;
        const char *msg;
    } cases[] = {
        {"timeout: 10ms\n", 0, 10000000, NULL},
        {"timeout: 1m\n", 0, 60000000000LL, NULL},
        {"timeout: 0\n", 0, 0, NULL}, /* allow_zero */
        {"timeout: 1ns\n", -EINVAL, 0,
         "t.yaml:1: a.timeout: expected a duration from 10ms to 1m, or 0 (got \"1ns\", below "
         "10ms): too fast"},
        {"timeout: 9999999us\n", 0, 9999999000LL, NULL},
        {"timeout: 61s\n", -EINVAL, 0,
         "t.yaml:1: a.timeout: expected a duration from 10ms to 1m, or 0 (got \"61s\", above 1m): "
         "too fast"},
        {"timeout: soon\n", -EINVAL, 0,
         "t.yaml:1: a.timeout: expected a duration from 10ms to 1m such as 1s, or 0 (got "
         "\"soon\")"},
        {"timeout: 1e9\n", -EINVAL, 0,
         "t.yaml:1: a.timeout: expected a duration from 10ms to 1m such as 1s, or 0 (got "
         "\"1e9\")"},
        {"timeout: [1]\n", -EINVAL, 0,
         "t.yaml:1: a.timeout: expected a duration from 10ms to 1m such as 1s, or 0, not a list"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct wt_ynode *root = parse(cases[i].yaml);
        struct wt_err err = {{0}};
        struct wt_yget g = {"t.yaml", &err};
        int64_t ns = -5;
        int rc = wt_y_duration_in(&g, root, "a", "timeout", true, 10000000, 60000000000LL,
                                  "too fast", &ns);
        if (rc != cases[i].rc)
            wt_test_fail(__FILE__, __LINE__, "case %zu: rc %d, want %d (%s)", i, rc, cases[i].rc,
                         err.msg);
        else if (rc == 0 && ns != cases[i].ns)
            wt_test_fail(__FILE__, __LINE__, "case %zu: %lld ns", i, (long long)ns);
        else if (rc && strcmp(err.msg, cases[i].msg) != 0)
            wt_test_fail(__FILE__, __LINE__, "case %zu: \"%s\", want \"%s\"", i, err.msg,
                         cases[i].msg);
        wt_ynode_free(root);
    }
}

/* The shared scalar forms live here, not in config.c: config depends on yget, never back. */
WT_TEST(shared_scalars_booleans_and_durations)
{
    static const struct {
        const char *s;
        int rc;
        bool v;
    } bools[] = {{"true", 0, true},   {"YES", 0, true}, {"On", 0, true},
                 {"false", 0, false}, {"no", 0, false}, {"OFF", 0, false},
                 {"1", -EINVAL},      {"", -EINVAL},    {"truee", -EINVAL}};
    for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++) {
        bool v = !bools[i].v;
        WT_EQ_INT(wt_y_parse_bool(bools[i].s, &v), bools[i].rc);
        if (bools[i].rc == 0)
            WT_EQ_INT(v, bools[i].v);
    }
    static const struct {
        int64_t ns;
        const char *s;
    } durs[] = {{0, "0"},
                {7 * 86400 * WT_Y_S, "7d"},
                {90 * 60 * WT_Y_S, "90m"},
                {1500 * WT_Y_MS, "1500ms"},
                {250 * WT_Y_MS, "250ms"},
                {1001, "1001ns"}};
    for (size_t i = 0; i < sizeof durs / sizeof durs[0]; i++) {
        char buf[32];
        wt_y_format_duration(durs[i].ns, buf, sizeof buf);
        WT_EQ_STR(buf, durs[i].s);
    }
}

/* A collector's targets: the names, the one asked for, none past the last, errors logged. */
struct tgt {
    char name[WT_TARGET_NAME_LEN + 1];
    int64_t interval_ns;
    char url[64];
};

static int parse_tgt(const struct wt_yget *g, const struct wt_ynode *m, const char *path, void *tv)
{
    static const char *const keys[] = {"name", "url", "interval", NULL};
    struct tgt *t = tv;
    memset(t, 0, sizeof *t);
    int rc = wt_y_keys(g, m, path, keys);
    if (!rc)
        rc = wt_y_string(g, m, path, "name", true, t->name, sizeof t->name);
    if (!rc)
        rc = wt_y_string(g, m, path, "url", true, t->url, sizeof t->url);
    return rc;
}

WT_TEST(targets_names_and_the_one_asked_for)
{
    static const struct wt_y_targets d = {.section = "x.targets",
                                          .size = sizeof(struct tgt),
                                          .name_at = offsetof(struct tgt, name),
                                          .interval_at = offsetof(struct tgt, interval_ns),
                                          .parse = parse_tgt};
    struct wt_ynode *root = parse("- {name: a, url: u1}\n- {name: b, url: u2}\n");
    struct wt_target names[4];
    WT_EQ_INT((int)wt_y_targets_names(&d, "t.yaml", root, "x", names, 4), 2);
    WT_EQ_STR(names[1].name, "b");
    WT_EQ_INT((int)wt_y_targets_names(&d, "t.yaml", root, "x", names, 1), 1);
    WT_EQ_INT((int)wt_y_targets_names(&d, "t.yaml", NULL, "x", names, 4), 0);
    struct tgt one;
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_y_target_at(&d, "t.yaml", root, 1, &one, "X", &err), 0);
    WT_EQ_STR(one.url, "u2");
    WT_EQ_INT(wt_y_target_at(&d, "t.yaml", root, 2, &one, "X", &err), -ENOENT);
    WT_EQ_STR(err.msg, "no X target 2 in the configuration");
    wt_ynode_free(root);
    /* a section that does not parse gives no target (and is logged), its error named for open */
    root = parse("- {name: a}\n");
    WT_EQ_INT((int)wt_y_targets_names(&d, "t.yaml", root, "x", names, 4), 0);
    WT_EQ_INT(wt_y_target_at(&d, "t.yaml", root, 0, &one, "X", &err), -EINVAL);
    WT_CONTAINS(err.msg, "t.yaml:1");
    wt_ynode_free(root);
}
