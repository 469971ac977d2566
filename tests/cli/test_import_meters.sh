#!/usr/bin/env bash
# `wattage import meters`: a year of 15-minute meter data for a small site (tests/cli/
# meter_year.py: a facility register that rolls over three times and misses two days of lines,
# a UPS-output register that is reset in June, interval energy for cooling and heat, a water
# register), imported and read back through `wattage kpi` over the calendar year: each meter's
# energy equals the generator's own sum to the kWh. Then the bad-input rules: bad lines named
# FILE:LINE and skipped, a file with no good line refused (exit 2) with nothing stored, and an
# interval meter's hole recorded as a gap (counting nothing, coverage below 1).
. tests/cli/lib.sh
export TZ=UTC
DB=$TMP/m.db
python3 tests/cli/meter_year.py 2026 "$TMP/year.csv" "$TMP/sums.json"
check "the generator writes a year" test -s "$TMP/year.csv"

"$BIN" import meters "$TMP/year.csv" --db "$DB" >"$TMP/imp.out" 2>"$TMP/imp.err"
check "the year imports" test $? -eq 0
check "5 meters, 3 rollovers, 1 reset, 1 gap" \
    grep -q "5 meters, .* 0 lines skipped, 3 rollovers, 1 resets, 1 gaps" "$TMP/imp.out"
check "the reset is reported with its line" grep -Eq "year.csv:[0-9]+: meter ups: register reset" "$TMP/imp.err"

cat >"$TMP/site.yaml" <<'YAML'
topology:
  meters:
    - {target: grid, point: import, role: facility_total}
    - {target: ups, point: import, role: it_total}
    - {target: cooling, point: import, role: cooling}
    - {target: water, point: import, role: water_litres}
    - {target: heat, point: import, role: heat_reused}
YAML
"$BIN" kpi --from 2026-01-01T00:00:00Z --to 2027-01-01T00:00:00Z -c "$TMP/site.yaml" --db "$DB" \
    --json >"$TMP/kpi.json" 2>"$TMP/kpi.err"
check "wattage kpi answers over the year" test $? -eq 0
check "every meter's energy over the year is the generator's sum, to the kWh" \
    python3 - "$TMP/kpi.json" "$TMP/sums.json" <<'PY'
import json, sys
k = json.load(open(sys.argv[1]))["energy"]
s = json.load(open(sys.argv[2]))
got = {"facility_kwh": k["facility"]["joules"] / 3.6e6, "it_kwh": k["it"]["joules"] / 3.6e6,
       "cooling_kwh": k["cooling"]["joules"] / 3.6e6,
       "heat_kwh": k["heat_reused"]["joules"] / 3.6e6}
for key, v in got.items():
    assert abs(v - s[key]) < 1.0, (key, v, s[key])
    print(f"# {key}: {v:.1f} (generator {s[key]:.1f})", file=sys.stderr)
assert abs(k["water"]["cubic_meters"] - s["water_m3"]) < 1e-3, (k["water"], s["water_m3"])
PY

# the same file with the register's modulus given wrong: the rollovers become resets, and
# the facility's sum loses what the register counted before each
"$BIN" import meters "$TMP/year.csv" --rollover 1 --db "$TMP/w.db" >"$TMP/w.out" 2>/dev/null
check "--rollover 1: no rollover, 4 resets" grep -q "0 rollovers, 4 resets" "$TMP/w.out"

# bad lines: named and skipped; the good ones stored
cat >"$TMP/bad.csv" <<'CSV'
time,meter,register,energy,unit
2026-01-01T00:00:00Z,m1,100.0,,kWh
2026-01-01T00:15:00Z,m1,-5,,kWh
2026-01-01T00:30:00Z,m1,110.0,,kWh
yesterday,m1,111.0,,kWh
2026-01-01T00:45:00Z,m1,112.0,,furlongs
2026-01-01T01:00:00Z,m1,,,kWh
2026-01-01T01:00:00Z,m1,,3,kWh
2026-01-01T01:00:00Z,m1,120.0,,m3
2026-01-01T01:00:00Z,m1,120.0,,kWh
CSV
"$BIN" import meters "$TMP/bad.csv" --db "$TMP/b.db" >"$TMP/bad.out" 2>"$TMP/bad.err"
check "a file with some bad lines imports the good ones" test $? -eq 0
check "6 lines named and skipped, 3 stored" grep -q "3 rows, .* 6 lines skipped" "$TMP/bad.out"
for l in 3 5 6 7 8 9; do
    check "line $l is named" grep -q "bad.csv:$l: " "$TMP/bad.err"
