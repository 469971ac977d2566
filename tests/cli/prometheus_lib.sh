# Helpers for the tests that run the real Prometheus (Debian's `prometheus` package) against a
# running wattage. Source after lib.sh.
#   start_prometheus PORT TARGET_PORT [SCRAPE_YAML]   Prometheus on 127.0.0.1:PORT scraping
#                                  127.0.0.1:TARGET_PORT every second; SCRAPE_YAML is extra
#                                  lines for the scrape config (scheme, tls_config...)
#   wait_target_up SECONDS [JOB]   until Prometheus has scraped the target successfully
#   target_health [JOB]            prints "up" / "down" / "unknown" and the last scrape error
#   prom_query QUERY [TIME]        prints the JSON result of /api/v1/query
#   check_power_samples FILE INTERVAL DB    a range query result of wattage_gpu_power_watts:
#                                  8 GPUs, every sample a value the fake produced at most one
#                                  poll interval before its scrape, or else (a poll late on a
#                                  loaded machine) the latest reading the daemon stored in DB
#                                  at the scrape, itself the fake's value at its stamp
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
    # The stored readings reach the store at its flush: wait (an event, not a time bound) until
    # every GPU has one stamped after the last sample, so that "the latest at the scrape" is known.
    local last
    last=$(python3 -c 'import json, sys
print(max(float(t) for s in json.load(open(sys.argv[1]))["data"]["result"] for t, _ in s["values"]))' "$1")
    wait_for 60 bash -c '[[ $("$0" query --db "$1" --from "$2" --to now --csv --unix \
        wattage_gpu_power_watts 2>/dev/null | cut -d, -f2 | sort -u | grep -c .) -ge 8 ]]' \
        "$BIN" "$3" "$(python3 -c "print($last + 1)")" || true
    "$BIN" query --db "$3" --from "$(python3 -c "print($last - 120)")" --to now --csv --unix \
        wattage_gpu_power_watts >"$TMP/stored_power.csv" 2>&1
    python3 - "$1" "$FAKE_NVML_T0" "$2" "$TMP/stored_power.csv" <<'PY'
import bisect, csv, json, math, sys
d = json.load(open(sys.argv[1]))
t0, interval = float(sys.argv[2]), float(sys.argv[3])
stored = {}
with open(sys.argv[4]) as f:
    rows = list(csv.reader(f))
head = rows[0]
ti, vi = head.index("time"), head.index("value")
li = head.index("labels") if "labels" in head else None
for r in rows[1:]:
    lab = r[li] if li is not None else ",".join(r)
    g = lab.split('gpu="')[1].split('"')[0] if 'gpu="' in lab else None
    stored.setdefault(int(g), []).append((float(r[ti]), float(r[vi])))
for g in stored:
    stored[g].sort()
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
    st = stored.get(i, [])
    stamps = [t for t, _ in st]
    for ts, v in s["values"]:
        ts, v = float(ts), float(v)
        n += 1
        # The value came from the last poll before the scrape: at most one interval earlier.
        good, lo, hi = within(i, ts, v, interval + 0.2)
        if good:
            continue
        # A loaded machine delays polls: then the value must be the latest reading the daemon
        # had when the scrape asked (the last stamped at or before it, or one published while
        # the request waited), and that reading the fake's value at its own stamp: the
        # daemon's timestamps bound the lateness, not the wall clock.
        late += 1
        j = bisect.bisect_right(stamps, ts) - 1
        near = [st[k] for k in (j - 1, j, j + 1) if 0 <= k < len(st)]
        hit = [(t, x) for t, x in near if abs(x - v) <= 1e-3 and t <= ts + 2]
        if not hit:
            sys.exit(f"gpu {i} at {ts}: {v} W, the fake gave {lo:.2f}..{hi:.2f} W in the last "
                     f"interval, and the stored readings around it are {near}")
        t, x = hit[0]
        ok, lo, hi = within(i, t + 1.0, x, 1.2)
        if not ok:
            sys.exit(f"gpu {i}: stored {x} W at {t}, the fake gave {lo:.2f}..{hi:.2f} W then")
print(f"# {n} power samples checked, {late} from a late poll (each the daemon's latest stored reading)",
      file=sys.stderr)
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
