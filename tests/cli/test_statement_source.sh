#!/usr/bin/env bash
# `wattage report --standard X --source victoriametrics://… [--site NAME]` (issue 47 item 4): a
# year of 15-minute meter data (tests/cli/meter_year.py, imported with `wattage import meters`)
# goes into a real VictoriaMetrics as two sites' series, each with a node and a site label:
# hall-1 as the store holds it, hall-2 the same registers doubled, and a copy of hall-1's
# without a site label. The statement of hall-1 from the engine is the statement of the store
# (E_DC, E_IT to the kWh, every meter's measured intervals and estimated energy, every KPI, the
# hand inputs); without --site there is one statement per site, hall-2's with twice the energy
# and no hand inputs (they are hall-1's); the EU file follows. A second VictoriaMetrics with
# hall-1's series and no site label: one statement, the store's; --site refused there. Bad
# input: an unknown site (exit 2, the sites found named), --site without --source, --source with
# --db, an engine that does not answer (exit 1), a period the engine holds nothing for (exit 2);
# no working store is left.
. tests/cli/lib.sh
PY=/usr/bin/python3
VM=${VICTORIA_METRICS:-victoria-metrics}
if ! command -v "$VM" >/dev/null; then
    skip "report --standard --source against VictoriaMetrics" "victoria-metrics is not installed (scripts/deps.sh --test)"
    finish
fi
export TZ=UTC
mkdir -p "$TMP/tmpdir"
export TMPDIR=$TMP/tmpdir
# last year: a whole calendar year the engine keeps
YEAR=$(($(date -u +%Y) - 1))
DB=$TMP/s.db
$PY tests/cli/meter_year.py --diesel "$TMP/diesel.csv" "$YEAR" "$TMP/year.csv" "$TMP/sums.json"
"$BIN" import meters "$TMP/year.csv" --db "$DB" >/dev/null 2>&1 &&
    "$BIN" import meters "$TMP/diesel.csv" --db "$DB" >/dev/null 2>&1
check "the year imports (and a diesel tank's litres)" test $? -eq 0
# the grid's intensity of zone DE, hourly: 150 to 380 g over the day
$PY -c '
import datetime as d, sys
t = d.datetime(int(sys.argv[1]), 1, 1, tzinfo=d.timezone.utc)
print("timestamp,gco2_per_kwh")
while t.year == int(sys.argv[1]):
    print("%s,%d" % (t.strftime("%Y-%m-%dT%H:%M:%SZ"), 150 + 10 * t.hour))
    t += d.timedelta(hours=1)' "$YEAR" >"$TMP/ci.csv"
"$BIN" import carbon "$TMP/ci.csv" --zone DE --db "$DB" >/dev/null 2>"$TMP/ci.err"
check "the grid's intensity imports into the store" test $? -eq 0
cat >"$TMP/a.yaml" <<'YAML'
topology:
  meters:
    - {target: grid, point: import, role: facility_total}
    - {target: ups, point: import, role: ups_output}
    - {target: cooling, point: import, role: cooling}
    - {target: water, point: import, role: water_litres}
    - {target: heat, point: import, role: heat_reused}
    - {target: diesel, point: import, role: fuel, fuel: diesel}
carbon:
  zone: DE
statement:
  site: hall-1
  installed_it_kw: 400
  renewables:
    - {type: goo, kwh: 1000000, ref: GO-1}
YAML

