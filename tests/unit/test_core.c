/* SPDX-License-Identifier: MIT */
/* Labels, batches, time parsing and formatting, backoff, the hub and the poll loop. */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hub.h"
#include "core/loop.h"
#include "core/reading.h"
#include "core/snapshot.h"
#include "core/source.h"
#include "runner.h"

WT_TEST(labels_escape_and_read_back)
{
    char b[WT_LABELS_LEN], v[64];
    WT_EQ_INT(wt_labels(b, sizeof b, "gpu", "0", "model", "A \"quoted\\\" name\nx", NULL), 0);
    WT_EQ_STR(b, "gpu=\"0\",model=\"A \\\"quoted\\\\\\\" name\\nx\"");
    WT_EQ_INT(wt_labels_get(b, "model", v, sizeof v), 0);
    WT_EQ_STR(v, "A \"quoted\\\" name\nx");
    WT_EQ_INT(wt_labels_get(b, "gpu", v, sizeof v), 0);
    WT_EQ_STR(v, "0");
    WT_EQ_INT(wt_labels_get(b, "uuid", v, sizeof v), -ENOENT);
    WT_EQ_INT(wt_labels_add(b, sizeof b, "method", "integrated"), 0);
    WT_CONTAINS(b, ",method=\"integrated\"");
}

WT_TEST(labels_too_long_is_refused_whole)
{
    char b[24];
    WT_EQ_INT(wt_labels(b, sizeof b, "gpu", "0", NULL), 0);
    WT_EQ_INT(wt_labels_add(b, sizeof b, "model", "NVIDIA H200 NVL 141GB"), -E2BIG);
    WT_EQ_STR(b, "gpu=\"0\"");
}

WT_TEST(batch_grows_and_keeps_order)
{
    struct wt_batch b = {0}, c = {0};
    for (int i = 0; i < 1000; i++)
        WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, "gpu=\"1\"", i, i * 2.0), 0);
    WT_EQ_INT(b.len, 1000);
    WT_NEAR(b.r[999].value, 1998.0, 0);
    WT_EQ_INT(wt_batch_append(&c, &b), 0);
    WT_EQ_INT(wt_batch_append(&c, &b), 0);
    WT_EQ_INT(c.len, 2000);
    WT_EQ_STR(c.r[1500].labels, "gpu=\"1\"");
    WT_EQ_INT(wt_metric_find("wattage_gpu_power_watts"), WT_M_GPU_POWER_W);
    WT_EQ_INT(wt_metric_find("nope"), -ENOENT);
    wt_batch_free(&b);
    wt_batch_free(&c);
}

WT_TEST(time_parse_forms)
{
    int64_t t, now = 1764439200LL * WT_NS_PER_S;
    WT_EQ_INT(wt_time_parse("2025-11-29T18:00:00Z", now, &t), 0);
    WT_EQ_INT(t, 1764439200LL * WT_NS_PER_S);
    WT_EQ_INT(wt_time_parse("2025-11-29T19:30:00.5+01:30", now, &t), 0);
    WT_EQ_INT(t, 1764439200LL * WT_NS_PER_S + WT_NS_PER_S / 2);
    WT_EQ_INT(wt_time_parse("1764439200.25", now, &t), 0);
    WT_EQ_INT(t, 1764439200LL * WT_NS_PER_S + WT_NS_PER_S / 4);
    WT_EQ_INT(wt_time_parse("-2h", now, &t), 0);
    WT_EQ_INT(t, now - 7200LL * WT_NS_PER_S);
    WT_EQ_INT(wt_time_parse("now", now, &t), 0);
    WT_EQ_INT(t, now);
    WT_EQ_INT(wt_time_parse("2025-11-29T18:00:00", now, &t), -EINVAL); /* no zone */
    WT_EQ_INT(wt_time_parse("2025-13-01T00:00:00Z", now, &t), -EINVAL);
    WT_EQ_INT(wt_time_parse("yesterday", now, &t), -EINVAL);
    /* Out of the range of 64-bit nanoseconds (1677..2262): refused, not wrapped. */
    WT_EQ_INT(wt_time_parse("0001-01-01T00:00:00Z", now, &t), -EINVAL);
    WT_EQ_INT(wt_time_parse("9999-12-31T23:59:59Z", now, &t), -EINVAL);
    WT_EQ_INT(wt_time_parse("+15000w", now, &t), -EINVAL);
    WT_EQ_INT(wt_time_parse("2262-04-11T23:47:16Z", now, &t), 0);
    WT_EQ_INT(t, 9223372036LL * WT_NS_PER_S);
    char buf[40];
    wt_time_format(1764439200LL * WT_NS_PER_S + 123 * WT_NS_PER_MS, 1, buf, sizeof buf);
    WT_EQ_STR(buf, "2025-11-29T18:00:00.123Z");
}

