/* SPDX-License-Identifier: MIT */
/*
 * The facility target (collect/facility.c) with a stand-in protocol: names, placement, password
 * files, a condition said once, and a target's life through open_target, poll, down and close (the
 * reader's readings then wattage_facility_up 1; nothing but up 0 after a failed read; the peer's
 * skew with the target's labels), and a protocol library's load (dlopen, once; absent or lacking
 * a symbol: an error naming the section). The protocols themselves are test_modbus, test_redfish,
 * test_ipmi and test_snmp.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "collect/facility.h"
#include "core/clock.h"
#include "core/config.h"
#include "runner.h"

/* The stand-in's target: a name and a placement, in collectors.redfish.targets (whose own
 * check the YAML below passes: url is all it needs). */
struct tgt {
    char name[WT_TARGET_NAME_LEN + 1];
    int64_t timeout_ns, interval_ns;
    struct wt_fac_place place;
};

struct fake {
    struct wt_fac f; /* first */
    struct tgt t;
    int opened, reads, closes;
    int fail; /* the next read's result */
};

static int closes; /* the stand-in's close counts here: the state is freed after it */

static int parse_tgt(const struct wt_yget *g, const struct wt_ynode *m, const char *path, void *tv)
{
    struct tgt *t = tv;
    memset(t, 0, sizeof *t);
    int rc = wt_y_string(g, m, path, "name", true, t->name, sizeof t->name);
    if (!rc)
        rc = wt_fac_parse_place(g, m, path, &t->place);
    return rc;
}

static const struct wt_y_targets targets = {
    .section = "collectors.redfish.targets",
    .size = sizeof(struct tgt),
    .name_at = offsetof(struct tgt, name),
    .interval_at = offsetof(struct tgt, interval_ns),
    .parse = parse_tgt,
};

/* A section whose targets are a name and timing, through wt_fac_parse_name and _timing. */
static int parse_named(const struct wt_yget *g, const struct wt_ynode *m, const char *path,
                       void *tv)
{
    struct tgt *t = tv;
    memset(t, 0, sizeof *t);
    t->timeout_ns = 7;
    int rc = wt_fac_parse_name(g, m, path, t->name, sizeof t->name);
    if (!rc)
        rc = wt_fac_parse_timing(g, m, path, &t->timeout_ns, &t->interval_ns);
    return rc;
}

static const struct wt_y_targets named = {
    .section = "x.targets",
    .size = sizeof(struct tgt),
    .name_at = offsetof(struct tgt, name),
    .interval_at = offsetof(struct tgt, interval_ns),
    .parse = parse_named,
};

static int fake_open(struct wt_fac *f, const struct wt_config *cfg, struct wt_err *err)
{
    struct fake *s = (struct fake *)f;
    (void)cfg;
    s->opened++;
    /* The target is parsed and the labels made before open. */
    if (strcmp(f->name, "absent") == 0)
        return wt_err_set(err, "%s: not there", f->name), -ENOENT;
    return 0;
}

static int fake_read(struct wt_fac *f, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct fake *s = (struct fake *)f;
    s->reads++;
    int rc = wt_batch_add(out, WT_M_FAC_POWER_W, f->up_labels, t_ns, 412);
    if (s->fail)
        return wt_err_set(err, "%s: no answer", f->name), s->fail;
    return rc;
}

static void fake_close(struct wt_fac *f)
{
    (void)f;
    closes++;
}

static const struct wt_fac_proto proto = {
    .source = "fake",
    .title = "Fake",
    .targets = &targets,
    .place_at = offsetof(struct tgt, place),
    .state_size = sizeof(struct fake),
    .target_at = offsetof(struct fake, t),
    .open = fake_open,
    .read = fake_read,
    .close = fake_close,
};