# start_vm NAME: a VictoriaMetrics in $TMP/NAME, its port in VPORT
start_vm() {
    VPORT=$(free_port)
    "$VM" -storageDataPath="$TMP/$1" -httpListenAddr="127.0.0.1:$VPORT" -retentionPeriod=100y \
        -loggerLevel=ERROR >>"$TMP/$1.log" 2>&1 &
    T_PIDS="$T_PIDS $!"
    wait_for 30 curl -sf "http://127.0.0.1:$VPORT/health" -o /dev/null
}
# Every reading of the store, read through `wattage query`, into VictoriaMetrics' import API;
# "sites": hall-1 as stored, hall-2 doubled, and hall-1's again without a site label (another
# node's); "one": hall-1's without a site label.
IMPORT=$(cat <<'PY'
import json, sys
sys.path.insert(0, "tests/cli")
import vm_import
binary, db, url, mode = sys.argv[1:5]
lines = []
copies = ((("hall-1", "", 1), ("hall-2", "b-", 2), (None, "c-", 1)) if mode == "sites"
          else ((None, "", 1),))
for s in vm_import.store_series(binary, db):
    for site, prefix, k in copies:
        lab = dict(s["labels"], node=prefix + s["node"])
        if site:
            lab["site"] = site
        lines.append(vm_import.line(s["metric"], lab, s["ts"], [k * v for v in s["values"]]))
if mode == "sites":
    # the grid's intensity as a scrape without a node label has it: every 15 minutes the value
    # of its hour (the CSV the store imported), and the year's end
    pts = [l.strip().split(",") for l in open(sys.argv[5])][1:]
    ts, vs = [], []
    import datetime as d
    for t, v in pts:
        t0 = int(d.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()) * 1000
        for q in range(4):
            ts.append(t0 + q * 900000)
            vs.append(float(v))
    ts.append(ts[-1] + 900000)
    vs.append(vs[-1])
    lines.append(vm_import.line("wattage_grid_carbon_intensity_grams_per_kwh", {"zone": "DE"}, ts, vs))
n = vm_import.post(url, lines)
print(f"ok {len(lines)} series, {n} samples")
PY
)
if ! start_vm vm; then
    not_ok "VictoriaMetrics starts" "$(tail -5 "$TMP/vm.log")"
    finish
fi
msg=$($PY -c "$IMPORT" "$BIN" "$DB" "http://127.0.0.1:$VPORT" sites "$TMP/ci.csv" 2>&1)
check "the store's readings are in VictoriaMetrics as two sites ($msg)" bash -c '[[ $0 == ok* ]]' "$msg"
SRC=victoriametrics://127.0.0.1:$VPORT
R=("$BIN" report --standard iso30134 --period "$YEAR" -c "$TMP/a.yaml" --json)

"${R[@]}" --db "$DB" >"$TMP/local.json" 2>"$TMP/local.err"
check "the statement of the store (exit 0)" test $? -eq 0
"${R[@]}" --source "$SRC" --site hall-1 >"$TMP/h1.json" 2>"$TMP/h1.err"
rc=$?
check "the statement of hall-1 from the engine (exit $rc: $(head -c 300 "$TMP/h1.err"))" test $rc -eq 0
SAME=$(cat <<'PY'
import json, sys
def same(a, b, k=1):
    ea, eb = a["energy"], b["energy"]
    for x in ("e_dc_joules", "e_it_joules", "e_reuse_joules"):
        assert abs(k * ea[x] - eb[x]) < 3.6e6 * k, (x, ea[x], eb[x])
    assert abs(k * ea["w_in_cubic_meters"] - eb["w_in_cubic_meters"]) < 1e-3 * k, ea
    ma = {m["meter"]: m for m in a["meters"]}
    mb = {m["meter"]: m for m in b["meters"]}
    assert sorted(ma) == sorted(mb) and len(ma) == 6, (sorted(ma), sorted(mb))
    for m in ma:
        x, y = ma[m], mb[m]
        assert (x["intervals"], x["measured_intervals"]) == (y["intervals"], y["measured_intervals"]), (m, x, y)
        assert abs(k * x["estimated"] - y["estimated"]) <= 1e-9 * max(abs(y["estimated"]), 1) + 1e-6, (m, x, y)
        assert x["method"] == y["method"], (m, x, y)
    ka = {x["symbol"]: x for x in a["kpis"]}
    kb = {x["symbol"]: x for x in b["kpis"]}
    for s in ("PUE", "WUE", "ERF", "CER"):
        x, y = ka[s], kb[s]
        assert (x["value"] is None) == (y["value"] is None), (s, x, y)
        assert x["value"] is None or abs(x["value"] - y["value"]) < 1e-6, (s, x, y)
        assert abs(x["coverage"] - y["coverage"]) < 1e-12 and x["reportable"] == y["reportable"], (s, x, y)
    assert a["category"] == b["category"] and a["period"] == b["period"], (a["category"], b["category"])
PY
)
msg=$($PY - "$TMP/local.json" "$TMP/h1.json" "$TMP/sums.json" <<PY 2>&1
$SAME
a, b, g = (json.load(open(f)) for f in sys.argv[1:4])
assert abs(a["energy"]["e_dc_joules"] / 3.6e6 - g["facility_kwh"] - 9.9 * g["diesel_l"]) < 1, (a["energy"], g)
same(a, b)
assert a["method"]["hand_inputs"] == b["method"]["hand_inputs"], b["method"]["hand_inputs"]
assert b["method"]["hand_inputs"]["site"] == "hall-1" and b["method"]["renewables"], b["method"]
pue = [k for k in b["kpis"] if k["symbol"] == "PUE"][0]
assert abs(pue["coverage"] - (35040 - g["grid_hole_intervals"]) / 35040) < 1e-12, pue
print("ok PUE %.6f, coverage %.6f" % (pue["value"], pue["coverage"]))
PY
)
check "hall-1 from the engine is the store's statement (sums to the kWh, coverage, KPIs): $msg" \
    bash -c '[[ $0 == ok* ]]' "$msg"
