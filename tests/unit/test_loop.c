/* SPDX-License-Identifier: MIT */
/*
 * The aligned schedule (daemon.align_ticks): ticks on wall-clock multiples of the interval,
 * through late ticks, backoff, intervals that are not whole seconds and clock steps; and one
 * live loop whose polls land on the grid.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/hub.h"
#include "core/loop.h"
#include "core/source.h"
#include "runner.h"

#define S WT_NS_PER_S
#define MS WT_NS_PER_MS
/* A wall-clock instant: 2026-12-02T12:00:00Z, a whole second (and a whole minute). */
#define T0 (1796212800LL * S)

WT_TEST(first_aligned_tick_is_a_grid_point_half_a_step_on)
{
    /* started 0.3 s past a second: the first poll runs at once, the grid starts at the next
     * whole second (0.7 s on, more than half a step) */
    WT_EQ_INT(wt_loop_next_aligned(0, S, S, T0 + 300 * MS), T0 + S);
    /* 0.7 s past: the next second is only 0.3 s away, so the one after */
    WT_EQ_INT(wt_loop_next_aligned(0, S, S, T0 + 700 * MS), T0 + 2 * S);
    /* on a grid point exactly, half a step on is the next one */
    WT_EQ_INT(wt_loop_next_aligned(0, S, S, T0), T0 + S);
}

WT_TEST(on_time_ticks_follow_the_grid)
{
    /* the tick due at T0 ran, woke a little late (1 ms) and took 20 ms */
    WT_EQ_INT(wt_loop_next_aligned(T0, S, S, T0 + 21 * MS), T0 + S);
    /* a thousand ticks later there is no drift, whatever each tick's latency */
    int64_t due = T0;
    for (int i = 0; i < 1000; i++)
        due = wt_loop_next_aligned(due, S, S, due + (i % 7) * 13 * MS);
    WT_EQ_INT(due, T0 + 1000 * S);
}

WT_TEST(a_late_tick_skips_missed_points_and_does_not_shift_later_ones)
{
    /* the tick due at T0 took 1.3 s (a slow driver call): T0+1 s is missed, the next is T0+2 s */
    WT_EQ_INT(wt_loop_next_aligned(T0, S, S, T0 + 1300 * MS), T0 + 2 * S);
    /* finishing exactly on a grid point: that point is still due (at or after now) */
    WT_EQ_INT(wt_loop_next_aligned(T0, S, S, T0 + S), T0 + S);
    /* 3.5 s late: three points missed */
    WT_EQ_INT(wt_loop_next_aligned(T0, S, S, T0 + 3500 * MS), T0 + 4 * S);
    /* and after the late one the schedule is the grid again, not "late + interval" */
    int64_t due = wt_loop_next_aligned(T0, S, S, T0 + 1300 * MS);
    WT_EQ_INT(wt_loop_next_aligned(due, S, S, due + 5 * MS), T0 + 3 * S);
}

WT_TEST(backoff_keeps_the_grid)
{
    /* base 0.25 s backed off to 1 s, 2 s...: still multiples of 0.25 s, spaced by the interval */
    const int64_t g = 250 * MS;
    int64_t due = T0 + 750 * MS;
    WT_EQ_INT(wt_loop_next_aligned(due, 4 * g, g, due + 2 * MS), T0 + 1750 * MS);
    WT_EQ_INT(wt_loop_next_aligned(due, 8 * g, g, due + 2 * MS), T0 + 2750 * MS);
    /* the 5-minute cap is no multiple of a 0.7 s base: rounded up to the base's grid */
    const int64_t b = 700 * MS;
    int64_t d2 = 2571428LL * b; /* a grid point of 0.7 s */
    int64_t next = wt_loop_next_aligned(d2, WT_BACKOFF_MAX_NS, b, d2 + MS);
    WT_EQ_INT(next % b, 0);
    WT_ASSERT(next >= d2 + WT_BACKOFF_MAX_NS && next < d2 + WT_BACKOFF_MAX_NS + b);
    /* the first success: back to the base interval, on the same grid */
    WT_EQ_INT(wt_loop_next_aligned(T0 + 1750 * MS, g, g, T0 + 1752 * MS), T0 + 2 * S);
    /* a late tick under backoff: the first grid point after now that is a full interval on */
    WT_EQ_INT(wt_loop_next_aligned(T0, 2 * S, g, T0 + 2100 * MS), T0 + 2250 * MS);
}

