#!/usr/bin/env bash
# The running jobs' energy on /metrics of the real daemon on the fake NVML (8 GPUs):
# wattage_job_energy_joules_total{id,job} appears while a job runs, lies between the API's
# energy of the same job asked before and after the scrape (both from the store's exact-window
# query), grows, has one HELP and TYPE line in both formats (promtool is content); when the job
# ends it stays a minute with its final energy and its end time (so an engine that joins the
# nodes of one job sees the end); no family at all before any job runs. The job series are
# stored (remote write sends them from the store), as local series, never counted as energy.
. tests/cli/lib.sh
mkdir -p "$TMP/sys" "$TMP/proc"
export WATTAGE_SYSFS_ROOT=$TMP/sys WATTAGE_PROCFS_ROOT=$TMP/proc
printf 'store:\n  flush_interval: 200ms\n' >"$TMP/w.yaml"
export FAKE_NVML_POWER=300,120,5 FAKE_NVML_GPUS=8
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
WATTAGE_NVML_LIBRARY=$FAKE_NVML bg "$BIN" run -c "$TMP/w.yaml" --db "$TMP/w.db" --interval 0.2 \
    --listen "127.0.0.1:$PORT" 2>"$TMP/run.log"
check "the daemon answers" wait_for 10 curl -sf "$URL/healthz" -o /dev/null
PROM_ACCEPT='application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5'

api() {
    local args=(-s -o "$TMP/body" -w '%{http_code}' -X "$1")
    [[ $# -ge 3 ]] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
    curl "${args[@]}" "$URL$2"
}
energy() { api GET "/api/v1/jobs/$1" >/dev/null && python3 -c \
    "import json; print(repr(json.load(open('$TMP/body'))['kpi']['energy_joules']))"; }
# scraped JOB_ID: the job's value on /metrics, empty when absent
scraped() { curl -s "$URL/metrics" | sed -n "s/^wattage_job_energy_joules_total{id=\"$1\",job=\"[^\"]*\"} //p"; }

curl -s "$URL/metrics" >"$TMP/m0.txt"
check "no job family while no job runs" test "$(grep -c wattage_job_ "$TMP/m0.txt")" -eq 0

c=$(api POST /api/v1/jobs '{"name": "train-a", "gpus": [0, 1]}')
check "a job on GPUs 0,1 starts" test "$c" = 201
A=$(python3 -c "import json; print(json.load(open('$TMP/body'))['id'])")
c=$(api POST /api/v1/jobs '{"name": "serve.b"}')
check "a job on every GPU starts" test "$c" = 201
B=$(python3 -c "import json; print(json.load(open('$TMP/body'))['id'])")
sleep 1.5

# The figure is computed at most once a second, so one computed after `before` and at or before
# the scrape lies between the API's answers before and after it.
before=$(energy "$A")
sleep 1.1
m1=$(scraped "$A")
after=$(energy "$A")
msg=$(python3 -c "
b, m, a = $before, float('${m1:-nan}'), $after
assert b > 0, b
assert b * (1 - 1e-9) <= m <= a * (1 + 1e-9), (b, m, a)
" 2>&1)
check "the job's value lies between the API's before and after the scrape ($msg)" test -z "$msg"
sleep 1.2
m2=$(scraped "$A")
check "it grows ($m1 -> $m2)" python3 -c "assert float('${m2:-nan}') > float('${m1:-nan}')"
mb=$(scraped "$B")
check "the all-GPU job counts more than the two-GPU one ($mb > $m2)" \
    python3 -c "assert float('${mb:-nan}') > float('${m2:-nan}')"

curl -s "$URL/metrics" >"$TMP/m.txt"
check "one HELP and one TYPE line in text" \
    test "$(grep -c '^# \(HELP\|TYPE\) wattage_job_energy_joules_total ' "$TMP/m.txt")" -eq 2
check "a counter" grep -q '^# TYPE wattage_job_energy_joules_total counter$' "$TMP/m.txt"
check "two series" test "$(grep -c '^wattage_job_energy_joules_total{' "$TMP/m.txt")" -eq 2
check "the name label is the job's" grep -q "^wattage_job_energy_joules_total{id=\"$B\",job=\"serve.b\"} " "$TMP/m.txt"
lint=$(promtool check metrics <"$TMP/m.txt" 2>&1)
check "promtool check metrics prints nothing ($lint)" test -z "$lint"
curl -s -H "Accept: $PROM_ACCEPT" "$URL/metrics" >"$TMP/om.txt"
check "OpenMetrics: the family without _total, once" \
    test "$(grep -c '^# TYPE wattage_job_energy_joules counter$' "$TMP/om.txt")" -eq 1
check "OpenMetrics: the page still ends in # EOF" test "$(tail -n 1 "$TMP/om.txt")" = "# EOF"
check "gzip carries it too" \
    sh -c "curl -s -H 'Accept-Encoding: gzip' '$URL/metrics' | gzip -dc | grep -q '^wattage_job_energy_joules_total{id=\"$A\"'"

c=$(api POST "/api/v1/jobs/$A/end")
check "job A ends" test "$c" = 200
endA=$(python3 -c "import json; print(repr(json.load(open('$TMP/body'))['end_s']))")
sleep 1.2 # the store has flushed past the end: the figure is final
finalA=$(energy "$A")
sleep 1.1
m=$(scraped "$A")
check "its series stays with the final energy ($m = $finalA)" \
    python3 -c "assert abs(float('${m:-nan}') - $finalA) <= 1e-9 * $finalA"
e=$(curl -s "$URL/metrics" | sed -n "s/^wattage_job_end_time_seconds{id=\"$A\",job=\"train-a\"} //p")
# the end moved to its edge sample's time (a few ms after the request; core/hub.h)
c=$(api GET "/api/v1/jobs/$A")
endNow=$(python3 -c "import json; print(repr(json.load(open('$TMP/body'))['end_s']))")
check "the end moved to its edge sample, within 0.5 s of the request ($endA -> $endNow)" \
    python3 -c "assert 0 <= $endNow - $endA < 0.5"
check "and its end time ($e = $endNow)" python3 -c "assert abs(float('${e:-nan}') - $endNow) < 1e-6"
check "B's is still there, without an end" test -n "$(scraped "$B")"
check "no end time for B" sh -c "! curl -s '$URL/metrics' | grep -q 'wattage_job_end_time_seconds{id=\"$B\"'"
curl -s "$URL/metrics" >"$TMP/m3.txt"
check "job info with the GPUs" grep -q "^wattage_job_info{id=\"$A\",job=\"train-a\",gpus=\"0,1\"} 1" "$TMP/m3.txt"
check "job info with every GPU (gpus empty)" grep -q "^wattage_job_info{id=\"$B\",job=\"serve.b\",gpus=\"\"} 1" "$TMP/m3.txt"
sleep 0.5
q() { sqlite3 "$TMP/w.db" "$1"; }
check "the job series are in the store, as local series" test "$(q "SELECT count(DISTINCT metric) FROM series \
    WHERE metric LIKE 'wattage_job%' AND node=''")" -ge 4
check "its energy is not an energy series (kind 0): never summed with the GPUs" \
    test "$(q "SELECT count(*) FROM series WHERE metric='wattage_job_energy_joules_total' AND kind!=0")" = 0
check "its stored energy ends at the final figure" python3 -c "
v = float('$(stored "$TMP/w.db" "wattage_job_energy_joules_total{id=\"$A\"}" | sort -t, -k1,1g |
    tail -n 1 | awk -F, '{print $NF}')')
assert abs(v - $finalA) <= 1e-9 * $finalA, (v, $finalA)"
finish