static const char yaml[] = "collectors:\n"
                           "  redfish:\n"
                           "    targets:\n"
                           "      - name: pdu-a1\n"
                           "        url: http://127.0.0.1:1\n"
                           "        rack: r12\n"
                           "        zone: hall-2\n"
                           "      - name: absent\n"
                           "        url: http://127.0.0.1:1\n";

static void load(struct wt_config *c)
{
    struct wt_err err = {{0}};
    wt_config_defaults(c);
    if (wt_config_load_string("f.yaml", yaml, strlen(yaml), c, &err) != 0)
        wt_test_fail(__FILE__, __LINE__, "config: %s", err.msg);
}

WT_TEST(names_are_letters_digits_and_three_marks)
{
    WT_ASSERT(wt_fac_name_ok("pdu-A1.b_2"));
    WT_ASSERT(!wt_fac_name_ok(""));
    WT_ASSERT(!wt_fac_name_ok("pdu a1"));
    WT_ASSERT(!wt_fac_name_ok("pdu/a1"));
    WT_ASSERT(!wt_fac_name_ok("p\xc3\xa9"));
}

WT_TEST(placement_labels_only_those_set_in_order)
{
    struct wt_fac_place p = {.node = "", .rack = "r12", .zone = "z"};
    char lb[WT_LABELS_LEN] = "";
    WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "x", NULL), 0);
    WT_EQ_INT(wt_fac_place_labels(lb, sizeof lb, &p), 0);
    WT_EQ_STR(lb, "source=\"x\",rack=\"r12\",zone=\"z\"");
    char small[24] = "";
    WT_EQ_INT(wt_labels(small, sizeof small, "source", "x", NULL), 0);
    WT_EQ_INT(wt_fac_place_labels(small, sizeof small, &p), -E2BIG);
}

WT_TEST(a_condition_is_said_when_it_starts_and_when_it_ends)
{
    bool said = false;
    WT_ASSERT(!wt_fac_turn(&said, false)); /* nothing to say */
    WT_ASSERT(wt_fac_turn(&said, true));   /* it starts */
    WT_ASSERT(said);
    WT_ASSERT(!wt_fac_turn(&said, true)); /* it goes on: said once */
    WT_ASSERT(wt_fac_turn(&said, false)); /* it ends */
    WT_ASSERT(!said);
}

