#!/usr/bin/env bash
# `wattage import carbon`, `wattage schedule` and the CUE row of `wattage kpi` on the real GB
# series (../shared/data/carbon-intensity/): what is stored, malformed files reported by line
# with nothing changed, the best start checked against a brute force written here in Python
# over the same file, --format slurm, --json, deadlines, --minimize cost, --like JOB.
. tests/cli/lib.sh
export TZ=UTC
UK=../shared/data/carbon-intensity/uk-national-nmpowell
DB=$TMP/c.db
for f in "$UK"/national_pt24h/*.csv; do
    "$BIN" import carbon "$f" --zone GB --db "$DB" >>"$TMP/imp.txt" 2>&1 || echo "FAILED $f" >>"$TMP/imp.txt"
done
check "the six daily files import" bash -c "! grep -q FAILED '$TMP/imp.txt' && [[ \$(grep -c 'intensity values' '$TMP/imp.txt') == 6 ]]"
out=$("$BIN" import carbon "$UK/national_fw48h/2023-03-14T0331Z.csv" --zone GB --db "$DB" 2>&1)
check "the 48-h forecast imports: 96 values ($out)" bash -c '[[ $0 == *": 96 intensity values" ]]' "$out"
out=$("$BIN" import carbon "$UK/national_pt24h_json/2023-03-14T0301Z.json" --zone GB --db "$DB" 2>&1)
check "the API's JSON imports ($out)" bash -c '[[ $0 == *"intensity values" ]]' "$out"
q() { sqlite3 "$DB" "$1"; }
check "actuals and forecasts are stored apart (280 actuals of the week, as its provenance says)" \
    test "$(q "SELECT count(*) FROM carbon_points WHERE kind=0 AND from_ns >= 1678678200000000000 AND from_ns < 1679194800000000000")" = 280

# Malformed files: every bad line by number, exit 2, nothing stored changes.
before=$(q "SELECT count(*), total(value), max(stored_ns) FROM carbon_points")
printf 'from,intensity.forecast,intensity.actual\n2023-03-13T03:30Z,1,1\n2023-03-13T04:00Z,x,2\n2023-03-13T04:30Z,5\n' >"$TMP/bad.csv"
msg=$("$BIN" import carbon "$TMP/bad.csv" --zone GB --db "$DB" 2>&1); rc=$?
check "a malformed CSV exits 2" test $rc -eq 2
check "its lines are named ($msg)" bash -c '[[ $0 == *"bad.csv:3: column 2: bad number \"x\""* && $0 == *"bad.csv:4: expected 3 columns (got 2)"* && $0 == *"2 malformed lines; nothing stored"* ]]' "$msg"
printf '{"data": [\n {"from": "2023-03-13T03:30Z", "to": "2023-03-13T04:00Z",\n  "intensity": {"forecast": 1, "actual": 1}},\n {"from": "2023-03-13T04:00Z", "to": "2023-03-13T03:00Z",\n  "intensity": {"forecast": 1}}\n]}\n' >"$TMP/bad.json"
msg=$("$BIN" import carbon "$TMP/bad.json" --zone GB --db "$DB" 2>&1); rc=$?
check "a malformed JSON exits 2 and names line 4 ($msg)" bash -c '[[ $1 == 2 && $0 == *"bad.json:4: data[1].to: expected an RFC 3339 time after from"* ]]' "$msg" "$rc"
check "nothing stored changed" test "$(q "SELECT count(*), total(value), max(stored_ns) FROM carbon_points")" = "$before"
"$BIN" import carbon "$TMP/bad.csv" --format xml --db "$DB" >/dev/null 2>&1
check "an unknown format exits 2" test $? -eq 2
"$BIN" import carbon "$UK/national_fw48h/2023-03-14T0331Z.csv" --db "$DB" >"$TMP/o" 2>&1; rc=$?
check "a CSV without a zone exits 2 and says so" bash -c '[[ $1 == 2 ]] && grep -q "no zone" "$0"' "$TMP/o" "$rc"

# The scheduler on the 48-h forecast, against a brute force over every start minute.
NOW=2023-03-14T14:47:00Z DL=2023-03-16T03:30:00Z
"$BIN" schedule --duration 5h13m --power 5.6kW --deadline $DL --now $NOW --zone GB --db "$DB" \
    --json >"$TMP/s.json" 2>"$TMP/s.err"
check "schedule --json exits 0" test $? -eq 0
msg=$(python3 - "$UK/national_fw48h/2023-03-14T0331Z.csv" "$TMP/s.json" <<'EOF' 2>&1
import csv, json, sys, datetime as dt
def ts(s): return int(dt.datetime.fromisoformat(s.replace('Z', '+00:00')).timestamp())
rows = [(ts(r['from']), float(r['intensity.forecast'])) for r in csv.DictReader(open(sys.argv[1]))]
rate = {}
for t, v in rows:
    for m in range(30): rate[t + 60 * m] = v
d = json.load(open(sys.argv[2]))
now, dl, dur = ts('2023-03-14T14:47:00Z'), ts('2023-03-16T03:30:00Z'), 5 * 3600 + 13 * 60
pue = d['pue']
def cost(s): return sum(5600 * pue * 60 / 3.6e6 * rate[t] for t in range(s, s + dur, 60))
best = min(cost(s) for s in range(now, dl - dur + 1, 60))
b = d['best']
assert abs(b['gco2e'] - best) < 1e-6 * best, (b['gco2e'], best)
assert now < b['start_s'] and b['start_s'] + dur <= dl, b  # later than now on this day
assert abs(cost(int(b['start_s'])) - b['gco2e']) < 1e-6 * best
assert abs(d['start_now']['gco2e'] - cost(now)) < 1e-6 * best
assert abs(d['saving_kg'] - (cost(now) - best) / 1000) < 1e-9 * best
assert abs(d['saving_pct'] - 100 * (cost(now) - best) / cost(now)) < 1e-6
assert d['pue_source'] == 'assumed' and d['zone'] == 'GB'
EOF
)
check "the best start equals a brute force over every minute, within the deadline ($msg)" test -z "$msg"
best=$(python3 -c "import json; print(json.load(open('$TMP/s.json'))['best']['start'][:19])")
out=$("$BIN" schedule --duration 5h13m --power 5.6kW --deadline $DL --now $NOW --zone GB \
    --db "$DB" --format slurm)
check "--format slurm prints --begin= at the best start ($out)" test "$out" = "--begin=$best"
"$BIN" schedule --duration 6h --energy 120kWh --deadline $DL --now $NOW --zone GB --db "$DB" \
    >"$TMP/s.txt"
check "the text names now, the best start and the saving in kg and %" \
    bash -c 'grep -q "^start now    2023-03-14T14:47:00Z" "$0" && grep -Eq "^best start   2023-03-1[456]T" "$0" && grep -Eq "^saving       [0-9.]+ kgCO2e \([0-9.]+%\)" "$0"' "$TMP/s.txt"
msg=$("$BIN" schedule --duration 6h --power 1kW --deadline 2023-03-14T18:00:00Z --now $NOW \
    --zone GB --db "$DB" 2>&1); rc=$?
check "a run that does not fit before the deadline exits 2 ($msg)" bash -c '[[ $1 == 2 && $0 == *"does not fit"* ]]' "$msg" "$rc"
"$BIN" schedule --duration 1h --power 1kW --deadline +3h --zone NOWHERE --db "$DB" >/dev/null 2>&1
check "no series for the zone exits 1" test $? -eq 1
"$BIN" schedule --duration 1h --deadline +3h --zone GB --db "$DB" >/dev/null 2>&1
check "no --energy, --power or --like exits 2" test $? -eq 2

# --minimize cost: a price series (currency per kWh), cheapest from 13:00 to 15:00.
python3 -c "
print('timestamp,price')
for h in range(48): print('%d,%s' % (1678766400 + 3600 * h, '0.05' if h in (9, 10) else '0.30'))
" >"$TMP/price.csv"
"$BIN" import carbon "$TMP/price.csv" --series price --zone GB --db "$DB" >/dev/null
"$BIN" schedule --duration 2h --power 10kW --deadline 2023-03-15T04:00:00Z --now 2023-03-14T04:00:00Z \
    --zone GB --minimize cost --db "$DB" --json >"$TMP/c.json"
check "--minimize cost starts at the cheap hours" python3 -c "
import json; d = json.load(open('$TMP/c.json'))
assert d['minimize'] == 'cost' and d['best']['start'] == '2023-03-14T13:00:00Z', d['best']
assert abs(d['best']['cost'] - 20 * d['pue'] * 0.05) < 1e-9, d"

# --like JOB: the power profile of a job the daemon measured (fake NVML), over a forecast
# re-dated to now (the real values).
mkdir -p "$TMP/sys" "$TMP/proc"
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
PORT=$(free_port)
export WATTAGE_URL=http://127.0.0.1:$PORT
WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=2 \
    WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/j.db" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
DPID=$!
check "the daemon answers" wait_for 10 curl -sf "$WATTAGE_URL/healthz" -o /dev/null
CUDA_VISIBLE_DEVICES=0 "$BIN" exec -c "$TMP/w.yaml" --job like-me -- sleep 3 >/dev/null 2>&1
sleep 0.5
curl -s "$WATTAGE_URL/api/v1/jobs/like-me" >"$TMP/job.json"
kill "$DPID"
wait "$DPID" 2>/dev/null
python3 - "$UK/national_fw48h/2023-03-14T0331Z.csv" >"$TMP/now.csv" <<'PY'
import csv, sys, time
t0 = int(time.time()) // 1800 * 1800
print('timestamp,gco2_per_kwh,kind')
for i, r in enumerate(csv.DictReader(open(sys.argv[1]))):
    print('%d,%s,forecast' % (t0 + 1800 * i, r['intensity.forecast']))
PY
"$BIN" import carbon "$TMP/now.csv" --zone GB --db "$TMP/j.db" >/dev/null
"$BIN" schedule --like like-me --deadline +24h --zone GB --db "$TMP/j.db" --json >"$TMP/l.json"
check "schedule --like JOB takes the job's duration and energy" python3 -c "
import json; d = json.load(open('$TMP/l.json')); j = json.load(open('$TMP/job.json'))
assert d['power_from'] == 'job', d
assert abs(d['duration_s'] - j['kpi']['duration_s']) < 1e-6, (d['duration_s'], j['kpi'])
e = j['kpi']['energy_kwh']
assert e > 0 and abs(d['it_energy_kwh'] - e) < 1e-6 * e, (d['it_energy_kwh'], e)
assert d['best']['gco2e'] <= d['start_now']['gco2e'], d"

# CUE in wattage kpi over 22 h of actuals (each day's 03:00 period has none), with its flags.
printf 'carbon:\n  zone: GB\n  pue_assumed: 1.4\n' >"$TMP/k.yaml"
"$BIN" kpi --from 2023-03-16T04:00:00Z --to 2023-03-17T02:00:00Z -c "$TMP/k.yaml" --db "$DB" \
    >"$TMP/k.txt" 2>&1
check "wattage kpi prints CUE with assumed PUE and measured intensity" \
    bash -c 'grep -Eq "^  CUE \(kgCO2e/kWh\) +0\.[0-9]+ +kgCO2e/kWh  ASSUMED" "$0" && grep -Eq "pue +assumed +carbon.pue_assumed = 1.4" "$0" && grep -Eq "carbon_intensity +measured +zone GB" "$0"' "$TMP/k.txt"
"$BIN" kpi --from 2023-03-16T04:00:00Z --to 2023-03-17T02:00:00Z -c "$TMP/k.yaml" --db "$DB" \
    --json >"$TMP/k.json"
check "its JSON value is 1.4 x the window's mean actual / 1000" python3 - "$UK/national_pt24h/2023-03-17T0331Z.csv" "$UK/national_pt24h/2023-03-18T0331Z.csv" "$TMP/k.json" <<'EOF'
import csv, json, sys, datetime as dt
def ts(s): return int(dt.datetime.fromisoformat(s.replace('Z', '+00:00')).timestamp())
lo, hi = ts('2023-03-16T04:00:00Z'), ts('2023-03-17T02:00:00Z')
v = [float(r['intensity.actual']) for f in sys.argv[1:3] for r in csv.DictReader(open(f))
     if lo <= ts(r['from']) < hi]
assert len(v) == 44, len(v)
row = [k for k in json.load(open(sys.argv[3]))['kpis'] if k['name'] == 'cue'][0]
assert abs(row['value'] - 1.4 * sum(v) / 44 / 1000) < 1e-9, (row, sum(v) / 44)
assert row['measured'] is False and row['unit'] == 'kgCO2e/kWh', row
EOF
finish