WT_TEST(intervals_that_are_not_whole_seconds)
{
    /* 0.25 s: .00 .25 .50 .75 of every second */
    const int64_t q = 250 * MS;
    int64_t due = wt_loop_next_aligned(0, q, q, T0 + 10 * MS);
    WT_EQ_INT(due, T0 + 250 * MS);
    for (int i = 0; i < 40; i++)
        due = wt_loop_next_aligned(due, q, q, due + 3 * MS);
    WT_EQ_INT(due, T0 + 250 * MS + 40 * q);
    WT_EQ_INT((due - T0) % q, 0);
    /* 0.3 s does not divide a second: multiples of 0.3 s since the epoch, the same on every
     * node; T0 is one (1796212800 s = 0.3 s x 5987376000) */
    const int64_t t = 300 * MS;
    WT_EQ_INT(wt_loop_next_aligned(T0, t, t, T0 + 20 * MS), T0 + 300 * MS);
    WT_EQ_INT(wt_loop_next_aligned(0, t, t, T0 + 100 * MS) % t, 0);
    /* 10 ms, the smallest interval allowed */
    WT_EQ_INT(wt_loop_next_aligned(T0 + 10 * MS, 10 * MS, 10 * MS, T0 + 13 * MS), T0 + 20 * MS);
}

WT_TEST(intervals_longer_than_a_second)
{
    /* 10 s: :00 :10 :20 ... whatever second the daemon started in */
    WT_EQ_INT(wt_loop_next_aligned(0, 10 * S, 10 * S, T0 + 3 * S), T0 + 10 * S);
    WT_EQ_INT(wt_loop_next_aligned(0, 10 * S, 10 * S, T0 + 7 * S), T0 + 20 * S);
    WT_EQ_INT(wt_loop_next_aligned(T0 + 10 * S, 10 * S, 10 * S, T0 + 10 * S + 400 * MS),
              T0 + 20 * S);
    /* 1 minute: on the minute */
    WT_EQ_INT(wt_loop_next_aligned(T0, 60 * S, 60 * S, T0 + 61 * S), T0 + 120 * S);
    /* 1.5 s: multiples of 1.5 s (T0 is one: 1796212800 is even) */
    WT_EQ_INT(wt_loop_next_aligned(T0, 1500 * MS, 1500 * MS, T0 + S), T0 + 1500 * MS);
    WT_EQ_INT(wt_loop_next_aligned(T0, 1500 * MS, 1500 * MS, T0 + 1600 * MS), T0 + 3 * S);
}

WT_TEST(a_clock_set_back_restarts_the_schedule_from_now)
{
    /* NTP stepped the clock back an hour after the tick due at T0: no hour-long sleep */
    int64_t now = T0 - 3600 * S + 400 * MS;
    WT_EQ_INT(wt_loop_next_aligned(T0, S, S, now), T0 - 3599 * S);
    /* set forward: the points in between are skipped like missed ones */
    WT_EQ_INT(wt_loop_next_aligned(T0, S, S, T0 + 3600 * S + 1), T0 + 3601 * S);
    /* a small step back (20 ms) keeps the point due */
    WT_EQ_INT(wt_loop_next_aligned(T0, S, S, T0 - 20 * MS), T0 + S);
}

/* ---- a live loop: the stamps its polls get fall on the grid ---- */

static struct {
    pthread_mutex_t mu;
    int polls;
    int64_t t_real[64];
} lv = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct wt_collector_config live_cc = {.enabled = true, .interval_ns = 50 * MS};

