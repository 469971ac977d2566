#!/usr/bin/env bash
# `wattage report --standard iso30134`: the KPI statement of a year of 15-minute meter data
# (tests/cli/meter_year.py, imported with `wattage import meters`): E_DC and E_IT to the kWh of
# the generator's sums, PUE as their ratio, the category from the IT meters' roles, the facility
# register's hole as 193 unmeasured intervals whose energy is the estimated part, each check
# refusing what it should (REF > 1, E_IT > E_DC, potable water above total), the coverage
# threshold, the interim label, the method block's hash, and the bad inputs (a role missing, a
# period with no data, a hand input missing: named, never 0). Issue 47: `wattage kpi`'s IT energy
# from the same IT meters; CUE location-based from an hourly intensity series and hourly CFE from
# an hourly supply series (the generator's hourly sums), CER from a heat_removed meter, and the
# non-standard part-load bins (the generator's own binning), the partial PUE of zone-labelled meters.
. tests/cli/lib.sh
export TZ=UTC
DB=$TMP/s.db
python3 tests/cli/meter_year.py 2026 "$TMP/year.csv" "$TMP/sums.json" "$TMP/ci.csv" "$TMP/sup.csv"
"$BIN" import meters "$TMP/year.csv" --db "$DB" >/dev/null 2>&1
check "the year imports" test $? -eq 0
# a second, smaller water meter: 1 m3 over the year
printf 'time,meter,register,unit\n2026-01-01T00:00:00Z,water2,0,m3\n2027-01-01T00:00:00Z,water2,1,m3\n' >"$TMP/w2.csv"
"$BIN" import meters "$TMP/w2.csv" --db "$DB" >/dev/null 2>&1

conf() { # conf FILE IT_ROLE [extra meter lines...]
    local f=$1 role=$2
    shift 2
    {
        printf 'topology:\n  meters:\n'
        printf '    - {target: grid, point: import, role: facility_total}\n'
        printf '    - {target: ups, point: import, role: %s}\n' "$role"
        printf '    - {target: water, point: import, role: water_litres}\n'
        printf '    - {target: heat, point: import, role: heat_reused}\n'
        for l in "$@"; do printf '    - %s\n' "$l"; done
    } >"$f"
}
conf "$TMP/a.yaml" ups_output
cat >>"$TMP/a.yaml" <<'YAML'
statement:
  site: hall-1
  installed_it_kw: 400
  renewables:
    - {type: goo, kwh: 1000000, ref: GO-2026-1}
    - {type: ppa, kwh: 200000, ref: PPA-1}
YAML
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/a.yaml" --db "$DB" --json >"$TMP/a.json" 2>"$TMP/a.err"
check "the statement answers" test $? -eq 0
check "E_DC, E_IT to the kWh; PUE their ratio; category 1; annual; REF from the instruments" \
    python3 - "$TMP/a.json" "$TMP/sums.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
e = s["energy"]
assert abs(e["e_dc_joules"] / 3.6e6 - g["facility_kwh"]) < 1, e
assert abs(e["e_it_joules"] / 3.6e6 - g["it_kwh"]) < 1, e
k = {x["symbol"]: x for x in s["kpis"]}
assert k["PUE"]["name"] == "PUE" and s["period"]["label"] == "annual", (k["PUE"], s["period"])
assert abs(k["PUE"]["value"] - g["facility_kwh"] / g["it_kwh"]) < 1e-6, k["PUE"]
assert "30134-2" in k["PUE"]["standard"] and "50600-4-2" in k["PUE"]["standard"]
assert s["category"]["value"] == 1, s["category"]
assert abs(k["WUE"]["value"] - g["water_m3"] * 1000 / g["it_kwh"]) < 1e-6, k["WUE"]
assert abs(k["ERF"]["value"] - g["heat_kwh"] / g["facility_kwh"]) < 1e-6, k["ERF"]
assert abs(k["REF"]["value"] - 1.2e6 / g["facility_kwh"]) < 1e-6, k["REF"]
assert all(k[x]["reportable"] for x in ("PUE", "WUE", "ERF", "REF")), k
assert "CER" in k and "CUE_location" in k and "CFE_hourly" in k, list(k)
PY
check "the facility register's hole: 193 intervals not measured, its energy the estimated part" \
    python3 - "$TMP/a.json" "$TMP/sums.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
