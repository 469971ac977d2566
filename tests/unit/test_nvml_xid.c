/* SPDX-License-Identifier: MIT */
/*
 * The NVML collector's XID event thread against the fake libnvidia-ml: it blocks in
 * nvmlEventSetWait (one long wait, not a wake-up every 200 ms), a close ends the wait at once
 * with a signal and frees the set before the session ends; and with a library whose wait does
 * not return on a signal, close still returns at once and the thread, let go, frees its set and
 * ends its own NVML session when its wait times out, while another collector opened meanwhile
 * shares that session.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "collect/nvml.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "readings.h"
#include "runner.h"

static char fake_path[PATH_MAX];

__attribute__((constructor)) static void resolve_fake(void)
{
    if (!realpath(wt_test_build_path("tests/fakes/libnvidia-ml.so.1"), fake_path))
        fake_path[0] = '\0';
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static double mono_s(void)
{
    return (double)wt_now_mono_ns() / WT_NS_PER_S;
}

static void *open_ok(void)
{
    static struct wt_config cfg;
    struct wt_err err = {{0}};
    void *st = NULL;
    if (!fake_path[0])
        wt_test_fail(__FILE__, __LINE__, "the fake NVML is not built: run make first");
    wt_config_defaults(&cfg);
    cfg.collectors.nvml.interval_ns = 100 * WT_NS_PER_MS;
    cfg.collectors.nvml_attribution = false;
    setenv("WATTAGE_NVML_LIBRARY", fake_path, 1);
    int rc = wt_nvml_collector.open(&cfg, &st, &err);
    if (rc != 0)
        wt_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err.msg);
    return st;
}

static int count_lines(const char *path, const char *line)
{
    char buf[256];
    int n = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        n += strcmp(buf, line) == 0;
    }
    if (f)
        fclose(f);
    return n;
}

static const char *call_log(void)
{
    static char log[PATH_MAX];
    snprintf(log, sizeof log, "%s/calls.log", wt_test_dir());
    setenv("FAKE_NVML_CALL_LOG", log, 1);
    return log;
}

static int log_begin(void)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/stderr", wt_test_dir());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    WT_ASSERT(fd >= 0);
    int saved = dup(2);
    dup2(fd, 2);
    close(fd);
    return saved;
}

static void log_end(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

static int logged(const char *a)
{
    char path[PATH_MAX], line[1024];
    int n = 0;
    snprintf(path, sizeof path, "%s/stderr", wt_test_dir());
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, a) != NULL;
    if (f)
        fclose(f);
    return n;
}

WT_TEST(the_event_thread_blocks_in_one_wait_and_a_close_ends_it_at_once)
{
    const char *log = call_log();
    setenv("FAKE_NVML_GPUS", "2", 1);
    void *st = open_ok();
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    WT_EQ_INT(wt_nvml_collector.poll(st, wt_now_real_ns(), &b, &err), 0);
    sleep_s(1.5);
    double t = mono_s();
    wt_nvml_collector.close(st);
    double took = mono_s() - t;
    printf("# close took %.3f s; %d waits in 1.5 s\n", took,
           count_lines(log, "nvmlEventSetWait_v2"));
    /* With 200-ms waits this was 8; the wait is 10 s, so one (two if a test machine stalls). */
    WT_ASSERT(count_lines(log, "nvmlEventSetWait_v2") <= 2);
    WT_ASSERT(count_lines(log, "nvmlEventSetWait_v2") >= 1);
    /* The signal ended the wait: close did not wait out the 10 s (nor its 0.3-s grace). */
    WT_ASSERT(took < 3.0);
    /* The set was freed, then the session ended, both by the close. */
    WT_EQ_INT(count_lines(log, "nvmlEventSetFree"), 1);
    WT_EQ_INT(count_lines(log, "nvmlShutdown"), 1);
    wt_batch_free(&b);
}

WT_TEST(a_wait_that_ignores_signals_is_let_go_and_ends_its_own_session_later)
{
    int saved = log_begin();
    const char *log = call_log();
    setenv("FAKE_NVML_GPUS", "2", 1);
    setenv("FAKE_NVML_WAIT_SIGNAL", "ignore", 1);
    setenv("FAKE_NVML_XID", "1:0.2:79", 1);
    double opened = mono_s();
    void *st = open_ok();
    struct wt_batch b = {0};
    struct wt_err err = {{0}};
    sleep_s(0.5);
    WT_EQ_INT(wt_nvml_collector.poll(st, wt_now_real_ns(), &b, &err), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_XID_ERRORS), 1); /* events still come through */
    double t = mono_s();
    wt_nvml_collector.close(st);
    double took = mono_s() - t;
    printf("# close took %.3f s with a wait that ignores signals\n", took);
    WT_ASSERT(took < 3.0);
    /* The thread still waits: its set and its session are alive. */
    WT_EQ_INT(count_lines(log, "nvmlEventSetFree"), 0);
    WT_EQ_INT(count_lines(log, "nvmlShutdown"), 0);
    /* A collector opened meanwhile shares that session (no second nvmlInit) and works. */
    st = open_ok();
    wt_batch_clear(&b);
    WT_EQ_INT(wt_nvml_collector.poll(st, wt_now_real_ns(), &b, &err), 0);
    WT_EQ_INT(count_readings(&b, WT_M_GPU_POWER_W), 2);
    sleep_s(0.3); /* its thread is in its wait by now */
    wt_nvml_collector.close(st);
    WT_EQ_INT(count_lines(log, "nvmlInit_v2"), 1);
    /* Its thread was let go too. Each wait ends 10 s after its thread started; each thread
     * frees its set, and the last one ends the one session: one nvmlShutdown for all. */
    while (count_lines(log, "nvmlShutdown") == 0 && mono_s() - opened < 20)
        sleep_s(0.1);
    double ended = mono_s() - opened;
    log_end(saved);
    printf("# the let-go thread ended %.1f s after open\n", ended);
    WT_ASSERT(ended >= 10.5 && ended < 20); /* after the second thread's wait */
    WT_EQ_INT(count_lines(log, "nvmlShutdown"), 1);
    WT_EQ_INT(count_lines(log, "nvmlEventSetFree"), 2);
    WT_EQ_INT(logged("the XID event thread is still in nvmlEventSetWait"), 2);
    wt_batch_free(&b);
}
