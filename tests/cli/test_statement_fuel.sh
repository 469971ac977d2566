#!/usr/bin/env bash
# Issue 47: meter role fuel. A year of the generator's site (tests/cli/meter_year.py) with a
# standby diesel generator (--diesel: a fuel register in litres, imported as L_fuel, and the
# generator's output register): E_DC = grid + diesel litres x statement.fuel_factors.diesel, to
# the kWh of the generator's own sums, and PUE with it; a custom factor changes E_DC exactly and
# the inputs hash; a fuel meter without `fuel:` is a config error at its file:line; a fuel meter
# that feeds a metered onsite_generation meter is not counted twice (its output is, the fuel
# not), and a generator fed diesel adds nothing to REF's on-site renewable energy.
. tests/cli/lib.sh
export TZ=UTC
DB=$TMP/s.db
python3 tests/cli/meter_year.py --diesel "$TMP/diesel.csv" 2026 "$TMP/year.csv" "$TMP/sums.json"
"$BIN" import meters "$TMP/year.csv" --db "$DB" >/dev/null 2>&1
check "the year imports" test $? -eq 0
"$BIN" import meters "$TMP/diesel.csv" --db "$DB" >"$TMP/imp.out" 2>&1
check "the diesel file imports (L_fuel)" test $? -eq 0

conf() { # conf FILE [extra meter lines...]
    local f=$1
    shift
    {
        printf 'topology:\n  meters:\n'
        printf '    - {target: grid, point: import, role: facility_total}\n'
        printf '    - {target: ups, point: import, role: ups_output}\n'
        for l in "$@"; do printf '    - %s\n' "$l"; done
    } >"$f"
}
run() { "$BIN" report --standard iso30134 --period 2026 -c "$1" --db "$DB" --json >"$2" 2>"$2.err"; }

conf "$TMP/base.yaml"
run "$TMP/base.yaml" "$TMP/base.json"
check "the statement without fuel answers" test $? -eq 0
conf "$TMP/d.yaml" '{target: diesel, point: import, role: fuel, fuel: diesel}'
run "$TMP/d.yaml" "$TMP/d.json"
check "the statement with a diesel meter answers" test $? -eq 0
check "E_DC = grid + diesel litres x 9.9 kWh/l to the kWh; PUE with it; the factor in the boundary" \
    python3 - "$TMP/d.json" "$TMP/base.json" "$TMP/sums.json" <<'PY'
import json, sys
s, b, g = (json.load(open(f)) for f in sys.argv[1:4])
want = g["facility_kwh"] + g["diesel_l"] * 9.9
assert g["diesel_l"] > 1000, g["diesel_l"]
assert abs(s["energy"]["e_dc_joules"] / 3.6e6 - want) < 1, (s["energy"], want)
assert abs(b["energy"]["e_dc_joules"] / 3.6e6 - g["facility_kwh"]) < 1, b["energy"]
pue = [k for k in s["kpis"] if k["symbol"] == "PUE"][0]
assert abs(pue["value"] - want / g["it_kwh"]) < 1e-6, (pue, want / g["it_kwh"])
assert pue["reportable"], pue
m = {x["meter"]: x for x in s["meters"]}
d = m["diesel/import"]
assert abs(d["value"] / 3.6e6 - g["diesel_l"] * 9.9) < 0.01, d
assert d["measured_intervals"] == 35040, d
bound = json.dumps(s)
assert "fuel (diesel 9.9 kWh/l)" in bound, bound[:2000]
assert s["method"]["inputs_sha256"] != b["method"]["inputs_sha256"]
PY

conf "$TMP/f.yaml" '{target: diesel, point: import, role: fuel, fuel: diesel}'
printf 'statement:\n  fuel_factors: {diesel: 10.0}\n' >>"$TMP/f.yaml"
run "$TMP/f.yaml" "$TMP/f.json"
check "statement.fuel_factors.diesel 10.0: E_DC changes by exactly litres x 0.1 kWh; the hash too" \
    python3 - "$TMP/f.json" "$TMP/d.json" "$TMP/sums.json" <<'PY'
import json, sys
f, d, g = (json.load(open(x)) for x in sys.argv[1:4])
diff = (f["energy"]["e_dc_joules"] - d["energy"]["e_dc_joules"]) / 3.6e6
assert abs(diff - g["diesel_l"] * 0.1) < 1e-6, (diff, g["diesel_l"] * 0.1)
assert f["method"]["inputs_sha256"] != d["method"]["inputs_sha256"]
assert "fuel (diesel 10 kWh/l)" in json.dumps(f)
PY

conf "$TMP/bad.yaml" '{target: diesel, point: import, role: fuel}'
run "$TMP/bad.yaml" "$TMP/bad.json"
rc=$?
check "a fuel meter without fuel: is refused at its file:line" \
    bash -c "[[ $rc -ne 0 ]] && grep -q 'bad.yaml:5' '$TMP/bad.json.err' && grep -q 'fuel' '$TMP/bad.json.err'"