m = {x["meter"]: x for x in s["meters"]}
grid, ups = m["grid/import"], m["ups/import"]
assert grid["intervals"] == g["intervals"] == 35040, grid
assert grid["measured_intervals"] == g["intervals"] - g["grid_hole_intervals"], grid
assert abs(grid["estimated"] / 3.6e6 - g["grid_hole_kwh"]) < 0.1, (grid, g["grid_hole_kwh"])
assert "register difference" in grid["gap_fill"], grid
assert ups["measured_intervals"] == 35040 and ups["estimated"] == 0, ups
pue = [x for x in s["kpis"] if x["symbol"] == "PUE"][0]
assert abs(pue["coverage"] - (35040 - 193) / 35040) < 1e-9, pue
PY
check "hand inputs not given are named 'not given', never 0; the method block has a sha256" \
    python3 - "$TMP/a.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["method"]
h = m["hand_inputs"]
assert h["installed_it_kw"] == 400 and h["floor_area_m2"] == "not given", h
assert h["commissioned"] == "not given", h
assert len(m["inputs_sha256"]) == 64 and m["wattage_version"], m
assert [r["ref"] for r in m["renewables"]] == ["GO-2026-1", "PPA-1"], m
PY
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/a.yaml" --db "$DB" --json >"$TMP/a2.json" 2>/dev/null
check "the same inputs give the same hash" python3 -c "
import json, sys
a, b = (json.load(open(f))['method']['inputs_sha256'] for f in sys.argv[1:3])
assert a == b, (a, b)" "$TMP/a.json" "$TMP/a2.json"

# categories from roles
conf "$TMP/c2.yaml" pdu_output '{target: cooling, point: import, role: it_input}'
conf "$TMP/c0.yaml" it_total
for c in c2 c0; do
    "$BIN" report --standard iso30134 --period 2026 -c "$TMP/$c.yaml" --db "$DB" --json >"$TMP/$c.json" 2>/dev/null
done
check "pdu_output + it_input: category 2 (the lowest counts)" python3 -c "
import json, sys
assert json.load(open(sys.argv[1]))['category']['value'] == 2" "$TMP/c2.json"
check "it_total: category not stated (null), said why" python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))['category']
assert c['value'] is None and 'it_total' in c['text'], c" "$TMP/c0.json"

# `wattage kpi` counts the same IT meters as the statement's E_IT (issue 47)
for c in a c2; do
    "$BIN" kpi --from 2026-01-01T00:00:00Z --to 2027-01-01T00:00:00Z -c "$TMP/$c.yaml" --db "$DB" \
        --json >"$TMP/kpi_$c.json" 2>"$TMP/kpi_$c.err"
done
check "kpi: ups_output is the IT energy (the generator's sum), pdu_output + it_input both count" \
    python3 - "$TMP/kpi_a.json" "$TMP/kpi_c2.json" "$TMP/c2.json" "$TMP/sums.json" <<'PY'
import json, sys
a, c2, s2, g = (json.load(open(f)) for f in sys.argv[1:5])
it = a["energy"]["it"]
assert it["role"] == "ups_output" and it["from"] == "meters" and it["count"] == 1, it
assert abs(it["joules"] / 3.6e6 - g["it_kwh"]) < 1, (it, g["it_kwh"])
pue = [k for k in a["kpis"] if k["name"] == "pue"][0]
assert abs(pue["value"] - g["facility_kwh"] / g["it_kwh"]) < 1e-6, pue
it = c2["energy"]["it"]
assert it["role"] == "pdu_output" and it["count"] == 2, it
assert abs(it["joules"] / 3.6e6 - (g["it_kwh"] + g["cooling_kwh"])) < 1, (it, g)
assert abs(it["joules"] - s2["energy"]["e_it_joules"]) < 3.6e6, (it, s2["energy"])
PY

# CUE: location-based hour by hour from the stored intensity series; market-based not available
"$BIN" import carbon "$TMP/ci.csv" --zone DE --db "$DB" >/dev/null 2>&1
check "the hourly intensity series imports" test $? -eq 0
conf "$TMP/cue.yaml" ups_output
printf 'carbon:\n  zone: DE\n' >>"$TMP/cue.yaml"
conf "$TMP/cue_static.yaml" ups_output
printf 'carbon:\n  static_gco2_per_kwh: 300\n' >>"$TMP/cue_static.yaml"
conf "$TMP/cue_none.yaml" ups_output
printf 'carbon:\n  zone: FR\n' >>"$TMP/cue_none.yaml"
for c in cue cue_static cue_none; do
    "$BIN" report --standard iso30134 --period 2026 -c "$TMP/$c.yaml" --db "$DB" --json >"$TMP/$c.json" 2>"$TMP/$c.err"