WT_TEST(duration_parse_forms)
{
    int64_t d;
    WT_EQ_INT(wt_duration_parse("1s", &d), 0);
    WT_EQ_INT(d, WT_NS_PER_S);
    WT_EQ_INT(wt_duration_parse("500ms", &d), 0);
    WT_EQ_INT(d, 500 * WT_NS_PER_MS);
    WT_EQ_INT(wt_duration_parse("1h30m", &d), 0);
    WT_EQ_INT(d, 5400 * WT_NS_PER_S);
    WT_EQ_INT(wt_duration_parse("0.25", &d), 0);
    WT_EQ_INT(d, WT_NS_PER_S / 4);
    WT_EQ_INT(wt_duration_parse("7d", &d), 0);
    WT_EQ_INT(d, 7 * 86400 * WT_NS_PER_S);
    WT_EQ_INT(wt_duration_parse("0s", &d), -EINVAL);
    WT_EQ_INT(wt_duration_parse("-1", &d), -EINVAL);
    WT_EQ_INT(wt_duration_parse("5 parsecs", &d), -EINVAL);
    WT_EQ_INT(wt_duration_parse("", &d), -EINVAL);
    WT_EQ_INT(wt_duration_parse("nan", &d), -EINVAL);
    WT_EQ_INT(wt_duration_parse("inf", &d), -EINVAL);
    WT_EQ_INT(wt_duration_parse("0x10s", &d), -EINVAL);
    WT_EQ_INT(wt_duration_parse(" 1s", &d), -EINVAL);
    WT_EQ_INT(wt_duration_parse("1e3", &d), -EINVAL);
}

WT_TEST(backoff_doubles_after_three_failures_up_to_cap)
{
    const int64_t s = WT_NS_PER_S;
    WT_EQ_INT(wt_loop_next_interval(s, 0), s);
    WT_EQ_INT(wt_loop_next_interval(s, 2), s);
    WT_EQ_INT(wt_loop_next_interval(s, 3), 2 * s);
    WT_EQ_INT(wt_loop_next_interval(s, 4), 4 * s);
    WT_EQ_INT(wt_loop_next_interval(s, 7), 32 * s);
    WT_EQ_INT(wt_loop_next_interval(s, 50), 32 * s);
    WT_EQ_INT(wt_loop_next_interval(60 * s, 10), 300 * s); /* 5 minute cap */
}

/* A scripted collector for the loop tests: fails polls while `failing` is set. */
struct fake {
    pthread_mutex_t mu;
    int failing;
    int polls;
    int64_t poll_mono[256];
    int64_t interval_seen[256]; /* the loop's interval when each poll ran */
    int absent_opens;           /* open returns -ENOENT this many times */
    int opens;
};
static struct fake fk = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct wt_hub *fake_hub;
static struct wt_collector_config fake_cc = {.enabled = true, .interval_ns = 50 * WT_NS_PER_MS};