done
check "the negative register is named by its column" grep -q "bad.csv:3: register: expected a number >= 0" "$TMP/bad.err"
check "the unknown unit is named" grep -q 'bad.csv:6: unit: expected .*furlongs' "$TMP/bad.err"

printf 'time,meter,register,unit\nnope,m1,1,kWh\n2026-01-01T00:00:00Z,m1,1,parsecs\n' >"$TMP/none.csv"
"$BIN" import meters "$TMP/none.csv" --db "$TMP/n.db" >"$TMP/none.out" 2>"$TMP/none.err"
check "a file with no good line exits 2" test $? -eq 2
check "and names its first bad line" grep -q "none.csv:2: time: .*(no line stored)" "$TMP/none.err"
check "and stores nothing" python3 -c "
import sqlite3, sys
n = sqlite3.connect(sys.argv[1]).execute('select count(*) from series').fetchone()[0]
assert n == 0, n" "$TMP/n.db"
printf 'when,meter,register,unit\n' >"$TMP/hdr.csv"
"$BIN" import meters "$TMP/hdr.csv" --db "$TMP/n.db" 2>"$TMP/hdr.err"
check "a header without a time column exits 2" test $? -eq 2
check "and is named" grep -q 'hdr.csv:1: header: expected the columns time' "$TMP/hdr.err"

# an interval meter's hole: a gap, not energy spread over it
python3 - >"$TMP/iv.csv" <<'PY'
import datetime as dt
t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
print("time,meter,energy,unit")
for k in range(1, 97):
    if 40 <= k < 48:
        continue  # two hours missing
    t = t0 + dt.timedelta(minutes=15 * k)
    print(f"{t:%Y-%m-%dT%H:%M:%SZ},pump,1000,Wh")
PY
"$BIN" import meters "$TMP/iv.csv" --db "$TMP/iv.db" >"$TMP/iv.out" 2>&1
check "an interval meter with a hole imports, 1 gap" grep -q "1 gaps" "$TMP/iv.out"
printf 'topology:\n  meters:\n    - {target: pump, point: import, role: cooling}\n' >"$TMP/iv.yaml"
"$BIN" kpi --from 2026-01-01T00:00:00Z --to 2026-01-02T00:00:00Z -c "$TMP/iv.yaml" --db "$TMP/iv.db" \
    --json >"$TMP/ivk.json" 2>/dev/null
check "its energy is the intervals given (88 kWh), its coverage 88/96" \
    python3 - "$TMP/ivk.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["energy"]["cooling"]
assert abs(c["joules"] - 88 * 3.6e6) < 1, c
assert abs(c["coverage"] - 88 / 96) < 1e-6, c
PY

# --time-is start and --interval: hourly interval energy stamped at each hour's start, 5 kWh in
# the first hour and 1 kWh after; read as stamped at the end, the first hour would hold 1 kWh
python3 - >"$TMP/start.csv" <<'PY'
print("time,meter,energy,unit")
for h in range(24):
    print(f"2026-01-01T{h:02d}:00:00Z,fan,{5 if h == 0 else 1},kWh")
PY
"$BIN" import meters "$TMP/start.csv" --time-is start --interval 1h --db "$TMP/st.db" >"$TMP/st.out" 2>&1
check "--time-is start --interval 1h imports, no gap" grep -q "1 meters, 24 rows, .* 0 gaps" "$TMP/st.out"
"$BIN" import meters "$TMP/start.csv" --interval 1h --db "$TMP/se.db" >/dev/null 2>&1
printf 'topology:\n  meters:\n    - {target: fan, point: import, role: cooling}\n' >"$TMP/fan.yaml"
for d in st se; do
    "$BIN" kpi --from 2026-01-01T00:00:00Z --to 2026-01-01T01:00:00Z -c "$TMP/fan.yaml" \
        --db "$TMP/$d.db" --json >"$TMP/$d.json" 2>/dev/null
done
check "stamped at the start: the first hour holds 5 kWh; at the end (the default): 1 kWh" \
    python3 - "$TMP/st.json" "$TMP/se.json" <<'PY'
import json, sys
a, b = (json.load(open(f))["energy"]["cooling"]["joules"] / 3.6e6 for f in sys.argv[1:3])
assert abs(a - 5) < 1e-9 and abs(b - 1) < 1e-9, (a, b)
PY
finish