done
check "CUE_location = sum_h(E_DC,h x EF_h) / E_IT (the generator's hourly sum), factor hourly, its source named" \
    python3 - "$TMP/cue.json" "$TMP/sums.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
k = {x["symbol"]: x for x in s["kpis"]}
c = k["CUE_location"]
assert abs(c["value"] - g["cue_location_g"] / 1000 / g["it_kwh"]) < 1e-9 * c["value"], (c, g["cue_location_g"])
f = c["emission_factor"]
assert f["granularity"] == "hourly" and f["steps"] == 8760 and f["zone"] == "DE", f
assert f["source"].endswith("ci.csv") and f["actual_share"] == 1 and f["method"] == "location-based", f
assert abs(f["gco2e"] - g["cue_location_g"]) < 1e-9 * f["gco2e"], f
m = k["CUE_market"]
assert m["value"] is None and not m["reportable"], m
assert m["why"].startswith("market-based: not reported (no contract instruments configured"), m
assert c["unit"] == m["unit"] == "kgCO2e/kWh" and "30134-8" in c["standard"], c
PY
check "a static factor: CUE = 0.3 x PUE, granularity static" python3 - "$TMP/cue_static.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
k = {x["symbol"]: x for x in s["kpis"]}
assert abs(k["CUE_location"]["value"] - 0.3 * k["PUE"]["value"]) < 1e-9, k
f = k["CUE_location"]["emission_factor"]
assert f["granularity"].startswith("static") and "static_gco2_per_kwh" in f["source"], f
PY
check "with instruments configured: the market-based CUE names them and the residual mix it lacks" python3 -c "
import json, sys
k = [x for x in json.load(open(sys.argv[1]))['kpis'] if x['symbol'] == 'CUE_market'][0]
assert k['value'] is None and k['why'].startswith('market-based: not reported (no residual-mix factor'), k
assert 'the 2 contract instruments do not cover' in k['why'], k" "$TMP/a.json"
# market-based CUE from a residual-mix factor: 1 000 000 kWh of GOs at 0 g, 200 000 kWh of PPA
# at 20 g/kWh, the rest of E_DC at 400 g/kWh; instruments beyond E_DC cover no more than E_DC
conf "$TMP/mkt.yaml" ups_output
cat >>"$TMP/mkt.yaml" <<'YAML'
statement:
  residual_mix_g_per_kwh: 400
  residual_mix_source: "residual mix of the test grid"
  residual_mix_year: 2025
  renewables:
    - {type: goo, kwh: 1000000, ref: GO-1}
    - {type: ppa, kwh: 200000, ref: PPA-1, g_per_kwh: 20}
YAML
sed -e 's/kwh: 1000000, ref: GO-1/kwh: 9000000, ref: GO-1/' "$TMP/mkt.yaml" >"$TMP/mkt_over.yaml"
for c in mkt mkt_over; do
    "$BIN" report --standard iso30134 --period 2026 -c "$TMP/$c.yaml" --db "$DB" --json >"$TMP/$c.json" 2>"$TMP/$c.err"
done
check "CUE_market = (200000 x 20 + (E_DC - 1200000) x 400) g / E_IT, beside CUE_location, factor named" \
    python3 - "$TMP/mkt.json" "$TMP/mkt_over.json" "$TMP/sums.json" <<'PY'
import json, sys
s, o, g = (json.load(open(f)) for f in sys.argv[1:4])
k = {x["symbol"]: x for x in s["kpis"]}
m = k["CUE_market"]
want_g = 200000 * 20 + (g["facility_kwh"] - 1200000) * 400
assert abs(m["value"] - want_g / 1000 / g["it_kwh"]) < 1e-6, (m, want_g)
f = m["emission_factor"]
assert f["method"] == "market-based" and f["residual_mix_g_per_kwh"] == 400, f
assert f["source"] == "residual mix of the test grid" and f["year"] == 2025, f
assert abs(f["covered_joules"] / 3.6e6 - 1200000) < 1e-3, f
assert abs(f["uncovered_joules"] / 3.6e6 - (g["facility_kwh"] - 1200000)) < 1, f
assert abs(f["gco2e"] - want_g) < 400, f
assert m["why"] == "" and "CUE_location" in k, m
assert [r["g_per_kwh"] for r in s["method"]["renewables"]] == [0, 20], s["method"]
# 9 200 000 kWh of instruments for E_DC about 2.4 GWh: all of it covered, none at the residual
# mix, the PPA's 20 g/kWh pro rata (200/9200 of E_DC)
m = [x for x in o["kpis"] if x["symbol"] == "CUE_market"][0]
want_g = g["facility_kwh"] * 200000 / 9200000 * 20
assert abs(m["value"] - want_g / 1000 / g["it_kwh"]) < 1e-9, (m, want_g)
assert m["emission_factor"]["uncovered_joules"] == 0, m
PY
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/mkt.yaml" --db "$DB" >"$TMP/mkt.txt" 2>/dev/null
check "the text names the residual mix's factor, source and year" \
    grep -q "factor: residual mix 400 gCO2e/kWh (residual mix of the test grid, 2025)" "$TMP/mkt.txt"