static const struct wt_collector_config *fake_config(const struct wt_config *cfg)
{
    (void)cfg;
    return &fake_cc;
}
static int fake_open(const struct wt_config *cfg, void **st, struct wt_err *err)
{
    (void)cfg;
    pthread_mutex_lock(&fk.mu);
    int absent = fk.opens++ < fk.absent_opens;
    pthread_mutex_unlock(&fk.mu);
    *st = &fk;
    if (absent)
        return wt_err_set(err, "fake source absent") ? -ENOENT : -ENOENT;
    return 0;
}
static int fake_poll(void *st, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    struct fake *f = st;
    pthread_mutex_lock(&f->mu);
    if (f->polls < 256) {
        struct wt_hub_collector c = {0};
        f->poll_mono[f->polls] = wt_now_mono_ns();
        if (fake_hub)
            wt_hub_collectors(fake_hub, &c, 1);
        f->interval_seen[f->polls] = c.interval_ns;
    }
    f->polls++;
    int failing = f->failing;
    pthread_mutex_unlock(&f->mu);
    if (failing)
        return wt_err_set(err, "scripted failure");
    return wt_batch_add(out, WT_M_MEM_USED_RATIO, "", t_ns, 0.5);
}
static void fake_close(void *st)
{
    (void)st;
}
static const struct wt_collector_ops fake_ops = {"fake", fake_config, fake_open, fake_poll,
                                                 fake_close};
static const struct wt_collector_ops *const fake_list[] = {&fake_ops, NULL};

static int polls_now(void)
{
    pthread_mutex_lock(&fk.mu);
    int n = fk.polls;
    pthread_mutex_unlock(&fk.mu);
    return n;
}

WT_TEST(loop_backs_off_after_three_failures_and_recovers)
{
    struct wt_config cfg;
    struct wt_hub *hub;
    struct wt_loop *loop;
    struct wt_err err;
    wt_config_defaults(&cfg);
    WT_EQ_INT(wt_hub_open(&hub), 0);
    fake_hub = hub;
    fk.failing = 1;
    WT_EQ_INT(wt_loop_start(&cfg, fake_list, hub, 0, &loop, &err), 0);
    while (polls_now() < 6)
        usleep(10000);
    pthread_mutex_lock(&fk.mu);
    fk.failing = 0;
    int64_t *iv = fk.interval_seen;
    /* polls 1-3 fail at the base interval; after the third the interval doubles per failure */
    WT_EQ_INT(iv[1], 50 * WT_NS_PER_MS);
    WT_EQ_INT(iv[2], 50 * WT_NS_PER_MS);
    WT_EQ_INT(iv[3], 100 * WT_NS_PER_MS);
    WT_EQ_INT(iv[4], 200 * WT_NS_PER_MS);
    WT_EQ_INT(iv[5], 400 * WT_NS_PER_MS);
    /* and the loop really waited: 50+50+100+200 ms at least from poll 0 to poll 4 (a loaded
     * machine may wake it late, never early) */
    WT_ASSERT(fk.poll_mono[4] - fk.poll_mono[0] >= 300 * WT_NS_PER_MS);
    pthread_mutex_unlock(&fk.mu);
    struct wt_hub_collector cs[2];
    WT_EQ_INT(wt_hub_collectors(hub, cs, 2), 1);
    WT_EQ_INT(cs[0].errors, 6);
    /* the first success restores the base interval */
    int before = polls_now();
    while (polls_now() < before + 4)
        usleep(10000);
    wt_hub_collectors(hub, cs, 2);
    WT_ASSERT(cs[0].up);
    WT_EQ_INT(cs[0].interval_ns, 50 * WT_NS_PER_MS);
    wt_loop_stop(loop);
    wt_hub_close(hub);
}

WT_TEST(loop_ticks_do_not_drift)
{
    struct wt_config cfg;
    struct wt_hub *hub;
    struct wt_loop *loop;
    struct wt_err err;
    wt_config_defaults(&cfg);
    cfg.daemon.align_ticks = false; /* the monotonic grid from the start (test_loop: aligned) */
    WT_EQ_INT(wt_hub_open(&hub), 0);
    WT_EQ_INT(wt_loop_start(&cfg, fake_list, hub, 0, &loop, &err), 0);
    while (polls_now() < 21)
        usleep(10000);
    wt_loop_stop(loop);
    /* 20 intervals of 50 ms: never sooner (the grid is absolute; drift is tested below). */
    double span = (double)(fk.poll_mono[20] - fk.poll_mono[0]) / 1e6;
    WT_ASSERT(span >= 995);
    struct wt_batch snap = {0};
    WT_EQ_INT(wt_hub_snapshot(hub, &snap), 0);
    WT_ASSERT(snap.len >= 3); /* the reading + collector self metrics */
    wt_batch_free(&snap);
    wt_hub_close(hub);
}