static const struct wt_collector_config *live_config(const struct wt_config *cfg)
{
    (void)cfg;
    return &live_cc;
}
static int live_open(const struct wt_config *cfg, void **st, struct wt_err *err)
{
    (void)cfg;
    (void)err;
    *st = &lv;
    return 0;
}
static int live_poll(void *st, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    (void)st;
    (void)err;
    pthread_mutex_lock(&lv.mu);
    if (lv.polls < 64)
        lv.t_real[lv.polls] = t_ns;
    lv.polls++;
    pthread_mutex_unlock(&lv.mu);
    return wt_batch_add(out, WT_M_MEM_USED_RATIO, "", t_ns, 0.5);
}
static void live_close(void *st)
{
    (void)st;
}
static const struct wt_collector_ops live_ops = {"live", live_config, live_open, live_poll,
                                                 live_close};
static const struct wt_collector_ops *const live_list[] = {&live_ops, NULL};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

WT_TEST(live_loop_polls_on_wall_clock_multiples)
{
    struct wt_config cfg;
    struct wt_hub *hub;
    struct wt_loop *loop;
    struct wt_err err;
    wt_config_defaults(&cfg);
    WT_ASSERT(cfg.daemon.align_ticks); /* the default */
    WT_EQ_INT(wt_hub_open(&hub), 0);
    /* started half a step off the grid: an unaligned loop would keep that phase */
    int64_t t = wt_now_real_ns();
    usleep((useconds_t)(((75 * MS - t % (50 * MS)) % (50 * MS)) / 1000));
    int64_t start = wt_now_real_ns();
    WT_EQ_INT(wt_loop_start(&cfg, live_list, hub, 0, &loop, &err), 0);
    for (;;) {
        pthread_mutex_lock(&lv.mu);
        int n = lv.polls;
        pthread_mutex_unlock(&lv.mu);
        if (n >= 21)
            break;
        usleep(10000);
    }
    wt_loop_stop(loop);
    wt_hub_close(hub);
    /* Poll 0 runs at start; polls 1..20 are due on multiples of 50 ms. A poll can only wake late,
     * so its phase past the grid (stamp mod 50 ms) is its lateness L, and its phase past the
     * start, 25 ms or so off the grid, is L + 25 ms: the first is the smaller while L is under
     * 25 ms, on a loaded machine too. An unaligned loop keeps the start's phase: there the phase
     * past the start is the smaller. (Not a bound on L: a median of 10 ms was seen beside two
     * busy loops and other builds.) */
    int64_t grid[20], past_start[20];
    for (int i = 0; i < 20; i++) {
        grid[i] = lv.t_real[i + 1] % (50 * MS);
        past_start[i] = (lv.t_real[i + 1] - start) % (50 * MS);
    }
    qsort(grid, 20, sizeof grid[0], cmp_i64);
    qsort(past_start, 20, sizeof past_start[0], cmp_i64);
    if (!(grid[10] < past_start[10]))
        wt_test_fail(__FILE__, __LINE__,
                     "median phase %.3f ms past the 50 ms grid, %.3f ms past the start %.3f ms "
                     "off the grid",
                     (double)grid[10] / 1e6, (double)past_start[10] / 1e6,
                     (double)(start % (50 * MS)) / 1e6);
    /* and every poll has a grid step of its own: none twice in one step */
    for (int i = 2; i <= 20; i++)
        WT_ASSERT(lv.t_real[i] / (50 * MS) > lv.t_real[i - 1] / (50 * MS));
}

/* ---- file sources at one interval: one thread for all, each with its own retries and backoff */

enum { FS_OK1, FS_OK2, FS_LATE, FS_BAD, FS_ALONE, FS_N };

static struct {
    pthread_mutex_t mu;
    int opens[FS_N], polls[FS_N];
    pthread_t thread[FS_N];
} fs = {.mu = PTHREAD_MUTEX_INITIALIZER};

static struct wt_collector_config fs_cc = {.enabled = true, .interval_ns = 50 * MS};
static struct wt_collector_config fs_alone_cc = {.enabled = true, .interval_ns = 70 * MS};

static const struct wt_collector_config *fs_config(const struct wt_config *cfg)
{
    (void)cfg;
    return &fs_cc;
}
static const struct wt_collector_config *fs_alone_config(const struct wt_config *cfg)
{
    (void)cfg;
    return &fs_alone_cc;
}

