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

# statement.renewables against the quality criteria, on the same year: a GO for this site, market
# and year counts in REF and market-based CUE; one of another market in REF only; one retired
# for another site, and one generated the year before, in neither: each refused with its named
# reason, a disclosure line outside the totals.
conf "$TMP/i.yaml"
cat >>"$TMP/i.yaml" <<'YAML'
statement:
  site: hall-1
  market: DE-LU
  residual_mix_g_per_kwh: 400
  residual_mix_source: AIB
  residual_mix_year: 2025
  renewables:
    - {type: goo, kwh: 100000, ref: GO-1, market: DE-LU, retired_for: hall-1, vintage: 2026}
    - {type: goo, kwh: 20000, ref: GO-FR, market: FR, retired_for: hall-1, vintage: 2026-06}
    - {type: ppa, kwh: 30000, ref: PPA-2, retired_for: hall-2, vintage: 2026}
    - {type: goo, kwh: 40000, ref: GO-25, market: DE-LU, retired_for: hall-1, vintage: 2025}
YAML
run "$TMP/i.yaml" "$TMP/i.json"
check "the statement with four instruments answers ($(head -c 200 "$TMP/i.json.err"))" test $? -eq 0
check "REF counts GO-1 and GO-FR, market-based CUE GO-1 only; the refused two are named" \
    python3 - "$TMP/i.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
e, kwh = s["energy"], 3.6e6
assert abs(e["e_renewable_joules"] - 120000 * kwh) < 1, e
assert abs(e["e_renewable_refused_joules"] - 70000 * kwh) < 1, e
k = {x["symbol"]: x for x in s["kpis"]}
assert abs(k["REF"]["value"] - 120000 * kwh / e["e_dc_joules"]) < 1e-12, k["REF"]
cue = k["CUE_market"]
want = (e["e_dc_joules"] / kwh - 100000) * 400 / 1000 / (e["e_it_joules"] / kwh)
assert abs(cue["value"] - want) < 1e-9, (cue, want)
r = {x["ref"]: x for x in s["method"]["renewables"]}
assert r["GO-1"]["in_ref"] and r["GO-1"]["in_cue_market"] and r["GO-1"]["refused"] == [], r["GO-1"]
assert r["GO-FR"]["in_ref"] and not r["GO-FR"]["in_cue_market"], r["GO-FR"]
assert [x["reason"] for x in r["GO-FR"]["refused"]] == ["outside_market_boundary"], r["GO-FR"]
assert not r["PPA-2"]["in_ref"] and not r["PPA-2"]["in_cue_market"]
assert [x["reason"] for x in r["PPA-2"]["refused"]] == ["not_retired_for_site"], r["PPA-2"]
assert r["PPA-2"]["unchecked"] == ["market"], r["PPA-2"]
assert [x["reason"] for x in r["GO-25"]["refused"]] == ["vintage_outside_period"], r["GO-25"]
assert "generated in 2025" in r["GO-25"]["refused"][0]["text"], r["GO-25"]
assert s["method"]["market"] == "DE-LU"
PY
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/i.yaml" --db "$DB" >"$TMP/i.txt" 2>&1
check "the text names each refused instrument and why" bash -c \
    'grep -q "instrument ppa 30000.0 kWh PPA-2: not in REF nor in market-based CUE: not_retired_for_site" "$0" &&
     grep -q "instrument goo 20000.0 kWh GO-FR: in REF, not in market-based CUE: outside_market_boundary" "$0"' "$TMP/i.txt"
"$BIN" report --standard eu-eed --period 2026 --schema deploy/standards/eu-eed-2024-1364.v1.schema.json \
    -c "$TMP/i.yaml" --db "$DB" --json >"$TMP/eu.json" 2>&1
check "the EU file's E_RES-GOO counts the GOs that qualify for REF (120000 kWh), E_RES-PPA none" \
    python3 -c "
import json
d = json.load(open('$TMP/eu.json'))
def find(o, k):
    if isinstance(o, dict):
        if k in o: return o[k]
        for v in o.values():
            r = find(v, k)
            if r is not None: return r
    if isinstance(o, list):
        for v in o:
            r = find(v, k)
            if r is not None: return r
goo, ppa = find(d, 'E_RES-GOO'), find(d, 'E_RES-PPA')
assert goo['value'] == 120000, goo
assert ppa['value'] == 0, ppa
"
finish