WT_TEST(deadlines_stay_on_the_grid)
{
    const int64_t iv = 100;
    WT_EQ_INT(wt_loop_next_deadline(1000, iv, 1010), 1100); /* on time */
    WT_EQ_INT(wt_loop_next_deadline(1000, iv, 1099), 1100); /* a slow poll: still on the grid */
    WT_EQ_INT(wt_loop_next_deadline(1000, iv, 1100), 1200); /* missed: skip, keep the phase */
    WT_EQ_INT(wt_loop_next_deadline(1000, iv, 1350), 1400);
    /* a thousand ticks later the schedule has not drifted by a nanosecond */
    int64_t d = 1000;
    for (int i = 0; i < 1000; i++)
        d = wt_loop_next_deadline(d, iv, d + 37);
    WT_EQ_INT(d, 1000 + 1000 * iv);
}

WT_TEST(loop_looks_again_for_absent_source)
{
    struct wt_config cfg;
    struct wt_hub *hub;
    struct wt_loop *loop;
    struct wt_err err;
    char why[128];
    wt_config_defaults(&cfg);
    fk.absent_opens = 2;
    WT_EQ_INT(wt_hub_open(&hub), 0);
    WT_EQ_INT(wt_loop_start(&cfg, fake_list, hub, 20 * WT_NS_PER_MS, &loop, &err), 0);
    usleep(5000);
    WT_ASSERT(!wt_hub_healthy(hub, wt_now_mono_ns(), why, sizeof why));
    while (polls_now() < 2)
        usleep(10000);
    WT_EQ_INT(fk.opens, 3);
    WT_ASSERT(wt_hub_healthy(hub, wt_now_mono_ns(), why, sizeof why));
    wt_loop_stop(loop);
    wt_hub_close(hub);
}

WT_TEST(hub_slots_are_found_again_by_name)
{
    struct wt_hub *hub;
    WT_EQ_INT(wt_hub_open(&hub), 0);
    for (int i = 0; i < 40; i++) {
        WT_EQ_INT(wt_hub_add_collector(hub, "nvml", WT_NS_PER_S), 0);
        WT_EQ_INT(wt_hub_add_collector(hub, "procfs", WT_NS_PER_S), 1);
    }
    struct wt_hub_collector cs[4];
    WT_EQ_INT(wt_hub_collectors(hub, cs, 4), 2);
    wt_hub_close(hub);
}

/* A two-target collector: target "dead" hangs in every poll; target "live" must keep its ticks. */
static struct {
    pthread_mutex_t mu;
    int live_polls, dead_polls;
    int64_t live_mono[64];
    int opened[2];
} mt = {.mu = PTHREAD_MUTEX_INITIALIZER};

static size_t mt_targets(const struct wt_config *cfg, struct wt_target *out, size_t max)
{
    (void)cfg;
    WT_ASSERT(max >= 2);
    snprintf(out[0].name, sizeof out[0].name, "live");
    out[0].interval_ns = 0; /* the collector's */
    snprintf(out[1].name, sizeof out[1].name, "dead");
    out[1].interval_ns = 30 * WT_NS_PER_MS;
    return 2;
}
static int mt_open_target(const struct wt_config *cfg, size_t i, void **st, struct wt_err *err)
{
    (void)cfg;
    (void)err;
    pthread_mutex_lock(&mt.mu);
    mt.opened[i]++;
    pthread_mutex_unlock(&mt.mu);
    *st = (void *)(uintptr_t)(i + 1);
    return 0;
}
static int mt_poll(void *st, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    (void)t_ns;
    (void)out;
    if ((uintptr_t)st == 2) {
        pthread_mutex_lock(&mt.mu);
        mt.dead_polls++;
        pthread_mutex_unlock(&mt.mu);
        usleep(400 * 1000); /* a PDU that never answers: the timeout is long */
        return wt_err_set(err, "timeout");
    }
    pthread_mutex_lock(&mt.mu);
    if (mt.live_polls < 64)
        mt.live_mono[mt.live_polls] = wt_now_mono_ns();
    mt.live_polls++;
    pthread_mutex_unlock(&mt.mu);
    return 0;
}
static const struct wt_collector_ops mt_ops = {"pdu",      fake_config, NULL,          mt_poll,
                                               fake_close, mt_targets,  mt_open_target};