WT_TEST(a_target_reads_then_is_up_and_is_down_after_a_failed_read)
{
    struct wt_config c;
    struct wt_err err = {{0}};
    struct wt_target names[4];
    struct wt_batch b = {0};
    void *st = NULL;
    load(&c);
    WT_EQ_INT((int)wt_fac_targets(&proto, &c, names, 4), 2);
    WT_EQ_STR(names[1].name, "absent");
    closes = 0;
    WT_EQ_INT(wt_fac_open_target(&proto, &c, 0, &st, &err), 0);
    struct fake *s = st;
    WT_EQ_INT(s->opened, 1);
    WT_EQ_STR(s->f.name, "pdu-a1");
    WT_EQ_STR(s->f.up_labels, "source=\"fake\",target=\"pdu-a1\",rack=\"r12\",zone=\"hall-2\"");
    /* a poll: the reader's readings, then up 1 */
    WT_EQ_INT(wt_fac_poll(st, 1000 * WT_NS_PER_S, &b, &err), 0);
    WT_EQ_INT((int)b.len, 2);
    WT_EQ_INT(b.r[0].metric, WT_M_FAC_POWER_W);
    WT_EQ_INT(b.r[1].metric, WT_M_FAC_UP);
    WT_NEAR(b.r[1].value, 1, 0);
    WT_EQ_STR(b.r[1].labels, s->f.up_labels);
    /* a failed read adds no up 1; down says up 0 */
    wt_batch_clear(&b);
    s->fail = -ETIMEDOUT;
    WT_EQ_INT(wt_fac_poll(st, 1001 * WT_NS_PER_S, &b, &err), -ETIMEDOUT);
    WT_EQ_STR(err.msg, "pdu-a1: no answer");
    for (size_t i = 0; i < b.len; i++)
        WT_ASSERT(b.r[i].metric != WT_M_FAC_UP);
    wt_batch_clear(&b);
    WT_EQ_INT(wt_fac_down(st, 1001 * WT_NS_PER_S, &b), 0);
    WT_EQ_INT((int)b.len, 1);
    WT_EQ_INT(b.r[0].metric, WT_M_FAC_UP);
    WT_NEAR(b.r[0].value, 0, 0);
    /* the peer's clock: a stamp of 1000 s seen at 1000 s is half a second ahead at most */
    wt_batch_clear(&b);
    WT_EQ_INT(
        wt_fac_skew(&s->f, 1000, 1000 * WT_NS_PER_S, 1000 * WT_NS_PER_S, 1000 * WT_NS_PER_S, &b),
        0);
    WT_EQ_INT((int)b.len, 1);
    WT_EQ_INT(b.r[0].metric, WT_M_CLOCK_PEER_SKEW_S);
    WT_NEAR(b.r[0].value, 0.5, 1e-9);
    WT_EQ_STR(b.r[0].labels, s->f.up_labels);
    wt_fac_close(st);
    WT_EQ_INT(closes, 1);
    wt_fac_close(NULL);
    /* a target whose device is not there: -ENOENT from open, the half-built state closed */
    st = NULL;
    WT_EQ_INT(wt_fac_open_target(&proto, &c, 1, &st, &err), -ENOENT);
    WT_EQ_STR(err.msg, "absent: not there");
    WT_ASSERT(st != NULL);
    wt_fac_close(st);
    WT_EQ_INT(closes, 2);
    /* no such target */
    st = NULL;
    WT_EQ_INT(wt_fac_open_target(&proto, &c, 2, &st, &err), -ENOENT);
    WT_EQ_STR(err.msg, "no Fake target 2 in the configuration");
    wt_fac_close(st);
    wt_batch_free(&b);
    wt_config_free(&c);
}

WT_TEST(a_config_check_names_file_line_and_key)
{
    struct wt_ynode *root = NULL;
    struct wt_err err = {{0}};
    const char *y = "- name: a\n  rack: r1\n- name: a\n";
    WT_EQ_INT(wt_yaml_parse("t.yaml", y, strlen(y), &root, &err), 0);
    WT_EQ_INT(wt_fac_config_check(&targets, "t.yaml", root, &err), -EINVAL);
    WT_CONTAINS(err.msg, "t.yaml:3");
    wt_ynode_free(root);
}

WT_TEST(a_target_name_is_required_and_checked)
{
    struct wt_ynode *root = NULL;
    struct wt_err err = {{0}};
    const char *y = "- name: pdu a1\n";
    WT_EQ_INT(wt_yaml_parse("t.yaml", y, strlen(y), &root, &err), 0);
    WT_EQ_INT(wt_fac_config_check(&named, "t.yaml", root, &err), -EINVAL);
    WT_CONTAINS(err.msg, "t.yaml:1");
    WT_CONTAINS(err.msg, "expected at most 23 of A-Z a-z 0-9 _ . - (got \"pdu a1\")");
    wt_ynode_free(root);
    /* timeout and interval: a network request's and a network poll's bounds; absent, kept */
    struct tgt one;
    y = "- {name: a, interval: 30s}\n- {name: b, timeout: 1h}\n";
    WT_EQ_INT(wt_yaml_parse("t.yaml", y, strlen(y), &root, &err), 0);
    WT_EQ_INT(wt_y_target_at(&named, "t.yaml", root, 0, &one, "X", &err), -EINVAL);
    WT_CONTAINS(err.msg, "t.yaml:2");
    WT_CONTAINS(err.msg, "timeout");
    wt_ynode_free(root);
    y = "- {name: a, interval: 30s}\n";
    WT_EQ_INT(wt_yaml_parse("t.yaml", y, strlen(y), &root, &err), 0);
    WT_EQ_INT(wt_y_target_at(&named, "t.yaml", root, 0, &one, "X", &err), 0);
    WT_EQ_U64((uint64_t)one.interval_ns, (uint64_t)(30 * WT_NS_PER_S));
    WT_EQ_U64((uint64_t)one.timeout_ns, 7);
    wt_ynode_free(root);
}

