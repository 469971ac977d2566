/* SPDX-License-Identifier: MIT */
/* Meter import: a register's steps (up, rollover at a given or detected modulus, reset) and the
 * units; the whole import through a real store in tests/cli/test_import_meters.sh. */
#include <errno.h>

#include "audit/meter_import.h"
#include "runner.h"

WT_TEST(register_up_rollover_and_reset)
{
    double d = -1;
    WT_EQ_INT(wt_register_delta(100.0, 112.5, 0, &d), WT_REG_UP);
    WT_NEAR(d, 12.5, 1e-9);
    /* six digits, in the top tenth, then the bottom tenth: wraps at 1000000 */
    WT_EQ_INT(wt_register_delta(999990.0, 15.0, 0, &d), WT_REG_ROLLOVER);
    WT_NEAR(d, 25.0, 1e-9);
    /* below the top tenth: a reset, counted from 0 */
    WT_EQ_INT(wt_register_delta(838475.0, 56.2, 0, &d), WT_REG_RESET);
    WT_NEAR(d, 56.2, 1e-9);
    /* in the top tenth but the new reading not near 0: a reset */
    WT_EQ_INT(wt_register_delta(95000.0, 50000.0, 0, &d), WT_REG_RESET);
    WT_NEAR(d, 50000.0, 1e-9);
    /* a given modulus wins over the detection */
    WT_EQ_INT(wt_register_delta(60000.0, 10.0, 65536.0, &d), WT_REG_ROLLOVER);
    WT_NEAR(d, 5546.0, 1e-9);
    /* a modulus below the previous reading cannot be the wrap: a reset */
    WT_EQ_INT(wt_register_delta(70000.0, 10.0, 65536.0, &d), WT_REG_RESET);
    WT_NEAR(d, 10.0, 1e-9);
    WT_EQ_INT(wt_register_delta(0.0, 0.0, 0, &d), WT_REG_UP);
    WT_NEAR(d, 0.0, 0);
}

WT_TEST(units_scale_to_si_and_tell_the_kind)
{
    double s = 0;
    char k = 0;
    WT_EQ_INT(wt_meter_unit("kWh", &s, &k), 0);
    WT_NEAR(s, 3.6e6, 0);
    WT_EQ_INT(k, 'e');
    WT_EQ_INT(wt_meter_unit("MWh_th", &s, &k), 0);
    WT_NEAR(s, 3.6e9, 0);
    WT_EQ_INT(k, 'h');
    WT_EQ_INT(wt_meter_unit("L", &s, &k), 0);
    WT_NEAR(s, 1e-3, 0);
    WT_EQ_INT(k, 'w');
    /* fuels: by volume into m3, by mass into kg, never mixed with water */
    static const struct {
        const char *unit;
        double scale;
        char kind;
    } fuels[] = {{"L_fuel", 1e-3, 'f'}, {"m3_fuel", 1, 'f'}, {"kg_fuel", 1, 'k'}};
    for (size_t i = 0; i < sizeof fuels / sizeof fuels[0]; i++) {
        WT_EQ_INT(wt_meter_unit(fuels[i].unit, &s, &k), 0);
        WT_NEAR(s, fuels[i].scale, 0);
        WT_EQ_INT(k, fuels[i].kind);
    }
    WT_EQ_INT(wt_meter_unit("kwh", &s, &k), -EINVAL);
    WT_EQ_INT(wt_meter_unit("", &s, &k), -EINVAL);
}