static const struct wt_collector_ops *const mt_list[] = {&mt_ops, NULL};

WT_TEST(loop_gives_each_target_its_own_thread_and_slot)
{
    struct wt_config cfg;
    struct wt_hub *hub;
    struct wt_loop *loop;
    struct wt_err err;
    wt_config_defaults(&cfg);
    WT_EQ_INT(wt_hub_open(&hub), 0);
    WT_EQ_INT(wt_loop_start(&cfg, mt_list, hub, 0, &loop, &err), 0);
    for (;;) {
        pthread_mutex_lock(&mt.mu);
        int n = mt.live_polls;
        pthread_mutex_unlock(&mt.mu);
        if (n >= 11)
            break;
        usleep(10000);
    }
    wt_loop_stop(loop);
    WT_EQ_INT(mt.opened[0], 1);
    WT_EQ_INT(mt.opened[1], 1);
    /* The dead target hangs 400 ms per poll; had it shared the live one's thread, the live
     * target could not have polled 11 times while the dead one polled at most 3 times. */
    WT_ASSERT(mt.dead_polls >= 1 && mt.dead_polls <= 3);
    /* and it kept its own 50 ms grid, never sooner (from the second poll: the first runs at
     * start, the aligned grid begins at the next multiple of 50 ms): nine steps on from the
     * second poll, less how late that one woke within its step (under 50 ms: a later wake
     * moves to the next grid point), where polling sooner would pack ten polls closer */
    double span_ms = (double)(mt.live_mono[10] - mt.live_mono[1]) / 1e6;
    WT_ASSERT(span_ms > 400);
    struct wt_hub_collector cs[4];
    WT_EQ_INT(wt_hub_collectors(hub, cs, 4), 2);
    WT_EQ_STR(cs[0].name, "pdu:live");
    WT_EQ_STR(cs[1].name, "pdu:dead");
    WT_EQ_INT(cs[0].interval_ns, 50 * WT_NS_PER_MS);
    WT_ASSERT(cs[0].up && !cs[1].up);
    wt_hub_close(hub);
}

WT_TEST(hub_keeps_down_readings_and_retires_slots)
{
    struct wt_hub *hub;
    struct wt_batch b = {0}, snap = {0};
    WT_EQ_INT(wt_hub_open(&hub), 0);
    int a = wt_hub_add_collector(hub, "snmp:a", WT_NS_PER_S);
    int c = wt_hub_add_collector(hub, "snmp:c", WT_NS_PER_S);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_POWER_W, "target=\"a\"", 1, 500), 0);
    wt_hub_publish(hub, a, &b, true, 0.01, 10);
    /* a failed poll publishes only what says the target is down: the power reading goes */
    wt_batch_clear(&b);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_UP, "target=\"a\"", 2, 0), 0);
    wt_hub_publish(hub, a, &b, false, 0.01, 20);
    WT_EQ_INT(wt_hub_snapshot(hub, &snap), 0);
    bool power = false, up0 = false;
    for (size_t i = 0; i < snap.len; i++) {
        power |= snap.r[i].metric == WT_M_FAC_POWER_W;
        up0 |= snap.r[i].metric == WT_M_FAC_UP && snap.r[i].value == 0;
    }
    WT_ASSERT(!power && up0);
    struct wt_hub_collector cs[4];
    WT_EQ_INT(wt_hub_collectors(hub, cs, 4), 2);
    WT_EQ_INT(cs[0].errors, 1);
    /* a retired slot leaves the readings, the self-metrics and the list; the name brings it back */
    wt_hub_retire(hub, a);
    WT_EQ_INT(wt_hub_snapshot(hub, &snap), 0);
    for (size_t i = 0; i < snap.len; i++)
        WT_ASSERT(strstr(snap.r[i].labels, "snmp:a") == NULL && snap.r[i].metric != WT_M_FAC_UP);
    WT_EQ_INT(wt_hub_collectors(hub, cs, 4), 1);
    WT_EQ_STR(cs[0].name, "snmp:c");
    WT_EQ_INT(wt_hub_add_collector(hub, "snmp:a", WT_NS_PER_S), a);
    WT_EQ_INT(wt_hub_collectors(hub, cs, 4), 2);
    (void)c;
    wt_batch_free(&b);
    wt_batch_free(&snap);
    wt_hub_close(hub);
}