msg=$($PY - "$TMP/local.json" "$TMP/h1.json" <<'PY' 2>&1
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
x = [k for k in a["kpis"] if k["symbol"] == "CUE_location"][0]
y = [k for k in b["kpis"] if k["symbol"] == "CUE_location"][0]
assert x["value"] is not None and 0.15 < x["value"] / a["kpis"][0]["value"] < 0.39, x
assert y["value"] is not None, y
assert abs(x["value"] - y["value"]) <= 1e-9 * x["value"], (x["value"], y["value"])
print("ok CUE %.6f kgCO2e/kWh" % y["value"])
PY
)
check "location-based CUE from the engine's grid series without a node label is the store's: $msg" \
    bash -c '[[ $0 == ok* ]]' "$msg"
check "the series without a site label are said to be in no site's statement" \
    grep -q "facility series without a site label are in no site's statement" "$TMP/h1.err"

"${R[@]}" --source "$SRC" >"$TMP/all.json" 2>"$TMP/all.err"
rc=$?
check "every site's statement from the engine (exit $rc: $(head -c 300 "$TMP/all.err"))" test $rc -eq 0
msg=$($PY - "$TMP/local.json" "$TMP/all.json" <<PY 2>&1
$SAME
a, d = (json.load(open(f)) for f in sys.argv[1:3])
assert isinstance(d, list) and len(d) == 2, type(d)
by = {s["method"]["hand_inputs"]["site"]: s for s in d}
assert sorted(by) == ["hall-1", "hall-2"], sorted(by)
same(a, by["hall-1"])
same(a, by["hall-2"], 2)
h2 = by["hall-2"]["method"]
assert h2["hand_inputs"]["installed_it_kw"] == "not given" and h2["renewables"] == [], h2
print("ok E_DC %.0f and %.0f kWh" % tuple(by[s]["energy"]["e_dc_joules"] / 3.6e6 for s in sorted(by)))
PY
)
check "one statement per site: hall-1 the store's, hall-2 twice its energy, no hand inputs: $msg" \
    bash -c '[[ $0 == ok* ]]' "$msg"
check "hall-2 is told its hand inputs are hall-1's" \
    grep -q "site hall-2: statement's hand inputs are hall-1's" "$TMP/all.err"
"${R[@]}" --source "$SRC" --site hall-2 >"$TMP/h2.json" 2>/dev/null
check "--site hall-2 is the second of the two" $PY -c "
import json, sys
a, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
b = [s for s in d if s['method']['hand_inputs']['site'] == 'hall-2'][0]
assert a['energy'] == b['energy'] and a['meters'] == b['meters'], (a['energy'], b['energy'])" \
    "$TMP/h2.json" "$TMP/all.json"

grep -v '^  site: hall-1$' "$TMP/a.yaml" >"$TMP/nosite.yaml"
"$BIN" report --standard iso30134 --period "$YEAR" -c "$TMP/nosite.yaml" --source "$SRC" --json \
    >"$TMP/nosite.json" 2>"$TMP/nosite.err"
check "statement.site not given and two sites: neither gets the hand inputs, both told" \
    $PY -c "
import json, sys
d = json.load(open(sys.argv[1])); err = open(sys.argv[2]).read()
assert [s['method']['hand_inputs']['installed_it_kw'] for s in d] == ['not given'] * 2, d
for s in ('hall-1', 'hall-2'):
    assert f'site {s}: statement.site names none of the engine\'s 2 sites' in err, err" \
    "$TMP/nosite.json" "$TMP/nosite.err"
