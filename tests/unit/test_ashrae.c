/* SPDX-License-Identifier: MIT */
/* ASHRAE envelopes, inlet sensors, time outside, and the tracker the daemon runs. */
#include <errno.h>
#include <string.h>

#include "audit/ashrae.h"
#include "readings.h"
#include "runner.h"

#define S 1000000000LL

WT_TEST(envelopes_of_each_class)
{
    struct wt_ashrae_envelope e = wt_ashrae_envelope(WT_ASHRAE_A1);
    WT_NEAR(e.rec_lo_c, 18, 0);
    WT_NEAR(e.rec_hi_c, 27, 0);
    WT_NEAR(e.allow_lo_c, 15, 0);
    WT_NEAR(e.allow_hi_c, 32, 0);
    e = wt_ashrae_envelope(WT_ASHRAE_A2);
    WT_NEAR(e.allow_lo_c, 10, 0);
    WT_NEAR(e.allow_hi_c, 35, 0);
    e = wt_ashrae_envelope(WT_ASHRAE_A3);
    WT_NEAR(e.allow_lo_c, 5, 0);
    WT_NEAR(e.allow_hi_c, 40, 0);
    e = wt_ashrae_envelope(WT_ASHRAE_A4);
    WT_NEAR(e.rec_lo_c, 18, 0);
    WT_NEAR(e.allow_hi_c, 45, 0);
    enum wt_ashrae_class c;
    WT_EQ_INT(wt_ashrae_class_parse("a3", &c), 0);
    WT_EQ_INT(c, WT_ASHRAE_A3);
    WT_EQ_INT(wt_ashrae_class_parse("A5", &c), -EINVAL);
    WT_EQ_STR(wt_ashrae_class_name(WT_ASHRAE_A4), "A4");
}

WT_TEST(which_series_are_inlets)
{
    WT_ASSERT(wt_ashrae_is_inlet("source=\"snmp\",point=\"t1\",kind=\"inlet\""));
    WT_ASSERT(wt_ashrae_is_inlet("point=\"1/Inlet_Temp\",kind=\"chassis\""));
    WT_ASSERT(wt_ashrae_is_inlet("point=\"intake\""));
    WT_ASSERT(!wt_ashrae_is_inlet("point=\"1/Exhaust_Temp\""));
    WT_ASSERT(!wt_ashrae_is_inlet("point=\"inletx\",kind=\"exhaust\""));
    WT_ASSERT(!wt_ashrae_is_inlet("point=\"CPU1\""));
}

WT_TEST(time_outside_is_a_step_and_never_across_a_gap)
{
    const int64_t t[] = {0, 10 * S, 20 * S, 30 * S, 400 * S, 410 * S};
    const double v[] = {26, 28, 28, 30, 20, 20};
    /* 28 from 10 s to 30 s outside 18..27; 30 at 30..400 s spans a gap of 370 s */
    WT_NEAR(wt_ashrae_outside_s(t, v, 6, 18, 27, 60 * S), 20, 1e-9);
    WT_NEAR(wt_ashrae_outside_s(t, v, 6, 18, 27, 1000 * S), 390, 1e-9);
    WT_NEAR(wt_ashrae_outside_s(t + 3, v + 3, 3, 18, 27, 1000 * S), 370, 1e-9);
    WT_NEAR(wt_ashrae_outside_s(t, v, 6, 15, 32, 60 * S), 0, 0);
    WT_NEAR(wt_ashrae_outside_s(t, v, 1, 18, 27, 60 * S), 0, 0);
}

WT_TEST(the_tracker_counts_per_sensor_and_envelope)
{
    struct wt_config cfg;
    struct wt_err err;
    struct wt_ashrae *a = NULL;
    wt_config_defaults(&cfg);
    WT_EQ_INT(wt_ashrae_open(&cfg, WT_ASHRAE_A1, NULL, &a, &err), 0);
    struct wt_batch b = {0}, out = {0};
    const char *hot = "source=\"redfish\",target=\"b3\",point=\"1/Inlet_Temp\",kind=\"chassis\"";
    const char *ok = "source=\"redfish\",target=\"b1\",point=\"1/Inlet_Temp\",kind=\"chassis\"";
    const char *ex = "source=\"redfish\",target=\"b3\",point=\"1/Exhaust_Temp\",kind=\"chassis\"";
    for (int i = 0; i <= 5; i++) {
        wt_batch_clear(&b);
        /* the hot inlet: 30 C (outside 18..27, inside 15..32) for 3 polls, then 34 C */
        WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_TEMP_C, hot, i * 10 * S, i < 3 ? 30 : 34), 0);
        WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_TEMP_C, ok, i * 10 * S, 22), 0);
        WT_EQ_INT(wt_batch_add(&b, WT_M_FAC_TEMP_C, ex, i * 10 * S, 60), 0);
        wt_ashrae_feed(a, "redfish:b", &b);
    }
    WT_EQ_INT(wt_ashrae_batch(a, 55 * S, &out), 0);
    char l[WT_LABELS_LEN];
    snprintf(l, sizeof l, "%s,envelope=\"recommended\"", hot);
    WT_NEAR(reading_value(&out, WT_M_INLET_OUTSIDE_S, l), 50, 1e-9);
    WT_NEAR(reading_value(&out, WT_M_INLET_COMPLIANT, l), 0, 0);
    snprintf(l, sizeof l, "%s,envelope=\"allowable\"", hot);
    /* 34 C from 30 s on: 30..40 and 40..50 */
    WT_NEAR(reading_value(&out, WT_M_INLET_OUTSIDE_S, l), 20, 1e-9);
    WT_NEAR(reading_value(&out, WT_M_INLET_COMPLIANT, l), 0, 0);
    snprintf(l, sizeof l, "%s,envelope=\"recommended\"", ok);
    WT_NEAR(reading_value(&out, WT_M_INLET_OUTSIDE_S, l), 0, 0);
    WT_NEAR(reading_value(&out, WT_M_INLET_COMPLIANT, l), 1, 0);
    WT_EQ_INT(count_readings(&out, WT_M_INLET_OUTSIDE_S), 4); /* no exhaust */
    wt_batch_free(&b);
    wt_batch_free(&out);
    wt_ashrae_close(a);
}