check "no series for the zone and no static value: not available, said why" python3 -c "
import json, sys
k = [x for x in json.load(open(sys.argv[1]))['kpis'] if x['symbol'] == 'CUE_location'][0]
assert k['value'] is None and 'zone FR' in k['why'] and 'import carbon' in k['why'], k" "$TMP/cue_none.json"
# the intensity values the CUE used are in its factor's hash: one hour changed, another hash
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/cue.yaml" --db "$DB" --json >"$TMP/cue2.json" 2>/dev/null
orig=$(grep '^2026-06-01T00:00:00Z,' "$TMP/ci.csv")
printf 'timestamp,gco2_per_kwh\n2026-06-01T00:00:00Z,999\n' >"$TMP/ci1.csv"
"$BIN" import carbon "$TMP/ci1.csv" --zone DE --db "$DB" >/dev/null 2>&1
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/cue.yaml" --db "$DB" --json >"$TMP/cue3.json" 2>/dev/null
printf 'timestamp,gco2_per_kwh\n%s\n' "$orig" >"$TMP/ci1.csv"
"$BIN" import carbon "$TMP/ci1.csv" --zone DE --db "$DB" >/dev/null 2>&1
check "the factor's inputs_sha256: the same for the same series, another for one hour changed" python3 -c "
import json, sys
h = [[k for k in json.load(open(f))['kpis'] if k['symbol'] == 'CUE_location'][0]['emission_factor']['inputs_sha256'] for f in sys.argv[1:4]]
assert len(h[0]) == 64 and h[0] == h[1] and h[2] != h[0], h" "$TMP/cue.json" "$TMP/cue2.json" "$TMP/cue3.json"

# hourly CFE beside REF from the renewable supply series
"$BIN" import carbon "$TMP/sup.csv" --zone DE --series renewable --db "$DB" >/dev/null 2>&1
check "the hourly supply series imports" test $? -eq 0
printf 'timestamp,kwh\n2026-01-01T00:00:00Z,100\n2026-01-01T02:00:00Z,100\n' >"$TMP/sup2.csv"
"$BIN" import carbon "$TMP/sup2.csv" --zone FR --series renewable --db "$DB" >/dev/null 2>&1
for c in cue cue_none; do
    "$BIN" report --standard iso30134 --period 2026 -c "$TMP/$c.yaml" --db "$DB" --json >"$TMP/$c.json" 2>"$TMP/$c.err"
done
check "CFE_hourly = sum_h min(E_DC,h, supply_h) / E_DC (the generator's hourly sum), beside REF" \
    python3 - "$TMP/cue.json" "$TMP/sums.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
k = {x["symbol"]: x for x in s["kpis"]}
c = k["CFE_hourly"]
want = g["cfe_matched_kwh"] / g["facility_kwh"]
assert abs(c["value"] - want) < 1e-9, (c, want)
# capped at noon: less than the supply over E_DC
assert g["cfe_matched_kwh"] < g["cfe_supply_kwh"] - 1000, g
f = c["supply"]
assert f["granularity"] == "hourly" and f["points"] == 8760 and f["source"].endswith("sup.csv"), f
assert abs(f["matched_joules"] / 3.6e6 - g["cfe_matched_kwh"]) < 1e-6 * g["cfe_matched_kwh"], f
assert c["reportable"] and "REF" in c["standard"], c
PY
check "supply points of 2 hours: hourly CFE not available, said why" python3 -c "
import json, sys
k = [x for x in json.load(open(sys.argv[1]))['kpis'] if x['symbol'] == 'CFE_hourly'][0]
assert k['value'] is None and 'longer than the hour' in k['why'] and '2 h points' in k['why'], k" "$TMP/cue_none.json"
check "no carbon section: CUE not available, naming carbon.zone" python3 -c "
import json, sys
k = [x for x in json.load(open(sys.argv[1]))['kpis'] if x['symbol'] == 'CUE_location'][0]
assert k['value'] is None and 'carbon.zone' in k['why'], k" "$TMP/a.json"