/* A sink that holds its first call until released, and counts its calls. */
struct held_sink {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls;
    bool entered, release;
};

static void held_sink_fn(void *ctx, const char *collector, const struct wt_batch *b)
{
    struct held_sink *k = ctx;
    (void)collector;
    (void)b;
    pthread_mutex_lock(&k->mu);
    if (++k->calls == 1) {
        k->entered = true;
        pthread_cond_broadcast(&k->cv);
        while (!k->release)
            pthread_cond_wait(&k->cv, &k->mu);
    }
    pthread_mutex_unlock(&k->mu);
}

static void count_sink_fn(void *ctx, const char *collector, const struct wt_batch *b)
{
    (void)collector;
    (void)b;
    __atomic_add_fetch((int *)ctx, 1, __ATOMIC_SEQ_CST);
}

struct hub_call {
    struct wt_hub *hub;
    int slot;
    const struct wt_batch *b;
    struct held_sink *k;
    int done;
};

static void *publish_once(void *arg)
{
    struct hub_call *c = arg;
    wt_hub_publish(c->hub, c->slot, c->b, true, 0.001, wt_now_mono_ns());
    return NULL;
}

static void *remove_held(void *arg)
{
    struct hub_call *c = arg;
    wt_hub_remove_sink(c->hub, held_sink_fn, c->k);
    __atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/*
 * A sink's owner frees it while other threads still publish (the audit publishers at shutdown):
 * wt_hub_remove_sink returns only once a call in flight has returned, and no call comes after.
 */
WT_TEST(hub_remove_sink_waits_out_a_call_in_flight)
{
    struct wt_hub *hub;
    struct wt_batch b = {0};
    struct held_sink k = {.calls = 0};
    int others = 0;
    pthread_mutex_init(&k.mu, NULL);
    pthread_cond_init(&k.cv, NULL);
    WT_EQ_INT(wt_hub_open(&hub), 0);
    int slot = wt_hub_add_collector(hub, "power_avg", WT_NS_PER_S);
    WT_EQ_INT(wt_hub_add_tick_sink(hub, held_sink_fn, &k), 0);
    WT_EQ_INT(wt_hub_add_sink(hub, count_sink_fn, &others), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, "gpu=\"0\"", 1, 300), 0);
    struct hub_call c = {.hub = hub, .slot = slot, .b = &b, .k = &k};
    pthread_t pub, rem;
    WT_EQ_INT(pthread_create(&pub, NULL, publish_once, &c), 0);
    pthread_mutex_lock(&k.mu);
    while (!k.entered)
        pthread_cond_wait(&k.cv, &k.mu);
    pthread_mutex_unlock(&k.mu);
    /* The publication is inside the sink: the removal must wait for it. */
    WT_EQ_INT(pthread_create(&rem, NULL, remove_held, &c), 0);
    /* Meanwhile other publications go on: the removal waits for the held call only. */
    for (int i = 0; i < 50; i++) {
        wt_hub_publish(hub, slot, &b, true, 0.001, wt_now_mono_ns());
        usleep(1000);
    }
    WT_EQ_INT(__atomic_load_n(&c.done, __ATOMIC_SEQ_CST), 0);
    pthread_mutex_lock(&k.mu);
    k.release = true;
    pthread_cond_broadcast(&k.cv);
    pthread_mutex_unlock(&k.mu);
    pthread_join(rem, NULL);
    pthread_join(pub, NULL);
    WT_EQ_INT(c.done, 1);
    /* The loop's publications may have reached it before the removal began; none after. */
    int seen = k.calls;
    wt_hub_publish(hub, slot, &b, true, 0.001, wt_now_mono_ns());
    wt_hub_publish_extra(hub, slot, &b);
    WT_EQ_INT(k.calls, seen);
    WT_EQ_INT(__atomic_load_n(&others, __ATOMIC_SEQ_CST), 53);
    /* Removing what is not there is no error, nor is a NULL hub. */
    wt_hub_remove_sink(hub, held_sink_fn, &k);
    wt_hub_remove_sink(NULL, held_sink_fn, &k);
    pthread_cond_destroy(&k.cv);
    pthread_mutex_destroy(&k.mu);
    wt_batch_free(&b);
    wt_hub_close(hub);
}

