#!/usr/bin/env python3
"""A year of 15-minute meter data for a small site, as a building-management system exports it,
with the generator's own sums: tests/cli/test_import_meters.sh checks wattage's figures against
them to the kWh.

Usage: meter_year.py [--outlets OUTLETS_OUT] [--diesel DIESEL_OUT] YEAR CSV_OUT SUMS_OUT
                    [CARBON_OUT [SUPPLY_OUT]]

DIESEL_OUT: a standby diesel generator, tested for an hour every Monday at 10:00 (drawn from
its own random sequence): meter "diesel" a fuel register in whole litres (unit L_fuel, read
every 15 minutes), meter "genset" its electrical output, a kWh
register with one decimal. In the sums "diesel_l" (litres over the year) and "genset_kwh".

OUTLETS_OUT: four PDU outlet registers of a colocation room (meters pdu-a-1 .. pdu-a-4, kWh
with one decimal, 15 minutes, drawn from their own random sequence so the other meters do not
change), pdu-a-4 without lines on 1 June (its register keeps counting), and in the sums
"outlets_kwh" {meter: kWh over the year} and "outlet_hole_intervals" (pdu-a-4's unmeasured
15-minute intervals).

CARBON_OUT: an hourly grid-intensity series for the year (`wattage import carbon`: timestamp,
gco2_per_kwh, whole g/kWh), and in the sums "cue_location_g": sum over the hours of the grid
meter's energy times that hour's intensity, the register's hole spread linearly over its 193
intervals as wattage spreads a register difference.
The sums' "part_load_400kw": the part-load bins (0-25, 25-50, 50-75, 75-100 % of a 400 kW
P_DIT) of the intervals both grid and ups measure (the grid hole's 193 left out): per bin the
intervals and the grid's and ups' kWh.
SUPPLY_OUT: an hourly carbon-free supply series (`--series renewable`: whole kWh per hour, 0 at
night, above the site's load around noon), and "cfe_matched_kwh": sum over the hours of
min(the grid meter's energy, the supply) (the hole spread as above).

Meters (CSV columns time,meter,register,energy,unit; times RFC 3339 UTC):
  grid     facility register, kWh with one decimal; it starts at 940000.0 and rolls over at
           1000000 (six digits) in January; no line for two days in March (the register keeps
           counting: the difference across the hole is exact)
  ups      UPS output register, kWh with one decimal; reset to 0 on 15 June right after the
           12:00 reading (so the next reading is exactly the energy since the reset)
  cooling  interval energy, Wh, stamped at the interval's end
  water    register, m3 with three decimals (whole litres)
  heat     heat delivered for reuse, interval energy, kWh_th with one decimal
Energies are drawn in whole units of the register's resolution, so the sums are exact.
"""
import datetime as dt
import json
import random
import sys

outlets_out = None
if "--outlets" in sys.argv:
    i = sys.argv.index("--outlets")
    outlets_out = sys.argv[i + 1]
    del sys.argv[i:i + 2]
diesel_out = None
if "--diesel" in sys.argv:
    i = sys.argv.index("--diesel")
    diesel_out = sys.argv[i + 1]
    del sys.argv[i:i + 2]
year = int(sys.argv[1])
rng = random.Random(47)
t0 = dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc)
t1 = dt.datetime(year + 1, 1, 1, tzinfo=dt.timezone.utc)
step = dt.timedelta(minutes=15)
n = int((t1 - t0) / step)
gap = (dt.datetime(year, 3, 10, tzinfo=dt.timezone.utc), dt.datetime(year, 3, 12, tzinfo=dt.timezone.utc))
reset_at = dt.datetime(year, 6, 15, 12, tzinfo=dt.timezone.utc)


