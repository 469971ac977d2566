/* SPDX-License-Identifier: MIT */
/*
 * `wattage import meters FILE`: interval meter data as building-management and energy systems
 * export it, loaded into the store as facility series, so that a statement over a past year does
 * not wait for the daemon to have measured it.
 *
 * The file is CSV with a header naming its columns (any order, names case-insensitive):
 *   time      RFC 3339 ("2026-01-01T00:15:00Z", offsets accepted) or unix seconds
 *   meter     the meter's name: the series' target label (topology.meters[].target)
 *   register  a cumulative register reading, or
 *   energy    the energy of the interval that ends at time (--time-is start: that starts at it)
 *   unit      Wh, kWh, MWh, J, kJ, MJ, GJ (electricity); the same with "_th" (kWh_th: heat
 *             delivered, a heat meter); m3 or L (water); m3_fuel or L_fuel (a fuel by volume),
 *             kg_fuel (by mass)
 * A line holds register or energy (register wins when it holds both). Each meter is a register
 * meter or an interval meter, and electricity, heat or water, as its first good line says.
 *
 * Each meter becomes one counter series from 0 at its first reading, in SI units:
 * wattage_facility_energy_joules_total, wattage_facility_heat_joules_total or
 * wattage_facility_water_cubic_meters_total (fuels: wattage_facility_fuel_cubic_meters_total or
 * wattage_facility_fuel_kilograms_total), labels {point="import", source="import",
 * target="METER"}, node "meter:METER". A topology meter selects it with
 * {target: METER, point: import, role: ...}.
 *
 * Registers: the energy between two readings is their difference. A reading below the one
 * before is a rollover when the register wraps there (the modulus given, or else the power of
 * ten above the previous reading when that reading is in its top tenth and the new one in its
 * bottom tenth): difference modulo the modulus. Otherwise it is a reset: the new reading is
 * counted as the energy since the reset (exact when the reset came right after the previous
 * reading, an underestimate otherwise), and reported. A gap between readings (no line for a
 * while) loses nothing: the difference spans it.
 * Interval energy: each interval's energy is added at its end, from a reading at its start; a
 * gap between intervals is recorded as a gap (a run start in it: store/segment.h), counting 0.
 * Malformed lines are reported as FILE:LINE: why, and skipped; a file with no good line is an
 * error and nothing is stored.
 */
#ifndef WT_METER_IMPORT_H
#define WT_METER_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"

struct wt_store;

struct wt_meter_import_opts {
    int64_t interval_ns; /* interval energy: the intervals' length; 0: 15 min */
    bool time_is_start;  /* interval energy: time stamps the interval's start, not its end */
    double modulus;      /* registers wrap at this (file units); 0: detected (see above) */
};

struct wt_meter_import_stats {
    size_t rows;     /* data lines stored */
    size_t readings; /* readings written */
    size_t meters;
    size_t skipped;   /* malformed lines */
    size_t rollovers; /* register rollovers unwrapped */
    size_t resets;    /* register resets (counted from 0) */
    size_t gaps;      /* holes longer than 1.5 intervals (register) or 1 interval (energy) */
};

/* What a register's step from prev to cur is. */
enum wt_register_step { WT_REG_UP, WT_REG_ROLLOVER, WT_REG_RESET };

/*
 * The increase of a register read prev then cur (file units), with the modulus (0: detect, as
 * above). Pure, for tests.
 */
enum wt_register_step wt_register_delta(double prev, double cur, double modulus, double *delta);

/*
 * Parses a unit: *scale converts to J (electricity and heat), m3 (water, fuel by volume) or kg
 * (fuel by mass); *kind is 'e', 'h', 'w', 'f' (fuel, m3) or 'k' (fuel, kg). Returns 0 or -EINVAL.
 */
int wt_meter_unit(const char *unit, double *scale, char *kind) WT_MUST_USE;

/*
 * Reads the CSV from f (name in messages) and stores it. Each malformed line and each register
 * reset is reported on report (may be NULL) as "name:LINE: why". Returns 0, -EINVAL with err
 * for a file that stores nothing (no header, a header without the columns, every line
 * malformed: err names the first, "name:LINE: why"), -ENOMEM or -EIO. On -EINVAL nothing has
 * been written.
 */
int wt_meter_import(struct wt_store *st, FILE *f, const char *name,
                    const struct wt_meter_import_opts *o, FILE *report,
                    struct wt_meter_import_stats *stats, struct wt_err *err) WT_MUST_USE;

#endif