WT_TEST(a_password_is_the_first_line_of_its_file)
{
    char path[512], out[8];
    struct wt_err err = {{0}};
    snprintf(path, sizeof path, "%s/pw", wt_test_dir());
    wt_test_write(path, "s3cret\r\nsecond line\n");
    WT_EQ_INT(wt_fac_read_password(path, out, sizeof out, &err), 0);
    WT_EQ_STR(out, "s3cret");
    /* one that does not fit: -E2BIG, the caller says the bound */
    WT_EQ_INT(wt_fac_read_password(path, out, 6, &err), -E2BIG);
    wt_test_write(path, "%s", "");
    WT_EQ_INT(wt_fac_read_password(path, out, sizeof out, &err), -EINVAL);
    WT_CONTAINS(err.msg, "is empty");
    snprintf(path, sizeof path, "%s/none", wt_test_dir());
    WT_EQ_INT(wt_fac_read_password(path, out, sizeof out, &err), -ENOENT);
    WT_CONTAINS(err.msg, "cannot read password_file");
}

/* A library of section sec, file soname from package pkg, with the first n of syms. */
static struct wt_fac_lib lib_of(const char *sec, const char *soname, const char *pkg,
                                const struct wt_fac_sym *syms, size_t n)
{
    return (struct wt_fac_lib){
        .section = sec, .soname = soname, .package = pkg, .syms = syms, .nsyms = n};
}

/*
 * A protocol's library: loaded once, each symbol in its slot; one that is not there, or that
 * lacks a symbol, is an error naming the section and the package, leaves nothing loaded and may
 * be tried again.
 */
WT_TEST(a_protocol_library_loads_once_or_says_why)
{
    struct wt_err err = {{0}};
    double (*cosine)(double) = NULL;
    void *nothing = NULL;
    const struct wt_fac_sym syms[] = {{"cos", &cosine}, {"wattage_no_such_symbol", &nothing}};
    struct wt_fac_lib libm = lib_of("collectors.modbus.targets", "libm.so.6", "libc6", syms, 1);
    WT_EQ_INT(wt_fac_lib_load(&libm, &err), 0);
    WT_ASSERT(libm.loaded && cosine != NULL);
    WT_NEAR(cosine(0), 1, 0);
    cosine = NULL;
    WT_EQ_INT(wt_fac_lib_load(&libm, &err), 0); /* once: the slots are not filled again */
    WT_ASSERT(cosine == NULL);

    struct wt_fac_lib absent =
        lib_of("collectors.snmp.targets", "libwattage-absent.so.0", "libabsent0", syms, 1);
    WT_EQ_INT(wt_fac_lib_load(&absent, &err), -ELIBACC);
    WT_CONTAINS(err.msg, "collectors.snmp.targets: cannot load libwattage-absent.so.0 "
                         "(Debian package libabsent0): ");
    WT_ASSERT(!absent.loaded);
    WT_EQ_INT(wt_fac_lib_load(&absent, &err), -ELIBACC); /* tried again, said again */

    struct wt_fac_lib lacking = lib_of("collectors.ipmi.targets", "libm.so.6", "libc6", syms, 2);
    WT_EQ_INT(wt_fac_lib_load(&lacking, &err), -ELIBBAD);
    WT_CONTAINS(err.msg, "collectors.ipmi.targets: libm.so.6 has no wattage_no_such_symbol");
    WT_ASSERT(!lacking.loaded);
}
