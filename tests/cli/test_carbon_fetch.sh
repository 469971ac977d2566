#!/usr/bin/env bash
# The daemon fetching carbon intensity from a local HTTP server (tests/peers/carbon_server.py,
# real GB values re-dated to now): a URL that answers 500 twice is retried with doubling backoff
# and then stored; one that hangs past its timeout is abandoned and retried while the collectors
# keep ticking and /healthz stays up; Electricity Maps' reply with the token from a file;
# wattage_grid_carbon_intensity_grams_per_kwh{zone} on /metrics is the value of the current
# half-hour; and a running job's emissions counter next to its energy.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
DATA=../shared/data/carbon-intensity/uk-national-nmpowell/national_fw48h/2023-03-14T0331Z.csv
CPORT=$(free_port)
CURL=http://127.0.0.1:$CPORT
bg /usr/bin/python3 tests/peers/carbon_server.py --port "$CPORT" --data "$DATA" --token s3cret
check "the carbon server answers" wait_for 10 curl -sf "$CURL/log" -o /dev/null
printf 's3cret\n' >"$TMP/em.token"
chmod 600 "$TMP/em.token"
cat >"$TMP/w.yaml" <<EOF
store:
  flush_interval: 200ms
carbon:
  zone: GB
  pue_assumed: 1.5
  sources:
    - kind: uk_api
      url: $CURL/fail/2/uk
      interval: 1h
      retry: 1s
    - kind: uk_api
      url: $CURL/slow/30/uk
      zone: XX
      interval: 1h
      timeout: 2s
      retry: 1s
    - kind: electricitymaps
      url: $CURL/em
      token_file: $TMP/em.token
      interval: 1h
    - kind: electricitymaps
      url: $CURL/moved/em
      token_file: $TMP/em.token
      zone: YY
      interval: 1h
    - kind: uk_api
      url: $CURL/moved/uk
      zone: ZZ
      interval: 1h
EOF
"$BIN" check-config "$TMP/w.yaml" >/dev/null 2>&1
check "the carbon section passes check-config" test $? -eq 0
export FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=2
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$URL/healthz" -o /dev/null
points() { sqlite3 "$TMP/w.db" "SELECT count(*) FROM carbon_points WHERE zone='$1'" 2>/dev/null; }
has_points() { test "$(points "$1")" -gt 0; }
check "GB is stored after two failures" wait_for 20 has_points GB
curl -s "$CURL/log" >"$TMP/log.json"
msg=$(python3 -c "
import json; log = [x for x in json.load(open('$TMP/log.json')) if x['path'] == '/fail/2/uk']
assert [x['status'] for x in log] == [500, 500, 200], log
g1, g2 = log[1]['t'] - log[0]['t'], log[2]['t'] - log[1]['t']
assert g1 >= 0.9 and g2 >= 1.9, (g1, g2)  # at least retry, then twice that
" 2>&1)
check "500, 500, then 200, retried after 1 s then 2 s ($msg)" test -z "$msg"
check "the failure is logged with its backoff" grep -q "fail/2/uk: HTTP status 500; retry in 1 s" \
    "$TMP/run.log"
check "Electricity Maps' forecast with the token file is stored for DE" \
    wait_for 10 has_points DE
check "a redirect without a token is followed (ZZ stored)" wait_for 10 has_points ZZ
check "a redirect with a token is refused and says where it points" \
    wait_for 10 grep -q "moved/em: HTTP status 302: redirected to $CURL/elsewhere; the token is not sent there" "$TMP/run.log"
check "and the token went nowhere else" python3 -c "
import json, urllib.request
assert '/elsewhere' not in json.load(urllib.request.urlopen('$CURL/counts'))"
check "the hanging URL times out and is logged" wait_for 10 grep -q "slow/30/uk: timed out" \
    "$TMP/run.log"

# While the slow source hangs (each attempt 2 s), the collectors keep ticking into the store.
n1=$(stored "$TMP/w.db" wattage_gpu_power_watts | wc -l)
sleep 2.5
n2=$(stored "$TMP/w.db" wattage_gpu_power_watts | wc -l)
check "readings keep coming while a fetch hangs ($n1 -> $n2)" test "$n2" -gt "$n1"
check "/healthz stays up" curl -sf "$URL/healthz" -o /dev/null
check "the slow source was tried again (backoff, not given up)" wait_for 10 python3 -c "
import json, urllib.request
assert json.load(urllib.request.urlopen('$CURL/counts')).get('/slow/30/uk', 0) >= 2"
check "the token file's mode is not group-readable here, so no refusal is logged" \
    bash -c "! grep -q 'accessible by group' '$TMP/run.log'"

# The gauge: the value of the current half-hour (the server's third row: two past periods).
want=$(python3 -c "
import csv; print(float(list(csv.DictReader(open('$DATA')))[2]['intensity.forecast']))")
got() { curl -s "$URL/metrics" | sed -n 's/^wattage_grid_carbon_intensity_grams_per_kwh{zone="GB"} //p'; }
check "the GB gauge appears" wait_for 40 test -n "$(got)"
g=$(got)
check "wattage_grid_carbon_intensity_grams_per_kwh{zone=\"GB\"} is the current value ($g = $want)" \
    python3 -c "assert abs(float('$g') - $want) < 1e-9"
check "DE has its gauge too" bash -c "curl -s '$URL/metrics' | grep -q 'intensity_grams_per_kwh{zone=\"DE\"}'"

# A running job's emissions counter, beside its energy.
api() { curl -s -o "$TMP/body" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "$URL$2"; }
check "a job starts" test "$(api POST /api/v1/jobs '{"name": "train"}')" = 201
sleep 2.5
co2() { curl -s "$URL/metrics" | sed -n 's/^wattage_job_emissions_grams_total{id="1",job="train"} //p'; }
check "wattage_job_emissions_grams_total of the running job" wait_for 10 test -n "$(co2)"
api GET /api/v1/jobs/train >/dev/null
msg=$(python3 -c "
import json; j = json.load(open('$TMP/body')); c = j['carbon']
assert c['zone'] == 'GB' and c['pue'] == 1.5 and c['pue_source'] == 'assumed', c
assert c['known'] and c['gco2e'] > 0, c
# the mean intensity of a job inside one or two half-hours lies within the served values
assert 44 <= c['intensity_mean_g_per_kwh'] <= 253, c
" 2>&1)
check "the job's carbon in the API ($msg)" test -z "$msg"
"$BIN" job show train --url "$URL" >"$TMP/show.txt" 2>&1
check "job show prints gCO2e with its flags" \
    grep -Eq "^  carbon +[0-9.]+ gCO2e \(zone GB, mean [0-9.]+ gCO2e/kWh, intensity (measured|forecast|mixed)\), PUE 1.50 assumed" \
    "$TMP/show.txt"
"$BIN" jobs --url "$URL" >"$TMP/jobs.txt" 2>&1
check "jobs lists the job's gCO2e" bash -c 'head -1 "$0" | grep -q " gCO2e " && grep -Eq "^ +1  train .* [0-9]+\.[0-9] +$" "$0"' "$TMP/jobs.txt"
finish