"$BIN" report --standard eu-eed --period "$YEAR" -c "$TMP/a.yaml" --db "$DB" --json \
    --schema deploy/standards/eu-eed-2024-1364.v1.schema.json >"$TMP/eu_local.json" 2>/dev/null
"$BIN" report --standard eu-eed --period "$YEAR" -c "$TMP/a.yaml" --source "$SRC" --site hall-1 \
    --json --schema deploy/standards/eu-eed-2024-1364.v1.schema.json >"$TMP/eu_src.json" 2>/dev/null
check "the EU file of hall-1 from the engine has the store's E_DC and E_IT" $PY -c "
import json, sys
a, b = (json.load(open(f))['kpis'] for f in sys.argv[1:3])
for s in ('E_DC', 'E_IT'):
    assert a[s]['value'] is not None and abs(a[s]['value'] - b[s]['value']) < 1, (s, a[s], b[s])" \
    "$TMP/eu_local.json" "$TMP/eu_src.json"

# An engine whose series carry no site label: one statement, of everything; --site refused.
check "a second VictoriaMetrics starts" start_vm vm1
SRC1=victoriametrics://127.0.0.1:$VPORT
msg=$($PY -c "$IMPORT" "$BIN" "$DB" "http://127.0.0.1:$VPORT" one 2>&1)
check "the store's readings are in it without a site label ($msg)" bash -c '[[ $0 == ok* ]]' "$msg"
"${R[@]}" --source "$SRC1" >"$TMP/one.json" 2>"$TMP/one.err"
rc=$?
check "no site label: one statement, the store's (exit $rc: $(head -c 200 "$TMP/one.err"))" \
    $PY -c "
$SAME
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert isinstance(b, dict), type(b)
same(a, b)
assert a['method']['hand_inputs'] == b['method']['hand_inputs'], b['method']
assert not open(sys.argv[3]).read(), 'nothing on stderr'" "$TMP/local.json" "$TMP/one.json" "$TMP/one.err"
"${R[@]}" --source "$SRC1" --site hall-1 >/dev/null 2>"$TMP/one_site.err"
rc=$?
check "no site label: --site exits 2, said why" bash -c \
    '[[ $0 == 2 ]] && grep -q "site hall-1: the engine.s series carry no site label" "$1"' \
    $rc "$TMP/one_site.err"

# Bad input.
"${R[@]}" --source "$SRC" --site hall-9 >/dev/null 2>"$TMP/unk.err"
rc=$?
check "an unknown site: exit 2, the sites found named ($(head -c 200 "$TMP/unk.err"))" bash -c \
    '[[ $0 == 2 ]] && grep -q "site hall-9: unknown site; the engine holds sites: hall-1, hall-2" "$1"' \
    "$rc" "$TMP/unk.err"
"${R[@]}" --db "$DB" --site hall-1 >/dev/null 2>"$TMP/nosrc.err"
check "--site without --source: exit 2" bash -c '[[ $0 == 2 ]] && grep -q "site goes with --source" "$1"' \
    $? "$TMP/nosrc.err"
"${R[@]}" --source "$SRC" --db "$DB" >/dev/null 2>"$TMP/both.err"
check "--source with --db: exit 2" bash -c '[[ $0 == 2 ]] && grep -q "name one place" "$1"' $? "$TMP/both.err"
"${R[@]}" --source "victoriametrics://127.0.0.1:$(free_port)" >/dev/null 2>"$TMP/down.err"
check "an engine that does not answer: exit 1, named" bash -c \
    '[[ $0 == 1 ]] && grep -q "wattage report: --source victoriametrics://127.0.0.1:" "$1"' $? "$TMP/down.err"
"$BIN" report --standard iso30134 --period "$((YEAR - 3))" -c "$TMP/a.yaml" --source "$SRC" \
    >/dev/null 2>"$TMP/old.err"
check "a period the engine holds nothing for: exit 2, said" bash -c \
    '[[ $0 == 2 ]] && grep -q "holds no facility meter series" "$1"' $? "$TMP/old.err"
check "no working store is left behind" test -z "$(ls -A "$TMP/tmpdir")"
finish