# CER: heat removed (a heat meter at 60.0 kWh_th every 15 minutes) / the cooling electricity
python3 - "$TMP/heatrm.csv" <<'PY'
import datetime as dt, sys
t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
with open(sys.argv[1], "w") as f:
    f.write("time,meter,register,energy,unit\n")
    for k in range(1, 35041):
        f.write(f"{(t0 + k * dt.timedelta(minutes=15)).strftime('%Y-%m-%dT%H:%M:%SZ')},heatrm,,60.0,kWh_th\n")
PY
"$BIN" import meters "$TMP/heatrm.csv" --db "$DB" >/dev/null 2>&1
check "the heat-removed meter imports" test $? -eq 0
conf "$TMP/cer.yaml" ups_output '{target: heatrm, point: import, role: heat_removed}' \
    '{target: cooling, point: import, role: cooling}'
conf "$TMP/cer_pc.yaml" ups_output '{target: heatrm, point: import, role: heat_removed}' \
    '{target: cooling, point: import, role: cooling}' '{target: heat, point: import, role: purchased_cooling}'
for c in cer cer_pc; do
    "$BIN" report --standard iso30134 --period 2026 -c "$TMP/$c.yaml" --db "$DB" --json >"$TMP/$c.json" 2>"$TMP/$c.err"
done
check "CER = 35040 x 60 kWh_th / the generator's cooling kWh" python3 - "$TMP/cer.json" "$TMP/sums.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
k = {x["symbol"]: x for x in s["kpis"]}
want = 35040 * 60.0 / g["cooling_kwh"]
assert abs(k["CER"]["value"] - want) < 1e-9 * want, (k["CER"], want)
assert k["CER"]["reportable"] and "30134-7" in k["CER"]["standard"], k["CER"]
m = {x["meter"]: x for x in s["meters"]}
assert m["heatrm/import"]["role"] == "heat_removed" and m["cooling/import"]["role"] == "cooling", m
PY
check "no heat_removed meter: CER not available, named" python3 -c "
import json, sys
k = [x for x in json.load(open(sys.argv[1]))['kpis'] if x['symbol'] == 'CER'][0]
assert k['value'] is None and 'heat_removed' in k['why'], k" "$TMP/a.json"
check "purchased cooling (not electric): CER n/a, said why" python3 -c "
import json, sys
k = [x for x in json.load(open(sys.argv[1]))['kpis'] if x['symbol'] == 'CER'][0]
assert k['value'] is None and k['why'].startswith('n/a') and 'not powered by electricity' in k['why'], k" "$TMP/cer_pc.json"

# part-load bins: an extra, non-standard table (P_DIT 400 kW in a.yaml)
check "part load: the bins of the matched intervals as the generator bins them, labelled non-standard" \
    python3 - "$TMP/a.json" "$TMP/sums.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
pl = s["part_load"]
assert "non-standard" in pl["label"] and pl["installed_it_kw"] == 400, pl
assert pl["intervals_not_matched"] == g["grid_hole_intervals"] == 193, pl
assert [b["from_percent"] for b in pl["bins"]] == [0, 25, 50, 75], pl
for b, w in zip(pl["bins"], g["part_load_400kw"]):
    assert b["intervals"] == w["intervals"], (b, w)
    assert abs(b["e_dc_joules"] / 3.6e6 - w["facility_kwh"]) < 1e-3, (b, w)
    assert abs(b["e_it_joules"] / 3.6e6 - w["it_kwh"]) < 1e-3, (b, w)
    if w["intervals"]:
        assert abs(b["pue"] - w["facility_kwh"] / w["it_kwh"]) < 1e-9, (b, w)
    else:
        assert b["pue"] is None, b
assert sum(w["intervals"] for w in g["part_load_400kw"]) == 35040 - 193
assert all(x["symbol"] != "part_load" for x in s["kpis"])
PY
check "part load without installed_it_kw: not available, said why" python3 -c "
import json, sys
pl = json.load(open(sys.argv[1]))['part_load']
assert 'bins' not in pl and 'installed_it_kw' in pl['why'], pl" "$TMP/cue.json"

# the checks
conf "$TMP/ref.yaml" ups_output
printf 'statement:\n  renewables: [{type: ppa, kwh: 9000000}]\n' >>"$TMP/ref.yaml"
printf 'topology:\n  meters:\n    - {target: ups, point: import, role: facility_total}\n    - {target: grid, point: import, role: ups_output}\n' >"$TMP/swap.yaml"
conf "$TMP/pot.yaml" ups_output '{target: water, point: import, role: water_potable}'
sed -i 's/{target: water, point: import, role: water_litres}/{target: water2, point: import, role: water_litres}/' "$TMP/pot.yaml"
for c in ref swap pot; do
    "$BIN" report --standard iso30134 --period 2026 -c "$TMP/$c.yaml" --db "$DB" --json >"$TMP/$c.json" 2>"$TMP/$c.err"