def ts(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


sums = {"facility_kwh": 0.0, "it_kwh": 0.0, "cooling_kwh": 0.0, "water_m3": 0.0, "heat_kwh": 0.0}
grid_d = 9400000  # register in 0.1 kWh
ups_d = 123456
water_l = 5000000
it_d_tot = grid_tot = cool_tot = water_tot = heat_tot = 0
rows = []
rows.append((t0, "grid", f"{grid_d / 10:.1f}", "", "kWh"))
rows.append((t0, "ups", f"{ups_d / 10:.1f}", "", "kWh"))
rows.append((t0, "water", f"{water_l / 1000:.3f}", "", "m3"))
grid_missing = 0
grid_hole = 0
grid_e = []  # per interval, 0.1 kWh
hole_k = []  # the intervals the grid register's hole spans
it_e = []  # per interval, 0.1 kWh
for k in range(n):
    start = t0 + k * step
    end = start + step
    hour = start.hour + start.minute / 60
    # IT about 200 kW with a daily swing: 0.1-kWh units per 15 min (50 kWh = 500 units)
    it = 450 + int(100 * (1 if 8 <= hour < 20 else 0)) + rng.randint(0, 40)
    cool_wh = rng.randint(9000, 14000) + (3000 if 5 <= start.month <= 9 else 0)  # Wh
    other = rng.randint(20, 40)  # lighting, losses: 0.1 kWh units
    # the grid meter sees IT + cooling + other; cooling rounded to the register's 0.1 kWh
    cool_d = cool_wh // 100
    cool_wh = cool_d * 100
    grid_step = it + cool_d + other
    heat_d = rng.randint(30, 60)  # 0.1 kWh_th
    water_step = rng.randint(20, 60)  # litres
    it_d_tot += it
    grid_tot += grid_step
    cool_tot += cool_wh
    heat_tot += heat_d
    water_tot += water_step
    grid_d = (grid_d + grid_step) % 10000000
    if start == reset_at:
        ups_d = it  # reset right after the 12:00 reading: counts from 0
    else:
        ups_d += it
    water_l += water_step
    grid_e.append(grid_step)
    it_e.append(it)
    if gap[0] <= end <= gap[1]:
        grid_hole += grid_step  # spread over the hole: one register difference
        hole_k.append(k)
    if not (gap[0] <= end < gap[1]):
        rows.append((end, "grid", f"{grid_d / 10:.1f}", "", "kWh"))
    else:
        grid_missing += 1
    rows.append((end, "ups", f"{ups_d / 10:.1f}", "", "kWh"))
    rows.append((end, "cooling", "", str(cool_wh), "Wh"))
    rows.append((end, "water", f"{water_l / 1000:.3f}", "", "m3"))
    rows.append((end, "heat", "", f"{heat_d / 10:.1f}", "kWh_th"))

with open(sys.argv[2], "w") as f:
    f.write("time,meter,register,energy,unit\n")
    for t, m, r, e, u in rows:
        f.write(f"{ts(t)},{m},{r},{e},{u}\n")
sums = {
    "facility_kwh": grid_tot / 10,
    "it_kwh": it_d_tot / 10,
    "cooling_kwh": cool_tot / 1000,
    "heat_kwh": heat_tot / 10,
    "water_m3": water_tot / 1000,
    "intervals": n,
    "grid_missing_readings": grid_missing,
    "grid_hole_intervals": grid_missing + 1,
    "grid_hole_kwh": grid_hole / 10,
    "from": ts(t0),
    "to": ts(t1),
}
bins = [{"intervals": 0, "facility_kwh": 0.0, "it_kwh": 0.0} for _ in range(4)]
hole = set(hole_k)
for k in range(n):
    if k in hole:
        continue
    pct = it_e[k] / 10 / 0.25 / 400 * 100
    b = bins[min(3, int(pct // 25))]
    b["intervals"] += 1
    b["facility_kwh"] += grid_e[k] / 10
    b["it_kwh"] += it_e[k] / 10
sums["part_load_400kw"] = bins
if outlets_out:
    orng = random.Random(4747)
    names = ["pdu-a-1", "pdu-a-2", "pdu-a-3", "pdu-a-4"]
    reg = {m: 100000 + 1000 * i for i, m in enumerate(names)}  # 0.1 kWh
    tot = {m: 0 for m in names}
    ohole = (dt.datetime(year, 6, 1, tzinfo=dt.timezone.utc), dt.datetime(year, 6, 2, tzinfo=dt.timezone.utc))
    missing = 0
    with open(outlets_out, "w") as f:
        f.write("time,meter,register,unit\n")
        for m in names:
            f.write(f"{ts(t0)},{m},{reg[m] / 10:.1f},kWh\n")
        for k in range(n):
            end = t0 + (k + 1) * step
            for i, m in enumerate(names):
                d = orng.randint(40, 80) + 10 * i  # 4-8 kWh per 15 min and more
                reg[m] += d
                tot[m] += d
                if m == "pdu-a-4" and ohole[0] <= end < ohole[1]:
                    missing += 1
                    continue
                f.write(f"{ts(end)},{m},{reg[m] / 10:.1f},kWh\n")
    sums["outlets_kwh"] = {m: tot[m] / 10 for m in names}
    sums["outlet_hole_intervals"] = missing + 1
if diesel_out:
    drng = random.Random(99)
    litres = 120000  # the fuel register, whole litres
    gen_d = 5000  # the output register, 0.1 kWh
    tot_l = tot_g = 0
    with open(diesel_out, "w") as f:
        f.write("time,meter,register,unit\n")
        f.write(f"{ts(t0)},diesel,{litres},L_fuel\n")
        f.write(f"{ts(t0)},genset,{gen_d / 10:.1f},kWh\n")
        for k in range(n):
            start = t0 + k * step
            end = start + step
            if start.weekday() == 0 and start.hour == 10:
                dl = drng.randint(10, 14)  # litres per 15 min at about half load
                dg = drng.randint(330, 390)  # 0.1 kWh
                litres += dl
                gen_d += dg
                tot_l += dl
                tot_g += dg
            f.write(f"{ts(end)},diesel,{litres},L_fuel\n")
            f.write(f"{ts(end)},genset,{gen_d / 10:.1f},kWh\n")
    sums["diesel_l"] = tot_l
    sums["genset_kwh"] = tot_g / 10
if len(sys.argv) > 4:
    hours = n // 4
    ci = [50 + (17 * h + 3 * (h // 24)) % 400 for h in range(hours)]
    with open(sys.argv[4], "w") as f:
        f.write("timestamp,gco2_per_kwh\n")
        for h in range(hours):
            f.write(f"{ts(t0 + dt.timedelta(hours=h))},{ci[h]}\n")
    e = [x / 10 for x in grid_e]
    for k in hole_k:
        e[k] = grid_hole / 10 / len(hole_k)
    sums["cue_location_g"] = sum(e[k] * ci[k // 4] for k in range(n))
if len(sys.argv) > 5:
    sup = [max(0, 420 - 60 * abs(h % 24 - 12)) for h in range(hours)]
    with open(sys.argv[5], "w") as f:
        f.write("timestamp,kwh\n")
        for h in range(hours):
            f.write(f"{ts(t0 + dt.timedelta(hours=h))},{sup[h]}\n")
    load = [sum(e[4 * h:4 * h + 4]) for h in range(hours)]
    sums["cfe_matched_kwh"] = sum(min(load[h], sup[h]) for h in range(hours))
    sums["cfe_supply_kwh"] = sum(sup)
with open(sys.argv[3], "w") as f:
    json.dump(sums, f, indent=1)