/* The source's index is its state (plus one, so that it is not NULL). */
#define FS_OPEN(name, idx, absent_times)                                                           \
    static int name(const struct wt_config *cfg, void **st, struct wt_err *err)                    \
    {                                                                                              \
        (void)cfg;                                                                                 \
        pthread_mutex_lock(&fs.mu);                                                                \
        int n = ++fs.opens[idx];                                                                   \
        pthread_mutex_unlock(&fs.mu);                                                              \
        if (n <= (absent_times))                                                                   \
            return wt_err_set(err, "not yet"), -ENOENT;                                            \
        *st = (void *)(intptr_t)((idx) + 1);                                                       \
        return 0;                                                                                  \
    }
FS_OPEN(fs_open_ok1, FS_OK1, 0)
FS_OPEN(fs_open_ok2, FS_OK2, 0)
FS_OPEN(fs_open_late, FS_LATE, 2)
FS_OPEN(fs_open_bad, FS_BAD, 0)
FS_OPEN(fs_open_alone, FS_ALONE, 0)

static int fs_poll(void *st, int64_t t_ns, struct wt_batch *out, struct wt_err *err)
{
    (void)t_ns;
    (void)out;
    int idx = (int)(intptr_t)st - 1;
    pthread_mutex_lock(&fs.mu);
    fs.polls[idx]++;
    fs.thread[idx] = pthread_self();
    pthread_mutex_unlock(&fs.mu);
    if (idx == FS_BAD)
        return wt_err_set(err, "always failing"), -EIO;
    return 0;
}

static void fs_close(void *st)
{
    (void)st;
}

#define FS_OPS(var, nm, cfgfn, openfn, file)                                                       \
    static const struct wt_collector_ops var = {.name = nm,                                        \
                                                .config = cfgfn,                                   \
                                                .open = openfn,                                    \
                                                .poll = fs_poll,                                   \
                                                .close = fs_close,                                 \
                                                .file_source = file}
FS_OPS(fs_ok1, "fs-ok1", fs_config, fs_open_ok1, true);
FS_OPS(fs_ok2, "fs-ok2", fs_config, fs_open_ok2, true);
FS_OPS(fs_late, "fs-late", fs_config, fs_open_late, true);
FS_OPS(fs_bad, "fs-bad", fs_config, fs_open_bad, true);
/* a file source alone at its interval: a thread of its own */
FS_OPS(fs_alone, "fs-alone", fs_alone_config, fs_open_alone, true);
static const struct wt_collector_ops *const fs_list[] = {&fs_ok1, &fs_ok2,   &fs_late,
                                                         &fs_bad, &fs_alone, NULL};

/*
 * The threads of this process named name (/proc/self/task/N/comm): how many in *count, and the
 * voluntary context switches of the first (its sleeps), -1 when there is none.
 */
static long threads_named(const char *name, int *count)
{
    char path[300], line[128];
    long sleeps = -1;
    *count = 0;
    DIR *d = opendir("/proc/self/task");
    WT_ASSERT(d != NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        bool match = f && fgets(line, sizeof line, f) && strncmp(line, name, strlen(name)) == 0 &&
                     line[strlen(name)] == '\n';
        if (f)
            fclose(f);
        *count += match;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        f = match && sleeps < 0 ? fopen(path, "r") : NULL;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "voluntary_ctxt_switches: %ld", &sleeps) == 1)
                break;
        if (f)
            fclose(f);
    }
    closedir(d);
    return sleeps;
}

static struct wt_config fs_cfg; /* outlives the loops of the tests below */

/* A loop over list with the default configuration, absent sources looked for after retry_ns. */
static struct wt_loop *fs_start(const struct wt_collector_ops *const *list, int64_t retry_ns,
                                struct wt_hub **hub)
{
    struct wt_loop *loop = NULL;
    struct wt_err err;
    wt_config_defaults(&fs_cfg);
    WT_EQ_INT(wt_hub_open(hub), 0);
    WT_EQ_INT(wt_loop_start(&fs_cfg, list, *hub, retry_ns, &loop, &err), 0);
    return loop;
}