done
kpi_refused() { # FILE SYMBOL TEXT
    python3 -c "
import json, sys
k = [x for x in json.load(open(sys.argv[1]))['kpis'] if x['symbol'] == sys.argv[2]][0]
assert k['value'] is None and not k['reportable'] and sys.argv[3] in k['why'], k" "$@"
}
check "REF > 1 is refused (no credit for surplus)" kpi_refused "$TMP/ref.json" REF "REF > 1"
check "E_IT > E_DC is refused" kpi_refused "$TMP/swap.json" PUE "E_IT"
check "potable water above total is refused" kpi_refused "$TMP/pot.json" WUE "potable water"

# the coverage threshold
conf "$TMP/cov.yaml" ups_output
printf 'statement:\n  min_coverage: 0.999\n' >>"$TMP/cov.yaml"
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/cov.yaml" --db "$DB" --json >"$TMP/cov.json" 2>/dev/null
check "below statement.min_coverage a KPI is not reportable, its value kept" python3 -c "
import json, sys
k = {x['symbol']: x for x in json.load(open(sys.argv[1]))['kpis']}
assert k['PUE']['value'] and not k['PUE']['reportable'] and 'min_coverage' in k['PUE']['why'], k['PUE']
assert k['WUE']['reportable'], k['WUE']" "$TMP/cov.json"

# partial PUE per zone: the meters with a zone label (hall-a: its UPS output and its cooling;
# hall-b: cooling only, no IT meter)
cat >"$TMP/zones.yaml" <<'YAML'
topology:
  meters:
    - {target: grid, point: import, role: facility_total}
    - {target: ups, point: import, role: ups_output, zone: hall-a}
    - {target: cooling, point: import, role: cooling, zone: hall-a}
    - {target: heat, point: import, role: cooling, zone: hall-b}
YAML
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/zones.yaml" --db "$DB" --json >"$TMP/zones.json" 2>"$TMP/zones.err"
check "pPUE of hall-a = (its IT + cooling) / its IT, to the generator's sums; hall-b not available, said why" \
    python3 - "$TMP/zones.json" "$TMP/sums.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
z = {x["zone"]: x for x in s["zones"]}
a = z["hall-a"]
assert a["label"] == "partial" and a["basis"] == "it + cooling", a
want = (g["it_kwh"] + g["cooling_kwh"]) / g["it_kwh"]
assert abs(a["ppue"] - want) < 1e-4, (a, want)
assert abs(a["e_it_joules"] / 3.6e6 - g["it_kwh"]) < 1, a
b = z["hall-b"]
assert b["ppue"] is None and b["why"] == "no IT meter in the zone", b
assert [k["symbol"] for k in s["kpis"]][0] == "PUE", s["kpis"]  # the site's PUE stays the KPI
PY
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/zones.yaml" --db "$DB" >"$TMP/zones.txt" 2>/dev/null
check "  ... and in the text, labelled partial" bash -c \
    "grep -q '^partial PUE per zone (pPUE' '$TMP/zones.txt' && grep -Eq '^  hall-a +pPUE 1\.[0-9]{4}  \(zone' '$TMP/zones.txt' &&
     grep -q '^  hall-b  *pPUE n/a: no IT meter in the zone' '$TMP/zones.txt'"