conf "$TMP/bad2.yaml" '{target: diesel, point: import, role: fuel, fuel: petrol}'
run "$TMP/bad2.yaml" "$TMP/bad2.json"
rc=$?
check "an unknown fuel is refused at its file:line" \
    bash -c "[[ $rc -ne 0 ]] && grep -q 'bad2.yaml:5' '$TMP/bad2.json.err'"
conf "$TMP/bad3.yaml" '{target: diesel, point: import, role: fuel, fuel: diesel, feeds: nowhere}'
run "$TMP/bad3.yaml" "$TMP/bad3.json"
rc=$?
check "feeds: naming no onsite_generation meter is refused at its file:line" \
    bash -c "[[ $rc -ne 0 ]] && grep -q 'bad3.yaml:5' '$TMP/bad3.json.err' && grep -q nowhere '$TMP/bad3.json.err'"
printf 'topology:\n  meters:\n    - {target: grid, point: import, role: facility_total}\n    - {target: ups, point: import, role: ups_output}\nstatement:\n  fuel_factors: {diesel: -1}\n' >"$TMP/bad4.yaml"
run "$TMP/bad4.yaml" "$TMP/bad4.json"
rc=$?
check "a negative fuel factor is refused at its file:line" \
    bash -c "[[ $rc -ne 0 ]] && grep -q 'bad4.yaml:6' '$TMP/bad4.json.err' && grep -q 'fuel_factors.diesel' '$TMP/bad4.json.err'"

conf "$TMP/g.yaml" '{target: genset, point: import, role: onsite_generation}' \
    '{target: diesel, point: import, role: fuel, fuel: diesel, feeds: genset}'
run "$TMP/g.yaml" "$TMP/g.json"
check "a fuel feeding a metered generator: E_DC = grid + the generator's output, the fuel not" \
    python3 - "$TMP/g.json" "$TMP/sums.json" <<'PY'
import json, sys
s, g = (json.load(open(x)) for x in sys.argv[1:3])
want = g["facility_kwh"] + g["genset_kwh"]
assert abs(s["energy"]["e_dc_joules"] / 3.6e6 - want) < 1, (s["energy"], want)
assert "diesel/import" not in {x["meter"] for x in s["meters"]}
assert "is not counted" in json.dumps(s)
# a diesel generator's output is no renewable energy: REF stays 0 without instruments
ref = [k for k in s["kpis"] if k["symbol"] == "REF"][0]
assert ref["value"] == 0, ref
PY
conf "$TMP/h.yaml" '{target: genset, point: import, role: onsite_generation}' \
    '{target: diesel, point: import, role: fuel, fuel: diesel}'
run "$TMP/h.yaml" "$TMP/h.json"
check "without feeds both count (the site says which it meters)" python3 -c "
import json
s, g = json.load(open('$TMP/h.json')), json.load(open('$TMP/sums.json'))
want = g['facility_kwh'] + g['genset_kwh'] + g['diesel_l'] * 9.9
assert abs(s['energy']['e_dc_joules'] / 3.6e6 - want) < 1, (s['energy'], want)
"

# `wattage kpi` over the same store and year counts the same E_DC (fuels at the same factors, a
# metered generator's output and not its fuel) and so the same PUE as the statement.
kpi() { "$BIN" kpi --from 2026-01-01T00:00:00Z --to 2027-01-01T00:00:00Z -c "$1" --db "$DB" --json >"$2" 2>"$2.err"; }
for c in base d f g h; do
    kpi "$TMP/$c.yaml" "$TMP/k$c.json"
    check "kpi over the year answers ($c.yaml: $(head -c 200 "$TMP/k$c.json.err"))" test $? -eq 0
    check "kpi's facility energy and PUE are the statement's E_DC and PUE ($c.yaml)" \
        python3 - "$TMP/k$c.json" "$TMP/$c.json" "$c" <<'PY'
import json, sys
k, s, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
fac, e = k["energy"]["facility"]["joules"], s["energy"]
assert abs(fac - e["e_dc_joules"]) <= 1e-9 * e["e_dc_joules"], (fac, e["e_dc_joules"])
assert abs(k["energy"]["it"]["joules"] - e["e_it_joules"]) <= 1e-9 * e["e_it_joules"]
pk = [x for x in k["kpis"] if x["name"] == "pue"][0]
ps = [x for x in s["kpis"] if x["symbol"] == "PUE"][0]
assert abs(pk["value"] - ps["value"]) <= 1e-9, (pk, ps)
fu = k["energy"]["fuel"]
if c in ("d", "f", "h"):
    assert fu["count"] == 1 and fu["joules"] > 0, fu
    assert " + fuel (1)" in pk["inputs"][0]["detail"], pk["inputs"]
else:
    assert fu["count"] == 0, fu
gen = k["energy"]["onsite_generation"]
assert (gen["count"] == 1) == (c in ("g", "h")), gen
PY
done
finish