/* wattage status: facility points grouped per target and point, in JSON and in the table. */
WT_TEST(snapshot_shows_facility_points)
{
    struct wt_batch b = {0};
    char lb[WT_LABELS_LEN];
    WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "snmp", "target", "pdu1", NULL), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_UP, lb, 1, 1), 0);
    WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "snmp", "target", "pdu2", NULL), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_UP, lb, 1, 0), 0);
    WT_EQ_INT(wt_labels(lb, sizeof lb, "source", "snmp", "target", "pdu1", "point", "outlet3",
                        "kind", "outlet", "name", "gpu-node-1 psu A", NULL),
              0);
    /* Polled at 18:00:00.123, served later: "t" is the reading's time, not the request's. */
    const int64_t t = 1764439200123000000LL;
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_POWER_W, lb, t, 812.5), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_ENERGY_J, lb, t, 7.2e6), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_VOLTAGE_V, lb, t, 230.1), 0);
    char *js = wt_snapshot_json(&b, NULL, 0, t + 29 * WT_NS_PER_S, 0);
    WT_ASSERT(js != NULL);
    WT_CONTAINS(js, "\"time\":\"2025-11-29T18:00:29.123Z\"");
    WT_CONTAINS(js, "\"facility_targets\":[{\"source\":\"snmp\",\"target\":\"pdu1\",\"up\":true},"
                    "{\"source\":\"snmp\",\"target\":\"pdu2\",\"up\":false}]");
    WT_CONTAINS(js, "{\"source\":\"snmp\",\"target\":\"pdu1\",\"point\":\"outlet3\",\"kind\":"
                    "\"outlet\",\"name\":\"gpu-node-1 psu A\",\"t\":\"2025-11-29T18:00:00.123Z\","
                    "\"power_watts\":812.5,"
                    "\"energy_joules_total\":7200000,\"voltage_volts\":230.1}");
    free(js);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    wt_snapshot_print(f, &b, NULL, 0, 1);
    fclose(f);
    WT_CONTAINS(text, "facility targets: snmp:pdu1 up snmp:pdu2 DOWN\n");
    WT_CONTAINS(text, "pdu1             outlet3                  outlet          812.5        2.000"
                      "        -    230.1      -\n");
    free(text);
    wt_batch_free(&b);
}

/* /api/v1/status: the rolling power means per GPU, for the node and for the site. */
WT_TEST(snapshot_shows_power_averages)
{
    struct wt_batch b = {0};
    const char *g0 = "gpu=\"0\",uuid=\"GPU-a\",model=\"NVIDIA H200\"";
    char lb[WT_LABELS_LEN];
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_W, g0, 1, 301), 0);
    snprintf(lb, sizeof lb, "%s,window=\"1m\"", g0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_AVG_W, lb, 1, 300.5), 0);
    snprintf(lb, sizeof lb, "%s,window=\"5m\"", g0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_GPU_POWER_AVG_W, lb, 1, 290), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_NODE_POWER_AVG_W, "window=\"1m\"", 1, 400), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_SITE_POWER_AVG_W, "window=\"1m\"", 1, 120000), 0);
    WT_EQ_INT(wt_batch_add(&b, WT_M_SITE_POWER_AVG_W, "window=\"15m\"", 1, 118000), 0);
    char *js = wt_snapshot_json(&b, NULL, 0, 1, 0);
    WT_ASSERT(js != NULL);
    WT_CONTAINS(js, "\"power_watts\":301,\"power_average_watts\":{\"1m\":300.5,\"5m\":290}}");
    WT_CONTAINS(js, "\"power_average_watts\":{\"node\":{\"1m\":400},\"site\":{\"1m\":120000,"
                    "\"15m\":118000}}");
    free(js);
    wt_batch_free(&b);
}
