# Helpers for the tests that run the real Prometheus (Debian's `prometheus` package) against a
# running wattage. Source after lib.sh.
#   start_prometheus PORT TARGET_PORT [SCRAPE_YAML]   Prometheus on 127.0.0.1:PORT scraping
#                                  127.0.0.1:TARGET_PORT every second; SCRAPE_YAML is extra
#                                  lines for the scrape config (scheme, tls_config...)
#   wait_target_up SECONDS [JOB]   until Prometheus has scraped the target successfully
#   target_health [JOB]            prints "up" / "down" / "unknown" and the last scrape error
#   prom_query QUERY [TIME]        prints the JSON result of /api/v1/query
#   check_power_samples FILE INTERVAL       a range query result of wattage_gpu_power_watts:
#                                  8 GPUs, every sample a value the fake produced at most one
#                                  poll interval before its scrape
#   check_increase FILE TIME WINDOW TOL     an instant increase() of the energy counters: 8 GPUs,
#                                  each within TOL (ratio) of the fake's exact integral
PROMETHEUS=${PROMETHEUS:-prometheus}
PROM_URL=

start_prometheus() {
    local port=$1 target=$2 extra=${3:-}
    mkdir -p "$TMP/prom"
    cat >"$TMP/prom/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: wattage
    static_configs:
      - targets: ["127.0.0.1:$target"]
$extra
EOF
    PROM_URL=http://127.0.0.1:$port
    bg "$PROMETHEUS" --config.file="$TMP/prom/prometheus.yml" \
        --storage.tsdb.path="$TMP/prom/data" --web.listen-address="127.0.0.1:$port" \
        --log.level=warn 2>"$TMP/prom/prometheus.log"
}

target_health() {
    curl -s "$PROM_URL/api/v1/targets" | python3 -c '
import json, sys
ts = [t for t in json.load(sys.stdin)["data"]["activeTargets"]
      if t["labels"]["job"] == sys.argv[1]]
print(ts[0]["health"] if ts else "none", ts[0]["lastError"] if ts else "")' "${1:-wattage}" 2>/dev/null
}

wait_target_up() {
    local end=$((SECONDS + $1))
    until [[ $(target_health "${2:-wattage}") == up* ]]; do
        [[ $SECONDS -ge $end ]] && return 1
        sleep 0.2
    done
}

prom_query() {
    local args=(--data-urlencode "query=$1")
    [[ -n ${2:-} ]] && args+=(--data-urlencode "time=$2")
    curl -s "$PROM_URL/api/v1/query" "${args[@]}"
}

check_power_samples() {
    python3 - "$1" "$FAKE_NVML_T0" "$2" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
t0, interval = float(sys.argv[2]), float(sys.argv[3])
res = d["data"]["result"]
gpus = sorted(int(s["metric"]["gpu"]) for s in res)
assert gpus == list(range(8)), f"series: {gpus}"
def p(i, t):
    return 300 + 100 * math.sin(2 * math.pi * (t - t0) / 7 + i)
def within(i, ts, v, span):
    ws = [p(i, ts - k * span / 200) for k in range(201)]
    return min(ws) - 0.5 <= v <= max(ws) + 0.5, min(ws), max(ws)
n = late = 0
for s in res:
    m = s["metric"]
    assert m["uuid"] == f"GPU-fake-0000-{m['gpu']}" and m["model"] == "NVIDIA H200", m
    i = int(m["gpu"])
    assert len(s["values"]) >= 5, f"gpu {i}: only {len(s['values'])} samples"
    for ts, v in s["values"]:
        v = float(v)
        n += 1
        # The value came from the last poll before the scrape: at most one interval earlier.
        # A loaded machine delays polls (and scrapes) by seconds now and then (2 s seen with 6
        # suites and 4 builds on 2 cores): at most a tenth of the samples may come from a poll
        # up to 2 s later than that, and must still be a value the fake had then.
        good, lo, hi = within(i, ts, v, interval + 0.2)
        if good:
            continue
        late += 1
        good, lo, hi = within(i, ts, v, 2 * interval + 2.0)
        if not good:
            sys.exit(f"gpu {i} at {ts}: {v} W, the fake gave {lo:.2f}..{hi:.2f} W")
if late > n // 10:
    sys.exit(f"{late} of {n} samples older than one poll interval")
print(f"# {n} power samples checked, {late} from a late poll", file=sys.stderr)
PY
}

check_increase() {
    python3 - "$1" "$2" "$3" "$4" "$(dirname "$FAKE_NVML")/fake_nvml_energy" <<'PY'
import json, subprocess, sys
d = json.load(open(sys.argv[1]))
te, w, tol, exact = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
res = d["data"]["result"]
assert len(res) == 8, f"{len(res)} series: {res}"
worst = 0
for s in res:
    i = s["metric"]["gpu"]
    got = float(s["value"][1])
    want = float(subprocess.check_output([exact, i, repr(te - w), repr(te)]))
    err = abs(got - want) / want
    worst = max(worst, err)
    if err > tol:
        sys.exit(f"gpu {i}: increase {got:.1f} J, exact {want:.1f} J ({err:.2%})")
print(f"# worst difference {worst:.2%}", file=sys.stderr)
PY
}