WT_TEST(file_sources_at_one_interval_share_a_thread_with_their_own_retries_and_backoff)
{
    struct wt_hub *hub;
    /* absent sources are looked for again every 20 ms (doubling) */
    struct wt_loop *loop = fs_start(fs_list, 20 * MS, &hub);
    int slots[8];
    WT_EQ_INT((int)wt_loop_slots(loop, slots, 8), 5); /* every source keeps its slot */
    int ok1 = 0, late = 0;
    for (int i = 0; i < 2000 && (ok1 < 40 || late < 5); i++) {
        usleep(10000);
        pthread_mutex_lock(&fs.mu);
        ok1 = fs.polls[FS_OK1];
        late = fs.polls[FS_LATE];
        pthread_mutex_unlock(&fs.mu);
    }
    int named = 0;
    threads_named("wt-files", &named);
    wt_loop_stop(loop);
    wt_hub_close(hub);
    WT_ASSERT(fs.polls[FS_OK1] >= 40);
    /* one thread polls the four at 50 ms; the one at 70 ms has its own */
    WT_EQ_INT(named, 1);
    WT_ASSERT(pthread_equal(fs.thread[FS_OK1], fs.thread[FS_OK2]));
    WT_ASSERT(pthread_equal(fs.thread[FS_OK1], fs.thread[FS_LATE]));
    WT_ASSERT(pthread_equal(fs.thread[FS_OK1], fs.thread[FS_BAD]));
    WT_ASSERT(fs.polls[FS_ALONE] > 0);
    WT_ASSERT(!pthread_equal(fs.thread[FS_OK1], fs.thread[FS_ALONE]));
    /* the one absent at first was opened again until it came, and is polled since */
    WT_EQ_INT(fs.opens[FS_LATE], 3);
    WT_ASSERT(fs.polls[FS_LATE] >= 5);
    /* each polled at every tick of the group, within the ticks between the two reads */
    WT_ASSERT(abs(fs.polls[FS_OK2] - fs.polls[FS_OK1]) <= 1);
    /* the failing one backed off on its own: after 3 failures 2, 4, 8... ticks apart */
    WT_ASSERT(fs.polls[FS_BAD] >= 3);
    WT_ASSERT(fs.polls[FS_BAD] * 3 <= fs.polls[FS_OK1]);
    WT_EQ_INT(fs.opens[FS_OK1], 1);
}

/* ---- a group whose sources are all absent sleeps until the next look, not every tick ---- */

static int gone_opens;

static int gone_open(const struct wt_config *cfg, void **st, struct wt_err *err)
{
    (void)cfg;
    (void)st;
    __atomic_fetch_add(&gone_opens, 1, __ATOMIC_RELAXED);
    return wt_err_set(err, "not here"), -ENOENT;
}

static struct wt_collector_config gone_cc = {.enabled = true, .interval_ns = 10 * MS};
static const struct wt_collector_config *gone_config(const struct wt_config *cfg)
{
    (void)cfg;
    return &gone_cc;
}
FS_OPS(gone1, "gone1", gone_config, gone_open, true);
FS_OPS(gone2, "gone2", gone_config, gone_open, true);
static const struct wt_collector_ops *const gone_list[] = {&gone1, &gone2, NULL};

WT_TEST(a_group_of_absent_sources_sleeps_until_the_next_look)
{
    struct wt_hub *hub;
    /* ticks every 10 ms; the absent sources looked for again after 100, 200, 400 ms... */
    struct wt_loop *loop = fs_start(gone_list, 100 * MS, &hub);
    usleep(1000000);
    int named = 0;
    long sleeps = threads_named("wt-files", &named);
    int opens = __atomic_load_n(&gone_opens, __ATOMIC_RELAXED);
    wt_loop_stop(loop);
    wt_hub_close(hub);
    /* both looked for at 0, 0.1, 0.3, 0.7 s: 8 opens in the second, not one a tick */
    WT_ASSERT(opens >= 4 && opens <= 10);
    /* and the thread slept about as often: a tick's wake-ups would be about 100 */
    WT_EQ_INT(named, 1);
    WT_ASSERT(sleeps >= 1 && sleeps <= 30);
}