# more than 16 zones: every one has its row (20 cooling meters zc01..zc20 of 10 x N kWh over
# the year, one a zone; the UPS output in the last zone, z20, gives it a pPUE)
{
    printf 'time,meter,register,unit\n'
    for i in $(seq -w 1 20); do
        printf '2026-01-01T00:00:00Z,zc%s,0,kWh\n2027-01-01T00:00:00Z,zc%s,%d,kWh\n' "$i" "$i" $((10 * 10#$i))
    done
} >"$TMP/zc.csv"
"$BIN" import meters "$TMP/zc.csv" --db "$DB" >/dev/null 2>&1
{
    printf 'topology:\n  meters:\n    - {target: grid, point: import, role: facility_total}\n'
    for i in $(seq -w 1 20); do
        printf '    - {target: zc%s, point: import, role: cooling, zone: z%s}\n' "$i" "$i"
    done
    printf '    - {target: ups, point: import, role: ups_output, zone: z20}\n'
} >"$TMP/z20.yaml"
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/z20.yaml" --db "$DB" --json >"$TMP/z20.json" 2>"$TMP/z20.err"
check "20 zones: all 20 in the JSON, the 20th with its pPUE (IT + 200 kWh) / IT" \
    python3 - "$TMP/z20.json" "$TMP/sums.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
z = {x["zone"]: x for x in s["zones"]}
assert sorted(z) == ["z%02d" % i for i in range(1, 21)], sorted(z)
assert abs(z["z17"]["e_zone_joules"] / 3.6e6 - 170) < 1e-6 and z["z17"]["ppue"] is None, z["z17"]
want = (g["it_kwh"] + 200) / g["it_kwh"]
assert abs(z["z20"]["ppue"] - want) < 1e-4, (z["z20"], want)
PY
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/z20.yaml" --db "$DB" >"$TMP/z20.txt" 2>/dev/null
check "  ... and 20 zone rows in the text" \
    bash -c "test \$(grep -Ec '^  z[0-9]{2} +pPUE' '$TMP/z20.txt') -eq 20 && grep -Eq '^  z20 +pPUE 1\.[0-9]{4}' '$TMP/z20.txt'"

# less than a year: interim
"$BIN" report --standard iso30134 --from 2026-01-01T00:00:00Z --to 2026-07-01T00:00:00Z \
    -c "$TMP/a.yaml" --db "$DB" >"$TMP/half.txt" 2>&1
check "half a year is labelled interim (iPUE), never plain PUE" \
    bash -c "grep -q '^iPUE (interim)' '$TMP/half.txt' && grep -q 'interim: not one calendar year' '$TMP/half.txt' && ! grep -q '^PUE ' '$TMP/half.txt'"

# bad input
printf 'topology:\n  meters:\n    - {target: ups, point: import, role: ups_output}\n' >"$TMP/nodc.yaml"
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/nodc.yaml" --db "$DB" 2>"$TMP/nodc.err" >/dev/null
check "no facility_total meter: exit 2" test $? -eq 2
check "and named" grep -q "no meter with role facility_total" "$TMP/nodc.err"
"$BIN" report --standard iso30134 --period 2025 -c "$TMP/a.yaml" --db "$DB" 2>"$TMP/empty.err" >/dev/null
check "a period with no data: exit 2" test $? -eq 2
check "and said" grep -q "no meter has data in the period 2025-01-01T00:00:00Z" "$TMP/empty.err"
printf 'statement:\n  renewables: [{type: goo}]\n' >"$TMP/badren.yaml"
"$BIN" report --standard iso30134 --period 2026 -c "$TMP/badren.yaml" --db "$DB" 2>"$TMP/badren.err" >/dev/null
check "an instrument without kwh: exit 2, file:line and key named" \
    grep -q "badren.yaml:2: statement.renewables\[0\].kwh: required" "$TMP/badren.err"
"$BIN" report --standard ashrae --period 2026 -c "$TMP/a.yaml" --db "$DB" 2>"$TMP/eu.err" >/dev/null
check "an unknown standard: exit 2" test $? -eq 2
check "and said" grep -q "expected iso30134, eu-eed or enefg" "$TMP/eu.err"

# the EU file: validated against its dated schema file, every symbol a value or not available
SCHEMA=deploy/standards/eu-eed-2024-1364.v1.schema.json
"$BIN" report --standard eu-eed --period 2026 --schema "$SCHEMA" --json -c "$TMP/a.yaml" --db "$DB" >"$TMP/eu.json" 2>"$TMP/eu.err"
check "the EU file answers" test $? -eq 0
check "it validates against the schema file; E_DC/E_IT whole kWh; hand inputs not given are not available" \
    python3 - "$TMP/eu.json" "$SCHEMA" "$TMP/sums.json" <<'PY'
import json, sys, jsonschema
doc, schema, g = (json.load(open(f)) for f in sys.argv[1:4])
jsonschema.validate(doc, schema)
k = doc["kpis"]
assert set(k) == set(schema["properties"]["kpis"]["properties"]), set(k)
assert k["E_DC"]["value"] == round(g["facility_kwh"]) and k["E_DC"]["unit"] == "kWh", k["E_DC"]
assert k["E_IT"]["value"] == round(g["it_kwh"]), k["E_IT"]
assert k["P_DIT"]["value"] == 400 and "floor_area_m2" in k["S_DC"]["not_available"], k
assert k["E_RES-GOO"]["value"] == 1000000 and k["E_RES-PPA"]["value"] == 200000, k
assert "value" not in k["T_WH"] and k["T_WH"]["not_available"], k["T_WH"]
assert k["W_IN-POT"]["tag"] == "M", k["W_IN-POT"]  # unverified symbols stay marked
PY
check "a document that says 0 for an unknown is not what the schema accepts" \
    python3 - "$TMP/eu.json" "$SCHEMA" <<'PY'
import json, sys, jsonschema
doc, schema = (json.load(open(f)) for f in sys.argv[1:3])
doc["kpis"]["T_WH"] = {"value": 0, "unit": "Cel", "not_available": "x"}
try:
    jsonschema.validate(doc, schema)
except jsonschema.ValidationError:
    sys.exit(0)
sys.exit(1)
PY
"$BIN" report --standard eu-eed --period 2026 --schema "$SCHEMA" --csv -c "$TMP/a.yaml" --db "$DB" >"$TMP/eu.csv" 2>/dev/null
check "the CSV holds the same symbols and values" python3 - "$TMP/eu.csv" "$TMP/eu.json" <<'PY'
import csv, json, sys
rows = {r["symbol"]: r for r in csv.DictReader(open(sys.argv[1]))}
k = json.load(open(sys.argv[2]))["kpis"]
assert list(rows) == list(k), (list(rows), list(k))
for s, v in k.items():
    if "value" in v:
        assert rows[s]["status"] == "value" and abs(float(rows[s]["value"]) - v["value"]) < 1e-9, (s, rows[s])
    else:
        assert rows[s]["status"] == "not available" and rows[s]["reason"] == v["not_available"], (s, rows[s])
PY
"$BIN" report --standard eu-eed --period 2026 --schema "$SCHEMA" -c "$TMP/a.yaml" --db "$DB" >"$TMP/eu.txt" 2>/dev/null
check "the EU file as text (the default): every symbol's row as in the JSON, the method's hash" \
    python3 - "$TMP/eu.txt" "$TMP/eu.json" <<'PY'
import json, re, sys
t = open(sys.argv[1]).read(); d = json.load(open(sys.argv[2])); k = d["kpis"]
rows = re.findall(r"^(\S+) +(\S+) (Q|M) +(.*?)(?:  not available: (.*))?$", t, re.M)
rows = {r[0]: r for r in rows if r[0] != "symbol"}
assert list(rows) == list(k), (list(rows), list(k))
for s, v in k.items():
    _, val, tag, unit, why = rows[s]
    assert tag == v["tag"] and unit == v["unit"], (s, rows[s], v)
    if "value" in v:
        assert abs(float(val) - v["value"]) <= 1e-9 * max(1, abs(v["value"])) and not why, (s, rows[s])
    else:
        assert val == "n/a" and why == v["not_available"], (s, rows[s])
assert t.startswith("EU EED data-centre KPIs") and "schema:    %s (dated %s)" % (d["schema"], d["method"]["schema_date"]) in t, t
assert "inputs sha256 %s" % d["method"]["inputs_sha256"] in t, t
PY
# the symbols come from the schema file: a later version without the traffic indicators
python3 - "$SCHEMA" >"$TMP/v2.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
k = s["properties"]["kpis"]
for sym in ("B_IN", "B_OUT"):
    del k["properties"][sym]
    k["required"].remove(sym)
s["x-wattage"]["date"] = "2027-01-01"
print(json.dumps(s))
PY
"$BIN" report --standard eu-eed --period 2026 --schema "$TMP/v2.json" --json -c "$TMP/a.yaml" --db "$DB" >"$TMP/eu2.json" 2>/dev/null
check "a schema file without B_IN/B_OUT gives a file without them, its date in the method" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert 'B_IN' not in d['kpis'] and 'E_DC' in d['kpis'] and d['method']['schema_date'] == '2027-01-01', d" "$TMP/eu2.json"
sed 's/"source": "e_dc_kwh"/"source": "e_dc_mwh"/' "$SCHEMA" >"$TMP/bad.schema.json"
"$BIN" report --standard eu-eed --period 2026 --schema "$TMP/bad.schema.json" -c "$TMP/a.yaml" --db "$DB" >/dev/null 2>"$TMP/bads.err"
check "an unknown source in the schema: exit 2" test $? -eq 2
check "and named" grep -q 'bad.schema.json: kpis.E_DC: unknown source "e_dc_mwh"' "$TMP/bads.err"
"$BIN" report --standard eu-eed --from 2026-01-01T00:00:00Z --to 2026-07-01T00:00:00Z --schema "$SCHEMA" -c "$TMP/a.yaml" --db "$DB" >/dev/null 2>"$TMP/half.err"
check "the EU file without --period YEAR: exit 2" test $? -eq 2
finish
