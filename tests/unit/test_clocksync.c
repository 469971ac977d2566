/* SPDX-License-Identifier: MIT */
/* The kernel's clock state through its seam and its test file, and the series it becomes. */
#include <errno.h>
#include <string.h>
#include <sys/timex.h>

#include "collect/clocksync.h"
#include "core/clock.h"
#include "core/health.h"
#include "readings.h"
#include "runner.h"

static int kernel_nano(struct timex *tx)
{
    tx->status = STA_PLL | STA_NANO;
    tx->offset = -2500000; /* ns with STA_NANO: -2.5 ms */
    tx->maxerror = 250000; /* always us */
    tx->esterror = 1500;
    return TIME_OK;
}

static int kernel_micro_unsynced(struct timex *tx)
{
    tx->status = STA_UNSYNC;
    tx->offset = 700; /* us */
    tx->maxerror = 16000000;
    tx->esterror = 16000000;
    return TIME_ERROR;
}

static int kernel_leap_pending(struct timex *tx)
{
    tx->status = STA_PLL | STA_INS;
    return TIME_INS; /* synchronised, a leap second announced */
}

static int kernel_silent(struct timex *tx)
{
    (void)tx;
    return -1;
}

WT_TEST(the_seam_gives_units_and_the_synchronised_flag)
{
    struct wt_clock_sync cs;
    wt_clock_set_adjtimex(kernel_nano);
    wt_clock_sync_read(&cs);
    WT_ASSERT(cs.known && cs.synchronized);
    WT_NEAR(cs.offset_s, -0.0025, 1e-12);
    WT_NEAR(cs.max_error_s, 0.25, 1e-12);
    WT_NEAR(cs.est_error_s, 0.0015, 1e-12);
    wt_clock_set_adjtimex(kernel_micro_unsynced);
    wt_clock_sync_read(&cs);
    WT_ASSERT(cs.known && !cs.synchronized);
    WT_NEAR(cs.offset_s, 0.0007, 1e-12);
    WT_NEAR(cs.max_error_s, 16, 1e-9);
    WT_EQ_INT(cs.state, TIME_ERROR);
    wt_clock_set_adjtimex(kernel_leap_pending);
    wt_clock_sync_read(&cs);
    WT_ASSERT(cs.synchronized);
    WT_EQ_INT(cs.state, TIME_INS);
    wt_clock_set_adjtimex(kernel_silent);
    wt_clock_sync_read(&cs);
    WT_ASSERT(!cs.known);
    /* health reads the same seam: unknown claims nothing, unsynchronised is a reason */
    char why[200];
    WT_ASSERT(wt_health_clock_synced(why, sizeof why));
    wt_health_set_adjtimex(kernel_micro_unsynced);
    WT_ASSERT(!wt_health_clock_synced(why, sizeof why));
    WT_CONTAINS(why, "STA_UNSYNC");
    wt_clock_set_adjtimex(NULL);
}

WT_TEST(the_test_file_is_parsed_and_bad_lines_named)
{
    struct wt_clock_sync cs;
    char msg[160];
    WT_EQ_INT(wt_clock_sync_parse("# a comment\nstatus 0x40\n\nmaxerror_us 16000000\n"
                                  "esterror_us 12\noffset_us -5\n",
                                  &cs, msg, sizeof msg),
              0);
    WT_ASSERT(cs.known && !cs.synchronized);
    WT_EQ_INT(cs.state, TIME_ERROR);
    WT_NEAR(cs.max_error_s, 16, 1e-9);
    WT_NEAR(cs.est_error_s, 12e-6, 1e-15);
    WT_NEAR(cs.offset_s, -5e-6, 1e-15);
    WT_EQ_INT(wt_clock_sync_parse("status 1\nstate 5\n", &cs, msg, sizeof msg), 0);
    WT_ASSERT(!cs.synchronized); /* TIME_ERROR without STA_UNSYNC is unsynchronised too */
    WT_EQ_INT(wt_clock_sync_parse("status 1\nmaxerror_us ten\n", &cs, msg, sizeof msg), -EINVAL);
    WT_CONTAINS(msg, "line 2");
    WT_EQ_INT(wt_clock_sync_parse("status 1 2\n", &cs, msg, sizeof msg), -EINVAL);
    WT_CONTAINS(msg, "line 1");
    WT_EQ_INT(wt_clock_sync_parse("maxerror_us -3\n", &cs, msg, sizeof msg), -EINVAL);
}

WT_TEST(the_state_becomes_series_and_unknown_becomes_none)
{
    struct wt_batch b = {0};
    struct wt_clock_sync cs = {.known = true,
                               .synchronized = false,
                               .status = STA_UNSYNC,
                               .offset_s = 0.001,
                               .est_error_s = 0.5,
                               .max_error_s = 3};
    WT_EQ_INT(wt_clocksync_append(&cs, 42, &b), 0);
    WT_NEAR(reading_value(&b, WT_M_CLOCK_SYNCED, ""), 0, 0);
    WT_NEAR(reading_value(&b, WT_M_CLOCK_MAX_ERROR_S, ""), 3, 0);
    WT_NEAR(reading_value(&b, WT_M_CLOCK_EST_ERROR_S, ""), 0.5, 0);
    WT_NEAR(reading_value(&b, WT_M_CLOCK_OFFSET_S, ""), 0.001, 0);
    WT_NEAR(reading_value(&b, WT_M_CLOCK_STATUS, ""), STA_UNSYNC, 0);
    WT_EQ_INT(b.r[0].t_ns, 42);
    b.len = 0;
    cs.known = false;
    WT_EQ_INT(wt_clocksync_append(&cs, 42, &b), 0);
    WT_EQ_INT(b.len, 0); /* never a 0 that would claim an unsynchronised clock */
    wt_batch_free(&b);
}
